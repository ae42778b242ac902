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
"""Repeated groups of a block's ops, each kind run as one ``jax.jit`` call.

tf2xla lowers some TensorFlow ops to dozens of StableHLO ops: ``Erf`` and
``Erfc`` (a GELU's) to a rational approximation of 40 to 90. A transformer
has one in each block, and interpreted op by op each copy makes equations
of its own that JAX then batches, differentiates and lowers one by one:
under ``vmap`` the four GELUs of a 4-block ViT make about 180 of its 677
equations (Keras's JAX backend makes 4).

A group is a run of at least :data:`MIN_STEPS` consecutive steps of a block
whose ops share a location name (tf2xla names each op after the TF node it
lowers) and are pure computations on static shapes (:data:`OUTLINABLE`).
Groups of one kind (the same ops, attributes, constants and types, their
values flowing alike: :func:`_call`) that occur twice or more run as calls
of one ``jax.jit`` function, traced once from the first group's steps and
inlined where a trace stages it. JAX's rules transform its jaxpr once per
transformation (``vmap``'s batching, ``jvp``'s) and keep the result by
identity; each call copies the transformed equations into the trace. What
JAX stages and lowers is what the ops make one by one, so the values are
the same; the batching and differentiating of each op at each site is what
is saved. Eagerly a group runs its steps one by one (as one compiled call,
XLA would simplify its ops together: ``x + 0`` into ``x``, which changes a
signed zero). One difference remains, in derivatives: where a group reads
a value more than once and the block reads it again after the group, the
transposed call sums that value's cotangents first, and JAX adds the later
reads' to that sum, where op by op it adds them one at a time: the same
derivative, summed in another order (its last bits may differ).

In no group: an op whose step is a caller's (a derivative rule's: it may
match a pattern across ops, and read values by id). Run op by op: a group
that reads a value that may be a constant (a rule may have folded it into
the group's steps, and another group's constant may differ), a value of
an enclosing block or a broadcast computed on read; the ops of a
reduction's or a sort's region; and every group of a module with 64-bit
values (its interpretation keeps them by a context of its own, which a
trace of their own would not see). A group's value read by id after it (a
caller's step may: TF's gradient of ``Erfc`` reads the op's input) is
computed again where it is read, unless the step says it reads it
(``_derivatives.reading``).
"""

from __future__ import annotations

import collections
from collections.abc import (Callable, Collection, Hashable, Iterator, Mapping,
                             Sequence)
import functools
import re

import jax
from jax._src.export.stablehlo_to_jax import _derivatives
from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _registry
from jax._src.export.stablehlo_to_jax import compat
import numpy as np

Step = _registry.Step
# A compiled op: the op, its step, and the values its step is given.
Entry = tuple[_ir.Op, Step, tuple[int, ...]]
# What a block runs: (step, operands, results).
Run = tuple[Step, tuple[int, ...], tuple[int, ...]]
# A value computed on read: (step, operands), the step's first result.
Deferred = tuple[Step, tuple[int, ...]]
# The function of a kind of group: its inputs' values to its results'.
GroupFunction = Callable[..., tuple[jax.Array, ...]]
# A group that becomes a call, by its first entry: (the entry after it, its
# kind, the values it reads, its values read after it).
Call = tuple[int, Hashable, tuple[int, ...], tuple[int, ...]]

# The fewest steps a group has: below it, a call's own cost in JAX's passes
# (one equation, and its jaxpr's cache lookups) approaches what it saves.
MIN_STEPS = 16

# The ops a group may hold: pure functions of their operands, without
# regions, that need no axis or device context.
OUTLINABLE = frozenset("stablehlo." + name for name in (
    "abs", "add", "and", "atan2", "bitcast_convert", "broadcast_in_dim",
    "cbrt", "ceil", "clamp", "compare", "complex", "concatenate", "constant",
    "convert", "cosine", "count_leading_zeros", "divide", "dot_general",
    "dynamic_slice", "dynamic_update_slice", "exponential",
    "exponential_minus_one", "floor", "imag", "iota", "is_finite", "log",
    "log_plus_one", "logistic", "maximum", "minimum", "multiply", "negate",
    "not", "or", "pad", "popcnt", "power", "real", "reduce_precision",
    "remainder", "reshape", "reverse", "round_nearest_afz",
    "round_nearest_even", "rsqrt", "select", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "sign", "sine", "slice",
    "sqrt", "subtract", "tan", "tanh", "transpose", "xor"))


