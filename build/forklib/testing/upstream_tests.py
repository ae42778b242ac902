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
"""Upstream JAX's own tests, run against an installed jax wheel.

Upstream's sdist carries no tests, so they come from a folder
(`--upstream-tests DIR`) of `jax-v<version>.tar.gz` tarballs or
`jax-v<version>/` checkouts laid out like upstream's repository, one per
release tag. For a release with no set of its own, the nearest earlier tag's
set is used, and the output says so.

The set is copied into the cache (only the test files: never a `jax/`
package a test could import instead of the installed one), the test-file
hunks of the release's patch queue are applied to it (a patch that changes
upstream's behaviour on purpose also changes upstream's test for it), and
the suites run in one pytest process in the test venv (`run_suites`) with
`forklib.testing.pytest_plugin`, which finds `jax.experimental.jax2tf.tests`
in that copy and checks that `jax` is the installed wheel.

Failures are judged against stock upstream: `tests/upstream_known_failures.
toml` lists, per release, the tests that fail with upstream's own wheel on
this machine (written by `python3 build/fork.py baseline`). A failure not
listed there fails the run; a listed test that passes is reported.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import itertools
import json
import os
import pathlib
import platform
import re
import subprocess
import tarfile
import tempfile
import time

from forklib import ForkError
from forklib import load_toml
from forklib import log
from forklib.manifest import Release
from forklib.manifest import version_tuple
from forklib.project import cache_root
from forklib.sources import patchq

# The suites the test command runs, as paths in upstream's repository.
SUITES = (
    "jax/experimental/jax2tf/tests/call_tf_test.py",
    "jax/experimental/jax2tf/tests/savedmodel_test.py",
    "jax/experimental/jax2tf/tests/back_compat_tf_test.py",
    "jax/experimental/jax2tf/tests/jax2tf_test.py",
    "jax/experimental/jax2tf/tests/shape_poly_test.py",
    "tests/version_test.py",
    "tests/config_test.py",
)
# Stock upstream's failures, per release (`baseline` writes it).
KNOWN_FAILURES = pathlib.Path("tests") / "upstream_known_failures.toml"
_TESTS_DIR = "jax/experimental/jax2tf/tests/"
_TAG_RE = re.compile(r"^jax-v(?P<version>[0-9]+(?:\.[0-9]+)*)(?:\.tar\.gz)?$")
# Where a pytest process of the suites is killed (the test it is in is an
# error, and pytest starts again without it): far above the slowest
# measured (docs/maintainers.md).
SUITE_TIMEOUT = 3600
_MAX_CRASHES = 5
FAILING = ("failed", "error")


@dataclasses.dataclass(frozen=True)
class TestSet:
  """Upstream's tests at one tag.

  Attributes:
    name: the tag's folder name, e.g. "jax-v0.10.2".
    version: the tag's release, e.g. "0.10.2".
    path: the tarball or the checkout.
    release: the release under test; differs from `version` when no set of
      its own was found.
  """
  name: str
  version: str
  path: pathlib.Path
  release: str

  @property
  def exact(self) -> bool:
    return self.version == self.release

  def describe(self) -> str:
    where = f"{self.path.name} in {self.path.parent}"
    if self.exact:
      return where
    return (f"{where}: NOTE no tests tagged jax-v{self.release} there, so "
            f"the nearest earlier tag's, {self.version}, are used")


def find_set(directory: pathlib.Path, version: str) -> TestSet:
  """The test set for release `version` in `directory`.

  Raises:
    ForkError: `directory` is missing or holds no set at or before `version`.
  """
  if not directory.is_dir():
    raise ForkError(f"--upstream-tests {directory} is not a directory; it "
                    "should hold jax-v<version>.tar.gz files or jax-v<version>"
                    "/ checkouts of upstream's repository (see docs/"
                    "maintainers.md)")
  found: dict[str, pathlib.Path] = {}
  for entry in sorted(directory.iterdir()):
    m = _TAG_RE.match(entry.name)
    if m and (entry.is_dir() or entry.name.endswith(".tar.gz")):
      found.setdefault(m.group("version"), entry)
  earlier = [v for v in found if version_tuple(v) <= version_tuple(version)]
  if not earlier:
    tags = ", ".join(sorted(found, key=version_tuple)) or "none"
    raise ForkError(
        f"{directory} holds no upstream tests for jax {version} or an earlier "
        f"release (found: {tags}). Add jax-v{version}.tar.gz (`git archive` "
        f"of upstream's tag) or a checkout of the tag named jax-v{version}.")
  best = max(earlier, key=version_tuple)
  path = found[best]
  name = path.name.removesuffix(".tar.gz")
  return TestSet(name=name, version=best, path=path, release=version)


def _wanted(rel: str) -> bool:
  return rel.startswith(_TESTS_DIR) or rel in SUITES


def source_files(test_set: TestSet) -> dict[str, bytes]:
  """The test files of the set: {path in upstream's repo: content}."""
  files: dict[str, bytes] = {}
  if test_set.path.is_dir():
    root = test_set.path
    for rel in [*(p.relative_to(root).as_posix()
                  for p in (root / _TESTS_DIR).rglob("*") if p.is_file()),
                *SUITES]:
      if _wanted(rel) and (root / rel).is_file() and "__pycache__" not in rel:
        files[rel] = (root / rel).read_bytes()
    return files
  prefix = test_set.name + "/"
  with tarfile.open(test_set.path) as tar:
    for member in tar.getmembers():
      if not member.isfile() or not member.name.startswith(prefix):
        continue
      rel = member.name[len(prefix):]
      if _wanted(rel):
        files[rel] = tar.extractfile(member).read()
  return files


def lay_files(files: dict[str, bytes], tree: pathlib.Path) -> None:
  """Writes `files` ({path in upstream's repository: content}) into `tree`."""
  for rel, data in files.items():
    (tree / rel).parent.mkdir(parents=True, exist_ok=True)
    (tree / rel).write_bytes(data)


def test_patches(patches_dir: pathlib.Path,
                 release: Release) -> list[patchq.Patch]:
  """The parts of the release's queue that change upstream's test files."""
  out = []
  for patch in patchq.load_queue(patches_dir, release.version):
    files = [fp for fp in patch.files if patchq.is_test_path(fp.path)]
    if files:
      out.append(dataclasses.replace(patch, files=files))
  return out


def prepare(test_set: TestSet, patches: list[patchq.Patch],
            pytest_config: str, cache: pathlib.Path | None = None
            ) -> pathlib.Path:
  """Copies the set into the cache and applies `patches` to it.

  Args:
    test_set: the tests to run.
    patches: the test-file parts of the queue (`test_patches`), or none for
      stock upstream.
    pytest_config: the text of the pytest.ini written at the tree's root.
    cache: the fork's cache (default: `project.cache_root()`).

  Returns:
    The prepared tree, laid out like upstream's repository.

  Raises:
    ForkError: the set lacks a suite, or a patch does not apply to it.
  """
  files = source_files(test_set)
  missing = [s for s in SUITES if s not in files]
  if missing:
    raise ForkError(f"{test_set.path} lacks {', '.join(missing)}; it should "
                    "be laid out like upstream's repository at the tag")
  h = hashlib.sha256(pytest_config.encode())
  for rel in sorted(files):
    h.update(rel.encode() + b"\0" + files[rel])
  for patch in patches:
    h.update(patch.name.encode() + b"\0" + patch.path.read_bytes())
  cache = cache or cache_root()
  out = cache / "upstream-tests" / f"{test_set.name}-{h.hexdigest()[:16]}"
  if out.exists():
    return out
  out.parent.mkdir(parents=True, exist_ok=True)
  with tempfile.TemporaryDirectory(prefix=f".{out.name}.partial-",
                                   dir=out.parent) as tmp:
    tree = pathlib.Path(tmp) / "tree"
    lay_files(files, tree)
    for patch in patches:
      try:
        touched = patchq.apply(patch, tree, tests=True)
      except patchq.PatchError as e:
        raise ForkError(f"the test-file part of {patch.name} does not apply "
                        f"to upstream's tests {test_set.name} "
                        f"({test_set.path}): {e}") from None
      log.step("upstream-tests", f"{patch.name}: ok ({', '.join(touched)})")
    (tree / "pytest.ini").write_text(pytest_config, encoding="utf-8")
    try:
      os.rename(tree, out)
    except OSError:
      if not out.exists():
        raise
  return out


# Upstream runs these tests with pytest and --import-mode=importlib (its
# pyproject.toml). Warnings stay warnings: upstream's own "error" filter
# depends on the exact TF/protobuf/numpy of its CI, and would fail stock and
# fork alike on unrelated deprecations, hiding real differences.
PYTEST_INI = """\
# Written by the JAX call_tf fork's tool (forklib/testing/upstream_tests.py).
[pytest]
addopts = --import-mode=importlib
"""


@dataclasses.dataclass
class SuiteResult:
  """One suite's run.

  Attributes:
    suite: the suite's path in upstream's repository.
    outcomes: node id -> (outcome, first line of the error).
    summary: what befell the suite (a crash, a timeout), then its counts in
      pytest's words, with the seconds of its tests.
    seconds: its tests' seconds (setup, call and teardown; the process's
      imports are no suite's).
    log: pytest's full output (of the process that ran it, shared).
  """
  suite: str
  outcomes: dict[str, tuple[str, str]]
  summary: list[str]
  seconds: float
  log: pathlib.Path

  @property
  def name(self) -> str:
    return self.suite.rsplit("/", 1)[1]

  def count(self, *outcomes: str) -> int:
    return sum(1 for o, _ in self.outcomes.values() if o in outcomes)

  @property
  def failures(self) -> dict[str, str]:
    return {n: m for n, (o, m) in self.outcomes.items() if o in FAILING}


def clean_env(extra: dict[str, str]) -> dict[str, str]:
  """The environment without JAX/XLA/TF settings that would change results."""
  env = {k: v for k, v in os.environ.items()
         if not k.startswith(("JAX_", "XLA_", "TF_", "PYTEST_"))
         and k not in ("PYTHONPATH", "PYTHONSTARTUP")}
  env.update(extra)
  return env


_SUMMARY_RE = re.compile(
    r"^=*\s*(?:no tests ran|\d+ (?:passed|failed|skipped|errors?|deselected|"
    r"xfailed|xpassed|warnings?))\b.*\bin [0-9.]+s\b.*$")


def _summary_line(output: str) -> str:
  for line in reversed(output.splitlines()):
    if _SUMMARY_RE.match(line.strip()):
      return line.strip().strip("= ").strip()
  return ""


def _report_records(path: pathlib.Path) -> tuple[list[dict], bool]:
  """The whole records of the plugin's report, in order, and whether a
  line that is not whole (the process died, or the disk filled, while it
  was written) ended it."""
  records = []
  if path.exists():
    for line in path.read_text(encoding="utf-8",
                               errors="replace").splitlines():
      try:
        records.append(json.loads(line))
      except json.JSONDecodeError:
        return records, True
  return records, False


def report_seconds(path: pathlib.Path) -> dict[str, float]:
  """Seconds per test file of the plugin's report (setup, call and
  teardown of its tests: a session fixture's time goes to the test that
  first needs it); the slowest first."""
  seconds: dict[str, float] = {}
  for record in _report_records(path)[0]:
    if "nodeid" in record and "seconds" in record:
      file = record["nodeid"].split("::", 1)[0]
      seconds[file] = seconds.get(file, 0.) + record["seconds"]
  return dict(sorted(seconds.items(), key=lambda kv: -kv[1]))


def read_report(path: pathlib.Path) -> tuple[dict[str, tuple[str, str]],
                                              str | None]:
  """Outcomes from the plugin's report, and the test that never finished.

  A line that is not whole (the process died, or the disk filled, while it
  was written) ends the report: the test it started or finished is the one
  that never finished.
  """
  outcomes: dict[str, tuple[str, str]] = {}
  started = None
  records, torn = _report_records(path)
  for record in records:
    if "start" in record:
      started = record["start"]
    else:
      outcomes[record["nodeid"]] = (record["outcome"], record["message"])
      if record["nodeid"] == started:
        started = None
  if torn:
    started = started or f"(a test after the last whole line of {path})"
  return outcomes, started


def run_suites(python: pathlib.Path, tree: pathlib.Path,
               suites: tuple[str, ...], log_dir: pathlib.Path, *,
               expect_version: str, build_dir: pathlib.Path,
               timeout: int = SUITE_TIMEOUT) -> list[SuiteResult]:
  """Runs `suites` of `tree` in one pytest process with the venv's `python`.

  One process, as upstream's own CI runs a folder of tests with pytest: a
  process per suite imported JAX and TensorFlow again, about a third of a
  smoke run's upstream time. A file that raises at import is an error of
  its suite and the others run (`--continue-on-collection-errors`); a
  process that dies while collecting (an abort at import) names no test,
  so each suite then runs in a process of its own. A test that kills the
  process (an abort in TF, say) or runs past `timeout` is recorded as an
  error, and pytest starts again without the tests already run; a suite
  that kills it more than `_MAX_CRASHES` times is an error and left out.

  Args:
    python: the test venv's interpreter.
    tree: the prepared tests (`prepare`).
    suites: paths in `SUITES`.
    log_dir: where pytest's output and the reports go.
    expect_version: the `jax.__version__` the venv must have.
    build_dir: the repository's build/ (for `forklib.testing.pytest_plugin`).
    timeout: seconds before a pytest process is killed.

  Returns:
    A result per suite, in the order of `suites`.
  """
  start = time.monotonic()
  run = _Attempts(python, tree, suites, _fresh_logs(log_dir),
                  expect_version=expect_version, build_dir=build_dir,
                  timeout=timeout)
  run.run()
  log.step("upstream-tests", f"{len(suites)} suite(s) in one process: "
           + "; ".join(run.summaries or ["no summary"])
           + f" ({time.monotonic() - start:.0f}s)")
  if run.died_collecting and len(suites) > 1:
    log.step("upstream-tests", "the process died while collecting: each "
             "suite in a process of its own")
    return [result for suite in suites
            for result in run_suites(
                python, tree, (suite,),
                log_dir / suite.rsplit("/", 1)[1].removesuffix(".py"),
                expect_version=expect_version, build_dir=build_dir,
                timeout=timeout)]
  return _by_suite(_without_paths(run.outcomes, tree, python), run.seconds,
                   run.notes, log_dir / "suites.log")


class _Attempts:
  """pytest on some suites, started again after each crash (`run_suites`).

  Attributes:
    outcomes: node id -> (outcome, first line of the error), of every
      attempt, the tests that never finished included.
    seconds: node id -> seconds (setup, call and teardown).
    notes: suite -> what befell it (a crash, a timeout, giving up).
    summaries: pytest's summary line of each attempt that printed one.
    died_collecting: the last attempt died outside any test, before its
      summary.
  """

  def __init__(self, python: pathlib.Path, tree: pathlib.Path,
               suites: tuple[str, ...], log_path: pathlib.Path, *,
               expect_version: str, build_dir: pathlib.Path, timeout: int):
    self._python, self._tree, self._log_path = python, tree, log_path
    self._expect_version, self._timeout = expect_version, timeout
    self._env = clean_env({"PYTHONPATH": str(build_dir),
                           "TF_CPP_MIN_LOG_LEVEL": "2"})
    self._running = list(suites)
    self._crashes = {suite: 0 for suite in suites}
    self.outcomes: dict[str, tuple[str, str]] = {}
    self.seconds: dict[str, float] = {}
    self.notes: dict[str, list[str]] = {suite: [] for suite in suites}
    self.summaries: list[str] = []
    self.died_collecting = False

  def run(self) -> None:
    exclude = self._log_path.with_suffix(".exclude")
    for attempt in itertools.count():
      # A report per attempt: a line torn by a death ends only its own.
      report = self._log_path.with_suffix(f".{attempt}.jsonl")
      cmd = _suites_command(self._python, self._tree, tuple(self._running),
                            self._expect_version, report,
                            exclude if attempt else None)
      rc = _run_logged(cmd, self._tree, self._env, self._log_path,
                       self._timeout)
      output = self._log_path.read_text(encoding="utf-8", errors="replace")
      summary = _summary_line(output.rsplit("$ ", 1)[-1])
      got, unfinished = read_report(report)
      self.outcomes.update(got)
      self.seconds.update(_seconds_by_test(report))
      if summary:
        self.summaries.append(summary)
      if not self._crashed(rc, summary, unfinished):
        return
      exclude.write_text("\n".join(self.outcomes) + "\n", encoding="utf-8")

  def _crashed(self, rc: int | None, summary: str,
               unfinished: str | None) -> bool:
    """Records how an attempt ended; whether to start again."""
    if rc is not None and (unfinished is None or rc in (0, 1)):
      if rc not in (0, 1, 5) and not summary:
        self.died_collecting = rc not in (2, 3, 4)  # pytest's own errors
        self._fail(self._running, f"pytest exited with {rc}",
                   f"; see {self._log_path}")
      return False
    if unfinished is None:  # timed out outside any test
      self._fail(self._running, f"timed out after {self._timeout}s")
      return False
    why = (f"timed out after {self._timeout}s" if rc is None else
           "the test process died ("
           + (f"killed by signal {-rc}" if rc < 0 else f"exit {rc}") + ")")
    self.outcomes[unfinished] = ("error", why)
    for suite in _owners(unfinished, tuple(self._running)):
      self._crashes[suite] += 1
      self.notes[suite].append(f"{why} in {unfinished}; going on without it")
      if self._crashes[suite] > _MAX_CRASHES:
        self._running.remove(suite)
        self._fail([suite], f"gave up after {self._crashes[suite]} "
                   "crashes: the rest of it did not run")
    return bool(self._running)

  def _fail(self, suites: list[str], why: str, where: str = "") -> None:
    for suite in suites:
      self.notes[suite].append(why + where)
      self.outcomes[f"{suite}::<pytest>"] = ("error", why)


def _by_suite(outcomes: dict[str, tuple[str, str]],
              seconds: dict[str, float], notes: dict[str, list[str]],
              log_path: pathlib.Path) -> list[SuiteResult]:
  """A process's outcomes as a result per suite (`notes`' keys, in order).

  An outcome of no suite's file (a torn report line's, a collection error
  of no file) goes to the first suite; a suite with no outcome at all is
  an error: nothing fails unseen.
  """
  suites = tuple(notes)
  mine: dict[str, dict[str, tuple[str, str]]] = {s: {} for s in suites}
  for nodeid, outcome in outcomes.items():
    mine[_owners(nodeid, suites)[0]][nodeid] = outcome
  results = []
  for suite in suites:
    if not mine[suite]:
      mine[suite][f"{suite}::<pytest>"] = ("error", "no test of it ran; see "
                                           f"{log_path}")
    took = sum(seconds.get(n, 0.) for n in mine[suite])
    results.append(SuiteResult(
        suite=suite, outcomes=mine[suite],
        summary=[*notes[suite], _counts_summary(mine[suite], took)],
        seconds=took, log=log_path))
  return results


def _owners(nodeid: str, suites: tuple[str, ...]) -> list[str]:
  """The suites a test belongs to: the one whose file it is in, or every
  suite when the test is not known (a torn report line)."""
  owners = [s for s in suites if nodeid == s or nodeid.startswith(s + "::")]
  return owners or list(suites)


def _seconds_by_test(report: pathlib.Path) -> dict[str, float]:
  seconds: dict[str, float] = {}
  for record in _report_records(report)[0]:
    if "nodeid" in record and "seconds" in record:
      seconds[record["nodeid"]] = (seconds.get(record["nodeid"], 0.)
                                   + record["seconds"])
  return seconds


# pytest's order of the counts in its summary line.
_COUNTED = (("failed", "failed"), ("passed", "passed"),
            ("skipped", "skipped"), ("xfailed", "xfailed"),
            ("xpassed", "xpassed"), ("error", "errors"))


def _counts_summary(outcomes: dict[str, tuple[str, str]],
                    seconds: float) -> str:
  """A suite's counts in pytest's words ("1 failed, 145 passed, 17 skipped
  in 58.14s"): what `Baseline.test_count` and `Baseline.seconds` read."""
  counts = [f"{n} {word if n != 1 or word != 'errors' else 'error'}"
            for outcome, word in _COUNTED
            if (n := sum(1 for o, _ in outcomes.values() if o == outcome))]
  return f"{', '.join(counts) or 'no tests ran'} in {seconds:.2f}s"


def _fresh_logs(log_dir: pathlib.Path) -> pathlib.Path:
  """The log of a run of suites in `log_dir` (`suites.log`; its reports and
  exclusions beside it), the files of an earlier run removed."""
  log_dir.mkdir(parents=True, exist_ok=True)
  for p in log_dir.glob("suites.*"):
    if p.is_file():
      p.unlink()
  return log_dir / "suites.log"


def _suites_command(python: pathlib.Path, tree: pathlib.Path,
                    suites: tuple[str, ...], expect_version: str,
                    report: pathlib.Path, exclude: pathlib.Path | None
                    ) -> list[str]:
  """The pytest command of one attempt at `suites` (`run_suites`)."""
  # -P: the working directory is not put on sys.path.
  cmd = [str(python), "-P", "-m", "pytest",
         "-p", "forklib.testing.pytest_plugin",
         "-q", "-p", "no:cacheprovider", "--rootdir", str(tree),
         "--continue-on-collection-errors",
         "--jax-fork-upstream-tree", str(tree),
         "--jax-fork-expect-version", expect_version,
         "--jax-fork-report", str(report), *suites]
  if exclude is not None:
    cmd += ["--jax-fork-exclude", str(exclude)]
  return cmd


def _run_logged(cmd: list[str], tree: pathlib.Path, env: dict[str, str],
                log_path: pathlib.Path, timeout: int) -> int | None:
  """Runs `cmd` in `tree`, its output appended to `log_path` after the
  command; its exit status, None if it ran past `timeout` seconds."""
  with open(log_path, "a", encoding="utf-8") as out:
    out.write("$ " + " ".join(cmd) + "\n")
    out.flush()
    try:
      return subprocess.run(cmd, cwd=tree, env=env, stdout=out,
                            stderr=subprocess.STDOUT,
                            timeout=timeout).returncode
    except subprocess.TimeoutExpired:
      return None


def _without_paths(outcomes: dict[str, tuple[str, str]], tree: pathlib.Path,
                   python: pathlib.Path) -> dict[str, tuple[str, str]]:
  """`outcomes` with the paths of this machine in their messages replaced:
  they say nothing in the recorded evidence."""
  venv = str(python.parent.parent)
  return {n: (o, m.replace(str(tree), "<tests>").replace(venv, "<venv>"))
          for n, (o, m) in outcomes.items()}


def versions_in(python: pathlib.Path) -> dict[str, str]:
  """The Python and key package versions installed in a venv."""
  code = (
      "import importlib.metadata as m, json, platform\n"
      "out = {'python': platform.python_version()}\n"
      "for d in ('jax', 'jaxlib', 'tensorflow-cpu', 'numpy', 'ml_dtypes'):\n"
      "  try: out[d] = m.version(d)\n"
      "  except m.PackageNotFoundError: pass\n"
      "print(json.dumps(out))\n")
  proc = subprocess.run([str(python), "-c", code], capture_output=True,
                        text=True, check=True)
  return json.loads(proc.stdout)


def machine() -> str:
  return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} "
          "cores, CPU only")


