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
"""Tests that call_tf reuses a trace of the same TF graph across JAX traces."""

import os
from typing import Any
import unittest

from absl.testing import absltest
import jax
from jax._src import test_util as jtu
import numpy as np

try:
  import tensorflow as tf
  from jax.experimental import jax2tf
except ImportError:
  tf = None

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
jax.config.parse_flags_with_absl()


def call_tf_functions(jaxpr: Any) -> list[Any]:
  """The TF functions of the call_tf equations in `jaxpr`, in order.

  Args:
    jaxpr: a (closed) jaxpr; the jaxprs in its equations' parameters (as
      custom_jvp_call's) are searched too.

  Returns:
    The `function_flat_tf` parameter of each call_tf equation.
  """
  found = []
  jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "call_tf":
      found.append(eqn.params["function_flat_tf"])
    for param in eqn.params.values():
      for sub in param if isinstance(param, (tuple, list)) else (param,):
        if hasattr(getattr(sub, "jaxpr", sub), "eqns"):
          found += call_tf_functions(sub)
  return found


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfTraceReuseTest(jtu.JaxTestCase):

  def test_a_new_trace_of_the_same_graph_is_reused(self):
    f_tf = lambda x: tf.sin(x) * 2.
    f = jax2tf.call_tf(f_tf)
    x = np.ones(3, np.float32)
    # A new function for each: JAX traces each anew.
    first = call_tf_functions(jax.make_jaxpr(lambda x: f(x))(x))
    second = call_tf_functions(jax.make_jaxpr(lambda x: f(x))(x))
    self.assertLen(first, 1)
    self.assertLen(second, 1)
    self.assertIs(second[0], first[0])
    # Shared by every call_tf of the same callable.
    other = call_tf_functions(
        jax.make_jaxpr(lambda x: jax2tf.call_tf(f_tf)(x))(x))
    self.assertLen(other, 1)
    self.assertIs(other[0], first[0])

  def test_a_changed_graph_is_not_reused(self):
    # The function still runs as Python on each JAX trace, and reads its
    # state then.
    scale = [2.]
    f = jax2tf.call_tf(lambda x: tf.sin(x) * scale[0])
    x = np.ones(3, np.float32)
    first = call_tf_functions(jax.make_jaxpr(lambda x: f(x))(x))
    self.assertAllClose(jax.jit(lambda x: f(x))(x), np.sin(x) * 2.)
    scale[0] = 3.
    second = call_tf_functions(jax.make_jaxpr(lambda x: f(x))(x))
    self.assertIsNot(second[0], first[0])
    self.assertAllClose(jax.jit(lambda x: f(x))(x), np.sin(x) * 3.)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
