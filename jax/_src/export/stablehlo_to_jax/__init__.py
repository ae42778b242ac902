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
"""StableHLO modules as JAX functions: one ``lax`` operation per op.

:func:`parse` reads a StableHLO module (text or bytecode: a deserialized
``jax.export`` artifact's, the module another framework's XLA lowering
makes of its function, any other) into a :class:`Program`, a JAX function
that computes the module with ``lax`` operations, so that JAX's own rules
batch it (``jax.vmap``, nested, symbolic batch sizes) and differentiate it.
The interpreter reads StableHLO and nothing else: what its caller does
with a program, and what the caller knows of where a module came from,
are the caller's. Nothing here imports TensorFlow, ``jax.experimental`` or
``jax.export``'s own modules.

Each rule is exact or absent, following the StableHLO specification op by
op and dtype by dtype (and XLA's CPU runtime where the two differ): where a
``lax`` operation does not reproduce an op's semantics in every corner (NaN
ordering, clamping of indices, implementation-defined results), the op is
listed in :attr:`Program.unsupported` and calling the program raises
:class:`UnsupportedOps`, naming it.

A caller whose modules are lowerings of another framework's ops can give
some ops that framework's derivatives: :class:`DerivativeRules`, and the
program's :attr:`Program.derivative_record` (see :mod:`._derivatives`).

Its modules:

* :mod:`._ir`: a Python copy of a module, independent of any MLIR context;
  :mod:`._copy`: that copy kept as bytes and compiled again without MLIR.
* :mod:`._interpret`: the compiler of that copy into JAX callables, one
  step per live op; :mod:`._outline`: repeated groups of steps run as
  calls of one ``jax.jit`` function each, which JAX transforms once.
* :mod:`._registry`: the rules, each registered beside its definition, one
  per op, and the one dispatcher that finds an op's.
* :mod:`._rules`: the StableHLO ops' rules, as ``lax`` operations; the ops
  that need more: :mod:`._as_op` (elementwise ops as themselves),
  :mod:`._barrier` (optimization barriers JAX transposes), :mod:`._sort`
  (a sort with the module's comparator), :mod:`._rng`
  (``rng_bit_generator`` with any key), :mod:`._normalization`
  (``batch_norm_*``), :mod:`._shape_operands` (ops whose shapes are
  constant operands), :mod:`._loops` (a ``while``'s trip count) and
  :mod:`._dynamic` (bounded dynamic shapes). Each op written as itself is
  a private primitive made by :mod:`._primitive`.
* What ``jax.export`` writes beyond the specification:
  :mod:`._custom_calls` (a custom call written again as itself),
  :mod:`._lapack` (LAPACK's calls, differentiated as ``lax.linalg``'s
  operations: the CPU's calls), :mod:`._gpu_calls` (cuSOLVER's and
  hipSOLVER's calls as LAPACK's, the GPU libraries' other calls as
  ``lax`` operations), :mod:`._tpu_calls` (the TPU's calls as ``lax``
  operations), :mod:`._chlo` (CHLO's ops, top-k) and
  :mod:`._annotations` (sharding and placement, on one device). Each
  platform's module has a table of its calls
  (:class:`._registry.PlatformCalls`), which its rules are registered from
  and a call without a rule is refused by.
* :mod:`.compat`: the JAX internals it uses that differ across releases.
* :mod:`._stack`: its long Python work (reading, compiling and running a
  module) on a chunk of the frame stack of its own, also for callers.

See https://github.com/jax-ml/jax/issues/28327.
"""

from __future__ import annotations

from collections.abc import Sequence
import contextlib
from typing import Any

