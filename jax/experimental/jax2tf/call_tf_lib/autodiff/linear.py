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
"""``call_tf_linear``: a linear map of tangents with its transpose.

Forward mode of ``call_tf`` (:mod:`.jvp`) makes the output tangents a
*linear call*: a primitive, linear in the tangents, whose transpose is
``call_tf``'s VJP. ``jax.jvp``/``jax.jacfwd`` evaluate it;
``jax.grad``/``jax.jacrev`` linearize and transpose, so the call is never
evaluated and its transpose runs the VJP. It is batched by ``vmap`` of its
map and transpose (``call_tf``s, which the ``vmap_method`` dispatcher
batches), and lowered by tracing the map. JAX's
``custom_derivatives.linear_call`` does not do here: it has no batching
rule, and no derivative with respect to its residuals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jax
from jax._src import core
from jax._src.interpreters import ad
from jax._src.interpreters import mlir
from jax.experimental.jax2tf.call_tf_lib import compat
from jax import numpy as jnp

if TYPE_CHECKING:
  from jax._src.interpreters import batching

call_tf_linear_p = core.Primitive("call_tf_linear")
call_tf_linear_p.multiple_results = True


def linear_call(tangent_fun: Callable[..., Sequence[Any]],
                transpose_fun: Callable[..., Sequence[Any]],
                residuals: Sequence[Any], tangents: Sequence[Any],
                out_avals: Sequence[core.ShapedArray]) -> list[Any]:
  """``tangent_fun(*residuals, *tangents)``, linear in ``tangents``.

  Args:
    tangent_fun: computes the output tangents from the residuals and the
      input tangents; linear in the tangents.
    transpose_fun: its transpose: computes the tangents' cotangents from the
      residuals and the output cotangents.
    residuals: the values the map depends on (not differentiated through as
      a linear input).
    tangents: the linear inputs.
    out_avals: the avals of ``tangent_fun``'s results.

  Returns:
    The output tangents.
  """
  return call_tf_linear_p.bind(
      *residuals, *tangents, tangent_fun=tangent_fun,
      transpose_fun=transpose_fun, nr_residuals=len(residuals),
      out_avals=tuple(out_avals))


def _impl(*args: jax.Array, tangent_fun: Callable[..., Sequence[jax.Array]],
          **_: object) -> list[jax.Array]:
  return list(tangent_fun(*args))


def _abstract_eval(*args: core.AbstractValue,
                   out_avals: tuple[core.ShapedArray, ...], **_: object
                   ) -> tuple[core.ShapedArray, ...]:
  del args
  return out_avals


def _jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
         tangent_fun: Callable[..., Sequence[jax.Array]], **_: object
         ) -> tuple[list[jax.Array], list[jax.Array]]:
  # The map is a call_tf of its own: differentiating it (with respect to the
  # residuals too) is call_tf's own JVP, another linear call.
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  outs, out_tangents = jax.jvp(lambda *a: tuple(tangent_fun(*a)),
                               tuple(primals), tuple(tangents))
  return list(outs), list(out_tangents)


def _transpose(cts: Sequence[jax.Array | ad.Zero],
               *args: jax.Array | ad.UndefinedPrimal,
               transpose_fun: Callable[..., Sequence[jax.Array]],
               nr_residuals: int, out_avals: tuple[core.ShapedArray, ...],
               **_: object) -> list[jax.Array | None]:
  residuals = args[:nr_residuals]
  if any(ad.is_undefined_primal(r) for r in residuals):
    raise NotImplementedError(
        "call_tf's tangent map is linear in the tangents only; transposing "
        "it with respect to the primal values is a bug in call_tf_lib.")
  del out_avals
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  return [None] * nr_residuals + list(transpose_fun(*residuals, *cts))


def _batching_rule(axis_data: batching.AxisData, args: Sequence[jax.Array],
                   dims: Sequence[int | None], *,
                   tangent_fun: Callable[..., Sequence[Any]],
                   transpose_fun: Callable[..., Sequence[Any]],
                   nr_residuals: int, out_avals: tuple[core.ShapedArray, ...]
                   ) -> tuple[list[Any], list[int | None]]:
  """A batch of linear calls is one linear call of the batched map.

  It stays a linear call, so that it can still be transposed (a JVP rule
  batched by vmap inside reverse mode): the map and its transpose are
  ``vmap``s of the originals (``call_tf``s, which the ``vmap_method``
  dispatcher batches). Unbatched tangents stay unbatched (``jacfwd``'s basis
  under an outer ``vmap``: broadcasting it would make XLA read a batch of
  copies); the transpose sums their cotangents over the batch, as the
  transpose of a broadcast does.
  """
  if all(d is None for d in dims):
    outs = linear_call(tangent_fun, transpose_fun, args[:nr_residuals],
                       args[nr_residuals:], out_avals)
    return outs, [None] * len(outs)
  size = axis_data.size
  moved = [a if d is None else jnp.moveaxis(a, d, 0)
           for a, d in zip(args, dims)]
  axes = tuple(None if d is None else 0 for d in dims)
  tangent_batched = [d is not None for d in dims[nr_residuals:]]

  def batched_tangent_fun(*a):
    return list(jax.vmap(lambda *b: tuple(tangent_fun(*b)), in_axes=axes,
                         axis_size=size)(*a))

  def batched_transpose_fun(*a):
    cts = jax.vmap(lambda *b: tuple(transpose_fun(*b)),
                   in_axes=axes[:nr_residuals] + (0,) * len(out_avals),
                   axis_size=size)(*a)
    return [ct if batched else jnp.sum(ct, axis=0)
            for ct, batched in zip(cts, tangent_batched)]

  outs = linear_call(batched_tangent_fun, batched_transpose_fun,
                     moved[:nr_residuals], moved[nr_residuals:],
                     [a.update(shape=(size, *a.shape)) for a in out_avals])
  return outs, [0] * len(outs)


call_tf_linear_p.def_impl(_impl)
call_tf_linear_p.def_abstract_eval(_abstract_eval)
ad.primitive_jvps[call_tf_linear_p] = _jvp
ad.primitive_transposes[call_tf_linear_p] = _transpose
compat.register_batching_rule(call_tf_linear_p, _batching_rule)
mlir.register_lowering(call_tf_linear_p,
                       mlir.lower_fun(_impl, multiple_results=True))
