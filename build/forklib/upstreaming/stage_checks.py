# Copyright 2026 The JAX call_tf fork authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     https://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""What `stage` checks of each staged commit before a reviewer sees it.

* `scrub`: no word of the fork in what the commit adds or says: the fork
  itself, its version label and address, its patch names and numbers, its
  documents, its build tool, its markers, a packaging extra upstream lacks,
  the word "upstream" (which in upstream's own tree means nothing), and JAX
  releases older than the target (compatibility branches left in). The
  plan can add patterns and allow lines. `stage_conventions` checks the
  rest a reviewer would: messages, the author, docstrings, compatibility
  branches, dataclasses, tests' places, options.
* `ruff`: upstream's ruff configuration (the base's `pyproject.toml` or
  `ruff.toml`), on the Python files the commit adds or changes; a finding
  that upstream's own file already had at the base is not the commit's.
* `sizes`: the lines the commit adds, as code, BUILD files, tests and
  documentation.
* `prose`: what a reviewer found by hand in a proposal and in descriptions
  (`PROSE_PATTERNS`: a placeholder such as `TODO(` or `NNNNN`, a note to
  whoever sends it, a `/tmp` path, an HTML comment (a marker of our tools),
  the word "distribution" for the fork), in what is read as prose: commit
  messages, descriptions, documentation, a JEP; and this repository's own
  paths (`Scrubber`'s `fork_paths`) everywhere.
* `jep_index_order`: the JEPs of `docs/jep/index.rst` in numeric order.
* `patch_author_problems`: the `From:` of a patch written for upstream
  names a person, or is left out (`stage` applies it as `--author`).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import pathlib
import re
import subprocess

from forklib import ForkError
from forklib.upstreaming import gitcmd

# (regex, why): words that must not reach upstream.
BUILTIN_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"(?i)\bforks?\b(?!\s*\()", "the fork"),
    (r"calltf", "the fork's version label or address"),
    (r"(?i)\bpatch(?:es)?\s+\d{4}\b", "a patch number of the queue"),
    (r"\b\d{4}-[a-z0-9][a-z0-9-]*\.patch\b", "a patch of the queue"),
    (r"\bpatches/(?:series|upstream\.toml|variants|stage\.toml)\b",
     "the queue's files"),
    (r"\btests/upstream\b", "the fork's folder of upstream-style tests"),
    (r"stage-with|#\s*stage:", "a staging marker"),
    (r"\bforklib\b|build/fork\.py|JAX_FORK_", "the fork's build tool"),
    (r"jax\[tensorflow(?:-cpu)?\]|`tensorflow` extra|\btensorflow extra\b",
     "a packaging extra upstream's jax lacks"),
    (r"(?i)\bupstream(?:'s)?\b", "\"upstream\" for upstream itself: in its "
     "own tree, name it (JAX, jax2tf, this module)"),
)
# (regex, why): what must not be in prose that reaches upstream (messages,
# descriptions, documentation), besides BUILTIN_PATTERNS. Code is not
# scanned for these: `TODO(name)` and "a distribution" are upstream's own
# words there.
PROSE_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\bTODO\(|\b(?:TBD|FIXME|XXX)\b|\bN{4,}\b",
     "a placeholder left in: fill it in"),
    (r"(?<![\w.~-])/tmp\b", "a path of the machine it was written on"),
    (r"<!--", "an HTML comment: a note or a marker of our tools, not for the "
     "reader"),
    (r"(?i)\bbefore\s+(?:sending|(?:it|this(?:\s+\w+)?)\s+is\s+sent)\b",
     "a note to whoever sends it"),
    (r"(?i)\bdistributions?\b", "\"distribution\" for the fork: say what it "
     "is (an implementation, a package outside JAX)"),
)
_JAX_RELEASE_RE = re.compile(
    r"(?i)\bjax(?:lib)?(?:\s+releases?)?\s*\(?\s*(?:(?:before|from|after|"
    r"up to|until|since|older than|newer than|<=?|>=?)\s*)?v?"
    r"(?P<version>\d+\.\d+(?:\.\d+)*)")


@dataclasses.dataclass(frozen=True)
class Finding:
  """A fork-internal word in a staged commit."""
  where: str      # "path:line", "commit message" or "author"
  text: str       # the words found
  why: str
  line: str = ""  # the whole line, for the report

  def __str__(self) -> str:
    return f"{self.where}: {self.text!r} ({self.why})"


def _version_tuple(version: str) -> tuple[int, ...]:
  return tuple(int(p) for p in re.findall(r"\d+", version))


