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
"""A StableHLO module as a JAX function: the one owner of that concept.

:class:`ModuleFunction` is a serialized module (``jax.export``'s, or the
one another framework lowered, as the interpreter copied it) that JAX
calls, batches and differentiates as ``lax`` operations. It owns what
that takes, and every user goes through it (``Exported.call``'s
transformations, :mod:`.rules`; ``call_tf``'s TensorFlow functions and
jax2tf modules):

* refinement: a shape-polymorphic module refined for the static shapes of
  the arguments it is called with (:mod:`.refine`);
* the platform branch: for a module exported for several platforms, each
  platform's branch read, and the one JAX lowers for chosen then
  (:mod:`.platforms`); a platform the module lacks refused by name there;
* the derivative policy: the caller's rules for some ops
  (``stablehlo_to_jax.DerivativeRules``: ``call_tf``'s are TensorFlow's
  gradients at ties) and the precision of dots the module leaves at its
  default;
* the caches: a module is read and interpreted once per argument shapes
  and platform, and made one ``jax.jit`` function per batching pattern;
  every transformation then reuses its jaxpr (JAX's own rules transform
  the ``lax`` operations; the first time under ``jax.jit``, the jaxpr is
  replayed in the current trace, :class:`Replayed`).

What a caller adds stays the caller's: the operands a module takes beyond
the call's arguments (``call_tf``'s captured variables, a SavedModel's
weights) are passed as arguments, read as the caller decides.

See https://github.com/jax-ml/jax/issues/28327.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import functools
import logging

import jax
from jax._src import core
from jax._src.export import stablehlo_to_jax
from jax._src.export.stablehlo_to_jax import compat
from jax._src.export.transforms import errors
from jax._src.export.transforms import exported as exported_api
from jax._src.export.transforms import platforms as platforms_lib
from jax._src.export.transforms import refine
import numpy as np

logger = logging.getLogger(__name__)

Program = stablehlo_to_jax.Program
Shapes = tuple[tuple[int, ...], ...]
# A function of a module's operands, returning its results.
Jitted = Callable[..., tuple[jax.Array, ...]]

# The start of the error of JAX's shape refinement (``mlir``'s), which
# ``Exported.call`` itself raises for the same module and shapes.
_REFINEMENT_ERROR = "Error refining shapes."


def _first_line(e: BaseException) -> str:
  lines = str(e).strip().splitlines()
  return f"{type(e).__name__}: {lines[0] if lines else ''}"


def _read(module: str | bytes | stablehlo_to_jax.ModuleCopy,
          derivatives: stablehlo_to_jax.DerivativeRules | None,
          follow_default_precision: bool) -> Program | str:
  """The module interpreted (its ops without a rule listed in it: see
  :func:`unsupported`), or why it cannot be read."""
  try:
    return stablehlo_to_jax.parse(
        module, derivatives=derivatives,
        follow_default_precision=follow_default_precision)
  except stablehlo_to_jax.UnsupportedOps as e:  # (dynamic shapes, tokens)
    return f"its StableHLO module has ops without a JAX rule: {list(e.ops)}"
  except Exception as e:  # pylint: disable=broad-except
    # Not a wrong number: the caller refuses, or takes another path.
    return f"the interpreter failed on its module ({_first_line(e)})"


@dataclasses.dataclass(eq=False)
class Replayed:
  """A ``jax.jit`` function whose jaxpr is replayed the first time
  transformations inside a staging trace meet it.

  Under ``jax.jit`` with transformations between it and the call
  (``jax.jit(jax.vmap(jax.grad(f)))``), the first call replays the jaxpr's
  equations in the current trace: they go through the transformations in
  one pass, as the ops of native JAX code do. Bound as one ``jax.jit`` call,
  JAX's rules would transform the whole jaxpr once per step (linearization,
  partial evaluation, batching of each part, transposition), each a pass
  of its own: about a third of the ViT's trace on the CPU, and most of it
  on the TPU's host. Later calls bind the ``jax.jit`` function, whose
  transformed jaxprs JAX keeps: a program called again (in the same trace,
  or in a new trace of the same function) costs JAX's passes once, then a
  lookup, where replays would each cost a pass. Eagerly, under
  transformations applied eagerly, and directly in a staging trace (where
  the ``jax.jit`` function is inlined), the ``jax.jit`` function. Its jaxpr
  is ``jax.jit``'s own trace, cached per argument types: the module is
  interpreted once.
  """
  fun: Jitted  # (the ``jax.jit`` function)
  replayed: bool = dataclasses.field(default=False, init=False)

  def __call__(self, *args: jax.Array) -> tuple[jax.Array, ...]:
    """The function's results, replayed or called (the class's doc)."""
    if self.replayed or not compat.transforms_a_staging_trace():
      return self.fun(*args)
    self.replayed = True
    closed = self.fun.trace(*args).jaxpr  # type: ignore[attr-defined]
    return tuple(core.jaxpr_as_fun(closed)(*args))


def unsupported(program: Program) -> str | None:
  """Why ``program`` cannot be called (ops without an exact rule), or None."""
  if not program.unsupported:
    return None
  return ("its StableHLO module has ops that the interpreter has no exact "
          "JAX rule for: " + "; ".join(
              f"{name} ({why})" for name, why in program.reasons.items()))


@dataclasses.dataclass(frozen=True, eq=False)
class ModuleFunction:
  """A StableHLO module as a function of JAX values.

  Attributes:
    module: the serialized module (bytes), which may be shape polymorphic
      and take a platform index; or the interpreter's copy of a module with
      static shapes (``stablehlo_to_jax.read``; a ``call_tf`` function's
      module, which tf2xla lowered for the CPU and which JAX lowers for
      every platform as ``lax`` operations: it takes no platform index).
    name: the function's name, for messages.
    platforms: the platforms the module was exported for, JAX's names; ()
      for a module that is every platform's (a copy).
    platform_check: whether a platform the module was not exported for is
      refused (else its first platform's branch runs there, as
      ``Exported.call`` runs it with ``DisabledSafetyCheck.platform()``).
    derivatives: the caller's derivatives of some ops (None: JAX's).
    follow_default_precision: whether dots and convolutions at the module's
      DEFAULT precision follow ``jax_default_matmul_precision``
      (``stablehlo_to_jax.parse``).
  """
  module: bytes | stablehlo_to_jax.ModuleCopy
  name: str
  platforms: tuple[str, ...] = ()
  platform_check: bool = True
  derivatives: stablehlo_to_jax.DerivativeRules | None = None
  follow_default_precision: bool = False
  _programs: dict[tuple[Shapes, int], Program | str | ValueError] = (
      dataclasses.field(default_factory=dict, init=False, repr=False))
  _jitted: dict[tuple[int, tuple[bool, ...] | None,
                      tuple[np.dtype | None, ...]], Replayed] = (
      dataclasses.field(default_factory=dict, init=False, repr=False))

  @property
  def nr_platform_args(self) -> int:
    """How many platform arguments the module takes first."""
    return platforms_lib.nr_platform_args(self.platforms)

  def program(self, shapes: Shapes, index: int = 0
              ) -> Program | str | ValueError:
    """The module for arguments of ``shapes``, read once.

    Args:
      shapes: the static shapes of the arguments the module takes.
      index: for a module of several platforms, the index of the one whose
        branch is read.

    Returns:
      The interpreted module (which may hold ops without an exact rule:
      :func:`unsupported`); or why it cannot be read (a string); or
      ``Exported.call``'s own error where JAX's shape refinement of the
      module fails for ``shapes`` (a shape assertion of its constraints).
    """
    key = (shapes, index)
    if key not in self._programs:
      self._programs[key] = self._refined_and_read(shapes, index)
    return self._programs[key]

  def _refined_and_read(self, shapes: Shapes, index: int
                        ) -> Program | str | ValueError:
    module = self.module
    if isinstance(module, bytes):
      n = self.nr_platform_args
      try:
        module = refine.refined_module_text(module, n, shapes,
                                            index if n else None)
      except Exception as e:  # pylint: disable=broad-except
        if isinstance(e, ValueError) and str(e).startswith(_REFINEMENT_ERROR):
          return e
        return (f"its shapes cannot be refined for arguments of shapes "
                f"{list(shapes)} ({_first_line(e)})")
    return _read(module, self.derivatives, self.follow_default_precision)

  def jitted(self, program: Program, is_batched: tuple[bool, ...] | None,
             wide: tuple[np.dtype | None, ...] = ()) -> Replayed:
    """``program`` as one ``jax.jit`` function of its operands.

    Inlined into an enclosing staging trace (the first time
    transformations between meet it, replayed: :class:`Replayed`);
    eagerly, and under eager transformations, one compiled program whose
    compilation JAX caches by argument types. The module is interpreted
    once either way. One per
    pattern of batched operands (``jax.vmap`` of the program over them;
    None: unbatched) and of trailing operands narrowed to 32-bit words
    (``wide``, see ``stablehlo_to_jax.narrow_64_bit``).
    """
    key = (id(program), is_batched, wide)
    fun = self._jitted.get(key)
    if fun is None:
      all_wide = (None,) * (len(program.in_avals) - len(wide)) + wide

      def run(*a: jax.Array) -> tuple[jax.Array, ...]:
        return tuple(program(*a, wide=all_wide))
      if is_batched is not None:
        run = jax.vmap(run, in_axes=[0 if b else None for b in is_batched]
                       + [None] * (len(program.in_avals) - len(is_batched)),
                       out_axes=0)
      fun = Replayed(jax.jit(run, inline=True))
      self._jitted[key] = fun
    return fun

  def _primary(self) -> int:
    """The branch whose reading decides whether the module can be used.

    The machine's platform's, if the module was exported for it (its
    branch runs here eagerly); else the module's first.
    """
    platform = jax.export.default_export_platform()
    return (self.platforms.index(platform) if platform in self.platforms
            else 0)

  def staged(self, shapes: Shapes, *, purpose: str) -> Jitted | str:
    """The module, for arguments of ``shapes``, on every platform.

    Args:
      shapes: the static shapes of the arguments the module takes.
      purpose: what it is for ("jax.vmap", "forward mode"), for messages.

    Returns:
      A function of the module's operands whose branch is chosen where JAX
      lowers it (:mod:`.platforms`); or why the module cannot be used (its
      branch of the machine's platform, or of its first, cannot be read).

    Raises:
      ValueError: ``Exported.call``'s error where JAX's shape refinement of
        the module fails for ``shapes``.
    """
    found = [self.program(shapes, i)
             for i in range(max(len(self.platforms), 1))]
    for f in found:
      if isinstance(f, ValueError):
        raise ValueError(str(f))  # (the call's error: a new one each time)
    found = [f if isinstance(f, str) else unsupported(f) or f for f in found]
    primary = found[self._primary()]
    if isinstance(primary, str):
      return primary
    if not self.platforms or (len(self.platforms) == 1
                              and not self.platform_check):
      return self.jitted(primary, None)  # (the same branch everywhere)
    return self._selected(found, primary.out_avals, purpose)

  def out_avals(self, shapes: Shapes) -> tuple[core.ShapedArray, ...]:
    """The results' avals for arguments of ``shapes`` (the branch of
    :meth:`staged`'s, which must have given a function)."""
    program = self.program(shapes, self._primary())
    assert isinstance(program, Program), program
    return program.out_avals

  def _selected(self, found: Sequence[Program | str],
                out_avals: Sequence[core.ShapedArray], purpose: str
                ) -> Jitted:
    """The branches as one function, the platform's chosen at lowering.

    For a platform the module was not exported for, ``Exported.call``'s
    error; where its platform check is disabled, the first platform's
    branch (as ``Exported.call`` runs it there; each platform it was
    exported for still runs its own).
    """
    branches = {
        p: self.jitted(program, None)
        if isinstance(program, Program)
        else platforms_lib.refusal(platforms_lib.message_template(
            errors.exported_branch_error(self.name, p, purpose, program)),
                                   out_avals)
        for p, program in zip(self.platforms, found)}
    if not self.platform_check:
      default = branches[self.platforms[0]]
    else:
      default = platforms_lib.refusal(platforms_lib.message_template(str(
          errors.exported_platform_error(
              self.name, self.platforms, (platforms_lib.LOWERED,)))),
                                      out_avals)
    return platforms_lib.select(branches, default)


@functools.lru_cache(maxsize=64)
def _of_exported(module: bytes, name: str, platforms: tuple[str, ...],
                 platform_check: bool) -> ModuleFunction:
  return ModuleFunction(module, name, platforms, platform_check)


compat.register_cache(_of_exported, "jax.export: modules as JAX functions")


def of_exported(exported: jax.export.Exported) -> ModuleFunction:
  """The module of a ``jax.export.Exported``, one per module in a process.

  It keeps ``jax.export``'s own derivatives: JAX's of every op, and its
  DEFAULT precisions as the module says.
  """
  return _of_exported(exported.mlir_module_serialized, exported.fun_name,
                      tuple(exported.platforms),
                      not exported_api.platform_check_disabled(exported))


@dataclasses.dataclass(frozen=True)
class ExportedCall:
  """An exported module as a function of ``Exported.call``'s arguments.

  Attributes:
    fun: takes the call's arguments (all of them, as ``Exported.call``'s
      flat arguments), returns one value per result, None for results of
      dtype ``float0`` (which carry no value).
    float0_outs: which results are ``float0``.
    out_shapes: the shapes of the results (static).
  """
  fun: Callable[..., list[jax.Array | None]]
  float0_outs: tuple[bool, ...]
  out_shapes: tuple[tuple[int, ...], ...]

  def __call__(self, *args: jax.Array) -> list[jax.Array | None]:
    return self.fun(*args)


def _refusal(exported: jax.export.Exported,
             avals: Sequence[core.ShapedArray]) -> str | None:
  """Why the module cannot be interpreted for ``avals``, before reading it."""
  if missing := exported_api.pieces_missing():
    return f"this jax's jax.export lacks {', '.join(missing)}"
  if exported.nr_devices != 1:
    return (f"it was exported for {exported.nr_devices} devices, and the "
            "interpreter runs a module on one")
  effects = (*exported.ordered_effects, *exported.unordered_effects)
  if effects:
    return (f"it has effects ({', '.join(map(str, effects))}), which its "
            "module as JAX operations would not have")
  kept = [avals[i] for i in exported.module_kept_var_idx]
  for a in kept:
    if jax.dtypes.issubdtype(a.dtype, jax.dtypes.extended):
      return f"it takes an argument of the extended dtype {a.dtype}"
  if not all(core.is_constant_shape(a.shape) for a in kept):
    return ("its arguments have symbolic shapes ("
            + ", ".join(a.str_short() for a in kept) + "), and the module "
            "is expressed as JAX operations for static shapes only")
  return None


def exported_call(exported: jax.export.Exported,
                  avals: Sequence[core.ShapedArray], *,
                  purpose: str) -> ExportedCall | str:
  """``exported``'s module as JAX operations, for arguments of ``avals``.

  Args:
    exported: a ``jax.export.Exported``.
    avals: the avals of all its flat arguments (``Exported.call``'s).
    purpose: what it is for ("jax.vmap", "forward mode"), for the debug log.

  Returns:
    The function, or why there is none (for an error message): symbolic
    shapes, effects, several devices, an op without an exact rule (in the
    branch of the machine's platform, or the module's first). The function
    chooses its branch where JAX lowers it (:meth:`ModuleFunction.staged`).

  Raises:
    ValueError: ``Exported.call``'s error where JAX's shape refinement of
      the module fails for ``avals`` (the shape constraints of a
      polymorphic module).
  """
  kept = tuple(exported.module_kept_var_idx)
  found: Jitted | str | None = _refusal(exported, avals)
  module = of_exported(exported)
  shapes = tuple(tuple(avals[i].shape) for i in kept)
  if found is None:
    found = module.staged(shapes, purpose=purpose)
  if isinstance(found, str):
    logger.debug("jax.export: %s of %s cannot use its module as JAX "
                 "operations: %s", purpose, exported.fun_name, found)
    return found
  logger.debug("jax.export: %s of %s uses its module as JAX operations",
               purpose, exported.fun_name)
  staged = found
  out_avals = tuple(exported.out_avals)
  float0_outs = tuple(a.dtype == jax.dtypes.float0 for a in out_avals)

  def fun(*args: jax.Array) -> list[jax.Array | None]:
    outs = staged(*(args[i] for i in kept))
    return [None if f0 else stablehlo_to_jax.with_dtype(o, a.dtype)
            for o, a, f0 in zip(outs, out_avals, float0_outs)]
  return ExportedCall(fun, float0_outs, tuple(
      tuple(a.shape) for a in module.out_avals(shapes)))
