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
"""What `index` and `publish` refuse to publish.

A wheel under the fork's name must be the fork's wheel: its metadata (name,
version, tag), its RECORD and its files those of the release's patched
tree; an upstream wheel renamed to the fork's name, or a fork wheel whose
contents were changed, is refused before anything is published. And an
index either mirrors the jaxlib of every release it holds or of none: uv
takes a package from the first index that has it only, so a release
published without its jaxlib into an index that mirrors another's could not
resolve with uv.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

from forklib import ForkError
from forklib.project import Project
from forklib.publishing import index as index_lib
from forklib.publishing import publication
from forklib.publishing import publish as publish_lib
from forklib.sources import wheel as wheel_lib
from forklib.testing import envs

from .test_index import _small_wheel


def _fork(root: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, str(root / "build" / "fork.py"),
                         *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def renamed_upstream_wheel(release, tmp_path_factory) -> pathlib.Path:
  """Upstream's own jax wheel of the release, renamed to the fork's name."""
  stock = envs.stock_wheel(release)
  path = tmp_path_factory.mktemp("renamed") / wheel_lib.wheel_name(release)
  shutil.copyfile(stock, path)
  return path


def _changed_fork_wheel(fork_wheel: pathlib.Path,
                        dest: pathlib.Path) -> pathlib.Path:
  """The fork's wheel with one module changed, RECORD made to match."""
  path = dest / fork_wheel.name
  with zipfile.ZipFile(fork_wheel) as zin, zipfile.ZipFile(path, "w") as zout:
    for info in zin.infolist():
      data = zin.read(info)
      if info.filename == "jax/experimental/jax2tf/call_tf.py":
        data += b"\nimport os  # not what the tool built\n"
      zout.writestr(info, data)
  wheel_lib.normalize(path, 315532800)  # a consistent RECORD
  return path


@pytest.mark.network
def test_index_refuses_an_upstream_wheel_renamed_to_the_forks_name(
    root, renamed_upstream_wheel, tmp_path):
  out = tmp_path / "index"
  proc = _fork(root, "index", "--out", str(out), "--wheel",
               str(renamed_upstream_wheel), "--no-jaxlib")
  assert proc.returncode == 2, proc.stdout + proc.stderr
  assert (f"{renamed_upstream_wheel} is not the fork's wheel"
          in proc.stderr), proc.stderr
  assert ".dist-info is jax-" in proc.stderr
  assert not (out / "files").exists()


def test_index_refuses_a_fork_wheel_whose_contents_changed(
    root, fork_wheel, tmp_path):
  changed = _changed_fork_wheel(fork_wheel, tmp_path)
  out = tmp_path / "index"
  proc = _fork(root, "index", "--out", str(out), "--wheel", str(changed),
               "--no-jaxlib")
  assert proc.returncode == 2, proc.stdout + proc.stderr
  assert ("jax/experimental/jax2tf/call_tf.py: differs from the patched tree"
          in proc.stderr), proc.stderr
  assert not (out / "files").exists()


def test_the_forks_own_wheel_passes(root, release, fork_wheel):
  assert publication.wheel_problems(Project(root), release, fork_wheel) == []


@pytest.mark.network
def test_publish_refuses_an_upstream_wheel_under_the_forks_name(
    root, release, renamed_upstream_wheel, monkeypatch):
  """As if dist/ held another wheel under the name of the one just built."""
  monkeypatch.setattr(publication.wheel_lib, "build",
                      lambda *_: renamed_upstream_wheel)
  with pytest.raises(ForkError, match="is not the fork's wheel"):
    # Port 9 (discard): nothing may be sent anywhere before the refusal.
    publish_lib.publish(Project(root), [release],
                        repository_url="http://127.0.0.1:9/", jaxlib=False)


def _release_wheels(directory: pathlib.Path, version: str
                    ) -> tuple[pathlib.Path, pathlib.Path]:
  directory.mkdir()
  return (_small_wheel(directory, f"{version}+calltf.1"),
          _small_wheel(directory, version, project="jaxlib"))


def test_an_index_with_jaxlib_refuses_a_release_without(tmp_path):
  out = tmp_path / "index"
  jax_a, jaxlib_a = _release_wheels(tmp_path / "a", "0.1")
  index_lib.build(out, [jax_a, jaxlib_a],
                  {"0.1+calltf.1": [jax_a.name, jaxlib_a.name]})
  jax_b, _ = _release_wheels(tmp_path / "b", "0.2")
  with pytest.raises(ForkError, match=r"would mirror jaxlib for jax "
                     r"0\.1\+calltf\.1 but not for jax 0\.2\+calltf\.1"):
    index_lib.build(out, [jax_b], {"0.2+calltf.1": [jax_b.name]})
  assert not (out / "files" / jax_b.name).exists()
  # With its jaxlib, it is published.
  _, jaxlib_b = _release_wheels(tmp_path / "b2", "0.2")
  index_lib.build(out, [jax_b, jaxlib_b],
                  {"0.2+calltf.1": [jax_b.name, jaxlib_b.name]})
  assert (out / "files" / jax_b.name).exists()


def test_an_index_without_jaxlib_refuses_to_start_mirroring_it(tmp_path):
  out = tmp_path / "index"
  jax_a, _ = _release_wheels(tmp_path / "a", "0.1")
  index_lib.build(out, [jax_a], {"0.1+calltf.1": [jax_a.name]})
  jax_b, jaxlib_b = _release_wheels(tmp_path / "b", "0.2")
  with pytest.raises(ForkError, match=r"--upstream 0\.1"):
    index_lib.build(out, [jax_b, jaxlib_b],
                    {"0.2+calltf.1": [jax_b.name, jaxlib_b.name]})
  assert not (out / "simple" / "jaxlib").exists()
  # Releases that all go without jaxlib are fine.
  index_lib.build(out, [jax_b], {"0.2+calltf.1": [jax_b.name]})
