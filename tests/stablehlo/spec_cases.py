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
"""The conformance test's cases: one single-op module per op, type, variant.

:data:`OPS` lists every op of the StableHLO specification with the element
types the specification allows for it (its "Inputs" tables) and a maker of
its cases: a :class:`Case` is a module whose ``main`` computes that one op
(with the constants it needs) on arguments of special values
(:mod:`.spec_types`), and, where the op is differentiable, the ``lax``
function JAX's own derivative is taken of. Ops a single-device program
cannot use (collectives, tokens, the replica and partition ids) and ops
without a fixed meaning (``rng``, an unknown ``custom_call``) are cases
too: the engine must refuse them by name.

Written from the specification's text; no file of the StableHLO project is
an input. Needs no JAX to generate (the ``lax`` functions import it when
called).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import functools

import numpy as np

from . import spec_types as st
from .spec_types import tensor

# A function of the case's arguments giving its results, as lax operations.
LaxFn = Callable[..., Sequence[object]]


@dataclasses.dataclass(frozen=True)
class Case:
  """One op of one element type (and variant), as a module.

  Attributes:
    op: the op's name in the specification (``"add"``).
    ty: the element type this case is about (a row of the coverage table).
    variant: what distinguishes cases of the same op and type, or "".
    arg_types, result_types: ``main``'s signature (MLIR types).
    body: ``main``'s body, ending in its ``return``; arguments are
      ``%a0``, ``%a1``, ...
    args: the arguments.
    lax_fn: the equivalent ``lax`` function (for ``jax.jvp``), or None where
      the op has no derivative to check (integer results, refusals).
    tol: 0 to compare with XLA bit for bit, else a relative tolerance (the
      specification leaves the rounding to the implementation, and the
      engine computes it by another algorithm).
    batch_tol: the same, for ``jax.vmap`` against a loop.
    refused: the engine must refuse the case; the text a reason must hold.
    unbatched: the arguments ``jax.vmap`` keeps unbatched (JAX cannot batch
      a reduction's initial value).
    second: other arguments (a second example, for ``jax.vmap``), where
      the first's rolled would not do (positive definite matrices).
    extra_funcs: functions of the module besides ``main``.
    reference: where XLA cannot compile the op itself, the case of the
      specification's equivalent (``dynamic_conv``'s ``convolution``),
      which XLA runs instead.
    apart: XLA runs the module in a compilation of its own, not with the
      engine's program: XLA:CPU's expansion of ``rng_bit_generator`` of one
      shape and two types in one compilation gives one of them the other's
      type.
    extra_funcs: functions of the module besides ``main``.
  """
  op: str
  ty: str
  variant: str
  arg_types: tuple[str, ...]
  result_types: tuple[str, ...]
  body: str
  args: tuple[np.ndarray, ...]
  lax_fn: LaxFn | None = None
  tol: float = 0.
  batch_tol: float = 0.
  refused: str = ""
  unbatched: tuple[int, ...] = ()
  second: tuple[np.ndarray, ...] | None = None
  extra_funcs: str = ""
  reference: Case | None = None
  apart: bool = False

  @property
  def name(self) -> str:
    return f"{self.op}[{self.ty}]" + (f"[{self.variant}]" if self.variant
                                      else "")

  def func(self, name: str = "main", private: bool = False) -> str:
    """The case's function, named `name`."""
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(self.arg_types))
    results = ", ".join(self.result_types)
    vis = "private " if private else ""
    return (f"  func.func {vis}@{name}({params}) -> ({results}) {{\n"
            f"{self.body}\n  }}\n")

  def module(self) -> str:
    """The single-op module."""
    return "module {\n" + self.func() + self.extra_funcs + "}\n"


def _op(name: str, operands: Sequence[str], in_types: Sequence[str],
        out_types: Sequence[str], attrs: str = "", result: str = "%r",
        regions: str = "") -> str:
  """An op in MLIR's generic form."""
  outs = ", ".join(out_types)
  outs = outs if len(out_types) == 1 else f"({outs})"
  attrs = f" {{{attrs}}}" if attrs else ""
  regions = f" ({regions})" if regions else ""
  n = f":{len(out_types)}" if len(out_types) > 1 else ""
  return (f'    {result}{n} = "stablehlo.{name}"({", ".join(operands)})'
          f"{regions}{attrs} : ({', '.join(in_types)}) -> {outs}")


def _ret(values: Sequence[str], types: Sequence[str]) -> str:
  return f"    return {', '.join(values)} : {', '.join(types)}"


def _results(n: int, result: str = "%r") -> list[str]:
  return [result] if n == 1 else [f"{result}#{i}" for i in range(n)]


def single(op: str, ty: str, args: Sequence[np.ndarray],
           arg_types: Sequence[str], out_types: Sequence[str],
           attrs: str = "", variant: str = "", regions: str = "",
           **kw) -> Case:
  """A case of one op applied to all of ``main``'s arguments."""
  names = [f"%a{i}" for i in range(len(args))]
  body = "\n".join([_op(op, names, arg_types, out_types, attrs,
                        regions=regions),
                    _ret(_results(len(out_types)), out_types)])
  return Case(op, ty, variant, tuple(arg_types), tuple(out_types), body,
              tuple(args), **kw)


def _region(arg_types: Sequence[str], lines: Sequence[str],
            returns: Sequence[str], ret_types: Sequence[str]) -> str:
  """A single-block region ``^bb0(%p0, ...)`` of `lines`."""
  params = ", ".join(f"%p{i}: {t}" for i, t in enumerate(arg_types))
  body = "\n".join("    " + ln.strip() for ln in lines)
  return (f"{{\n    ^bb0({params}):\n{body}\n"
          f"      stablehlo.return {', '.join(returns)} : "
          f"{', '.join(ret_types)}\n    }}")


# Elementwise ops.

def _lax(name: str) -> LaxFn:
  """The lax function `name` applied to the case's arguments."""
  def fn(*args):
    from jax import lax  # pylint: disable=g-import-not-at-top
    return [getattr(lax, name)(*args)]
  fn.__name__ = f"lax.{name}"
  return fn


def _differentiable(ty: str, lax_name: str | None) -> LaxFn | None:
  if lax_name is None or ty not in ("f32", "f64", "complex<f32>",
                                     "complex<f64>"):
    return None
  return _lax(lax_name)


def unary(op: str, lax_name: str | None, out: Callable[[str], str] = None,
          tol: float = 0.) -> Callable[[str], list[Case]]:
  """Cases of an elementwise op of one operand: every special value."""
  def make(ty: str) -> list[Case]:
    x = st.values(ty)
    out_ty = out(ty) if out else ty
    return [single(op, ty, [x], [tensor(x.shape, ty)],
                   [tensor(x.shape, out_ty)],
                   lax_fn=_differentiable(out_ty, lax_name)
                   if out_ty == ty or st.is_inexact(ty) else None, tol=tol)]
  return make


def binary(op: str, lax_name: str | None, tol: float = 0.
           ) -> Callable[[str], list[Case]]:
  """Cases of an elementwise op of two operands: every pair of values."""
  def make(ty: str) -> list[Case]:
    x, y = st.pairs(ty)
    t = tensor(x.shape, ty)
    return [single(op, ty, [x, y], [t, t], [t],
                   lax_fn=_differentiable(ty, lax_name), tol=tol)]
  return make


def _shift_amounts(ty: str) -> np.ndarray:
  """Shift amounts: 0 to the width and beyond, and negative ones."""
  bits = st.BITS[ty]
  amounts = [0, 1, bits - 1, bits, bits + 1, 2 * bits, -1]
  info_max = 2 ** (bits - 1) - 1 if ty in st.SINT else 2 ** bits - 1
  return np.array([a for a in amounts if a <= info_max
                   and (a >= 0 or ty in st.SINT)]).astype(st.DTYPES[ty])


def shift(op: str) -> Callable[[str], list[Case]]:
  def make(ty: str) -> list[Case]:
    v, s = st.values(ty), _shift_amounts(ty)
    x, y = np.repeat(v, len(s)), np.tile(s, len(v))
    t = tensor(x.shape, ty)
    return [single(op, ty, [x, y], [t, t], [t])]
  return make


