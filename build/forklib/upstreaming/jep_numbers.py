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
"""The design proposal's numbers, computed from this tree.

The proposal (`docs/jep/stablehlo-interpreter.md`) holds tables that this
module renders, each found by its header line, and each followed by a
caption paragraph (`*...*`):

* `cost`: per part of the proposal, its modules and lines (from the
  staging plan's pull requests: their overlay modules and the lines their
  patches add), and how many of its modules import TensorFlow;
* `tests`: per part, its test files, lines and test functions, and the run
  time of those tests as measured (`--measure-tests`, recorded in
  `benchmarks/results/jep/test_times.json`);
* `speed-cpu`, `speed-tpu`: `Exported.call` batched by the interpreter and
  by the loop rule against native JAX, from
  `benchmarks/results/exported_call/<platform>.json`
  (`benchmarks/exported_call.py`);
* `derivatives`: where a `custom_jvp` or `stop_gradient` was inlined, JAX's
  derivative of the function, of its interpreted module, and forward mode
  from the serialized VJP (from the same run);
* `coverage`: JAX's own back-compat artifacts the interpreter expresses, per
  platform, as the implementation's test writes them into
  `docs/stablehlo.md` (`python -m tests.stablehlo.backcompat --write`).

Lines and tests are recomputed from the tree, measurements read from their
files: `stage` refuses a proposal whose tables differ from the rendering
(`check`); a measurement not made yet renders as "TBD", which `stage`
refuses as a placeholder. To regenerate the tables in place, from the
repository root::

  PYTHONPATH=build python3 -m forklib.upstreaming.jep_numbers --write
  PYTHONPATH=build python3 -m forklib.upstreaming.jep_numbers \\
      --measure-tests <dev venv>/bin/python   # then --write
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime
import json
import os
import pathlib
import re
import subprocess
import sys
import time
from typing import Any

from forklib.sources import patchq
from forklib.upstreaming import stage_plan
from forklib.upstreaming import stage_conventions

JEP = "docs/jep/stablehlo-interpreter.md"
SPEED = "benchmarks/results/exported_call"
TEST_TIMES = "benchmarks/results/jep/test_times.json"
COVERAGE = "docs/stablehlo.md"
_COVERAGE_RE = re.compile(r"^- (?P<platform>\w+): (?P<expressed>\d+) of "
                          r"(?P<total>\d+) modules expressed, (?P<refused>\d+)"
                          r" refused", re.MULTILINE)
_COVERAGE_OF_RE = re.compile(r"^Of jax (?P<version>\S+)'s test data:",
                             re.MULTILINE)
TBD = "TBD"
# Relative differences from native above this are a wrong number.
TOLERANCE = 1e-4


@dataclasses.dataclass(frozen=True)
class Part:
  """A row of the cost and test tables."""
  label: str
  prs: tuple[str, ...] = ()        # pull requests of the plan
  under: str = ""                  # only their modules under this folder
  patches: bool = False            # with the lines their patches add
  staged: str = ""                 # a patch of patches/stage/ instead
  tests: tuple[str, ...] = ()      # test files or folders of this tree
  pr_tests: bool = False           # with the plan's tests of `prs`
  timed: bool = True               # whether its tests' run time is given


PART_2_PRS = ("call-tf-vectorizing-default", "call-tf-forward-mode",
              "persistent-cache", "call-tf-every-platform")
PARTS = (
    Part("the loop rule (the pull request for #28327)",
         staged="patches/stage/exported-call-vmap.patch"),
    Part("Part 1: the interpreter", prs=("exported-call-transforms",),
         under="jax/_src/export/stablehlo_to_jax/",
         tests=("tests/stablehlo",)),
    Part("Part 1: `Exported.call`'s rules, and their hooks in `_export.py`",
         prs=("exported-call-transforms",),
         under="jax/_src/export/transforms/", patches=True,
         tests=("tests/export",), pr_tests=True),
    # Not proposed: its tests are counted, not timed (most of them run
    # TensorFlow in subprocesses: more than an hour on two cores).
    Part("Part 2: `call_tf`'s use of the interpreter", prs=PART_2_PRS,
         patches=True, tests=("tests/calltf",), pr_tests=True, timed=False),
)
TEST_NOTES = {
    PARTS[3].label: "the tests of `call_tf`, those of what stays outside "
                    "JAX included",
}

COST_HEADER = ("| part | modules | lines | code lines "
               "| modules that import TensorFlow |")
TESTS_HEADER = ("| part | test files | test lines | test functions "
                "| run time of its tests |")
SPEED_HEADER = ("| function, transformation ({platform}) | N | native "
                "| interpreter | loop rule | loop rule / interpreter "
                "| interpreter / native |")
COVERAGE_HEADER = ("| platform | data sets | expressed (batched; "
                   "differentiated where JAX has a derivative) "
                   "| refused, by name |")
DERIVATIVES_HEADER = ("| function | x | JAX's derivative of the function "
                      "| JAX's derivative of its module, interpreted "
                      "| forward mode from the serialized VJP |")
PLATFORMS = {"cpu": "CPU", "tpu": "TPU"}


# ---------------------------------------------------------------------------
# Counting.
# ---------------------------------------------------------------------------

def code_lines(text: str) -> int:
  """Lines of Python `text` that are code: not blank, not only a comment,
  not a docstring."""
  prose = stage_conventions.docstring_lines(ast.parse(text))
  count = 0
  for n, line in enumerate(text.splitlines(), 1):
    stripped = line.strip()
    if stripped and not stripped.startswith("#") and n not in prose:
      count += 1
  return count


def _added_code_lines(added: list[str]) -> int:
  """Code lines among lines a patch adds (no blank or comment line, none
  inside a triple-quoted string)."""
  count, quoted = 0, False
  for line in added:
    stripped = line.strip()
    quotes = stripped.count('"""') + stripped.count("'''")
    if quoted or stripped.startswith(('"""', "'''")):
      if quotes % 2:
        quoted = not quoted
      continue
    if stripped and not stripped.startswith("#"):
      count += 1
  return count


