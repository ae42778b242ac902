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
"""The pieces of the batched TF functions (``batching.rule``), one by one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
from jax.experimental.jax2tf.call_tf_lib import vmap_methods
from jax.experimental.jax2tf.call_tf_lib.batching import rule
import numpy as np
import pytest
import tensorflow as tf

# pylint: disable=protected-access

B = 4
X = np.arange(B * 3, dtype=np.float32).reshape(B, 3)
Y = np.linspace(0., 1., 3, dtype=np.float32)
SIG = (tf.TensorSpec((3,), tf.float32), tf.TensorSpec((3,), tf.float32))


def _call(function_flat_tf: Any, vmap_method: Any = None,
          expected_shapes: tuple[tuple[int | None, ...], ...] = ((B, 3),)
          ) -> rule._BatchedCall:
  return rule._BatchedCall(
      callable_flat_tf=function_flat_tf, function_flat_tf=function_flat_tf,
      sig=SIG, vmap_method=vmap_method, is_batched=(True, False),
      batch_arg=0, expected_shapes=expected_shapes, call_tf_graph=False,
      vectorized=None)


def _one_call_fn(x: Any, y: Any, check_output_avals: bool = True
                 ) -> list[Any]:
  del check_output_avals
  # A size-1 leading axis, which "expand_dims" broadcasts to the batch.
  return [tf.reduce_sum(x * y, axis=0, keepdims=True)]


@tf.function(autograph=False)
def _mul(x: tf.Tensor, y: tf.Tensor) -> list[tf.Tensor]:
  return [x * y]


@pytest.mark.parametrize("expected_shapes,batch_size", [
    (((B, 3),), B), (((None, 3),), 5), ((), 5), (((),), 5)])
def test_batch_size_tf_is_static_where_known(expected_shapes, batch_size):
  size = rule._batch_size_tf(expected_shapes, 1, [Y, tf.zeros((5, 2))])
  assert int(size) == batch_size
  assert isinstance(size, int) == (batch_size == B)


def test_loop_body_merges_the_unbatched_arguments_in():
  body = rule._loop_body(lambda a, b, c: [a + 10 * b + 100 * c],
                         [False, True, False], [1., 3.], n_out=1)
  assert body((2.,)) == (321.,)


def test_loop_body_of_a_function_without_results_returns_a_placeholder():
  body = rule._loop_body(lambda a: [], [True], [], n_out=0)
  (out,) = body((2.,))
  assert out.dtype == tf.int32 and out.shape == ()


def test_batched_flat_tf_is_named_and_checks_its_results():
  f = rule._batched_flat_tf(_call(_one_call_fn, vmap_methods.EXPAND_DIMS),
                            staged=False)
  assert f.__name__ == f"_one_call_fn_vmap_{vmap_methods.EXPAND_DIMS}"
  (unchecked,) = f(X, Y, check_output_avals=False)
  assert unchecked.shape == (1, 3)
  (checked,) = f(X, Y)
  assert checked.shape == (B, 3)
  np.testing.assert_allclose(checked, np.broadcast_to(unchecked, (B, 3)))


def test_batched_flat_tf_of_the_default_method_is_named_default():
  f = rule._batched_flat_tf(_call(_mul), staged=True)
  assert f.__name__ == "_mul_vmap_default"


def test_unbatched_function_copies_the_concrete_function():
  fn = rule._unbatched_function(_call(_mul))
  # Copied into the graph that calls it (pfor's loop body).
  in_graph = tf.function(lambda x, y: fn(x, y), autograph=False)
  np.testing.assert_allclose(in_graph(X[0], Y)[0], X[0] * Y)


def test_vectorized_call_vectorizes_with_pfor():
  (res,) = rule._vectorized_call(_call(_mul), [X, Y], staged=False)
  np.testing.assert_allclose(res, X * Y)


def test_vectorized_call_of_a_function_without_results_returns_none():
  @tf.function(autograph=False)
  def nothing(x: tf.Tensor, y: tf.Tensor) -> list[tf.Tensor]:
    del x, y
    return []

  assert rule._vectorized_call(_call(nothing, expected_shapes=()), [X, Y],
                               staged=False) == []


def test_vectorized_call_explains_what_pfor_cannot_vectorize():
  @tf.function(autograph=False)
  def py_func(x: tf.Tensor, y: tf.Tensor) -> list[tf.Tensor]:
    out = tf.numpy_function(np.sin, [x * y], tf.float32, stateful=False)
    return [tf.ensure_shape(out, x.shape)]

  with pytest.raises(call_tf_errors.CallTfVectorizationError,
                     match="PyFunc"):
    rule._vectorized_call(_call(py_func), [X, Y], staged=False)


def test_pfor_error_is_none_for_other_errors():
  assert rule._pfor_error(_call(_mul), RuntimeError("not pfor's"), (),
                          staged=True) is None


def test_batched_tf_functions_are_cached_on_their_arguments():
  args: Sequence[Any] = (_mul, _mul, SIG, None, (True, False), 0, ((B, 3),),
                         False, None)
  eager_fn, staged_fn = rule._batched_tf_functions(*args)
  assert rule._batched_tf_functions(*args) == (eager_fn, staged_fn)
  np.testing.assert_allclose(eager_fn(X, Y)[0], X * Y)
  np.testing.assert_allclose(staged_fn(X, Y)[0], X * Y)


def test_inlining_keeps_only_the_nodes_the_outputs_need():
  from jax.experimental.jax2tf.call_tf_lib.batching import pfor  # pylint: disable=g-import-not-at-top

  @tf.function(autograph=False)
  def f(x):
    tf.cos(x, name="unused")
    return tf.sin(x, name="used")
  concrete = f.get_concrete_function(tf.TensorSpec((2,), tf.float32))
  graph = concrete.graph
  input_ops = {t.op.name for t in graph.inputs}
  nodes = pfor._needed_nodes(  # pylint: disable=protected-access
      graph.as_graph_def(), [t.name for t in graph.outputs], input_ops)
  names = {n.name for n in nodes}
  assert "used" in names and "unused" not in names
  assert not names & input_ops
  used = pfor._used_tensors(nodes, input_ops)  # pylint: disable=protected-access
  assert {t.name for t in graph.inputs} <= used and "used:0" in used
  assert "unused:0" not in used
  # (It imports the graph into the caller's: it is called while tracing.)
  call = tf.function(pfor.inlined(concrete), autograph=False)
  np.testing.assert_allclose(call(tf.constant([0., 1.]))[0],
                             np.sin([0., 1.]), rtol=1e-6)


def test_empty_results_are_constants_of_their_graph_shape():
  # TF's eager kernel gives the vectors SelfAdjointEigV2 does not compute a
  # scalar, its graph (0,): in pfor's loop body they are a constant.
  @tf.function(autograph=False)
  def f(x):
    results = list(tf.raw_ops.SelfAdjointEigV2(input=x, compute_v=False))
    got = rule._empty_results_constant(results + [x[:0]])  # pylint: disable=protected-access
    assert [g.op.type for g in got[1:]] == ["Const", "Const"]
    assert got[0].op.type != "Const"
    return got
  assert [t.shape for t in f(tf.eye(3))] == [(3,), (0,), (0, 3)]
