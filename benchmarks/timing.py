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
"""Timing: first call, then the median of repeats after warm-up.

A sample times ``k`` back-to-back calls, each waited for (``k`` chosen so a
sample lasts about ``sample_s``; a single call of a few microseconds is below
the timer's resolution and the machine's noise), and reports the time per
call. The steady-state time is the median of the samples.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
import statistics
import time
from typing import Any

import jax
import numpy as np
import tensorflow as tf


@dataclasses.dataclass
class Timing:
  """The measured times of one (workload, method, mode, N), in seconds.

  Attributes:
    first_call: building the callable and its first call, result ready:
      tracing, conversion, compilation and one run.
    steady: median time per call after warm-up.
    compile: ``first_call - steady`` (at least 0): the one-time cost.
    samples: the per-call time of each sample.
    calls_per_sample: the ``k`` of each sample.
    result: the first call's result, as NumPy.
  """
  first_call: float
  steady: float
  compile: float
  samples: list[float]
  calls_per_sample: int
  result: Any = None


def block(out: Any, framework: str) -> Any:
  """Waits for ``out`` to be computed; returns it."""
  if framework == "tf":
    return tf.nest.map_structure(
        lambda t: t.numpy() if isinstance(t, tf.Tensor) else t, out)
  return jax.block_until_ready(out)


def as_input(x: np.ndarray, framework: str) -> Any:
  """``x`` placed for the framework: a JAX array or a TF tensor."""
  if framework == "tf":
    return tf.constant(x)
  return jax.block_until_ready(jax.device_put(x))


def measure(build: Callable[[], Callable[[Any], Any]], x: Any, framework: str,
            *, sample_s: float = 0.01, budget_s: float = 1.0,
            min_samples: int = 3, max_samples: int = 15,
            warmup: int = 2) -> Timing:
  """Times the first call of a fresh callable, then its steady state.

  Args:
    build: returns a fresh callable (nothing cached yet).
    x: its argument, already placed (see :func:`as_input`).
    framework: ``"jax"`` or ``"tf"``.
    sample_s: the target duration of one sample.
    budget_s: the target total duration of the samples.
    min_samples: at least this many samples, whatever the budget.
    max_samples: at most this many samples.
    warmup: calls after the first, not timed (one if it is slow).

  Returns:
    The :class:`Timing`.
  """
  t0 = time.perf_counter()
  fn = build()
  result = block(fn(x), framework)
  first_call = time.perf_counter() - t0
  samples = []
  for _ in range(warmup):
    t0 = time.perf_counter()
    block(fn(x), framework)
    one = max(time.perf_counter() - t0, 1e-7)
    if one > budget_s / 4:  # a slow call: the warm-up call is enough
      break
  k = max(1, int(sample_s / one))
  n_samples = int(min(max_samples, max(min_samples, budget_s / (k * one))))
  if k == 1 and one > budget_s / 4:
    n_samples = min_samples
  for _ in range(n_samples):
    t0 = time.perf_counter()
    for _ in range(k):
      block(fn(x), framework)
    samples.append((time.perf_counter() - t0) / k)
  steady = statistics.median(samples)
  return Timing(first_call=first_call, steady=steady,
                compile=max(first_call - steady, 0.), samples=samples,
                calls_per_sample=k, result=result)


@dataclasses.dataclass
class CompileBreakdown:
  """Where the first call of a jitted function spends its time, in seconds.

  Attributes:
    trace: ``jit(f).trace(x)``: tracing to a jaxpr (for call_tf this runs
      the batching rule: TF tracing, pfor, and the HLO probe under jit).
    lower: ``.lower()``: lowering to StableHLO (call_tf converts the TF
      function to HLO here).
    compile: ``.compile()``: XLA compilation.
  """
  trace: float
  lower: float
  compile: float


def compile_breakdown(build: Callable[[], Callable[[Any], Any]],
                      x: Any) -> CompileBreakdown:
  """Times trace, lower and compile of a fresh jitted callable."""
  fn = build()
  t0 = time.perf_counter()
  traced = fn.trace(x)
  t1 = time.perf_counter()
  lowered = traced.lower()
  t2 = time.perf_counter()
  lowered.compile()
  t3 = time.perf_counter()
  return CompileBreakdown(trace=t1 - t0, lower=t2 - t1, compile=t3 - t2)
