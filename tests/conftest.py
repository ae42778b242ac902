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
"""Shared fixtures.

The suite is run by `python build/fork.py test`, which builds the patched
wheel, installs it into a test venv and runs pytest with that venv's Python;
it passes the wheel's path in $JAX_FORK_WHEEL.

Tests marked `full_run` cost most and prove least (what they check, other
tests of the default run check on smaller inputs): they run only with
`--full-run`, which `python build/fork.py test --full` passes
(docs/maintainers.md, "CI"). Tests that scale their inputs read the same
option (`full_run` below).
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "build"))


FULL_RUN = "--full-run"
_LEFT = pytest.StashKey[int]()  # how many tests `full_run` left out


def pytest_addoption(parser: pytest.Parser) -> None:
  parser.addoption(
      FULL_RUN, action="store_true",
      help="also run the tests marked full_run (`python build/fork.py test "
           "--full` passes it; docs/maintainers.md, \"CI\")")


@pytest.hookimpl(trylast=True)  # (after -k and -m: what they kept)
def pytest_collection_modifyitems(config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
  """Deselects the tests marked `full_run`, unless `--full-run`."""
  if config.getoption(FULL_RUN):
    return
  left = [item for item in items if item.get_closest_marker("full_run")]
  if left:
    config.hook.pytest_deselected(items=left)
    items[:] = [item for item in items if not item.get_closest_marker(
        "full_run")]
    config.stash[_LEFT] = len(left)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
  left = config.stash.get(_LEFT, 0)
  if left:
    terminalreporter.write_line(
        f"{left} test(s) marked full_run not run: `python build/fork.py test "
        f"--full` (pytest {FULL_RUN}) runs them")


@pytest.fixture(scope="session")
def full_run(request: pytest.FixtureRequest) -> bool:
  """Whether this is the full run (`--full-run`)."""
  return bool(request.config.getoption(FULL_RUN))


@pytest.fixture(scope="session")
def root() -> pathlib.Path:
  return ROOT


@pytest.fixture(scope="session")
def fork_wheel() -> pathlib.Path:
  """The wheel under test, as built by `python build/fork.py test`."""
  wheel = os.environ.get("JAX_FORK_WHEEL")
  if not wheel:
    pytest.fail("JAX_FORK_WHEEL is not set: run the suite with "
                "`python build/fork.py test`, which builds and installs the "
                "wheel first.")
  return pathlib.Path(wheel)


@pytest.fixture(scope="session")
def release():
  from forklib import manifest as manifest_lib
  manifest = manifest_lib.load(ROOT / "patches" / "upstream.toml")
  return manifest.select(os.environ.get("JAX_FORK_UPSTREAM"))
