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
"""The project: where the fork's inputs live, its cache, and file hashes.

Every command works on a `Project` (the repository, or a test's stand-in with
the same layout), keeps what it downloads and builds under `cache_root()`,
and knows a file by its sha256 (`sha256_of`, `verify`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pathlib

from forklib import ForkError
from forklib import manifest as manifest_lib
from forklib import scratch


@dataclasses.dataclass(frozen=True)
class Project:
  """Where the fork's inputs live (the repository, or a test's stand-in)."""
  root: pathlib.Path

  @property
  def patches(self) -> pathlib.Path:
    return self.root / "patches"

  @property
  def overlay(self) -> pathlib.Path:
    return self.root / "jax"

  @property
  def manifest_path(self) -> pathlib.Path:
    return self.patches / "upstream.toml"

  @property
  def pins_path(self) -> pathlib.Path:
    """The jaxlib wheels pinned per release and platform."""
    return self.root / "jaxlib_build" / "pins.toml"

  @property
  def notice(self) -> pathlib.Path:
    return self.root / "NOTICE"

  @property
  def dist(self) -> pathlib.Path:
    """Where the fork's wheels are built (`dist/`)."""
    return self.root / "dist"

  def manifest(self) -> manifest_lib.Manifest:
    """The supported releases (`patches/upstream.toml`), validated."""
    return manifest_lib.load(self.manifest_path)

  def overlay_files(self) -> list[pathlib.Path]:
    """The overlay's files, relative to the overlay root, sorted."""
    if not self.overlay.is_dir():
      return []
    return sorted(p.relative_to(self.overlay)
                  for p in self.overlay.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts
                  and p.suffix not in (".pyc", ".pyo"))


def cache_root() -> pathlib.Path:
  """The fork's cache: $JAX_FORK_CACHE, else $XDG_CACHE_HOME/jax-calltf-fork."""
  if os.environ.get("JAX_FORK_CACHE"):
    return pathlib.Path(os.environ["JAX_FORK_CACHE"]).expanduser().resolve()
  xdg = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
  return pathlib.Path(xdg) / "jax-calltf-fork"


def sha256_of(path: pathlib.Path) -> str:
  h = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
      h.update(chunk)
  return h.hexdigest()


def verify(path: pathlib.Path, expected: str, *, origin: str,
           pin: str = "pinned in patches/upstream.toml") -> None:
  """Raises ForkError unless `path` has sha256 `expected`.

  Args:
    path: the file to check.
    expected: the pinned sha256.
    origin: where the file came from, for the message.
    pin: where `expected` comes from, for the message.
  """
  actual = sha256_of(path)
  if actual != expected:
    raise ForkError(
        f"sha256 mismatch for {path} ({origin}):\n"
        f"  expected {expected}  ({pin})\n"
        f"  actual   {actual}\n"
        "The file is not the one the fork was verified against; refusing to "
        "use it. If the download was corrupted or tampered with, delete the "
        "file and fetch again; if upstream really re-published it, review "
        "the change before updating the pin.")


def refuse_unless_ours(path: pathlib.Path, markers: tuple[str, ...], *,
                       maker: str, advice: str) -> None:
  """Raises ForkError if `path` exists and this tool did not make it.

  What the tool made holds one of its `markers` (files it writes in every
  directory it makes, before or after its work); a symbolic link, or a
  directory without one, is the user's, and is never replaced.

  Args:
    path: what the tool would replace.
    markers: the names of the tool's marker files, any one of which counts.
    maker: who would have made it, for the message ("`dev`", "this tool").
    advice: what to do instead, a sentence.
  """
  if not (path.exists() or path.is_symlink()):
    return
  if not path.is_symlink() and any((path / m).is_file() for m in markers):
    return
  raise ForkError(
      f"{path} exists and was not made by {maker} (it has no {markers[0]}); "
      f"it is not replaced, so that nothing of yours is deleted. {advice}")


def check_writable_dir(path: pathlib.Path, what: str) -> None:
  """Raises a ForkError unless the tool can write a directory at `path`.

  `path` may exist (a directory) or not (then its nearest existing parent
  must be a directory the tool can write in). Writing is tried for real (a
  probe file, removed at once): permission bits say nothing to root, and
  nothing about a read-only file system. Nothing is created at `path`.

  Args:
    path: the directory a command will write.
    what: how the user named it, e.g. "--out".
  """
  path = pathlib.Path(os.path.abspath(path))
  existing = path
  while not existing.exists() and not existing.is_symlink():
    existing = existing.parent
  if not existing.is_dir():
    where = ("it" if existing == path else f"{existing}, on its path,")
    raise ForkError(f"{what} {path}: {where} is not a directory")
  try:
    scratch.probe_writable(existing)
  except OSError as e:
    raise ForkError(f"{what} {path}: cannot write in {existing} "
                    f"({e.strerror}); pass a directory you can write")
