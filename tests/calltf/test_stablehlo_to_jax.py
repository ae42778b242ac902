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
"""Differential tests of stablehlo_to_jax, the StableHLO interpreter.

Each TF function is lowered once by tf2xla (as call_tf's lowering does); the
same StableHLO module is run by XLA directly (embedded in a jitted JAX
function, as call_tf embeds it) and by `Program.__call__` (lax operations):
values eagerly and under jit; `jax.vmap` of the program against a loop of
XLA runs (batch sizes 0, 1 and 3, other in_axes, nested); and, for the
differentiable functions, `jax.jacrev`/`jax.jacfwd` of the program against
TF's `tape.jacobian`. Hand-written modules test corners TF does not emit.
"""

from __future__ import annotations

import functools
from typing import Callable

import jax
from jax._src import config
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib.stablehlo import path as stablehlo_path
from jax._src.export import stablehlo_to_jax as s2j
import numpy as np
import pytest
import tensorflow as tf

from ..stablehlo.xla import xla_function
from .util import assert_close


# The TF functions: name -> (function, argument makers, differentiable args).


def _sign_free_svd(a):
  s, u, v = tf.linalg.svd(a)
  return s, u ** 2 * s, v ** 2 * s

_rng = np.random.default_rng(0)


def _f(*shape, dtype=np.float32, lo=None):
  def make():
    x = _rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
      x = x + 1j * _rng.standard_normal(shape)
    if lo is not None:
      x = np.abs(x) + lo
    return np.asarray(x, dtype)
  make.spec = tf.TensorSpec(shape, dtype)
  return make


def _i(*shape, lo=0, hi=3, dtype=np.int32):
  def make():
    return _rng.integers(lo, hi, shape).astype(dtype)
  make.spec = tf.TensorSpec(shape, dtype)
  return make


def _spd(n, dtype=np.float32):
  def make():
    a = _rng.standard_normal((n, n))
    return (a @ a.T + n * np.eye(n)).astype(dtype)
  make.spec = tf.TensorSpec((n, n), dtype)
  return make


def _keras():
  dense = tf.keras.layers.Dense(4, activation="relu")
  dense.build((None, 3))
  conv = tf.keras.layers.Conv2D(3, 3, padding="same")
  conv.build((None, 5, 5, 2))
  ln = tf.keras.layers.LayerNormalization()
  ln.build((None, 4))
  mha = tf.keras.layers.MultiHeadAttention(2, 4)
  mha(tf.zeros((1, 3, 4)), tf.zeros((1, 3, 4)))
  lstm = tf.keras.layers.LSTM(3)
  lstm(tf.zeros((1, 4, 2)))
  return {
      "keras_dense": (dense, [_f(2, 3)], (0,)),
      "keras_conv2d": (conv, [_f(1, 5, 5, 2)], (0,)),
      "keras_layer_norm": (ln, [_f(2, 4)], (0,)),
      "keras_mha": (lambda x: mha(x, x), [_f(1, 3, 4)], (0,)),
      "keras_lstm": (lstm, [_f(1, 4, 2)], (0,)),
  }


def _float_elementwise(x, y):
  return (x + y, x - y, x * y, x / y, tf.maximum(x, y), tf.minimum(x, y),
          tf.abs(x), -x, tf.sign(x), tf.exp(x), tf.math.expm1(x),
          tf.math.log(tf.abs(x) + 1), tf.math.log1p(tf.abs(x)),
          tf.sigmoid(x), tf.sqrt(tf.abs(x) + 1), tf.math.rsqrt(tf.abs(x) + 1),
          tf.sin(x), tf.cos(x), tf.tan(x), tf.tanh(x), tf.math.atan2(x, y),
          tf.pow(tf.abs(x) + 1, y), tf.math.floormod(x, y),
          tf.floor(x), tf.math.ceil(x),
          tf.round(x), tf.math.rint(x), tf.math.erf(x), tf.math.lgamma(
              tf.abs(x) + 1), tf.math.digamma(tf.abs(x) + 1),
          tf.nn.softplus(x), tf.math.asinh(x), tf.clip_by_value(x, -.5, .5),
          tf.where(x > y, x, y), tf.math.squared_difference(x, y),
          tf.math.reciprocal(tf.abs(x) + 1), tf.nn.relu6(x), tf.nn.elu(x))


