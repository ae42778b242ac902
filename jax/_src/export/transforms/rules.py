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
"""``jax.vmap`` and forward mode of ``jax.export``'s ``Exported.call``.

``jax._src.export._export`` registers :func:`batching_rule` for its
``call_exported_p`` and makes ``Exported.call`` a ``jax.custom_jvp`` whose
rule is :func:`jvp`.

Batching: JAX's ``vmap`` of the module as JAX operations
(:mod:`.function`), exact for any pure module, any ``in_axes``, nested
``vmap`` and a symbolic batch size; the module's own shapes must be static.

Derivatives come only from what was serialized, never from JAX's rules
applied to the serialized module: a module does not record the function's
``custom_jvp``/``custom_vjp`` rules or its ``stop_gradient``, so its
derivative can differ from the function's (``sin(x) * stop_gradient(x)``:
the module computes ``sin(x) * x``). An artifact serialized with
``vjp_order=k`` holds its VJP modules ``V1 ... Vk`` (``Vi+1`` the VJP of
``Vi``):

* reverse mode of the function (or of ``Vi``) is the next VJP, as before;
  none is an error (``No VJP is available``, explained);
* forward mode is computed from the next VJP too: ``J t`` is the transpose
  of ``ct -> J^T ct``, linear in ``ct``. Where the VJP after it exists
  (``V2`` for forward mode of the function), ``J t`` is its cotangent of the
  VJP's cotangent input, an exported call differentiable in turn; else JAX
  transposes the VJP's module as JAX operations (transposing a linear map is
  exact), and a derivative of that transpose with respect to the primal
  values, which would differentiate the module, is refused.

So a custom VJP of the original function holds in both modes (forward mode
is its transpose), and so does a custom JVP (the VJP is its transpose).
``vjp_order=1`` gives ``jax.grad``, ``jacrev``, ``jvp``, ``jacfwd`` and
per-example gradients; ``jax.hessian`` needs ``vjp_order=2``.

See https://github.com/jax-ml/jax/issues/28327.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax._src import core
from jax._src import dtypes
from jax._src.export.stablehlo_to_jax import compat
from jax._src.export.transforms import errors
from jax._src.export.transforms import exported as exported_api
from jax._src.export.transforms import function as module_function
from jax._src.export.transforms import linear
from jax import numpy as jnp
from jax import tree_util
import numpy as np


def _element_avals(args: Sequence[Any], dims: Sequence[int | None]
                   ) -> list[core.ShapedArray]:
  """The avals of one element of each argument (its batch axis removed)."""
  avals = []
  for a, d in zip(args, dims):
    aval = compat.typeof(a)
    shape = tuple(aval.shape)
    if d is not None:
      shape = shape[:d] + shape[d + 1:]
    avals.append(core.ShapedArray(shape, aval.dtype))
  return avals


def batching_rule(args: Sequence[Any], dims: Sequence[int | None], *,
                  exported: jax.export.Exported
                  ) -> tuple[list[Any], list[int | None]]:
  """``call_exported_p``'s batching rule: ``jax.vmap`` of ``Exported.call``.

  Args:
    args: the call's flat arguments; batched ones have their batch axis at
      ``dims``.
    dims: for each argument, its batch axis or None.
    exported: the ``jax.export.Exported`` called.

  Returns:
    The results, batched at axis 0 (``float0`` results unbatched), and their
    batch axes.

  Raises:
    NotImplementedError: the module cannot be expressed as JAX operations
      (symbolic argument shapes, effects, several devices, an op the
      interpreter has no exact rule for); the message says which.
    ValueError: ``Exported.call``'s errors, of one element (a dtype, rank
      or static dimension other than the module's, arguments that break
      the shape constraints of a polymorphic module), or where it is
      lowered for a platform the module was not exported for.
  """
  size = next(np.shape(a)[d] for a, d in zip(args, dims) if d is not None)
  kept = set(exported.module_kept_var_idx)
  avals = _element_avals(args, dims)
  # (What the call checks of its arguments, which JAX checks for it where
  # it binds the call, and not where it batches it: of each element.)
  exported_api.check_arguments(exported, avals)
  fun = module_function.exported_call(exported, avals, purpose="jax.vmap")
  if isinstance(fun, str):
    raise errors.exported_batching_error(exported.fun_name, fun)
  # Only the arguments the module keeps enter it (float0 cotangents, unused
  # arguments do not).
  positions = [i for i in range(len(args)) if i in kept]
  moved = [args[i] if dims[i] is None else jnp.moveaxis(args[i], dims[i], 0)
           for i in positions]

  def unbatched(*kept_args):
    full: list[Any] = [None] * len(args)
    for i, a in zip(positions, kept_args):
      full[i] = a
    return tuple(o for o in fun(*full) if o is not None)

  values = jax.vmap(
      unbatched, in_axes=[None if dims[i] is None else 0 for i in positions],
      axis_size=size)(*moved)
  return _with_float0_outs(fun, values)


def _with_float0_outs(fun: module_function.ExportedCall,
                      values: Sequence[Any]
                      ) -> tuple[list[Any], list[int | None]]:
  """All of ``fun``'s results and their batch axes, given ``values``, the
  batched values of its results other than ``float0`` (in order, at axis
  0): each ``float0`` result zeros of its shape, unbatched."""
  values = iter(values)
  outs, out_dims = [], []
  for f0, shape in zip(fun.float0_outs, fun.out_shapes):
    if f0:
      outs.append(np.zeros(shape, dtypes.float0))
      out_dims.append(None)
    else:
      outs.append(next(values))
      out_dims.append(0)
  return outs, out_dims


def jvp(call: Callable[..., Any], exported: jax.export.Exported,
        vjp_bwd: Callable[[tuple[Any, ...], list[Any]], Sequence[Any]],
        primals: tuple[Any, ...], tangents: tuple[Any, ...]
        ) -> tuple[Any, Any]:
  """The JVP rule of ``Exported.call`` (a ``custom_jvp``, symbolic zeros).

  The primal is the call; the tangents a linear call (:mod:`.linear`)
  whose value is :func:`forward_mode` and whose transpose is the
  ``custom_vjp``'s VJP rule, so that reverse mode stays the serialized VJP.

  Args:
    call: ``Exported.call`` on flat arguments (the ``custom_jvp``).
    exported: the ``jax.export.Exported``.
    vjp_bwd: ``Exported.call``'s VJP rule,
      ``vjp_bwd(args, output_cotangents)``.
    primals: the flat arguments.
    tangents: their tangents (``SymbolicZero`` where zero).

  Returns:
    The results and their tangents.
  """
  def tangent_call(args: Any, tangents_tree: Any) -> list[Any]:
    flat_t = tree_util.tree_leaves(tangents_tree, is_leaf=lambda t: t is None)
    return forward_mode(call, exported, list(args), flat_t)

  def bwd(args: Any, cts: Any) -> tuple[Any, ...]:
    if not exported.has_vjp():
      raise errors.exported_no_vjp_error(exported.fun_name)
    return tuple(vjp_bwd(tuple(args), list(cts)))

  return linear.linear_jvp(call, tangent_call, bwd)(primals, tangents)


def _zeros(aval: core.ShapedArray) -> jax.Array | np.ndarray:
  """A zero tangent (or cotangent) for a value of ``aval``."""
  if linear.has_tangent_space(aval.dtype):
    return jnp.zeros(aval.shape, aval.dtype)
  return np.zeros(aval.shape, dtypes.float0)


def forward_mode(call: Callable[..., Any], exported: jax.export.Exported,
                 args: Sequence[Any], tangents: Sequence[Any | None]
                 ) -> list[Any]:
  """The output tangents of ``Exported.call``, from its serialized VJPs.

  Args:
    call: ``Exported.call`` on flat arguments.
    exported: the ``jax.export.Exported``.
    args: the flat arguments.
    tangents: their tangents, None where zero or without a tangent space.

  Returns:
    The tangents of the results with a tangent space (floating, complex).

  Raises:
    ValueError: no VJP was serialized.
    NotImplementedError: the VJP's module cannot be transposed here.
  """
  if not exported.has_vjp():
    raise errors.exported_forward_mode_error(exported.fun_name)
  out_avals = [compat.typeof(o) for o in jax.eval_shape(call, *args)]
  arg_avals = [compat.typeof(a) for a in args]
  full_t = [_zeros(a) if t is None or not linear.has_tangent_space(a.dtype)
            else t for a, t in zip(arg_avals, tangents)]
  has_t = [linear.has_tangent_space(a.dtype) for a in out_avals]
  vjp = exported.vjp()
  if vjp.has_vjp():
    # J t = d/dct <J^T ct, t>: the second VJP's cotangent of the first's
    # cotangent input (at any ct, the first being linear in it).
    res = tree_util.tree_leaves(vjp.vjp().call(
        *args, *map(_zeros, out_avals), *full_t))
    return [r for r, h in zip(res[len(args):], has_t) if h]

  fun = module_function.exported_call(
      vjp, [*arg_avals, *(core.ShapedArray(a.shape, a.dtype if h
                                           else dtypes.float0)
                          for a, h in zip(out_avals, has_t))],
      purpose="forward mode")
  if isinstance(fun, str):
    raise errors.exported_forward_mode_interpret_error(exported.fun_name, fun)

  return transpose_of_vjp(
      lambda args, cts: fun(*args, *cts), args,
      [a for a, h in zip(out_avals, has_t) if h], has_t, full_t,
      second_derivative_error=lambda: errors.exported_second_derivative_error(
          exported.fun_name, errors.EXPORTED_NEXT_ORDER),
      transpose_error=lambda e: errors.exported_forward_mode_interpret_error(
          exported.fun_name, f"JAX cannot transpose its module "
          f"({type(e).__name__}: {e})"))


def transpose_of_vjp(
    vjp_fun: Callable[[Sequence[Any], Sequence[Any]], Sequence[Any]],
    args: Sequence[Any], ct_avals: Sequence[core.ShapedArray],
    has_tangent: Sequence[bool], tangents: Sequence[Any], *,
    second_derivative_error: Callable[[], Exception],
    transpose_error: Callable[[Exception], Exception]) -> list[Any]:
  """``J t``: the transpose of the VJP ``ct -> J^T ct``, applied to ``t``.

  The VJP is linear in ``ct``; JAX transposes it, which is exact. Its
  derivative with respect to ``args`` (a second derivative) would be JAX's
  derivative of the VJP's module, which need not be the function's: it is
  refused.

  Args:
    vjp_fun: ``vjp_fun(args, cts)``: the cotangents of ``args`` (None or
      ``float0`` where an argument has no tangent space), given one
      cotangent per result (None for results without a tangent space).
    args: the primal arguments.
    ct_avals: the avals of the results with a tangent space.
    has_tangent: for each result, whether it has a tangent space.
    tangents: one tangent per argument (zeros, ``float0`` ones included,
      where there is none).
    second_derivative_error: the error for a derivative of the result with
      respect to ``args``.
    transpose_error: the error, given JAX's, if JAX cannot transpose it.

  Returns:
    The tangents of the results with a tangent space.
  """
  float_args = [linear.has_tangent_space(compat.typeof(a).dtype)
                for a in args]
  nr_args = len(args)
  ct_structs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in ct_avals]

  @jax.custom_jvp
  def tangents_of(*args_and_tangents):
    return _transposed_vjp(
        vjp_fun, args_and_tangents[:nr_args], args_and_tangents[nr_args:],
        ct_structs, has_tangent, float_args, transpose_error)

  def tangents_of_jvp(primals, primal_tangents):
    if any(not isinstance(t, jax.custom_derivatives.SymbolicZero) and f
           for t, f in zip(primal_tangents[:nr_args], float_args)):
      raise second_derivative_error()
    float_t = [jnp.zeros(p.shape, p.dtype)
               if isinstance(t, jax.custom_derivatives.SymbolicZero) else t
               for p, t in zip(primals[nr_args:], primal_tangents[nr_args:])]
    return (tangents_of(*primals),
            tangents_of(*primals[:nr_args], *float_t))

  tangents_of.defjvp(tangents_of_jvp, symbolic_zeros=True)
  float_tangents = [t for t, f in zip(tangents, float_args) if f]
  return list(tangents_of(*args, *float_tangents))


def _transposed_vjp(
    vjp_fun: Callable[[Sequence[Any], Sequence[Any]], Sequence[Any]],
    primal_args: Sequence[Any], float_tangents: Sequence[Any],
    ct_structs: Sequence[jax.ShapeDtypeStruct], has_tangent: Sequence[bool],
    float_args: Sequence[bool],
    transpose_error: Callable[[Exception], Exception]) -> tuple[Any, ...]:
  """The transpose of ``ct -> vjp_fun(primal_args, ct)`` at ``float_tangents``.

  Args:
    vjp_fun: as :func:`transpose_of_vjp`'s.
    primal_args: the primal arguments.
    float_tangents: the tangents of the arguments with a tangent space.
    ct_structs: the cotangents' shapes and dtypes (results with a tangent
      space).
    has_tangent: for each result, whether it has a tangent space.
    float_args: for each argument, whether it has a tangent space.
    transpose_error: the error, given JAX's, if JAX cannot transpose it.

  Returns:
    The tangents of the results with a tangent space.
  """
  def vjp_of_cts(*float_cts):
    it = iter(float_cts)
    cts = [next(it) if h else None for h in has_tangent]
    arg_cts = vjp_fun(primal_args, cts)
    return [ct for ct, f in zip(arg_cts, float_args) if f]

  try:
    transpose = jax.linear_transpose(vjp_of_cts, *ct_structs)
    return tuple(transpose(list(float_tangents)))
  except Exception as e:  # pylint: disable=broad-except
    # (JAX's error: an op of the module that it cannot transpose.)
    raise transpose_error(e) from e
