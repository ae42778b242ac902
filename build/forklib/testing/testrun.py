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
"""The `test` and `matrix` commands: build, install and test each release.

Per release: build the fork's wheel (a queue that does not apply is reported
as such, and the other releases go on), install it into the release's cached
test venv (its Python, jaxlib and tensorflow-cpu), run the fork's suite
(`full`: all of tests/; `smoke`: SMOKE_PATHS), then upstream's own suites
from `--upstream-tests DIR`, judged against stock upstream's failures.

Modes (docs/maintainers.md says why):

* `test`: the default release (the newest) in full; every other release:
  its wheel and the smoke suite. Upstream's suites run on every release, in
  smoke mode those with at most SMOKE_SUITE_TESTS tests on stock upstream
  (the output names the others). This is what CI runs.
* `test --upstream V` (repeatable): those releases in full, on their first
  Python (`--python P`: on P instead).
* `matrix` (or `test --full`): every release in full; also writes
  docs/compatibility.md. The fork suite's tests marked `full_run` (those
  that cost most and prove least: tests/conftest.py) run on the default
  release only (FULL_RUN_ARG), or with `--upstream V --full` on V.

A release's further Pythons (`python` in the manifest after the first: 3.13
where TF 2.21 has cp313 wheels) get the fork's smoke suite (SMOKE_FORK:
upstream's suites run on the first Python only), each in a venv of its own,
with the wheel built once per release: the default release's in `test`,
every release's in `matrix` and `test --full`, which run before each
release (the wheel is the same pure Python on each; what another Python
changes is the release's jaxlib and TensorFlow wheels, which change only
with the manifest).

The default release also runs NO_TF_PATHS in a venv without TensorFlow
(NO_TF: the wheel, jaxlib and flatbuffers, as a jax.export user has them),
where jax.export's transformations must work as they do with TensorFlow;
its FULL run then leaves NO_TF_ONLY_PATHS (the interpreter's own tests)
to that run.

Runs go JOBS at a time (`--jobs N`), longest first, at most one in full
mode; each one's output is printed whole when it ends (`run_all`).
"""

from __future__ import annotations

import dataclasses
import pathlib
import subprocess
import sys
import threading
import time
from typing import Callable, TextIO

from forklib import ForkError
from forklib import log
from forklib.manifest import Manifest
from forklib.manifest import Release
from forklib.project import Project
from forklib.project import cache_root
from forklib.sources import tree as tree_lib
from forklib.sources import wheel as wheel_lib
from forklib.testing import envs
from forklib.testing import upstream_tests

FULL = "full"
SMOKE = "smoke"
SMOKE_FORK = "smoke, fork suite"
NO_TF = "jax.export, no TensorFlow"
# What NO_TF runs: the StableHLO interpreter's and jax.export's tests, which
# need no TensorFlow (some check that TensorFlow is not imported), and the
# upstream-style test of the pull request that brings them.
NO_TF_PATHS = ("tests/export", "tests/stablehlo",
               "tests/upstream/export_call_transforms_test.py")
# What the FULL run leaves to the NO_TF run of the same release, where the
# plan has one: all of it (the interpreter's own tests, its conformance
# cases, JAX's back-compat data, the GPU and TPU calls, and jax.export's:
# about 12 minutes), whose code imports no TensorFlow (tests/test_layout.py,
# and tests/export checks it), so that TensorFlow beside it changes nothing
# they compute. `test --upstream V` (FULL alone) runs them.
NO_TF_ONLY_PATHS = NO_TF_PATHS
# The fork's smoke suite: the core features on every release, in ~2 minutes.
SMOKE_PATHS = ("tests/calltf/test_smoke.py",
               "tests/calltf/test_installed_fork.py",
               "tests/calltf/test_compat.py")