def _float_predicates(x, y):
  return (tf.cast(x < y, tf.int32), tf.cast(x >= y, tf.int32),
          tf.cast(tf.equal(x, y), tf.int32), tf.cast(tf.math.is_finite(x / y),
                                                     tf.int32),
          tf.cast(x, tf.int32), tf.bitcast(x, tf.int32), tf.truncatemod(x, y))


def _int_elementwise(x, y):
  y = y + 1
  return (x + y, x - y, x * y, x // y, x % y, tf.truncatediv(x, y),
          tf.abs(x), -x, tf.maximum(x, y), tf.minimum(x, y),
          tf.bitwise.bitwise_and(x, y), tf.bitwise.bitwise_or(x, y),
          tf.bitwise.bitwise_xor(x, y), tf.bitwise.invert(x),
          tf.bitwise.left_shift(x, y), tf.bitwise.right_shift(x, y),
          tf.raw_ops.PopulationCount(x=x), tf.cast(x < y, tf.int32),
          tf.cast(tf.cast(x, tf.float32) * 1.5, tf.int32), tf.sign(x),
          tf.clip_by_value(x, -2, 2))


def _complex_elementwise(x, y):
  return (x + y, x * y, x / y, tf.exp(x), tf.abs(x), tf.math.real(x * y),
          tf.math.imag(x), tf.math.conj(x), tf.sqrt(x), tf.math.log(x),
          tf.sin(x), tf.tanh(x), tf.complex(tf.math.real(x), tf.math.imag(y)),
          tf.math.angle(x), tf.cast(tf.equal(x, y), tf.int32))


def _reductions(x):
  return (tf.reduce_sum(x), tf.reduce_sum(x, 0), tf.reduce_max(x, 1),
          tf.reduce_min(x), tf.reduce_prod(x, 1), tf.reduce_mean(x, 0),
          tf.reduce_logsumexp(x, 1), tf.argmax(x, 1, output_type=tf.int32),
          tf.argmin(x, 0, output_type=tf.int32),
          tf.cast(tf.reduce_all(x > -1, 1), tf.int32),
          tf.cast(tf.reduce_any(x > 1, 0), tf.int32),
          tf.math.reduce_std(x, 1), tf.norm(x), tf.nn.softmax(x),
          tf.nn.log_softmax(x))


def _structure(x, i):
  return (x[1:, ::-1], x[::2], tf.concat([x, 2 * x], 0),
          tf.pad(x, [[1, 2], [0, 1]], constant_values=3.),
          tf.pad(x, [[1, 1], [2, 0]], mode="REFLECT"), tf.reverse(x, [0, 1]),
          tf.slice(x, [i, 0], [2, 2]), tf.tile(x, [2, 1]), tf.transpose(x),
          tf.reshape(x, [-1]), tf.expand_dims(x, 0), tf.one_hot(i, 4),
          tf.range(5), tf.linspace(0., 1., 5), x[i], x[:, i],
          tf.linalg.band_part(x, 1, 0), tf.linalg.diag_part(x[:3]),
          tf.linalg.set_diag(x[:3], tf.zeros(3)), tf.linalg.trace(x[:3]),
          tf.roll(x, i, 0), tf.broadcast_to(x[:1], [3, 3]),
          tf.eye(3) * x[0])


def _pooling_grads(x, w):
  with tf.GradientTape() as tape:
    tape.watch([x, w])
    y = (tf.reduce_sum(tf.nn.max_pool2d(tf.nn.conv2d(x, w, 1, "SAME"), 2, 2,
                                        "SAME") ** 2)
         + tf.reduce_sum(tf.nn.avg_pool2d(x, 2, 2, "SAME") ** 2))
  return tape.gradient(y, [x, w])


def _batch_norm(x, scale, y):
  """FusedBatchNorm in inference (NCHW), training (with the running
  statistics mixed in) and TF's gradient of training: the module's
  batch_norm_inference, batch_norm_training and batch_norm_grad."""
  mean, variance = scale * .5, scale * scale + .5
  inference = tf.raw_ops.FusedBatchNorm(
      x=tf.transpose(x, [0, 3, 1, 2]), scale=scale, offset=-scale, mean=mean,
      variance=variance, is_training=False, data_format="NCHW")[0]
  training = tf.raw_ops.FusedBatchNormV3(
      x=x, scale=scale, offset=mean, mean=mean, variance=variance,
      is_training=True, exponential_avg_factor=.3)[:3]
  with tf.GradientTape() as tape:
    tape.watch(y)
    out = tf.raw_ops.FusedBatchNormV2(x=y, scale=scale, offset=mean,
                                      mean=mean, variance=variance,
                                      is_training=True, epsilon=1e-2)[0]
    loss = tf.reduce_sum(out * out * y)
  return (inference, *training, tape.gradient(loss, y))


