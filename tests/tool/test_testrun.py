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
"""The test command's modes, its table and docs/compatibility.md."""

from __future__ import annotations

import pathlib
import threading
import time

import pytest

from forklib import ForkError
from forklib import manifest as manifest_lib
from forklib.project import Project
from forklib.testing import testrun

from .test_pipeline_synthetic import _config_patch
from .test_pipeline_synthetic import synthetic  # noqa: F401

MANIFEST = manifest_lib.load(
    pathlib.Path(__file__).resolve().parents[2] / "patches" / "upstream.toml")


def test_plan_default_in_full_the_others_smoke():
  plan = testrun.plan(MANIFEST, [], full=False)
  first = [(r, m) for r, m in plan
           if m not in (testrun.SMOKE_FORK, testrun.NO_TF)]
  assert [r.version for r, _ in first] == [r.version for r in
                                           MANIFEST.newest()]
  assert plan[0] == (MANIFEST.default(), testrun.FULL)
  assert {mode for _, mode in first[1:]} == {testrun.SMOKE}


def test_plan_runs_jax_export_without_tensorflow_on_the_default():
  for full in (False, True):
    plan = testrun.plan(MANIFEST, [], full=full)
    assert [(r.version, r.test_python) for r, m in plan
            if m == testrun.NO_TF] == [
                (MANIFEST.default().version,
                 MANIFEST.default().test_python)]
  release = MANIFEST.default()
  assert (testrun.log_dir_of(release, testrun.NO_TF)
          != testrun.log_dir_of(release, testrun.FULL))


def test_plan_tests_every_python_of_every_release():
  """Each further Python of a release (3.13) gets the fork's smoke suite:
  the default release's in `test`, every release's with `--full`."""
  default = MANIFEST.default()
  for full in (False, True):
    plan = testrun.plan(MANIFEST, [], full=full)
    assert [(r.version, r.test_python) for r, m in plan
            if m not in (testrun.NO_TF, testrun.SMOKE_FORK)] == [
        (r.version, r.python[0]) for r in MANIFEST.newest()]
    assert [(r.version, r.test_python) for r, m in plan
            if m == testrun.SMOKE_FORK] == [
                (r.version, p) for r in MANIFEST.newest()
                if full or r is default for p in r.python[1:]]
    assert any(m == testrun.SMOKE_FORK and r.test_python == "3.13"
               for r, m in plan)
    for r, _ in plan:  # the same release, only its Pythons reordered
      original = MANIFEST.get(r.version)
      assert sorted(r.python) == sorted(original.python)
      assert r.label == original.label


def test_plan_on_a_chosen_python():
  release = MANIFEST.default()
  [(chosen, mode)] = testrun.plan(MANIFEST, [release.version], full=False,
                                  python="3.13")
  assert (chosen.version, chosen.test_python, mode) == (
      release.version, "3.13", testrun.FULL)
  with pytest.raises(ForkError, match="not 3.9"):
    testrun.plan(MANIFEST, [release.version], full=False, python="3.9")


def test_plan_full_and_chosen_releases():
  assert {m for _, m in testrun.plan(MANIFEST, [], full=True)} == {
      testrun.FULL, testrun.SMOKE_FORK, testrun.NO_TF}
  assert [(r.version, m) for r, m in testrun.plan(
      MANIFEST, ["0.4.38", "0.10.2"], full=False)] == [
          ("0.4.38", testrun.FULL), ("0.10.2", testrun.FULL)]


def _rows() -> list[testrun.Row]:
  new, old = MANIFEST.newest()[0], MANIFEST.newest()[-1]
  return [testrun.Row(release=new, mode=testrun.FULL, python="3.12.1",
                      fork=(10, 0), upstream=(300, 44, 0), seconds=600),
          testrun.Row(release=old, mode=testrun.SMOKE, python="3.11",
                      status="build fails: patch 0001 does not apply",
                      seconds=6)]


def test_summary_says_when_upstream_tests_did_not_run():
  text = testrun.summary(_rows(), None)
  assert "upstream's own tests were NOT run" in text
  assert text.rstrip().endswith("releases: 1 passed, 1 failed")
  assert "build fails: patch 0001 does not apply" in text
  assert "upstream's own tests were NOT run" not in testrun.summary(
      _rows(), pathlib.Path("/x/upstream-tests"))


