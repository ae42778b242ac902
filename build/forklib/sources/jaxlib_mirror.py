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
"""Pinned jaxlib wheels (`jaxlib_build/pins.toml`), fetched and verified.

jaxlib is consumed as upstream's wheel: no patch touches C++. The index
mirrors the pinned wheels so that one index serves a complete install, on
every platform upstream publishes jaxlib for (`PLATFORMS`): a resolver that
finds jaxlib on the fork's index takes it from there only (uv's default
`first-index` strategy), so a platform missing from the mirror cannot
install. `pins` finds upstream's wheel of each platform and Python with pip
and records its sha256; `fetch_wheel` downloads one and checks it.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
import subprocess
import sys

from forklib import ForkError
from forklib import load_toml
from forklib import log
from forklib import scratch
from forklib.manifest import Release
from forklib.manifest import version_tuple
from forklib.project import Project
from forklib.project import cache_root
from forklib.sources import fetch

# The platforms upstream publishes jaxlib for, each with the platform tags
# pip is asked for (pip widens a macOS tag to the older macOS versions, not a
# manylinux tag to older glibcs: those are listed). REQUIRED_PLATFORMS must
# be pinned for every Python of a release; the others where upstream has
# them (macOS on Intel up to jaxlib 0.4.38).
PLATFORMS = {
    "linux-x86_64": ("manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                     "manylinux2014_x86_64"),
    "linux-aarch64": ("manylinux_2_27_aarch64", "manylinux_2_17_aarch64",
                      "manylinux2014_aarch64"),
    "macos-arm64": ("macosx_14_0_arm64",),
    "macos-x86_64": ("macosx_14_0_x86_64",),
    "windows-x64": ("win_amd64",),
}
REQUIRED_PLATFORMS = ("linux-x86_64", "linux-aarch64", "macos-arm64",
                      "windows-x64")

_WHEEL_RE = re.compile(
    r"^jaxlib-(?P<version>[^-]+)-(?P<py>cp\d+)-(?P<abi>[^-]+)-"
    r"(?P<platform>[^-]+)\.whl$")


@dataclasses.dataclass(frozen=True)
class PinnedWheel:
  """One pinned jaxlib wheel."""
  version: str
  name: str
  sha256: str

  @property
  def python_version(self) -> str:
    """"3.11" for a cp311 wheel."""
    py = _WHEEL_RE.match(self.name).group("py")[2:]
    return f"{py[0]}.{py[1:]}"

  @property
  def platform(self) -> str:
    """The wheel's platform tag(s), as in its name ("win_amd64")."""
    return _WHEEL_RE.match(self.name).group("platform")

  @property
  def family(self) -> str | None:
    """The key of `PLATFORMS` the wheel is for (None: none of them)."""
    return platform_family(self.platform)


def platform_family(platform: str) -> str | None:
  """The `PLATFORMS` key of a wheel's platform tag(s), e.g. "macos-arm64"."""
  for tag in platform.split("."):
    os_name = ("windows" if tag.startswith("win") else
               "linux" if "linux" in tag else
               "macos" if tag.startswith("macosx") else None)
    arch = next((a for suffix, a in (("_amd64", "x64"), ("_x86_64", "x86_64"),
                                     ("_aarch64", "aarch64"),
                                     ("_arm64", "arm64"))
                 if tag.endswith(suffix)), None)
    if os_name == "windows" and arch == "x64":
      return "windows-x64"
    if os_name in ("linux", "macos") and arch and arch != "x64":
      family = f"{os_name}-{arch}"
      if family in PLATFORMS:
        return family
  return None


def missing_platforms(pins: list[PinnedWheel],
                      pythons: tuple[str, ...]) -> list[str]:
  """The (Python, platform) pairs of REQUIRED_PLATFORMS `pins` lacks."""
  have = {(p.python_version, p.family) for p in pins}
  return [f"Python {py} on {family}" for py in pythons
          for family in REQUIRED_PLATFORMS if (py, family) not in have]


def load_pins(path: pathlib.Path) -> dict[str, list[PinnedWheel]]:
  """The pins file: jaxlib version -> its pinned wheels."""
  data = load_toml(path)
  pins: dict[str, list[PinnedWheel]] = {}
  for entry in data.get("jaxlib", []):
    version = entry.get("version")
    wheels = []
    for f in entry.get("files", []):
      m = _WHEEL_RE.match(f.get("name", ""))
      if not m or m.group("version") != version:
        raise ForkError(f"{path}: {f.get('name')!r} is not a jaxlib "
                        f"{version} wheel file name")
      if not re.fullmatch(r"[0-9a-f]{64}", f.get("sha256", "")):
        raise ForkError(f"{path}: {f['name']}: sha256 must be 64 lowercase "
                        "hex digits")
      wheels.append(PinnedWheel(version, f["name"], f["sha256"]))
    pins[version] = wheels
  return pins


def fetch_wheel(pin: PinnedWheel) -> pathlib.Path:
  """The verified wheel file of `pin`, downloaded with pip on first use."""
  return fetch.pip_download(
      f"jaxlib=={pin.version}", pin.name, cache_root() / "jaxlib",
      python_version=pin.python_version,
      pip_args=("--only-binary", ":all:", *(
          a for tag in pin.platform.split(".") for a in ("--platform", tag))),
      sha256=pin.sha256, pin="pinned in jaxlib_build/pins.toml")


