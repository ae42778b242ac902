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
"""What a publication holds: which releases, which files, where each is from.

`index` (a static index) and `publish` (an index server) both ask this
module. The releases: the default (newest) release of the manifest, else
those named, else (`--all`) every one; for `index`, those of the fork wheels
given (`--wheel`) instead. The files of a release: the fork's wheel (built
here unless given) and the jaxlib wheels of its `test_jaxlib` pinned for
every platform and Python (`jaxlib_build/pins.toml`), downloaded and
verified, each with its sha256 and its origin (which the index's ledger
records).
"""

from __future__ import annotations

import dataclasses
import pathlib

from forklib import ForkError
from forklib import jaxlib_mirror
from forklib import tree as tree_lib
from forklib import wheel as wheel_lib
from forklib.manifest import Manifest
from forklib.manifest import Release
from forklib.project import Project
from forklib.project import sha256_of

# Where a published file came from, as the index's ledger records it.
ORIGIN_PINNED = "pinned in jaxlib_build/pins.toml"


def build_origin(inputs_digest: str) -> str:
  """The origin of a fork wheel the tool built from inputs of that digest."""
  return f"built by the tool from inputs {inputs_digest}"


def select(manifest: Manifest, names: list[str], every: bool
           ) -> list[Release]:
  """The releases to publish: `names`, all (`every`), or the default one."""
  if names and every:
    raise ForkError("pass release names (--upstream) or --all, not both")
  if every:
    return manifest.newest()
  if names:
    return [manifest.get(v) for v in names]
  return [manifest.default()]


def given_wheels(manifest: Manifest, wheels: list[str]
                 ) -> dict[Release, pathlib.Path]:
  """Fork wheels given to publish (`index --wheel`), by their release."""
  by_label = {r.label: r for r in manifest.releases}
  given = {}
  for w in wheels:
    path = pathlib.Path(w).resolve()
    label = path.name.split("-")[1]
    if label not in by_label:
      raise ForkError(f"{path.name} is not a wheel of a release in "
                      f"{manifest.path}")
    given[by_label[label]] = path
  return given


@dataclasses.dataclass(frozen=True)
class File:
  """A file to publish, verified."""
  path: pathlib.Path
  sha256: str
  origin: str | None  # None: a fork wheel given, not built here


@dataclasses.dataclass(frozen=True)
class ReleaseFiles:
  """The files one release publishes."""
  release: Release
  fork_wheel: File
  jaxlib: tuple[File, ...]

  @property
  def files(self) -> tuple[File, ...]:
    return (self.fork_wheel, *self.jaxlib)


def jaxlib_pins(project: Project, release: Release
                ) -> tuple[jaxlib_mirror.PinnedWheel, ...]:
  """The pinned jaxlib wheels `release` publishes, every platform.

  Raises:
    ForkError: its `test_jaxlib` has no pins, or they lack a platform of
      `jaxlib_mirror.REQUIRED_PLATFORMS` for one of its Pythons (users there
      could not install from the index).
  """
  path = project.pins_path
  pins = jaxlib_mirror.load_pins(path)
  if release.test_jaxlib not in pins:
    raise ForkError(f"jaxlib {release.test_jaxlib} (test_jaxlib of jax "
                    f"{release.version}) has no pins in {path}: run "
                    f"`python3 build/fork.py pins {release.version}`")
  missing = jaxlib_mirror.missing_platforms(pins[release.test_jaxlib],
                                            release.python)
  if missing:
    raise ForkError(
        f"{path} pins no jaxlib {release.test_jaxlib} wheel for "
        f"{', '.join(missing)}: a resolver that finds jaxlib on the fork's "
        "index takes it only from there, so those users could not install. "
        f"Run `python3 build/fork.py pins {release.version}`, or pass "
        "--no-jaxlib to leave jaxlib to the public index.")
  return tuple(pins[release.test_jaxlib])


def release_files(project: Project, release: Release, *, jaxlib: bool = True,
                  fork_wheel: pathlib.Path | None = None) -> ReleaseFiles:
  """The files `release` publishes, downloaded, built and verified.

  Args:
    project: the repository.
    release: the release.
    jaxlib: with its pinned jaxlib wheels (else the fork's wheel only).
    fork_wheel: the fork's wheel to publish; built here when None.

  Raises:
    ForkError: the pins lack a platform (`jaxlib_pins`), a jaxlib wheel is
      not the pinned file, or the build fails.
  """
  pins = jaxlib_pins(project, release) if jaxlib else ()
  if fork_wheel is None:
    path = wheel_lib.build(project, release, project.dist)
    fork = File(path, sha256_of(path), build_origin(
        tree_lib.inputs_digest(project, release)))
  else:
    fork = File(fork_wheel, sha256_of(fork_wheel), None)
  return ReleaseFiles(release, fork, tuple(
      File(jaxlib_mirror.fetch_wheel(p), p.sha256, ORIGIN_PINNED)
      for p in pins))


def collect(project: Project, releases: list[Release], *,
            jaxlib: bool = True,
            given: dict[Release, pathlib.Path] | None = None
            ) -> list[ReleaseFiles]:
  """`release_files` of each of `releases`, with the fork wheels `given`."""
  return [release_files(project, r, jaxlib=jaxlib,
                        fork_wheel=(given or {}).get(r)) for r in releases]
