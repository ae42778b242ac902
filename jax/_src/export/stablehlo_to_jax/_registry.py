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


# The libraries of other platforms whose custom calls JAX writes, and what
# the interpreter has rules for: LAPACK's calls (the CPU's), and the GPU
# libraries' calls whose routines are LAPACK's or lax operations.
_GPU_RULES = ("it has rules for the calls JAX writes now whose routines are "
              "LAPACK's (potrf, getrf, geqrf, orgqr, syevd, sytrd, gesvd, "
              "gesdd, gesvdj) or lax operations (LU pivots, gtsv2, "
              "threefry2x32)")
_PLATFORM_LIBRARIES = (
    (("cusolver_", "cusparse_", "cu_", "cublas"), "a CUDA library's",
     _GPU_RULES),
    (("hipsolver_", "hipsparse_", "hip_", "rocsolver"), "a ROCm library's",
     _GPU_RULES),
    (("Eigh", "LuDecomposition", "Svd", "TopK"), "a TPU's",
     "it has rules for the TPU's calls that lax operations write and the "
     "CPU computes by the same definition: Qr, LuDecomposition, "
     "ApproxTopK; Eigh is XLA's Jacobi solver, whose eigenvectors' signs "
     "and order no lax operation reproduces"),
)


def _unknown_custom_call(target: object) -> str:
  """The reason a custom call of `target` has no rule."""
  for prefixes, library, rules in _PLATFORM_LIBRARIES:
    if isinstance(target, str) and target.startswith(prefixes):
      return (f"custom call target {target!r}: {library} call, which the "
              f"interpreter has no rule for ({rules}); an artifact "
              "exported for the CPU (platforms=('cpu', ...)) batches and "
              "differentiates on the CPU")
  return (f"custom call target {target!r} has no JAX equivalent (or none "
          "with the same results)")


class Registry:
  """The rules by op name; :meth:`step` is the dispatcher."""

  def __init__(self) -> None:
    self._entries: dict[str, Registration] = {}
    self._ops: set[str] = set()

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
        raise NoRule(_unknown_custom_call(op.attrs.get("call_target_name")))
      raise NoRule("no rule for this op")
    if has_dynamic_shapes(op):
      if registration.padded is None:
        raise NoRule(PADDED_ONLY_IN)
      return registration.padded(op, c, registration.rule)
    return registration.rule(op, c)


# The engine's rules: every rule module registers into this one.
RULES = Registry()
rule = RULES.register
