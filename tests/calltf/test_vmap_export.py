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
"""vmap of call_tf with a symbolic batch size (shape polymorphism)."""

from __future__ import annotations

import jax
from jax.experimental import jax2tf
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close
from .util import randn

call_tf = jax2tf.call_tf

X = randn(5, 4, 3)
B_4_3 = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 4, 3"), np.float32)


def _export(method):
  f = call_tf(lambda x: tf.sin(x) * 2., vmap_method=method)
  return jax.export.export(jax.jit(jax.vmap(f)))(B_4_3)


def test_jax_export_sequential_runs_at_any_batch_size():
  exported = _export("sequential")
  for batch in (5, 2, 1):
    assert_close(exported.call(X[:batch]), np.sin(X[:batch]) * 2.)


@pytest.mark.parametrize("method", [None, "vectorized"], ids=str)
def test_jax_export_vectorized_methods_batch_the_module_for_any_size(method):
  """JAX batches the module of the unbatched function for a symbolic batch
  size; the export is right at every size, and so is its gradient."""
  exported = _export(method)
  for batch in (5, 2, 1):
    assert_close(exported.call(X[:batch]), np.sin(X[:batch]) * 2.)
  f = call_tf(lambda x: tf.reduce_sum(tf.sin(x) * x), vmap_method=method)
  grads = jax.export.export(jax.jit(jax.vmap(jax.grad(f))))(B_4_3)
  for batch in (5, 2):
    x = X[:batch]
    assert_close(grads.call(x), np.sin(x) + x * np.cos(x))


@pytest.mark.parametrize("method", ["expand_dims", "broadcast_all",
                                    "batch_polymorphic"], ids=str)
def test_jax_export_one_call_methods_explain_the_limit(method):
  with pytest.raises(ValueError) as e:
    _export(method)
  msg = str(e.value)
  assert "symbolic batch size b" in msg
  assert "vmap_method='sequential'" in msg
  assert "call_tf_graph=True" in msg


def test_jax_export_of_a_function_without_a_module_says_what_to_do():
  """pfor cannot take a symbolic batch size (XLA compiles what it makes for
  static shapes): a CallTfVectorizationError that says what to do; with
  the option, the loop."""
  from jax._src import config
  from jax.experimental.jax2tf.call_tf_lib import errors
  with config.call_tf_vectorizer("pfor"):
    with pytest.raises(errors.CallTfVectorizationError) as e:
      _export(None)
    assert "vmap_method='sequential'" in str(e.value)
    with config.call_tf_slow_vmap(True):
      exported = _export(None)
  assert_close(exported.call(X[:3]), np.sin(X[:3]) * 2.)


def test_jax2tf_convert_sequential_polymorphic_batch():
  f = jax.vmap(call_tf(tf.sin, vmap_method="sequential"))
  g = tf.function(jax2tf.convert(f, polymorphic_shapes=["(b, 4, 3)"],
                                 with_gradient=False),
                  autograph=False).get_concrete_function(
                      tf.TensorSpec([None, 4, 3], tf.float32))
  for batch in (5, 1):
    assert_close(g(tf.constant(X[:batch])).numpy(), np.sin(X[:batch]))


@pytest.mark.parametrize("method", [None, "vectorized", "expand_dims",
                                    "broadcast_all", "batch_polymorphic",
                                    "sequential"], ids=str)
def test_jax2tf_convert_call_tf_graph_polymorphic_batch(method):
  """Under jax2tf.convert, call_tf_graph=True lets TF run the function at
  the actual batch size: every method works with a symbolic batch."""
  f = call_tf(lambda x: tf.sin(x) * 2., vmap_method=method,
              call_tf_graph=True)
  g = tf.function(jax2tf.convert(jax.vmap(f), polymorphic_shapes=["(b, 4, 3)"],
                                 with_gradient=False),
                  autograph=False).get_concrete_function(
                      tf.TensorSpec([None, 4, 3], tf.float32))
  for batch in (5, 2):
    assert_close(g(tf.constant(X[:batch])).numpy(), np.sin(X[:batch]) * 2.)


def test_jax2tf_convert_native_default_method_batches_the_module():
  f = jax.vmap(call_tf(tf.sin))
  g = tf.function(jax2tf.convert(f, polymorphic_shapes=["(b, 4, 3)"]),
                  autograph=False).get_concrete_function(
                      tf.TensorSpec([None, 4, 3], tf.float32))
  for batch in (5, 1):
    assert_close(g(tf.constant(X[:batch])).numpy(), np.sin(X[:batch]))


def test_jax2tf_convert_native_one_call_method_explains_the_limit():
  f = jax.vmap(call_tf(tf.sin, vmap_method="expand_dims"))
  with pytest.raises(ValueError, match="call_tf_graph=True"):
    tf.function(jax2tf.convert(f, polymorphic_shapes=["(b, 4, 3)"]),
                autograph=False).get_concrete_function(
                    tf.TensorSpec([None, 4, 3], tf.float32))


def test_expand_dims_symbolic_batch_with_an_unbatched_first_argument():
  """The batch size comes from a batched argument, not the first one."""
  f = call_tf(lambda y, x: (y * 2., x + y), vmap_method="expand_dims",
              call_tf_graph=True)

  def g(x):
    a, b = jax.vmap(f, in_axes=(None, 0))(np.ones((3,), np.float32), x)
    return a + b

  tg = tf.function(jax2tf.convert(g, polymorphic_shapes=["(b, 3)"],
                                  with_gradient=False),
                   autograph=False).get_concrete_function(
                       tf.TensorSpec([None, 3], tf.float32))
  x = np.arange(15, dtype=np.float32).reshape(5, 3)
  assert_close(tg(tf.constant(x)).numpy(), x + 3.)
