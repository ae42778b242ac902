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
"""Virtual environments with the patched wheel installed: demo and tests.

The heavy part of an environment (jaxlib, tensorflow-cpu, the test tools) is
pinned per release in the manifest, so an environment is cached under a key of
exactly those pins and reused; the patched jax wheel itself is reinstalled
into it every time. An environment is marked complete only after every
install succeeded; an incomplete one is rebuilt from scratch.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

from forklib import ForkError
from forklib import fetch
from forklib import log
from forklib import tree as tree_lib
from forklib.manifest import Release
from forklib.manifest import running_python

_MARKER = ".fork-env-complete"


def find_python(release: Release) -> str:
  """An interpreter for `release`: this one if supported, else python3.X."""
  if release.supports_python(running_python()):
    return sys.executable
  for version in reversed(release.python):
    found = shutil.which(f"python{version}")
    if found:
      return found
  raise ForkError(
      f"jax {release.version} is built for Python {', '.join(release.python)}"
      f"; this is Python {running_python()} and no python"
      f"{release.python[-1]} is on PATH. Install one of them.")


def venv_python(venv: pathlib.Path) -> pathlib.Path:
  return venv / "bin" / "python"


def _pip(venv: pathlib.Path, *args: str) -> None:
  cmd = [str(venv_python(venv)), "-m", "pip", "--disable-pip-version-check",
         *args]
  proc = subprocess.run(cmd, capture_output=True, text=True)
  if proc.returncode != 0:
    raise ForkError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n"
                    f"{proc.stdout[-4000:]}{proc.stderr[-4000:]}")


def _ensure(venv: pathlib.Path, release: Release, key: str,
            requirements: list[str], wheel: pathlib.Path) -> pathlib.Path:
  marker = venv / _MARKER
  if marker.exists() and marker.read_text() == key:
    log.step("env", f"reusing {venv}")
  else:
    if venv.exists():
      log.step("env", f"{venv} is incomplete or stale; recreating it")
      shutil.rmtree(venv)
    python = find_python(release)
    log.step("env", f"creating {venv} with {python}")
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    log.step("env", "installing " + ", ".join(requirements)
             + " and the patched jax (tensorflow-cpu is large: this takes a "
             "minute or more the first time)")
    _pip(venv, "install", "--quiet", str(wheel), *requirements)
    marker.write_text(key)
  log.step("env", f"installing {wheel.name} into {venv}")
  _pip(venv, "install", "--quiet", "--force-reinstall", "--no-deps",
       str(wheel))
  return venv


def _key(release: Release, requirements: list[str]) -> str:
  python = find_python(release)
  version = subprocess.run(
      [python, "-c", "import sys; print(sys.version)"], check=True,
      capture_output=True, text=True).stdout.strip()
  return "\n".join([version, release.version, *requirements]) + "\n"


def _base_requirements(release: Release) -> list[str]:
  return [f"jaxlib=={release.test_jaxlib}",
          f"tensorflow-cpu=={release.test_tensorflow}"]


def test_requirements(project: tree_lib.Project) -> list[str]:
  path = project.root / "tests" / "requirements.txt"
  lines = path.read_text(encoding="utf-8").splitlines()
  return [l.split("#", 1)[0].strip() for l in lines
          if l.split("#", 1)[0].strip()]


def test_env(project: tree_lib.Project, release: Release,
             wheel: pathlib.Path) -> pathlib.Path:
  """The cached test environment of `release`, with `wheel` installed."""
  requirements = _base_requirements(release) + test_requirements(project)
  key = _key(release, requirements)
  digest = hashlib.sha256(key.encode()).hexdigest()[:12]
  venv = fetch.cache_root() / "venvs" / f"test-jax{release.version}-{digest}"
  return _ensure(venv, release, key, requirements, wheel)


def demo_env(project: tree_lib.Project, release: Release,
             wheel: pathlib.Path) -> pathlib.Path:
  """The user's environment, .venv in the repository, with `wheel` in it."""
  requirements = _base_requirements(release)
  return _ensure(project.root / ".venv", release,
                 _key(release, requirements), requirements, wheel)


SHOW = ("import jax; print(jax.__version__, jax.__version_info__, "
        "jax.config.jax_call_tf_slow_vmap)")


def show_fork(project: tree_lib.Project, venv: pathlib.Path) -> int:
  """Prints what the installed fork reports, and runs the Jacobian example."""
  python = venv_python(venv)
  rc = 0
  base_env = {k: v for k, v in os.environ.items()
              if k != "JAX_CALL_TF_SLOW_VMAP"}
  example = project.root / "examples" / "tf_jacobian.py"
  runs = [({}, ["-c", SHOW], f"-c {SHOW!r}"),
          ({"JAX_CALL_TF_SLOW_VMAP": "1"}, ["-c", SHOW], f"-c {SHOW!r}"),
          ({"TF_CPP_MIN_LOG_LEVEL": "3"}, [str(example)],
           str(example.relative_to(project.root)))]
  for extra_env, args, shown in runs:
    prefix = "".join(f"{k}={v} " for k, v in extra_env.items()
                     if k != "TF_CPP_MIN_LOG_LEVEL")
    proc = subprocess.run([str(python), *args], env=dict(base_env, **extra_env),
                          capture_output=True, text=True)
    print(f"$ {prefix}{python} {shown}")
    print(proc.stdout.strip() if proc.returncode == 0
          else proc.stdout.strip() + "\n" + proc.stderr.strip()[-3000:])
    rc = rc or proc.returncode
  print(f"\nThe patched jax is installed in {venv}; activate it with:\n"
        f"  source {venv}/bin/activate")
  return rc


def run_pytest(project: tree_lib.Project, release: Release,
               venv: pathlib.Path, wheel: pathlib.Path,
               pytest_args: list[str]) -> int:
  """Runs the test suite with the test environment's Python."""
  env = dict(os.environ, JAX_FORK_WHEEL=str(wheel),
             JAX_FORK_UPSTREAM=release.version,
             JAX_FORK_TEST_VENV=str(venv))
  cmd = [str(venv_python(venv)), "-m", "pytest", *pytest_args]
  log.step("test", " ".join(cmd))
  return subprocess.run(cmd, cwd=project.root, env=env).returncode
