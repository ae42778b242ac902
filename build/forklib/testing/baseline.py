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
"""The stock baseline: upstream's tests against upstream's own wheel.

`python3 build/fork.py baseline VERSION --upstream-tests DIR` installs
upstream's `jax==VERSION` wheel from the registry into the release's test
venv (the same Python, jaxlib, tensorflow-cpu and test tools as the fork's
runs), checks that stock `call_tf` works there under `jax.jit` (the evidence
that the pins go together), runs upstream's suites, and records what fails
in `tests/upstream_known_failures.toml` with the first line of each error,
the date, the versions and the machine. The next `test` reinstalls the
fork's wheel into the venv.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

from forklib import ForkError
from forklib import log
from forklib.manifest import Release
from forklib.project import Project
from forklib.testing import envs
from forklib.testing import upstream_tests

# Stock call_tf, a small function, under jit and grad: what the TF pins of a
# release must support.
CALL_TF_CHECK = """\
import numpy as np
import jax
import tensorflow as tf
from jax.experimental import jax2tf
f = jax2tf.call_tf(lambda x: tf.math.sin(x) * 2.0)
x = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
np.testing.assert_allclose(jax.jit(f)(x), np.sin(x) * 2, rtol=1e-5)
g = jax.jit(jax.grad(lambda x: f(x).sum()))(x)
np.testing.assert_allclose(g, np.cos(x) * 2, rtol=1e-5)
print(f"ok: jax.jit(call_tf(sin)) and its grad with jax {jax.__version__}, "
      f"tensorflow {tf.__version__}")
"""


def call_tf_check(python: pathlib.Path) -> str:
  """Runs CALL_TF_CHECK; "ok: ..." or "FAILED: <the error's last line>"."""
  proc = subprocess.run(
      [str(python), "-P", "-c", CALL_TF_CHECK], capture_output=True,
      text=True, env=upstream_tests.clean_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
  if proc.returncode == 0:
    return proc.stdout.strip().splitlines()[-1]
  lines = [l for l in proc.stderr.strip().splitlines() if l.strip()]
  return f"FAILED (exit {proc.returncode}): " + (lines[-1] if lines else "")


def run(project: Project, release: Release,
        tests_dir: pathlib.Path) -> upstream_tests.Baseline:
  """Runs the stock baseline of `release`; writes it to the known failures.

  Returns:
    The baseline recorded.
  """
  test_set = upstream_tests.find_set(tests_dir, release.version)
  log.step("baseline", f"jax {release.version}: upstream's tests from "
           f"{test_set.describe()}")
  with envs.test_env(project, release,
                     envs.stock_wheel(release)) as venv:
    python = envs.venv_python(venv)
    versions = upstream_tests.versions_in(python)
    check = call_tf_check(python)
    log.step("baseline", f"stock call_tf: {check}")
    tree = upstream_tests.prepare(test_set, [], upstream_tests.PYTEST_INI)
    log_dir = venv.parent.parent / "logs" / f"baseline-{release.version}"
    results = upstream_tests.run_all(
        python, tree, log_dir, expect_version=release.version,
        build_dir=project.root / "build")
  baseline = upstream_tests.Baseline(
      version=release.version, tests=test_set.name,
      date=upstream_tests.today(), versions=versions,
      machine=upstream_tests.machine(), call_tf_check=check,
      suites={r.name: "; ".join(r.summary) for r in results},
      failures={n: (o, m) for r in results for n, (o, m) in r.outcomes.items()
                if o in upstream_tests.FAILING})
  path = project.root / upstream_tests.KNOWN_FAILURES
  known = upstream_tests.load_known(path)
  known[release.version] = baseline
  upstream_tests.write_known(path, known)
  installed = ", ".join(f"{k} {v}" for k, v in versions.items())
  print(f"stock jax {release.version} ({installed}), upstream's tests from "
        f"{test_set.describe()}:")
  print(upstream_tests.report(results, None))
  print(f"  stock call_tf: {check}")
  print(f"{len(baseline.failures)} failing test(s) recorded in {path}")
  return baseline


def run_releases(project: Project, versions: list[str],
                 tests_dir: pathlib.Path) -> int:
  """`baseline [VERSION...]`: `run` for each release (default: every one).

  Returns:
    The exit status: 1 if a release failed (each error is printed, and the
    others go on), else 0. With one release, its error is raised.
  """
  manifest = project.manifest()
  releases = ([manifest.get(v) for v in versions] if versions
              else manifest.newest())
  failed = []
  for release in releases:
    try:
      run(project, release, tests_dir)
    except ForkError as e:
      if len(releases) == 1:
        raise
      print(f"error: jax {release.version}: {e}", file=sys.stderr)
      failed.append(release.version)
  return 1 if failed else 0
