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
"""A live ``tf.function``'s own trace as ``call_tf``'s (``own_trace``).

Where ``call_tf``'s flat function would add nothing, it is not traced: the
user's trace stands in. Checked against TF alone (a loop of eager calls,
``tf.GradientTape``), and that every case where the flat function does
something (checks, casts, constants, structure) still traces it.
"""

from __future__ import annotations

import jax
from jax.experimental.jax2tf import call_tf
from jax.experimental.jax2tf.call_tf_lib.tf_function import own_trace
from jax.experimental.jax2tf.call_tf_lib.tf_function import traces
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

# pylint: disable=protected-access

RTOL = 1e-5


def _flat_functions(fn):
  """The flat ``tf.function``s ``call_tf`` keeps for ``fn``'s traces."""
  entries = traces.TraceCache.for_callable(fn)._entries.values()
  return [e[1] for e in entries if isinstance(e, tuple) and len(e) >= 3]


def _traced_flat(fn) -> int:
  """How many times the flat functions kept for ``fn`` were traced."""
  return sum((f.flat if isinstance(f, own_trace.OwnTraceFunction) else f)
             .experimental_get_tracing_count() for f in _flat_functions(fn))


def _loop_reference(fn, x):
  """Each result of ``fn`` on each row of ``x``, stacked (TF eager)."""
  rows = [[t for t in tf.nest.flatten(fn(tf.constant(r))) if t is not None]
          for r in x]
  return [np.stack([np.asarray(row[i]) for row in rows])
          for i in range(len(rows[0]))]


def _grad_reference(fn, x):
  """The gradient of the sum of ``fn``'s first result, row by row."""
  rows = []
  for r in x:
    t = tf.constant(r)
    with tf.GradientTape() as tape:
      tape.watch(t)
      y = tf.reduce_sum(tf.nest.flatten(fn(t))[0])
    rows.append(tape.gradient(y, t).numpy())
  return np.stack(rows)


def _check_leaves(got, want):
  """Every result, its dtype (as JAX canonicalizes TF's) and values."""
  got = jax.tree_util.tree_leaves(got)
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g.dtype == jax.dtypes.canonicalize_dtype(w.dtype), (g.dtype,
                                                                w.dtype)
    np.testing.assert_allclose(g, w, rtol=RTOL)


def _first(res):
  return jax.tree_util.tree_leaves(res)[0]


OUTPUTS = {
    "tensor": lambda x, y: y,
    "tuple": lambda x, y: (y, y * 2.),
    "list": lambda x, y: [y, tf.cast(y > 0., tf.int32)],
    "same_twice": lambda x, y: (y, y),
    "an_input": lambda x, y: (y, x),
    "float64": lambda x, y: (y, tf.cast(y, tf.float64) * 3.),
}


@pytest.mark.parametrize("batch", [0, 1, 5])
@pytest.mark.parametrize("outputs", sorted(OUTPUTS))
def test_the_users_trace_stands_in_under_jit_vmap_and_grad(outputs, batch):
  v = tf.Variable(np.linspace(0.5, 1.5, 3).astype(np.float32))

  @tf.function(autograph=False)
  def f(x):
    return OUTPUTS[outputs](x, tf.sin(x) * v)

  g = call_tf(f)
  rng = np.random.default_rng(0)
  x = rng.standard_normal((batch, 3)).astype(np.float32)
  probe = rng.standard_normal((2, 3)).astype(np.float32)
  want = _loop_reference(f, x if batch else probe)
  if not batch:  # the shapes and dtypes of a batch of none
    want = [np.zeros((0, *w.shape[1:]), w.dtype) for w in want]
  _check_leaves(jax.jit(jax.vmap(g))(x), want)
  _check_leaves(jax.vmap(g)(x), want)  # eager vmap: the same trace
  grads = jax.jit(jax.vmap(jax.grad(lambda x: jnp.sum(_first(g(x))))))(x)
  np.testing.assert_allclose(
      grads, _grad_reference(f, x) if batch else np.zeros((0, 3)), rtol=RTOL)
  # Forward mode: d first result / dx, row i from TF's tape of its element i.
  jac = jax.jit(jax.jacfwd(lambda x: _first(g(x))))(probe[0])
  rows = [_grad_reference(lambda t, i=i: tf.nest.flatten(f(t))[0][i],
                          probe[:1])[0] for i in range(3)]
  np.testing.assert_allclose(jac, np.stack(rows), rtol=RTOL)
  assert jax.tree_util.tree_structure(jax.jit(g)(probe[0])) == (
      jax.tree_util.tree_structure(f(tf.constant(probe[0]))))
  kept = _flat_functions(f)
  assert kept and all(isinstance(k, own_trace.OwnTraceFunction) for k in kept)
  assert _traced_flat(f) == 0  # the flat function was never traced
  # TF traced the user's function once, for its one signature (3,).
  assert f.experimental_get_tracing_count() == 1