def _patch_added(path: pathlib.Path, tests: bool) -> tuple[int, list[str],
                                                          list[str]]:
  """(files, added lines) of a patch's test files or of its other files,
  and the files."""
  patch = patchq.parse(path)
  files, added = [], []
  for fp in patch.files:
    if patchq.is_test_path(fp.path) != tests or not fp.path.endswith(".py"):
      continue
    files.append(fp.path)
    for hunk in fp.hunks:
      added += [text for tag, text in hunk.lines if tag == "+"]
  return len(files), added, files


def _imports_tensorflow(text: str) -> bool:
  return bool(re.search(r"^\s*(?:import tensorflow|from tensorflow\b)",
                        text, re.MULTILINE))


def _part_modules(root: pathlib.Path, plan: stage_plan.Plan,
                  part: Part) -> list[pathlib.Path]:
  by_name = {pr.name: pr for pr in plan.prs}
  paths = []
  for name in part.prs:
    if name not in by_name:
      raise KeyError(f"the plan has no pull request {name!r} (a part of the "
                     "proposal's tables)")
    for m in by_name[name].modules:
      path = plan.repo_path(m)
      if m.endswith(".py") and path.startswith(part.under):
        paths.append(root / path)
  return paths


def _part_patches(root: pathlib.Path, plan: stage_plan.Plan,
                  part: Part) -> list[pathlib.Path]:
  if not part.patches:
    return []
  by_name = {pr.name: pr for pr in plan.prs}
  return [root / "patches" / p for name in part.prs
          for p in by_name[name].patches]


def cost_row(root: pathlib.Path, plan: stage_plan.Plan,
             part: Part) -> dict[str, int]:
  """A part's modules, lines, code lines and modules importing
  TensorFlow."""
  if part.staged:
    n, added, _ = _patch_added(root / part.staged, tests=False)
    return {"modules": n, "lines": len(added),
            "code": _added_code_lines(added),
            "tf": sum(_imports_tensorflow(line) for line in added)}
  row = {"modules": 0, "lines": 0, "code": 0, "tf": 0}
  for path in _part_modules(root, plan, part):
    text = path.read_text(encoding="utf-8")
    row["modules"] += 1
    row["lines"] += len(text.splitlines())
    row["code"] += code_lines(text)
    row["tf"] += _imports_tensorflow(text)
  for path in _part_patches(root, plan, part):
    _, added, _ = _patch_added(path, tests=False)
    row["lines"] += len(added)
    row["code"] += _added_code_lines(added)
  return row


