"""Timing: first call, then the median of repeats after warm-up.

A sample times ``k`` back-to-back calls, each waited for (``k`` chosen so a
sample lasts about ``sample_s``; a single call of a few microseconds is below
the timer's resolution and the machine's noise), and reports the time per
call. The steady-state time is the median of the samples. The harness takes
the samples of all methods of one workload and batch size round-robin
(:func:`sample_interleaved`), so that they share the machine's noise.
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

from collections.abc import Callable, Sequence
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


@dataclasses.dataclass
class Prepared:
  """A callable after its first call and warm-up, ready to be sampled.

  Attributes:
    fn: the callable.
    x: its argument.
    framework: ``"jax"`` or ``"tf"``.
    first_call: as in :class:`Timing`.
    result: the first call's result.
    calls_per_sample: ``k``.
    n_samples: how many samples to take.
    samples: the per-call time of the samples taken so far.
  """
  fn: Callable[[Any], Any]
  x: Any
  framework: str
  first_call: float
  result: Any
  calls_per_sample: int
  n_samples: int
  samples: list[float] = dataclasses.field(default_factory=list)

  def sample(self) -> None:
    """Takes one sample: ``k`` calls, each waited for."""
    t0 = time.perf_counter()
    for _ in range(self.calls_per_sample):
      block(self.fn(self.x), self.framework)
    self.samples.append((time.perf_counter() - t0) / self.calls_per_sample)

  def timing(self) -> Timing:
    """The :class:`Timing` of the samples taken."""
    steady = statistics.median(self.samples)
    return Timing(first_call=self.first_call, steady=steady,
                  compile=max(self.first_call - steady, 0.),
                  samples=self.samples,
                  calls_per_sample=self.calls_per_sample, result=self.result)


def prepare(build: Callable[[], Callable[[Any], Any]], x: Any, framework: str,
            *, sample_s: float = 0.01, budget_s: float = 1.0,
            min_samples: int = 3, max_samples: int = 15,
            warmup: int = 2, warmup_s: float = 0.05) -> Prepared:
  """Times the first call of a fresh callable, warms it up, plans samples.

  Args:
    build: returns a fresh callable (nothing cached yet).
    x: its argument, already placed (see :func:`as_input`).
    framework: ``"jax"`` or ``"tf"``.
    sample_s: the target duration of one sample.
    budget_s: the target total duration of the samples.
    min_samples: at least this many samples, whatever the budget.
    max_samples: at most this many samples.
    warmup: calls after the first, not timed (one if it is slow).
    warmup_s: warm up for at least this long too (fast functions).

  Returns:
    The :class:`Prepared` callable, no sample taken yet.
  """
  t0 = time.perf_counter()
  fn = build()
  result = block(fn(x), framework)
  first_call = time.perf_counter() - t0
  # Warm up for at least `warmup` calls and about `warmup_s`: the first calls
  # after a compilation can be slow, and one slow call would make the samples
  # single calls of a cold function. The call time that plans the samples
  # is the median of the second half of the warm-up.
  times: list[float] = []
  start = time.perf_counter()
  while (len(times) < warmup
         or (time.perf_counter() - start < warmup_s and len(times) < 1000)):
    t0 = time.perf_counter()
    block(fn(x), framework)
    times.append(max(time.perf_counter() - t0, 1e-7))
    if times[-1] > budget_s / 4:  # a slow call: one warm-up call is enough
      break
  one = statistics.median(times[len(times) // 2:])
  k = max(1, int(sample_s / one))
  n_samples = int(min(max_samples, max(min_samples, budget_s / (k * one))))
  return Prepared(fn, x, framework, first_call, result, k, n_samples)


def sample_interleaved(prepared: Sequence[Prepared]) -> None:
  """Samples every prepared callable, round-robin, until each has its own.

  Interleaving gives every method the same share of the machine's noise, so
  that ratios measured in one round are fair on a shared, noisy machine.
  """
  while True:
    pending = [p for p in prepared if len(p.samples) < p.n_samples]
    if not pending:
      return
    for p in pending:
      p.sample()


def measure(build: Callable[[], Callable[[Any], Any]], x: Any, framework: str,
            **kwargs: Any) -> Timing:
  """Times the first call of a fresh callable, then its steady state.

  Args:
    build: returns a fresh callable (nothing cached yet).
    x: its argument, already placed (see :func:`as_input`).
    framework: ``"jax"`` or ``"tf"``.
    **kwargs: see :func:`prepare`.

  Returns:
    The :class:`Timing`.
  """
  p = prepare(build, x, framework, **kwargs)
  sample_interleaved([p])
  return p.timing()


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
