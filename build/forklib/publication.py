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
"""What a publication holds: which releases, and which files each ships.

`index` and `publish` both ask this module: by default the default (newest)
release of the manifest, else the releases named, else (`--all`) every one;
for each, the fork's wheel and the pinned jaxlib wheels of its `test_jaxlib`
for every platform and Python (`jaxlib_build/pins.toml`).
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


@dataclasses.dataclass(frozen=True)
class ReleaseFiles:
  """The files one release publishes."""
  release: Release
  fork_wheel: pathlib.Path
  jaxlib: tuple[jaxlib_mirror.PinnedWheel, ...]


def jaxlib_pins(project: tree_lib.Project, release: Release
                ) -> tuple[jaxlib_mirror.PinnedWheel, ...]:
  """The pinned jaxlib wheels `release` publishes, every platform.

  Raises:
    ForkError: its `test_jaxlib` has no pins, or they lack a platform of
      `jaxlib_mirror.REQUIRED_PLATFORMS` for one of its Pythons (users there
      could not install from the index).
  """
  path = project.root / "jaxlib_build" / "pins.toml"
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


def release_files(project: tree_lib.Project, release: Release, *,
                  jaxlib: bool = True,
                  fork_wheel: pathlib.Path | None = None) -> ReleaseFiles:
  """The files `release` publishes (its fork wheel is built if not given)."""
  pins = jaxlib_pins(project, release) if jaxlib else ()
  wheel = fork_wheel or wheel_lib.build(project, release,
                                        project.root / "dist")
  return ReleaseFiles(release, wheel, pins)
