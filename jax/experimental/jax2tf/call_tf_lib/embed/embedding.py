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
import dataclasses
import functools
from typing import Any, TypeVar

import jax
from jax._src import core
from jax._src.export import stablehlo_to_jax
from jax._src.export.transforms import linear
from jax._src.export.transforms import rules as export_rules
from jax.experimental.jax2tf.call_tf_lib.batching import dispatch
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib.embed import restored
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib.stablehlo import path as stablehlo_path
from jax.experimental.jax2tf.call_tf_lib.tf_function import captures
from jax.experimental.jax2tf.call_tf_lib import vmap_methods
from jax.experimental.jax2tf import jax2tf as jax2tf_internal
from jax import numpy as jnp
from jax import tree_util
from jax.typing import ArrayLike
import numpy as np
import tensorflow as tf

_T = TypeVar("_T")
_R = TypeVar("_R")


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


@dataclasses.dataclass(frozen=True)
class _Operands:
  """Which operands of a module are the call's arguments, in its order.

  The others are the model's weights, constants. Functions of the call take
  the arguments first, then any extras (cotangents), then the weights.

  Attributes:
    is_arg: for each module operand, whether it is an argument of the call.
  """
  is_arg: tuple[bool, ...]

  @classmethod
  def of(cls, embedded: restored.EmbeddedModule) -> _Operands:
    """The operands of ``embedded``'s module."""
    return cls(tuple(s.kind == restored.SourceKind.ARG
                     for s in embedded.operands))

  @property
  def nr_args(self) -> int:
    """The number of operands that are arguments of the call."""
    return sum(self.is_arg)

  def merge(self, args: Sequence[_T], weights: Sequence[_T]) -> list[_T]:
    """The module's operands, from the arguments and weights, each in order."""
    it_a, it_w = iter(args), iter(weights)
    return [next(it_a) if a else next(it_w) for a in self.is_arg]

  def arg_cotangents(self, cts: Sequence[_T]) -> list[_T]:
    """Of the cotangents of all operands, those of the arguments."""
    return [ct for ct, a in zip(cts, self.is_arg) if a]

  def call(self, fun: Callable[..., _R], nr_fun_args: int,
           *a: ArrayLike) -> _R:
    """Calls ``fun(*module_operands, *extras)`` on (args, extras, weights).

    Args:
      fun: a function of the module's operands, then the extras.
      nr_fun_args: the number of arguments and extras in ``a``.
      *a: the arguments, the extras, then the weights.

    Returns:
      What ``fun`` returns.
    """
    nr_args = self.nr_args
    return fun(*self.merge(a[:nr_args], a[nr_fun_args:]),
               *a[nr_args:nr_fun_args])


def _module_weights(embedded: restored.EmbeddedModule) -> list[np.ndarray]:
  """The values of the operands of ``embedded`` that are not arguments.

  Args:
    embedded: from :func:`.restored.find_embeddable_module`.

  Returns:
    In operand order, the constants as ndarrays and the current values of
    the variables and captured tensors (read together).
  """
  constant_sources = [s for s in embedded.operands
                      if s.kind != restored.SourceKind.ARG]
  values = iter(captures.read_captured_values(
      [s.payload for s in constant_sources
       if s.kind in (restored.SourceKind.VAR, restored.SourceKind.TENSOR)]))
  return [np.asarray(s.payload) if s.kind == restored.SourceKind.CONST
          else next(values)
          for s in constant_sources]


@dataclasses.dataclass(frozen=True)
class _Interpreter:
  """A module of (arguments, extras..., weights) as JAX primitives.

  Called with the avals of (arguments, extras, weights), it gives the module
  as a JAX function of them, or None (see :class:`_EmbeddedCallee`).

  Attributes:
    module: the ``jax.export.Exported`` module.
    operands: which of its operands are arguments.
    nr_fun_args: the number of arguments and extras.
    purpose: what the module is interpreted for, for messages.
  """
  module: jax.export.Exported
  operands: _Operands
  nr_fun_args: int
  purpose: str

  def __call__(self, avals: Sequence[core.AbstractValue]
               ) -> Callable[..., Any] | None:
    nr_args, nr_fun_args = self.operands.nr_args, self.nr_fun_args
    fun = stablehlo_path.exported_program(
        self.module,
        [*self.operands.merge(avals[:nr_args], avals[nr_fun_args:]),
         *avals[nr_args:nr_fun_args]],
        purpose=self.purpose)
    if fun is None:
      return None
    return functools.partial(self.operands.call, fun, nr_fun_args)


def _tangents_of_cotangents(primals: Sequence[Any], tangents: Sequence[Any],
                            start: int, stop: int) -> list[Any]:
  """The tangents of the cotangent arguments ``start:stop`` of a VJP.

  Args:
    primals: all arguments of the VJP.
    tangents: their tangents, ``SymbolicZero`` where zero.
    start: the first cotangent argument.
    stop: after the last cotangent argument.

  Returns:
    The tangents of the cotangents, zeros for symbolic zeros.
  """
  return [jnp.zeros_like(p)
          if isinstance(t, jax.custom_derivatives.SymbolicZero) else t
          for p, t in zip(primals[start:stop], tangents[start:stop])]


