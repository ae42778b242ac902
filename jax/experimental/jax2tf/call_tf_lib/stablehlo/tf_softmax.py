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
"""Softmax's and LogSoftmax's lowerings, differentiated by TF's formulas.

tf2xla lowers ``Softmax`` and ``LogSoftmax`` along the last axis as

    e = exp(x - m)                 (m = max(x), broadcast back)
    Softmax:    e / s              (s = sum(e), broadcast back)
    LogSoftmax: (x - m) - log(s)

with the sum accumulated in float32 for float16 and bfloat16, and each
reduction broadcast back through reshapes. JAX's derivative of those ops is
the derivative of softmax, computed the long way: the max's (a mask of its
ties, their count, a division, for a shift that cancels), the
exponential's, the sum's and the division's. TF's gradients take one
product and one sum: ``SoftmaxGrad`` ``(g - sum(g * y)) * y`` and
``LogSoftmaxGrad`` ``g - sum(g) * exp(y)``. On a 2-core CPU, a 4-block
ViT's ``jit(vmap(grad(f)))`` (four softmaxes of attention) took 1.66 ms a
call through JAX's derivative of the module, 1.39 ms through these rules,
and 1.34 ms natively (Keras's JAX backend).

:func:`step` recognizes the pattern at the final op (the ``divide``, or the
``subtract``) and gives it a step whose value is the module's own op and
whose derivative is the softmax's, in ``x``: a ``jax.custom_jvp`` whose
tangent is linear in ``x``'s, so that JAX transposes it and differentiates
it again (the tangents of ``e`` and ``s`` are not used). The rule holds
for any ``m`` constant along the reduced axes (softmax is invariant under
a shift), so the max is only checked to be one; the sum must be a sum of
``e`` from 0 along exactly those axes. Anything else keeps JAX's
derivative of the module's ops, which is also right.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
from jax._src import dtypes
from jax._src.export import stablehlo_to_jax
from jax import lax
import numpy as np

Op = stablehlo_to_jax.Op
Compiler = stablehlo_to_jax.Compiler
Step = stablehlo_to_jax.Step

# The final op of each lowering.
FINAL_OPS = {"Softmax": "stablehlo.divide",
             "LogSoftmax": "stablehlo.subtract"}
# Ops that move a value's elements without changing them: a chain of them
# broadcasts a reduction back.
_MOVES = frozenset({"stablehlo.reshape", "stablehlo.broadcast_in_dim",
                    "stablehlo.convert"})


def step(tf_op_type: str, op: Op, c: Compiler, own: Step,
         stopped: Callable[[int], bool]) -> Step | None:
  """The step of ``op``, the final op of a softmax's lowering, with TF's
  gradient; or None where ``op`` is not one.

  Args:
    tf_op_type: ``"Softmax"`` or ``"LogSoftmax"``, the TF op ``op`` lowers.
    op: the op.
    c: the compiler reading the module.
    own: the interpreter's step for ``op``, which computes the value.
    stopped: whether a value (the softmax's input ``x``) is read through a
      ``StopGradient`` at ``op``'s location.
  """
  if FINAL_OPS.get(tf_op_type) != op.name or len(op.operands) != 2:
    return None
  out = op.result_types[0] if len(op.result_types) == 1 else None
  if (not isinstance(out, stablehlo_to_jax.TensorType) or not out.shape
      or any(out.dynamic) or not _real_float(out.dtype)):
    return None
  found = (_softmax(op, c) if tf_op_type == "Softmax"
           else _log_softmax(op, c))
  if found is None:
    return None
  x, axes = found
  tangent = _TANGENTS[tf_op_type]
  stop = stopped(x)

  def softmax_step(env, a, b):
    @jax.custom_jvp
    def value(x_, a_, b_):
      del x_
      return own(env, a_, b_)[0]

    @value.defjvp
    def value_jvp(primals, tangents):
      y = value(*primals)
      return y, tangent(tangents[0], y, axes)

    x_value = env[x]
    return [value(lax.stop_gradient(x_value) if stop else x_value, a, b)]
  return stablehlo_to_jax.reading(softmax_step, [x])


def _softmax_tangent(tx: jax.Array, y: jax.Array,
                     axes: tuple[int, ...]) -> jax.Array:
  """``SoftmaxGrad``'s form, in forward mode: ``(tx - sum(tx * y)) * y``."""
  return lax.mul(lax.sub(tx, _sum_back(lax.mul(tx, y), axes)), y)


def _log_softmax_tangent(tx: jax.Array, y: jax.Array,
                         axes: tuple[int, ...]) -> jax.Array:
  """``LogSoftmaxGrad``'s form, in forward mode: ``tx - sum(tx * exp(y))``."""
  return lax.sub(tx, _sum_back(lax.mul(tx, lax.exp(y)), axes))


_TANGENTS = {"Softmax": _softmax_tangent, "LogSoftmax": _log_softmax_tangent}


def _sum_back(v: jax.Array, axes: tuple[int, ...]) -> jax.Array:
  """The sum of ``v`` along ``axes``, broadcast back to ``v``'s shape."""
  kept = tuple(d for d in range(v.ndim) if d not in axes)
  return lax.broadcast_in_dim(lax.reduce_sum(v, axes), v.shape, kept)


def _real_float(dtype: np.dtype) -> bool:
  return dtypes.issubdtype(dtype, np.floating)


def _softmax(op: Op, c: Compiler) -> tuple[int, tuple[int, ...]] | None:
  """``(x, axes)`` of ``divide(e, s)``: ``e = exp(x - m)``, ``s`` the sum
  of ``e`` along ``axes`` broadcast back, ``m`` constant along them."""
  e, s = op.operands
  shifted = _operand_of(c, e, "stablehlo.exponential")
  if shifted is None:
    return None
  shift = _shift_of(c, shifted, op.result_types[0].shape)
  if shift is None:
    return None
  x, m = shift
  axes = _sum_of_exp_back(c, s, op.operand_types[1], (), shifted)
  if axes is None or not _constant_along(c, m, op.result_types[0].shape,
                                          axes):
    return None
  return x, axes


def _log_softmax(op: Op, c: Compiler) -> tuple[int, tuple[int, ...]] | None:
  """``(x, axes)`` of ``subtract(x - m, log(s))``: ``s`` the sum of
  ``exp(x - m)`` along ``axes``, broadcast back (after or before the log),
  ``m`` constant along them."""
  shifted, log_back = op.operands
  shape = op.result_types[0].shape
  shift = _shift_of(c, shifted, shape)
  if shift is None:
    return None
  x, m = shift
  origin, chain = _chain(c, log_back, op.operand_types[1])
  log = c.defining.get(origin[0])
  if (log is None or log.name != "stablehlo.log"
      or not _elementwise_of_one(log)):
    return None
  axes = _sum_of_exp_back(c, log.operands[0], log.operand_types[0],
                          tuple(chain), shifted)
  if axes is None or not _constant_along(c, m, shape, axes):
    return None
  return x, axes


def _shift_of(c: Compiler, shifted: int, shape: Sequence[int]
              ) -> tuple[int, int] | None:
  """``(x, m)`` of ``shifted = subtract(x, m)`` of ``shape``, or None."""
  sub = c.defining.get(shifted)
  if (sub is None or sub.name != "stablehlo.subtract"
      or len(sub.operands) != 2
      or any(not isinstance(t, stablehlo_to_jax.TensorType)
             or tuple(t.shape) != tuple(shape)
             for t in sub.operand_types)):
    return None
  x, m = sub.operands
  return x, m


def _operand_of(c: Compiler, value: int, name: str) -> int | None:
  """The operand of the one-operand op ``name`` that defines ``value``."""
  op = c.defining.get(value)
  if op is None or op.name != name or not _elementwise_of_one(op):
    return None
  return op.operands[0]


def _elementwise_of_one(op: Op) -> bool:
  """Whether ``op`` has one operand and one result, of one shape."""
  return (len(op.operands) == 1 and len(op.result_types) == 1
          and isinstance(op.operand_types[0], stablehlo_to_jax.TensorType)
          and isinstance(op.result_types[0], stablehlo_to_jax.TensorType)
          and tuple(op.operand_types[0].shape)
          == tuple(op.result_types[0].shape))


def _sum_of_exp_back(c: Compiler, value: int, value_type: object,
                     after: tuple[Op, ...], shifted: int
                     ) -> tuple[int, ...] | None:
  """The axes along which ``value``, then the moves ``after``, broadcast a
  sum from 0 of ``exp(shifted)`` (or a conversion of it) back to the
  shape of ``shifted``; or None where they do not."""
  origin, chain = _chain(c, value, value_type)
  reduce = c.defining.get(origin[0])
  if (reduce is None or reduce.name != "stablehlo.reduce"
      or len(reduce.operands) != 2 or len(reduce.results) != 1
      or not combines_by(reduce, "stablehlo.add")):
    return None
  init = c.constant(reduce.operands[1])
  if init is None or init.size != 1 or init.reshape(()) != 0:
    return None
  summed, summed_type = reduce.operands[0], reduce.operand_types[0]
  inner, converts = _chain(c, summed, summed_type)
  full = _static_shape(summed_type)
  if (full is None or any(
      m.name != "stablehlo.convert" or not _real_float(m.result_types[0].dtype)
      or not _real_float(m.operand_types[0].dtype) for m in converts)
      or _operand_of(c, inner[0], "stablehlo.exponential") != shifted):
    return None
  axes = tuple(sorted(int(d) for d in reduce.attrs["dimensions"]))
  if not axes:
    return None
  kept = [d for d in range(len(full)) if d not in axes]
  src = _moved(list(range(len(kept))), origin[1], [*chain, *after])
  if src is None or len(src) != len(full):
    return None
  for d, s in enumerate(src):
    if d in axes:
      if s is not None and origin[1][s] != 1:
        return None
    elif full[d] != 1 and s != kept.index(d):
      return None
  return axes


def _constant_along(c: Compiler, value: int, shape: Sequence[int],
                    axes: tuple[int, ...]) -> bool:
  """Whether ``value`` (of ``shape``) moves a value whose elements do not
  depend on the positions along ``axes`` (a broadcast of a reduction)."""
  origin, chain = _chain(c, value, None)
  if origin[1] is None:
    return False
  src = _moved(list(range(len(origin[1]))), origin[1], chain)
  return src is not None and len(src) == len(shape) and all(
      s is None or origin[1][s] == 1 for d, s in enumerate(src) if d in axes)


def _chain(c: Compiler, value: int, value_type: object
           ) -> tuple[tuple[int, tuple[int, ...] | None], list[Op]]:
  """``((origin, its shape), moves)``: the value that ``value`` (of
  ``value_type``, or None for its defining op's) moves, and the moves
  (reshapes, broadcasts, conversions) from it to ``value``, in order. The
  shape is None where it is not a static tensor's."""
  moves: list[Op] = []
  while True:
    op = c.defining.get(value)
    if (op is None or op.name not in _MOVES or len(op.operands) != 1
        or _static_shape(op.operand_types[0]) is None):
      break
    moves.append(op)
    value, value_type = op.operands[0], op.operand_types[0]
  if value_type is None and (op := c.defining.get(value)) is not None:
    value_type = op.result_types[list(op.results).index(value)]
  return (value, _static_shape(value_type)), moves[::-1]


def _static_shape(t: object) -> tuple[int, ...] | None:
  if isinstance(t, stablehlo_to_jax.TensorType) and not any(t.dynamic):
    return tuple(t.shape)
  return None


def _moved(src: list[int | None], shape: tuple[int, ...] | None,
           moves: Sequence[Op]) -> list[int | None] | None:
  """Through ``moves``, which dimension of the origin (``src``: of each
  dimension of a value of ``shape``) each dimension of the result reads,
  None where it is broadcast or of size 1; None where a move does more
  than insert or drop dimensions of size 1 and broadcast."""
  if shape is None:
    return None
  for m in moves:
    t = m.result_types[0]
    out = _static_shape(t)
    if out is None or _static_shape(m.operand_types[0]) != shape:
      return None
    if m.name == "stablehlo.convert":
      if out != shape or not _real_float(t.dtype):
        return None
      continue
    if m.name == "stablehlo.reshape":
      if [n for n in shape if n != 1] != [n for n in out if n != 1]:
        return None
      kept = iter([s for s, n in zip(src, shape) if n != 1])
      src = [next(kept) if n != 1 else None for n in out]
    else:
      dims = [int(d) for d in m.attrs["broadcast_dimensions"]]
      new: list[int | None] = [None] * len(out)
      for i, d in enumerate(dims):
        new[d] = src[i] if shape[i] == out[d] else None
      src = new
    shape = out
  return src


def combines_by(op: Op, name: str) -> bool:
  """Whether ``op`` has one region, ``^(a, b): return name(a, b)`` (a
  reduction's: ``"stablehlo.add"`` for a sum)."""
  if len(op.regions) != 1:
    return False
  block, = op.regions
  if len(block.args) != 2 or len(block.ops) != 1:
    return False
  combine, = block.ops
  return (combine.name == name and not combine.regions
          and sorted(combine.operands) == sorted(block.args)
          and list(combine.results) == list(block.returns))
