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
"""`stage --verify`: each staged commit installed and tested on its own.

For every commit of the series, its tree (`git archive`) is installed with
pip into a venv of its own, and pytest runs the tests the series has added
or changed up to that commit, with upstream's pytest configuration (the
tree's `pyproject.toml`: warnings are errors, importlib imports) and its
`conftest.py`, against the installed copy. The heavy packages (the pinned
jaxlib and tensorflow-cpu, pytest, absl-py) live in one base venv, keyed by
exactly those pins; a commit's venv sees them through a `.pth` file and
holds only its own jax. Everything lives under `$JAX_FORK_CACHE/stage/`
(pip's own cache serves every download): the base venv is made once, a
commit's venv once per tree.

A test of upstream's that fails at the base too (upstream's `call_tf_test`
fails a few on CPU) is reported as failing at the base, not held against
the commit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET

from forklib import ForkError
from forklib import log
from forklib import scratch
from forklib.project import cache_root
from forklib.testing import envs
from forklib.upstreaming import gitcmd

_MARKER = ".stage-venv-complete"
_TIMEOUT = 3600


@dataclasses.dataclass
class TestRun:
  """pytest's results for one tree."""
  files: list[str]
  passed: list[str] = dataclasses.field(default_factory=list)
  failed: list[str] = dataclasses.field(default_factory=list)
  errors: list[str] = dataclasses.field(default_factory=list)
  skipped: list[str] = dataclasses.field(default_factory=list)
  failed_at_base: list[str] = dataclasses.field(default_factory=list)
  problem: str = ""   # why the tests could not run at all
  log: str = ""

  @property
  def ok(self) -> bool:
    return (not self.problem and not self.failed and not self.errors
            and bool(self.passed))


def _stage_cache() -> pathlib.Path:
  return cache_root() / "stage"


def _pinned(project_root: pathlib.Path, name: str) -> str:
  """`name==version` as tests/requirements.txt pins it."""
  path = project_root / "tests" / "requirements.txt"
  for line in path.read_text(encoding="utf-8").splitlines():
    req = line.split("#", 1)[0].strip()
    if req.lower().startswith(name.lower() + "=="):
      return req
  raise ForkError(f"{name} is not pinned ({name}==VERSION) in {path}")


def requirements(project_root: pathlib.Path, jaxlib: str,
                 tensorflow: str) -> list[str]:
  """The base venv's packages: the pins, pytest, absl-py, build tools."""
  return [f"jaxlib=={jaxlib}", f"tensorflow-cpu=={tensorflow}",
          "opt_einsum", _pinned(project_root, "pytest"),
          _pinned(project_root, "absl-py"), "setuptools"]


def _pip(python: pathlib.Path | str, *args: str) -> None:
  cmd = [str(python), "-m", "pip", "--disable-pip-version-check", *args]
  proc = subprocess.run(cmd, capture_output=True, text=True)
  if proc.returncode != 0:
    raise ForkError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n"
                    f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")


def _site_packages(python: pathlib.Path) -> pathlib.Path:
  out = subprocess.run(
      [str(python), "-c", "import sysconfig; print(sysconfig.get_path("
       "'purelib'))"], check=True, capture_output=True, text=True).stdout
  return pathlib.Path(out.strip())


def base_venv(python: str, reqs: list[str]) -> pathlib.Path:
  """The cached venv with `reqs`, made with `python` if not there yet."""
  version = subprocess.run([python, "-c", "import sys; print(sys.version)"],
                           check=True, capture_output=True,
                           text=True).stdout.strip()
  key = "\n".join([version, *reqs]) + "\n"
  venv = (_stage_cache() / "venvs" /
          f"base-{hashlib.sha256(key.encode()).hexdigest()[:12]}")
  marker = venv / _MARKER
  if marker.is_file() and marker.read_text() == key:
    return venv
  if venv.exists():
    shutil.rmtree(venv)  # an incomplete one of ours
  log.step("stage", f"verify: creating {venv} with " + ", ".join(reqs)
           + " (tensorflow-cpu is large: a minute or more the first time)")
  subprocess.run([python, "-m", "venv", str(venv)], check=True)
  _pip(envs.venv_python(venv), "install", "--quiet", *reqs)
  marker.write_text(key)
  return venv


def _export(repo: pathlib.Path, commit: str, dest: pathlib.Path) -> None:
  """The tree of `commit` at `dest`, as `git archive` gives it."""
  dest.mkdir(parents=True)
  archive = dest.parent / (dest.name + ".tar")
  gitcmd.git(repo, "archive", "--format=tar", "-o", str(archive), commit,
             command="stage")
  with tarfile.open(archive) as tar:
    tar.extractall(dest, filter="data")
  archive.unlink()