import jax
from jax._src import config
from jax._src import core
from jax._src import dtypes
from jax._src.export.stablehlo_to_jax import _copy
from jax._src.export.stablehlo_to_jax import _derivatives
from jax._src.export.stablehlo_to_jax import _interpret
from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _registry
from jax._src.export.stablehlo_to_jax import _stack
from jax._src.export.stablehlo_to_jax import compat
# The modules of rules: importing one registers its rules (see _registry).
from jax._src.export.stablehlo_to_jax import _annotations  # noqa: F401  # pylint: disable=unused-import
from jax._src.export.stablehlo_to_jax import _chlo  # noqa: F401  # pylint: disable=unused-import
from jax._src.export.stablehlo_to_jax import _lapack  # noqa: F401  # pylint: disable=unused-import
from jax._src.export.stablehlo_to_jax import _gpu_calls  # noqa: F401  # pylint: disable=unused-import
from jax._src.export.stablehlo_to_jax import _normalization  # noqa: F401  # pylint: disable=unused-import
from jax._src.export.stablehlo_to_jax import _rules  # noqa: F401  # pylint: disable=unused-import
from jax._src.export.stablehlo_to_jax import _shape_operands  # noqa: F401  # pylint: disable=unused-import
from jax._src.export.stablehlo_to_jax import _tpu_calls  # noqa: F401  # pylint: disable=unused-import
from jax import lax
from jax.typing import ArrayLike
import numpy as np

__all__ = ["Compiler", "DerivativeRecord", "DerivativeRules", "ModuleCopy",
           "Op", "Program", "Step", "TensorType", "UnreadableCopy",
           "UnsupportedOps", "dumps", "loads", "narrow_64_bit", "parse",
           "read", "read_by_id", "reading", "source_digest", "with_dtype",
           "with_stack_room"]

# What a caller's DerivativeRules see.
Compiler = _interpret.Compiler
DerivativeRecord = _derivatives.DerivativeRecord
DerivativeRules = _derivatives.DerivativeRules
reading = _derivatives.reading
read_by_id = _derivatives.read_by_id
Op = _ir.Op
Step = _registry.Step
TensorType = _ir.TensorType
# A module read once (read), as bytes (dumps, loads), compiled again (parse).
ModuleCopy = _copy.ModuleCopy
UnreadableCopy = _copy.UnreadableCopy
read = _copy.read
dumps = _copy.dumps
loads = _copy.loads
source_digest = _copy.source_digest
# Long Python work on a chunk of the frame stack of its own (the program's
# own run, and a caller's, such as another framework's trace).
with_stack_room = _stack.with_room


class UnsupportedOps(Exception):
  """A module has ops that have no exact JAX expression.

  Attributes:
    ops: the sorted names of those ops (custom calls as
      ``"stablehlo.custom_call @Target"``).
    reasons: for each name, why it has no rule, with the first such op.
  """

  def __init__(self, reasons: dict[str, str]):
    self.ops = tuple(sorted(reasons))
    self.reasons = dict(sorted(reasons.items()))
    details = "; ".join(f"{k}: {v}" for k, v in self.reasons.items())
    super().__init__(
        "The StableHLO module has ops that cannot be expressed exactly as "
        f"JAX operations: {', '.join(self.ops)}. Details: {details}")


def _aval(t: _ir.TensorType | _ir.TupleType | _ir.TokenType
          ) -> list[core.ShapedArray]:
  if isinstance(t, _ir.TensorType) and any(t.dynamic):
    raise UnsupportedOps({"dynamic shape": "an argument or result of the "
                                           "module has a dynamic shape"})
  if isinstance(t, _ir.TensorType):
    return [core.ShapedArray(t.shape, t.dtype)]
  if isinstance(t, _ir.TupleType):
    return [a for e in t.elements for a in _aval(e)]
  raise UnsupportedOps({"token": f"a {type(t).__name__} argument or result"})


def _flatten(x: _interpret.Value) -> list[ArrayLike]:
  if isinstance(x, tuple):
    return [y for e in x for y in _flatten(e)]
  return [x]


def _unflatten(types: Sequence[Any], flat: list[Any]) -> list[Any]:
  out = []
  for t in types:
    if isinstance(t, _ir.TupleType):
      out.append(tuple(_unflatten(t.elements, flat)))
    else:
      out.append(flat.pop(0))
  return out


