"""The ways of running a workload over a batch of ``N`` examples.

Each :class:`Method` builds, for one workload and one mode, a fresh callable
of the batch (``(N, *example_shape)`` -> stacked results). Fresh means no
cache of JAX or TensorFlow holds it yet, so its first call measures tracing,
conversion and compilation. Modes:

* ``"jit"``: the staged, compiled path (``jax.jit``; for TensorFlow,
  ``tf.function(jit_compile=True)``).
* ``"eager"``: no ``jax.jit`` (for TensorFlow, ``tf.function`` without XLA).
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
import dataclasses
import functools
from typing import Any

import jax
from jax.experimental import jax2tf
import jax.numpy as jnp
import numpy as np
import tensorflow as tf

from benchmarks import workloads as wl

MODES = ("jit", "eager")


@dataclasses.dataclass(frozen=True)
class Method:
  """One way to batch a workload.

  Attributes:
    name: short identifier (table column, plot legend).
    title: one-line description for the report.
    build: ``build(workload, mode, n)`` returns a fresh callable of the
      batch.
    applies: ``applies(workload)``: whether the method handles it.
    modes: the modes the method runs in.
    framework: ``"jax"`` or ``"tf"``: how inputs are given and results
      synchronized.
    max_n: per mode, the largest batch measured in a full run (the method
      is linear in N beyond it, and slow); None for no limit. A mode with a
      limit is also skipped from the N where one measurement is predicted
      (linearly) to take too long.
    compile_grows: the modes whose compile time grows with N (a loop
      unrolled into the program).
  """
  name: str
  title: str
  build: Callable[[wl.Workload, str, int], Callable[[Any], Any]]
  applies: Callable[[wl.Workload], bool] = lambda w: True
  modes: tuple[str, ...] = MODES
  framework: str = "jax"
  max_n: dict[str, int] = dataclasses.field(default_factory=dict)
  compile_grows: tuple[str, ...] = ()


def _per_example(w: wl.Workload, f: Callable[[Any], Any]) -> Callable[[Any], Any]:
  """The per-example function: ``f`` or the workload's derivative of it."""
  return wl.per_example(w, f)


def _plain_or_jacrev(w: wl.Workload) -> bool:
  return w.derivative in (None, "jacrev")


def _maybe_jit(f: Callable[[Any], Any], mode: str) -> Callable[[Any], Any]:
  return jax.jit(f) if mode == "jit" else f


def _native(w: wl.Workload, mode: str, n: int) -> Callable[[Any], Any]:
  del n
  # A fresh Python function, so that no JAX cache holds its trace.
  def fn(x):
    return w.jnp_fn(x)
  return _maybe_jit(jax.vmap(_per_example(w, fn)), mode)


def _call_tf(vmap_method: str | None, has_side_effects: bool = True
             ) -> Callable[[wl.Workload, str, int], Callable[[Any], Any]]:
  def build(w: wl.Workload, mode: str, n: int) -> Callable[[Any], Any]:
    del n
    f = jax2tf.call_tf(w.tf_fn, vmap_method=vmap_method,
                       has_side_effects=has_side_effects)
    return _maybe_jit(jax.vmap(_per_example(w, f)), mode)
  return build


def _jacobian_by_rows(f: Callable[[Any], Any], x: Any) -> Any:
  """The Jacobian of ``f`` at ``x`` by one VJP per output: no vmap needed."""
  y, vjp = jax.vjp(f, x)
  rows = [vjp(jnp.zeros_like(y).at[i].set(1.))[0] for i in range(y.size)]
  return jnp.stack(rows).reshape(y.shape + x.shape)


def _loop(w: wl.Workload, mode: str, n: int) -> Callable[[Any], Any]:
  """A Python loop of call_tf calls, one per example, as written by hand."""
  del n
  f = jax2tf.call_tf(w.tf_fn)
  one = (functools.partial(_jacobian_by_rows, f) if w.jacobian else f)

  def loop(xs):
    return jnp.stack([one(xs[i]) for i in range(xs.shape[0])])
  return _maybe_jit(loop, mode)


def _loop_of_jitted(w: wl.Workload, mode: str, n: int
                    ) -> Callable[[Any], Any]:
  """A Python loop that calls a jitted per-example call_tf function."""
  del mode, n
  f = jax2tf.call_tf(w.tf_fn)
  one = jax.jit(functools.partial(_jacobian_by_rows, f) if w.jacobian else f)

  def loop(xs):
    return jnp.stack([one(x) for x in xs])
  return loop


def _tf_batched(w: wl.Workload, mode: str, n: int) -> Callable[[Any], Any]:
  """TensorFlow itself: tf.vectorized_map, batch_jacobian for the Jacobian."""
  del n
  tf_fn = w.tf_fn
  if not _plain_or_jacrev(w):
    raise ValueError(f"no TensorFlow form of {w.derivative!r}")

  def batched(xs):
    if not w.jacobian:
      return tf.vectorized_map(tf_fn, xs)
    with tf.GradientTape() as tape:
      tape.watch(xs)
      ys = tf.vectorized_map(tf_fn, xs)
    return tape.batch_jacobian(ys, xs)
  return tf.function(batched, autograph=False, jit_compile=mode == "jit",
                     reduce_retracing=False)


def _tf2jax(w: wl.Workload, mode: str, n: int) -> Callable[[Any], Any]:
  """tf2jax: converts the TF function of one example to JAX, then vmaps."""
  import tf2jax  # pylint: disable=g-import-not-at-top
  del n
  jax_fn, params = tf2jax.convert(
      tf.function(w.tf_fn, autograph=False),
      np.zeros(w.example_shape, np.float32))

  def fn(x):
    return jax_fn(params, x)[0]
  return _maybe_jit(jax.vmap(_per_example(w, fn)), mode)


