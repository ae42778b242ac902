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
"""What docs/install.md says about pip and uv, checked with pip and uv.

Two indexes on 127.0.0.1, both served by `serve`: the fork's, and a stand-in
for the public index holding upstream-like `jax` releases (0.10.2 for Python
3.11 and later, 0.12.0.1 for 3.12 and later, as upstream has them). The
resolvers' choices between them are the ones the install guide describes.
The uv project case resolves the fork's dependencies from uv's default index,
as a user's project would.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tomllib

import pytest

from forklib import index as index_lib

from .test_index import _Server
from .test_index import _small_wheel


@pytest.fixture(scope="module")
def fork_index(root, fork_wheel, tmp_path_factory):
  out = tmp_path_factory.mktemp("fork") / "index"
  subprocess.run([sys.executable, str(root / "build" / "fork.py"), "-q",
                  "index", "--out", str(out), "--wheel", str(fork_wheel),
                  "--no-jaxlib"], check=True)
  server = _Server(root, out)
  yield server.url
  server.close()


@pytest.fixture(scope="module")
def public_standin(root, tmp_path_factory):
  tmp = tmp_path_factory.mktemp("public")
  wheels = [_small_wheel(tmp, "0.10.2", requires_python=">=3.11"),
            _small_wheel(tmp, "0.12.0.1", requires_python=">=3.12")]
  index_lib.build(tmp / "index", wheels)
  server = _Server(root, tmp / "index")
  yield server.url
  server.close()


def _uv_env(tmp_path: pathlib.Path) -> dict[str, str]:
  # Never download a Python: resolve for the version asked, on this one.
  return dict(os.environ, UV_PYTHON_DOWNLOADS="never",
              UV_CACHE_DIR=str(tmp_path / "uv-cache"))


def _uv_resolve(tmp_path, python: str, requirement: str, *index_args: str
                ) -> tuple[int, str]:
  """The `jax` uv picks for `requirement` (`uv pip compile --no-deps`)."""
  proc = subprocess.run(
      [sys.executable, "-m", "uv", "pip", "compile", "--quiet", "--no-header",
       "--no-annotate", "--no-deps", "--python-version", python, *index_args,
       "-"], input=requirement + "\n", capture_output=True, text=True,
      env=_uv_env(tmp_path))
  return proc.returncode, (proc.stdout.strip() if proc.returncode == 0
                           else proc.stderr)


@pytest.mark.parametrize("python, upstream", [("3.11", "0.10.2"),
                                              ("3.12", "0.12.0.1")])
def test_uv_with_the_fork_as_main_index_and_the_public_as_extra(
    fork_index, public_standin, release, tmp_path, python, upstream):
  """uv asks --extra-index-url first, and stops at the first index with jax."""
  args = ("--index-url", fork_index, "--extra-index-url", public_standin)
  assert _uv_resolve(tmp_path, python, "jax", *args) == (0, f"jax=={upstream}")
  rc, err = _uv_resolve(tmp_path, python, f"jax=={release.label}", *args)
  assert rc != 0 and "No solution found" in err
  best = ("--index-strategy", "unsafe-best-match", *args)
  assert _uv_resolve(tmp_path, python, f"jax=={release.label}", *best) == (
      0, f"jax=={release.label}")


@pytest.mark.parametrize("python", ["3.11", "3.12"])
def test_uv_with_the_fork_as_first_index(fork_index, public_standin, release,
                                         tmp_path, python):
  """`--index FORK`: uv takes jax from the fork only, pinned or not."""
  args = ("--index", fork_index, "--default-index", public_standin)
  for requirement in ("jax", f"jax=={release.label}"):
    assert _uv_resolve(tmp_path, python, requirement, *args) == (
        0, f"jax=={release.label}")


@pytest.mark.parametrize("python, expected", [("3.11", "fork"),
                                              ("3.12", "0.12.0.1")])
def test_pip_with_an_extra_index_takes_the_newest_jax(
    fork_index, public_standin, release, tmp_path, python, expected):
  """pip merges its indexes: an unpinned jax is the newest for the Python."""
  proc = subprocess.run(
      [sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
       "--no-deps", "--only-binary", ":all:", "--python-version", python,
       "--index-url", public_standin, "--extra-index-url", fork_index,
       "--dest", str(tmp_path / "dl"), "jax"], capture_output=True, text=True)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  version = release.label if expected == "fork" else expected
  assert [p.name for p in (tmp_path / "dl").iterdir()] == [
      f"jax-{version}-py3-none-any.whl"]


def test_uv_project_with_the_fork_index_explicit_and_mapped(
    fork_index, release, tmp_path):
  """docs/install.md's pyproject.toml: jax from the fork, the rest from PyPI."""
  project = tmp_path / "project"
  project.mkdir()
  for requirement in (f"jax[tensorflow]=={release.label}", "jax"):
    (project / "pyproject.toml").write_text(f"""\
[project]
name = "uses-the-fork"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["{requirement}"]

[[tool.uv.index]]
name = "jax-calltf"
url = "{fork_index}"
explicit = true

[tool.uv.sources]
jax = {{ index = "jax-calltf" }}
""")
    proc = subprocess.run(
        [sys.executable, "-m", "uv", "lock", "--python", sys.executable],
        cwd=project, capture_output=True, text=True, env=_uv_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lock = tomllib.loads((project / "uv.lock").read_text())
    jax = [p for p in lock["package"] if p["name"] == "jax"]
    assert [(p["version"], p["source"]) for p in jax] == [
        (release.label, {"registry": fork_index})], requirement
