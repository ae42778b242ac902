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
"""The op matrix: TF op families x transformations of call_tf, judged.

Each test is one case of `op_matrix_cases.py` (a family and a
transformation), run by `op_matrix_report.py` in worker subprocesses (so
that an abort is recorded, not fatal) against a TensorFlow-only reference.
The whole matrix runs once per session, for the cases selected.

- `ok` passes; a refusal that also fails with `vmap_method="sequential"`
  passes (a clear refusal is allowed; the report says whether it names the
  op).
- A refusal that runs with `sequential` is a gap in vectorization: it fails,
  unless it is a known gap (`op_matrix_cases.KNOWN_GAPS`, each with the
  reason it stays), which is an xfail, and must stay a gap: a known gap that
  runs fails, so that its entry goes.
- A wrong number (with the defaults or with `sequential`) and a crash fail,
  and so does a Python error that is not a clear refusal (`error`: it does
  not name call_tf and the op, see `op_matrix_report.is_clear_refusal`).
- Known bugs (`op_matrix_cases.KNOWN_BUGS`) are `xfail(strict=True)`: the
  case must be ok, and passes as soon as the bug is fixed, which the strict
  mark reports so that the fix removes the entry.

Every case runs, as in CI; `JAX_FORK_OP_MATRIX_QUICK=1` runs the
first-order columns only, without the heavy cases (`Family.heavy`: minutes
each), for a quicker local run. `JAX_FORK_OP_MATRIX_WORKERS` sets the number of
worker processes (default: up to 2).
`JAX_FORK_OP_MATRIX_REPORT=docs/op-matrix.md` writes the report of the run,
`JAX_FORK_OP_MATRIX_AUDIT=docs/vmap.md` its engine audit into the guide;
`JAX_FORK_OP_MATRIX_RESULTS=run.json` judges a saved run
(`op_matrix_report.py --json run.json`) instead of running the matrix.
"""

from __future__ import annotations

import json
import os
import pathlib
import time

import pytest

from . import op_matrix_cases as cases
from . import op_matrix_report as report

_MODULE = __name__


def _params():
  params = []
  for cid in cases.all_case_ids():
    marks = []
    if cid in cases.KNOWN_BUGS:
      marks.append(pytest.mark.xfail(strict=True,
                                     reason=cases.KNOWN_BUGS[cid]))
    params.append(pytest.param(cid, id=cid, marks=marks))
  return params


@pytest.fixture(scope="module")
def matrix(request):
  """Every selected case's record, from one run of the matrix."""
  selected = [item.callspec.params["case"] for item in request.session.items
              if item.module.__name__ == _MODULE
              and hasattr(item, "callspec") and "case" in item.callspec.params]
  # The cases of the eager-and-jit comparisons selected without their own.
  selected += [cases.case_id(item.callspec.params["family"], t)
               for item in request.session.items
               if item.module.__name__ == _MODULE
               and hasattr(item, "callspec")
               and "family" in item.callspec.params
               for t in (item.callspec.params["eager"],
                         item.callspec.params["jitted"])]
  selected = list(dict.fromkeys(selected))
  saved = os.environ.get("JAX_FORK_OP_MATRIX_RESULTS")
  if saved:  # judge a saved run (`op_matrix_report.py --json`) instead
    run = json.loads(pathlib.Path(saved).read_text())
    return {cid: run["results"][cid] for cid in selected}
  start = time.perf_counter()
  results = report.run_matrix(selected)
  seconds = time.perf_counter() - start
  path = os.environ.get("JAX_FORK_OP_MATRIX_REPORT")
  if path:
    pathlib.Path(path).write_text(report.markdown(
        results, report.environment(), seconds, cases.KNOWN_BUGS,
        cases.KNOWN_GAPS, cases.KNOWN_REFUSALS))
  audit = os.environ.get("JAX_FORK_OP_MATRIX_AUDIT")
  if audit:
    report.write_audit(pathlib.Path(audit), results)
  return results


def _describe(record: dict) -> str:
  return ", ".join(f"{k}={v!r}" for k, v in record.items()
                   if k not in ("case", "family", "transform"))


@pytest.mark.parametrize("case", _params())
def test_case(matrix, case):
  record = matrix[case]
  outcome = record["outcome"]
  if record.get("exit_status"):
    pytest.fail(f"the process that ran {case} (and gave its result) died at "
                f"exit with status {record['exit_status']}")
  if outcome == "skip":
    pytest.skip(record["reason"])
  if case in cases.KNOWN_BUGS:
    assert outcome == "ok", _describe(record)
    return
  if outcome == "crash":
    pytest.fail(f"the process died in {case}: {record['error']}\n"
                f"{record.get('stderr', '')}")
  if outcome == "WRONG":
    pytest.fail(f"{case} returns a wrong result: {record['mismatch']}")
  if outcome == "error":
    pytest.fail(f"{case} raises a Python error that is not a clear refusal "
                f"(naming call_tf and the op): {record['error_type']}: "
                f"{record['error']}")
  if case in cases.KNOWN_GAPS:
    assert outcome == "gap", (
        f"{case} is a known gap (op_matrix_cases.KNOWN_GAPS) but is "
        f"{outcome!r} now: {_describe(record)}; remove the entry if it runs")
    pytest.xfail(f"known gap: {cases.KNOWN_GAPS[case]}")
  if outcome == "gap":
    pytest.fail(f"{case} runs with vmap_method='sequential' but not with the "
                f"defaults: {record['error_type']}: {record['error']}")


def _pairs():
  return [pytest.param(f.name, eager, jitted, id=f"{f.name}:{eager}")
          for f in cases.FAMILIES for eager, jitted in cases.EAGER_AND_JIT]


@pytest.mark.parametrize("family,eager,jitted", _pairs())
def test_eager_column_agrees_with_jit(matrix, family, eager, jitted):
  """One engine: where XLA compiles the function (and computes what
  TensorFlow's kernels do), the eager column has its jit column's outcome;
  each matches the TF-only reference (test_case)."""
  ids = [cases.case_id(family, t) for t in (eager, jitted)]
  if any(i not in matrix for i in ids):
    pytest.skip("not in this run")
  outcomes = [matrix[i]["outcome"] for i in ids]
  if "skip" in outcomes:
    pytest.skip(f"a case is skipped: {outcomes}")
  if family in cases.EAGER_AND_JIT_DIFFER:
    return
  assert outcomes[0] == outcomes[1], (
      f"{ids[0]} is {outcomes[0]} but {ids[1]} is {outcomes[1]}: "
      + "; ".join(_describe(matrix[i]) for i in ids))


def test_workers_batches_hold_every_case_once_and_heavy_families_alone():
  ids = cases.all_case_ids()
  batches = report._batches(ids)
  flat = [cid for batch in batches for cid in batch]
  assert sorted(flat) == sorted(ids)
  heavy = {f.name for f in cases.FAMILIES if f.heavy}
  for batch in batches:
    names = {cid.split(":", 1)[0] for cid in batch}
    assert not (names & heavy) or len(names) == 1, names
