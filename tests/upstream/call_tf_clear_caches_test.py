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
"""Tests that jax.clear_caches() clears call_tf's concrete-function cache."""

import importlib
import unittest

from absl.testing import absltest
import jax
from jax._src import test_util as jtu
import numpy as np

try:
  import tensorflow as tf
except ImportError:
  tf = None

if tf is not None:
  from jax.experimental import jax2tf
  # The module: jax.experimental.jax2tf.call_tf is also the function's name.
  call_tf_module = importlib.import_module("jax.experimental.jax2tf.call_tf")

jax.config.parse_flags_with_absl()


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfClearCachesTest(jtu.JaxTestCase):

  def test_clear_caches_clears_concrete_functions(self):
    cache = call_tf_module._get_concrete_function_tf
    f = jax2tf.call_tf(tf.function(tf.math.sin, autograph=False))
    x = np.float32(0.5)
    self.assertAllClose(jax.jit(f)(x), np.sin(x))
    self.assertGreater(cache.cache_info().currsize, 0)
    jax.clear_caches()
    self.assertEqual(cache.cache_info().currsize, 0)
    # The next call traces again.
    self.assertAllClose(jax.jit(f)(x), np.sin(x))
    self.assertGreater(cache.cache_info().currsize, 0)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