# In smoke mode, an upstream suite that ran more tests than this on stock
# upstream (its baseline) is left to full mode: upstream's shape_poly_test up
# to 0.6.2 runs ~1700 harness cases (3-8 minutes here); every other suite
# has under 200 and takes under 2 minutes (docs/maintainers.md, "CI"). A
# count, not a time: the stock runs' times depend on the machine's load.
SMOKE_SUITE_TESTS = 500
# How many of the fork suite's slowest test files a run names (its output),
# so that a run near CI's time says where the time went.
SLOWEST = 8
# Runs at a time (`test --jobs`): CI's machine has 2 cores, and one run
# leaves much of them idle (docs/maintainers.md, "CI").
JOBS = 2
# The fork suite's pytest option that runs its tests marked `full_run`
# (tests/conftest.py): `test --full` passes it to the default release's
# runs (FULL and NO_TF), or to those of the releases named by `--upstream`.
# Not to every release: those tests are what takes the default release's
# suite past CI's time; run on all eleven they would add hours to `matrix`
# and prove nothing the other releases' whole suites do not.
FULL_RUN_ARG = "--full-run"


@dataclasses.dataclass
class Row:
  """One release's result.

  Attributes:
    release: the release.
    mode: FULL or SMOKE.
    python: the venv's Python ("3.12.1"), or the wanted one if never made.
    status: "ok", or what failed first.
    fork: the fork suite's counts (passed, failed), or None if not run.
    upstream: upstream's counts (passed, failed, unexpected), or None.
    upstream_note: e.g. which test set was used.
    seconds: wall time for the release.
  """
  release: Release
  mode: str
  python: str
  status: str = "ok"
  fork: tuple[int, int] | None = None
  upstream: tuple[int, int, int] | None = None
  upstream_note: str = ""
  seconds: float = 0.0

  @property
  def ok(self) -> bool:
    return self.status == "ok"


def _counts(report: pathlib.Path) -> tuple[int, int]:
  outcomes, unfinished = upstream_tests.read_report(report)
  passed = sum(1 for o, _ in outcomes.values() if o in ("passed", "xfailed"))
  failed = sum(1 for o, _ in outcomes.values()
               if o in upstream_tests.FAILING) + (1 if unfinished else 0)
  return passed, failed


def _run_fork_suite(project: Project, release: Release,
                    venv: pathlib.Path, wheel: pathlib.Path, mode: str,
                    pytest_args: list[str], log_dir: pathlib.Path,
                    tests_dir: pathlib.Path | None, out: TextIO | None
                    ) -> tuple[int, tuple[int, int]]:
  """Runs the fork's own suite; returns pytest's exit code and counts."""
  report = log_dir / "fork-suite.jsonl"
  report.unlink(missing_ok=True)
  paths = {SMOKE: list(SMOKE_PATHS), NO_TF: list(NO_TF_PATHS)}.get(mode, [])
  rc = envs.run_pytest(project, release, venv, wheel, [
      "-p", "forklib.testing.pytest_plugin", "--jax-fork-report", str(report),
      "--jax-fork-expect-version", release.label, *paths, *pytest_args],
      upstream_tests=tests_dir, output=out)
  slowest = list(upstream_tests.report_seconds(report).items())[:SLOWEST]
  if slowest:
    print("the fork suite's slowest files: " + ", ".join(
        f"{file} {seconds:.0f} s" for file, seconds in slowest),
          file=out or sys.stdout, flush=True)
  return rc, _counts(report)


class Wheels:
  """The fork's wheel of each release, built once per run, one at a time.

  A build that fails is not tried again in the same run: each of the
  release's runs reports it.
  """

  def __init__(self, project: Project):
    self._project = project
    self._lock = threading.Lock()
    self._built: dict[str, pathlib.Path | ForkError] = {}

  def get(self, release: Release) -> pathlib.Path:
    """The release's wheel in `dist/`, built on first use.

    Raises:
      ForkError: the build failed (now or earlier in this run).
    """
    with self._lock:
      if release.label not in self._built:
        try:
          self._built[release.label] = wheel_lib.build(
              self._project, release, self._project.dist)
        except ForkError as e:
          self._built[release.label] = e
      built = self._built[release.label]
    if isinstance(built, ForkError):
      raise built
    return built


def log_dir_of(release: Release, mode: str = FULL) -> pathlib.Path:
  """Where a run of `release` on its `test_python` keeps its logs.

  NO_TF runs beside the release's other run on the same Python, so it
  keeps its own.
  """
  kind = "-no-tf" if mode == NO_TF else ""
  return (cache_root() / "logs"
          / f"test-{release.version}-py{release.test_python}{kind}")


