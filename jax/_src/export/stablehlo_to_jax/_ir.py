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
"""A Python copy of a StableHLO module, independent of any MLIR context.

:func:`read_module` walks a module with jaxlib's MLIR bindings once and
copies it into frozen Python objects: :class:`Func` (a function: its body,
argument and result types), :class:`Block` (a single-block region: argument
value ids, operations, the values its terminator returns) and :class:`Op`
(an operation: its name, operand and result value ids, result types,
attributes converted to Python values, regions). Values are small integers,
unique within the module. Types are :class:`TensorType`, :class:`TupleType`
or :class:`TokenType`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
import dataclasses
import re
from typing import Union

from jax._src.export.stablehlo_to_jax import compat
from jax._src.interpreters import mlir
from jax._src.lib.mlir.dialects import hlo
from jax._src.lib.mlir import ir
import ml_dtypes
import numpy as np


@dataclasses.dataclass(frozen=True)
class TensorType:
  """A ranked tensor type with a static shape, or bounded dynamic dimensions.

  Attributes:
    shape: the sizes; of a dynamic dimension, its bound.
    dtype: the element type.
    dynamic: which dimensions are dynamic (bounded: ``tensor<?x3xf32,
      #stablehlo.bounds<6, ?>>``, which tf2xla makes of ``tf.where``,
      ``tf.unique``, ...); empty for a static shape.
  """
  shape: tuple[int, ...]
  dtype: np.dtype
  dynamic: tuple[bool, ...] = ()


@dataclasses.dataclass(frozen=True)
class TupleType:
  """A tuple of types."""
  elements: tuple[Type, ...]


@dataclasses.dataclass(frozen=True)
class TokenType:
  """The token type."""


# The element types of 64 bits, which JAX keeps only with jax_enable_x64.
WIDE = frozenset(np.dtype(d) for d in (np.int64, np.uint64, np.float64,
                                       np.complex128))

# The type of a value: what :func:`read_type` reads.
Type = Union[TensorType, TupleType, TokenType]
# The value of an attribute: what :func:`read_attr` reads.
AttrValue = Union[np.ndarray, bool, int, float, str, bytes,
                  tuple["AttrValue", ...], dict[str, "AttrValue"]]


@dataclasses.dataclass(frozen=True, eq=False)
class Op:
  """An operation: values are module-wide integer ids."""
  name: str
  operands: tuple[int, ...]
  operand_types: tuple[Type, ...]
  results: tuple[int, ...]
  result_types: tuple[Type, ...]
  attrs: dict[str, AttrValue]
  regions: tuple[Block, ...]
  # The operation's assembly, for error messages (shortened); empty unless
  # the module was read with_text (printing every op costs more than
  # reading it).
  text: str
  # The name its location gives (tf2xla: the TF node it lowers), or "".
  location: str = ""


@dataclasses.dataclass(frozen=True, eq=False)
class Block:
  """The single block of a region or function body."""
  args: tuple[int, ...]
  arg_types: tuple[Type, ...]
  ops: tuple[Op, ...]
  returns: tuple[int, ...]


@dataclasses.dataclass(frozen=True, eq=False)
class Func:
  """A function of the module."""
  name: str
  body: Block
  result_types: tuple[Type, ...]


# The attribute of a custom call's Op that holds its other attributes as
# text: ((name, text), ...).
ATTRIBUTE_TEXTS = "_attribute_texts"


def _attribute_text(a: ir.Attribute) -> str | None:
  """An attribute as MLIR prints it; None where that is not UTF-8 text (a
  binary ``backend_config``)."""
  try:
    return str(a)
  except (RuntimeError, UnicodeDecodeError):
    return None


class NoRule(Exception):
  """An op has no exact JAX expression; the message says why."""


class UnreadableModule(ValueError):
  """The module has a construct this reader does not handle."""


_DTYPES = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
           np.uint16, np.uint32, np.uint64, np.float16, ml_dtypes.bfloat16,
           np.float32, np.float64, np.complex64, np.complex128)
# ml_dtypes' narrow types, where this ml_dtypes has them (older ones lack
# some).
_NARROW_DTYPES = ("int2", "int4", "uint2", "uint4", "float4_e2m1fn",
                  "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
                  "float8_e4m3", "float8_e4m3fn", "float8_e4m3fnuz",
                  "float8_e4m3b11fnuz", "float8_e5m2", "float8_e5m2fnuz",
                  "float8_e8m0fnu")


# Element types XLA:CPU cannot compute with: it aborts the process on most
# ops of them (LLVM cannot load their 6 bits). An op of them has no rule.
_UNCOMPUTABLE = frozenset(np.dtype(getattr(ml_dtypes, n)) for n in (
    "float6_e2m3fn", "float6_e3m2fn") if hasattr(ml_dtypes, n))


_TWO_BIT = frozenset(np.dtype(getattr(ml_dtypes, n)) for n in (
    "int2", "uint2") if hasattr(ml_dtypes, n))
# Ops XLA:CPU fails to compile, or aborts the process on, with 2-bit
# integers (measured): a concatenation, a sort, a product, a reduction of
# several operands.
_NOT_OF_TWO_BIT = ("stablehlo.concatenate", "stablehlo.sort",
                   "stablehlo.dot_general", "stablehlo.dot",
                   "stablehlo.reduce")


def bit_width(dtype: np.dtype) -> int:
  """The bits of an element of `dtype` (4 of int4, 6 of float6_e2m3fn)."""
  for info in (ml_dtypes.iinfo, ml_dtypes.finfo):
    try:
      return int(info(dtype).bits)
    except (ValueError, TypeError):
      pass
  return 8 * dtype.itemsize


def _dtypes_of(t: Type) -> Iterator[np.dtype]:
  if isinstance(t, TensorType):
    yield t.dtype
  elif isinstance(t, TupleType):
    for e in t.elements:
      yield from _dtypes_of(e)


def uncomputable_type(op: Op) -> str | None:
  """Why XLA cannot compute `op` of its types, or None."""
  types = {d for t in (*op.operand_types, *op.result_types)
           for d in _dtypes_of(t)}
  if op.name == "func.call":
    return None  # (its callee's ops are checked)
  six = sorted(d.name for d in types & _UNCOMPUTABLE)
  if six:
    return (f"an operand or result of type {six[0]}, which XLA:CPU cannot "
            "compute with (it aborts the process)")
  two = sorted(d.name for d in types & _TWO_BIT)
  if two and op.name in _NOT_OF_TWO_BIT and (
      op.name != "stablehlo.reduce" or len(op.operands) > 2):
    return (f"{op.name.removeprefix('stablehlo.')} of {two[0]}, which "
            "XLA:CPU fails to compile or aborts the process on")
  if op.name == "stablehlo.rng_bit_generator" and any(
      bit_width(t.dtype) < 8 for t in op.result_types[1:]
      if isinstance(t, TensorType)):
    return ("random bits of fewer than 8 bits (XLA:CPU fails to run it, or "
            "JAX to read them)")
  return None


def _dtype_table() -> dict[str, np.dtype]:
  """Each element type's MLIR name, and its NumPy type."""
  table = {}
  narrow = [getattr(ml_dtypes, n) for n in _NARROW_DTYPES
            if hasattr(ml_dtypes, n)]
  for d in (*_DTYPES, *narrow):
    try:
      table[str(mlir.dtype_to_ir_type(np.dtype(d)))] = np.dtype(d)
    except Exception:  # pylint: disable=broad-except
      pass
  return table


