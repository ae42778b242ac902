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
"""Tests for forward-mode autodiff (jvp, jacfwd, hessian) of jax2tf.call_tf."""

import os
import unittest

from absl.testing import absltest
from absl.testing import parameterized
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


def _energy_tf(x):
  d = x[:, None, :] - x[None, :, :]
  r2 = tf.reduce_sum(d * d, -1) + tf.eye(tf.shape(x)[0])
  return tf.reduce_sum(tf.sin(x)) + tf.reduce_sum(1. / r2)


def _energy_jnp(x):
  d = x[:, None, :] - x[None, :, :]
  r2 = jnp.sum(d * d, -1) + jnp.eye(x.shape[0])
  return jnp.sum(jnp.sin(x)) + jnp.sum(1. / r2)


_TRANSFORMS = dict(
    jacfwd=jax.jacfwd,
    hessian=jax.hessian,
    jacrev_of_jacfwd=lambda f: jax.jacrev(jax.jacfwd(f)),
    jacfwd_of_jacfwd=lambda f: jax.jacfwd(jax.jacfwd(f)),
)


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfForwardModeTest(jtu.JaxTestCase):

  def setUp(self):
    super().setUp()
    self.x = np.arange(12, dtype=np.float32).reshape(4, 3) / 7.

  def test_jvp(self):
    f = jax2tf.call_tf(_energy_tf)
    t = np.ones_like(self.x)
    for wrap in (lambda g: g, jax.jit):
      out, tangent = wrap(lambda x, t: jax.jvp(f, (x,), (t,)))(self.x, t)
      ref, ref_tangent = jax.jvp(_energy_jnp, (self.x,), (t,))
      self.assertAllClose(out, ref, rtol=1e-5, atol=1e-5)
      self.assertAllClose(tangent, ref_tangent, rtol=1e-4, atol=1e-4)

  @parameterized.named_parameters(
      dict(testcase_name=f"_{name}", transform=name) for name in _TRANSFORMS)
  def test_transform(self, transform):
    t = _TRANSFORMS[transform]
    res = jax.jit(t(jax2tf.call_tf(_energy_tf)))(self.x)
    self.assertAllClose(res, t(_energy_jnp)(self.x), rtol=1e-3, atol=1e-3)

  def test_custom_gradient_holds_in_both_modes(self):
    @tf.custom_gradient
    def triple_grad(x):
      return tf.identity(x), lambda dy: 3. * dy

    f = jax2tf.call_tf(triple_grad)
    x = np.ones(3, np.float32)
    self.assertAllClose(jax.jacfwd(f)(x), 3. * np.eye(3, dtype=np.float32))
    self.assertAllClose(jax.jacrev(f)(x), 3. * np.eye(3, dtype=np.float32))

  def test_integer_argument_and_output(self):
    f = jax2tf.call_tf(lambda x, n: (x * tf.cast(n, tf.float32), n))
    out_t = jax.jvp(lambda x: f(x, np.int32(2)), (self.x,),
                    (np.ones_like(self.x),))[1]
    self.assertAllClose(out_t[0], 2. * np.ones_like(self.x))
    self.assertEqual(out_t[1].dtype, jax.dtypes.float0)

  def test_a_call_differentiated_after_tracing_it_runs_as_often(self):
    # jax.grad(jax.jit(f)) traces the call into a jaxpr, then its JVP rule
    # differentiates it: the rule reads the call's own TF trace, so the TF
    # function's Python runs as often as under jax.jit(jax.grad(f)).
    runs = []

    def f_tf(x):
      runs.append(1)
      return _energy_tf(x)

    expected = jax.grad(_energy_jnp)(self.x)
    counts = []
    for transform in (lambda g: jax.jit(jax.grad(g)),
                      lambda g: jax.grad(jax.jit(g)),
                      lambda g: jax.jit(jax.grad(jax.checkpoint(g)))):
      del runs[:]
      res = transform(jax2tf.call_tf(f_tf))(self.x)
      self.assertAllClose(res, expected, rtol=1e-4, atol=1e-4)
      counts.append(len(runs))
    self.assertEqual(counts, [counts[0]] * 3)

  def test_vmap_of_jacfwd(self):
    xs = np.stack([self.x, 2. * self.x])
    res = jax.jit(jax.vmap(jax.jacfwd(jax2tf.call_tf(_energy_tf))))(xs)
    self.assertAllClose(res, jax.vmap(jax.jacfwd(_energy_jnp))(xs),
                        rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
