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
"""A sort with the module's own comparator, as a JAX primitive.

``lax.sort`` has one comparator (lexicographic, total order, ascending), so
:func:`~._rules._sort_rule` expresses a StableHLO ``sort`` with it only where
the comparator is one ``LT``/``GT`` comparison of operand 0 and the order of
ties cannot show. An unstable sort whose payloads are used (tf2xla's SVD
sorts the singular vectors with the values) comes out in the order of ties
of XLA's implementation, which only the op itself reproduces.

:data:`sort_p` is that op: it lowers to the same ``stablehlo.sort``, with the
same comparator region (the region as ``lax`` operations on scalars) and the
same ``is_stable``. XLA:CPU sorts each slice along the sort dimension on its
own, with ``std::sort`` (``std::stable_sort`` if stable), whose result
depends only on the comparisons' outcomes; so its rules keep that order:

- batching moves the batch axis to the front: each batch element's slice is
  sorted as the unbatched op sorts it;
- the JVP sorts an ``iota`` along as one more payload, which the comparator
  never reads (the comparisons are the primal's, so is the permutation), and
  gathers the tangents with it. The gather is linear, so JAX transposes it:
  reverse mode needs no rule of :data:`sort_p`.

Where XLA sorts by another algorithm, that holds only if it does so both for
the module and for its transformations. Two cases it does not, which the
rule refuses: XLA constant-folds a sort of constants (its evaluator's order
of ties is not the run time's, so a program run op by op would differ), and
rewrites an unstable sort of keys and an ``iota`` followed by slices as
``TopK``, which orders ties by index (a JVP's extra payload prevents that).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import contextlib
from typing import Any

import jax
from jax._src import core
from jax._src import dtypes
from jax._src.interpreters import ad
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import hlo
from jax._src.export.stablehlo_to_jax import _primitive
from jax._src.export.stablehlo_to_jax import compat
from jax import lax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np


class Comparator:
  """A sort's comparator region: ``fn(a0, b0, a1, b1, ...) -> [bool]``.

  Hashed by identity (a region of one parsed module); ``nargs`` is the
  number of scalars it reads, twice the number of operands it was written
  for: a JVP's extra payload comes after them, unread. ``text`` names its
  ops, for printed jaxprs.
  """

  def __init__(self, fn: Callable[..., Sequence[Any]], nargs: int,
               text: str = ""):
    self.fn = fn
    self.nargs = nargs
    self.text = text

  def __call__(self, *scalars: ArrayLike) -> ArrayLike:
    out, = self.fn(*scalars[:self.nargs])
    return out

  def __repr__(self) -> str:
    return f"Comparator({self.text or self.nargs})"  # one line, in jaxprs


def sort(operands: Sequence[ArrayLike], *, comparator: Comparator,
         dimension: int, is_stable: bool) -> list[jax.Array]:
  """Sorts `operands` along `dimension` as ``stablehlo.sort`` does."""
  return sort_p.bind(*operands, comparator=comparator, dimension=dimension,
                     is_stable=is_stable)


def _abstract_eval(*avals, comparator, dimension, is_stable):
  del comparator, is_stable
  shape = avals[0].shape
  if any(a.shape != shape for a in avals) or not 0 <= dimension < len(shape):
    raise TypeError(f"sort of shapes {[a.shape for a in avals]} along "
                    f"dimension {dimension}")
  return [a.update(weak_type=False) for a in avals]


def _flat(values: Sequence[Any]) -> list[ir.Value]:
  """IR values, some of them in sequences (as lowering rules may get them)."""
  return [w for v in values
          for w in (v if isinstance(v, (list, tuple)) else [v])]


def _lower(ctx, *operands, comparator, dimension, is_stable):
  # The comparator is traced now, after the program ran: with the types it
  # was written for (64-bit ones too, as the program keeps them).
  with compat.keeping_64_bit_types() or contextlib.nullcontext():
    return _lower_sort(ctx, *operands, comparator=comparator,
                       dimension=dimension, is_stable=is_stable)


def _lower_sort(ctx, *operands, comparator, dimension, is_stable):
  def ir_type(aval):
    return compat.aval_to_ir_type(ctx.module_context, aval)
  op = hlo.SortOp([ir_type(a) for a in ctx.avals_out],
                  _flat(operands),
                  dimension=mlir.i64_attr(dimension),
                  is_stable=ir.BoolAttr.get(is_stable))
  scalars = [core.ShapedArray((), a.dtype) for a in ctx.avals_in]
  block = op.comparator.blocks.append(*[
      ir_type(a) for a in scalars for _ in range(2)])
  with ir.InsertionPoint(block):
    lower = mlir.lower_fun(comparator, multiple_results=False)
    sub_ctx = ctx.replace(primitive=None,
                          avals_in=[a for a in scalars for _ in range(2)],
                          avals_out=[core.ShapedArray((), np.bool_)])
    out = lower(sub_ctx, *block.arguments)
    hlo.return_(_flat(out))
  return op.results


def _batch(args, dims, *, comparator, dimension, is_stable):
  size, = {x.shape[d] for x, d in zip(args, dims)
           if d is not None}
  args = [lax.broadcast(x, (size,)) if d is None
          else jnp.moveaxis(x, d, 0) for x, d in zip(args, dims)]
  out = sort(args, comparator=comparator, dimension=dimension + 1,
             is_stable=is_stable)
  return out, [0] * len(out)


def _jvp(primals, tangents, *, comparator, dimension, is_stable):
  shape = primals[0].shape
  n = shape[dimension]
  index = (np.int32 if core.is_constant_dim(n) and n < 2**31
           else dtypes.canonicalize_dtype(np.int64))
  *out, perm = sort((*primals, lax.broadcasted_iota(index, shape, dimension)),
                    comparator=comparator, dimension=dimension,
                    is_stable=is_stable)
  out_tangents = [
      t if type(t) is ad.Zero else jnp.take_along_axis(
          t, perm, axis=dimension, mode="promise_in_bounds")
      for t in tangents]
  return out, out_tangents


sort_p = _primitive.op_primitive(
    "stablehlo_sort", abstract_eval=_abstract_eval, lower=_lower,
    batch=_batch, jvp=_jvp, multiple_results=True)
