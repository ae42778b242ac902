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
"""Tests that TensorFlow can read the modules jax2tf.convert gives it."""

import os
import unittest
from unittest import mock

from absl.testing import absltest
import jax
from jax import lax
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
class Jax2TfStableHloVersionTest(jtu.JaxTestCase):

  def test_symbolic_batch_runs_in_tensorflow(self):
    f_tf = tf.function(
        jax2tf.convert(lambda x: jnp.sin(x) @ jnp.ones((4, 2), np.float32),
                       polymorphic_shapes=["(b, 4)"]),
        autograph=False).get_concrete_function(
            tf.TensorSpec([None, 4], tf.float32))
    for batch in (1, 3):
      x = np.linspace(-1., 1., 4 * batch, dtype=np.float32).reshape(batch, 4)
      self.assertAllClose(f_tf(tf.constant(x)).numpy(),
                          np.sin(x) @ np.ones((4, 2), np.float32),
                          rtol=1e-5, atol=1e-5)

  def test_feature_newer_than_tensorflow_reads_error(self):
    # A module with a feature newer than the StableHLO version TensorFlow
    # reads (an exponential with a stated accuracy, from StableHLO 1.9)
    # cannot be serialized at that version.
    from tensorflow.compiler.mlir.stablehlo import stablehlo as tf_stablehlo  # pylint: disable=g-import-not-at-top
    if not hasattr(lax, "Tolerance"):
      self.skipTest("lax.exp has no accuracy in this jax")

    def f(x):
      return lax.exp(x, accuracy=lax.Tolerance(atol=1e-3, rtol=1e-3, ulps=0))

    def reads_nothing(module_bytes):
      raise ValueError("cannot read")

    with mock.patch.object(tf_stablehlo, "get_current_version",
                           return_value="1.0.0"), \
        mock.patch.object(tf_stablehlo, "deserialize_portable_artifact_str",
                          reads_nothing):
      with self.assertRaisesRegex(
          ValueError, "the installed TensorFlow reads StableHLO up to "
          "version 1.0.0, and the module uses a feature of a newer version"):
        jax2tf.convert(f)(np.float32(1.))
    self.assertAllClose(jax2tf.convert(f)(np.float32(1.)).numpy(),
                        np.exp(np.float32(1.)), rtol=1e-3, atol=1e-3)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
