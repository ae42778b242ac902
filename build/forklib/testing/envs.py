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

Test environments are large (tensorflow-cpu alone is over a gigabyte), and a
run of every release makes about twenty. The cache is bounded by the disk, not
by a count: before one is made, the least recently used test environments
that no run holds (`in_use`) are removed until `TEST_ENV_SPACE` bytes are
free, and a run refuses to start one with less than `MIN_FREE_SPACE` free.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import threading
from typing import Iterator, TextIO

from forklib import ForkError
from forklib import log
from forklib import project as project_lib
from forklib.manifest import Release
from forklib.manifest import running_python
from forklib.project import Project
from forklib.project import cache_root
from forklib.sources import fetch
from forklib.sources import wheel as wheel_lib

_MARKER = ".fork-env-complete"
_CREATING_MARKER = ".fork-env-creating"
_TOOL_ROOT = pathlib.Path(__file__).resolve().parents[3]  # the repository
_TEST_ENV_PREFIX = "test-jax"

# Free bytes wanted before a test environment is made (a tensorflow-cpu venv
# takes about 1.5 GB, pip unpacks its wheels beside it, and another run may be
# installing at the same time), and the least below which none is started.
TEST_ENV_SPACE = 5 << 30
MIN_FREE_SPACE = 2 << 30
_ROOM_LOCK = threading.Lock()  # one eviction at a time in this process


