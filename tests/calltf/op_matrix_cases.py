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
"""The op families of the op matrix: TF functions as users write them.

Each family is one small TensorFlow function of one float32 array, with a
realistic shape, returning one float32 tensor or a tuple of them (an op's
several results: batch normalization's statistics, a decomposition's
empty vectors), or lists, dicts and nestings of them (a tf.while_loop's
values). Its `build` imports TensorFlow
(and Keras or TF Probability) only when called, so that pytest can collect
the matrix without importing TensorFlow; `op_matrix_report.py` runs the
families, `test_op_matrix.py` judges them.

Functions keep to the op of their family where they can: a batch axis is
added with `tf.expand_dims` and removed with `tf.squeeze` rather than by
slicing, so that a failure of slicing shows in the slicing family only.
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import Any, Callable

import numpy as np

# The transformations of the matrix, in the order of the table. Each is
# applied to `g = call_tf(family_function)`; `s(x) = sum(w * g(x))` (summed
# over the results) is the scalar that `grad` and `hessian` differentiate.
# `value` and `jit` are the call itself, eagerly and under `jax.jit`.
TRANSFORMS = (
    "value",
    "jit",
    "jit(vmap)",
    "vmap",
    "jit(vmap(grad))",
    "jit(jacrev)",
    "jacrev",
    "jit(jacfwd)",
    "jacfwd",
    "jit(hessian)",
    "hessian",
    "jit(vmap(hessian))",
    "jvp",
)

SECOND_ORDER = frozenset({"jit(hessian)", "hessian", "jit(vmap(hessian))"})
# Each eager column and its jit column: where XLA compiles the function,
# both must have the same outcome (test_op_matrix.py).
EAGER_AND_JIT = (("value", "jit"), ("vmap", "jit(vmap)"), ("jacrev", "jit(jacrev)"),
                 ("jacfwd", "jit(jacfwd)"), ("hessian", "jit(hessian)"))
# What a quick run (JAX_FORK_OP_MATRIX_QUICK=1) runs: one column per path
# (StableHLO batching, its reverse and forward derivatives, TF's eager
# tangents). The test suite, and so CI, runs every column.
DEFAULT_TRANSFORMS = frozenset({"jit", "jit(vmap)", "jit(jacrev)",
                                "jit(jacfwd)", "jvp"})
BATCH = 3          # the batch of vmap and vmap(grad)
HESSIAN_BATCH = 2  # the batch of vmap(hessian)


@dataclasses.dataclass(frozen=True)
class Built:
  """A family, made: the TF function and its unbatched input.

  Attributes:
    fn: the TensorFlow function of one tensor.
    x: its unbatched input.
    xs: the batch for vmap (default: `x` plus small noise, `BATCH` rows).
    xs2: the batch for vmap(hessian) (default: `x` plus small noise,
      `HESSIAN_BATCH` rows).
    kinks: where `jit(jacfwd)` and `jit(jacrev)` must agree besides `x`
      (default: `kinks(x)`, with zeros and ties).
  """
  fn: Callable[[Any], Any]
  x: np.ndarray
  xs: np.ndarray | None = None
  xs2: np.ndarray | None = None
  kinks: np.ndarray | None = None


def kinks(x: np.ndarray) -> np.ndarray:
  """`x` with zeros and ties: every third element 0, and each element
  after one that is not 0 equal to it (where ReLU, abs, a maximum, a
  cumulative product... kink or tie)."""
  flat = np.array(x, np.float32).reshape(-1)
  flat[0::3] = 0.
  tied = flat[1::3][:flat[2::3].size]
  flat[2::3] = tied
  return flat.reshape(np.shape(x))


@dataclasses.dataclass(frozen=True)
class Family:
  """One op family of the matrix.

  Attributes:
    name: the row of the table.
    group: the kind of op (linalg, fft, image, ...).
    build: makes the family (imports TF); returns a `Built`.
    requires: a module that must import for the family to run (the family
      is skipped with the import error otherwise).
    tol: relative tolerance against the reference, first order and values.
    tol2: relative tolerance of second derivatives.
    xla_reference: the references of the jitted transformations run TF with
      XLA (`tf.function(jit_compile=True)`); for stateless random ops, whose
      XLA lowering draws other numbers than TF's kernels.
    skip: transformation -> reason it is not run.
    heavy: transformations that take minutes on a loaded 2-core machine;
      left out of a quick run (JAX_FORK_OP_MATRIX_QUICK=1).
    full_run: transformations that cost most and prove least, transformation
      -> why: the test suite runs them in the full run only (`fork.py test
      --full`, pytest `--full-run`), where what they check is checked by
      other cases of the default run (docs/maintainers.md, "CI").
    forward_reference: the references of first derivatives are TF's forward
      mode (`tf.autodiff.ForwardAccumulator`), not its tapes; where TF's
      eager kernels disagree between the two modes (the gradient of 3-D max
      pooling at an exact tie goes to every tied element, its tangent to
      the first).
    hessian_by_differences: the references of second derivatives are
      central differences of TF's gradient: where TF's tapes find no
      second derivative although there is one (a gradient kernel TF does
      not differentiate, ResizeBilinearGrad).
    description: what the function computes, for the report.
  """
  name: str
  group: str
  build: Callable[[], Built]
  description: str
  requires: str | None = None
  tol: float = 1e-3
  tol2: float = 5e-3
  xla_reference: bool = False
  skip: dict[str, str] = dataclasses.field(default_factory=dict)
  heavy: frozenset[str] = frozenset()
  forward_reference: bool = False
  hessian_by_differences: bool = False
  full_run: dict[str, str] = dataclasses.field(default_factory=dict)


def _rng(name: str) -> np.random.Generator:
  return np.random.default_rng(zlib.crc32(name.encode()))


def _randn(name: str, *shape: int, scale: float = 1.) -> np.ndarray:
  return (scale * _rng(name).standard_normal(shape)).astype(np.float32)


def _const(name: str, *shape: int, scale: float = 1.) -> np.ndarray:
  return _randn("const:" + name, *shape, scale=scale)


# ---------------------------------------------------------------- linalg


def _matmul():
  import tensorflow as tf
  w = _const("matmul", 3, 2)
  return Built(lambda x: tf.matmul(tf.matmul(x, x, transpose_b=True), w),
               _randn("matmul", 3, 4))


def _cholesky():
  import tensorflow as tf
  def f(x):
    a = tf.matmul(x, x, transpose_b=True) + 3. * tf.eye(3)
    return tf.linalg.cholesky(a)
  return Built(f, _randn("cholesky", 3, 3))


def _eigh():
  import tensorflow as tf
  def f(x):
    e, v = tf.linalg.eigh(x + tf.transpose(x))
    return v * v * e  # sign-free in the eigenvectors
  return Built(f, _randn("eigh", 3, 3))


def _svd():
  import tensorflow as tf
  return Built(lambda x: tf.linalg.svd(x, compute_uv=False),
               _randn("svd", 4, 3))


def _svd_vectors():
  import tensorflow as tf
  def f(x):
    s, u, v = tf.linalg.svd(x)
    return tf.concat([u * u * s, v * v * s], 0)  # sign-free in the vectors
  return Built(f, _randn("svd_vectors", 4, 3))


def _qr():
  import tensorflow as tf
  def f(x):
    q, r = tf.linalg.qr(x)
    return tf.matmul(q, r * r)
  x = _randn("qr", 4, 3)
  # (kinks(x) has a column of zeros, where QR has no derivative: a zero
  # and a tie that keep the rank.)
  k = x.copy()
  k[0, 0], k[1, 2] = 0., k[1, 1]
  return Built(f, x, kinks=k)


def _solve():
  import tensorflow as tf
  b = _const("solve", 3, 2)
  return Built(lambda x: tf.linalg.solve(x + 3. * tf.eye(3), b),
               _randn("solve", 3, 3))


def _triangular_solve():
  import tensorflow as tf
  b = _const("triangular_solve", 3, 2)
  def f(x):
    lower = tf.linalg.band_part(x, -1, 0) + 3. * tf.eye(3)
    return tf.linalg.triangular_solve(lower, b, lower=True)
  return Built(f, _randn("triangular_solve", 3, 3))


def _det():
  import tensorflow as tf
  def f(x):
    a = x + 2. * tf.eye(3)
    _, logabsdet = tf.linalg.slogdet(a)
    return tf.linalg.det(a) * x + logabsdet
  return Built(f, _randn("det", 3, 3, scale=.5))


def _inv():
  import tensorflow as tf
  return Built(lambda x: tf.linalg.inv(x + 3. * tf.eye(3)),
               _randn("inv", 3, 3))


# ------------------------------------------------------------------- FFT


def _fft():
  import tensorflow as tf
  def f(x):
    c = tf.signal.fft(tf.complex(x, tf.sin(x)))
    return tf.math.real(c) * tf.math.imag(c)
  return Built(f, _randn("fft", 8))


def _rfft():
  import tensorflow as tf
  def f(x):
    c = tf.signal.rfft(x)
    return tf.math.real(c) ** 2 + tf.math.imag(c) ** 2
  return Built(f, _randn("rfft", 8))


def _irfft():
  import tensorflow as tf
  # A low-pass filter: rfft, damp the high frequencies, irfft.
  damp = tf.constant(np.exp(-np.arange(5) / 2.).astype(np.complex64))
  return Built(lambda x: tf.signal.irfft(tf.signal.rfft(x * x) * damp),
               _randn("irfft", 8))


def _fft2():
  import tensorflow as tf
  def f(x):
    c = tf.signal.fft2d(tf.complex(x, 0.5 * x * x))
    return tf.math.real(c) + 2. * tf.math.imag(c)
  return Built(f, _randn("fft2", 4, 4))


# ----------------------------------------------------------------- image


def _resize(method):
  def build():
    import tensorflow as tf
    return Built(lambda x: tf.image.resize(x, [6, 5], method=method),
                 _randn("resize_" + method, 4, 4, 2))
  return build


def _conv2d():
  import tensorflow as tf
  k = _const("conv2d", 3, 3, 2, 3, scale=.3)
  def f(x):
    y = tf.nn.conv2d(tf.expand_dims(x, 0), k, 1, "SAME")
    return tf.squeeze(tf.tanh(y), 0)
  return Built(f, _randn("conv2d", 4, 4, 2))


def _depthwise_conv2d():
  import tensorflow as tf
  k = _const("depthwise_conv2d", 3, 3, 2, 1, scale=.3)
  def f(x):
    y = tf.nn.depthwise_conv2d(tf.expand_dims(x, 0), k, [1, 1, 1, 1], "SAME")
    return tf.squeeze(tf.tanh(y), 0)
  return Built(f, _randn("depthwise_conv2d", 4, 4, 2))


def _max_pool():
  import tensorflow as tf
  def f(x):
    return tf.squeeze(tf.nn.max_pool2d(tf.expand_dims(x * x, 0), 2, 1,
                                       "VALID"), 0)
  return Built(f, _randn("max_pool", 4, 4, 2))


def _windows_with_ties(name: str, shape: tuple[int, ...], tie: float,
                       rows: int = 1, negative: bool = False) -> np.ndarray:
  """Inputs of max pooling (2 wide, stride 2, channels last) with ties.

  In every window the first element is `v` and the last `v * (1 + tie)`
  (`tie` 0: an exact tie; 1e-3: a near one, equal in the top 16 bits of a
  float32), the others below `v`. With `negative`, every other window is
  all negative and holds an exact 0 (the tie of a ReLU). `rows` > 1: a
  batch, each row scaled (ties kept).
  """
  rng = _rng("ties:" + name)
  spatial = shape[:-1]
  out = []
  for r in range(rows):
    x = np.empty(shape, np.float32)
    for index in np.ndindex(*(s // 2 for s in spatial)):
      base = tuple(2 * i for i in index)
      v = np.float32(rng.uniform(.5, 2.)) * (1 + .1 * r)
      below = not negative or sum(index) % 2 == 0
      for offset in np.ndindex(*(2,) * len(spatial)):
        pos = tuple(b + o for b, o in zip(base, offset))
        if not below:
          x[pos] = -rng.uniform(.1, 1., shape[-1])
          if offset == (0,) * len(spatial):
            x[pos] = 0.
        elif offset == (0,) * len(spatial):
          x[pos] = v
        elif offset == (1,) * len(spatial):
          x[pos] = np.float32(v * (1 + tie))
        else:
          x[pos] = v - rng.uniform(.1, .4, shape[-1])
    out.append(x)
  return np.stack(out) if rows > 1 else out[0]


def _pool_ties(dims: int, tie: float, relu: bool):
  name = f"pool{dims}d_{tie}_{relu}"
  shape = {1: (8, 2), 2: (4, 4, 2), 3: (4, 4, 2, 1)}[dims]

  def build():
    import tensorflow as tf
    pool = {1: tf.nn.max_pool1d, 2: tf.nn.max_pool2d,
            3: tf.nn.max_pool3d}[dims]
    square = dims < 3  # (3-D: linear in the pool, see `forward_reference`)

    def f(x):
      y = tf.nn.relu(x) if relu else x
      out = tf.squeeze(pool(tf.expand_dims(y, 0), 2, 2, "VALID"), 0)
      return out * out if square else 3. * out
    make = lambda rows: _windows_with_ties(name, shape, tie, rows, relu)
    return Built(f, make(1), xs=make(BATCH), xs2=make(HESSIAN_BATCH))
  return build


def _avg_pool():
  import tensorflow as tf
  def f(x):
    return tf.squeeze(tf.nn.avg_pool2d(tf.expand_dims(x * x, 0), 2, 2,
                                       "VALID"), 0)
  return Built(f, _randn("avg_pool", 4, 4, 2))


def _conv2d_transpose():
  import tensorflow as tf
  k = _const("conv2d_transpose", 3, 3, 3, 2, scale=.3)
  def f(x):
    y = tf.nn.conv2d_transpose(tf.expand_dims(x, 0), k, [1, 8, 8, 3], 2,
                               "SAME")
    return tf.squeeze(tf.tanh(y), 0)
  return Built(f, _randn("conv2d_transpose", 4, 4, 2))


# ------------------------------------------------------- gather, scatter


def _gather():
  import tensorflow as tf
  return Built(lambda x: tf.gather(x, [3, 0, 1]) * tf.gather(x, [2, 2, 4]),
               _randn("gather", 5, 3))


def _gather_nd():
  import tensorflow as tf
  return Built(lambda x: tf.sin(tf.gather_nd(x, [[0, 1], [2, 2], [4, 0]])) * 2.,
               _randn("gather_nd", 5, 3))


def _scatter_nd():
  import tensorflow as tf
  return Built(lambda x: tf.scatter_nd([[1], [3], [0]], tf.sin(x) * x, [5, 2]),
               _randn("scatter_nd", 3, 2))


def _tensor_scatter_nd_add():
  import tensorflow as tf
  c = _const("tensor_scatter_nd_add", 3, 5)
  def f(x):
    return tf.tensor_scatter_nd_add(tf.sin(x), [[1], [3], [1]],
                                    tf.tanh(tf.matmul(c, x)))
  return Built(f, _randn("tensor_scatter_nd_add", 5, 2))


def _unsorted_segment_sum():
  import tensorflow as tf
  return Built(
      lambda x: tf.math.unsorted_segment_sum(tf.sin(x) * x, [0, 2, 0, 1, 2], 3),
      _randn("unsorted_segment_sum", 5, 2))


def _where():
  import tensorflow as tf
  return Built(lambda x: tf.where(x > 0., x * x, tf.sin(x)),
               _randn("where", 6))


# ------------------------------------------------------------ cumulative


def _cumsum():
  import tensorflow as tf
  def f(x):
    return (tf.math.cumsum(tf.sin(x))
            + tf.math.cumsum(x * x, exclusive=True, reverse=True))
  return Built(f, _randn("cumsum", 6))


def _cumprod():
  import tensorflow as tf
  return Built(lambda x: tf.math.cumprod(x, reverse=True),
               1. + _randn("cumprod", 6, scale=.3))


def _cumulative_logsumexp():
  import tensorflow as tf
  return Built(lambda x: tf.math.cumulative_logsumexp(x),
               _randn("cumulative_logsumexp", 6))


def _cumsum_concat_logsumexp():
  import tensorflow as tf
  return Built(lambda x: tf.concat([tf.math.cumsum(x),
                                    tf.math.cumulative_logsumexp(x)], 0),
               _randn("cumsum_concat_logsumexp", 6))


# ------------------------------------------------------------------ sort


def _sort():
  import tensorflow as tf
  w = _const("sort", 6)
  return Built(lambda x: tf.sort(x) * w * x, _randn("sort", 6))


def _argsort():
  import tensorflow as tf
  return Built(lambda x: tf.gather(x * x, tf.argsort(x, direction="DESCENDING")),
               _randn("argsort", 6))


def _top_k():
  import tensorflow as tf
  return Built(lambda x: tf.math.top_k(x, 3).values ** 2, _randn("top_k", 6))


# ------------------------------------------------- einsum and reductions


def _einsum():
  import tensorflow as tf
  w = _const("einsum", 3, 2)
  return Built(lambda x: tf.einsum("ik,kj->ij", tf.einsum("id,jd->ij", x, x), w),
               _randn("einsum", 3, 4))


def _reductions():
  import tensorflow as tf
  def f(x):
    return (tf.reduce_sum(x * x, 0) + tf.reduce_max(x, 0)
            + tf.reduce_logsumexp(x, 0))
  return Built(f, _randn("reductions", 4, 3))


def _argmax():
  import tensorflow as tf
  def f(x):
    onehot = tf.one_hot(tf.argmax(x, 1), 3)
    return tf.reduce_sum(x * x * onehot, 1)
  return Built(f, _randn("argmax", 4, 3))


# ----------------------------------------------------------- elementwise


def _unary():
  import tensorflow as tf
  def f(x):
    return (tf.exp(x / 2.) + tf.math.log(x * x + 1.) + tf.tanh(x)
            + tf.sigmoid(x) * tf.nn.softplus(x) + tf.math.erf(x))
  return Built(f, _randn("unary", 6))


def _binary():
  import tensorflow as tf
  def f(x):
    return tf.pow(x * x + .5, tf.sin(x)) + tf.atan2(x, x * x + 1.)
  return Built(f, _randn("binary", 6))


# ---------------------------------------------------------- control flow


def _cond():
  import tensorflow as tf
  def f(x):
    return tf.cond(tf.reduce_sum(x) > 0., lambda: tf.sin(x) * x,
                   lambda: tf.cos(x) + x)
  x = _randn("cond", 4)
  signs = np.array([1., -1., 1.], np.float32)[:, None]
  xs = np.abs(x)[None] * signs + 0.1 * _randn("cond:xs", BATCH, 4)
  return Built(f, x, xs.astype(np.float32))


def _while_loop():
  import tensorflow as tf
  def f(x):
    _, y = tf.while_loop(lambda i, y: i < 3,
                         lambda i, y: (i + 1, tf.sin(y) * 1.5 + x),
                         [tf.constant(0), x])
    return y
  return Built(f, _randn("while_loop", 4))


def _map_fn():
  import tensorflow as tf
  return Built(lambda x: tf.map_fn(lambda r: tf.reduce_sum(tf.sin(r) * r), x),
               _randn("map_fn", 3, 2))


def _switch_case():
  import tensorflow as tf
  def f(x):
    index = tf.cast(tf.reduce_sum(x) > 0., tf.int32) + tf.cast(
        tf.reduce_max(x) > 1., tf.int32)
    return tf.switch_case(index, [lambda: tf.sin(x), lambda: x * x,
                                  lambda: tf.exp(x / 4.)])
  x = _randn("switch_case", 4)
  xs = np.stack([-np.abs(x) - .1, np.abs(x) * .2, np.abs(x) + 1.5])
  return Built(f, x, xs.astype(np.float32))


def _scan():
  import tensorflow as tf
  return Built(lambda x: tf.scan(lambda a, r: a * .5 + tf.sin(r) * a + r, x),
               _randn("scan", 4, 2))


# --------------------------------------------------- concat and slicing


def _concat_slice():
  import tensorflow as tf
  def f(x):
    return tf.concat([x[1:3] * x[:2],
                      tf.strided_slice(x, [0, 0], [4, 3], [2, 1])], 0)
  return Built(f, _randn("concat_slice", 4, 3))


def _pad_tile_reverse():
  import tensorflow as tf
  def f(x):
    return (tf.tile(tf.reverse(x, [0]) * x, [2, 1])
            + tf.pad(x * x, [[1, 2], [0, 0]]))
  return Built(f, _randn("pad_tile_reverse", 3, 2))


# ---------------------------------------------------------------- random


def _stateless_random():
  import tensorflow as tf
  def f(x):
    return (x * tf.random.stateless_normal([5], seed=[1, 2])
            + x * x * tf.random.stateless_uniform([5], seed=[3, 4]))
  return Built(f, _randn("stateless_random", 5))


# ----------------------------------------------------------------- Keras


def _keras_layer(name, make, shape, *, batched_call=True):
  def build():
    import tensorflow as tf
    tf.keras.utils.set_random_seed(zlib.crc32(name.encode()) % 2**31)
    layer = make(tf)
    x = _randn(name, *shape)
    layer(tf.expand_dims(x, 0) if batched_call else x)  # builds the weights
    if batched_call:
      def f(x):
        return tf.squeeze(layer(tf.expand_dims(x, 0), training=False), 0)
    else:
      f = layer
    return Built(f, x)
  return build


def _batchnorm(tf):
  layer = tf.keras.layers.BatchNormalization()
  layer.build((None, 4))
  layer.moving_mean.assign([.5, -.2, .1, 0.])
  layer.moving_variance.assign([2., .5, 1., 3.])
  layer.gamma.assign([1.5, .7, 1., 2.])
  layer.beta.assign([.1, .2, -.3, 0.])
  return layer


def _attention_block(tf):
  layers = tf.keras.layers

  class Block(tf.keras.Model):
    """MultiHeadAttention, LayerNormalization, a gelu Dense, pooling, Dense."""

    def __init__(self):
      super().__init__()
      self.mha = layers.MultiHeadAttention(num_heads=2, key_dim=4)
      self.norm = layers.LayerNormalization()
      self.dense = layers.Dense(8, activation="gelu")
      self.pool = layers.GlobalAveragePooling1D()
      self.out = layers.Dense(1)

    def call(self, x, training=False):
      h = self.norm(x + self.mha(x, x, training=training))
      return self.out(self.pool(self.dense(h)))

  return Block()


def _keras_cnn_exported():
  """A small Keras CNN, exported with `model.export()` and reloaded."""
  import tempfile
  import tensorflow as tf
  import keras
  keras.utils.set_random_seed(zlib.crc32(b"keras_cnn") % 2**31)
  model = keras.Sequential([
      keras.Input((6, 6, 1)),
      keras.layers.Conv2D(3, 3, activation="relu", padding="same"),
      keras.layers.MaxPooling2D(2), keras.layers.Flatten(),
      keras.layers.Dense(2)])
  with tempfile.TemporaryDirectory() as d:
    model.export(d, verbose=False)
    loaded = tf.saved_model.load(d)
  x = np.abs(_randn("keras_cnn", 6, 6, 1))
  x[0, 0, 0], x[0, 1, 0] = 1., 1.001  # a near tie in a window
  return Built(lambda x: loaded.serve(tf.expand_dims(x, 0))[0], x)


def _keras_cnn_swish():
  """A Keras CNN as users write them (issue 57): its swish is TF's
  `tf.nn.silu`, a custom gradient that is the derivative."""
  import tensorflow as tf
  import keras
  keras.utils.set_random_seed(zlib.crc32(b"keras_cnn_swish") % 2**31)
  model = keras.Sequential([
      keras.Input((6, 6, 1)),
      keras.layers.Conv2D(2, 3, padding="same"),
      keras.layers.BatchNormalization(),
      keras.layers.MaxPooling2D(2),
      keras.layers.Conv2D(2, 2, activation="swish"),
      keras.layers.GlobalAveragePooling2D(),
      keras.layers.Dropout(.2),
      keras.layers.Dense(2)])
  model.layers[1].moving_mean.assign(np.array([.1, -.2], np.float32))
  model.layers[1].moving_variance.assign(np.array([.5, 2.], np.float32))
  return Built(lambda x: model(tf.expand_dims(x, 0), training=False)[0],
               _randn("keras_cnn_swish", 6, 6, 1))


def _round_trip():
  """jax-ml/jax#11753: a jitted JAX function converted to TF, with its
  gradient, called back."""
  import jax
  from jax.experimental import jax2tf
  import jax.numpy as jnp

  @jax.jit
  def f(x):
    return jnp.stack([jnp.sum(x * x), jnp.prod(x), jnp.sum(jnp.sin(x))])
  return Built(jax2tf.convert(f, with_gradient=True),
               _randn("round_trip", 5))


def _restored_jax2tf():
  """A jax2tf SavedModel with a polymorphic batch, reloaded: call_tf embeds
  its module."""
  import tempfile
  import jax.numpy as jnp
  from jax.experimental import jax2tf
  import tensorflow as tf
  w = tf.Variable(_const("restored_jax2tf", 4, 3))

  def model(w, x):
    return jnp.tanh(x @ w) ** 2

  module = tf.Module()
  module.w = w
  module.f = tf.function(
      lambda x: jax2tf.convert(model, polymorphic_shapes=[None, "(b, 4)"])(
          module.w, x),
      autograph=False,
      input_signature=[tf.TensorSpec([None, 4], tf.float32)])
  with tempfile.TemporaryDirectory() as d:
    tf.saved_model.save(module, d)
    restored = tf.saved_model.load(d)
  _KEEP_ALIVE.append(restored)  # its function reads its variables
  return Built(restored.f, _randn("restored_jax2tf", 2, 4))


# Objects that families' functions need alive while the worker runs.
_KEEP_ALIVE: list[Any] = []


# --------------------------------------------------- TensorFlow Probability


def _tfp_normal():
  import tensorflow as tf
  import tensorflow_probability as tfp
  data = _const("tfp_normal", 4, 3)
  def f(x):
    d = tfp.distributions.Normal(loc=x[0], scale=tf.nn.softplus(x[1]) + .1)
    return d.log_prob(data)
  return Built(f, _randn("tfp_normal", 2, 3))


def _tfp_mvn_tril():
  import tensorflow_probability as tfp
  data = _const("tfp_mvn_tril", 4, 2)
  def f(x):
    scale = tfp.bijectors.FillScaleTriL()(x[2:])
    return tfp.distributions.MultivariateNormalTriL(
        loc=x[:2], scale_tril=scale).log_prob(data)
  return Built(f, _randn("tfp_mvn_tril", 5, scale=.5))


def _tfp_ode():
  import tensorflow as tf
  import tensorflow_probability as tfp
  y0 = tf.constant([1., .5])
  def f(theta):
    a = tf.reshape(tf.stack([-theta[0], 1., 0., -theta[1]]), [2, 2])
    def ode(t, y):
      del t
      return tf.linalg.matvec(a, y)
    sol = tfp.math.ode.DormandPrince(rtol=1e-6, atol=1e-8).solve(
        ode, 0., y0, solution_times=[.5, 1.])
    return sol.states
  return Built(f, np.array([.7, 1.3], np.float32))


# --------------------------------------------------------- normalization


def _bn_params(name: str) -> tuple[np.ndarray, ...]:
  """Scale, offset, running mean and (positive) running variance, 3 channels."""
  return (1. + _const(name + ":scale", 3, scale=.3),
          _const(name + ":offset", 3, scale=.3),
          _const(name + ":mean", 3, scale=.5),
          .5 + np.abs(_const(name + ":variance", 3)))


def _fused_batch_norm(version: int, training: bool, data_format: str,
                      factor: float = 1.):
  """`FusedBatchNorm{,V2,V3}` of one batch: (y, batch mean, batch variance).

  In inference the statistics results are the running ones passed in
  (constants of the function); in training the batch's (the variance with
  Bessel's correction), mixed with the running ones by `factor`.
  """
  name = f"fused_batch_norm_v{version}_{training}_{data_format}_{factor}"

  def build():
    import tensorflow as tf
    op = {1: tf.raw_ops.FusedBatchNorm, 2: tf.raw_ops.FusedBatchNormV2,
          3: tf.raw_ops.FusedBatchNormV3}[version]
    scale, offset, mean, variance = _bn_params(name)
    extra = {} if version == 1 else {"exponential_avg_factor": factor}

    def f(x):
      y, batch_mean, batch_variance = op(
          x=x, scale=scale, offset=offset, mean=mean, variance=variance,
          epsilon=1e-3, is_training=training, data_format=data_format,
          **extra)[:3]
      return y, batch_mean, batch_variance
    shape = (2, 2, 3, 3) if data_format == "NHWC" else (2, 3, 2, 3)
    return Built(f, _randn(name, *shape))
  return build


def _batch_norm_stats_of_x():
  """Inference-mode `FusedBatchNormV3` given statistics computed from x.

  TF's gradient of the op leaves out its mean and variance inputs.
  """
  import tensorflow as tf
  scale, offset, _, _ = _bn_params("batch_norm_stats_of_x")

  def f(x):
    mean, variance = tf.nn.moments(x, [0, 1, 2])
    return tf.raw_ops.FusedBatchNormV3(
        x=x, scale=scale, offset=offset, mean=mean, variance=variance + .5,
        is_training=False)[0]
  return Built(f, _randn("batch_norm_stats_of_x", 2, 2, 2, 3))


def _keras2_batchnorm():
  """tf_keras' BatchNormalization (Keras 2: the fused op), inference."""
  import tensorflow as tf
  import tf_keras
  layer = tf_keras.layers.BatchNormalization(fused=True)
  layer.build((None, 2, 3, 3))
  scale, offset, mean, variance = _bn_params("keras2_batchnorm")
  for v, value in ((layer.gamma, scale), (layer.beta, offset),
                   (layer.moving_mean, mean),
                   (layer.moving_variance, variance)):
    v.assign(value)
  _KEEP_ALIVE.append(layer)
  return Built(lambda x: tf.squeeze(layer(tf.expand_dims(x, 0),
                                          training=False), 0),
               _randn("keras2_batchnorm", 2, 3, 3))


