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


def _row(km, model="vit", firsts=(1.,), parts=True):
  """A row of one model's jit(vmap), its first calls ``firsts`` (one
  process each), with or without their parts."""
  samples = [{"first_s": f, "steady_s": 1e-3,
              **({"lower_s": 0.1, "xla_s": f / 2, "xla_compile_s": f / 4,
                  "cache_write_s": 0.05} if parts else {})}
             for f in firsts]
  row = {"model": model, "transform": "vmap", "batch": 8,
         "repeats": len(firsts), "max_rel_diff": 1e-6}
  median = km._median  # pylint: disable=protected-access
  for k in ("native_cold", "call_tf_cold", "native_warm", "call_tf_warm"):
    row[k] = median(samples)
  row["floor"] = median([{"floor_s": 0.5, "tf_trace_s": 0.2}
                         for _ in firsts])
  return row


def test_merge_takes_the_median_of_every_process(km):
  new, old = _row(km, firsts=(3., 5.)), _row(km, firsts=(1.,), parts=False)
  old["max_rel_diff"] = 2e-3
  merged = km.merge([new, old])
  assert merged["repeats"] == 3
  assert merged["call_tf_cold"]["first_s"] == 3.
  assert len(merged["call_tf_cold"]["samples"]) == 3
  # A number the older run did not record: the median of those that did.
  assert merged["call_tf_cold"]["xla_s"] == 2.
  assert merged["max_rel_diff"] == 2e-3
  # The parts table: the processes that timed the parts alone (3 and 5).
  table = "\n".join(km._parts_table({"rows": [merged]}))  # pylint: disable=protected-access
  assert "| vit | `jit(vmap)` | call_tf | 4.00 s | 1.90 s | 0.10 s |" in table


def test_merge_refuses_rows_of_other_models(km):
  with pytest.raises(ValueError, match="resnet50"):
    km.merge([_row(km), _row(km, model="resnet50")])
