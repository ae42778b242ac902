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
"""call_tf under vmap composed with the other transformations."""

from __future__ import annotations

import jax
from jax import lax
from jax._src import config
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

from .util import ALL_METHODS
from .util import METHODS
from .util import assert_close
from .util import check_eager_and_jit
from .util import randn

call_tf = jax2tf.call_tf

X = randn(5, 4, 3)
Y = randn(4, 3)


def _two_outputs(method):
  f = call_tf(lambda a, b: (tf.sin(a) + b, a * 2.), vmap_method=method)
  return f, lambda a, b: (jnp.sin(a) + b, a * 2.)


def energy_tf(x):
  """R^(n x 3) -> R^3: a Lennard-Jones-like energy and two other terms."""
  d = x[:, None, :] - x[None, :, :]
  r2 = tf.reduce_sum(d * d, -1) + tf.eye(tf.shape(x)[0])
  inv6 = 1. / (r2 * r2 * r2)
  mask = 1. - tf.eye(tf.shape(x)[0])
  lj = tf.reduce_sum(mask * (inv6 * inv6 - inv6))
  rg = tf.reduce_mean(tf.reduce_sum(
      (x - tf.reduce_mean(x, 0)) ** 2, -1))
  return tf.stack([lj, rg, tf.reduce_sum(tf.sin(x))])


def energy_jnp(x):
  d = x[:, None, :] - x[None, :, :]
  r2 = jnp.sum(d * d, -1) + jnp.eye(x.shape[0])
  inv6 = 1. / (r2 * r2 * r2)
  mask = 1. - jnp.eye(x.shape[0])
  lj = jnp.sum(mask * (inv6 * inv6 - inv6))
  rg = jnp.mean(jnp.sum((x - jnp.mean(x, 0)) ** 2, -1))
  return jnp.stack([lj, rg, jnp.sum(jnp.sin(x))])


def energy_tf_batched(x):
  """The same energy written for a leading batch axis (one-call methods)."""
  d = x[..., :, None, :] - x[..., None, :, :]
  n = tf.shape(x)[-2]
  r2 = tf.reduce_sum(d * d, -1) + tf.eye(n)
  inv6 = 1. / (r2 * r2 * r2)
  lj = tf.reduce_sum((1. - tf.eye(n)) * (inv6 * inv6 - inv6), [-2, -1])
  rg = tf.reduce_mean(tf.reduce_sum(
      (x - tf.reduce_mean(x, -2, keepdims=True)) ** 2, -1), -1)
  return tf.stack([lj, rg, tf.reduce_sum(tf.sin(x), [-2, -1])], -1)


# Spread-out coordinates, so that the energy is well conditioned.
COORDS = (np.arange(18, dtype=np.float32).reshape(6, 3) % 5 * 1.3
          + randn(6, 3) * 0.1)


def test_scientists_jacobian_under_jit_with_no_flag():
  """The headline: jit(jacrev(call_tf(f))) for R^(n x 3) -> R^m."""
  assert jax.config.jax_call_tf_slow_vmap is False
  jac = jax.jit(jax.jacrev(call_tf(energy_tf)))(COORDS)
  assert jac.shape == (3, 6, 3)
  assert_close(jac, jax.jacrev(energy_jnp)(COORDS), tol=1e-4)


@pytest.mark.parametrize("method", ALL_METHODS[:5], ids=str)
def test_jacrev(method):
  one_call = method in ("expand_dims", "broadcast_all")
  f = call_tf(energy_tf_batched if one_call else energy_tf,
              vmap_method=method)
  check_eager_and_jit(jax.jacrev(f), jax.jacrev(energy_jnp), COORDS,
                      tol=1e-4)


@pytest.mark.parametrize("method", ALL_METHODS[:5], ids=str)
def test_per_example_gradients(method):
  one_call = method in ("expand_dims", "broadcast_all")
  f = call_tf(energy_tf_batched if one_call else energy_tf,
              vmap_method=method)
  xs = COORDS + randn(4, 6, 3) * 0.1
  check_eager_and_jit(jax.vmap(jax.grad(lambda x: f(x)[1])),
                      jax.vmap(jax.grad(lambda x: energy_jnp(x)[1])), xs,
                      tol=1e-4)