def _local_response_normalization():
  import tensorflow as tf
  def f(x):
    y = tf.nn.local_response_normalization(tf.expand_dims(x, 0), 1, 1., .5)
    return tf.squeeze(y, 0)
  return Built(f, _randn("local_response_normalization", 2, 2, 4))


# ------------------------------------- decompositions without vectors


def _eigh_values_only():
  import tensorflow as tf
  return Built(lambda x: tuple(tf.raw_ops.SelfAdjointEigV2(
      input=x + tf.transpose(x), compute_v=False)),
               _randn("eigh_values_only", 3, 3))


def _svd_values_only():
  import tensorflow as tf
  return Built(lambda x: tuple(tf.raw_ops.Svd(input=x, compute_uv=False)),
               _randn("svd_values_only", 4, 3))


# ----------------------------------------------------- size-0 dimensions


def _empty_argument():
  import tensorflow as tf
  return Built(lambda x: (tf.reduce_sum(x, 0) + 1., x * 2.),
               np.zeros((0, 3), np.float32))


def _empty_intermediate():
  import tensorflow as tf
  def f(x):
    none = x[2:2]  # size 0
    zeros = tf.matmul(tf.reshape(x, [4, 1])[:, :0], tf.zeros([0, 4]))
    return tf.sin(x) * 2. + tf.reduce_sum(zeros, 0) + tf.reduce_sum(none)
  return Built(f, _randn("empty_intermediate", 4))


