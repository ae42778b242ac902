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
"""Staging the patch queue as upstream pull requests.

`stage` turns the queue into a git branch an upstream reviewer can take:
one commit per patch (in series order, with the patch's own author and
message), each carrying the overlay modules that patch is the first to use,
with the modules those import, so that every commit is whole; the
upstream-style tests (`tests/upstream/*_test.py`) whose `# stage-with:` line
names that patch, as `jax/experimental/jax2tf/tests/<file>`, that line
stripped (it is the fork's marker, not upstream's); and Bazel's BUILD files
updated for each new module (the `py_library` that lists `call_tf.py`) and
each new test (a test rule like `call_tf_test`'s).

Onto a checkout of upstream's repository (`--onto PATH`, at a release tag or
`main`), each patch is applied with `git am -3`; one that does not apply is
left out and reported as needing rework, with the files in conflict, and the
others go on. Without one, the base is upstream's sdist as upstream's git
has it (no PKG-INFO, no egg-info): it has no tests and no BUILD files, so a
patch's edits of upstream's tests are left out of its commit and named.
Either way `report.md` says, commit by commit, what applies and what needs
rework; next to it, one pull-request description per patch, from its DEP-3
headers.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import shutil
import tempfile

from forklib import ForkError
from forklib import fetch
from forklib import gitcmd
from forklib import log
from forklib import patchq
from forklib import tree as tree_lib
from forklib.manifest import Release
from forklib.project import Project

# How code names an overlay module: `from jax.experimental.jax2tf import
# call_tf_lib`, `from jax.experimental.jax2tf.call_tf_lib.<subpackage> import
# mod`, or an attribute chain of the package,
# `call_tf_lib.batching.dispatch.batch(...)` (its submodules load on first
# use; the names that are not modules are dropped).
_REFERENCE_RES = (
    re.compile(r"from jax\.experimental\.jax2tf import (call_tf_\w+)"),
    re.compile(
        r"from jax\.experimental\.jax2tf\.(call_tf_\w+(?:\.\w+)*) import (\w+)"),
    re.compile(r"\b(call_tf_lib)((?:\.[a-z_]\w*)+)"),
)
_STAGE_WITH_RE = re.compile(r"^# stage-with: (\S+)$", re.MULTILINE)
UPSTREAM_TESTS_DIR = "jax/experimental/jax2tf/tests"


def staged_tests(project: Project) -> dict[str, list[pathlib.Path]]:
  """The upstream-style tests, by the patch they are staged with."""
  tests: dict[str, list[pathlib.Path]] = {}
  for path in sorted((project.root / "tests" / "upstream").glob("*_test.py")):
    m = _STAGE_WITH_RE.search(path.read_text(encoding="utf-8"))
    if not m:
      raise ForkError(f"{path} has no `# stage-with: <patch>` line")
    tests.setdefault(m.group(1), []).append(path)
  return tests


def _git(cwd: pathlib.Path, *args: str) -> str:
  env = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
         "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", **gitcmd.committer()}
  return gitcmd.git(cwd, *args, command="stage", env=env).stdout


def _overlay_modules(project: Project) -> dict[str, pathlib.Path]:
  """Overlay modules by dotted name within jax.experimental.jax2tf.

  `call_tf_lib/__init__.py` is `call_tf_lib`, `call_tf_lib/batching/rule.py`
  is `call_tf_lib.batching.rule`.
  """
  modules = {}
  for rel in project.overlay_files():
    if rel.suffix != ".py":
      continue
    parts = list(rel.with_suffix("").parts)
    if parts[:2] == ["experimental", "jax2tf"]:
      parts = parts[2:]
    if parts[-1] == "__init__":
      parts = parts[:-1]
    modules[".".join(parts)] = project.overlay / rel
  return modules


def _references(text: str) -> list[str]:
  """The overlay modules `text` names, packages before their modules."""
  found = []
  for regex in _REFERENCE_RES:
    for m in regex.finditer(text):
      # A subpackage's modules: `from ...call_tf_lib.sub import mod`.
      names = [n for g in m.groups() if g for n in g.split(".") if n]
      found += [".".join(names[:i + 1]) for i in range(len(names))]
  return found


def _needed(text: str, modules: dict[str, pathlib.Path],
            have: set[str]) -> list[str]:
  """Overlay modules `text` uses, with the modules they use, not in `have`."""
  needed: list[str] = []
  todo = [m for m in _references(text) if m in modules]
  while todo:
    name = todo.pop(0)
    if name in have or name in needed:
      continue
    needed.append(name)
    todo += [m for m in _references(modules[name].read_text())
             if m in modules]
  return needed


def pull_request_text(patch: patchq.Patch, added: list[str]) -> str:
  """The description of the pull request of one patch."""
  description = patch.headers.get("Description", "").split("\n")
  body = "\n".join(description[1:]).strip()
  files = [fp.path for fp in patch.files] + added
  return (f"# {patch.subject}\n\n{description[0]}\n\n{body}\n\n"
          f"Part of {patch.headers.get('Bug', patchq.BUG_URL)}.\n\n"
          "Files:\n" + "".join(f"- `{f}`\n" for f in files))


@dataclasses.dataclass
class Staged:
  """What became of one patch."""
  patch: str
  status: str                 # APPLIED, APPLIED_3WAY or REWORK
  detail: str = ""
  added: list[str] = dataclasses.field(default_factory=list)
  left_out: list[str] = dataclasses.field(default_factory=list)
  tests: list[str] = dataclasses.field(default_factory=list)
  build_files: list[str] = dataclasses.field(default_factory=list)


# What git am says about the file a patch does not apply to.
_AM_FAILED_RES = (
    re.compile(r"error: patch failed: (\S+?):\d+"),
    re.compile(r"sha1 information is lacking or useless \((\S+)\)"),
    re.compile(r"Merge conflict in (\S+)"),
    re.compile(r"error: (\S+): does not exist in index"),
    re.compile(r"error: (\S+): No such file or directory"),
)

APPLIED = "applies"
APPLIED_3WAY = "applies with a 3-way merge"
REWORK = "needs rework"

_SDIST_ONLY = ("PKG-INFO",)
_SDIST_ONLY_DIRS = (".egg-info",)


def strip_markers(text: str) -> str:
  """`text` without the fork's `# stage-with:` lines."""
  return _STAGE_WITH_RE.sub("", text).replace("\n\n\n\n", "\n\n\n")


