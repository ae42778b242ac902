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
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "build"))


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
