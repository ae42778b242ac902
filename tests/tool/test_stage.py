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
"""`stage`: the patch queue as upstream pull requests."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from forklib import patchq
from forklib import tree as tree_lib
from forklib import upstream_tests as upstream_tests_lib

pytestmark = pytest.mark.skipif(shutil.which("git") is None,
                                reason="git is not installed")


def _git(repo, *args):
  return subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=repo,
                        check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def upstream_tests():
  """Upstream's tests by tag, as the test command was given them."""
  folder = os.environ.get("JAX_FORK_UPSTREAM_TESTS")
  if not folder:
    pytest.skip("stage needs upstream's tests (some patches change them): "
                "run the suite with --upstream-tests")
  return pathlib.Path(folder)


@pytest.fixture(scope="module")
def staged(root, release, upstream_tests, tmp_path_factory):
  out = tmp_path_factory.mktemp("stage") / "out"
  subprocess.run([sys.executable, str(root / "build" / "fork.py"), "-q",
                  "stage", release.version, "--out", str(out),
                  "--upstream-tests", str(upstream_tests)], check=True)
  return out


def test_stage_without_upstream_tests_says_what_to_pass(root, release,
                                                        tmp_path):
  proc = subprocess.run([sys.executable, str(root / "build" / "fork.py"),
                         "stage", release.version, "--out",
                         str(tmp_path / "out")],
                        capture_output=True, text=True)
  assert proc.returncode == 2
  assert "change upstream's tests" in proc.stderr
  assert "--upstream-tests" in proc.stderr
  assert not (tmp_path / "out").exists()


def test_one_commit_per_patch_in_series_order(root, release, staged,
                                              upstream_tests):
  queue = patchq.load_queue(root / "patches", release.version)
  subjects = _git(staged / "repo", "log", "--reverse",
                  "--format=%s").splitlines()
  tests = upstream_tests_lib.find_set(upstream_tests, release.version)
  assert subjects == [f"jax {release.version} (upstream sdist, and tests "
                      f"from {tests.path.name})",
                      *(p.subject for p in queue)]
  descriptions = sorted(p.name for p in (staged / "pull-requests").iterdir())
  assert descriptions == sorted(p.name.removesuffix(".patch") + ".md"
                                for p in queue)


def test_every_commit_has_the_overlay_modules_it_imports(staged):
  commits = _git(staged / "repo", "log", "--reverse",
                 "--format=%H").split()[1:]
  for commit in commits:
    files = set(_git(staged / "repo", "ls-tree", "-r", "--name-only",
                     commit).split())
    for path in files:
      if not path.startswith("jax/experimental/jax2tf/call_tf"):
        continue
      text = _git(staged / "repo", "show", f"{commit}:{path}")
      names = re.findall(
          r"from jax\.experimental\.jax2tf import (call_tf_\w+)", text)
      names += [f"call_tf_lib/{m}" for m in re.findall(
          r"from jax\.experimental\.jax2tf\.call_tf_lib import (\w+)", text)]
      # call_tf.py reaches the package's modules as call_tf_lib.<module>.
      names += [f"call_tf_lib/{m}" for m in re.findall(
          r"\bcall_tf_lib\.([a-z_]\w*)\.", text)]
      for module in names:
        assert (f"jax/experimental/jax2tf/{module}.py" in files
                or f"jax/experimental/jax2tf/{module}/__init__.py" in files), (
                    commit, path, module)


def test_the_branch_ends_at_the_patched_tree(root, release, staged,
                                             tmp_path):
  tree = tree_lib.build_tree(tree_lib.Project(root), release,
                             tmp_path / "tree")
  touched = tree_lib.touched_files(tree_lib.Project(root), release)
  for path in touched - {"jax/version.py"}:
    assert (staged / "repo" / path).read_text() == (tree / path).read_text()
  tree_lib.stamp_version(staged / "repo", release)
  assert (staged / "repo" / "jax/version.py").read_text() == (
      tree / "jax/version.py").read_text()


def test_pull_request_descriptions_come_from_dep3(root, release, staged):
  patch = patchq.load_queue(root / "patches", release.version)[2]
  text = (staged / "pull-requests" /
          (patch.name.removesuffix(".patch") + ".md")).read_text()
  assert text.startswith(f"# {patch.subject}\n")
  assert patch.headers["Description"].split("\n")[0] in text
  assert patchq.BUG_URL in text
  assert "`jax/experimental/jax2tf/call_tf_lib/vmap.py`" in text


def test_stage_refuses_an_existing_directory(root, release, staged):
  proc = subprocess.run([sys.executable, str(root / "build" / "fork.py"),
                         "stage", release.version, "--out", str(staged)],
                        capture_output=True, text=True)
  assert proc.returncode == 2 and "already exists" in proc.stderr


def test_upstream_tests_are_staged_with_their_patch(root, staged):
  from forklib import stage as stage_lib  # pylint: disable=g-import-not-at-top
  tests = stage_lib.staged_tests(tree_lib.Project(root))
  assert tests, "tests/upstream has no staged tests"
  for patch_name, paths in tests.items():
    subject = patchq.parse(root / "patches" / patch_name).subject
    commit = _git(staged / "repo", "log", "--format=%H", "-F",
                  f"--grep={subject}").split()[0]
    files = _git(staged / "repo", "show", "--name-only", "--format=",
                 commit).split()
    for path in paths:
      assert f"{stage_lib.UPSTREAM_TESTS_DIR}/{path.name}" in files
