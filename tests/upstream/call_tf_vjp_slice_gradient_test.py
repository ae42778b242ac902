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
"""Tests that call_tf's VJP can be differentiated and vectorized through Slice."""

import os
import unittest

from absl.testing import absltest
import jax
from jax._src import test_util as jtu
import jax.numpy as jnp
import numpy as np

try:
  import tensorflow as tf
  from jax.experimental import jax2tf
except ImportError:
  tf = None

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
jax.config.parse_flags_with_absl()


def _slices_tf(x):
  return tf.concat([x[:2] * 2., tf.slice(x, [1], [2]) ** 2], 0)


def _slices_jnp(x):
  return jnp.concatenate([x[:2] * 2., x[1:3] ** 2], 0)


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfVjpSliceGradientTest(jtu.JaxTestCase):

  def test_reverse_over_reverse(self):
    # Was: "gradient registry has no entry for: XlaDynamicUpdateSlice".
    f = jax2tf.call_tf(lambda x: tf.reduce_sum(_slices_tf(x) ** 3))
    f_jnp = lambda x: jnp.sum(_slices_jnp(x) ** 3)
    grad_of_grad = lambda f: jax.grad(lambda x: jnp.sum(jax.grad(f)(x) ** 2))
    x = np.arange(1, 5, dtype=np.float32) / 4.
    self.assertAllClose(jax.jit(grad_of_grad(f))(x), grad_of_grad(f_jnp)(x),
                        rtol=1e-4, atol=1e-4)

  def test_jacrev(self):
    # jacrev is vmap of the VJP. Was: "cannot vectorize op
    # 'XlaDynamicUpdateSlice'".
    x = np.arange(1, 5, dtype=np.float32)
    self.assertAllClose(jax.jacrev(jax2tf.call_tf(_slices_tf))(x),
                        jax.jacrev(_slices_jnp)(x), rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