def run_release(project: Project, release: Release, mode: str, *,
                pytest_args: list[str], tests_dir: pathlib.Path | None,
                wheels: Wheels | None = None, out: TextIO | None = None,
                full_run: bool = False, with_no_tf_run: bool = False) -> Row:
  """Builds, installs and tests one release; never raises a ForkError.

  Args:
    project: the repository.
    release: the release, its `test_python` the Python to test on.
    mode: FULL, SMOKE, SMOKE_FORK (no upstream suites) or NO_TF (no
      upstream suites, no TensorFlow).
    pytest_args: more arguments for the fork suite's pytest.
    tests_dir: upstream's tests by tag, or None.
    wheels: the run's wheels (default: build the release's).
    out: where the suites' output goes (default: stdout and stderr).
    full_run: in FULL and NO_TF mode, also the suite's tests marked
      `full_run` (FULL_RUN_ARG).
    with_no_tf_run: the release also has a NO_TF run, to which a FULL run
      leaves NO_TF_ONLY_PATHS.
  """
  pytest_args = _fork_suite_args(pytest_args, mode, full_run, with_no_tf_run)
  start = time.monotonic()
  row = Row(release=release, mode=mode, python=release.test_python)
  log_dir = log_dir_of(release, mode)
  log_dir.mkdir(parents=True, exist_ok=True)
  if mode in (SMOKE_FORK, NO_TF):
    tests_dir = None
    row.upstream_note = ("on the release's first Python only"
                         if mode == SMOKE_FORK else "they need TensorFlow")
  try:
    wheel = (wheels or Wheels(project)).get(release)
  except ForkError as e:
    row.status = "build fails: " + _first_line(str(e))
    print(f"build of jax {release.label} failed:\n{e}", file=out or sys.stderr,
          flush=True)
    row.seconds = time.monotonic() - start
    return row
  _test_wheel(project, release, mode, wheel, pytest_args, log_dir, tests_dir,
              row, out)
  row.seconds = time.monotonic() - start
  return row


def _fork_suite_args(pytest_args: list[str], mode: str, full_run: bool,
                     with_no_tf_run: bool) -> list[str]:
  """`pytest_args` with what `run_release`'s `full_run` and
  `with_no_tf_run` add for `mode`."""
  if full_run and mode in (FULL, NO_TF):
    pytest_args = [FULL_RUN_ARG, *pytest_args]
  if with_no_tf_run and mode == FULL:
    pytest_args = [*(f"--ignore={p}" for p in NO_TF_ONLY_PATHS),
                   *pytest_args]
  return pytest_args


def _test_wheel(project: Project, release: Release, mode: str,
                wheel: pathlib.Path, pytest_args: list[str],
                log_dir: pathlib.Path, tests_dir: pathlib.Path | None,
                row: Row, out: TextIO | None) -> None:
  """Installs `wheel` in a test venv and runs the suites of `mode` there.

  What fails is recorded in `row` (its status), never raised: the other
  runs go on.
  """
  try:
    with envs.test_env(project, release, wheel,
                       tensorflow=mode != NO_TF) as venv:
      python = envs.venv_python(venv)
      row.python = upstream_tests.versions_in(python)["python"]
      rc, row.fork = _run_fork_suite(project, release, venv, wheel,
                                     SMOKE if mode == SMOKE_FORK else mode,
                                     pytest_args, log_dir, tests_dir, out)
      if rc != 0:
        row.status = f"fork suite fails (pytest exit {rc})"
      if tests_dir is not None:
        _run_upstream(project, release, mode, python, tests_dir, log_dir,
                      row, out or sys.stdout)
  except ForkError as e:
    row.status = _first_line(str(e))
    print(e, file=out or sys.stderr, flush=True)  # the table has one line
  except subprocess.CalledProcessError as e:
    row.status = f"{' '.join(map(str, e.cmd))} failed (exit {e.returncode})"
  except OSError as e:  # a full disk, say: this run fails, the others go on
    row.status = (f"{e} ({envs.free_space(log_dir) / 2**30:.1f} GiB free "
                  f"on the disk of {log_dir})")


