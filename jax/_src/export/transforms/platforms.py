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
"""Which platform's branch of an exported module runs, chosen at lowering.

A module exported for several platforms takes the index of one of them as
its first argument; one exported for a single platform has no such
argument, and runs on that platform only. ``Exported.call``'s lowering
chooses the branch when JAX lowers for a platform. The interpreter's
programs must do the same: the platform is not known when they are traced
(``jax.export`` for a TPU on a machine without one, or for several
platforms at once), only when they are lowered. So each branch is read as
JAX operations and :func:`select` stages them with
``lax.platform_dependent``; a platform the module was not exported for is
refused when it is lowered for (or, eagerly, run on), with
``Exported.call``'s own message, as is a branch the interpreter could not
read (naming why).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import jax
from jax._src import core
from jax._src.interpreters import ad
from jax._src.interpreters import batching
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir

Branch = Callable[..., tuple[jax.Array, ...]]
"""A function of a module's operands returning its results."""

def nr_platform_args(platforms: Sequence[str]) -> int:
  """How many platform arguments a module exported for ``platforms`` takes."""
  return 1 if len(platforms) > 1 else 0


refused_p = core.Primitive("exported_platform_refused")
"""Stands for a branch that must not run: a platform the module was not
exported for, or one the interpreter cannot read. Its results are never
computed: it raises when lowered (or run eagerly), with ``message``, whose
``{}`` is filled with the platforms lowered for; except where every platform
lowered for is one of ``unreached``, those whose own branch runs instead
(releases of JAX before 0.6 lower every branch of ``lax.platform_dependent``
and leave it to XLA to drop the ones not taken)."""
refused_p.multiple_results = True


def _refused_abstract_eval(*args: core.AbstractValue,
                           out_avals: tuple[core.ShapedArray, ...],
                           message: str, unreached: tuple[str, ...]
                           ) -> tuple[core.ShapedArray, ...]:
  del args, message, unreached
  return out_avals


def _refused_impl(*args: jax.Array, out_avals: tuple[core.ShapedArray, ...],
                  message: str, unreached: tuple[str, ...]) -> list[jax.Array]:
  del out_avals, unreached  # eagerly, only the branch taken runs
  platforms = {d.platform for a in args if isinstance(a, jax.Array)
               for d in a.devices()} or {jax.default_backend()}
  raise ValueError(message.format(tuple(sorted(platforms))))


def _refused_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value,
                      out_avals: tuple[core.ShapedArray, ...],
                      message: str, unreached: tuple[str, ...]
                      ) -> list[ir.Value]:
  del args
  lowered_for = tuple(ctx.module_context.platforms)
  if not set(lowered_for) <= set(unreached):
    raise ValueError(message.format(lowered_for))
  # A branch lowered though not taken: its results are never read.
  return [mlir.full_like_aval(ctx, 0, a) for a in out_avals]


def _refused_batching(args: Sequence[jax.Array], dims: Sequence[int | None],
                      *,
                      out_avals: tuple[core.ShapedArray, ...],
                      message: str, unreached: tuple[str, ...]
                      ) -> tuple[Sequence[jax.Array], list[None]]:
  del dims  # its results are never computed: unbatched, as any shape
  return (refused_p.bind(*args, out_avals=out_avals, message=message,
                         unreached=unreached),
          [None] * len(out_avals))


def _refused_jvp(primals: Sequence[jax.Array],
                 tangents: Sequence[jax.Array | ad.Zero], *,
                 out_avals: tuple[core.ShapedArray, ...],
                 message: str, unreached: tuple[str, ...]
                 ) -> tuple[Sequence[jax.Array], Sequence[jax.Array]]:
  """Its tangents are refused too: never zeros, which a program that keeps
  only tangents (``jax.jacfwd``) would return unseen."""
  outs = refused_p.bind(*primals, out_avals=out_avals, message=message,
                        unreached=unreached)
  tangent_avals = tuple(
      core.ShapedArray(a.shape, core.primal_dtype_to_tangent_dtype(a.dtype))
      for a in out_avals)
  tangents_out = refused_p.bind(
      *primals, *map(ad.instantiate_zeros, tangents),
      out_avals=tangent_avals, message=message, unreached=unreached)
  return outs, tangents_out


