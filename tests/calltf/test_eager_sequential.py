# Copyright 2026 The JAX call_tf fork authors.
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
"""Eager ``vmap_method="sequential"``: a loop of eager calls, linear in the batch.

Eagerly (no ``jax.jit``) the sequential method makes one eager call per row.
Gathering the rows' results must not cost more than the calls: stacking n
results with ``jnp.stack`` compiled a concatenate of n operands for every
batch size, in time growing faster than n, and kept it (issue: 306 s and
+981 MB for 32,000 rows, against 24 s for a hand loop). The timing itself is
in ``benchmarks/eager_sequential.py``; these tests check the cause: no XLA
program is compiled for a new batch size, and the results are those of
``jnp.stack`` for every kind of result.
"""

from __future__ import annotations

import contextlib

import jax
from jax._src import monitoring
from jax.experimental import jax2tf
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close

call_tf = jax2tf.call_tf
_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def count_compiles():
  """Counts the XLA compilations in the block (a list, read after it)."""
  compiles = []

  def listener(event, duration, **_):
    del duration
    if event == _BACKEND_COMPILE:
      compiles.append(event)

  jax.monitoring.register_event_duration_secs_listener(listener)
  try:
    yield compiles
  finally:
    monitoring.unregister_event_duration_listener(listener)


def two_results(x):
  h = tf.tanh(x * 2.)
  return tf.reduce_sum(h * h), h


def test_new_batch_sizes_compile_nothing():
  """A loop of eager TF calls needs no XLA program, at any batch size."""
  f = jax.vmap(call_tf(two_results, vmap_method="sequential"))
  rng = np.random.default_rng(0)
  jax.block_until_ready(f(rng.normal(size=(3, 5)).astype(np.float32)))
  for n in (200, 401):
    x = rng.normal(size=(n, 5)).astype(np.float32)
    with count_compiles() as compiles:
      total, h = jax.block_until_ready(f(x))
    assert not compiles, (
        f"eager sequential vmap of {n} rows compiled {len(compiles)} XLA "
        "programs; gathering the rows' results must compile none")
    assert_close(h, np.tanh(2. * x))
    assert_close(total, np.sum(np.tanh(2. * x) ** 2, axis=1))


def test_device_array_input_compiles_nothing_per_batch_size():
  """The same with the batch already a JAX array on the device."""
  f = jax.vmap(call_tf(two_results, vmap_method="sequential"))
  jax.block_until_ready(f(jnp.ones((3, 5))))
  x = jnp.arange(5 * 333, dtype=jnp.float32).reshape(333, 5) / 1000.
  with count_compiles() as compiles:
    _, h = jax.block_until_ready(f(x))
  assert not compiles
  assert_close(h, np.tanh(2. * np.asarray(x)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_,
                                   ml_dtypes.bfloat16, np.complex64])
def test_results_of_every_dtype_are_stacked(dtype):
  def f(x):
    y = tf.identity(x)
    return y, tf.reshape(y[0], [])  # a vector and a scalar

  x = (np.arange(12).reshape(4, 3) % 2).astype(dtype)
  with jax.enable_x64(dtype == np.float64):
    vec, scalar = jax.vmap(call_tf(f, vmap_method="sequential"))(x)
    assert vec.dtype == jnp.dtype(dtype) and vec.shape == (4, 3)
    assert scalar.dtype == jnp.dtype(dtype) and scalar.shape == (4,)
    np.testing.assert_array_equal(np.asarray(vec), x)
    np.testing.assert_array_equal(np.asarray(scalar), x[:, 0])


def test_unbatched_arguments_and_batch_sizes_zero_and_one():
  f = call_tf(lambda x, w: x * w, vmap_method="sequential")
  w = np.float32(3.)
  for n in (0, 1, 2):
    x = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
    out = jax.vmap(f, in_axes=(0, None))(x, w)
    assert out.shape == (n, 2)
    assert_close(out, x * 3.)


def test_batch_on_another_axis():
  f = jax.vmap(call_tf(lambda x: x * 2., vmap_method="sequential"),
               in_axes=1, out_axes=1)
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  assert_close(f(x), x * 2.)


def test_nested_eager_vmap_stacks_tracers():
  """Under an outer eager vmap, the inner calls' results are tracers."""
  f = call_tf(lambda x: tf.reduce_sum(x) * x, vmap_method="sequential")
  x = np.random.default_rng(1).normal(size=(3, 150, 4)).astype(np.float32)
  out = jax.vmap(jax.vmap(f))(x)
  assert_close(out, np.sum(x, axis=-1, keepdims=True) * x, tol=1e-4)


def test_gradient_of_eager_sequential():
  f = call_tf(lambda x: tf.sin(x) * x, vmap_method="sequential")
  x = np.linspace(-1, 1, 70, dtype=np.float32).reshape(35, 2)
  g = jax.vmap(jax.grad(lambda r: jnp.sum(f(r))))(x)
  assert_close(g, np.cos(x) * x + np.sin(x), tol=1e-5)


def test_committed_input_keeps_its_device():
  device = jax.devices()[-1]
  x = jax.device_put(np.ones((5, 2), np.float32), device)
  out = jax.vmap(call_tf(lambda x: x + 1., vmap_method="sequential"))(x)
  assert out.devices() == {device}
  assert_close(out, np.full((5, 2), 2., np.float32))
