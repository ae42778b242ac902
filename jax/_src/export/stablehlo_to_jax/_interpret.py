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
"""Compiling the Python copy of a StableHLO module into JAX callables.

:class:`Compiler` turns each :class:`~._ir.Op` into a step, a Python
function of the op's operand values that returns its result values, made by
the op's rule (registered in :mod:`._registry`; :meth:`~._registry.Registry.step`
dispatches). A rule decides at compile time whether it
can express the op exactly (its attributes, its regions' patterns); where it
cannot, it raises :class:`NoRule`, and the compiler records the op as
unsupported. A :class:`CompiledBlock` evaluates its steps in order; values of
enclosing blocks are visible in nested ones (StableHLO regions of ``while``,
``if`` and ``case`` may use them).

Dead ops are not compiled: an op without side effects none of whose results
reaches the entry function's results (:attr:`Compiler.live`) cannot change
them, so it needs no rule (tf2xla's SVD sorts singular vectors that
``compute_uv=False`` never returns). Rules may also ask which of an op's
results are live (a sort whose order of ties matters only for its payloads).

Scalars stay scalars: where an op's step takes a rank-0 value at an operand
position (:func:`~._registry.takes_scalars`: lax's elementwise operations)
and the operand is a ``broadcast_in_dim`` of a rank-0 value, the step is
given the rank-0 value, as XLA's own HLO would write it. A broadcast whose
every use reads its scalar so is not run (:class:`CompiledBlock` computes
it only if a rule reads it by its id). tf2xla broadcasts each scalar
constant of a TF graph (a normalization's epsilon, an activation's bounds):
up to a sixth of a Keras model's ops (MobileNetV2, a ViT), and under
``vmap`` JAX's batcher broadcast the other operand of each op again.

Repeated groups of steps (a GELU's ``Erfc`` as tf2xla expands it, once per
transformer block) run as calls of one ``jax.jit`` function each, which
JAX's rules transform once (:mod:`._outline`).
"""

from __future__ import annotations

import collections
from collections.abc import Hashable, Iterator, Mapping, Sequence
import contextlib
import functools
from typing import Any

from jax._src.export.stablehlo_to_jax import _derivatives
from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _outline
from jax._src.export.stablehlo_to_jax import _registry
from jax.typing import ArrayLike
import numpy as np


NoRule = _ir.NoRule

# A value of a module: an array, or a tuple of values.
Value = ArrayLike | tuple["Value", ...]

Step = _registry.Step


class _Values(dict):
  """A block's values by id; a value whose op was left out of the steps
  (``deferred``: a broadcast whose uses read its scalar) is computed when
  read, each time (not kept: it may be read under a transformation of a
  region's own, as a ``stablehlo.map``'s)."""

  def __init__(self, deferred: Mapping[int, tuple[Step, tuple[int, ...]]]):
    super().__init__()
    self.deferred = deferred
    self.env: Mapping[int, Value] = {}

  def __missing__(self, value: int) -> Value:
    if value not in self.deferred:
      raise KeyError(value)
    step, operands = self.deferred[value]
    return step(self.env, *[self.env[i] for i in operands])[0]


class CompiledBlock:
  """A block whose ops are steps: call it with its arguments' values.

  Attributes:
    block: the block.
    steps: ``(step, operands, results)`` of each op it runs, in order.
    deferred: ``(step, operands)`` of each op it runs only where a value of
      it is read by id (:class:`_Values`), by its one result.
  """

  def __init__(self, block: _ir.Block,
               steps: Sequence[tuple[Step, tuple[int, ...], tuple[int, ...]]],
               deferred: Mapping[int, tuple[Step, tuple[int, ...]]]
               | None = None):
    self.block = block
    self.steps = tuple(steps)
    self.deferred = dict(deferred or {})

  @property
  def arg_types(self) -> tuple[Any, ...]:
    return self.block.arg_types

  def __call__(self, *args: Value, outer: Mapping[int, Value] | None = None
               ) -> list[Value]:
    if len(args) != len(self.block.args):
      raise TypeError(f"block takes {len(self.block.args)} arguments, "
                      f"got {len(args)}")
    local = _Values(self.deferred) if self.deferred else {}
    local.update(zip(self.block.args, args))
    env: collections.ChainMap = collections.ChainMap(
        local, *(() if outer is None else (outer,)))
    if self.deferred:
      local.env = env
    for step, operands, results in self.steps:
      outs = step(env, *[env[i] for i in operands])
      if len(outs) != len(results):
        raise AssertionError(f"rule returned {len(outs)} values for "
                             f"{len(results)} results")
      env.maps[0].update(zip(results, outs))
    return [env[i] for i in self.block.returns]