def compare(ty: str) -> list[Case]:
  """Each direction, with each comparison type the element type takes."""
  x, y = st.pairs(ty)
  t, r = tensor(x.shape, ty), tensor(x.shape, "i1")
  if ty in st.FLOAT:
    kinds = ("FLOAT", "TOTALORDER")
  elif ty in st.COMPLEX:
    kinds = ("FLOAT",)
  else:
    kinds = ("SIGNED",) if ty in st.SINT else ("UNSIGNED",)
  directions = ("EQ", "NE", "LT", "LE", "GT", "GE")
  return [single("compare", ty, [x, y], [t, t], [r], variant=f"{d} {k}",
                 attrs=f"comparison_direction = #stablehlo<comparison_"
                       f"direction {d}>, compare_type = #stablehlo<"
                       f"comparison_type {k}>")
          for d in directions for k in kinds]


def select(ty: str) -> list[Case]:
  x, y = st.pairs(ty)
  p = np.arange(len(x)) % 3 == 0
  t = tensor(x.shape, ty)
  return [single("select", ty, [p, x, y], [tensor(p.shape, "i1"), t, t], [t],
                 lax_fn=_differentiable(ty, "select")),
          single("select", ty, [np.array(True), x, y],
                 [tensor((), "i1"), t, t], [t], variant="scalar predicate")]


def clamp(ty: str) -> list[Case]:
  v = st.values(ty)[:12]
  lo, hi = np.repeat(v, len(v)), np.tile(v, len(v))
  x = np.resize(st.values(ty)[::-1], lo.shape)
  t = tensor(x.shape, ty)
  return [single("clamp", ty, [lo, x, hi], [t, t, t], [t],
                 lax_fn=_differentiable(ty, "clamp")),
          single("clamp", ty, [lo[:1].reshape(()), x, hi[-1:].reshape(())],
                 [tensor((), ty), t, tensor((), ty)], [t],
                 variant="scalar bounds")]


def complex_(ty: str) -> list[Case]:
  x, y = st.pairs(ty)
  t = tensor(x.shape, ty)
  out = {"f32": "complex<f32>", "f64": "complex<f64>"}[ty]
  return [single("complex", ty, [x, y], [t, t], [tensor(x.shape, out)],
                 lax_fn=_lax("complex"))]


def _real_of(ty: str) -> str:
  return st.real_part(ty)


def _parts(op: str) -> Callable[[str], list[Case]]:
  """real, imag: of complex values, and of real ones (x, or zeros)."""
  def make(ty: str) -> list[Case]:
    def fn(lax, x):
      if np.iscomplexobj(x):
        return getattr(lax, op)(x)
      return x if op == "real" else lax.full_like(x, 0)
    x = st.values(ty)
    return [single(op, ty, [x], [tensor(x.shape, ty)],
                   [tensor(x.shape, _real_of(ty))], lax_fn=_ad(ty, fn))]
  return make


def convert(ty: str) -> list[Case]:
  """To every element type; of a constant too, to ``i1`` (NumPy's test of
  a complex constant counts its imaginary part, the specification not)."""
  x = st.values(ty)
  t = tensor(x.shape, ty)
  body = "\n".join([
      f"    %c = stablehlo.constant dense<{_literal(x, ty, 'hex')}> : {t}",
      _op("convert", ["%c"], [t], [tensor(x.shape, "i1")]),
      _ret(["%r"], [tensor(x.shape, "i1")])])
  cases = [Case("convert", ty, "constant to i1", (), (tensor(x.shape, "i1"),),
                body, ())]
  for to in st.ALL:
    fn = (_convert_fn(to) if st.is_inexact(ty) and st.is_inexact(to)
          and ty in ("f32", "f64") + st.COMPLEX else None)
    cases.append(single("convert", ty, [x], [tensor(x.shape, ty)],
                        [tensor(x.shape, to)], variant=f"to {to}",
                        lax_fn=fn))
  return cases


def _convert_fn(to: str) -> LaxFn:
  def fn(x):
    from jax import lax  # pylint: disable=g-import-not-at-top
    if np.iscomplexobj(x) and to not in st.COMPLEX:
      x = lax.real(x)
    return [lax.convert_element_type(x, st.DTYPES[to])]
  return fn


