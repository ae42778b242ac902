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
"""``optimization_barrier`` of one value, which JAX also transposes.

``jax.checkpoint`` writes ``optimization_barrier`` around the values it
recomputes, so that XLA does not merge them with the forward pass's. The
op computes its operands; JAX's ``lax.optimization_barrier`` of several
values has no transpose, and a serialized VJP that holds one (whose
values are partly the cotangents it is linear in, partly residuals) could
not be transposed into forward mode. :data:`barrier_p` is the op of one
value: the rule writes one per operand (each value kept from merging, as
the op keeps them), JAX batches and differentiates it as the identity it
is, and transposes it where its value is linear.
"""

from __future__ import annotations

import jax
from jax._src.export.stablehlo_to_jax import _primitive
from jax._src.interpreters import ad
from jax._src.lib.mlir.dialects import hlo
from jax.typing import ArrayLike


def barrier(x: ArrayLike) -> jax.Array:
  """``stablehlo.optimization_barrier`` of `x`."""
  return barrier_p.bind(x)


def _lower(ctx, x):
  del ctx
  return hlo.OptimizationBarrierOp([x]).results


def _batch(args, dims):
  x, = args
  d, = dims
  return barrier(x), d


def _jvp(primals, tangents):
  x, = primals
  t, = tangents
  if type(t) is ad.Zero:  # pylint: disable=unidiomatic-typecheck
    return barrier(x), t
  return barrier(x), barrier(t)


def _transpose(ct, x):
  del x
  if type(ct) is ad.Zero:  # pylint: disable=unidiomatic-typecheck
    return [ct]
  return [barrier(ct)]


barrier_p = _primitive.op_primitive(
    "stablehlo_optimization_barrier", abstract_eval=lambda x: x,
    lower=_lower, batch=_batch, jvp=_jvp, transpose=_transpose)
