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
"""Results that hold no value, shaped as TensorFlow's graph shapes them.

A result of size 0 holds no value, but its shape is part of the call's
contract: ``call_tf``'s avals come from TF's shape functions. TF's eager
kernels and tf2xla give some such results other shapes:
``SelfAdjointEigV2`` without ``compute_v`` and ``Svd`` without
``compute_uv`` have vectors of shape ``(0,)`` in TF's graph, where TF's
eager kernel returns a scalar (holding whatever its memory held) and
tf2xla's lowering of ``SelfAdjointEigV2`` the whole matrix of vectors.
Upstream's eager call returned the scalar, and under ``jax.jit`` its
lowering failed ("Cannot lower jaxpr with verifier errors"). Here each such
result is an empty array of the graph's shape: eager calls
(:func:`eager_results`) and the lowering (:func:`lowered_results`); pfor's
loop body makes it a constant (``batching.rule``).

See https://github.com/jax-ml/jax/issues/11753.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
from jax._src import core
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
import numpy as np
import tensorflow as tf


def _empty(shape: Sequence[int | None] | None) -> bool:
  """Whether a static shape has a size-0 dimension."""
  return shape is not None and all(
      d is not None and core.is_constant_dim(d) for d in shape) and (
          0 in tuple(shape))


def eager_results(results: Sequence[jax.Array],
                  function_flat_tf: tf.types.experimental.GenericFunction,
                  args_flat_sig_tf: Sequence[tf.TensorSpec],
                  vectorized: object) -> list[jax.Array]:
  """An eager call's results, each empty one shaped as TF's graph says.

  Args:
    results: the results TF's eager kernels computed.
    function_flat_tf: the call's ``tf.function`` (its graph's shapes are
      the call's avals).
    args_flat_sig_tf: its argument specs.
    vectorized: the call's ``vectorized`` param: not None for a function
      that pfor vectorized, whose loop body already gives empty results
      their graph's shapes (``batching.rule``).

  Returns:
    ``results``, where TF's graph gives a result a shape with a size-0
    dimension that the eager result does not have, an empty array of that
    shape. Only calls with a result of size 0 or 1 look at the graph (the
    eager kernels' stand-ins are scalars).
  """
  if vectorized is not None or all(np.size(r) > 1 for r in results):
    return list(results)
  shapes = graph_lib.concrete_function(
      function_flat_tf, tuple(args_flat_sig_tf)).output_shapes
  shapes = tf.nest.flatten(shapes, expand_composites=False)
  if len(shapes) != len(results):
    return list(results)
  return [jax.numpy.zeros(tuple(s.as_list()), r.dtype)
          if s.rank is not None and _empty(s.as_list())
          and tuple(r.shape) != tuple(s.as_list()) else r
          for r, s in zip(results, shapes)]


def lowered_results(ctx: mlir.LoweringRuleContext,
                    results: Sequence[ir.Value],
                    result_types: Sequence[ir.Type]
                    ) -> tuple[list[ir.Value], list[ir.Type]]:
  """The lowering's results, each empty aval's an empty constant.

  Args:
    ctx: the lowering's context; its ``avals_out`` are the call's avals.
    results: the results of the compiled function's call.
    result_types: their types.

  Returns:
    The results and their types, where an aval of the call has a size-0
    dimension and the module's result another shape, an empty constant of
    the aval's shape and dtype instead.
  """
  values, types = [], []
  for value, typ, aval in zip(results, result_types, ctx.avals_out):
    shape = tuple(ir.RankedTensorType(typ).shape)
    if _empty(aval.shape) and shape != tuple(aval.shape):
      value = mlir.ir_constant(np.zeros(aval.shape, aval.dtype))
      typ = value.type
    values.append(value)
    types.append(typ)
  return values, types