def _build_file(repo: pathlib.Path, path: str) -> pathlib.Path | None:
  """The BUILD file of the package `path` (a file) is in, if the tree has one.

  The nearest BUILD (or BUILD.bazel) in `path`'s directory or above it, up
  to `jax/`.
  """
  parts = pathlib.PurePosixPath(path).parent.parts
  for n in range(len(parts), 0, -1):
    for name in ("BUILD", "BUILD.bazel"):
      candidate = repo.joinpath(*parts[:n], name)
      if candidate.is_file():
        return candidate
  return None


def _add_to_library(build: pathlib.Path, src: str, anchor: str) -> bool:
  """Adds `src` to the srcs of the py_library listing `anchor`.

  Returns:
    Whether the file changed (False: already listed, or no such library).
  """
  text = build.read_text(encoding="utf-8")
  if f'"{src}"' in text:
    return False
  m = re.search(r'srcs = \[(?P<body>[^\]]*"' + re.escape(anchor)
                + r'"[^\]]*)\]', text)
  if not m:
    return False
  names = re.findall(r'"([^"]+)"', m.group("body"))
  line = text[:m.start()].rsplit("\n", 1)[-1]
  pad = line[:len(line) - len(line.lstrip())]
  body = "".join(f'\n{pad}    "{n}",' for n in sorted({*names, src}))
  text = text[:m.start()] + f"srcs = [{body}\n{pad}]" + text[m.end():]
  build.write_text(text, encoding="utf-8")
  return True