def _cases() -> dict[str, tuple[Callable, list, tuple[int, ...]]]:
  cases = {
      "float_elementwise": (_float_elementwise, [_f(3, 4), _f(3, 4)], (0, 1)),
      "float_predicates": (_float_predicates, [_f(3, 4), _f(3, 4)], ()),
      "int_elementwise": (_int_elementwise, [_i(3, 4, lo=-5, hi=6),
                                             _i(3, 4, lo=0, hi=5)], ()),
      "complex_elementwise": (_complex_elementwise,
                              [_f(3, dtype=np.complex64),
                               _f(3, dtype=np.complex64)], ()),
      "reductions": (_reductions, [_f(3, 4)], (0,)),
      "structure": (_structure, [_f(4, 3), _i(lo=0, hi=2)], (0,)),
      "empty_dims": (lambda x, w: (tf.sin(x), tf.reduce_sum(x, 0), x @ w,
                                   tf.concat([x, x], 0), tf.sort(x, 0)),
                     [_f(0, 3), _f(3, 2)], ()),
      "dot_general": (lambda a, b: (a @ b, tf.einsum("bij,bjk->bik", a, b),
                                    tf.einsum("bij,bkj->ik", a, a),
                                    tf.tensordot(a, b, [[0, 2], [0, 1]])),
                      [_f(2, 3, 4), _f(2, 4, 5)], (0, 1)),
      "conv2d": (lambda x, w: (tf.nn.conv2d(x, w, 1, "SAME"),
                               tf.nn.conv2d(x, w, 2, "VALID")),
                 [_f(2, 7, 7, 2), _f(3, 3, 2, 3)], (0, 1)),
      "conv2d_dilated": (lambda x, w: tf.nn.conv2d(x, w, 1, "VALID",
                                                   dilations=2),
                         [_f(2, 7, 7, 2), _f(3, 3, 2, 3)], ()),
      "conv_nchw_3d_transpose": (
          lambda x, w, v, k: (
              tf.nn.conv3d(v, k, [1, 1, 2, 1, 1], "SAME"),
              tf.nn.conv2d_transpose(x, w, [1, 10, 10, 2], 2, "SAME"),
              tf.nn.depthwise_conv2d(x, tf.transpose(w, [0, 1, 3, 2])[
                  ..., :1], [1, 1, 1, 1], "VALID")),
          [_f(1, 5, 5, 3), _f(3, 3, 2, 3), _f(1, 4, 5, 6, 2),
           _f(2, 2, 2, 2, 3)], (0, 1, 2, 3)),
      "pooling": (lambda x: (tf.nn.max_pool2d(x, 2, 2, "SAME"),
                             tf.nn.avg_pool2d(x, 3, 2, "VALID"),
                             tf.nn.max_pool2d(x, 3, 1, "VALID")),
                  [_f(1, 6, 6, 2)], (0,)),
      "pooling_grads": (_pooling_grads, [_f(1, 5, 5, 2), _f(3, 3, 2, 3)], ()),
      "gather_scatter": (
          lambda x, i, j: (tf.gather(x, i), tf.gather(x, i, axis=1),
                           tf.gather_nd(x, j),
                           tf.scatter_nd(j, tf.gather_nd(x, j) * 2.,
                                         [5, 3]),
                           tf.tensor_scatter_nd_update(x, j[:2],
                                                       [10., 20.]),
                           tf.tensor_scatter_nd_add(x, j, tf.ones(4)),
                           tf.tensor_scatter_nd_max(x, j, tf.ones(4)),
                           tf.math.unsorted_segment_sum(tf.gather(x, i), i, 4),
                           tf.gather(x, i, batch_dims=0)),
          [_f(5, 3), _i(4, lo=0, hi=3), _i(4, 2, lo=0, hi=3)], (0,)),
      # (TF's gradient is NaN for empty segments; the lowering's is 0.)
      "segment_max": (lambda x, i: tf.math.unsorted_segment_max(
          tf.gather(x, i), i, 4), [_f(5, 3), _i(4, lo=0, hi=3)], ()),
      "cumsum": (lambda x: (tf.math.cumsum(x, 1),
                            tf.math.cumsum(x, 0, exclusive=True,
                                           reverse=True)),
                 [_f(3, 5)], (0,)),
      "cumprod_logsumexp": (lambda x: (tf.math.cumprod(x, 1),
                                       tf.math.cumulative_logsumexp(x, 1)),
                            [_f(3, 5)], (0,)),
      # (TF's gradient has no path through the batch statistics; the
      # module's derivative does: call_tf keeps TF's, see exactness.)
      "batch_norm": (_batch_norm, [_f(2, 3, 4, 3), _f(3, lo=.5),
                                   _f(2, 2, 3, 3)], ()),
      "sort": (lambda x: (tf.sort(x), tf.sort(x, direction="DESCENDING"),
                          tf.argsort(x, 0), tf.math.top_k(x, 2).values,
                          tf.math.top_k(x, 3).indices),
               [_f(3, 5)], (0,)),
      "sort_int": (lambda x: (tf.sort(x), tf.argsort(x, direction="DESCENDING",
                                                     stable=True),
                              tf.math.top_k(x, 2).indices),
                   [_i(3, 6, lo=-4, hi=4)], ()),
      "linalg": (lambda a, s, b: (
          tf.linalg.cholesky(s), tf.linalg.triangular_solve(s, b),
          tf.linalg.triangular_solve(s, b, lower=False, adjoint=True),
          tf.linalg.logdet(s), tf.linalg.lstsq(a, b[:3]),
          tf.linalg.cholesky_solve(tf.linalg.cholesky(s), b)),
                 [_f(3, 4), _spd(4), _f(4, 2)], (0, 1, 2)),
      # Jacobi iterations, and an unstable sort of the singular values with
      # the vectors as payloads, which compute_uv=False does not return.
      "svd": (lambda a, b: (tf.linalg.svd(a, compute_uv=False),
                            tf.linalg.svd(b, compute_uv=False)),
              [_f(4, 3), _f(3, 3)], (0, 1)),
      # With the vectors: the sort's payloads, in XLA's order of ties (the
      # sort runs as itself). Squared, times the values: free of signs.
      "svd_vectors": (lambda a: _sign_free_svd(a), [_f(4, 3)], (0,)),
      # Through tf2xla's QR custom call (geqrf), which JAX cannot
      # differentiate.
      "qr_solve_inv_expm": (lambda a, s, b, m: (
          *tf.linalg.qr(a), tf.linalg.solve(s, b), tf.linalg.inv(s),
          tf.linalg.expm(m * .3)),
                            [_f(4, 3), _spd(4), _f(4, 2), _f(3, 3)], ()),
      "fft": (lambda x, c: (tf.signal.rfft(x), tf.signal.irfft(
          tf.signal.rfft(x)), tf.signal.fft2d(c), tf.signal.ifft(c)),
              [_f(3, 8), _f(4, 4, dtype=np.complex64)], (0,)),
      "image_resize": (lambda x: (tf.image.resize(x, (6, 7), "bilinear"),
                                  tf.image.resize(x, (3, 7), "nearest"),
                                  tf.compat.v1.image.resize_bilinear(
                                      x, (7, 3), align_corners=True)),
                       [_f(1, 4, 4, 2)], (0,)),
      "control_flow": (lambda x, i: (
          tf.while_loop(lambda k, y: k < 3, lambda k, y: (k + 1, y * 1.5),
                        (0, x))[1],
          tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2., lambda: -x),
          tf.switch_case(i, [lambda: x, lambda: x * x, lambda: -x]),
          tf.map_fn(lambda r: tf.reduce_sum(r ** 2), x),
          tf.foldl(lambda a, r: a * r, x, tf.ones(3))),
                       [_f(4, 3), _i(lo=-1, hi=4)], (0,)),
      # A loop whose trip count depends on the data: a while_loop.
      "data_dependent_loop": (lambda x: tf.while_loop(
          lambda y: tf.reduce_sum(y) < 20., lambda y: [y * 1.5 + .1],
          [x])[0], [_f(3, lo=.5)], (0,)),
      "int64_inside": (lambda x: (
          tf.cast((tf.cast(x, tf.int64) + 2 ** 40) // 2 ** 38, tf.int32),
          tf.cast(tf.argmax(tf.cast(x, tf.float32)), tf.int32)),
                       [_i(5, lo=-100, hi=100)], ()),
  }
  cases.update(_keras())
  return cases


