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
"""Bounded dynamic shapes, as XLA computes them: padded values and sizes.

tf2xla compiles ops whose output size depends on the data (``tf.where``,
``tf.unique``, ``tf.boolean_mask``) into values of a *bounded dynamic*
shape: ``set_dimension_size`` gives a value of a static shape (the bound) a
size at run time, ``get_dimension_size`` reads it, and the ops in between
have types such as ``tensor<?x1xi64, #stablehlo.bounds<6, ?>>``. XLA keeps
each such value padded to its bound, and its dynamic padder makes every op
see only the first ``size`` elements of a dynamic dimension.

The same here: a value of a dynamic type is a :class:`Padded`, its data of
the bound's shape and a size for each dynamic dimension (a traced int32, so
that ``jax.vmap`` batches the sizes with the data). The functions here
are the *padded forms* of rules (each given at the op's registration, see
:mod:`._registry`): an op computed on padded values where the padding
cannot reach the elements inside the sizes: elementwise ops, slices,
reshapes that only add or remove unit dimensions, broadcasts, transposes,
gathers at dynamic indices, and reductions, whose padding is replaced by
the initial value first. Any other op with a dynamic shape has no rule:
the module is refused, naming the op, and its caller decides what to do.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _registry
from jax._src.export.stablehlo_to_jax._ir import NoRule
import jax
from jax._src import dtypes
from jax import lax
from jax.typing import ArrayLike
import numpy as np


# What a rule makes of an op: a function of its operands' values (see
# ._registry.Step), and the op's own rule, of which a padded form is made.
Step = _registry.Step
Rule = _registry.Rule


@dataclasses.dataclass(frozen=True)
class Padded:
  """A value of a bounded dynamic shape.

  Attributes:
    data: the value, of the bound's shape; elements beyond a dynamic
      dimension's size are padding.
    sizes: for each dimension, its size (an int32 scalar) if it is dynamic,
      else None.
  """
  data: jax.Array
  sizes: tuple[ArrayLike | None, ...]


def is_dynamic(t: _ir.TensorType | _ir.TupleType | _ir.TokenType) -> bool:
  """Whether ``t`` is a tensor type with a dynamic dimension."""
  return isinstance(t, _ir.TensorType) and any(t.dynamic)


def _data(x: jax.Array | Padded) -> jax.Array:
  return x.data if isinstance(x, Padded) else x


def _sizes(x: jax.Array | Padded, rank: int
           ) -> tuple[ArrayLike | None, ...]:
  return x.sizes if isinstance(x, Padded) else (None,) * rank


def _int32(size: ArrayLike) -> jax.Array:
  return lax.convert_element_type(size, np.int32)


def _wrap(data: jax.Array, sizes: Sequence[ArrayLike | None],
          t: _ir.TensorType | _ir.TupleType | _ir.TokenType
          ) -> jax.Array | Padded:
  """``data`` as a value of type ``t``: padded if ``t`` is dynamic."""
  if not is_dynamic(t):
    if any(s is not None for s in sizes):
      raise NoRule("a dynamic dimension becomes static")
    return data
  sizes = [np.int32(b) if s is None and d else s
           for s, d, b in zip(sizes, t.dynamic, t.shape)]
  sizes = tuple(s if d else None for s, d in zip(sizes, t.dynamic))
  if dtypes.issubdtype(data.dtype, np.inexact):
    # No derivative flows through the padding: its values (a gather at the
    # padding's indices reads real elements) are the results of nothing,
    # and their derivatives (log at 0) would reach real elements as NaN.
    inside = _inside(data.shape, sizes)
    data = lax.select(inside, data, lax.stop_gradient(data))
  return Padded(data, sizes)


def _inside(shape: Sequence[int], sizes: Sequence[ArrayLike | None]
            ) -> jax.Array | None:
  """Where a value of ``shape`` is inside its dynamic ``sizes``."""
  inside = None
  for i, s in enumerate(sizes):
    if s is None:
      continue
    here = lax.lt(lax.broadcasted_iota(np.int32, tuple(shape), i), s)
    inside = here if inside is None else lax.bitwise_and(inside, here)
  return inside


def _one_dynamic_result(op: _ir.Op) -> _ir.TensorType:
  """The op's one result, of a dynamic shape; else NoRule."""
  out_t = op.result_types[0] if op.result_types else None
  if len(op.result_types) != 1 or not isinstance(out_t, _ir.TensorType):
    raise NoRule("a bounded dynamic shape in an op of several results")
  if not is_dynamic(out_t):
    # (A slice of one element of a dynamic dimension: tf2xla reads it at a
    # static index of the padded value, which XLA's padder then defines.)
    raise NoRule("an op whose result of a static shape reads a value of a "
                 "dynamic shape")
  return out_t