def _add_test_rule(build: pathlib.Path, test: str) -> bool:
  """Adds a test rule for `test` (a file name) to the tests' BUILD.

  Modelled on the rule of `call_tf_test.py` (same macro, tags and deps);
  a plain `jax_multiplatform_test` if there is none.

  Returns:
    Whether the file changed (False: a rule names the test already).
  """
  text = build.read_text(encoding="utf-8")
  name = test.removesuffix(".py")
  if f'"{test}"' in text:
    return False
  m = re.search(r'\n(\w+)\(\n    name = "call_tf_test",\n.*?\n\)\n', text,
                re.DOTALL)
  if m:
    rule = m.group(0).replace('"call_tf_test"', f'"{name}"').replace(
        '"call_tf_test.py"', f'"{test}"')
  else:
    rule = (f'\njax_multiplatform_test(\n    name = "{name}",\n'
            f'    srcs = ["{test}"],\n    tags = ["jax2tf"],\n'
            '    deps = ["//jax/experimental/jax2tf"],\n)\n')
  build.write_text(text.rstrip("\n") + "\n" + rule, encoding="utf-8")
  return True


def _update_build_files(repo: pathlib.Path, modules: list[str],
                        tests: list[str]) -> tuple[list[str], list[str]]:
  """Lists new modules and tests in Bazel's BUILD files.

  Returns:
    The BUILD files changed, and what could not be listed (no BUILD file
    or no rule to add it to), both as paths in the repository.
  """
  changed, missing = set(), []
  for path in modules:
    build = _build_file(repo, path)
    src = (pathlib.PurePosixPath(path).relative_to(
        build.parent.relative_to(repo).as_posix()).as_posix()
        if build else None)
    if build is None or not (_add_to_library(build, src, "call_tf.py")
                             or f'"{src}"' in build.read_text()):
      missing.append(path)
    else:
      changed.add(build.relative_to(repo).as_posix())
  for path in tests:
    build = _build_file(repo, path)
    if build is None or build.parent != repo / pathlib.PurePosixPath(
        path).parent:
      missing.append(path)
      continue
    _add_test_rule(build, pathlib.PurePosixPath(path).name)
    changed.add(build.relative_to(repo).as_posix())
  return sorted(changed), missing


def _am(repo: pathlib.Path, patch: patchq.Patch, exclude: list[str]
        ) -> tuple[str, str]:
  """`git am -3` of `patch`; its status and, if it fails, the conflicts."""
  proc = _git_proc(repo, "am", "-3", "--committer-date-is-author-date",
                   *(f"--exclude={p}" for p in exclude), str(patch.path))
  if proc.returncode == 0:
    out = proc.stdout + proc.stderr
    return (APPLIED_3WAY if "3-way merge" in out else APPLIED), ""
  conflicts = _git_proc(repo, "diff", "--name-only",
                        "--diff-filter=U").stdout.split()
  missing = [m for regex in _AM_FAILED_RES
             for m in regex.findall(proc.stdout + proc.stderr)]
  _git_proc(repo, "am", "--abort")
  files = sorted(set(conflicts) | set(missing))
  detail = ("conflicts in " + ", ".join(files) if files else
            (proc.stderr.strip().splitlines() or ["git am failed"])[-1])
  return REWORK, detail


def _git_proc(cwd: pathlib.Path, *args: str):
  return gitcmd.git(cwd, *args, command="stage", env=gitcmd.committer(),
                    check=False)