def test_files(root: pathlib.Path, plan: stage_plan.Plan,
               part: Part) -> list[pathlib.Path]:
  """The test files of a part: its folders' and files', and the plan's
  upstream-style tests of its pull requests."""
  files = []
  for t in part.tests:
    path = root / t
    files += sorted(path.glob("*.py")) if path.is_dir() else [path]
  if part.pr_tests:
    by_name = {pr.name: pr for pr in plan.prs}
    files += [root / stage_plan.UPSTREAM_TESTS / t.file
              for name in part.prs for t in by_name[name].tests]
  return files


def tests_row(root: pathlib.Path, plan: stage_plan.Plan,
              part: Part) -> dict[str, int]:
  """A part's test files, test lines and test functions."""
  if part.staged:
    n, added, _ = _patch_added(root / part.staged, tests=True)
    return {"files": n, "lines": len(added),
            "tests": sum(bool(re.match(r"\s*def test", line))
                         for line in added)}
  row = {"files": 0, "lines": 0, "tests": 0}
  for path in test_files(root, plan, part):
    text = path.read_text(encoding="utf-8")
    row["files"] += 1
    row["lines"] += len(text.splitlines())
    row["tests"] += len(re.findall(r"^\s*def test\w*\(", text, re.MULTILINE))
  return row


# ---------------------------------------------------------------------------
# Rendering.
# ---------------------------------------------------------------------------

def _int(n: int) -> str:
  return f"{n:,}"


def _ms(ms: float | None) -> str:
  if ms is None:
    return "-"
  return f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}"


def _ratio(a: float | None, b: float | None) -> str:
  if a is None or b is None or not b:
    return "-"
  return f"{a / b:#.2g}x" if a / b < 10 else f"{a / b:,.0f}x"


def _read_json(path: pathlib.Path) -> dict[str, Any] | None:
  if not path.is_file():
    return None
  return json.loads(path.read_text(encoding="utf-8"))


def render_cost(root: pathlib.Path, plan: stage_plan.Plan) -> str:
  rows = [cost_row(root, plan, p) for p in PARTS]
  lines = [COST_HEADER, "|---|---:|---:|---:|---:|"]
  for part, row in zip(PARTS, rows):
    lines.append(f"| {part.label} | {row['modules']} | {_int(row['lines'])} "
                 f"| {_int(row['code'])} | {row['tf']} |")
  for label, chosen in (("**Part 1**", rows[1:3]),
                        ("**both parts**", rows[1:])):
    lines.append(f"| {label} | {sum(r['modules'] for r in chosen)} "
                 f"| {_int(sum(r['lines'] for r in chosen))} "
                 f"| {_int(sum(r['code'] for r in chosen))} "
                 f"| {sum(r['tf'] for r in chosen)} |")
  return "\n".join(lines) + ("\n\n*Physical lines of the modules each part "
                             "adds and of what its patches add to JAX's "
                             "files; code lines leave out blank lines, "
                             "comments and docstrings. Counted from the "
                             "implementation's tree.*")


def _run_time(times: dict[str, Any] | None, part: Part) -> str:
  if part.staged:
    return "with its test file"
  if not part.timed:
    return "not timed (not proposed)"
  entry = (times or {}).get("parts", {}).get(part.label)
  if not entry:
    return TBD
  minutes = entry["seconds"] / 60
  return (f"{minutes:.1f} min ({_int(entry['passed'])} passed, "
          f"{_int(entry['skipped'])} skipped"
          + (f", {_int(entry['failed'])} FAILED" if entry["failed"] else "")
          + ")")


def render_tests(root: pathlib.Path, plan: stage_plan.Plan) -> str:
  times = _read_json(root / TEST_TIMES)
  lines = [TESTS_HEADER, "|---|---:|---:|---:|---|"]
  for part in PARTS:
    row = tests_row(root, plan, part)
    label = part.label + (f" ({TEST_NOTES[part.label]})"
                          if part.label in TEST_NOTES else "")
    run = _run_time(times, part)
    lines.append(f"| {label} | {row['files']} | {_int(row['lines'])} "
                 f"| {_int(row['tests'])} | {run} |")
  loads = [v["load_before"][0] for v in (times or {}).get("parts", {}).values()
           if v.get("load_before")]
  when = (f"measured on {times['date']}, {times['machine']}, with pytest, "
          f"the load average {min(loads):.1f}-{max(loads):.1f} before each "
          "part's run (other jobs were running)" if times and loads
          else f"measured on {times['date']}, {times['machine']}" if times
          else "not measured yet")
  return "\n".join(lines) + (f"\n\n*Test functions as written (a "
                             f"parametrized one counts once); run times "
                             f"{when}.*")


