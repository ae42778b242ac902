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

`stage` turns the queue into a git repository an upstream contributor can
push from: a base commit with upstream's release, then one commit per patch
(in series order), each carrying the overlay modules that patch is the first
to use, with the modules those import, so that every commit is whole, and the
upstream-style tests (`tests/upstream/*_test.py`) whose `# stage-with:` line
names that patch, as `jax/experimental/jax2tf/tests/<file>`. Next to it, one
pull-request description per patch, from its DEP-3 headers.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import tarfile
import tempfile

from forklib import ForkError
from forklib import fetch
from forklib import gitcmd
from forklib import log
from forklib import patchq
from forklib import tree as tree_lib
from forklib import upstream_tests as upstream_tests_lib
from forklib.manifest import Release

# How code names an overlay module: `from jax.experimental.jax2tf import
# call_tf_lib`, `from jax.experimental.jax2tf.call_tf_lib import vmap` (or
# `from jax.experimental.jax2tf.call_tf_lib.<subpackage> import mod`), or an
# attribute of the package, `call_tf_lib.vmap.batch(...)` (its submodules load
# on first use).
_REFERENCE_RES = (
    re.compile(r"from jax\.experimental\.jax2tf import (call_tf_\w+)"),
    re.compile(
        r"from jax\.experimental\.jax2tf\.(call_tf_\w+(?:\.\w+)*) import (\w+)"),
    re.compile(r"\b(call_tf_lib)\.([a-z_]\w*)\b"),
)
_STAGE_WITH_RE = re.compile(r"^# stage-with: (\S+)$", re.MULTILINE)
UPSTREAM_TESTS_DIR = "jax/experimental/jax2tf/tests"


def staged_tests(project: tree_lib.Project) -> dict[str, list[pathlib.Path]]:
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
         "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
         "GIT_COMMITTER_NAME": os.environ.get(
             "GIT_COMMITTER_NAME", "JAX call_tf fork maintainers"),
         "GIT_COMMITTER_EMAIL": os.environ.get(
             "GIT_COMMITTER_EMAIL", "calltf-fork@users.noreply.github.com")}
  return gitcmd.git(cwd, *args, command="stage", env=env).stdout


def _overlay_modules(project: tree_lib.Project) -> dict[str, pathlib.Path]:
  """Overlay modules by dotted name within jax.experimental.jax2tf.

  `call_tf_lib/__init__.py` is `call_tf_lib`, `call_tf_lib/vmap.py` is
  `call_tf_lib.vmap`.
  """
  modules = {}
  for rel in tree_lib.overlay_files(project):
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
      names = [n for g in m.groups() if g for n in g.split(".")]
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


def stage(project: tree_lib.Project, release: Release,
          out: pathlib.Path,
          upstream_tests: pathlib.Path | None = None) -> pathlib.Path:
  """Writes the staging repository for ``release`` at ``out``.

  Args:
    project: the fork's repository.
    release: the upstream release to stage on.
    out: the directory to create.
    upstream_tests: a folder of upstream's tests by tag (see
      `upstream_tests.find_set`); needed when a patch changes upstream's
      tests, which the sdist lacks. The base commit is then the sdist with
      those tests, as in upstream's repository.

  Returns:
    ``out``, holding the git repository (branch ``call-tf-vmap``) and
    ``pull-requests/NNNN-topic.md``.
  """
  out = out.resolve()
  if out.exists():
    raise ForkError(f"{out} already exists; remove it first")
  sdist = fetch.fetch(release)
  queue = patchq.load_queue(project.patches, release.version)
  changing_tests = [p.name for p in queue
                    if any(patchq.is_test_path(fp.path) for fp in p.files)]
  tests_source = None
  if changing_tests:
    if upstream_tests is None:
      raise ForkError(
          f"{', '.join(changing_tests)} change upstream's tests, which jax's "
          "sdist does not carry: pass --upstream-tests DIR, a folder with "
          f"upstream's tests at jax-v{release.version} (a tarball or a "
          "checkout; see ../shared/upstream-tests)")
    tests_source = upstream_tests_lib.find_set(upstream_tests,
                                               release.version)
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
    with tarfile.open(sdist) as tar:
      tar.extractall(staged, filter="data")
    repo = staged / "repo"
    os.rename(staged / f"jax-{release.version}", repo)
    if tests_source is not None:
      upstream_tests_lib.lay_files(upstream_tests_lib.source_files(
          tests_source), repo)
    _git(repo, "init", "-q", "-b", "call-tf-vmap")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=upstream", "-c", "user.email=upstream@jax",
         "commit", "-q", "-m",
         f"jax {release.version} (upstream sdist"
         + (f", and tests from {tests_source.path.name})" if tests_source
            else ")"))
    prs = staged / "pull-requests"
    prs.mkdir()
    have: set[str] = set()
    for patch in queue:
      _git(repo, "am", "-q", "--committer-date-is-author-date",
           str(patch.path))
      added_lines = "".join(text for fp in patch.files for h in fp.hunks
                            for tag, text in h.lines if tag == "+")
      added = []
      for name in _needed(added_lines, modules, have):
        rel = modules[name].relative_to(project.overlay)
        dest = repo / "jax" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(modules[name], dest)
        _git(repo, "add", str(dest.relative_to(repo)))
        added.append(f"jax/{rel.as_posix()}")
        have.add(name)
      for test in tests.get(patch.name, []):
        dest = repo / UPSTREAM_TESTS_DIR / test.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(test, dest)
        _git(repo, "add", str(dest.relative_to(repo)))
        added.append(f"{UPSTREAM_TESTS_DIR}/{test.name}")
      if added:
        _git(repo, "commit", "-q", "--amend", "--no-edit")
      (prs / (patch.name.removesuffix(".patch") + ".md")).write_text(
          pull_request_text(patch, added), encoding="utf-8")
      log.step("stage", f"{patch.name}"
               + (f" + {', '.join(added)}" if added else ""))
    unused = sorted(set(modules) - have)
    if unused:
      raise ForkError(f"no patch imports the overlay modules {unused}; they "
                      "would never reach upstream")
    os.rename(staged, out)
  log.step("stage", f"{out}/repo (branch call-tf-vmap, {len(queue)} commits "
           f"on jax {release.version}); descriptions in {out}/pull-requests")
  return out