class Compiler:
  """Compiles the functions of a module, recording ops without a rule."""

  def __init__(self, funcs: Mapping[str, _ir.Func],
               rules: _registry.Registry,
               entry: str = "main",
               derivatives: _derivatives.DerivativeRules | None = None,
               follow_default_precision: bool = False,
               outline: bool = True):
    self.funcs = funcs
    self.rules = rules
    # Whether dots and convolutions at DEFAULT precision take the caller's
    # jax_default_matmul_precision (see parse).
    self.follow_default_precision = follow_default_precision
    # The caller's derivatives (see ._derivatives), and what the record of
    # the compiled ops says: for the live ops, the op names found at each
    # location, the locations whose op took the caller's rule, and the ops
    # of the function bodies (not of a reduction's or a sort's region) that
    # branch or kink, as (location, op name).
    self.derivatives = derivatives
    self.located: dict[str, set[str]] = collections.defaultdict(set)
    self.replaced: set[str] = set()
    self.branching: set[tuple[str, str]] = set()
    self._in_region = 0
    self.compiled: dict[str, CompiledBlock] = {}
    self.unsupported: dict[str, str] = {}  # op name -> first reason
    # Names of compiled ops whose rule JAX cannot differentiate.
    self.no_derivative: set[str] = set()
    self.constants: dict[int, Any] = {}  # value id -> numpy constant
    # Value ids the entry function's results depend on, and the ops that
    # compute them (or have side effects); see _mark_live.
    self.live: set[int] = set()
    self._live_ops: set[_ir.Op] = set()
    self._live_funcs: set[str] = set()
    self._entry = entry
    if entry in funcs:
      self._mark_func(entry)
    self._compiling: set[str] = set()
    # The ops whose step is the caller's (derivatives), and the uses
    # (op, operand position) of each value given its broadcast's scalar.
    self._callers_ops: set[_ir.Op] = set()
    self._scalar_reads: dict[int, set[tuple[_ir.Op, int]]] = (
        collections.defaultdict(set))
    # Whether repeated groups of ops run as calls (._outline), and the
    # jax.jit function of each kind of group.
    self._outline = outline
    self._outlined: dict[Hashable, _outline.GroupFunction] = {}

  def _mark_func(self, name: str) -> None:
    # A function's results are all live at each of its calls (conservative:
    # a callee is compiled once for all its call sites).
    if name in self._live_funcs or name not in self.funcs:
      return
    self._live_funcs.add(name)
    body = self.funcs[name].body
    self._mark_live(body)

  def _mark_live(self, block: _ir.Block) -> None:
    """Marks the ops of `block` its results depend on, and their operands.

    Backwards: an op is live if one of its results is, or if it may have a
    side effect (an op without a rule, a custom call that says so). Values
    of enclosing blocks that a region uses are marked when the region's op
    is, before the enclosing block reaches the ops that define them.
    """
    self.live.update(block.returns)
    for op in reversed(block.ops):
      if not (any(r in self.live for r in op.results) or _may_have_effects(
          op, self.rules)):
        continue
      self._live_ops.add(op)
      self.live.update(op.operands)
      for region in op.regions:
        self._mark_live(region)
      if op.name == "func.call":
        self._mark_func(op.attrs.get("callee"))
      elif op.name == "stablehlo.composite":
        self._mark_func(op.attrs.get("decomposition"))

  @functools.cached_property
  def maybe_constant(self) -> frozenset[int]:
    """The values that may not depend on the entry function's arguments.

    XLA may fold them into constants, or see an ``iota`` in them, and
    rewrite the ops that use them accordingly. Over-approximated: a value
    is in the set if it is independent of the arguments at any call site of
    its function (a region's arguments are when the whole op is).
    """
    return maybe_constant_values(self.funcs, self._entry)

  def is_live(self, op: _ir.Op) -> bool:
    """Whether the entry function's results depend on `op`."""
    return op in self._live_ops

  def func(self, name: str) -> CompiledBlock:
    """The compiled body of the function `name`."""
    if name not in self.compiled:
      if name in self._compiling:
        raise NoRule(f"function @{name} is recursive")
      if name not in self.funcs:
        raise NoRule(f"function @{name} is not in the module")
      self._compiling.add(name)
      try:
        self.compiled[name] = self.block(self.funcs[name].body)
      finally:
        self._compiling.discard(name)
    return self.compiled[name]

  def block(self, block: _ir.Block) -> CompiledBlock:
    compiled = []
    for op in block.ops:
      if self.is_live(op):
        step = self.op(op)
        # (A caller's step gets its operands as they are, whatever it
        # says: a copy of the engine's step's attributes says nothing.)
        compiled.append((op, step, op.operands if op in self._callers_ops
                         else self._operands_given(op, step)))
    entries, deferred = [], {}
    for op, step, operands in compiled:
      if self._all_uses_read_the_scalar(op):
        deferred[op.results[0]] = (step, op.operands)
      else:
        entries.append((op, step, operands))
    if self._outline and not self._in_region:
      # (A reduction's or a sort's region is the op's computation, which
      # its rule may read as a pattern.)
      steps, on_read = _outline.outline(
          block, entries, deferred, inline=self._callers_ops.__contains__,
          maybe_constant=self.maybe_constant, functions=self._outlined)
      deferred.update(on_read)
    else:
      steps = [(step, operands, op.results) for op, step, operands in entries]
    return CompiledBlock(block, steps, deferred)

  @functools.cached_property
  def _uses(self) -> collections.Counter[int]:
    """How many times the live ops (their operands) and the blocks (their
    returns) read each value."""
    uses: collections.Counter[int] = collections.Counter()

    def walk(block: _ir.Block) -> None:
      uses.update(block.returns)
      for op in block.ops:
        if self.is_live(op):
          uses.update(op.operands)
          for region in op.regions:
            walk(region)
    for f in self.funcs.values():
      walk(f.body)
    return uses

  def _scalar_of(self, value: int) -> int | None:
    """The rank-0 value that `value` broadcasts, if `value` is the result of
    a ``broadcast_in_dim`` of one whose step is this registry's; else
    None."""
    op = self.defining.get(value)
    if (op is None or op.name != "stablehlo.broadcast_in_dim"
        or op in self._callers_ops or len(op.operands) != 1):
      return None
    src, = op.operand_types
    out, = op.result_types
    if (not isinstance(src, _ir.TensorType) or src.shape != ()
        or not isinstance(out, _ir.TensorType) or any(out.dynamic)
        or src.dtype != out.dtype):
      return None
    return op.operands[0]

  def _operands_given(self, op: _ir.Op, step: Step) -> tuple[int, ...]:
    """The values `step` is given for `op`'s operands: at the positions it
    takes rank-0 values (:func:`._registry.takes_scalars`), the scalar of a
    broadcast of one, keeping one operand of the op's shape. Records each
    such use (:meth:`_all_uses_read_the_scalar` counts them)."""
    positions, constants_only = _registry.scalar_operands(step)
    if not positions or not op.result_types or not isinstance(
        op.result_types[0], _ir.TensorType) or any(op.result_types[0].dynamic):
      return op.operands
    shape = op.result_types[0].shape
    operands = list(op.operands)
    full = [i for i, t in enumerate(op.operand_types)
            if isinstance(t, _ir.TensorType) and t.shape == shape and shape]
    for i in sorted(positions):
      scalar = (self._scalar_of(operands[i])
                if i < len(operands) and i in full else None)
      if scalar is None or full == [i] or (
          constants_only and self.constant(scalar) is None):
        continue
      operands[i] = scalar
      full.remove(i)
      self._scalar_reads[op.operands[i]].add((op, i))
    return tuple(operands)

  def _all_uses_read_the_scalar(self, op: _ir.Op) -> bool:
    """Whether `op` is a broadcast every use of whose result reads its
    scalar instead (:meth:`_operands_given`)."""
    if op.name != "stablehlo.broadcast_in_dim" or len(op.results) != 1:
      return False
    result, = op.results
    reads = self._scalar_reads.get(result)
    return bool(reads) and len(reads) == self._uses[result]

  @contextlib.contextmanager
  def reduction_region(self) -> Iterator[None]:
    """While a reduction's (or a sort's) region compiles: its ops combine
    elements, and the op's own rule says how it is differentiated."""
    self._in_region += 1
    try:
      yield
    finally:
      self._in_region -= 1

  @functools.cached_property
  def defining(self) -> dict[int, _ir.Op]:
    """The op that defines each value of the module."""
    found: dict[int, _ir.Op] = {}

    def walk(block: _ir.Block) -> None:
      for op in block.ops:
        for r in op.results:
          found[r] = op
        for region in op.regions:
          walk(region)
    for f in self.funcs.values():
      walk(f.body)
    return found

  def constant(self, value: int) -> Any:
    """The NumPy value of `value` where it is a constant of the module, or
    a conversion, broadcast or reshape of one; else None."""
    if value in self.constants:
      return np.asarray(self.constants[value])
    op = self.defining.get(value)
    if op is None or len(op.operands) != 1 or not op.result_types:
      return None
    t = op.result_types[0]
    if op.name not in ("stablehlo.convert", "stablehlo.broadcast_in_dim",
                       "stablehlo.reshape") or not isinstance(
                           t, _ir.TensorType) or any(t.dynamic):
      return None
    inner = self.constant(op.operands[0])
    if inner is None:
      return None
    if op.name == "stablehlo.convert":
      if np.iscomplexobj(inner) and not np.issubdtype(t.dtype,
                                                      np.complexfloating):
        return None
      return inner.astype(t.dtype)
    if op.name == "stablehlo.reshape":
      return inner.reshape(t.shape)
    dims = op.attrs["broadcast_dimensions"]
    shape = [1] * len(t.shape)
    for i, d in enumerate(dims):
      shape[d] = inner.shape[i]
    return np.broadcast_to(inner.reshape(shape), t.shape)

  def derivative_record(self) -> _derivatives.DerivativeRecord:
    """What the compiled ops say of JAX's derivative of the program."""
    return _derivatives.DerivativeRecord(
        branching=frozenset(self.branching),
        located={k: frozenset(v) for k, v in self.located.items()},
        replaced=frozenset(self.replaced))

  def op(self, op: _ir.Op) -> Step:
    key = _registry.key(op)
    if op.location:
      self.located[op.location].add(op.name)
    if (not self._in_region and _derivatives.is_branching(op)
        and not all(v in self.maybe_constant for v in op.operands)):
      # (One of constants, an index computation, carries no tangent.)
      self.branching.add((op.location, op.name))
    try:
      uncomputable = _ir.uncomputable_type(op)
      if uncomputable:
        raise NoRule(uncomputable)
      step = self.rules.step(op, self)
      return self._callers_step(op, step) or step
    except NoRule as e:
      self.unsupported.setdefault(key, f"{e} (in: {op.text})")
      return _unsupported_step(key)

  def _callers_step(self, op: _ir.Op, own: Step) -> Step | None:
    """The caller's step for `op`, with its derivative (``derivatives``)."""
    if self.derivatives is None:
      return None
    step = self.derivatives.rule(op, self, own)
    if step is not None:
      self.replaced.add(op.location)
      self._callers_ops.add(op)
    return step


