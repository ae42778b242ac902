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
"""The extension point for a caller's derivatives of a module's ops.

The interpreter expresses each op with ``lax`` operations, so JAX's
derivative of a program is JAX's derivative of those operations. That is
the op's derivative wherever the op is differentiable; where it branches or
kinks (``select``, ``maximum`` at a tie, ``abs`` at 0) JAX follows its own
conventions. A module lowered from another framework's program may need
that framework's conventions instead (TensorFlow's gradients of the TF
ops tf2xla lowered, for a caller of TensorFlow functions). The interpreter knows nothing of any
framework; a caller passes :class:`DerivativeRules` to ``parse``:

* :meth:`DerivativeRules.rule` may give an op a step with the same values
  and the caller's derivative;
* after reading, the program's :class:`DerivativeRecord` says which ops
  branch or kink, which ops each location holds, and which took the
  caller's rule, so that the caller can decide whether JAX's derivative of
  the program is the one it wants.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
import dataclasses
from typing import Protocol

from jax._src import dtypes
from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _registry
import numpy as np

# StableHLO ops that branch or kink: where a module holds one on floating
# values, JAX's derivative of it is one convention among several at the
# branch point.
BRANCHING = frozenset(f"stablehlo.{n}" for n in (
    "select", "abs", "sign", "maximum", "minimum", "clamp", "floor", "ceil",
    "round_nearest_afz", "round_nearest_even", "remainder"))


def is_branching(op: _ir.Op) -> bool:
  """Whether ``op`` branches or kinks on floating values."""
  if op.name not in BRANCHING or not op.result_types:
    return False
  t = op.result_types[0]
  return isinstance(t, _ir.TensorType) and dtypes.issubdtype(t.dtype,
                                                             np.inexact)


class DerivativeRules(Protocol):
  """A caller's derivatives for some ops of the modules it reads."""

  def rule(self, op: _ir.Op, compiler: _registry.Compiler,
           step: _registry.Step) -> _registry.Step | None:
    """A step for ``op`` with the caller's derivative, or None.

    Called for each live op that the interpreter can compute (after its own
    rule accepted the op). The step must compute the same values as the
    interpreter's rule; only its derivative may differ.

    Args:
      op: the op.
      compiler: the compiler reading the module (``compiler.defining``: the
        op that defines each value, to recognize patterns).
      step: the interpreter's own step for ``op`` (``step(env, *operands)``),
        which the caller's may call with operands of its own (the same
        values, another derivative: ``lax.stop_gradient`` of one).

    Returns:
      The step, or None to keep the interpreter's. A step that reads a
      value by its id from ``env`` (not one of its operands) says which:
      :func:`reading`. (Where a repeated group of ops runs as one call, a
      value inside the group that no op reads after it is not in ``env``;
      one read by id without saying so is computed again there, its value
      the same, its derivative's rounding possibly not.)
    """


def reading(step: _registry.Step, values: Iterable[int]) -> _registry.Step:
  """``step``, which reads ``values`` by id from its ``env`` (beyond its
  operands): the interpreter keeps them there."""
  step.reads_by_id = tuple(values)  # type: ignore[attr-defined]
  return step


def read_by_id(step: _registry.Step) -> tuple[int, ...]:
  """The values ``step`` says it reads by id (:func:`reading`)."""
  return getattr(step, "reads_by_id", ())


@dataclasses.dataclass(frozen=True)
class DerivativeRecord:
  """Where JAX's derivative of a program may follow a convention.

  Attributes:
    branching: ``(location, op name)`` of each live op of the function
      bodies that branches or kinks on floating values (:data:`BRANCHING`;
      outside reductions' and sorts' regions, whose ops' rules say how they
      are differentiated), unless all its operands are constants.
    located: for each location name of the module (tf2xla names locations
      after the TF node an op lowers), the names of the live ops there.
    replaced: the locations where :meth:`DerivativeRules.rule` gave a step.
  """
  branching: frozenset[tuple[str, str]] = frozenset()
  located: Mapping[str, frozenset[str]] = dataclasses.field(
      default_factory=dict)
  replaced: frozenset[str] = frozenset()