def _jaxlib_range_problem(tree: pathlib.Path, jaxlib: str) -> str:
  """Why the tree's jax would refuse `jaxlib`, or ""."""
  version_py = tree / "jax" / "version.py"
  if not version_py.is_file():
    return ""
  text = version_py.read_text(encoding="utf-8")
  # Upstream quotes these either way ('0.11.0' and "0.11.1" in one file).
  version = re.search(r'^_version\s*=\s*["\']([^"\']+)["\']', text, re.M)
  minimum = re.search(
      r'^_minimum_jaxlib_version\s*=\s*["\']([^"\']+)["\']', text, re.M)
  if not version or not minimum:
    return ""

  def key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v.split("+")[0])[:4])

  if not key(minimum.group(1)) <= key(jaxlib) <= key(version.group(1)):
    return (f"this tree is jax {version.group(1)}, which takes jaxlib "
            f"{minimum.group(1)} to {version.group(1)}, not the pinned "
            f"{jaxlib}: pass --jaxlib VERSION for a base of another release")
  return ""


def commit_venv(base: pathlib.Path, tree_id: str, tree: pathlib.Path,
                constraints: list[str]) -> pathlib.Path:
  """A venv with the jax of `tree` installed, over the base venv's packages.

  Cached by the tree's id: the same tree is installed once.
  """
  venv = _stage_cache() / "venvs" / f"tree-{tree_id[:16]}-{base.name}"
  marker = venv / _MARKER
  if marker.is_file():
    return venv
  if venv.exists():
    shutil.rmtree(venv)
  python = envs.venv_python(base)
  subprocess.run([str(python), "-m", "venv", "--without-pip", str(venv)],
                 check=True)
  (_site_packages(envs.venv_python(venv)) / "_stage_base.pth").write_text(
      str(_site_packages(python)) + "\n")
  constraint_file = venv / "constraints.txt"
  constraint_file.write_text("".join(c + "\n" for c in constraints))
  # The base's pip installs into the commit's venv (--python); build
  # isolation off: setuptools comes from the base.
  _pip(python, "--python", str(envs.venv_python(venv)), "install",
       "--quiet", "--no-build-isolation", "--constraint",
       str(constraint_file), str(tree))
  marker.write_text(tree_id + "\n")
  return venv


def _parse_junit(path: pathlib.Path, run: TestRun) -> None:
  root = ET.parse(path).getroot()
  for case in root.iter("testcase"):
    file = case.get("file") or ""
    cls = (case.get("classname") or "").rsplit(".", 1)[-1]
    test_id = "::".join(filter(None, [file, cls, case.get("name")]))
    kinds = {child.tag for child in case}
    if "error" in kinds:
      run.errors.append(test_id)
    elif "failure" in kinds:
      run.failed.append(test_id)
    elif "skipped" in kinds:
      run.skipped.append(test_id)
    else:
      run.passed.append(test_id)


def run_tests(venv: pathlib.Path, tree: pathlib.Path, files: list[str],
              log_path: pathlib.Path) -> TestRun:
  """pytest on `files` of `tree`, with the jax installed in `venv`."""
  run = TestRun(files=list(files), log=str(log_path))
  if not files:
    run.problem = "no tests to run"
    return run
  env = {k: v for k, v in os.environ.items()
         if not k.startswith(("JAX_CALL_TF", "JAX_FORK", "PYTEST_"))}
  env.update(JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3",
             PYTHONDONTWRITEBYTECODE="1")
  env.pop("PYTHONPATH", None)
  with scratch.directory(_stage_cache() / "runs", "pytest") as cwd:
    junit = cwd / "junit.xml"
    cmd = [str(envs.venv_python(venv)), "-m", "pytest", "-q", "-rfE",
           "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
           f"--junitxml={junit}", *(str(tree / f) for f in files)]
    try:
      proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=_TIMEOUT)
      output = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
      output = f"{e.stdout or ''}{e.stderr or ''}\ntimed out after " \
               f"{_TIMEOUT} s"
      proc = None
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text("$ " + " ".join(cmd) + "\n" + output,
                        encoding="utf-8")
    if junit.is_file():
      _parse_junit(junit, run)
    if proc is None or (proc.returncode not in (0, 1) and not (
        run.failed or run.errors)):
      tail = output.strip().splitlines()[-5:]
      run.problem = ("pytest did not run the tests (exit "
                     f"{'timeout' if proc is None else proc.returncode}): "
                     + " / ".join(tail))
  return run


def verify_tree(repo: pathlib.Path, commit: str, base: pathlib.Path,
                files: list[str], jaxlib: str | None,
                constraints: list[str], log_path: pathlib.Path) -> TestRun:
  """Installs `commit`'s tree into its own venv and runs `files` there."""
  tree_id = gitcmd.git(repo, "rev-parse", f"{commit}^{{tree}}",
                       command="stage").stdout.strip()
  with scratch.directory(_stage_cache() / "trees", "tree") as tmp:
    tree = tmp / "tree"
    _export(repo, commit, tree)
    problem = _jaxlib_range_problem(tree, jaxlib) if jaxlib else ""
    if problem:
      return TestRun(files=list(files), problem=problem)
    try:
      venv = commit_venv(base, tree_id, tree, constraints)
    except ForkError as e:
      return TestRun(files=list(files),
                     problem=f"installing the tree failed: {e}")
    return run_tests(venv, tree, files, log_path)


def default_python(release_python: str) -> str:
  """The interpreter for the verify venvs: the release's test Python."""
  return envs.python_for(release_python) if release_python else sys.executable