def maybe_constant_values(funcs: Mapping[str, _ir.Func], entry: str
                          ) -> frozenset[int]:
  """The values of `funcs` that may be computed without `entry`'s arguments.

  A value is: an op's result whose operands, and the values its regions
  read from outside, all are (constants and ``iota``s have no operands); a
  region's argument where its op's result is; a call's result where the
  callee's is, given which of the call's operands are; a function's value
  where it is at one of the function's calls. The entry's parameters are
  not.
  """
  everywhere: set[int] = set()
  results: dict[tuple[str, tuple[bool, ...]], tuple[bool, ...]] = {}

  def block(b: _ir.Block, args_constant: Sequence[bool],
            constant: set[int]) -> None:
    constant.update(a for a, c in zip(b.args, args_constant) if c)
    for op in b.ops:
      free = [v for r in op.regions for v in _ir.free_values(r)]
      whole = all(v in constant for v in (*op.operands, *free))
      for r in op.regions:
        block(r, [whole] * len(r.args), constant)
      if op.name == "func.call" and op.attrs.get("callee") in funcs:
        outs = func(op.attrs["callee"],
                    tuple(v in constant for v in op.operands))
        constant.update(r for r, c in zip(op.results, outs) if c)
      elif whole:
        constant.update(op.results)

  def func(name: str, args_constant: tuple[bool, ...]) -> tuple[bool, ...]:
    key = (name, args_constant)
    if key not in results:
      results[key] = (False,) * len(funcs[name].body.returns)  # recursion
      constant: set[int] = set()
      body = funcs[name].body
      block(body, args_constant, constant)
      everywhere.update(constant)
      results[key] = tuple(v in constant for v in body.returns)
    return results[key]

  if entry in funcs:
    func(entry, (False,) * len(funcs[entry].body.args))
  return frozenset(everywhere)


def _may_have_effects(op: _ir.Op, rules: _registry.Registry) -> bool:
  """Whether `op` may do more than compute its results."""
  return (op.name not in rules or not op.results
          or bool(op.attrs.get("has_side_effect")))


def _unsupported_step(name: str) -> Step:
  def step(env, *args):
    del env, args
    raise NoRule(name)
  return step