def _run_upstream(project: Project, release: Release, mode: str,
                  python: pathlib.Path, tests_dir: pathlib.Path,
                  log_dir: pathlib.Path, row: Row, out: TextIO) -> None:
  test_set = upstream_tests.find_set(tests_dir, release.version)
  row.upstream_note = "" if test_set.exact else f"tests of {test_set.name}"
  tree = upstream_tests.prepare(
      test_set, upstream_tests.test_patches(project.patches, release),
      upstream_tests.PYTEST_INI)
  known_path = project.root / upstream_tests.KNOWN_FAILURES
  baseline = upstream_tests.load_known(known_path).get(release.version)
  suites, left = upstream_tests.SUITES, []
  if mode == SMOKE and baseline is not None:
    big = {s: n for s in suites
           if (n := baseline.test_count(s)) and n > SMOKE_SUITE_TESTS}
    suites = tuple(s for s in suites if s not in big)
    left = [f"  {s.rsplit('/', 1)[1]}  NOT RUN in smoke mode: {n} tests on "
            f"stock upstream (over {SMOKE_SUITE_TESTS}); `test --upstream "
            f"{release.version}` and `matrix` run it" for s, n in big.items()]
  print(f"\nupstream's tests of jax {release.version}, from "
        f"{test_set.describe()}, against the installed {release.label}:",
        file=out, flush=True)
  results = upstream_tests.run_all(
      python, tree, log_dir / "upstream", expect_version=release.label,
      build_dir=project.root / "build", suites=suites)
  judgement = upstream_tests.judge(results, test_set, baseline)
  print(upstream_tests.report(results, judgement, known_path=known_path),
        file=out, flush=True)
  if left:
    print("\n".join(left), file=out, flush=True)
    row.upstream_note = "; ".join(
        filter(None, [row.upstream_note, f"{len(left)} large suite(s) left "
                      "to full mode"]))
  passed = sum(r.count("passed", "xfailed") for r in results)
  failed = sum(r.count(*upstream_tests.FAILING) for r in results)
  row.upstream = (passed, failed, len(judgement.unexpected))
  if not judgement.ok and row.ok:
    row.status = (f"{len(judgement.unexpected)} upstream test(s) fail that "
                  "pass on stock upstream")


def _first_line(text: str) -> str:
  return text.strip().splitlines()[0] if text.strip() else text


def on_python(release: Release, python: str) -> Release:
  """`release` with `python` first: the Python its venvs use.

  Raises:
    ForkError: `python` is not one of the release's Pythons.
  """
  if python not in release.python:
    raise ForkError(f"jax {release.version} is built and tested with Python "
                    f"{', '.join(release.python)} (patches/upstream.toml), "
                    f"not {python}")
  return dataclasses.replace(
      release, python=(python, *(p for p in release.python if p != python)))


def full_run_releases(manifest: Manifest, versions: list[str],
                      full: bool) -> frozenset[str]:
  """The versions whose runs include the tests marked `full_run`: with
  `full`, the releases named (`--upstream`), else the default one."""
  if not full:
    return frozenset()
  return (frozenset(manifest.get(v).version for v in versions)
          or frozenset({manifest.default().version}))


def plan(manifest: Manifest, versions: list[str], full: bool,
         python: str | None = None) -> list[tuple[Release, str]]:
  """Which releases run, on which Python, in which mode, newest first.

  Each entry's release has the Python to run on as its `test_python`.
  """
  if versions:
    return [(on_python(manifest.get(v), python) if python
             else manifest.get(v), FULL) for v in versions]
  default = manifest.default()
  runs = []
  for r in manifest.newest():
    if python:
      if python in r.python:
        runs.append((on_python(r, python), FULL if full or r is default
                     else SMOKE))
      continue
    runs.append((r, FULL if full or r is default else SMOKE))
    if r is default:
      runs.append((r, NO_TF))
    if full or r is default:
      runs += [(on_python(r, p), SMOKE_FORK) for p in r.python[1:]]
  return runs