def _load(load: list[float]) -> str:
  return f"{load[0]:.1f}" if load else "unknown"


def render_speed(root: pathlib.Path, platform: str) -> str:
  name = PLATFORMS[platform]
  data = _read_json(root / SPEED / f"{platform}.json")
  lines = [SPEED_HEADER.format(platform=name),
           "|---|---:|---:|---:|---:|---:|---:|"]
  if data is None:
    lines.append(f"| {TBD} | {TBD} | {TBD} | {TBD} | {TBD} | {TBD} "
                 f"| {TBD} |")
    return "\n".join(lines) + f"\n\n*{name}: {TBD}, not measured yet.*"
  for r in data["rows"]:
    cells = [("failed" if r.get(f"{m}_error") else _ms(r[f"{m}_ms"]))
             for m in ("native", "interpreter", "loop")]
    lines.append(
        f"| {r['label']}, {TRANSFORMS[r['transform']]} | {_int(r['n'])} "
        f"| {' | '.join(cells)} "
        f"| {_ratio(r['loop_ms'], r['interpreter_ms'])}"
        f" | {_ratio(r['interpreter_ms'], r['native_ms'])} |")
  worst = max((r[k] for r in data["rows"]
               for k in ("interpreter_rel_err", "loop_rel_err")
               if r.get(k) is not None), default=0.)
  started = data["started"][:10]
  device = (f"{name}, {data['cpus']} cores" if data["device"] == platform
            else f"{data['device']} ({data['device_count']} device"
            f"{'s' if data['device_count'] > 1 else ''}, {data['cpus']} "
            "host CPUs)")
  return "\n".join(lines) + (
      f"\n\n*{device}, jax {data['jax'].split('+')[0]} with the "
      f"implementation, "
      f"{started}: milliseconds per call of the whole batch, median of "
      f"{data['repeats']} after a compiling call, matrix products at "
      f"precision {data.get('precision') or 'default'}; load average "
      f"{_load(data['load_before'])} before the run and "
      f"{_load(data['load_after'])} after. Every result matched native "
      f"JAX's (largest relative difference {worst:.1g}).*"
      + (f" *Partial: {data['partial']}.*" if data.get("partial") else "")
      + (f" *Note: {data['note']}.*" if data.get("note") else ""))


TRANSFORMS = {
    "vmap": "`vmap`",
    "vmap_grad": "`vmap(grad)`",
    "vmap_jacfwd": "`vmap(jacfwd)` (no loop: no forward mode without the "
                   "interpreter)",
    "vmap_hessian": "`vmap(jacrev(jacrev))`, the Hessian",
}


def render_derivatives(root: pathlib.Path) -> str:
  data = _read_json(root / SPEED / "cpu.json")
  lines = [DERIVATIVES_HEADER, "|---|---:|---:|---:|---:|"]
  if data is None or not data.get("derivatives"):
    lines.append(f"| {TBD} | {TBD} | {TBD} | {TBD} | {TBD} |")
  else:
    for d in data["derivatives"]:
      lines.append(f"| {d['function']} | {d['x']:g} "
                   f"| {d['function_derivative']:.4g} "
                   f"| {d['module_derivative']:.4g} "
                   f"| {d['call_derivative']:.4g} |")
  return "\n".join(lines) + ("\n\n*`jax.jvp` at x with tangent 1, float32; "
                             "the module exported with `vjp_order=1`.*")


def render_coverage(root: pathlib.Path) -> str:
  text = (root / COVERAGE).read_text(encoding="utf-8")
  version = _COVERAGE_OF_RE.search(text)
  rows = list(_COVERAGE_RE.finditer(text))
  if version is None or not rows:
    raise KeyError(f"{COVERAGE} has no generated coverage of the back-compat "
                   "data ('Of jax X's test data:', '- CPU: N of M modules "
                   "expressed, K refused')")
  lines = [COVERAGE_HEADER, "|---|---:|---:|---:|"]
  lines += [f"| {m['platform']} | {m['total']} | {m['expressed']} "
            f"| {m['refused']} |" for m in rows]
  return "\n".join(lines) + (
      f"\n\n*Of the data sets of jax {version['version']}'s back-compat "
      "tests, as the implementation's test of them counts.*")


