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

`rebase NEW --from OLD` replays the queue with git's three-way merge:
upstream's OLD as the base commit, the queue (as it applies to OLD) as
commits on it, then `git rebase --onto` upstream's NEW. The trees are
upstream's git tree at the tags `jax-vOLD` and `jax-vNEW` when a checkout of
upstream's repository is given (`--checkout`), else the sdists plus what the
sdists lack and the queue edits: upstream's test files, from a folder of
`jax-v<version>.tar.gz` exports of upstream's tags (`--upstream-tests`, by
default `../shared/upstream-tests` beside the repository), the nearest
earlier tag's for a release without its own, as `test` takes them.

A patch that still applies exactly to NEW is left alone; one whose context
moved is written, refreshed, to `patches/variants/NEW/<name>` (the series
stays one list). A release the manifest does not list gets its entry
(`forklib.upstreaming.newrelease`: the sdist's sha256 verified, the jaxlib and
TensorFlow pins proposed and checked by installing them), with its jaxlib
pins and the CI workflow. Then `check` runs for NEW, and, unless
`--no-suites`, the release's smoke suite and upstream's suites (with a stock
baseline recorded first for a release that has none).

A conflict stops everything and names the patch, each conflicting file and
each of the patch's hunks there that NEW's file no longer holds; nothing in
the repository changes, and the work repository is kept in the cache
(`$JAX_FORK_CACHE/rebase/`) for the maintainer, as the maintainer guide
describes. A merge without a textual conflict can still break the code, so
after each patch git replays, `upstreaming/mergecheck.py` checks the Python
files it touched: they must compile with the release's Python, and ruff's
F821/F822 must find no undefined name that upstream's own file does not
have. A patch that fails is a conflict too.

Everything else happens in scratch directories of the cache
(`forklib.scratch`), with $TMPDIR pointing there for git, pip and pytest:
nothing is left in /tmp.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tarfile

from forklib import ForkError
from forklib import log
from forklib import scratch
from forklib.manifest import Manifest
from forklib.manifest import Release
from forklib.manifest import version_tuple
from forklib.project import Project
from forklib.project import cache_root
from forklib.sources import fetch
from forklib.sources import patchq
from forklib.sources import tree as tree_lib
from forklib.testing import baseline
from forklib.testing import envs
from forklib.testing import testrun
from forklib.testing import upstream_tests
from forklib.upstreaming import gitcmd
from forklib.upstreaming import mergecheck
from forklib.upstreaming import newrelease

_STATE = "rebase.json"


def _git(cwd: pathlib.Path, *args: str, check: bool = True
         ) -> subprocess.CompletedProcess:
  return gitcmd.git(cwd, *args, command="rebase", check=check, env={
      **gitcmd.committer(), "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"})


def _set_last_update(text: str, day: datetime.date) -> str:
  return re.sub(r"^Last-Update: .*$", f"Last-Update: {day.isoformat()}", text,
                count=1, flags=re.MULTILINE)


def default_tests_dir(project: Project) -> pathlib.Path | None:
  """`../shared/upstream-tests` beside the repository, if it exists."""
  candidate = project.root.parent / "shared" / "upstream-tests"
  return candidate if candidate.is_dir() else None