# ------------------------------------------------------------ more FFT


def _fft_len_helper():
  """A helper as users write it: `len(x)` of its argument."""
  import tensorflow as tf
  def power_spectrum(x):
    c = tf.signal.rfft(x)
    return (tf.math.real(c) ** 2 + tf.math.imag(c) ** 2) / len(x)
  return Built(power_spectrum, _randn("fft_len_helper", 8))


def _ifft_fftshift():
  import tensorflow as tf
  def f(x):
    c = tf.signal.ifft(tf.signal.fftshift(tf.complex(x, x * x)))
    return tf.math.real(c) - tf.math.imag(c)
  return Built(f, _randn("ifft_fftshift", 8))


# ------------------------------------------------------- more sorting


def _top_k_rows():
  import tensorflow as tf
  return Built(lambda x: tf.math.top_k(x * x, 2).values * 3.,
               _randn("top_k_rows", 3, 5))


def _sort_rows_descending():
  import tensorflow as tf
  return Built(lambda x: tf.sort(x, axis=0, direction="DESCENDING") * x,
               _randn("sort_rows_descending", 4, 3))


# ------------------------------------------------------ more resizing


def _resize_bilinear_align_corners():
  import tensorflow as tf
  def f(x):
    y = tf.compat.v1.image.resize_bilinear(tf.expand_dims(x, 0), [6, 5],
                                           align_corners=True)
    return tf.squeeze(y, 0)
  return Built(f, _randn("resize_bilinear_align_corners", 4, 4, 2))