def render(root: pathlib.Path, plan: stage_plan.Plan) -> dict[str, str]:
  """Every table, by name, as the proposal must hold it."""
  return {"cost": render_cost(root, plan),
          "tests": render_tests(root, plan),
          "speed-cpu": render_speed(root, "cpu"),
          "speed-tpu": render_speed(root, "tpu"),
          "derivatives": render_derivatives(root),
          "coverage": render_coverage(root)}


# ---------------------------------------------------------------------------
# Checking and writing the proposal.
# ---------------------------------------------------------------------------

def _block(text: str, header: str) -> tuple[int, int] | None:
  """Where the table under `header` and its caption are in `text`."""
  start = text.find(header + "\n")
  if start < 0:
    return None
  lines = text[start:].split("\n")
  n = 0
  while n < len(lines) and lines[n].startswith("|"):
    n += 1
  if n + 1 < len(lines) and not lines[n] and lines[n + 1].startswith("*"):
    n += 1
    while n < len(lines) and lines[n]:
      n += 1
  return start, start + len("\n".join(lines[:n]))


def _timed_files(root: pathlib.Path, plan: stage_plan.Plan,
                 part: Part) -> list[str]:
  """The files `measure_tests` runs for `part`: its test modules."""
  return [str(p.relative_to(root)) for p in test_files(root, plan, part)
          if p.name.startswith("test_") or p.name.endswith("_test.py")]


def _measurement_problems(root: pathlib.Path,
                          plan: stage_plan.Plan | None = None) -> list[str]:
  problems = []
  for platform, name in PLATFORMS.items():
    data = _read_json(root / SPEED / f"{platform}.json")
    if data is None:
      problems.append(f"no {name} measurement of Exported.call: run "
                      f"benchmarks/exported_call.py on a {name} machine, "
                      f"into {SPEED}/{platform}.json, then --write")
      continue
    bad = [f"{r['workload']} {r['transform']} N={r['n']}" for r in data["rows"]
           for k in ("interpreter_rel_err", "loop_rel_err")
           if r.get(k) is not None and r[k] > TOLERANCE]
    if bad:
      problems.append(f"{SPEED}/{platform}.json: results differ from native "
                      f"JAX's by more than {TOLERANCE}: {', '.join(bad)}")
    if data.get("derivatives_error"):
      problems.append(f"{SPEED}/{platform}.json: the derivatives' example "
                      f"failed: {data['derivatives_error']}")
    failed = [f"{r['workload']} {r['transform']} N={r['n']} {m}: "
              f"{r[m + '_error']}" for r in data["rows"]
              for m in ("native", "interpreter", "loop")
              if r.get(f"{m}_error")]
    if failed:
      problems.append(f"{SPEED}/{platform}.json: measurements failed (run "
                      f"them again, or with other sizes): {'; '.join(failed)}")
  times = _read_json(root / TEST_TIMES)
  parts = (times or {}).get("parts", {})
  missing = [p.label for p in PARTS if not p.staged and p.timed
             and p.label not in parts]
  if missing:
    problems.append(f"no run time of the tests of {', '.join(missing)}: "
                    "run jep_numbers --measure-tests, then --write")
  failed = [f"{label}: {', '.join(v.get('failed_tests') or [v['summary']])}"
            for label, v in parts.items() if v["failed"] or v["exit"]]
  if failed:
    problems.append(f"{TEST_TIMES}: tests failed when timed: "
                    f"{'; '.join(failed)}")
  stale = [p.label for p in PARTS if plan is not None and p.label in parts
           and sorted(parts[p.label].get("files", []))
           != sorted(_timed_files(root, plan, p))]
  if stale:
    problems.append(f"{TEST_TIMES}: the tests timed for {', '.join(stale)} "
                    "are not the part's test files now: run jep_numbers "
                    "--measure-tests again, then --write")
  return problems