CASES = _cases()
GRAD_CASES = [k for k, v in CASES.items() if v[2]]
# Reverse mode of lax.while_loop (a loop whose trip count depends on the
# data: SVD's Jacobi sweeps) and of a general reduce_window: JAX refuses
# them (a test below checks the refusal); forward mode is checked. (Loops of
# a fixed trip count, control_flow's and the LSTM's, are scans.)
NO_REVERSE_MODE = ("data_dependent_loop", "cumprod_logsumexp", "svd",
                   "svd_vectors")
# Arguments that TF's gradients treat as symmetric matrices (Cholesky's
# gradient symmetrizes; its lowering reads one triangle): the derivatives
# agree along symmetric tangents, and the gradients once symmetrized.
SYMMETRIC_ARGS = {"linalg": (1,)}
X64_CASES = {
    "float64_elementwise": (_float_elementwise, [_f(3, 2, dtype=np.float64),
                                                 _f(3, 2, dtype=np.float64)],
                            (0, 1)),
    "float64_linalg_sort": (lambda s, b: (tf.linalg.solve(s, b),
                                          tf.sort(b, 0),
                                          tf.nn.conv1d(b[None], s[:2, :2, None],
                                                       1, "SAME")),
                            [_spd(3, np.float64), _f(3, 2, dtype=np.float64)],
                            (0, 1)),
}