# -------------------------------------------- more segments and scatters


def _segment_sum():
  import tensorflow as tf
  return Built(lambda x: tf.math.segment_sum(tf.sin(x) * x, [0, 0, 1, 2, 2]),
               _randn("segment_sum", 5, 2))


def _unsorted_segment_max():
  import tensorflow as tf
  return Built(
      lambda x: tf.math.unsorted_segment_max(x * x, [0, 2, 0, 1, 2], 3),
      _randn("unsorted_segment_max", 5, 2))


def _tensor_scatter_nd_update():
  import tensorflow as tf
  return Built(lambda x: tf.tensor_scatter_nd_update(
      tf.sin(x), [[1], [3]], tf.tanh(x[:2]) * 2.),
               _randn("tensor_scatter_nd_update", 5, 2))


def _inplace(op_name: str):
  def build():
    import tensorflow as tf
    op = getattr(tf.raw_ops, op_name)
    return Built(lambda x: op(x=tf.sin(x), i=[1, 3], v=x[:2] * x[:2]),
                 _randn(op_name, 5, 2))
  return build


# ------------------------------------- control flow with stateful ops


def _while_loop_random():
  """A loop whose body draws from a stateful random op (a side effect) that
  does not change the result."""
  import tensorflow as tf
  def f(x):
    def body(i, y):
      noise = tf.random.uniform(tf.shape(x))
      return i + 1, tf.sin(y) * 1.5 + x + 0. * noise
    _, y = tf.while_loop(lambda i, y: i < 3, body, [tf.constant(0), x])
    return y
  return Built(f, _randn("while_loop_random", 4))


# ---------------------------------------------------------- tensor lists


def _tensor_array(dynamic_size: bool):
  def build():
    import tensorflow as tf
    def f(x):
      ta = tf.TensorArray(tf.float32, size=0 if dynamic_size else 4,
                          dynamic_size=dynamic_size)
      def body(i, ta):
        return i + 1, ta.write(i, tf.sin(x[i]) * x[i])
      _, ta = tf.while_loop(lambda i, ta: i < 4, body, [tf.constant(0), ta])
      return ta.stack()
    return Built(f, _randn(f"tensor_array_{dynamic_size}", 4, 2))
  return build


# ------------------------------------------------- value-dependent sizes


def _message_passing_loop():
  """A SchNet-like interaction (issue 57): a `tf.while_loop` without
  `maximum_iterations`, whose counter and constant bound fix its trip
  count in the module, of gathers, a segment sum and shifted softplus."""
  import tensorflow as tf
  n, width, layers = 4, 3, 2
  w = tf.constant(_const("message_passing_loop", layers, width, width,
                         scale=.5))
  embedding = tf.constant(_const("message_passing_loop:h", n, width))
  pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
  src = tf.constant([i for i, _ in pairs])
  dst = tf.constant([j for _, j in pairs])

  def f(x):
    r = tf.gather(x, dst) - tf.gather(x, src)
    filt = tf.exp(-tf.reduce_sum(r * r, -1, keepdims=True))

    def body(i, h):
      m = tf.math.unsorted_segment_sum(tf.gather(h, src) * filt, dst, n)
      return i + 1, h + tf.nn.softplus(m @ tf.gather(w, i)) - np.float32(
          np.log(2.))
    _, h = tf.while_loop(lambda i, h: i < layers, body,
                         (tf.constant(0), embedding))
    return tf.reduce_sum(h, -1)
  return Built(f, _randn("message_passing_loop", n, 3))


def _range_of_value():
  """`tf.range` to a value of x: the result's size depends on the values
  (the same for every input of the matrix, whose signs do not change)."""
  import tensorflow as tf
  def f(x):
    n = tf.reduce_sum(tf.cast(x > 0., tf.int32)) + 1
    return tf.cast(tf.range(n), tf.float32) * x[0]
  x = np.array([.9, -1.2, .7, 1.5, -.8], np.float32)
  return Built(f, x)


