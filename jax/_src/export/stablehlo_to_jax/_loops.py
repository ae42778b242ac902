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
"""The trip count of a ``stablehlo.while`` that does not depend on its data.

tf2xla's loops (``tf.while_loop`` with a counter, ``tf.map_fn``,
``tf.scan``, Keras' recurrent layers) carry counters: values that start as
constants and that the body adds a constant to or subtracts one from (or
passes on unchanged);
their conditions compare those counters with constants. Such a loop runs a
number of iterations that :func:`trip_count` computes when the module is
read, by running the condition on the counters' values with NumPy; the
rule is then a ``lax.scan`` of that length, which JAX differentiates in
reverse mode too (it cannot transpose a ``while_loop``). Anything else
(a condition that reads another value, an op the evaluator does not know)
gives no trip count, and the loop stays a ``while_loop``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jax._src.export.stablehlo_to_jax import _ir
import numpy as np

# Iterations simulated at most; a longer loop stays a while_loop.
MAX_TRIPS = 100_000


class _Unknown:
  """A value the evaluator cannot know (it depends on the loop's data)."""


UNKNOWN = _Unknown()

_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less,
            "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal}
_BINARY = {"stablehlo.and": np.bitwise_and, "stablehlo.or": np.bitwise_or,
           "stablehlo.xor": np.bitwise_xor, "stablehlo.add": np.add,
           "stablehlo.subtract": np.subtract,
           "stablehlo.multiply": np.multiply}


def _is_integral(dtype: np.dtype) -> bool:
  return dtype == np.bool_ or np.issubdtype(dtype, np.integer)


def _eval_op(op: _ir.Op, args: list[Any],
             funcs: Mapping[str, _ir.Func]) -> list[Any]:
  """The op's results on NumPy values; UNKNOWN where it cannot say."""
  n = len(op.results)
  if op.name == "stablehlo.constant":
    return [op.attrs["value"]]
  if op.name == "func.call":
    callee = funcs.get(op.attrs.get("callee"))
    if callee is None:
      return [UNKNOWN] * n
    return evaluate(callee.body, args, funcs, {})
  if any(a is UNKNOWN for a in args) or not all(
      isinstance(t, _ir.TensorType) and _is_integral(t.dtype)
      for t in (*op.operand_types, *op.result_types)):
    # Integer and boolean values only: their arithmetic is exact in NumPy
    # (two's complement wrapping, as XLA's).
    return [UNKNOWN] * n
  out_type = op.result_types[0] if n else None
  with np.errstate(over="ignore"):
    if op.name == "stablehlo.compare":
      dtype = op.operand_types[0].dtype
      signedness = ("UNSIGNED" if dtype == np.bool_ or np.issubdtype(
          dtype, np.unsignedinteger) else "SIGNED")
      if op.attrs.get("compare_type", "NOTYPE") not in ("NOTYPE", signedness):
        return [UNKNOWN]
      direction = op.attrs["comparison_direction"]
      return [np.asarray(_COMPARE[direction](*args))]
    if op.name in _BINARY:
      return [np.asarray(_BINARY[op.name](*args), out_type.dtype)]
    if op.name == "stablehlo.not":
      a, = args
      return [np.logical_not(a) if a.dtype == np.bool_ else np.invert(a)]
    if op.name == "stablehlo.select":
      p, x, y = args
      return [np.where(p, x, y).astype(out_type.dtype)]
    if op.name in ("stablehlo.reshape", "stablehlo.broadcast_in_dim"):
      a, = args
      if a.size != 1:
        return [UNKNOWN]
      return [np.full(out_type.shape, a.reshape(()), out_type.dtype)]
    if op.name == "stablehlo.convert":
      a, = args
      return [np.asarray(a).astype(out_type.dtype)]
  return [UNKNOWN] * n


def evaluate(block: _ir.Block, args: list[Any],
             funcs: Mapping[str, _ir.Func],
             outer: Mapping[int, Any]) -> list[Any]:
  """The block's returned values from NumPy arguments (or UNKNOWN ones).

  Args:
    block: the block.
    args: a value (or UNKNOWN) per block argument.
    funcs: the module's functions (for calls).
    outer: known values of enclosing blocks (others are UNKNOWN).
  """
  env: dict[int, Any] = dict(zip(block.args, args))
  for op in block.ops:
    outs = _eval_op(op, [env.get(v, outer.get(v, UNKNOWN))
                         for v in op.operands], funcs)
    env.update(zip(op.results, outs))
  return [env.get(v, outer.get(v, UNKNOWN)) for v in block.returns]


def _counter_step(body: _ir.Block, k: int,
                  constants: Mapping[int, np.ndarray]) -> np.ndarray | None:
  """What the body adds to carried value ``k`` (0 if it passes it on)."""
  defs = {r: op for op in body.ops for r in op.results}
  local = {op.results[0]: op.attrs["value"] for op in body.ops
           if op.name == "stablehlo.constant"}
  value = body.returns[k]
  while True:
    if value == body.args[k]:
      return np.zeros((), body.arg_types[k].dtype)
    op = defs.get(value)
    if op is None:
      return None
    if op.name == "stablehlo.reshape" or (
        op.name == "stablehlo.convert"
        and op.operand_types == op.result_types):
      value = op.operands[0]
      continue
    if op.name == "stablehlo.add" and body.args[k] in op.operands:
      other = op.operands[1 if op.operands[0] == body.args[k] else 0]
      sign = 1
    elif (op.name == "stablehlo.subtract"
          and op.operands[0] == body.args[k] != op.operands[1]):
      other, sign = op.operands[1], -1  # (a counter counting down)
    else:
      return None
    step = local.get(other, constants.get(other))
    if step is None or np.size(step) != 1:
      return None
    step = np.asarray(step).reshape(())
    with np.errstate(over="ignore"):
      return step if sign == 1 else np.negative(step).astype(step.dtype)


def trip_count(op: _ir.Op, funcs: Mapping[str, _ir.Func],
               constants: Mapping[int, np.ndarray]) -> int | None:
  """The number of iterations of the ``stablehlo.while`` ``op``, or None.

  Args:
    op: the loop.
    funcs: the module's functions.
    constants: the values of constants (of enclosing blocks too), by value
      id.

  Returns:
    The number of times the body runs whatever the loop's other values,
    or None if the condition may depend on them (or the loop runs more
    than :data:`MAX_TRIPS` times).
  """
  cond, body = op.regions
  counters: dict[int, tuple[np.ndarray, np.ndarray]] = {}
  for k, (operand, ty) in enumerate(zip(op.operands, op.operand_types)):
    init = constants.get(operand)
    if (init is None or not isinstance(ty, _ir.TensorType) or ty.shape != ()
        or not np.issubdtype(ty.dtype, np.integer)):
      continue
    step = _counter_step(body, k, constants)
    if step is not None and step.dtype == ty.dtype:
      counters[k] = (np.asarray(init, ty.dtype).reshape(()), step)
  if not counters:
    return None
  values = {k: init for k, (init, _) in counters.items()}
  for trips in range(MAX_TRIPS + 1):
    args = [values.get(k, UNKNOWN) for k in range(len(op.operands))]
    result, = evaluate(cond, args, funcs, constants)
    if result is UNKNOWN or np.shape(result) != ():
      return None
    if not bool(result):
      return trips
    with np.errstate(over="ignore"):
      values = {k: np.asarray(values[k] + step, values[k].dtype)
                for k, (_, step) in counters.items()}
  return None
