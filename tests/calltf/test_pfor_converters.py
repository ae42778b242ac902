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
"""The pfor converters of ``batching/pfor.py`` for ops pfor has none for.

Each op is vectorized by ``pfor.vectorized_map`` (pfor as call_tf runs it,
without the fallback to a loop), run by TF's executor, and compared with a
loop of the op on each element, where the op has batched (stacked) inputs
in each combination the converter handles; then eager ``jax.vmap`` of
``call_tf``, which runs pfor, against a loop of eager calls (the op matrix's
eager ``vmap`` column had these ops as gaps: pfor refused them).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib.batching import pfor
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close

_rng = np.random.default_rng(0)


def _randn(*shape: int) -> np.ndarray:
  return _rng.standard_normal(shape).astype(np.float32)


def _check(fn: Callable[..., Any], args: Sequence[np.ndarray],
           batched: Sequence[bool], n: int = 3, tol: float = 1e-5) -> None:
  """pfor of `fn` over the batched args matches a loop of `fn` (TF only)."""
  full = [np.stack([a] + [a + 0.5 * k * (a.dtype.kind == "f")
                          for k in range(1, n)]) if b else a
          for a, b in zip(args, batched)]

  def body(loop):
    i, = loop
    return fn(*[tf.gather(a, i) if b else tf.constant(a)
                for a, b in zip(full, batched)])

  @tf.function(autograph=False)
  def vectorized():
    return pfor.vectorized_map(body, [tf.range(n)])
  got = tf.nest.map_structure(np.asarray, vectorized())
  rows = [fn(*[tf.constant(a[k]) if b else tf.constant(a)
               for a, b in zip(full, batched)]) for k in range(n)]
  expected = tf.nest.map_structure(lambda *r: np.stack(r), *rows)
  assert_close(got, expected, tol)


@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd(full_matrices):
  _check(lambda x: tf.linalg.svd(x, full_matrices=full_matrices),
         [_randn(4, 3)], [True])
  _check(lambda x: tf.linalg.svd(x, compute_uv=False), [_randn(2, 3, 4)],
         [True])


@pytest.mark.parametrize("full_matrices", [False, True])
def test_qr(full_matrices):
  _check(lambda x: tf.linalg.qr(x, full_matrices=full_matrices),
         [_randn(4, 3)], [True])


def test_matrix_determinant():
  _check(tf.linalg.det, [_randn(3, 3)], [True], tol=1e-4)
  _check(tf.linalg.det, [_randn(2, 3, 3)], [True], tol=1e-4)


@pytest.mark.parametrize("method", ["bilinear", "nearest", "bicubic", "area"])
def test_resize(method):
  _check(lambda x: tf.image.resize(x, [6, 5], method=method),
         [_randn(4, 4, 2)], [True])  # one image (made a batch of one)
  _check(lambda x: tf.image.resize(x, [3, 7], method=method),
         [_randn(2, 4, 4, 2)], [True])


@pytest.mark.parametrize("op", ["ResizeBilinearGrad", "ResizeBicubicGrad"])
@pytest.mark.parametrize("batched", [(True, False), (False, True),
                                     (True, True)])
def test_resize_gradients_of_original_images(op, batched):
  fn = getattr(tf.raw_ops, op)
  _check(lambda g, x: fn(grads=g, original_image=x), [
      _randn(2, 6, 5, 3), _randn(2, 4, 4, 3)], batched)


def test_resize_nearest_neighbor_gradient():
  _check(lambda g: tf.raw_ops.ResizeNearestNeighborGrad(grads=g, size=[4, 4]),
         [_randn(1, 6, 5, 2)], [True])


@pytest.mark.parametrize("batched", [(True, False), (True, True),
                                     (False, True)])
def test_depthwise_conv2d(batched):
  # A shared kernel (ours) and a batched one (pfor's own converter).
  _check(lambda x, k: tf.nn.depthwise_conv2d(x, k, [1, 1, 1, 1], "SAME"),
         [_randn(2, 5, 5, 3), _randn(3, 3, 3, 2)], batched, tol=1e-4)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, True)])
def test_cumulative_logsumexp(axis, exclusive, reverse):
  _check(lambda x: tf.math.cumulative_logsumexp(
      x, axis, exclusive=exclusive, reverse=reverse), [_randn(3, 5)], [True])


def _check_stacked(fn: Callable[..., Any], full: Sequence[np.ndarray],
                   batched: Sequence[bool]) -> None:
  """As `_check`, given each argument's batch (the first row if unbatched)."""
  n = len(full[0])

  def body(loop):
    k, = loop
    return fn(*[tf.gather(a, k) if b else tf.constant(a[0])
                for a, b in zip(full, batched)])

  @tf.function(autograph=False)
  def vectorized():
    return pfor.vectorized_map(body, [tf.range(n)])
  rows = [fn(*[tf.constant(a[k] if b else a[0])
               for a, b in zip(full, batched)]) for k in range(n)]
  assert_close(np.asarray(vectorized()), np.stack(rows))


_SCATTER_INDICES = np.array([[1], [3], [1], [0]], np.int32)


@pytest.mark.parametrize("batched", [(False, True), (True, False),
                                     (True, True)])