def _uses_64_bits(funcs: dict[str, _ir.Func]) -> bool:
  """Whether the module has values of 64-bit types."""
  def types(block: _ir.Block):
    yield from block.arg_types
    for op in block.ops:
      yield from op.result_types
      for r in op.regions:
        yield from types(r)

  def wide(t):
    if isinstance(t, _ir.TupleType):
      return any(wide(e) for e in t.elements)
    return isinstance(t, _ir.TensorType) and t.dtype in _ir.WIDE
  return any(wide(t) for f in funcs.values() for t in types(f.body))


class Program:
  """A StableHLO module as a JAX function; see :func:`parse`.

  Attributes:
    in_avals: the module's parameters (tuple parameters flattened).
    out_avals: its results (tuple results flattened), with the module's
      dtypes; calling the program gives them canonicalized (64-bit types
      become 32-bit ones unless ``jax_enable_x64``), as JAX's avals of
      them are.
    unsupported: the names of ops without an exact rule; empty if the
      module is fully interpretable.
    reasons: for each unsupported name, why.
    no_derivative: the names of ops whose rule JAX cannot differentiate
      (``jax.jvp`` of the program raises); the program computes values and
      batches all the same.
    derivative_record: where JAX's derivative of the program may follow a
      convention (ops that branch or kink), and where the caller's
      :class:`DerivativeRules` gave an op its derivative.
  """

  __slots__ = ("_main", "_in_types", "_out_types", "in_avals", "out_avals",
               "unsupported", "reasons", "no_derivative", "uses_64_bits",
               "derivative_record", "_frozen", "__weakref__")

  def __init__(self, main: _interpret.CompiledBlock,
               out_types: Sequence[Any], unsupported: dict[str, str],
               uses_64_bits: bool, no_derivative: Sequence[str] = (),
               derivative_record: DerivativeRecord = DerivativeRecord()):
    self._main = main
    self._in_types = tuple(main.arg_types)
    self._out_types = tuple(out_types)
    self.in_avals = tuple(a for t in self._in_types for a in _aval(t))
    self.out_avals = tuple(a for t in self._out_types for a in _aval(t))
    self.unsupported = tuple(sorted(unsupported))
    self.reasons = dict(sorted(unsupported.items()))
    self.no_derivative = tuple(sorted(no_derivative))
    self.uses_64_bits = uses_64_bits
    self.derivative_record = derivative_record
    self._frozen = True

  def __setattr__(self, name, value):
    if getattr(self, "_frozen", False):
      raise AttributeError("a Program is immutable")
    object.__setattr__(self, name, value)

  def __repr__(self):
    return (f"Program(in_avals={self.in_avals}, out_avals={self.out_avals}"
            + (f", unsupported={self.unsupported}" if self.unsupported
               else "") + ")")

  def __call__(self, *args: ArrayLike,
               wide: Sequence[np.dtype | None] = ()) -> list[jax.Array]:
    """Computes the module's results from its arguments with lax operations.

    Works eagerly and under every JAX transformation (``jit``, ``vmap``,
    ``jvp``, ``grad``, nested).

    Args:
      *args: one array per entry of :attr:`in_avals`, of that shape.
      wide: for each argument, None, or the 64-bit dtype it was narrowed
        from by :func:`narrow_64_bit` (so that it keeps its bits through a
        ``jax.jit`` argument without ``jax_enable_x64``); shorter than
        ``args`` for None.

    Returns:
      One array per entry of :attr:`out_avals`.

    Raises:
      UnsupportedOps: the module has ops without an exact rule.
      TypeError: the arguments do not match :attr:`in_avals`.
      ValueError: an argument is of a 64-bit type, not given as 32-bit
        words, without ``jax_enable_x64``.
    """
    if self.unsupported:
      raise UnsupportedOps(self.reasons)
    self._check_64_bit_arguments(wide)
    if any(w is not None for w in wide):
      with self._types_context():
        args = tuple(a if w is None else _widened(a, w)
                     for a, w in zip(args, [*wide, *[None] * len(args)]))
    if len(args) != len(self.in_avals):
      raise TypeError(f"the module takes {len(self.in_avals)} arguments "
                      f"({self.in_avals}), got {len(args)}")
    for i, (x, aval) in enumerate(zip(args, self.in_avals)):
      shape = tuple(np.shape(x))
      if shape != aval.shape:
        raise TypeError(f"argument {i} has shape {shape}, but the module "
                        f"takes {aval.str_short()}")
    with self._types_context():
      flat = list(args)
      args_ = _unflatten(self._in_types, flat)
      args_ = [self._cast_in(a, t) for a, t in zip(args_, self._in_types)]
      outs = _stack.with_room(self._main, *args_)
    flat_out = [y for o in outs for y in _flatten(o)]
    results = []
    for y, aval in zip(flat_out, self.out_avals):
      dtype = dtypes.canonicalize_dtype(aval.dtype)
      if isinstance(y, np.ndarray) or np.dtype(y.dtype) != dtype:
        y = lax.convert_element_type(y, dtype)
      results.append(y)
    return results

  def _check_64_bit_arguments(self, wide: Sequence[np.dtype | None]) -> None:
    """Refuses a 64-bit argument that JAX would pass in 32 bits.

    Without ``jax_enable_x64`` JAX has no 64-bit values: a ``jax.jit``
    argument (or a NumPy array at the first ``lax`` op) loses its bits,
    and the module would compute from them what it does not mean. Such an
    argument comes as 32-bit words (:func:`narrow_64_bit`, ``wide``), or
    not at all.
    """
    if config.enable_x64.value:
      return
    wide = [*wide, *[None] * (len(self.in_avals) - len(wide))]
    for i, (aval, w) in enumerate(zip(self.in_avals, wide)):
      if aval.dtype in _ir.WIDE and w is None:
        raise ValueError(
            f"argument {i} of the module is {aval.str_short()}, and without "
            "jax_enable_x64 JAX passes no 64-bit values (a jax.jit argument "
            "would be rounded to 32 bits): enable jax_enable_x64, or pass it "
            "as 32-bit words (stablehlo_to_jax.narrow_64_bit, wide=)")

  def _cast_in(self, x: _interpret.Value,
               t: _ir.TensorType | _ir.TupleType | _ir.TokenType
               ) -> _interpret.Value:
    if isinstance(t, _ir.TupleType):
      return tuple(self._cast_in(e, s) for e, s in zip(x, t.elements))
    dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
    if np.dtype(dtype) != t.dtype:
      return lax.convert_element_type(x, t.dtype)
    return x

  def _types_context(self) -> contextlib.AbstractContextManager[object]:
    """Where 64-bit types are used, lets lax keep them without x64."""
    if not self.uses_64_bits:
      return contextlib.nullcontext()
    keeping = compat.keeping_64_bit_types()
    if keeping is None:
      raise UnsupportedOps({
          "64-bit types": "the module computes with 64-bit types, which this "
                          "JAX keeps only with jax_enable_x64 (enable it)"})
    return keeping