@dataclasses.dataclass
class Result:
  """What a rebase did.

  Attributes:
    release: the release rebased onto, as the manifest now lists it.
    source: the release the queue was rebased from.
    variants: the patches written as variants for `release`.
    added: the files written for a release the manifest did not list.
    check: `check`'s exit status for `release`.
    suites: the smoke and upstream suites' row, None if not run.
    notes: what the maintainer should know (which test set was used...).
  """
  release: Release
  source: str
  variants: list[str]
  added: list[str]
  check: int
  suites: testrun.Row | None
  notes: list[str]

  @property
  def ok(self) -> bool:
    return self.check == 0 and (self.suites is None or self.suites.ok)

  def report(self) -> str:
    """The closing lines of `rebase`."""
    r = self.release
    lines = [f"rebase of the queue from jax {self.source} onto {r.version}:"]
    lines.append(
        f"  patches: {len(self.variants)} refreshed as variants in "
        f"patches/variants/{r.version}/: {', '.join(self.variants)}; review "
        "them" if self.variants else
        "  patches: the queue applies to it exactly; nothing to refresh")
    if self.added:
      lines.append(f"  new release {r.label}: wrote {', '.join(self.added)} "
                   f"(jaxlib {r.jaxlib}, test_jaxlib {r.test_jaxlib}, "
                   f"tensorflow {r.tensorflow}, test_tensorflow "
                   f"{r.test_tensorflow}, Python {', '.join(r.python)})")
    lines.append(f"  check: {'ok' if self.check == 0 else 'FAILS'}")
    if self.suites is None:
      lines.append("  suites: NOT RUN (--no-suites): run `python3 build/"
                   f"fork.py test --upstream {r.version} --upstream-tests "
                   "DIR`")
    else:
      row = self.suites
      fork = (f"{row.fork[0]} passed, {row.fork[1]} failed" if row.fork
              else "not run")
      upstream = ("not run" if row.upstream is None else
                  f"{row.upstream[0]} passed, {row.upstream[1]} failed, "
                  f"{row.upstream[2]} beyond stock")
      lines.append(f"  smoke suite: {fork}; upstream's suites: {upstream}; "
                   f"{row.status}")
    lines += [f"  note: {n}" for n in self.notes]
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class _Trees:
  """Where the base and target trees come from.

  Attributes:
    checkout: a checkout of upstream's repository (tags jax-v<version>), or
      None for the sdists.
    base_tests: upstream's tests for the base release (sdist mode, when the
      queue edits tests).
    target_tests: the same for the target release.
  """
  checkout: pathlib.Path | None
  base_tests: upstream_tests.TestSet | None
  target_tests: upstream_tests.TestSet | None

  def describe(self) -> list[str]:
    if self.checkout is not None:
      return [f"trees: upstream's repository {self.checkout} at its tags"]
    return [f"upstream's tests for jax {s.release}: {s.describe()}"
            for s in (self.base_tests, self.target_tests) if s is not None]


def _test_edits(queue: list[patchq.Patch]) -> dict[str, list[str]]:
  """The upstream test files each patch of `queue` edits (not creates)."""
  edits: dict[str, list[str]] = {}
  for patch in queue:
    files = [fp.path for fp in patch.files
             if patchq.is_test_path(fp.path) and fp.old_path is not None]
    if files:
      edits[patch.name] = files
  return edits


def _tag(version: str) -> str:
  return f"jax-v{version}"


def _plan_trees(project: Project, queue: list[patchq.Patch], base: str,
                target: str, checkout: pathlib.Path | None,
                tests_dir: pathlib.Path | None) -> _Trees:
  """Checks, before any work, that both trees can be had; says how.

  Raises:
    ForkError: the checkout lacks a tag, or the queue edits upstream's tests
      and no test set holds them.
  """
  if checkout is not None:
    if not (checkout / ".git").exists():
      raise ForkError(f"--checkout {checkout} is not a git checkout of "
                      "upstream's repository")
    for version in (base, target):
      proc = _git(checkout, "rev-parse", "-q", "--verify",
                  f"refs/tags/{_tag(version)}^{{commit}}", check=False)
      if proc.returncode != 0:
        raise ForkError(
            f"{checkout} has no tag {_tag(version)}: fetch upstream's tags "
            f"(`git -C {checkout} fetch --tags`), or rebase without "
            "--checkout (on the sdists and upstream's tests by tag)")
    return _Trees(checkout, None, None)
  edits = _test_edits(queue)
  if not edits:
    return _Trees(None, None, None)
  shown = "; ".join(f"{name}: {', '.join(files)}"
                    for name, files in edits.items())
  if tests_dir is None:
    raise ForkError(
        f"the queue edits upstream's tests ({shown}), which upstream's "
        "sdists do not hold. Pass --upstream-tests DIR (a folder of "
        "jax-v<version>.tar.gz exports of upstream's tags, such as "
        "../shared/upstream-tests) or --checkout (a checkout of upstream's "
        "repository with its tags).")
  sets = []
  for version in (base, target):
    test_set = upstream_tests.find_set(tests_dir, version)
    files = upstream_tests.source_files(test_set)
    missing = [f"{name}: {f}" for name, fs in edits.items() for f in fs
               if f not in files]
    if missing:
      raise ForkError(f"upstream's tests {test_set.path} lack files the queue "
                      f"edits ({'; '.join(missing)}); pass --checkout (a "
                      "checkout of upstream's repository) instead")
    sets.append(test_set)
  return _Trees(None, sets[0], sets[1])


