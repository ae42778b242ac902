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
"""Upstream's own tests: sets by tag, the prepared tree, runs, judgement.

The runs use this venv's installed jax (the wheel under test) and small
synthetic suites laid out like upstream's repository.
"""

from __future__ import annotations

import io
import os
import pathlib
import subprocess
import sys
import tarfile
import textwrap

import pytest

from forklib import ForkError
from forklib import manifest as manifest_lib
from forklib.sources import patchq
from forklib.testing import upstream_tests
from forklib.testing.upstream_tests import SuiteResult

from . import patchutil

PASSING = "def test_ok():\n  pass\n"
CALL_TF_TEST = textwrap.dedent("""\
    import os
    import pathlib
    import jax
    from jax.experimental.jax2tf.tests import helper

    def test_imports_the_installed_jax():
      assert "site-packages" in pathlib.Path(jax.__file__).parts

    def test_helper_comes_from_the_tests_tree():
      assert helper.WHERE == "tree"
      assert "site-packages" not in pathlib.Path(helper.__file__).parts

    def test_fails():
      raise ValueError("boom\\nsecond line")

    def test_kills_the_process():
      os.abort()

    def test_after_the_crash():
      pass
    """)


def _files(**overrides: str) -> dict[str, str]:
  files = {suite: PASSING for suite in upstream_tests.SUITES}
  files["jax/experimental/jax2tf/tests/__init__.py"] = ""
  files["jax/experimental/jax2tf/tests/helper.py"] = 'WHERE = "tree"\n'
  files.update(overrides)
  return files


def _tarball(path: pathlib.Path, files: dict[str, str]) -> None:
  top = path.name.removesuffix(".tar.gz")
  with tarfile.open(path, "w:gz") as tar:
    for rel, text in sorted(files.items()):
      data = text.encode()
      info = tarfile.TarInfo(f"{top}/{rel}")
      info.size = len(data)
      tar.addfile(info, io.BytesIO(data))


def _checkout(path: pathlib.Path, files: dict[str, str]) -> None:
  for rel, text in files.items():
    (path / rel).parent.mkdir(parents=True, exist_ok=True)
    (path / rel).write_text(text)


def _run_suites(root: pathlib.Path, tmp_path: pathlib.Path,
                overrides: dict[str, str], suites: tuple[str, ...],
                python: pathlib.Path | None = None,
                **kwargs) -> list[SuiteResult]:
  """``run_suites`` of ``suites`` in a tree of upstream's suites with
  ``overrides``, by this Python (its installed jax) unless ``python``."""
  tree = tmp_path / "tree"
  _checkout(tree, _files(**overrides))
  (tree / "pytest.ini").write_text(upstream_tests.PYTEST_INI)
  if "expect_version" not in kwargs:
    import jax  # pylint: disable=g-import-not-at-top
    kwargs["expect_version"] = jax.__version__
  return upstream_tests.run_suites(
      python or pathlib.Path(sys.executable), tree, suites, tmp_path / "logs",
      build_dir=root / "build", **kwargs)


@pytest.fixture
def tests_dir(tmp_path) -> pathlib.Path:
  d = tmp_path / "upstream-tests"
  d.mkdir()
  _tarball(d / "jax-v0.10.2.tar.gz", _files())
  # A checkout of the whole repository: it has a jax/ package of its own.
  _checkout(d / "jax-v0.11.0", _files(**{"jax/__init__.py": "BROKEN = 1\n"}))
  _tarball(d / "jax-main-2026-08-08.tar.gz", _files())
  return d


def test_find_set_by_tag(tests_dir):
  found = upstream_tests.find_set(tests_dir, "0.10.2")
  assert (found.name, found.version, found.exact) == ("jax-v0.10.2", "0.10.2",
                                                      True)
  assert "NOTE" not in found.describe()


def test_find_set_falls_back_to_the_nearest_earlier_tag(tests_dir):
  found = upstream_tests.find_set(tests_dir, "0.12.0.1")
  assert (found.name, found.exact) == ("jax-v0.11.0", False)
  assert found.path == tests_dir / "jax-v0.11.0"
  assert ("no tests tagged jax-v0.12.0.1 there, so the nearest earlier "
          "tag's, 0.11.0, are used") in found.describe()
  assert upstream_tests.find_set(tests_dir, "0.10.10").version == "0.10.2"


