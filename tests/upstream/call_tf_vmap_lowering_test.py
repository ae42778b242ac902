# Copyright 2026 The JAX Authors.
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
"""Tests that jax.vmap of call_tf vectorizes under jit where it is needed."""

import unittest

from absl.testing import absltest
import jax
from jax._src import config
from jax._src import test_util as jtu
import jax.numpy as jnp
import numpy as np

try:
  import tensorflow as tf
except ImportError:
  tf = None

if tf is not None:
  from jax.experimental import jax2tf
  from jax.experimental.jax2tf.call_tf_lib import errors

jax.config.parse_flags_with_absl()


def _cond_tf(x):
  # pfor turns a tf.cond on a batched predicate into DynamicStitch, which XLA
  # cannot compile.
  return tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2., lambda: -x)


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfVmapLoweringTest(jtu.JaxTestCase):

  def test_uncompilable_vectorization_raises_vectorization_error(self):
    x = np.arange(12, dtype=np.float32).reshape(4, 3) - 5.
    # With pfor (the StableHLO path batches the cond as a select).
    f = jax.jit(jax.vmap(jax2tf.call_tf(_cond_tf, vmap_method="pfor")))
    with self.assertRaisesRegex(errors.CallTfVectorizationError,
                                "XLA cannot compile.*DynamicStitch"):
      f(x)

  def test_uncompilable_vectorization_falls_back_with_the_option(self):
    x = np.arange(12, dtype=np.float32).reshape(4, 3) - 5.
    with config.call_tf_slow_vmap(True):
      res = jax.jit(jax.vmap(jax2tf.call_tf(_cond_tf)))(x)
    expected = jax.vmap(lambda r: jnp.where(jnp.sum(r) > 0, r * 2., -r))(x)
    self.assertAllClose(res, expected)

  def test_jacrev_under_vmap_matches_jnp(self):
    x = np.linspace(-1., 1., 12, dtype=np.float32).reshape(4, 3)
    f = jax2tf.call_tf(lambda v: tf.stack([tf.reduce_sum(tf.sin(v)),
                                           tf.reduce_prod(v)]))
    expected = jax.vmap(jax.jacrev(
        lambda v: jnp.stack([jnp.sum(jnp.sin(v)), jnp.prod(v)])))(x)
    self.assertAllClose(jax.jit(jax.vmap(jax.jacrev(f)))(x), expected,
                        rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
