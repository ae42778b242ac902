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
"""Staging what of the queue goes upstream, as pull requests.

`stage` does what the staging plan (`patches/stage.toml`, `stage_plan`)
says: one commit per pull request that is not held, each on the base
alone or stacked `after` another, with a branch of its own
(`call-tf-vmap-NN-name`). A commit is a patch written for upstream
(`patches/stage/`, applied with `git am -3`, its message its own); or the
queue's patches (in series order, over those of the pull requests it is
stacked on) with the overlay modules the plan gives it, as its overlay
patch of `patches/stage/overlay/` has them (`stage_source`: variants,
shaken modules), its upstream-style tests where upstream keeps them and their
BUILD rules (`stage_bazel`), its message the DEP-3 descriptions as prose
(`stage_text`); or files of this repository (a design proposal). Each
gets its CHANGELOG entries and documentation edits. The author and
committer are `--author`'s, required.

Then it checks every commit (`stage_checks`, `stage_conventions`): no
fork-internal word in what it adds or says, upstream's ruff configuration
clean, its non-test code within its limit, every overlay module it uses
present, only the files it may touch, tests with its code, and the
conventions a reviewer checks (message, author, docstrings, compatibility
branches, dataclasses, tests' places, options); with `--verify`
(`stage_verify`) it installs each commit's tree into a venv of its own and
runs the tests it changes. `report.md` and `report.json` say, per commit,
what it is on, what applies, its size, its author, its findings and its
tests, then the held pull requests and what stays in the distribution;
`pull-requests/NN-name.md` are the descriptions. The series is written
even when a check fails, so that it can be read; the command then exits 1
and lists every problem.

The base is a git repository of upstream's (`--onto`, at its HEAD or
`--ref`: any branch, remote-tracking branch, tag or commit of it), or,
without one, upstream's sdist as upstream's git has it (no tests, BUILD
files, CHANGELOG or jax2tf README: the report names what it leaves out).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import shutil
import tempfile
from typing import Any

from forklib import ForkError
from forklib import log
from forklib.manifest import Release
from forklib.project import Project
from forklib.sources import fetch
from forklib.sources import patchq
from forklib.sources import tree as tree_lib
from forklib.upstreaming import gitcmd
from forklib.upstreaming import jep_numbers
from forklib.upstreaming import stage_bazel
from forklib.upstreaming import stage_checks
from forklib.upstreaming import stage_conventions
from forklib.upstreaming import stage_overlays
from forklib.upstreaming import stage_plan
from forklib.upstreaming import stage_precommit
from forklib.upstreaming import stage_source
from forklib.upstreaming import stage_text
from forklib.upstreaming import stage_verify

APPLIED = "applies"
APPLIED_3WAY = "applies with a 3-way merge"
REWORK = "needs rework"

_SDIST_ONLY = ("PKG-INFO",)
_SDIST_ONLY_DIRS = (".egg-info",)
_IDENTITY_RE = re.compile(r"^\s*(?P<name>[^<>]*\S)\s*<(?P<email>[^<>\s]+)>\s*$")

# What git am says about the file a patch does not apply to.
_AM_FAILED_RES = (
    re.compile(r"error: patch failed: (\S+?):\d+"),
    re.compile(r"sha1 information is lacking or useless \((\S+)\)"),
    re.compile(r"Merge conflict in (\S+)"),
    re.compile(r"error: (\S+): does not exist in index"),
    re.compile(r"error: (\S+): No such file or directory"),
    re.compile(r"error: invalid object \S+ \S+ for '([^']+)'"),
)


@dataclasses.dataclass(frozen=True, slots=True)
class Identity:
  name: str
  email: str

  def __str__(self) -> str:
    return f"{self.name} <{self.email}>"

  def env(self) -> dict[str, str]:
    return {"GIT_AUTHOR_NAME": self.name, "GIT_AUTHOR_EMAIL": self.email,
            "GIT_COMMITTER_NAME": self.name,
            "GIT_COMMITTER_EMAIL": self.email}


def identity(author: str | None) -> Identity:
  """Who authors and commits the series: `--author`, always given.

  The machine's git identity is never used: it may be a shared or
  placeholder one, and upstream's CLA check needs the person who signed.

  Raises:
    ForkError: no `author`, or not "Name <email>".
  """
  if not author:
    raise ForkError(
        "stage needs --author 'Your Name <you@example.com>': the person who "
        "sends the pull requests, with the address their CLA with Google "
        "covers (the machine's git identity is never used)")
  m = _IDENTITY_RE.match(author)
  if not m:
    raise ForkError(f"--author {author!r} is not of the form "
                    "'Name <email>'")
  return Identity(m.group("name"), m.group("email"))


@dataclasses.dataclass(slots=True)
class PatchStatus:
  name: str
  status: str
  detail: str = ""


@dataclasses.dataclass(slots=True)
class CommitResult:
  """What became of one pull request."""
  index: int
  name: str
  title: str
  branch: str
  kind: str = ""        # "source", "series" or "files"
  onto: str = ""        # "base", or the pull request it is stacked on
  held: str = ""        # why it is not committed ("" if it is)
  breaking: bool = False
  limit: int = 0        # the non-test lines it may add
  commit: str = ""
  author: str = ""
  committer: str = ""
  patches: list[PatchStatus] = dataclasses.field(default_factory=list)
  modules: list[str] = dataclasses.field(default_factory=list)
  tests: list[str] = dataclasses.field(default_factory=list)
  build_files: list[str] = dataclasses.field(default_factory=list)
  left_out: list[str] = dataclasses.field(default_factory=list)
  problems: list[str] = dataclasses.field(default_factory=list)
  sizes: dict[str, int] = dataclasses.field(default_factory=dict)
  scrub: list[stage_checks.Finding] = dataclasses.field(default_factory=list)
  ruff: list[dict[str, Any]] = dataclasses.field(default_factory=list)
  # Pyrefly's new errors (None: the base pins no Pyrefly hook).
  pyrefly: list[dict[str, Any]] | None = None
  overlay_problem: str = ""   # a held pull request's overlay patch
  # The pull requests it conflicts with, and the files.
  conflicts: dict[str, list[str]] = dataclasses.field(default_factory=dict)
  conventions: list[stage_checks.Finding] = dataclasses.field(
      default_factory=list)
  test_run: stage_verify.TestRun | None = None

  @property
  def slug(self) -> str:
    return f"{self.index:02d}-{self.name}"

  @property
  def applies(self) -> bool:
    return all(p.status != REWORK for p in self.patches)


@dataclasses.dataclass(slots=True)
class StageResult:
  out: pathlib.Path
  base: str
  commits: list[CommitResult]
  problems: list[str]
  verified: bool

  @property
  def ok(self) -> bool:
    return not self.problems


def _git(repo: pathlib.Path, *args: str, env: dict[str, str] | None = None,
         check: bool = True):
  return gitcmd.git(repo, *args, command="stage", env=env, check=check)


def _sdist_base(release: Release, sdist: pathlib.Path,
                repo: pathlib.Path) -> None:
  """Upstream's sdist at `repo` as upstream's git has it, committed."""
  os.rename(tree_lib.unpack(sdist, repo.parent / "unpacked"), repo)
  (repo.parent / "unpacked").rmdir()
  for name in _SDIST_ONLY:
    (repo / name).unlink(missing_ok=True)
  for entry in list(repo.iterdir()):
    if entry.name.endswith(_SDIST_ONLY_DIRS) and entry.is_dir():
      shutil.rmtree(entry)
  _git(repo, "init", "-q", "-b", "upstream")
  _git(repo, "add", "-A")
  _git(repo, "-c", "user.name=upstream", "-c", "user.email=upstream@jax",
       "commit", "-q", "-m", f"jax {release.version} (upstream sdist, as "
       "upstream's git has it: no PKG-INFO, no egg-info)")


def _resolve_ref(onto: pathlib.Path, ref: str | None) -> tuple[str, str]:
  """The commit `ref` names in `onto`, and the full name of a ref holding it.

  `ref` may be a local branch, a remote-tracking branch (`main` finds
  `origin/main` when there is no local `main`), a tag or a commit.
  """
  target = ref or "HEAD"
  candidates = [target]
  if ref and not ref.startswith("refs/"):
    remotes = _git(onto, "for-each-ref", "--format=%(refname)",
                   f"refs/remotes/*/{ref}", check=False).stdout.split()
    candidates += sorted(remotes, key=lambda r: not r.startswith(
        "refs/remotes/origin/"))
  for candidate in candidates:
    proc = _git(onto, "rev-parse", "--verify", "--quiet",
                f"{candidate}^{{commit}}", check=False)
    if proc.returncode == 0:
      sha = proc.stdout.strip()
      full = _git(onto, "rev-parse", "--symbolic-full-name", candidate,
                  check=False).stdout.strip()
      return sha, full
  tags = _git(onto, "tag", "--list", "jax-v*", "--sort=-v:refname",
              check=False).stdout.split()[:5]
  branches = _git(onto, "for-each-ref", "--format=%(refname:short)",
                  "refs/heads", "refs/remotes", check=False
                  ).stdout.split()[:8]
  raise ForkError(
      f"{onto} has no branch, tag or commit {target!r} to stage onto. "
      f"Its branches include {', '.join(branches) or 'none'}; its newest "
      f"release tags {', '.join(tags) or 'none'}. Fetch it first (git -C "
      f"{onto} fetch origin) or pass another --ref.")


def _checkout_base(onto: pathlib.Path, ref: str | None,
                   repo: pathlib.Path) -> str:
  """A clone of `onto` at `repo`, at `ref`; returns the base's description."""
  proc = gitcmd.git(onto, "rev-parse", "--git-dir", command="stage",
                    check=False)
  if not onto.is_dir() or proc.returncode != 0:
    raise ForkError(
        f"--onto {onto} is not a git checkout of upstream's repository: "
        "clone https://github.com/jax-ml/jax and pass its path (any branch "
        "or tag of it with --ref)")
  sha, full = _resolve_ref(onto, ref)
  _git(repo.parent, "clone", "-q", "--no-checkout", "--no-hardlinks",
       str(onto), str(repo))
  if _git(repo, "cat-file", "-e", f"{sha}^{{commit}}",
          check=False).returncode != 0:
    # Only a ref clone does not copy (a remote-tracking branch) holds it.
    _git(repo, "fetch", "-q", "--no-tags", str(onto),
         f"+{full or sha}:refs/stage/base")
  _git(repo, "checkout", "-q", "--detach", sha)
  described = _git(onto, "describe", "--tags", "--always", sha,
                   check=False).stdout.strip() or sha[:12]
  return (f"upstream's repository {onto} at {ref or 'its HEAD'} "
          f"({described}, {sha[:12]})")


