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
"""Output shapes of a TF function that TensorFlow's shape inference leaves open.

A function restored from a SavedModel with input signature ``(None, 4)``
reports its output as ``(None, ...)`` even when it is called on a ``(3, 4)``
input. For static input shapes, ``call_tf`` compiles the function (it must,
to embed it) and reads the result shapes from the HLO. For symbolic input
shapes (``jax.export``, ``jax2tf.convert`` with ``polymorphic_shapes``), each
output dimension is assumed to be an affine function of the dimension
variables, fitted from compilations at a few concrete sizes and checked at
two more (see :func:`fit_symbolic_output_shapes` for what that cannot see).
``output_shape_dtype`` remains the answer for truly data-dependent shapes.

See https://github.com/jax-ml/jax/issues/11753.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import functools
import logging
from typing import Any, cast

import jax
from jax._src import core
from jax._src.interpreters import mlir
from jax._src.lib.mlir.dialects import func as func_dialect
from jax._src.lib.mlir import ir
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib.tf_function import compile as compile_lib
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
from jax.experimental.jax2tf import jax2tf as jax2tf_internal
import tensorflow as tf

logger = logging.getLogger(__name__)

Shape = tuple[Any, ...]


def static_result_shapes(main: func_dialect.FuncOp
                         ) -> tuple[tuple[int, ...], ...]:
  """The result shapes of a function.

  Args:
    main: an MLIR function.

  Returns:
    The shapes of its results.

  Raises:
    ValueError: a result's shape is not static.
  """
  shapes = []
  for t in main.type.results:
    t = ir.RankedTensorType(t)
    if not t.has_static_shape:
      raise ValueError(f"the compiled function returns the dynamic type {t}")
    shapes.append(tuple(t.shape))
  return tuple(shapes)


def hlo_result_shapes(hlo: bytes) -> tuple[tuple[int, ...], ...]:
  """The static result shapes of a compiled TF function.

  Args:
    hlo: a serialized HLO module (``stage="hlo_serialized"``).

  Returns:
    The shapes of the results of its ``main``.
  """
  with mlir.make_ir_context():
    module = compat.hlo_to_module(hlo)
    return static_result_shapes(
        cast(func_dialect.FuncOp, ir.SymbolTable(module.operation)["main"]))


@functools.lru_cache(maxsize=256)
def static_output_shapes(function_flat_tf: Any,
                         specs: tuple[tf.TensorSpec, ...]
                         ) -> tuple[tuple[int, ...], ...]:
  """The result shapes of a TF function compiled for static argument shapes.

  Args:
    function_flat_tf: the ``tf.function`` of the call.
    specs: static argument specs.

  Returns:
    The shapes of its results, as XLA compiles them (cached).
  """
  return hlo_result_shapes(compile_lib.compile_to_hlo(
      function_flat_tf, specs, compile_lib.ENGINE_PLATFORM))


compat.register_cache(static_output_shapes, "call_tf: compiled output shapes")


def fit_symbolic_output_shapes(
    in_avals: Sequence[core.ShapedArray],
    concrete_out_shapes: Callable[[list[tuple[int, ...]]],
                                  Sequence[tuple[int, ...]]],
) -> tuple[Shape, ...]:
  """Output shapes, symbolic in the dimension variables of ``in_avals``.

  Each output dimension is *assumed* to be an affine function of the
  dimension variables (``b``, ``2*b``, ``b + 1``, ``3*a``): the coefficients
  come from ``concrete_out_shapes`` at a base point (7, 11, ...) and one unit
  step along each variable, and the fit is checked at two more points, one
  of them large (19 and 517 for one variable). A shape that is affine at all
  these sizes but not elsewhere (``max(b, 1000)``) is beyond it: such
  functions need ``output_shape_dtype``.

  Args:
    in_avals: the input avals, possibly with symbolic dimensions.
    concrete_out_shapes: maps concrete input shapes to concrete output shapes.

  Returns:
    The output shapes; symbolic where they depend on the variables.

  Raises:
    ValueError: a dimension is not affine in the dimension variables.
  """
  from jax._src.export import shape_poly  # pylint: disable=g-import-not-at-top
  dim_vars = tuple(sorted(shape_poly.all_dim_vars(in_avals)))
  if not dim_vars:
    return tuple(tuple(s) for s in
                 concrete_out_shapes([tuple(a.shape) for a in in_avals]))
  scope = next(d.scope for a in in_avals for d in a.shape
               if not core.is_constant_dim(d))
  var_exprs = [jax.export.symbolic_shape(v, scope=scope)[0] for v in dim_vars]

  def probe(values: Sequence[int]) -> Sequence[tuple[int, ...]]:
    shapes = [tuple(int(d) for d in core.evaluate_shape(a.shape, dim_vars,
                                                        *values))
              for a in in_avals]
    return concrete_out_shapes(shapes)

  base = [7 + 4 * i for i in range(len(dim_vars))]
  out_base = probe(base)
  steps = []
  for i in range(len(dim_vars)):
    point = list(base)
    point[i] += 1
    steps.append(probe(point))
  checks = [[2 * b + 5 for b in base], [64 * b + 69 for b in base]]
  return _affine_fit(dim_vars, var_exprs, (base, out_base), steps,
                     [(c, probe(c)) for c in checks])


def _affine_fit(dim_vars: Sequence[str], var_exprs: Sequence[core.DimSize],
                base: tuple[list[int], Sequence[tuple[int, ...]]],
                steps: Sequence[Sequence[tuple[int, ...]]],
                checks: Sequence[tuple[list[int],
                                       Sequence[tuple[int, ...]]]]
                ) -> tuple[Shape, ...]:
  """The affine output shapes that output shapes at probe points fit.

  Args:
    dim_vars: the dimension variables' names.
    var_exprs: the dimension variables, as symbolic dimensions.
    base: the base point (one size per variable) and the output shapes there.
    steps: the output shapes one unit step along each variable from the base.
    checks: more points, with their output shapes, that the fit must give.

  Returns:
    The output shapes; symbolic where they depend on the variables.

  Raises:
    ValueError: a dimension is not affine in the dimension variables.
  """
  point, out_base = base
  result = []
  for o, shape_base in enumerate(out_base):
    shape = []
    for d, dim_base in enumerate(shape_base):
      coeffs = [steps[i][o][d] - dim_base for i in range(len(dim_vars))]
      const = dim_base - sum(c * b for c, b in zip(coeffs, point))
      for check, out_check in checks:
        if const + sum(c * v for c, v in zip(coeffs, check)) != (
            out_check[o][d]):
          raise ValueError(
              f"dimension {d} of result {o} is not an affine function of the "
              f"dimension variables {', '.join(dim_vars)} (sizes tried: "
              f"{point}, {[c for c, _ in checks]}); pass output_shape_dtype "
              "to call_tf.")
      expr: core.DimSize = const
      for c, v in zip(coeffs, var_exprs):
        if c:
          expr = expr + c * v
      shape.append(expr)
    result.append(tuple(shape))
  return tuple(result)


def infer_output_avals(function_flat_tf: Any,
                       args_flat_avals: Sequence[core.ShapedArray],
                       args_flat_sig_tf: Sequence[tf.TensorSpec],
                       concrete_fn: Any, call_tf_graph: bool
                       ) -> tuple[core.ShapedArray, ...] | None:
  """Output avals of a TF function whose inferred shapes are not static.

  Args:
    function_flat_tf: the ``tf.function`` of the call.
    args_flat_avals: the argument avals (possibly symbolic).
    args_flat_sig_tf: the argument ``tf.TensorSpec``s.
    concrete_fn: the concrete function for ``args_flat_sig_tf``; its dtypes
      and the dimensions TF does know are kept.
    call_tf_graph: the ``call_tf`` argument. Symbolic output shapes are
      inferred only with it: without it, a call with symbolic input shapes
      could not be compiled anyway (XLA needs static shapes), and upstream's
      error says what to do.

  Returns:
    The output avals, or None if TensorFlow's own output shapes are static
    (call_tf uses those), or if the input shapes are symbolic without
    ``call_tf_graph`` (call_tf then asks for ``output_shape_dtype``).

  Raises:
    ValueError: compiling does not give static shapes (they depend on
      data): upstream's message, then why and what helps
      (:func:`.errors.dynamic_result_error`).
  """
  if all(s.rank is not None and all(d is not None for d in s)
         for s in concrete_fn.output_shapes):
    return None
  if not call_tf_graph and not all(core.is_constant_shape(a.shape)
                                   for a in args_flat_avals):
    return None
  try:
    return _inferred_output_avals(function_flat_tf, args_flat_avals,
                                  args_flat_sig_tf, concrete_fn)
  except (errors.CallTfUninitializedVariablesError,
          errors.CallTfTensorFlowVersionError,
          errors.CallTfStatefulFunctionError):
    raise
  except Exception as e:  # pylint: disable=broad-except
    if call_tf_graph:  # (TF runs it: upstream's error stays)
      logger.warning(
          "call_tf: TensorFlow reports output shapes %s, and compiling the "
          "function for the argument shapes did not give static shapes "
          "either: %s", concrete_fn.output_shapes, errors.first_line(e))
      return None
    op = size_making_op(concrete_fn.graph)
    raise errors.dynamic_result_error(
        concrete_fn.output_shapes, op.type if op else None,
        op.name if op else None,
        errors.first_line(e, ("XLA", "compile-time constant", "dynamic")),
        bounded="returns the dynamic type" in str(e)) from e


def size_making_op(graph: tf.Graph) -> tf.Operation | None:
  """The first op of ``graph`` (or a function it calls) whose result has a
  size it does not know though it knows its inputs' shapes: the op that
  makes a size depend on values (``Where``, ``Range`` to a value,
  ``SegmentSum``), or None."""
  for op in graph_lib.graph_ops(graph):
    if op.type in ("Placeholder", "_Arg") or op.type in graph_lib.CALLS:
      continue
    if not all(t.shape.is_fully_defined() for t in op.inputs):
      continue
    if any(not t.shape.is_fully_defined() for t in op.outputs):
      return op
  return None


def _inferred_output_avals(function_flat_tf: Any,
                           args_flat_avals: Sequence[core.ShapedArray],
                           args_flat_sig_tf: Sequence[tf.TensorSpec],
                           concrete_fn: Any) -> tuple[core.ShapedArray, ...]:
  out_dtypes = [jax2tf_internal._to_jax_dtype(dt)  # pylint: disable=protected-access
                for dt in concrete_fn.output_dtypes]
  in_dtypes = [s.dtype for s in args_flat_sig_tf]

  def concrete_out_shapes(in_shapes):
    return static_output_shapes(
        function_flat_tf,
        tuple(tf.TensorSpec(s, dt) for s, dt in zip(in_shapes, in_dtypes)))

  shapes = fit_symbolic_output_shapes(args_flat_avals, concrete_out_shapes)
  for o, (shape, tf_shape) in enumerate(zip(shapes, concrete_fn.output_shapes)):
    if tf_shape.rank is None:
      continue
    if len(shape) != tf_shape.rank or any(
        t is not None and core.is_constant_dim(d) and d != t
        for d, t in zip(shape, tf_shape)):
      raise ValueError(f"result {o}: compiling gives shape {shape}, but "
                       f"TensorFlow inferred {tf_shape}")
  return tuple(core.ShapedArray(s, dt) for s, dt in zip(shapes, out_dtypes))
