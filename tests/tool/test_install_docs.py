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
"""What docs/install.md says about pip and uv, checked with pip and uv.

Two indexes on 127.0.0.1, both served by `serve`, modelled on the manifest
(`patches/upstream.toml`), so that the checks hold whichever release is under
test:

- the fork's index as `index` publishes it: a fork wheel of every release in
  the manifest. The release under test is its real wheel; the others are
  small wheels with their fork version and the Requires-Python of their
  release's Python (metadata is all the resolvers read here).
- a stand-in for the public index, in two states. "today": upstream-like
  `jax` wheels of the same releases with the same Requires-Python, so that
  upstream's newest release for each Python (0.10.2 for 3.11, 0.12.0.1 for
  3.12 and later) also has a fork build. "upstream-ahead": the same, plus an
  upstream release newer than the fork's newest for each Python, as on the
  day upstream publishes one.

Each pinned case pins a fork release that the Python in question can
install: the release under test where its Requires-Python admits that
Python, else the fork's newest release for it. The resolvers' choices
between the indexes are the ones the install guide describes. The uv
project case resolves the fork's dependencies from uv's default index, as a
user's project would.
"""

from __future__ import annotations

import dataclasses
import email.parser
import os
import pathlib
import subprocess
import sys
import tomllib

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from forklib import manifest as manifest_lib
from forklib.publishing import index as index_lib

from .test_index import _Server
from .test_index import _small_wheel

# The Pythons docs/install.md speaks of.
PYTHONS = ("3.11", "3.12", "3.13")


@dataclasses.dataclass(frozen=True)
class _Index:
  """A served index, and its `jax` versions with their Requires-Python."""
  url: str
  jax: dict[str, str]

  def fits(self, version: str, python: str) -> bool:
    return SpecifierSet(self.jax[version]).contains(python)

  def newest(self, python: str) -> str:
    """The newest `jax` on the index that `python` can install."""
    versions = [v for v in self.jax if self.fits(v, python)]
    assert versions, (self.jax, python)
    return max(versions, key=Version)


@pytest.fixture(scope="module")
def fork_releases(root, release, fork_wheel, tmp_path_factory
                  ) -> dict[str, tuple[pathlib.Path, str]]:
  """Fork version -> (wheel, Requires-Python), one for every release."""
  tmp = tmp_path_factory.mktemp("fork-wheels")
  manifest = manifest_lib.load(root / "patches" / "upstream.toml")
  wheels = {}
  for r in manifest.releases:
    if r.version == release.version:
      requires = email.parser.BytesParser().parsebytes(
          index_lib.wheel_metadata(fork_wheel))["Requires-Python"]
      wheels[r.label] = (fork_wheel, requires)
    else:
      requires = f">={r.test_python}"
      wheels[r.label] = (_small_wheel(tmp, r.label, requires_python=requires,
                                      metadata="Provides-Extra: tensorflow\n"),
                         requires)
  return wheels


@pytest.fixture(scope="module")
def fork_index(root, fork_releases, tmp_path_factory):
  """The index of every release, without jaxlib (as `index --no-jaxlib`).

  Written with `index.build`: `index --wheel` refuses the stand-in wheels of
  the other releases, which are not the tool's builds.
  """
  out = tmp_path_factory.mktemp("fork") / "index"
  index_lib.build(out, [wheel for wheel, _ in fork_releases.values()],
                  {label: [wheel.name]
                   for label, (wheel, _) in fork_releases.items()})
  server = _Server(root, out)
  yield _Index(server.url, {label: requires for label, (_, requires)
                            in fork_releases.items()})
  server.close()


def _next_release(version: str) -> str:
  """An upstream release after `version`: 0.10.2 -> 0.10.3."""
  *head, last = version.split(".")
  return ".".join([*head, str(int(last) + 1)])


@pytest.fixture(scope="module", params=["today", "upstream-ahead"])
def public_standin(request, root, fork_index, tmp_path_factory):
  tmp = tmp_path_factory.mktemp("public")
  jax = {Version(label).public: requires
         for label, requires in fork_index.jax.items()}
  if request.param == "upstream-ahead":
    for requires in set(jax.values()):
      newest = max((v for v, r in jax.items() if r == requires), key=Version)
      jax[_next_release(newest)] = requires
  index_lib.build(tmp / "index", [
      _small_wheel(tmp, version, requires_python=requires)
      for version, requires in jax.items()])
  public = _Index("", jax)
  for python in PYTHONS:  # the premise of each state
    ours, theirs = fork_index.newest(python), public.newest(python)
    if request.param == "today":
      assert Version(ours).public == theirs, (python, ours, theirs)
    else:
      assert Version(theirs) > Version(ours), (python, ours, theirs)
  server = _Server(root, tmp / "index")
  yield dataclasses.replace(public, url=server.url)
  server.close()


def _newest_on_either(fork: _Index, public: _Index, python: str) -> str:
  """An unpinned `jax` where both indexes count (pip, uv unsafe-best-match).

  The fork's build of upstream's newest release for `python` sorts above it
  (a local version label); an upstream release the fork has not built yet is
  newer than both.
  """
  ours, theirs = fork.newest(python), public.newest(python)
  return ours if Version(ours).public == theirs else theirs


def _pinned(fork: _Index, release: manifest_lib.Release, python: str) -> str:
  """The fork version a user of `python` pins in these checks.

  The release under test if it installs on `python`, else the fork's newest
  release for `python`.
  """
  return (release.label if fork.fits(release.label, python)
          else fork.newest(python))


