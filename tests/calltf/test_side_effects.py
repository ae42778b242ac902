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
"""TF functions with side effects keep upstream's semantics; pure ones are fast.

A call of a TF function with a side effect (a variable write, a print, a
stateful random op) is never dropped unseen under `jit`, and never run once
for a whole batch under `vmap`. A pure function carries no JAX effect, so a
jitted program that calls it keeps JAX's fast dispatch path.
"""

from __future__ import annotations

import jax
from jax._src import config
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib.tf_function import effects
from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close

call_tf = jax2tf.call_tf
X = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.


def _effects(f, *args):
  """The effects of a jitted call (its jaxpr; no XLA compilation)."""
  return jax.make_jaxpr(f)(*args).effects


def test_a_pure_function_has_no_effect_and_keeps_fast_dispatch():
  assert not _effects(call_tf(tf.math.sin), X[0])

  # A Keras model only reads its variables: pure.
  layer = tf.keras.layers.Dense(2)
  layer.build((None, 3))
  assert not _effects(call_tf(layer), X)


@pytest.mark.parametrize("kind", ["random", "print"])
def test_a_function_with_side_effects_keeps_its_effect(kind):
  def f(x):
    if kind == "random":
      return x + tf.random.uniform(x.shape)
    tf.print(x)
    return x
  assert _effects(call_tf(f), X[0])
  assert not _effects(call_tf(f, has_side_effects=False), X[0])
  ops = {t for t, _ in effects.function_side_effect_ops(
      tf.function(f, autograph=False), (tf.TensorSpec([3], tf.float32),))}
  assert ops == ({"RandomUniform"} if kind == "random" else {"PrintV2"})


def test_an_unused_stateful_call_under_jit_runs():
  def f(x):
    return x + tf.random.uniform(x.shape)

  def g(x):
    call_tf(f)(x)  # result unused: an effect keeps the call
    return x * 2.

  hlo = jax.jit(g).lower(X[0]).as_text()
  assert "rng" in hlo.lower(), "the stateful call was dropped"
  assert_close(jax.jit(g)(X[0]), X[0] * 2.)


def test_an_unused_variable_write_under_jit_raises_a_clear_error():
  v = tf.Variable(0.)

  def f(x):
    v.assign_add(1.)
    return x

  def g(x):
    call_tf(f)(x)
    return x * 2.

  with pytest.raises(ValueError) as e:
    jax.jit(g)(X[0])
  msg = str(e.value)
  assert "AssignAddVariableOp" in msg
  assert "outside jax.jit" in msg and "call_tf_graph=True" in msg
  # Eagerly it runs, as upstream.
  call_tf(f)(X[0])
  assert v.numpy() == 1.


def test_eager_vmap_never_runs_a_side_effect_once_for_the_batch():
  v = tf.Variable(0.)

  def f(x):
    v.assign_add(1.)
    return x * 2.

  with pytest.raises(call_tf_errors.CallTfVectorizationError) as e:
    jax.vmap(call_tf(f))(X)
  assert e.value.op_type == "AssignAddVariableOp"
  assert "vmap_method='sequential'" in str(e.value)
  assert v.numpy() == 0.

  out = jax.vmap(call_tf(f, vmap_method="sequential"))(X)
  assert_close(out, X * 2.)
  assert v.numpy() == len(X)  # once per element

  with config.call_tf_slow_vmap(True):  # falls back to one call per element
    jax.vmap(call_tf(f))(X)
  assert v.numpy() == 2 * len(X)


def test_pure_functions_still_vectorize():
  f = call_tf(lambda x: tf.sin(x) * 2.)
  assert_close(jax.vmap(f)(X), jnp.sin(X) * 2.)
