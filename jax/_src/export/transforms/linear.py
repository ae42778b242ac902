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
"""A linear map of tangents with its transpose, and JVP rules made of it.

Forward mode of an opaque call (``Exported.call``; ``jax2tf.call_tf``)
makes its output tangents a *linear call* (:func:`linear_call`): a
primitive, linear in the tangents, whose transpose is the call's VJP.
``jax.jvp``/``jax.jacfwd`` evaluate it; ``jax.grad``/``jax.jacrev``
linearize and transpose, so the call is never evaluated and its transpose
runs the VJP: reverse mode stays what it was. It is batched by ``vmap`` of
its map and transpose, and lowered by tracing the map. JAX's
``custom_derivatives.linear_call`` does not do here: it has no batching
rule, and no derivative with respect to its residuals.

:func:`linear_jvp` is the JVP rule of a ``jax.custom_jvp`` function whose
tangents are such a linear call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import functools
from typing import TYPE_CHECKING, Any

import jax
from jax._src import core
from jax._src import dtypes
from jax._src.export.stablehlo_to_jax import compat
from jax._src.interpreters import ad
from jax._src.interpreters import mlir
from jax import numpy as jnp
from jax import tree_util
from jax.typing import ArrayLike, DTypeLike
import numpy as np

if TYPE_CHECKING:
  from jax._src.interpreters import batching

linear_call_p = core.Primitive("linear_call_with_transpose")
linear_call_p.multiple_results = True


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
  return linear_call_p.bind(
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
  # The map is a call of its own (an opaque call's tangent function):
  # differentiating it, with respect to the residuals too, is that call's
  # own JVP, another linear call.
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
        "a linear call is linear in its tangents only; transposing it with "
        "respect to the primal values (its residuals) is a bug in its "
        "caller.")
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
  ``vmap``s of the originals (calls that their own batching rules batch).
  Unbatched tangents stay unbatched (``jacfwd``'s basis
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


def _is_symbolic_zero(
    t: ArrayLike | jax.custom_derivatives.SymbolicZero) -> bool:
  return isinstance(t, jax.custom_derivatives.SymbolicZero)


def has_tangent_space(x: ArrayLike | DTypeLike | None) -> bool:
  """Whether ``x`` (a value or dtype) has tangents: floating or complex."""
  return x is not None and dtypes.issubdtype(
      dtypes.result_type(x), np.inexact)


@dataclasses.dataclass(frozen=True, eq=False)
class Differentiable:
  """A call that JAX's rules may differentiate themselves.

  Attributes:
    fun: the call on flat JAX arguments, returning its flat results.
    out_tree: the pytree of its results.
    reverse: whether JAX can also transpose its derivative (no loop in the
      module: JAX cannot differentiate a ``while`` loop in reverse mode).
  """
  fun: Callable[..., list[Any]]
  out_tree: tree_util.PyTreeDef
  reverse: bool


def _zero_tangent(primal: ArrayLike) -> jax.Array | np.ndarray:
  """A zero tangent of ``primal`` (float0 if it has no tangent space)."""
  if has_tangent_space(primal):
    return jnp.zeros(np.shape(primal), dtypes.result_type(primal))
  return np.zeros(np.shape(primal), dtypes.float0)


def _instantiate(primal: ArrayLike,
                 tangent: ArrayLike | jax.custom_derivatives.SymbolicZero
                 ) -> ArrayLike:
  """``tangent``, a zero array of the tangent dtype if it is symbolic."""
  return _zero_tangent(primal) if _is_symbolic_zero(tangent) else tangent


def define_linear_jvp(
    f: jax.custom_jvp, tangent_call: Callable[[Any, Any], Sequence[Any]],
    vjp_bwd: Callable[[Any, Any], Any], *,
    differentiable: Callable[[Sequence[Any], Any],
                             Differentiable | None] | None = None,
) -> None:
  """Defines the JVP of the ``custom_jvp`` function ``f`` as a linear call.

  Args:
    f: a ``jax.custom_jvp`` function of array pytrees.
    tangent_call: see :func:`linear_jvp`.
    vjp_bwd: see :func:`linear_jvp`.
    differentiable: see :func:`linear_jvp`.
  """
  f.defjvp(linear_jvp(f, tangent_call, vjp_bwd,
                      differentiable=differentiable), symbolic_zeros=True)


def linear_jvp(
    f: Callable[..., Any], tangent_call: Callable[[Any, Any], Sequence[Any]],
    vjp_bwd: Callable[[Any, Any], Any], *,
    differentiable: Callable[[Sequence[Any], Any],
                             Differentiable | None] | None = None,
) -> Callable[[tuple[Any, ...], tuple[Any, ...]], tuple[Any, Any]]:
  """The JVP rule of ``f``, its tangents a linear call (symbolic zeros).

  Args:
    f: the differentiated function of array pytrees (it computes the
      primal where ``differentiable`` gives nothing).
    tangent_call: ``tangent_call(args, tangents)``: the tangents of ``f``'s
      outputs that have a tangent space (floating or complex), flat; the
      ``tangents`` pytree has None for arguments without a tangent.
    vjp_bwd: ``vjp_bwd(args, output_cotangents)``: the cotangents of all
      arguments (float0 for those without a tangent space); the transpose.
    differentiable: ``differentiable(flat_args, args_tree)``: ``f`` on these
      arguments as a function JAX may differentiate itself
      (:class:`Differentiable`), or None where ``tangent_call``
      and ``vjp_bwd`` must. Its derivative is then JAX's ``jvp`` of it, and
      reverse mode JAX's transpose of that; where JAX cannot transpose it (a
      loop), the transpose stays ``vjp_bwd``.

  Returns:
    ``jvp(primals, tangents) -> (outputs, output_tangents)``, for
    ``custom_jvp.defjvp(..., symbolic_zeros=True)``.
  """
  def jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]
          ) -> tuple[Any, Any]:
    return _linear_jvp_rule(f, tangent_call, vjp_bwd, differentiable,
                            primals, tangents)

  return jvp


def _linear_jvp_rule(
    f: Callable[..., Any], tangent_call: Callable[[Any, Any], Sequence[Any]],
    vjp_bwd: Callable[[Any, Any], Any],
    differentiable: Callable[[Sequence[Any], Any],
                             Differentiable | None] | None,
    primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
  """:func:`linear_jvp`'s rule on ``primals`` and ``tangents``.

  Args:
    f: see :func:`linear_jvp`.
    tangent_call: see :func:`linear_jvp`.
    vjp_bwd: see :func:`linear_jvp`.
    differentiable: see :func:`linear_jvp`.
    primals: the arguments.
    tangents: their tangents (symbolic zeros where they have none).

  Returns:
    ``(outputs, output_tangents)``.
  """
  flat_primals, primals_tree = tree_util.tree_flatten(primals)
  flat_tangents = primals_tree.flatten_up_to(tangents)
  perturbed = [not _is_symbolic_zero(t) and has_tangent_space(p)
               for p, t in zip(flat_primals, flat_tangents)]
  d = differentiable(flat_primals, primals_tree) if differentiable else None
  if d is not None and d.reverse:
    flat_outs, flat_out_tangents = jax.jvp(
        d.fun, list(flat_primals),
        [_instantiate(p, t) for p, t in zip(flat_primals, flat_tangents)])
    return (d.out_tree.unflatten(flat_outs),
            d.out_tree.unflatten(flat_out_tangents))
  if d is not None:
    outs = d.out_tree.unflatten(d.fun(*flat_primals))
    # Its transpose stays the caller's (vjp_bwd).
    map_tangents = functools.partial(_interpreted_tangent_call, d.fun,
                                     primals_tree)
  else:
    outs = f(*primals)
    map_tangents = tangent_call
  flat_outs, outs_tree = tree_util.tree_flatten(outs)
  linear_map = _LinearMap(map_tangents, vjp_bwd, primals_tree, perturbed,
                          flat_outs, outs_tree)
  return outs, _out_tangents(linear_map, flat_primals, flat_tangents)


def _interpreted_tangent_call(fun: Callable[..., list[jax.Array]],
                              primals_tree: tree_util.PyTreeDef, args: Any,
                              tangents_tree: Any) -> list[jax.Array]:
  """The tangents of the outputs with a tangent space, from JAX's ``jvp``.

  Args:
    fun: the call on flat arguments (:attr:`.Differentiable.fun`).
    primals_tree: the pytree structure of the call's arguments.
    args: the arguments.
    tangents_tree: their tangents, None where an argument has none.

  Returns:
    The tangents of ``fun``'s outputs with a tangent space, flat.
  """
  flat_args = primals_tree.flatten_up_to(args)
  flat_t = tree_util.tree_leaves(tangents_tree, is_leaf=lambda t: t is None)
  full_t = [_zero_tangent(a) if t is None else t
            for a, t in zip(flat_args, flat_t)]
  res, res_t = jax.jvp(fun, list(flat_args), full_t)
  return [t for r, t in zip(res, res_t) if has_tangent_space(r)]


@dataclasses.dataclass(eq=False)  # its methods are primitive parameters
class _LinearMap:
  """The tangent map of one call as a linear call, and its transpose.

  Attributes:
    tangent_call: see :func:`linear_jvp`.
    vjp_bwd: see :func:`linear_jvp`.
    primals_tree: the pytree structure of the arguments.
    perturbed: per flat argument, whether it has a (nonzero) tangent.
    flat_outs: the flat outputs.
    outs_tree: their pytree structure.
    has_tangent: per flat output, whether it has a tangent space.
  """
  tangent_call: Callable[[Any, Any], Sequence[Any]]
  vjp_bwd: Callable[[Any, Any], Any]
  primals_tree: tree_util.PyTreeDef
  perturbed: Sequence[bool]
  flat_outs: Sequence[Any]
  outs_tree: tree_util.PyTreeDef

  has_tangent: list[bool] = dataclasses.field(init=False)

  def __post_init__(self) -> None:
    self.has_tangent = [has_tangent_space(o) for o in self.flat_outs]

  def tangent_fun(self, *args: jax.Array) -> list[jax.Array]:
    """The tangents of the outputs with a tangent space, flat.

    Args:
      *args: the flat arguments, then the tangents of the perturbed ones.

    Returns:
      ``tangent_call``'s tangents.
    """
    nr = len(self.perturbed)
    residuals, lin = args[:nr], iter(args[nr:])
    tangents_tree = self.primals_tree.unflatten(
        [next(lin) if p else None for p in self.perturbed])
    return list(self.tangent_call(
        self.primals_tree.unflatten(list(residuals)), tangents_tree))

  def transpose_fun(self, *args: jax.Array) -> list[ArrayLike]:
    """The transpose of :meth:`tangent_fun`, by ``vjp_bwd``.

    Args:
      *args: the flat arguments, then the cotangents of the outputs with a
        tangent space.

    Returns:
      The cotangents of the perturbed arguments.
    """
    nr = len(self.perturbed)
    residuals, cts = args[:nr], iter(args[nr:])
    full_cts = [next(cts) if h else np.zeros(np.shape(o), dtypes.float0)
                for o, h in zip(self.flat_outs, self.has_tangent)]
    ct_args = self.vjp_bwd(self.primals_tree.unflatten(list(residuals)),
                           self.outs_tree.unflatten(full_cts))
    flat_ct_args = self.primals_tree.flatten_up_to(ct_args)
    return [ct for ct, p in zip(flat_ct_args, self.perturbed) if p]


def _out_tangents(linear_map: _LinearMap, flat_primals: Sequence[Any],
                  flat_tangents: Sequence[Any]) -> Any:
  """The output tangents: ``linear_map``'s linear call, zeros elsewhere.

  Args:
    linear_map: the call's tangent map.
    flat_primals: the flat arguments.
    flat_tangents: their tangents (symbolic zeros where they have none).

  Returns:
    The output tangents, a pytree like the outputs (float0 zeros for the
    outputs without a tangent space).
  """
  flat_outs, has_tangent = linear_map.flat_outs, linear_map.has_tangent
  perturbed = linear_map.perturbed
  out_avals = [core.ShapedArray(np.shape(o), dtypes.result_type(o))
               for o, h in zip(flat_outs, has_tangent) if h]
  has_linear = out_avals and any(perturbed)
  out_tangents = iter(linear_call(
      linear_map.tangent_fun, linear_map.transpose_fun, flat_primals,
      [t for t, p in zip(flat_tangents, perturbed) if p], out_avals)
      if has_linear else ())
  flat_out_tangents = [
      next(out_tangents) if h and has_linear
      else np.zeros(np.shape(o), dtypes.result_type(o) if h
                    else dtypes.float0)
      for o, h in zip(flat_outs, has_tangent)]
  return linear_map.outs_tree.unflatten(flat_out_tangents)


linear_call_p.def_impl(_impl)
linear_call_p.def_abstract_eval(_abstract_eval)
ad.primitive_jvps[linear_call_p] = _jvp
ad.primitive_transposes[linear_call_p] = _transpose
compat.register_batching_rule(linear_call_p, _batching_rule)
mlir.register_lowering(linear_call_p,
                       mlir.lower_fun(_impl, multiple_results=True))
