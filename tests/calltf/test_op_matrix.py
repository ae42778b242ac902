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

Every case runs but those left to the full run (`Family.full_run` and
`FULL_RUN_COLUMNS`: they cost most and prove least), which are marked
`full_run` and run with
`--full-run` (`fork.py test --full`); `JAX_FORK_OP_MATRIX_QUICK=1` runs the
first-order columns only, without the heavy cases (`Family.heavy`: minutes
each), for a quicker local run. `JAX_FORK_OP_MATRIX_WORKERS` sets the number of
worker processes (default: up to 2).
`JAX_FORK_OP_MATRIX_REPORT=docs/op-matrix.md` writes the report of the run,
`JAX_FORK_OP_MATRIX_AUDIT=docs/vmap.md` its engine audit into the guide
(both of a run of every case: with `--full-run` and no selection);
`JAX_FORK_OP_MATRIX_RESULTS=run.json` judges a saved run
(`op_matrix_report.py --json run.json`) instead of running the matrix.
"""

from __future__ import annotations

import json
import os
import pathlib
import time

import numpy as np

import pytest

from . import op_matrix_cases as cases
from . import op_matrix_report as report

_MODULE = __name__


_FULL_RUN = cases.full_run_case_ids()


def _params():
  params = []
  for cid in cases.all_case_ids():
    marks = []
    if cid in cases.KNOWN_BUGS:
      marks.append(pytest.mark.xfail(strict=True,
                                     reason=cases.KNOWN_BUGS[cid]))
    if cid in _FULL_RUN:
      marks.append(pytest.mark.full_run)
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
  # The cases the forward-mode tests read, selected without their own.
  selected += [cases.case_id(item.callspec.params[key], t)
               for item in request.session.items
               if item.module.__name__ == _MODULE
               and hasattr(item, "callspec")
               for key, columns in (("agreeing", _AGREEING),
                                    ("forward", _FORWARD))
               if key in item.callspec.params for t in columns]
  selected = list(dict.fromkeys(selected))
  saved = os.environ.get("JAX_FORK_OP_MATRIX_RESULTS")
  if saved:  # judge a saved run (`op_matrix_report.py --json`) instead
    run = json.loads(pathlib.Path(saved).read_text())
    return {cid: run["results"][cid] for cid in selected}
  path = os.environ.get("JAX_FORK_OP_MATRIX_REPORT")
  audit = os.environ.get("JAX_FORK_OP_MATRIX_AUDIT")
  missing = len(cases.all_case_ids()) - len(selected)
  if (path or audit) and missing:
    pytest.fail(f"JAX_FORK_OP_MATRIX_REPORT and _AUDIT write what a run of "
                f"every case found, and {missing} cases are not selected: "
                "run with --full-run (the cases marked full_run) and no -k")
  start = time.perf_counter()
  results = report.run_matrix(selected)
  seconds = time.perf_counter() - start
  if path:
    pathlib.Path(path).write_text(report.markdown(
        results, report.environment(), seconds, cases.KNOWN_BUGS,
        cases.KNOWN_GAPS, cases.KNOWN_REFUSALS, _FULL_RUN))
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
  return [pytest.param(
      f.name, eager, jitted, id=f"{f.name}:{eager}",
      marks=[pytest.mark.full_run] if any(
          cases.case_id(f.name, t) in _FULL_RUN for t in (eager, jitted))
      else [])
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


_AGREEING = ("jit(jacrev)", "jit(jacfwd)")
_FORWARD = ("value", "jit", *report.FORWARD_COLUMNS)


def _family_params(columns):
  return [pytest.param(f.name, id=f.name, marks=[pytest.mark.full_run] if any(
      cases.case_id(f.name, t) in _FULL_RUN for t in columns) else [])
          for f in cases.FAMILIES]


@pytest.mark.parametrize("agreeing", _family_params(_AGREEING))
def test_jacfwd_agrees_with_jacrev(matrix, agreeing):
  """One Jacobian per function: jit(jacfwd) and jit(jacrev) of the family
  agree at its point with zeros and ties (`cases.kinks`), whichever
  derivative the policy picks (TF's gradients or JAX's of the module)."""
  record = matrix.get(cases.case_id(agreeing, "jit(jacfwd)"))
  if record is None:
    pytest.skip("not in this run")
  agreement = record.get("agreement")
  if agreement is None:
    outcomes = {t: matrix.get(cases.case_id(agreeing, t), {}).get("outcome")
                for t in _AGREEING}
    assert set(outcomes.values()) != {"ok"}, (
        f"both ran but were not compared: {outcomes}")
    pytest.skip(f"not both computed: {outcomes}")
  assert agreement["ok"], (
      f"jit(jacfwd) and jit(jacrev) of {agreeing} differ at "
      f"{cases.kinks.__name__}(x): {agreement['why']}")


@pytest.mark.parametrize("forward", _family_params(_FORWARD))
def test_no_forward_refusal_where_the_engine_may_differentiate(matrix,
                                                               forward):
  """Where the function compiles, the engine has its module and the
  derivative policy allows JAX's derivative of it (eagerly: where XLA
  computes what TF's kernels do), forward mode and second derivatives
  come from the engine: none is refused (issue 57)."""
  ids = [cases.case_id(forward, t) for t in report.FORWARD_COLUMNS]
  if any(i not in matrix for i in ids):
    pytest.skip("not in this run")
  stopped = {i: report.forward_class(matrix, i) for i in ids
             if matrix[i]["outcome"] in ("refused", "gap")}
  assert report.ENGINE_MAY not in stopped.values(), {
      i: matrix[i].get("error") for i, why in stopped.items()
      if why == report.ENGINE_MAY}


def test_workers_batches_hold_every_case_once_and_heavy_families_alone():
  ids = cases.all_case_ids()
  batches = report._batches(ids)
  flat = [cid for batch in batches for cid in batch]
  assert sorted(flat) == sorted(ids)
  heavy = {f.name for f in cases.FAMILIES if f.heavy}
  for batch in batches:
    names = {cid.split(":", 1)[0] for cid in batch}
    assert not (names & heavy) or len(names) == 1, names


def test_the_full_run_leaves_each_column_and_family_to_the_default_run():
  """What the default run leaves to the full run (`Family.full_run`,
  `FULL_RUN_COLUMNS`) is never a whole column or a whole family: every
  transformation runs on most families, or (a column of
  `FULL_RUN_COLUMNS`) on a family of every group; every family on its
  value and batching columns."""
  left = cases.full_run_case_ids()
  groups = {f.group for f in cases.FAMILIES}
  for transform in cases.TRANSFORMS:
    ran = [f for f in cases.FAMILIES
           if cases.case_id(f.name, transform) not in left]
    if transform in cases.FULL_RUN_COLUMNS:
      assert {f.group for f in ran} == groups, transform
    else:
      assert len(ran) > len(cases.FAMILIES) * 0.9, transform
  for f in cases.FAMILIES:
    assert not {"value", "jit", "vmap", "jit(vmap)"} & set(f.full_run), f.name
    assert set(f.full_run) <= set(cases.TRANSFORMS), f.name
    assert all(why for why in f.full_run.values()), f.name


def test_kinks_have_zeros_and_ties():
  x = np.arange(1., 8., dtype=np.float32).reshape(7, 1)
  assert cases.kinks(x).reshape(-1).tolist() == [0., 2., 2., 0., 5., 5., 0.]
  assert cases.kinks(np.zeros((0, 3), np.float32)).shape == (0, 3)


def test_agreement_fires_where_the_modes_differ():
  fam = report._Family(cases.FAMILY_BY_NAME["cumprod"])  # noqa: SLF001
  ones, zeros = np.ones((2,)), np.zeros((2,))
  fam._jitted = {"jit(jacfwd)": lambda x: ones, "jit(jacrev)": lambda x: zeros}  # noqa: SLF001
  assert fam.agreement()["ok"] is False
  fam._jitted["jit(jacrev)"] = lambda x: ones  # noqa: SLF001
  assert fam.agreement()["ok"] is True
  del fam._jitted["jit(jacrev)"]  # noqa: SLF001
  assert fam.agreement() is None


def test_a_forward_refusal_where_the_engine_may_is_named_so():
  def record(outcome, engine=None):
    return {"outcome": outcome, **({"engine": engine} if engine else {})}
  free = {"eager": None, "jit": None, "derivatives": None}
  results = {"f:value": record("ok", free), "f:jit": record("ok"),
             "f:jit(jacfwd)": record("refused")}
  assert report.forward_class(results, "f:jit(jacfwd)") == report.ENGINE_MAY
  results["f:value"]["engine"] = {**free, "derivatives": "TF's gradients"}
  assert report.forward_class(results, "f:jit(jacfwd)") == (
      "the derivative policy keeps TF's derivatives")
  results["f:value"]["engine"] = {**free, "eager": "XLA differs"}
  assert report.forward_class(results, "f:jacfwd") == (
      "eagerly, TF's kernels compute the function")
  assert report.forward_class(results, "f:jit(jacfwd)") == report.ENGINE_MAY
  results["f:jit"] = record("refused")
  assert report.forward_class(results, "f:jit(jacfwd)") == (
      "the function does not compile with XLA")