def _commit_tree(repo: pathlib.Path, work: pathlib.Path, sdist: pathlib.Path,
                 tests: upstream_tests.TestSet | None, version: str,
                 branch: str) -> None:
  """Commits the sdist (and the test files) as the root of `branch`."""
  _git(repo, "checkout", "-q", "--orphan", branch)
  _git(repo, "rm", "-rq", "--cached", "--ignore-unmatch", ".")
  for p in repo.iterdir():
    if p.name != ".git":
      _git(repo, "clean", "-fdxq", "--", p.name)
  with scratch.directory(work, "unpack") as tmp:
    for p in tree_lib.unpack(sdist, tmp).iterdir():
      os.rename(p, repo / p.name)
  message = f"jax {version} (sdist)"
  if tests is not None:
    upstream_tests.lay_files(upstream_tests.source_files(tests), repo)
    message += f" and upstream's tests of {tests.name}"
  _git(repo, "add", "-A")
  _git(repo, "-c", "user.name=upstream", "-c", "user.email=upstream@jax",
       "commit", "-q", "-m", message)


def _make_repo(repo: pathlib.Path, work: pathlib.Path, trees: _Trees,
               base: Release, target: Release) -> None:
  """The work repository: branches `source` (base) and `target`."""
  if trees.checkout is not None:
    _git(work, "clone", "-q", "--shared", "--no-checkout",
         str(trees.checkout), str(repo))
    _git(repo, "checkout", "-q", "-b", "source", _tag(base.version))
    _git(repo, "branch", "target", _tag(target.version))
    return
  repo.mkdir()
  _git(repo, "init", "-q")
  _commit_tree(repo, work, fetch.fetch(base), trees.base_tests, base.version,
               "source")
  _commit_tree(repo, work, fetch.fetch(target), trees.target_tests,
               target.version, "target")
  _git(repo, "checkout", "-q", "source")


def _check_base(queue: list[patchq.Patch], repo: pathlib.Path,
                work: pathlib.Path, base: str) -> None:
  """Raises a ForkError naming the hunk unless `queue` applies to `source`."""
  with scratch.directory(work, "base") as tmp:
    tree = _export_tree(repo, "source", tmp)
    for patch in queue:
      try:
        patchq.apply(patch, tree, tests=None)
      except patchq.PatchError as e:
        raise ForkError(f"the queue does not apply to jax {base}, the release "
                        f"to rebase from: {e}\nPass --from a release the "
                        "queue applies to (`python3 build/fork.py check`).")


def _export_tree(repo: pathlib.Path, ref: str,
                 dest: pathlib.Path) -> pathlib.Path:
  """The files of `ref` in `repo`, written under `dest`/tree."""
  out = dest / "tree"
  out.mkdir()
  archive = dest / "tree.tar"
  _git(repo, "archive", "--format=tar", "-o", str(archive), ref)
  with tarfile.open(archive) as tar:
    tar.extractall(out, filter="data")
  archive.unlink()
  return out


def rebase(project: Project, version: str, source: str | None = None, *,
           checkout: pathlib.Path | None = None,
           tests_dir: pathlib.Path | None = None, suites: bool = True,
           today: datetime.date | None = None,
           resume: pathlib.Path | None = None) -> Result:
  """Refreshes the queue of release `source` for release `version`.

  Args:
    project: the fork project.
    version: the upstream release to rebase onto; added to the manifest if
      it is not there.
    source: a release of the manifest the queue applies to; default: the
      newest other release in the manifest.
    checkout: a git checkout of upstream's repository, whose tags
      jax-v<source> and jax-v<version> give the trees.
    tests_dir: upstream's tests by tag (for the trees without `checkout`,
      and for upstream's suites); default: `default_tests_dir`.
    suites: run the release's smoke suite and upstream's suites at the end.
    today: the Last-Update date of refreshed patches.
    resume: the work repository of an earlier rebase that stopped at a
      conflict, once the maintainer resolved it and finished `git rebase
      --continue`: the rest of the rebase runs from there.

  Returns:
    What was done, and whether `check` and the suites passed.

  Raises:
    ForkError: before anything is written: a tree cannot be had, the queue
      does not apply to `source`, a proposed pin does not work, or a patch
      conflicts with `version` (the message names the patch, the files and
      the hunks, and where the work repository is kept).
  """
  today = today or datetime.date.today()
  if tests_dir is not None and not tests_dir.is_dir():
    raise ForkError(f"--upstream-tests {tests_dir} is not a directory; it "
                    "should hold jax-v<version>.tar.gz exports of "
                    "upstream's tags (see docs/maintainers.md)")
  if checkout is not None and not checkout.is_dir():
    raise ForkError(f"--checkout {checkout} is not a directory")
  tree_lib.preflight(project, project.manifest().releases)
  tests_dir = tests_dir or default_tests_dir(project)
  rebase_root = cache_root() / "rebase"
  with scratch.directory(rebase_root, "work") as work:
    tmp = work / "tmp"
    tmp.mkdir()
    with scratch.temporary_files_in(tmp):
      if resume is not None:
        return _resume(project, resume.resolve(), work, tests_dir, suites,
                       today)
      return _rebase(project, version, source, checkout, tests_dir, suites,
                     today, work, rebase_root)