def _am(repo: pathlib.Path, patch: patchq.Patch, exclude: list[str]
        ) -> PatchStatus:
  """`git am -3` of `patch` onto HEAD."""
  proc = _git(repo, "am", "-3", "--keep-non-patch",
              "--committer-date-is-author-date",
              *(f"--exclude={p}" for p in exclude), str(patch.path),
              env=gitcmd.committer(), check=False)
  if proc.returncode == 0:
    out = proc.stdout + proc.stderr
    return PatchStatus(patch.name,
                       APPLIED_3WAY if "3-way merge" in out else APPLIED)
  conflicts = _git(repo, "diff", "--name-only", "--diff-filter=U",
                   check=False).stdout.split()
  missing = [m for regex in _AM_FAILED_RES
             for m in regex.findall(proc.stdout + proc.stderr)]
  _git(repo, "am", "--abort", check=False)
  files = sorted(set(conflicts) | set(missing))
  detail = ("conflicts in " + ", ".join(files) if files else
            (proc.stderr.strip().splitlines() or ["git am failed"])[-1])
  return PatchStatus(patch.name, REWORK, detail)


class _Layer:
  """Writes what the plan adds to the patched tree, for one commit."""

  def __init__(self, project: Project, plan: stage_plan.Plan,
               repo: pathlib.Path, base: str):
    self.project = project
    self.plan = plan
    self.repo = repo
    self.base = base
    self.overlay_modules = {
        stage_source.module_name(f"jax/{rel.as_posix()}"): f"jax/{rel.as_posix()}"
        for rel in project.overlay_files() if rel.suffix == ".py"}

  def _source(self, repo_path: str) -> pathlib.Path:
    return self.project.root / repo_path

  def _lay_overlay(self, pr: stage_plan.PullRequest,
                   chain: list[stage_plan.PullRequest],
                   result: CommitResult) -> tuple[list[str], list[str],
                                                  list[stage_plan.Test]]:
    """The modules and tests of `chain`, as `pr`'s commit holds them: as
    the distribution ships them, but where `pr`'s overlay patch changes
    them."""
    variant: dict[str, str] = {}
    if pr.overlay:
      try:
        variant = stage_source.overlay_variant(self.project.root, pr.overlay)
      except ForkError as e:
        result.problems.append(str(e))
      stale = stage_overlays.stale_problem(self.project.root, self.plan, pr)
      if stale:
        result.problems.append(stale)
    written: list[str] = []
    new_modules, new_tests = [], []
    for earlier in chain:
      sources = [(self.plan.repo_path(m), self.plan.repo_path(m))
                 for m in earlier.modules]
      sources += [(f"{stage_plan.UPSTREAM_TESTS}/{t.file}", t.to)
                  for t in earlier.tests]
      for source, path in sources:
        text = variant.get(source)
        if text is None:
          text = self._source(source).read_text(encoding="utf-8")
        self.write(path, text)
        written.append(path)
      if earlier is pr:
        new_modules = [self.plan.repo_path(m) for m in pr.modules]
        new_tests = list(pr.tests)
    return written, new_modules, new_tests

  def lay(self, pr: stage_plan.PullRequest, result: CommitResult,
          patched: str) -> list[str]:
    """Writes the tree of `pr`'s commit over the patched tree; returns the
    files written."""
    chain = self.plan.chain(pr)
    shaken = {self.plan.repo_path(s) for s in self.plan.shaken}
    written, new_modules, new_tests = self._lay_overlay(pr, chain, result)
    written += self._shake(shaken & set(written), written, patched, result)
    self._check_references(written, patched, result)
    written += self._deferred(pr, chain, result)
    written += self.docs(pr, chain, result)
    written += self._build_files(chain, new_modules, new_tests, result)
    result.modules = new_modules
    result.tests = [t.to for t in new_tests]
    return sorted(set(written))

  def _build_files(self, chain: list[stage_plan.PullRequest],
                   new_modules: list[str], new_tests: list[stage_plan.Test],
                   result: CommitResult) -> list[str]:
    modules = [self.plan.repo_path(m) for e in chain for m in e.modules
               if m.endswith(".py")]
    build_files, unlisted = stage_bazel.update(
        self.repo, modules, [(t.to, t.like) for e in chain for t in e.tests])
    result.build_files = [
        b for b in build_files
        if _git(self.repo, "diff", "--quiet", "HEAD", "--", b,
                check=False).returncode != 0]
    new = new_modules + [t.to for t in new_tests]
    for item in unlisted:
      path = item.split(" ")[0]
      if path not in new:
        continue
      if stage_bazel.build_file(self.repo, path) is not None:
        result.problems.append(f"no BUILD rule lists {item}")
      else:
        result.left_out.append(f"BUILD entry of {path} (no BUILD file in "
                               "this base)")
    return build_files

  def write(self, path: str, text: str) -> None:
    dest = self.repo / path
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text, encoding="utf-8")

  def _python_files(self, written: list[str], patched: str) -> list[str]:
    changed = _git(self.repo, "diff", "--name-only", "--no-renames",
                   self.base, patched, "--", "*.py").stdout.split()
    return sorted({p for p in [*written, *changed]
                   if p.endswith(".py") and (self.repo / p).is_file()})

  def _shake(self, shaken: set[str], written: list[str], patched: str,
             result: CommitResult) -> list[str]:
    """Shakes the plan's shaken modules down to what staged code uses."""
    if not shaken:
      return []
    full = {p: (self.repo / p).read_text(encoding="utf-8") for p in shaken}
    current = dict(full)
    for _ in range(10):
      used: dict[str, set[str]] = {p: set() for p in shaken}
      names = {stage_source.module_name(p): p for p in shaken}
      for path in self._python_files(written, patched):
        text = current.get(path) or (self.repo / path).read_text(
            encoding="utf-8")
        for ref in stage_source.references(text, path, names):
          if names[ref.module] != path and ref.name:
            used[names[ref.module]].add(ref.name)
      new = {}
      for p in shaken:
        new[p], undefined = stage_source.shake(full[p], p, used[p])
        for name in sorted(undefined):
          result.problems.append(f"{p} has no {name!r}, which staged code "
                                 "uses")
      if new == current:
        break
      current = new
    for p, text in current.items():
      self.write(p, text)
    return []

  def _check_references(self, written: list[str], patched: str,
                        result: CommitResult) -> None:
    """Every overlay module staged code uses is in this commit."""
    reported = set()
    for path in self._python_files(written, patched):
      text = (self.repo / path).read_text(encoding="utf-8")
      for ref in stage_source.references(text, path, self.overlay_modules):
        module = self.overlay_modules[ref.module]
        if (path, module) in reported:
          continue
        if not (self.repo / module).is_file():
          reported.add((path, module))
          owner = next((pr.name for pr in self.plan.prs for m in pr.modules
                        if self.plan.repo_path(m) == module), "no pull request")
          result.problems.append(
              f"{path}:{ref.line} uses {ref.module}, which this commit lacks "
              f"(patches/stage.toml adds {module} in {owner}): hold the use "
              f"back in this pull request's overlay patch "
              f"(patches/stage/overlay/), or stage the module earlier")

  def _deferred(self, pr: stage_plan.PullRequest,
                chain: list[stage_plan.PullRequest],
                result: CommitResult) -> list[str]:
    """The text a pull request defers: shown from it on, in its chain."""
    written = []
    for later in self.plan.prs:
      shown = later in chain
      for d in later.deferred:
        path = self.repo / d.file
        if not path.is_file():
          if shown:
            result.problems.append(f"{d.file} is not in this tree: the "
                                   f"text {later.name} defers cannot be "
                                   "shown")
          continue
        text = path.read_text(encoding="utf-8")
        count = text.count(d.text)
        if shown:
          if count == 0:
            result.problems.append(
                f"{d.file}: the text pull request {later.name} defers "
                f"({d.text.strip().splitlines()[0][:60]!r}...) is not in "
                "the patched file: a patch changed it; update "
                "patches/stage.toml")
          continue
        if count > 1:
          result.problems.append(f"{d.file}: the text {later.name} defers "
                                 f"occurs {count} times; make it unique")
        elif count == 1:
          path.write_text(text.replace(d.text, d.before), encoding="utf-8")
          written.append(d.file)
    return written

  def docs(self, pr: stage_plan.PullRequest,
           chain: list[stage_plan.PullRequest],
           result: CommitResult) -> list[str]:
    """The chain's CHANGELOG entries, documentation edits and files."""
    written = []
    for earlier in chain:
      for edit in earlier.edits:
        path = self.repo / edit.file
        if not path.is_file():
          if earlier is pr:
            result.left_out.append(f"{edit.file} (not in this base)")
          continue
        text = path.read_text(encoding="utf-8")
        count = text.count(edit.find)
        if count != 1:
          result.problems.append(
              f"{edit.file}: the text {earlier.name} edits occurs {count} "
              f"times, not once ({edit.find.strip()[:60]!r}): upstream "
              "changed it; update the edit in patches/stage.toml")
          continue
        path.write_text(text.replace(edit.find, edit.replace),
                        encoding="utf-8")
        written.append(edit.file)
      for f in earlier.files:
        self.write(f.to, self._source(f.source).read_text(encoding="utf-8"))
        written.append(f.to)
    entries = [(c.section, c.text) for e in chain for c in e.changelog]
    if entries:
      path = self.repo / stage_text.CHANGELOG
      if path.is_file():
        path.write_text(stage_text.changelog_with(
            path.read_text(encoding="utf-8"), entries), encoding="utf-8")
        written.append(stage_text.CHANGELOG)
      elif pr.changelog:
        result.left_out.append(f"{stage_text.CHANGELOG} (not in this base)")
    return written


