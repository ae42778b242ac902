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
"""Finding each release's Python: PATH, then pyenv, else a clear error.

A fake Python 3.99 and a fake pyenv stand in, on a PATH of their own; a
pyenv shim that exists but does not run (as for an inactive version) must
not be taken.
"""

from __future__ import annotations

import pathlib

import pytest

from forklib import ForkError
from forklib.testing import envs


def _script(path: pathlib.Path, body: str) -> pathlib.Path:
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text("#!/bin/sh\n" + body)
  path.chmod(0o755)
  return path


@pytest.fixture
def bin_dir(tmp_path, monkeypatch) -> pathlib.Path:
  d = tmp_path / "bin"
  d.mkdir()
  monkeypatch.setenv("PATH", str(d))
  return d


def test_a_working_python_on_path(bin_dir):
  python = _script(bin_dir / "python3.99", "echo 3.99\n")
  assert envs.python_for("3.99") == str(python)


def test_a_broken_shim_is_skipped_for_pyenv_prefix(bin_dir, tmp_path):
  _script(bin_dir / "python3.99",
          "echo 'pyenv: python3.99: command not found' >&2; exit 127\n")
  prefix = tmp_path / "pyenv" / "versions" / "3.99.1"
  python = _script(prefix / "bin" / "python3.99", "echo 3.99\n")
  _script(bin_dir / "pyenv", f"""\
case "$1" in
  prefix) [ "$2" = 3.99 ] && echo {prefix} && exit 0; exit 1;;
  root) echo {tmp_path / 'pyenv'};;
esac
""")
  assert envs.python_for("3.99") == str(python)


def test_pyenv_versions_are_scanned_newest_first(bin_dir, tmp_path):
  root = tmp_path / "pyenv"
  for patch in ("3.99.2", "3.99.10", "3.990.1"):
    _script(root / "versions" / patch / "bin" / "python3.99",
            f"echo {patch[:4]}\n")
  _script(bin_dir / "pyenv", f"""\
case "$1" in
  root) echo {root};;
  *) exit 1;;
esac
""")
  assert envs.python_for("3.99") == str(
      root / "versions" / "3.99.10" / "bin" / "python3.99")


def test_a_missing_python_is_named_with_what_to_do(bin_dir):
  shim = _script(bin_dir / "python3.99", "exit 127\n")
  with pytest.raises(ForkError) as e:
    envs.python_for("3.99")
  msg = str(e.value)
  assert "Python 3.99 is needed and was not found" in msg
  assert str(shim) in msg  # what was tried
  assert "pyenv install 3.99" in msg
