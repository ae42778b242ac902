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
"""A pytest plugin the test command loads into the test venv's pytest.

`python -m pytest -p forklib.testing.pytest_plugin` (with `build/` on
PYTHONPATH):

* `--jax-fork-report FILE`: writes one JSON line per test as it finishes
  (`{"nodeid", "outcome", "message", "seconds"}`; outcome is passed, failed,
  error, skipped, xfailed or xpassed; message is the first line of the
  error; seconds its setup, call and teardown together), and
  a `{"start": nodeid}` line as each test starts, so that a test that kills
  the process is known.
* `--jax-fork-exclude FILE`: deselects the node ids listed in FILE (one per
  line); the test command uses it to go on after a test crashed pytest.
* `--jax-fork-upstream-tree DIR`: runs upstream JAX's own tests from DIR (laid
  out like upstream's repository) against the *installed* jax. The installed
  jax must come from this venv's site-packages (else the run stops);
  `jax.experimental.jax2tf.tests`, which upstream's wheel does not ship, is
  found in DIR by an import hook, so the installed package is not modified.
* `--jax-fork-expect-version V`: stops the run unless `jax.__version__ == V`.

It runs on the test venv's Python, so it uses only the standard library and
pytest.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import pathlib
import sys
import sysconfig
from typing import Any

import pytest

_TESTS_PACKAGE = "jax.experimental.jax2tf.tests"
_JAX_KEY = pytest.StashKey[tuple[str, str]]()


def pytest_addoption(parser: Any) -> None:
  group = parser.getgroup("jax-fork", "the JAX call_tf fork's test command")
  group.addoption("--jax-fork-report", metavar="FILE",
                  help="write each test's outcome to FILE as JSON lines")
  group.addoption("--jax-fork-exclude", metavar="FILE",
                  help="deselect the node ids listed in FILE")
  group.addoption("--jax-fork-upstream-tree", metavar="DIR",
                  help="upstream's tests, laid out like upstream's repo")
  group.addoption("--jax-fork-expect-version", metavar="VERSION",
                  help="stop unless the installed jax has this version")


class _UpstreamTestsFinder(importlib.abc.MetaPathFinder):
  """Finds `jax.experimental.jax2tf.tests` in upstream's test tree."""

  def __init__(self, tests_dir: pathlib.Path):
    self._tests_dir = tests_dir

  def find_spec(self, fullname, path=None, target=None):
    del path, target  # The tests package lives only in our tree.
    if fullname != _TESTS_PACKAGE:
      return None
    return importlib.util.spec_from_file_location(
        fullname, self._tests_dir / "__init__.py",
        submodule_search_locations=[str(self._tests_dir)])


def _site_packages() -> set[pathlib.Path]:
  paths = sysconfig.get_paths()
  return {pathlib.Path(paths[k]).resolve() for k in ("purelib", "platlib")}


def _check_installed_jax(config: Any) -> None:
  import jax  # pylint: disable=g-import-not-at-top
  location = pathlib.Path(jax.__file__).resolve()
  if not any(site in location.parents for site in _site_packages()):
    raise pytest.UsageError(
        f"jax is imported from {location}, not from this venv's "
        f"site-packages ({', '.join(map(str, sorted(_site_packages())))}): "
        "upstream's tests must run against the installed wheel. Remove the "
        "source tree from sys.path / PYTHONPATH.")
  expected = config.getoption("jax_fork_expect_version")
  if expected and jax.__version__ != expected:
    raise pytest.UsageError(
        f"the installed jax is {jax.__version__} from {location}, expected "
        f"{expected}: reinstall the wheel under test into {sys.prefix}.")
  config.stash[_JAX_KEY] = (jax.__version__, str(location))


def pytest_configure(config: Any) -> None:
  tree = config.getoption("jax_fork_upstream_tree")
  if tree:
    tests_dir = (pathlib.Path(tree).resolve()
                 / "jax" / "experimental" / "jax2tf" / "tests")
    if (tests_dir / "__init__.py").exists():
      sys.meta_path.insert(0, _UpstreamTestsFinder(tests_dir))
  if tree or config.getoption("jax_fork_expect_version"):
    _check_installed_jax(config)
  report = config.getoption("jax_fork_report")
  if report:
    config.pluginmanager.register(_Reporter(pathlib.Path(report)),
                                  "jax-fork-reporter")


def pytest_report_header(config: Any) -> list[str]:
  found = config.stash.get(_JAX_KEY, None)
  return [f"jax under test: {found[0]} from {found[1]}"] if found else []


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
  exclude = config.getoption("jax_fork_exclude")
  if not exclude:
    return
  names = set(pathlib.Path(exclude).read_text(encoding="utf-8").splitlines())
  keep, drop = [], []
  for item in items:
    (drop if item.nodeid in names else keep).append(item)
  if drop:
    config.hook.pytest_deselected(items=drop)
    items[:] = keep


def _first_line(report: Any) -> str:
  longrepr = report.longrepr
  if longrepr is None:
    return ""
  if isinstance(longrepr, tuple):  # a skip: (file, line, reason)
    text = str(longrepr[2])
  else:
    crash = getattr(longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(longrepr)
  lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
  return lines[0][:500] if lines else ""


class _Reporter:
  """Writes each test's outcome as it finishes."""

  def __init__(self, path: pathlib.Path):
    self._file = path.open("a", encoding="utf-8")
    self._current: dict[str, tuple[str, str]] = {}
    self._seconds: dict[str, float] = {}

  def _write(self, record: dict[str, str]) -> None:
    self._file.write(json.dumps(record) + "\n")
    self._file.flush()

  def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
    del location
    self._write({"start": nodeid})

  def pytest_runtest_logreport(self, report: Any) -> None:
    self._seconds[report.nodeid] = (self._seconds.get(report.nodeid, 0.)
                                    + (getattr(report, "duration", 0.) or 0.))
    outcome, message = self._current.get(report.nodeid, ("passed", ""))
    if hasattr(report, "wasxfail"):
      new = "xfailed" if report.skipped else "xpassed"
      outcome, message = new, str(report.wasxfail)
    elif report.failed:
      new = "failed" if report.when == "call" else "error"
      if outcome not in ("failed", "error"):
        outcome, message = new, _first_line(report)
    elif report.skipped and outcome == "passed":
      outcome, message = "skipped", _first_line(report)
    self._current[report.nodeid] = (outcome, message)

  def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
    del location
    outcome, message = self._current.pop(nodeid, ("passed", ""))
    self._write({"nodeid": nodeid, "outcome": outcome, "message": message,
                 "seconds": round(self._seconds.pop(nodeid, 0.), 3)})

  def pytest_collectreport(self, report: Any) -> None:
    if report.failed:
      # The error itself is the last `E   ` line ("ModuleNotFoundError: ..."),
      # after "ImportError while importing test module ...".
      text = str(report.longrepr)
      errors = [l[1:].strip() for l in text.splitlines()
                if l.startswith("E ") and l[1:].strip()]
      message = errors[-1][:500] if errors else _first_line(report)
      self._write({"nodeid": report.nodeid or "<collection>",
                   "outcome": "error",
                   "message": "collection failed: " + message})

  def pytest_unconfigure(self, config: Any) -> None:
    del config
    self._file.close()
