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
"""Tests that jax2tf.call_tf refuses a TensorFlow older than it can use."""

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
    import numpy as np
    import tensorflow as tf
    from jax.experimental import jax2tf
    tf.__version__ = "2.15.1"
    try:
      jax2tf.call_tf(tf.math.sin)(np.float32(1.))
    except ImportError as e:
      print("ImportError:", e)
    else:
      print("no error")
""")


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfTensorFlowVersionTest(jtu.JaxTestCase):

  def test_old_tensorflow_is_refused_at_first_use(self):
    proc = subprocess.run([sys.executable, "-c", _CASE], capture_output=True,
                          text=True, timeout=600,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"))
    self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
    self.assertRegex(
        proc.stdout,
        r"ImportError: jax2tf.call_tf needs TensorFlow 2\.16 or newer, but "
        r"TensorFlow 2\.15\.1 is installed")


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
