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
"""Tests for call_tf in TF1 graph mode, inferred shapes and SavedModels."""

import os
import tempfile
import unittest

from absl.testing import absltest
import jax
from jax import export
from jax._src import test_util as jtu
import jax.numpy as jnp
import numpy as np

try:
  import tensorflow as tf
  from jax.experimental import jax2tf
  from jax.experimental.jax2tf.call_tf_lib.tf_function import version as call_tf_version
  from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
except ImportError:
  tf = None

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
jax.config.parse_flags_with_absl()


def _save(fun_tf, variables=()):
  module = tf.Module()
  module.vars = list(variables)
  module.f = tf.function(fun_tf, autograph=False, input_signature=[
      tf.TensorSpec((None, 4), tf.float32)])
  path = tempfile.mkdtemp()
  tf.saved_model.save(module, path, options=tf.saved_model.SaveOptions(
      experimental_custom_gradients=True))
  return tf.saved_model.load(path)


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfModesTest(jtu.JaxTestCase):

  def test_graph_mode_reads_variables_through_the_session(self):
    x = np.array([.5, 1., 1.5], np.float32)
    new = np.array([2., 3., 4.], np.float32)
    with tf.Graph().as_default():
      v = tf.Variable(np.ones(3, np.float32))
      assign = v.assign(new)
      x_ph = tf.compat.v1.placeholder(tf.float32, (3,))
      f = lambda x: jnp.sin(jax2tf.call_tf(lambda t: t * v)(x))
      with tf.compat.v1.Session() as sess:
        with self.assertRaisesRegex(
            call_tf_errors.CallTfUninitializedVariablesError,
            "global_variables_initializer"):
          jax2tf.convert(f)(x_ph)
        sess.run(tf.compat.v1.global_variables_initializer())
        sess.run(assign)
        y = sess.run(jax2tf.convert(f)(x_ph), {x_ph: x})
    self.assertAllClose(y, np.sin(x * new))

  def test_jit_of_restored_function_infers_output_shapes(self):
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.
    variable = tf.Variable(w)
    restored = _save(lambda x: tf.concat([x @ variable, x @ variable], 0),
                     [variable])
    f = jax2tf.call_tf(restored.f)
    x = np.ones((3, 4), np.float32)
    self.assertAllClose(jax.jit(f)(x), np.concatenate([x @ w, x @ w]))
    # Symbolic output shapes are inferred where the call can run at a
    # symbolic batch: with call_tf_graph, under jax2tf.convert.
    out = jax.eval_shape(
        jax2tf.call_tf(restored.f, call_tf_graph=True),
        jax.ShapeDtypeStruct(export.symbolic_shape("b, 4"), np.float32))
    self.assertEqual(str(out.shape), "(2*b, 3)")
    with self.assertRaisesRegex(
        ValueError,
        "call_tf cannot call functions whose output has dynamic shape"):
      jax.eval_shape(f, jax.ShapeDtypeStruct(
          export.symbolic_shape("b, 4"), np.float32))

  def test_restored_jax2tf_function_exports_with_a_symbolic_batch(self):
    w = np.arange(16, dtype=np.float32).reshape(4, 4) / 10.
    variable = tf.Variable(w)
    f_tf = jax2tf.convert(lambda w, x: jnp.tanh(x @ w),
                          polymorphic_shapes=[None, "(b, 4)"])
    restored = _save(lambda x: f_tf(variable, x), [variable])
    g = lambda x: jnp.sin(jax2tf.call_tf(restored.f)(x))
    g_ref = lambda x: jnp.sin(jnp.tanh(x @ w))
    exported = export.export(jax.jit(g))(jax.ShapeDtypeStruct(
        export.symbolic_shape("b, 4"), np.float32))
    self.assertEqual(str(exported.in_avals[0].shape), "(b, 4)")
    for batch in (1, 3):
      x = np.linspace(-1, 1, 4 * batch, dtype=np.float32).reshape(batch, 4)
      self.assertAllClose(exported.call(x), g_ref(x), atol=1e-5, rtol=1e-5)
      self.assertAllClose(jax.grad(lambda x: g(x).sum())(x),
                          jax.grad(lambda x: g_ref(x).sum())(x),
                          atol=1e-5, rtol=1e-5)

  def test_old_tensorflow_is_refused(self):
    call_tf_version.check_tensorflow_version.cache_clear()
    with self.assertRaisesRegex(call_tf_errors.CallTfTensorFlowVersionError,
                                "TensorFlow 2.15.1 is installed"):
      call_tf_version.check_tensorflow_version("2.15.1")


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
