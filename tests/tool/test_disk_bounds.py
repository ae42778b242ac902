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
"""A test run of every release on a small disk: bounded, and no crash.

CI once filled its disk with about twenty test environments (tensorflow-cpu
in each), and the test command died on the half-written line of a report.
The cache of test environments now makes room before it grows, and a full
disk fails the one run it hits, in the table, not the command.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from forklib import ForkError
from forklib import manifest as manifest_lib
from forklib.project import Project
from forklib.testing import envs
from forklib.testing import testrun
from forklib.testing import upstream_tests

GiB = 1 << 30
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _venvs(tmp_path: pathlib.Path) -> pathlib.Path:
  """Four test environments, oldest first, and two things not ours."""
  venvs = tmp_path / "venvs"
  for age, name in enumerate(["test-jax0.4.38-a", "test-jax0.5.3-b",
                              "test-jax0.6.2-c", "test-jax0.12.0.1-d"]):
    venv = venvs / name
    (venv / "lib").mkdir(parents=True)
    (venv / "lib" / "tensorflow.so").write_bytes(b"x" * 10)
    (venv / envs._MARKER).write_text(name)
    stamp = time.time() - 3600 * (10 - age)
    os.utime(venv / envs._MARKER, (stamp, stamp))
  (venvs / "test-jax0.7.2-unfinished").mkdir()  # no marker: not removed
  (venvs / "tool-twine==7.0.0").mkdir()  # not a test environment
  return venvs


def _disk_freed_by_removals(monkeypatch, venvs: pathlib.Path,
                            free: int) -> None:
  """`free` bytes free, and 1 GiB more for each test environment removed."""
  start = {p.name for p in venvs.iterdir() if p.is_dir()}

  def free_space(path):
    assert path == venvs
    now = {p.name for p in venvs.iterdir() if p.is_dir()}
    return free + GiB * len(start - now)

  monkeypatch.setattr(envs, "free_space", free_space)


def test_room_is_made_from_the_least_recently_used_first(
    tmp_path, monkeypatch):
  venvs = _venvs(tmp_path)
  _disk_freed_by_removals(monkeypatch, venvs, 3 * GiB)
  envs.make_room(venvs, 5 * GiB, 2 * GiB)
  assert sorted(p.name for p in venvs.iterdir() if p.is_dir()) == [
      "test-jax0.12.0.1-d", "test-jax0.6.2-c", "test-jax0.7.2-unfinished",
      "tool-twine==7.0.0"]


def test_an_environment_in_use_is_kept(tmp_path, monkeypatch):
  """In use by this process or another (a shared lock), it is skipped."""
  venvs = _venvs(tmp_path)
  _disk_freed_by_removals(monkeypatch, venvs, 3 * GiB)
  holder = subprocess.Popen(
      [sys.executable, "-c",
       "import fcntl, sys, time\n"
       f"f = open({str(venvs / 'test-jax0.4.38-a.lock')!r}, 'a+b')\n"
       "fcntl.flock(f.fileno(), fcntl.LOCK_SH)\n"
       "print('held', flush=True)\n"
       "sys.stdin.read()\n"],
      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
  try:
    assert holder.stdout.readline() == "held\n"
    with envs.in_use(venvs / "test-jax0.5.3-b"):
      envs.make_room(venvs, 5 * GiB, 2 * GiB)
  finally:
    holder.communicate("")
  left = {p.name for p in venvs.iterdir() if p.is_dir()}
  assert {"test-jax0.4.38-a", "test-jax0.5.3-b"} <= left
  assert "test-jax0.6.2-c" not in left and "test-jax0.12.0.1-d" not in left


def test_no_room_is_a_clear_refusal_and_removes_nothing_in_use(
    tmp_path, monkeypatch):
  venvs = _venvs(tmp_path)
  _disk_freed_by_removals(monkeypatch, venvs, 0)
  with envs.in_use(venvs / "test-jax0.4.38-a"):
    with pytest.raises(ForkError, match=r"only 3\.0 GiB is free.*"
                       r"JAX_FORK_CACHE"):
      envs.make_room(venvs, 5 * GiB, 4 * GiB)
  assert (venvs / "test-jax0.4.38-a" / envs._MARKER).is_file()


def test_enough_room_removes_nothing(tmp_path, monkeypatch):
  venvs = _venvs(tmp_path)
  _disk_freed_by_removals(monkeypatch, venvs, 5 * GiB)
  envs.make_room(venvs, 5 * GiB, 2 * GiB)
  assert len([p for p in venvs.iterdir() if p.is_dir()]) == 6


def test_a_report_cut_off_mid_line_counts_its_test_unfinished(tmp_path):
  """The line a full disk cut: no crash, the test counts as a failure."""
  report = tmp_path / "fork-suite.jsonl"
  done = {"nodeid": "t.py::a", "outcome": "passed", "message": ""}
  cut = json.dumps({"nodeid": "t.py::b", "outcome": "passed",
                    "message": "x"})[:40]
  report.write_text("\n".join([json.dumps({"start": "t.py::a"}),
                               json.dumps(done),
                               json.dumps({"start": "t.py::b"}), cut]))
  outcomes, unfinished = upstream_tests.read_report(report)
  assert outcomes == {"t.py::a": ("passed", "")}
  assert unfinished == "t.py::b"
  assert testrun._counts(report) == (1, 1)
  report.write_text(json.dumps(done) + "\n" + cut[:12])
  _, unfinished = upstream_tests.read_report(report)
  assert unfinished and "last whole line" in unfinished


class _Built:
  def get(self, release):
    del release
    return pathlib.Path("/nowhere/jax-0.0.0-py3-none-any.whl")


def test_a_full_disk_fails_its_run_not_the_command(tmp_path, monkeypatch):
  """An OSError in one run (ENOSPC) is that run's row, with the free space."""
  release = manifest_lib.load(ROOT / "patches" / "upstream.toml").default()
  monkeypatch.setenv("JAX_FORK_CACHE", str(tmp_path))

  def full_disk(*args, **kwargs):
    del args, kwargs
    raise OSError(28, "No space left on device")

  monkeypatch.setattr(envs, "test_env", full_disk)
  row = testrun.run_release(Project(ROOT), release, testrun.SMOKE,
                            pytest_args=[], tests_dir=None, wheels=_Built())
  assert not row.ok
  assert row.status.startswith("[Errno 28] No space left on device (")
  assert "GiB free on the disk of" in row.status


def test_a_failed_run_prints_its_whole_error(tmp_path, monkeypatch):
  """The table has the first line; the run's output has all of it."""
  release = manifest_lib.load(ROOT / "patches" / "upstream.toml").default()
  monkeypatch.setenv("JAX_FORK_CACHE", str(tmp_path))

  def refused(*args, **kwargs):
    del args, kwargs
    raise ForkError("pip install failed (exit 1):\nERROR: no space for wheel")

  monkeypatch.setattr(envs, "test_env", refused)
  out = tmp_path / "output.log"
  with open(out, "w", encoding="utf-8") as f:
    row = testrun.run_release(Project(ROOT), release, testrun.SMOKE,
                              pytest_args=[], tests_dir=None, wheels=_Built(),
                              out=f)
  assert row.status == "pip install failed (exit 1):"
  assert "ERROR: no space for wheel" in out.read_text()
