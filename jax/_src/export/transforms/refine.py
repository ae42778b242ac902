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
"""A serialized StableHLO module's shapes: refined, named, computed.

``jax.export`` serializes a module whose argument shapes may be symbolic
(``b, 4``). :class:`.function.ModuleFunction`, the one owner of a module as
a JAX function, reads modules with static shapes: :func:`refined_module`
gives the module a new ``main`` that takes the arguments with static
shapes (and, for a module of several platforms, the index of one as a
constant) and calls the original, and refines every shape in it
(``mlir.refine_polymorphic_shapes``); a module without shape polymorphism
whose main takes those shapes is taken as it is. For a module that comes
without its ``jax.export.Exported`` (a jax2tf ``XlaCallModule`` op),
:func:`input_shape_specs` names its dynamic argument dimensions after its
dimension variables and :func:`refined_result_shapes` computes its result
shapes for static argument shapes.

Modules count their platform arguments first, as
:func:`.platforms.nr_platform_args` says.
"""

from __future__ import annotations

from collections.abc import Sequence

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
  _call_with_static_shapes(module, original, nr_platform_args, in_shapes,
                           platform_index if fixed else None)
  module = compat.refine_polymorphic_shapes(module)
  if fixed:
    compat.inline_calls(module)
  return module


def _call_with_static_shapes(module: ir.Module, original: func_dialect.FuncOp,
                             nr_platform_args: int,
                             in_shapes: Sequence[tuple[int, ...]],
                             platform_index: int | None) -> None:
  """Gives ``module`` a main for static shapes that calls its original.

  ``original`` (the module's main) becomes the private
  :data:`ORIGINAL_MAIN`; the new public main takes the arguments with
  ``in_shapes`` (and first the platform arguments, unless
  ``platform_index`` is given: then it passes that index as a constant),
  converts them to the original's types and calls it.
  """
  ir.SymbolTable.set_symbol_name(original, ORIGINAL_MAIN)
  ir.SymbolTable.set_visibility(original, "private")
  original_type = original.type
  fixed = platform_index is not None
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