# --- the stock baseline -----------------------------------------------------


@dataclasses.dataclass
class Baseline:
  """What fails on stock upstream for one release (one [[release]] entry)."""
  version: str
  tests: str
  date: str
  versions: dict[str, str]
  machine: str
  call_tf_check: str
  suites: dict[str, str]
  failures: dict[str, tuple[str, str]]  # node id -> (outcome, message)

  def seconds(self, suite: str) -> float | None:
    """The stock run's time of `suite` (a path in SUITES), from its summary."""
    m = re.search(r" in ([0-9.]+)s\b", self.suites.get(
        suite.rsplit("/", 1)[1], ""))
    return float(m.group(1)) if m else None

  def test_count(self, suite: str) -> int:
    """How many tests the stock run of `suite` ran, from its summary."""
    return sum(int(n) for n in re.findall(
        r"\b(\d+) (?:passed|failed|skipped|errors?|xfailed|xpassed)\b",
        self.suites.get(suite.rsplit("/", 1)[1], "")))


def load_known(path: pathlib.Path) -> dict[str, Baseline]:
  """The known stock failures, by release; {} if the file does not exist."""
  if not path.exists():
    return {}
  data = load_toml(path)
  out = {}
  for entry in data.get("release", []):
    try:
      out[entry["version"]] = Baseline(
          version=entry["version"], tests=entry["tests"], date=entry["date"],
          versions=dict(entry["versions"]), machine=entry["machine"],
          call_tf_check=entry["call_tf_check"],
          suites=dict(entry["suites"]),
          failures={f["test"]: (f["outcome"], f["error"])
                    for f in entry.get("failure", [])})
    except KeyError as e:
      raise ForkError(f"{path}: the entry for {entry.get('version')} lacks "
                      f"{e}; regenerate it with `python3 build/fork.py "
                      "baseline`") from None
  return out