def _python_version_of(executable: str) -> str | None:
  """"3.12" for a working interpreter, None if it does not run.

  A pyenv shim on PATH exists for every installed version but fails unless
  that version is active, so finding a file is not enough: it must run.
  """
  try:
    proc = subprocess.run(
        [executable, "-c",
         "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True, text=True, timeout=60)
  except (OSError, subprocess.TimeoutExpired):
    return None
  return proc.stdout.strip() if proc.returncode == 0 else None


def _pyenv_candidates(version: str) -> list[pathlib.Path]:
  """Interpreters of Python `version` ("3.12") that pyenv knows about."""
  pyenv = shutil.which("pyenv")
  if not pyenv:
    return []
  found = []

  def ask(*args: str) -> str:
    try:
      proc = subprocess.run([pyenv, *args], capture_output=True, text=True,
                            timeout=60)
    except (OSError, subprocess.TimeoutExpired):
      return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""

  for prefix in ask("prefix", version).splitlines():
    found.append(pathlib.Path(prefix) / "bin" / f"python{version}")
  root = ask("root")
  if root:
    versions = pathlib.Path(root) / "versions"
    pattern = re.compile(rf"^{re.escape(version)}\.(\d+)$")
    matches = [(int(m.group(1)), d) for d in
               (versions.iterdir() if versions.is_dir() else [])
               if (m := pattern.match(d.name))]
    found += [d / "bin" / f"python{version}"
              for _, d in sorted(matches, reverse=True)]
  return found


def python_for(version: str) -> str:
  """A working interpreter of Python `version` ("3.12").

  Looks at the Python running the tool, then `python3.X` on PATH, then the
  pyenv installations of 3.X (`pyenv prefix 3.X`, then `$(pyenv root)/
  versions/3.X.*`). Each candidate is run once to check its version.

  Raises:
    ForkError: no candidate runs, naming what was tried and how to install
      the missing Python.
  """
  if running_python() == version:
    return sys.executable
  tried = []
  candidates = [shutil.which(f"python{version}"),
                *map(str, _pyenv_candidates(version))]
  for candidate in candidates:
    if not candidate or candidate in tried:
      continue
    tried.append(candidate)
    if _python_version_of(candidate) == version:
      return candidate
  raise ForkError(
      f"Python {version} is needed and was not found: no working "
      f"python{version} on PATH"
      + (" or under pyenv" if shutil.which("pyenv") else "")
      + (f" (tried {', '.join(tried)})" if tried else "")
      + f". Install it (e.g. `pyenv install {version}`, or your system's "
      f"python{version} package) and make sure `python{version}` runs, or "
      "put its directory on PATH.")


def find_python(release: Release) -> str:
  """The interpreter for `release`'s venvs: its `test_python`."""
  try:
    return python_for(release.test_python)
  except ForkError as e:
    raise ForkError(f"jax {release.version} is tested with Python "
                    f"{release.test_python}: {e}") from None


def venv_python(venv: pathlib.Path) -> pathlib.Path:
  return venv / "bin" / "python"


def pip(venv: pathlib.Path, *args: str) -> None:
  """Runs the pip of `venv`; raises a ForkError with its output if it fails."""
  cmd = [str(venv_python(venv)), "-m", "pip", "--disable-pip-version-check",
         *args]
  proc = subprocess.run(cmd, capture_output=True, text=True)
  if proc.returncode != 0:
    raise ForkError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n"
                    f"{proc.stdout[-4000:]}{proc.stderr[-4000:]}")


def make_venv(venv: pathlib.Path, release: Release, key: str,
              requirements: list[str], extra: tuple[str, ...] = (), *,
              in_cache: bool = True,
              no_deps: tuple[str, ...] = ()) -> pathlib.Path:
  """Creates or reuses `venv` (keyed by `key`), without the jax under test.

  `requirements` (and `extra` files, such as a jax wheel) are installed
  together, then `no_deps` without their dependencies (the manifest's
  `test_packages`: tf-keras's metadata asks for `tensorflow`, which would
  bring the full TensorFlow beside tensorflow-cpu).

  A stale `venv` is made again; outside the cache (`in_cache` False: the
  demo's .venv, `dev`'s venv) only one this tool made (it has the tool's
  marker file): anything else there is the user's, and is refused, not
  deleted.
  """
  marker = venv / _MARKER
  if marker.exists() and marker.read_text() == key:
    log.step("env", f"reusing {venv}")
    marker.touch()  # its last use, for `make_room`
    return venv
  creating = venv / _CREATING_MARKER  # ours, left incomplete by a failure
  if not in_cache:
    project_lib.refuse_unless_ours(
        venv, (_MARKER, _CREATING_MARKER), maker="this tool",
        advice="Move it away (or remove it if it can go), then run again.")
  if venv.exists():
    log.step("env", f"{venv} is incomplete or stale; recreating it")
    shutil.rmtree(venv)
  python = find_python(release)
  log.step("env", f"creating {venv} with {python}")
  subprocess.run([python, "-m", "venv", str(venv)], check=True)
  creating.write_text("")
  large = any(r.startswith("tensorflow") for r in requirements)
  log.step("env", "installing " + ", ".join([*requirements,
                                              *(pathlib.Path(e).name
                                                for e in extra)])
           + (" (tensorflow-cpu is large: this takes a minute or more the "
              "first time)" if large else ""))
  pip(venv, "install", "--quiet", *extra, *requirements)
  if no_deps:
    log.step("env", "installing " + ", ".join(no_deps)
             + " without their dependencies")
    pip(venv, "install", "--quiet", "--no-deps", *no_deps)
  marker.write_text(key)
  creating.unlink()
  return venv


def _ensure(venv: pathlib.Path, release: Release, key: str,
            requirements: list[str], jax: pathlib.Path, *,
            in_cache: bool = True,
            no_deps: tuple[str, ...] = ()) -> pathlib.Path:
  """Creates or reuses `venv` (see `make_venv`); installs the jax wheel `jax`."""
  make_venv(venv, release, key, requirements, (str(jax),), in_cache=in_cache,
            no_deps=no_deps)
  log.step("env", f"installing {jax.name} into {venv}")
  pip(venv, "install", "--quiet", "--force-reinstall", "--no-deps",
      str(jax))
  return venv


def env_key(release: Release, requirements: list[str]) -> str:
  """What a venv of `release` with `requirements` is keyed by."""
  python = find_python(release)
  version = subprocess.run(
      [python, "-c", "import sys; print(sys.version)"], check=True,
      capture_output=True, text=True).stdout.strip()
  return "\n".join([version, release.version, *requirements]) + "\n"


def base_requirements(release: Release) -> list[str]:
  return [f"jaxlib=={release.test_jaxlib}",
          f"tensorflow-cpu=={release.test_tensorflow}"]


def _requirements(path: pathlib.Path) -> list[str]:
  lines = path.read_text(encoding="utf-8").splitlines()
  return [l.split("#", 1)[0].strip() for l in lines
          if l.split("#", 1)[0].strip()]


def test_requirements(project: Project) -> list[str]:
  return _requirements(project.root / "tests" / "requirements.txt")


def no_tensorflow_requirements(project: Project,
                               release: Release) -> list[str]:
  """The venv of a jax.export user: jaxlib, flatbuffers, pytest; no TF."""
  return [f"jaxlib=={release.test_jaxlib}",
          *_requirements(project.root / "tests" / "requirements-no-tf.txt")]


@contextlib.contextmanager
def test_env(project: Project, release: Release, wheel: pathlib.Path, *,
             tensorflow: bool = True) -> Iterator[pathlib.Path]:
  """The cached test environment of `release`, with the jax wheel `wheel`.

  The environment is keyed by its exact pins (Python, jaxlib,
  tensorflow-cpu, tests/requirements.txt, the release's `test_packages`);
  the wheel is reinstalled every time, so the same environment serves the
  fork's wheel and, for `baseline`, upstream's own (`stock_wheel`). It is
  held (`in_use`) until the `with` block ends, so that no other run removes
  it to make room (`make_room`). With `tensorflow` False, the environment
  of a jax.export user instead (`no_tensorflow_requirements`: no
  TensorFlow, and nothing that brings it).

  Raises:
    ForkError: the environment cannot be made (a failed install, too little
      free disk).
  """
  if tensorflow:
    requirements = base_requirements(release) + test_requirements(project)
    no_deps = release.test_packages
  else:
    requirements, no_deps = no_tensorflow_requirements(project, release), ()
  key = env_key(release, requirements + list(no_deps))
  digest = hashlib.sha256(key.encode()).hexdigest()[:12]
  kind = "" if tensorflow else "-no-tf"
  venv = (cache_root() / "venvs"
          / f"{_TEST_ENV_PREFIX}{release.version}{kind}-{digest}")
  venv.parent.mkdir(parents=True, exist_ok=True)
  with in_use(venv):
    if not (venv / _MARKER).is_file() or (venv / _MARKER).read_text() != key:
      make_room(venv.parent, TEST_ENV_SPACE, MIN_FREE_SPACE)
    yield _ensure(venv, release, key, requirements, wheel, no_deps=no_deps)


def _lock_path(venv: pathlib.Path) -> pathlib.Path:
  return venv.with_name(venv.name + ".lock")


@contextlib.contextmanager
def in_use(venv: pathlib.Path) -> Iterator[None]:
  """Holds `venv` (a shared lock on `<venv>.lock`): `make_room` keeps it.

  The lock is taken by every run, thread or process, that uses the
  environment, so one environment may serve several runs at once.
  """
  with open(_lock_path(venv), "a+b") as f:
    fcntl.flock(f.fileno(), fcntl.LOCK_SH)
    try:
      yield
    finally:
      fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def free_space(path: pathlib.Path) -> int:
  """Bytes free for this user on the file system of `path`."""
  return shutil.disk_usage(path).free


def make_room(venvs: pathlib.Path, want: int, least: int) -> None:
  """Removes unused test environments until `want` bytes are free.

  Only complete test environments this tool made (`test-jax*`, with its
  marker file) are removed, least recently used first, and none that a run
  holds (`in_use`); nothing else in `venvs` is touched.

  Raises:
    ForkError: fewer than `least` bytes are free even so.
  """
  with _ROOM_LOCK:
    free = free_space(venvs)
    if free >= want:
      return
    candidates = sorted(
        (v for v in venvs.glob(f"{_TEST_ENV_PREFIX}*")
         if v.is_dir() and not v.is_symlink() and (v / _MARKER).is_file()),
        key=lambda v: (v / _MARKER).stat().st_mtime)
    for venv in candidates:
      if free >= want:
        break
      with open(_lock_path(venv), "a+b") as f:
        try:
          fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
          continue  # a run holds it
        log.step("env", f"{free / 2**30:.1f} GiB free: removing the least "
                 f"recently used test environment {venv}")
        (venv / _MARKER).unlink()  # incomplete from here on, if interrupted
        shutil.rmtree(venv)
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
      free = free_space(venvs)
    if free < least:
      raise ForkError(
          f"only {free / 2**30:.1f} GiB is free on the disk of {venvs}, and "
          f"a test environment needs about {want / 2**30:.0f} GiB "
          "(tensorflow-cpu and its wheels); no unused test environment is "
          "left to remove. Free some space, or point JAX_FORK_CACHE at a "
          "larger disk, then run again.")


def stock_wheel(release: Release) -> pathlib.Path:
  """Upstream's own jax wheel of `release`, from the registry, in the cache.

  Raises:
    ForkError: pip cannot get it, or what it got is not upstream's release
      (a local version label: a fork's wheel on a configured index).
  """
  return fetch.pip_download(f"jax=={release.version}",
                            f"jax-{release.version}-py3-none-any.whl",
                            cache_root() / "stock",
                            python_version=release.test_python,
                            pip_args=("--only-binary", ":all:"))


def demo_env(project: Project, release: Release,
             wheel: pathlib.Path) -> pathlib.Path:
  """The user's environment, .venv in the repository, with `wheel` in it."""
  requirements = base_requirements(release)
  return _ensure(project.root / ".venv", release,
                 env_key(release, requirements), requirements, wheel,
                 in_cache=False)


def demo(project: Project, release: Release) -> int:
  """`demo`: builds the wheel, installs it into .venv, shows it working."""
  wheel = wheel_lib.build(project, release, project.dist)
  return show_fork(project, demo_env(project, release, wheel))


SHOW = ("import jax; print(jax.__version__, jax.__version_info__, "
        "jax.config.jax_call_tf_slow_vmap)")


def show_fork(project: Project, venv: pathlib.Path) -> int:
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


def run_pytest(project: Project, release: Release,
               venv: pathlib.Path, wheel: pathlib.Path,
               pytest_args: list[str],
               upstream_tests: pathlib.Path | None = None,
               output: TextIO | None = None) -> int:
  """Runs the test suite with the test environment's Python.

  `build/` is on PYTHONPATH, so `-p forklib.testing.pytest_plugin` can be
  passed. With `upstream_tests` (the folder of upstream's tests by tag), the
  tests that need upstream's repository (git am and quilt of the whole queue,
  stage) find it in $JAX_FORK_UPSTREAM_TESTS. pytest's output goes to
  `output` (a file), else to this process's stdout and stderr.
  """
  env = dict(os.environ, JAX_FORK_WHEEL=str(wheel),
             JAX_FORK_UPSTREAM=release.version,
             JAX_FORK_TEST_VENV=str(venv),
             PYTHONPATH=str(project.root / "build"))
  if upstream_tests is not None:
    env["JAX_FORK_UPSTREAM_TESTS"] = str(upstream_tests.resolve())
  cmd = [str(venv_python(venv)), "-m", "pytest", *pytest_args]
  log.step("test", " ".join(cmd))
  if output is not None:
    print("$ " + " ".join(cmd), file=output, flush=True)
  return subprocess.run(
      cmd, cwd=project.root, env=env, stdout=output,
      stderr=None if output is None else subprocess.STDOUT).returncode


def tool_venv(requirement: str) -> pathlib.Path:
  """A venv in the cache with `requirement` ("twine==7.0.0") installed."""
  venv = cache_root() / "venvs" / f"tool-{requirement}"
  if not (venv / _MARKER).exists():
    if venv.exists():
      shutil.rmtree(venv)
    log.step("env", f"installing {requirement} into {venv}")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip(venv, "install", "--quiet", requirement)
    (venv / _MARKER).write_text(requirement)
  return venv


def ruff() -> str:
  """A ruff executable of the version pinned in tests/requirements.txt.

  The pin is the tool's own (this repository's tests/requirements.txt). The
  ruff beside this Python is used if it has that version (as in the test
  venv), else one installed into a cached venv of its own.
  """
  pins = _TOOL_ROOT / "tests" / "requirements.txt"
  requirement = next(
      (r for r in _requirements(pins)
       if r.split("==", 1)[0].strip().lower() == "ruff" and "==" in r), None)
  if requirement is None:
    raise ForkError(f"ruff is not pinned (ruff==VERSION) in {pins}")
  wanted = requirement.split("==", 1)[1].strip()
  beside = pathlib.Path(sys.executable).parent / "ruff"
  if beside.exists():
    proc = subprocess.run([str(beside), "--version"], capture_output=True,
                          text=True)
    if proc.stdout.split()[-1:] == [wanted]:
      return str(beside)
  return str(tool_venv(requirement) / "bin" / "ruff")
