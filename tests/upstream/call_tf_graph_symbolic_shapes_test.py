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
"""Tests for call_tf_graph=True under jax2tf.convert with a symbolic batch."""

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


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfGraphSymbolicShapesTest(jtu.JaxTestCase):

  def test_symbolic_batch_runs_in_tensorflow(self):
    f = jax2tf.call_tf(lambda x: tf.sin(x) * 2., call_tf_graph=True)
    f_tf = tf.function(
        jax2tf.convert(lambda x: jnp.cos(f(x)), polymorphic_shapes=["(b, 4)"],
                       with_gradient=False),
        autograph=False).get_concrete_function(
            tf.TensorSpec([None, 4], tf.float32))
    for batch in (1, 3):
      x = np.linspace(-1., 1., 4 * batch, dtype=np.float32).reshape(batch, 4)
      self.assertAllClose(f_tf(tf.constant(x)).numpy(),
                          np.cos(np.sin(x) * 2.), rtol=1e-5, atol=1e-5)

  def test_symbolic_batch_ordered_error(self):
    f = jax2tf.call_tf(lambda x: tf.sin(x) * 2., call_tf_graph=True,
                       ordered=True)
    f_tf = jax2tf.convert(lambda x: jnp.cos(f(x)),
                          polymorphic_shapes=["(b, 4)"], with_gradient=False)
    with self.assertRaisesRegex(
        NotImplementedError,
        "call_tf_graph=True and ordered=True cannot have results of "
        "symbolic shape"):
      tf.function(f_tf, autograph=False).get_concrete_function(
          tf.TensorSpec([None, 4], tf.float32))
    # With static shapes, ordered=True converts and runs.
    x = np.linspace(-1., 1., 12, dtype=np.float32).reshape(3, 4)
    f_static = tf.function(
        jax2tf.convert(lambda x: jnp.cos(f(x)), with_gradient=False),
        autograph=False)
    self.assertAllClose(f_static(x).numpy(), np.cos(np.sin(x) * 2.),
                        rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