def with_dtype(x: jax.Array, dtype: np.dtype) -> jax.Array:
  """A result of a module as JAX's aval of it says: `x` in `dtype`.

  A module computes in the types it was lowered with, where JAX's avals of
  its results are canonicalized (int64 as int32 without ``jax_enable_x64``,
  a Python scalar's weak type): each caller of a module converts its
  results here, and only those whose dtype differs.
  """
  if getattr(x, "dtype", None) == dtype:
    return x
  return lax.convert_element_type(x, dtype)


_WIDE_AS_FLOAT = {np.dtype(np.complex128): np.dtype(np.float64)}


def narrow_64_bit(x: ArrayLike) -> tuple[ArrayLike, np.dtype | None]:
  """A 64-bit array as 32-bit words, where a ``jax.jit`` argument would lose
  its bits (without ``jax_enable_x64``); see ``Program.__call__``'s
  ``wide``.

  Returns:
    ``(x, None)``, or a ``uint32`` view of ``x`` with a trailing axis of 2
    (4 for complex128) and ``x``'s dtype.
  """
  a = np.asarray(x)
  if a.dtype not in _ir.WIDE or config.enable_x64.value:
    return x, None
  words = np.ascontiguousarray(a).reshape(*a.shape, 1).view(
      _WIDE_AS_FLOAT.get(a.dtype, a.dtype)).view(np.uint32)
  return words.reshape(*a.shape, -1), a.dtype


