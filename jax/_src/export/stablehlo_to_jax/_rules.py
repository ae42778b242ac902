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
"""One rule per StableHLO op: the op as ``jax.lax`` operations.

Each rule is registered right above its definition (``@rule(name)``, see
:mod:`._registry`), with the padded form of the op where it may have values
of a bounded dynamic shape (:mod:`._dynamic`).

A rule ``rule(op, compiler)`` runs once, when the module is parsed: it reads
the op's attributes and regions and returns a step ``step(env, *operands)``
that computes the op's results with ``lax`` operations (``env`` holds the
values of enclosing blocks, for regions that use them). Where the op cannot
be expressed exactly (an attribute or region pattern whose semantics a
``lax`` operation does not reproduce in every corner), the rule raises
:class:`~._ir.NoRule` with the reason; nothing is guessed.

Every rule binds the ``lax`` operation whose lowering is that same StableHLO
op (or, where noted, a composition with the same semantics), so that values
agree with XLA running the module, and JAX's own batching and
differentiation rules apply.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import functools
import inspect
import re
from typing import Any

from jax._src import config
from jax._src import core
from jax._src import dtypes
from jax._src.interpreters import batching
from jax._src.interpreters import mlir
from jax._src.lax import lax as lax_internal
from jax._src.lax import windowed_reductions
from jax._src.export.stablehlo_to_jax import _as_op
from jax._src.export.stablehlo_to_jax import _barrier
from jax._src.export.stablehlo_to_jax import _dynamic
from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _loops
from jax._src.export.stablehlo_to_jax import _primitive
from jax._src.export.stablehlo_to_jax import _registry
from jax._src.export.stablehlo_to_jax import _rng
from jax._src.export.stablehlo_to_jax import _sort
import jax
from jax import lax
import ml_dtypes
import numpy as np

NoRule = _ir.NoRule
Op = _ir.Op
Compiler = _registry.Compiler
rule = _registry.rule


def _dtype(op: Op, i: int = 0) -> np.dtype:
  t = op.result_types[i]
  if not isinstance(t, _ir.TensorType):
    raise NoRule(f"result {i} is not a tensor ({t})")
  return t.dtype


def _shape(op: Op, i: int = 0) -> tuple[int, ...]:
  return op.result_types[i].shape


def _check_accuracy(op: Op) -> None:
  """NoRule for an op asking for an accuracy its rule cannot pass on."""
  acc = op.attrs.get("result_accuracy")
  if acc is not None and "DEFAULT" not in str(acc):
    raise NoRule(f"result_accuracy {acc}")


_ACCURACY_MODE = re.compile(r"result_accuracy_mode<(\w+)>")
_TOLERANCES = {name: re.compile(rf"\b{name} = ([-+0-9.eE]+)")
               for name in ("atol", "rtol", "ulps")}


def _accuracy(op: Op, fn: Callable[..., Any]) -> dict[str, Any]:
  """``fn``'s keyword arguments for the op's ``result_accuracy``: none for
  the default, else lax's ``accuracy``, whose lowering writes the same
  attribute (XLA then computes the op to that accuracy)."""
  acc = op.attrs.get("result_accuracy")
  if acc is None or "DEFAULT" in str(acc):
    return {}
  text = str(acc)
  mode = _ACCURACY_MODE.search(text)
  takes = "accuracy" in inspect.signature(fn).parameters
  if mode is None or not takes or not hasattr(lax, "AccuracyMode"):
    raise NoRule(f"result_accuracy {text} (this JAX's "
                 f"lax.{getattr(fn, '__name__', fn)} takes no accuracy)")
  if mode.group(1) == "HIGHEST":
    return {"accuracy": lax.AccuracyMode.HIGHEST}
  if mode.group(1) == "TOLERANCE":
    values = {name: float(m.group(1)) if (m := pattern.search(text)) else 0
              for name, pattern in _TOLERANCES.items()}
    return {"accuracy": lax.Tolerance(atol=values["atol"],
                                      rtol=values["rtol"],
                                      ulps=int(values["ulps"]))}
  raise NoRule(f"result_accuracy {text}")


def _is_complex(t: _ir.TensorType) -> bool:
  return np.issubdtype(t.dtype, np.complexfloating)


def _is_inexact_dtype(dtype: np.dtype) -> bool:
  """Real or complex floating point, bfloat16 and float8 types included."""
  return dtypes.issubdtype(dtype, np.inexact)


# Elementwise ops.

def _unary(fn: Callable[[Any], Any]) -> Callable[[Op, Compiler], Any]:
  def rule(op: Op, c: Compiler):
    del c
    kwargs = _accuracy(op, fn)
    return lambda env, x: [fn(x, **kwargs)]
  return rule


def _binary(fn: Callable[[Any, Any], Any]) -> Callable[[Op, Compiler], Any]:
  """The rule of the lax binary operation `fn`, which takes a rank-0 operand
  on either side (broadcasting it)."""
  def rule(op: Op, c: Compiler):
    del c
    _check_accuracy(op)
    return _registry.takes_scalars(lambda env, x, y: [fn(x, y)], 0, 1)
  return rule


# The elementwise ops that are their lax function (those whose rule is more
# are registered with it, below).
for _name, _fn in {
    "negate": lax.neg, "sign": lax.sign, "exponential": lax.exp,
    "exponential_minus_one": lax.expm1, "log": lax.log,
    "log_plus_one": lax.log1p, "sqrt": lax.sqrt, "rsqrt": lax.rsqrt,
    "tan": lax.tan, "tanh": lax.tanh, "floor": lax.floor, "ceil": lax.ceil,
    "is_finite": lax.is_finite, "not": lax.bitwise_not,
    "popcnt": lax.population_count, "count_leading_zeros": lax.clz}.items():
  rule(f"stablehlo.{_name}", padded=_dynamic.elementwise)(_unary(_fn))
for _name, _fn in {
    "subtract": lax.sub, "divide": lax.div, "atan2": lax.atan2,
    "and": lax.bitwise_and, "or": lax.bitwise_or, "xor": lax.bitwise_xor,
    "shift_left": lax.shift_left,
    "shift_right_arithmetic": lax.shift_right_arithmetic,
    "shift_right_logical": lax.shift_right_logical,
    "complex": lax.complex}.items():
  rule(f"stablehlo.{_name}", padded=_dynamic.elementwise)(_binary(_fn))
# An op that StableHLO lacks, kept as MHLO by the HLO conversion: erf
# (XLA's HLO op; lax's erf is CHLO's, which XLA lowers to the same function).
rule("mhlo.erf", padded=_dynamic.elementwise)(_unary(lax.erf))


def _is_narrow_float(t: _ir.TensorType) -> bool:
  """Whether `t` is a real float type narrower than 32 bits."""
  return (_is_inexact_dtype(t.dtype) and not _is_complex(t)
          and t.dtype.itemsize < 4)


def _as_op_where(name: str, fn: Callable[..., Any],
                 where: Callable[[_ir.TensorType], bool],
                 binary: bool = False) -> Callable[[Op, Compiler], Any]:
  """`fn`, or, where its operand's type is one JAX lowers `fn` of to other
  ops (`where`), the op itself (``_as_op``: XLA's values, `fn`'s
  derivative). A `binary` `fn` is a lax binary operation (which takes a
  rank-0 operand on either side)."""
  def rule(op: Op, c: Compiler):
    del c
    if where(op.operand_types[0]):
      _check_accuracy(op)
      return lambda env, *xs: [_as_op.apply(name, *xs)]
    kwargs = _accuracy(op, fn)
    step = lambda env, *xs: [fn(*xs, **kwargs)]  # noqa: E731
    return _registry.takes_scalars(step, 0, 1) if binary else step
  return rule


def _not_of_complex(rule: Callable[[Op, Compiler], Any], why: str
                    ) -> Callable[[Op, Compiler], Any]:
  """`rule`, but for complex operands, which have none (`why`)."""
  def checked(op: Op, c: Compiler):
    if _is_complex(op.operand_types[0]):
      raise NoRule(f"{op.name.removeprefix('stablehlo.')} of complex numbers "
                   f"({why})")
    return rule(op, c)
  return checked


rule("stablehlo.maximum", padded=_dynamic.elementwise)(
    _as_op_where("maximum", lax.max, _is_complex, binary=True))
rule("stablehlo.minimum", padded=_dynamic.elementwise)(
    _as_op_where("minimum", lax.min, _is_complex, binary=True))
rule("stablehlo.cosine", padded=_dynamic.elementwise)(
    _as_op_where("cosine", lax.cos, _is_complex))
rule("stablehlo.sine", padded=_dynamic.elementwise)(
    _as_op_where("sine", lax.sin, _is_complex))
rule("stablehlo.logistic", padded=_dynamic.elementwise)(
    _as_op_where("logistic", lax.logistic, _is_narrow_float))
rule("stablehlo.cbrt", padded=_dynamic.elementwise)(_not_of_complex(
    _unary(lax.cbrt), "lax.cbrt takes no complex numbers"))
rule("stablehlo.remainder", padded=_dynamic.elementwise)(_not_of_complex(
    _binary(lax.rem), "lax.rem takes no complex numbers; XLA:CPU aborts the "
    "process on it"))


@rule("stablehlo.abs", padded=_dynamic.elementwise)
def _abs_rule(op: Op, c: Compiler):
  """``abs``: of complex numbers, the op itself; of 2- and 4-bit integers
  (which lax.abs does not take) in 8 bits, whose wrapping is the same."""
  dtype = op.operand_types[0].dtype
  if _is_complex(op.operand_types[0]):
    return _as_op_where("abs", lax.abs, _is_complex)(op, c)
  if dtype.kind == "V" and not _is_inexact_dtype(dtype):
    wide = np.dtype(np.int8)
    return lambda env, x: [lax.convert_element_type(
        lax.abs(lax.convert_element_type(x, wide)), dtype)]
  return _unary(lax.abs)(op, c)


def _on_booleans(fn: Callable[[Any, Any], Any],
                 boolean: Callable[[Any, Any], Any]
                 ) -> Callable[[Op, Compiler], Any]:
  """`fn`, and `boolean` where the operands are booleans."""
  def rule(op: Op, c: Compiler):
    del c
    _check_accuracy(op)
    f = boolean if _dtype(op) == np.bool_ else fn
    return _registry.takes_scalars(lambda env, x, y: [f(x, y)], 0, 1)
  return rule


# On booleans, add is or and multiply is and (the specification).
rule("stablehlo.add", padded=_dynamic.elementwise)(
    _on_booleans(lax.add, lax.bitwise_or))
rule("stablehlo.multiply", padded=_dynamic.elementwise)(
    _on_booleans(lax.mul, lax.bitwise_and))


@rule("stablehlo.power", padded=_dynamic.elementwise)
def _power_rule(op: Op, c: Compiler):
  del c
  _check_accuracy(op)
  if not _is_inexact_dtype(_dtype(op)):
    return lambda env, x, y: [_integer_power(x, y)]
  return _registry.takes_scalars(lambda env, x, y: [lax.pow(x, y)], 0, 1)


def _is_signed(dtype: np.dtype) -> bool:
  """Whether an integer type is signed (ml_dtypes' int2 and int4 too)."""
  return int(ml_dtypes.iinfo(dtype).min) < 0


def _integer_power(x: jax.Array, y: jax.Array) -> jax.Array:
  """``x ** y`` of integers, as XLA computes it (XLA:CPU, measured bit for
  bit on every pair of values of the 8-bit and narrower types).

  The specification says "integer exponentiation"; XLA squares and
  multiplies by the 6 lowest bits of the exponent only (in the type's
  wrapping arithmetic), gives 0 for an even base and an exponent of 64 or
  more (which is the wrapped power), and for a negative exponent (of a
  signed type) the quotient's integer part: 1 for a base of 1, 1 or -1 (by
  the exponent's parity) for -1, 0 otherwise. So an odd base to a power of
  64 or more is not the wrapped power: XLA's answer is followed.
  """
  dtype = np.dtype(x.dtype)
  one, zero = lax.full_like(x, 1), lax.full_like(x, 0)
  acc, base, e = one, x, y
  for _ in range(6):
    odd = lax.eq(lax.bitwise_and(e, one), one)
    acc = lax.select(odd, lax.mul(acc, base), acc)
    base = lax.mul(base, base)
    e = lax.shift_right_logical(e, one)
  signed = _is_signed(dtype)
  if ml_dtypes.iinfo(dtype).bits >= 8:  # (narrower exponents are below 64)
    big = lax.ge(y, lax.full_like(y, 64))
    if signed:
      big = lax.bitwise_or(big, lax.lt(y, zero))
    even = lax.eq(lax.bitwise_and(x, one), zero)
    acc = lax.select(lax.bitwise_and(big, even), zero, acc)
  if not signed:
    return acc
  minus_one = lax.neg(one)
  parity = lax.select(lax.eq(lax.bitwise_and(y, one), one), minus_one, one)
  inverse = lax.select(lax.eq(x, one), one, lax.select(
      lax.eq(x, minus_one), parity, zero))
  return lax.select(lax.lt(y, zero), inverse, acc)


@rule("stablehlo.real", padded=_dynamic.elementwise)
def _real_rule(op: Op, c: Compiler):
  del c
  if _is_complex(op.operand_types[0]):
    return lambda env, x: [lax.real(x)]
  return lambda env, x: [x]


@rule("stablehlo.imag", padded=_dynamic.elementwise)
def _imag_rule(op: Op, c: Compiler):
  del c
  if _is_complex(op.operand_types[0]):
    return lambda env, x: [lax.imag(x)]
  return lambda env, x: [lax.full_like(x, 0)]


def _round_rule(method: lax.RoundingMethod):
  def round_rule(op: Op, c: Compiler):
    del op, c
    return lambda env, x: [lax.round(x, method)]
  return round_rule


rule("stablehlo.round_nearest_afz", padded=_dynamic.elementwise)(
    _round_rule(lax.RoundingMethod.AWAY_FROM_ZERO))
rule("stablehlo.round_nearest_even", padded=_dynamic.elementwise)(
    _round_rule(lax.RoundingMethod.TO_NEAREST_EVEN))


_COMPARE = {"EQ": lax.eq, "NE": lax.ne, "LT": lax.lt, "LE": lax.le,
            "GT": lax.gt, "GE": lax.ge}


def _total_order(direction: str) -> Callable[[Any, Any], Any]:
  eq_to, lt_to, le_to = (lax_internal.eq_to_p.bind, lax_internal.lt_to_p.bind,
                         lax_internal.le_to_p.bind)
  return {"EQ": eq_to, "NE": lambda x, y: lax.bitwise_not(eq_to(x, y)),
          "LT": lt_to, "LE": le_to, "GT": lambda x, y: lt_to(y, x),
          "GE": lambda x, y: le_to(y, x)}[direction]


def _integer_order(dtype: np.dtype) -> str:
  """The comparison type of integers (or booleans) of `dtype`."""
  return "SIGNED" if dtype != np.bool_ and _is_signed(dtype) else "UNSIGNED"


def _compare_fn(op: Op) -> Callable[[Any, Any], Any]:
  """The lax comparison of a `stablehlo.compare`, exactly."""
  direction = op.attrs["comparison_direction"]
  ctype = op.attrs.get("compare_type", "NOTYPE")
  dtype = op.operand_types[0].dtype
  if np.issubdtype(dtype, np.complexfloating) and direction not in ("EQ",
                                                                    "NE"):
    raise NoRule(f"an ordered ({direction}) comparison of complex numbers "
                 "(the specification's lexicographic order; XLA fails to "
                 "compile it)")
  if _is_inexact_dtype(dtype):
    # lax's float comparisons are FLOAT compares (IEEE: NaN unordered).
    if ctype in ("NOTYPE", "FLOAT"):
      return _COMPARE[direction]
    if ctype == "TOTALORDER" and not np.issubdtype(dtype, np.complexfloating):
      return _total_order(direction)
    raise NoRule(f"compare_type {ctype} on {dtype}")
  # Integers and booleans: lax compares signed types as SIGNED, unsigned
  # and booleans as UNSIGNED.
  expected = _integer_order(dtype)
  if ctype not in ("NOTYPE", expected):
    raise NoRule(f"compare_type {ctype} on {dtype}")
  return _COMPARE[direction]


@rule("stablehlo.compare", padded=_dynamic.elementwise)
def _compare_rule(op: Op, c: Compiler):
  del c
  fn = _compare_fn(op)
  return _registry.takes_scalars(lambda env, x, y: [fn(x, y)], 0, 1)


@rule("stablehlo.select", padded=_dynamic.elementwise)
def _select_rule(op: Op, c: Compiler):
  del op, c
  # (lax.select takes a rank-0 predicate.)
  return _registry.takes_scalars(
      lambda env, p, x, y: [lax.select(p, x, y)], 0)


@rule("stablehlo.clamp", padded=_dynamic.elementwise)
def _clamp_rule(op: Op, c: Compiler):
  del op, c
  # lax.clamp takes rank-0 bounds; its derivative w.r.t. one fails (JAX
  # selects between the bound's tangent and the operand's shape), so only
  # constant ones (ReLU6's).
  return _registry.takes_scalars(
      lambda env, lo, x, hi: [lax.clamp(lo, x, hi)], 0, 2,
      constants_only=True)


@rule("stablehlo.convert", padded=_dynamic.elementwise)
def _convert_rule(op: Op, c: Compiler):
  del c
  dtype = _dtype(op)
  src = op.operand_types[0]
  real = ((lambda x: lax.real(x)) if _is_complex(src)
          and not np.issubdtype(dtype, np.complexfloating) else lambda x: x)
  # The imaginary part is ignored (NumPy's conversion of a constant to bool
  # would count it).
  if dtype == np.bool_ and _is_inexact_dtype(src.dtype):
    # The op itself: lax's conversion of floats to booleans is a comparison
    # with zero, which XLA:CPU computes otherwise at subnormal numbers.
    return lambda env, x: [_as_op.to_bool(real(x))]
  return lambda env, x: [lax.convert_element_type(real(x), dtype)]


@rule("stablehlo.bitcast_convert")
def _bitcast_convert_rule(op: Op, c: Compiler):
  del c
  dtype = _dtype(op)
  src = op.operand_types[0]
  if src.dtype != dtype and np.dtype(np.bool_) in (src.dtype, dtype):
    # (An i1 is 1 bit wide: every other type is another width.)
    raise NoRule("bitcast of booleans to another width")
  if _is_complex(src) and src.dtype != dtype:
    raise NoRule(f"a bitcast of {src.dtype} to {dtype} (lax bitcasts no "
                 "complex numbers to another type; XLA:CPU aborts the "
                 "process on it)")
  widths = (_ir.bit_width(src.dtype), _ir.bit_width(dtype))
  if widths[0] != widths[1] and 2 in widths:
    return lambda env, x: [_two_bit_bitcast_p.bind(x, dtype=np.dtype(dtype))]
  if widths[0] != widths[1]:
    return lambda env, x: [_bitcast_to_width(x, dtype)]
  return lambda env, x: [lax.bitcast_convert_type(x, dtype)]


def _unsigned(bits: int) -> np.dtype:
  """The unsigned integer type of `bits` bits (2, 4, 8, ..., 64)."""
  return np.dtype(getattr(ml_dtypes, f"uint{bits}") if bits < 8
                  else f"uint{bits}")


def _bitcast_to_width(x: jax.Array | np.ndarray, dtype: np.dtype
                      ) -> jax.Array | np.ndarray:
  """XLA's bitcast of `x` to `dtype`, of another bit width, composed.

  Composed of bitcasts between types of one width and integer shifts, so
  that every shape is one shape refinement resolves: JAX's lowering of
  ``lax.bitcast_convert_type`` between widths gives its result a shape
  that refinement cannot resolve under a symbolic batch ("Error refining
  shapes"). Bit for bit XLA's (every pair of widths, each type from and
  to another width: ``tests/stablehlo/test_bitcast_widths.py``; NaN
  payloads, negative zeros and subnormal numbers are bits like any other
  here: no float arithmetic touches them). Shifted in unsigned integers of
  at least 8 bits: no op but a conversion and a bitcast of 2- or 4-bit
  integers reaches XLA (XLA:CPU fails some ops of 2-bit integers).

  Args:
    x: the operand; of narrow words, its last dimension the words of one
      result element, or of wide words.
    dtype: the result's type.

  Returns:
    The narrow words' bits joined, the first the least significant, as
    XLA's bitcast joins them; or a wide word's bits split so, along a new
    last dimension.
  """
  src = np.dtype(x.dtype)
  n_src, n_dst = _ir.bit_width(src), _ir.bit_width(dtype)
  words = _bitcast_same_width(x, _unsigned(n_src))
  work = _unsigned(max(n_src, n_dst, 8))
  words = lax.convert_element_type(words, work)
  rank = np.ndim(words)
  if n_src < n_dst:
    out = lax.index_in_dim(words, 0, rank - 1, keepdims=False)
    for i in range(1, n_dst // n_src):
      word = lax.index_in_dim(words, i, rank - 1, keepdims=False)
      out = lax.bitwise_or(out, lax.shift_left(
          word, lax.full_like(word, i * n_src)))
  else:
    shape = (*np.shape(words), n_src // n_dst)
    shifts = np.arange(shape[-1], dtype=work) * work.type(n_dst)
    out = lax.bitwise_and(
        lax.shift_right_logical(
            lax.broadcast_in_dim(words, shape, tuple(range(rank))),
            lax.broadcast_in_dim(_const(shifts), shape, (rank,))),
        lax.full(shape, (1 << n_dst) - 1, work))
  out = lax.convert_element_type(out, _unsigned(n_dst))
  return _bitcast_same_width(out, dtype)


def _bitcast_same_width(x: jax.Array | np.ndarray, dtype: np.dtype
                        ) -> jax.Array | np.ndarray:
  if np.dtype(x.dtype) == dtype:
    return x
  return lax.bitcast_convert_type(x, dtype)


# A bitcast between a 2-bit type and another width, composed as any other
# (_bitcast_to_width), refused on the TPU: its compiler supports 2-bit
# integers in convolutions only, and aborts the process on its own bitcast
# of ui2 to i8 and on the composition of ui2 to i32, and halts the core on
# that of i2 to i64 (benchmarks/results/device/bitcast_widths_tpu.txt).
def _two_bit_bitcast_abstract_eval(x: core.ShapedArray, *, dtype: np.dtype
                                   ) -> core.ShapedArray:
  n_src, n_dst = _ir.bit_width(x.dtype), _ir.bit_width(dtype)
  if n_src > n_dst:
    return core.ShapedArray((*x.shape, n_src // n_dst), dtype)
  return core.ShapedArray(x.shape[:-1], dtype)


def _two_bit_bitcast_batch(args, dims, *, dtype: np.dtype):
  x = batching.moveaxis(args[0], dims[0], 0)
  return _two_bit_bitcast_p.bind(x, dtype=dtype), 0


def _two_bit_bitcast_on_tpu(ctx, x, *, dtype: np.dtype):
  del x
  raise NotImplementedError(
      f"stablehlo.bitcast_convert of {ctx.avals_in[0].dtype} to {dtype} on "
      "the TPU: XLA's TPU compiler supports 2-bit types in convolutions "
      "only (such bitcasts aborted the process there); run the module on "
      "the CPU or a GPU")


_two_bit_bitcast_p = _primitive.op_primitive(
    "stablehlo_bitcast_convert_two_bit",
    abstract_eval=_two_bit_bitcast_abstract_eval,
    lower=mlir.lower_fun(_bitcast_to_width, multiple_results=False),
    batch=_two_bit_bitcast_batch, jvp=None,
    platform_lowerings={"tpu": _two_bit_bitcast_on_tpu})


@rule("stablehlo.reduce_precision")
def _reduce_precision_rule(op: Op, c: Compiler):
  del c
  e, m = op.attrs["exponent_bits"], op.attrs["mantissa_bits"]
  return lambda env, x: [lax.reduce_precision(x, e, m)]


# Structure.

def _const(value: np.ndarray) -> Any:
  """A NumPy constant for lax; 64-bit ones stay 64-bit (see Program).

  With ``jax_enable_x64``, lax keeps a NumPy constant's type, and the
  constant stays a constant (a sum's initial zero then makes ``reduce_sum``,
  which JAX transposes). Without it, lax keeps 64-bit types only for values
  it computes (:class:`Program`), so a 64-bit constant is converted.
  """
  if np.dtype(value.dtype) in _ir.WIDE and not config.enable_x64.value:
    return lax.convert_element_type(value, value.dtype)
  return value


@rule("stablehlo.constant")
def _constant_rule(op: Op, c: Compiler):
  value = op.attrs["value"]
  c.constants[op.results[0]] = value
  if np.dtype(value.dtype) in _ir.WIDE:
    return lambda env: [_const(value)]
  return lambda env: [value]


@rule("stablehlo.iota")
def _iota_rule(op: Op, c: Compiler):
  del c
  dtype, shape, dim = _dtype(op), _shape(op), op.attrs["iota_dimension"]
  return lambda env: [lax.broadcasted_iota(dtype, shape, dim)]


@rule("stablehlo.broadcast_in_dim", padded=_dynamic.broadcast_in_dim)
def _broadcast_in_dim_rule(op: Op, c: Compiler):
  del c
  shape, dims = _shape(op), op.attrs["broadcast_dimensions"]
  return lambda env, x: [lax.broadcast_in_dim(x, shape, dims)]


@rule("stablehlo.broadcast")
def _broadcast_rule(op: Op, c: Compiler):
  del c
  sizes = op.attrs["broadcast_sizes"]
  return lambda env, x: [lax.broadcast(x, sizes)]


@rule("stablehlo.reshape", padded=_dynamic.reshape)
def _reshape_rule(op: Op, c: Compiler):
  del c
  shape = _shape(op)
  return lambda env, x: [lax.reshape(x, shape)]


@rule("stablehlo.transpose", padded=_dynamic.transpose)
def _transpose_rule(op: Op, c: Compiler):
  del c
  perm = op.attrs["permutation"]
  return lambda env, x: [lax.transpose(x, perm)]


@rule("stablehlo.slice", padded=_dynamic.slice_)
def _slice_rule(op: Op, c: Compiler):
  del c
  a = op.attrs
  start, limit, strides = (a["start_indices"], a["limit_indices"],
                           a.get("strides"))
  return lambda env, x: [lax.slice(x, start, limit, strides)]


def _clamped_indices(indices: Sequence[Any], shape: Sequence[int],
                     sizes: Sequence[int]) -> list[Any]:
  """Start indices clamped into [0, dim - size], as XLA clamps them.

  Clamped in their own integer type, before lax converts them (lax wraps
  negative indices NumPy-style; XLA clamps them to 0).
  """
  out = []
  for i, d, s in zip(indices, shape, sizes):
    dtype = np.dtype(getattr(i, "dtype", np.int32))
    hi = min(d - s, np.iinfo(dtype).max)
    out.append(lax.clamp(_const(np.array(0, dtype)), i,
                         _const(np.array(hi, dtype))))
  return out


@rule("stablehlo.dynamic_slice")
def _dynamic_slice_rule(op: Op, c: Compiler):
  del c
  sizes = op.attrs["slice_sizes"]
  shape = op.operand_types[0].shape

  def step(env, x, *indices):
    return [lax.dynamic_slice(x, _clamped_indices(indices, shape, sizes),
                              sizes)]
  return step


@rule("stablehlo.dynamic_update_slice")
def _dynamic_update_slice_rule(op: Op, c: Compiler):
  del c
  shape, sizes = op.operand_types[0].shape, op.operand_types[1].shape

  def step(env, x, update, *indices):
    return [lax.dynamic_update_slice(
        x, update, _clamped_indices(indices, shape, sizes))]
  return step


@rule("stablehlo.concatenate")
def _concatenate_rule(op: Op, c: Compiler):
  del c
  dim = op.attrs["dimension"]
  return lambda env, *xs: [lax.concatenate(xs, dim)]


@rule("stablehlo.pad")
def _pad_rule(op: Op, c: Compiler):
  del c
  a = op.attrs
  config = tuple(zip(a["edge_padding_low"], a["edge_padding_high"],
                     a["interior_padding"]))
  return lambda env, x, v: [lax.pad(x, v, config)]


@rule("stablehlo.reverse")
def _reverse_rule(op: Op, c: Compiler):
  del c
  dims = op.attrs["dimensions"]
  return lambda env, x: [lax.rev(x, dims)]


@rule("stablehlo.tuple")
def _tuple_rule(op: Op, c: Compiler):
  del op, c
  return lambda env, *xs: [tuple(xs)]


@rule("stablehlo.get_tuple_element")
def _get_tuple_element_rule(op: Op, c: Compiler):
  del c
  i = op.attrs["index"]
  return lambda env, t: [t[i]]


@rule("mhlo.copy")
def _identity_rule(op: Op, c: Compiler):
  del op, c
  return lambda env, *xs: list(xs)


@rule("stablehlo.optimization_barrier")
def _optimization_barrier_rule(op: Op, c: Compiler):
  """A barrier of each value (``_barrier``: JAX transposes it)."""
  del c
  if not all(isinstance(t, _ir.TensorType) for t in op.operand_types):
    raise NoRule("an optimization barrier of tuples or tokens")
  return lambda env, *xs: [_barrier.barrier(x) for x in xs]


@rule("stablehlo.get_dimension_size", padded=_dynamic.get_dimension_size)
def _get_dimension_size_rule(op: Op, c: Compiler):
  del c
  size = np.array(op.operand_types[0].shape[op.attrs["dimension"]],
                  _dtype(op))
  return lambda env, x: [_const(size)]


@rule("stablehlo.set_dimension_size", padded=_dynamic.set_dimension_size)
def _set_dimension_size_rule(op: Op, c: Compiler):
  dim = op.attrs["dimension"]
  size = c.constants.get(op.operands[1])
  if size is None or int(size) != op.operand_types[0].shape[dim]:
    raise NoRule("a dynamic dimension size (only the static size is "
                 "supported)")
  return lambda env, x, s: [x]


@rule("func.call")
def _call_rule(op: Op, c: Compiler):
  callee = c.func(op.attrs["callee"])
  return lambda env, *xs: callee(*xs)


@rule("stablehlo.composite")
def _composite_rule(op: Op, c: Compiler):
  """A composite is its decomposition, a function of the module."""
  callee = c.func(op.attrs["decomposition"])
  return lambda env, *xs: callee(*xs)


@rule("stablehlo.map")
def _map_rule(op: Op, c: Compiler):
  """The computation of scalars, over every element: ``jax.vmap`` of it.

  Batching its elementwise ops gives the same ops of the whole arrays.
  """
  region = c.block(op.regions[0])
  shape = _shape(op)
  size = int(np.prod(shape, dtype=np.int64))
  if tuple(op.attrs.get("dimensions", ())) != tuple(range(len(shape))):
    raise NoRule("map dimensions other than all of them")

  def step(env, *xs):
    flat = [lax.reshape(x, (size,)) for x in xs]
    out, = jax.vmap(lambda *e: region(*e, outer=env))(*flat)
    return [lax.reshape(out, shape)]
  return step


@rule("stablehlo.async_start")
def _async_start_rule(op: Op, c: Compiler):
  """The body, run now: its results are the future's."""
  body = c.block(op.regions[0])
  return lambda env, *xs: [tuple(body(*xs, outer=env))]


@rule("stablehlo.async_done")
def _async_done_rule(op: Op, c: Compiler):
  del op, c
  return lambda env, future: list(future)


# Linear algebra and convolution.

_PRECISION = {"DEFAULT": lax.Precision.DEFAULT, "HIGH": lax.Precision.HIGH,
              "HIGHEST": lax.Precision.HIGHEST}


def _precision(op: Op, c: Compiler) -> Any:
  """The ``precision`` of a dot's or a convolution's ``lax`` operation.

  The module's own precisions; where it leaves both at DEFAULT (or says
  nothing), XLA's default precision, or, for a caller that asks for it
  (``parse(..., follow_default_precision=True)``), None: the caller's
  ``jax_default_matmul_precision`` governs, as for the same op in ``jnp``.
  """
  config = op.attrs.get("precision_config") or ("DEFAULT", "DEFAULT")
  try:
    p = tuple(_PRECISION[x] for x in config)
  except KeyError as e:
    raise NoRule(f"precision {config}") from e
  if len(p) != 2:
    return None
  if p == (lax.Precision.DEFAULT,) * 2 and c.follow_default_precision:
    return None
  return p


def _preferred(op: Op) -> np.dtype | None:
  out = _dtype(op)
  return None if out == op.operand_types[0].dtype else out


# The dot algorithms whose lowering lax takes on every platform, CPU too
# (where XLA computes them as the default dot of the operands' types).
_CPU_DOT_PRESETS = ("F16_F16_F16", "F32_F32_F32", "F64_F64_F64",
                    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6")


def _dot_algorithm(op: Op) -> lax.DotAlgorithmPreset:
  """The lax preset whose lowering is the op's ``algorithm``."""
  text = str(op.attrs["algorithm"])
  lhs, rhs = (t.dtype for t in op.operand_types[:2])
  presets = getattr(lax, "DotAlgorithmPreset", None)
  if presets is None or not hasattr(lax_internal,
                                    "get_algorithm_compute_types"):
    raise NoRule(f"a dot algorithm ({text}): this JAX has none")
  for name in _CPU_DOT_PRESETS:
    preset = getattr(presets, name, None)
    if preset is None or text != _ir.attribute_text(
        lambda p=preset: p._convert_to_hlo_attr(lhs, rhs)):  # pylint: disable=protected-access
      continue
    types = [np.dtype(t) for t in lax_internal.get_algorithm_compute_types(
        preset, lhs, rhs, _dtype(op))]
    if types != [lhs, rhs, _dtype(op)]:
      raise NoRule(f"a dot algorithm ({text}) of other types than the "
                   "operands' and the result's")
    return preset
  raise NoRule(f"a dot algorithm ({text}) that lax lowers on some platforms "
               "only (its presets for every platform: "
               f"{', '.join(_CPU_DOT_PRESETS)})")


@rule("stablehlo.dot_general")
def _dot_general_rule(op: Op, c: Compiler):
  d = op.attrs["dot_dimension_numbers"]
  dims = ((d["lhs_contracting_dimensions"], d["rhs_contracting_dimensions"]),
          (d["lhs_batching_dimensions"], d["rhs_batching_dimensions"]))
  precision, preferred = _precision(op, c), _preferred(op)
  if op.attrs.get("algorithm") is not None:
    precision = _dot_algorithm(op)
  return lambda env, x, y: [lax.dot_general(
      x, y, dims, precision=precision, preferred_element_type=preferred)]


@rule("stablehlo.dot")
def _dot_rule(op: Op, c: Compiler):
  lhs_rank = len(op.operand_types[0].shape)
  dims = (((lhs_rank - 1,), (0,)), ((), ()))
  precision, preferred = _precision(op, c), _preferred(op)
  return lambda env, x, y: [lax.dot_general(
      x, y, dims, precision=precision, preferred_element_type=preferred)]


@rule("stablehlo.convolution")
def _convolution_rule(op: Op, c: Compiler):
  a = op.attrs
  d = a["dimension_numbers"]
  nsp = len(d["input_spatial_dimensions"])
  ones = (1,) * nsp
  strides = a.get("window_strides") or ones
  padding = a.get("padding")
  padding = (tuple((int(lo), int(hi)) for lo, hi in np.asarray(padding))
             if padding is not None else ((0, 0),) * nsp)
  lhs_dilation = a.get("lhs_dilation") or ones
  rhs_dilation = a.get("rhs_dilation") or ones
  reversal = a.get("window_reversal") or (False,) * nsp
  reversed_dims = tuple(k for k, r in zip(d["kernel_spatial_dimensions"],
                                          reversal) if r)
  dnums = lax.ConvDimensionNumbers(
      lhs_spec=(d["input_batch_dimension"], d["input_feature_dimension"],
                *d["input_spatial_dimensions"]),
      rhs_spec=(d["kernel_output_feature_dimension"],
                d["kernel_input_feature_dimension"],
                *d["kernel_spatial_dimensions"]),
      out_spec=(d["output_batch_dimension"], d["output_feature_dimension"],
                *d["output_spatial_dimensions"]))
  fgc, bgc = a.get("feature_group_count", 1), a.get("batch_group_count", 1)
  precision, preferred = _precision(op, c), _preferred(op)

  def step(env, x, w):
    if reversed_dims:  # window reversal: the kernel flipped in those dims
      w = lax.rev(w, reversed_dims)
    return [lax.conv_general_dilated(
        x, w, strides, padding, lhs_dilation, rhs_dilation, dnums,
        feature_group_count=fgc, batch_group_count=bgc, precision=precision,
        preferred_element_type=preferred)]
  return step


_LINALG_TYPES = frozenset(np.dtype(d) for d in (
    np.float32, np.float64, np.complex64, np.complex128))


@rule("stablehlo.cholesky")
def _cholesky_rule(op: Op, c: Compiler):
  del c
  if op.operand_types[0].dtype not in _LINALG_TYPES:
    raise NoRule(f"a Cholesky factorization of {op.operand_types[0].dtype} "
                 "(lax's takes float32, float64, complex64 and complex128)")
  lower = op.attrs.get("lower", False)
  cplx = _is_complex(op.operand_types[0])

  def adjoint(x):
    x = lax.transpose(x, (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2))
    return lax.conj(x) if cplx else x

  def step(env, x):
    # The op reads only one triangle: build the Hermitian matrix of that
    # triangle, so that values and derivatives are the op's.
    if not lower:
      x = adjoint(x)
    n = x.shape[-1]
    row = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 2)
    col = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    strict = lax.select(row > col, x, lax.full_like(x, 0))
    diag = lax.select(row == col, lax.real(x) if cplx else x,
                      lax.full_like(lax.real(x) if cplx else x, 0))
    if cplx:
      diag = lax.convert_element_type(diag, x.dtype)
    sym = strict + adjoint(strict) + diag
    del n
    out = lax.linalg.cholesky(sym, symmetrize_input=False)
    return [out if lower else adjoint(out)]
  return step


@rule("stablehlo.triangular_solve")
def _triangular_solve_rule(op: Op, c: Compiler):
  del c
  a = op.attrs
  t = a.get("transpose_a", "NO_TRANSPOSE")
  transpose_a, conjugate_a = {"NO_TRANSPOSE": (False, False),
                              "TRANSPOSE": (True, False),
                              "ADJOINT": (True, True)}[t]
  kw = dict(left_side=a["left_side"], lower=a["lower"],
            transpose_a=transpose_a, conjugate_a=conjugate_a,
            unit_diagonal=a["unit_diagonal"])
  return lambda env, m, b: [lax.linalg.triangular_solve(m, b, **kw)]


@rule("stablehlo.fft")
def _fft_rule(op: Op, c: Compiler):
  del c
  typ = {"FFT": lax.FftType.FFT, "IFFT": lax.FftType.IFFT,
         "RFFT": lax.FftType.RFFT, "IRFFT": lax.FftType.IRFFT}[
             op.attrs["fft_type"]]
  lengths = op.attrs["fft_length"]
  return lambda env, x: [lax.fft(x, typ, lengths)]


@rule("stablehlo.rng_bit_generator")
def _rng_bit_generator_rule(op: Op, c: Compiler):
  """The op itself (``_rng``), for every key and result type.

  Not ``lax.rng_bit_generator``: its batching rule draws a batch of keys'
  bits from the first key alone, where a loop draws from each.
  """
  del c
  shape, dtype = _shape(op, 1), _dtype(op, 1)
  algorithm = op.attrs["rng_algorithm"]
  if np.issubdtype(dtype, np.unsignedinteger):
    return lambda env, key: _rng.rng_bit_generator(
        key, shape=shape, dtype=dtype, algorithm=algorithm)
  # XLA draws the bits of another type as those of the unsigned type of its
  # width (measured bit for bit); drawn so, an XLA:CPU compilation never
  # has bits of two types of one shape (its expansion of the second then
  # fails).
  bits = np.dtype(f"uint{8 * dtype.itemsize}")

  def step(env, key):
    new_key, out = _rng.rng_bit_generator(key, shape=shape, dtype=bits,
                                          algorithm=algorithm)
    return [new_key, lax.bitcast_convert_type(out, dtype)]
  return step


# Regions.

_MONOIDS = {"stablehlo.add": lax.add, "stablehlo.multiply": lax.mul,
            "stablehlo.maximum": lax.max, "stablehlo.minimum": lax.min,
            "stablehlo.and": lax.bitwise_and, "stablehlo.or": lax.bitwise_or,
            "stablehlo.xor": lax.bitwise_xor}


def _binary_region(block: _ir.Block) -> str | None:
  """The op name of a region `^(a, b): return op(a, b)`, or None."""
  if len(block.args) != 2 or len(block.ops) != 1 or len(block.returns) != 1:
    return None
  op, = block.ops
  if op.results != block.returns or op.regions:
    return None
  if op.operands == block.args:
    return op.name
  if op.operands == block.args[::-1] and op.name in _MONOIDS:
    return op.name  # commutative
  return None


def _region_fn(c: Compiler, block: _ir.Block):
  with c.reduction_region():
    return c.block(block)


@rule("stablehlo.reduce", padded=_dynamic.reduce)
def _reduce_rule(op: Op, c: Compiler):
  n = len(op.operands) // 2
  dims = tuple(op.attrs["dimensions"])
  body, = op.regions
  kind = _binary_region(body) if n == 1 else None
  if kind in _MONOIDS:
    fn = _MONOIDS[kind]
    return lambda env, x, init: [lax.reduce(x, init, fn, dims)]
  region = _region_fn(c, body)
  # JAX's derivative of a general reduce fails on integer operands (argmax's
  # indices). Where only integer results are live, no derivative flows: the
  # operands are cut from differentiation (exact: integers have none).
  inexact = [_is_inexact_dtype(t.dtype) for t in op.result_types]
  cut = not all(inexact) and not any(
      f and r in c.live for f, r in zip(inexact, op.results))

  def step(env, *args):
    if cut:
      args = [lax.stop_gradient(a) for a in args]
    xs, inits = tuple(args[:n]), tuple(args[n:])

    def computation(acc, x):
      return tuple(region(*acc, *x, outer=env))
    return list(lax.reduce(xs, inits, computation, dims))
  return step


def _window_attrs(op: Op, rank: int) -> dict[str, Any]:
  a = op.attrs
  ones = (1,) * rank
  padding = a.get("padding")
  padding = (tuple((int(lo), int(hi)) for lo, hi in np.asarray(padding))
             if padding is not None else ((0, 0),) * rank)
  return dict(window_dimensions=tuple(a["window_dimensions"]),
              window_strides=tuple(a.get("window_strides") or ones),
              padding=padding,
              base_dilation=tuple(a.get("base_dilations") or ones),
              window_dilation=tuple(a.get("window_dilations") or ones))


def _scalar_constant(c: Compiler, value: int) -> np.ndarray | None:
  """A scalar constant of the module (see ``Compiler.constant``)."""
  found = c.constant(value)
  return None if found is None or found.shape else found


@rule("stablehlo.reduce_window")
def _reduce_window_rule(op: Op, c: Compiler):
  n = len(op.operands) // 2
  kw = _window_attrs(op, len(op.operand_types[0].shape))
  body, = op.regions
  kind = _binary_region(body) if n == 1 else None
  if kind in _MONOIDS:
    fn = _MONOIDS[kind]
    # A constant initial value given as itself: lax then sees a monoid of
    # its identity (a sum of 0: reduce_window_sum, which JAX transposes).
    init_value = _scalar_constant(c, op.operands[1])
    if init_value is not None:
      return lambda env, x, init: [lax.reduce_window(
          x, _const(init_value), fn, **kw)]
    return lambda env, x, init: [lax.reduce_window(x, init, fn, **kw)]
  region = _region_fn(c, body)

  def step(env, *args):
    xs, inits = tuple(args[:n]), tuple(args[n:])

    def computation(acc, x):
      return tuple(region(*acc, *x, outer=env))
    return list(lax.reduce_window(xs, inits, computation, **kw))
  return step


@rule("stablehlo.select_and_scatter")
def _select_and_scatter_rule(op: Op, c: Compiler):
  select, scatter = op.regions
  if _binary_region(scatter) != "stablehlo.add":
    raise NoRule("a scatter region other than add")
  sel = select.ops[0] if len(select.ops) == 1 else None
  dtype = op.operand_types[0].dtype
  inexact = _is_inexact_dtype(dtype)
  kinds = (("NOTYPE", "FLOAT") if inexact and dtype.kind != "c"
           else ("NOTYPE", _integer_order(dtype)) if not inexact
           and dtype != np.bool_ else ())
  if (sel is None or sel.name != "stablehlo.compare"
      or sel.operands != select.args or sel.results != select.returns
      or sel.attrs.get("compare_type", "NOTYPE") not in kinds
      or sel.attrs["comparison_direction"] not in ("GE", "LE")):
    raise NoRule("a select region other than a GE or LE comparison (FLOAT "
                 "of floats, SIGNED or UNSIGNED of integers)")
  init = c.constants.get(op.operands[2])
  if init is None or np.any(np.asarray(init) != 0):
    raise NoRule("an initial value other than the constant 0")
  prim = lax_internal.ge_p if sel.attrs["comparison_direction"] == "GE" \
      else lax_internal.le_p
  rank = len(op.operand_types[0].shape)
  kw = _window_attrs(op, rank)

  def step(env, operand, source, init):
    del init
    return [windowed_reductions._select_and_scatter_add(  # pylint: disable=protected-access
        source, operand, prim, kw["window_dimensions"], kw["window_strides"],
        kw["padding"])]
  return step


def _indices_last(indices: Any, index_vector_dim: int) -> Any:
  """Indices with their index vector dimension last (as lax requires)."""
  rank = indices.ndim
  if index_vector_dim == rank:
    return lax.expand_dims(indices, (rank,))
  if index_vector_dim == rank - 1:
    return indices
  perm = (*[d for d in range(rank) if d != index_vector_dim],
          index_vector_dim)
  return lax.transpose(indices, perm)


def _narrowed(indices: Any, lo: Sequence[int], hi: Sequence[int]) -> Any:
  """64-bit indices (index vector last) as int32, each component clamped
  into ``[lo, hi]`` first.

  JAX transposes a gather or scatter outside the program's 64-bit context,
  where its bounds are int32 and 64-bit indices fail. Clamped into a range
  that keeps what XLA does with each index (a gather clamps into the
  operand; a scatter drops a window out of bounds: one below or above
  keeps it out), they fit int32 and give the same results.
  """
  dtype = np.dtype(indices.dtype)
  if dtype.itemsize < 8:
    return indices
  if np.issubdtype(dtype, np.unsignedinteger):
    lo = [max(b, 0) for b in lo]
  shape = indices.shape
  bound = lambda b: lax.broadcast_in_dim(_const(np.array(b, dtype)), shape,
                                         (len(shape) - 1,))
  clamped = lax.clamp(bound(lo), indices, bound(hi))
  return lax.convert_element_type(clamped, np.int32)


def _renumber(dims: Sequence[int], index_vector_dim: int) -> tuple[int, ...]:
  return tuple(d - 1 if d > index_vector_dim else d for d in dims)


@rule("stablehlo.gather", padded=_dynamic.gather)
def _gather_rule(op: Op, c: Compiler):
  del c
  d = op.attrs["dimension_numbers"]
  ivd = d["index_vector_dim"]
  dnums = lax.GatherDimensionNumbers(
      offset_dims=d["offset_dims"],
      collapsed_slice_dims=d["collapsed_slice_dims"],
      start_index_map=d["start_index_map"],
      operand_batching_dims=d["operand_batching_dims"],
      start_indices_batching_dims=_renumber(d["start_indices_batching_dims"],
                                            ivd))
  sizes = tuple(op.attrs["slice_sizes"])
  sorted_, unique = (op.attrs.get("indices_are_sorted", False),
                     op.attrs.get("unique_indices", False))
  operand_shape = op.operand_types[0].shape
  hi = [operand_shape[d] - sizes[d] for d in d["start_index_map"]]

  def step(env, x, indices):
    # XLA clamps start indices so that the slice is in bounds: lax's CLIP
    # (whose transpose clamps too, where PROMISE_IN_BOUNDS's would drop).
    indices = _narrowed(_indices_last(indices, ivd), [0] * len(hi), hi)
    return [lax.gather(x, indices, dnums, sizes,
                       indices_are_sorted=sorted_, unique_indices=unique,
                       mode=lax.GatherScatterMode.CLIP)]
  return step


_SCATTERS = {"stablehlo.add": lax.scatter_add, "stablehlo.multiply":
             lax.scatter_mul, "stablehlo.maximum": lax.scatter_max,
             "stablehlo.minimum": lax.scatter_min}


@rule("stablehlo.scatter")
def _scatter_rule(op: Op, c: Compiler):
  del c
  if len(op.operands) != 3:
    raise NoRule("a scatter of several operands")
  body, = op.regions
  kind = _binary_region(body)
  if _dtype(op) == np.bool_:  # or is max, and is min
    kind = {"stablehlo.or": "stablehlo.maximum",
            "stablehlo.and": "stablehlo.minimum"}.get(kind)
  if kind in _SCATTERS:
    fn = _SCATTERS[kind]
  elif (len(body.args) == 2 and not body.ops
        and body.returns == (body.args[1],)):
    fn = lax.scatter
  else:
    raise NoRule("an update region other than add, multiply, maximum, "
                 "minimum or replace")
  d = op.attrs["scatter_dimension_numbers"]
  ivd = d["index_vector_dim"]
  dnums = lax.ScatterDimensionNumbers(
      update_window_dims=d["update_window_dims"],
      inserted_window_dims=d["inserted_window_dims"],
      scatter_dims_to_operand_dims=d["scattered_dims_to_operand_dims"],
      operand_batching_dims=d["input_batching_dims"],
      scatter_indices_batching_dims=_renumber(
          d["scatter_indices_batching_dims"], ivd))
  sorted_, unique = (op.attrs.get("indices_are_sorted", False),
                     op.attrs.get("unique_indices", False))
  operand_shape = op.operand_types[0].shape
  update_shape = op.operand_types[2].shape
  window = [update_shape[w] for w in d["update_window_dims"]]
  # Each operand dimension's window size: 1 where a window dimension is
  # inserted (or a batching dimension), else the next update window size.
  sizes, it = [], iter(window)
  for dim in range(len(operand_shape)):
    sizes.append(1 if dim in d["inserted_window_dims"]
                 or dim in d["input_batching_dims"] else next(it, 1))
  targets = d["scattered_dims_to_operand_dims"]
  lo = [-1] * len(targets)
  hi = [operand_shape[t] - sizes[t] + 1 for t in targets]

  def step(env, x, indices, updates):
    # XLA skips out-of-bounds update windows: lax's FILL_OR_DROP (whose
    # transpose fills with zeros where those windows were dropped).
    indices = _narrowed(_indices_last(indices, ivd), lo, hi)
    return [fn(x, indices, updates, dnums,
               indices_are_sorted=sorted_, unique_indices=unique,
               mode=lax.GatherScatterMode.FILL_OR_DROP)]
  return step


def _sort_key(x: Any, descending: bool) -> Any:
  """An integer key whose signed order is XLA's total order of `x`."""
  dtype = np.dtype(x.dtype)
  nan = None
  if _is_inexact_dtype(dtype) and dtype.itemsize == 1:
    # 8-bit and narrower floats are ordered as XLA orders them: as float32,
    # where the NaN of the types without a negative zero (its bits are
    # -0's) comes first.
    if "fnuz" in dtype.name:
      nan = lax.ne(x, x)
    x = lax.convert_element_type(x, np.float32)
    dtype = np.dtype(np.float32)
  if _is_inexact_dtype(dtype):
    ity = np.dtype(f"int{8 * dtype.itemsize}")
    bits = lax.bitcast_convert_type(x, ity)
    low = _const(np.array(np.iinfo(ity).max, ity))
    bits = lax.select(bits < _const(np.array(0, ity)),
                      lax.bitwise_xor(bits, lax.full_like(bits, low)), bits)
    x = bits
    if nan is not None:
      x = lax.select(nan, lax.full_like(x, np.iinfo(ity).min), x)
  return lax.bitwise_not(x) if descending else x


@rule("stablehlo.sort")
def _sort_rule(op: Op, c: Compiler):
  body, = op.regions
  rank = len(_shape(op))
  dim = op.attrs.get("dimension", -1) % max(rank, 1)
  stable = op.attrs.get("is_stable", False)
  try:
    descending = _one_comparison_of_operand_0(op)
  except NoRule:
    return _comparator_sort(op, c, dim, stable)
  # Ties are elements whose keys are bitwise equal (a total order), so the
  # sorted operand 0 does not depend on their order, nor do payloads that
  # are operand 0 again or that no result of the module needs (tf2xla's SVD
  # sorts the singular vectors along with the values, also where it returns
  # only the values). Other payloads of an unstable sort come out in the
  # order of ties of XLA's implementation (XLA:CPU sorts with std::sort,
  # which keeps no order of ties of more than 16 elements): the op itself
  # gives that order, where XLA does not sort it otherwise (_sort).
  if not stable and any(r in c.live and x != op.operands[0]
                        for x, r in zip(op.operands[1:], op.results[1:])):
    return _comparator_sort(op, c, dim, stable)

  def step(env, *xs):
    key = _sort_key(xs[0], descending)
    out = lax.sort((key, *xs), dimension=dim, is_stable=True, num_keys=1)
    return list(out[1:])
  return step


def _one_comparison_of_operand_0(op: Op) -> bool:
  """Whether a comparator that is one strict comparison is descending.

  Raises NoRule for any other comparator.
  """
  body, = op.regions
  cmp = body.ops[0] if len(body.ops) == 1 else None
  if cmp is None or cmp.name != "stablehlo.compare" or (
      cmp.results != body.returns):
    raise NoRule("a comparator other than one comparison of operand 0")
  direction = cmp.attrs["comparison_direction"]
  if cmp.operands == body.args[:2]:
    swapped = False
  elif cmp.operands == body.args[1::-1]:
    swapped = True
  else:
    raise NoRule("a comparator that compares other than operand 0")
  if direction not in ("LT", "GT"):
    raise NoRule(f"a {direction} comparator (not a strict order)")
  dtype = op.operand_types[0].dtype
  ctype = cmp.attrs.get("compare_type", "NOTYPE")
  if _is_inexact_dtype(dtype):
    if ctype != "TOTALORDER" or np.issubdtype(dtype, np.complexfloating):
      raise NoRule(f"a {ctype} comparator on {dtype} (only TOTALORDER "
                   "comparisons of real floats are a strict order)")
  elif dtype == np.bool_:
    raise NoRule("a comparator on booleans")
  else:
    expected = _integer_order(dtype)
    if ctype not in ("NOTYPE", expected):
      raise NoRule(f"compare_type {ctype} on {dtype}")
  return (direction == "GT") != swapped


def _comparator_sort(op: Op, c: Compiler, dim: int, stable: bool):
  """The sort as itself: :data:`._sort.sort_p` with the op's comparator."""
  body, = op.regions
  # Values of the enclosing function the comparator reads (jnp.sort's
  # constants, which MLIR hoists out of the region): constants only, which
  # the comparator's lowering writes into the region again.
  captured = {v: c.constants.get(v) for v in _ir.free_values(body)}
  computed = [v for v, x in captured.items() if x is None]
  if computed:
    raise NoRule(f"a comparator that reads {len(computed)} values the "
                 "enclosing function computes at run time")
  # The operands XLA keeps (it drops those whose results are not used).
  kept = [op.operands[0]] + [x for x, r in zip(op.operands[1:],
                                               op.results[1:]) if r in c.live]
  if all(x in c.maybe_constant for x in kept):
    raise NoRule("a sort of constants (XLA constant-folds it, in another "
                 "order of ties than it sorts at run time)")
  if (not stable and len(kept) == 2 and kept[1] in c.maybe_constant
      and not _ascending(body)):
    raise NoRule("an unstable sort of keys and one constant payload (XLA "
                 "may rewrite it, an argsort, as TopK, which orders ties by "
                 "index, where a transformed sort keeps std::sort's order)")
  with c.reduction_region():
    compiled = c.block(body)
  comparator = _sort.Comparator(
      functools.partial(compiled, outer=captured) if captured else compiled,
      len(body.args),
      text=", ".join(o.name.removeprefix("stablehlo.") for o in body.ops))

  def step(env, *xs):
    del env
    return _sort.sort(xs, comparator=comparator, dimension=dim,
                      is_stable=stable)
  return step


def _ascending(body: _ir.Block) -> bool:
  """Whether a comparator is surely ascending: its result a ``LT``/``LE``
  comparison of a value of its first operand with one of its second.

  (XLA rewrites only descending sorts as TopK.)
  """
  reads: dict[int, set[int]] = {a: {i} for i, a in enumerate(body.args)}
  for op in body.ops:
    for r in op.results:
      reads[r] = set().union(*(reads.get(v, set()) for v in op.operands))
  last = body.ops[-1] if body.ops else None
  if (last is None or last.name != "stablehlo.compare"
      or last.results != body.returns
      or last.attrs["comparison_direction"] not in ("LT", "LE")):
    return False
  lhs, rhs = (reads.get(v, set()) for v in last.operands)
  return lhs == {0} and rhs == {1}


@rule("stablehlo.while")
def _while_rule(op: Op, c: Compiler):
  cond_block, body_block = op.regions
  cond, body = c.block(cond_block), c.block(body_block)
  # A loop whose condition reads only counters (tf.while_loop with a
  # counter, tf.map_fn, tf.scan, Keras' recurrent layers) runs a number of
  # times known now: a scan of that length, which JAX also transposes.
  trips = _loops.trip_count(op, c.funcs, c.constants)

  def body_fun(env, carry):
    out = body(*carry, outer=env)
    return tuple(lax.convert_element_type(o, np.dtype(i.dtype))
                 if np.dtype(getattr(o, "dtype", None)) != i.dtype else o
                 for o, i in zip(out, carry))

  if trips is not None:
    def scan_step(env, *init):
      carry, _ = lax.scan(lambda carry, _: (body_fun(env, carry), None),
                          tuple(init), None, length=trips)
      return list(carry)
    return scan_step

  def step(env, *init):
    def cond_fun(carry):
      return cond(*carry, outer=env)[0]
    return list(lax.while_loop(cond_fun, functools.partial(body_fun, env),
                               tuple(init)))
  return step


@rule("stablehlo.if")
def _if_rule(op: Op, c: Compiler):
  true_block, false_block = op.regions
  t, f = c.block(true_block), c.block(false_block)

  def step(env, pred):
    return list(lax.cond(pred, lambda: tuple(t(outer=env)),
                         lambda: tuple(f(outer=env))))
  return step


def _constant_case(op: Op, c: Compiler, index: int):
  """A case of a constant index: its branch only (the other branches, a
  module's code for other platforms, need no rule); its results that the
  branch returns as constants are constants (the index of a later case)."""
  n = len(op.regions)
  block = op.regions[index if 0 <= index < n else n - 1]
  compiled = c.block(block)
  for r, v in zip(op.results, block.returns):
    if v in c.constants:
      c.constants[r] = c.constants[v]
  return lambda env, index: list(compiled(outer=env))


@rule("stablehlo.case")
def _case_rule(op: Op, c: Compiler):
  index = c.constants.get(op.operands[0])
  if index is not None:
    return _constant_case(op, c, int(np.asarray(index)))
  branches = [c.block(b) for b in op.regions]
  n = len(branches)

  def step(env, index):
    # An index out of range runs the last branch (lax.switch would clamp
    # negative ones to the first).
    dtype = np.dtype(index.dtype)
    last = _const(np.array(n - 1, dtype))
    index = lax.select((index < _const(np.array(0, dtype))) | (index > last),
                       last, index)
    return list(lax.switch(index, [functools.partial(
        lambda b: tuple(b(outer=env)), b) for b in branches]))
  return step
