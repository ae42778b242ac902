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
"""The engine held to the StableHLO specification, op by op, type by type.

Each case of :mod:`.spec_cases` (every op of the specification, each element
type it allows, variants) is run by :mod:`.conformance` in worker processes
(XLA aborts the process on some types; an abort is a failure): the engine
computes it as XLA does (bit for bit, a NaN matching any NaN: XLA promises
no payload; to a tolerance where noted), ``jax.vmap`` of it matches a loop,
``jax.jvp`` matches JAX's derivative of the ``lax`` equivalent, or the
engine refuses it, naming the op and the reason. Never a Python error, an
abort or a wrong number.

The run covers the selected cases only (``-k``); the coverage table's test
needs them all. ``docs/stablehlo.md``'s table is written by ``python -m
tests.stablehlo.coverage --write``.
"""

from __future__ import annotations

import time

import pytest

from . import conformance
from . import coverage
from . import spec_cases
from . import spec_types as st

_CASES = spec_cases.cases()
_NAMES = [c.name for c in _CASES]


def _selected(session: pytest.Session) -> list[str]:
  """The case names of the selected tests (all if the table's is)."""
  names = []
  for item in session.items:
    if item.name.startswith("test_the_coverage_table") or item.name.startswith(
        "test_what_the_issue_found"):
      return _NAMES
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "case" in callspec.params and \
        item.originalname == "test_case":
      names.append(callspec.params["case"])
  return names


@pytest.fixture(scope="session")
def outcomes(request) -> dict[str, conformance.Outcome]:
  start = time.perf_counter()
  out = conformance.run(_selected(request.session))
  elapsed = time.perf_counter() - start
  print(f"\nconformance: {len(out)} cases in {elapsed:.0f} s")
  return out


@pytest.mark.parametrize("case", _NAMES)
def test_case(outcomes, case):
  failures = outcomes[case].failures()
  assert not failures, f"{case}: " + "; ".join(failures)


def test_every_op_of_the_specification_has_cases():
  """The ops of the specification's index, each with a case or a note."""
  missing = [op for op in spec_cases.SPEC_OPS if op not in spec_cases.OPS
             and op not in spec_cases.COVERED_BY]
  assert not missing
  assert set(spec_cases.OPS) <= set(spec_cases.SPEC_OPS)


def test_every_case_parses_and_names_its_types():
  from jax._src.interpreters import mlir  # pylint: disable=g-import-not-at-top
  from jax._src.lib.mlir import ir  # pylint: disable=g-import-not-at-top
  failed = []
  with mlir.make_ir_context():
    for case in _CASES:
      if "quant" in case.module():
        continue  # (JAX's MLIR context has no quant dialect)
      try:
        ir.Module.parse(case.module())
      except Exception as e:  # pylint: disable=broad-except
        failed.append(f"{case.name}: {str(e)[:200]}")
      assert case.ty in st.ALL
  assert not failed, failed[:5]


# What the conformance run of issue 40 found, each now computed (not refused).
_MUST_COMPUTE = [
    *[f"{op}[{ty}][constant shape]" for op in (
        "dynamic_iota", "dynamic_broadcast_in_dim", "dynamic_reshape",
        "dynamic_pad", "dynamic_gather", "dynamic_conv") for ty in (
            "i32", "f32", "f64", "bf16")],
    *[f"power[{ty}]" for ty in st.INT],
    *[f"{op}[{ty}]" for op in ("map", "composite") for ty in (
        "i1", "i32", "f32", "complex<f64>")],
    "dot_general[f32][algorithm f32 f32 f32]",
    "dot_general[f64][algorithm f64 f64 f64]",
    "dot_general[bf16][algorithm bf16 bf16 f32]",
    "add[i1]", "multiply[i1]",
    *[f"constant[{ty}][decimal]" for ty in st.FLOAT + st.COMPLEX
      if ty not in ("f6E2M3FN", "f6E3M2FN")],
    "convert[complex<f32>][to i1]", "convert[complex<f64>][to i1]",
    *[f"{op}[{ty}]" for op in ("add", "multiply", "convert")
      for ty in ("i2", "i4", "ui2", "ui4", "f4E2M1FN", "f8E3M4", "f8E4M3",
                 "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ", "f8E8M0FNU")
      if op != "convert"],
]


def test_what_the_issue_found_is_computed(outcomes):
  not_computed = {n: f"{outcomes[n].status}: {outcomes[n].reason[:200]}"
                  for n in _MUST_COMPUTE if outcomes[n].status not in (
                      conformance.EXACT, conformance.CLOSE)}
  assert not not_computed, not_computed


def test_the_coverage_table_is_the_conformance_runs(outcomes):
  table = coverage.table(outcomes)
  assert coverage.committed() == table, (
      "docs/stablehlo.md's coverage table is stale: run `python -m "
      "tests.stablehlo.coverage --write`")