def _widened(words: jax.Array, dtype: np.dtype) -> jax.Array:
  """The inverse of :func:`narrow_64_bit` (in the 64-bit context)."""
  real = _WIDE_AS_FLOAT.get(dtype)
  if real is None:
    return lax.bitcast_convert_type(words, dtype)
  shape = words.shape[:-1]
  parts = lax.bitcast_convert_type(
      lax.reshape(words, (*shape, 2, 2)), real)
  return lax.complex(parts[..., 0], parts[..., 1])


def parse(module: str | bytes | ModuleCopy, *,
          derivatives: DerivativeRules | None = None,
          follow_default_precision: bool = False) -> Program:
  """Reads a StableHLO module (text or bytecode) into a :class:`Program`.

  Args:
    module: the module, whose entry function is ``main``; private functions
      it calls are interpreted too. Shapes must be static. Or the module as
      :func:`read` copied it (from :func:`loads`: no MLIR is read again).
    derivatives: a caller's derivatives for some of its ops (see
      :mod:`._derivatives`); None for JAX's derivatives of every op.
    follow_default_precision: what a dot or a convolution computes where
      the module leaves its precision at DEFAULT. False: XLA's default
      precision, what the module means wherever it runs (on a TPU, one
      bfloat16 pass for float32). True: the caller's
      ``jax_default_matmul_precision`` (``jax.default_matmul_precision``)
      at trace time, as for the same op written with ``jnp``: for a caller
      whose modules are another framework's lowering of code that left the
      precision unsaid. Explicit precisions and dot algorithms are kept
      either way.

  Returns:
    The program. Ops without an exact rule do not make this fail: they are
    listed in :attr:`Program.unsupported`, and calling the program raises
    (the reasons quote each op's assembly, unless ``module`` is a copy
    without it).

  Raises:
    ValueError: the module cannot be read (dynamic shapes, an element type
      JAX has no dtype for, regions with several blocks).
  """
  return _stack.with_room(_read_and_compile, module, derivatives,
                          follow_default_precision)


def _read_and_compile(module: str | bytes | ModuleCopy,
                      derivatives: DerivativeRules | None,
                      follow_default_precision: bool) -> Program:
  copy = module if isinstance(module, ModuleCopy) else read(module)
  program = _compile(copy, derivatives, follow_default_precision)
  if program.unsupported and not isinstance(module, ModuleCopy):
    # The reasons quote each op's assembly, printed only now.
    program = _compile(read(module, with_text=True), derivatives,
                       follow_default_precision)
  return program


def _compile(copy: ModuleCopy, derivatives: DerivativeRules | None,
             follow_default_precision: bool) -> Program:
  """The program of a module copy."""
  funcs = _ir.without_identity_converts(copy.funcs)
  uses_64_bits = _uses_64_bits(funcs)
  compiler = _interpret.Compiler(
      funcs, _registry.RULES, entry=copy.main, derivatives=derivatives,
      follow_default_precision=follow_default_precision,
      outline=not uses_64_bits)
  body = compiler.func(copy.main)
  return Program(body, funcs[copy.main].result_types, compiler.unsupported,
                 uses_64_bits, compiler.no_derivative,
                 compiler.derivative_record())
