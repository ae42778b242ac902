"""Eager ``vmap`` (no ``jax.jit`` anywhere), at one batch size.

How a notebook or an eager training loop calls a TF function through
``call_tf`` under ``jax.vmap`` (and per-example gradients and Hessians:
``vmap`` of ``jacrev``, ``hessian``), against native eager JAX,
TensorFlow's own ``tf.vectorized_map`` and tf2jax:

* ``fork_new``: ``jax.vmap(jax2tf.call_tf(f))(x)``, a new ``call_tf``
  object on every call (written inline in a loop);
* ``fork_reused``: one ``call_tf(f)`` object, called again and again;
* ``fork_tf_function``: one ``call_tf(tf.function(f))`` object;
* ``fork_tf_function_new``: a new ``call_tf`` object of the same
  ``tf.function`` on every call;

where ``f`` is a plain Python TF function. Every sample of every method is
taken round-robin (:func:`benchmarks.timing.sample_interleaved`), so ratios
compare like with like on a noisy machine.
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
from typing import Any

import jax
from jax.experimental import jax2tf
import numpy as np
import tensorflow as tf

from benchmarks import timing
from benchmarks import workloads as wl

N = 256
WORKLOADS = ("mlp128", "small", "mlp", "mlp_matvec", "energy", "energy_jac",
             "keras", "mlp128_grad", "lj8_grad", "lj8_hessian")


@dataclasses.dataclass(frozen=True)
class EagerMethod:
  name: str
  title: str
  build: Callable[[wl.Workload], Callable[[Any], Any]]
  framework: str = "jax"


def _native(w: wl.Workload) -> Callable[[Any], Any]:
  return jax.vmap(wl.per_example(w, w.jnp_fn))


def _fork_new(w: wl.Workload) -> Callable[[Any], Any]:
  return lambda x: jax.vmap(wl.per_example(w, jax2tf.call_tf(w.tf_fn)))(x)


def _fork_reused(w: wl.Workload) -> Callable[[Any], Any]:
  return jax.vmap(wl.per_example(w, jax2tf.call_tf(w.tf_fn)))


def _tf_function(w: wl.Workload) -> Any:
  return tf.function(w.tf_fn, autograph=False)


def _fork_tf_function(w: wl.Workload) -> Callable[[Any], Any]:
  return jax.vmap(wl.per_example(w, jax2tf.call_tf(_tf_function(w))))


def _fork_tf_function_new(w: wl.Workload) -> Callable[[Any], Any]:
  tf_fn = _tf_function(w)
  return lambda x: jax.vmap(wl.per_example(w, jax2tf.call_tf(tf_fn)))(x)


def _tf_batched(w: wl.Workload, xs: Any) -> Any:
  if w.derivative not in (None, "jacrev"):
    raise NotImplementedError(f"TensorFlow's {w.derivative} is not measured")
  if not w.jacobian:
    return tf.vectorized_map(w.tf_fn, xs)
  with tf.GradientTape() as tape:
    tape.watch(xs)
    ys = tf.vectorized_map(w.tf_fn, xs)
  return tape.batch_jacobian(ys, xs)


def _tf_eager(w: wl.Workload) -> Callable[[Any], Any]:
  return lambda xs: _tf_batched(w, xs)


def _tf_function_vmap(w: wl.Workload) -> Callable[[Any], Any]:
  return tf.function(lambda xs: _tf_batched(w, xs), autograph=False,
                     jit_compile=False, reduce_retracing=False)


def _tf2jax(w: wl.Workload) -> Callable[[Any], Any]:
  import tf2jax  # pylint: disable=g-import-not-at-top
  jax_fn, params = tf2jax.convert(_tf_function(w),
                                  np.zeros(w.example_shape, np.float32))
  return jax.vmap(wl.per_example(w, lambda x: jax_fn(params, x)[0]))


METHODS: tuple[EagerMethod, ...] = (
    EagerMethod("native", "jax.vmap of the jnp function, eagerly", _native),
    EagerMethod("fork_reused", "one call_tf(f) object of a plain Python TF "
                "function, called again and again", _fork_reused),
    EagerMethod("fork_tf_function", "one call_tf(tf.function(f)) object",
                _fork_tf_function),
    EagerMethod("fork_new", "jax.vmap(jax2tf.call_tf(f))(x): a new call_tf "
                "object on every call", _fork_new),
    EagerMethod("fork_tf_function_new", "a new call_tf object of the same "
                "tf.function on every call", _fork_tf_function_new),
    EagerMethod("tf_vectorized_map", "TensorFlow: tf.vectorized_map(f, x) "
                "eagerly (and batch_jacobian), no tf.function", _tf_eager,
                framework="tf"),
    EagerMethod("tf_function", "TensorFlow: tf.vectorized_map in a "
                "tf.function without XLA, reused", _tf_function_vmap,
                framework="tf"),
    EagerMethod("tf2jax", "tf2jax.convert of the TF function, then eager "
                "jax.vmap", _tf2jax),
)


def measure(workloads: Sequence[wl.Workload], n: int = N, *,
            budget_s: float = 1.0, log=print) -> list[dict[str, Any]]:
  """Measures every eager method on every workload at batch size ``n``.

  Returns:
    One row per (workload, method): ``steady`` (median seconds per call),
    ``samples``, ``first_call``, ``max_rel_err`` against native.
  """
  rows = []
  for w in workloads:
    x_np = w.inputs(n)
    prepared = []
    for m in METHODS:
      row = {"workload": w.name, "method": m.name, "n": n}
      rows.append(row)
      try:
        p = timing.prepare(lambda m=m: m.build(w),
                           timing.as_input(x_np, m.framework), m.framework,
                           budget_s=budget_s, sample_s=0.02, min_samples=5)
      except Exception as e:  # pylint: disable=broad-except
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
        log(f"  eager {w.name} {m.name}: FAILED {row['error']}")
        continue
      prepared.append((row, p))
    timing.sample_interleaved([p for _, p in prepared])
    ref = next(np.asarray(p.result, np.float64) for r, p in prepared
               if r["method"] == "native")
    for row, p in prepared:
      t = p.timing()
      res = np.asarray(t.result, np.float64).reshape(ref.shape)
      row.update(steady=t.steady, samples=t.samples,
                 calls_per_sample=t.calls_per_sample,
                 first_call=t.first_call,
                 max_rel_err=float(np.max(np.abs(res - ref))
                                   / (np.max(np.abs(ref)) + 1e-30)))
      log(f"  eager {w.name:10s} N={n} {row['method']:22s} "
          f"{t.steady * 1e3:9.2f} ms")
  return rows


def methods_doc() -> list[dict[str, str]]:
  return [{"name": m.name, "title": m.title} for m in METHODS]