@pytest.mark.parametrize("method", METHODS, ids=str)
def test_jacrev_of_vmap_and_hessian_by_jacrev(method):
  f = call_tf(energy_tf, vmap_method=method)
  xs = COORDS + randn(2, 6, 3) * 0.1
  check_eager_and_jit(
      jax.jacrev(lambda x: jax.vmap(f)(x)[:, 1].sum()),
      jax.jacrev(lambda x: jax.vmap(energy_jnp)(x)[:, 1].sum()), xs,
      tol=1e-4)
  check_eager_and_jit(jax.jacrev(jax.jacrev(lambda x: f(x)[1])),
                      jax.jacrev(jax.jacrev(lambda x: energy_jnp(x)[1])),
                      COORDS, tol=1e-4)


def test_per_example_gradients_with_an_int_argument():
  f = call_tf(lambda x, k: x * tf.cast(k, tf.float32))
  ks = np.arange(5, dtype=np.int32)
  check_eager_and_jit(
      jax.vmap(jax.grad(lambda x, k: f(x, k).sum())),
      lambda x, k: jnp.broadcast_to(k[:, None, None].astype(np.float32),
                                    x.shape), X, ks)


@pytest.mark.parametrize("method", ALL_METHODS, ids=str)
@pytest.mark.parametrize("in_axes,out_axes", [
    ((1, None), (1, 0)), ((-1, None), (-1, 0)), ((0, 0), (0, 1)),
    ((None, 1), (0, -1))])
def test_in_axes_and_out_axes(method, in_axes, out_axes):
  f, f_jnp = _two_outputs(method)
  x = np.moveaxis(X, 0, in_axes[0]) if in_axes[0] is not None else Y
  y = (np.moveaxis(np.stack([Y] * 5), 0, in_axes[1])
       if in_axes[1] is not None else Y)
  check_eager_and_jit(jax.vmap(f, in_axes=in_axes, out_axes=out_axes),
                      jax.vmap(f_jnp, in_axes=in_axes, out_axes=out_axes),
                      x, y)


@pytest.mark.parametrize("method", ALL_METHODS, ids=str)
def test_nested_vmap_two_and_three_deep(method):
  f, f_jnp = _two_outputs(method)
  check_eager_and_jit(
      jax.vmap(jax.vmap(f, in_axes=(0, None)), in_axes=(None, 0)),
      jax.vmap(jax.vmap(f_jnp, in_axes=(0, None)), in_axes=(None, 0)), X, X)
  nest3 = lambda g: jax.vmap(jax.vmap(jax.vmap(g, in_axes=(0, None)),
                                      in_axes=(0, 0)), in_axes=(2, None))
  check_eager_and_jit(nest3(f), nest3(f_jnp), randn(2, 3, 4, 5), randn(2, 5))


@pytest.mark.parametrize("method", ALL_METHODS, ids=str)
def test_pytrees_in_and_out(method):
  def f_tf(d):
    return {"s": tf.sin(d["a"]), "t": (d["b"] * 2., d["a"] + 1.)}

  def f_jnp(d):
    return {"s": jnp.sin(d["a"]), "t": (d["b"] * 2., d["a"] + 1.)}

  in_axes = ({"a": 0, "b": None},)
  check_eager_and_jit(jax.vmap(call_tf(f_tf, vmap_method=method),
                               in_axes=in_axes),
                      jax.vmap(f_jnp, in_axes=in_axes),
                      {"a": X, "b": randn(2)})


