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
"""Fixtures shared by the tool's tests.

`index`: the index `index --wheel` publishes for the wheel under test, with
the pinned jaxlib wheels of every platform. Building it copies and hashes
those wheels (hundreds of MB); test_index.py and test_platforms.py only read
and serve it, so the session builds it once.

`setuptools_links`: a find-links folder holding the setuptools wheel pip
needs to read the synthetic sdists' metadata, for every module that serves
one; downloaded once for the session. Tests link the wheel into find-links
folders of their own, which they change freely.

`new_venv`: a fresh virtual environment with its own pip, as
`python -m venv` makes it. `python -m venv` spends seconds in ensurepip
(installing pip from its bundled wheel), the same work for every test that
installs into a venv; so the session makes one venv, untouched by any test,
and each test gets a copy of it.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
from collections.abc import Callable

import pytest


@pytest.fixture(scope="session")
def index(root: pathlib.Path, fork_wheel: pathlib.Path,
          tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
  """`index --wheel <the wheel under test>`, jaxlib mirrored; read only.

  A test that changes an index changes a copy of this one, or checks that
  the tool refused to change it (and that it did not).
  """
  out = tmp_path_factory.mktemp("index") / "index"
  subprocess.run([sys.executable, str(root / "build" / "fork.py"), "-q",
                  "index", "--out", str(out), "--wheel", str(fork_wheel)],
                 check=True)
  return out


@pytest.fixture(scope="session")
def setuptools_links(tmp_path_factory: pytest.TempPathFactory
                     ) -> pathlib.Path:
  """A find-links folder holding the setuptools wheel pip's metadata needs."""
  links = tmp_path_factory.mktemp("links")
  subprocess.run(
      [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
       "--only-binary", ":all:", "--dest", str(links), "setuptools==82.0.1"],
      check=True)
  return links


@pytest.fixture(scope="session")
def _venv_template(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
  """A venv made by `python -m venv` (with pip); only ever copied."""
  path = tmp_path_factory.mktemp("venv-template") / "venv"
  subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
  return path


@pytest.fixture
def new_venv(_venv_template: pathlib.Path
             ) -> Callable[[pathlib.Path], pathlib.Path]:
  """Makes a fresh venv at a path (not existing yet); returns its Python.

  The venv is a copy of the session's template, which is the same
  environment as a new `python -m venv`: its bin/python links to the same
  interpreter, and the pyvenv.cfg beside it makes the copy's folder the
  prefix, so pip installs into the copy and nothing leaks between tests.
  Run pip as `python -m pip`: the bin/pip scripts name the template's
  Python.
  """
  def make(path: pathlib.Path) -> pathlib.Path:
    shutil.copytree(_venv_template, path, symlinks=True)
    python = path / "bin" / "python"
    prefix = subprocess.run(
        [str(python), "-c", "import sys; print(sys.prefix)"],
        capture_output=True, text=True, check=True).stdout.strip()
    # The copy is its own environment, not the template's.
    assert pathlib.Path(prefix).resolve() == path.resolve(), (prefix, path)
    return python
  return make