def _rebase_source(manifest: Manifest, version: str, source: str | None,
                   rebase_root: pathlib.Path
                   ) -> tuple[Release, pathlib.Path]:
  """The release to rebase from (`source`, else the newest other listed
  one) and the directory a stopped rebase of it keeps; ForkError if there is
  none, or a stopped rebase's directory is already there."""
  listed = {r.version: r for r in manifest.releases}
  if source and source not in listed:
    raise ForkError(
        f"--from {source}: the queue is known to apply only to the releases "
        f"in {manifest.path} ({', '.join(listed)}); rebase from one of them")
  if source == version:
    raise ForkError(f"--from {source} is the release to rebase onto")
  others = [r for r in manifest.releases if r.version != version]
  if not source and not others:
    raise ForkError("rebase needs a second release in the manifest to "
                    "rebase from; pass --from")
  base = (listed[source] if source
          else max(others, key=lambda r: version_tuple(r.version)))
  kept = rebase_root / f"jax-{version}-from-{base.version}"
  if kept.exists():
    raise ForkError(
        f"an earlier rebase of jax {version} stopped at a conflict and left "
        f"its work repository in {kept}/repo: finish it (`python3 build/"
        f"fork.py rebase {version} --resume {kept}/repo`), or remove {kept} "
        "to start again")
  return base, kept


def _rebase(project: Project, version: str, source: str | None,
            checkout: pathlib.Path | None, tests_dir: pathlib.Path | None,
            suites: bool, today: datetime.date, work: pathlib.Path,
            rebase_root: pathlib.Path) -> Result:
  manifest = project.manifest()
  base, kept = _rebase_source(manifest, version, source, rebase_root)
  queue = patchq.load_queue(project.patches, base.version)
  trees = _plan_trees(project, queue, base.version, version, checkout,
                      tests_dir)
  for note in trees.describe():
    log.step("rebase", note)
  target = next((r for r in manifest.releases if r.version == version), None)
  new_release = target is None
  if new_release:
    log.step("rebase", f"jax {version} is not in {manifest.path}: proposing "
             f"its entry from jax {base.version}'s")
    target = newrelease.propose(manifest, version, base)
    newrelease.check_by_installing(project, target)
  repo = work / "repo"
  _make_repo(repo, work, trees, base, target)
  _check_base(queue, repo, work, base.version)
  _git(repo, "am", "-q", "--committer-date-is-author-date",
       *(str(p.path) for p in queue))
  _git(repo, "checkout", "-q", "-b", "rebased", "source")
  log.step("rebase", f"replaying {len(queue)} patches from jax "
           f"{base.version} onto {version} in {repo}, checking each merged "
           "patch's Python files (compile, undefined names)")
  state = {"version": version, "source": base.version,
           "release": dataclasses.asdict(target) if new_release else None,
           "trees": trees.describe()}
  proc = _git(repo, "rebase", "-q", "--committer-date-is-author-date",
              "--exec", _merge_check_command(target),
              "--onto", "target", f"source~{len(queue)}", "rebased",
              check=False)
  if proc.returncode != 0:
    kept.mkdir(parents=True)
    os.rename(repo, kept / "repo")
    (kept / _STATE).write_text(json.dumps(state, indent=1) + "\n",
                               encoding="utf-8")
    raise _stopped(kept / "repo", target, queue, proc.stdout + proc.stderr)
  return _finish(project, target, base.version, repo, work, new_release,
                 trees.describe(), tests_dir, suites, today)


