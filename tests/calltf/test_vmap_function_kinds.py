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
"""jax.vmap of call_tf over the kinds of TF functions users call.

Each is compared with jax.vmap of the same function written in jnp, eagerly
and under jax.jit.
"""

from __future__ import annotations

import pathlib

import jax
from jax import lax
from jax._src import config
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import METHODS
from .util import assert_close
from .util import check_eager_and_jit
from .util import randn

call_tf = jax2tf.call_tf

X = randn(5, 4, 3)
W = randn(3, 2)
SPD = (lambda a: a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3, dtype=np.float32))(
    randn(5, 3, 3))

KINDS = {
    "elementwise": (lambda x: tf.sin(x) * 2. + x,
                    lambda x: jnp.sin(x) * 2. + x, X),
    "reduction": (lambda x: tf.reduce_sum(x, axis=0) + tf.reduce_max(x),
                  lambda x: jnp.sum(x, 0) + jnp.max(x), X),
    "matmul": (lambda x: tf.matmul(x, W), lambda x: x @ W, X),
    "linalg.inv": (tf.linalg.inv, jnp.linalg.inv, SPD),
    "linalg.cholesky": (tf.linalg.cholesky, jnp.linalg.cholesky, SPD),
    "linalg.solve": (lambda a: tf.linalg.solve(a, tf.ones((3, 1))),
                     lambda a: jnp.linalg.solve(a, jnp.ones((3, 1))), SPD),
    "while_loop_fixed_count": (
        lambda x: tf.while_loop(lambda i, y: i < 3,
                                lambda i, y: (i + 1, y * 1.5 + 1.),
                                (tf.constant(0), x))[1],
        lambda x: lax.fori_loop(0, 3, lambda i, y: y * 1.5 + 1., x), X),
}
# A tf.cond / tf.while_loop whose predicate depends on the batched values:
# pfor vectorizes them with data-dependent shapes, which XLA cannot compile
# (the StableHLO path batches them as JAX batches lax.cond and while_loop).
DATA_DEPENDENT = {
    "cond": (
        lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2., lambda: -x),
        lambda x: lax.cond(jnp.sum(x) > 0, lambda: x * 2., lambda: -x), X),
    "while_loop": (
        lambda x: tf.while_loop(lambda y: tf.reduce_sum(tf.abs(y)) < 100.,
                                lambda y: (y * 2.,), (x + 1.,))[0],
        lambda x: lax.while_loop(lambda y: jnp.sum(jnp.abs(y)) < 100.,
                                 lambda y: y * 2., x + 1.), X),
}


@pytest.mark.parametrize("method", METHODS, ids=str)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_pure_tf_ops(kind, method):
  f_tf, f_jnp, x = KINDS[kind]
  check_eager_and_jit(jax.vmap(call_tf(f_tf, vmap_method=method)),
                      jax.vmap(f_jnp), x, tol=1e-4)


@pytest.mark.parametrize("kind", sorted(DATA_DEPENDENT))
def test_data_dependent_control_flow(kind):
  f_tf, f_jnp, x = DATA_DEPENDENT[kind]
  expected = jax.vmap(f_jnp)(x)
  # Eagerly, pfor's vectorized form runs (no XLA involved).
  assert_close(jax.vmap(call_tf(f_tf))(x), expected)
  # Sequential works everywhere.
  check_eager_and_jit(jax.vmap(call_tf(f_tf, vmap_method="sequential")),
                      jax.vmap(f_jnp), x)
  # Under jit, JAX batches the function's StableHLO module (its loop or
  # conditional, with a batched predicate) by default.
  assert_close(jax.jit(jax.vmap(call_tf(f_tf)))(x), expected)
  # pfor's vectorized form does not compile with XLA: a clear error...
  with pytest.raises(call_tf_errors.CallTfVectorizationError) as e, (
      config.call_tf_vectorizer("pfor")):
    jax.jit(jax.vmap(call_tf(f_tf)))(x)
  assert "XLA cannot compile" in str(e.value)
  assert "vmap_method='sequential'" in str(e.value)
  assert "jax_call_tf_slow_vmap" in str(e.value)
  # ...or, with the option on, the sequential fallback.
  with config.call_tf_slow_vmap(True), config.call_tf_vectorizer("pfor"):
    assert_close(jax.jit(jax.vmap(call_tf(f_tf)))(x), expected)


@pytest.mark.parametrize("method", METHODS, ids=str)
def test_captured_variable(method):
  var = tf.Variable(W)
  check_eager_and_jit(
      jax.vmap(call_tf(lambda x: tf.matmul(x, var), vmap_method=method)),
      jax.vmap(lambda x: x @ W), X)


