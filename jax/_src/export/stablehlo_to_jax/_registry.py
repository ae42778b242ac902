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
"""The interpreter's rules, each registered beside its definition, and the
one dispatcher that finds an op's.

A rule ``rule(op, compiler) -> step`` is registered with the decorator
:func:`rule`, right above its definition, under the names of the ops it
expresses::

  @_registry.rule("stablehlo.sort")
  def _sort_rule(op, c): ...

A custom call is registered by its target, as ``"stablehlo.custom_call
@Target"`` (the name :class:`~._interpret.Compiler` reports it by). An op
has one registration: a second one of the same name raises
:class:`DoubleRegistration` when its module is imported.

Where the op may have values of a bounded dynamic shape (:mod:`._dynamic`),
its registration also gives ``padded``: the op on padded values, made from
the op's own rule. :meth:`Registry.step` is the one dispatcher: it picks
the op's registration and, by the op's types, the rule or its padded form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
import contextlib
import dataclasses
from typing import Any, Protocol

from jax._src.export.stablehlo_to_jax import _ir
import numpy as np

NoRule = _ir.NoRule
# A compiled op: ``step(env, *operands) -> results``, ``env`` mapping the
# module's value ids to the values computed so far.
Step = Callable[..., Sequence[Any]]
# A compiled block: ``block(*arguments, outer=env) -> results``, ``outer``
# the values of the enclosing blocks its ops read.
Block = Callable[..., list[Any]]


def takes_scalars(step: Step, *positions: int,
                  constants_only: bool = False) -> Step:
  """Says that ``step`` takes rank-0 values at the operand ``positions``.

  The compiler then gives such an operand that is a ``broadcast_in_dim`` of
  a rank-0 value the rank-0 value itself (see
  ``_interpret.Compiler._operands_given``): lax's elementwise operations
  broadcast a rank-0 operand as the op's broadcast does, so the results are
  the same, and JAX traces (and ``vmap`` batches) one op fewer. A step may
  say so only if it computes the same results from the rank-0 value, at
  each of those positions, as from its broadcast; the compiler keeps one
  operand of the op's shape. A caller's step (``_derivatives``) gets its
  operands as they are, whatever its attributes say.

  Args:
    step: a rule's step.
    *positions: the operand positions.
    constants_only: only rank-0 values that are constants of the module
      (which have no tangent, and no batch dimension): where the lax
      operation's derivative, or its batching, is wrong for another rank-0
      operand.

  Returns:
    ``step``.
  """
  step.scalar_operands = (  # type: ignore[attr-defined]
      frozenset(positions), constants_only)
  return step


def scalar_operands(step: Step) -> tuple[frozenset[int], bool]:
  """The operand positions at which ``step`` takes rank-0 values, and
  whether only constants (:func:`takes_scalars`)."""
  return getattr(step, "scalar_operands", (frozenset(), False))


class Compiler(Protocol):
  """What a rule may ask of the compiler that calls it.

  :class:`~._interpret.Compiler` is the one implementation; the rules, and
  a caller's :class:`~._derivatives.DerivativeRules`, see it through this
  interface, so that they do not depend on the compiler's module (it
  depends on theirs).

  Attributes:
    funcs: the module's functions, by name.
    rules: the registry whose rules compile the ops (a rule may ask it for
      another op's step).
    follow_default_precision: whether dots and convolutions at DEFAULT
      precision take the caller's ``jax_default_matmul_precision``.
    constants: the NumPy value of each value id that is a constant of the
      module; a rule of a constant adds its own.
    no_derivative: the names of the compiled ops whose rule JAX cannot
      differentiate; a rule adds its op's.
    live: the value ids the entry function's results depend on.
    defining: the op that defines each value of the module.
    maybe_constant: the values that may not depend on the entry function's
      arguments (see ``_interpret.maybe_constant_values``).
  """
  funcs: Mapping[str, _ir.Func]
  rules: Registry
  follow_default_precision: bool
  constants: dict[int, Any]
  no_derivative: set[str]
  live: set[int]
  defining: Mapping[int, _ir.Op]
  maybe_constant: frozenset[int]

  def block(self, block: _ir.Block) -> Block:
    """`block` compiled, its live ops each a step."""

  def func(self, name: str) -> Block:
    """The compiled body of the function `name`."""

  def constant(self, value: int) -> np.ndarray | None:
    """The NumPy value of `value` where it is a constant (or a conversion,
    broadcast or reshape of one); else None."""

  def is_live(self, op: _ir.Op) -> bool:
    """Whether the entry function's results depend on `op`."""

  def reduction_region(self) -> contextlib.AbstractContextManager[None]:
    """The context in which a reduction's (or a sort's) region compiles."""


# ``rule(op, compiler) -> step``, or NoRule with the reason.
Rule = Callable[[_ir.Op, Compiler], Step]
# ``padded(op, compiler, rule) -> step``: the op on values of a bounded
# dynamic shape, from its rule (see ._dynamic).
PaddedRule = Callable[[_ir.Op, Compiler, Rule], Step]

CUSTOM_CALL = "stablehlo.custom_call"


class DoubleRegistration(ValueError):
  """An op was registered twice."""


@dataclasses.dataclass(frozen=True)
class Registration:
  """An op's rule, and its form on padded values (None: it has none)."""
  rule: Rule
  padded: PaddedRule | None = None
  where: str = ""  # the rule's module and name, for a double registration


def key(op: _ir.Op) -> str:
  """The name ``op`` is registered (and reported) by: its name, and for a
  custom call its target (``"stablehlo.custom_call @Target"``)."""
  if op.name == CUSTOM_CALL:
    return f"{CUSTOM_CALL} @{op.attrs.get('call_target_name')}"
  return op.name


def _is_dynamic(t: _ir.Type) -> bool:
  return isinstance(t, _ir.TensorType) and any(t.dynamic)


def has_dynamic_shapes(op: _ir.Op) -> bool:
  """Whether an operand or result of ``op`` has a dynamic dimension."""
  return any(_is_dynamic(t) for t in (*op.operand_types, *op.result_types))


# The reason of an op with dynamic shapes whose rule has no padded form.
PADDED_ONLY_IN = (
    "a bounded dynamic shape (tf.where, tf.unique, a tf.RaggedTensor...) in "
    "this op, which the interpreter computes only in elementwise ops, "
    "slices, reshapes, broadcasts, transposes, gathers and reductions")


@dataclasses.dataclass(frozen=True)
class PlatformCalls:
  """One platform's table of custom calls: those its module has rules for,
  with the routine each computes, and how the platform's other calls are
  recognized. The module's rules are registered from it (a target it does
  not hold has none), and a call of the platform without a rule is refused
  with a message built from it (:meth:`Registry.step`).

  Attributes:
    platform: the platform (``"cpu"``, ``"cuda"``, ``"rocm"``, ``"tpu"``).
    library: its calls, as a message names them (``"a CUDA library's"``).
    prefixes: how its libraries' targets begin.
    rules: each target that has a rule: ``(group, routine)``, the routine
      as messages name it and the group of routines it is listed in (a
      phrase: ``"whose routines are LAPACK's"``).
    refused: the platform's targets that have no rule: why, or "" (a
      target of the platform not worth a sentence).
    advice: what to do instead, for the message ("" for none).
  """
  platform: str
  library: str
  prefixes: tuple[str, ...]
  rules: Mapping[str, tuple[str, str]]
  refused: Mapping[str, str] = dataclasses.field(default_factory=dict)
  advice: str = ("an artifact exported for the CPU (platforms=('cpu', ...)) "
                 "batches and differentiates on the CPU")

  def holds(self, target: object) -> bool:
    """Whether `target` is a call of this platform's."""
    return isinstance(target, str) and (
        target.startswith(self.prefixes) or target in self.rules
        or target in self.refused)

  def rules_text(self) -> str:
    """What it has rules for, from :attr:`rules` (and the reasons of
    :attr:`refused`)."""
    groups: dict[str, list[str]] = {}
    for group, routine in self.rules.values():
      routines = groups.setdefault(group, [])
      if routine not in routines:
        routines.append(routine)
    parts = [f"{group} ({', '.join(routines)})"
             for group, routines in groups.items()]
    if len(parts) > 1:
      parts[-2:] = [f"{parts[-2]} and {parts[-1]}"]
    reasons = [reason for reason in self.refused.values() if reason]
    return "; ".join([f"it has rules for its calls {', '.join(parts)}",
                      *reasons])


def unknown_custom_call(target: object,
                        platforms: Sequence[PlatformCalls] = ()) -> str:
  """The reason a custom call of `target` has no rule; a platform's call
  (one of `platforms` holds it) is named with what that platform's table
  has rules for."""
  for calls in platforms:
    if calls.holds(target):
      advice = f"; {calls.advice}" if calls.advice else ""
      return (f"custom call target {target!r}: {calls.library} call, which "
              f"the interpreter has no rule for ({calls.rules_text()})"
              f"{advice}")
  return (f"custom call target {target!r} has no JAX equivalent (or none "
          "with the same results)")


class Registry:
  """The rules by op name; :meth:`step` is the dispatcher."""

  def __init__(self) -> None:
    self._entries: dict[str, Registration] = {}
    self._ops: set[str] = set()
    self._platforms: dict[str, PlatformCalls] = {}

  def add_platform(self, calls: PlatformCalls) -> None:
    """Adds a platform's table of custom calls (see :class:`PlatformCalls`).

    Raises:
      DoubleRegistration: the platform has a table already.
    """
    if calls.platform in self._platforms:
      raise DoubleRegistration(f"the platform {calls.platform} has two "
                               "tables of custom calls")
    self._platforms[calls.platform] = calls

  @property
  def platforms(self) -> list[PlatformCalls]:
    """The platforms' tables of custom calls."""
    return list(self._platforms.values())

  def platform_rule(self, calls: PlatformCalls, *targets: str
                    ) -> Callable[[Rule], Rule]:
    """A decorator: the decorated rule is the custom calls `targets`', each
    of which `calls` (the platform's table) must hold.

    Raises:
      KeyError: the table does not hold a target.
    """
    missing = [t for t in targets if t not in calls.rules]
    if missing:
      raise KeyError(f"{', '.join(missing)}: not in the {calls.platform} "
                     "table of custom calls; add it there")
    return self.register(*(f"{CUSTOM_CALL} @{t}" for t in targets))

  def platform_problems(self) -> list[str]:
    """Where the platforms' tables and the registered custom calls differ:
    a registered call that a platform holds but whose table lacks it, or a
    table's call without a rule (an empty list: none)."""
    problems = []
    for name in self._entries:
      target = name.removeprefix(f"{CUSTOM_CALL} @")
      if target == name:
        continue
      for calls in self._platforms.values():
        if calls.holds(target) and target not in calls.rules:
          problems.append(f"{target} has a rule but the {calls.platform} "
                          "table does not list it")
    for calls in self._platforms.values():
      problems += [f"the {calls.platform} table lists {target}, which has "
                   "no rule" for target in calls.rules
                   if f"{CUSTOM_CALL} @{target}" not in self._entries]
    return problems

  def add(self, name: str, rule: Rule, padded: PaddedRule | None = None
          ) -> None:
    """Registers ``rule`` (and ``padded``) for the op ``name``.

    Raises:
      DoubleRegistration: ``name`` has a rule already.
    """
    where = f"{getattr(rule, '__module__', '?')}." \
            f"{getattr(rule, '__qualname__', repr(rule))}"
    if name in self._entries:
      raise DoubleRegistration(
          f"{name} is registered twice: by {self._entries[name].where} and "
          f"by {where}; an op has one rule")
    self._entries[name] = Registration(rule, padded, where)
    self._ops.add(name.split(" @")[0])

  def register(self, *names: str, padded: PaddedRule | None = None
               ) -> Callable[[Rule], Rule]:
    """A decorator: the decorated rule is ``names``' (see :meth:`add`)."""
    def decorate(rule: Rule) -> Rule:
      for name in names:
        self.add(name, rule, padded)
      return rule
    return decorate

  def __contains__(self, name: str) -> bool:
    """Whether ``name`` (an op, or a custom call's key) has a rule; an op
    name counts where some of its forms do (``stablehlo.custom_call``)."""
    return name in self._entries or name in self._ops

  def __iter__(self) -> Iterator[str]:
    return iter(sorted(self._entries))

  def __len__(self) -> int:
    return len(self._entries)

  def registration(self, name: str) -> Registration | None:
    return self._entries.get(name)

  def step(self, op: _ir.Op, c: Compiler) -> Step:
    """The dispatcher: ``op``'s step, by its registration and its types.

    Raises:
      NoRule: the op has no rule, or none for its attributes or types.
    """
    registration = self._entries.get(key(op))
    if registration is None:
      if op.name == CUSTOM_CALL:
        raise NoRule(unknown_custom_call(op.attrs.get("call_target_name"),
                                         self.platforms))
      raise NoRule("no rule for this op")
    if has_dynamic_shapes(op):
      if registration.padded is None:
        raise NoRule(PADDED_ONLY_IN)
      return registration.padded(op, c, registration.rule)
    return registration.rule(op, c)


# The engine's rules: every rule module registers into this one.
RULES = Registry()
rule = RULES.register
