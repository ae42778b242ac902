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

``call_tf`` is a ``jax.custom_jvp``. Its JVP rule computes the primal with
the call itself, and the tangents with TensorFlow's gradients
(``tf.autodiff.ForwardAccumulator`` where it is exact, else a "double VJP"
of two ``tf.GradientTape``s, see :func:`_tf_jvp_function`; both respect the
gradients reverse mode uses) as a *linear call*: a
primitive, ``call_tf_linear``, linear in the tangents, whose transpose is
``call_tf``'s VJP (``tf.GradientTape``). So both modes use TF's own
gradients:

* ``jax.jvp``/``jax.jacfwd`` evaluate the linear call.
* ``jax.grad``/``jax.vjp``/``jax.jacrev`` linearize and transpose: the linear
  call is never evaluated; its transpose runs the GradientTape VJP, exactly
  as the ``custom_vjp`` did.
* Higher orders compose: the tangent and VJP functions are themselves
  ``call_tf``s, differentiable the same way (``hessian`` is ``jacfwd`` of the
  VJP; ``jacrev(jacfwd)`` transposes the JVP of the tangent function).

``call_tf_linear`` is batched by ``vmap`` of its tangent function (a
``call_tf``, which the ``vmap_method`` dispatcher batches), and lowered by
tracing it. JAX's ``custom_derivatives.linear_call`` does not do here: it has
no batching rule, and no derivative with respect to its residuals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax import numpy as jnp
from jax import tree_util
from jax._src import core
from jax._src import dtypes
from jax._src.interpreters import ad
from jax._src.interpreters import mlir
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import effects
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib import interpreted
from jax.experimental.jax2tf.call_tf_lib import vmap
import numpy as np
import tensorflow as tf

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


def _impl(*args: Any, tangent_fun: Callable[..., Sequence[Any]],
          **_: Any) -> list[Any]:
  return list(tangent_fun(*args))


def _abstract_eval(*args: Any, out_avals: tuple[core.ShapedArray, ...],
                   **_: Any) -> tuple[core.ShapedArray, ...]:
  del args
  return out_avals


def _jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
         tangent_fun: Callable[..., Sequence[Any]], **_: Any
         ) -> tuple[list[Any], list[Any]]:
  # The map is a call_tf of its own: differentiating it (with respect to the
  # residuals too) is call_tf's own JVP, another linear call.
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  outs, out_tangents = jax.jvp(lambda *a: tuple(tangent_fun(*a)),
                               tuple(primals), tuple(tangents))
  return list(outs), list(out_tangents)


def _transpose(cts: Sequence[Any], *args: Any,
               transpose_fun: Callable[..., Sequence[Any]], nr_residuals: int,
               out_avals: tuple[core.ShapedArray, ...], **_: Any
               ) -> list[Any]:
  residuals = args[:nr_residuals]
  if any(ad.is_undefined_primal(r) for r in residuals):
    raise NotImplementedError(
        "call_tf's tangent map is linear in the tangents only; transposing "
        "it with respect to the primal values is a bug in call_tf_lib.")
  del out_avals
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  return [None] * nr_residuals + list(transpose_fun(*residuals, *cts))