def _fork_docs(project: Project, repo: pathlib.Path,
               staged: set[str] = frozenset()) -> list[str]:
  """The fork's documents that upstream's tree does not have, but for
  those the plan stages (`staged`: a design proposal)."""
  docs = project.root / "docs"
  names = []
  upstream = set(_git(repo, "ls-files").stdout.split()) | set(staged)
  basenames = {pathlib.PurePosixPath(p).name for p in upstream}
  if docs.is_dir():
    for p in sorted(docs.rglob("*")):
      if p.is_file():
        rel = f"docs/{p.relative_to(docs).as_posix()}"
        if rel not in upstream:
          names.append(rel)
          if p.name not in basenames | {pathlib.PurePosixPath(f).name
                                        for f in staged}:
            names.append(p.name)
  return names


def _fork_paths(project: Project, repo: pathlib.Path, base: str,
                staged: set[str] = frozenset()) -> list[str]:
  """This repository's paths that the base lacks, as a reviewer would read
  them: its files, and its folders (`tests/stablehlo`, `benchmarks/`, a
  top-level one with its slash), the outermost one the base lacks. Not
  `jax/` (what pull requests add to JAX, and proposals name), and not what
  the plan stages (`staged`)."""
  upstream = set(_git(repo, "ls-tree", "-r", "--name-only", base
                      ).stdout.split())
  folders = {str(p) for f in upstream
             for p in pathlib.PurePosixPath(f).parents if str(p) != "."}
  proc = _git(project.root, "ls-files", check=False)
  ours = (proc.stdout.split() if proc.returncode == 0 else
          [p.relative_to(project.root).as_posix()
           for p in project.root.rglob("*") if p.is_file()
           and not any(part.startswith(".") or part == "__pycache__"
                       for part in p.relative_to(project.root).parts)])
  found = set()
  for f in ours:
    if f in upstream or f in staged or f.startswith("jax/"):
      continue
    path = pathlib.PurePosixPath(f)
    missing = [str(p) for p in reversed(path.parents)
               if str(p) != "." and str(p) not in folders]
    if missing:
      found.add(missing[0] + ("/" if "/" not in missing[0] else ""))
    elif "/" in f:
      found.add(f)
  return sorted(found)


