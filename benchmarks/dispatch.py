"""Fast dispatch: which jitted calls carry a JAX effect, and what it costs.

The effect of ``has_side_effects=True`` is dropped only for TF
functions proven pure; a function with a stateful op keeps it, and with it
JAX's slow (Python, token-threading) dispatch path. Measured at N=1 (where
dispatch dominates), ``jax.jit(jax.vmap(call_tf(f)))`` of the ``small``
workload (pure), and of the same plus ``tf.random.uniform`` (stateful, a
negligible value added), against native JAX; each row says whether the
jaxpr has an effect. Samples are interleaved.
"""
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

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
from jax.experimental import jax2tf
import numpy as np
import tensorflow as tf

from benchmarks import timing
from benchmarks import workloads as wl


def stateful_small_tf(x):
  """``small`` plus a stateful random op (its value is below 1e-9)."""
  return wl.small_tf(x) + tf.random.uniform((2,), maxval=1e-9)


def cases() -> dict[str, tuple[str, Callable[[Any], Any]]]:
  """name -> (description, batched function of an ``(N, 7)`` batch)."""
  ct = jax2tf.call_tf
  return {
      "native": ("jax.vmap of the jnp function", jax.vmap(wl.small_jnp)),
      "pure": ("pure TF function, has_side_effects=True (the default)",
               jax.vmap(ct(wl.small_tf))),
      "pure_no_effects": ("pure TF function, has_side_effects=False",
                          jax.vmap(ct(wl.small_tf, has_side_effects=False))),
      "stateful": ("with tf.random.uniform, has_side_effects=True (a batch "
                   "of one: one unbatched call)",
                   jax.vmap(ct(stateful_small_tf))),
      "stateful_sequential": ("with tf.random.uniform, vmap_method="
                              "'sequential'",
                              jax.vmap(ct(stateful_small_tf,
                                          vmap_method="sequential"))),
      "stateful_no_effects": ("with tf.random.uniform, has_side_effects="
                              "False, vmap_method='sequential' (the user "
                              "opts out)",
                              jax.vmap(ct(stateful_small_tf,
                                          has_side_effects=False,
                                          vmap_method="sequential"))),
  }


def measure(n: int = 1, budget_s: float = 1.0, log=print
            ) -> list[dict[str, Any]]:
  """One row per case: steady time under jit, and the jaxpr's effects."""
  x = timing.as_input(np.ones((n, 7), np.float32), "jax")
  rows, prepared = [], []
  for name, (title, f) in cases().items():
    row = {"case": name, "title": title, "n": n}
    rows.append(row)
    try:
      row["effects"] = sorted(str(e) for e in jax.make_jaxpr(f)(x).effects)
      p = timing.prepare(lambda f=f: jax.jit(f), x, "jax", budget_s=budget_s,
                         min_samples=7)
    except Exception as e:  # pylint: disable=broad-except
      row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
      continue
    prepared.append((row, p))
  timing.sample_interleaved([p for _, p in prepared])
  for row, p in prepared:
    t = p.timing()
    row.update(steady=t.steady, samples=t.samples,
               calls_per_sample=t.calls_per_sample)
    log(f"  dispatch N={n} {row['case']:20s} {t.steady * 1e6:7.1f} us  "
        f"effects {row['effects'] or 'none'}")
  return rows
