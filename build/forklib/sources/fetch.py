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
"""Fetching from the package registry with pip, verified, into the cache.

Everything comes through `pip download`, so the user's pip configuration
(index, mirrors, certificates, proxies) applies: upstream's source
distribution (checked against the sha256 pinned in the manifest), the pinned
jaxlib wheels (`forklib.sources.jaxlib_mirror`) and upstream's own jax wheel
(`forklib.testing.envs.stock_wheel`). A pinned file is checked every time it
is used, and one that fails the check never enters the cache.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from forklib import ForkError
from forklib import log
from forklib import scratch
from forklib.manifest import Release
from forklib.project import cache_root
from forklib.project import sha256_of
from forklib.project import verify


def pip_download(requirement: str, name: str, cache: pathlib.Path, *,
                 python_version: str, pip_args: tuple[str, ...] = (),
                 sha256: str | None = None,
                 pin: str = "pinned in patches/upstream.toml"
                 ) -> pathlib.Path:
  """`cache/name`, downloaded by `pip download requirement` on first use.

  Args:
    requirement: what pip downloads, e.g. "jax==0.10.2".
    name: the file pip must produce, e.g. "jax-0.10.2.tar.gz".
    cache: the cache directory the file is kept in.
    python_version: the Python pip downloads for ("3.12").
    pip_args: more options of `pip download` (`--no-binary jax`, platforms).
    sha256: the pinned sha256, checked on every use; None: not pinned.
    pin: where `sha256` comes from, for the error.

  Raises:
    ForkError: pip failed or produced another file, or the file's sha256 is
      not the pinned one.
  """
  target = cache / name
  if target.exists():
    if sha256:
      verify(target, sha256, origin="cached copy", pin=pin)
      log.step("fetch", f"{name}: cached at {target}, sha256 ok")
    return target
  cache.mkdir(parents=True, exist_ok=True)
  log.step("fetch", f"pip download {requirement} ({name})")
  with scratch.directory(cache, "download") as tmp:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--disable-pip-version-check", "--python-version", python_version,
           *pip_args, "--dest", str(tmp), requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    downloaded = tmp / name
    if proc.returncode != 0 or not downloaded.exists():
      found = ", ".join(sorted(os.listdir(tmp))) or "nothing"
      raise ForkError(
          f"pip download of {requirement} failed (exit {proc.returncode}): "
          f"it produced {found}, not {name}. Its output:\n"
          f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}\n"
          "Check pip's index configuration (pip config list).")
    if sha256:
      verify(downloaded, sha256, origin="fresh pip download", pin=pin)
    os.replace(downloaded, target)
  log.step("fetch", f"{name}: sha256 {'ok' if sha256 else sha256_of(target)}"
           f", cached at {target}")
  return target


def fetch(release: Release) -> pathlib.Path:
  """The verified upstream sdist of `release`, in the cache.

  Downloaded with `pip download --no-binary jax` on first use (jax only:
  since pip 26, `:all:` would also refuse the wheels of the build
  dependencies pip needs to read the sdist's metadata), for the release's
  own Python: the sdist's Requires-Python may exclude the Python that runs
  the tool (0.11 and later require 3.12).

  Raises:
    ForkError: the download failed, or the file's sha256 is not the pinned
      one.
  """
  return pip_download(f"jax=={release.version}", release.sdist_name,
                      cache_root() / "sdists",
                      python_version=release.test_python,
                      pip_args=("--no-binary", "jax"),
                      sha256=release.sdist_sha256)
