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
"""The smoke suite: the fork's core features, on every release, quickly.

`python3 build/fork.py test` runs it (with tests/calltf/test_installed_fork.py)
on every release but the default, which gets the whole suite: vmap of a TF
function against vmap of the same function in jnp, jacrev, the jax2tf round
trip (refused by default, run with the option and with "sequential"), and a
restored jax2tf SavedModel embedded under vmap with "batch_polymorphic".
"""

from __future__ import annotations

import jax
from jax._src import config
from jax.experimental import jax2tf
from jax.experimental.jax2tf import call_tf_batching
import jax.numpy as jnp
import pytest
import tensorflow as tf

from .util import assert_close
from .util import check_eager_and_jit
from .util import randn

call_tf = jax2tf.call_tf
X = randn(5, 4, 3)
W = randn(3, 2)


def energy_tf(x):
  return tf.reduce_sum(tf.sin(x) * tf.matmul(x, W)[..., :1], axis=-1)


def energy(x):
  return jnp.sum(jnp.sin(x) * (x @ W)[..., :1], axis=-1)


@pytest.mark.parametrize("method", [None, "vectorized", "sequential"],
                         ids=str)
def test_vmap_matches_jnp(method):
  f = call_tf(energy_tf, vmap_method=method)
  check_eager_and_jit(jax.vmap(f), jax.vmap(energy), X)


def test_jacrev_matches_jnp():
  check_eager_and_jit(jax.jacrev(call_tf(energy_tf)), jax.jacrev(energy),
                      X[0])


def test_round_trip_is_refused_by_default():
  round_trip = call_tf(jax2tf.convert(jnp.sin))
  with pytest.raises(call_tf_batching.CallTfVectorizationError) as e:
    jax.vmap(round_trip)(X)
  assert "jax_call_tf_slow_vmap" in str(e.value)
  assert "vmap_method='sequential'" in str(e.value)


def test_round_trip_with_the_option_and_with_sequential():
  with config.call_tf_slow_vmap(True):
    check_eager_and_jit(jax.vmap(call_tf(jax2tf.convert(jnp.sin))),
                        jax.vmap(jnp.sin), X)
  sequential = call_tf(jax2tf.convert(jnp.sin), vmap_method="sequential")
  check_eager_and_jit(jax.vmap(sequential), jax.vmap(jnp.sin), X)
  check_eager_and_jit(jax.jacrev(sequential), jax.jacrev(jnp.sin), X[0])


def test_restored_jax2tf_model_is_embedded_under_vmap(tmp_path):
  """A jax2tf SavedModel with a polymorphic batch, called under vmap."""
  w = randn(4, 3)

  def model(x):
    return jnp.tanh(x @ w)

  module = tf.Module()
  module.f = tf.function(
      jax2tf.convert(model, polymorphic_shapes=["(b, 4)"]), autograph=False,
      input_signature=[tf.TensorSpec((None, 4), tf.float32)])
  tf.saved_model.save(module, str(tmp_path / "model"),
                      options=tf.saved_model.SaveOptions(
                          experimental_custom_gradients=True))
  restored = tf.saved_model.load(str(tmp_path / "model"))
  f = call_tf(restored.f, vmap_method="batch_polymorphic")
  x = randn(6, 2, 4)
  check_eager_and_jit(jax.vmap(f), jax.vmap(model), x, tol=2e-5)
  grad = jax.grad(lambda x: jnp.sum(jax.vmap(f)(x) ** 2))
  assert_close(jax.jit(grad)(x),
               jax.grad(lambda x: jnp.sum(jax.vmap(model)(x) ** 2))(x),
               tol=2e-4)