class Compiled:
  """A case lowered once: its module, program, arguments, captured values."""

  def __init__(self, fn, makers):
    self.tf_fn = tf.function(fn, jit_compile=True, autograph=False)
    self.specs = [m.spec for m in makers]
    self.args = [m() for m in makers]
    self.module = stablehlo_path.stablehlo_of_tf(self.tf_fn, self.specs)
    self.captured = stablehlo_path.captured_values(self.tf_fn, self.specs)
    self.prog = s2j.parse(self.module)
    self._xla = xla_function(self.module, self.prog)

  def xla(self, *args):
    return self._xla(*args, *self.captured)

  def interp(self, *args):
    return self.prog(*args, *self.captured)


@functools.cache
def compiled(name: str) -> Compiled:
  fn, makers, _ = {**CASES, **X64_CASES}[name]
  return Compiled(fn, makers)


def _tol(c: Compiled) -> float:
  return 1e-10 if any(s.dtype == tf.float64 for s in c.specs) else 2e-5


@pytest.mark.parametrize("name", CASES)
def test_values_and_vmap(name):
  c = compiled(name)
  assert not c.prog.unsupported, c.prog.reasons
  axes = _axes(c, 0)
  batched = _batched(name, 3, axes)
  # One compilation for the values and the batch.
  values, batch = jax.jit(lambda a, b: (c.interp(*a), jax.vmap(c.interp)(*b)))(
      c.args, batched)
  expected = c.xla(*c.args)
  assert_close(values, expected, _tol(c))
  assert_close(batch, _loop(c.xla, batched, axes, 3, c.prog.out_avals),
               _tol(c))
  # And the module computes the TF function (TF's own kernels, eagerly).
  assert_close(expected, [np.asarray(t) for t in tf.nest.flatten(
      c.tf_fn.python_function(*map(tf.constant, c.args)))],
               1e-4 if "image" not in name
               else 1e-3)


def test_what_jax_cannot_differentiate_is_named():
  assert compiled("qr_solve_inv_expm").prog.no_derivative == (
      "stablehlo.custom_call @ProductOfElementaryHouseholderReflectors",
      "stablehlo.custom_call @Qr")
  for name in ("linalg", "svd", "control_flow"):
    assert compiled(name).prog.no_derivative == ()


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev"])
def test_call_tf_keeps_tf_gradients_where_jax_cannot_differentiate(transform):
  # tf.linalg.solve lowers through the QR custom call, whose JAX rule
  # (geqrf) has no JVP: call_tf differentiates with TF's gradients, and
  # batches them (jacfwd, jacrev) with the StableHLO path of their modules.
  b = np.arange(6, dtype=np.float32).reshape(3, 2)

  def f(x):
    return tf.linalg.solve(x + 3. * tf.eye(3), b)
  x = _f(3, 3)()
  got = jax.jit(getattr(jax, transform)(jax2tf.call_tf(f)))(x)
  xt = tf.constant(x)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(xt)
    y = f(xt)
  assert_close(got, tape.jacobian(y, xt, experimental_use_pfor=False), 1e-4)