def report_text(release: Release, base: str, results: list[Staged]) -> str:
  """report.md: commit by commit, what applies and what needs rework."""
  lines = [f"# The call_tf queue staged for upstream (jax {release.version})",
           "", f"Base: {base}. Branch `call-tf-vmap`, one commit per patch "
           "that applies.", "",
           "| patch | status | test | added | BUILD | notes |",
           "|---|---|---|---|---|---|"]
  for r in results:
    notes = "; ".join(filter(None, [
        r.detail,
        ("left out (not in this base): " + ", ".join(r.left_out)
         if r.left_out else "")]))
    lines.append(
        f"| {r.patch} | {r.status} | {', '.join(r.tests) or 'NONE'} | "
        f"{len(r.added)} file(s) | {', '.join(r.build_files) or '-'} | "
        f"{notes or '-'} |")
  rework = [r.patch for r in results if r.status == REWORK]
  untested = [r.patch for r in results
              if r.status != REWORK and not r.tests]
  held_out = [f"{r.patch}: {', '.join(r.left_out)}" for r in results
              if r.left_out]
  lines += ["", f"{len(results) - len(rework)} of {len(results)} commits "
            "apply to this base."]
  if rework:
    lines += ["", "Needs rework before sending (does not apply here; "
              "`python3 build/fork.py rebase` refreshes a patch):", ""]
    lines += [f"- {p}" for p in rework]
  if held_out:
    lines += ["", "Edits this base cannot hold (upstream's tests and BUILD "
              "files are not in the sdist: stage onto a checkout of "
              "upstream's repository with `--onto`):", ""]
    lines += [f"- {h}" for h in held_out]
  if untested:
    lines += ["", "Commits without a test (an upstream reviewer will ask "
              "for one: add a tests/upstream/*_test.py with a "
              "`# stage-with:` line naming the patch):", ""]
    lines += [f"- {p}" for p in untested]
  return "\n".join(lines) + "\n"


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
  _git(repo, "init", "-q", "-b", "call-tf-vmap")
  _git(repo, "add", "-A")
  _git(repo, "-c", "user.name=upstream", "-c", "user.email=upstream@jax",
       "commit", "-q", "-m", f"jax {release.version} (upstream sdist, as "
       "upstream's git has it: no PKG-INFO, no egg-info)")


def _checkout_base(onto: pathlib.Path, ref: str | None,
                   repo: pathlib.Path) -> str:
  """A clone of the checkout `onto` at `repo`, on a new branch at `ref`."""
  if not (onto / ".git").exists():
    raise ForkError(
        f"--onto {onto} is not a git checkout of upstream's repository "
        "(no .git): clone https://github.com/jax-ml/jax and pass its path, "
        "at a release tag (git checkout jax-vVERSION) or at main")
  _git(repo.parent, "clone", "-q", "--no-hardlinks", str(onto), str(repo))
  target = ref or _git(onto, "rev-parse", "HEAD").strip()
  proc = _git_proc(repo, "checkout", "-q", "-b", "call-tf-vmap", target)
  if proc.returncode != 0:
    raise ForkError(f"{onto} has no {target!r} to stage onto: "
                    f"{proc.stderr.strip()}")
  described = _git_proc(repo, "describe", "--tags", "--always").stdout.strip()
  return (f"upstream's repository {onto} at {ref or 'its HEAD'} "
          f"({described})")


