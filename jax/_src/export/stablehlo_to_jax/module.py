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
"""A serialized shape-polymorphic module, refined for static argument shapes.

``jax.export`` serializes a module whose argument shapes may be symbolic
(``b, 4``). The interpreter reads modules with static shapes:
:func:`refined_module` gives the module a new ``main`` that takes the
arguments with static shapes and calls the original, and refines every
shape in it (``mlir.refine_polymorphic_shapes``); a module without shape
polymorphism whose main takes those shapes is taken as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import compat
from jax._src.interpreters import mlir
from jax._src.lib.mlir.dialects import func as func_dialect
from jax._src.lib.mlir.dialects import hlo
from jax._src.lib.mlir import ir
import numpy as np

# The name the original main takes in a refined module.
ORIGINAL_MAIN = "_original_main"


def refined_module(module_bytes: bytes, nr_platform_args: int,
                   in_shapes: Sequence[tuple[int, ...]],
                   platform_index: int | None = None) -> ir.Module:
  """The module with a main for static argument shapes, shapes refined.

  In the current MLIR context.

  Args:
    module_bytes: a serialized module (``Exported.mlir_module_serialized``).
    nr_platform_args: how many platform-index arguments its main takes
      first (1 for a module exported for several platforms, else 0).
    in_shapes: the static shapes of the other arguments.
    platform_index: where given (with one platform argument), the index of
      the platform the module is to run on: the new main passes it as a
      constant and takes no platform argument, and the functions it calls
      are inlined into it, so that the module's choices between platforms
      (``stablehlo.case`` on the index) are constants (the interpreter then
      reads only the chosen platform's branch).

  Returns:
    The module, whose new main takes the platform arguments (unless
    ``platform_index`` is given), then the arguments with ``in_shapes``;
    the module as it is where it uses no shape polymorphism and its main
    takes those shapes already.

  Raises:
    ValueError: shape refinement fails.
  """
  module = compat.deserialize_module(module_bytes, ir.Context.current)
  symtab = ir.SymbolTable(module.operation)
  original = symtab["main"]
  fixed = platform_index is not None and nr_platform_args == 1
  if not fixed and _already_refined(
      module, original.type.inputs[nr_platform_args:], in_shapes):
    return module
  ir.SymbolTable.set_symbol_name(original, ORIGINAL_MAIN)
  ir.SymbolTable.set_visibility(original, "private")
  original_type = original.type
  inputs = [] if fixed else list(original_type.inputs[:nr_platform_args])
  for t, s in zip(original_type.inputs[nr_platform_args:], in_shapes):
    inputs.append(ir.RankedTensorType.get(
        s, ir.RankedTensorType(t).element_type))
  with ir.InsertionPoint.at_block_begin(module.body):
    main = func_dialect.FuncOp("main", (inputs, original_type.results))
  main.attributes["sym_visibility"] = ir.StringAttr.get("public")
  entry = main.add_entry_block()
  with ir.InsertionPoint(entry):
    given = list(entry.arguments)
    if fixed:
      given = [_platform_constant(original_type.inputs[0], platform_index),
               *given]
    args = [a if a.type == t else hlo.convert(t, a)
            for a, t in zip(given, original_type.inputs)]
    call = func_dialect.CallOp(
        original_type.results, ir.FlatSymbolRefAttr.get(ORIGINAL_MAIN), args)
    func_dialect.ReturnOp(call.results)
  module = compat.refine_polymorphic_shapes(module)
  if fixed:
    compat.inline_calls(module)
  return module


def _platform_constant(t: ir.Type, index: int) -> ir.Value:
  """The platform index, a constant of the platform argument's type."""
  element = ir.RankedTensorType(t).element_type
  if not _ir.isa(element, ir.IntegerType):
    raise ValueError(f"a platform argument of type {t}")
  width = ir.IntegerType(element).width
  return hlo.constant(ir.DenseElementsAttr.get(
      np.array(index, dtype=f"int{width}")))


def uses_shape_polymorphism(module: ir.Module) -> bool:
  """The module's ``jax.uses_shape_polymorphism`` attribute (False if none)."""
  attrs = module.operation.attributes
  return ("jax.uses_shape_polymorphism" in attrs and ir.BoolAttr(
      attrs["jax.uses_shape_polymorphism"]).value)


def _already_refined(module: ir.Module, arg_types: Sequence[ir.Type],
                     in_shapes: Sequence[tuple[int, ...]]) -> bool:
  """Whether ``module`` is what refinement would make of it.

  It is, as ``Exported.call``'s lowering takes it, when it uses no shape
  polymorphism (its ``jax.uses_shape_polymorphism`` attribute) and its main
  takes arguments of ``in_shapes`` already.
  """
  if uses_shape_polymorphism(module):
    return False
  if len(arg_types) != len(in_shapes):
    return False
  return all(_ir.isa(t, ir.RankedTensorType)
             and ir.RankedTensorType(t).has_static_shape
             and tuple(ir.RankedTensorType(t).shape) == tuple(s)
             for t, s in zip(arg_types, in_shapes))


def refined_module_text(module_bytes: bytes, nr_platform_args: int,
                        in_shapes: Sequence[tuple[int, ...]],
                        platform_index: int | None = None) -> str | bytes:
  """:func:`refined_module`, as StableHLO text (bytecode where its text is
  not UTF-8: a binary attribute).

  Raises:
    ValueError: shape refinement fails.
  """
  with mlir.make_ir_context() as context, ir.Location.unknown(context):
    module = refined_module(module_bytes, nr_platform_args, in_shapes,
                            platform_index)
    try:
      return str(module)
    except (RuntimeError, UnicodeDecodeError):
      return mlir.module_to_bytecode(module)