def _boolean_mask():
  """`tf.boolean_mask` (a `Where` of the condition): a size that depends on
  the values (the same for every input of the matrix)."""
  import tensorflow as tf
  return Built(lambda x: tf.boolean_mask(x * x, x > 0.),
               np.array([.9, -1.2, .7, 1.5, -.8], np.float32))


FAMILIES: tuple[Family, ...] = (
    Family("matmul", "linalg", _matmul, "tf.matmul(tf.matmul(x, x^T), w)"),
    Family("cholesky", "linalg", _cholesky, "cholesky(x x^T + 3I)"),
    Family("eigh", "linalg", _eigh, "eigh(x + x^T): v * v * e"),
    Family("svd", "linalg", _svd, "singular values of a 4x3 matrix"),
    Family("svd_vectors", "linalg", _svd_vectors,
           "svd of a 4x3 matrix: u^2 s, v^2 s (sign-free)"),
    Family("qr", "linalg", _qr, "q, r = qr(x); q @ (r * r)"),
    Family("solve", "linalg", _solve, "solve(x + 3I, b)"),
    Family("triangular_solve", "linalg", _triangular_solve,
           "triangular_solve(band_part(x, -1, 0) + 3I, b)"),
    Family("det_slogdet", "linalg", _det, "det(a) * x + slogdet(a)[1]"),
    Family("inv", "linalg", _inv, "inv(x + 3I)"),
    Family("fft", "fft", _fft, "fft of a complex signal: re * im"),
    Family("rfft", "fft", _rfft, "power spectrum |rfft(x)|^2"),
    Family("irfft", "fft", _irfft, "irfft(rfft(x^2) * damping)"),
    Family("fft2", "fft", _fft2, "fft2d(x + 0.5i x^2): re + 2 im"),
    Family("resize_bilinear", "image", _resize("bilinear"),
           "tf.image.resize(x, [6, 5], 'bilinear'), x 4x4x2"),
    Family("resize_bicubic", "image", _resize("bicubic"),
           "tf.image.resize(x, [6, 5], 'bicubic')"),
    Family("resize_nearest", "image", _resize("nearest"),
           "tf.image.resize(x, [6, 5], 'nearest')"),
    Family("conv2d", "image", _conv2d, "tanh(conv2d(x, 3x3x2x3, SAME))"),
    Family("depthwise_conv2d", "image", _depthwise_conv2d,
           "tanh(depthwise_conv2d(x, 3x3x2x1, SAME))"),
    Family("max_pool", "image", _max_pool, "max_pool2d(x^2, 2, stride 1)"),
    Family("avg_pool", "image", _avg_pool, "avg_pool2d(x^2, 2, stride 2)"),
    *[Family(f"max_pool{d}d_{'exact' if tie == 0 else 'near'}_tie"
             + ("_relu" if relu else ""), "pooling ties",
             _pool_ties(d, tie, relu),
             f"max_pool{d}d({'relu(x)' if relu else 'x'}, 2, stride 2)"
             + ("^2" if d < 3 else " * 3") + ", every window with "
             + ("an exact tie" if tie == 0 else "two values 1e-3 apart")
             + (", every other one all negative with an exact 0"
                if relu else ""),
             forward_reference=(d == 3 and tie == 0))
      for d in (1, 2, 3) for tie in (1e-3, 0.) for relu in (False, True)],
    Family("conv2d_transpose", "image", _conv2d_transpose,
           "tanh(conv2d_transpose(x, stride 2)) to 8x8x3"),
    Family("gather", "gather", _gather,
           "gather(x, [3, 0, 1]) * gather(x, [2, 2, 4])"),
    Family("gather_nd", "gather", _gather_nd, "sin(gather_nd(x, 3 indices))"),
    Family("scatter_nd", "gather", _scatter_nd,
           "scatter_nd(3 rows of sin(x) x into 5 rows)"),
    Family("tensor_scatter_nd_add", "gather", _tensor_scatter_nd_add,
           "tensor_scatter_nd_add(sin(x), repeated rows, tanh(c @ x))"),
    Family("unsorted_segment_sum", "gather", _unsorted_segment_sum,
           "unsorted_segment_sum(sin(x) x, 5 rows to 3)"),
    Family("where", "gather", _where, "where(x > 0, x^2, sin(x))"),
    Family("cumsum", "cumulative", _cumsum,
           "cumsum(sin x) + cumsum(x^2, exclusive, reverse)"),
    Family("cumprod", "cumulative", _cumprod, "cumprod(x, reverse)"),
    Family("cumulative_logsumexp", "cumulative", _cumulative_logsumexp,
           "cumulative_logsumexp(x)"),
    Family("cumsum_concat_logsumexp", "cumulative", _cumsum_concat_logsumexp,
           "concat([cumsum(x), cumulative_logsumexp(x)])"),
    Family("sort", "sort", _sort, "sort(x) * w * x"),
    Family("argsort", "sort", _argsort, "gather(x^2, argsort(x))"),
    Family("top_k", "sort", _top_k, "top_k(x, 3).values^2"),
    Family("einsum", "einsum", _einsum, "einsum(einsum(x, x), w)"),
    Family("reductions", "reduction", _reductions,
           "reduce_sum(x^2) + reduce_max + reduce_logsumexp, axis 0"),
    Family("argmax", "reduction", _argmax,
           "sum(x^2 * one_hot(argmax(x, 1)))"),
    Family("unary", "elementwise", _unary,
           "exp, log, tanh, sigmoid, softplus, erf"),
    Family("binary", "elementwise", _binary, "pow(x^2 + .5, sin x) + atan2"),
    Family("cond", "control flow", _cond, "tf.cond on sum(x) > 0"),
    Family("while_loop", "control flow", _while_loop,
           "tf.while_loop, 3 steps of y = 1.5 sin(y) + x"),
    Family("map_fn", "control flow", _map_fn, "tf.map_fn over rows"),
    Family("switch_case", "control flow", _switch_case,
           "tf.switch_case on a data-dependent index"),
    Family("scan", "control flow", _scan, "tf.scan over rows"),
    Family("concat_slice", "slicing", _concat_slice,
           "concat(x[1:3] * x[:2], strided_slice(x, step 2))"),
    Family("pad_tile_reverse", "slicing", _pad_tile_reverse,
           "tile(reverse(x) * x) + pad(x^2)"),
    Family("stateless_random", "random", _stateless_random,
           "x * stateless_normal + x^2 * stateless_uniform",
           xla_reference=True),
    Family("fused_batch_norm_v3_inference", "normalization",
           _fused_batch_norm(3, False, "NHWC"),
           "FusedBatchNormV3, inference, NHWC: (y, mean, variance) (the "
           "running statistics passed through)"),
    Family("fused_batch_norm_v1_inference_nchw", "normalization",
           _fused_batch_norm(1, False, "NCHW"),
           "FusedBatchNorm, inference, NCHW: (y, mean, variance)"),
    Family("fused_batch_norm_v2_training", "normalization",
           _fused_batch_norm(2, True, "NHWC"),
           "FusedBatchNormV2, training, NHWC: (y, batch mean, batch "
           "variance)"),
    Family("fused_batch_norm_v3_training_nchw", "normalization",
           _fused_batch_norm(3, True, "NCHW", .3),
           "FusedBatchNormV3, training, NCHW, exponential_avg_factor .3: "
           "(y, mean, variance)"),
    Family("batch_norm_stats_of_x", "normalization", _batch_norm_stats_of_x,
           "FusedBatchNormV3, inference, given x's own moments (TF's "
           "gradient leaves them out)"),
    Family("keras2_batchnorm", "normalization", _keras2_batchnorm,
           "tf_keras BatchNormalization (fused), inference, one image",
           requires="tf_keras"),
    Family("local_response_normalization", "normalization",
           _local_response_normalization,
           "local_response_normalization(x, radius 1)"),
    Family("eigh_values_only", "linalg", _eigh_values_only,
           "SelfAdjointEigV2(compute_v=False): (values, empty vectors)"),
    Family("svd_values_only", "linalg", _svd_values_only,
           "Svd(compute_uv=False): (values, empty u, empty v)"),
    Family("empty_argument", "size 0", _empty_argument,
           "x of shape (0, 3): (reduce_sum(x, 0) + 1, 2x)"),
    Family("empty_intermediate", "size 0", _empty_intermediate,
           "2 sin(x) plus sums of size-0 slices and products"),
    Family("fft_len_helper", "fft", _fft_len_helper,
           "|rfft(x)|^2 / len(x): a helper calling len() of its argument"),
    Family("ifft_fftshift", "fft", _ifft_fftshift,
           "ifft(fftshift(x + i x^2)): re - im"),
    Family("top_k_rows", "sort", _top_k_rows, "top_k(x^2, 2) of each row"),
    Family("sort_rows_descending", "sort", _sort_rows_descending,
           "sort(x, axis 0, descending) * x"),
    Family("resize_bilinear_align_corners", "image",
           _resize_bilinear_align_corners,
           "resize_bilinear(x, [6, 5], align_corners=True)"),
    Family("segment_sum", "gather", _segment_sum,
           "segment_sum(sin(x) x, sorted ids)"),
    Family("unsorted_segment_max", "gather", _unsorted_segment_max,
           "unsorted_segment_max(x^2, 5 rows to 3)"),
    Family("tensor_scatter_nd_update", "gather", _tensor_scatter_nd_update,
           "tensor_scatter_nd_update(sin(x), 2 rows, 2 tanh(x[:2]))"),
    Family("inplace_add", "gather", _inplace("InplaceAdd"),
           "InplaceAdd(sin(x), rows 1 and 3, x[:2]^2)"),
    Family("inplace_update", "gather", _inplace("InplaceUpdate"),
           "InplaceUpdate(sin(x), rows 1 and 3, x[:2]^2)"),
    Family("while_loop_random", "control flow", _while_loop_random,
           "tf.while_loop whose body draws tf.random.uniform (unused)"),
    Family("tensor_array", "tensor list", _tensor_array(False),
           "TensorArray of 4 rows written in a while loop, stacked"),
    Family("tensor_array_dynamic", "tensor list", _tensor_array(True),
           "TensorArray(dynamic_size=True) grown in a while loop, stacked"),
    Family("range_of_value", "dynamic size", _range_of_value,
           "tf.range(1 + number of x > 0) * x[0]"),
    Family("boolean_mask", "dynamic size", _boolean_mask,
           "boolean_mask(x^2, x > 0)"),
    Family("keras_dense", "keras", _keras_layer(
        "keras_dense",
        lambda tf: tf.keras.layers.Dense(3, activation="tanh"), (2, 4),
        batched_call=False), "Dense(3, tanh) on 2 rows"),
    Family("keras_conv2d", "keras", _keras_layer(
        "keras_conv2d",
        lambda tf: tf.keras.layers.Conv2D(3, 3, padding="same",
                                          activation="tanh"), (4, 4, 2)),
           "Conv2D(3, 3, same, tanh) on one image"),
    Family("keras_layernorm", "keras", _keras_layer(
        "keras_layernorm", lambda tf: tf.keras.layers.LayerNormalization(),
        (3, 4), batched_call=False), "LayerNormalization"),
    Family("keras_batchnorm", "keras", _keras_layer(
        "keras_batchnorm", _batchnorm, (3, 4), batched_call=False),
           "BatchNormalization, inference"),
    Family("keras_attention", "keras", _keras_layer(
        "keras_attention", _attention_block, (4, 8)),
           "MultiHeadAttention(2 heads, key_dim 4), LayerNorm, gelu Dense, "
           "pooling, Dense(1)", heavy=SECOND_ORDER),
    Family("keras_lstm", "keras", _keras_layer(
        "keras_lstm", lambda tf: tf.keras.layers.LSTM(3), (4, 2)),
           "LSTM(3) over 4 steps", heavy=SECOND_ORDER),
    Family("keras_gru", "keras", _keras_layer(
        "keras_gru", lambda tf: tf.keras.layers.GRU(3), (4, 2)),
           "GRU(3) over 4 steps", heavy=SECOND_ORDER),
    Family("keras_cnn_exported", "keras", _keras_cnn_exported,
           "Conv2D(relu), MaxPooling2D, Dense: model.export(), reloaded; a "
           "near tie in a window"),
    Family("round_trip", "round trip", _round_trip,
           "call_tf(jax2tf.convert(jit(f), with_gradient=True)), f(x) = "
           "[sum(x^2), prod(x), sum(sin x)] (jax-ml/jax#11753)", tol=1e-4),
    Family("restored_jax2tf", "round trip", _restored_jax2tf,
           "a jax2tf SavedModel of tanh(x @ w)^2, batch polymorphic, "
           "reloaded (embedded)", tol=1e-4),
    Family("tfp_normal", "tfp", _tfp_normal,
           "Normal(x[0], softplus(x[1])).log_prob(data)",
           requires="tensorflow_probability"),
    Family("tfp_mvn_tril", "tfp", _tfp_mvn_tril,
           "MultivariateNormalTriL(x[:2], FillScaleTriL(x[2:])).log_prob",
           requires="tensorflow_probability"),
    Family("tfp_ode", "tfp", _tfp_ode,
           "DormandPrince().solve of y' = A(theta) y, states at t=.5, 1",
           requires="tensorflow_probability", tol=2e-3, tol2=2e-2,
           heavy=frozenset({"jit(vmap)", "jit(jacfwd)", "jit(jacrev)"})
           | SECOND_ORDER, full_run=dict.fromkeys(
               ("jit(vmap(grad))", "jit(jacrev)", "jacrev", "jit(jacfwd)",
                "jacfwd", "jit(hessian)", "hessian", "jit(vmap(hessian))"),
               "TFP's adjoint (a while loop of data-dependent trip count) "
               "is refused under jit and vectorized by no method: each "
               "derivative column is a known refusal or gap, whose "
               "sequential retry solves the ODE per element, 0.5 to 10 "
               "minutes a case on the shared 2-core machine; the default "
               "run proves the solve, its batching and its tangents "
               "(value, jit, vmap, jit(vmap), jvp), and refusals and gaps "
               "of while loops by other families (while_loop_random, "
               "tensor_array_dynamic)")),
)

