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
"""The manifest of supported upstream releases: `patches/upstream.toml`."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import sys

from forklib import ForkError
from forklib import load_toml

LABEL = "calltf"

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_VERSION_RE = re.compile(r"^[0-9]+(\.[0-9]+)*$")
_REQUIRED_KEYS = ("version", "sdist_sha256", "fork_release", "python",
                  "tensorflow", "jaxlib", "test_jaxlib", "test_tensorflow")
_OPTIONAL_KEYS = ("test_packages",)
_PIN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[0-9][A-Za-z0-9.+!-]*$")


@dataclasses.dataclass(frozen=True)
class Release:
  """One supported upstream release, as pinned in the manifest.

  Attributes:
    version: the upstream JAX version, e.g. "0.10.2".
    sdist_sha256: sha256 of upstream's source distribution.
    fork_release: the fork release number <n> in "<version>+calltf.<n>".
    python: the Python versions ("3.11", ...) this release is built and
      tested with; the first is the one the tests and the demo use.
    tensorflow: the verified TensorFlow range, e.g. ">=2.21,<2.22".
    jaxlib: the jaxlib range the wheel accepts.
    test_jaxlib: the exact jaxlib version tests install.
    test_tensorflow: the exact tensorflow-cpu version tests install.
    test_packages: exact pins ("name==version") of the packages users pair
      with TensorFlow (TF Probability) that the fork's suite tests; the test
      venvs install them with `--no-deps`, after the rest.
  """
  version: str
  sdist_sha256: str
  fork_release: int
  python: tuple[str, ...]
  tensorflow: str
  jaxlib: str
  test_jaxlib: str
  test_tensorflow: str
  test_packages: tuple[str, ...] = ()

  @property
  def label(self) -> str:
    """The fork's version string, e.g. "0.10.2+calltf.1"."""
    return f"{self.version}+{LABEL}.{self.fork_release}"

  @property
  def sdist_name(self) -> str:
    return f"jax-{self.version}.tar.gz"

  @property
  def test_python(self) -> str:
    """The Python version ("3.12") the test and demo venvs use."""
    return self.python[0]

  def supports_python(self, python: str) -> bool:
    return python in self.python


@dataclasses.dataclass(frozen=True)
class Manifest:
  path: pathlib.Path
  releases: tuple[Release, ...]

  def get(self, version: str) -> Release:
    """Returns the release `version`, or raises a ForkError listing them all."""
    for r in self.releases:
      if r.version == version:
        return r
    known = ", ".join(r.version for r in self.releases)
    raise ForkError(
        f"upstream release {version!r} is not in {self.path} (it lists: "
        f"{known}). Add a [[release]] entry for it first.")

  def default(self) -> Release:
    """The default release: the newest in the manifest.

    It does not depend on the Python that runs the tool: the fork's wheel is
    pure Python and builds on any Python the tool runs on (3.11 or newer);
    the venvs of `demo` and `test` use the release's own Python
    (`Release.test_python`), found on PATH or under pyenv.
    """
    return max(self.releases, key=lambda r: version_tuple(r.version))

  def newest(self) -> list[Release]:
    """The releases, newest first."""
    return sorted(self.releases, key=lambda r: version_tuple(r.version),
                  reverse=True)

  def select(self, version: str | None) -> Release:
    """`version`, else $JAX_FORK_UPSTREAM, else the default release."""
    version = version or os.environ.get("JAX_FORK_UPSTREAM") or None
    return self.get(version) if version else self.default()


def running_python() -> str:
  return f"{sys.version_info.major}.{sys.version_info.minor}"


def version_tuple(version: str) -> tuple[int, ...]:
  return tuple(int(p) for p in version.split("."))


