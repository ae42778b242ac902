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
"""The work of a first call under jax.jit, counted (issue 12).

Not timed: each test counts what a first call of ``jit(vmap(call_tf(f)))``
(or its ``jacrev``) asks of TensorFlow, so that work repeated between
tracing, vectorizing, the trial compile and the real compile shows up as a
count that grew. The tests of pfor's work choose pfor (``pfor_chosen``):
by default, under jit, JAX batches the function's StableHLO module instead,
whose own counts are at the end.
"""

from __future__ import annotations

import collections

import jax
from jax._src import config
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib.batching import pfor as call_tf_pfor
from jax.experimental.jax2tf.call_tf_lib.tf_function import compile as call_tf_compile
from jax.experimental.jax2tf.call_tf_lib.tf_function import effects
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close
from .util import count_calls
from .util import randn

call_tf = jax2tf.call_tf
X = randn(5, 3)


@pytest.fixture
def counts(monkeypatch):
  """Counts calls of TF's and the overlay's work, by kind."""
  from tensorflow.python.autograph.impl import api as autograph_api  # pylint: disable=g-import-not-at-top
  from tensorflow.python.eager.polymorphic_function import compiler_ir  # pylint: disable=g-import-not-at-top
  from tensorflow.python.ops.parallel_for import pfor as pfor_lib  # pylint: disable=g-import-not-at-top
  found = collections.Counter()

  def count(obj, attr, kind):
    count_calls(monkeypatch, found, obj, attr, kind)

  count(autograph_api, "_convert_actual", "autograph")
  count(pfor_lib.PFor, "convert", "pfor")
  count(call_tf_pfor, "vectorized_map", "vectorize")
  count(call_tf_compile, "_compile_eager", "tf_to_hlo")
  count(effects, "side_effect_ops", "side_effect_scan")
  count(compiler_ir, "maybe_get_device_name", "eager_device_probe")
  jax.clear_caches()
  return found


@pytest.fixture
def pfor_chosen():
  """pfor vectorizes under jit (the option jax_call_tf_vectorizer)."""
  with config.call_tf_vectorizer("pfor"):
    yield


def _fresh_function(calls):
  """A TF function not traced before; counts the runs of its Python."""
  w = randn(3, 4)
  b = randn(4)

  def f(x):
    calls.append(1)
    return tf.tanh(tf.linalg.matvec(tf.constant(w.T), x) + b)

  def f_np(x):
    return np.tanh(x @ w + b)
  return f, f_np


def test_first_jit_vmap_call_does_each_step_once(counts, pfor_chosen):
  calls = []
  f, f_np = _fresh_function(calls)
  assert_close(jax.jit(jax.vmap(call_tf(f)))(X), f_np(X), tol=1e-5)
  # f's Python runs once, to trace the unbatched function (for the output
  # shapes and the side-effect check); pfor vectorizes that trace.
  assert len(calls) == 1
  assert counts["pfor"] == 1
  # The trial compile's HLO is the lowering's.
  assert counts["tf_to_hlo"] == 1
  # One scan per function (unbatched, vectorized): abstract evaluation's and
  # the compile's variable-write check share it.
  assert counts["side_effect_scan"] == 2
  # pfor's own tf.function wrappers are traced without autograph.
  assert counts["autograph"] == 0
  # TF is asked for the HLO of a platform: no eager op to find a device.
  assert counts["eager_device_probe"] == 0


def test_first_jit_vmap_jacrev_call_vectorizes_only_what_it_compiles(counts, pfor_chosen):
  calls = []
  f, _ = _fresh_function(calls)
  jac = jax.jit(jax.vmap(jax.jacrev(call_tf(f))))(X)
  assert jac.shape == (5, 4, 3)
  # jacrev's VJP is vectorized twice (over the cotangents, then the batch):
  # the outer pfor converts a copy of the inner vectorization. jacrev's
  # primal output, which jit drops, is never vectorized.
  assert counts["vectorize"] == 2
  # Only the program's one call is converted to HLO: not the inner
  # vectorization, which the outer one copies.
  assert counts["tf_to_hlo"] == 1
  assert counts["autograph"] == 0
  assert counts["eager_device_probe"] == 0


