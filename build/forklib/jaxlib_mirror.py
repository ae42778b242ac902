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
mirrors the pinned wheels so that one index serves a complete install.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import subprocess
import sys

from forklib import ForkError
from forklib import load_toml
from forklib import fetch
from forklib import log
from forklib import scratch

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
    return _WHEEL_RE.match(self.name).group("platform")


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


def fetch_wheel(pin: PinnedWheel, cache: pathlib.Path | None = None
                ) -> pathlib.Path:
  """The verified wheel file of ``pin``, downloaded with pip on first use."""
  cache = (cache or fetch.cache_root()) / "jaxlib"
  target = cache / pin.name
  if target.exists():
    fetch.verify(target, pin.sha256, origin="cached copy")
    return target
  cache.mkdir(parents=True, exist_ok=True)
  log.step("jaxlib", f"pip download {pin.name}")
  with scratch.directory(cache, "download") as tmp:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--only-binary", ":all:", "--disable-pip-version-check",
           "--python-version", pin.python_version, "--platform", pin.platform,
           "--dest", str(tmp), f"jaxlib=={pin.version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    downloaded = pathlib.Path(tmp) / pin.name
    if proc.returncode != 0 or not downloaded.exists():
      raise ForkError(
          f"pip download of {pin.name} failed (exit {proc.returncode}); it "
          f"produced {sorted(os.listdir(tmp)) or 'nothing'}:\n"
          f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    fetch.verify(downloaded, pin.sha256,
                 origin="fresh pip download, pinned in jaxlib_build/pins.toml")
    os.replace(downloaded, target)
  return target