def outline(block: _ir.Block, entries: Sequence[Entry],
            deferred: Mapping[int, Deferred], *,
            inline: Callable[[_ir.Op], bool],
            maybe_constant: Collection[int],
            functions: dict[Hashable, GroupFunction]
            ) -> tuple[list[Run], dict[int, Deferred]]:
  """What `block` runs: its `entries`, repeated groups as calls.

  Args:
    block: the block the entries are the compiled ops of.
    entries: ``(op, step, operands given)`` of each op the block runs, in
      order (not those of ``deferred``).
    deferred: the block's values computed on read (``_interpret._Values``),
      by id: ``(step, operands)``.
    inline: whether an op stays out of every group (a caller's step).
    maybe_constant: the values that may not depend on the entry function's
      arguments.
    functions: the ``jax.jit`` function of each kind of group met so far
      (the compiler's, for all its blocks); added to.

  Returns:
    ``(step, operands, results)`` of each entry, in order, each repeated
    group's entries replaced by one call of its kind's function: its
    operands are the values the group reads, its results those of its
    values read after it (the group's values of constants are computed
    again after it, by its own steps). And the group's other values, to be
    computed on read, by id, from the same operands (a caller's step may
    read a value so: TF's gradient of ``Erfc`` reads the op's input).
  """
  groups = list(_groups(entries, inline))
  if not groups:
    return [(step, operands, op.results)
            for op, step, operands in entries], {}
  reads = _reads(block, entries, deferred)
  types = _types(block, entries)
  calls: dict[int, Call] = {}
  for start, stop in groups:
    found = _call(entries[start:stop], reads, deferred, maybe_constant,
                  types)
    if found is not None:
      calls[start] = (stop, *found)
  counts = collections.Counter(kind for _, kind, *_ in calls.values())
  repeated = {start: call for start, call in calls.items()
              if counts[call[1]] > 1 or call[1] in functions}
  return _replaced(entries, repeated, maybe_constant, functions)


def _replaced(entries: Sequence[Entry],
              calls: Mapping[int, Call],
              maybe_constant: Collection[int],
              functions: dict[Hashable, GroupFunction]
              ) -> tuple[list[Run], dict[int, Deferred]]:
  """:func:`outline`'s results, of the groups that become calls."""
  out: list[Run] = []
  on_read: dict[int, Deferred] = {}
  i = 0
  while i < len(entries):
    if i not in calls:
      op, step, operands = entries[i]
      out.append((step, operands, op.results))
      i += 1
      continue
    stop, kind, inputs, outputs = calls[i]
    group = entries[i:stop]
    fun = functions.get(kind)
    if fun is None:
      fun = functions[kind] = _function(group, inputs, outputs)
    out.append((_calling(fun, group, inputs, outputs), inputs, outputs))
    for op, step, operands in group:
      if all(r in maybe_constant for r in op.results):
        out.append((step, operands, op.results))
      else:
        on_read.update((r, (_computing(group, inputs, r), inputs))
                       for r in op.results if r not in outputs)
    i = stop
  return out, on_read


def _groups(entries: Sequence[Entry], inline: Callable[[_ir.Op], bool]
            ) -> Iterator[tuple[int, int]]:
  """``(start, stop)`` of each run of at least MIN_STEPS outlinable entries
  of one location."""
  start = 0
  while start < len(entries):
    op = entries[start][0]
    stop = start + 1
    if _outlinable(op, inline):
      while (stop < len(entries) and entries[stop][0].location == op.location
             and _outlinable(entries[stop][0], inline)):
        stop += 1
      if stop - start >= MIN_STEPS:
        yield start, stop
    start = stop


def _outlinable(op: _ir.Op, inline: Callable[[_ir.Op], bool]) -> bool:
  return (bool(op.location) and op.name in OUTLINABLE and not op.regions
          and all(map(_static_and_narrow, op.operand_types))
          and all(map(_static_and_narrow, op.result_types))
          and not inline(op))


@functools.lru_cache(maxsize=None)
def _static_and_narrow(t: _ir.Type) -> bool:
  """Whether `t` is a tensor type of static shape, its elements narrower
  than 64 bits."""
  return (isinstance(t, _ir.TensorType) and not any(t.dynamic)
          and t.dtype not in _ir.WIDE)


def _reads(block: _ir.Block, entries: Sequence[Entry],
           deferred: Mapping[int, Deferred]
           ) -> collections.Counter[int]:
  """How many times the block reads each value: its steps' operands and
  the values they say they read by id, its deferred values' operands, its
  returns, and its ops' regions' values of the block (and the scalars of
  those that are broadcasts)."""
  # (A region's op may read a broadcast's scalar instead of it, as the
  # block's ops do: such a scalar counts as read with its broadcast.)
  broadcasts = {v: operands[0] for v, (_, operands) in deferred.items()
                if len(operands) == 1}
  broadcasts.update((op.results[0], op.operands[0]) for op, _, _ in entries
                    if op.name == "stablehlo.broadcast_in_dim"
                    and len(op.operands) == 1)
  read = list(block.returns)
  for op, step, operands in entries:
    read += operands
    read += _derivatives.read_by_id(step)
    for region in op.regions:
      free = _ir.free_values(region)
      read += free
      read += [broadcasts[v] for v in free if v in broadcasts]
  for _, operands in deferred.values():
    read += operands
  return collections.Counter(read)


