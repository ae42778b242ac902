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
"""benchmarks/steady_one_process.py's table.

The committed table is what its JSON generates (a figure edited by hand
fails here), and a row's verdict follows the steady-state target.
"""

from __future__ import annotations

import json
import sys

import pytest


@pytest.fixture(scope="module")
def sop(root):
  sys.path.insert(0, str(root))
  try:
    import benchmarks.steady_one_process as module  # pylint: disable=g-import-not-at-top
    yield module
  finally:
    sys.path.remove(str(root))


def test_committed_table_is_generated(sop, root):
  out = root / "benchmarks" / "results" / "keras_models"
  data = json.loads((out / "steady_one_process.json").read_text())
  assert (out / "steady_one_process.md").read_text() == sop.markdown(data), (
      f"regenerate it: python -m benchmarks.steady_one_process --report {out}")


def _row(native: float, call_tf: float) -> dict:
  return {"model": "vit", "transform": "vmap_grad", "batch": 4,
          "rounds": 2, "calls": 3, "ratio": call_tf / native,
          "native": {"median_s": native, "min_s": native,
                     "round_medians_s": [native, native]},
          "call_tf": {"median_s": call_tf, "min_s": call_tf,
                      "round_medians_s": [call_tf, call_tf]}}


def test_verdicts_follow_the_target(sop):
  table = sop.markdown({"rows": [
      _row(1e-3, 1.04e-3), _row(1e-3, 1.2e-3),
      {"model": "vit", "transform": "vmap", "batch": 4,
       "error": "call_tf: exit 1: boom"}]})
  lines = [line for line in table.splitlines() if line.startswith("| vit")]
  assert "| 1.04x | yes |" in lines[0]
  assert "| 1.20x | **no** |" in lines[1]
  assert "error: call_tf: exit 1: boom" in lines[2]