class Scrubber:
  """Finds fork-internal words in text."""

  def __init__(self, patterns: list[tuple[str, str]], allow: list[str],
               fork_docs: list[str], target: str,
               fork_paths: list[str] = ()):
    """Args:

    patterns: extra (regex, why) besides the built-in ones.
    allow: regexes of lines that hold no finding, whatever they match.
    fork_docs: names of the fork's documents that must not be referred to
      (`docs/stablehlo.md`, `stablehlo.md`).
    target: the upstream release staged for: older JAX releases named in
      the text are compatibility branches left in.
    fork_paths: this repository's paths that upstream's tree lacks (its
      files and folders: `benchmarks/accelerator.py`, `tests/stablehlo/`).
    """
    self._patterns = [(re.compile(r), why) for r, why in
                      (*BUILTIN_PATTERNS, *patterns)]
    if fork_docs:
      self._patterns.append((re.compile(
          r"(?<![\w/.-])(?:" + "|".join(re.escape(d) for d in sorted(
              fork_docs, key=len, reverse=True)) + r")\b"),
                             "a document of the fork"))
    if fork_paths:
      # A folder ending in "/" is named with its slash (`benchmarks/`, not
      # the word); anything may follow a folder's name.
      self._patterns.append((re.compile(
          r"(?<![\w/.-])(?:" + "|".join(
              re.escape(p) + (r"[\w./-]*" if p.endswith("/") else
                              r"(?:/[\w./-]*)?")
              for p in sorted(fork_paths, key=len, reverse=True))
          + r")(?![\w-])"), "a path of this repository, not of JAX's"))
    self._prose = [(re.compile(r), why) for r, why in PROSE_PATTERNS]
    self._allow = [re.compile(a) for a in allow]
    self._target = _version_tuple(target)

  def scan(self, text: str, where: str, prose: bool = False
           ) -> list[Finding]:
    """The findings in one line (or one short text) of `where`.

    Args:
      text: the line.
      where: where it is, for the finding.
      prose: whether it is read as prose (a message, a description,
        documentation): then `PROSE_PATTERNS` apply too.
    """
    if any(a.search(text) for a in self._allow):
      return []
    found = []
    spans = set()  # a word two patterns match is one finding
    for regex, why in (*self._patterns, *(self._prose if prose else ())):
      for m in regex.finditer(text):
        if m.span() not in spans:
          spans.add(m.span())
          found.append(Finding(where, m.group(0), why, text.strip()))
    for m in _JAX_RELEASE_RE.finditer(text):
      version = _version_tuple(m.group("version"))
      if version < self._target[:len(version)]:
        found.append(Finding(
            where, m.group(0), "a JAX release older than the target: a "
            "compatibility branch or its comment left in", text.strip()))
    return found


def added_lines(repo: pathlib.Path, old: str, new: str
                ) -> list[tuple[str, int, str]]:
  """(path, line number, text) of every line `new` adds over `old`."""
  out = gitcmd.git(repo, "diff", "-U0", "--no-color", "--no-renames",
                   "--no-ext-diff", old, new, command="stage").stdout
  found = []
  path, line = "", 0
  for raw in out.splitlines():
    if raw.startswith("+++ "):
      path = raw[6:] if raw.startswith("+++ b/") else ""
    elif raw.startswith("@@"):
      m = re.match(r"@@ -\S+ \+(\d+)", raw)
      line = int(m.group(1)) if m else 0
    elif raw.startswith("+") and path:
      found.append((path, line, raw[1:]))
      line += 1
  return found


def scrub_commit(scrubber: Scrubber, repo: pathlib.Path, old: str,
                 new: str) -> list[Finding]:
  """Fork-internal words in commit `new`: its added lines, paths, message
  and identities."""
  found = []
  for path, n, text in added_lines(repo, old, new):
    found += scrubber.scan(text, f"{path}:{n}",
                           prose=kind_of(path) == "docs")
  files = gitcmd.git(repo, "diff", "--name-only", "--no-renames", old, new,
                     command="stage").stdout.split()
  for path in files:
    found += scrubber.scan(path, f"{path} (its path)")
  message = gitcmd.git(repo, "log", "-1", "--format=%B", new,
                       command="stage").stdout
  for n, text in enumerate(message.splitlines(), 1):
    found += scrubber.scan(text, f"commit message line {n}", prose=True)
  idents = gitcmd.git(repo, "log", "-1", "--format=%an <%ae>%n%cn <%ce>", new,
                      command="stage").stdout.splitlines()
  for who, text in zip(("author", "committer"), idents):
    found += scrubber.scan(text, who)
  return found


# ---------------------------------------------------------------------------
# Sizes.
# ---------------------------------------------------------------------------

def kind_of(path: str) -> str:
  """"tests", "docs", "build" or "code"."""
  p = pathlib.PurePosixPath(path)
  if p.name in ("BUILD", "BUILD.bazel") or p.suffix == ".bzl":
    return "build"
  if re.search(r"(^|/)tests/", path) or p.name.endswith("_test.py"):
    return "tests"
  if p.suffix in (".md", ".rst", ".txt", ".ipynb"):
    return "docs"
  return "code"


