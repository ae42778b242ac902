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
"""`.ci/run` runs the README's test command, with upstream's tests found.

It is run with FORK_CI_DRY_RUN=1, which prints the command instead of
running it, in repositories laid out as CI lays them.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("git") is None,
                                reason="needs git")


def _repo(root: pathlib.Path, where: pathlib.Path,
          origin: str | None = None) -> pathlib.Path:
  (where / ".ci").mkdir(parents=True)
  shutil.copy(root / ".ci" / "run", where / ".ci" / "run")
  subprocess.run(["git", "init", "-q"], cwd=where, check=True)
  if origin:
    subprocess.run(["git", "remote", "add", "origin", origin], cwd=where,
                   check=True)
  return where


def _ci(repo: pathlib.Path) -> subprocess.CompletedProcess:
  return subprocess.run(
      ["sh", str(repo / ".ci" / "run")], capture_output=True, text=True,
      env=dict(os.environ, FORK_CI_DRY_RUN="1", PATH="/usr/bin:/bin"))


def test_readme_command_is_what_ci_runs(root):
  readme = (root / "README.md").read_text()
  command = ("python3 build/fork.py test --upstream-tests "
             "../shared/upstream-tests")
  assert command in readme


def test_upstream_tests_beside_the_clone(root, tmp_path):
  (tmp_path / "shared" / "upstream-tests").mkdir(parents=True)
  proc = _ci(_repo(root, tmp_path / "clone"))
  assert proc.returncode == 0, proc.stderr
  expected = tmp_path.resolve() / "shared" / "upstream-tests"
  assert (f"would run: python3 build/fork.py test --upstream-tests "
          f"{expected}") in proc.stdout


def test_upstream_tests_beside_the_origin(root, tmp_path):
  (tmp_path / "work" / "shared" / "upstream-tests").mkdir(parents=True)
  (tmp_path / "work" / "main").mkdir()
  for origin in (str(tmp_path / "work" / "main"),
                 f"file://{tmp_path / 'work' / 'main'}"):
    clone = tmp_path / "ci" / str(abs(hash(origin))) / "clone"
    proc = _ci(_repo(root, clone, origin=origin))
    assert proc.returncode == 0, proc.stderr
    assert "--upstream-tests " in proc.stdout
    assert proc.stdout.strip().endswith("shared/upstream-tests")


def test_missing_upstream_tests_are_said_loudly(root, tmp_path):
  proc = _ci(_repo(root, tmp_path / "clone",
                   origin="https://example.com/fork.git"))
  assert proc.returncode == 0, proc.stderr
  assert "WARNING: upstream's own tests NOT FOUND" in proc.stderr
  assert proc.stdout.strip().endswith("would run: python3 build/fork.py test")