# ------------------------------------------------------------ issue 49
# Cases a peer project's op tests found (Python errors, neither answers nor
# refusals) and their neighbours: loops whose result structure TF gives as
# a tuple eagerly and a list in a graph, decompositions without vectors
# inside a tf.function(jit_compile=True), resize methods and options,
# top_k unsorted, with ties, and with a captured k. Small shapes: the op
# matrix is most of CI's time.


def _while_loop_structure(kind: str, stateful: bool = False):
  """The values of a tf.while_loop as TF returns them: the body's structure
  eagerly, the loop_vars' in a graph (a tuple and a list where they
  differ).

  The loop counts with an int32 (a fixed trip count, as users write it);
  the function returns the float values after it, sliced off the loop's
  result, which keeps its container type. `kind`: "list" (loop_vars a
  list, the body returns a tuple), "tuple" (both tuples), "nested" (a list
  holding a tuple of a tensor and a dict; the body returns a tuple holding
  the same), "dict" (one dict in a list, its float values). `stateful`:
  the body also draws an unused tf.random.uniform.
  """
  def build():
    import tensorflow as tf

    def noise(x):
      return 0. * tf.random.uniform(tf.shape(x)) if stateful else 0.

    def f(x):
      if kind == "dict":
        def body(d):
          return [{"i": d["i"] + 1, "y": tf.sin(d["y"]) * 1.5 + x,
                   "z": d["z"] * d["y"] + noise(x)}]
        start = [{"i": tf.constant(0), "y": x, "z": x * .5}]
        d = tf.while_loop(lambda d: d["i"] < 3, body, start)[0]
        return {"y": d["y"], "z": d["z"]}
      if kind == "nested":
        def body(i, yz):
          y, z = yz
          return (i + 1, (tf.sin(y) * 1.5 + x + noise(x),
                          {"z": z["z"] * .5 + y * y}))
        return tf.while_loop(lambda i, yz: i < 3, body,
                             [tf.constant(0), (x, {"z": x})])[1:]
      start = (tf.constant(0), x, x * .5)
      return tf.while_loop(
          lambda i, y, z: i < 3,
          lambda i, y, z: (i + 1, tf.sin(y) * 1.5 + x + noise(x),
                           z * y + x),
          list(start) if kind == "list" else start)[1:]
    return Built(f, _randn(f"while_loop_{kind}_{stateful}", 3))
  return build


def _jit_compiled(name: str, make: Callable[[Any], Callable[[Any], Any]],
                  *shape: int):
  """A family whose function is a tf.function(jit_compile=True): eagerly
  TensorFlow runs it with XLA."""
  def build():
    import tensorflow as tf
    return Built(tf.function(make(tf), jit_compile=True), _randn(name, *shape))
  return build


def _eigh_values_only_xla(tf):
  def f(x):
    sym = x + tf.linalg.matrix_transpose(x)
    return tuple(tf.raw_ops.SelfAdjointEigV2(input=sym, compute_v=False))
  return f


def _svd_values_only_xla(tf):
  return lambda x: tuple(tf.raw_ops.Svd(input=x, compute_uv=False))


def _eigvalsh():
  import tensorflow as tf
  return Built(lambda x: tf.linalg.eigvalsh(x + tf.transpose(x)),
               _randn("eigvalsh", 3, 3))


def _eig_values_only():
  """Eig without vectors: eigenvalues in LAPACK's order, so sums of their
  powers (traces of powers, real for a real matrix), and the empty
  vectors."""
  import tensorflow as tf
  def f(x):
    e, v = tf.raw_ops.Eig(input=x, compute_v=False, Tout=tf.complex64)
    return (tf.math.real(tf.reduce_sum(e * e)),
            tf.math.real(tf.reduce_sum(e * e * e)), tf.math.real(v))
  return Built(f, _randn("eig_values_only", 3, 3))


def _resize_legacy(method: str, half_pixel_centers: bool):
  def build():
    import tensorflow as tf
    op = {"bilinear": tf.compat.v1.image.resize_bilinear,
          "nearest": tf.compat.v1.image.resize_nearest_neighbor}[method]
    def f(x):
      y = op(tf.expand_dims(x, 0), [5, 7], align_corners=False,
             half_pixel_centers=half_pixel_centers)
      return tf.squeeze(y, 0)
    return Built(f, _randn(f"resize_{method}_{half_pixel_centers}", 3, 4, 2))
  return build