def _toml_str(s: str) -> str:
  return json.dumps(s, ensure_ascii=False)


_KNOWN_HEADER = """\
# Upstream tests that fail on *stock* upstream JAX, per release: the wheel
# from the registry, with the same jaxlib, tensorflow-cpu and Python as the
# fork's test venv, on the same machine. The test command fails on any
# failure of the fork's wheel not listed here for its release, and reports a
# listed test that passes.
#
# Written by `python3 build/fork.py baseline VERSION --upstream-tests DIR`;
# rerun it to refresh an entry (it replaces that release's entry only).
# `call_tf_check` is stock `jax.jit(call_tf(...))` run in that venv: the
# evidence that these pins work together.
"""


def write_known(path: pathlib.Path, baselines: dict[str, Baseline]) -> None:
  """Writes all baselines to `path`, newest release first."""
  out = [_KNOWN_HEADER]
  for version in sorted(baselines, key=version_tuple, reverse=True):
    b = baselines[version]
    out.append("\n[[release]]\n")
    out.append(f"version = {_toml_str(b.version)}\n")
    out.append(f"tests = {_toml_str(b.tests)}\n")
    out.append(f"date = {_toml_str(b.date)}\n")
    out.append(f"machine = {_toml_str(b.machine)}\n")
    out.append("versions = { " + ", ".join(
        f"{_toml_key(k)} = {_toml_str(v)}" for k, v in b.versions.items())
               + " }\n")
    out.append(f"call_tf_check = {_toml_str(b.call_tf_check)}\n")
    out.append("suites = { " + ", ".join(
        f"{_toml_key(k)} = {_toml_str(v)}" for k, v in b.suites.items())
               + " }\n")
    for test in sorted(b.failures):
      outcome, message = b.failures[test]
      out.append("\n[[release.failure]]\n")
      out.append(f"test = {_toml_str(test)}\n")
      out.append(f"outcome = {_toml_str(outcome)}\n")
      out.append(f"error = {_toml_str(message)}\n")
  tmp = path.with_name(f".{path.name}.tmp")
  tmp.write_text("".join(out), encoding="utf-8")
  os.replace(tmp, path)


