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
"""Fetching upstream's source distribution, verified against the manifest.

The sdist comes through `pip download`, so the user's pip configuration
(index, mirrors, certificates, proxies) applies. It is kept in a cache and
checked against the pinned sha256 every time it is used.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import subprocess
import sys

from forklib import ForkError
from forklib import log
from forklib import scratch
from forklib.manifest import Release


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


def verify(path: pathlib.Path, expected: str, *, origin: str) -> None:
  """Raises ForkError unless `path` has sha256 `expected`.

  Args:
    path: the file to check.
    expected: the pinned sha256.
    origin: where the file came from, for the message.
  """
  actual = sha256_of(path)
  if actual != expected:
    raise ForkError(
        f"sha256 mismatch for {path} ({origin}):\n"
        f"  expected {expected}  (pinned in patches/upstream.toml)\n"
        f"  actual   {actual}\n"
        "The file is not the upstream release the patches were verified "
        "against; refusing to build. If the download was corrupted or "
        "tampered with, delete the file and fetch again; if upstream really "
        "re-published the sdist, review the change before updating the pin.")


def fetch(release: Release, cache: pathlib.Path | None = None) -> pathlib.Path:
  """Returns the path of the verified upstream sdist for `release`.

  Downloads it with `pip download --no-deps --no-binary jax` on first use
  (jax only: since pip 26, `:all:` would also refuse the wheels of the
  build dependencies pip needs to read the sdist's metadata).

  Raises:
    ForkError: the download failed, or the file's sha256 is not the pinned
      one. A file that fails the check never enters the cache.
  """
  cache = cache or cache_root()
  sdists = cache / "sdists"
  target = sdists / release.sdist_name
  if target.exists():
    verify(target, release.sdist_sha256, origin="cached copy")
    log.step("fetch", f"{release.sdist_name}: cached at {target}, sha256 ok")
    return target
  sdists.mkdir(parents=True, exist_ok=True)
  log.step("fetch", f"{release.sdist_name}: pip download jax=="
           f"{release.version} (source distribution)")
  with scratch.directory(sdists, "download") as tmp:
    # --python-version: the sdist's Requires-Python may exclude the Python
    # that runs the tool (0.11 and later require 3.12); the release's own
    # Python is the one it is built for.
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--no-binary", "jax", "--disable-pip-version-check",
           "--python-version", release.test_python,
           "--dest", str(tmp), f"jax=={release.version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
      raise ForkError(
          f"pip download of jax=={release.version} failed (exit "
          f"{proc.returncode}). Its output:\n{proc.stdout}{proc.stderr}\n"
          "Check pip's index configuration (pip config list).")
    downloaded = pathlib.Path(tmp) / release.sdist_name
    if not downloaded.exists():
      found = ", ".join(sorted(os.listdir(tmp))) or "nothing"
      raise ForkError(f"pip download produced {found}, not "
                      f"{release.sdist_name}")
    verify(downloaded, release.sdist_sha256, origin="fresh pip download")
    os.replace(downloaded, target)
  log.step("fetch", f"{release.sdist_name}: sha256 ok, cached at {target}")
  return target