def test_find_set_without_an_earlier_tag_says_what_to_add(tests_dir):
  with pytest.raises(ForkError) as e:
    upstream_tests.find_set(tests_dir, "0.4.38")
  assert "no upstream tests for jax 0.4.38" in str(e.value)
  assert "0.10.2, 0.11.0" in str(e.value)
  assert "a checkout of the tag named jax-v0.4.38." in str(e.value)
  with pytest.raises(ForkError, match="is not a directory"):
    upstream_tests.find_set(tests_dir / "missing", "0.10.2")


def test_prepare_copies_only_the_tests(tests_dir, tmp_path):
  tree = upstream_tests.prepare(upstream_tests.find_set(tests_dir, "0.11.0"),
                                [], upstream_tests.PYTEST_INI, tmp_path)
  assert not (tree / "jax" / "__init__.py").exists()
  for suite in upstream_tests.SUITES:
    assert (tree / suite).read_text() == PASSING
  assert (tree / "jax/experimental/jax2tf/tests/helper.py").exists()
  assert "--import-mode=importlib" in (tree / "pytest.ini").read_text()


def test_prepare_applies_the_test_hunks_of_the_queue(tests_dir, tmp_path):
  suite = "jax/experimental/jax2tf/tests/call_tf_test.py"
  changed = PASSING.replace("pass", "assert True  # the fork's behaviour")
  patch_path = tmp_path / "0001-x.patch"
  patch_path.write_text(patchutil.format_patch(
      "call_tf: a change and its test",
      {"jax/_src/config.py": ("a\n", "b\n"), suite: (PASSING, changed)}))
  patches_dir = tmp_path / "patches"
  patches_dir.mkdir()
  (patches_dir / "series").write_text("0001-x.patch\n")
  (patches_dir / "0001-x.patch").write_text(patch_path.read_text())
  release = manifest_lib.Release(
      version="0.10.2", sdist_sha256="0" * 64, fork_release=1,
      python=("3.11",), tensorflow="", jaxlib="", test_jaxlib="",
      test_tensorflow="")
  patches = upstream_tests.test_patches(patches_dir, release)
  assert [fp.path for p in patches for fp in p.files] == [suite]
  test_set = upstream_tests.find_set(tests_dir, "0.10.2")
  tree = upstream_tests.prepare(test_set, patches, upstream_tests.PYTEST_INI,
                                tmp_path / "cache")
  assert (tree / suite).read_text() == changed
  # The stock tree, for the baseline, is another copy, unpatched.
  stock = upstream_tests.prepare(test_set, [], upstream_tests.PYTEST_INI,
                                 tmp_path / "cache")
  assert stock != tree and (stock / suite).read_text() == PASSING
  # A test hunk that does not match upstream's test is an error.
  stale = [patchq.parse(patch_path)]
  stale[0].files[:] = [fp for fp in stale[0].files if fp.path == suite]
  (tests_dir / "jax-v0.10.2.tar.gz").unlink()
  _tarball(tests_dir / "jax-v0.10.2.tar.gz",
           _files(**{suite: "def test_other():\n  pass\n"}))
  with pytest.raises(ForkError) as e:
    upstream_tests.prepare(upstream_tests.find_set(tests_dir, "0.10.2"),
                           stale, upstream_tests.PYTEST_INI, tmp_path / "c2")
  assert "the test-file part of 0001-x.patch does not apply" in str(e.value)


def test_run_against_the_installed_jax_survives_a_crash(root, tmp_path):
  suite = "jax/experimental/jax2tf/tests/call_tf_test.py"
  other = "tests/version_test.py"
  result, after = _run_suites(root, tmp_path, {suite: CALL_TF_TEST},
                              (suite, other))
  outcomes = {n.rsplit("::", 1)[1]: o for n, o in result.outcomes.items()}
  assert outcomes["test_imports_the_installed_jax"][0] == "passed"
  assert outcomes["test_helper_comes_from_the_tests_tree"][0] == "passed"
  assert outcomes["test_fails"] == ("failed", "ValueError: boom")
  assert outcomes["test_kills_the_process"][0] == "error"
  assert "the test process died" in outcomes["test_kills_the_process"][1]
  assert outcomes["test_after_the_crash"][0] == "passed"
  assert len(result.summary) == 2
  assert "the test process died" in result.summary[0]
  assert result.summary[1].startswith("1 failed, 3 passed, 1 error in ")
  assert result.count("passed") == 3 and len(result.failures) == 2
  # The suite after the crash ran in the process started again, and its
  # tests are its own.
  assert after.suite == other
  assert after.outcomes == {f"{other}::test_ok": ("passed", "")}
  assert after.summary[0].startswith("1 passed in ")
  assert after.log == result.log


