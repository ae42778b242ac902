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
"""Forward-mode differentiation of ``call_tf``: ``jvp``, ``jacfwd``, ``hessian``.

``call_tf`` is a ``jax.custom_jvp``; :func:`define_jvp` gives its JVP rule.
Under ``jax.jit``, where JAX's rules differentiate the function's StableHLO
module exactly as TensorFlow's gradients would (:mod:`..stablehlo.exactness`),
the rule is JAX's ``jvp`` of that module. Otherwise the primal is the call
itself and the tangents TensorFlow's (:mod:`.tf_jvp`), as a *linear call*
(:mod:`.linear`) whose transpose is ``call_tf``'s VJP (``tf.GradientTape``).
So both modes use TF's own gradients:

* ``jax.jvp``/``jax.jacfwd`` evaluate the linear call.
* ``jax.grad``/``jax.vjp``/``jax.jacrev`` linearize and transpose: the linear
  call is never evaluated; its transpose runs the GradientTape VJP, exactly
  as the ``custom_vjp`` did.
* Higher orders compose: the tangent and VJP functions are themselves
  ``call_tf``s, differentiable the same way (``hessian`` is ``jacfwd`` of the
  VJP; ``jacrev(jacfwd)`` transposes the JVP of the tangent function).

Each call carries its own :class:`..tf_function.traces.CallTraces`, a static
argument of the ``custom_jvp``: the JVP rule of a call reads the TF trace its
primal made, so that the function is traced once per call, also where JAX
differentiates the call after tracing it, if JAX's rules differentiate it;
if TF's derivatives are needed there, the value is traced again with them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import functools
from typing import Any

import jax
from jax._src import core
from jax._src import dtypes
from jax.experimental.jax2tf.call_tf_lib.autodiff import linear
from jax.experimental.jax2tf.call_tf_lib.autodiff import tf_jvp
from jax.experimental.jax2tf.call_tf_lib.batching import dispatch
from jax.experimental.jax2tf.call_tf_lib.stablehlo import exactness
from jax.experimental.jax2tf.call_tf_lib.stablehlo import path as stablehlo_path
from jax.experimental.jax2tf.call_tf_lib.tf_function import traces
from jax.experimental.jax2tf.call_tf_lib import vmap_methods
from jax import numpy as jnp
from jax import tree_util
from jax.typing import ArrayLike, DTypeLike
import numpy as np


def _is_symbolic_zero(
    t: ArrayLike | jax.custom_derivatives.SymbolicZero) -> bool:
  return isinstance(t, jax.custom_derivatives.SymbolicZero)


def has_tangent_space(x: ArrayLike | DTypeLike | None) -> bool:
  """Whether ``x`` (a value or dtype) has tangents: floating or complex."""
  return x is not None and dtypes.issubdtype(
      dtypes.result_type(x), np.inexact)


def define_jvp(make_call: jax.custom_jvp,
               call_tf: Callable[..., Callable[..., Any]],
               callable_tf: Callable[..., Any],
               vjp_bwd: Callable[[Any, Any], Any], *,
               vmap_method: vmap_methods.VmapMethod | None,
               call_tf_graph: bool
               ) -> Callable[..., Any]:
  """The differentiable callable of one ``call_tf``: ``make_call`` with a JVP.

  Args:
    make_call: the ``custom_jvp`` function of one ``call_tf``; its ``fun``
      (the undecorated call) is called.
    call_tf: ``jax2tf.call_tf`` itself, to make the tangent function's call.
    callable_tf: the TF function given to ``call_tf``.
    vjp_bwd: ``call_tf``'s VJP, ``vjp_bwd(primal_args, output_cotangents) ->
      argument_cotangents`` (with float0 for integer arguments): the
      transpose of the tangent map.
    vmap_method: the ``call_tf``'s; the tangent function's call batches as
      its VJP's does.
    call_tf_graph: the ``call_tf``'s; the tangent function's call has it too.

  Returns:
    A function of the call's arguments: a ``custom_jvp`` whose static first
    argument, a new :class:`.traces.CallTraces` per call, makes the call's
    primal and its JVP rule read one TF trace of the function.
  """
  tangent_call = _TangentCall(call_tf, callable_tf, vmap_method=vmap_method,
                              call_tf_graph=call_tf_graph)
  undecorated = make_call.fun

  def one_call(call: traces.CallTraces, *args: Any) -> Any:
    with call.active():
      return undecorated(*args)

  call_once = jax.custom_jvp(one_call, nondiff_argnums=(0,))

  def call_jvp(call: traces.CallTraces, primals: tuple[Any, ...],
               tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    rule_traces = _RuleTraces(
        call, late=call.traced(),
        may_use_stablehlo=stablehlo_path.may_use(vmap_method, call_tf_graph),
        probe=functools.partial(_probe, one_call,
                                core.unsafe_am_i_under_a_jit()))
    return linear_jvp(lambda *args: call_once(rule_traces.current, *args),
                      tangent_call, vjp_bwd,
                      differentiable=rule_traces.differentiable)(
                          primals, tangents)

  call_once.defjvp(call_jvp, symbolic_zeros=True)

  @functools.wraps(undecorated)
  def call(*args: Any) -> Any:
    return call_once(traces.CallTraces(), *args)
  return call


class _TangentCall:
  """The ``call_tf`` of a function's tangent function, made on first use.

  It is a ``call_tf`` with a JVP of its own, so it is made only when a
  tangent is asked for, then kept, so that its TF traces are reused across
  calls.
  """

  def __init__(self, call_tf: Callable[..., Callable[..., Any]],
               callable_tf: Callable[..., Any], *,
               vmap_method: vmap_methods.VmapMethod | None,
               call_tf_graph: bool):
    """Initializes it; see :func:`define_jvp` for the arguments."""
    self._call_tf = call_tf
    self._callable_tf = callable_tf
    self._vmap_method = vmap_method
    self._call_tf_graph = call_tf_graph
    self._made: Callable[..., Any] | None = None

  def __call__(self, args: Any, tangents: Any) -> Sequence[jax.Array]:
    """The output tangents (see :func:`.tf_jvp.tf_jvp_function`)."""
    if self._made is None:
      self._made = self._call_tf(
          tf_jvp.tf_jvp_function(self._callable_tf),
          vmap_method=dispatch.vjp_vmap_method(self._vmap_method),
          call_tf_graph=self._call_tf_graph)
    return self._made(args, tangents)


# probe(traces, flat_primals, primals_tree): the call reading ``traces``, as a
# function JAX may differentiate, or None (see exactness.differentiable).
_Probe = Callable[[traces.CallTraces, Sequence[Any], Any],
                  exactness.Differentiable | None]


def _probe(one_call: Callable[..., Any], staged: bool,
           traced_by: traces.CallTraces, flat_primals: Sequence[Any],
           primals_tree: tree_util.PyTreeDef
           ) -> exactness.Differentiable | None:
  """:func:`.exactness.differentiable` of ``one_call`` reading ``traced_by``.

  Args:
    one_call: ``one_call(traces, *args)``, the call reading ``traces``.
    staged: whether the call is staged (under ``jax.jit``).
    traced_by: the traces the call reads.
    flat_primals: the call's flat arguments.
    primals_tree: their pytree structure.

  Returns:
    See :func:`.exactness.differentiable`.
  """
  return exactness.differentiable(functools.partial(one_call, traced_by),
                                  flat_primals, primals_tree, staged=staged)


@dataclasses.dataclass
class _RuleTraces:
  """The TF traces one application of a call's JVP rule reads.

  The call's own, ``call``. But where the call traced its function before
  the rule ran (JAX differentiates a jaxpr it traced earlier, maybe a cached
  one, with other Python state since: ``late``) and TF's derivatives are
  needed, whose functions trace the TF function again, the value is traced
  again too, in new traces (``current``): value and derivatives read one
  Python state.

  Attributes:
    call: the call's traces, given to the rule.
    late: whether ``call`` traced its function before the rule ran.
    may_use_stablehlo: whether the call may take the StableHLO path
      (:func:`.stablehlo_path.may_use`).
    probe: the call reading given traces, as a function JAX differentiates
      (see :func:`_probe`).
    current: the traces the primal reads: ``call``, or new ones.
  """
  call: traces.CallTraces
  late: bool
  may_use_stablehlo: bool
  probe: _Probe
  current: traces.CallTraces = dataclasses.field(init=False)

  def __post_init__(self) -> None:
    self.current = self.call

  def differentiable(self, flat_primals: Sequence[jax.Array],
                     primals_tree: tree_util.PyTreeDef
                     ) -> exactness.Differentiable | None:
    """The call as a function JAX differentiates, or None (TF's rules).

    Eagerly as under jit, JAX's rules differentiate the function's StableHLO
    module where that gives TF's gradients (see ..stablehlo.exactness).
    Where the call is late and TF's derivatives are (or may be) needed,
    :attr:`current` becomes new traces, probed again if JAX differentiates.

    Args:
      flat_primals: the call's flat arguments.
      primals_tree: their pytree structure.

    Returns:
      The probe's answer for the traces the primal then reads.
    """
    d = (self.probe(self.call, flat_primals, primals_tree)
         if self.may_use_stablehlo else None)
    if self.late and (d is None or not d.reverse):
      self.current = traces.CallTraces()
      if d is not None:
        d = self.probe(self.current, flat_primals, primals_tree)
    return d


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
                             exactness.Differentiable | None] | None = None,
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
                             exactness.Differentiable | None] | None = None,
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
      (:class:`.exactness.Differentiable`), or None where ``tangent_call``
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
                             exactness.Differentiable | None] | None,
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
    # Its transpose stays TF's (vjp_bwd).
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
    fun: the call on flat arguments (:attr:`.exactness.Differentiable.fun`).
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
  out_tangents = iter(linear.linear_call(
      linear_map.tangent_fun, linear_map.transpose_fun, flat_primals,
      [t for t, p in zip(flat_tangents, perturbed) if p], out_avals)
      if has_linear else ())
  flat_out_tangents = [
      next(out_tangents) if h and has_linear
      else np.zeros(np.shape(o), dtypes.result_type(o) if h
                    else dtypes.float0)
      for o, h in zip(flat_outs, has_tangent)]
  return linear_map.outs_tree.unflatten(flat_out_tangents)
