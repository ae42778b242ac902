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
"""Rebasing the patch queue onto another upstream release.

The queue applies exactly to the release it was written for. For another
release, `rebase` replays it with git's three-way merge: upstream's old
release as the base commit, the queue as commits on it, then `git rebase
--onto` upstream's new release. A patch that still applies exactly is left
alone; one whose context moved is written, refreshed, to
`patches/variants/<new>/<name>` (the series stays one list). A conflict stops
everything, shows the conflicting diff and leaves the work repository for the
maintainer, as the maintainer guide describes; nothing in patches/ changes.

A merge without a textual conflict can still break the code, so after each
patch git replays, `forklib/mergecheck.py` checks the Python files it
touched: they must compile with the release's Python, and ruff's F821/F822
must find no undefined name that upstream's own file does not have. A patch
that fails is a conflict: the rebase stops there, naming the file and the
problem.
"""

from __future__ import annotations

import datetime
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

from forklib import ForkError
from forklib import envs
from forklib import fetch
from forklib import gitcmd
from forklib import log
from forklib import mergecheck
from forklib import patchq
from forklib import tree as tree_lib
from forklib.manifest import Release
from forklib.manifest import version_tuple
from forklib.project import Project


def _git(cwd: pathlib.Path, *args: str, check: bool = True
         ) -> subprocess.CompletedProcess:
  return gitcmd.git(cwd, *args, command="rebase", check=check, env={
      **gitcmd.committer(), "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"})


def _commit_tree(repo: pathlib.Path, sdist: pathlib.Path, version: str,
                 branch: str) -> None:
  """Commits the contents of ``sdist`` as the root of ``branch``."""
  _git(repo, "checkout", "-q", "--orphan", branch)
  _git(repo, "rm", "-rq", "--cached", "--ignore-unmatch", ".")
  for p in repo.iterdir():
    if p.name != ".git":
      _git(repo, "clean", "-fdxq", "--", p.name)
  with tempfile.TemporaryDirectory() as tmp:
    for p in tree_lib.unpack(sdist, pathlib.Path(tmp)).iterdir():
      os.rename(p, repo / p.name)
  _git(repo, "add", "-A")
  _git(repo, "-c", "user.name=upstream", "-c", "user.email=upstream@jax",
       "commit", "-q", "-m", f"jax {version}")


def _set_last_update(text: str, day: datetime.date) -> str:
  return re.sub(r"^Last-Update: .*$", f"Last-Update: {day.isoformat()}", text,
                count=1, flags=re.MULTILINE)


def rebase(project: Project, version: str, source: str | None = None, *,
           workdir: pathlib.Path | None = None,
           today: datetime.date | None = None,
           resume: pathlib.Path | None = None) -> list[str]:
  """Refreshes the queue of release `source` for release `version`.

  Args:
    project: the fork project.
    version: the release to rebase onto.
    source: a release the queue applies to exactly; default: the newest
      other release in the manifest.
    workdir: where to keep the work repository (a temporary directory by
      default; kept only on conflict).
    today: the Last-Update date of refreshed patches.
    resume: the work repository of an earlier rebase that stopped at a
      conflict, once the maintainer resolved it and finished `git rebase
      --continue`: only the export step runs.

  Returns:
    The names of the patches written as variants for `version`.

  Raises:
    ForkError: the queue does not apply to `source`, or a patch conflicts
      on `version` (the message shows the conflict and the work repository).
  """
  manifest = project.manifest()
  target = manifest.get(version)
  others = [r for r in manifest.releases if r.version != version]
  if not source and not others:
    raise ForkError("rebase needs a second release in the manifest to "
                    "rebase from; pass --from")
  base = (manifest.get(source) if source
          else max(others, key=lambda r: version_tuple(r.version)))
  today = today or datetime.date.today()
  names = patchq.read_series(project.patches)
  if resume is not None:
    if (resume / ".git" / "rebase-merge").exists() or (
        resume / ".git" / "rebase-apply").exists():
      raise ForkError(f"the rebase in {resume} is still in progress: resolve "
                      "the conflict and run `git rebase --continue` first")
    return _export(project, target, resume, names, today)
  queue = patchq.load_queue(project.patches, base.version)
  workdir = workdir or pathlib.Path(tempfile.mkdtemp(prefix="fork-rebase-"))
  repo = workdir / "repo"
  repo.mkdir(parents=True)
  _git(repo, "init", "-q")
  _commit_tree(repo, fetch.fetch(base), base.version, "source")
  _git(repo, "am", "-q", "--committer-date-is-author-date",
       *(str(p.path) for p in queue))
  _commit_tree(repo, fetch.fetch(target), target.version, "target")
  _git(repo, "checkout", "-q", "-b", "rebased", "source")
  log.step("rebase", f"replaying {len(queue)} patches from jax "
           f"{base.version} onto {target.version} in {repo}, checking "
           "each merged patch's Python files (compile, undefined names)")
  proc = _git(repo, "rebase", "-q", "--committer-date-is-author-date",
              "--exec", _merge_check_command(project, target),
              "--onto", "target", "source~" + str(len(queue)), "rebased",
              check=False)
  if proc.returncode != 0:
    unmerged = _git(repo, "diff", "--name-only", "--diff-filter=U",
                    check=False).stdout.split()
    if not unmerged and "merge-check: " in proc.stdout + proc.stderr:
      raise _broken_merge(repo, target, proc.stdout + proc.stderr)
    current = _git(repo, "log", "-1", "--format=%s", "REBASE_HEAD",
                   check=False).stdout.strip()
    diff = _git(repo, "diff", check=False).stdout
    raise ForkError(
        f"patch {current!r} conflicts with jax {target.version}; nothing in "
        f"patches/ was changed. The conflict:\n{diff[-6000:]}\n"
        f"Resolve it in {repo} (edit, `git add`, `git rebase --continue`), "
        f"then run `python build/fork.py rebase {target.version} --resume "
        f"{repo}` to write the variants (see docs/maintainers.md).")
  return _export(project, target, repo, names, today)