def _resume(project: Project, repo: pathlib.Path, work: pathlib.Path,
            tests_dir: pathlib.Path | None, suites: bool,
            today: datetime.date) -> Result:
  state_path = repo.parent / _STATE
  try:
    state = json.loads(state_path.read_text(encoding="utf-8"))
  except (OSError, ValueError):
    raise ForkError(f"{repo} is not a work repository that `rebase` kept "
                    f"(no readable {state_path})")
  if (repo / ".git" / "rebase-merge").exists() or (
      repo / ".git" / "rebase-apply").exists():
    raise ForkError(f"the rebase in {repo} is still in progress: resolve "
                    "the conflict and run `git rebase --continue` first")
  release = state["release"]
  if release is None:
    target = project.manifest().get(state["version"])
  else:
    target = Release(**{k: tuple(v) if isinstance(v, list) else v
                        for k, v in release.items()})
  result = _finish(project, target, state["source"], repo, work,
                   release is not None, state["trees"], tests_dir, suites,
                   today)
  result.notes.append(f"the work repository {repo.parent} is no longer "
                      "needed: remove it")
  return result


def _finish(project: Project, target: Release, source: str,
            repo: pathlib.Path, work: pathlib.Path, new_release: bool,
            notes: list[str], tests_dir: pathlib.Path | None, suites: bool,
            today: datetime.date) -> Result:
  """Writes the variants (and the new entry), then check and the suites."""
  names = patchq.read_series(project.patches)
  refreshed = _refresh(project, target, repo, work, names)
  pins = newrelease.pins_needed(project, target) if new_release else {}
  variants = project.patches / "variants" / target.version
  for name, text in refreshed.items():
    variants.mkdir(parents=True, exist_ok=True)
    (variants / name).write_text(_set_last_update(text, today),
                                 encoding="utf-8")
    log.step("rebase", f"{name}: refreshed -> "
             f"{(variants / name).relative_to(project.root)}")
  added = newrelease.add(project, target, pins) if new_release else []
  status = tree_lib.check(project, [target.version])
  row = None
  notes = list(notes)
  if suites and status == 0:
    row, recorded = _suites(project, target, tests_dir)
    if recorded:
      notes.append(f"recorded stock jax {target.version}'s failures in "
                   f"{upstream_tests.KNOWN_FAILURES}: review and commit it")
  if new_release:
    notes.append(f"jax {target.version} is new: review its entry, then add "
                 "it to README.md's table and CHANGELOG.md")
  return Result(release=target, source=source, variants=list(refreshed),
                added=added, check=status, suites=row, notes=notes)


def _refresh(project: Project, target: Release, repo: pathlib.Path,
             work: pathlib.Path, names: list[str]) -> dict[str, str]:
  """The rebased patches that the queue's own do not replace exactly.

  Each patch the queue would use for the target (`patchq.resolve`) is
  applied exactly, in order, to the target's tree (its sdist parts and its
  test parts); where it does not apply, the rebased patch is used instead
  and returned.
  """
  with scratch.directory(work, "refresh") as tmp:
    patches_dir = tmp / "rebased"
    _git(repo, "format-patch", "-q", "-N", "--zero-commit", "--no-signature",
         "-o", str(patches_dir), "target..rebased")
    rebased = sorted(patches_dir.glob("*.patch"))
    if len(rebased) != len(names):
      raise ForkError(f"the rebase produced {len(rebased)} patches for "
                      f"{len(names)} in the series (a patch became empty?); "
                      f"inspect {repo}")
    tree = _export_tree(repo, "target", tmp)
    out = {}
    for name, new in zip(names, rebased):
      current = patchq.parse(patchq.resolve(project.patches, name,
                                            target.version), name=name)
      try:
        patchq.apply(current, tree, tests=None)  # exact: no variant needed
        continue
      except patchq.PatchError:
        pass
      patchq.apply(patchq.parse(new, name=name), tree, tests=None)
      out[name] = new.read_text(encoding="utf-8")
  return out


def _suites(project: Project, target: Release,
            tests_dir: pathlib.Path | None) -> tuple[testrun.Row, bool]:
  """The release's smoke suite and upstream's suites (after a baseline).

  Returns:
    The run's row, and whether a stock baseline was recorded first.
  """
  recorded = False
  if tests_dir is not None:
    known = upstream_tests.load_known(project.root
                                      / upstream_tests.KNOWN_FAILURES)
    if target.version not in known:
      log.step("rebase", f"jax {target.version} has no stock baseline: "
               "recording one (upstream's suites on stock jax)")
      baseline.run(project, target, tests_dir)
      recorded = True
  else:
    log.step("rebase", "no upstream tests (--upstream-tests DIR): "
             "upstream's suites are not run")
  row = testrun.run_release(project, target, testrun.SMOKE, pytest_args=[],
                            tests_dir=tests_dir)
  print(testrun.summary([row], tests_dir), flush=True)
  return row, recorded