def _uv_env(tmp_path: pathlib.Path) -> dict[str, str]:
  # Never download a Python: resolve for the version asked, on this one.
  return dict(os.environ, UV_PYTHON_DOWNLOADS="never",
              UV_CACHE_DIR=str(tmp_path / "uv-cache"))


def _uv_resolve(tmp_path, python: str, requirement: str, *index_args: str
                ) -> tuple[int, str]:
  """The `jax` uv picks for `requirement` (`uv pip compile --no-deps`)."""
  proc = subprocess.run(
      [sys.executable, "-m", "uv", "pip", "compile", "--quiet", "--no-header",
       "--no-annotate", "--no-deps", "--python-version", python, *index_args,
       "-"], input=requirement + "\n", capture_output=True, text=True,
      env=_uv_env(tmp_path))
  return proc.returncode, (proc.stdout.strip() if proc.returncode == 0
                           else proc.stderr)


@pytest.mark.parametrize("python", PYTHONS)
def test_uv_with_the_fork_as_main_index_and_the_public_as_extra(
    fork_index, public_standin, release, tmp_path, python):
  """uv asks --extra-index-url first, and stops at the first index with jax."""
  pinned = _pinned(fork_index, release, python)
  args = ("--index-url", fork_index.url, "--extra-index-url",
          public_standin.url)
  assert _uv_resolve(tmp_path, python, "jax", *args) == (
      0, f"jax=={public_standin.newest(python)}")
  rc, err = _uv_resolve(tmp_path, python, f"jax=={pinned}", *args)
  assert rc != 0 and "No solution found" in err
  best = ("--index-strategy", "unsafe-best-match", *args)
  assert _uv_resolve(tmp_path, python, "jax", *best) == (
      0, f"jax=={_newest_on_either(fork_index, public_standin, python)}")
  assert _uv_resolve(tmp_path, python, f"jax=={pinned}", *best) == (
      0, f"jax=={pinned}")


@pytest.mark.parametrize("python", PYTHONS)
def test_uv_with_the_fork_as_first_index(fork_index, public_standin, release,
                                         tmp_path, python):
  """`--index FORK`: uv takes jax from the fork only, pinned or not."""
  args = ("--index", fork_index.url, "--default-index", public_standin.url)
  pinned = _pinned(fork_index, release, python)
  for requirement, expected in (("jax", fork_index.newest(python)),
                                (f"jax=={pinned}", pinned)):
    assert _uv_resolve(tmp_path, python, requirement, *args) == (
        0, f"jax=={expected}")


@pytest.mark.parametrize("python", PYTHONS)
def test_pip_with_an_extra_index_takes_the_newest_jax(
    fork_index, public_standin, tmp_path, python):
  """pip merges its indexes: an unpinned jax is the newest for the Python."""
  proc = subprocess.run(
      [sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
       "--no-deps", "--only-binary", ":all:", "--python-version", python,
       "--index-url", public_standin.url, "--extra-index-url",
       fork_index.url, "--dest", str(tmp_path / "dl"), "jax"],
      capture_output=True, text=True)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  version = _newest_on_either(fork_index, public_standin, python)
  assert [p.name for p in (tmp_path / "dl").iterdir()] == [
      f"jax-{version}-py3-none-any.whl"]


# `uv lock` runs on this interpreter, which must satisfy the project's
# requires-python: lower bounds up to its own version (3.12 projects are
# locked in the runs of the releases tested on 3.12).
_PROJECT_PYTHONS = [p for p in ("3.11", "3.12")
                    if manifest_lib.version_tuple(p) <= sys.version_info[:2]]


@pytest.mark.parametrize("python", _PROJECT_PYTHONS)
def test_uv_project_with_the_fork_index_explicit_and_mapped(
    fork_index, release, tmp_path, python):
  """docs/install.md's pyproject.toml: jax from the fork, the rest from PyPI.

  uv locks for every Python from `python` up: an unpinned jax is, for each
  of them, the fork's newest release that installs on it (a lock split by
  Python where the fork's newest release needs a newer one).
  """
  pinned = _pinned(fork_index, release, python)
  newest = {fork_index.newest(p) for p in PYTHONS
            if manifest_lib.version_tuple(p) >= manifest_lib.version_tuple(
                python)}
  for i, (requirement, expected) in enumerate((
      (f"jax[tensorflow]=={pinned}", {pinned}),
      ("jax", newest))):
    # A new project each time: uv lock keeps the versions a uv.lock holds.
    project = tmp_path / f"project-{i}"
    project.mkdir()
    (project / "pyproject.toml").write_text(f"""\
[project]
name = "uses-the-fork"
version = "0.1.0"
requires-python = ">={python}"
dependencies = ["{requirement}"]

[[tool.uv.index]]
name = "jax-calltf"
url = "{fork_index.url}"
explicit = true

[tool.uv.sources]
jax = {{ index = "jax-calltf" }}
""")
    proc = subprocess.run(
        [sys.executable, "-m", "uv", "lock", "--python", sys.executable],
        cwd=project, capture_output=True, text=True, env=_uv_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lock = tomllib.loads((project / "uv.lock").read_text())
    jax = [p for p in lock["package"] if p["name"] == "jax"]
    assert sorted((p["version"], p["source"]["registry"]) for p in jax) == (
        sorted((v, fork_index.url) for v in expected)), requirement
    assert all(list(p["source"]) == ["registry"] for p in jax), jax
