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
"""Tests for lowering jax2tf.call_tf in TF1 graph mode, and variable writes."""

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
class CallTfGraphModeTest(jtu.JaxTestCase):

  def test_captured_variable_is_read_through_the_session(self):
    x = np.array([.5, 1., 1.5], np.float32)
    assigned = np.array([2., 3., 4.], np.float32)
    with tf.Graph().as_default():
      v = tf.Variable(np.ones(3, np.float32))
      assign = v.assign(assigned)
      x_ph = tf.compat.v1.placeholder(tf.float32, (3,))
      f_jax = lambda x: jnp.sin(jax2tf.call_tf(lambda t: t * v)(x))
      with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        sess.run(assign)
        # The session's value, not the initial one: nothing re-initializes.
        y = sess.run(jax2tf.convert(f_jax)(x_ph), {x_ph: x})
    self.assertAllClose(y, np.sin(x * assigned))

  def test_uninitialized_variable_error_says_what_to_run(self):
    with tf.Graph().as_default():
      v = tf.Variable(np.ones(3, np.float32))
      x_ph = tf.compat.v1.placeholder(tf.float32, (3,))
      f_jax = lambda x: jax2tf.call_tf(lambda t: t * v)(x)
      with tf.compat.v1.Session():
        with self.assertRaisesRegex(
            ValueError,
            r"not initialized.*global_variables_initializer\(\)"):
          jax2tf.convert(f_jax)(x_ph)

  def test_variable_write_under_jit_names_the_op(self):
    v = tf.Variable(np.zeros(3, np.float32))

    def f_tf(x):
      v.assign_add(x)
      return x * 2.

    with self.assertRaisesRegex(
        ValueError, "'AssignAddVariableOp'.*assigns a TensorFlow variable"):
      jax.jit(jax2tf.call_tf(f_tf))(np.ones(3, np.float32))


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