def run(project: Project, versions: list[str], *, full: bool = False,
        python: str | None = None, pytest_args: list[str] = (),
        tests_dir: pathlib.Path | None = None,
        write_compatibility_page: bool = False, jobs: int = 1) -> int:
  """`test` and `matrix`: runs the `plan`; prints the table.

  Args:
    project: the repository.
    versions: the releases to test in full (default: all, as `plan` says).
    full: every release in full (with `versions`: those releases), and the
      fork suite's tests marked `full_run` (`full_run_releases`).
    python: the Python to test on instead of each release's first.
    pytest_args: more arguments for the fork suite's pytest.
    tests_dir: upstream's tests by tag, or None.
    write_compatibility_page: also write docs/compatibility.md (`matrix`).
    jobs: how many runs at a time (`run_all`).

  Returns:
    The exit status: 0 if every run passed, else 1.
  """
  start = time.monotonic()
  runs = plan(project.manifest(), versions, full, python)
  if tests_dir is not None and not tests_dir.is_dir():
    raise ForkError(f"--upstream-tests {tests_dir} is not a directory; it "
                    "should hold jax-v<version>.tar.gz files or checkouts "
                    "of upstream's repository (see docs/maintainers.md)")
  tree_lib.preflight(project, [r for r, _ in runs])
  rows = run_all(project, runs, pytest_args=list(pytest_args),
                 tests_dir=tests_dir, jobs=jobs,
                 full_run=full_run_releases(project.manifest(), versions,
                                            full))
  print(summary(rows, tests_dir), flush=True)
  print(f"wall time: {(time.monotonic() - start) / 60:.1f} min for "
        f"{len(rows)} run(s), {min(jobs, len(rows))} at a time", flush=True)
  if write_compatibility_page:
    path = project.root / "docs" / "compatibility.md"
    write_compatibility(path, rows, tests_dir, upstream_tests.today(),
                        upstream_tests.machine())
    print(f"wrote {path}")
  return 0 if all(r.ok for r in rows) else 1


def run_all(project: Project, runs: list[tuple[Release, str]], *,
            pytest_args: list[str], tests_dir: pathlib.Path | None,
            jobs: int = 1, full_run: frozenset[str] = frozenset()
            ) -> list[Row]:
  """Runs `runs` (`plan`'s), `jobs` at a time; their rows, in plan order.

  The runs of the versions in `full_run` include the fork suite's tests
  marked `full_run` (`full_run_releases`).

  One at a time, each run's output streams to the terminal. Several at a
  time, each run's output goes to `output.log` in its log directory and is
  printed whole when the run ends. Either way each wheel is built once, one
  build at a time; at most one run is in FULL mode at a time (full runs
  build wheels and run servers of their own in the repository), and runs
  start longest first (FULL, NO_TF, SMOKE, then SMOKE_FORK), so that the short
  ones fill in beside the long ones.
  """
  wheels = Wheels(project)
  no_tf = frozenset(r.version for r, m in runs if m == NO_TF)
  if jobs <= 1 or len(runs) <= 1:
    rows = []
    for release, mode in runs:
      log.step("test", f"jax {release.label} on Python "
               f"{release.test_python} ({mode})")
      rows.append(run_release(project, release, mode,
                              pytest_args=pytest_args, tests_dir=tests_dir,
                              wheels=wheels,
                              full_run=release.version in full_run,
                              with_no_tf_run=release.version in no_tf))
    return rows
  print_lock = threading.Lock()

  def one(release: Release, mode: str) -> Row:
    path = log_dir_of(release, mode) / "output.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    log.step("test", f"jax {release.label} on Python {release.test_python} "
             f"({mode}): started; its output goes to {path}")
    with open(path, "w", encoding="utf-8") as out:
      row = run_release(project, release, mode, pytest_args=pytest_args,
                        tests_dir=tests_dir, wheels=wheels, out=out,
                        full_run=release.version in full_run,
                        with_no_tf_run=release.version in no_tf)
    with print_lock:
      print(f"\n===== jax {release.label} on Python {row.python} ({mode}):"
            f" {row.status}, {row.seconds / 60:.1f} min; output of {path}:",
            flush=True)
      print(path.read_text(encoding="utf-8", errors="replace").rstrip(),
            flush=True)
    return row

  return _schedule(runs, one, jobs)


_START_ORDER = (FULL, NO_TF, SMOKE, SMOKE_FORK)