def check(root: pathlib.Path, plan: stage_plan.Plan, text: str) -> list[str]:
  """What differs between the proposal's tables and this tree's numbers.

  Each table must be in `text` as `render` gives it (its header, rows and
  caption); a measurement not made yet, or a result that is not native
  JAX's, is a problem of its own.
  """
  try:
    tables = render(root, plan)
  except (KeyError, OSError, SyntaxError, patchq.PatchError) as e:
    return [f"its numbers cannot be computed from this tree: {e}"]
  problems = []
  for name, rendered in tables.items():
    header = rendered.split("\n", 1)[0]
    where = _block(text, header)
    if where is None:
      problems.append(f"has no {name} table (its header: {header!r}): "
                      "jep_numbers --write adds nothing; put the header in, "
                      "then --write")
    elif text[where[0]:where[1]] != rendered:
      problems.append(f"its {name} table is not what this tree gives: "
                      "regenerate it (PYTHONPATH=build python3 -m "
                      "forklib.upstreaming.jep_numbers --write)")
  return problems + _measurement_problems(root, plan)


def write(root: pathlib.Path, plan: stage_plan.Plan, path: pathlib.Path
          ) -> list[str]:
  """Rewrites the tables of the proposal at `path`; returns the names of
  the tables it has no header for."""
  text = path.read_text(encoding="utf-8")
  missing = []
  for name, rendered in render(root, plan).items():
    where = _block(text, rendered.split("\n", 1)[0])
    if where is None:
      missing.append(name)
      continue
    text = text[:where[0]] + rendered + text[where[1]:]
  path.write_text(text, encoding="utf-8")
  return missing


def measure_tests(root: pathlib.Path, plan: stage_plan.Plan,
                  python: str) -> dict[str, Any]:
  """Runs each part's tests with `python -m pytest` and records the time."""
  parts = {}
  for part in PARTS:
    if part.staged or not part.timed:
      continue
    files = _timed_files(root, plan, part)
    load = list(os.getloadavg())
    start = time.monotonic()
    proc = subprocess.run([python, "-m", "pytest", "-q", "-rf", "-p",
                           "no:cacheprovider", *files], cwd=root,
                          capture_output=True, text=True)
    seconds = time.monotonic() - start
    tail = proc.stdout.strip().splitlines()[-1:] or [""]
    counts = {k: int(v) for v, k in re.findall(
        r"(\d+) (passed|failed|skipped|errors?)", tail[0])}
    parts[part.label] = {"seconds": round(seconds, 1), "files": files,
                         "passed": counts.get("passed", 0),
                         "failed": counts.get("failed", 0),
                         "skipped": counts.get("skipped", 0),
                         "exit": proc.returncode, "summary": tail[0],
                         "failed_tests": re.findall(r"^FAILED (\S+)",
                                                    proc.stdout, re.MULTILINE),
                         "load_before": load,
                         "load_after": list(os.getloadavg())}
  return parts


def main(argv: list[str] | None = None) -> int:
  from forklib.project import Project  # pylint: disable=g-import-not-at-top
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--root", type=pathlib.Path,
                      default=pathlib.Path(__file__).resolve().parents[3])
  parser.add_argument("--write", action="store_true",
                      help=f"rewrite the tables of {JEP}")
  parser.add_argument("--measure-tests", metavar="PYTHON",
                      help="run each part's tests with this Python and "
                      f"record the times in {TEST_TIMES}")
  parser.add_argument("--machine", default="",
                      help="with --measure-tests: the machine, in words")
  args = parser.parse_args(argv)
  root = args.root.resolve()
  plan = stage_plan.load_project(Project(root))
  if args.measure_tests:
    parts = measure_tests(root, plan, args.measure_tests)
    failed = {k: v["failed_tests"] or v["summary"] for k, v in parts.items()
              if v["exit"] != 0 or v["failed"]}
    if failed:  # recorded all the same; check() reports it
      print(f"tests failed: {failed}", file=sys.stderr)
    out = root / TEST_TIMES
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "date": datetime.date.today().isoformat(),
        "machine": args.machine or "unknown", "parts": parts}, indent=1)
                   + "\n", encoding="utf-8")
    print(f"wrote {out}")
  if args.write:
    missing = write(root, plan, root / JEP)
    if missing:
      print(f"{JEP} has no header for: {', '.join(missing)}",
            file=sys.stderr)
      return 1
  problems = check(root, plan, (root / JEP).read_text(encoding="utf-8"))
  for p in problems:
    print(f"{JEP}: {p}")
  return 1 if problems else 0


if __name__ == "__main__":
  sys.exit(main())