@pytest.fixture(scope="module")
def keras_model():
  import keras  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(0)
  model = keras.Sequential([keras.Input((3,)),
                            keras.layers.Dense(8, activation="tanh"),
                            keras.layers.Dense(2)])
  (w1, b1), (w2, b2) = [(l.kernel.numpy(), l.bias.numpy())
                        for l in model.layers]
  return model, lambda x: jnp.tanh(x @ w1 + b1) @ w2 + b2


@pytest.mark.parametrize("method", METHODS + ("batch_polymorphic",), ids=str)
def test_keras_model(keras_model, method):
  model, model_jnp = keras_model
  check_eager_and_jit(
      jax.vmap(call_tf(lambda x: model(x), vmap_method=method)),
      jax.vmap(model_jnp), X, tol=1e-4)


class _Affine(tf.Module):

  def __init__(self):
    super().__init__()
    self.w = tf.Variable(W)
    self.b = tf.Variable(np.arange(2, dtype=np.float32))

  @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
  def __call__(self, x):
    return tf.nn.relu(tf.matmul(x, self.w) + self.b)


def _affine_jnp(x):
  return jax.nn.relu(x @ W + np.arange(2, dtype=np.float32))


@pytest.fixture(scope="module")
def restored_affine(tmp_path_factory) -> tf.Module:
  path = pathlib.Path(tmp_path_factory.mktemp("saved")) / "affine"
  tf.saved_model.save(_Affine(), str(path))
  return tf.saved_model.load(str(path))


@pytest.mark.parametrize("method", METHODS + ("batch_polymorphic",), ids=str)
def test_saved_model_reloaded_from_disk(restored_affine, method):
  f = call_tf(restored_affine.__call__, vmap_method=method)
  check_eager_and_jit(jax.vmap(f), jax.vmap(_affine_jnp), X)
  check_eager_and_jit(
      jax.vmap(jax.grad(lambda x: f(x).sum())),
      jax.vmap(jax.grad(lambda x: _affine_jnp(x).sum())), X)


ROUND_TRIP = jax2tf.convert(jnp.sin)


def test_round_trip_fails_clearly_by_default():
  # pfor cannot vectorize it: eagerly by default, and under jit with pfor
  # chosen (by default, JAX batches its StableHLO under jit: see
  # test_stablehlo_path.py).
  for jit in (False, True):
    f = jax.vmap(call_tf(ROUND_TRIP))
    with pytest.raises(call_tf_errors.CallTfVectorizationError) as e, (
        config.call_tf_vectorizer("pfor")):
      (jax.jit(f) if jit else f)(X)
    assert e.value.op_type == "XlaCallModule"
    msg = str(e.value)
    for hint in ("cannot vectorize op 'XlaCallModule'",
                 "vmap_method='sequential'", "jax_call_tf_slow_vmap",
                 "JAX_CALL_TF_SLOW_VMAP=1", "'expand_dims'",
                 "'batch_polymorphic'"):
      assert hint in msg, (hint, msg)


def test_round_trip_jacrev_with_pfor_fails_clearly():
  with pytest.raises(call_tf_errors.CallTfVectorizationError,
                     match="jax_call_tf_slow_vmap"):
    jax.jacrev(call_tf(ROUND_TRIP, vmap_method="pfor"))(X[0])


def test_round_trip_works_by_default_eagerly_and_under_jit():
  f = call_tf(ROUND_TRIP)
  check_eager_and_jit(jax.vmap(f), jax.vmap(jnp.sin), X)
  check_eager_and_jit(jax.jacrev(f), jax.jacrev(jnp.sin), X[0])


def test_round_trip_with_sequential():
  f = call_tf(ROUND_TRIP, vmap_method="sequential")
  check_eager_and_jit(jax.vmap(f), jax.vmap(jnp.sin), X)
  check_eager_and_jit(jax.jacrev(f), jax.jacrev(jnp.sin), X[0])


def test_round_trip_with_the_option():
  with config.call_tf_slow_vmap(True):
    f = call_tf(ROUND_TRIP)
    check_eager_and_jit(jax.vmap(f), jax.vmap(jnp.sin), X)
    check_eager_and_jit(jax.jacrev(f), jax.jacrev(jnp.sin), X[0])


def test_vectorized_never_falls_back():
  with config.call_tf_slow_vmap(True), config.call_tf_vectorizer("pfor"):
    with pytest.raises(call_tf_errors.CallTfVectorizationError,
                       match="never falls back"):
      jax.vmap(call_tf(ROUND_TRIP, vmap_method="vectorized"))(X)


