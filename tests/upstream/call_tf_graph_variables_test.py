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
"""Tests for call_tf_graph=True with TF functions that capture variables."""

import os
import subprocess
import sys
import textwrap
import unittest

from absl.testing import absltest
import jax
from jax._src import test_util as jtu

try:
  import tensorflow as tf
except ImportError:
  tf = None

jax.config.parse_flags_with_absl()

_CASE = textwrap.dedent("""
    import os
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np, tensorflow as tf, jax.numpy as jnp
    from jax.experimental import jax2tf
    v = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2))
    f_tf = tf.function(lambda x: x @ v, autograph=False)
    f = jax2tf.call_tf(f_tf, call_tf_graph=True)
    g = tf.function(jax2tf.convert(lambda x: jnp.sin(f(x)),
                                   with_gradient=False), autograph=False)
    x = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(g(x).numpy(), np.sin(x @ v.numpy()),
                               rtol=1e-5)
    print("ok")
""")


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfGraphVariablesTest(jtu.JaxTestCase):

  def test_captured_variable(self):
    proc = subprocess.run([sys.executable, "-c", _CASE], capture_output=True,
                          text=True, timeout=600,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"))
    self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
    self.assertIn("ok", proc.stdout)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