def _platform_constant(t: ir.Type, index: int) -> ir.Value:
  """The platform index, a constant of the platform argument's type."""
  element = ir.RankedTensorType(t).element_type
  if not compat.isa(element, ir.IntegerType):
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
  return all(compat.isa(t, ir.RankedTensorType)
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


def _owner(v: ir.Value) -> ir.Operation:
  owner = v.owner
  return getattr(owner, "operation", owner)


# A dynamic dimension of an argument: (argument, dimension), the argument
# counted after the platform arguments.
_Dimension = tuple[int, int]


def input_shape_specs(module_bytes: bytes, nr_platform_args: int
                      ) -> tuple[list[str], bool]:
  """Shape specs (such as "b, 4") of the module's arguments.

  Dynamic dimensions are named after the module's dimension variables: the
  ``jax.global_constant`` arguments of its wrapped main, computed as
  ``get_dimension_size(arg, dim)``, and the dimensions its shape assertions
  compare with them.
  """
  with mlir.make_ir_context() as context:
    module = compat.deserialize_module(module_bytes, context)
    uses_poly = uses_shape_polymorphism(module)
    symtab = ir.SymbolTable(module.operation)
    main = symtab["main"]
    ops = [o.operation for o in main.regions[0].blocks[0].operations]
    names, variable_of = _dimension_variables(ops, symtab, nr_platform_args)
    _name_asserted_dimensions(ops, names, variable_of, nr_platform_args)
    specs = _shape_specs(main, names, nr_platform_args)
  return specs, uses_poly


def _peeled(v: ir.Value) -> ir.Value:
  """``v`` without the ``convert`` and ``reshape`` ops that compute it."""
  while not isinstance(v.owner, ir.Block):
    o = _owner(v)
    if o.name not in ("stablehlo.convert", "stablehlo.reshape"):
      break
    v = o.operands[0]
  return v


def _dimension_of(v: ir.Value, nr_platform_args: int) -> _Dimension | None:
  """The argument dimension ``v`` is the size of, if it is one."""
  v = _peeled(v)
  if isinstance(v.owner, ir.Block):
    return None
  o = _owner(v)
  if o.name != "stablehlo.get_dimension_size":
    return None
  src = o.operands[0]
  if not isinstance(src.owner, ir.Block):
    return None
  return (ir.BlockArgument(src).arg_number - nr_platform_args,
          ir.IntegerAttr(o.attributes["dimension"]).value)


def _key(v: ir.Value) -> str:
  """A name of ``v`` (peeled) that two uses of the same value share."""
  v = _peeled(v)
  return (f"arg{ir.BlockArgument(v).arg_number}"
          if isinstance(v.owner, ir.Block) else v.get_name())


def _dimension_variables(ops: Sequence[ir.Operation],
                         symtab: ir.SymbolTable, nr_platform_args: int
                         ) -> tuple[dict[_Dimension, str], dict[str, str]]:
  """The dimension variables main passes to the functions it calls.

  Returns:
    The name of each argument dimension passed as a variable, and the
    variable each value passed (by :func:`_key`) is.
  """
  names: dict[_Dimension, str] = {}
  variable_of: dict[str, str] = {}
  for op in ops:
    if op.name != "func.call":
      continue
    callee = symtab[ir.FlatSymbolRefAttr(op.attributes["callee"]).value]
    for i, a in enumerate(callee.arg_attrs):
      a = ir.DictAttr(a)
      if "jax.global_constant" not in a:
        continue
      name = ir.StringAttr(a["jax.global_constant"]).value
      variable_of[_key(op.operands[i])] = name
      if (d := _dimension_of(op.operands[i], nr_platform_args)) is not None:
        names.setdefault(d, name)
  return names, variable_of


def _name_asserted_dimensions(ops: Sequence[ir.Operation],
                              names: dict[_Dimension, str],
                              variable_of: dict[str, str],
                              nr_platform_args: int) -> None:
  """Names the dimensions a shape assertion compares with a variable."""
  for op in ops:
    if (op.name != "stablehlo.compare"
        or "EQ" not in str(op.attributes["comparison_direction"])):
      continue
    a, b = op.operands
    for x, y in ((a, b), (b, a)):
      if ((d := _dimension_of(x, nr_platform_args)) is not None
          and _key(y) in variable_of):
        names.setdefault(d, variable_of[_key(y)])


def _shape_specs(main: func_dialect.FuncOp, names: dict[_Dimension, str],
                 nr_platform_args: int) -> list[str]:
  """The shape spec of each argument; unnamed dimensions ``_d{k}_{d}``."""
  specs = []
  for k, t in enumerate(main.type.inputs[nr_platform_args:]):
    t = ir.RankedTensorType(t)
    specs.append(", ".join(
        names.get((k, d), f"_d{k}_{d}") if t.is_dynamic_dim(d)
        else str(t.get_dim_size(d)) for d in range(t.rank)))
  return specs


def refined_result_shapes(module_bytes: bytes, nr_platform_args: int,
                          in_shapes: Sequence[tuple[int, ...]]
                          ) -> list[tuple[int, ...]]:
  """Result shapes of a shape-polymorphic module for static input shapes.

  Raises:
    ValueError: shape refinement fails, or leaves a result shape dynamic.
  """
  with mlir.make_ir_context() as context, ir.Location.unknown(context):
    refined = refined_module(module_bytes, nr_platform_args,
                                            in_shapes)
  with refined.context:
    return list(_static_result_shapes(
        ir.SymbolTable(refined.operation)["main"]))


def _static_result_shapes(main: func_dialect.FuncOp
                          ) -> tuple[tuple[int, ...], ...]:
  """The result shapes of a function.

  Raises:
    ValueError: a result's shape is not static.
  """
  found = []
  for t in main.type.results:
    t = ir.RankedTensorType(t)
    if not t.has_static_shape:
      raise ValueError(f"the refined module returns the dynamic type {t}")
    found.append(tuple(t.shape))
  return tuple(found)


def serialized_uses_shape_polymorphism(module_bytes: bytes) -> bool:
  """:func:`uses_shape_polymorphism` of a serialized module."""
  with mlir.make_ir_context() as context:
    return uses_shape_polymorphism(
        compat.deserialize_module(module_bytes, context))