@pytest.mark.parametrize("method", ALL_METHODS[:5], ids=str)
def test_zero_outputs(method, tmp_path):
  log = tmp_path / "printed.txt"

  def no_output(x):
    tf.print("sum", tf.reduce_sum(x), output_stream=f"file://{log}")
    return []

  f = jax.vmap(call_tf(no_output, vmap_method=method))
  if method != "sequential":
    # tf.print is a side effect: one call (pfor's, or a one-call method's)
    # would print once for the whole batch.
    with pytest.raises(call_tf_errors.CallTfVectorizationError,
                       match="PrintV2.*side effects"):
      f(X)
    assert not log.exists()
  else:
    assert f(X) == []
    printed = log.read_text().count("sum")
    assert printed == len(X), printed  # one print per element

  def no_output_xla(x):  # XLA cannot compile tf.print (upstream too)
    del x
    return []
  assert jax.jit(jax.vmap(call_tf(no_output_xla, vmap_method=method)))(X) == []


@pytest.mark.parametrize("method", ALL_METHODS, ids=str)
@pytest.mark.parametrize("batch", [0, 1, 7, 1000])
def test_batch_sizes(method, batch):
  f, f_jnp = _two_outputs(method)
  x = randn(batch, 4, 3)
  check_eager_and_jit(jax.vmap(f, in_axes=(0, None)),
                      jax.vmap(f_jnp, in_axes=(0, None)), x, Y)


@pytest.mark.parametrize("method", ALL_METHODS, ids=str)
def test_one_jit_reused_with_several_batch_sizes(method):
  f, f_jnp = _two_outputs(method)
  jitted = jax.jit(jax.vmap(f, in_axes=(0, None)))
  for batch in (3, 8, 3, 1):
    x = randn(batch, 4, 3)
    assert_close(jitted(x, Y), jax.vmap(f_jnp, in_axes=(0, None))(x, Y))


@pytest.mark.parametrize("method", ALL_METHODS, ids=str)
def test_vmap_inside_lax_map_and_scan(method):
  f, f_jnp = _two_outputs(method)
  xs = randn(3, 2, 4, 3)

  def with_map(g):
    return lambda x, y: lax.map(
        lambda xi: jax.vmap(g, in_axes=(0, None))(xi, y), x)

  def with_scan(g):
    def step(c, xi):
      return c + jax.vmap(g, in_axes=(0, None))(xi, c)[0].sum(0), None
    return lambda x, y: lax.scan(step, y, x)[0]

  check_eager_and_jit(with_map(f), with_map(f_jnp), xs, Y)
  check_eager_and_jit(with_scan(f), with_scan(f_jnp), xs, Y, tol=1e-4)


DTYPE_CASES = {
    "float32": (np.float32, lambda a: a * a + tf.cast(1, a.dtype),
                lambda a: a * a + 1),
    "bfloat16": (ml_dtypes.bfloat16, lambda a: a * a + tf.cast(1, a.dtype),
                 lambda a: a * a + 1),
    "int32": (np.int32, lambda a: a * 2 + 1, lambda a: a * 2 + 1),
    "bool": (np.bool_, tf.logical_not, jnp.logical_not),
}


@pytest.mark.parametrize("method", METHODS + ("expand_dims",), ids=str)
@pytest.mark.parametrize("dtype", sorted(DTYPE_CASES))
def test_dtypes(dtype, method):
  np_dtype, f_tf, f_jnp = DTYPE_CASES[dtype]
  x = (randn(5, 4) * 3).astype(np_dtype)
  check_eager_and_jit(jax.vmap(call_tf(f_tf, vmap_method=method)),
                      jax.vmap(f_jnp), x, tol=1e-2)


@pytest.mark.parametrize("method", METHODS + ("expand_dims",), ids=str)
def test_float64_under_x64(method):
  with config.enable_x64(True):
    x = randn(5, 4, dtype=np.float64)
    f = jax.vmap(call_tf(lambda a: a * a + 1., vmap_method=method))
    check_eager_and_jit(f, jax.vmap(lambda a: a * a + 1.), x, tol=1e-12)
    assert f(x).dtype == np.float64


def test_tf_float64_result_under_x32_is_float32():
  f = jax.vmap(call_tf(lambda a: tf.cast(a, tf.float64) * 2))
  check_eager_and_jit(f, lambda a: a * 2., X)
