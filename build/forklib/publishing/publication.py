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

import base64
import dataclasses
import email.parser
import hashlib
import pathlib
import zipfile

from forklib import ForkError
from forklib.manifest import Manifest
from forklib.manifest import Release
from forklib.project import Project
from forklib.project import sha256_of
from forklib.sources import jaxlib_mirror
from forklib.sources import tree as tree_lib
from forklib.sources import wheel as wheel_lib

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


def chosen(manifest: Manifest, names: list[str], every: bool,
           wheels: list[str]
           ) -> tuple[list[Release], dict[Release, pathlib.Path]]:
  """The releases `index` and `publish` publish, and the wheels given.

  Either wheels built already (`--wheel`), for their releases, or releases
  to build (`select`): never both, since one would be left out.

  Raises:
    ForkError: both are given, or as `select` and `given_wheels`.
  """
  if wheels and (names or every):
    raise ForkError("pass fork wheels (--wheel) or the releases to build "
                    "(--upstream, --all), not both")
  given = given_wheels(manifest, wheels)
  return (list(given) or select(manifest, names, every)), given


def given_wheels(manifest: Manifest, wheels: list[str]
                 ) -> dict[Release, pathlib.Path]:
  """Fork wheels given to publish (`index --wheel`), by their release.

  Only the names are read here; `release_files` checks the contents.

  Raises:
    ForkError: a file is missing, or its name is not the fork's wheel of a
      release in the manifest.
  """
  by_name = {wheel_lib.wheel_name(r): r for r in manifest.releases}
  given = {}
  for w in wheels:
    path = pathlib.Path(w).resolve()
    if not path.is_file():
      raise ForkError(f"--wheel {path}: no such file")
    if path.name not in by_name:
      raise ForkError(f"{path.name} is not a wheel of a release in "
                      f"{manifest.path} (the fork's wheels are named "
                      f"{wheel_lib.wheel_name(manifest.default())} and so "
                      "on)")
    given[by_name[path.name]] = path
  return given


def _read_wheel(path: pathlib.Path) -> dict[str, bytes]:
  try:
    with zipfile.ZipFile(path) as z:
      return {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}
  except (zipfile.BadZipFile, OSError) as e:
    raise ForkError(f"{path} is not a wheel: {e}")


def _record_hash(data: bytes) -> str:
  digest = hashlib.sha256(data).digest()
  return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _record_problems(files: dict[str, bytes], dist_info: str) -> list[str]:
  """The wheel's files (`files`, by name) that its RECORD (in `dist_info`)
  does not list, or lists with another hash, one line each."""
  problems = []
  record = {}
  for line in files.get(dist_info + "RECORD", b"").decode(
      "utf-8", "replace").splitlines():
    name, digest, _ = (line.rsplit(",", 2) + ["", ""])[:3]
    record[name] = digest
  for name, data in sorted(files.items()):
    if name == dist_info + "RECORD":
      continue
    if record.get(name) != _record_hash(data):
      problems.append(f"{name}: " + ("not in RECORD" if name not in record
                                     else "its hash differs from RECORD's"))
  return problems


