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
"""Tests that call_tf's VJP reuses its TF function across backward passes."""

import os
from typing import Any
import unittest

from absl.testing import absltest
import jax
from jax._src import config
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
class CallTfVjpReuseTest(jtu.JaxTestCase):

  def test_backward_passes_share_the_vjp_function(self):
    f = jax2tf.call_tf(lambda x: tf.sin(x) * 2.)
    x = np.ones(3, np.float32)
    # The VJP as a call_tf of TF's gradient (TF's vectorizer and gradients),
    # not JAX's transpose of the function's StableHLO.
    with config.call_tf_vectorizer("pfor"):
      # A new function for each: JAX traces each anew.
      first = call_tf_functions(
          jax.make_jaxpr(jax.grad(lambda x: jnp.sum(f(x))))(x))
      second = call_tf_functions(
          jax.make_jaxpr(jax.grad(lambda x: jnp.sum(f(x))))(x))
    # The call, then its VJP.
    self.assertLen(first, 2)
    self.assertLen(second, 2)
    self.assertIsNot(first[1], first[0])
    self.assertIs(second[1], first[1])
    self.assertAllClose(jax.grad(lambda x: jnp.sum(f(x)))(x), 2. * np.cos(x))


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
