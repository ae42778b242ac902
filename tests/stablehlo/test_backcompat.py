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
"""The engine on JAX's own back-compat test data (:mod:`.backcompat`).

Every file and data entry: read and expressed or refused with the reason;
a CPU module run (XLA's results bit for bit, the stored ones to
tolerance or by invariants), batched (``vmap`` equals a loop) and
differentiated (``jvp`` equals a central difference, or refused by name);
a CUDA or ROCm module (and TPU's LU and QR) run here by the rules, equal
to the outputs its platform stored, batched and differentiated so.
Never a Python error, an unreadable module without its reason, or a wrong
number. The coverage table in ``docs/stablehlo.md`` is the run's.
"""

from __future__ import annotations

import jax
import pytest

from . import backcompat

_ENTRIES = backcompat.entries()
pytestmark = pytest.mark.skipif(
    not _ENTRIES, reason="this jax's wheel has no back-compat test data")
# The data this table was generated from: the default release's.
_TABLE_RELEASE = "0.12"


@pytest.fixture(scope="session")
def outcomes() -> dict[str, backcompat.Outcome]:
  return backcompat.run()


@pytest.mark.parametrize("entry", [e.name for e in _ENTRIES])
def test_entry(outcomes, entry):
  o = outcomes[entry]
  assert not o.failures, f"{entry}: " + "; ".join(o.failures)
  assert o.unreadable is None or "conversion error" not in o.unreadable, (
      f"{entry}: unreadable without a reason: {o.unreadable}")


def test_every_cpu_module_is_expressed_and_run(outcomes):
  if not jax.__version__.startswith(_TABLE_RELEASE):
    pytest.skip(f"older releases' data hold LAPACK's older targets (the "
                f"table is of jax {_TABLE_RELEASE}'s)")
  by_name = {e.name: e for e in _ENTRIES}
  cpu = {n: o for n, o in outcomes.items() if by_name[n].platform == "cpu"}
  assert len(cpu) >= 40, sorted(cpu)
  not_run = {n: (o.refused, o.unreadable) for n, o in cpu.items()
             if "call" not in o.checks}
  assert not not_run, not_run


def test_every_gpu_module_is_expressed_and_run_here(outcomes):
  """The CUDA and ROCm modules (their libraries' calls computed by the
  rules) and TPU's LU and QR run on this machine, equal to the outputs
  the GPU or TPU stored."""
  if not jax.__version__.startswith(_TABLE_RELEASE):
    pytest.skip(f"older releases' data hold older GPU targets (the table "
                f"is of jax {_TABLE_RELEASE}'s)")
  by_name = {e.name: e for e in _ENTRIES}
  here = {n: o for n, o in outcomes.items()
          if by_name[n].platform in ("cuda", "rocm")
          or by_name[n].file in ("tpu_Lu", "tpu_Qr")}
  assert len(here) >= 70, sorted(here)
  not_run = {n: (o.refused, o.unreadable, o.failures)
             for n, o in here.items() if "call" not in o.checks}
  assert not not_run, not_run


def test_the_coverage_table_is_the_runs(outcomes):
  if not jax.__version__.startswith(_TABLE_RELEASE):
    pytest.skip(f"the table is of jax {_TABLE_RELEASE}'s test data")
  assert backcompat.committed() == backcompat.table(outcomes), (
      "docs/stablehlo.md's back-compat table is stale: run `python -m "
      "tests.stablehlo.backcompat --write`")