def _full_tangents(tangents: Any, flat_args: Sequence[jax.Array]
                   ) -> list[jax.Array]:
  """The flat tangents of ``flat_args``, zeros where ``tangents`` has None.

  Args:
    tangents: a pytree of tangents, None for an argument without one.
    flat_args: the arguments, flat.

  Returns:
    A tangent for each argument, of its dtype.
  """
  flat_t = tree_util.tree_leaves(tangents, is_leaf=lambda t: t is None)
  return [jnp.zeros_like(a) if t is None
          else jnp.asarray(t).astype(compat.typeof(a).dtype)
          for t, a in zip(flat_t, flat_args)]


class _EmbeddedCall:
  """The call of an embedded module, with its batching and derivatives.

  ``call`` is a ``jax.custom_jvp`` function of the call's arguments: reverse
  mode transposes its linear tangent call with the saved VJP (``vjp``, a
  ``jax.custom_jvp`` function of (arguments, cotangents, weights)); forward
  mode evaluates it: the transpose of the saved VJP's module.
  """

  def __init__(self, embedded: restored.EmbeddedModule,
               vmap_method: vmap_methods.VmapMethod | None,
               weights: Sequence[ArrayLike] | None = None):
    self.embedded = embedded
    self.exported = embedded.exported
    self.operands = _Operands.of(embedded)
    self.weights = (_module_weights(embedded) if weights is None
                    else list(weights))
    self.vmap_method = vmap_method
    self.nr_args = self.operands.nr_args
    self.nr_outs = len(self.exported.out_avals)
    interpret = _Interpreter(self.exported, self.operands, self.nr_args,
                             "jax.vmap")
    self.primal = _batched_call(
        functools.partial(self.operands.call, self.exported.call,
                          self.nr_args),
        self.nr_args, vmap_method, interpret)
    if embedded.live_vjp is not None:
      # The VJP is jax.export's, which has the next order: an embedded call
      # of its own, differentiated as this one is.
      self.vjp = self._live_vjp
    else:
      self.vjp_batched = _batched_call(
          self.vjp_fun, self.nr_args + self.nr_outs,
          dispatch.vjp_vmap_method(vmap_method), self.interpreted_vjp)
      self.vjp = jax.custom_jvp(self._vjp)
      self.vjp.defjvp(self.vjp_jvp, symbolic_zeros=True)
    self.call = jax.custom_jvp(self._call)
    linear.define_linear_jvp(self.call, self.forward_mode, self.call_bwd)

  @functools.cached_property
  def _live_vjp_call(self) -> _EmbeddedCall:
    """The live VJP's embedded call: (args, cts) -> every operand's ct."""
    return _EmbeddedCall(
        restored.vjp_of(self.embedded, self.vjp_module()),
        dispatch.vjp_vmap_method(self.vmap_method), self.weights)

  def _live_vjp(self, *a: ArrayLike) -> tuple[jax.Array, ...]:
    """The live VJP: (args, cts, weights) -> the arguments' cotangents."""
    cts_all = self._live_vjp_call.call(*a[:self.nr_args + self.nr_outs])
    return tuple(self.operands.arg_cotangents(cts_all))

  def _call(self, *args: jax.Array) -> tuple[jax.Array, ...]:
    """The module's results on the call's arguments."""
    return tuple(self.primal(*args, *self.weights))

  def _vjp(self, *a: ArrayLike) -> tuple[jax.Array, ...]:
    """The saved VJP: (args, cts, weights) -> the arguments' cotangents."""
    return tuple(self.vjp_batched(*a))

  def uses_stablehlo(self) -> bool:
    """Whether ``jax.vmap`` vectorizes the call as StableHLO."""
    return (stablehlo_path.vectorizer(self.vmap_method)
            == vmap_methods.STABLEHLO)

  def has_vjp(self) -> bool:
    """Whether the module has a VJP: saved with it, or a live gradient's."""
    return self.embedded.live_vjp is not None or self.exported.has_vjp()

  def vjp_module(self) -> jax.export.Exported:
    """The VJP's module: the saved one, or the live gradient's."""
    if self.embedded.live_vjp is not None:
      return self.embedded.live_vjp()
    return self.exported.vjp()

  def vjp_fun(self, *a: ArrayLike) -> list[jax.Array]:
    """The saved VJP's module, on (args, cts, weights): the args' cts."""
    cts_all = self.operands.call(self.vjp_module().call,
                                 self.nr_args + self.nr_outs, *a)
    return self.operands.arg_cotangents(cts_all)

  def interpreted_vjp(self, avals: Sequence[core.AbstractValue]
                      ) -> Callable[..., Any] | None:
    """The saved VJP as JAX primitives: (args, cts, weights) -> arg cts."""
    if not self.has_vjp() or not self.uses_stablehlo():
      return None
    fun = _Interpreter(self.vjp_module(), self.operands,
                       self.nr_args + self.nr_outs, "the saved gradient")(avals)
    if fun is None:
      return None
    return lambda *a: self.operands.arg_cotangents(fun(*a))

  def vjp_jvp(self, primals: tuple[Any, ...], tangents: tuple[Any, ...]
              ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Forward mode of the saved VJP (``jax.hessian`` is jacfwd of jacrev).

    It is linear in the cotangents, so their tangents go through it; any
    other would differentiate its module, whose derivative need not be the
    function's (its stop_gradient is lost), and jax2tf saves no second
    derivative: refused.
    """
    start, stop = self.nr_args, self.nr_args + self.nr_outs
    if any(not isinstance(t, jax.custom_derivatives.SymbolicZero)
           for i, t in enumerate(tangents) if not start <= i < stop):
      raise errors.embedded_second_derivative_error(self.exported.fun_name)
    ct_t = _tangents_of_cotangents(primals, tangents, start, stop)
    return (self.vjp(*primals),
            self.vjp(*primals[:start], *ct_t, *primals[stop:]))

  def forward_mode(self, args: Sequence[Any], tangents: Any) -> Any:
    """The output tangents: the transpose of the saved VJP, applied.

    The saved VJP is the reverse-mode derivative (the JAX function's, custom
    rules included), linear in the output cotangents; JAX transposes its
    module, so that forward and reverse mode agree.
    """
    if self.embedded.gradient_disabled is not None:
      raise errors.gradient_disabled_error(self.embedded.gradient_disabled)
    flat_args = list(args)
    out_avals = [compat.typeof(o) for o in jax.eval_shape(
        lambda *a: self.call(*a), *flat_args)]
    ct_avals = [core.ShapedArray(a.shape, a.dtype) for a in out_avals]
    fun = self.interpreted_vjp(
        [compat.typeof(a) for a in flat_args] + ct_avals
        + [compat.typeof(w) for w in self.weights])
    if fun is None:
      raise errors.embedded_forward_mode_error(self.exported.fun_name)
    float_outs = [linear.has_tangent_space(np.zeros((), a.dtype))
                  for a in ct_avals]

    def vjp_fun(args, cts):
      cts = [jnp.zeros(a.shape, a.dtype) if ct is None else ct
             for a, ct in zip(ct_avals, cts)]
      return list(fun(*args, *cts, *self.weights))

    fun_name = self.exported.fun_name
    return export_rules.transpose_of_vjp(
        vjp_fun, flat_args, [a for a, f in zip(ct_avals, float_outs) if f],
        float_outs, _full_tangents(tangents, flat_args),
        second_derivative_error=(
            lambda: errors.embedded_second_derivative_error(fun_name)),
        transpose_error=(
            lambda e: errors.embedded_transpose_error(fun_name, e)))

  def call_bwd(self, args: Sequence[Any], cts: Sequence[Any]
               ) -> tuple[Any, ...]:
    """The cotangents of the arguments: the saved VJP, applied."""
    if self.embedded.gradient_disabled is not None:
      # TensorFlow's own error for a PreventGradient op.
      raise errors.gradient_disabled_error(self.embedded.gradient_disabled)
    if not self.has_vjp():
      raise errors.embedded_no_gradient_error(self.exported.fun_name)
    return tuple(self.vjp(*args, *cts, *self.weights))


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
  call = _EmbeddedCall(embedded, vmap_method).call
  arg_indices = [s.index for s in embedded.operands
                 if s.kind == restored.SourceKind.ARG]
  results = call(*[args_flat[i] for i in arg_indices])
  return embedded.out_tree.unflatten([results[i] for i in embedded.outputs])


def _arg_spec(a: ArrayLike) -> tf.TensorSpec:
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

  def call_flat(args_jax, args_flat, args_treedef):
    if compat.under_tf_interpretation(args_flat):
      return general(*args_jax)  # (as TF: the function's own XlaCallModule)
    embedded = restored.find_embeddable_module(
        callable_tf, args_treedef, tuple(map(_arg_spec, args_flat)))
    if embedded is None:
      return general(*args_jax)
    return call_embedded(embedded, args_flat, vmap_method)

  def call(*args_jax):
    args_flat, args_treedef = tree_util.tree_flatten(args_jax)
    if not any(isinstance(a, core.Tracer) for a in args_flat):
      # (a room would cost an eager call up to 0.1 ms)
      return call_flat(args_jax, args_flat, args_treedef)
    # Under a trace: TensorFlow's trace, tf2xla, the captures' reads and
    # the interpreter, on a chunk of Python's frame stack of their own:
    # their time then does not depend on how deep in the caller's trace
    # the call is.
    return stablehlo_to_jax.with_stack_room(call_flat, args_jax, args_flat,
                                            args_treedef)
  return call