def test_compatibility_page_keeps_the_hand_written_notes(tmp_path):
  path = tmp_path / "compatibility.md"
  testrun.write_compatibility(path, _rows(), pathlib.Path("upstream-tests"),
                              "2026-11-30", "test machine")
  text = path.read_text()
  assert "| 0.12.0.1 | full | 3.12.1 | 2.21.0 | 10 passed, 0 failed |" in text
  assert "build fails: patch 0001 does not apply" in text
  path.write_text(text + "\n### 0.4.38\n\nNeeds TensorFlow 2.18.\n")
  rows = _rows()
  rows[1].status = "ok"
  testrun.write_compatibility(path, rows, None, "2026-12-01", "test machine")
  text = path.read_text()
  assert "Needs TensorFlow 2.18." in text
  assert "build fails: patch" not in text and "2026-12-01" in text
  assert text.count("## Notes per release") == 1


def _with_a_queue_that_does_not_apply(synthetic, monkeypatch):  # noqa: F811
  """The synthetic project, its patch drifted, pip and the cache offline."""
  root = synthetic["project"]
  (root / "patches" / "0001-config-add-option.patch").write_text(
      _config_patch("drifted\n"))
  monkeypatch.setenv("PIP_NO_INDEX", "1")
  monkeypatch.setenv("PIP_FIND_LINKS", str(synthetic["links"]))
  monkeypatch.setenv("JAX_FORK_CACHE", str(synthetic["cache"]))
  return root


def test_a_release_whose_queue_does_not_apply_is_reported(
    synthetic, monkeypatch):  # noqa: F811
  """No crash: the row says the build fails and why."""
  root = _with_a_queue_that_does_not_apply(synthetic, monkeypatch)
  release = manifest_lib.load(root / "patches" / "upstream.toml").get("9.9.9")
  row = testrun.run_release(Project(root), release, testrun.SMOKE,
                            pytest_args=[], tests_dir=None)
  assert not row.ok
  assert row.status.startswith("build fails: patch "
                               "0001-config-add-option.patch does not apply")
  assert row.fork is None and row.upstream is None


def test_baseline_times_and_sizes_of_suites():
  from forklib.testing import upstream_tests  # pylint: disable=g-import-not-at-top
  b = upstream_tests.Baseline(
      version="0.6.2", tests="jax-v0.6.2", date="", versions={}, machine="",
      call_tf_check="", failures={}, suites={
          "shape_poly_test.py": "104 failed, 1491 passed, 101 skipped in "
                                "492.75s (0:08:12)",
          "call_tf_test.py": "2 failed, 145 passed, 23 skipped, 1 subtests "
                             "passed in 42.06s",
          "version_test.py": "6 passed in 0.14s"})
  shape_poly = "jax/experimental/jax2tf/tests/shape_poly_test.py"
  call_tf = "jax/experimental/jax2tf/tests/call_tf_test.py"
  assert b.seconds(shape_poly) == 492.75
  assert b.seconds("tests/version_test.py") == 0.14
  assert b.seconds("tests/config_test.py") is None
  assert b.test_count(shape_poly) == 1696
  assert b.test_count(call_tf) == 170  # "1 subtests passed" is not a test
  assert (b.test_count(shape_poly) > testrun.SMOKE_SUITE_TESTS
          > b.test_count(call_tf))


def test_smoke_mode_leaves_only_huge_suites_to_full_mode(root):
  """With the committed baselines: call_tf_test always runs."""
  from forklib.testing import upstream_tests  # pylint: disable=g-import-not-at-top
  known = upstream_tests.load_known(root / upstream_tests.KNOWN_FAILURES)
  left = {(v, s.rsplit("/", 1)[1]) for v, b in known.items()
          for s in upstream_tests.SUITES
          if b.test_count(s) > testrun.SMOKE_SUITE_TESTS}
  assert left == {("0.6.2", "shape_poly_test.py"),
                  ("0.4.38", "shape_poly_test.py")}