@pytest.mark.parametrize("indices,other,shape", [
    (_SCATTER_INDICES, (_SCATTER_INDICES + 1) % 5, [5, 3]),
    (np.array([[[1, 0], [2, 1]]]), np.array([[[2, 1], [0, 0]]]), [3, 2, 3]),
])
def test_scatter_nd(batched, indices, other, shape):
  k = indices.shape[-1]
  updates = [_randn(*indices.shape[:-1], *shape[k:]) for _ in range(3)]
  _check_stacked(lambda i, u: tf.scatter_nd(i, u, shape),
                 [np.stack([indices, other, indices]), np.stack(updates)],
                 batched)


@pytest.mark.parametrize("op", [tf.tensor_scatter_nd_add,
                                tf.tensor_scatter_nd_sub,
                                tf.tensor_scatter_nd_max,
                                tf.tensor_scatter_nd_min])
@pytest.mark.parametrize("batched", [(True, False, False),
                                     (False, False, True),
                                     (True, True, True)])
def test_tensor_scatter(op, batched):
  full = [np.stack([_randn(5, 3) for _ in range(3)]),
          np.stack([_SCATTER_INDICES, (_SCATTER_INDICES + 2) % 5,
                    _SCATTER_INDICES]),
          np.stack([_randn(4, 3) for _ in range(3)])]
  _check_stacked(op, full, batched)


# Through call_tf: eager jax.vmap runs pfor (the op matrix's eager column).

@pytest.mark.parametrize("name,fn,shape", [
    ("svd", lambda x: tf.linalg.svd(x, compute_uv=False), (4, 3)),
    ("qr", lambda x: tf.linalg.qr(x)[1], (4, 3)),
    ("det", lambda x: tf.linalg.det(x + 2. * tf.eye(3)), (3, 3)),
    ("resize_bicubic", lambda x: tf.image.resize(x, [6, 5], "bicubic"),
     (4, 4, 2)),
    ("depthwise", lambda x: tf.nn.depthwise_conv2d(
        x[None], tf.ones([2, 2, 2, 1]), [1, 1, 1, 1], "VALID")[0],
     (4, 4, 2)),
    ("cumulative_logsumexp", tf.math.cumulative_logsumexp, (6,)),
    ("scatter_nd", lambda x: tf.scatter_nd([[1], [3], [0]], x, [5, 2]),
     (3, 2)),
    ("tensor_scatter_nd_add", lambda x: tf.tensor_scatter_nd_add(
        x, [[1], [3], [1]], x[:3] * 2.), (5, 2)),
])
def test_eager_vmap_of_call_tf(name, fn, shape):
  del name
  f = jax2tf.call_tf(fn)
  xs = _rng.standard_normal((3, *shape)).astype(np.float32)
  assert_close(jax.vmap(f)(xs), np.stack([np.asarray(f(x)) for x in xs]),
               1e-4)


# Fused batch normalization: every version, both modes (pfor has a converter
# for V3 only, and gave zeros for the statistics in inference).

_BN = {1: tf.raw_ops.FusedBatchNorm, 2: tf.raw_ops.FusedBatchNormV2,
       3: tf.raw_ops.FusedBatchNormV3}


def _bn(version: int, training: bool, data_format: str
        ) -> Callable[..., Any]:
  def fn(x, scale):
    mean, variance = scale * .5, scale * scale + .5
    out = _BN[version](x=x, scale=scale, offset=-scale, mean=mean,
                       variance=variance, is_training=training,
                       data_format=data_format)
    return out[:3]  # (the reserve spaces are undefined in inference)
  return fn


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_fused_batch_norm(version, training, data_format):
  shape = (2, 3, 2, 2) if data_format == "NCHW" else (2, 2, 2, 3)
  # The statistics stacked only in training: pfor's converter merges the
  # batch into the channels there (in inference it refuses them).
  batched = (True, training)
  _check(_bn(version, training, data_format),
         [_randn(*shape), np.abs(_randn(3)) + .5], batched, tol=1e-4)


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("training", [False, True])
def test_fused_batch_norm_gradient(version, training):
  def fn(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = _bn(version, training, "NHWC")(x, tf.constant([1., 2., .5]))[0]
      loss = tf.reduce_sum(y * y * x)
    return tape.gradient(loss, x)
  _check(fn, [_randn(2, 2, 2, 3)], [True], tol=1e-4)


def test_vmap_method_pfor_gives_the_running_statistics_of_inference():
  # The op matrix's zeros: jax.vmap gave the batch mean and variance of
  # inference-mode batch normalization as zeros (pfor's converter).
  f = jax2tf.call_tf(lambda x: _bn(3, False, "NHWC")(
      x, tf.constant([1., 2., .5])), vmap_method="pfor")
  xs = _randn(3, 2, 2, 2, 3)
  got = jax.vmap(f)(xs)
  assert_close(got, tuple(np.stack(r) for r in zip(*[
      [np.asarray(o) for o in f(x)] for x in xs])), 1e-5)
  assert_close(got[1], np.tile(np.array([.5, 1., .25], np.float32), (3, 1)),
               1e-6)


@pytest.mark.parametrize("op", ["InplaceAdd", "InplaceSub", "InplaceUpdate"])
@pytest.mark.parametrize("batched", [(True, True), (True, False),
                                     (False, True)])
def test_inplace_rows(op, batched):
  # (XLA has no kernel for these: eager vmap runs pfor.)
  raw = getattr(tf.raw_ops, op)
  _check(lambda x, v: raw(x=x, i=[3, 0], v=v), [_randn(5, 2), _randn(2, 2)],
         batched)