def _refused_transpose(cts: Sequence[jax.Array | ad.Zero],
                       *args: jax.Array | ad.UndefinedPrimal,
                       out_avals: tuple[core.ShapedArray, ...],
                       message: str, unreached: tuple[str, ...]
                       ) -> list[jax.Array | None]:
  """Its cotangents are refused too, as its tangents are."""
  del out_avals
  linear = [ad.is_undefined_primal(a) for a in args]
  refused = iter(refused_p.bind(
      *map(ad.instantiate_zeros, cts),
      *(a for a, lin in zip(args, linear) if not lin),
      out_avals=tuple(a.aval for a, lin in zip(args, linear) if lin),
      message=message, unreached=unreached))
  return [next(refused) if lin else None for lin in linear]


refused_p.def_impl(_refused_impl)
refused_p.def_abstract_eval(_refused_abstract_eval)
mlir.register_lowering(refused_p, _refused_lowering)
batching.primitive_batchers[refused_p] = _refused_batching
ad.primitive_jvps[refused_p] = _refused_jvp
ad.primitive_transposes[refused_p] = _refused_transpose


@dataclasses.dataclass(frozen=True)
class Refusal:
  """A branch that is refused, with ``message``, where it would run.

  Attributes:
    message: the error's message; ``{}`` in it becomes the platforms
      lowered for.
    out_avals: the avals of the results the other branches give.
    unreached: the platforms whose own branch runs instead (set by
      :func:`select`).
  """
  message: str
  out_avals: tuple[core.ShapedArray, ...]
  unreached: tuple[str, ...] = ()

  def __call__(self, *args: jax.Array) -> tuple[jax.Array, ...]:
    return tuple(refused_p.bind(*args, out_avals=self.out_avals,
                                message=self.message,
                                unreached=self.unreached))


def refusal(message: str, out_avals: Sequence[core.ShapedArray]) -> Refusal:
  """A branch that is refused, with ``message``, where it would run.

  Args:
    message: the error's message; ``{}`` in it becomes the platforms
      lowered for.
    out_avals: the avals of the results the other branches give.

  Returns:
    A function of the module's operands.
  """
  return Refusal(message, tuple(core.ShapedArray(a.shape, a.dtype)
                                for a in out_avals))


def select(branches: dict[str, Branch], default: Branch) -> Branch:
  """The branch of the platform JAX lowers for (or runs on), staged.

  Args:
    branches: by JAX platform name ("cpu", "cuda", "rocm", "tpu"), the
      function of each platform the module was exported for.
    default: for any other platform (a :func:`refusal`).

  Returns:
    A function of the module's operands: the branches under
    ``lax.platform_dependent``, which lowers only the one of the platform
    lowered for (a conditional on the platform where JAX lowers for
    several).
  """
  def unreached_by(branch: Branch, platform: str | None) -> Branch:
    if not isinstance(branch, Refusal):
      return branch
    return dataclasses.replace(branch, unreached=tuple(
        sorted(p for p in branches if p != platform)))
  branches = {p: unreached_by(b, p) for p, b in branches.items()}
  default = unreached_by(default, None)
  return lambda *args: jax.lax.platform_dependent(
      *args, default=default, **branches)


LOWERED = "<lowered>"
"""Stands for the platforms lowered for in a :func:`message_template`."""


def message_template(message: str) -> str:
  """``message`` as a :func:`refusal`'s template: its braces kept, and the
  platforms lowered for where it says ``(LOWERED,)`` or ``LOWERED``."""
  return message.replace("{", "{{").replace("}", "}}").replace(
      str((LOWERED,)), "{}").replace(LOWERED, "{}")
