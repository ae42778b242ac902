"""The benchmark's environment: ``benchmarks/.venv`` with the patched wheel.

Standard library only: this runs before anything is installed. The wheel is
taken from ``dist/`` (built with ``python3 build/fork.py wheel`` if there is
none), copied aside before installing (so that a concurrent rebuild does not
disturb the install), and reinstalled whenever its sha256 changes. The
release is the tool's default (the newest in ``patches/upstream.toml``, or
``$JAX_FORK_UPSTREAM``), the venv's Python is that release's test Python
(found as the tool finds it, ``build/forklib/testing/envs.py``), and jaxlib and
tensorflow-cpu are the versions the tests use; the benchmark's own tools are
pinned in ``benchmarks/requirements.txt``.
"""
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

from __future__ import annotations

import hashlib
import pathlib
import shutil
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
  from forklib.manifest import Release

BENCH = pathlib.Path(__file__).resolve().parent
ROOT = BENCH.parent
VENV = BENCH / ".venv"
_MARKER = ".bench-env-complete"
_WHEEL_MARKER = ".bench-jax-wheel-sha256"


def _log(msg: str) -> None:
  print(f"[bench] {msg}", file=sys.stderr, flush=True)


def venv_python() -> pathlib.Path:
  """The venv's interpreter."""
  return VENV / "bin" / "python"


def inside_venv() -> bool:
  """Whether this interpreter is the benchmark venv's."""
  return pathlib.Path(sys.prefix).resolve() == VENV.resolve()


def _forklib() -> None:
  """Makes the project's own tool library (``build/forklib``) importable.

  It is standard library only, like this module.
  """
  build = str(ROOT / "build")
  if build not in sys.path:
    sys.path.insert(0, build)


def _release() -> Release:
  """The release the tool builds by default (as ``build/fork.py``).

  ``$JAX_FORK_UPSTREAM`` if set, else the newest release listed in
  ``patches/upstream.toml``, whatever Python runs this.
  """
  _forklib()
  from forklib import ForkError  # pylint: disable=g-import-not-at-top
  from forklib import manifest  # pylint: disable=g-import-not-at-top
  try:
    return manifest.load(ROOT / "patches" / "upstream.toml").select(None)
  except ForkError as e:
    raise SystemExit(str(e)) from None


def _wheel(release: Release) -> pathlib.Path:
  pattern = f"jax-{release.version}+calltf.*-py3-none-any.whl"
  wheels = sorted((ROOT / "dist").glob(pattern))
  if not wheels:
    _log("no patched wheel in dist/: building it with "
         "`python3 build/fork.py wheel`")
    subprocess.run([sys.executable, str(ROOT / "build" / "fork.py"), "wheel"],
                   cwd=ROOT, check=True)
    wheels = sorted((ROOT / "dist").glob(pattern))
  if not wheels:
    raise SystemExit(f"no {pattern} in {ROOT / 'dist'} after building it")
  return wheels[-1]


def _requirements(release: Release) -> list[str]:
  lines = (BENCH / "requirements.txt").read_text().splitlines()
  own = [l.split("#", 1)[0].strip() for l in lines]
  return [f"jaxlib=={release.test_jaxlib}",
          f"tensorflow-cpu=={release.test_tensorflow}",
          *[l for l in own if l]]


def _python(release: Release) -> str:
  """The interpreter of the release's test Python (as the tests' venvs).

  Found by the project's own finder, which runs each candidate: a pyenv shim
  named ``python3.12`` exists on PATH whether or not it works.
  """
  _forklib()
  from forklib import ForkError  # pylint: disable=g-import-not-at-top
  from forklib.testing import envs  # pylint: disable=g-import-not-at-top
  try:
    return envs.find_python(release)
  except ForkError as e:
    raise SystemExit(str(e)) from None


def _pip(*args: str) -> None:
  subprocess.run([str(venv_python()), "-m", "pip",
                  "--disable-pip-version-check", "--quiet", *args],
                 check=True)


def ensure() -> pathlib.Path:
  """Creates or updates ``benchmarks/.venv``; returns its interpreter."""
  release = _release()
  wheel = _wheel(release)
  requirements = _requirements(release)
  python = _python(release)
  version = subprocess.run(
      [python, "-c", "import sys; print(sys.version.split()[0])"],
      check=True, capture_output=True, text=True).stdout.strip()
  key = "\n".join([version, *requirements]) + "\n"
  marker = VENV / _MARKER
  with tempfile.TemporaryDirectory(prefix="bench-wheel-") as tmp:
    copy = pathlib.Path(tmp) / wheel.name
    shutil.copy2(wheel, copy)
    digest = hashlib.sha256(copy.read_bytes()).hexdigest()
    if not (marker.exists() and marker.read_text() == key):
      if VENV.exists():
        _log(f"{VENV} is incomplete or stale: recreating it")
        shutil.rmtree(VENV)
      _log(f"creating {VENV}; installing {wheel.name}, "
           + ", ".join(requirements)
           + " (tensorflow-cpu is large: minutes the first time)")
      subprocess.run([python, "-m", "venv", str(VENV)], check=True)
      _pip("install", str(copy), *requirements)
      (VENV / _WHEEL_MARKER).write_text(digest)
      marker.write_text(key)
    wheel_marker = VENV / _WHEEL_MARKER
    if not (wheel_marker.exists() and wheel_marker.read_text() == digest):
      _log(f"installing {wheel.name} (changed) into {VENV}")
      _pip("install", "--force-reinstall", "--no-deps", str(copy))
      wheel_marker.write_text(digest)
  return venv_python()