def test_a_pytest_that_exits_without_a_summary_is_an_error(root, tmp_path):
  """pytest's usage and internal errors (exit 2 to 4) print no summary and
  write no report: the suite is an error, never clean."""
  python = tmp_path / "python"
  python.write_text("#!/bin/sh\necho 'ERROR: usage'\nexit 4\n")
  python.chmod(0o755)
  results = _run_suites(root, tmp_path, {},
                        ("tests/version_test.py", "tests/config_test.py"),
                        python, expect_version="any")
  for suite, result in zip(("tests/version_test.py", "tests/config_test.py"),
                           results):
    assert result.failures == {f"{suite}::<pytest>": "pytest exited with 4"}
    assert "pytest exited with 4" in result.summary[0]


def test_a_source_tree_jax_is_refused(root, tmp_path):
  """The plugin stops if `jax` is not the installed wheel."""
  fake = tmp_path / "src" / "jax"
  fake.mkdir(parents=True)
  (fake / "__init__.py").write_text("__version__ = 'source'\n")
  tree = tmp_path / "tree"
  _checkout(tree, _files())
  path = os.pathsep.join([str(fake.parent), str(root / "build")])
  env = dict(os.environ, PYTHONPATH=path)
  proc = subprocess.run(
      [sys.executable, "-m", "pytest", "-p", "forklib.testing.pytest_plugin",
       "--jax-fork-upstream-tree", str(tree), str(tree / "tests")],
      cwd=tmp_path, env=env, capture_output=True, text=True)
  assert proc.returncode == 4, proc.stdout + proc.stderr
  assert "not from this venv's site-packages" in proc.stdout + proc.stderr


def _result(outcomes: dict[str, tuple[str, str]]) -> SuiteResult:
  return SuiteResult(suite="tests/x_test.py", outcomes=outcomes, summary=[],
                     seconds=1.0, log=pathlib.Path("x.log"))


def _baseline(tests: str, failures: dict[str, tuple[str, str]]
              ) -> upstream_tests.Baseline:
  return upstream_tests.Baseline(
      version="0.10.2", tests=tests, date="2026-11-30",
      versions={"jax": "0.10.2", "tensorflow-cpu": "2.21.0"},
      machine="test", call_tf_check="ok: test",
      suites={"x_test.py": "1 failed, 2 passed in 1s"}, failures=failures)


def test_judge_against_the_stock_baseline(tests_dir):
  test_set = upstream_tests.find_set(tests_dir, "0.10.2")
  result = _result({"a": ("passed", ""), "b": ("failed", "E: b"),
                    "c": ("error", "E: c"), "d": ("passed", "")})
  baseline = _baseline("jax-v0.10.2", {"b": ("failed", "E: b"),
                                       "d": ("failed", "E: d"),
                                       "gone": ("failed", "E")})
  judgement = upstream_tests.judge([result], test_set, baseline)
  assert judgement.unexpected == {"c": "E: c"}
  assert judgement.fixed == ["d"]  # "gone" did not run: not reported
  assert not judgement.ok
  text = upstream_tests.report([result], judgement)
  assert "FAIL c: E: c" in text and "PASSES NOW d" in text
  # A baseline of another test set, or none: every failure counts.
  for other in (_baseline("jax-v0.10.1", baseline.failures), None):
    judgement = upstream_tests.judge([result], test_set, other)
    assert set(judgement.unexpected) == {"b", "c"}
    assert "every failure counts" in judgement.note


def test_known_failures_round_trip(tmp_path):
  path = tmp_path / "known.toml"
  baseline = _baseline("jax-v0.10.2", {
      "a.py::T::test_x": ("failed", 'AssertionError: "quoted" \\ and ü')})
  upstream_tests.write_known(path, {"0.10.2": baseline})
  assert upstream_tests.load_known(path) == {"0.10.2": baseline}


def test_every_release_has_a_stock_baseline(root):
  """The committed baselines: one per release, with its pins working."""
  manifest = manifest_lib.load(root / "patches" / "upstream.toml")
  known = upstream_tests.load_known(root / "tests" /
                                    "upstream_known_failures.toml")
  for release in manifest.releases:
    assert release.version in known, release.version
    b = known[release.version]
    assert b.versions["jax"] == release.version
    assert b.versions["jaxlib"] == release.test_jaxlib
    assert b.versions["tensorflow-cpu"] == release.test_tensorflow
    assert b.versions["python"].startswith(release.test_python + ".")
    assert b.call_tf_check.startswith("ok: "), (release.version,
                                                b.call_tf_check)
    assert set(b.suites) == {s.rsplit("/", 1)[1]
                             for s in upstream_tests.SUITES}


