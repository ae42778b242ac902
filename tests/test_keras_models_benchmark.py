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
"""benchmarks/keras_models.py's tables and its merge of runs.

The committed tables are what their JSON generates (a figure edited by
hand fails here), and runs merged into one row take the median of all
their processes, each number over the processes that measured it.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest


@pytest.fixture(scope="module")
def km(root):
  spec = importlib.util.spec_from_file_location(
      "benchmarks_keras_models", root / "benchmarks" / "keras_models.py")
  module = importlib.util.module_from_spec(spec)
  sys.modules[spec.name] = module
  spec.loader.exec_module(module)
  yield module
  del sys.modules[spec.name]


@pytest.mark.parametrize("run", ["keras_models", "accelerator"])
def test_committed_table_is_generated(km, root, run):
  out = root / "benchmarks" / "results" / run
  data = json.loads((out / "keras_models.json").read_text())
  assert (out / "keras_models.md").read_text() == km.markdown(data), (
      f"regenerate it: python -m benchmarks.keras_models --report {out}")


def _row(km, model="vit", samples=((1., None),)):
  """A row of one model's jit(vmap): each sample a process's first call
  and its parts ``(lower, xla, xla_compile, cache_read, cache_write)``, or
  None for a process that did not time them."""
  made = []
  for first, parts in samples:
    made.append({"first_s": first, "steady_s": 1e-3})
    if parts is not None:
      made[-1].update(zip(("lower_s", "xla_s", "xla_compile_s",
                           "cache_read_s", "cache_write_s"), parts))
  row = {"model": model, "transform": "vmap", "batch": 8,
         "repeats": len(made), "max_rel_diff": 1e-6}
  median = km._median  # pylint: disable=protected-access
  for k in ("native_cold", "call_tf_cold", "native_warm", "call_tf_warm"):
    row[k] = median(made)
  row["floor"] = median([{"floor_s": 0.5, "tf_trace_s": 0.2} for _ in made])
  return row


def _table(km, row):
  return "\n".join(km._parts_table({"rows": [row]}))  # pylint: disable=protected-access


def test_merge_takes_the_median_of_every_process(km):
  # Lopsided on purpose: the median of each process's rest (4.40 s) is
  # not the rest of the medians (5 - 0.1 - 1.0 = 3.90 s).
  new = _row(km, samples=((3., (0.1, 2.5, 2.0, 0.1, 0.2)),
                          (5., (0.1, 0.5, 0.2, 0.1, 0.1)),
                          (10., (0.1, 1.0, 0.5, 0.1, 0.1))))
  old = _row(km, samples=((1., None),))
  old["max_rel_diff"] = 2e-3
  merged = km.merge([new, old])
  assert merged["repeats"] == 4
  assert merged["call_tf_cold"]["first_s"] == 4.
  assert len(merged["call_tf_cold"]["samples"]) == 4
  # A number the older run did not record: the median of those that did.
  assert merged["call_tf_cold"]["xla_s"] == 1.
  assert merged["max_rel_diff"] == 2e-3
  # The parts: the processes that timed them alone (3, 5 and 10 s); the
  # cache's key and the rest of getting the executable, 0.2, 0.1 and 0.3.
  assert ("| vit | `jit(vmap)` | call_tf | 5.00 s | 4.40 s | 0.10 s | "
          "0.50 s | 0.10 s | 0.20 s |") in _table(km, merged)


def test_a_stage_not_timed_is_not_reported(km):
  row = _row(km, samples=((3., (0.1, 2.5, 2.0, 0.1, 0.2)),))
  for sample in row["call_tf_cold"]["samples"]:
    del sample["xla_compile_s"]  # a JAX release naming it otherwise
  assert ("| call_tf | 3.00 s | 0.40 s | 0.10 s | - | 0.20 s | - |"
          in _table(km, row))


def test_merge_refuses_rows_of_other_models(km):
  with pytest.raises(ValueError, match="resnet50"):
    km.merge([_row(km), _row(km, model="resnet50")])


def test_xla_parts_times_one_compile_and_puts_jax_back(km):
  import jax  # pylint: disable=g-import-not-at-top
  from jax._src import compiler  # pylint: disable=g-import-not-at-top
  before = compiler.compile_or_get_cached
  fn = jax.jit(lambda v: v * 3 + 1)  # a function of its own: not cached
  x = jax.block_until_ready(jax.numpy.arange(5.))
  with km._xla_parts() as parts:  # pylint: disable=protected-access
    assert compiler.compile_or_get_cached is not before
    jax.block_until_ready(fn(x))
  assert compiler.compile_or_get_cached is before
  assert parts["xla_calls"] == parts["lower_calls"] == 1
  assert parts["xla_compile_calls"] == 1
  assert 0 < parts["xla_compile_s"] <= parts["xla_s"]