@pytest.mark.parametrize("name", ["dot_general", "control_flow", "sort"])
def test_eager(name):
  c = compiled(name)
  assert_close(c.interp(*c.args), c.xla(*c.args), _tol(c))


@pytest.mark.parametrize("name", X64_CASES)
def test_values_float64(name):
  with config.enable_x64(True):
    c = compiled(name)
    expected = c.xla(*c.args)
    assert expected[0].dtype == np.float64
    assert_close(jax.jit(c.interp)(*c.args), expected, 1e-12)


def _axes(c: Compiled, axis: int) -> list[int]:
  """`axis` for each argument that has it, else 0 (scalars)."""
  return [axis if a.ndim >= axis else 0 for a in c.args]


def _batched(name: str, n: int, axes: list[int]) -> list[np.ndarray]:
  c = compiled(name)
  makers = {**CASES, **X64_CASES}[name][1]
  return [np.stack([m() for _ in range(n)], ax) if n else
          np.zeros((*a.shape[:ax], 0, *a.shape[ax:]), a.dtype)
          for m, a, ax in zip(makers, c.args, axes)]


def _loop(fn, batched: list[np.ndarray], axes: list[int], n: int,
          out_avals) -> list[np.ndarray]:
  """The batch computed row by row, stacked at axis 0."""
  rows = [fn(*[np.take(b, k, ax) for b, ax in zip(batched, axes)])
          for k in range(n)]
  if not rows:
    return [np.zeros((0, *a.shape), jax.dtypes.canonicalize_dtype(a.dtype))
            for a in out_avals]
  return [np.stack([np.asarray(r[i]) for r in rows]) for i in
          range(len(rows[0]))]


@pytest.mark.parametrize("name", ["int_elementwise", "gather_scatter", "sort",
                                  "control_flow"])
@pytest.mark.parametrize("n,axis", [(0, 0), (1, 0), (3, 1)])
def test_vmap_sizes_and_axes(name, n, axis):
  c = compiled(name)
  axes = _axes(c, axis)
  batched = _batched(name, n, axes)
  f = jax.jit(jax.vmap(c.interp, in_axes=axes))
  assert_close(f(*batched), _loop(c.xla, batched, axes, n, c.prog.out_avals),
               _tol(c))


@pytest.mark.parametrize("name", ["gather_scatter", "control_flow", "conv2d"])
def test_nested_vmap(name):
  c = compiled(name)
  makers = CASES[name][1]
  batched = [np.stack([np.stack([m() for _ in range(3)]) for _ in range(2)])
             for m in makers]
  f = jax.jit(jax.vmap(jax.vmap(c.interp)))
  axes = [0] * len(batched)
  expected = [np.stack(r) for r in zip(*[
      _loop(c.xla, [b[k] for b in batched], axes, 3, c.prog.out_avals)
      for k in range(2)])]
  assert_close(f(*batched), expected, _tol(c))


def _float_outputs(c: Compiled) -> list[int]:
  return [i for i, a in enumerate(c.prog.out_avals)
          if np.issubdtype(a.dtype, np.floating)]


def _projections(c: Compiled) -> list[np.ndarray]:
  rng = np.random.default_rng(1)
  return [rng.standard_normal(c.prog.out_avals[i].shape).astype(
      c.prog.out_avals[i].dtype) for i in _float_outputs(c)]


def _tf_derivatives(c: Compiled, wrt, tangents):
  """TF's gradient of <w, f(x)> and its forward-mode derivative along t."""
  args = [tf.constant(a) for a in c.args]
  floats = _float_outputs(c)
  ws = _projections(c)
  with tf.GradientTape() as tape:
    tape.watch([args[k] for k in wrt])
    outs = tf.nest.flatten(c.tf_fn.python_function(*args))
    loss = tf.add_n([tf.reduce_sum(outs[i] * w) for i, w in zip(floats, ws)])
  grads = tape.gradient(loss, [args[k] for k in wrt],
                        unconnected_gradients="zero")
  grads = [tf.convert_to_tensor(g).numpy() for g in grads]  # IndexedSlices
  try:
    with tf.autodiff.ForwardAccumulator(
        [args[k] for k in wrt], [tf.constant(t) for t in tangents]) as acc:
      outs = tf.nest.flatten(c.tf_fn.python_function(*args))
    jvps = [tf.convert_to_tensor(acc.jvp(
        outs[i], unconnected_gradients="zero")).numpy() for i in floats]
  except LookupError:  # TF has no second derivative of some op
    jvps = None
  return grads, jvps