def stage(project: Project, release: Release, out: pathlib.Path,
          onto: pathlib.Path | None = None, ref: str | None = None,
          author: str | None = None, verify: bool = False,
          jaxlib: str | None = None,
          verify_requirements: list[str] | None = None) -> StageResult:
  """Writes the staged series for `release` at `out`, checked.

  Args:
    project: the fork's repository.
    release: the upstream release whose queue (and variants) to stage.
    out: the directory to create (it must not exist).
    onto: a git repository of upstream's to stage onto; None: the sdist.
    ref: with `onto`, its branch, tag or commit to start from (default:
      its HEAD).
    author: "Name <email>" for the commits: required.
    verify: install each commit's tree in a venv and run its tests.
    jaxlib: with `verify`, the jaxlib to test with (default: the
      release's test_jaxlib).
    verify_requirements: with `verify`, the base venv's packages instead of
      the release's pins (the tool's own tests stage a toy upstream).

  Returns:
    The result: `out` holds `repo/` (a branch per pull request),
    `report.md`, `report.json`, `pull-requests/`, and with `verify` the
    pytest logs in `verify/`; `problems` lists every failed check.
  """
  out = _new_out(out, onto, ref)
  who = identity(author)
  queue, plan = _queue_and_plan(project, release)
  sdist = None if onto else fetch.fetch(release)
  verify_python = (stage_verify.default_python(release.test_python)
                   if verify else None)
  out.parent.mkdir(parents=True, exist_ok=True)
  with tempfile.TemporaryDirectory(prefix=f".{out.name}.partial-",
                                   dir=out.parent) as tmp:
    staged = pathlib.Path(tmp) / "stage"
    staged.mkdir()
    repo = staged / "repo"
    base_text, base = _base(release, onto, ref, sdist, repo)
    hooks = stage_precommit.pinned(repo)
    results = _commit_all(project, plan, queue, repo, base, staged, who)
    _check_all(project, plan, release, repo, base, results, hooks, staged)
    committed = [r for r in results if r.commit]
    if verify:
      _verify(project, release, repo, base, committed, staged / "verify",
              verify_python, jaxlib or release.test_jaxlib,
              verify_requirements)
    problems = _write_reports(release, base_text, base, plan, who, results,
                              verify, staged, hooks)
    os.rename(staged, out)
  _log_staged(out, base_text, plan.branch, results)
  return StageResult(out, base_text, results, problems, verify)


def _new_out(out: pathlib.Path, onto: pathlib.Path | None,
             ref: str | None) -> pathlib.Path:
  """`out`, resolved, where `stage` may create it; a ForkError where it
  exists or `ref` comes without `onto`."""
  out = out.resolve()
  if out.exists():
    raise ForkError(f"{out} already exists; remove it first")
  if ref and onto is None:
    raise ForkError("--ref needs --onto (a repository to take it from)")
  return out


def _log_staged(out: pathlib.Path, base_text: str, branch: str,
                results: list[CommitResult]) -> None:
  """Logs what `stage` wrote at `out`: the pull requests committed (on
  branches `branch`-NN-name), those held, the reports."""
  committed = sum(1 for r in results if r.commit)
  log.step("stage", f"{out}/repo: {committed} pull requests (branches "
           f"{branch}-NN-name) on {base_text}, {len(results) - committed} "
           f"held; {out}/report.md, report.json; descriptions in "
           f"{out}/pull-requests")


def _queue_and_plan(project: Project, release: Release
                    ) -> tuple[dict[str, patchq.Patch], stage_plan.Plan]:
  """`release`'s queue by patch name, and the staging plan, checked against
  it and the overlay's files."""
  queue = {p.name: p for p in patchq.load_queue(project.patches,
                                                release.version)}
  plan = stage_plan.load(project.root, list(queue),
                         stage_plan.overlay_paths(project))
  return queue, plan


def _base(release: Release, onto: pathlib.Path | None, ref: str | None,
          sdist: pathlib.Path | None, repo: pathlib.Path) -> tuple[str, str]:
  """The base at `repo`, checked out: its description and commit."""
  if onto is None:
    _sdist_base(release, sdist, repo)
    base_text = f"upstream's sdist {release.sdist_name}"
  else:
    base_text = _checkout_base(onto.resolve(), ref, repo)
  base = _git(repo, "rev-parse", "HEAD").stdout.strip()
  _git(repo, "checkout", "-q", "--detach", base)
  return base_text, base


def _write_reports(release: Release, base_text: str, base: str,
                   plan: stage_plan.Plan, who: Identity,
                   results: list[CommitResult], verify: bool,
                   staged: pathlib.Path,
                   hooks: stage_precommit.Hooks) -> list[str]:
  """report.json and report.md; returns the problems."""
  config = stage_checks.ruff_config(staged / "repo")
  problems = _problems(plan, results, config, verify, who)
  report = _report_json(release, base_text, base, plan, who, results,
                        problems, config, verify, hooks)
  (staged / "report.json").write_text(json.dumps(report, indent=2) + "\n",
                                      encoding="utf-8")
  (staged / "report.md").write_text(_report_md(report), encoding="utf-8")
  return problems


def _held_overlay_problem(project: Project, plan: stage_plan.Plan,
                          pr: stage_plan.PullRequest) -> str:
  """Why a held pull request's overlay patch does not apply, or is not
  what its `overlay_from` derives ("": it does, and is)."""
  if not pr.overlay:
    return ""
  try:
    stage_source.overlay_variant(project.root, pr.overlay)
  except ForkError as e:
    return str(e)
  return stage_overlays.stale_problem(project.root, plan, pr)