def _toml_key(key: str) -> str:
  return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_str(key)


def today() -> str:
  return datetime.date.today().isoformat()


# --- judging a run ------------------------------------------------------------


@dataclasses.dataclass
class Judgement:
  """A run of upstream's tests, compared with stock upstream."""
  unexpected: dict[str, str]  # fails here, not on stock
  fixed: list[str]  # fails on stock, passes here
  baseline: Baseline | None
  note: str = ""

  @property
  def ok(self) -> bool:
    return not self.unexpected


def judge(results: list[SuiteResult], test_set: TestSet,
          baseline: Baseline | None) -> Judgement:
  """Compares a run's failures with the stock baseline of its release."""
  failures = {n: m for r in results for n, m in r.failures.items()}
  note = ""
  if baseline is None:
    note = (f"no stock baseline for jax {test_set.release}: every failure "
            "counts. Record one with `python3 build/fork.py baseline "
            f"{test_set.release} --upstream-tests DIR`.")
    known: dict[str, tuple[str, str]] = {}
  elif baseline.tests != test_set.name:
    note = (f"the stock baseline of jax {test_set.release} was run with "
            f"{baseline.tests}, this run with {test_set.name}: every failure "
            "counts. Rerun `python3 build/fork.py baseline "
            f"{test_set.release}`.")
    known = {}
  else:
    known = baseline.failures
  ran = {n for r in results for n in r.outcomes}
  fixed = sorted(n for n in known if n in ran and n not in failures)
  unexpected = {n: m for n, m in failures.items() if n not in known}
  return Judgement(unexpected=unexpected, fixed=fixed, baseline=baseline,
                   note=note)