def _schedule(runs: list[tuple[Release, str]],
              one: Callable[[Release, str], Row], jobs: int) -> list[Row]:
  """`one(*run)` for each run, on `jobs` threads; the rows in plan order.

  Runs start longest first (`_START_ORDER`, then plan order), one FULL run
  at a time: a thread takes the first run it may start.
  """
  pending = sorted(range(len(runs)),
                   key=lambda i: (_START_ORDER.index(runs[i][1]), i))
  rows: dict[int, Row] = {}
  errors: list[BaseException] = []
  state = {"full": False}
  cond = threading.Condition()

  def worker() -> None:
    while True:
      with cond:
        while True:
          if not pending or errors:
            return
          i = next((i for i in pending
                    if runs[i][1] != FULL or not state["full"]), None)
          if i is not None:
            break
          cond.wait()
        pending.remove(i)
        full = runs[i][1] == FULL
        state["full"] |= full
      try:
        rows[i] = one(*runs[i])
      except BaseException as e:  # re-raised in the calling thread
        errors.append(e)
      finally:
        with cond:
          if full:
            state["full"] = False
          cond.notify_all()

  threads = [threading.Thread(target=worker, daemon=True)
             for _ in range(min(jobs, len(runs)))]
  for thread in threads:
    thread.start()
  try:
    for thread in threads:
      thread.join()
  except KeyboardInterrupt:
    with cond:
      pending.clear()
    raise
  if errors:
    raise errors[0]
  return [rows[i] for i in range(len(runs))]


def table(rows: list[Row]) -> list[list[str]]:
  """The result table: a header and one row per release."""
  out = [["release", "mode", "Python", "TensorFlow", "fork suite",
          "upstream's tests", "time", "result"]]
  for r in rows:
    fork = (f"{r.fork[0]} passed, {r.fork[1]} failed" if r.fork else "-")
    if r.upstream is None:
      upstream = "not run"
    else:
      upstream = (f"{r.upstream[0]} passed, {r.upstream[1]} failed "
                  f"({r.upstream[2]} beyond stock)")
      if r.upstream_note:
        upstream += f" [{r.upstream_note}]"
    out.append([r.release.version, r.mode, r.python,
                "-" if r.mode == NO_TF else r.release.test_tensorflow,
                fork, upstream,
                f"{r.seconds / 60:.1f} min", r.status])
  return out


def summary(rows: list[Row], tests_dir: pathlib.Path | None) -> str:
  """The closing lines of `test` and `matrix`."""
  lines = ["", "release matrix:", log.table(table(rows))]
  if tests_dir is None:
    lines += ["", "NOTE: upstream's own tests were NOT run: pass "
              "--upstream-tests DIR (e.g. ../shared/upstream-tests; see "
              "docs/maintainers.md). This run does not show that the fork "
              "behaves like upstream."]
  passed = sum(1 for r in rows if r.ok)
  lines += ["", f"releases: {passed} passed, {len(rows) - passed} failed"]
  return "\n".join(lines)


# --- docs/compatibility.md ---------------------------------------------------

_NOTES_MARK = "<!-- Hand-written below this line; `matrix` keeps it. -->"
_DEFAULT_NOTES = f"""{_NOTES_MARK}

## Notes per release

(What does not work on a release, the exact error and what was tried.)
"""


def write_compatibility(path: pathlib.Path, rows: list[Row],
                        tests_dir: pathlib.Path | None, date: str,
                        machine: str) -> None:
  """Writes the generated table, keeping the hand-written notes."""
  notes = _DEFAULT_NOTES
  if path.exists():
    text = path.read_text(encoding="utf-8")
    if _NOTES_MARK in text:
      notes = text[text.index(_NOTES_MARK):]
  cells = table(rows)
  md = ["| " + " | ".join(cells[0]) + " |",
        "|" + "---|" * len(cells[0])]
  md += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
         for row in cells[1:]]
  upstream = ("upstream's own tests at the release's tag, judged\n"
              "against stock upstream's failures in\n"
              "`tests/upstream_known_failures.toml`" if tests_dir
              else "NOT upstream's own tests (no --upstream-tests)")
  head = f"""# Compatibility

Every release in `patches/upstream.toml`, built, installed into its own venv
(its Python, jaxlib and tensorflow-cpu) and tested: the fork's suite and
{upstream}. Generated by
`python3 build/fork.py matrix --upstream-tests DIR` on {date}
({machine}); do not edit the table by hand.

{chr(10).join(md)}

"result" is `ok`, or the first thing that failed: `build fails` means the
patch queue does not apply to that release yet (`python3 build/fork.py
check`).

"""
  path.write_text(head + notes, encoding="utf-8")