def _resolve(requirement: str, python: str, family: str
             ) -> PinnedWheel | None:
  """The jaxlib wheel pip picks for `requirement`, `python` and `family`.

  pip resolves without downloading the wheel (`install --dry-run --report`
  reads the index's metadata) and reports the file's URL and the sha256 the
  index gives.

  Returns:
    The wheel, or None when upstream publishes none that matches.
  """
  with scratch.directory(cache_root() / "jaxlib", "find") as tmp:
    report = tmp / "report.json"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
           "--ignore-installed", "--ignore-requires-python", "--no-deps",
           "--only-binary", ":all:", "--disable-pip-version-check",
           "--python-version", python,
           *(a for tag in PLATFORMS[family] for a in ("--platform", tag)),
           "--target", str(tmp / "target"), "--report", str(report),
           requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
      if ("No matching distribution" in proc.stderr
          or "Could not find a version" in proc.stderr):
        return None
      raise ForkError(f"pip could not look up {requirement} for Python "
                      f"{python} on {family} (exit {proc.returncode}):\n"
                      f"{proc.stderr[-2000:]}")
    info = json.loads(report.read_text())["install"][0]["download_info"]
  name = info["url"].rsplit("/", 1)[-1]
  sha = info.get("archive_info", {}).get("hashes", {}).get("sha256")
  m = _WHEEL_RE.match(name)
  if not m or not sha:
    raise ForkError(f"pip reported {info['url']} for {requirement} "
                    f"without a sha256: cannot pin it")
  return PinnedWheel(m.group("version"), name, sha)


def find_upstream_wheel(version: str, python: str, family: str
                        ) -> PinnedWheel | None:
  """Upstream's jaxlib `version` wheel for `python` on `family`, by pip.

  `fetch_wheel` checks the downloaded file against the sha256 the index
  gives (see `_resolve`).

  Returns:
    The wheel, or None when upstream publishes none for that pair.
  """
  return _resolve(f"jaxlib=={version}", python, family)


def newest_jaxlib(specifier: str, python: str) -> str | None:
  """The newest jaxlib in `specifier` (">=0.11.2,<=0.12.0") for `python`.

  As pip resolves it for Linux x86_64 (where the tests run); None if
  upstream has none.
  """
  wheel = _resolve(f"jaxlib{specifier}", python, "linux-x86_64")
  return wheel.version if wheel else None


def find_upstream_wheels(version: str, pythons: tuple[str, ...]
                         ) -> list[PinnedWheel]:
  """Every wheel of jaxlib `version` upstream has for `pythons` (`PLATFORMS`).

  Raises:
    ForkError: a platform of REQUIRED_PLATFORMS has no wheel for a Python.
  """
  found = []
  for python in pythons:
    for family in PLATFORMS:
      log.step("pins", f"jaxlib {version}, Python {python}, {family}")
      wheel = find_upstream_wheel(version, python, family)
      if wheel is None and family in REQUIRED_PLATFORMS:
        raise ForkError(f"upstream publishes no jaxlib {version} wheel for "
                        f"Python {python} on {family}; drop Python {python} "
                        "from the release in patches/upstream.toml")
      if wheel is not None and wheel.name not in {w.name for w in found}:
        found.append(wheel)
  return sorted(found, key=lambda w: w.name)


def write_pins(path: pathlib.Path, updates: dict[str, list[PinnedWheel]]
               ) -> None:
  """Replaces the entries of `updates`' versions in the pins file at `path`.

  The file's leading comment and the other versions' entries stay; entries
  are written newest first.
  """
  text = path.read_text(encoding="utf-8") if path.exists() else ""
  header = text.split("[[jaxlib]]", 1)[0]
  pins = load_pins(path) if path.exists() else {}
  pins.update(updates)
  body = []
  for version in sorted(pins, key=version_tuple, reverse=True):
    lines = [f'[[jaxlib]]\nversion = "{version}"\nfiles = [']
    lines += [f'  {{ name = "{w.name}", sha256 = "{w.sha256}" }},'
              for w in sorted(pins[version], key=lambda w: w.name)]
    body.append("\n".join(lines) + "\n]\n")
  path.write_text(header.rstrip("\n") + "\n\n" + "\n".join(body),
                  encoding="utf-8")


def pin_releases(project: Project, releases: list[Release]
                 ) -> dict[str, list[PinnedWheel]]:
  """Pins the jaxlib wheels of `releases` in the project's pins file.

  Each release's `test_jaxlib`, for every platform of `PLATFORMS` and every
  Python of the releases on that jaxlib.

  Returns:
    The wheels pinned, by jaxlib version.
  """
  manifest = project.manifest()
  updates: dict[str, list[PinnedWheel]] = {}
  for release in releases:
    pythons = tuple(sorted(
        {p for r in manifest.releases if r.test_jaxlib == release.test_jaxlib
         for p in r.python}, key=version_tuple))
    updates[release.test_jaxlib] = find_upstream_wheels(release.test_jaxlib,
                                                        pythons)
  write_pins(project.pins_path, updates)
  return updates
