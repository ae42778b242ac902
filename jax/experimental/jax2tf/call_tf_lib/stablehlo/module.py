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
"""Reading the StableHLO module of a jax2tf ``XlaCallModule`` op.

:func:`input_shape_specs` names the module's dynamic argument dimensions
after its dimension variables, :func:`refined_result_shapes` computes its
result shapes for static argument shapes (by shape refinement, with
``jax._src.export.stablehlo_to_jax.module``), and
:func:`uses_shape_polymorphism` reads its flag.
"""

from __future__ import annotations

from collections.abc import Sequence

from jax._src.export.stablehlo_to_jax import module as refined_module
from jax._src.interpreters import mlir
from jax._src.lib.mlir.dialects import func as func_dialect
from jax._src.lib.mlir import ir
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib.tf_function import shapes


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
    uses_poly = module_uses_shape_polymorphism(module)
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
    refined = refined_module.refined_module(module_bytes, nr_platform_args,
                                            in_shapes)
  with refined.context:
    return list(shapes.static_result_shapes(
        ir.SymbolTable(refined.operation)["main"]))


def module_uses_shape_polymorphism(module: ir.Module) -> bool:
  """The module's ``jax.uses_shape_polymorphism`` attribute."""
  return refined_module.uses_shape_polymorphism(module)


def uses_shape_polymorphism(module_bytes: bytes) -> bool:
  """:func:`module_uses_shape_polymorphism` of a serialized module."""
  with mlir.make_ir_context() as context:
    return module_uses_shape_polymorphism(
        compat.deserialize_module(module_bytes, context))


def readable_by_tensorflow(module_bytes: bytes) -> bytes:
  """A serialized module that TensorFlow's ``XlaCallModule`` can read.

  ``jax.export`` serializes at the StableHLO version of four weeks ago, which
  can be newer than TensorFlow reads (StableHLO 1.18 against TensorFlow
  2.21's 1.13.7: every ``custom_call`` becomes ``vhlo.custom_call_v2``). A
  module TF cannot read is serialized again at TF's own version (or jax's,
  if older); one it reads is returned unchanged.

  Args:
    module_bytes: a portable artifact, as ``Exported.mlir_module_serialized``.

  Returns:
    The same module, serialized at a version TF reads where needed.
  """
  tf_version = compat.tensorflow_stablehlo_version()
  if tf_version is None or compat.tensorflow_reads(module_bytes) is not False:
    return module_bytes
  target = compat.smaller_stablehlo_version(
      compat.stablehlo_version_jax_serializes(), tf_version)
  with mlir.make_ir_context() as context:
    module = compat.deserialize_module(module_bytes, context)
    return compat.serialize_module(module, target)
