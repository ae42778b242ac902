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
"""Guards of the tool's destructive steps and of its caches.

`apply --force` replaces only a tree that `apply` made and that is still as
it wrote it (a maintainer's repository, new files or edits in it are
refused, never deleted), never the repository, the home directory or the
root; a cached patched tree that changed after it
was built is rebuilt, not used; the temporary directories of a crashed run
are removed by the next run. On the synthetic sdist of
`test_pipeline_synthetic`, through the CLI.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from forklib import manifest as manifest_lib
from forklib import scratch
from forklib.project import Project
from forklib.sources import tree as tree_lib

from .test_pipeline_synthetic import synthetic as synthetic_sdist  # noqa: F401


@pytest.fixture
def synthetic(synthetic_sdist):  # noqa: F811
  """The synthetic project, its sdist already fetched into the cache.

  (Seeded rather than fetched, so that these tests do not depend on pip
  building the sdist's metadata.)
  """
  sdists = synthetic_sdist["cache"] / "sdists"
  sdists.mkdir(parents=True, exist_ok=True)
  shutil.copyfile(synthetic_sdist["links"] / "jax-9.9.9.tar.gz",
                  sdists / "jax-9.9.9.tar.gz")
  return synthetic_sdist


def _snapshot(path: pathlib.Path) -> dict[str, bytes]:
  return {p.relative_to(path).as_posix(): p.read_bytes()
          for p in sorted(path.rglob("*")) if p.is_file()}


def test_force_refuses_the_repository(synthetic):  # noqa: F811
  project = synthetic["project"]
  (project / ".git").mkdir()
  (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
  before = _snapshot(project)
  for out in (project, project / "patches", project / ".git",
              project.parent):
    proc = synthetic["fork"]("apply", "9.9.9", "--out", str(out), "--force")
    assert proc.returncode == 2, (out, proc.stderr)
    assert f"refusing to replace {out}" in proc.stderr, proc.stderr
  assert _snapshot(project) == before


def test_force_refuses_home_and_root(synthetic, tmp_path):  # noqa: F811
  home = tmp_path / "home"
  (home / "work").mkdir(parents=True)
  (home / "notes.txt").write_text("mine\n")
  env = dict(os.environ, HOME=str(home), PIP_NO_INDEX="1",
             PIP_FIND_LINKS=str(synthetic["links"]),
             JAX_FORK_CACHE=str(synthetic["cache"]))
  for out, what in ((home, "your home directory"),
                    (pathlib.Path("/"), "the root directory")):
    proc = subprocess.run(
        [sys.executable, str(tree_lib.__file__).replace(
            "forklib/sources/tree.py", "fork.py"), "--root",
         str(synthetic["project"]), "apply", "9.9.9", "--out", str(out),
         "--force"], env=env, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert f"refusing to replace {out}: it is {what}" in proc.stderr
  assert (home / "notes.txt").read_text() == "mine\n"


def test_force_refuses_a_directory_apply_did_not_make(synthetic):  # noqa: F811
  out = synthetic["tmp"] / "mine"
  out.mkdir()
  (out / "thesis.tex").write_text("years of work\n")
  proc = synthetic["fork"]("apply", "9.9.9", "--out", str(out), "--force")
  assert proc.returncode == 2
  assert "apply` did not make it" in proc.stderr
  assert (out / "thesis.tex").read_text() == "years of work\n"


def test_force_replaces_a_tree_as_apply_wrote_it(synthetic):  # noqa: F811
  out = synthetic["tmp"] / "tree"
  assert synthetic["fork"]("apply", "9.9.9", "--out", str(out)).returncode == 0
  overlay = synthetic["project"] / "jax" / "experimental" / "ours.py"
  overlay.write_text("OURS = 2\n")  # the fork's inputs changed: rebuild
  proc = synthetic["fork"]("apply", "9.9.9", "--out", str(out), "--force")
  assert proc.returncode == 0, proc.stderr
  assert (out / "jax" / "experimental" / "ours.py").read_text() == "OURS = 2\n"
  assert tree_lib.verify_tree(out) == []


def _git(cwd: pathlib.Path, *args: str) -> str:
  return subprocess.run(
      ["git", "-c", "user.name=Maintainer", "-c", "user.email=m@example.com",
       "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True,
      capture_output=True, text=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_force_keeps_a_maintainers_work(synthetic):  # noqa: F811
  """docs/maintainers.md, "Writing a patch", then `apply --force` again."""
  out = synthetic["tmp"] / "jax-work"
  assert synthetic["fork"]("apply", "9.9.9", "--out", str(out)).returncode == 0
  _git(out, "init", "-q")
  _git(out, "add", "-A")
  _git(out, "commit", "-qm", "base")
  config = out / "jax" / "_src" / "config.py"
  config.write_text(config.read_text() + "# first change\n")
  _git(out, "commit", "-qam", "config: first change")
  (out / "jax" / "experimental" / "new_module.py").write_text("NEW = 1\n")
  _git(out, "add", "-A")
  _git(out, "commit", "-qm", "new module")
  version = out / "jax" / "version.py"
  version.write_text(version.read_text() + "# not committed yet\n")
  (out / "notes.txt").write_text("to do\n")
  before = _snapshot(out)
  head = _git(out, "rev-parse", "HEAD")

  proc = synthetic["fork"]("apply", "9.9.9", "--out", str(out), "--force")
  assert proc.returncode == 2, proc.stderr
  assert f"refusing to replace {out}: it is not as `apply` wrote it" in (
      proc.stderr)
  for line in ("changed: jax/_src/config.py", "changed: jax/version.py",
               "added: jax/experimental/new_module.py", "added: notes.txt",
               "added: .git/"):
    assert line in proc.stderr, proc.stderr
  assert _snapshot(out) == before  # every file of the user's, as it was
  assert _git(out, "rev-parse", "HEAD") == head
  assert _git(out, "status", "--porcelain").split("\n")[:2] == [
      " M jax/version.py", "?? notes.txt"]


def test_force_refuses_a_tree_with_a_new_empty_directory(synthetic):  # noqa: F811
  out = synthetic["tmp"] / "tree"
  assert synthetic["fork"]("apply", "9.9.9", "--out", str(out)).returncode == 0
  (out / "jax" / "mine").mkdir()
  proc = synthetic["fork"]("apply", "9.9.9", "--out", str(out), "--force")
  assert proc.returncode == 2
  assert "added: jax/mine/ (0 files)" in proc.stderr
  assert (out / "jax" / "mine").is_dir()


def _release(project: pathlib.Path) -> manifest_lib.Release:
  return manifest_lib.load(project / "patches" / "upstream.toml").get("9.9.9")


def test_a_changed_cached_tree_is_rebuilt(synthetic, monkeypatch):  # noqa: F811
  monkeypatch.setenv("JAX_FORK_CACHE", str(synthetic["cache"]))
  monkeypatch.setenv("PIP_NO_INDEX", "1")
  monkeypatch.setenv("PIP_FIND_LINKS", str(synthetic["links"]))
  project = Project(synthetic["project"])
  release = _release(synthetic["project"])
  tree = tree_lib.cached_tree(project, release, synthetic["cache"])
  pristine = _snapshot(tree)
  init = tree / "jax" / "__init__.py"
  init.write_text(init.read_text() + "import os; os.system('true')\n")
  (tree / "jax" / "extra.py").write_text("added = True\n")
  assert tree_lib.verify_tree(tree) == ["changed: jax/__init__.py",
                                        "added: jax/extra.py"]
  again = tree_lib.cached_tree(project, release, synthetic["cache"])
  assert again == tree
  assert _snapshot(again) == pristine
  assert [p.name for p in tree.parent.iterdir()] == [tree.name]


def test_a_crashed_build_leaves_nothing_that_grows(synthetic):  # noqa: F811
  """A build killed mid-way leaves a temporary directory; the next removes it."""
  parent = synthetic["tmp"] / "out"
  parent.mkdir()
  leftovers: list[pathlib.Path] = []
  for _ in range(50):  # kill it while its temporary directory exists
    proc = subprocess.Popen(
        [sys.executable, str(tree_lib.__file__).replace(
            "forklib/sources/tree.py", "fork.py"), "--root",
         str(synthetic["project"]), "apply", "9.9.9", "--out",
         str(parent / "tree")],
        env=dict(os.environ, PIP_NO_INDEX="1",
                 PIP_FIND_LINKS=str(synthetic["links"]),
                 JAX_FORK_CACHE=str(synthetic["cache"])),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
      hidden = [p for p in parent.iterdir() if p.name.startswith(".")]
      if hidden:
        proc.send_signal(signal.SIGKILL)
        break
      time.sleep(0.001)
    proc.wait()
    leftovers = [p for p in parent.iterdir() if p.name.startswith(".")]
    if leftovers:
      break
    for p in parent.iterdir():
      subprocess.run(["rm", "-rf", str(p)], check=True)
  assert leftovers, "could not kill a build while it was running"
  proc = synthetic["fork"]("apply", "9.9.9", "--out", str(parent / "tree2"))
  assert proc.returncode == 0, proc.stderr
  assert [p.name for p in parent.iterdir() if p.name.startswith(".")] == []


def test_sweep_removes_only_dead_runs_directories(tmp_path):
  with scratch.directory(tmp_path, "tree") as live:
    (live / "work").write_text("in progress\n")
    dead = tmp_path / f"{scratch.PREFIX}tree-dead"
    (dead / "unpacked").mkdir(parents=True)
    # Its creator died: the lock file is there, nobody holds its lock.
    (tmp_path / f"{dead.name}.lock").write_text("")
    # Killed before it named its lock file, or after it removed its
    # directory: unlocked lock files.
    pending = tmp_path / ".fork-lock-0123"
    pending.write_text("")
    orphan = tmp_path / f"{scratch.PREFIX}wheel-gone.lock"
    orphan.write_text("")
    foreign = tmp_path / ".tree.partial-x"
    foreign.mkdir()
    assert scratch.sweep(tmp_path) == [
        pending, dead, tmp_path / f"{dead.name}.lock", orphan]
    assert (live / "work").exists() and foreign.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [live.name, f"{live.name}.lock", foreign.name])
  assert sorted(p.name for p in tmp_path.iterdir()) == [foreign.name]