def _merge_check_command(target: Release) -> str:
  """The `git rebase --exec` command that checks each merged patch."""
  args = [sys.executable, str(pathlib.Path(mergecheck.__file__).resolve()),
          "--python", envs.find_python(target), "--ruff", envs.ruff(),
          "--base", "target"]
  return " ".join(shlex.quote(a) for a in args)


def _conflict_regions(path: pathlib.Path) -> list[tuple[int, int]]:
  """The line ranges of git's conflict markers in `path` (1-based)."""
  regions, start = [], None
  try:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
  except OSError:
    return regions
  for n, line in enumerate(lines, 1):
    if line.startswith("<<<<<<< "):
      start = n
    elif line.startswith(">>>>>>> ") and start is not None:
      regions.append((start, n))
      start = None
  return regions


def _stopped(repo: pathlib.Path, target: Release, queue: list[patchq.Patch],
             output: str) -> ForkError:
  """The error for a rebase git stopped: the patch, files and hunks."""
  unmerged = _git(repo, "diff", "--name-only", "--diff-filter=U",
                  check=False).stdout.split()
  resume = (f"then run `python3 build/fork.py rebase {target.version} "
            f"--resume {repo}` to write the variants and check them (see "
            "docs/maintainers.md). Nothing in the repository was changed.")
  if not unmerged and "merge-check: " in output:
    return _broken_merge(repo, target, output, resume)
  subject = _git(repo, "log", "-1", "--format=%s", "REBASE_HEAD",
                 check=False).stdout.strip()
  index = next((i for i, p in enumerate(queue) if p.subject == subject), None)
  patch = queue[index] if index is not None else None
  name = patch.name if patch else repr(subject)
  lines = [f"patch {name} conflicts with jax {target.version}: git's "
           "three-way merge cannot apply it. To resolve:"]
  for path in unmerged or ["(git named no file; see below)"]:
    regions = _conflict_regions(repo / path)
    where = ", ".join(f"lines {a}-{b}" for a, b in regions)
    lines.append(f"  {path}" + (f": conflict markers at {where}" if where
                                else ""))
    if patch is None:
      continue
    upstream = _git(repo, "show", f"target:{path}", check=False)
    new_lines = upstream.stdout.splitlines(keepends=True)
    for fp in patch.files:
      if fp.path != path:
        continue
      for n, hunk in enumerate(fp.hunks, 1):
        if upstream.returncode != 0 or not patchq.hunk_found(hunk,
                                                             new_lines):
          lines.append(f"    hunk {n} of {len(fp.hunks)} "
                       f"({hunk.header.split(' @@')[0]} @@): its lines are "
                       f"not in jax {target.version}'s file")
  if index is not None and index + 1 < len(queue):
    lines.append(f"  not yet replayed: {queue[index + 1].name} to "
                 f"{queue[-1].name} (git stops at each conflict in turn)")
  diff = _git(repo, "diff", check=False).stdout
  lines.append(f"The conflict:\n{diff[-6000:]}")
  lines.append(f"Resolve it in {repo} (edit, `git add`, `git rebase "
               "--continue`, as many times as git stops), " + resume)
  return ForkError("\n".join(lines))


def _broken_merge(repo: pathlib.Path, target: Release, output: str,
                  resume: str) -> ForkError:
  """The error for a patch that merged cleanly but left a file broken."""
  problems = [l.removeprefix("merge-check: ") for l in output.splitlines()
              if l.startswith("merge-check: ")]
  subject = _git(repo, "log", "-1", "--format=%s", "HEAD",
                 check=False).stdout.strip()
  return ForkError(
      f"patch {subject!r} merged into jax {target.version} without a textual "
      "conflict, but leaves Python code broken; this is a conflict:\n  "
      + "\n  ".join(p.removeprefix(subject + ": ") for p in problems)
      + f"\nFix it in {repo} (edit, `git commit -a --amend`, `git rebase "
      "--continue`), " + resume)
