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
"""Tests for jax.vmap of jax2tf.call_tf.

See https://github.com/jax-ml/jax/issues/11753.
"""

import os
import unittest

from absl.testing import absltest
from absl.testing import parameterized
import jax
from jax import lax
from jax._src import config
from jax._src import test_util as jtu
import jax.numpy as jnp
import numpy as np

try:
  import tensorflow as tf
  from jax.experimental import jax2tf
  from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
except ImportError:
  tf = None

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
jax.config.parse_flags_with_absl()

_METHODS = [None, "vectorized", "sequential"]
_ALL_METHODS = _METHODS + ["expand_dims", "broadcast_all", "batch_polymorphic"]


def _energy_tf(x):
  d = x[:, None, :] - x[None, :, :]
  r2 = tf.reduce_sum(d * d, -1) + tf.eye(tf.shape(x)[0])
  return tf.stack([tf.reduce_sum(1. / r2), tf.reduce_sum(tf.sin(x))])


def _energy_jnp(x):
  d = x[:, None, :] - x[None, :, :]
  r2 = jnp.sum(d * d, -1) + jnp.eye(x.shape[0])
  return jnp.stack([jnp.sum(1. / r2), jnp.sum(jnp.sin(x))])


@unittest.skipIf(tf is None, "Test requires TensorFlow")
class CallTfVmapTest(jtu.JaxTestCase):

  def setUp(self):
    super().setUp()
    self.rng = np.random.RandomState(0)

  @parameterized.named_parameters(
      dict(testcase_name=f"_{method}", method=method)
      for method in _ALL_METHODS)
  def test_vmap_matches_jnp(self, method):
    x, y = self.rng.randn(5, 4, 3).astype(np.float32), self.rng.randn(4, 3)
    y = y.astype(np.float32)
    f = jax2tf.call_tf(lambda a, b: (tf.sin(a) + b, a * 2.),
                       vmap_method=method)
    f_jnp = lambda a, b: (jnp.sin(a) + b, a * 2.)
    for in_axes in [(0, None), (1, None), (None, 0)]:
      args = (x if in_axes[0] == 0 else np.moveaxis(x, 0, 1)
              if in_axes[0] == 1 else y,
              x if in_axes[1] == 0 else y)
      expected = jax.vmap(f_jnp, in_axes=in_axes)(*args)
      self.assertAllClose(jax.vmap(f, in_axes=in_axes)(*args), expected,
                          atol=1e-5, rtol=1e-5)
      self.assertAllClose(jax.jit(jax.vmap(f, in_axes=in_axes))(*args),
                          expected, atol=1e-5, rtol=1e-5)

  @parameterized.named_parameters(
      dict(testcase_name=f"_{method}", method=method) for method in _METHODS)
  def test_jacrev(self, method):
    x = (np.arange(18, dtype=np.float32).reshape(6, 3) % 5) * 1.3 + (
        self.rng.randn(6, 3).astype(np.float32) * .1)
    f = jax2tf.call_tf(_energy_tf, vmap_method=method)
    self.assertAllClose(jax.jit(jax.jacrev(f))(x), jax.jacrev(_energy_jnp)(x),
                        atol=1e-4, rtol=1e-4)

  def test_per_example_gradients(self):
    xs = self.rng.randn(4, 6, 3).astype(np.float32)
    f = jax2tf.call_tf(_energy_tf)
    grad = jax.vmap(jax.grad(lambda x: f(x)[1]))
    self.assertAllClose(jax.jit(grad)(xs),
                        jax.vmap(jax.grad(lambda x: _energy_jnp(x)[1]))(xs))

  def test_vmap_inside_scan_and_nested(self):
    xs = self.rng.randn(3, 2, 4).astype(np.float32)
    f = jax2tf.call_tf(tf.sin)
    scan = lambda g: lax.scan(lambda c, x: (c + jax.vmap(g)(x).sum(0), None),
                              jnp.zeros(4, np.float32), xs)[0]
    self.assertAllClose(jax.jit(lambda: scan(f))(), scan(jnp.sin))
    self.assertAllClose(jax.jit(jax.vmap(jax.vmap(f)))(xs), jnp.sin(xs))


  def test_batch_size_zero(self):
    f = jax2tf.call_tf(tf.sin)
    out = jax.jit(jax.vmap(f))(np.zeros((0, 3), np.float32))
    self.assertEqual(out.shape, (0, 3))

  def test_unknown_method(self):
    with self.assertRaisesRegex(ValueError, "vmap_method='loop'"):
      jax2tf.call_tf(tf.sin, vmap_method="loop")

  def test_not_vectorizable_error_and_slow_path(self):
    # pfor cannot vectorize a round trip (its StableHLO module can, and by
    # default does: here the vectorizer is pfor).
    round_trip = jax2tf.call_tf(jax2tf.convert(jnp.sin))
    x = self.rng.randn(3, 4).astype(np.float32)
    with config.call_tf_vectorizer("pfor"):
      with self.assertRaisesRegex(call_tf_errors.CallTfVectorizationError,
                                  "cannot vectorize op 'XlaCallModule'.*"
                                  "vmap_method='sequential'.*"
                                  "jax_call_tf_slow_vmap"):
        jax.vmap(round_trip)(x)
      with config.call_tf_slow_vmap(True):
        self.assertAllClose(jax.jit(jax.vmap(round_trip))(x), jnp.sin(x))
    self.assertAllClose(jax.vmap(round_trip)(x), jnp.sin(x))  # the module
    sequential = jax2tf.call_tf(jax2tf.convert(jnp.sin),
                                vmap_method="sequential")
    self.assertAllClose(jax.vmap(sequential)(x), jnp.sin(x))

  def test_slow_vmap_is_in_the_trace_context(self):
    # A round trip, which pfor cannot vectorize (the StableHLO path can).
    f = jax.jit(jax.vmap(jax2tf.call_tf(jax2tf.convert(jnp.sin))))
    x = self.rng.randn(3, 4).astype(np.float32)
    with config.call_tf_vectorizer("pfor"):
      with config.call_tf_slow_vmap(True):
        f(x)
      with self.assertRaises(call_tf_errors.CallTfVectorizationError):
        f(x)


  def test_ordered_needs_sequential(self):
    f = jax2tf.call_tf(tf.sin, ordered=True)
    with self.assertRaisesRegex(NotImplementedError, "ordered=True"):
      jax.vmap(f)(np.ones((2, 3), np.float32))

  def test_eager_vmap_does_not_need_xla(self):
    # tf.math.special.dawsn has no XLA kernel.
    x = self.rng.randn(3, 4).astype(np.float32)
    f = jax2tf.call_tf(tf.math.special.dawsn)
    expected = np.stack([np.asarray(f(r)) for r in x])
    self.assertAllClose(jax.vmap(f)(x), expected)



if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
