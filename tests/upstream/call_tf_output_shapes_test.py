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
"""Tests for output shapes of jax2tf.call_tf that TensorFlow leaves unknown."""

import os
import unittest

from absl.testing import absltest
import jax
from jax import export
from jax._src import test_util as jtu
import numpy as np

try:
  import tensorflow as tf
  from jax.experimental import jax2tf
except ImportError:
  tf = None

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
jax.config.parse_flags_with_absl()

_DYNAMIC_SHAPE_ERROR = (
    "call_tf cannot call functions whose output has dynamic shape")


def _batch_function():
  """A TF function of a (None, 4) batch, like one restored from a SavedModel.

  TensorFlow reports its output shape as (None, 3) whatever the input.
  """
  w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.
  return tf.function(
      lambda x: tf.concat([x @ w, 2. * (x @ w)], axis=0), autograph=False,
      input_signature=[tf.TensorSpec((None, 4), tf.float32)])


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfOutputShapesTest(jtu.JaxTestCase):

  def test_symbolic_output_shape_with_call_tf_graph(self):
    x = jax.ShapeDtypeStruct(export.symbolic_shape("b, 4"), np.float32)
    out = jax.eval_shape(
        jax2tf.call_tf(_batch_function(), call_tf_graph=True), x)
    self.assertEqual(str(out.shape), "(2*b, 3)")
    self.assertEqual(out.dtype, np.float32)

  def test_upstream_error_where_no_static_shape_can_be_inferred(self):
    # Without call_tf_graph, a symbolic batch cannot be compiled.
    x = jax.ShapeDtypeStruct(export.symbolic_shape("b, 4"), np.float32)
    with self.assertRaisesRegex(ValueError, _DYNAMIC_SHAPE_ERROR):
      jax.eval_shape(jax2tf.call_tf(_batch_function()), x)
    # A data-dependent shape.
    f = jax2tf.call_tf(lambda x: tf.boolean_mask(x, x > 0))
    with self.assertRaisesRegex(ValueError, _DYNAMIC_SHAPE_ERROR):
      jax.jit(f)(np.array([1., -1., 2.], np.float32))


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