def test_nested_vmap_of_control_flow_vectorizes_each_vmap_once(counts, pfor_chosen):
  w = randn(3, 4)

  def f(x):
    # A tf.cond: the graph calls functions, which pfor's copy cannot take.
    y = tf.linalg.matvec(tf.constant(w.T), x)
    return tf.cond(tf.shape(x)[0] > 1, lambda: tf.sin(tf.sin(y)),
                   lambda: tf.cos(y))

  f_jnp = lambda x: jnp.sin(jnp.sin(x @ w))
  jac = jax.jit(jax.vmap(jax.jacrev(call_tf(f))))(X)
  assert_close(jac, jax.vmap(jax.jacrev(f_jnp))(X), tol=1e-5)
  # The inner vectorization is called, from its staged variant, and not
  # also vectorized eagerly for a copy that pfor would refuse.
  assert counts["vectorize"] == 2
  assert counts["tf_to_hlo"] == 1


def test_jacrev_of_a_scalar_function_vectorizes_only_over_the_batch(counts, pfor_chosen):
  w, b = randn(3, 4), randn(4)

  def f(x):
    return tf.reduce_sum(tf.tanh(tf.linalg.matvec(tf.constant(w.T), x) + b))

  f_jnp = lambda x: jnp.sum(jnp.tanh(x @ w + b))
  jac = jax.jit(jax.vmap(jax.jacrev(call_tf(f))))(X)
  assert_close(jac, jax.vmap(jax.jacrev(f_jnp))(X), tol=1e-5)
  # jacrev's own vmap is over a basis of one cotangent: the VJP is called on
  # it, not vectorized (the vmap dispatcher's batch of one). Only the batch
  # is vectorized.
  assert counts["vectorize"] == 1
  assert counts["pfor"] == 1
  assert counts["tf_to_hlo"] == 1


@pytest.mark.parametrize("jit", [False, True])
def test_a_batch_of_one_calls_the_function_on_its_example(counts, jit):
  """A batch of one is an unbatched call on the example, not pfor."""
  calls = []
  f, f_np = _fresh_function(calls)
  g = jax.vmap(call_tf(f))
  if jit:
    g = jax.jit(g)
  x1 = X[:1]
  out = g(x1)
  assert out.shape == (1, 4)
  assert_close(out, f_np(x1), tol=1e-5)
  # One unbatched call, as without vmap: the trace (and eagerly, as
  # upstream's eager call_tf does, f's Python on the example).
  assert counts["pfor"] == 0
  assert len(calls) == (1 if jit else 2)


def test_with_the_fallback_the_rule_vectorizes_while_it_can_fall_back(counts, pfor_chosen):
  calls = []
  f, _ = _fresh_function(calls)
  with config.call_tf_slow_vmap(True):
    jac = jax.jit(jax.vmap(jax.jacrev(call_tf(f))))(X)
  assert jac.shape == (5, 4, 3)
  # Each vmap vectorizes and converts at trace time, to fall back if it must:
  # jacrev's primal output too, and the inner vectorization of the VJP, whose
  # eager variant (its pfor loop in its graph) the outer one copies.
  assert counts["vectorize"] == 4
  assert counts["tf_to_hlo"] == 3


def test_vectorizing_reuses_the_unbatched_trace_and_its_autograph_status():
  """f's Python runs once; run again, it sees the same autograph status."""
  from tensorflow.python.autograph.core import ag_ctx  # pylint: disable=g-import-not-at-top
  seen = []

  def f(x):
    seen.append(ag_ctx.control_status_ctx().status)
    return x * 2.

  g = call_tf(f)
  jax.jit(g)(X[0])
  jax.jit(jax.vmap(g))(X)
  jax.vmap(g)(X)
  # f runs once per JAX trace (it may read Python state, as upstream's
  # call_tf does), and pfor vectorizes that trace: it does not run f again.
  assert len(seen) == 3
  # A one-call method runs f on the batch: a trace of its own, beside the
  # unbatched trace.
  jax.jit(jax.vmap(call_tf(f, vmap_method="expand_dims")))(X)
  assert len(seen) == 5
  assert len(set(seen)) == 1, seen