FALLBACKS = {
    # A declared output_shape_dtype: the flat function checks the results.
    "output_shape_dtype": dict(
        fn=lambda v: lambda x: tf.sin(x) * v,
        kw=dict(output_shape_dtype=jax.ShapeDtypeStruct((3,), np.float32))),
    # A captured eager tensor: the flat function makes it a constant.
    "captured_tensor": dict(fn=lambda v: (lambda c: lambda x: x * c)(
        tf.constant([1., 2., 3.])), kw={}),
    # A dict of results: flattened by the flat function.
    "dict": dict(fn=lambda v: lambda x: {"a": x * v}, kw={}),
    # A None among the results: no result of JAX's.
    "none_result": dict(fn=lambda v: lambda x: (x * v, None), kw={}),
}


@pytest.mark.parametrize("case", sorted(FALLBACKS))
def test_where_the_flat_function_does_something_it_is_traced(case):
  v = tf.Variable(np.ones(3, np.float32))
  f = tf.function(FALLBACKS[case]["fn"](v), autograph=False)
  g = call_tf(f, **FALLBACKS[case]["kw"])
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  _check_leaves(jax.jit(jax.vmap(g))(x), _loop_reference(f, x))
  assert not any(isinstance(k, own_trace.OwnTraceFunction)
                 for k in _flat_functions(f))
  assert _traced_flat(f) >= 1


@pytest.mark.parametrize("shape", [(None,), None], ids=["size", "rank"])
def test_an_input_signature_of_unknown_sizes_traces_the_flat_function(shape):
  @tf.function(autograph=False,
               input_signature=[tf.TensorSpec(shape, tf.float32)])
  def f(x):
    return tf.sin(x)

  g = call_tf(f)
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  np.testing.assert_allclose(jax.jit(jax.vmap(g))(x), np.sin(x), rtol=RTOL)
  assert not any(isinstance(k, own_trace.OwnTraceFunction)
                 for k in _flat_functions(f))


def test_pytree_arguments_trace_the_flat_function():
  @tf.function(autograph=False)
  def f(d):
    return d["a"] * d["b"]

  g = call_tf(f)
  x = {"a": np.ones((2, 3), np.float32), "b": np.full((2, 3), 2., np.float32)}
  np.testing.assert_allclose(jax.jit(jax.vmap(g))(x), 2 * np.ones((2, 3)))
  assert not any(isinstance(k, own_trace.OwnTraceFunction)
                 for k in _flat_functions(f))


def test_a_flat_trace_has_the_flat_functions_attributes():
  v = tf.Variable(2.)
  fn = tf.function(lambda x: x * v, autograph=False)
  concrete = fn.get_concrete_function(tf.TensorSpec((3,), tf.float32))
  flat = own_trace.FlatTrace(concrete)
  assert flat.output_shapes == [tf.TensorShape([3])]
  assert flat.output_dtypes == [tf.float32]
  assert flat.structured_outputs == list(concrete.outputs)
  assert flat.name == concrete.name
  assert list(flat.captured_inputs) == list(concrete.captured_inputs)
  np.testing.assert_allclose(flat(tf.ones(3))[0], [2., 2., 2.])
  assert own_trace.results_treedef(
      concrete, [tf.TensorSpec((3,), tf.float32)]) is not None
  # Another signature than the trace's: not the same function.
  assert own_trace.results_treedef(
      concrete, [tf.TensorSpec((4,), tf.float32)]) is None


def test_a_result_jax_has_no_dtype_for_gets_upstreams_error():
  @tf.function(autograph=False)
  def f(x):
    return x, tf.constant("a")

  with pytest.raises(ValueError, match="returns a result that is not "
                     "convertible to JAX"):
    jax.jit(call_tf(f))(np.ones(3, np.float32))


@pytest.mark.parametrize("tape", ["before", "between"])
def test_a_trace_a_tape_differentiated_is_read_as_the_call_needs(tape):
  """A ``tf.GradientTape`` over a call appends intermediates to the trace's
  outputs (upstream's ``test_several_round_trips``): the call's results are
  still the function's, whenever the tape ran."""
  v = tf.Variable(1.5)

  @tf.function(autograph=False)
  def f(x):
    return tf.sin(x) * v

  def tf_grad(x):
    t = tf.constant(x)
    with tf.GradientTape() as tape_:
      tape_.watch(t)
      y = f(t)
    return tape_.gradient(y, t).numpy()

  x = np.float32(0.7)
  if tape == "before":
    tf_grad(x)
  g = lambda x: x * call_tf(f)(x)
  want = x * np.sin(x) * 1.5
  np.testing.assert_allclose(jax.jit(g)(x), want, rtol=RTOL)
  if tape == "between":
    tf_grad(x)
  np.testing.assert_allclose(jax.jit(jax.grad(g))(x),
                             np.sin(x) * 1.5 + x * tf_grad(x), rtol=RTOL)
  np.testing.assert_allclose(jax.grad(g)(x),
                             np.sin(x) * 1.5 + x * tf_grad(x), rtol=RTOL)
  np.testing.assert_allclose(jax.jit(jax.vmap(g))(np.full(3, x)),
                             np.full(3, want), rtol=RTOL)