def sizes(repo: pathlib.Path, old: str, new: str) -> dict[str, int]:
  """Lines `new` adds over `old`, by kind, and `non_test` (code + build)."""
  out = gitcmd.git(repo, "diff", "--numstat", "--no-renames", old, new,
                   command="stage").stdout
  added: dict[str, int] = collections.Counter(
      {"code": 0, "build": 0, "tests": 0, "docs": 0})
  deleted = 0
  for line in out.splitlines():
    a, d, path = line.split("\t", 2)
    if a == "-":
      continue  # binary
    added[kind_of(path)] += int(a)
    deleted += int(d)
  return {**added, "non_test": added["code"] + added["build"],
          "deleted": deleted}


# ---------------------------------------------------------------------------
# ruff with upstream's configuration.
# ---------------------------------------------------------------------------

def ruff_config(repo: pathlib.Path) -> str | None:
  """The file holding the base's ruff configuration, if any."""
  for name in ("ruff.toml", ".ruff.toml"):
    if (repo / name).is_file():
      return name
  pyproject = repo / "pyproject.toml"
  if pyproject.is_file() and re.search(
      r"^\[tool\.ruff", pyproject.read_text(encoding="utf-8"), re.M):
    return "pyproject.toml"
  return None


def _ruff_one(ruff: str, repo: pathlib.Path, path: str, text: str
              ) -> list[dict[str, object]]:
  proc = subprocess.run(
      [ruff, "check", "--no-cache", "--output-format=json",
       "--stdin-filename", path, "-"], cwd=repo, input=text,
      capture_output=True, text=True)
  if proc.returncode not in (0, 1):
    raise ForkError(f"ruff failed on {path} in {repo} (exit "
                    f"{proc.returncode}): {proc.stderr.strip()[-2000:]}")
  return [{"file": path, "line": f["location"]["row"], "code": f["code"],
           "message": f["message"]}
          for f in json.loads(proc.stdout or "[]")]


def ruff_commit(ruff: str, repo: pathlib.Path, base: str, old: str,
                new: str) -> list[dict[str, object]]:
  """ruff's findings in the Python files commit `new` adds or changes.

  Run in `repo` (checked out at `new`), so that ruff reads the base's own
  configuration. A finding in a file that exists at `base` is left out
  when the file at `base` has the same (code and message): it is upstream's.
  """
  files = gitcmd.git(repo, "diff", "--name-only", "--diff-filter=AM",
                     "--no-renames", old, new, "--", "*.py",
                     command="stage").stdout.split()
  findings = []
  for path in files:
    text = gitcmd.git(repo, "show", f"{new}:{path}", command="stage").stdout
    found = _ruff_one(ruff, repo, path, text)
    at_base = gitcmd.git(repo, "show", f"{base}:{path}", command="stage",
                         check=False)
    if at_base.returncode == 0 and found:
      known = collections.Counter(
          (f["code"], f["message"])
          for f in _ruff_one(ruff, repo, path, at_base.stdout))
      kept = []
      for f in found:
        key = (f["code"], f["message"])
        if known[key]:
          known[key] -= 1
        else:
          kept.append(f)
      found = kept
    findings += found
  return findings


# ---------------------------------------------------------------------------
# What a reviewer found by hand: JEP index order, patch authors.
# ---------------------------------------------------------------------------

JEP_INDEX = "docs/jep/index.rst"
_JEP_LINE_RE = re.compile(r"^\s+(\S+?):\s.*<([^<>]+)>\s*$")


def jep_index_order(text: str) -> list[str]:
  """What is wrong with the order of `docs/jep/index.rst`'s JEP lines.

  Each line of its table of contents (`  263: JAX PRNG Design
  <263-prng>`) names a JEP by its issue's number: they are in increasing
  order of that number, and each number is one (not a placeholder).
  """
  problems = []
  last = None
  for n, line in enumerate(text.splitlines(), 1):
    m = _JEP_LINE_RE.match(line)
    if not m:
      continue
    number, target = m.groups()
    if not number.isdigit() or not target.startswith(f"{number}-"):
      problems.append(f"{JEP_INDEX}:{n}: {number!r} is not the number of a "
                      f"JEP's issue (its document {target!r}): open the "
                      "issue, and name the file and the line after it")
      continue
    if last is not None and int(number) < last[0]:
      problems.append(f"{JEP_INDEX}:{n}: JEP {number} comes after JEP "
                      f"{last[0]} (line {last[1]}): the index is in numeric "
                      "order")
    last = (int(number), n)
  return problems


_FROM_RE = re.compile(r"^From:\s*(?P<name>[^<>]*?)\s*<(?P<email>[^<>]*)>\s*$")


def patch_author(text: str) -> tuple[str, str] | None:
  """The (name, email) of a `git format-patch` file's `From:` header, if
  it has one (before its first blank line)."""
  for line in text.split("\n\n", 1)[0].splitlines():
    m = _FROM_RE.match(line)
    if m:
      return m.group("name").strip('"'), m.group("email")
  return None
