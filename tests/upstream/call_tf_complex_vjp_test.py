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
"""Tests that complex gradients follow each framework's own convention.

TF's gradient of a complex function is the conjugate of JAX's VJP. The VJP
of call_tf is in JAX's convention, and the TF gradient of a jax2tf-converted
function in TF's, so that the round trip call_tf(jax2tf.convert(f)) gives
JAX's derivative of f.
"""

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

_Z = np.array([1. + 2.j, -.5 + .25j, .3 - 1.j], np.complex64)


def _cube_tf(z):
  return z * z * z


def _cube_jnp(z):
  return z * z * z


_WRAPS = dict(eager=lambda f: f, jit=jax.jit)

_C = np.array([1. + 2.j, -.5 + .3j, .7 - 1.1j], np.complex64)


def _loss_jnp(z):
  """A real function of a complex argument, not holomorphic."""
  return jnp.sum(jnp.real(z * z * _C) + jnp.abs(z) ** 2)


def _loss_tf(z):
  return tf.reduce_sum(tf.math.real(z * z * _C) + tf.math.abs(z) ** 2)


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfComplexVjpTest(jtu.JaxTestCase):

  @parameterized.named_parameters(
      dict(testcase_name=f"_{name}", wrap=name) for name in _WRAPS)
  def test_vjp_matches_jnp(self, wrap):
    u = np.array([1. + 1.j, .5 - 2.j, -1.j], np.complex64)
    vjp = lambda f: lambda z, u: jax.vjp(f, z)[1](u)
    self.assertAllClose(
        _WRAPS[wrap](vjp(jax2tf.call_tf(_cube_tf)))(_Z, u),
        vjp(_cube_jnp)(_Z, u), rtol=1e-5, atol=1e-5)

  @parameterized.named_parameters(
      dict(testcase_name=f"_{name}", wrap=name) for name in _WRAPS)
  def test_grad_of_a_real_function_of_a_complex_argument(self, wrap):
    loss = lambda f: lambda z: jnp.sum(jnp.abs(f(z) - 1.) ** 2)
    self.assertAllClose(
        _WRAPS[wrap](jax.grad(loss(jax2tf.call_tf(_cube_tf))))(_Z),
        jax.grad(loss(_cube_jnp))(_Z), rtol=1e-5, atol=1e-5)

  def test_holomorphic_jacrev_is_the_derivative(self):
    jac = jax.jacrev(jax2tf.call_tf(_cube_tf), holomorphic=True)(_Z)
    self.assertAllClose(jac, np.diag(3. * _Z * _Z), rtol=1e-5, atol=1e-5)

  @parameterized.named_parameters(
      dict(testcase_name=f"_{name}", wrap=name) for name in _WRAPS)
  def test_grad_of_the_round_trip_is_jaxs(self, wrap):
    round_trip = jax2tf.call_tf(jax2tf.convert(_loss_jnp))
    self.assertAllClose(
        _WRAPS[wrap](jax.grad(round_trip))(_Z), jax.grad(_loss_jnp)(_Z),
        rtol=1e-5, atol=1e-5)

  @parameterized.named_parameters(
      dict(testcase_name=f"_{name}", wrap=name) for name in _WRAPS)
  def test_vjp_of_the_holomorphic_round_trip_is_jaxs(self, wrap):
    u = np.array([1. + 1.j, .5 - 2.j, -1.j], np.complex64)
    vjp = lambda f: lambda z, u: jax.vjp(f, z)[1](u)
    self.assertAllClose(
        _WRAPS[wrap](vjp(jax2tf.call_tf(jax2tf.convert(_cube_jnp))))(_Z, u),
        vjp(_cube_jnp)(_Z, u), rtol=1e-5, atol=1e-5)

  def test_tf_gradient_of_a_converted_function_is_tfs(self):
    z = tf.constant(_Z)
    with tf.GradientTape(persistent=True) as tape:
      tape.watch(z)
      converted = jax2tf.convert(_loss_jnp)(z)
      written_in_tf = _loss_tf(z)
    self.assertAllClose(tape.gradient(converted, z).numpy(),
                        tape.gradient(written_in_tf, z).numpy(),
                        rtol=1e-5, atol=1e-5)
    # TF's convention: the conjugate of JAX's gradient.
    self.assertAllClose(tape.gradient(converted, z).numpy(),
                        np.conj(jax.grad(_loss_jnp)(_Z)), rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