def test_polymorphic_round_trip_with_expand_dims():
  f = call_tf(jax2tf.convert(jnp.sin, polymorphic_shapes="b, ..."),
              vmap_method="expand_dims",
              output_shape_dtype=jax.ShapeDtypeStruct((4, 3), np.float32))
  check_eager_and_jit(jax.vmap(f), jax.vmap(jnp.sin), X)


@pytest.mark.parametrize("fn,op", [
    (lambda x: tf.numpy_function(np.sin, [x], tf.float32), "PyFunc"),
    (lambda x: tf.py_function(tf.sin, [x], tf.float32), "EagerPyFunc"),
])
def test_python_ops_name_the_op_and_map_eagerly(fn, op):
  shape = jax.ShapeDtypeStruct((4, 3), np.float32)
  with pytest.raises(call_tf_errors.CallTfVectorizationError) as e:
    jax.vmap(call_tf(fn, output_shape_dtype=shape))(X)
  assert e.value.op_type == op
  # Eager sequential needs no XLA, so even these map.
  assert_close(jax.vmap(call_tf(fn, vmap_method="sequential",
                                output_shape_dtype=shape))(X), np.sin(X))


def test_loop_invariant_error_names_the_op():
  def fn(x):  # a shape computed from the batched values
    return tf.reshape(x, tf.shape(x) * tf.cast(x[0, 0] > -100, tf.int32))
  with pytest.raises(call_tf_errors.CallTfVectorizationError) as e:
    jax.vmap(call_tf(fn, output_shape_dtype=jax.ShapeDtypeStruct(
        (4, 3), np.float32)))(X)
  assert e.value.op_type == "Reshape"
  assert "loop invariant" in str(e.value)


@pytest.mark.parametrize("method", METHODS + ("expand_dims",), ids=str)
def test_eager_vmap_needs_no_xla(method):
  """tf.math.special.dawsn has no XLA kernel; eager vmap must not need one."""
  f = call_tf(tf.math.special.dawsn, vmap_method=method)
  expected = np.stack([np.asarray(call_tf(tf.math.special.dawsn)(x))
                       for x in X])
  assert_close(jax.vmap(f)(X), expected)
  assert_close(jax.vmap(jax.vmap(f))(X), expected)


def test_affine_shape_fit_refuses_a_threshold():
  """max(b, 20) looks constant at small sizes; the large check sees it."""
  from jax.experimental.jax2tf.call_tf_lib.tf_function import shapes as call_tf_shapes  # pylint: disable=g-import-not-at-top
  aval = jax.core.ShapedArray(jax.export.symbolic_shape("b, 4"), np.float32)
  with pytest.raises(ValueError, match="not an affine function"):
    call_tf_shapes.fit_symbolic_output_shapes(
        [aval], lambda shapes: [(max(shapes[0][0], 20), 4)])
  fitted = call_tf_shapes.fit_symbolic_output_shapes(
      [aval], lambda shapes: [(2 * shapes[0][0] + 1, 4)])
  assert str(fitted[0][0]) == "2*b + 1"


# Results that do not depend on the batched arguments, or that pass
# captured values through: issue 42's zeros (inference-mode batch
# normalization's statistics under jax.vmap) came from pfor's converter of
# FusedBatchNormV3, not from how such results are batched; each kind is
# checked on both vectorizers, eagerly and under jit, against a loop of TF.

_RUNNING_MEAN = tf.constant([.5, -.2, .1])
_RUNNING_VARIANCE = tf.Variable([2., .5, 1.])


def _passed_through(x):
  y, mean, variance = tf.raw_ops.FusedBatchNormV3(
      x=x, scale=tf.ones([3]), offset=tf.zeros([3]), mean=_RUNNING_MEAN,
      variance=_RUNNING_VARIANCE, is_training=False)[:3]
  return (y, mean, variance, _RUNNING_MEAN, _RUNNING_VARIANCE.read_value(),
          tf.ones([2]) * 3., tf.identity(_RUNNING_MEAN) * 2.)


@pytest.mark.parametrize("vmap_method", [None, "pfor"])
@pytest.mark.parametrize("staged", [False, True], ids=["eager", "jit"])
def test_results_independent_of_the_batch_or_passed_through(vmap_method,
                                                           staged):
  xs = randn(3, 2, 2, 2, 3)
  f = jax.vmap(jax2tf.call_tf(_passed_through, vmap_method=vmap_method))
  got = (jax.jit(f) if staged else f)(xs)
  rows = [[np.asarray(r) for r in _passed_through(tf.constant(x))]
          for x in xs]
  assert_close(list(got), [np.stack(r) for r in zip(*rows)], 1e-5)
