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
"""Every platform resolves the fork from its index: docs/install.md's commands.

The fork's index as `index` publishes the release under test (its wheel and
the jaxlib wheels pinned for every platform), served by `serve` on
127.0.0.1. For Linux x86_64 and aarch64, macOS arm64 and Windows x64 and
each Python of the release, uv (`uv pip compile --python-platform`, the
guide's `--index`) and pip (`--extra-index-url`, `--platform`) resolve the
release: jax and jaxlib from the fork's index, the rest from the index the
user already has. They read the wheels' metadata only (PEP 658): no jaxlib
of another platform is downloaded. Then the fork installs on this machine:
with uv the guide's way (and runs), with pip from the fork's index alone. The jaxlib wheels are downloaded once into the fork's cache, and
uv's cache lives there too.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from packaging.specifiers import SpecifierSet

from forklib.project import cache_root
from forklib.sources import jaxlib_mirror

from .test_index import _Server

# uv's name for each platform, and pip's platform tags for it.
PLATFORMS = {
    "linux-x86_64": ("x86_64-manylinux_2_28",
                     jaxlib_mirror.PLATFORMS["linux-x86_64"]),
    "linux-aarch64": ("aarch64-manylinux_2_28",
                      jaxlib_mirror.PLATFORMS["linux-aarch64"]),
    "macos-arm64": ("aarch64-apple-darwin",
                    jaxlib_mirror.PLATFORMS["macos-arm64"]),
    "windows-x64": ("x86_64-pc-windows-msvc",
                    jaxlib_mirror.PLATFORMS["windows-x64"]),
}


@pytest.fixture(scope="module")
def served(root, index):
  server = _Server(root, index)
  yield server
  server.close()


def _uv_env() -> dict[str, str]:
  return dict(os.environ, UV_PYTHON_DOWNLOADS="never",
              UV_CACHE_DIR=str(cache_root() / "uv"))


def _pins(root, release) -> dict[tuple[str, str], jaxlib_mirror.PinnedWheel]:
  pins = jaxlib_mirror.load_pins(root / "jaxlib_build" / "pins.toml")
  return {(p.python_version, p.family): p for p in pins[release.test_jaxlib]}


def _cases(release):
  return [(family, python) for family in PLATFORMS for python in
          release.python]


def test_every_platform_and_python_is_pinned(root, release):
  pins = _pins(root, release)
  assert sorted(pins) == sorted((p, f) for f, p in _cases(release))


@pytest.mark.parametrize("family", PLATFORMS)
def test_uv_resolves_the_guides_command(root, release, served, family):
  """`uv pip compile --index <fork>`: jax and jaxlib from the fork's index."""
  uv_platform, _ = PLATFORMS[family]
  for python in release.python:
    proc = subprocess.run(
        [sys.executable, "-m", "uv", "pip", "compile", "--quiet",
         "--no-header", "--emit-index-annotation", "--python-platform",
         uv_platform, "--python-version", python, "--index", served.url,
         "-"], input=f"jax[tensorflow-cpu]=={release.label}\n",
        capture_output=True, text=True, env=_uv_env())
    assert proc.returncode == 0, (family, python, proc.stderr)
    blocks = {}
    for block in proc.stdout.split("\n"):
      if block and not block.startswith(" "):
        name = block
        blocks[name] = []
      elif block:
        blocks[name].append(block.strip())
    assert f"# from {served.url}" in blocks[f"jax=={release.label}"]
    assert f"# from {served.url}" in blocks[f"jaxlib=={release.test_jaxlib}"]
    tf = [n for n in blocks if n.startswith(("tensorflow==",
                                             "tensorflow-cpu=="))]
    wanted = ("tensorflow-cpu" if family in ("linux-x86_64", "windows-x64")
              else "tensorflow")
    assert [n.split("==")[0] for n in tf] == [wanted], (family, tf)
    assert SpecifierSet(release.tensorflow).contains(tf[0].split("==")[1])
  # uv read the metadata of the platform's jaxlib, not the wheel itself.
  pins = _pins(root, release)
  for python in release.python:
    name = pins[(python, family)].name
    assert any(f"GET /files/{name}.metadata " in line for line in served.log)
    if family != "linux-x86_64":  # (the install below downloads this one)
      assert not any(f"GET /files/{name} " in line for line in served.log)


@pytest.mark.parametrize("family", PLATFORMS)
def test_pip_resolves_the_guides_command(root, release, served, family,
                                         tmp_path):
  """`pip install --extra-index-url <fork>`, as for that platform."""
  _, tags = PLATFORMS[family]
  pins = _pins(root, release)
  for python in release.python:
    report = tmp_path / f"report-{python}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
         "--disable-pip-version-check", "--ignore-installed",
         "--ignore-requires-python", "--only-binary", ":all:",
         "--python-version", python,
         *(a for tag in tags for a in ("--platform", tag)),
         "--target", str(tmp_path / "target"), "--report", str(report),
         "--extra-index-url", served.url, f"jax=={release.label}"],
        capture_output=True, text=True)
    assert proc.returncode == 0, (family, python, proc.stderr)
    got = {i["metadata"]["name"]: i for i in
           json.loads(report.read_text())["install"]}
    assert got["jax"]["metadata"]["version"] == release.label
    assert got["jax"]["download_info"]["url"].startswith(
        served.url.removesuffix("simple/"))
    jaxlib = got["jaxlib"]
    assert jaxlib["metadata"]["version"] == release.test_jaxlib
    pin = pins[(python, family)]
    assert jaxlib["download_info"]["url"].endswith("/" + pin.name)
    assert jaxlib["download_info"]["archive_info"]["hashes"]["sha256"] == (
        pin.sha256)


def _versions(python: pathlib.Path) -> list[str]:
  return subprocess.run(
      [str(python), "-c", "import importlib.metadata as m; "
       "print(m.version('jax'), m.version('jaxlib'))"],
      capture_output=True, text=True, check=True).stdout.split()


def test_the_fork_installs_here_with_uv_and_pip(release, served, new_venv,
                                                tmp_path):
  """uv installs the guide's way and jax runs; pip takes both from the fork."""
  venv = tmp_path / "venv-uv"
  subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)],
                 check=True)
  python = venv / "bin" / "python"
  proc = subprocess.run(
      [sys.executable, "-m", "uv", "pip", "install", "--quiet", "--python",
       str(python), "--index", served.url, f"jax=={release.label}"],
      capture_output=True, text=True, env=_uv_env())
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert _versions(python) == [release.label, release.test_jaxlib]
  ran = subprocess.run(
      [str(python), "-c", "import jax; print(jax.__version__, "
       "int(jax.numpy.arange(3).sum()))"],
      capture_output=True, text=True)
  assert ran.stdout.split() == [release.label, "3"], ran.stderr
  # pip, from the fork's index alone: both wheels are there (the
  # dependencies, from the public index, are the uv case's).
  python = new_venv(tmp_path / "venv-pip")
  proc = subprocess.run(
      [str(python), "-m", "pip", "install", "--quiet",
       "--disable-pip-version-check", "--no-deps", "--index-url", served.url,
       f"jax=={release.label}", f"jaxlib=={release.test_jaxlib}"],
      capture_output=True, text=True)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert _versions(python) == [release.label, release.test_jaxlib]
