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
tests.stablehlo.coverage --write``. Neither depends on the instruction set
XLA:CPU compiles for: a second run on another one (``XLA_FLAGS=
--xla_cpu_max_isa=AVX2``) gives the same outcomes, for the types whose
results XLA:CPU computes per instruction set (all types in the full run,
``--full-run``).
"""

from __future__ import annotations

import os
import time

import ml_dtypes
import numpy as np
import pytest

from . import conformance
from . import coverage
from . import spec_cases
from . import spec_types as st

_CASES = spec_cases.cases()
_NAMES = [c.name for c in _CASES]


# The types whose results XLA:CPU computes otherwise on some instruction
# sets (conformance._FLUSHED_BY_SOME_CPUS), those it converts by
# instructions of their own where the CPU has them (AVX512_BF16, AMX_BF16;
# F16C, AVX512_FP16): the run on another instruction set runs their cases
# in the default run, every case in the full run. Measured on a CPU with
# AVX512_BF16 (docs/stablehlo.md): of the 4,498 cases only bf16's outcomes
# differed with AVX2 before `compare`'s rule for subnormals.
_ISA_TYPES = ("bf16", "f16")


def _isa_names(full_run: bool) -> list[str]:
  return [n for n in _NAMES if full_run or
          conformance._parse_name(n)[1] in _ISA_TYPES]  # pylint: disable=protected-access


def _selected(session: pytest.Session) -> list[str]:
  """The case names of the selected tests (all if the table's is)."""
  names = []
  for item in session.items:
    if getattr(item, "module", None) is None or \
        item.module.__name__ != __name__:
      continue  # (another file's tests: the op matrix's have `case` too)
    if item.name.startswith("test_the_coverage_table") or item.name.startswith(
        "test_what_the_issue_found"):
      return _NAMES
    if item.name.startswith("test_the_outcomes_do_not_depend"):
      names += _isa_names(bool(session.config.getoption("--full-run")))
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "case" in callspec.params and \
        item.originalname == "test_case":
      names.append(callspec.params["case"])
  return list(dict.fromkeys(names))


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


def _class(o: conformance.Outcome) -> tuple[str, ...]:
  """What of an outcome the table shows: its status, the refusal's reason,
  and the kind of each check (``exact``, ``close``, ``wrong``...)."""
  return (o.status, o.reason if o.status == conformance.REFUSED else "",
          o.batched.split(":")[0], o.differentiated.split(":")[0])


def test_the_outcomes_do_not_depend_on_the_instruction_set(outcomes,
                                                           full_run):
  """The cases run again where XLA:CPU compiles for another instruction set
  (``--xla_cpu_max_isa=AVX2`` on a CPU with AVX-512, or without the limit
  where this run has one) end as they did here, and the coverage table is
  the same (issue 51: a bf16 subnormal that XLA flushes on one CPU only)."""
  other = conformance.another_instruction_set(os.environ,
                                              conformance.cpu_flags())
  if other is None:
    pytest.skip("the CPU has no instruction set wider than AVX2 (no "
                "avx512f in /proc/cpuinfo) and XLA_FLAGS sets no "
                "--xla_cpu_max_isa: nothing to compare")
  environ, which = other
  names = _isa_names(full_run)
  again = conformance.run(names, environ=environ)
  differ = {n: (_class(outcomes[n]), _class(again[n])) for n in names
            if _class(outcomes[n]) != _class(again[n])}
  assert not differ, (f"{len(differ)} outcome(s) differ {which}: "
                      f"{dict(list(differ.items())[:5])}")
  assert coverage.table({**outcomes, **again}) == coverage.table(outcomes)


@pytest.mark.parametrize("ty", ["bf16", "f16", "f8E4M3FN", "f8E5M2FNUZ"])
def test_a_flushed_subnormal_matches_the_zero_of_its_sign_only(ty):
  """`compare`'s rule for what XLA:CPU flushes on some CPUs: in a float of
  16 bits or fewer a subnormal matches the zero of its sign (the only
  zero of the FNUZ types); any other difference stays wrong."""
  dtype = st.DTYPES[ty]
  tiny = float(ml_dtypes.finfo(dtype).smallest_subnormal)
  sub = np.array([tiny, -tiny], dtype)
  neg_zero = np.array(-0., dtype)
  zeros = np.array([0., neg_zero], dtype)
  assert conformance.compare(sub, zeros, 0) == conformance.EXACT
  assert conformance.compare(zeros, sub, 0) == conformance.EXACT
  if neg_zero.view(f"u{dtype.itemsize}") != 0:  # (a type with -0)
    swapped = np.array([neg_zero, 0.], dtype)
    assert conformance.compare(sub, swapped, 0).startswith(conformance.WRONG)
  normal = float(ml_dtypes.finfo(dtype).smallest_normal)
  for other in ([normal, -normal], [2 * tiny, -2 * tiny], [tiny, tiny]):
    assert conformance.compare(sub, np.array(other, dtype), 0).startswith(
        conformance.WRONG), other


def test_no_flush_rule_for_wider_types():
  """f32 and f64 subnormals: XLA:CPU keeps them on every instruction set,
  and the comparison holds them bit for bit."""
  for dtype in (np.float32, np.float64):
    tiny = np.finfo(dtype).smallest_subnormal
    assert conformance.compare(np.array([tiny], dtype), np.zeros(1, dtype),
                               0).startswith(conformance.WRONG)


def test_a_case_with_a_tolerance_is_close_even_where_its_bits_match():
  """The class says what the comparison held the case to, so that it is the
  same on a CPU where the bits happen to match and on one where they do
  not."""
  x = np.array([1., 2.], np.float32)
  assert conformance.compare(x, x, 1e-5) == conformance.CLOSE
  assert conformance.compare(x, x, 0) == conformance.EXACT
  assert conformance.compare(x, x * (1 + 1e-7), 1e-5) == conformance.CLOSE
  assert conformance.compare(x, x * 1.1, 1e-5).startswith(conformance.WRONG)
  i = np.array([1, 2], np.int32)
  assert conformance.compare(i, i, 1e-5) == conformance.EXACT


@pytest.mark.parametrize("flags,cpu,expected", [
    ("", {"avx2", "avx512f"}, "--xla_cpu_max_isa=AVX2"),
    ("--xla_foo=1", {"avx2", "avx512f"}, "--xla_foo=1 --xla_cpu_max_isa=AVX2"),
    ("--xla_cpu_max_isa=AVX2 --xla_foo=1", {"avx2", "avx512f"},
     "--xla_foo=1"),
    ("--xla_cpu_max_isa=AVX2 --xla_foo=1", {"avx2"}, None),
    ("--xla_cpu_max_isa=SSE4_2", {"avx2"}, ""),
    ("", {"avx2"}, None),
])
def test_another_instruction_set(flags, cpu, expected):
  other = conformance.another_instruction_set(
      {"XLA_FLAGS": flags, "HOME": "/h"}, frozenset(cpu))
  if expected is None:
    assert other is None
  else:
    assert other[0] == {"XLA_FLAGS": expected, "HOME": "/h"}
