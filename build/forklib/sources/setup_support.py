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
"""What the repository's `setup.py` runs: the patched wheel's recipe.

Upstream's own `setup.py` stays the source of the package's metadata: it is
run with `setuptools.setup` captured, so the fork keeps upstream's packages,
package data, dependencies and extras exactly. The fork changes the version
(stamped into jax/version.py, read back by upstream's setup.py), adds the
`tensorflow` and `tensorflow-cpu` extras with the verified range, and makes
the wheel canonical.
"""

from __future__ import annotations

import atexit
import os
import pathlib
import runpy
import shutil
import sys
import tempfile
from typing import Any

from forklib import manifest as manifest_lib
from forklib.project import Project
from forklib.sources import tree as tree_lib
from forklib.sources import wheel as wheel_lib


def capture_upstream_setup(tree: pathlib.Path) -> dict[str, Any]:
  """Runs upstream's setup.py in `tree` and returns its setup() arguments."""
  import setuptools  # pylint: disable=g-import-not-at-top
  captured: dict[str, Any] = {}

  def fake_setup(**kwargs):
    captured.update(kwargs)

  real_setup = setuptools.setup
  setuptools.setup = fake_setup
  cwd = os.getcwd()
  try:
    os.chdir(tree)
    runpy.run_path(str(tree / "setup.py"), run_name="__main__")
  finally:
    os.chdir(cwd)
    setuptools.setup = real_setup
  if not captured:
    raise RuntimeError(f"{tree / 'setup.py'} did not call setuptools.setup()")
  return captured


# Where TensorFlow publishes a CPU-only wheel (`tensorflow-cpu`): Linux on
# x86_64 and Windows on x64. Elsewhere (macOS, Linux on aarch64) the
# `tensorflow` wheel is CPU-only already, and `tensorflow-cpu` has none.
CPU_WHEEL_PLATFORMS = ('(sys_platform == "linux" and platform_machine == '
                       '"x86_64") or (sys_platform == "win32" and '
                       'platform_machine == "AMD64")')
OTHER_PLATFORMS = ('(sys_platform == "linux" and platform_machine != '
                   '"x86_64") or (sys_platform == "win32" and '
                   'platform_machine != "AMD64") or (sys_platform != '
                   '"linux" and sys_platform != "win32")')


def tensorflow_extras(release: manifest_lib.Release) -> dict[str, list[str]]:
  """The extras that bring TensorFlow in the verified range.

  `tensorflow`: the full package (with GPU support on Linux x86_64);
  `tensorflow-cpu`: the CPU-only package where TensorFlow publishes one
  (about half the size), `tensorflow` where that is CPU-only itself.
  """
  return {
      "tensorflow": [f"tensorflow{release.tensorflow}"],
      "tensorflow-cpu": [
          f"tensorflow-cpu{release.tensorflow}; {CPU_WHEEL_PLATFORMS}",
          f"tensorflow{release.tensorflow}; {OTHER_PLATFORMS}"],
  }


def fork_setup_kwargs(upstream: dict[str, Any],
                      release: manifest_lib.Release,
                      epoch: int) -> dict[str, Any]:
  """Upstream's setup() arguments, turned into the fork's."""
  from setuptools.command.bdist_wheel import bdist_wheel  # pylint: disable=g-import-not-at-top

  if upstream.get("version") != release.label:
    raise RuntimeError(
        f"upstream setup.py reports version {upstream.get('version')!r}, "
        f"expected the stamped {release.label!r}")

  class CanonicalBdistWheel(bdist_wheel):
    """bdist_wheel, then rewrite the wheel in canonical form."""

    def run(self):
      super().run()
      for whl in pathlib.Path(self.dist_dir).glob("jax-*.whl"):
        wheel_lib.normalize(whl, epoch)

  kwargs = dict(upstream)
  extras = dict(kwargs.get("extras_require") or {})
  extras.update(tensorflow_extras(release))
  kwargs["extras_require"] = extras
  cmdclass = dict(kwargs.get("cmdclass") or {})
  cmdclass["bdist_wheel"] = CanonicalBdistWheel
  kwargs["cmdclass"] = cmdclass
  kwargs["description"] = (
      f"{upstream.get('description', 'JAX').rstrip('.')}. Fork build for "
      "jax2tf.call_tf under vmap (jax-ml/jax#11753).")
  return kwargs


def main(root: pathlib.Path) -> None:
  """Builds the patched jax package with setuptools (called by setup.py)."""
  import setuptools  # pylint: disable=g-import-not-at-top

  project = Project(root)
  release = project.manifest().select(None)
  tree = os.environ.get("JAX_FORK_TREE")
  tree = (pathlib.Path(tree) if tree
          else tree_lib.cached_tree(project, release))
  epoch = wheel_lib.source_date_epoch(project, release)
  os.environ.setdefault("SOURCE_DATE_EPOCH", str(epoch))
  # Build in a scratch copy: setuptools writes build/ and egg-info next to
  # setup.py, and the cached tree must stay pristine.
  scratch = pathlib.Path(tempfile.mkdtemp(prefix="jax-fork-build-"))
  atexit.register(shutil.rmtree, scratch, ignore_errors=True)
  build_dir = scratch / tree.name
  shutil.copytree(tree, build_dir, symlinks=True)
  upstream = capture_upstream_setup(build_dir)
  kwargs = fork_setup_kwargs(upstream, release, epoch)
  os.chdir(build_dir)
  sys.argv[0] = str(build_dir / "setup.py")
  setuptools.setup(**kwargs)