isa = compat.isa


def read_type(t: ir.Type, table: dict[str, np.dtype]) -> Type:
  """The Python type of an MLIR type."""
  if isa(t, ir.RankedTensorType):
    t = ir.RankedTensorType(t)
    elt = str(t.element_type)
    if elt not in table:
      raise UnreadableModule(f"element type {elt}")
    if t.has_static_shape:
      return TensorType(tuple(t.shape), table[elt])
    bounds = _BOUNDS.search(str(t))
    dynamic = tuple(t.is_dynamic_dim(i) for i in range(t.rank))
    if bounds is None:
      raise UnreadableModule(f"dynamic shape without bounds {t}")
    bound = [b.strip() for b in bounds.group(1).split(",")]
    if len(bound) != t.rank or any(
        d and not b.isdigit() for d, b in zip(dynamic, bound)):
      raise UnreadableModule(f"dynamic shape without bounds {t}")
    shape = tuple(int(b) if d else s
                  for d, b, s in zip(dynamic, bound, t.shape))
    return TensorType(shape, table[elt], dynamic)
  if isa(t, ir.TupleType):
    t = ir.TupleType(t)
    return TupleType(tuple(read_type(t.get_type(i), table)
                           for i in range(t.num_types)))
  if isa(t, hlo.TokenType):
    return TokenType()
  future = _FUTURE.fullmatch(str(t))
  if future:  # an async op's values: a tuple of them
    return TupleType(tuple(read_type(ir.Type.parse(e.strip()), table)
                           for e in _split_types(future.group(1))))
  raise UnreadableModule(f"type {t}")