def _commit_all(project: Project, plan: stage_plan.Plan,
                queue: dict[str, patchq.Patch], repo: pathlib.Path,
                base: str, staged: pathlib.Path,
                who: Identity) -> list[CommitResult]:
  """One commit per pull request that is not held, each on its own base."""
  layer = _Layer(project, plan, repo, base)
  prs_dir = staged / "pull-requests"
  prs_dir.mkdir()
  results: list[CommitResult] = []
  commits: dict[str, str] = {}
  patched: dict[str, str] = {}
  for pr in plan.prs:
    result = CommitResult(
        pr.index, pr.name, pr.title, f"{plan.branch}-{pr.slug}",
        kind="source" if pr.source else (
            "series" if pr.patches or pr.modules else
            "jep" if pr.jep is not None else "files"),
        onto=pr.after or "base", held=pr.held, breaking=pr.breaking,
        limit=plan.limit(pr))
    results.append(result)
    if pr.held:
      log.step("stage", f"{pr.slug}: held ({pr.held})")
      if pr.jep is not None:
        _write_jep_issue(project, pr, staged, who, result)
      result.overlay_problem = _held_overlay_problem(project, plan, pr)
      continue
    parent = commits[pr.after] if pr.after else base
    if pr.source:
      _commit_source(project, pr, layer, repo, parent, result, who)
    elif pr.jep is not None:
      _commit_jep(project, plan, pr, layer, repo, parent, result, who)
    else:
      patched[pr.name] = _patched_tree(
          repo, patched.get(pr.after, base), [queue[n] for n in pr.patches],
          result, pr.slug)
      _commit_layered(plan, pr, queue, layer, repo, parent,
                      patched[pr.name], result, who)
    commits[pr.name] = result.commit
    _git(repo, "branch", "-f", result.branch, result.commit)
    log.step("stage", f"{pr.slug}: committed {result.commit[:12]} on "
             f"{result.onto}")
  _git(repo, "checkout", "-q", "--detach", base)
  _write_descriptions(plan, repo, base, results, prs_dir)
  return results


def conflicts(repo: pathlib.Path, results: list[CommitResult]
              ) -> dict[str, dict[str, list[str]]]:
  """Which committed pull requests conflict, pairwise, and in what files.

  Two pull requests conflict when git cannot merge their commits (`git
  merge-tree`): whichever lands second must be rebased onto the first. A
  pull request and one it is stacked on are not compared.
  """
  committed = [r for r in results if r.commit]
  found: dict[str, dict[str, list[str]]] = {r.name: {} for r in committed}
  for i, a in enumerate(committed):
    for b in committed[i + 1:]:
      if _stacked(a, b, committed):
        continue
      proc = _git(repo, "merge-tree", "--write-tree", "--name-only",
                  "--no-messages", a.commit, b.commit, check=False)
      if proc.returncode == 0:
        continue
      if proc.returncode != 1:
        raise ForkError(f"git merge-tree of {a.slug} and {b.slug} failed: "
                        f"{proc.stderr.strip()}")
      files = sorted({f for f in proc.stdout.splitlines()[1:] if f.strip()})
      found[a.name][b.name] = files
      found[b.name][a.name] = files
  return found


def _stacked(a: CommitResult, b: CommitResult,
             committed: list[CommitResult]) -> bool:
  """Whether `b` is stacked on `a` (directly or through others)."""
  by_name = {r.name: r for r in committed}
  onto = b.onto
  while onto != "base" and onto in by_name:
    if onto == a.name:
      return True
    onto = by_name[onto].onto
  return False


def _write_descriptions(plan: stage_plan.Plan, repo: pathlib.Path,
                        base: str, results: list[CommitResult],
                        prs_dir: pathlib.Path) -> None:
  """pull-requests/NN-name.md: each committed pull request's description,
  with the order they land in and what each conflicts with."""
  committed = [r for r in results if r.commit]
  names = [r.name for r in committed]
  found = conflicts(repo, committed)
  by_name = {pr.name: pr for pr in plan.prs}
  commits = {r.name: r.commit for r in committed}
  for position, result in enumerate(committed, 1):
    pr = by_name[result.name]
    parent = commits[pr.after] if pr.after else base
    files = _git(repo, "diff", "--name-only", "--no-renames", parent,
                 result.commit).stdout.split()
    message = _git(repo, "log", "-1", "--format=%B", result.commit).stdout
    result.conflicts = found[result.name]
    (prs_dir / f"{pr.slug}.md").write_text(stage_text.pull_request_text(
        pr.title, message, files, result.tests, pr.after, pr.breaking,
        stage_text.landing_order(position, names, found[result.name])),
        encoding="utf-8")


def _patched_tree(repo: pathlib.Path, start: str,
                  patches: list[patchq.Patch], result: CommitResult,
                  slug: str) -> str:
  """`start` with `patches` applied by `git am -3`, as a commit."""
  _git(repo, "checkout", "-q", "--detach", start)
  for patch in patches:
    left_out = [fp.path for fp in patch.files
                if fp.old_path and not (repo / fp.old_path).exists()
                and patchq.is_test_path(fp.path)]
    status = _am(repo, patch, left_out)
    result.patches.append(status)
    result.left_out += [f"{p} (edited by {patch.name}; not in this base)"
                        for p in left_out]
    log.step("stage", f"{slug}: {patch.name}: {status.status}"
             + (f" ({status.detail})" if status.detail else ""))
  return _git(repo, "rev-parse", "HEAD").stdout.strip()


def _commit(repo: pathlib.Path, written: list[str], message: str,
            who: Identity, result: CommitResult, amend: bool = False) -> None:
  """Commits what is written (amending the commit `git am` made)."""
  if written:
    _git(repo, "add", "-f", "--", *written)
  with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8",
                                   delete=False) as f:
    f.write(message)
  try:
    _git(repo, "commit", "-q", "--allow-empty", "--no-verify",
         "--cleanup=verbatim", *(["--amend", "--reset-author"] if amend
                                 else []), "-F", f.name, env=who.env())
  finally:
    os.unlink(f.name)
  result.commit = _git(repo, "rev-parse", "HEAD").stdout.strip()
  result.author, result.committer = _git(
      repo, "log", "-1", "--format=%an <%ae>%n%cn <%ce>").stdout.split(
          "\n")[:2]


def _commit_layered(plan: stage_plan.Plan, pr: stage_plan.PullRequest,
                    queue: dict[str, patchq.Patch], layer: "_Layer",
                    repo: pathlib.Path, parent: str, patched: str,
                    result: CommitResult, who: Identity) -> None:
  """A pull request of the queue's patches, modules, tests and files."""
  _git(repo, "checkout", "-q", "--detach", parent)
  _git(repo, "read-tree", "-u", "--reset", patched)
  written = layer.lay(pr, result, patched)
  message = stage_text.commit_message(
      pr.title, pr.summary, [queue[n] for n in pr.patches], plan.bug_of(pr))
  _commit(repo, written, message, who, result)