def set_dimension_size(op: _ir.Op, c: object, rule: Rule) -> Step:
  """``set_dimension_size``: the value, padded to its new size."""
  del c, rule
  dim, out_t = op.attrs["dimension"], op.result_types[0]
  bound = out_t.shape[dim]
  rank = len(out_t.shape)

  def step(env, x, size):
    sizes = list(_sizes(x, rank))
    sizes[dim] = lax.clamp(np.int32(0), _int32(size), np.int32(bound))
    return [_wrap(_data(x), sizes, out_t)]
  return step


def get_dimension_size(op: _ir.Op, c: object, rule: Rule) -> Step:
  """``get_dimension_size``: a dynamic dimension's size, else the bound."""
  del c, rule
  dim = op.attrs["dimension"]
  operand_t = op.operand_types[0]
  dtype = op.result_types[0].dtype
  bound = np.array(operand_t.shape[dim], dtype)

  def step(env, x):
    size = _sizes(x, len(operand_t.shape))[dim]
    return [bound if size is None
            else lax.convert_element_type(size, dtype)]
  return step


def elementwise(op: _ir.Op, c: object, rule: Rule) -> Step:
  """An elementwise op: the result has the shape (and sizes) of the
  operands."""
  out_t = _one_dynamic_result(op)
  static = rule(op, c)
  rank = len(out_t.shape)

  def step(env, *args):
    sizes = next((a.sizes for a in args
                  if isinstance(a, Padded) and len(a.sizes) == rank),
                 (None,) * rank)
    data = static(env, *[_data(a) for a in args])
    return [_wrap(data[0], sizes, out_t)]
  return step


def _sized(sizes: Callable[[_ir.Op], Callable[..., Sequence[Any]]]
           ) -> Callable[[_ir.Op, object, Rule], Step]:
  """The padded form of an op whose result's sizes are ``sizes(op)`` of
  its operands: the op's rule on the data, the bound's shape."""
  def padded(op: _ir.Op, c: object, rule: Rule) -> Step:
    out_t = _one_dynamic_result(op)
    sizes_of = sizes(op)
    static = rule(op, c)

    def step(env, *args):
      data = static(env, *[_data(a) for a in args])
      return [_wrap(data[0], sizes_of(*args), out_t)]
    return step
  padded.__doc__ = sizes.__doc__
  return padded


def _slice_sizes(op: _ir.Op) -> Callable[..., Sequence[Any]]:
  a = op.attrs
  start, limit = a["start_indices"], a["limit_indices"]
  strides = a.get("strides") or (1,) * len(start)

  def sizes_of(x):
    out = []
    for s, lo, hi, st in zip(_sizes(x, len(start)), start, limit, strides):
      if s is None:
        out.append(None)
        continue
      n = lax.min(s, np.int32(hi)) - np.int32(lo)
      n = lax.div(n + np.int32(st - 1), np.int32(st))
      out.append(lax.max(n, np.int32(0)))
    return out
  return sizes_of


def _reshape_sizes(op: _ir.Op) -> Callable[..., Sequence[Any]]:
  """A reshape that only adds or removes unit dimensions."""
  in_t, out_t = op.operand_types[0], op.result_types[0]
  in_dyn = in_t.dynamic or (False,) * len(in_t.shape)
  out_dyn = out_t.dynamic or (False,) * len(out_t.shape)
  kept_in = [i for i, (n, d) in enumerate(zip(in_t.shape, in_dyn))
             if n != 1 or d]
  kept_out = [j for j, (n, d) in enumerate(zip(out_t.shape, out_dyn))
              if n != 1 or d]
  if ([in_t.shape[i] for i in kept_in] != [out_t.shape[j] for j in kept_out]
      or [in_dyn[i] for i in kept_in] != [out_dyn[j] for j in kept_out]):
    raise NoRule("a reshape of a dynamic dimension (other than adding or "
                 "removing unit dimensions)")
  to_out = dict(zip(kept_in, kept_out))

  def sizes_of(x):
    out: list[Any] = [None] * len(out_t.shape)
    for i, s in enumerate(_sizes(x, len(in_t.shape))):
      if s is not None:
        out[to_out[i]] = s
    return out
  return sizes_of


def _broadcast_sizes(op: _ir.Op) -> Callable[..., Sequence[Any]]:
  dims = op.attrs["broadcast_dimensions"]
  in_rank, out_rank = len(op.operand_types[0].shape), len(
      op.result_types[0].shape)

  def sizes_of(x):
    out: list[Any] = [None] * out_rank
    for i, s in enumerate(_sizes(x, in_rank)):
      out[dims[i]] = s
    return out
  return sizes_of


def _transpose_sizes(op: _ir.Op) -> Callable[..., Sequence[Any]]:
  perm = op.attrs["permutation"]

  def sizes_of(x):
    sizes = _sizes(x, len(perm))
    return [sizes[p] for p in perm]
  return sizes_of