def test_eager_per_example_gradients_reuse_the_vjp(counts):
  """The VJP's call_tf is kept: a second eager call vectorizes nothing."""
  calls = []
  w, b = randn(3, 4), randn(4)

  def f(x):
    calls.append(1)
    return tf.reduce_sum(tf.tanh(tf.linalg.matvec(tf.constant(w.T), x) + b))

  f_jnp = lambda x: jnp.sum(jnp.tanh(x @ w + b))
  g = call_tf(f)
  for transform in (jax.grad, jax.jacrev):
    per_example = jax.vmap(transform(g))
    assert_close(per_example(X), jax.vmap(transform(f_jnp))(X), tol=1e-5)
    before, pfors = len(calls), counts["pfor"]
    assert_close(per_example(X), jax.vmap(transform(f_jnp))(X), tol=1e-5)
    # f's Python runs again, as on every eager call (it may read Python
    # state): the VJP's trace is the same graph, so pfor does not run again.
    assert len(calls) > before
    assert counts["pfor"] == pfors


@pytest.mark.parametrize("transform", ["vmap", "vmap_jacrev", "jacfwd",
                                       "vmap_hessian"])
def test_the_stablehlo_path_traces_and_converts_once(counts, transform):
  """By default, under jit: one trace, one conversion to HLO, no pfor."""
  calls = []
  f, f_np = _fresh_function(calls)
  g = call_tf(f)
  t = {"vmap": jax.vmap, "vmap_jacrev": lambda h: jax.vmap(jax.jacrev(h)),
       "jacfwd": jax.jacfwd,
       "vmap_hessian": lambda h: jax.vmap(jax.hessian(h))}[transform]
  out = jax.jit(t(g))(X if transform != "jacfwd" else X[0])
  if transform == "vmap":
    assert_close(out, f_np(X), tol=1e-5)
  assert len(calls) == 1
  assert counts["pfor"] == 0 and counts["vectorize"] == 0
  assert counts["tf_to_hlo"] == 1
  assert counts["autograph"] == 0
  assert counts["eager_device_probe"] == 0


@pytest.mark.parametrize("transform", ["vmap", "vmap_jacrev"])
def test_a_tf_function_runs_its_python_once(counts, transform):
  """A tf.function is traced once per signature: by the check whether it is
  a jax2tf function (it is not), and that trace is the call's."""
  calls = []
  f, f_np = _fresh_function(calls)
  g = call_tf(tf.function(f, autograph=False))
  t = {"vmap": jax.vmap,
       "vmap_jacrev": lambda h: jax.vmap(jax.jacrev(h))}[transform]
  out = jax.jit(t(g))(X)
  if transform == "vmap":
    assert_close(out, f_np(X), tol=1e-5)
  assert len(calls) == 1
  assert counts["tf_to_hlo"] == 1


def test_a_trace_runs_call_tf_on_a_stack_chunk_and_an_eager_call_does_not(
    monkeypatch):
  """Under a trace, call_tf's work runs on a frame-stack chunk of its own
  (stablehlo_to_jax.with_stack_room: its time then does not depend on the
  caller's depth); an eager call does not pay for one (up to 0.1 ms a call)."""
  from jax._src.export.stablehlo_to_jax import _stack  # pylint: disable=g-import-not-at-top
  found = collections.Counter()
  count_calls(monkeypatch, found, _stack, "_call_on_new_chunk", "room")
  g = call_tf(tf.function(lambda x: tf.sin(x) * 2., autograph=False))
  g(X)
  found.clear()
  for _ in range(3):
    assert_close(g(X), np.sin(X) * 2., tol=1e-6)
  assert found["room"] == 0
  assert_close(jax.jit(jax.vmap(g))(X), np.sin(X) * 2., tol=1e-6)
  assert found["room"] >= 1