def _fwdacc_jvp_tf(tf_fn: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
  """``(x, t) -> J t`` with ``tf.autodiff.ForwardAccumulator``."""
  def jvp_tf(x, t):
    with tf.autodiff.ForwardAccumulator(x, t) as acc:
      y = tf_fn(x)
    return acc.jvp(y, unconnected_gradients=tf.UnconnectedGradients.ZERO)
  return jvp_tf


def _jacobian_tf(tf_fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
  """``x -> df/dx`` of one example with ``tf.GradientTape``."""
  def jac_tf(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = tf_fn(x)
    if y.shape.rank == 0:
      return tape.gradient(y, x)
    return tape.jacobian(y, x, experimental_use_pfor=True)
  return jac_tf


def _with_tf_jvp(primal_tf: Callable[[Any], Any],
                 jvp_tf: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
  """``call_tf(primal_tf)`` whose JVP is ``call_tf(jvp_tf)`` (custom_jvp)."""
  primal = jax2tf.call_tf(primal_tf)
  jvp_call = jax2tf.call_tf(jvp_tf)

  @jax.custom_jvp
  def f(x):
    return primal(x)

  @f.defjvp
  def f_jvp(primals, tangents):
    # The primal by its own call, as the fork's JVP rule does: the primal
    # output of a JVP rule must not depend on the tangents.
    return primal(primals[0]), jvp_call(primals[0], tangents[0])
  return f


def _fwdacc(w: wl.Workload, mode: str, n: int) -> Callable[[Any], Any]:
  """Forward mode with TF's ForwardAccumulator instead of the fork's JVP.

  The fork's JVP rule (``call_tf_lib/autodiff/``) computes tangents with
  the accumulator where it is exact, else with a double VJP; this is the
  formulation proposed before the fork had a JVP rule, built by hand from call_tf: a
  ``jax.custom_jvp`` whose JVP is a ``call_tf`` of a function that runs
  ``tf.autodiff.ForwardAccumulator``. For ``hessian`` it is TF's
  forward-over-reverse: the accumulator over a ``GradientTape`` Jacobian.
  Not correct for functions with a ``tf.custom_gradient`` (the accumulator
  ignores it); the benchmark functions have none.
  """
  del n
  if w.derivative in ("jvp", "jacfwd"):
    f = _with_tf_jvp(w.tf_fn, _fwdacc_jvp_tf(w.tf_fn))
    return _maybe_jit(jax.vmap(_per_example(w, f)), mode)
  if w.derivative == "hessian":
    jac_tf = _jacobian_tf(w.tf_fn)
    g = _with_tf_jvp(jac_tf, _fwdacc_jvp_tf(jac_tf))
    return _maybe_jit(jax.vmap(jax.jacfwd(g)), mode)
  raise ValueError(f"fwdacc does not do {w.derivative!r}")


def _one_call(method: str) -> Callable[[wl.Workload], bool]:
  return lambda w: method in w.one_call_methods and w.derivative is None


ALL_METHODS: tuple[Method, ...] = (
    Method("native", "jax.vmap of the jnp function (the reference)", _native),
    Method("vectorized", "vmap of call_tf, vmap_method=None (pfor), default "
           "has_side_effects=True", _call_tf(None)),
    Method("vectorized_pure", "as vectorized, with has_side_effects=False",
           _call_tf(None, has_side_effects=False)),
    Method("sequential", "vmap of call_tf, vmap_method='sequential' (lax.map "
           "under jit, a Python loop eagerly)", _call_tf("sequential"),
           max_n={"eager": 1000}),
    Method("expand_dims", "vmap of call_tf, vmap_method='expand_dims'",
           _call_tf("expand_dims"), applies=_one_call("expand_dims")),
    Method("broadcast_all", "vmap of call_tf, vmap_method='broadcast_all'",
           _call_tf("broadcast_all"), applies=_one_call("broadcast_all")),
    Method("batch_polymorphic",
           "vmap of call_tf, vmap_method='batch_polymorphic'",
           _call_tf("batch_polymorphic"),
           applies=_one_call("batch_polymorphic")),
    Method("loop", "hand-written Python loop of call_tf calls (under jit: "
           "unrolled into the program)", _loop, applies=_plain_or_jacrev,
           max_n={"jit": 100, "eager": 1000}, compile_grows=("jit",)),
    Method("loop_of_jitted", "hand-written Python loop calling a jitted "
           "per-example call_tf", _loop_of_jitted, modes=("jit",),
           applies=_plain_or_jacrev,
           max_n={"jit": 1000}),
    Method("tf", "TensorFlow: tf.vectorized_map (and batch_jacobian) in "
           "tf.function(jit_compile=True); eagerly, without XLA", _tf_batched,
           applies=_plain_or_jacrev, framework="tf"),
    Method("tf2jax", "tf2jax.convert of the TF function, then jax.vmap",
           _tf2jax),
    Method("fwdacc", "forward mode by hand with tf.autodiff.ForwardAccumulator"
           " (a custom_jvp whose JVP is a call_tf; hessian: the accumulator "
           "over a GradientTape Jacobian), instead of the fork's JVP rule",
           _fwdacc, modes=("jit",),
           applies=lambda w: w.derivative in ("jvp", "jacfwd", "hessian")),
)


def by_name(names: str | None) -> tuple[Method, ...]:
  """The methods named in a comma-separated list (all if None)."""
  if not names:
    return ALL_METHODS
  wanted = names.split(",")
  unknown = set(wanted) - {m.name for m in ALL_METHODS}
  if unknown:
    raise ValueError(f"unknown methods {sorted(unknown)}; known: "
                     + ", ".join(m.name for m in ALL_METHODS))
  return tuple(m for m in ALL_METHODS if m.name in wanted)