def _gather_sizes(op: _ir.Op) -> Callable[..., Sequence[Any]]:
  """A gather at indices with dynamic batch dimensions (not the operand)."""
  if is_dynamic(op.operand_types[0]):
    raise NoRule("a gather from a value of a dynamic shape")
  d = op.attrs["dimension_numbers"]
  ivd, offset = d["index_vector_dim"], set(d["offset_dims"])
  indices_t, out_t = op.operand_types[1], op.result_types[0]
  rank = len(indices_t.shape)
  if ivd < rank and indices_t.dynamic and indices_t.dynamic[ivd]:
    raise NoRule("a gather with a dynamic index vector")
  batch_out = [j for j in range(len(out_t.shape)) if j not in offset]
  batch_in = [i for i in range(rank) if i != ivd]

  def sizes_of(x, indices):
    del x
    out: list[Any] = [None] * len(out_t.shape)
    for i, j in zip(batch_in, batch_out):
      out[j] = _sizes(indices, rank)[i]
    return out
  return sizes_of


def reduce(op: _ir.Op, c: object, rule: Rule) -> Step:
  """A reduction: the padding of reduced dimensions replaced by the
  initial values, which change nothing."""
  operand_t = op.operand_types[0]
  kept_dynamic = any(d for i, d in enumerate(operand_t.dynamic or ())
                     if i not in set(op.attrs["dimensions"]))
  if kept_dynamic and not all(is_dynamic(t) for t in op.result_types):
    raise NoRule("a reduction whose result loses a dynamic dimension")
  n = len(op.operands) // 2
  dims = tuple(op.attrs["dimensions"])
  rank = len(operand_t.shape)
  kept = [i for i in range(rank) if i not in dims]
  static = rule(op, c)
  out_types = op.result_types
  extreme = _extreme_region(op) if n == 1 else None

  def step(env, *args):
    if extreme is not None and isinstance(args[0], Padded) and any(
        args[0].sizes[i] is not None for i in dims):
      x = args[0]
      out = _masked_extreme(x.data, _inside(x.data.shape, x.sizes),
                            _data(args[1]), dims, extreme)
      return [_wrap(out, [x.sizes[i] for i in kept], out_types[0])]
    xs, inits = args[:n], args[n:]
    sizes = next((a.sizes for a in xs if isinstance(a, Padded)),
                 (None,) * rank)
    masked = []
    for x in xs:
      data = _data(x)
      for i in dims:
        if sizes[i] is not None:
          inside = lax.lt(lax.broadcasted_iota(np.int32, data.shape, i),
                          sizes[i])
          data = lax.select(inside, data, lax.broadcast_in_dim(
              inits[len(masked)], data.shape, ()))
      masked.append(data)
    outs = static(env, *masked, *[_data(i) for i in inits])
    out_sizes = [sizes[i] for i in kept]
    return [_wrap(o, out_sizes, t) for o, t in zip(outs, out_types)]
  return step


# The padded forms of the ops whose result's sizes follow their operands'.
slice_ = _sized(_slice_sizes)
reshape = _sized(_reshape_sizes)
broadcast_in_dim = _sized(_broadcast_sizes)
transpose = _sized(_transpose_sizes)
gather = _sized(_gather_sizes)


def _extreme_region(op: _ir.Op) -> str | None:
  """"max" or "min" for a reduction by ``maximum``/``minimum``, else None."""
  body, = op.regions
  if len(body.ops) != 1 or len(body.args) != 2:
    return None
  inner, = body.ops
  if inner.results != body.returns or set(inner.operands) != set(body.args):
    return None
  return {"stablehlo.maximum": "max",
          "stablehlo.minimum": "min"}.get(inner.name)


def _masked_extreme(data: jax.Array, inside: jax.Array, init: jax.Array,
                    dims: Sequence[int], kind: str) -> jax.Array:
  """``reduce_max``/``min`` of the elements inside; the derivative is
  split among the tied elements inside (as TF's and JAX's are among all),
  not the padding, which the initial value fills and may tie with."""
  reduce = lax.reduce_max if kind == "max" else lax.reduce_min

  @jax.custom_jvp
  def f(x, inside, init):
    return reduce(lax.select(inside, x, lax.broadcast_in_dim(
        init, x.shape, ())), dims)

  @f.defjvp
  def f_jvp(primals, tangents):
    x, inside, init = primals
    t = tangents[0]
    ans = f(x, inside, init)
    kept = [i for i in range(x.ndim) if i not in dims]
    chosen = lax.bitwise_and(
        inside, lax.eq(x, lax.broadcast_in_dim(ans, x.shape, kept)))
    weights = lax.convert_element_type(chosen, x.dtype)
    counts = lax.max(lax.reduce_sum(weights, dims), lax.full_like(ans, 1))
    return ans, lax.div(lax.reduce_sum(lax.mul(t, weights), dims), counts)
  return f(data, inside, init)