def _resize_bilinear_squared():
  """A bilinear resize, squared: its Hessian has second-order terms through
  ResizeBilinearGrad, which TF declares not differentiable."""
  import tensorflow as tf
  def f(x):
    y = tf.image.resize(x, [5, 7])
    return y * y
  return Built(f, _randn("resize_bilinear_squared", 3, 4, 2))


def _resize_method(method: str, size: tuple[int, int],
                   antialias: bool = False):
  def build():
    import tensorflow as tf
    return Built(lambda x: tf.image.resize(x, size, method=method,
                                           antialias=antialias),
                 _randn(f"resize_{method}_{size}_{antialias}", 4, 4, 2))
  return build


def _top_k_unsorted():
  """top_k(sorted=False): the values' order is the kernel's (TF's and
  XLA's differ), so sorted again."""
  import tensorflow as tf
  w = _const("top_k_unsorted", 3)
  return Built(lambda x: tf.sort(tf.math.top_k(x * x, 3, sorted=False)
                                 .values) * w, _randn("top_k_unsorted", 6))


def _top_k_ties(sorted_: bool):
  """top_k of rows with exact ties, among the chosen and at the cut.

  Sorted, each tied position gets its own weight (the gradient goes to
  the index top_k picks: the first); unsorted, whose order is the
  kernel's, sums of the values' powers. The batches scale rows (ties
  kept).
  """
  def build():
    import tensorflow as tf
    w = tf.constant([1., 2., 3.])
    def f(x):
      values = tf.math.top_k(x, 3, sorted=sorted_).values
      if sorted_:
        return values * w
      return tf.stack([tf.reduce_sum(values * values),
                       tf.reduce_sum(values * values * values)])
    x = np.array([[3., 1., 3., 2., 3., .5], [2., 2., 1., 2., -1., 2.]],
                 np.float32)
    rows = lambda n: np.stack([x * (1. + .1 * i) for i in range(n)])
    return Built(f, x, xs=rows(BATCH), xs2=rows(HESSIAN_BATCH))
  return build


def _top_k_captured_k():
  """k a tensor the function captures: a constant of its graph, which TF
  passes to the function as an argument."""
  import tensorflow as tf
  k = tf.constant(2)
  return Built(lambda x: tf.math.top_k(x * x, k).values * 2.,
               _randn("top_k_captured_k", 2, 5))


ISSUE_49_FAMILIES: tuple[Family, ...] = (
    Family("while_loop_list_vars", "control flow",
           _while_loop_structure("list"),
           "tf.while_loop([i, y, z], body returning a tuple)[1:]: (y, z), "
           "a tuple eagerly and a list in a graph"),
    Family("while_loop_tuple_vars", "control flow",
           _while_loop_structure("tuple"),
           "tf.while_loop((i, y, z))[1:]: (y, z), a tuple both ways"),
    Family("while_loop_nested", "control flow",
           _while_loop_structure("nested"),
           "tf.while_loop([i, (y, {'z': z})])[1:] (an outer tuple eagerly, "
           "a list in a graph)"),
    Family("while_loop_dict", "control flow", _while_loop_structure("dict"),
           "tf.while_loop([{'i', 'y', 'z'}]): {'y', 'z'}"),
    Family("while_loop_list_vars_random", "control flow",
           _while_loop_structure("list", stateful=True),
           "while_loop_list_vars whose body draws tf.random.uniform "
           "(unused)"),
    Family("while_loop_nested_random", "control flow",
           _while_loop_structure("nested", stateful=True),
           "while_loop_nested whose body draws tf.random.uniform (unused)"),
    Family("eigh_values_only_xla", "linalg",
           _jit_compiled("eigh_values_only_xla", _eigh_values_only_xla,
                         2, 3, 3),
           "tf.function(jit_compile=True) of SelfAdjointEigV2(compute_v="
           "False) of 2 matrices: (values, empty vectors)",
           skip={"value": (
               "TF disagrees with itself about the vectors it does not "
               "compute: its graph says shape (0,), XLA (which runs a "
               "jit_compile function eagerly) returns the whole matrix of "
               "vectors, and the eager call returns TF's eager result; any "
               "is a right value (tests/calltf/test_defects_49.py checks "
               "that it is one of them)")}),
    Family("svd_values_only_xla", "linalg",
           _jit_compiled("svd_values_only_xla", _svd_values_only_xla, 4, 3),
           "tf.function(jit_compile=True) of Svd(compute_uv=False): "
           "(values, empty u, empty v)"),
    Family("eigvalsh", "linalg", _eigvalsh, "eigvalsh(x + x^T)"),
    Family("eig_values_only", "linalg", _eig_values_only,
           "Eig(compute_v=False): real(sum e^2), real(sum e^3), empty "
           "vectors"),
    Family("resize_bilinear_legacy", "image",
           _resize_legacy("bilinear", False),
           "resize_bilinear(x, [5, 7], half_pixel_centers=False)"),
    Family("resize_nearest_legacy", "image",
           _resize_legacy("nearest", False),
           "resize_nearest_neighbor(x, [5, 7])"),
    Family("resize_bilinear_squared", "image", _resize_bilinear_squared,
           "tf.image.resize(x, [5, 7], 'bilinear')^2",
           hessian_by_differences=True),
    Family("resize_area", "image", _resize_method("area", (3, 2)),
           "tf.image.resize(x, [3, 2], 'area')"),
    Family("resize_lanczos3", "image", _resize_method("lanczos3", (6, 5)),
           "tf.image.resize(x, [6, 5], 'lanczos3')"),
    Family("resize_bilinear_antialias", "image",
           _resize_method("bilinear", (3, 2), antialias=True),
           "tf.image.resize(x, [3, 2], 'bilinear', antialias=True)"),
    Family("top_k_unsorted", "sort", _top_k_unsorted,
           "sort(top_k(x^2, 3, sorted=False).values) * w"),
    Family("top_k_ties", "sort", _top_k_ties(True),
           "top_k(x, 3).values * [1, 2, 3], rows with exact ties"),
    Family("top_k_ties_unsorted", "sort", _top_k_ties(False),
           "sums of powers of top_k(x, 3, sorted=False).values, rows with "
           "exact ties"),
    Family("top_k_captured_k", "sort", _top_k_captured_k,
           "top_k(x^2, k).values * 2, k = tf.constant(2) captured"),
)

# Issue 57: derivatives the compiled function allows, where TF's own
# cannot be compiled (a loop's gradient growing TensorLists, max pooling's
# second derivative an inexact kernel). Their second derivatives and eager
# Jacobian are left to the full run: tests/calltf/test_engine_derivatives.py
# checks the same models' in the default run (against central differences
# of TF's gradient).
_ISSUE_57_FULL_RUN = dict.fromkeys(
    ("jacrev", "jit(hessian)", "hessian", "jit(vmap(hessian))"),
    "the default run checks the same model's second derivatives and "
    "Jacobians in tests/calltf/test_engine_derivatives.py")
ISSUE_57_FAMILIES: tuple[Family, ...] = (
    Family("message_passing_loop", "control flow", _message_passing_loop,
           "SchNet-like: tf.while_loop(i < 2) without maximum_iterations "
           "of gather, unsorted_segment_sum, shifted softplus",
           full_run=_ISSUE_57_FULL_RUN),
    Family("keras_cnn_swish", "keras", _keras_cnn_swish,
           "Conv2D, BatchNormalization, MaxPooling2D, Conv2D(swish), "
           "GlobalAveragePooling2D, Dropout, Dense(2), training=False",
           requires="keras", full_run=_ISSUE_57_FULL_RUN),
)

FAMILIES = FAMILIES + ISSUE_49_FAMILIES + ISSUE_57_FAMILIES

FAMILY_BY_NAME = {family.name: family for family in FAMILIES}


def case_id(family: str, transform: str) -> str:
  return f"{family}:{transform}"


def all_case_ids() -> list[str]:
  return [case_id(f.name, t) for f in FAMILIES for t in TRANSFORMS]


# Columns the test suite runs in the full run only, column -> why, but on
# each group's first family (`representatives`), which the default run
# keeps: together about 30% of the matrix's case time, each the
# composition of columns the default run checks.
FULL_RUN_COLUMNS = {
    "hessian": "eager second derivatives: the eager jacfwd of the eager "
               "jacrev, both checked by the default run, as jit(hessian) "
               "checks second derivatives under jit; the default run keeps "
               "each group's first family, the full run the others",
    "jit(vmap(hessian))": "the batching of the second derivatives that "
                          "jit(hessian) checks, by the rules that "
                          "jit(vmap(grad)) and jit(vmap) check; the default "
                          "run keeps each group's first family, the full "
                          "run the others",
}


def representatives() -> frozenset[str]:
  """The first family of each group: the default run keeps the columns of
  `FULL_RUN_COLUMNS` on them."""
  first: dict[str, str] = {}
  for f in FAMILIES:
    first.setdefault(f.group, f.name)
  return frozenset(first.values())


def full_run_case_ids() -> dict[str, str]:
  """The cases the test suite runs in the full run only, case -> why
  (`Family.full_run`, then `FULL_RUN_COLUMNS` but on `representatives`)."""
  kept = representatives()
  return {case_id(f.name, t): f.full_run.get(t) or FULL_RUN_COLUMNS[t]
          for f in FAMILIES for t in TRANSFORMS
          if t in f.full_run or (t in FULL_RUN_COLUMNS
                                 and f.name not in kept)}