def _commit_source(project: Project, pr: stage_plan.PullRequest,
                   layer: "_Layer", repo: pathlib.Path, parent: str,
                   result: CommitResult, who: Identity) -> None:
  """A pull request written for upstream: its patch, then its texts."""
  _git(repo, "checkout", "-q", "--detach", parent)
  patch = patchq.parse(project.root / pr.source, pr.source)
  left_out = [fp.path for fp in patch.files
              if fp.old_path and not (repo / fp.old_path).exists()
              and patchq.is_test_path(fp.path)]
  result.problems += _patch_author_problems(pr.source, patch.path)
  with tempfile.TemporaryDirectory(prefix="stage-am-") as tmp:
    status = _am(repo, _with_author(patch, who, pathlib.Path(tmp)),
                 left_out)
  result.patches.append(status)
  result.left_out += [f"{p} (edited by {pr.source}; not in this base)"
                      for p in left_out]
  if status.status == REWORK:
    _git(repo, "checkout", "-q", "--detach", parent)
    _commit(repo, [], f"{pr.title}\n\n(does not apply: {status.detail})\n",
            who, result)
    return
  message = _git(repo, "log", "-1", "--format=%B").stdout.rstrip() + "\n"
  written = layer.docs(pr, [pr], result)
  _commit(repo, written, message, who, result, amend=True)
  changed = _git(repo, "diff", "--name-only", "--no-renames", parent,
                 result.commit).stdout.split()
  result.modules = [f for f in changed
                    if stage_checks.kind_of(f) == "code"]
  result.tests = [f for f in changed if stage_checks.kind_of(f) == "tests"
                  and f.endswith(".py")]


def _patch_author_problems(source: str, path: pathlib.Path) -> list[str]:
  """A patch written for upstream names a person in its `From:`, or none."""
  author = stage_checks.patch_author(path.read_text(encoding="utf-8"))
  if author is None:
    return []
  return [f"{source}: its From: header: {p}; or drop the From: and Date: "
          "lines (stage applies the patch as --author)"
          for p in stage_conventions.identity_problems(*author)]


def _with_author(patch: patchq.Patch, who: Identity,
                 tmp: pathlib.Path) -> patchq.Patch:
  """`patch`, with `From: who` where it names no author (git am needs one;
  the commit is `who`'s in any case)."""
  text = patch.path.read_text(encoding="utf-8")
  if stage_checks.patch_author(text) is not None:
    return patch
  first, _, rest = text.partition("\n")
  if not first.startswith("From "):
    rest, first = text, "From 0000000000000000000000000000000000000000 " \
        "Mon Sep 17 00:00:00 2001"
  copy = tmp / patch.path.name
  copy.write_text(f"{first}\nFrom: {who}\n{rest}", encoding="utf-8")
  return dataclasses.replace(patch, path=copy)


def _jep_text(project: Project, pr: stage_plan.PullRequest, who: Identity,
              result: CommitResult) -> tuple[str, str] | None:
  """The proposal as JAX keeps it, and its title; None (a problem) if it
  has no title."""
  source = (project.root / pr.jep.source).read_text(encoding="utf-8")
  try:
    return (stage_text.jep_document(source, pr.jep.issue, who.name),
            stage_text.jep_title(source))
  except ValueError as e:
    result.problems.append(f"{pr.jep.source}: {e}")
    return None


def _write_jep_issue(project: Project, pr: stage_plan.PullRequest,
                     staged: pathlib.Path, who: Identity,
                     result: CommitResult) -> None:
  """jep-issue.md: the text of a proposal's JEP issue, not opened yet."""
  jep = _jep_text(project, pr, who, result)
  if jep is not None:
    (staged / "jep-issue.md").write_text(jep[0], encoding="utf-8")


def _commit_jep(project: Project, plan: stage_plan.Plan,
                pr: stage_plan.PullRequest, layer: "_Layer",
                repo: pathlib.Path, parent: str, result: CommitResult,
                who: Identity) -> None:
  """A design proposal whose JEP issue is open: its document, its line of
  the JEP index, its CHANGELOG entries."""
  _git(repo, "checkout", "-q", "--detach", parent)
  written = layer.docs(pr, [pr], result)
  jep = _jep_text(project, pr, who, result)
  index = repo / stage_checks.JEP_INDEX
  if jep is not None:
    text, title = jep
    layer.write(pr.jep.path(), text)
    written.append(pr.jep.path())
    if not index.is_file():
      result.left_out.append(f"{stage_checks.JEP_INDEX} (not in this base)")
    else:
      try:
        index.write_text(stage_text.jep_index_with(
            index.read_text(encoding="utf-8"), pr.jep.issue, title,
            pr.jep.slug), encoding="utf-8")
        written.append(stage_checks.JEP_INDEX)
      except ValueError as e:
        result.problems.append(str(e))
  message = stage_text.commit_message(pr.title, pr.summary, [],
                                      plan.bug_of(pr))
  _commit(repo, written, message, who, result)


def _check_all(project: Project, plan: stage_plan.Plan, release: Release,
               repo: pathlib.Path, base: str, results: list[CommitResult],
               hooks: stage_precommit.Hooks, staged: pathlib.Path) -> None:
  """Every check of every commit, recorded in its result."""
  staged_sources = {f.source for pr in plan.prs for f in pr.files} | {
      pr.jep.source for pr in plan.prs if pr.jep is not None}
  scrubber = stage_checks.Scrubber(
      [(p.regex, p.why) for p in plan.scrub_patterns],
      list(plan.scrub_allow), _fork_docs(project, repo, staged_sources),
      release.version, _fork_paths(project, repo, base, staged_sources))
  commits = {r.name: r.commit for r in results if r.commit}
  by_name = {pr.name: pr for pr in plan.prs}
  ruff = stage_precommit.ruff_executable(hooks)
  pyrefly = stage_precommit.pyrefly_venv(hooks)
  pyrefly_at: dict[str, list[dict[str, Any]]] = {}

  def pyrefly_errors(commit: str) -> list[dict[str, Any]]:
    if commit not in pyrefly_at:
      log.step("stage", f"Pyrefly {hooks.pyrefly} on {commit[:12]}")
      pyrefly_at[commit] = stage_precommit.pyrefly_errors(pyrefly, repo,
                                                          commit)
    return pyrefly_at[commit]

  for result in results:
    pr = by_name[result.name]
    if pr.jep is not None:
      _check_jep(project, plan, pr, scrubber, staged, result)
    if not result.commit:
      continue
    parent = commits[pr.after] if pr.after else base
    result.sizes = stage_checks.sizes(repo, parent, result.commit)
    result.scrub = stage_checks.scrub_commit(scrubber, repo, parent,
                                             result.commit)
    result.ruff = stage_checks.ruff_commit(ruff, repo, base, parent,
                                           result.commit)
    if pyrefly is not None and result.sizes.get("code", 0):
      result.pyrefly = stage_precommit.new_errors(
          pyrefly_errors(parent), pyrefly_errors(result.commit))
    elif pyrefly is not None:
      result.pyrefly = []
    result.conventions = _conventions(repo, parent, result.commit)
    result.problems += _commit_problems(repo, parent, pr, result)
  prs_dir = staged / "pull-requests"
  for md in sorted(prs_dir.iterdir()):
    for n, line in enumerate(md.read_text(encoding="utf-8").splitlines(), 1):
      for finding in scrubber.scan(line, f"pull-requests/{md.name}:{n}",
                                   prose=True):
        next(r for r in results if md.name.startswith(r.slug)
             ).scrub.append(finding)