def stage(project: Project, release: Release,
          out: pathlib.Path, onto: pathlib.Path | None = None,
          ref: str | None = None) -> pathlib.Path:
  """Writes the staging repository for ``release`` at ``out``.

  Args:
    project: the fork's repository.
    release: the upstream release whose patch queue (and variants) to stage.
    out: the directory to create (it must not exist).
    onto: a git checkout of upstream's repository to stage onto; None:
      upstream's sdist of `release`.
    ref: with `onto`, the commit, tag or branch to start from (default: the
      checkout's HEAD).

  Returns:
    ``out``, holding the git repository (branch ``call-tf-vmap``),
    ``report.md`` and ``pull-requests/NNNN-topic.md``.
  """
  out = out.resolve()
  if out.exists():
    raise ForkError(f"{out} already exists; remove it first")
  if ref and onto is None:
    raise ForkError("--ref needs --onto (a checkout to take it from)")
  queue = patchq.load_queue(project.patches, release.version)
  sdist = None if onto else fetch.fetch(release)
  modules = _overlay_modules(project)
  tests = staged_tests(project)
  unknown = sorted(set(tests) - {p.name for p in queue})
  if unknown:
    raise ForkError(f"tests/upstream names patches that are not in the "
                    f"series: {', '.join(unknown)}")
  out.parent.mkdir(parents=True, exist_ok=True)
  with tempfile.TemporaryDirectory(prefix=f".{out.name}.partial-",
                                   dir=out.parent) as tmp:
    staged = pathlib.Path(tmp) / "stage"
    staged.mkdir()
    repo = staged / "repo"
    if onto is None:
      _sdist_base(release, sdist, repo)
      base = f"upstream's sdist {release.sdist_name}"
    else:
      base = _checkout_base(onto.resolve(), ref, repo)
    prs = staged / "pull-requests"
    prs.mkdir()
    have: set[str] = set()
    results = []
    for patch in queue:
      left_out = [fp.path for fp in patch.files
                  if fp.old_path and not (repo / fp.old_path).exists()
                  and patchq.is_test_path(fp.path)]
      status, detail = _am(repo, patch, left_out)
      result = Staged(patch.name, status, detail, left_out=left_out)
      results.append(result)
      if status == REWORK:
        log.step("stage", f"{patch.name}: NEEDS REWORK ({detail})")
        continue
      added_lines = "".join(text for fp in patch.files for h in fp.hunks
                            for tag, text in h.lines if tag == "+")
      new_modules, new_tests = [], []
      for name in _needed(added_lines, modules, have):
        rel = modules[name].relative_to(project.overlay)
        dest = repo / "jax" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(modules[name], dest)
        new_modules.append(f"jax/{rel.as_posix()}")
        have.add(name)
      for test in tests.get(patch.name, []):
        dest = repo / UPSTREAM_TESTS_DIR / test.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(strip_markers(test.read_text(encoding="utf-8")),
                        encoding="utf-8")
        new_tests.append(f"{UPSTREAM_TESTS_DIR}/{test.name}")
      result.tests = new_tests + [
          fp.path for fp in patch.files
          if patchq.is_test_path(fp.path) and fp.path not in left_out]
      build_files, unlisted = _update_build_files(repo, new_modules, new_tests)
      result.build_files = build_files
      if unlisted and onto is not None:
        result.detail = "; ".join(filter(None, [
            result.detail, "no BUILD rule lists " + ", ".join(unlisted)]))
      result.added = new_modules + new_tests
      changed = result.added + build_files
      if changed:
        _git(repo, "add", "--", *changed)
        date = _git_proc(repo, "log", "-1", "--format=%aI").stdout.strip()
        gitcmd.git(repo, "commit", "-q", "--amend", "--no-edit",
                   command="stage", env={"GIT_COMMITTER_DATE": date})
      (prs / (patch.name.removesuffix(".patch") + ".md")).write_text(
          pull_request_text(patch, result.added), encoding="utf-8")
      log.step("stage", f"{patch.name}: {status}"
               + (f" + {', '.join(changed)}" if changed else "")
               + (f"; left out: {', '.join(left_out)}" if left_out else ""))
    unused = sorted(set(modules) - have)
    if unused and not any(r.status == REWORK for r in results):
      raise ForkError(f"no patch imports the overlay modules {unused}; they "
                      "would never reach upstream")
    (staged / "report.md").write_text(report_text(release, base, results),
                                      encoding="utf-8")
    os.rename(staged, out)
  applied = sum(r.status != REWORK for r in results)
  log.step("stage", f"{out}/repo (branch call-tf-vmap, {applied} of "
           f"{len(queue)} patches as commits on {base}); {out}/report.md; "
           f"descriptions in {out}/pull-requests")
  return out
