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
(``jax._src.export.transforms.linear``) whose transpose is ``call_tf``'s VJP (``tf.GradientTape``).
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
from jax._src.export.transforms import linear
from jax.experimental.jax2tf.call_tf_lib.autodiff import tf_jvp
from jax.experimental.jax2tf.call_tf_lib.batching import dispatch
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib.stablehlo import exactness
from jax.experimental.jax2tf.call_tf_lib.stablehlo import path as stablehlo_path
from jax.experimental.jax2tf.call_tf_lib.tf_function import traces
from jax.experimental.jax2tf.call_tf_lib import vmap_methods
from jax import tree_util
import numpy as np
import tensorflow as tf


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
  rule = _jvp_rule(one_call, call_once, tangent_call, vjp_bwd,
                   vmap_method=vmap_method, call_tf_graph=call_tf_graph,
                   xla_eagerly=compat.runs_with_xla_eagerly(callable_tf))
  call_once.defjvp(rule, symbolic_zeros=True)

  @functools.wraps(undecorated)
  def call(*args: Any) -> Any:
    return call_once(traces.CallTraces(), *args)
  return call


def _jvp_rule(one_call: Callable[..., Any], call_once: jax.custom_jvp,
              tangent_call: _TangentCall,
              vjp_bwd: Callable[[Any, Any], Any], *,
              vmap_method: vmap_methods.VmapMethod | None,
              call_tf_graph: bool, xla_eagerly: bool
              ) -> Callable[..., tuple[Any, Any]]:
  """The JVP rule of ``call_once``, the ``custom_jvp`` of ``one_call``.

  Args:
    one_call: ``one_call(call_traces, *args)``, the undecorated call.
    call_once: ``one_call`` as a ``custom_jvp`` (its first argument static).
    tangent_call: the call's tangents, as :class:`_TangentCall` computes
      them.
    vjp_bwd: ``call_tf``'s VJP, the transpose of the tangent map.
    vmap_method: the ``call_tf``'s.
    call_tf_graph: the ``call_tf``'s.
    xla_eagerly: whether the TF function runs with XLA when called eagerly.

  Returns:
    ``call_jvp(call_traces, primals, tangents)``: the primal, read from the
    call's own trace, and the tangents, as a linear call whose transpose is
    ``vjp_bwd``.
  """
  def call_jvp(call: traces.CallTraces, primals: tuple[Any, ...],
               tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    rule_traces = _RuleTraces(
        call, late=call.traced(),
        may_use_stablehlo=stablehlo_path.may_use(vmap_method, call_tf_graph),
        probe=functools.partial(_probe, one_call,
                                core.unsafe_am_i_under_a_jit()))
    # (The primal reads rule_traces.current when it runs: differentiable
    # may replace it first.)
    empties = _GraphShapedEmpties(
        lambda *args: call_once(rule_traces.current, *args), tangent_call,
        rule_traces.may_use_stablehlo or xla_eagerly)
    return linear.linear_jvp(empties.primal, empties.tangent_call, vjp_bwd,
                             differentiable=rule_traces.differentiable)(
                                 primals, tangents)
  return call_jvp


class _GraphShapedEmpties:
  """A JVP rule's eager values, each empty result as TF's graph has it.

  The tangents (and, transposed, the cotangents) of the call are TF's
  derivatives of its graph, where a result that holds no value has the
  graph's shape (see ``tf_function.empty``). An eager run of the function
  may give such a result another shape than its graph: a
  ``tf.function(jit_compile=True)`` computes, with XLA, the whole matrix of
  vectors that ``SelfAdjointEigV2(compute_v=False)`` says it does not
  return (``(0,)`` in its graph), and its tangent. Under JAX's derivatives
  the call's value and tangents are its graph's, so that they agree.
  Under ``jax.jit`` they are already; and where the eager results come from
  TF's kernels, the eager call gave those that hold no value their graph's
  shape (TF's kernels give them a scalar: ``tf_function.empty``).
  """

  def __init__(self, call: Callable[..., object],
               tangent_call: Callable[[object, object], Sequence[jax.Array]],
               check: bool):
    """Initializes it.

    Args:
      call: the call's primal, of its arguments.
      tangent_call: its tangents (see :class:`_TangentCall`).
      check: whether to look at the graph's shapes: where the call's probe
        traced the function (the call's trace is then a lookup), or where
        the function runs with XLA eagerly (a trace of its own, a few
        milliseconds).
    """
    self._call = call
    self._tangent_call = tangent_call
    self._check = check
    self._flat: list[jax.ShapeDtypeStruct] | None = None

  def primal(self, *args: object) -> object:
    """The call's results, empties shaped as the graph's."""
    return self.results(self._call(*args), args)

  def tangent_call(self, args: object, tangents_tree: object
                   ) -> Sequence[jax.Array]:
    """The tangents of the results with a tangent space, likewise."""
    return self.tangents(self._tangent_call(args, tangents_tree), args)

  def _graph(self, args: Sequence[object]
             ) -> list[jax.ShapeDtypeStruct] | None:
    """The flat graph avals, None under jit or where there are none."""
    if not self._check or core.unsafe_am_i_under_a_jit():
      return None
    if self._flat is None:
      try:
        self._flat = tree_util.tree_leaves(
            jax.eval_shape(self._call, *args))
      except (errors.CallTfTraceError, errors.CallTfDynamicShapeError):
        # No graph shapes (a symbolic tensor used as a Python value, a
        # size that depends on values): eagerly TF's derivatives run the
        # function on concrete tensors, as the probe says (see _probe).
        self._flat = []
    return self._flat

  def results(self, outs: object, args: Sequence[object]) -> object:
    """The primal results, empties shaped as the graph's."""
    flat, tree = tree_util.tree_flatten(outs)
    graph = self._graph(args) if flat else None
    if not graph or len(graph) != len(flat):
      return outs
    return tree.unflatten(_shaped(flat, graph))

  def tangents(self, tangents: Sequence[jax.Array], args: Sequence[object]
               ) -> Sequence[jax.Array]:
    """The tangents of the results with a tangent space, flat, likewise."""
    graph = self._graph(args)
    if not graph:
      return tangents
    graph = [g for g in graph if linear.has_tangent_space(g.dtype)]
    if len(graph) != len(tangents):
      return tangents
    return _shaped(list(tangents), graph)


def _shaped(values: list[jax.Array], graph: Sequence[jax.ShapeDtypeStruct]
            ) -> list[jax.Array]:
  """``values``, each one whose graph aval is empty and whose shape is
  another replaced by an empty array of the graph's shape."""
  return [jax.numpy.zeros(g.shape, g.dtype)
          if 0 in g.shape and tuple(np.shape(v)) != tuple(g.shape) else v
          for v, g in zip(values, graph)]


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
    try:
      return self._made(args, tangents)
    except tf.errors.OpError as e:
      # TF's executor failed running the tangent function (eagerly; under
      # jit it runs compiled): call_tf's error, naming the node.
      raise errors.derivative_failed_error(True, e) from e


# probe(traces, flat_primals, primals_tree): the call reading ``traces``, as a
# function JAX may differentiate, or None (see exactness.differentiable).
_Probe = Callable[[traces.CallTraces, Sequence[Any], Any],
                  linear.Differentiable | None]


def _probe(one_call: Callable[..., Any], staged: bool,
           traced_by: traces.CallTraces, flat_primals: Sequence[Any],
           primals_tree: tree_util.PyTreeDef
           ) -> linear.Differentiable | None:
  """:func:`.exactness.differentiable` of ``one_call`` reading ``traced_by``.

  Args:
    one_call: ``one_call(traces, *args)``, the call reading ``traces``.
    staged: whether the call is staged (under ``jax.jit``).
    traced_by: the traces the call reads.
    flat_primals: the call's flat arguments.
    primals_tree: their pytree structure.

  Returns:
    See :func:`.exactness.differentiable`; None (TF's derivatives) also
    where the call cannot be traced (a symbolic tensor used as a Python
    value, a result whose size depends on values): eagerly TF's derivatives
    run the function on concrete tensors; under jit they refuse it, saying
    why, as the primal does.
  """
  try:
    return exactness.differentiable(functools.partial(one_call, traced_by),
                                    flat_primals, primals_tree,
                                    staged=staged)
  except (errors.CallTfTraceError, errors.CallTfDynamicShapeError):
    if staged:
      raise
    return None


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
                     ) -> linear.Differentiable | None:
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