def report(results: list[SuiteResult], judgement: Judgement | None,
           *, known_path: pathlib.Path | None = None) -> str:
  """The text the test command prints for one release's upstream run."""
  width = max(len(r.name) for r in results)
  logs = list(dict.fromkeys(r.log for r in results))
  lines = []
  for r in results:
    for i, summary in enumerate(r.summary or ["(no summary line)"]):
      label = r.name if i == 0 else ""
      lines.append(f"  {label:<{width}}  {summary}")
    if len(logs) > 1:
      lines.append(f"  {'':<{width}}  ({r.seconds:.0f}s; log: {r.log})")
  if len(logs) == 1:
    lines.append(f"  {'':<{width}}  (log: {logs[0]})")
  if judgement is None:
    return "\n".join(lines)
  if judgement.note:
    lines.append(f"  NOTE: {judgement.note}")
  where = f" ({known_path})" if known_path else ""
  if judgement.unexpected:
    lines.append(f"  {len(judgement.unexpected)} failure(s) that stock "
                 f"upstream does not have{where}:")
    lines += [f"    FAIL {n}: {m}" for n, m in
              sorted(judgement.unexpected.items())]
  else:
    lines.append("  no failure beyond stock upstream's"
                 + (f" ({len(judgement.baseline.failures)} known)"
                    if judgement.baseline else ""))
  if judgement.fixed:
    lines.append(f"  {len(judgement.fixed)} test(s) that fail on stock "
                 f"upstream passed here; update{where}:")
    lines += [f"    PASSES NOW {n}" for n in judgement.fixed]
  return "\n".join(lines)


def run_all(python: pathlib.Path, tree: pathlib.Path, log_dir: pathlib.Path,
            *, expect_version: str, build_dir: pathlib.Path,
            suites: tuple[str, ...] = SUITES) -> list[SuiteResult]:
  """Runs `suites` in one pytest process (`run_suites`); prints each
  suite's summary when the process ends."""
  log.step("upstream-tests", f"{', '.join(s.rsplit('/', 1)[1] for s in suites)}"
           f" against jax {expect_version}")
  results = run_suites(python, tree, suites, log_dir,
                       expect_version=expect_version, build_dir=build_dir)
  for result in results:
    log.step("upstream-tests", f"{result.name}: "
             + "; ".join(result.summary or ["no summary"]))
  return results