def wheel_problems(project: Project, release: Release,
                   path: pathlib.Path) -> list[str]:
  """How the wheel at `path` differs from the fork's wheel of `release`.

  The name, the metadata (`Name: jax`, `Version:` the fork's version), the
  tag, RECORD (every file listed with its hash, nothing unlisted), and the
  contents: every file of the `jax` package as in the release's patched
  tree (`tree.cached_tree`), the overlay, the patched files and the version
  stamp among them.

  Returns:
    The differences, one line each; empty if the wheel is the fork's.
  """
  expected = wheel_lib.wheel_name(release)
  if path.name != expected:
    return [f"its name is not {expected}"]
  files = _read_wheel(path)
  dist_info = f"jax-{release.label}.dist-info/"
  infos = sorted({n.split("/", 1)[0] + "/" for n in files
                  if n.split("/", 1)[0].endswith(".dist-info")})
  if infos != [dist_info]:
    return [f"its .dist-info is {', '.join(infos) or 'missing'}, not "
            f"{dist_info} (another project's or release's wheel, renamed?)"]
  problems = []
  metadata = email.parser.BytesParser().parsebytes(
      files.get(dist_info + "METADATA", b""))
  for field, want in (("Name", "jax"), ("Version", release.label)):
    if metadata[field] != want:
      problems.append(f"its METADATA says {field}: {metadata[field]}, not "
                      f"{want}")
  tags = email.parser.BytesParser().parsebytes(
      files.get(dist_info + "WHEEL", b"")).get_all("Tag") or []
  if tags != ["py3-none-any"]:
    problems.append(f"its WHEEL tags are {tags}, not ['py3-none-any']")
  problems += _record_problems(files, dist_info)
  tree = tree_lib.cached_tree(project, release)
  package = {n for n in files if not n.startswith(dist_info)}
  for name in sorted(package):
    source = tree / name
    if not source.is_file() or source.read_bytes() != files[name]:
      problems.append(f"{name}: " + ("not in the patched tree" if not
                                     source.is_file() else
                                     "differs from the patched tree"))
  problems += [f"{name}: missing (the patched tree has it)" for name in
               sorted(tree_lib.touched_files(project, release) - package)]
  return problems


def check_fork_wheel(project: Project, release: Release,
                     path: pathlib.Path) -> None:
  """Raises a ForkError unless `path` is the fork's wheel of `release`.

  See `wheel_problems`.
  """
  problems = wheel_problems(project, release, path)
  if problems:
    shown = problems[:10] + ([f"... and {len(problems) - 10} more"]
                             if len(problems) > 10 else [])
    raise ForkError(
        f"{path} is not the fork's wheel of jax {release.label}; refusing "
        "to publish it:\n  " + "\n  ".join(shown) + "\nNothing was "
        "published. Publish the wheel the tool builds (leave out --wheel), "
        "or rebuild it with `python3 build/fork.py wheel "
        f"{release.version}`.")


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
      not the pinned file, the build fails, or the fork's wheel is not what
      the tool builds (`check_fork_wheel`).
  """
  pins = jaxlib_pins(project, release) if jaxlib else ()
  if fork_wheel is None:
    path = wheel_lib.build(project, release, project.dist)
    fork = File(path, sha256_of(path), build_origin(
        tree_lib.inputs_digest(project, release)))
  else:
    fork = File(fork_wheel, sha256_of(fork_wheel), None)
  check_fork_wheel(project, release, fork.path)
  if sha256_of(fork.path) != fork.sha256:
    raise ForkError(f"{fork.path} changed while it was being checked; "
                    "nothing was published")
  jaxlibs = []
  for pin in pins:
    path = jaxlib_mirror.fetch_wheel(pin)
    _check_metadata(path, "jaxlib", pin.version)
    jaxlibs.append(File(path, pin.sha256, ORIGIN_PINNED))
  return ReleaseFiles(release, fork, tuple(jaxlibs))


def _check_metadata(path: pathlib.Path, name: str, version: str) -> None:
  """Raises a ForkError unless the wheel's METADATA names `name` `version`."""
  try:
    with zipfile.ZipFile(path) as z:
      found = [n for n in z.namelist()
               if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
      metadata = (email.parser.BytesParser().parsebytes(z.read(found[0]))
                  if len(found) == 1 else None)
  except (zipfile.BadZipFile, OSError) as e:
    raise ForkError(f"{path} is not a wheel: {e}")
  if metadata is None or (metadata["Name"], metadata["Version"]) != (
      name, version):
    got = ("no single METADATA" if metadata is None else
           f"{metadata['Name']} {metadata['Version']}")
    raise ForkError(f"{path}: its metadata says {got}, not {name} {version};"
                    " refusing to publish it")


def collect(project: Project, releases: list[Release], *,
            jaxlib: bool = True,
            given: dict[Release, pathlib.Path] | None = None
            ) -> list[ReleaseFiles]:
  """`release_files` of each of `releases`, with the fork wheels `given`.

  Every release's patch files are read first (`tree.preflight`), so that a
  bad one stops the run before any build or download.
  """
  tree_lib.preflight(project, releases)
  return [release_files(project, r, jaxlib=jaxlib,
                        fork_wheel=(given or {}).get(r)) for r in releases]
