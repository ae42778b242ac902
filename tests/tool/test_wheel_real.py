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
"""The real wheel, built from upstream's real sdist.

Reproducibility (two builds, through both entry points, are byte-identical)
and the diff against upstream's own wheel of the same release.
"""

from __future__ import annotations

import email.parser
import hashlib
import os
import pathlib
import subprocess
import sys
import zipfile

import packaging.requirements
import packaging.specifiers
import pytest

from forklib.project import Project
from forklib.sources import tree as tree_lib


def _sha(path: pathlib.Path) -> str:
  return hashlib.sha256(path.read_bytes()).hexdigest()


def _build(root, release, out, cache) -> pathlib.Path:
  env = dict(os.environ, JAX_FORK_CACHE=str(cache))
  env.pop("SOURCE_DATE_EPOCH", None)
  subprocess.run([sys.executable, str(root / "build" / "fork.py"), "-q",
                  "wheel", release.version, "--out", str(out)],
                 env=env, check=True)
  wheels = list(out.glob("*.whl"))
  assert len(wheels) == 1, wheels
  return wheels[0]


@pytest.fixture(scope="module")
def upstream_wheel(tmp_path_factory, release) -> pathlib.Path:
  dest = tmp_path_factory.mktemp("upstream")
  subprocess.run([sys.executable, "-m", "pip", "download", "--quiet",
                  "--no-deps", "--only-binary", ":all:", "--dest", str(dest),
                  f"jax=={release.version}"], check=True)
  return dest / f"jax-{release.version}-py3-none-any.whl"


def test_two_builds_are_byte_identical(root, release, fork_wheel, tmp_path):
  """This build and the runner's build of the wheel under test.

  The wheel under test is the first build: `fork.py test` built it earlier,
  in another process, with the user's cache. This one runs with a fresh
  cache, so the patched tree is rebuilt from the sdist too. (A third build
  with another fresh cache would differ from this one in nothing but the
  cache's path, which the runner's build differs in already.)
  """
  built = _build(root, release, tmp_path / "a", tmp_path / "cache-a")
  assert built.name == f"jax-{release.label}-py3-none-any.whl"
  assert _sha(built) == _sha(fork_wheel)


def test_pip_wheel_of_the_repository_builds_the_same_wheel(root, release,
                                                           fork_wheel,
                                                           tmp_path):
  env = dict(os.environ, JAX_FORK_CACHE=str(tmp_path / "cache"),
             JAX_FORK_UPSTREAM=release.version)
  for var in ("SOURCE_DATE_EPOCH", "JAX_FORK_TREE"):
    env.pop(var, None)
  subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet",
                  "--no-deps", "-w", str(tmp_path / "dist"), str(root)],
                 env=env, check=True)
  built = tmp_path / "dist" / fork_wheel.name
  assert _sha(built) == _sha(fork_wheel)


def _contents(whl: pathlib.Path) -> dict[str, bytes]:
  with zipfile.ZipFile(whl) as z:
    return {n: z.read(n) for n in z.namelist()}


def test_differs_from_upstream_only_where_we_patch(root, release, fork_wheel,
                                                   upstream_wheel):
  ours, theirs = _contents(fork_wheel), _contents(upstream_wheel)
  dist_info = (f"jax-{release.label}.dist-info/",
               f"jax-{release.version}.dist-info/")
  ours_pkg = {n: d for n, d in ours.items() if not n.startswith(dist_info)}
  theirs_pkg = {n: d for n, d in theirs.items() if not n.startswith(dist_info)}
  touched = tree_lib.touched_files(Project(root), release)

  added = set(ours_pkg) - set(theirs_pkg)
  removed = set(theirs_pkg) - set(ours_pkg)
  changed = {n for n in set(ours_pkg) & set(theirs_pkg)
             if ours_pkg[n] != theirs_pkg[n]}
  assert removed == set()
  assert added <= touched, added - touched
  assert changed <= touched, changed - touched
  # Every file we claim to touch really differs (no silent no-op patch).
  assert added | changed == touched


def test_metadata_keeps_upstream_dependencies(release, fork_wheel,
                                              upstream_wheel):
  def metadata(whl, version):
    with zipfile.ZipFile(whl) as z:
      text = z.read(f"jax-{version}.dist-info/METADATA").decode()
    return email.parser.Parser().parsestr(text)

  ours = metadata(fork_wheel, release.label)
  theirs = metadata(upstream_wheel, release.version)
  assert ours["Version"] == release.label
  assert ours["Requires-Python"] == theirs["Requires-Python"]
  extra_tf = 'extra == "tensorflow"'
  extra_cpu = 'extra == "tensorflow-cpu"'
  ours_reqs = ours.get_all("Requires-Dist")
  assert [r for r in ours_reqs if extra_tf not in r and extra_cpu not in r
          ] == theirs.get_all("Requires-Dist")
  tf_reqs = [r for r in ours_reqs if extra_tf in r]
  assert len(tf_reqs) == 1 and tf_reqs[0].startswith("tensorflow")
  bounds = set(tf_reqs[0].split(";")[0][len("tensorflow"):].split(","))
  assert bounds == set(release.tensorflow.split(","))
  assert ours.get_all("Provides-Extra") == (
      theirs.get_all("Provides-Extra") + ["tensorflow", "tensorflow-cpu"])
  # tensorflow-cpu where TensorFlow publishes it, tensorflow elsewhere: each
  # platform gets exactly one, in the verified range.
  cpu = [packaging.requirements.Requirement(r) for r in ours_reqs
         if extra_cpu in r]
  for env, wanted in ((("linux", "x86_64"), "tensorflow-cpu"),
                      (("win32", "AMD64"), "tensorflow-cpu"),
                      (("linux", "aarch64"), "tensorflow"),
                      (("darwin", "arm64"), "tensorflow")):
    chosen = [r for r in cpu if r.marker.evaluate({
        "sys_platform": env[0], "platform_machine": env[1],
        "extra": "tensorflow-cpu"})]
    assert [r.name for r in chosen] == [wanted], env
    assert chosen[0].specifier == packaging.specifiers.SpecifierSet(
        release.tensorflow)
  with zipfile.ZipFile(fork_wheel) as z:
    names = z.namelist()
  assert f"jax-{release.label}.dist-info/licenses/NOTICE" in names
  assert names[-1] == f"jax-{release.label}.dist-info/RECORD"
