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
"""Modules whose derivative JAX surely transposes, read from their ops.

Reverse mode transposes JAX's derivative of an interpreted module; JAX
cannot transpose every one (a ``while`` loop whose trip count depends on
the data, a reduction with a region of its own), so ``call_tf`` asks JAX
itself, tracing ``jax.vjp`` of the program
(``path.Interpreted.transposable``): as much work as the user's own
``jax.jacrev`` does again. :func:`surely_transposable` answers without it
for the modules made only of ops whose ``lax`` forms JAX differentiates
into operations it transposes (elementwise arithmetic, shapes, dots,
convolutions, gathers, batch normalization, sums, products, maxima and
minima from their identity, and sum, max and min pooling); for any other
op it says "not sure", and JAX is asked. A CNN's gradient then costs no
second trace of its derivative.
"""

from __future__ import annotations

from collections.abc import Iterator

from jax._src.export import stablehlo_to_jax
import numpy as np

# Ops whose lax forms JAX differentiates into operations it transposes,
# whatever their operands (or that have no derivative: comparisons, bitwise
# and integer ops, constants).
SURE = frozenset(f"stablehlo.{name}" for name in (
    # Elementwise.
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "compare",
    "complex", "convert", "cosine", "divide", "exponential",
    "exponential_minus_one", "floor", "imag", "is_finite", "log",
    "log_plus_one", "logistic", "maximum", "minimum", "multiply", "negate",
    "not", "or", "power", "real", "remainder", "round_nearest_afz",
    "round_nearest_even", "rsqrt", "select", "sign", "sine", "sqrt",
    "subtract", "tan", "tanh", "xor",
    # Shapes, layouts and indexing.
    "broadcast", "broadcast_in_dim", "concatenate", "constant",
    "dynamic_slice", "dynamic_update_slice", "gather", "iota", "pad",
    "reshape", "reverse", "slice", "transpose",
    # Normalization, as the interpreter computes it (elementwise arithmetic
    # and sums from zero).
    "batch_norm_inference", "batch_norm_training",
    # Contractions.
    "dot", "dot_general"))

# The reductions JAX transposes (from their identity): the region's op and
# its identity.
_REDUCTIONS = {"stablehlo.add": 0., "stablehlo.multiply": 1.,
               "stablehlo.maximum": -np.inf, "stablehlo.minimum": np.inf}
# The window reductions JAX transposes: sum, max and min pooling.
_WINDOW_REDUCTIONS = {k: v for k, v in _REDUCTIONS.items()
                      if k != "stablehlo.multiply"}


def surely_transposable(copy: stablehlo_to_jax.ModuleCopy) -> bool:
  """Whether JAX surely transposes its derivative of the module.

  Args:
    copy: the module, read (``stablehlo_to_jax.read``).

  Returns:
    True if every op of every function is in :data:`SURE`, is a reduction
    of one operand that :data:`_REDUCTIONS` names (a window reduction: a
    sum, a maximum or a minimum, as pooling is), from a constant that is
    its identity, or is a convolution of one batch group; False: not sure
    (JAX must be asked).
  """
  constants = _constants(copy)
  return all(_sure(op, constants) for op in _ops(copy))


def _sure(op: stablehlo_to_jax.Op, constants: dict[int, np.ndarray]) -> bool:
  """Whether JAX surely transposes its derivative of ``op``'s lax form."""
  if op.name in SURE:
    return True
  if op.name == "stablehlo.reduce":
    return _reduction_from_identity(op, constants, _REDUCTIONS)
  if op.name == "stablehlo.reduce_window":
    # lax's sum, max and min windows (reduce_window_sum, _max, _min), whose
    # derivatives JAX transposes; not a product (a generic window).
    return _reduction_from_identity(op, constants, _WINDOW_REDUCTIONS)
  if op.name == "stablehlo.convolution":
    # JAX transposes a convolution in both operands; with several batch
    # groups (a kernel's gradient, in TF's gradient graphs) not surely.
    return int(op.attrs.get("batch_group_count", 1)) == 1
  return False


def _constants(copy: stablehlo_to_jax.ModuleCopy) -> dict[int, np.ndarray]:
  """The values of the functions' constants, and of converts of them."""
  constants: dict[int, np.ndarray] = {}
  for op in _ops(copy):
    if op.name == "stablehlo.constant" and len(op.results) == 1:
      constants[op.results[0]] = np.asarray(op.attrs.get("value"))
    elif (op.name == "stablehlo.convert" and len(op.results) == 1
          and op.operands[0] in constants):
      constants[op.results[0]] = constants[op.operands[0]]
  return constants


def _ops(copy: stablehlo_to_jax.ModuleCopy
         ) -> Iterator[stablehlo_to_jax.Op]:
  """Every op of the module's functions (not those of regions)."""
  for f in copy.funcs.values():
    yield from f.body.ops


def _reduction_from_identity(op: stablehlo_to_jax.Op,
                             constants: dict[int, np.ndarray],
                             reductions: dict[str, float]) -> bool:
  """A reduce (or reduce_window) of one operand by an op of
  ``reductions``, from its identity."""
  if len(op.operands) != 2 or len(op.regions) != 1:
    return False
  body = op.regions[0]
  if len(body.ops) != 1 or len(body.args) != 2:
    return False
  combine, = body.ops
  if (combine.name not in reductions or combine.regions
      or sorted(combine.operands) != sorted(body.args)
      or combine.results != body.returns):
    return False
  init = constants.get(op.operands[1])
  if init is None or init.size != 1:
    return False
  identity = reductions[combine.name]
  if not np.isfinite(identity) and not np.issubdtype(
      op.result_types[0].dtype, np.inexact):
    return False  # (an integer max or min: no tangent, but not sure)
  return bool(init.reshape(()) == identity)