def _check_jep(project: Project, plan: stage_plan.Plan,
               pr: stage_plan.PullRequest, scrubber: stage_checks.Scrubber,
               staged: pathlib.Path, result: CommitResult) -> None:
  """A proposal's issue text (its commit's is the commit's to check), and
  its numbers against what `jep_numbers` computes from this tree."""
  issue = staged / "jep-issue.md"
  if not result.commit and issue.is_file():
    for n, line in enumerate(issue.read_text(encoding="utf-8").splitlines(),
                             1):
      result.scrub += scrubber.scan(line, f"jep-issue.md:{n}", prose=True)
  if pr.jep.numbers:
    text = (project.root / pr.jep.source).read_text(encoding="utf-8")
    result.problems += [f"{pr.jep.source}: {p}" for p in jep_numbers.check(
        project.root, plan, text)]


def _conventions(repo: pathlib.Path, parent: str,
                 commit: str) -> list[stage_checks.Finding]:
  """What the commit does against upstream's conventions (stage_conventions)."""
  added = stage_checks.added_lines(repo, parent, commit)
  message = _git(repo, "log", "-1", "--format=%B", commit).stdout
  new_files = _git(repo, "diff", "--name-only", "--diff-filter=A",
                   "--no-renames", parent, commit).stdout.split()
  existing = _git(repo, "ls-tree", "-r", "--name-only", parent).stdout.split()
  return [
      *stage_conventions.docstring_references(
          repo, commit, added, stage_conventions.tree_definitions(repo,
                                                                  commit)),
      *stage_conventions.compat_branches(added),
      *stage_conventions.dataclass_slots(added),
      *stage_conventions.test_placement(new_files, existing),
      *stage_conventions.option_keys(added, message)]


def _commit_problems(repo: pathlib.Path, parent: str,
                     pr: stage_plan.PullRequest,
                     result: CommitResult) -> list[str]:
  """The message's problems, files outside `touches`, code without tests."""
  message = _git(repo, "log", "-1", "--format=%B", result.commit).stdout
  problems = stage_conventions.message_problems(message)
  files = _git(repo, "diff", "--name-only", "--no-renames", parent,
               result.commit).stdout.split()
  if pr.touches:
    outside = [f for f in files if f not in pr.touches]
    if outside:
      problems.append(f"changes {', '.join(outside)}, outside what it may "
                      f"touch ({', '.join(pr.touches)})")
  if stage_checks.JEP_INDEX in files:
    problems += stage_checks.jep_index_order(_git(
        repo, "show", f"{result.commit}:{stage_checks.JEP_INDEX}").stdout)
  if (result.sizes.get("code", 0) and not result.sizes.get("tests", 0)
      and not any(patchq.is_test_path(item.split(" ")[0])
                  for item in result.left_out)):
    problems.append(f"adds {result.sizes['code']} lines of code and no "
                    "test: a pull request brings the tests of what it adds")
  return problems


def _verify(project: Project, release: Release, repo: pathlib.Path,
            base: str, results: list[CommitResult], logs: pathlib.Path,
            python: str, jaxlib: str,
            requirements: list[str] | None) -> None:
  """Installs each commit in a venv of its own and runs its tests."""
  reqs = requirements if requirements is not None else (
      stage_verify.requirements(project.root, jaxlib,
                                release.test_tensorflow))
  base_venv = stage_verify.base_venv(python, reqs)
  constraints = [f"jaxlib=={jaxlib}"]
  series_tests: dict[str, list[str]] = {}
  at_base: set[str] = set()
  for result in results:
    changed = _git(repo, "diff", "--name-only", "--no-renames", base,
                   result.commit).stdout.split()
    present = set(_git(repo, "ls-tree", "-r", "--name-only",
                       result.commit).stdout.split())
    series_tests[result.commit] = [
        p for p in changed if p in present and p.endswith("_test.py")
        and stage_checks.kind_of(p) == "tests"]
    base_files = set(_git(repo, "ls-tree", "-r", "--name-only",
                          base).stdout.split())
    at_base |= {p for p in series_tests[result.commit] if p in base_files}
  failing_at_base: set[str] = set()
  if at_base:
    log.step("stage", f"verify: the base, for its own tests "
             f"{', '.join(sorted(at_base))}")
    run = stage_verify.verify_tree(repo, base, base_venv, sorted(at_base),
                                   jaxlib, constraints, logs / "00-base.log")
    failing_at_base = set(run.failed) | set(run.errors)
  for result in results:
    files = series_tests[result.commit]
    if not files and not result.sizes.get("code", 0):
      log.step("stage", f"verify: {result.slug}: no code and no tests: "
               "nothing to run")
      continue
    log.step("stage", f"verify: {result.slug}: installing its tree, "
             f"running {len(files)} test files")
    run = stage_verify.verify_tree(repo, result.commit, base_venv, files,
                                   jaxlib, constraints,
                                   logs / f"{result.slug}.log")
    run.failed_at_base = sorted(
        t for t in run.failed + run.errors if t in failing_at_base)
    run.failed = [t for t in run.failed if t not in failing_at_base]
    run.errors = [t for t in run.errors if t not in failing_at_base]
    result.test_run = run
    log.step("stage", f"verify: {result.slug}: {len(run.passed)} passed, "
             f"{len(run.failed) + len(run.errors)} failed"
             + (f" ({run.problem})" if run.problem else ""))


def _problems(plan: stage_plan.Plan, results: list[CommitResult],
              config: str | None, verify: bool, who: Identity) -> list[str]:
  problems = [f"--author: {p}" for p in stage_conventions.identity_problems(
      who.name, who.email)]
  for r in results:
    if not r.commit:
      # A held proposal's issue text is checked as a commit is.
      problems += [f"held {r.slug}: {p}" for p in r.problems]
      problems += [f"held {r.slug}: fork-internal word: {f}" for f in r.scrub]
      continue
    where = f"commit {r.slug}"
    for p in r.patches:
      if p.status == REWORK:
        how = ("refresh it on this base (docs/maintainers.md, \"Staging the "
               "queue for upstream\")" if r.kind == "source" else
               "`python3 build/fork.py rebase` refreshes it")
        problems.append(f"{where}: {p.name} does not apply ({p.detail}); "
                        f"{how}")
    problems += [f"{where}: {p}" for p in r.problems]
    if r.sizes.get("non_test", 0) > r.limit:
      problems.append(
          f"{where}: adds {r.sizes['non_test']} lines of non-test code, "
          f"more than {r.limit} (max_added_lines): split it in "
          "patches/stage.toml")
    problems += [f"{where}: fork-internal word: {f}" for f in r.scrub]
    problems += [f"{where}: convention: {f}" for f in r.conventions]
    problems += [f"{where}: ruff: {f['file']}:{f['line']}: {f['code']} "
                 f"{f['message']}" for f in r.ruff]
    problems += [f"{where}: Pyrefly: {f['file']}:{f['line']}: {f['code']} "
                 f"{f['message']}" for f in r.pyrefly or []]
    if verify and r.test_run is not None:
      run = r.test_run
      if run.problem:
        problems.append(f"{where}: tests: {run.problem}")
      problems += [f"{where}: test failed: {t}"
                   for t in run.failed + run.errors]
  if config is None:
    problems.append("the base has no ruff configuration (pyproject.toml "
                    "[tool.ruff] or ruff.toml): the commits were checked "
                    "with ruff's defaults, not upstream's")
  return problems


