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
"""A manifest entry for an upstream release the manifest does not list yet.

`rebase NEW` proposes one when NEW is not in `patches/upstream.toml`, as the
maintainer guide's "Adding an upstream release" does by hand:

* the sdist: pip reports the sha256 the package index gives for
  `jax-NEW.tar.gz` (`install --dry-run --report`), then `pip download`
  fetches it and the file is checked against that sha256 and its PKG-INFO
  (name `jax`, version NEW);
* the Pythons: those of the release it is rebased from that the sdist's
  Requires-Python admits;
* the jaxlib range: upstream's own (`setup.py`: `jaxlib
  >={_minimum_jaxlib_version}, <={_jax_version}`), and as `test_jaxlib` the
  newest jaxlib in it that pip finds for the first Python;
* TensorFlow: the range and pin of the release it is rebased from;
* checked by installing them: stock jax NEW from the registry, with that
  jaxlib and tensorflow-cpu, in the release's test venv, must run
  `jax.jit(call_tf(...))` and its gradient (`baseline.CALL_TF_CHECK`).

`add` writes the entry, the jaxlib pins of its `test_jaxlib` (when the pins
file lacks them) and the CI workflow generated from the manifest.
"""

from __future__ import annotations

import dataclasses
import email.parser
import json
import pathlib
import re
import subprocess
import sys
import tarfile

from forklib import ForkError
from forklib import log
from forklib import manifest as manifest_lib
from forklib import scratch
from forklib.manifest import Release
from forklib.manifest import version_tuple
from forklib.project import Project
from forklib.project import cache_root
from forklib.publishing import workflow
from forklib.sources import fetch
from forklib.sources import jaxlib_mirror
from forklib.testing import baseline
from forklib.testing import envs

_PIN = "the sha256 the package index gives for it (pip's report)"


def index_sha256(version: str) -> str:
  """The sha256 the package index gives for upstream's `jax-VERSION.tar.gz`.

  Raises:
    ForkError: pip finds no such sdist, or reports no sha256 for it.
  """
  with scratch.directory(cache_root() / "sdists", "report") as tmp:
    report = tmp / "report.json"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
           "--ignore-installed", "--ignore-requires-python", "--no-deps",
           "--no-binary", "jax", "--disable-pip-version-check",
           "--target", str(tmp / "target"), "--report", str(report),
           f"jax=={version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
      raise ForkError(
          f"pip finds no source distribution of jax {version} (exit "
          f"{proc.returncode}):\n{proc.stderr[-2000:].strip()}\nIs {version} "
          "an upstream release? Check pip's index configuration (pip config "
          "list).")
    info = json.loads(report.read_text())["install"][0]["download_info"]
  name = info["url"].rsplit("/", 1)[-1]
  sha = info.get("archive_info", {}).get("hashes", {}).get("sha256")
  if name != f"jax-{version}.tar.gz" or not sha:
    raise ForkError(f"pip reported {info['url']} for jax {version}"
                    + ("" if sha else " without a sha256")
                    + f"; expected jax-{version}.tar.gz with its sha256")
  return sha


@dataclasses.dataclass(frozen=True)
class SdistFacts:
  """What a release's entry takes from its sdist."""
  requires_python: tuple[int, int]
  minimum_jaxlib: str


def _member(tar: tarfile.TarFile, version: str, name: str) -> str:
  try:
    return tar.extractfile(f"jax-{version}/{name}").read().decode("utf-8")
  except (KeyError, AttributeError):
    raise ForkError(f"jax-{version}.tar.gz has no jax-{version}/{name}")


def read_sdist(sdist: pathlib.Path, version: str) -> SdistFacts:
  """Checks the sdist is jax `version`; reads its Python and jaxlib needs.

  Raises:
    ForkError: the sdist is not jax `version`, or upstream changed how it
      states them (update this function, or write the entry by hand).
  """
  with tarfile.open(sdist) as tar:
    pkg_info = email.parser.Parser().parsestr(_member(tar, version,
                                                      "PKG-INFO"))
    setup = _member(tar, version, "setup.py")
    version_py = _member(tar, version, "jax/version.py")
  if pkg_info["Name"] != "jax" or pkg_info["Version"] != version:
    raise ForkError(f"{sdist} says it is {pkg_info['Name']} "
                    f"{pkg_info['Version']}, not jax {version}")
  requires = re.fullmatch(r"\s*>=\s*(\d+)\.(\d+)\s*",
                          pkg_info["Requires-Python"] or "")
  if not requires:
    raise ForkError(f"{sdist}: cannot read Requires-Python "
                    f"{pkg_info['Requires-Python']!r} (expected '>=3.X')")
  if "f'jaxlib >={_minimum_jaxlib_version}, <={_jax_version}'" not in setup:
    raise ForkError(f"{sdist}: setup.py no longer states jaxlib's range as "
                    "`jaxlib >={_minimum_jaxlib_version}, <={_jax_version}`;"
                    " add the release to patches/upstream.toml by hand "
                    "(docs/maintainers.md, \"Adding an upstream release\")")
  minimum = re.search(r"^_minimum_jaxlib_version = ['\"]([^'\"]+)",
                      version_py, re.MULTILINE)
  if not minimum:
    raise ForkError(f"{sdist}: jax/version.py has no _minimum_jaxlib_version")
  return SdistFacts((int(requires.group(1)), int(requires.group(2))),
                    minimum.group(1))


