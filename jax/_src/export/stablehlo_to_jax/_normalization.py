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
"""``batch_norm_inference``, ``batch_norm_training``, ``batch_norm_grad``.

The StableHLO specification defines each as a decomposition into other ops;
XLA computes them by its own expansion (``BatchNormExpander``, which
XLA:CPU runs), with the same values in exact arithmetic and other rounding:
the training variance as ``E[x^2] - E[x]^2`` where the specification
centers first, the inference output as ``x * s + (offset - mean * s)``
with ``s = scale * rsqrt(variance + epsilon)`` where the specification
divides by ``sqrt``. These rules compute XLA's expansion op for op, so
that a module gives the same bits as XLA running it (TensorFlow's
``FusedBatchNorm`` reaches a module as these ops). JAX differentiates and
batches the ``lax`` operations.

XLA:CPU computes the ops of narrow types in a wider one, rounding only
the results: ``bf16`` in ``f32``, the 8-bit and smaller float types in
``f16`` (measured bit for bit, ``tests/stablehlo``); so do these rules.
The ``epsilon`` attribute (an ``f32``) and the count of elements per
feature are converted to that type, as XLA converts them.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
from jax import lax
from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _registry
from jax._src.export.stablehlo_to_jax._ir import NoRule
import ml_dtypes
import numpy as np

Op = _ir.Op


def _computed_in(dtype: np.dtype) -> np.dtype:
  """The type XLA:CPU computes a batch normalization of `dtype` in."""
  if dtype == np.dtype(ml_dtypes.bfloat16):
    return np.dtype(np.float32)
  if dtype.itemsize == 1:  # the float8, float6 and float4 types
    return np.dtype(np.float16)
  return dtype


class _Features:
  """What the three ops share: the operand's shape and type, the feature
  dimension, and ``epsilon`` in the operand's type."""

  def __init__(self, op: Op):
    t = op.operand_types[0]
    if not isinstance(t, _ir.TensorType):
      raise NoRule(f"operand 0 is not a tensor ({t})")
    self.shape = t.shape
    self.result_dtype = t.dtype
    self.dtype = _computed_in(t.dtype)
    self.index = int(op.attrs["feature_index"])
    self.dims = tuple(d for d in range(len(self.shape)) if d != self.index)
    # XLA converts the f32 attribute (and the int32 count) to the type.
    self.epsilon = np.float32(op.attrs["epsilon"]).astype(self.dtype)
    count = int(np.prod([self.shape[d] for d in self.dims], dtype=np.int64))
    if count >= 2 ** 31:
      raise NoRule("more than 2^31 elements per feature (XLA counts them "
                   "in int32)")
    self.count = np.asarray(count, np.float64).astype(self.dtype)

  def widened(self, *xs: jax.Array) -> list[jax.Array]:
    """The operands in the type the op is computed in."""
    return [lax.convert_element_type(x, self.dtype) for x in xs]

  def rounded(self, *ys: jax.Array) -> list[jax.Array]:
    """The results in the op's type."""
    return [lax.convert_element_type(y, self.result_dtype) for y in ys]

  def full(self, value: np.ndarray, shape: Sequence[int]) -> jax.Array:
    """A constant scalar broadcast to `shape`."""
    return lax.broadcast_in_dim(np.asarray(value, self.dtype), tuple(shape),
                                ())

  def spread(self, v: jax.Array) -> jax.Array:
    """A feature vector broadcast along the operand's other dimensions."""
    return lax.broadcast_in_dim(v, self.shape, (self.index,))

  def sum(self, x: jax.Array) -> jax.Array:
    """The sum over every dimension but the feature one."""
    return lax.reduce(x, np.array(0, self.dtype), lax.add, self.dims)

  def mean(self, total: jax.Array) -> jax.Array:
    return lax.div(total, self.full(self.count, np.shape(total)))


@_registry.rule("stablehlo.batch_norm_inference")
def batch_norm_inference_rule(op: Op, c: object):
  """``batch_norm_inference``: XLA's ``x * s + (offset - mean * s)``."""
  del c
  f = _Features(op)

  def step(env, *operands):
    del env
    x, scale, offset, mean, variance = f.widened(*operands)
    eps = f.full(f.epsilon, np.shape(scale))
    true_scale = lax.mul(scale, lax.rsqrt(lax.add(variance, eps)))
    true_shift = lax.sub(offset, lax.mul(mean, true_scale))
    return f.rounded(lax.add(lax.mul(x, f.spread(true_scale)),
                             f.spread(true_shift)))
  return step


@_registry.rule("stablehlo.batch_norm_training")
def batch_norm_training_rule(op: Op, c: object):
  """``batch_norm_training``: XLA's mean and ``E[x^2] - E[x]^2``."""
  del c
  f = _Features(op)

  def step(env, *operands):
    del env
    x, scale, offset = f.widened(*operands)
    mean = f.mean(f.sum(x))
    square_mean = f.mean(f.sum(lax.mul(x, x)))
    var = lax.sub(square_mean, lax.mul(mean, mean))
    rsqrt = lax.rsqrt(lax.add(f.spread(var), f.full(f.epsilon, f.shape)))
    normalized = lax.mul(lax.sub(x, f.spread(mean)), rsqrt)
    out = lax.add(lax.mul(normalized, f.spread(scale)), f.spread(offset))
    return f.rounded(out, mean, var)
  return step


@_registry.rule("stablehlo.batch_norm_grad")
def batch_norm_grad_rule(op: Op, c: object):
  """``batch_norm_grad``: XLA's expansion of the gradients."""
  del c
  f = _Features(op)

  def step(env, *operands):
    del env
    x, scale, mean, variance, grad_out = f.widened(*operands)
    eps_x = f.full(f.epsilon, f.shape)
    var_x = f.spread(variance)
    rsqrt_x = lax.rsqrt(lax.add(var_x, eps_x))
    rsqrt = lax.rsqrt(lax.add(variance, f.full(f.epsilon, np.shape(scale))))
    centered = lax.sub(x, f.spread(mean))
    sum_grad_centered = f.sum(lax.mul(grad_out, centered))
    grad_offset = f.sum(grad_out)
    grad_scale = lax.mul(sum_grad_centered, rsqrt)
    i4 = lax.mul(f.spread(sum_grad_centered), centered)
    i5 = lax.div(i4, lax.add(var_x, eps_x))
    scaled = f.mean(lax.mul(f.spread(scale), rsqrt_x))
    i1 = lax.mul(grad_out, f.full(f.count, f.shape))
    i6 = lax.sub(lax.sub(i1, f.spread(grad_offset)), i5)
    return f.rounded(lax.mul(scaled, i6), grad_scale, grad_offset)
  return step