def bitcast_convert(ty: str) -> list[Case]:
  """To every type of the same bit width, and of a multiple or fraction."""
  cases = []
  bits = st.BITS[ty]
  for to in st.ALL:
    other = st.BITS[to]
    if (ty in st.COMPLEX) != (to in st.COMPLEX):
      continue  # (C2) complex to complex only
    if other == bits:
      shape_in, shape_out = (6,), (6,)
    elif other < bits and bits % other == 0 and other >= 8:
      shape_in, shape_out = (6,), (6, bits // other)
    elif other > bits and other % bits == 0 and bits >= 8:
      shape_in, shape_out = (6, other // bits), (6,)
    else:
      continue
    x = st.filled(shape_in, ty)
    cases.append(single("bitcast_convert", ty, [x], [tensor(shape_in, ty)],
                        [tensor(shape_out, to)], variant=f"to {to}"))
  return cases


def reduce_precision(ty: str) -> list[Case]:
  x = st.values(ty)
  t = tensor(x.shape, ty)
  return [single("reduce_precision", ty, [x], [t], [t],
                 attrs=f"exponent_bits = {e} : i32, mantissa_bits = {m} : i32",
                 variant=f"e{e}m{m}")
          for e, m in ((5, 10), (8, 7), (4, 3), (2, 1), (11, 52))]


def constant(ty: str) -> list[Case]:
  """The type's values as a constant, in decimal and hexadecimal form."""
  x = st.values(ty)
  t = tensor(x.shape, ty)
  cases = []
  for form in ("decimal", "hex"):
    text = _literal(x, ty, form)
    body = "\n".join([f"    %r = stablehlo.constant dense<{text}> : {t}",
                      _ret(["%r"], [t])])
    cases.append(Case("constant", ty, form, (), (t,), body, ()))
  # Over 100 elements: MLIR prints the constant as one hexadecimal string.
  big = st.filled((6, 25), ty)
  t = tensor(big.shape, ty)
  text = "[" + ", ".join(_literal(row, ty, "hex") for row in big) + "]"
  body = "\n".join([f"    %r = stablehlo.constant dense<{text}> : {t}",
                    _ret(["%r"], [t])])
  return cases + [Case("constant", ty, "150 elements", (), (t,), body, ())]


def _literal(x: np.ndarray, ty: str, form: str) -> str:
  """An MLIR dense literal of `x`: numbers, or each element's bits in hex."""
  def scalar(v) -> str:
    if ty in st.BOOL:
      return "true" if v else "false"
    if ty in st.INT:
      return str(int(v))
    if form == "decimal" and np.isfinite(float(v)):
      return np.format_float_scientific(float(v), unique=True)
    bits = st.BITS[ty]
    raw = np.array(v).view(f"u{np.dtype(st.DTYPES[ty]).itemsize}")
    return f"0x{int(raw) & ((1 << max(bits, 8)) - 1):0{max(bits, 8) // 4}X}"
  if ty in st.COMPLEX:
    part = st.real_part(ty)
    return "[" + ", ".join(
        f"({_literal(np.array([v.real], st.DTYPES[part]), part, form)[1:-1]}"
        f", {_literal(np.array([v.imag], st.DTYPES[part]), part, form)[1:-1]})"
        for v in x) + "]"
  return "[" + ", ".join(scalar(v) for v in x) + "]"


def iota(ty: str) -> list[Case]:
  t = tensor((3, 5), ty)
  return [Case("iota", ty, f"dim {d}", (), (t,), "\n".join([
      f'    %r = "stablehlo.iota"() {{iota_dimension = {d} : i64}} : () -> {t}',
      _ret(["%r"], [t])]), ()) for d in (0, 1)]


# Ops that move, select or combine elements.

def _x(shape: tuple[int, ...], ty: str, shift: int = 0) -> np.ndarray:
  return st.filled(shape, ty, shift)


def _i(*values: int, ty: str = "i32") -> np.ndarray:
  return np.array(values).astype(st.DTYPES[ty])


def _lax_of(make: Callable[..., object]) -> LaxFn:
  """A lax function of the case's arguments: ``make(lax, *args)``."""
  def fn(*args):
    from jax import lax  # pylint: disable=g-import-not-at-top
    out = make(lax, *args)
    return list(out) if isinstance(out, (list, tuple)) else [out]
  return fn


def _ad(ty: str, make: Callable[..., object]) -> LaxFn | None:
  """`make` as a lax function where `ty` is differentiated."""
  return _lax_of(make) if ty in ("f32", "f64", "complex<f32>",
                                  "complex<f64>") else None


def broadcast_in_dim(ty: str) -> list[Case]:
  x = _x((3, 1), ty)
  return [single("broadcast_in_dim", ty, [x], [tensor((3, 1), ty)],
                 [tensor((2, 3, 4), ty)],
                 attrs="broadcast_dimensions = array<i64: 1, 2>",
                 lax_fn=_ad(ty, lambda lax, x: lax.broadcast_in_dim(
                     x, (2, 3, 4), (1, 2))))]


def concatenate(ty: str) -> list[Case]:
  x, y = _x((3, 4), ty), _x((2, 4), ty, 5)
  return [single("concatenate", ty, [x, y], [tensor((3, 4), ty),
                                             tensor((2, 4), ty)],
                 [tensor((5, 4), ty)], attrs="dimension = 0 : i64",
                 lax_fn=_ad(ty, lambda lax, x, y: lax.concatenate([x, y], 0)))]


def pad(ty: str) -> list[Case]:
  x, v = _x((3, 4), ty), _x((), ty, 7)
  return [single("pad", ty, [x, v], [tensor((3, 4), ty), tensor((), ty)],
                 [tensor((6, 5), ty)],
                 attrs="edge_padding_low = array<i64: 1, -1>, "
                       "edge_padding_high = array<i64: 0, 2>, "
                       "interior_padding = array<i64: 1, 0>",
                 lax_fn=_ad(ty, lambda lax, x, v: lax.pad(
                     x, v, ((1, 0, 1), (-1, 2, 0)))))]


def reshape(ty: str) -> list[Case]:
  x = _x((3, 4), ty)
  return [single("reshape", ty, [x], [tensor((3, 4), ty)],
                 [tensor((2, 6), ty)],
                 lax_fn=_ad(ty, lambda lax, x: lax.reshape(x, (2, 6))))]


def reverse(ty: str) -> list[Case]:
  x = _x((3, 4), ty)
  return [single("reverse", ty, [x], [tensor((3, 4), ty)],
                 [tensor((3, 4), ty)], attrs="dimensions = array<i64: 0, 1>",
                 lax_fn=_ad(ty, lambda lax, x: lax.rev(x, (0, 1))))]


def slice_(ty: str) -> list[Case]:
  x = _x((3, 4), ty)
  return [single("slice", ty, [x], [tensor((3, 4), ty)],
                 [tensor((2, 2), ty)],
                 attrs="start_indices = array<i64: 0, 1>, limit_indices = "
                       "array<i64: 3, 4>, strides = array<i64: 2, 2>",
                 lax_fn=_ad(ty, lambda lax, x: lax.slice(
                     x, (0, 1), (3, 4), (2, 2))))]


def transpose(ty: str) -> list[Case]:
  x = _x((3, 4), ty)
  return [single("transpose", ty, [x], [tensor((3, 4), ty)],
                 [tensor((4, 3), ty)], attrs="permutation = array<i64: 1, 0>",
                 lax_fn=_ad(ty, lambda lax, x: lax.transpose(x, (1, 0))))]


def dynamic_slice(ty: str) -> list[Case]:
  """Start indices in range, and out of range (XLA clamps them)."""
  x = _x((3, 4), ty)
  cases = []
  for ity, (i, j) in (("i32", (1, 2)), ("i64", (-1, 9)), ("ui8", (2, 200))):
    idx = [_i(i, ty=ity).reshape(()), _i(j, ty=ity).reshape(())]
    cases.append(single(
        "dynamic_slice", ty, [x, *idx],
        [tensor((3, 4), ty), tensor((), ity), tensor((), ity)],
        [tensor((2, 2), ty)], attrs="slice_sizes = array<i64: 2, 2>",
        variant=f"{ity} indices {i}, {j}",
        lax_fn=_ad(ty, _clamped_slice)))
  return cases


def _clamped_slice(lax, x, i, j):
  """XLA's clamping of the start indices, in their own type."""
  def clamped(k, hi):
    k = lax.max(k, np.zeros((), k.dtype))
    return lax.min(k, np.array(hi).astype(k.dtype))
  return lax.dynamic_slice(x, (clamped(i, 1), clamped(j, 2)), (2, 2))


def dynamic_update_slice(ty: str) -> list[Case]:
  x, u = _x((3, 4), ty), _x((2, 2), ty, 3)
  cases = []
  for ity, (i, j) in (("i32", (1, 2)), ("i64", (-1, 9))):
    idx = [_i(i, ty=ity).reshape(()), _i(j, ty=ity).reshape(())]
    cases.append(single(
        "dynamic_update_slice", ty, [x, u, *idx],
        [tensor((3, 4), ty), tensor((2, 2), ty), tensor((), ity),
         tensor((), ity)], [tensor((3, 4), ty)],
        variant=f"{ity} indices {i}, {j}"))
  return cases


_GATHER = ("dimension_numbers = #stablehlo.gather<offset_dims = [1], "
           "collapsed_slice_dims = [0], start_index_map = [0], "
           "index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>, "
           "indices_are_sorted = false")


def gather(ty: str) -> list[Case]:
  x = _x((3, 4), ty)
  return [single("gather", ty, [x, _i(2, -1, 7, 0).reshape(4, 1)],
                 [tensor((3, 4), ty), tensor((4, 1), "i32")],
                 [tensor((4, 4), ty)], attrs=_GATHER,
                 lax_fn=_ad(ty, _gather_lax))]


def _gather_lax(lax, x, i):
  dnums = lax.GatherDimensionNumbers(offset_dims=(1,),
                                     collapsed_slice_dims=(0,),
                                     start_index_map=(0,))
  return lax.gather(x, i, dnums, (1, 4), mode=lax.GatherScatterMode.CLIP)


def _scatter_region(ty: str, kind: str) -> str:
  s = tensor((), ty)
  if kind == "replace":
    return _region([s, s], [], ["%p1"], [s])
  op = "or" if kind == "combine" and ty in st.BOOL else "add"
  return _region([s, s], [_op(op, ["%p0", "%p1"], [s, s], [s])],
                 ["%r"], [s])


def scatter(ty: str) -> list[Case]:
  """An add (or) region with a repeated index, a replacing one; an index
  out of bounds (its update is skipped)."""
  x, u = _x((3, 4), ty), _x((3, 4), ty, 5)
  attrs = ("scatter_dimension_numbers = #stablehlo.scatter<"
           "update_window_dims = [1], inserted_window_dims = [0], "
           "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, "
           "indices_are_sorted = false, unique_indices = false")
  cases = []
  for kind, idx in (("combine", (2, 0, 2)), ("replace", (2, 5, 0))):
    cases.append(single(
        "scatter", ty, [x, _i(*idx).reshape(3, 1), u],
        [tensor((3, 4), ty), tensor((3, 1), "i32"), tensor((3, 4), ty)],
        [tensor((3, 4), ty)], attrs=attrs, variant=kind,
        regions=_scatter_region(ty, kind),
        lax_fn=_ad(ty, functools.partial(_scatter_lax, kind))))
  return cases


def _scatter_lax(kind, lax, x, i, u):
  dnums = lax.ScatterDimensionNumbers(update_window_dims=(1,),
                                      inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
  fn = lax.scatter_add if kind == "combine" else lax.scatter
  return fn(x, i, u, dnums, mode=lax.GatherScatterMode.FILL_OR_DROP)


def _order(ty: str) -> str:
  """The comparison type of a strict order of `ty`."""
  if ty in st.FLOAT:
    return "TOTALORDER"
  if ty in st.COMPLEX:
    return "FLOAT"
  return "SIGNED" if ty in st.SINT else "UNSIGNED"


def _compare_line(ty: str, a: str, b: str, direction: str = "LT",
                  kind: str | None = None, result: str = "%r") -> str:
  s = tensor((), ty)
  return _op("compare", [a, b], [s, s], [tensor((), "i1")],
             f"comparison_direction = #stablehlo<comparison_direction "
             f"{direction}>, compare_type = #stablehlo<comparison_type "
             f"{kind or _order(ty)}>", result=result)


def sort(ty: str) -> list[Case]:
  """Rows sorted by a strict order, with an index payload; stable or not;
  descending by FLOAT comparison (NaN unordered) too for floats."""
  x = _x((3, 8), ty)
  idx = np.broadcast_to(np.arange(8, dtype=np.int32), (3, 8)).copy()
  s, i = tensor((), ty), tensor((), "i32")
  cases = []
  variants = [("LT", None, "true"), ("LT", None, "false")]
  if ty in st.FLOAT:
    variants.append(("GT", "FLOAT", "true"))
  for direction, kind, stable in variants:
    region = _region([s, s, i, i],
                     [_compare_line(ty, "%p0", "%p1", direction, kind)],
                     ["%r"], [tensor((), "i1")])
    cases.append(single(
        "sort", ty, [x, idx], [tensor((3, 8), ty), tensor((3, 8), "i32")],
        [tensor((3, 8), ty), tensor((3, 8), "i32")],
        attrs=f"dimension = 1 : i64, is_stable = {stable}", regions=region,
        variant=f"{direction} {kind or _order(ty)} stable={stable}",
        lax_fn=_ad(ty, _sort_lax) if direction == "LT" and stable == "true"
        and ty in st.FLOAT else None))
  return cases


def _sort_lax(lax, x, i):
  """A stable ascending sort in the total order (-0 before +0): lax.sort
  keyed by the order's integer image, which no tangent reaches."""
  bits = lax.bitcast_convert_type(x, f"int{8 * x.dtype.itemsize}")
  key = lax.select(bits < 0, lax.bitwise_xor(bits, lax.full_like(
      bits, np.iinfo(bits.dtype).max)), bits)
  return lax.sort((key, x, i), dimension=1, is_stable=True, num_keys=1)[1:]


def _combiner(ty: str) -> str:
  """An associative op of `ty`: add, or `or` for booleans."""
  return "or" if ty in st.BOOL else "add"


def reduce(ty: str) -> list[Case]:
  """A sum (or `or`) over one dimension, and a variadic max with its index."""
  x, init = _x((3, 6), ty), _x((), ty, 4)
  s = tensor((), ty)
  comb = _region([s, s], [_op(_combiner(ty), ["%p0", "%p1"], [s, s], [s])],
                 ["%r"], [s])
  cases = [single("reduce", ty, [x, init], [tensor((3, 6), ty), s],
                  [tensor((3,), ty)], attrs="dimensions = array<i64: 1>",
                  regions=comb, variant=_combiner(ty), unbatched=(1,),
                  lax_fn=_ad(ty, lambda lax, x, i: lax.reduce(x, i, lax.add,
                                                              (1,))))]
  i = tensor((), "i32")
  argmax = _region([s, i, s, i], [
      _compare_line(ty, "%p0", "%p2", "GT", result="%c"),
      _op("select", ["%c", "%p0", "%p2"], ["tensor<i1>", s, s], [s], result="%v"),
      _op("select", ["%c", "%p1", "%p3"], ["tensor<i1>", i, i], [i], result="%k")],
                   ["%v", "%k"], [s, i])
  idx = np.broadcast_to(np.arange(6, dtype=np.int32), (3, 6)).copy()
  cases.append(single(
      "reduce", ty, [x, idx, init, np.array(-1, np.int32)],
      [tensor((3, 6), ty), tensor((3, 6), "i32"), s, i],
      [tensor((3,), ty), tensor((3,), "i32")],
      attrs="dimensions = array<i64: 1>", regions=argmax, variant="argmax",
      unbatched=(2, 3)))
  return cases


def reduce_window(ty: str) -> list[Case]:
  x, init = _x((4, 5), ty), _x((), ty, 4)
  s = tensor((), ty)
  comb = _region([s, s], [_op(_combiner(ty), ["%p0", "%p1"], [s, s], [s])],
                 ["%r"], [s])
  attrs = ("window_dimensions = array<i64: 2, 2>, window_strides = "
           "array<i64: 1, 2>, base_dilations = array<i64: 2, 1>, "
           "window_dilations = array<i64: 1, 2>, padding = dense<[[1, 0], "
           "[0, 1]]> : tensor<2x2xi64>")
  return [single("reduce_window", ty, [x, init], [tensor((4, 5), ty), s],
                 [tensor((7, 2), ty)], attrs=attrs, regions=comb,
                 variant=_combiner(ty), unbatched=(1,),
                 lax_fn=_ad(ty, lambda lax, x, i: lax.reduce_window(
                     x, i, lax.add, (2, 2), (1, 2), ((1, 0), (0, 1)),
                     (2, 1), (1, 2))))]


def select_and_scatter(ty: str) -> list[Case]:
  """The max-pooling gradient's form: select GE, scatter add, init 0."""
  x, src = _x((4, 6), ty), _x((2, 3), ty, 3)
  s = tensor((), ty)
  zero = "false" if ty in st.BOOL else ("(0.0, 0.0)" if ty in st.COMPLEX
                                        else "0" if ty in st.INT else "0.0")
  select = _region([s, s], [_compare_line(ty, "%p0", "%p1", "GE",
                                          "FLOAT" if st.is_inexact(ty)
                                          else None)],
                   ["%r"], [tensor((), "i1")])
  comb = _region([s, s], [_op(_combiner(ty), ["%p0", "%p1"], [s, s], [s])],
                 ["%r"], [s])
  body = "\n".join([
      f"    %z = stablehlo.constant dense<{zero}> : {s}",
      _op("select_and_scatter", ["%a0", "%a1", "%z"],
          [tensor((4, 6), ty), tensor((2, 3), ty), s], [tensor((4, 6), ty)],
          "window_dimensions = array<i64: 2, 2>, "
          "window_strides = array<i64: 2, 2>",
          regions=f"{select}, {comb}"),
      _ret(["%r"], [tensor((4, 6), ty)])])
  return [Case("select_and_scatter", ty, "", (tensor((4, 6), ty),
                                              tensor((2, 3), ty)),
               (tensor((4, 6), ty),), body, (x, src))]


def map_(ty: str) -> list[Case]:
  x, y = _x((3, 4), ty), _x((3, 4), ty, 5)
  s, t = tensor((), ty), tensor((3, 4), ty)
  op = "and" if ty in st.BOOL else "multiply"
  region = _region([s, s], [_op(op, ["%p0", "%p1"], [s, s], [s])],
                   ["%r"], [s])
  return [single("map", ty, [x, y], [t, t], [t],
                 attrs="dimensions = array<i64: 0, 1>", regions=region,
                 lax_fn=_ad(ty, lambda lax, x, y: lax.mul(x, y)))]


def composite(ty: str) -> list[Case]:
  """A composite whose decomposition (a function of the module) is `add`
  (`or` for booleans); its name is unknown to the engine."""
  t = tensor((3, 4), ty)
  x, y = _x((3, 4), ty), _x((3, 4), ty, 5)
  dec = (f"  func.func private @DECOMPOSITION(%x: {t}, %y: {t}) -> {t} {{\n"
         + _op(_combiner(ty), ["%x", "%y"], [t, t], [t]) + "\n"
         + _ret(["%r"], [t]) + "\n  }\n")
  case = single("composite", ty, [x, y], [t, t], [t],
                attrs='name = "example.my_add", composite_attributes = '
                      '{kind = "add"}, decomposition = @DECOMPOSITION, '
                      'version = 1 : i32',
                lax_fn=_ad(ty, lambda lax, x, y: lax.add(x, y)))
  return [dataclasses.replace(case, extra_funcs=dec)]


def while_(ty: str) -> list[Case]:
  """Three iterations that swap two values (any type) and count."""
  t, i = tensor((3,), ty), tensor((), "i32")
  cond = _region([i, t, t], [
      "%n = stablehlo.constant dense<3> : tensor<i32>",
      _compare_line("i32", "%p0", "%n", "LT", "SIGNED")], ["%r"],
                 [tensor((), "i1")])
  body = _region([i, t, t], [
      "%one = stablehlo.constant dense<1> : tensor<i32>",
      _op("add", ["%p0", "%one"], [i, i], [i], result="%k")],
                 ["%k", "%p2", "%p1"], [i, t, t])
  return [single("while", ty, [np.array(0, np.int32), _x((3,), ty),
                               _x((3,), ty, 3)], [i, t, t], [i, t, t],
                 regions=f"{cond}, {body}", lax_fn=_ad(ty, _swaps))]


def _swaps(lax, n, a, b):
  """Three swaps, as a while loop of lax."""
  return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[2], c[1]),
                        (n, a, b))


def _control(op: str, ty: str, selector: np.ndarray, sel_ty: str,
             n: int, variant: str) -> Case:
  """`op` (if, case) selecting one of `n` arguments by its first."""
  t = tensor((3,), ty)
  regions = ", ".join(f"{{\n      stablehlo.return %a{k} : {t}\n    }}"
                      for k in range(1, n + 1))
  body = "\n".join([_op(op, ["%a0"], [tensor((), sel_ty)], [t],
                         regions=regions), _ret(["%r"], [t])])
  args = (selector, *[_x((3,), ty, 3 * k) for k in range(n)])
  fn = _cond if op == "if" else _switch
  return Case(op, ty, variant, (tensor((), sel_ty),) + (t,) * n, (t,), body,
              args, lax_fn=_ad(ty, fn))


def _cond(lax, p, x, y):
  return lax.cond(p, lambda: x, lambda: y)


def _switch(lax, k, *xs):
  """An index out of range is the last branch (the specification)."""
  last = np.int32(len(xs) - 1)
  k = lax.select((k < 0) | (k > last), last, k)
  return lax.switch(k, [lambda x=x: x for x in xs])


def if_(ty: str) -> list[Case]:
  return [_control("if", ty, np.array(p), "i1", 2, f"pred {p}")
          for p in (True, False)]


def case_(ty: str) -> list[Case]:
  """Three branches; an index out of range runs the last one."""
  return [_control("case", ty, np.array(k, np.int32), "i32", 3, f"index {k}")
          for k in (1, -1, 7)]


def tuple_(ty: str) -> list[Case]:
  t, u = tensor((3,), ty), tensor((2,), "i32")
  tt = f"tuple<{t}, {u}>"
  body = "\n".join([
      _op("tuple", ["%a0", "%a1"], [t, u], [tt], result="%t"),
      _op("get_tuple_element", ["%t"], [tt], [t], "index = 0 : i32"),
      _op("get_tuple_element", ["%t"], [tt], [u], "index = 1 : i32",
          result="%s"),
      _ret(["%r", "%s"], [t, u])])
  return [Case(name, ty, "", (t, u), (t, u), body,
               (_x((3,), ty), np.array([4, 5], np.int32)))
          for name in ("tuple", "get_tuple_element")]


def optimization_barrier(ty: str) -> list[Case]:
  t = tensor((3,), ty)
  return [single("optimization_barrier", ty, [_x((3,), ty), _x((3,), ty, 1)],
                 [t, t], [t, t])]


def get_dimension_size(ty: str) -> list[Case]:
  return [single("get_dimension_size", ty, [_x((3, 4), ty)],
                 [tensor((3, 4), ty)], [tensor((), "i32")],
                 attrs="dimension = 1 : i64")]


# Products, convolutions, factorizations, FFTs.

def _ordinary(shape: tuple[int, ...], ty: str, seed: int) -> np.ndarray:
  """Small integers (exact in every type; sums too, in any order)."""
  rng = np.random.default_rng(seed)
  if ty in st.BOOL:
    return rng.integers(0, 2, shape).astype(bool)
  lo = 0 if ty in st.UINT or ty == "f8E8M0FNU" else -1
  hi = 2 if ty in ("i2", "ui2", "f4E2M1FN") else 3
  x = rng.integers(lo, hi, shape).astype(np.float64)
  if ty in st.COMPLEX:
    x = x + 1j * rng.integers(-2, 3, shape)
  if ty == "f8E8M0FNU":
    x = 2. ** x
  return x.astype(st.DTYPES[ty])


_DOT = ("dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = "
        "[0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = "
        "[2], rhs_contracting_dimensions = [1]>")

# dot_general algorithms: (lhs, rhs precision types, accumulation type).
_ALGORITHMS = {"f32": ("f32", "f32", "f32"), "f64": ("f64", "f64", "f64"),
               "bf16": ("bf16", "bf16", "f32"), "f16": ("f16", "f16", "f32")}


def dot_general(ty: str) -> list[Case]:
  """Batched matrix products of small integers, and of special values;
  with a dot algorithm where the type has one."""
  lt, rt, out = (tensor((2, 3, 4), ty), tensor((2, 4, 5), ty),
                 tensor((2, 3, 5), ty))
  fn = _ad(ty, lambda lax, x, y: lax.dot_general(
      x, y, (((2,), (1,)), ((0,), (0,))),
      precision=lax.Precision.HIGHEST))
  cases = [single("dot_general", ty, [_ordinary((2, 3, 4), ty, 0),
                                      _ordinary((2, 4, 5), ty, 1)],
                  [lt, rt], [out], attrs=_DOT, variant="small integers",
                  lax_fn=fn),
           single("dot_general", ty, [_x((2, 3, 4), ty), _x((2, 4, 5), ty, 7)],
                  [lt, rt], [out], attrs=_DOT, variant="special values")]
  if ty in _ALGORITHMS:
    lhs, rhs, acc = _ALGORITHMS[ty]
    algo = (f"algorithm = #stablehlo.dot_algorithm<lhs_precision_type = "
            f"{lhs}, rhs_precision_type = {rhs}, accumulation_type = {acc}, "
            "lhs_component_count = 1, rhs_component_count = 1, "
            "num_primitive_operations = 1, allow_imprecise_accumulation = "
            "false>")
    cases.append(single("dot_general", ty, [_ordinary((2, 3, 4), ty, 0),
                                            _ordinary((2, 4, 5), ty, 1)],
                        [lt, rt], [out], attrs=f"{_DOT}, {algo}",
                        variant=f"algorithm {lhs} {rhs} {acc}"))
  return cases


_CONV = ("dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->"
         "[b, f, 0, 1]>, window_strides = array<i64: 1, 2>, lhs_dilation = "
         "array<i64: 1, 1>, rhs_dilation = array<i64: 2, 1>, window_reversal "
         "= array<i1: false, true>, feature_group_count = 1 : i64, "
         "batch_group_count = 1 : i64")
_CONV_PADDING = "padding = dense<[[1, 0], [0, 1]]> : tensor<2x2xi64>"


def _conv_lax(lax, x, w):
  return lax.conv_general_dilated(
      x, lax.rev(w, (3,)), (1, 2), ((1, 0), (0, 1)), (1, 1), (2, 1),
      ("NCHW", "OIHW", "NCHW"), precision=lax.Precision.HIGHEST)


def convolution(ty: str) -> list[Case]:
  lt, rt, out = (tensor((1, 2, 5, 5), ty), tensor((3, 2, 2, 2), ty),
                 tensor((1, 3, 4, 3), ty))
  return [single("convolution", ty, [_ordinary((1, 2, 5, 5), ty, 2),
                                     _ordinary((3, 2, 2, 2), ty, 3)],
                 [lt, rt], [out], attrs=f"{_CONV}, {_CONV_PADDING}",
                 lax_fn=_ad(ty, _conv_lax))]


def _spd(ty: str, seed: int = 4) -> np.ndarray:
  """A Hermitian positive definite 3x3 matrix of small integers."""
  m = _ordinary((3, 3), ty, seed).astype(np.complex128)
  a = m @ m.conj().T + 3 * np.eye(3)
  return (a if ty in st.COMPLEX else a.real).astype(st.DTYPES[ty])


def _factor_tol(ty: str) -> float:
  return {"f64": 1e-12, "complex<f64>": 1e-12, "f32": 1e-5,
          "complex<f32>": 1e-5}.get(ty, 1e-2)


def cholesky(ty: str) -> list[Case]:
  """Of a positive definite matrix (otherwise implementation-defined);
  XLA's blocked algorithm and LAPACK's round otherwise: to a tolerance."""
  t = tensor((3, 3), ty)
  return [single("cholesky", ty, [_spd(ty)], [t], [t],
                 attrs=f"lower = {lower}", variant=f"lower={lower}",
                 second=(_spd(ty, 8),),
                 tol=_factor_tol(ty), batch_tol=_factor_tol(ty),
                 lax_fn=_ad(ty, functools.partial(_cholesky_lax, lower)))
          for lower in ("true", "false")]


def _cholesky_lax(lower, lax, a):
  """The factor of the Hermitian matrix of the triangle the op reads."""
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  if lower != "true":
    a = jnp.conj(a.T)
  strict = jnp.tril(a, -1)
  h = strict + jnp.conj(strict.T) + jnp.diag(jnp.real(jnp.diag(a)).astype(
      a.dtype))
  c = lax.linalg.cholesky(h, symmetrize_input=False)
  return c if lower == "true" else jnp.conj(c.T)


def triangular_solve(ty: str) -> list[Case]:
  a = np.tril(_spd(ty)).astype(st.DTYPES[ty])
  b = _ordinary((3, 2), ty, 5)
  second = (np.tril(_spd(ty, 8)).astype(st.DTYPES[ty]),
            _ordinary((3, 2), ty, 9))
  return [single("triangular_solve", ty, [a, b],
                 [tensor((3, 3), ty), tensor((3, 2), ty)],
                 [tensor((3, 2), ty)],
                 attrs=f"left_side = true, lower = true, unit_diagonal = "
                       f"false, transpose_a = #stablehlo<transpose {t}>",
                 variant=t, tol=_factor_tol(ty), batch_tol=_factor_tol(ty),
                 second=second)
          for t in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT")]


def fft(ty: str) -> list[Case]:
  """FFT and IFFT of complex rows, RFFT of real ones, IRFFT back."""
  cases = []
  if ty in st.COMPLEX:
    x = _ordinary((4, 8), ty, 6)
    for kind in ("FFT", "IFFT"):
      cases.append(single("fft", ty, [x], [tensor((4, 8), ty)],
                          [tensor((4, 8), ty)], tol=1e-5, batch_tol=1e-5,
                          attrs=f"fft_type = #stablehlo<fft_type {kind}>, "
                                "fft_length = array<i64: 8>", variant=kind))
    cases.append(single("fft", ty, [x[:, :5]], [tensor((4, 5), ty)],
                        [tensor((4, 8), st.real_part(ty))], tol=1e-5,
                        batch_tol=1e-5, variant="IRFFT",
                        attrs="fft_type = #stablehlo<fft_type IRFFT>, "
                              "fft_length = array<i64: 8>"))
  else:
    out = {"f32": "complex<f32>", "f64": "complex<f64>"}.get(ty, ty)
    cases.append(single("fft", ty, [_ordinary((4, 8), ty, 6)],
                        [tensor((4, 8), ty)], [tensor((4, 5), out)],
                        variant="RFFT", tol=1e-5, batch_tol=1e-5,
                        attrs="fft_type = #stablehlo<fft_type RFFT>, "
                              "fft_length = array<i64: 8>"))
  return cases


def batch_norm(op: str) -> Callable[[str], list[Case]]:
  """The three batch normalization ops (feature dimension 1)."""
  def make(ty: str) -> list[Case]:
    x, f = tensor((2, 3, 4), ty), tensor((3,), ty)
    ordinary = lambda shape, seed: (np.random.default_rng(seed).standard_normal(
        shape)).astype(st.DTYPES[ty])
    variance = np.abs(ordinary((3,), 9)).astype(st.DTYPES[ty])
    operands = {
        "batch_norm_inference": ([x, f, f, f, f], [x], [
            ordinary((2, 3, 4), 1), ordinary((3,), 2), ordinary((3,), 3),
            ordinary((3,), 4), variance]),
        "batch_norm_training": ([x, f, f], [x, f, f], [
            ordinary((2, 3, 4), 1), ordinary((3,), 2), ordinary((3,), 3)]),
        "batch_norm_grad": ([x, f, f, f, x], [x, f, f], [
            ordinary((2, 3, 4), 1), ordinary((3,), 2), ordinary((3,), 4),
            variance, ordinary((2, 3, 4), 5)]),
    }[op]
    ins, outs, args = operands
    return [single(op, ty, args, ins, outs, batch_tol=1e-5,
                   attrs="epsilon = 1.0e-03 : f32, feature_index = 1 : i64")]
  return make


def rng_bit_generator(ty: str) -> list[Case]:
  """Bits of `ty` from each algorithm, with its key type."""
  cases = []
  for n, (alg, key) in enumerate((("DEFAULT", (2,)), ("THREE_FRY", (2,)),
                                  ("PHILOX", (2,)), ("PHILOX", (3,)))):
    k = np.array([42, 7, 3][:key[0]], np.uint64)
    kt = tensor(key, "ui64")
    # (Shapes apart: XLA:CPU gives all but one of several draws of one
    # shape and a non-unsigned type in a compilation the unsigned type.)
    cases.append(single(
        "rng_bit_generator", ty, [k], [kt], [kt, tensor((4, 5 + n), ty)],
        attrs=f"rng_algorithm = #stablehlo<rng_algorithm {alg}>",
        variant=f"{alg} ui64[{key[0]}]", apart=True))
  return cases


def rng(ty: str) -> list[Case]:
  """Numbers of a distribution the implementation defines: refused."""
  s = tensor((), ty)
  body = "\n".join([
      "    %shape = stablehlo.constant dense<[3, 4]> : tensor<2xi64>",
      _op("rng", ["%a0", "%a1", "%shape"], [s, s, "tensor<2xi64>"],
          [tensor((3, 4), ty)],
          "rng_distribution = #stablehlo<rng_distribution UNIFORM>"),
      _ret(["%r"], [tensor((3, 4), ty)])])
  zero, one = (np.array(v).astype(st.DTYPES[ty]) for v in (0, 1))
  return [Case("rng", ty, "UNIFORM", (s, s), (tensor((3, 4), ty),), body,
               (zero, one), refused="stablehlo.rng")]


# Ops whose shapes are operands: computed where those are constants, refused
# (by name, with the reason) where they are computed at run time.

def _with_shape_operand(op: str, ty: str, args: Sequence[np.ndarray],
                        arg_types: Sequence[str], shape_values: np.ndarray,
                        out: str, attrs: str = "", position: int = 1,
                        lax_fn: LaxFn | None = None) -> list[Case]:
  """The op with its shape operand a constant, then an argument."""
  st_ = tensor(shape_values.shape, "i64")
  text = "[" + ", ".join(str(int(v)) for v in shape_values.ravel()) + "]"
  if shape_values.ndim == 2:
    text = "[" + ", ".join("[" + ", ".join(str(int(v)) for v in row) + "]"
                           for row in shape_values) + "]"
  names = [f"%a{i}" for i in range(len(args))]
  const = names[:position] + ["%shape"] + names[position:]
  types = list(arg_types[:position]) + [st_] + list(arg_types[position:])
  body = "\n".join([f"    %shape = stablehlo.constant dense<{text}> : {st_}",
                    _op(op, const, types, [out], attrs), _ret(["%r"], [out])])
  computed = Case(op, ty, "constant shape", tuple(arg_types), (out,), body,
                  tuple(args), lax_fn=lax_fn)
  argument = single(op, ty, [*args[:position], shape_values.astype(np.int64),
                             *args[position:]], types, [out], attrs,
                    variant="shape an argument", refused=f"stablehlo.{op}")
  return [computed, argument]


def dynamic_iota(ty: str) -> list[Case]:
  return _with_shape_operand("dynamic_iota", ty, [], [], np.array([3, 5]),
                             tensor((3, 5), ty), "iota_dimension = 1 : i64",
                             position=0)


def dynamic_broadcast_in_dim(ty: str) -> list[Case]:
  return _with_shape_operand(
      "dynamic_broadcast_in_dim", ty, [_x((3, 1), ty)], [tensor((3, 1), ty)],
      np.array([2, 3, 4]), tensor((2, 3, 4), ty),
      "broadcast_dimensions = array<i64: 1, 2>",
      lax_fn=_ad(ty, lambda lax, x: lax.broadcast_in_dim(x, (2, 3, 4),
                                                         (1, 2))))


def dynamic_reshape(ty: str) -> list[Case]:
  return _with_shape_operand(
      "dynamic_reshape", ty, [_x((3, 4), ty)], [tensor((3, 4), ty)],
      np.array([2, 6]), tensor((2, 6), ty),
      lax_fn=_ad(ty, lambda lax, x: lax.reshape(x, (2, 6))))


def dynamic_pad(ty: str) -> list[Case]:
  """Low, high and interior padding (the three are one operand each: the
  interior one is the argument in the refused variant)."""
  x, v = _x((3, 4), ty), _x((), ty, 7)
  t, s = tensor((3, 4), ty), tensor((), ty)
  out = tensor((6, 6), ty)
  i64 = tensor((2,), "i64")
  consts = "\n".join(
      f"    %{n} = stablehlo.constant dense<{vals}> : {i64}"
      for n, vals in (("lo", "[1, 0]"), ("hi", "[0, 2]"), ("in", "[1, 0]")))
  body = "\n".join([consts, _op("dynamic_pad", ["%a0", "%a1", "%lo", "%hi",
                                                "%in"],
                                [t, s, i64, i64, i64], [out]),
                    _ret(["%r"], [out])])
  computed = Case("dynamic_pad", ty, "constant shape", (t, s), (out,), body,
                  (x, v), lax_fn=_ad(ty, lambda lax, x, v: lax.pad(
                      x, v, ((1, 0, 1), (0, 2, 0)))))
  body = "\n".join([consts.rsplit("\n", 1)[0],
                    _op("dynamic_pad", ["%a0", "%a1", "%lo", "%hi", "%a2"],
                        [t, s, i64, i64, i64], [out]), _ret(["%r"], [out])])
  argument = Case("dynamic_pad", ty, "shape an argument", (t, s, i64), (out,),
                  body, (x, v, np.array([1, 0], np.int64)),
                  refused="stablehlo.dynamic_pad")
  return [computed, argument]


def dynamic_gather(ty: str) -> list[Case]:
  attrs = ("dimension_numbers = #stablehlo.gather<offset_dims = [1], "
           "collapsed_slice_dims = [0], start_index_map = [0], "
           "index_vector_dim = 1>, indices_are_sorted = false")
  return _with_shape_operand(
      "dynamic_gather", ty, [_x((3, 4), ty), _i(2, -1, 7, 0).reshape(4, 1)],
      [tensor((3, 4), ty), tensor((4, 1), "i32")], np.array([1, 4]),
      tensor((4, 4), ty), attrs, position=2)


def dynamic_conv(ty: str) -> list[Case]:
  """XLA cannot translate ``dynamic_conv`` (constant padding or not): the
  reference is the ``convolution`` of that padding, run by XLA."""
  computed, argument = _with_shape_operand(
      "dynamic_conv", ty, [_ordinary((1, 2, 5, 5), ty, 2),
                           _ordinary((3, 2, 2, 2), ty, 3)],
      [tensor((1, 2, 5, 5), ty), tensor((3, 2, 2, 2), ty)],
      np.array([[1, 0], [0, 1]]), tensor((1, 3, 4, 3), ty), _CONV,
      position=2, lax_fn=_ad(ty, _conv_lax))
  return [dataclasses.replace(computed, reference=convolution(ty)[0]),
          argument]


# Ops of several devices, of side effects, or with no fixed meaning: a
# single-device program of this engine refuses them by name.

def _refused(op: str, body: Sequence[str], ty: str = "f32",
             args: Sequence[np.ndarray] | None = None,
             variant: str = "", reason: str | None = None) -> Case:
  t = tensor((4,), ty)
  args = (_x((4,), ty),) if args is None else tuple(args)
  return Case(op, ty, variant, (t,) * len(args), (t,),
              "\n".join([*body, _ret(["%r"], [t])]), args,
              refused=reason or f"stablehlo.{op}")


def refusals(op: str) -> Callable[[str], list[Case]]:
  """A case of `op` that the engine must refuse (f32 operands)."""
  def make(ty: str) -> list[Case]:
    t = tensor((4,), ty)
    s = tensor((), ty)
    add = _region([s, s], [_op("add", ["%p0", "%p1"], [s, s], [s])], ["%r"],
                  [s])
    groups = "replica_groups = dense<[[0]]> : tensor<1x1xi64>"
    token = "    %tok = stablehlo.after_all : !stablehlo.token"
    lines = {
        "all_gather": [_op("all_gather", ["%a0"], [t], [t],
                           f"all_gather_dim = 0 : i64, {groups}")],
        "all_reduce": [_op("all_reduce", ["%a0"], [t], [t], groups,
                           regions=add)],
        "all_to_all": [_op("all_to_all", ["%a0"], [t], [t],
                           f"split_dimension = 0 : i64, concat_dimension = "
                           f"0 : i64, split_count = 1 : i64, {groups}")],
        "reduce_scatter": [_op("reduce_scatter", ["%a0"], [t], [t],
                               f"scatter_dimension = 0 : i64, {groups}",
                               regions=add)],
        "collective_permute": [_op(
            "collective_permute", ["%a0"], [t], [t],
            "source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>")],
        "collective_broadcast": [_op("collective_broadcast", ["%a0"], [t],
                                     [t], groups)],
        "collective_reduce": [_op("collective_reduce", ["%a0"], [t], [t],
                                  groups, regions=add)],
        "replica_id": [_op("replica_id", [], [], ["tensor<ui32>"],
                           result="%id"),
                       _op("convert", ["%id"], ["tensor<ui32>"], [s],
                           result="%c"),
                       _op("broadcast_in_dim", ["%c"], [s], [t],
                           "broadcast_dimensions = array<i64>", "%b"),
                       _op("add", ["%a0", "%b"], [t, t], [t])],
        "partition_id": [_op("partition_id", [], [], ["tensor<ui32>"],
                             result="%id"),
                         _op("convert", ["%id"], ["tensor<ui32>"], [s],
                             result="%c"),
                         _op("broadcast_in_dim", ["%c"], [s], [t],
                             "broadcast_dimensions = array<i64>", "%b"),
                         _op("add", ["%a0", "%b"], [t, t], [t])],
        "after_all": [token, "    %r = stablehlo.add %a0, %a0 : " + t],
        "infeed": [token, f'    %r, %t2 = "stablehlo.infeed"(%tok) '
                          f'{{infeed_config = ""}} : (!stablehlo.token) -> '
                          f"({t}, !stablehlo.token)"],
        "outfeed": [token, f'    %t2 = "stablehlo.outfeed"(%a0, %tok) '
                           f'{{outfeed_config = ""}} : ({t}, '
                           "!stablehlo.token) -> !stablehlo.token",
                    "    %r = stablehlo.add %a0, %a0 : " + t],
        "send": [token, f'    %t2 = "stablehlo.send"(%a0, %tok) '
                        "{channel_handle = #stablehlo.channel_handle<handle "
                        "= 1, type = 2>, is_host_transfer = true} : "
                        f"({t}, !stablehlo.token) -> !stablehlo.token",
                 "    %r = stablehlo.add %a0, %a0 : " + t],
        "recv": [token, '    %r, %t2 = "stablehlo.recv"(%tok) '
                        "{channel_handle = #stablehlo.channel_handle<handle "
                        "= 1, type = 3>, is_host_transfer = true} : "
                        f"(!stablehlo.token) -> ({t}, !stablehlo.token)"],
        "custom_call": [f'    %r = "stablehlo.custom_call"(%a0) '
                        f'{{call_target_name = "my_target"}} : ({t}) -> {t}'],
    }[op]
    reason = ("stablehlo.custom_call @my_target" if op == "custom_call"
              else None)
    return [_refused(op, lines, ty, reason=reason)]
  return make


def quantization(op: str) -> Callable[[str], list[Case]]:
  """Quantized types: refused (their values are not JAX arrays)."""
  def make(ty: str) -> list[Case]:
    t = tensor((4,), ty)
    q = "tensor<4x!quant.uniform<i8:f32, 5.000000e-01:3>>"
    lines = [_op("uniform_quantize", ["%a0"], [t], [q], result="%q"),
             _op("uniform_dequantize", ["%q"], [q], [t])]
    return [_refused(op, lines, ty, reason="quant.uniform")]
  return make


def async_(ty: str) -> list[Case]:
  """An asynchronous slice (the only single-device body the dialect takes).

  XLA cannot compile it (no slice in an ``async_start`` for it): the
  reference is the slice, which the specification says it computes."""
  t, u = tensor((4,), ty), tensor((2,), ty)
  fut = f"!stablehlo.future<{u}>"
  body = "\n".join([
      '    %f = "stablehlo.async_start"(%a0) ({',
      f"    ^bb0(%p0: {t}):",
      "    " + _op("slice", ["%p0"], [t], [u],
                   "start_indices = array<i64: 1>, limit_indices = array<i64: "
                   "3>, strides = array<i64: 1>", result="%s").strip(),
      f"      stablehlo.return %s : {u}",
      f"    }}) : ({t}) -> {fut}",
      _op("async_done", ["%f"], [fut], [u]), _ret(["%r"], [u])])
  reference = single("slice", ty, [_x((4,), ty)], [t], [u],
                     attrs="start_indices = array<i64: 1>, limit_indices = "
                           "array<i64: 3>, strides = array<i64: 1>")
  return [Case("async_start", ty, "", (t,), (u,), body, (_x((4,), ty),),
               reference=reference)]


# Every op of the specification: the element types it allows, its cases.

_NUMERIC = st.INT + st.FLOAT + st.COMPLEX
_INEXACT = st.FLOAT + st.COMPLEX
_SIGNED = st.SINT + st.FLOAT + st.COMPLEX
_ORDERED = st.BOOL + st.INT + st.FLOAT  # and complex: lexicographic


@dataclasses.dataclass(frozen=True)
class OpSpec:
  types: tuple[str, ...]
  make: Callable[[str], list[Case]]


def _float_unary(op: str, lax_name: str) -> OpSpec:
  return OpSpec(_INEXACT, unary(op, lax_name))


def _ops() -> dict[str, OpSpec]:
  ops = {
      "abs": OpSpec(_SIGNED, unary("abs", "abs", out=_real_of)),
      "add": OpSpec(st.ALL, binary("add", "add")),
      "and": OpSpec(st.BOOL + st.INT, binary("and", None)),
      "atan2": OpSpec(_INEXACT, binary("atan2", "atan2")),
      "batch_norm_grad": OpSpec(st.FLOAT, batch_norm("batch_norm_grad")),
      "batch_norm_inference": OpSpec(st.FLOAT,
                                     batch_norm("batch_norm_inference")),
      "batch_norm_training": OpSpec(st.FLOAT,
                                    batch_norm("batch_norm_training")),
      "bitcast_convert": OpSpec(st.ALL, bitcast_convert),
      "broadcast_in_dim": OpSpec(st.ALL, broadcast_in_dim),
      "case": OpSpec(st.ALL, case_),
      "ceil": OpSpec(st.FLOAT, unary("ceil", "ceil")),
      "cholesky": OpSpec(_INEXACT, cholesky),
      "clamp": OpSpec(st.ALL, clamp),
      "compare": OpSpec(st.ALL, compare),
      "complex": OpSpec(("f32", "f64"), complex_),
      "composite": OpSpec(st.ALL, composite),
      "concatenate": OpSpec(st.ALL, concatenate),
      "constant": OpSpec(st.ALL, constant),
      "convert": OpSpec(st.ALL, convert),
      "convolution": OpSpec(st.ALL, convolution),
      "count_leading_zeros": OpSpec(st.INT, unary("count_leading_zeros",
                                                  None)),
      "divide": OpSpec(_NUMERIC, binary("divide", "div")),
      "dot_general": OpSpec(st.ALL, dot_general),
      "dynamic_broadcast_in_dim": OpSpec(st.ALL, dynamic_broadcast_in_dim),
      "dynamic_conv": OpSpec(st.ALL, dynamic_conv),
      "dynamic_gather": OpSpec(st.ALL, dynamic_gather),
      "dynamic_iota": OpSpec(_NUMERIC, dynamic_iota),
      "dynamic_pad": OpSpec(st.ALL, dynamic_pad),
      "dynamic_reshape": OpSpec(st.ALL, dynamic_reshape),
      "dynamic_slice": OpSpec(st.ALL, dynamic_slice),
      "dynamic_update_slice": OpSpec(st.ALL, dynamic_update_slice),
      "fft": OpSpec(("f32", "f64") + st.COMPLEX, fft),
      "floor": OpSpec(st.FLOAT, unary("floor", "floor")),
      "gather": OpSpec(st.ALL, gather),
      "get_dimension_size": OpSpec(st.ALL, get_dimension_size),
      "get_tuple_element": OpSpec(st.ALL, lambda ty: tuple_(ty)[1:]),
      "if": OpSpec(st.ALL, if_),
      "imag": OpSpec(_INEXACT, _parts("imag")),
      "iota": OpSpec(_NUMERIC, iota),
      "is_finite": OpSpec(st.FLOAT, unary("is_finite", None,
                                          out=lambda ty: "i1")),
      "map": OpSpec(st.ALL, map_),
      "maximum": OpSpec(st.ALL, binary("maximum", "max")),
      "minimum": OpSpec(st.ALL, binary("minimum", "min")),
      "multiply": OpSpec(st.ALL, binary("multiply", "mul")),
      "negate": OpSpec(_NUMERIC, unary("negate", "neg")),
      "not": OpSpec(st.BOOL + st.INT, unary("not", None)),
      "optimization_barrier": OpSpec(st.ALL, optimization_barrier),
      "or": OpSpec(st.BOOL + st.INT, binary("or", None)),
      "pad": OpSpec(st.ALL, pad),
      "popcnt": OpSpec(st.INT, unary("popcnt", None)),
      "power": OpSpec(_NUMERIC, binary("power", "pow")),
      "real": OpSpec(_INEXACT, _parts("real")),
      "reduce": OpSpec(st.ALL, reduce),
      "reduce_precision": OpSpec(st.FLOAT, reduce_precision),
      "reduce_window": OpSpec(st.ALL, reduce_window),
      "remainder": OpSpec(_NUMERIC, binary("remainder", "rem")),
      "reshape": OpSpec(st.ALL, reshape),
      "reverse": OpSpec(st.ALL, reverse),
      "rng": OpSpec(st.BOOL + st.INT + st.FLOAT, rng),
      "rng_bit_generator": OpSpec(st.INT + st.FLOAT, rng_bit_generator),
      "round_nearest_afz": OpSpec(st.FLOAT, unary("round_nearest_afz",
                                                  None)),
      "round_nearest_even": OpSpec(st.FLOAT, unary("round_nearest_even",
                                                   None)),
      "scatter": OpSpec(st.ALL, scatter),
      "select": OpSpec(st.ALL, select),
      "select_and_scatter": OpSpec(st.ALL, select_and_scatter),
      "shift_left": OpSpec(st.INT, shift("shift_left")),
      "shift_right_arithmetic": OpSpec(st.INT, shift("shift_right_arithmetic")),
      "shift_right_logical": OpSpec(st.INT, shift("shift_right_logical")),
      "sign": OpSpec(_SIGNED, unary("sign", "sign")),
      "slice": OpSpec(st.ALL, slice_),
      "sort": OpSpec(st.ALL, sort),
      "subtract": OpSpec(_NUMERIC, binary("subtract", "sub")),
      "transpose": OpSpec(st.ALL, transpose),
      "triangular_solve": OpSpec(_INEXACT, triangular_solve),
      "tuple": OpSpec(st.ALL, lambda ty: tuple_(ty)[:1]),
      "while": OpSpec(st.ALL, while_),
      "xor": OpSpec(st.BOOL + st.INT, binary("xor", None)),
      "async_start": OpSpec(st.ALL, async_),
  }
  for op, lax_name in (("cbrt", "cbrt"), ("cosine", "cos"), ("sine", "sin"),
                       ("tan", "tan"), ("tanh", "tanh"),
                       ("exponential", "exp"),
                       ("exponential_minus_one", "expm1"), ("log", "log"),
                       ("log_plus_one", "log1p"), ("logistic", "logistic"),
                       ("sqrt", "sqrt"), ("rsqrt", "rsqrt")):
    ops[op] = _float_unary(op, lax_name)
  for op in ("all_gather", "all_reduce", "all_to_all", "reduce_scatter",
             "collective_permute", "collective_broadcast",
             "collective_reduce", "replica_id",
             "partition_id", "after_all", "infeed", "outfeed", "send",
             "recv", "custom_call"):
    ops[op] = OpSpec(("f32",), refusals(op))
  for op in ("uniform_quantize", "uniform_dequantize"):
    ops[op] = OpSpec(("f32",), quantization(op))
  return dict(sorted(ops.items()))


OPS = _ops()
# The ops of the specification's "Ops" section (its index, as of the
# StableHLO version this jaxlib reads).
SPEC_OPS = tuple("""
abs add after_all all_gather all_reduce all_to_all and async_done async_start
atan2 batch_norm_grad batch_norm_inference batch_norm_training bitcast_convert
broadcast_in_dim case cbrt ceil cholesky clamp collective_broadcast
collective_permute collective_reduce compare complex composite concatenate
constant convert convolution cosine count_leading_zeros custom_call divide
dot_general dynamic_broadcast_in_dim dynamic_conv dynamic_gather dynamic_iota
dynamic_pad dynamic_reshape dynamic_slice dynamic_update_slice exponential
exponential_minus_one fft floor gather get_dimension_size get_tuple_element if
imag infeed iota is_finite log log_plus_one logistic map maximum minimum
multiply negate not optimization_barrier or outfeed pad partition_id popcnt
power real recv reduce reduce_precision reduce_scatter reduce_window remainder
replica_id reshape reverse rng rng_bit_generator round_nearest_afz
round_nearest_even rsqrt scatter select select_and_scatter send shift_left
shift_right_arithmetic shift_right_logical sign sine slice sort sqrt subtract
tan tanh transpose triangular_solve tuple uniform_dequantize uniform_quantize
while xor""".split())
# Ops of the specification with no case of their own: what covers them.
COVERED_BY = {"async_done": "async_start"}


def cases(ops: Sequence[str] | None = None,
          types: Sequence[str] | None = None) -> list[Case]:
  """Every case (of `ops` and `types` where given), in a fixed order."""
  out = []
  for op, spec in OPS.items():
    if ops is not None and op not in ops:
      continue
    for ty in spec.types:
      if types is None or ty in types:
        out.extend(spec.make(ty))
  return out