def test_runs_go_two_at_a_time_longest_first_one_full_at_a_time():
  releases = MANIFEST.newest()[:4]
  runs = [(releases[0], testrun.FULL), (releases[1], testrun.SMOKE_FORK),
          (releases[2], testrun.FULL), (releases[3], testrun.SMOKE),
          (releases[1], testrun.SMOKE)]
  lock = threading.Lock()
  running: list[str] = []
  seen: list[tuple[str, ...]] = []
  started: list[tuple[str, str]] = []

  def one(release, mode):
    with lock:
      running.append(mode)
      started.append((release.version, mode))
      seen.append(tuple(running))
    time.sleep(0.3)
    with lock:
      running.remove(mode)
    return testrun.Row(release=release, mode=mode, python="3.x")

  rows = testrun._schedule(runs, one, jobs=2)
  assert [(r.release, r.mode) for r in rows] == runs  # plan order
  assert max(len(s) for s in seen) == 2  # two at a time, never more
  assert all(s.count(testrun.FULL) <= 1 for s in seen)
  # Longest first: the first full run, then (the other full run waiting)
  # the smoke runs, the further-Python runs last.
  assert started[:2] == [(releases[0].version, testrun.FULL),
                         (releases[3].version, testrun.SMOKE)]
  assert started[-1] == (releases[1].version, testrun.SMOKE_FORK)


def test_a_failing_run_stops_the_schedule_and_raises():
  runs = [(r, testrun.SMOKE) for r in MANIFEST.newest()[:4]]
  calls = []

  def one(release, mode):
    calls.append(release.version)
    raise RuntimeError(f"broken {release.version}")

  with pytest.raises(RuntimeError, match="broken"):
    testrun._schedule(runs, one, jobs=2)
  assert len(calls) <= 2  # no new run starts after a failure


def test_parallel_runs_build_a_release_once_and_print_each_whole(
    synthetic, monkeypatch, capsys):  # noqa: F811
  """Two runs of a release whose queue does not apply: one build, two rows."""
  root = _with_a_queue_that_does_not_apply(synthetic, monkeypatch)
  builds = []
  build = testrun.wheel_lib.build

  def counted(*args, **kwargs):
    builds.append(args[1].label)
    return build(*args, **kwargs)

  monkeypatch.setattr(testrun.wheel_lib, "build", counted)
  release = manifest_lib.load(root / "patches" / "upstream.toml").get("9.9.9")
  runs = [(release, testrun.SMOKE),
          (testrun.on_python(release, release.python[1]), testrun.SMOKE_FORK)]
  rows = testrun.run_all(Project(root), runs, pytest_args=[], tests_dir=None,
                         jobs=2)
  assert builds == [release.label]
  assert [r.release.test_python for r in rows] == list(release.python[:2])
  assert all(r.status.startswith("build fails: patch 0001-config-add-option"
                                 ".patch does not apply") for r in rows)
  out = capsys.readouterr().out
  assert out.count("===== jax 9.9.9") == 2


def test_full_runs_the_full_run_tests_on_the_default_release_or_those_named():
  default = MANIFEST.default().version
  assert testrun.full_run_releases(MANIFEST, [], full=False) == frozenset()
  assert testrun.full_run_releases(MANIFEST, [], full=True) == {default}
  assert testrun.full_run_releases(MANIFEST, ["0.10.2"], full=True) == {
      "0.10.2"}
  assert testrun.full_run_releases(MANIFEST, ["0.10.2"], full=False) == set()


def test_run_all_marks_the_runs_of_the_full_run_releases(monkeypatch):
  """`--full-run` (tests/conftest.py) reaches the runs of a release in
  `full_run` (run_release passes it in FULL and NO_TF mode only)."""
  seen = []

  def fake_release(project, release, mode, *, pytest_args, tests_dir,
                   wheels=None, out=None, full_run=False,
                   with_no_tf_run=False):
    seen.append((release.version, mode, full_run))
    return testrun.Row(release=release, mode=mode, python="3.x")

  monkeypatch.setattr(testrun, "run_release", fake_release)
  runs = testrun.plan(MANIFEST, [], full=False)
  default = MANIFEST.default().version
  testrun.run_all(None, runs, pytest_args=[], tests_dir=None, jobs=1,
                  full_run=frozenset({default}))
  assert {(v, m) for v, m, f in seen if f} == {
      (v, m) for v, m, _ in seen if v == default}
  assert {m for v, m, f in seen if f} >= {testrun.FULL, testrun.NO_TF}