def _commit_json(r: CommitResult) -> dict[str, Any]:
  run = r.test_run
  return {
      "index": r.index, "name": r.name, "slug": r.slug, "title": r.title,
      "kind": r.kind, "onto": r.onto, "held": r.held,
      "breaking": r.breaking, "commit": r.commit,
      "branch": r.branch if r.commit else "", "author": r.author,
      "committer": r.committer, "applies": r.applies,
      "patches": [dataclasses.asdict(p) for p in r.patches],
      "modules": r.modules, "tests": r.tests, "build_files": r.build_files,
      "left_out": r.left_out,
      "added_lines": {k: v for k, v in r.sizes.items() if k != "deleted"},
      "deleted_lines": r.sizes.get("deleted", 0),
      "max_added_lines": r.limit,
      "within_size_limit": r.sizes.get("non_test", 0) <= r.limit,
      "fork_words": [dataclasses.asdict(f) for f in r.scrub],
      "conventions": [dataclasses.asdict(f) for f in r.conventions],
      "ruff": r.ruff, "pyrefly": r.pyrefly, "problems": r.problems,
      "conflicts": r.conflicts,
      "tests_run": None if run is None else {
          "ok": run.ok, "files": run.files, "passed": run.passed,
          "failed": run.failed + run.errors, "skipped": run.skipped,
          "failed_at_base": run.failed_at_base, "problem": run.problem,
          "log": run.log and f"verify/{pathlib.Path(run.log).name}"},
  }


def _report_json(release: Release, base_text: str, base: str,
                 plan: stage_plan.Plan, who: Identity,
                 results: list[CommitResult], problems: list[str],
                 config: str | None, verify: bool,
                 hooks: stage_precommit.Hooks) -> dict[str, Any]:
  by_name = {pr.name: pr for pr in plan.prs}
  return {
      "release": release.version, "base": base_text, "base_commit": base,
      "branch": plan.branch, "author": str(who),
      "max_added_lines": plan.max_added_lines,
      "ruff_config": config, "verified": verify, "ok": not problems,
      "pre_commit": {"ruff": hooks.ruff, "pyrefly": hooks.pyrefly,
                     "pyrefly_deps": list(hooks.pyrefly_deps),
                     "left_out": list(hooks.left_out)},
      "problems": problems,
      "commits": [_commit_json(r) for r in results if r.commit],
      "held": [{"index": r.index, "name": r.name, "title": r.title,
                "why": r.held, "after": "" if r.onto == "base" else r.onto,
                "overlay": by_name[r.name].overlay,
                "overlay_problem": r.overlay_problem}
               for r in results if not r.commit],
      "stays": [dataclasses.asdict(s) for s in plan.stays],
  }


def _tests_cell(c: dict[str, Any], verified: bool) -> str:
  run = c["tests_run"]
  if run is None and verified:
    return "none (no code, no tests)"
  if run is None:
    return ", ".join(c["tests"]) or "not run (--verify runs them)"
  if run["problem"]:
    return f"NOT RUN: {run['problem']}"
  return (f"{len(run['passed'])} passed, {len(run['failed'])} failed"
          + (f", {len(run['failed_at_base'])} failing at the base too"
             if run["failed_at_base"] else ""))


def _commit_row(c: dict[str, Any], verified: bool) -> str:
  size = c["added_lines"].get("non_test", 0)
  notes = "; ".join(filter(None, [
      "BREAKING" if c["breaking"] else "",
      *(f"{p['name']}: {p['status']}" + (f" ({p['detail']})"
                                          if p["detail"] else "")
        for p in c["patches"] if p["status"] != APPLIED),
      ("left out: " + ", ".join(c["left_out"]) if c["left_out"] else ""),
      *(f"conflicts with {other} ({', '.join(files)})"
        for other, files in c["conflicts"].items())]))
  pyrefly = "-" if c["pyrefly"] is None else str(len(c["pyrefly"]))
  return (f"| {c['index']} | {c['name']}: {c['title']} | {c['onto']} | "
          f"{'yes' if c['applies'] else 'NO'} | {size}"
          f"{'' if c['within_size_limit'] else ' (OVER)'} of "
          f"{c['max_added_lines']} | {c['added_lines'].get('tests', 0)} | "
          f"{len(c['fork_words'])} | {len(c['conventions'])} | "
          f"{len(c['ruff'])} | {pyrefly} | {_tests_cell(c, verified)} | "
          f"{notes or '-'} |")


def _report_md(report: dict[str, Any]) -> str:
  hooks = report["pre_commit"]
  pinned = ((f"ruff {hooks['ruff']}" if hooks["ruff"] else
             "ruff at the tool's own pin (the base pins none)") + ", "
            + (f"Pyrefly {hooks['pyrefly']} (its new errors against the "
               "parent, on the whole project)" if hooks["pyrefly"] else
               "no Pyrefly (the base pins none)")
            + (f"; not installed: {', '.join(hooks['left_out'])}"
               if hooks["left_out"] else ""))
  lines = [f"# The queue staged for upstream (jax {report['release']})", "",
           f"Base: {report['base']}. One branch per pull request "
           f"(`{report['branch']}-NN-name`), each on the base alone unless "
           f"stacked on another (\"on\"); author and committer "
           f"{report['author']}. ruff: upstream's configuration in "
           f"`{report['ruff_config'] or 'NONE'}`. Upstream's pre-commit "
           f"hooks: {pinned}.", "",
           "| # | pull request | on | applies | non-test lines | test lines "
           "| fork words | conventions | ruff | Pyrefly | tests | notes |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
  lines += [_commit_row(c, report["verified"]) for c in report["commits"]]
  if report["held"]:
    lines += ["", "## Held", "", "| # | pull request | why |", "|---|---|---|"]
    lines += [f"| {h['index']} | {h['name']}: {h['title']} | {h['why']}"
              + (f" (its overlay patch: {h['overlay_problem']})"
                 if h["overlay_problem"] else "") + " |"
              for h in report["held"]]
  if report["stays"]:
    lines += ["", "## What stays in the distribution", ""]
    for s in report["stays"]:
      what = ", ".join(s["patches"] + s["modules"]) or "-"
      lines.append(f"- **{s['name']}** ({what}): {s['why']}")
  if report["problems"]:
    lines += ["", f"## {len(report['problems'])} problems", ""]
    lines += [f"- {p}" for p in report["problems"]]
  else:
    lines += ["", "Every check passed" + (", every commit's tests included."
                                          if report["verified"] else
                                          " (tests not run: --verify runs "
                                          "them).")]
  return "\n".join(lines) + "\n"