def _merge_check_command(project: Project, target: Release) -> str:
  """The `git rebase --exec` command that checks each merged patch."""
  args = [sys.executable, str(pathlib.Path(mergecheck.__file__).resolve()),
          "--python", envs.find_python(target), "--ruff", envs.ruff(),
          "--base", "target"]
  return " ".join(shlex.quote(a) for a in args)


def _broken_merge(repo: pathlib.Path, target: Release,
                  output: str) -> ForkError:
  """The error for a patch that merged cleanly but left a file broken."""
  problems = [l.removeprefix("merge-check: ") for l in output.splitlines()
              if l.startswith("merge-check: ")]
  subject = _git(repo, "log", "-1", "--format=%s", "HEAD",
                 check=False).stdout.strip()
  return ForkError(
      f"patch {subject!r} merged into jax {target.version} without a textual "
      "conflict, but leaves Python code broken; this is a conflict, and "
      "nothing in patches/ was changed:\n  "
      + "\n  ".join(p.removeprefix(subject + ": ") for p in problems)
      + f"\nFix it in {repo} (edit, `git commit -a --amend`, `git rebase "
      f"--continue`), then run `python build/fork.py rebase {target.version} "
      f"--resume {repo}` to write the variants (see docs/maintainers.md).")


def _export(project: Project, target: Release, repo: pathlib.Path,
            names: list[str], today: datetime.date) -> list[str]:
  """Writes the rebased patches that differ from the queue as variants."""
  with tempfile.TemporaryDirectory() as tmp:
    _git(repo, "format-patch", "-q", "-N", "--zero-commit", "--no-signature",
         "-o", tmp, "target..rebased")
    refreshed = sorted(pathlib.Path(tmp).glob("*.patch"))
    if len(refreshed) != len(names):
      raise ForkError(f"the rebase produced {len(refreshed)} patches for "
                      f"{len(names)} in the series (a patch became empty?); "
                      f"inspect {repo}")
    written = []
    variants = project.patches / "variants" / target.version
    with tempfile.TemporaryDirectory() as check_dir:
      tree = tree_lib.unpack(fetch.fetch(target), pathlib.Path(check_dir))
      for name, new in zip(names, refreshed):
        original = patchq.parse(patchq.resolve(project.patches, name))
        try:
          patchq.apply(original, tree)  # exact: no variant needed
          continue
        except patchq.PatchError:
          pass
        refreshed_patch = patchq.parse(new, name=name)
        patchq.apply(refreshed_patch, tree)
        variants.mkdir(parents=True, exist_ok=True)
        (variants / name).write_text(
            _set_last_update(new.read_text(), today), encoding="utf-8")
        written.append(name)
        log.step("rebase", f"{name}: refreshed -> "
                 f"{(variants / name).relative_to(project.root)}")
  return written