@pytest.mark.parametrize("versions", [[], ["0.12.0.1"]])
def test_the_interpreters_tests_run_once_per_release(monkeypatch, versions):
  """A FULL run leaves NO_TF_ONLY_PATHS to the release's NO_TF run where
  the plan has one (`test`), and runs them where it has none
  (`test --upstream V`)."""
  seen = {}

  def fake_release(project, release, mode, *, pytest_args, tests_dir,
                   wheels=None, out=None, full_run=False,
                   with_no_tf_run=False):
    seen[(release.version, mode)] = with_no_tf_run
    return testrun.Row(release=release, mode=mode, python="3.x")

  monkeypatch.setattr(testrun, "run_release", fake_release)
  runs = testrun.plan(MANIFEST, versions, full=False)
  testrun.run_all(None, runs, pytest_args=[], tests_dir=None, jobs=1)
  default = MANIFEST.default().version
  assert seen[(default, testrun.FULL)] == (not versions)
  assert ((default, testrun.NO_TF) in seen) == (not versions)



def test_a_full_run_with_a_no_tf_run_ignores_what_that_runs(monkeypatch):
  ignored = [f"--ignore={p}" for p in testrun.NO_TF_ONLY_PATHS]
  for with_no_tf_run in (False, True):
    args = _fork_suite_args(monkeypatch, testrun.FULL, False,
                            with_no_tf_run=with_no_tf_run)
    assert all((i in args) == with_no_tf_run for i in ignored), args
  assert not set(ignored) & set(_fork_suite_args(
      monkeypatch, testrun.NO_TF, False, with_no_tf_run=True))
  for path in testrun.NO_TF_ONLY_PATHS:  # what NO_TF runs
    assert any(path.startswith(p) for p in testrun.NO_TF_PATHS)


@pytest.mark.parametrize("mode,full_run,passed", [
    (testrun.FULL, True, True), (testrun.NO_TF, True, True),
    (testrun.SMOKE, True, False), (testrun.SMOKE_FORK, True, False),
    (testrun.FULL, False, False)])
def test_run_release_passes_the_full_run_option(monkeypatch, mode, full_run,
                                                passed):
  args = _fork_suite_args(monkeypatch, mode, full_run)
  assert (testrun.FULL_RUN_ARG in args) == passed
  assert args[-1] == "-x"  # (the caller's arguments kept)


def _fork_suite_args(monkeypatch, mode, full_run, with_no_tf_run=False):
  """The fork suite's pytest arguments of `run_release` (nothing built)."""
  import contextlib  # pylint: disable=g-import-not-at-top
  got = []

  class Wheels:
    def get(self, release):
      return pathlib.Path("/nowhere/jax.whl")

  @contextlib.contextmanager
  def test_env(*args, **kwargs):
    yield pathlib.Path("/nowhere/venv")

  def run_fork_suite(project, release, venv, wheel, mode, pytest_args, *a):
    got.extend(pytest_args)
    return 0, (1, 0)

  monkeypatch.setattr(testrun.envs, "test_env", test_env)
  monkeypatch.setattr(testrun.envs, "venv_python", lambda v: v / "python")
  monkeypatch.setattr(testrun.upstream_tests, "versions_in",
                      lambda python: {"python": "3.x"})
  monkeypatch.setattr(testrun, "_run_fork_suite", run_fork_suite)
  row = testrun.run_release(
      Project(pathlib.Path(__file__).resolve().parents[2]),
      MANIFEST.default(), mode, pytest_args=["-x"], tests_dir=None,
      wheels=Wheels(), full_run=full_run, with_no_tf_run=with_no_tf_run)
  assert row.ok, row.status
  return got


def test_the_report_gives_seconds_per_test_file(tmp_path):
  from forklib.testing import upstream_tests  # pylint: disable=g-import-not-at-top
  report = tmp_path / "fork-suite.jsonl"
  report.write_text("\n".join([
      '{"start": "tests/a.py::t1"}',
      '{"nodeid": "tests/a.py::t1", "outcome": "passed", "message": "", '
      '"seconds": 2.5}',
      '{"nodeid": "tests/b.py::t[x]", "outcome": "failed", "message": "m", '
      '"seconds": 4}',
      '{"nodeid": "tests/a.py::t2", "outcome": "passed", "message": "", '
      '"seconds": 2}',
      '{"nodeid": "tests/c.py::old", "outcome": "passed", "message": ""}',
      '{"nodeid": "tests/b.py::t[y', ""]))
  assert upstream_tests.report_seconds(report) == {"tests/a.py": 4.5,
                                                   "tests/b.py": 4}
  assert list(upstream_tests.report_seconds(report)) == ["tests/a.py",
                                                         "tests/b.py"]
  assert upstream_tests.report_seconds(tmp_path / "none.jsonl") == {}