def propose(manifest: manifest_lib.Manifest, version: str,
            like: Release) -> Release:
  """The manifest entry proposed for upstream release `version`.

  Fetches its sdist (verified, into the cache) and reads it; finds its
  test_jaxlib with pip. Nothing is written to the repository.

  Args:
    manifest: the manifest, which does not list `version`.
    version: the upstream release.
    like: the release whose Pythons and TensorFlow pins to start from (the
      one the queue is rebased from).

  Raises:
    ForkError: the sdist cannot be had or read, no Python of `like` is
      admitted, or pip finds no jaxlib in the release's range.
  """
  sha = index_sha256(version)
  log.step("release", f"jax {version}: the index gives sha256 {sha} for "
           f"jax-{version}.tar.gz")
  sdist = fetch.pip_download(f"jax=={version}", f"jax-{version}.tar.gz",
                             cache_root() / "sdists",
                             python_version=like.test_python,
                             pip_args=("--no-binary", "jax"), sha256=sha,
                             pin=_PIN)
  facts = read_sdist(sdist, version)
  pythons = tuple(p for p in like.python
                  if version_tuple(p) >= facts.requires_python)
  if not pythons:
    raise ForkError(
        f"jax {version} requires Python >={'.'.join(map(str, facts.requires_python))}"
        f", and jax {like.version} is built with {', '.join(like.python)} "
        "only: add the release to patches/upstream.toml by hand "
        "(docs/maintainers.md, \"Adding an upstream release\")")
  jaxlib = f">={facts.minimum_jaxlib},<={version}"
  test_jaxlib = jaxlib_mirror.newest_jaxlib(jaxlib, pythons[0])
  if test_jaxlib is None:
    raise ForkError(f"pip finds no jaxlib{jaxlib} (the range jax {version} "
                    f"accepts) for Python {pythons[0]} on Linux x86_64")
  newest = version_tuple(version) > version_tuple(manifest.default().version)
  return Release(
      version=version, sdist_sha256=sha, fork_release=1, python=pythons,
      tensorflow=like.tensorflow, jaxlib=jaxlib, test_jaxlib=test_jaxlib,
      test_tensorflow=like.test_tensorflow,
      # The full suite, which needs them, runs on the default release only.
      test_packages=like.test_packages if newest else ())


def check_by_installing(project: Project, release: Release) -> str:
  """Installs stock jax with the release's pins; runs stock call_tf.

  The release's test venv (its Python, jaxlib, tensorflow-cpu, the test
  requirements) with upstream's own jax wheel of the release, from the
  registry; the venv is then reused by its test runs.

  Returns:
    The check's "ok: ..." line.

  Raises:
    ForkError: the pins do not install together, or stock call_tf fails
      with them.
  """
  log.step("release", f"jax {release.version}: installing stock jax with "
           f"jaxlib {release.test_jaxlib} and tensorflow-cpu "
           f"{release.test_tensorflow} on Python {release.test_python}")
  with envs.test_env(project, release, envs.stock_wheel(release)) as venv:
    result = baseline.call_tf_check(envs.venv_python(venv))
  if not result.startswith("ok"):
    raise ForkError(
        f"the pins proposed for jax {release.version} (jaxlib "
        f"{release.test_jaxlib}, tensorflow-cpu {release.test_tensorflow}, "
        f"Python {release.test_python}) install, but stock call_tf fails "
        f"with them: {result}\nNothing was written. Find a TensorFlow that "
        "works and add the release to patches/upstream.toml by hand "
        "(docs/maintainers.md, \"Adding an upstream release\"), then run "
        "the rebase again.")
  log.step("release", f"stock call_tf: {result}")
  return result


def pins_needed(project: Project, release: Release
                ) -> dict[str, list[jaxlib_mirror.PinnedWheel]]:
  """The jaxlib pins to write for `release`: {} if the pins file has them.

  The wheels of its `test_jaxlib` for every platform and every Python of the
  releases on that jaxlib, `release` included (`pins` does the same).
  """
  path = project.pins_path
  pinned = jaxlib_mirror.load_pins(path) if path.exists() else {}
  others = [r for r in project.manifest().releases
            if r.test_jaxlib == release.test_jaxlib
            and r.version != release.version]
  pythons = tuple(sorted({p for r in [*others, release] for p in r.python},
                         key=version_tuple))
  have = pinned.get(release.test_jaxlib)
  if have and not jaxlib_mirror.missing_platforms(have, pythons):
    return {}
  return {release.test_jaxlib: jaxlib_mirror.find_upstream_wheels(
      release.test_jaxlib, pythons)}


def add(project: Project, release: Release,
        pins: dict[str, list[jaxlib_mirror.PinnedWheel]]) -> list[str]:
  """Writes the entry, its jaxlib pins and the workflow; returns the files.

  Raises:
    ForkError: the manifest already lists the release.
  """
  written = [str(project.manifest_path.relative_to(project.root))]
  manifest = manifest_lib.add_release(project.manifest_path, release)
  if pins:
    jaxlib_mirror.write_pins(project.pins_path, pins)
    written.append(str(project.pins_path.relative_to(project.root)))
  if (project.root / workflow.PATH).exists():
    workflow.write(project.root, manifest)
    written.append(str(workflow.PATH))
  return written