# Gaps that stay: cases that raise with the defaults and run with
# vmap_method="sequential", case -> why they are not closed. test_op_matrix.py
# expects each to be a gap (and fails when it runs, so that the entry goes);
# any other gap fails it: every case that runs sequentially must run
# vectorized with the defaults.
KNOWN_GAPS: dict[str, str] = {
    f"tfp_ode:{t}": (
        "TFP's adjoint (the solver's custom gradient: a while loop whose "
        "trip count depends on the data, with TensorLists without a size) "
        "is neither compiled by XLA nor vectorized by pfor (StatelessWhile, "
        "named); the only way to batch it is one call per element, which "
        "the default never does silently: vmap_method='sequential' runs it "
        "eagerly (under jit nothing does: a refusal there)")
    for t in ("jacrev", "jacfwd", "hessian")}
KNOWN_GAPS.update({
    f"while_loop_random:{t}": (
        "the function draws from a stateful random op (a side effect): "
        "call_tf never vectorizes it, since pfor or the engine would draw "
        "once for the whole batch; the refusal names the op and "
        "vmap_method='sequential', which runs it once per element")
    for t in ("jit(vmap)", "vmap", "jacrev", "jacfwd", "hessian")})
KNOWN_GAPS["tensor_array_dynamic:jacrev"] = (
    "TF's gradient of a TensorArray grown in a loop pushes onto TensorLists "
    "in a loop: pfor cannot vectorize TensorListPushBack (named) and XLA "
    "keeps a growing list at its initial size (refused), so only one call "
    "per element (sequential) runs it")

# Refusals: what fails with every vmap_method, family (or case) -> why. For
# the report; test_op_matrix.py accepts a refusal, which names the op.
KNOWN_REFUSALS: dict[str, str] = {
    "det_slogdet": (
        "XLA has no kernel for MatrixDeterminant (tf2xla): under jax.jit "
        "call_tf cannot compile the function at all, batched or not; "
        "eagerly it runs (pfor's converter)"),
    "resize_bicubic": (
        "XLA has no kernel for ResizeBicubic (tf2xla): under jit call_tf "
        "cannot compile the function, batched or not; eagerly every "
        "transformation runs but the Hessian, whose second derivative "
        "needs a gradient of ResizeBicubicGrad, which TF does not register "
        "(the refusal names it)"),
    "fft_len_helper": (
        "len() of a symbolic tensor: call_tf traces the function with "
        "autograph off, as upstream; the refusal (CallTfTraceError) says "
        "so and to wrap the function in tf.function or write x.shape[0]. "
        "Eagerly the call, and jax.jvp by TF's eager tangents, run it on "
        "concrete tensors"),
    "segment_sum": (
        "XLA has no kernel for the sorted SegmentSum, and TF does not know "
        "the size of its result (it depends on the ids' values): under jit "
        "nothing runs it, and vmap needs static result shapes (with every "
        "method); the refusal names the op and says that output_shape_dtype "
        "helps eagerly only. Eagerly the call and its reverse and forward "
        "derivatives run"),
    "tensor_array_dynamic": (
        "a TensorArray grown in a loop: XLA keeps it at its initial size "
        "(refused under jit) and TF does not know its size (vmap needs "
        "static result shapes); the refusal names the op"),
    "range_of_value": (
        "tf.range to a value: XLA cannot compile it and the result's size "
        "depends on the values; the refusal names Range and says that "
        "output_shape_dtype helps eagerly only, for a size the same for "
        "every input"),
    "boolean_mask": (
        "tf.boolean_mask: XLA compiles it to a bounded dynamic size, which "
        "call_tf cannot return under jit, and the size depends on the "
        "values; the refusal names Where and says that output_shape_dtype "
        "helps eagerly only"),
    "inplace_add": (
        "XLA has no kernel for InplaceAdd (refused under jit, naming it) "
        "and TF has no gradient for it (derivatives refused in both modes, "
        "naming it); eager vmap runs (pfor)"),
    "inplace_update": "as inplace_add, for InplaceUpdate",
    "while_loop_random": (
        "the stateful random op (a side effect) is never vectorized; under "
        "jit, the loop of sequential calls that vmap's derivatives would "
        "need is refused too (the refusal names the op)"),
    "tfp_ode": (
        "TF's gradient of the adaptive solve (TFP's adjoint: a while loop "
        "whose trip count depends on the data, with TensorLists without a "
        "size) is compiled by XLA with no method (sequential too: 'Error "
        "compiling TensorFlow function', XLA asking for a fixed tensor "
        "list size), and pfor cannot vectorize it (StatelessWhile, "
        "TensorListPushBack, named); eagerly the derivatives run"),
}


# Families whose eager and jit columns may differ in outcome, family -> why:
# XLA cannot compile the function (eagerly TensorFlow runs it), or computes
# it otherwise than TensorFlow's kernels, which eager calls keep
# (call_tf_lib.tf_function.xla_fidelity). Everywhere else, each eager column
# has its jit column's outcome (test_op_matrix.py).
EAGER_AND_JIT_DIFFER: dict[str, str] = {
    "det_slogdet": "XLA has no kernel for MatrixDeterminant",
    "resize_bicubic": "XLA has no kernel for ResizeBicubic",
    "fft_len_helper": (
        "the eager call runs the function on concrete tensors; every traced "
        "path refuses len() of a symbolic tensor"),
    "segment_sum": "XLA has no kernel for the sorted SegmentSum",
    "inplace_add": "XLA has no kernel for InplaceAdd",
    "inplace_update": "XLA has no kernel for InplaceUpdate",
    "tensor_array_dynamic": "XLA keeps a growing TensorArray at its size",
    "range_of_value": "XLA cannot compile tf.range to a value",
    "boolean_mask": (
        "XLA gives the result a bounded dynamic size, which call_tf cannot "
        "return under jit"),
    "while_loop_random": (
        "a side effect: eagerly one call per element runs each "
        "derivative's loop; under jit it is refused"),
    "tfp_ode": "XLA cannot compile the solver's gradient",
}

# Cases that fail today for a known bug, case -> the bug. test_op_matrix.py
# marks each `xfail(strict=True)`: when the bug is fixed the case passes,
# the strict mark turns that into a failure, and the fix removes the entry.
KNOWN_BUGS: dict[str, str] = {}


# ------------------------------------------------------------ issue 49
# What the families of ISSUE_49_FAMILIES leave refused, gapped or open.

for _name in ("while_loop_list_vars_random", "while_loop_nested_random"):
  KNOWN_GAPS.update({
      f"{_name}:{t}": KNOWN_GAPS[f"while_loop_random:{t}"]
      for t in ("jit(vmap)", "vmap", "jacrev", "jacfwd", "hessian")})
  KNOWN_REFUSALS[_name] = KNOWN_REFUSALS["while_loop_random"]
  EAGER_AND_JIT_DIFFER[_name] = EAGER_AND_JIT_DIFFER["while_loop_random"]
KNOWN_GAPS["eig_values_only:vmap"] = (
    "pfor has no converter for Eig (named) and XLA no kernel for it: eager "
    "vmap runs one call per element only with vmap_method='sequential'")
KNOWN_REFUSALS["eig_values_only"] = (
    "XLA has no kernel for Eig (tf2xla): under jit call_tf cannot compile "
    "the function, batched or not; eagerly the derivatives run (TF's)")
EAGER_AND_JIT_DIFFER["eig_values_only"] = "XLA has no kernel for Eig"
KNOWN_REFUSALS["resize_area"] = (
    "XLA has no kernel for ResizeArea and TF no gradient for it: under jit "
    "nothing runs, and every derivative is refused in both modes (naming "
    "it); eager vmap runs (pfor)")
EAGER_AND_JIT_DIFFER["resize_area"] = "XLA has no kernel for ResizeArea"
for _name in ("resize_lanczos3", "resize_bilinear_antialias"):
  KNOWN_GAPS.update({f"{_name}:{t}": (
      "tf.image.resize's ScaleAndTranslate (lanczos, gaussian, "
      "mitchellcubic, antialias): pfor has no converter for it or its "
      "gradient ScaleAndTranslateGrad (named) and XLA no kernel, so only "
      "one call per element (vmap_method='sequential') batches it")
      for t in ("vmap", "jacrev")})
  KNOWN_REFUSALS[_name] = (
      "XLA has no kernel for ScaleAndTranslate: under jit nothing runs; "
      "eagerly the Hessian needs a gradient of ScaleAndTranslateGrad, "
      "which TF does not register (the refusal names it)")
  EAGER_AND_JIT_DIFFER[_name] = "XLA has no kernel for ScaleAndTranslate"
KNOWN_REFUSALS["resize_bilinear_squared"] = (
    "eagerly, the Hessian: TF's gradient of a bilinear resize "
    "(ResizeBilinearGrad) has no gradient, so TF's tapes find the second "
    "derivative unconnected where it is not; call_tf refuses it, naming the "
    "op, rather than give zeros (under jit JAX's derivative of the module "
    "gives it, checked against central differences of TF's gradient)")
EAGER_AND_JIT_DIFFER["resize_bilinear_squared"] = (
    "the Hessian: eagerly refused (TF has no gradient of "
    "ResizeBilinearGrad), under jit JAX's derivative of the module")
