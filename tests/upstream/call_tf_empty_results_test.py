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
"""Tests that call_tf's results of size 0 have the shape TF's graph gives."""

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

_X = np.array([[1., 2., 0.], [-1., .5, 3.], [2., 0., -2.]], np.float32)


def _eigenvalues_tf(x):
  # The vectors are not computed: TF's graph gives them shape (0,), its
  # eager kernel a scalar, tf2xla the whole matrix.
  return tuple(tf.raw_ops.SelfAdjointEigV2(input=x + tf.transpose(x),
                                           compute_v=False))


def _eigenvalues_jnp(x):
  return jnp.linalg.eigvalsh(x + x.T), jnp.zeros((0,), x.dtype)


def _singular_values_tf(x):
  return tuple(tf.raw_ops.Svd(input=x, compute_uv=False))


def _singular_values_jnp(x):
  return (jnp.linalg.svd(x, compute_uv=False), jnp.zeros((0,), x.dtype),
          jnp.zeros((0,), x.dtype))


_FUNCTIONS = dict(eigenvalues=(_eigenvalues_tf, _eigenvalues_jnp),
                  singular_values=(_singular_values_tf, _singular_values_jnp))
_WRAPS = dict(eager=lambda f: f, jit=jax.jit)


def _cases():
  return [dict(testcase_name=f"_{name}_{wrap}", name=name, wrap=wrap)
          for name in _FUNCTIONS for wrap in _WRAPS]


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfEmptyResultsTest(jtu.JaxTestCase):

  @parameterized.named_parameters(_cases())
  def test_value(self, name, wrap):
    f_tf, f_jnp = _FUNCTIONS[name]
    self.assertAllClose(_WRAPS[wrap](jax2tf.call_tf(f_tf))(_X), f_jnp(_X),
                        rtol=1e-5, atol=1e-5)

  @parameterized.named_parameters(_cases())
  def test_vmap(self, name, wrap):
    f_tf, f_jnp = _FUNCTIONS[name]
    xs = np.stack([_X, 2. * _X, -_X])
    self.assertAllClose(_WRAPS[wrap](jax.vmap(jax2tf.call_tf(f_tf)))(xs),
                        jax.vmap(f_jnp)(xs), rtol=1e-4, atol=1e-4)

  @parameterized.named_parameters(_cases())
  def test_jacobians(self, name, wrap):
    f_tf, f_jnp = _FUNCTIONS[name]
    for jac in (jax.jacrev, jax.jacfwd):
      self.assertAllClose(_WRAPS[wrap](jac(jax2tf.call_tf(f_tf)))(_X),
                          jac(f_jnp)(_X), rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