def test_a_suite_that_cannot_be_imported_is_an_error_saying_why(root,
                                                                tmp_path):
  """Its suite is an error; the other suites of the process still run."""
  broken, other = _run_suites(
      root, tmp_path,
      {"tests/version_test.py": "import no_such_module_here\n" + PASSING},
      ("tests/version_test.py", "tests/config_test.py"))
  assert broken.failures == {
      "tests/version_test.py": "collection failed: ModuleNotFoundError: No "
                               "module named 'no_such_module_here'"}
  assert broken.summary and "error" in broken.summary[0]
  assert other.outcomes == {"tests/config_test.py::test_ok": ("passed", "")}


def test_a_timeout_or_a_suite_that_keeps_crashing_leaves_the_others_running(
    root, tmp_path, monkeypatch):
  """A test past the timeout is an error and pytest goes on without it; a
  suite that kills the process more than `_MAX_CRASHES` times is an error
  and left out; the suites after them still run and count."""
  monkeypatch.setattr(upstream_tests, "_MAX_CRASHES", 1)
  hangs, crashes, later = ("tests/version_test.py", "tests/config_test.py",
                           "jax/experimental/jax2tf/tests/jax2tf_test.py")
  files = {
      hangs: "import time\ndef test_hangs():\n  time.sleep(600)\n" + PASSING,
      crashes: "".join(f"def test_abort_{i}():\n  import os; os.abort()\n"
                       for i in range(3)),
      later: "def test_fails():\n  assert False\n"}
  first, second, third = _run_suites(root, tmp_path, files,
                                     (hangs, crashes, later), timeout=20)
  assert first.outcomes == {
      f"{hangs}::test_hangs": ("error", "timed out after 20s"),
      f"{hangs}::test_ok": ("passed", "")}
  assert second.failures == {
      f"{crashes}::test_abort_0": "the test process died (killed by signal 6)",
      f"{crashes}::test_abort_1": "the test process died (killed by signal 6)",
      f"{crashes}::<pytest>": "gave up after 2 crashes: the rest of it did "
                              "not run"}
  assert third.outcomes == {f"{later}::test_fails": ("failed", "assert False")}
  for result in (first, second, third):  # what pytest's summary would count
    summary = result.summary[-1]
    assert upstream_tests.Baseline(
        version="0", tests="", date="", versions={}, machine="",
        call_tf_check="", suites={result.name: summary},
        failures={}).test_count(result.suite) == len(result.outcomes)


def test_a_process_that_dies_collecting_runs_each_suite_alone(root, tmp_path):
  """An abort at import names no test: each suite then has a process of its
  own, so only the one that aborts is an error."""
  aborts, other = _run_suites(
      root, tmp_path,
      {"tests/version_test.py": "import os\nos.abort()\n" + PASSING},
      ("tests/version_test.py", "tests/config_test.py"))
  assert list(aborts.failures) == ["tests/version_test.py::<pytest>"]
  assert other.outcomes == {"tests/config_test.py::test_ok": ("passed", "")}


def test_every_outcome_goes_to_one_suite_and_every_suite_has_one():
  torn = "(a test after the last whole line of x.jsonl)"
  results = upstream_tests._by_suite(  # pylint: disable=protected-access
      {"a.py::t": ("passed", ""), "ab.py::t": ("failed", "E"),
       torn: ("error", "died")},
      {"a.py::t": 1.5}, {"a.py": [], "ab.py": [], "c.py": ["note"]},
      pathlib.Path("suites.log"))
  assert [r.outcomes for r in results] == [
      {"a.py::t": ("passed", ""), torn: ("error", "died")},
      {"ab.py::t": ("failed", "E")},
      {"c.py::<pytest>": ("error", "no test of it ran; see suites.log")}]
  assert [r.summary for r in results] == [
      ["1 passed, 1 error in 1.50s"], ["1 failed in 0.00s"],
      ["note", "1 error in 0.00s"]]
  assert upstream_tests.Baseline(
      version="0", tests="", date="", versions={}, machine="",
      call_tf_check="", suites={"a.py": results[0].summary[-1]},
      failures={}).seconds("tests/a.py") == 1.5