def load(path: pathlib.Path) -> Manifest:
  """Reads and validates the manifest at `path`."""
  data = load_toml(path)
  entries = data.get("release")
  if not isinstance(entries, list) or not entries:
    raise ForkError(f"manifest {path} has no [[release]] entries")
  releases = []
  for i, entry in enumerate(entries):
    where = f"{path}, [[release]] #{i + 1}"
    missing = [k for k in _REQUIRED_KEYS if k not in entry]
    if missing:
      raise ForkError(f"{where} lacks {', '.join(missing)}")
    known = _REQUIRED_KEYS + _OPTIONAL_KEYS
    unknown = sorted(set(entry) - set(known))
    if unknown:
      raise ForkError(f"{where} has unknown keys {', '.join(unknown)}; "
                      f"the known keys are {', '.join(known)}")
    if not _VERSION_RE.match(str(entry["version"])):
      raise ForkError(f"{where}: version {entry['version']!r} is not a plain "
                      "release version such as '0.10.2'")
    if not _SHA256_RE.match(str(entry["sdist_sha256"])):
      raise ForkError(f"{where}: sdist_sha256 {entry['sdist_sha256']!r} is "
                      "not 64 lowercase hex digits")
    if not isinstance(entry["fork_release"], int) or entry["fork_release"] < 1:
      raise ForkError(f"{where}: fork_release must be an integer >= 1, got "
                      f"{entry['fork_release']!r}")
    python = entry["python"]
    if (not isinstance(python, list) or not python
        or not all(isinstance(p, str) for p in python)):
      raise ForkError(f"{where}: python must be a list such as ['3.11'], got "
                      f"{python!r}")
    packages = entry.get("test_packages", [])
    if (not isinstance(packages, list)
        or not all(isinstance(p, str) and _PIN_RE.match(p) for p in packages)):
      raise ForkError(f"{where}: test_packages must be a list of exact pins "
                      "such as ['tensorflow-probability==0.25.0'] (they are "
                      f"installed without their dependencies), got "
                      f"{packages!r}")
    releases.append(Release(
        version=entry["version"], sdist_sha256=entry["sdist_sha256"],
        fork_release=entry["fork_release"], python=tuple(python),
        tensorflow=entry["tensorflow"], jaxlib=entry["jaxlib"],
        test_jaxlib=entry["test_jaxlib"],
        test_tensorflow=entry["test_tensorflow"],
        test_packages=tuple(packages)))
  versions = [r.version for r in releases]
  dupes = sorted({v for v in versions if versions.count(v) > 1})
  if dupes:
    raise ForkError(f"manifest {path} lists {', '.join(dupes)} more than once")
  return Manifest(path=path, releases=tuple(releases))


def entry_text(release: Release) -> str:
  """The `[[release]]` entry of `release`, as the manifest writes it."""
  def quoted(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"
  lines = ["[[release]]", f'version = "{release.version}"',
           f'sdist_sha256 = "{release.sdist_sha256}"',
           f"fork_release = {release.fork_release}",
           f"python = {quoted(release.python)}",
           f'tensorflow = "{release.tensorflow}"',
           f'jaxlib = "{release.jaxlib}"',
           f'test_jaxlib = "{release.test_jaxlib}"',
           f'test_tensorflow = "{release.test_tensorflow}"']
  if release.test_packages:
    lines.append(f"test_packages = {quoted(release.test_packages)}")
  return "\n".join(lines) + "\n"


def add_release(path: pathlib.Path, release: Release) -> Manifest:
  """Adds `release` to the manifest at `path`, newest first; returns it.

  The file's comments and the other entries stay as they are; the file is
  replaced only once the new text loads as a valid manifest.

  Raises:
    ForkError: the manifest already lists `release.version`, or the result
      does not validate.
  """
  text = path.read_text(encoding="utf-8")
  if release.version in {r.version for r in load(path).releases}:
    raise ForkError(f"{path} already lists jax {release.version}")
  blocks = re.split(r"(?m)^(?=\[\[release\]\]\s*$)", text)
  head, entries = blocks[0], blocks[1:]
  at = len(entries)
  for i, block in enumerate(entries):
    m = re.search(r'(?m)^version = "([^"]+)"', block)
    if m and version_tuple(m.group(1)) < version_tuple(release.version):
      at = i
      break
  new = entry_text(release)
  if at == len(entries) and entries and not entries[-1].endswith("\n\n"):
    new = "\n" + new
  else:
    new += "\n"
  entries.insert(at, new)
  tmp = path.with_name(f".{path.name}.new")
  tmp.write_text(head + "".join(entries), encoding="utf-8")
  try:
    manifest = load(tmp)
  except ForkError:
    tmp.unlink()
    raise
  os.replace(tmp, path)
  return dataclasses.replace(manifest, path=path)
