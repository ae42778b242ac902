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
"""The patch queue works with `git am` and `quilt push -a` as well.

Both must reach the same upstream files as the tool's own exact apply (the
tool additionally lays in the overlay and stamps the version).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import tarfile

import pytest

from forklib.project import Project
from forklib.sources import fetch
from forklib.sources import patchq
from forklib.sources import tree as tree_lib
from forklib.testing import upstream_tests


@pytest.fixture
def upstream_tree(release, tmp_path) -> pathlib.Path:
  """Upstream's repository at the release: its sdist, and its tests if known.

  Some patches also change upstream's tests, which the sdist lacks; without
  them (no JAX_FORK_UPSTREAM_TESTS), the hunks for tests are left out (and
  checked by the upstream-tests run instead).
  """
  with tarfile.open(fetch.fetch(release)) as tar:
    tar.extractall(tmp_path / "src", filter="data")
  tree = tmp_path / "src" / f"jax-{release.version}"
  folder = os.environ.get("JAX_FORK_UPSTREAM_TESTS")
  if folder:
    upstream_tests.lay_files(upstream_tests.source_files(
        upstream_tests.find_set(pathlib.Path(folder), release.version)), tree)
  return tree


def _has_tests(tree: pathlib.Path) -> bool:
  return (tree / "jax/experimental/jax2tf/tests/call_tf_test.py").exists()


def _patched_files(root, release) -> set[str]:
  return {fp.path for p in patchq.load_queue(root / "patches",
                                             release.version)
          for fp in p.files if not patchq.is_test_path(fp.path)}


@pytest.fixture
def tool_tree(root, release, tmp_path) -> pathlib.Path:
  return tree_lib.build_tree(Project(root), release,
                             tmp_path / "tool")


def _assert_same_patched_files(root, release, tree, tool_tree):
  tree_lib.stamp_version(tree, release)  # the tool's step after the queue
  for rel in _patched_files(root, release):
    assert (tree / rel).read_text() == (tool_tree / rel).read_text(), rel


def _git(cwd: pathlib.Path, *args: str) -> None:
  env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
             GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
  subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=cwd, env=env,
                 check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_am_applies_the_series(root, release, upstream_tree, tool_tree):
  _git(upstream_tree, "init", "-q")
  _git(upstream_tree, "add", "-A")
  _git(upstream_tree, "commit", "-q", "-m", "upstream")
  names = patchq.read_series(root / "patches")
  paths = [str(patchq.resolve(root / "patches", n, release.version))
           for n in names]
  exclude = ([] if _has_tests(upstream_tree) else
             [f"--exclude={d}*" for d in patchq.UPSTREAM_TEST_DIRS])
  _git(upstream_tree, "am", "--quiet", *exclude, *paths)
  _assert_same_patched_files(root, release, upstream_tree, tool_tree)


@pytest.mark.skipif(shutil.which("quilt") is None,
                    reason="quilt is not installed (apt-get install quilt)")
def test_quilt_pushes_the_series(root, release, upstream_tree, tool_tree,
                                 tmp_path):
  if not _has_tests(upstream_tree):
    pytest.skip("quilt needs upstream's tests too (the queue changes some); "
                "run with --upstream-tests")
  # The release's queue: the series, with its variants where it has any.
  queue = tmp_path / "queue"
  queue.mkdir()
  shutil.copyfile(root / "patches" / "series", queue / "series")
  for name in patchq.read_series(root / "patches"):
    shutil.copyfile(patchq.resolve(root / "patches", name, release.version),
                    queue / name)
  env = dict(os.environ, QUILT_PATCHES=str(queue),
             QUILT_PC=str(upstream_tree / ".pc"))
  proc = subprocess.run(["quilt", "push", "-a", "--fuzz=0"],
                        cwd=upstream_tree, env=env, capture_output=True,
                        text=True)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert "fuzz" not in proc.stdout  # offsets are fine, fuzz is not
  _assert_same_patched_files(root, release, upstream_tree, tool_tree)