_FUTURE = re.compile(r"!stablehlo\.future<(.*)>")


def _split_types(text: str) -> list[str]:
  """Comma-separated types, split where no bracket is open."""
  parts, depth, start = [], 0, 0
  for i, ch in enumerate(text):
    if ch in "<([":
      depth += 1
    elif ch in ">)]":
      depth -= 1
    elif ch == "," and depth == 0:
      parts.append(text[start:i])
      start = i + 1
  return parts + [text[start:]]


_BOUNDS = re.compile(r"#stablehlo\.bounds<([^>]*)>")
_NUMBER = re.compile(
    r"0x[0-9A-Fa-f]+|true|false|[-+]?inf|nan|[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


def _is_real_float(dtype: np.dtype) -> bool:
  """Whether `dtype` is a real floating type (ml_dtypes' ones included)."""
  if dtype.kind == "f":
    return True
  try:
    ml_dtypes.finfo(dtype)
  except ValueError:
    return False
  return dtype.kind != "c"


def _scalar(tok: str, dtype: np.dtype) -> np.ndarray | bool:
  """An element of a dense literal as MLIR prints it: a number, ``true`` or
  ``false``, or the element's bits in hexadecimal.

  MLIR prints a float in decimal only where the decimal reads back as the
  same value of its type; that value, read as a float64, converts to the
  type exactly.
  """
  if tok.startswith("0x"):
    bits = np.array(int(tok, 16), f"u{dtype.itemsize}")
    return bits.view(dtype)
  if tok in ("true", "false"):
    return tok == "true"
  if _is_real_float(dtype):
    return np.array(float(tok)).astype(dtype)
  return np.array(int(tok)).astype(dtype)


def _dense_from_text(text: str, ty: TensorType) -> np.ndarray:
  """A dense elements attribute from its assembly (complex, bfloat16, ...)."""
  body = text[text.index("dense<") + len("dense<"):]
  size = int(np.prod(ty.shape, dtype=np.int64))
  if body.startswith('"0x'):
    raw = bytes.fromhex(body[3:body.index('"', 3)])
    flat = np.frombuffer(raw, ty.dtype)
    if flat.size == 1:
      return np.full(ty.shape, flat[0], ty.dtype)
    return flat.reshape(ty.shape).copy()
  body = body[:body.rindex(">")]
  if ":" in body:  # "dense<...> : tensor<...>" from an op's assembly
    body = body[:body.rindex(">", 0, body.index(":"))]
  tokens = _NUMBER.findall(body)
  is_complex = np.issubdtype(ty.dtype, np.complexfloating)
  part = (np.dtype(np.float32) if ty.dtype == np.complex64 else
          np.dtype(np.float64) if ty.dtype == np.complex128 else ty.dtype)

  vals = np.array([_scalar(t, part) for t in tokens], part)
  if is_complex:
    # Part by part: re + 1j * im would make the real part of (0, inf) NaN.
    pairs = vals.reshape(-1, 2)
    vals = np.empty(len(pairs), ty.dtype)
    vals.real, vals.imag = pairs[:, 0], pairs[:, 1]
  if vals.size == 1 and size != 1:
    return np.full(ty.shape, vals[0], ty.dtype)
  if vals.size != size:
    raise UnreadableModule(f"dense attribute {text[:80]}")
  return vals.reshape(ty.shape)


def _dense(attr: ir.DenseElementsAttr, ty: TensorType) -> np.ndarray:
  try:
    arr = np.array(attr)
  except Exception:  # pylint: disable=broad-except
    return _dense_from_text(str(attr), ty)
  if arr.dtype != ty.dtype:
    return _dense_from_text(str(attr), ty)
  if arr.shape != ty.shape:
    arr = np.broadcast_to(arr.reshape(()) if arr.size == 1 else arr,
                          ty.shape)
  return np.array(arr)


_HLO_ENUMS = ("ComparisonDirectionAttr", "ComparisonTypeAttr", "PrecisionAttr",
              "FftTypeAttr", "TransposeAttr", "RngAlgorithmAttr",
              "RngDistributionAttr")


def read_attr(a: ir.Attribute, table: dict[str, np.dtype]) -> AttrValue:
  """A Python value for an attribute (numpy arrays for dense elements)."""
  if isa(a, ir.DenseElementsAttr):
    a = ir.DenseElementsAttr(a)
    # (Layout attributes have `index` elements.)
    return _dense(a, read_type(a.type, {**table, "index": np.dtype(np.int64)}))
  for cls in (ir.DenseI64ArrayAttr, ir.DenseI32ArrayAttr,
              ir.DenseBoolArrayAttr):
    if isa(a, cls):
      return tuple(cls(a))
  if isa(a, ir.StringAttr):
    try:
      return ir.StringAttr(a).value
    except (RuntimeError, UnicodeDecodeError):  # (bytes, not UTF-8 text)
      return bytes(ir.StringAttr(a).value_bytes)
  for cls in (ir.BoolAttr, ir.IntegerAttr, ir.FloatAttr,
              ir.FlatSymbolRefAttr):
    if isa(a, cls):
      return cls(a).value
  if isa(a, ir.ArrayAttr):
    return tuple(read_attr(x, table) for x in ir.ArrayAttr(a))
  if isa(a, ir.DictAttr):
    d = ir.DictAttr(a)
    return {d[i].name: read_attr(d[i].attr, table) for i in range(len(d))}
  for name in _HLO_ENUMS:
    cls = getattr(hlo, name, None)
    if cls is not None and isa(a, cls):
      return cls(a).value
  for cls, read in _DIMENSION_NUMBERS:
    if isa(a, cls):
      return read(cls(a))
  if isa(a, ir.TypeAttr):
    return str(ir.TypeAttr(a).value)
  return str(a)  # kept as text: a rule that needs it says it is unsupported


def _fields(*names: str) -> Callable[[ir.Attribute], dict[str, AttrValue]]:
  """A reader of an attribute's fields ``names``: ints, or tuples of ints."""
  def read(a: ir.Attribute) -> dict[str, AttrValue]:
    values = {name: getattr(a, name) for name in names}
    return {name: v if isinstance(v, int) else tuple(v)
            for name, v in values.items()}
  return read


# The dimension numbers attributes, each with the reader of its fields.
_DIMENSION_NUMBERS: tuple[tuple[type[ir.Attribute],
                                Callable[[ir.Attribute],
                                         dict[str, AttrValue]]], ...] = (
    (hlo.GatherDimensionNumbers,
     _fields("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
             "start_indices_batching_dims", "start_index_map",
             "index_vector_dim")),
    (hlo.ScatterDimensionNumbers,
     _fields("update_window_dims", "inserted_window_dims",
             "input_batching_dims", "scatter_indices_batching_dims",
             "scattered_dims_to_operand_dims", "index_vector_dim")),
    (hlo.ConvDimensionNumbers,
     _fields("input_batch_dimension", "input_feature_dimension",
             "input_spatial_dimensions", "kernel_input_feature_dimension",
             "kernel_output_feature_dimension", "kernel_spatial_dimensions",
             "output_batch_dimension", "output_feature_dimension",
             "output_spatial_dimensions")),
    (hlo.DotDimensionNumbers,
     _fields("lhs_batching_dimensions", "rhs_batching_dimensions",
             "lhs_contracting_dimensions", "rhs_contracting_dimensions")),
)


_COMPLEX = re.compile(r"tensor<(?:[\d?]+x)*complex<")
_LOCATION_NAME = re.compile(r'^loc\((?:fused\[)?"((?:[^"\\]|\\.)*)"')


def location_name(location: ir.Location) -> str:
  """The name a location gives: ``"Relu"`` of ``loc(fused["Relu", ...])``.

  tf2xla names each op's location after the TF node it lowers (a name
  location, or the first of a fused one); other locations give "".
  """
  match = _LOCATION_NAME.match(str(location))
  return match.group(1) if match else ""


class _Reader:
  """Copies a module's functions, numbering values as it goes."""

  def __init__(self, with_text: bool = True):
    self.table = _dtype_table()
    self.ids: dict[ir.Value, int] = {}
    self.with_text = with_text
    # MLIR uniques a context's types: one read of each (a module has a few
    # dozen), and each value's type kept by its number for its uses.
    self._types: dict[ir.Type, Type] = {}
    self._value_types: dict[int, Type] = {}

  def value(self, v: ir.Value) -> int:
    key = v
    if key not in self.ids:
      self.ids[key] = len(self.ids)
    return self.ids[key]

  def type_of(self, t: ir.Type) -> Type:
    """:func:`read_type` of ``t``, once per type."""
    found = self._types.get(t)
    if found is None:
      found = self._types[t] = read_type(t, self.table)
    return found

  def defined(self, v: ir.Value) -> tuple[int, Type]:
    """A value an op or block defines: its number, and its type."""
    i = self.value(v)
    ty = self._value_types[i] = self.type_of(v.type)
    return i, ty

  def used(self, v: ir.Value) -> tuple[int, Type]:
    """A value an op uses: its number, and its type (read at its
    definition, which dominates the use)."""
    i = self.value(v)
    ty = self._value_types.get(i)
    if ty is None:
      ty = self._value_types[i] = self.type_of(v.type)
    return i, ty

  def block(self, blk: ir.Block) -> Block:
    args, arg_types = _pairs(self.defined(a) for a in blk.arguments)
    ops = []
    returns: tuple[int, ...] = ()
    for op in blk.operations:
      name = op.operation.name
      if name in ("stablehlo.return", "func.return", "mhlo.return",
                  "sdy.return"):
        returns = tuple(self.value(v) for v in op.operands)
        continue
      ops.append(self.op(op))
    return Block(args, arg_types, tuple(ops), returns)

  def op(self, op: ir.OpView | ir.Operation) -> Op:
    operation = op.operation
    attrs = {}
    if (operation.name == "stablehlo.constant"
        and _COMPLEX.match(str(operation.results[0].type))):
      # Complex dense elements: the bindings cannot give them (newer ones
      # raise TypeError, jaxlib 0.6's abort the process), read from text.
      return self._op(operation, self._attrs_from_text(operation))
    try:
      names = [n if isinstance(n, str) else n.name
               for n in operation.attributes]
      for n in names:
        attrs[n] = read_attr(operation.attributes[n], self.table)
      if operation.name == "stablehlo.custom_call":
        # Its attributes as MLIR prints them, for a rule that writes the
        # call again (._custom_calls).
        attrs[ATTRIBUTE_TEXTS] = tuple(sorted(
            (n, _attribute_text(operation.attributes[n])) for n in names))
    except TypeError:
      # Other attributes the bindings cannot give: a constant's are read
      # from the operation's assembly.
      attrs = self._attrs_from_text(operation)
    return self._op(operation, attrs)

  def _op(self, operation: ir.Operation, attrs: dict[str, AttrValue]) -> Op:
    operands, operand_types = _pairs(self.used(v) for v in operation.operands)
    results, result_types = _pairs(self.defined(v)
                                   for v in operation.results)
    regions = tuple(self.block(r.blocks[0]) for r in operation.regions
                    if len(r.blocks))
    if any(len(r.blocks) > 1 for r in operation.regions):
      raise UnreadableModule(f"a region with several blocks in {operation.name}")
    text = _asm(operation) if self.with_text else ""
    text = text if len(text) < 300 else text[:300] + "..."
    return Op(operation.name, operands, operand_types, results, result_types,
              attrs, regions, text, location_name(operation.location))

  def _attrs_from_text(self, operation: ir.Operation
                       ) -> dict[str, AttrValue]:
    if operation.name != "stablehlo.constant":
      raise UnreadableModule(f"attributes of {operation.name}")
    ty = self.type_of(operation.results[0].type)
    return {"value": _dense_from_text(operation.get_asm(), ty)}


def _pairs(pairs: Iterable[tuple[int, Type]]
           ) -> tuple[tuple[int, ...], tuple[Type, ...]]:
  """Numbers and types, as two tuples."""
  numbers, types = [], []
  for i, ty in pairs:
    numbers.append(i)
    types.append(ty)
  return tuple(numbers), tuple(types)


def _asm(operation: ir.Operation) -> str:
  """The operation's assembly, for messages."""
  try:
    return operation.get_asm(large_elements_limit=8)
  except (RuntimeError, UnicodeDecodeError):  # (a binary attribute)
    return f"{operation.name} (an operation whose text is not UTF-8)"


def attribute_text(make: Callable[[], ir.Attribute]) -> str:
  """The text of the attribute `make` builds (in an MLIR context of its
  own), as :func:`read_attr` keeps attributes it has no reader for."""
  with mlir.make_ir_context():
    return str(make())


def free_values(block: Block) -> frozenset[int]:
  """The values `block` (or a region in it) reads but does not define."""
  defined = set(block.args)
  read: set[int] = set()
  for op in block.ops:
    read.update(op.operands)
    for region in op.regions:
      read.update(free_values(region))
    defined.update(op.results)
  read.update(block.returns)
  return frozenset(read - defined)


def without_identity_converts(funcs: dict[str, Func]) -> dict[str, Func]:
  """The functions with each ``convert`` to its own operand's type removed.

  Such a ``convert`` is the identity (XLA's simplifier removes it too);
  tf2xla puts one around the operands and results of every reduction. Its
  uses read its operand instead, so that a constant stays a constant: the
  initial value of a sum reaches ``lax.reduce`` as the NumPy zero it is,
  which lax then expresses as ``reduce_sum``, a primitive JAX can transpose
  (a ``reduce`` with a traced initial value it cannot).

  Args:
    funcs: the functions of a module, as :func:`read_module` gives them.

  Returns:
    The same functions, rebuilt where a ``convert`` was removed.
  """
  alias: dict[int, int] = {}

  def find(v: int) -> int:
    while v in alias:
      v = alias[v]
    return v

  def block(b: Block) -> Block:
    ops = []
    for op in b.ops:
      if (op.name == "stablehlo.convert" and len(op.operands) == 1
          and op.operand_types == op.result_types):
        alias[op.results[0]] = find(op.operands[0])
        continue
      operands = tuple(find(v) for v in op.operands)
      regions = tuple(block(r) for r in op.regions)
      if operands != op.operands or any(
          r is not s for r, s in zip(regions, op.regions)):
        op = dataclasses.replace(op, operands=operands, regions=regions)
      ops.append(op)
    returns = tuple(find(v) for v in b.returns)
    if len(ops) == len(b.ops) and returns == b.returns and all(
        o is p for o, p in zip(ops, b.ops)):
      return b
    return dataclasses.replace(b, ops=tuple(ops), returns=returns)

  return {name: dataclasses.replace(f, body=block(f.body))
          for name, f in funcs.items()}


_UNREGISTERED = re.compile(r'`!"(\w+)"<"(.*)">` type created with '
                           "unregistered dialect")


def _parsed(module: str | bytes) -> ir.Module:
  """The module parsed by MLIR; what MLIR cannot read, an UnreadableModule.

  JAX's MLIR context has no ``quant`` dialect: a module of quantized types
  (``!quant.uniform<i8:f32, ...>``) is one JAX cannot read.
  """
  try:
    return ir.Module.parse(module)
  except getattr(ir, "MLIRError", ValueError) as e:
    unregistered = _UNREGISTERED.search(str(e))
    if unregistered:
      dialect, body = unregistered.groups()
      raise UnreadableModule(
          f"element type !{dialect}.{body}: JAX has no dtype for it (no "
          f"{dialect!r} dialect)") from e
    lines = [ln.strip() for ln in str(e).splitlines() if "error" in ln]
    raise UnreadableModule(
        "MLIR cannot parse it: " + (lines[0] if lines else str(e))) from e


def read_module(module: str | bytes, *, with_text: bool = True
                ) -> tuple[dict[str, Func], str]:
  """Copies the functions of a StableHLO module (text or bytecode).

  Args:
    module: the module.
    with_text: whether each :class:`Op` gets its assembly (``Op.text``).

  Returns:
    The functions by name, and the name of the entry function ("main").
  """
  with mlir.make_ir_context():
    m = _parsed(module)
    reader = _Reader(with_text)
    funcs = {}
    for f in m.body.operations:
      if f.operation.name != "func.func":
        continue
      name = ir.StringAttr(f.attributes["sym_name"]).value
      ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
      body = reader.block(f.regions[0].blocks[0])
      results = tuple(reader.type_of(t) for t in ftype.results)
      funcs[name] = Func(name, body, results)
  if "main" not in funcs:
    raise UnreadableModule("no function named main")
  return funcs, "main"
