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
"""Ops whose shapes are operands, where those operands are constants.

``dynamic_iota``, ``dynamic_broadcast_in_dim``, ``dynamic_reshape``,
``dynamic_pad``, ``dynamic_gather`` and ``dynamic_conv`` are ``iota``,
``broadcast_in_dim``, ``reshape``, ``pad``, ``gather`` and
``convolution`` with an output shape, slice sizes or padding given as a
tensor operand instead of an attribute (a module exported with symbolic
shapes and refined has them). Where that operand is a constant of the
module (and agrees with the static result type), the op is its static
counterpart, whose rule computes it; where it is computed at run time, the
op has no rule (JAX shapes are static), and the reason says so.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses

from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _registry
from jax._src.export.stablehlo_to_jax._ir import NoRule
import numpy as np

Op = _ir.Op
Compiler = _registry.Compiler
Step = _registry.Step


def _constant(op: Op, c: Compiler, index: int, what: str) -> np.ndarray:
  """The value of operand `index`, a constant of the module."""
  value = c.constants.get(op.operands[index])
  if value is None:
    raise NoRule(f"its {what} (operand {index}) is computed at run time; "
                 "only a constant one has a static shape for JAX")
  return np.asarray(value).astype(np.int64)


def _result_shape(op: Op, shape: np.ndarray, what: str) -> None:
  """Checks that the constant `shape` is the result type's."""
  if tuple(int(d) for d in shape) != tuple(op.result_types[0].shape):
    raise NoRule(f"its {what} {shape.tolist()} disagrees with its result "
                 f"type {op.result_types[0].shape}")


def _as_static(op: Op, c: Compiler, name: str, keep: Sequence[int],
               attrs: dict[str, _ir.AttrValue]) -> Step:
  """`op` as the static op `name` of operands `keep`, with `attrs` added:
  its rule's step, called with those operands only."""
  static = dataclasses.replace(
      op, name=name, operands=tuple(op.operands[i] for i in keep),
      operand_types=tuple(op.operand_types[i] for i in keep),
      attrs={**op.attrs, **attrs})
  step = c.rules.step(static, c)

  def run(env, *operands):
    return step(env, *[operands[i] for i in keep])
  return run


@_registry.rule("stablehlo.dynamic_iota")
def dynamic_iota_rule(op: Op, c: Compiler) -> Step:
  """``iota`` of the constant output shape."""
  _result_shape(op, _constant(op, c, 0, "output shape"), "output shape")
  return _as_static(op, c, "stablehlo.iota", (), {})


@_registry.rule("stablehlo.dynamic_broadcast_in_dim")
def dynamic_broadcast_in_dim_rule(op: Op, c: Compiler) -> Step:
  """``broadcast_in_dim`` to the constant output dimensions."""
  shape = _constant(op, c, 1, "output dimensions")
  _result_shape(op, shape, "output dimensions")
  return _as_static(op, c, "stablehlo.broadcast_in_dim", (0,), {})


@_registry.rule("stablehlo.dynamic_reshape")
def dynamic_reshape_rule(op: Op, c: Compiler) -> Step:
  """``reshape`` to the constant output shape."""
  _result_shape(op, _constant(op, c, 1, "output shape"), "output shape")
  return _as_static(op, c, "stablehlo.reshape", (0,), {})


@_registry.rule("stablehlo.dynamic_pad")
def dynamic_pad_rule(op: Op, c: Compiler) -> Step:
  """``pad`` by the constant low, high and interior padding."""
  low, high, interior = (_constant(op, c, i, what) for i, what in (
      (2, "low padding"), (3, "high padding"), (4, "interior padding")))
  return _as_static(op, c, "stablehlo.pad", (0, 1), {
      "edge_padding_low": tuple(low.tolist()),
      "edge_padding_high": tuple(high.tolist()),
      "interior_padding": tuple(interior.tolist())})


@_registry.rule("stablehlo.dynamic_gather")
def dynamic_gather_rule(op: Op, c: Compiler) -> Step:
  """``gather`` of the constant slice sizes."""
  sizes = _constant(op, c, 2, "slice sizes")
  return _as_static(op, c, "stablehlo.gather", (0, 1),
                    {"slice_sizes": tuple(sizes.tolist())})


@_registry.rule("stablehlo.dynamic_conv")
def dynamic_conv_rule(op: Op, c: Compiler) -> Step:
  """``convolution`` with the constant padding."""
  padding = _constant(op, c, 2, "padding")
  return _as_static(op, c, "stablehlo.convolution", (0, 1),
                    {"padding": padding})