def _batching_rule(axis_data: Any, args: Sequence[Any],
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


def _is_symbolic_zero(t: Any) -> bool:
  return isinstance(t, jax.custom_derivatives.SymbolicZero)


def _has_tangent_space(x: Any) -> bool:
  return x is not None and dtypes.issubdtype(
      dtypes.result_type(x), np.inexact)


# Signatures whose choice of tangent computation is kept, per call_tf.
_MAX_SIGNATURES = 64

# The attribute TensorFlow sets on an op whose gradient is overridden: by
# ``tf.custom_gradient`` (on its ``IdentityN``, also under
# ``tf.recompute_grad`` and ``tf.grad_pass_through``) or by
# ``Graph.gradient_override_map`` (which ``tf.GradientTape`` does not read:
# both ways then give the type's registered gradient).
_GRADIENT_OVERRIDE_ATTR = "_gradient_op_type"


def gradient_override_ops(graph: Any) -> list[tuple[str, str]]:
  """The ops of ``graph`` (and the functions it calls) with custom gradients.

  Args:
    graph: a ``tf.Graph`` (a concrete function's ``graph``).

  Returns:
    ``(op_type, node_name)`` of each op whose gradient is not its type's
    registered gradient.
  """
  return [(op.type, op.name) for op in effects.graph_ops(graph)
          if _GRADIENT_OVERRIDE_ATTR in op.node_def.attr]


def _accumulator_is_exact(callable_tf: Callable[..., Any],
                          flat_args: Sequence[Any], args_tree: Any,
                          watched: Sequence[tuple[Any, Any]]) -> bool:
  """Whether ``tf.autodiff.ForwardAccumulator`` gives TF's own tangents here.

  It does for real inputs and outputs when no op overrides its gradient: it
  computes each op's JVP from the op type's registered gradient. It ignores
  an override (``tf.custom_gradient``), so such a function needs the double
  VJP. And it must trace where XLA compiles the function: it fails there on
  some graphs that the double VJP differentiates (a ``tf.map_fn``'s
  TensorList loop: "dtype variant is not compatible with 1 of dtype
  int64"). Decided on a trace of its own (``jit_compile=True``, never run).

  Args:
    callable_tf: the function.
    flat_args: its flat arguments (tensors of the trace that asks).
    args_tree: their pytree structure (``callable_tf``'s positional args).
    watched: ``(argument, tangent)`` pairs of the arguments with tangents.

  Returns:
    True if the accumulator is exact and traces; False if the double VJP is
    needed.
  """
  if any(a.dtype.is_complex for a, _ in watched):
    return False
  watched_ids = [id(a) for a, _ in watched]
  positions = [i for i, a in enumerate(flat_args) if id(a) in watched_ids]

  def probe(*args):
    primals, tangents = args[:len(flat_args)], args[len(flat_args):]
    with tf.autodiff.ForwardAccumulator(
        [primals[i] for i in positions], list(tangents)) as acc:
      res = callable_tf(*args_tree.unflatten(list(primals)))
    outs = [tf.convert_to_tensor(r) for r in tf.nest.flatten(res)]
    if any(o.dtype.is_complex for o in outs):
      raise TypeError("complex results")
    return outs + [
        acc.jvp(o, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        for o in outs if o.dtype.is_floating]

  specs = [tf.TensorSpec(a.shape, a.dtype) for a in flat_args]
  # A trace that fails in a tf.map_fn leaves the caching device map_fn sets
  # on the variable scope, which graphs share with eager TF: every eager
  # tf.compat.v1.variable_scope (TF Probability's ODE solvers) then failed
  # ("Caching devices is not yet supported when eager execution is
  # enabled").
  scope = tf.compat.v1.get_variable_scope()
  caching_device = scope.caching_device
  try:
    concrete = tf.function(probe, autograph=False, jit_compile=True
                           ).get_concrete_function(
                               *specs, *[specs[i] for i in positions])
  except Exception:  # pylint: disable=broad-except
    # The double VJP then differentiates it, or raises the function's error.
    return False
  finally:
    if scope.caching_device is not caching_device:
      with tf.Graph().as_default():  # TF sets it only outside eager mode
        scope.set_caching_device(caching_device)
  return not gradient_override_ops(concrete.graph)


def _tf_jvp_function(callable_tf: Callable[..., Any]) -> Callable[..., Any]:
  """The TF function of the output tangents, from TF's gradients.

  Two ways compute them, both from the gradients reverse mode uses:

  * ``tf.autodiff.ForwardAccumulator``, which derives each op's JVP from the
    op type's registered gradient. It is the fast way, and the one used when
    it is exact (see :func:`_accumulator_is_exact`): no complex values, no
    op with a custom gradient, and it traces where XLA compiles.
  * Otherwise the "double VJP": the tangents ``J t`` are the gradient, with
    respect to the output cotangents ``u``, of ``<J^T u, t>``, where
    ``J^T u`` is the VJP that reverse mode computes, with two
    ``tf.GradientTape``s. It respects custom gradients, which the
    accumulator ignores (measured: identity with gradient ``3 * dy`` has
    tangent 1 there, not 3). It is slower under XLA (the benchmarks'
    energy Hessian, N=1000: 1.35x native, against 1.15x with the
    accumulator).

  Either way, the two modes are transposes of each other.

  The choice is made once per argument signature, on a trace of
  ``callable_tf`` of its own (see :func:`_accumulator_is_exact`). Custom
  gradients are recorded as eager TF records them, as in the VJP (see
  :func:`.compat.custom_gradients_recorded_as_eagerly`).

  It takes the arguments and a pytree of their tangents (None where an
  argument has none) and returns the tangents of the floating and complex
  outputs, in the order of the flat outputs.
  """
  exact: dict[Any, bool] = {}

  def tf_jvp_fun(args_tf, tangents_tf):
    with (compat.slice_gradient_outside_xla(),
          compat.custom_gradients_recorded_as_eagerly()):
      return jvp_fun(args_tf, tangents_tf)

  def jvp_fun(args_tf, tangents_tf):
    flat_args, args_tree = tree_util.tree_flatten(args_tf)
    flat_tangents = tree_util.tree_leaves(
        tangents_tf, is_leaf=lambda t: t is None)
    watched = [(a, t) for a, t in zip(flat_args, flat_tangents)
               if t is not None]
    sources = [a for a, _ in watched]
    key = (args_tree,
           tuple((None if a.shape.rank is None else tuple(a.shape.as_list()),
                  a.dtype) for a in flat_args),
           tuple(t is not None for t in flat_tangents))
    if key not in exact:
      if len(exact) >= _MAX_SIGNATURES:
        exact.clear()
      exact[key] = _accumulator_is_exact(callable_tf, flat_args, args_tree,
                                         watched)
    # A persistent tape beside the tangents: where TF computes no tangent
    # for an output that reverse mode finds connected (an op on the way has
    # no gradient of its gradient), the tangent is unknown, not zero.
    with tf.GradientTape(persistent=True) as tape:
      tape.watch(sources)
      if exact[key]:
        with tf.autodiff.ForwardAccumulator(
            sources, [t for _, t in watched]) as acc:
          res = callable_tf(*args_tf)
      else:
        res = callable_tf(*args_tf)
    outs = [tf.convert_to_tensor(r) for r in tf.nest.flatten(res)]
    outs = [r for r in outs if r.dtype.is_floating or r.dtype.is_complex]
    if not outs:
      return []
    if exact[key]:
      jvps = [acc.jvp(r, unconnected_gradients=tf.UnconnectedGradients.NONE)
              for r in outs]
    else:
      # The double VJP. The VJP is linear in the cotangents u, so the
      # gradient with respect to them is the same at any u; at u = 0 some
      # TF gradients are not finite (cumulative_logsumexp's takes the log
      # of the cotangent), so u = 1.
      us = [tf.ones_like(r) for r in outs]
      with tf.GradientTape() as outer:
        outer.watch(us)
        vjps = tape.gradient(
            outs, sources, output_gradients=us,
            unconnected_gradients=tf.UnconnectedGradients.ZERO)
        dot = tf.add_n([tf.reduce_sum(tf.math.real(v * tf.math.conj(t))
                                      if v.dtype.is_complex else v * t)
                        for v, (_, t) in zip(vjps, watched)])
      jvps = outer.gradient(dot, us,
                            unconnected_gradients=tf.UnconnectedGradients.NONE)
    return [_dense_tangent(tape, j, r, sources, i)
            for i, (j, r) in enumerate(zip(jvps, outs))]
  return tf_jvp_fun


def _dense_tangent(tape: Any, jvp: Any, out: Any, sources: Sequence[Any],
                   index: int) -> Any:
  """The tangent of ``out`` as a dense tensor; zero only if it is zero.

  TF gives no tangent (None) both for an output that does not depend on the
  perturbed arguments, whose tangent is zero, and for one whose tangent it
  cannot compute: an op on the way has a gradient but no gradient of that
  gradient (``ResizeBilinear``, whose gradient ``ResizeBilinearGrad`` has
  none), which forward mode needs. Reverse mode tells them apart: an output
  it finds connected to the arguments has a tangent TF did not compute.

  Raises:
    errors.CallTfDerivativeError: the tangent is unknown.
  """
  if jvp is not None:
    return tf.convert_to_tensor(jvp)  # a gather's gradient: IndexedSlices
  grads = tape.gradient(out, list(sources),
                        unconnected_gradients=tf.UnconnectedGradients.NONE)
  if any(g is not None for g in grads):
    raise errors.tangent_unknown_error(
        index, [] if tf.executing_eagerly() else _ops_without_gradient(
            out.graph))
  return tf.zeros_like(out)


def _ops_without_gradient(graph: Any) -> list[str]:
  """The op types of ``graph`` whose gradients have no gradient of their own.

  Those are what forward mode cannot differentiate: the op types, among
  those in the graph, that TF registers as not differentiable or not at
  all, and that are themselves the gradients of other ops.
  """
  found = set()
  for op in graph.get_operations():
    if op.type.endswith("Grad") and not compat.has_registered_gradient(
        op.type):
      found.add(op.type)
  return sorted(found)


def define_jvp(make_call: Any, call_tf: Callable[..., Callable[..., Any]],
               callable_tf: Callable[..., Any],
               vjp_bwd: Callable[[Any, Any], Any], *,
               vmap_method: str | None, call_tf_graph: bool) -> None:
  """Defines the JVP of ``call_tf``'s ``make_call`` (a ``jax.custom_jvp``).

  Args:
    make_call: the ``custom_jvp`` function of one ``call_tf``.
    call_tf: ``jax2tf.call_tf`` itself, to make the tangent function's call.
    callable_tf: the TF function given to ``call_tf``.
    vjp_bwd: ``call_tf``'s VJP, ``vjp_bwd(primal_args, output_cotangents) ->
      argument_cotangents`` (with float0 for integer arguments): the
      transpose of the tangent map.
    vmap_method: the ``call_tf``'s; the tangent function's call batches as
      its VJP's does.
    call_tf_graph: the ``call_tf``'s; the tangent function's call has it too.
  """
  made: list[Callable[..., Any]] = []

  def tangent_call(args: Any, tangents: Any) -> Sequence[Any]:
    # Made on first use (it is a call_tf with a JVP of its own), then kept,
    # so that its TF traces are reused across calls.
    if not made:
      made.append(call_tf(_tf_jvp_function(callable_tf),
                          vmap_method=vmap.vjp_vmap_method(vmap_method),
                          call_tf_graph=call_tf_graph))
    return made[0](args, tangents)

  def differentiable(flat_primals: Sequence[Any], primals_tree: Any
                     ) -> interpreted.Differentiable | None:
    # Under jit, JAX's rules differentiate the function's StableHLO module
    # where that gives TF's gradients (see .interpreted).
    if not interpreted.may_use(vmap_method, call_tf_graph):
      return None
    return interpreted.differentiable(make_call.fun, flat_primals,
                                      primals_tree)

  define_linear_jvp(make_call, tangent_call, vjp_bwd,
                    differentiable=differentiable)


def _zero_tangent(primal: Any) -> Any:
  """A zero tangent of ``primal`` (float0 if it has no tangent space)."""
  if _has_tangent_space(primal):
    return jnp.zeros(np.shape(primal), dtypes.result_type(primal))
  return np.zeros(np.shape(primal), dtypes.float0)


def _instantiate(primal: Any, tangent: Any) -> Any:
  """``tangent``, a zero array of the tangent dtype if it is symbolic."""
  return _zero_tangent(primal) if _is_symbolic_zero(tangent) else tangent


def define_linear_jvp(
    f: Any, tangent_call: Callable[[Any, Any], Sequence[Any]],
    vjp_bwd: Callable[[Any, Any], Any], *,
    differentiable: Callable[[Sequence[Any], Any],
                             interpreted.Differentiable | None] | None = None,
) -> None:
  """Defines the JVP of the ``custom_jvp`` function ``f`` as a linear call.

  Args:
    f: a ``jax.custom_jvp`` function of array pytrees.
    tangent_call: ``tangent_call(args, tangents)``: the tangents of ``f``'s
      outputs that have a tangent space (floating or complex), flat; the
      ``tangents`` pytree has None for arguments without a tangent.
    vjp_bwd: ``vjp_bwd(args, output_cotangents)``: the cotangents of all
      arguments (float0 for those without a tangent space); the transpose.
    differentiable: ``differentiable(flat_args, args_tree)``: ``f`` on these
      arguments as a function JAX may differentiate itself
      (:class:`.interpreted.Differentiable`), or None where ``tangent_call``
      and ``vjp_bwd`` must. Its derivative is then JAX's ``jvp`` of it, and
      reverse mode JAX's transpose of that; where JAX cannot transpose it (a
      loop), the transpose stays ``vjp_bwd``.
  """
  def jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]
          ) -> tuple[Any, Any]:
    flat_primals, primals_tree = tree_util.tree_flatten(primals)
    flat_tangents = primals_tree.flatten_up_to(tangents)
    perturbed = [not _is_symbolic_zero(t) and _has_tangent_space(p)
                 for p, t in zip(flat_primals, flat_tangents)]
    d = differentiable(flat_primals, primals_tree) if differentiable else None
    if d is not None and d.reverse:
      flat_outs, flat_out_tangents = jax.jvp(
          d.fun, list(flat_primals),
          [_instantiate(p, t) for p, t in zip(flat_primals, flat_tangents)])
      return (d.out_tree.unflatten(flat_outs),
              d.out_tree.unflatten(flat_out_tangents))
    if d is not None:
      interpreted_fun = d.fun
      outs = d.out_tree.unflatten(d.fun(*flat_primals))

      def interpreted_tangent_call(args, tangents_tree):
        # The tangents of the outputs with a tangent space, from JAX's jvp
        # of the module; its transpose stays TF's (vjp_bwd).
        flat_args = primals_tree.flatten_up_to(args)
        flat_t = tree_util.tree_leaves(tangents_tree,
                                       is_leaf=lambda t: t is None)
        full_t = [_zero_tangent(a) if t is None else t
                  for a, t in zip(flat_args, flat_t)]
        res, res_t = jax.jvp(interpreted_fun, list(flat_args), full_t)
        return [t for r, t in zip(res, res_t) if _has_tangent_space(r)]
      current_tangent_call = interpreted_tangent_call
    else:
      outs = f(*primals)
      current_tangent_call = tangent_call
    flat_outs, outs_tree = tree_util.tree_flatten(outs)
    has_tangent = [_has_tangent_space(o) for o in flat_outs]
    out_avals = [core.ShapedArray(np.shape(o), dtypes.result_type(o))
                 for o, h in zip(flat_outs, has_tangent) if h]
    nr = len(flat_primals)

    def tangent_fun(*args):
      residuals, lin = args[:nr], iter(args[nr:])
      tangents_tree = primals_tree.unflatten(
          [next(lin) if p else None for p in perturbed])
      return list(current_tangent_call(
          primals_tree.unflatten(list(residuals)), tangents_tree))

    def transpose_fun(*args):
      residuals, cts = args[:nr], iter(args[nr:])
      full_cts = [next(cts) if h else np.zeros(np.shape(o), dtypes.float0)
                  for o, h in zip(flat_outs, has_tangent)]
      ct_args = vjp_bwd(primals_tree.unflatten(list(residuals)),
                        outs_tree.unflatten(full_cts))
      flat_ct_args = primals_tree.flatten_up_to(ct_args)
      return [ct for ct, p in zip(flat_ct_args, perturbed) if p]

    linear = out_avals and any(perturbed)
    out_tangents = iter(linear_call(
        tangent_fun, transpose_fun, flat_primals,
        [t for t, p in zip(flat_tangents, perturbed) if p], out_avals)
        if linear else ())
    flat_out_tangents = [
        next(out_tangents) if h and linear
        else np.zeros(np.shape(o), dtypes.result_type(o) if h
                      else dtypes.float0)
        for o, h in zip(flat_outs, has_tangent)]
    return outs, outs_tree.unflatten(flat_out_tangents)

  f.defjvp(jvp, symbolic_zeros=True)