@pytest.mark.parametrize("name", GRAD_CASES)
def test_derivatives_match_tensorflow(name):
  c = compiled(name)
  wrt = CASES[name][2]
  floats, ws = _float_outputs(c), _projections(c)
  rng = np.random.default_rng(2)
  tangents = [rng.standard_normal(c.args[k].shape).astype(c.args[k].dtype)
              for k in wrt]
  symmetric = [k in SYMMETRIC_ARGS.get(name, ()) for k in wrt]
  tangents = [t + t.T if sym else t for t, sym in zip(tangents, symmetric)]

  def f(*diff):
    args = list(c.args)
    for k, d in zip(wrt, diff):
      args[k] = d
    outs = c.interp(*args)
    return [outs[i] for i in floats]

  def loss(*diff):
    return sum((o * w).sum() for o, w in zip(f(*diff), ws))

  reverse = name not in NO_REVERSE_MODE
  primals = [c.args[k] for k in wrt]
  grads, jvps = jax.jit(lambda p, t: (
      jax.grad(loss, argnums=tuple(range(len(wrt))))(*p) if reverse else None,
      jax.jvp(f, p, t)[1]))(primals, tangents)
  tf_grads, tf_jvps = _tf_derivatives(c, wrt, tangents)
  if tf_jvps is not None:
    assert_close(list(jvps), tf_jvps, 2e-3)
  # <w, J t> against TF's gradient: forward mode checked where TF has none.
  assert_close(sum(float((j * w).sum()) for j, w in zip(jvps, ws)),
               sum(float((g * t).sum()) for g, t in zip(tf_grads, tangents)),
               2e-3)
  if reverse:
    sym = lambda g, s: (g + g.T) / 2 if s else g
    assert_close([sym(np.asarray(g), s) for g, s in zip(grads, symmetric)],
                 [sym(g, s) for g, s in zip(tf_grads, symmetric)], 2e-3)


def test_jax_refuses_what_it_cannot_differentiate():
  c = compiled("data_dependent_loop")
  with pytest.raises(ValueError, match="Reverse-mode differentiation"):
    jax.grad(lambda x: c.interp(x)[0].sum())(c.args[0])
  c = compiled("qr_solve_inv_expm")
  with pytest.raises(NotImplementedError, match="geqrf"):
    jax.jvp(lambda s: c.interp(c.args[0], s, *c.args[2:])[2], (c.args[1],),
            (c.args[1],))


@pytest.mark.parametrize("name,scans,whiles", [
    ("control_flow", 3, 0), ("keras_lstm", 1, 0),
    ("data_dependent_loop", 0, 1), ("svd", 2, 2)])
def test_loops_of_a_fixed_trip_count_are_scans(name, scans, whiles):
  c = compiled(name)
  jaxpr = jax.make_jaxpr(c.interp)(*c.args)
  names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
  assert (names.count("scan"), names.count("while")) == (scans, whiles)


def test_tf_functions_whose_lowering_has_no_exact_rule():
  # Eigh: XLA's Jacobi eigensolver (the custom call's expansion) and LAPACK's
  # (lax.linalg.eigh) differ in eigenvector signs and in the order of
  # degenerate eigenvectors.
  fn = tf.function(lambda x: tf.linalg.eigh(x + tf.transpose(x)),
                   jit_compile=True, autograph=False)
  prog = s2j.parse(stablehlo_path.stablehlo_of_tf(fn, [tf.TensorSpec((2, 2))]))
  assert prog.unsupported == ("stablehlo.custom_call @Eigh",)


def test_captured_variables_are_trailing_parameters():
  v = tf.Variable(np.arange(3, dtype=np.float32))
  fn = tf.function(lambda x: x * v, jit_compile=True, autograph=False)
  specs = [tf.TensorSpec((3,))]
  prog = s2j.parse(stablehlo_path.stablehlo_of_tf(fn, specs))
  assert len(prog.in_avals) == 2
  values = stablehlo_path.captured_values(fn, specs)
  assert len(values) == 1
  assert_close(values, [np.arange(3, dtype=np.float32)])
  x = np.ones(3, np.float32)
  assert_close(jax.jit(prog)(x, *values), [np.arange(3, dtype=np.float32)])
