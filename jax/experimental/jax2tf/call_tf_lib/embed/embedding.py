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
"""Calling a function restored from a jax2tf SavedModel, as StableHLO.

Compiling a restored jax2tf function through TensorFlow (``call_tf``'s general
path) loses its shape polymorphism: TF compiles only for static shapes, so a
JAX function that calls it cannot be exported again with a symbolic batch.
So ``call_tf`` embeds such functions the way ``jax.export`` calls its own
serialized modules: :mod:`.restored` recognizes one and rebuilds a
``jax.export.Exported`` (:mod:`.exported`), and :func:`call_embedded` calls
it with the model's variables as constants, its saved VJP as its gradient,
and ``jax.vmap`` through the same ``vmap_method`` dispatcher as the general
path (:mod:`.dispatch`). The composition of JAX functions and jax2tf SavedModels
is then closed under saving, cycle after cycle.

Everything else (any other op in the function, ``call_tf_graph=True``,
``ordered=True``, an ``output_shape_dtype``) takes ``call_tf``'s general path.

See https://github.com/jax-ml/jax/issues/11753.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax._src import core
from jax.experimental.jax2tf.call_tf_lib.autodiff import jvp as jvp_lib
from jax.experimental.jax2tf.call_tf_lib.batching import dispatch
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib.embed import restored
from jax.experimental.jax2tf.call_tf_lib.export import rules as export_rules
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib.stablehlo import path as stablehlo_path
from jax.experimental.jax2tf.call_tf_lib.tf_function import captures
from jax.experimental.jax2tf.call_tf_lib import vmap_methods
from jax.experimental.jax2tf import jax2tf as jax2tf_internal
from jax import numpy as jnp
from jax import tree_util
import numpy as np
import tensorflow as tf


class _EmbeddedCallee:
  """Calls of an embedded module, for the ``vmap_method`` dispatcher.

  ``fun`` takes the batchable arguments and then the model's weights, which
  are constants, never batched.
  """

  def __init__(self, fun: Callable[..., Any], weights: Sequence[Any],
               interpret: Callable[..., Any] | None = None):
    self.fun = fun
    self.weights = list(weights)
    self.interpret = interpret

  def symbolic_batch_refusal(self, vmap_method: vmap_methods.VmapMethod | None
                             ) -> tuple[bool, str | None]:
    del vmap_method
    return True, None  # the module is shape polymorphic

  def out_avals(self, in_avals: Sequence[core.ShapedArray]
                ) -> list[core.ShapedArray]:
    outs = jax.eval_shape(
        lambda *a: self.fun(*a, *self.weights),
        *(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in in_avals))
    return [core.ShapedArray(o.shape, o.dtype) for o in outs]

  def call(self, args: Sequence[Any]) -> list[Any]:
    return list(self.fun(*args, *self.weights))

  def call_batched(self, args: Sequence[Any], is_batched: Sequence[bool],
                   vmap_method: vmap_methods.VmapMethod,
                   out_avals: Sequence[core.ShapedArray]) -> list[Any]:
    del is_batched, vmap_method, out_avals  # the dispatcher checks results
    return self.call(args)

  def side_effect_error(self, vmap_method: vmap_methods.VmapMethod | None
                        ) -> Exception | None:
    del vmap_method
    return None  # a jax2tf module: JAX code, pure

  def call_vectorized(self, args: Sequence[Any], is_batched: Sequence[bool],
                      vmap_method: vmap_methods.VmapMethod | None,
                      out_avals: Sequence[core.ShapedArray]) -> list[Any]:
    if self.interpret is not None and stablehlo_path.may_use(vmap_method, False):
      # Eagerly as under jit, JAX batches the module as JAX primitives.
      avals = [compat.typeof(a) for a in args]
      avals = [a.update(shape=a.shape[1:]) if b else a
               for a, b in zip(avals, is_batched)]
      fun = self.interpret(avals + [compat.typeof(w) for w in self.weights])
      if fun is not None:
        in_axes = [0 if b else None for b in is_batched] + [None] * len(
            self.weights)
        outs = jax.vmap(lambda *a: tuple(fun(*a)), in_axes=in_axes)(
            *args, *self.weights)
        return list(outs)
    raise dispatch.Unvectorizable(errors.opaque_module_error(vmap_method))


def _batched_call(fun: Callable[..., Any], nr_batchable: int,
                  vmap_method: vmap_methods.VmapMethod | None,
                  interpret: Callable[..., Any] | None = None
                  ) -> Callable[..., Any]:
  """``fun`` with a ``custom_vmap`` rule implementing ``vmap_method``.

  Only the first ``nr_batchable`` arguments may be batched (the call's
  arguments; the others are the model's weights, constants).
  ``interpret(avals)``: ``fun`` for arguments of these avals as JAX
  primitives, or None (see :class:`_EmbeddedCallee`).
  """
  @jax.custom_batching.custom_vmap
  def f(*args):
    return tuple(fun(*args))

  @f.def_vmap
  def rule(axis_size, in_batched, *args):
    if any(in_batched[nr_batchable:]):
      raise errors.embedded_weights_batched_error()
    callee = _EmbeddedCallee(f, args[nr_batchable:], interpret)
    outs, dims = dispatch.batch(
        callee, axis_size, args[:nr_batchable],
        [0 if b else None for b in in_batched[:nr_batchable]],
        vmap_method=vmap_method)
    return tuple(outs), tuple(d is not None for d in dims)

  return f


def call_embedded(embedded: restored.EmbeddedModule,
                  args_flat: Sequence[Any],
                  vmap_method: vmap_methods.VmapMethod | None) -> Any:
  """Calls an embedded module on JAX values.

  Args:
    embedded: from :func:`.restored.find_embeddable_module`.
    args_flat: the flat arguments of the call.
    vmap_method: how ``jax.vmap`` batches the call (as for ``call_tf``).

  Returns:
    The results, in the pytree of the TF function's outputs.
  """
  exported = embedded.exported
  operands = embedded.operands
  constant_sources = [s for s in operands if s.kind != "arg"]
  values = iter(captures.read_captured_values(
      [s.payload for s in constant_sources if s.kind in ("var", "tensor")]))
  weights = [np.asarray(s.payload) if s.kind == "const" else next(values)
             for s in constant_sources]
  arg_indices = [s.index for s in operands if s.kind == "arg"]
  nr_args = len(arg_indices)

  def module_operands(args, weights):
    it_a, it_w = iter(args), iter(weights)
    return [next(it_a) if s.kind == "arg" else next(it_w) for s in operands]

  def interpreter(module: Any, nr_fun_args: int, purpose: str
                  ) -> Callable[..., Any]:
    """``interpret`` of a function of (arguments, extras..., weights)."""
    def interpret(avals):
      args, extra = avals[:nr_args], avals[nr_args:nr_fun_args]
      fun = stablehlo_path.exported_program(
          module, [*module_operands(args, avals[nr_fun_args:]), *extra],
          purpose=purpose)
      if fun is None:
        return None
      def call_fun(*a):
        return fun(*module_operands(a[:nr_args], a[nr_fun_args:]),
                   *a[nr_args:nr_fun_args])
      return call_fun
    return interpret

  def uses_stablehlo() -> bool:
    return stablehlo_path.vectorizer(vmap_method) == vmap_methods.STABLEHLO

  primal = _batched_call(
      lambda *a: exported.call(*module_operands(a[:nr_args], a[nr_args:])),
      nr_args, vmap_method,
      interpreter(exported, nr_args, "jax.vmap"))
  nr_outs = len(exported.out_avals)

  def vjp_fun(*a):
    args = a[:nr_args]
    cts = a[nr_args:nr_args + nr_outs]
    weights = a[nr_args + nr_outs:]
    cts_all = exported.vjp().call(*module_operands(args, weights), *cts)
    return [ct for ct, s in zip(cts_all, operands) if s.kind == "arg"]

  def interpreted_vjp(avals: Sequence[Any]) -> Callable[..., Any] | None:
    # The saved VJP as JAX primitives: (args, cts, weights) -> arg cts.
    if not exported.has_vjp() or not uses_stablehlo():
      return None
    fun = interpreter(exported.vjp(), nr_args + nr_outs,
                      "the saved gradient")(avals)
    if fun is None:
      return None
    return lambda *a: [ct for ct, s in zip(fun(*a), operands)
                       if s.kind == "arg"]

  vjp_batched = _batched_call(
      vjp_fun, nr_args + nr_outs, dispatch.vjp_vmap_method(vmap_method),
      interpreted_vjp)

  @jax.custom_jvp
  def vjp(*a):
    return tuple(vjp_batched(*a))

  def vjp_jvp(primals, tangents):
    # Forward mode of the saved VJP (jax.hessian is jacfwd of jacrev): it
    # is linear in the cotangents, so their tangents go through it; any
    # other would differentiate its module, whose derivative need not be
    # the function's (its stop_gradient is lost), and jax2tf saves no
    # second derivative: refused.
    if any(not isinstance(t, jax.custom_derivatives.SymbolicZero)
           for i, t in enumerate(tangents)
           if not nr_args <= i < nr_args + nr_outs):
      raise errors.embedded_second_derivative_error(exported.fun_name)
    ct_t = [jnp.zeros_like(p)
            if isinstance(t, jax.custom_derivatives.SymbolicZero) else t
            for p, t in zip(primals[nr_args:nr_args + nr_outs],
                            tangents[nr_args:nr_args + nr_outs])]
    return (vjp(*primals),
            vjp(*primals[:nr_args], *ct_t, *primals[nr_args + nr_outs:]))

  vjp.defjvp(vjp_jvp, symbolic_zeros=True)

  @jax.custom_jvp
  def call(*args):
    return tuple(primal(*args, *weights))

  def forward_mode(args, tangents):
    """The output tangents: the transpose of the saved VJP, applied.

    The saved VJP is the reverse-mode derivative (the JAX function's, custom
    rules included), linear in the output cotangents; JAX transposes its
    module, so that forward and reverse mode agree.
    """
    if embedded.gradient_disabled is not None:
      raise errors.gradient_disabled_error(embedded.gradient_disabled)
    flat_args = list(args)
    out_avals = [compat.typeof(o) for o in jax.eval_shape(
        lambda *a: call(*a), *flat_args)]
    ct_avals = [core.ShapedArray(a.shape, a.dtype) for a in out_avals]
    fun = interpreted_vjp([compat.typeof(a) for a in flat_args] + ct_avals
                          + [compat.typeof(w) for w in weights])
    if fun is None:
      raise errors.embedded_forward_mode_error(exported.fun_name)
    float_outs = [jvp_lib.has_tangent_space(np.zeros((), a.dtype))
                  for a in ct_avals]

    def vjp_fun(args, cts):
      cts = [jnp.zeros(a.shape, a.dtype) if ct is None else ct
             for a, ct in zip(ct_avals, cts)]
      return list(fun(*args, *cts, *weights))

    flat_t = tree_util.tree_leaves(tangents, is_leaf=lambda t: t is None)
    full_t = [jnp.zeros_like(a) if t is None
              else jnp.asarray(t).astype(compat.typeof(a).dtype)
              for t, a in zip(flat_t, flat_args)]
    return export_rules.transpose_of_vjp(
        vjp_fun, flat_args, [a for a, f in zip(ct_avals, float_outs) if f],
        float_outs, full_t,
        second_derivative_error=(
            lambda: errors.embedded_second_derivative_error(
                exported.fun_name)),
        transpose_error=(
            lambda e: errors.embedded_transpose_error(exported.fun_name, e)))

  def call_bwd(args, cts):
    if embedded.gradient_disabled is not None:
      # TensorFlow's own error for a PreventGradient op.
      raise errors.gradient_disabled_error(embedded.gradient_disabled)
    if not exported.has_vjp():
      raise errors.embedded_no_gradient_error(exported.fun_name)
    return tuple(vjp(*args, *cts, *weights))

  # Reverse mode transposes the linear tangent call with the saved VJP;
  # forward mode evaluates it: the transpose of the saved VJP's module.
  jvp_lib.define_linear_jvp(call, forward_mode, call_bwd)
  results = call(*[args_flat[i] for i in arg_indices])
  return embedded.out_tree.unflatten([results[i] for i in embedded.outputs])


def _arg_spec(a: Any) -> tf.TensorSpec:
  dtype = jax.dtypes.canonicalize_dtype(
      a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype)
  return tf.TensorSpec(
      [d if core.is_constant_dim(d) else None for d in np.shape(a)],
      jax2tf_internal._to_tf_dtype(dtype))  # pylint: disable=protected-access


def embedding_or(callable_tf: Callable[..., Any],
                 general: Callable[..., Any], *,
                 vmap_method: vmap_methods.VmapMethod | None,
                 call_tf_graph: bool, ordered: bool,
                 output_shape_dtype_given: bool) -> Callable[..., Any]:
  """``call_tf``'s callable: embeds ``callable_tf`` if it can, else ``general``.

  Args:
    callable_tf: the TF function given to ``call_tf``.
    general: ``call_tf``'s general path (the ``call_tf_p`` primitive).
    vmap_method: the ``vmap_method`` given to ``call_tf``.
    call_tf_graph: the ``call_tf`` argument; the general path handles it.
    ordered: the ``call_tf`` argument; the general path handles it.
    output_shape_dtype_given: whether ``call_tf`` got ``output_shape_dtype``;
      the general path handles it.

  Returns:
    ``general`` if ``callable_tf`` cannot be a restored jax2tf function or
    the call needs the general path; else a function of JAX arguments that,
    for each argument signature, embeds the function's module when
    :func:`.restored.find_embeddable_module` finds one.
  """
  if (call_tf_graph or ordered or output_shape_dtype_given
      or not restored.is_candidate(callable_tf)):
    return general

  def call(*args_jax):
    args_flat, args_treedef = tree_util.tree_flatten(args_jax)
    embedded = restored.find_embeddable_module(
        callable_tf, args_treedef, tuple(map(_arg_spec, args_flat)))
    if embedded is None:
      return general(*args_jax)
    return call_embedded(embedded, args_flat, vmap_method)
  return call
