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
"""A ``jax.export.Exported``'s module as JAX operations, for static shapes.

The module is refined for the static shapes of the arguments it keeps
(:func:`..stablehlo_to_jax.module.refined_module_text`) and read by the
StableHLO interpreter (:mod:`..stablehlo_to_jax`), one ``lax`` operation
per op, so
that JAX's own rules transform it. Each rule of the interpreter is exact or
absent: a module with an op it has no rule for is refused, naming the op.
The module runs as one ``jax.jit`` function, inlined into an enclosing
trace and, eagerly, compiled once per argument types.

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
from jax._src.export.stablehlo_to_jax import module as refined_module
from jax._src.export.transforms import errors
from jax._src.export.transforms import exported as exported_api
from jax._src.export.transforms import platforms as platforms_lib

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ModuleFunction:
  """An exported module as a function of JAX values.

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


def _first_line(e: BaseException) -> str:
  lines = str(e).strip().splitlines()
  return f"{type(e).__name__}: {lines[0] if lines else ''}"


# The start of the error of JAX's shape refinement (``mlir``'s), which the
# call itself raises for the same module and shapes.
_REFINEMENT_ERROR = "Error refining shapes."


@functools.lru_cache(maxsize=64)
def _program(module_bytes: bytes, nr_platform_args: int,
             shapes: tuple[tuple[int, ...], ...], platform_index: int = 0
             ) -> stablehlo_to_jax.Program | str | ValueError:
  """The module refined for ``shapes`` and interpreted, or why not (a
  string), or the call's own error where JAX's shape refinement of the
  module fails for ``shapes`` (a shape assertion of its constraints); a
  module for several platforms, for the one of ``platform_index``."""
  try:
    text = refined_module.refined_module_text(
        module_bytes, nr_platform_args, shapes,
        platform_index if nr_platform_args else None)
  except Exception as e:  # pylint: disable=broad-except
    if isinstance(e, ValueError) and str(e).startswith(_REFINEMENT_ERROR):
      return e
    return (f"its shapes cannot be refined for arguments of shapes "
            f"{list(shapes)} ({_first_line(e)})")
  try:
    program = stablehlo_to_jax.parse(text)
  except Exception as e:  # pylint: disable=broad-except
    return f"the interpreter cannot read its module ({_first_line(e)})"
  if program.unsupported:
    return ("its StableHLO module has ops that the interpreter has no exact "
            "JAX rule for: " + "; ".join(
                f"{name} ({why})" for name, why in program.reasons.items()))
  return program


compat.register_cache(_program, "jax.export: interpreted modules")


@functools.lru_cache(maxsize=64)
def _jitted(program: stablehlo_to_jax.Program
            ) -> Callable[..., tuple[jax.Array, ...]]:
  return jax.jit(lambda *a: tuple(program(*a)), inline=True)


compat.register_cache(_jitted, "jax.export: jitted interpreted modules")


def _primary(exported: jax.export.Exported) -> str:
  """The platform whose branch decides whether the module can be read.

  The machine's, if the module was exported for it (its branch runs here
  eagerly); else the module's first.
  """
  platform = jax.export.default_export_platform()
  return platform if platform in exported.platforms else exported.platforms[0]


def _branch_programs(exported: jax.export.Exported,
                     shapes: tuple[tuple[int, ...], ...]
                     ) -> dict[str, stablehlo_to_jax.Program | str]:
  """Each platform's branch of the module, read (or why not), by platform.

  Raises:
    ValueError: ``Exported.call``'s error where JAX's shape refinement of
      the module fails for ``shapes`` (the shape constraints of a
      polymorphic module).
  """
  n = platforms_lib.nr_platform_args(exported.platforms)
  found = {p: _program(exported.mlir_module_serialized, n, shapes, i)
           for i, p in enumerate(exported.platforms)}
  for f in found.values():
    if isinstance(f, ValueError):
      raise ValueError(str(f))  # (the call's error: a new one each time)
  return found


def _staged(exported: jax.export.Exported,
            programs: dict[str, stablehlo_to_jax.Program | str],
            out_avals: Sequence[core.ShapedArray], purpose: str
            ) -> Callable[..., tuple[jax.Array, ...]]:
  """The branches as one function, the platform's chosen at lowering.

  For a platform the module was not exported for, ``Exported.call``'s
  error; where its platform check is disabled, the first platform's branch
  (as ``Exported.call`` runs it there; each platform it was exported for
  still runs its own).
  """
  name = exported.fun_name
  branches = {
      p: _jitted(program) if isinstance(program, stablehlo_to_jax.Program)
      else platforms_lib.refusal(platforms_lib.message_template(
          errors.exported_branch_error(name, p, purpose, program)), out_avals)
      for p, program in programs.items()}
  if exported_api.platform_check_disabled(exported):
    default = branches[exported.platforms[0]]
    if len(branches) == 1:
      return default
  else:
    default = platforms_lib.refusal(platforms_lib.message_template(str(
        errors.exported_platform_error(name, exported.platforms,
                                       (platforms_lib.LOWERED,)))), out_avals)
  return platforms_lib.select(branches, default)


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


def module_function(exported: jax.export.Exported,
                    avals: Sequence[core.ShapedArray], *,
                    purpose: str) -> ModuleFunction | str:
  """``exported``'s module as JAX operations, for arguments of ``avals``.

  Args:
    exported: a ``jax.export.Exported``.
    avals: the avals of all its flat arguments (``Exported.call``'s).
    purpose: what it is for ("jax.vmap", "forward mode"), for the debug log.

  Returns:
    The function, or why there is none (for an error message): symbolic
    shapes, effects, several devices, an op without an exact rule (in the
    branch of the machine's platform, or the module's first). The
    function chooses its branch where JAX lowers it: for a platform the
    module was not exported for it raises ``Exported.call``'s error there
    (or, eagerly, when run), and for a branch the interpreter cannot read
    it says why.

  Raises:
    ValueError: ``Exported.call``'s error where JAX's shape refinement of
      the module fails for ``avals`` (the shape constraints of a
      polymorphic module).
  """
  kept = tuple(exported.module_kept_var_idx)
  found: stablehlo_to_jax.Program | str | None = _refusal(exported, avals)
  if found is None:
    programs = _branch_programs(
        exported, tuple(tuple(avals[i].shape) for i in kept))
    found = programs[_primary(exported)]
  if isinstance(found, str):
    logger.debug("jax.export: %s of %s cannot use its module as JAX "
                 "operations: %s", purpose, exported.fun_name, found)
    return found
  logger.debug("jax.export: %s of %s uses its module as JAX operations",
               purpose, exported.fun_name)
  jitted = _staged(exported, programs, found.out_avals, purpose)
  out_avals = tuple(exported.out_avals)
  float0_outs = tuple(a.dtype == jax.dtypes.float0 for a in out_avals)

  def fun(*args: jax.Array) -> list[jax.Array | None]:
    outs = jitted(*(args[i] for i in kept))
    return [None if f0 else stablehlo_to_jax.with_dtype(o, a.dtype)
            for o, a, f0 in zip(outs, out_avals, float0_outs)]
  return ModuleFunction(fun, float0_outs,
                        tuple(tuple(a.shape) for a in found.out_avals))
