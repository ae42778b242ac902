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
"""Sharding and placement annotations, on one device.

``jax.export`` writes where values live and how they are split over
devices: ``with_sharding_constraint`` as ``sdy.sharding_constraint`` (or
the ``Sharding`` custom call of GSPMD modules), ``shard_map`` as
``sdy.manual_computation`` (or ``SPMDFullToShardShape`` /
``SPMDShardToFullShape``), a memory placement as
``annotate_device_placement``, the sharding of results as
``xla.sdy.FuncResultSharding``. None of them changes a value. On one device
each is the identity (a manual computation: its body, on the whole
values); where the module splits a value over several devices (a shard's
shape differs from the whole value's), the op has no rule, and the reason
says that the module needs several devices. A placement is not kept: the
program's values live where JAX puts them.
"""

from __future__ import annotations

from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _registry

NoRule = _ir.NoRule
Op = _ir.Op
Compiler = _registry.Compiler

_SEVERAL_DEVICES = ("it splits a value over several devices (a shard's "
                    "shape differs from the whole value's): the module "
                    "needs several devices, and the interpreter runs it "
                    "on one")


def _identity(op: Op) -> _registry.Step:
  if tuple(op.operand_types) != tuple(op.result_types):
    raise NoRule(_SEVERAL_DEVICES)
  return lambda env, *xs: list(xs)


@_registry.rule("sdy.sharding_constraint", "sdy.reshard",
                "sdy.propagation_barrier",
                "stablehlo.custom_call @Sharding",
                "stablehlo.custom_call @SPMDFullToShardShape",
                "stablehlo.custom_call @SPMDShardToFullShape",
                "stablehlo.custom_call @xla.sdy.FuncResultSharding",
                "stablehlo.custom_call @annotate_device_placement",
                "stablehlo.custom_call @MoveToHost",
                "stablehlo.custom_call @MoveToDevice")
def _annotation_rule(op: Op, c: Compiler) -> _registry.Step:
  """An annotation of where a value lives: the value, on one device."""
  del c
  return _identity(op)


@_registry.rule("sdy.sharding_group")
def _sharding_group_rule(op: Op, c: Compiler) -> _registry.Step:
  """A group of values to be sharded alike: nothing to compute."""
  del op, c
  return lambda env, *xs: []


@_registry.rule("sdy.manual_computation")
def _manual_computation_rule(op: Op, c: Compiler) -> _registry.Step:
  """A ``shard_map``'s body: on one device, of the whole values."""
  body, = op.regions
  if (list(body.arg_types) != list(op.operand_types)
      or len(body.returns) != len(op.results)):
    raise NoRule(_SEVERAL_DEVICES)
  compiled = c.block(body)
  return lambda env, *xs: compiled(*xs, outer=env)
