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
"""The manifest's releases agree with upstream's sdists and the jaxlib pins.

Each release's sdist is fetched (verified against its pin) and read: its
Requires-Python must admit the release's Python, and its jaxlib range must be
the manifest's. Each Python of a release has wheels of its jaxlib (pinned)
and of its TensorFlow (asked of the registry, metadata only). The release's
`test_packages`, installed without their dependencies, find every one of
them in the test venv.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile

from packaging import requirements as requirements_lib
import pytest

from forklib import manifest as manifest_lib
from forklib.sources import fetch
from forklib.sources import jaxlib_mirror

MANIFEST = manifest_lib.load(
    pathlib.Path(__file__).resolve().parents[2] / "patches" / "upstream.toml")


def test_the_default_is_the_newest_release(monkeypatch):
  monkeypatch.delenv("JAX_FORK_UPSTREAM", raising=False)
  assert MANIFEST.select(None).version == "0.12.0.1"
  assert MANIFEST.default() is MANIFEST.newest()[0]
  monkeypatch.setenv("JAX_FORK_UPSTREAM", "0.4.38")
  assert MANIFEST.select(None).version == "0.4.38"


def test_python_per_release():
  for r in MANIFEST.releases:
    new = manifest_lib.version_tuple(r.version) >= (0, 11)
    expected = "3.12" if new else "3.11"
    assert r.test_python == expected, r.version


def _sdist_file(sdist, name: str) -> str:
  with tarfile.open(sdist) as tar:
    member = next(m for m in tar.getmembers()
                  if m.name.split("/", 1)[-1] == name)
    return tar.extractfile(member).read().decode()


@pytest.mark.network
@pytest.mark.parametrize("release", MANIFEST.releases, ids=lambda r: r.version)
def test_release_matches_upstreams_sdist(release):
  sdist = fetch.fetch(release)
  requires = re.search(r"^Requires-Python: >=(\d+)\.(\d+)$",
                       _sdist_file(sdist, "PKG-INFO"), re.MULTILINE)
  assert requires, "no Requires-Python in PKG-INFO"
  minimum = (int(requires.group(1)), int(requires.group(2)))
  for python in release.python:
    assert manifest_lib.version_tuple(python) >= minimum, python
  setup = _sdist_file(sdist, "setup.py")
  assert "f'jaxlib >={_minimum_jaxlib_version}, <={_jax_version}'" in setup
  minimum_jaxlib = re.search(r"^_minimum_jaxlib_version = ['\"]([^'\"]+)",
                             _sdist_file(sdist, "jax/version.py"),
                             re.MULTILINE).group(1)
  assert release.jaxlib == f">={minimum_jaxlib},<={release.version}"


@pytest.mark.parametrize("release", MANIFEST.releases, ids=lambda r: r.version)
def test_jaxlib_of_each_release_is_pinned_for_its_python(root, release):
  pins = jaxlib_mirror.load_pins(root / "jaxlib_build" / "pins.toml")
  assert release.test_jaxlib in pins, release.test_jaxlib
  pythons = {p.python_version for p in pins[release.test_jaxlib]}
  assert set(release.python) <= pythons
  # Every platform upstream publishes jaxlib for, for each of its Pythons.
  assert jaxlib_mirror.missing_platforms(pins[release.test_jaxlib],
                                         release.python) == []


@pytest.mark.network
@pytest.mark.parametrize("tensorflow,python", sorted(
    {(r.test_tensorflow, p) for r in MANIFEST.releases for p in r.python}))
def test_tensorflow_has_a_wheel_for_each_python_of_its_releases(
    tmp_path, tensorflow, python):
  """A Python listed for a release needs its TF's wheel (3.13: TF >= 2.20)."""
  report = tmp_path / "report.json"
  proc = subprocess.run(
      [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
       "--ignore-installed", "--no-deps", "--only-binary", ":all:",
       "--disable-pip-version-check", "--python-version", python,
       *(a for tag in jaxlib_mirror.PLATFORMS["linux-x86_64"]
         for a in ("--platform", tag)),
       "--target", str(tmp_path / "target"), "--report", str(report),
       f"tensorflow-cpu=={tensorflow}"], capture_output=True, text=True)
  assert proc.returncode == 0, proc.stderr[-2000:]
  url = json.loads(report.read_text())["install"][0]["download_info"]["url"]
  assert f"-cp{python.replace('.', '')}-" in url.rsplit("/", 1)[-1], url


def test_platform_families_of_wheel_tags():
  family = jaxlib_mirror.platform_family
  assert family("manylinux_2_27_x86_64") == "linux-x86_64"
  assert family("manylinux2014_aarch64") == "linux-aarch64"
  assert family("manylinux_2_17_x86_64.manylinux2014_x86_64") == (
      "linux-x86_64")
  assert family("macosx_11_0_arm64") == "macos-arm64"
  assert family("macosx_10_14_x86_64") == "macos-x86_64"
  assert family("win_amd64") == "windows-x64"
  assert family("musllinux_1_2_riscv64") is None


def test_pins_rewrites_one_release_and_keeps_the_rest(root, tmp_path):
  path = tmp_path / "pins.toml"
  shutil.copyfile(root / "jaxlib_build" / "pins.toml", path)
  before = jaxlib_mirror.load_pins(path)
  version = sorted(before)[0]
  kept = before[version][:1]
  jaxlib_mirror.write_pins(path, {version: kept})
  after = jaxlib_mirror.load_pins(path)
  assert after[version] == kept
  assert {v: w for v, w in after.items() if v != version} == {
      v: w for v, w in before.items() if v != version}
  header = (root / "jaxlib_build" / "pins.toml").read_text().split(
      "[[jaxlib]]", 1)[0]
  assert path.read_text().startswith(header)
  assert jaxlib_mirror.missing_platforms(kept, ("3.12",)) != []


@pytest.mark.skipif(
    "JAX_FORK_TEST_VENV" not in os.environ,
    reason="checks the test venv that `build/fork.py test` makes")
def test_test_packages_find_their_dependencies_installed():
  """`--no-deps` left nothing out: each requirement of a test package is met.

  `tensorflow` (tf-keras and TF Probability ask for it) is met by
  tensorflow-cpu, the same modules under another distribution name.
  """
  release = MANIFEST.select(None)
  unmet = []
  for pin in release.test_packages:
    name, version = pin.split("==")
    assert importlib.metadata.version(name) == version, pin
    for text in importlib.metadata.requires(name) or []:
      requirement = requirements_lib.Requirement(text)
      if requirement.marker and not requirement.marker.evaluate(
          {"extra": ""}):
        continue
      dist = ("tensorflow-cpu" if requirement.name == "tensorflow"
              else requirement.name)
      try:
        installed = importlib.metadata.version(dist)
      except importlib.metadata.PackageNotFoundError:
        unmet.append(f"{pin} needs {text}: not installed")
        continue
      if not requirement.specifier.contains(installed, prereleases=True):
        unmet.append(f"{pin} needs {text}: {dist} {installed} is installed")
  assert not unmet, ("add these to test_packages in patches/upstream.toml:\n"
                     + "\n".join(unmet))