def _types(block: _ir.Block, entries: Sequence[Entry]
           ) -> dict[int, _ir.Type]:
  """The type of each value the block defines."""
  types = dict(zip(block.args, block.arg_types))
  for op, _, _ in entries:
    types.update(zip(op.results, op.result_types))
  return types


def _call(group: Sequence[Entry], reads: collections.Counter[int],
          deferred: Mapping[int, Deferred], maybe_constant: Collection[int],
          types: Mapping[int, _ir.Type]
          ) -> tuple[Hashable, tuple[int, ...], tuple[int, ...]] | None:
  """The group's kind, the values it reads and those of its values read
  after it; None where it runs op by op."""
  produced: dict[int, int] = {}
  inputs: dict[int, int] = {}
  own_reads: collections.Counter[int] = collections.Counter()
  ops = []
  for op, _, operands in group:
    own_reads.update(operands)
    given = []
    for v in operands:
      if v in produced:
        given.append(("r", produced[v]))
      else:
        if v in deferred or v in maybe_constant or v not in types:
          return None
        given.append(("a", inputs.setdefault(v, len(inputs))))
    ops.append((op.name, tuple(given), op.operand_types, op.result_types,
                _hashable(op.attrs)))
    for r in op.results:
      produced[r] = len(produced)
  # (A value of constants read after the group is computed there again,
  # by the group's ops of constants: a rule may fold it where it is read.)
  outputs = tuple(r for r in produced
                  if reads[r] > own_reads[r] and r not in maybe_constant)
  if not outputs:
    return None
  kind = (tuple(ops), tuple(types[v] for v in inputs),
          tuple(produced[r] for r in outputs))
  return kind, tuple(inputs), outputs


def _hashable(value: object) -> Hashable:
  """An attribute's value as a key: arrays by dtype, shape and bytes,
  floats by their bits."""
  if isinstance(value, np.ndarray):
    return ("array", value.dtype.str, value.shape, value.tobytes())
  if isinstance(value, (tuple, list)):
    return tuple(_hashable(v) for v in value)
  if isinstance(value, dict):
    return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
  if isinstance(value, np.generic):
    return ("scalar", value.dtype.str, value.tobytes())
  if isinstance(value, float):  # (-0.0 == 0.0, and NaN != NaN)
    return ("float", value.hex())
  try:
    hash(value)
  except TypeError:
    return ("repr", type(value).__name__, repr(value))
  return (type(value).__name__, value)


def _function(group: Sequence[Entry], inputs: Sequence[int],
              outputs: Sequence[int]) -> GroupFunction:
  """One ``jax.jit`` function of the group's steps, from its inputs to its
  outputs (the ids of this group; the function's positions serve every
  group of its kind)."""
  def group_function(*args: jax.Array) -> tuple[jax.Array, ...]:
    local = _run(group, inputs, args)
    return tuple(local[i] for i in outputs)
  group_function.__name__ = _name(group[0][0].location)
  # Inlined where a trace stages it: JAX's rules transform the cached
  # jaxpr once (batching it, differentiating it) and each call copies the
  # result's equations, which lower as the ops would have, one by one.
  return jax.jit(group_function, inline=True)


def _run(group: Sequence[Entry], inputs: Sequence[int],
         args: Sequence[jax.Array], until: int | None = None
         ) -> dict[int, jax.Array]:
  """The group's values, its steps run one by one from its inputs' (up to
  the one that computes `until`)."""
  local = dict(zip(inputs, args))
  for op, step, operands in group:
    local.update(zip(op.results, step(local, *[local[i] for i in operands])))
    if until in local:
      break
  return local


def _computing(group: Sequence[Entry], inputs: Sequence[int], value: int
               ) -> Step:
  """A step that computes `value` of the group inline from its inputs."""
  def step(env, *args):
    del env
    return [_run(group, inputs, args, value)[value]]
  return step


def _calling(fun: GroupFunction, group: Sequence[Entry],
             inputs: Sequence[int], outputs: Sequence[int]) -> Step:
  """The step of a group: a call of its kind's function (``step.calls``)
  where a trace stages it; eagerly, the group's own steps one by one (as
  one compiled call XLA would simplify the group's ops together)."""
  def step(env, *args):
    del env
    if compat.under_a_staging_trace():
      return list(fun(*args))
    local = _run(group, inputs, args)
    return [local[i] for i in outputs]
  step.calls = fun  # type: ignore[attr-defined]
  return step


def _name(location: str) -> str:
  """A function name of a location's last part: ``Erfc`` of
  ``dense_6_1/Gelu/Erfc``."""
  name = re.sub(r"\W", "_", location.rsplit("/", 1)[-1]).strip("_")
  return name if name and not name[0].isdigit() else "group"
