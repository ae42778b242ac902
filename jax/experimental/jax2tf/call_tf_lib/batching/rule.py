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
"""The batching rule of the ``call_tf_p`` primitive.

:func:`batching_rule` hands the call to the ``vmap_method`` dispatcher
(:func:`.dispatch.batch`) with a callee that calls a TF function on a batch: for
the vectorized methods under ``jax.jit``, ``jax.vmap`` of the function's
StableHLO module as JAX primitives where :func:`.path.lookup` has it
(the StableHLO path: no pfor, and an outer ``vmap`` batches JAX primitives),
else the function wrapped in ``tf.vectorized_map`` (pfor);
for the one-call methods, the function itself on batched shapes, its results
checked against the batched shapes. Either way, the batched function becomes
the ``callable_flat_tf``/``function_flat_tf`` of a new ``call_tf_p``, so
eager execution, lowering, nested ``vmap`` and the VJP work as for any call.

pfor runs where the vectorized function is first traced. With the
``jax_call_tf_slow_vmap`` fallback possible, that is the batching rule (and
under ``jax.jit`` it also converts the result to HLO), so that a failure
can still fall back to a loop. Otherwise nothing can change the outcome, and
the new call only carries what it vectorizes (its ``vectorized`` param, a
:class:`Vectorized`), and its avals: pfor runs when the call is lowered, run
eagerly, or batched again by an outer ``vmap``, and a failure raises
:class:`~..errors.CallTfVectorizationError` there (the lowering asks
:func:`check_compile_failure` why XLA refused what pfor made). So under ``jax.jit`` a
call that jit drops (``jax.jacrev``'s primal output) is never vectorized,
and an inner ``vmap``'s vectorized function is converted to HLO only inside
the outer one's.

A flat TF callable of ``call_tf_p`` takes the keyword argument
``check_output_avals`` (default True); with False it does not check its
results against the unbatched ``output_shape_dtype``, which batched shapes
would fail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import functools
from typing import TYPE_CHECKING, Any

from jax._src import core
from jax._src import util
from jax.experimental.jax2tf.call_tf_lib.batching import dispatch
from jax.experimental.jax2tf.call_tf_lib.batching import pfor
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib import tf_overrides
from jax.experimental.jax2tf.call_tf_lib.stablehlo import path as stablehlo_path
from jax.experimental.jax2tf.call_tf_lib.tf_function import captures
from jax.experimental.jax2tf.call_tf_lib.tf_function import compile as compile_lib
from jax.experimental.jax2tf.call_tf_lib.tf_function import effects
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
from jax.experimental.jax2tf.call_tf_lib.tf_function import xla_fidelity
from jax.experimental.jax2tf.call_tf_lib import vmap_methods
import tensorflow as tf

if TYPE_CHECKING:
  from jax._src.interpreters import batching


@dataclasses.dataclass(frozen=True)
class Vectorized:
  """What a vectorized call's function vectorizes: its ``vectorized`` param.

  ``call_tf_p``'s ``vectorized`` param is None for a call of the user's
  function (or of its VJP or tangent function); the batching rule sets it on
  the call of a function it vectorized. Such a call is pure (a function with
  side effects is never vectorized) and its avals are known, so abstract
  evaluation need not trace it.

  Attributes:
    function_flat_tf: the unbatched ``tf.function`` (a ``call_tf_p`` param).
    sig: its argument specs.
    vmap_method: the method that vectorized it (None, "vectorized" or
      "pfor").
    made_from: the ``vectorized`` param of the unbatched call (not None for
      the inner functions of nested ``vmap``).
  """
  function_flat_tf: tf.types.experimental.GenericFunction
  sig: tuple[tf.TensorSpec, ...]
  vmap_method: vmap_methods.VmapMethod | None
  made_from: Vectorized | None

  def root(self) -> Vectorized:
    """The vectorization of the function beneath every nested ``vmap``."""
    found = self
    while found.made_from is not None:
      found = found.made_from
    return found


def register(prim: core.Primitive) -> None:
  """Registers :func:`batching_rule` as ``prim``'s batching rule."""
  compat.register_batching_rule(prim, functools.partial(batching_rule, prim))


def batching_rule(prim: core.Primitive, axis_data: batching.AxisData,
                  args: Sequence[Any],
                  dims: Sequence[int | None], *,
                  vmap_method: vmap_methods.VmapMethod | None,
                  **params: Any) -> tuple[list[Any], list[int | None]]:
  """Batches ``call_tf_p`` along the vmap axis, as ``vmap_method`` says.

  Registered in ``batching.fancy_primitive_batchers``, for ``axis_data``:
  its size may be symbolic under shape polymorphism.

  Args:
    prim: ``call_tf_p``.
    axis_data: the vmap axis.
    args: the flat arguments; batched ones at ``dims[i]``.
    dims: each argument's batch dimension, or None.
    vmap_method: see :mod:`.dispatch`.
    **params: the other ``call_tf_p`` params (``callable_flat_tf``,
      ``function_flat_tf``, ``args_flat_sig_tf``, ``output_avals``,
      ``has_side_effects``, ``ordered``, ``call_tf_graph``, ``vectorized``).

  Returns:
    The batched results and their batch dimensions.
  """
  callee = _TfCallee(prim, dict(params, vmap_method=vmap_method))
  return dispatch.batch(callee, axis_data.size, args, dims,
                    vmap_method=vmap_method, ordered=params["ordered"])


class _TfCallee:
  """Calls of a ``call_tf_p`` primitive, unbatched and on batches."""

  def __init__(self, prim: core.Primitive, params: dict[str, Any]):
    self.prim = prim
    self.params = params

  def symbolic_batch_refusal(self, vmap_method: vmap_methods.VmapMethod | None
                             ) -> tuple[bool, str | None]:
    # TF runs a call_tf_graph function at the actual batch size; JAX batches
    # a module (for the unbatched shapes) for any batch size.
    params = self.params
    if params["call_tf_graph"]:
      return True, None
    if not stablehlo_path.may_use(vmap_method, False, params["ordered"]):
      return False, None
    reason = stablehlo_path.why_not(params["function_flat_tf"],
                                    params["args_flat_sig_tf"],
                                    staged=core.unsafe_am_i_under_a_jit())
    return reason is None, reason

  def out_avals(self, in_avals: Sequence[core.ShapedArray]
                ) -> list[core.ShapedArray]:
    # Traces the unbatched TF function in graph mode (no XLA); cached.
    out_avals, _ = self.prim.abstract_eval(*in_avals, **self.params)
    return list(out_avals)

  def call(self, args: Sequence[Any]) -> list[Any]:
    return list(self.prim.bind(*args, **self.params))

  def call_batched(self, args: Sequence[Any], is_batched: Sequence[bool],
                   vmap_method: vmap_methods.VmapMethod,
                   out_avals: Sequence[core.ShapedArray]) -> list[Any]:
    # Every argument now has the leading axis; the batch size is that of one
    # that was batched (a size-1 axis of an unbatched one would mislead).
    new_args, new_params = self._batched(
        args, (True,) * len(args), list(is_batched).index(True), vmap_method,
        out_avals)
    return list(self.prim.bind(*new_args, **new_params))

  def side_effect_error(self, vmap_method: vmap_methods.VmapMethod | None
                        ) -> Exception | None:
    params = self.params
    if params["vectorized"] is not None:
      return None  # pure: its unbatched function was checked
    side_effects = effects.function_side_effect_ops(
        params["function_flat_tf"], params["args_flat_sig_tf"])
    if not side_effects:
      return None
    op_type, node_name = side_effects[0]
    return errors.stateful_error(
        op_type, node_name, vmap_method,
        effect=effects.describe_effect(op_type),
        under_jit=core.unsafe_am_i_under_a_jit(),
        writes_variable=effects.writes_variable(op_type))

  def call_vectorized(self, args: Sequence[Any], is_batched: Sequence[bool],
                      vmap_method: vmap_methods.VmapMethod | None,
                      out_avals: Sequence[core.ShapedArray]) -> list[Any]:
    params = self.params
    staged = core.unsafe_am_i_under_a_jit()
    if stablehlo_path.may_use(vmap_method, params["call_tf_graph"],
                              params["ordered"]):
      # Eagerly as under jit: JAX's own rules batch the function's StableHLO
      # module, where XLA compiles it and every op of it has a rule; else
      # pfor, below. (A function with side effects never gets here: the
      # dispatcher refused it.)
      found = stablehlo_path.lookup(params["function_flat_tf"],
                                    params["args_flat_sig_tf"],
                                    purpose="jax.vmap", staged=staged)
      if found is not None:
        return found.vmapped(args, is_batched, out_avals)
    new_args, new_params = self._batched(args, tuple(is_batched),
                                         list(is_batched).index(True),
                                         vmap_method, out_avals)
    if dispatch.falls_back(vmap_method):
      # Vectorize now, while falling back is still possible.
      self._try_vectorizing(new_params)
    # Otherwise pfor runs when the call is lowered, run eagerly, or batched
    # again by an outer vmap, and a failure raises there: under jit, a call
    # that jit drops (jacrev's primal output) is never vectorized, and an
    # inner vmap's function is only converted to HLO once vectorized again.
    if not staged and not any(isinstance(a, core.Tracer) for a in new_args):
      new_params = _eager_params(new_params)
    return list(self.prim.bind(*new_args, **new_params))

  def _try_vectorizing(self, new_params: dict[str, Any]) -> None:
    """Traces (and under jit converts) the vectorized function now.

    Raises:
      dispatch.Unvectorizable: pfor cannot vectorize the function, or, under
        jit, XLA cannot compile what pfor made though it compiles the
        unbatched function.
    """
    fn, sig = new_params["function_flat_tf"], new_params["args_flat_sig_tf"]
    try:
      graph_lib.concrete_function(fn, sig)
      if core.unsafe_am_i_under_a_jit() and not self.params["call_tf_graph"]:
        # Ops pfor emits may not compile with XLA (DynamicStitch for a tf.cond
        # on a batched predicate). The HLO is cached for the lowering.
        _try_compile(fn, sig, new_params["vectorized"])
    except errors.CallTfVectorizationError as e:
      raise dispatch.Unvectorizable(e) from e.__cause__

  def _batched(self, args: Sequence[Any], is_batched: tuple[bool, ...],
               batch_arg: int, vmap_method: vmap_methods.VmapMethod | None,
               out_avals: Sequence[core.ShapedArray]
               ) -> tuple[list[Any], dict[str, Any]]:
    """The arguments and params of the ``call_tf_p`` of a batched call."""
    params = self.params
    sig = tuple(params["args_flat_sig_tf"])
    eager_fn, staged_fn = _batched_tf_functions(
        params["callable_flat_tf"], params["function_flat_tf"], sig,
        vmap_method, is_batched, batch_arg,
        tuple(_tf_shape(a.shape) for a in out_avals),
        params["call_tf_graph"], params["vectorized"])
    new_sig = tuple(tf.TensorSpec(_tf_shape(compat.typeof(a).shape), s.dtype)
                    for a, s in zip(args, sig))
    vectorized = None
    if (vmap_method in vmap_methods.VECTORIZING
        and not params["call_tf_graph"]):
      vectorized = Vectorized(params["function_flat_tf"], sig, vmap_method,
                              params["vectorized"])
    return list(args), dict(params, callable_flat_tf=eager_fn,
                            function_flat_tf=staged_fn,
                            args_flat_sig_tf=new_sig,
                            output_avals=tuple(out_avals),
                            vectorized=vectorized)


def _eager_params(params: dict[str, Any]) -> dict[str, Any]:
  """The params of an eager vectorized call: compiled with XLA if it can be.

  Eagerly, ``call_tf`` runs ``callable_flat_tf`` in TensorFlow. For a
  vectorized function that is a graph of pfor's ops run by TF's executor,
  whose oneDNN kernels corrupt the heap on some of them (a Keras attention
  block: "double free or corruption", or NaN), where the same call under
  ``jax.jit``, compiled by XLA, is right. So the eager call runs the staged
  variant, the ``tf.function(jit_compile=True)`` that ``jit`` converts,
  wherever XLA compiles it, and TF's executor only where XLA cannot: eager
  ``vmap`` still does not need XLA.

  Not where XLA's answer is another than TF's kernels'
  (:func:`.xla_fidelity.eager_differences`): the unbatched eager call,
  which ``vmap`` must agree with, runs TF's.

  Args:
    params: the ``call_tf_p`` params of a vectorized call.

  Returns:
    ``params``, with ``callable_flat_tf`` the staged function if XLA
    compiles it for these argument shapes.
  """
  fn, sig = params["function_flat_tf"], tuple(params["args_flat_sig_tf"])
  if (params["call_tf_graph"] or fn is params["callable_flat_tf"]
      or not captures.executing_eagerly_outside_functions()
      or not all(s.shape.is_fully_defined() for s in sig)
      or _xla_differs(params["vectorized"])
      or not _xla_compiles(fn, sig)):
    return params
  return dict(params, callable_flat_tf=fn)


def _xla_differs(vectorized: Vectorized | None) -> bool:
  """Whether the function beneath a vectorization has an op XLA computes
  otherwise than TF's kernels (:func:`.xla_fidelity.eager_differences`).
  """
  if vectorized is None:
    return False
  root = vectorized.root()
  return bool(xla_fidelity.function_eager_differences(root.function_flat_tf,
                                                      root.sig))


def _xla_compiles(function_flat_tf: tf.types.experimental.GenericFunction,
                  sig: tuple[tf.TensorSpec, ...]) -> bool:
  """Whether XLA compiles ``function_flat_tf`` for ``sig`` (cached)."""
  return _compile_failure(function_flat_tf, sig,
                          compile_lib.ENGINE_PLATFORM) is None


def _try_compile(function_flat_tf: Callable[..., Any],
                 sig: tuple[tf.TensorSpec, ...],
                 vectorized: Vectorized | None) -> None:
  """Converts a vectorized function to HLO, as its lowering will.

  Raises:
    errors.CallTfVectorizationError: XLA cannot compile what pfor made (see
      :func:`check_compile_failure`). Other failures are left to the
      lowering to report, as they would be without ``jax.vmap``.
  """
  platform = compile_lib.ENGINE_PLATFORM
  try:
    compile_lib.compile_to_hlo(function_flat_tf, sig, platform)
  except errors.CallTfVectorizationError:
    raise
  except Exception as e:  # pylint: disable=broad-except
    if vectorized is not None:
      check_compile_failure(vectorized, e, platform)


def check_compile_failure(vectorized: Vectorized, error: Exception,
                          platform: str) -> None:
  """Says why XLA cannot compile a vectorized function, if pfor is the cause.

  Ops that pfor emits may not compile with XLA (``DynamicStitch`` for a
  ``tf.cond`` on a batched predicate). Called by ``call_tf``'s lowering
  (and the slow-vmap probe) when compiling a call with a ``vectorized``
  param fails.

  Args:
    vectorized: the call's ``vectorized`` param.
    error: the compilation's error.
    platform: "CPU", "GPU" or "TPU".

  Raises:
    errors.CallTfVectorizationError: the unbatched function compiles, so
      vectorizing it made what XLA refuses; names the op and the ways out.
      Returns otherwise, for the caller to report ``error``.
  """
  if _compile_failure(vectorized.function_flat_tf, vectorized.sig,
                      platform) is None:
    raise errors.xla_compile_error(*pfor.xla_failure(error),
                                   vectorized.vmap_method, error) from error



def _tf_shape(shape: Sequence[Any]) -> tuple[int | None, ...]:
  return tuple(d if core.is_constant_dim(d) else None for d in shape)


def _python_function(callable_flat_tf: Callable[..., Any]
                     ) -> Callable[..., Any]:
  # The batched callables are tf.functions; the one-call methods call their
  # Python function, so that nested vmap does not nest tf.function calls.
  return getattr(callable_flat_tf, "python_function", callable_flat_tf)


def _check_results(results: Sequence[Any],
                   expected: Sequence[tuple[int | None, ...]],
                   vmap_method: vmap_methods.VmapMethod | None,
                   batch_size_tf: Callable[[], Any]) -> list[Any]:
  """Checks (at trace time) the shapes the batched TF function returns.

  The check is the dispatcher's (:func:`.dispatch.check_results`); here
  results are broadcast in TF where it says so, and given their static
  shapes.
  """
  results = [tf.convert_to_tensor(r) for r in results]
  broadcast = dispatch.check_results(
      vmap_method,
      [None if r.shape.rank is None else r.shape.as_list() for r in results],
      expected)
  checked = []
  for r, exp, b in zip(results, expected, broadcast):
    if b:
      target = [e if e is not None
                else batch_size_tf() if j == 0 else tf.shape(r)[j]
                for j, e in enumerate(exp)]
      r = tf.broadcast_to(r, tf.stack(target))
    checked.append(tf.ensure_shape(r, exp))
  return checked


def _copyable_when_vectorized(vectorized: Vectorized) -> bool:
  """Whether a vectorized function's vectorization can be copied by pfor.

  Its unbatched function (beneath every nested ``vmap``) calls no functions:
  then pfor's vectorization of it normally calls none either (pfor's
  fallback to a loop is off), and :func:`.pfor.inlined` copies it; if it
  does, the copy is refused and the staged variant is called, as before.
  Asked before the eager variant is traced for the copy, so that a function
  with control flow is not vectorized twice (eagerly for the copy, then
  staged for the call).
  """
  root = vectorized.root()
  return not pfor.calls_functions(
      graph_lib.concrete_function(root.function_flat_tf, root.sig))



@functools.lru_cache(maxsize=256)
def _batched_tf_functions(
    callable_flat_tf: Callable[..., Any],
    function_flat_tf: Callable[..., Any],
    sig: tuple[tf.TensorSpec, ...],
    vmap_method: vmap_methods.VmapMethod | None,
    is_batched: tuple[bool, ...],
    batch_arg: int,
    expected_shapes: tuple[tuple[int | None, ...], ...],
    call_tf_graph: bool,
    vectorized: Vectorized | None,
) -> tuple[Callable[..., Any], Callable[..., Any]]:
  """The batched ``(callable_flat_tf, function_flat_tf)`` pair for one call.

  Cached on the unbatched callable: ``call_tf`` makes one per ``call_tf``
  object and argument signature, so repeated calls reuse the vectorization.

  pfor vectorizes the unbatched function's concrete function, which the
  unbatched call's abstract evaluation traced: copied into pfor's loop body
  (:func:`.pfor.inlined`), or called there if its graph calls functions,
  pfor converts its graph's ops, and the Python function (the user's, a
  ``GradientTape`` VJP) does not run a second time. The one-call methods
  call the Python function on batched shapes.

  Args:
    callable_flat_tf: the unbatched flat TF callable (a primitive param).
    function_flat_tf: its ``tf.function`` (a primitive param).
    sig: the unbatched argument specs (a primitive param).
    vmap_method: one of :data:`.vmap_methods.VECTORIZING` or of
      :data:`.vmap_methods.ONE_CALL`.
    is_batched: which flat arguments carry the batch at axis 0.
    batch_arg: an argument batched under vmap (its axis 0 is the batch).
    expected_shapes: the batched results' shapes (None for unknown sizes).
    call_tf_graph: the primitive param of the same name.
    vectorized: the unbatched call's ``vectorized`` param: whether
      ``function_flat_tf`` is itself vectorized (nested ``vmap``).

  Returns:
    The callable used eagerly (a ``tf.function`` that is never compiled with
    XLA) and the ``tf.function`` used for shape inference and lowering.
  """
  batched_call = _BatchedCall(callable_flat_tf, function_flat_tf, sig,
                              vmap_method, is_batched, batch_arg,
                              expected_shapes, call_tf_graph, vectorized)
  eager_fn = tf.function(_batched_flat_tf(batched_call, staged=False),
                         autograph=False, jit_compile=False)
  staged_fn = tf.function(_batched_flat_tf(batched_call, staged=True),
                          autograph=False, jit_compile=not call_tf_graph)
  return eager_fn, staged_fn


@dataclasses.dataclass(frozen=True, eq=False)
class _BatchedCall:
  """One call's TF function on a batch: what its batched variants share.

  The arguments of :func:`_batched_tf_functions`, which makes one of these
  per cached pair; its eager and staged variants differ only in ``staged``.

  Attributes:
    callable_flat_tf: the unbatched flat TF callable (a primitive param).
    function_flat_tf: its ``tf.function`` (a primitive param).
    sig: the unbatched argument specs (a primitive param).
    vmap_method: the method that batches the call.
    is_batched: which flat arguments carry the batch at axis 0.
    batch_arg: an argument batched under vmap (its axis 0 is the batch).
    expected_shapes: the batched results' shapes (None for unknown sizes).
    call_tf_graph: the primitive param of the same name.
    vectorized: the unbatched call's ``vectorized`` param.
  """
  callable_flat_tf: Callable[..., Any]
  function_flat_tf: Callable[..., Any]
  sig: tuple[tf.TensorSpec, ...]
  vmap_method: vmap_methods.VmapMethod | None
  is_batched: tuple[bool, ...]
  batch_arg: int
  expected_shapes: tuple[tuple[int | None, ...], ...]
  call_tf_graph: bool
  vectorized: Vectorized | None

  @property
  def inner(self) -> Callable[..., Any]:
    """The unbatched callable's Python function (see ``_python_function``)."""
    return _python_function(self.callable_flat_tf)


def _batched_flat_tf(batched_call: _BatchedCall, staged: bool
                     ) -> Callable[..., list[Any]]:
  """The Python function of one batched variant, for ``tf.function``.

  Args:
    batched_call: the call to batch.
    staged: whether this is the staged variant (shape inference, lowering)
      rather than the eager one.

  Returns:
    A flat TF callable taking the batched arguments and the keyword
    ``check_output_avals`` (default True: its results are checked against
    ``batched_call.expected_shapes``), named after the unbatched callable
    and the method.
  """
  def batched_flat_tf(*args_tf: tf.Tensor, check_output_avals: bool = True
                      ) -> list[tf.Tensor]:
    res = _call_on_batch(batched_call, args_tf, staged)
    if check_output_avals:
      res = _check_results(
          res, batched_call.expected_shapes, batched_call.vmap_method,
          lambda: _batch_size_tf(batched_call.expected_shapes,
                                 batched_call.batch_arg, args_tf))
    return res

  batched_flat_tf.__name__ = (
      f"{getattr(batched_call.inner, '__name__', 'callable_flat_tf')}_vmap_"
      f"{batched_call.vmap_method or 'default'}")
  return batched_flat_tf


def _batch_size_tf(expected_shapes: Sequence[tuple[int | None, ...]],
                   batch_arg: int, args_tf: Sequence[Any]) -> int | tf.Tensor:
  """The batch size of a batched TF call, for broadcasting its results.

  Args:
    expected_shapes: the batched results' shapes (None for unknown sizes).
    batch_arg: an argument batched under vmap (its axis 0 is the batch).
    args_tf: the batched call's arguments.

  Returns:
    The first result's static batch size if known (and not 0), else the
    size of ``args_tf[batch_arg]``'s axis 0, as a TF scalar.
  """
  if expected_shapes and expected_shapes[0] and expected_shapes[0][0]:
    return expected_shapes[0][0]
  return tf.shape(args_tf[batch_arg])[0]


def _call_on_batch(batched_call: _BatchedCall, args_tf: Sequence[Any],
                   staged: bool) -> list[Any]:
  """The unchecked results of one batched call.

  Args:
    batched_call: the call to batch.
    args_tf: its batched arguments (TF tensors).
    staged: whether the staged variant is being traced.

  Returns:
    For the one-call methods, the Python function's results on the batched
    arguments; for the vectorizing ones, pfor's (:func:`_vectorized_call`).
  """
  if batched_call.vmap_method in vmap_methods.VECTORIZING:
    return _vectorized_call(batched_call, args_tf, staged)
  return list(batched_call.inner(*args_tf, check_output_avals=False))


def _vectorized_call(batched_call: _BatchedCall, args_tf: Sequence[Any],
                     staged: bool) -> list[Any]:
  """The unbatched function, vectorized by pfor, called on a batch.

  pfor runs wherever this is traced (the batching rule, the lowering, an
  eager call, an outer vmap): its failures are explained here.

  Args:
    batched_call: the call to batch (a vectorizing method).
    args_tf: its arguments; those of ``batched_call.is_batched`` carry the
      batch at axis 0.
    staged: whether the staged variant is being traced.

  Returns:
    The batched results.

  Raises:
    errors.CallTfVectorizationError: pfor cannot vectorize an op.
  """
  is_batched = list(batched_call.is_batched)
  unbatched, batched = util.partition_list(is_batched, list(args_tf))
  n_out = len(batched_call.expected_shapes)
  body = _loop_body(_unbatched_function(batched_call), is_batched, unbatched,
                    n_out)
  with pfor.LogCapture() as logs:
    try:
      res = pfor.vectorized_map(body, batched)
    except Exception as e:  # pylint: disable=broad-except
      error = _pfor_error(batched_call, e, logs.messages, staged)
      if error is None:
        raise
      raise error from e
  return list(res) if n_out else []


def _unbatched_function(batched_call: _BatchedCall) -> Callable[..., Any]:
  """The unbatched function that pfor's loop body calls.

  Args:
    batched_call: the call to batch (a vectorizing method).

  Returns:
    The unbatched concrete function copied by :func:`.pfor.inlined` where it
    can be; else the concrete function, if pfor converts calls of functions
    made outside its loop, or the Python function.
  """
  sig, vectorized = batched_call.sig, batched_call.vectorized
  if vectorized is None:
    unbatched_fn = pfor.inlined(
        graph_lib.concrete_function(batched_call.function_flat_tf, sig))
  elif _copyable_when_vectorized(vectorized):
    # An inner vmap's function is copied from its eager variant, traced
    # outside XLA: there its pfor loop is in its graph, not in a function
    # that pfor makes under XLA, which would keep it from being copied.
    with tf_overrides.outside_xla_context():
      unbatched_fn = pfor.inlined(
          graph_lib.concrete_function(batched_call.callable_flat_tf, sig))
  else:
    # Called, from its staged variant: pfor's control flow ops compile
    # with XLA only if made in its context.
    unbatched_fn = None
  if unbatched_fn is not None:
    return unbatched_fn
  return (graph_lib.concrete_function(batched_call.function_flat_tf, sig)
          if pfor.converts_calls_of_outer_functions()
          else functools.partial(batched_call.inner, check_output_avals=False))


def _loop_body(unbatched_fn: Callable[..., Any], is_batched: Sequence[bool],
               unbatched: Sequence[Any], n_out: int
               ) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
  """pfor's per-element function of the batched arguments.

  Args:
    unbatched_fn: the unbatched function.
    is_batched: which of its arguments are batched.
    unbatched: the arguments that are not, in order.
    n_out: how many results ``unbatched_fn`` returns.

  Returns:
    A function of one element of each batched argument (a sequence, in
    order) that calls ``unbatched_fn`` on every argument and returns its
    results as a tuple; without results, a placeholder ``int32`` zero.
  """
  def body(elems: Sequence[Any]) -> tuple[Any, ...]:
    res = unbatched_fn(*util.merge_lists(list(is_batched), list(unbatched),
                                         list(elems)))
    # A result that holds no value: a constant of its graph's shape (TF's
    # kernel may give it another, see tf_function.empty).
    res = _empty_results_constant(res)
    # pfor needs an output; a function without results is pure (one with
    # side effects is never vectorized), so nothing is lost.
    return tuple(res) if n_out else (tf.zeros((), tf.int32),)

  return body


def _empty_results_constant(results: Sequence[Any]) -> list[tf.Tensor]:
  """Graph-mode results, each of a static empty shape a constant of it.

  In pfor's loop body a result that holds no value is then loop invariant,
  whatever the kernel would return when run (``SelfAdjointEigV2`` without
  ``compute_v`` returns a scalar for the vectors its graph shapes ``(0,)``).
  """
  out = []
  for r in results:
    r = tf.convert_to_tensor(r)
    empty = r.shape.is_fully_defined() and r.shape.num_elements() == 0
    out.append(tf.zeros(r.shape, r.dtype) if empty else r)
  return out


def _pfor_error(batched_call: _BatchedCall, error: Exception,
                logs: Sequence[str], staged: bool
                ) -> errors.CallTfVectorizationError | None:
  """The error that explains a failure of pfor, if it is one.

  Args:
    batched_call: the call being vectorized.
    error: what ``tf.vectorized_map`` raised.
    logs: TF's error log recorded while it ran.
    staged: whether the staged variant was being traced.

  Returns:
    The error naming the op pfor cannot vectorize, or None if ``error`` is
    not a failure of pfor (the caller re-raises it).
  """
  failure = pfor.pfor_failure(error, logs)
  if failure is None:
    return None
  # A failure of the staged variant reaches the user under jax.jit (eager
  # calls trace it only to try XLA, and keep their own variant where that
  # fails): there no vmap_method helps if XLA cannot compile the unbatched
  # function either.
  compile_failure = (
      _compile_failure(batched_call.function_flat_tf, batched_call.sig,
                       compile_lib.ENGINE_PLATFORM)
      if staged and not batched_call.call_tf_graph else None)
  return errors.pfor_error(*failure, batched_call.vmap_method, error,
                           compile_failure=compile_failure)


@functools.lru_cache(maxsize=256)
def _compile_failure(function_flat_tf: tf.types.experimental.GenericFunction,
                     sig: tuple[tf.TensorSpec, ...],
                     platform: str) -> str | None:
  """Why XLA cannot compile ``function_flat_tf`` for ``sig``, or None.

  Cached, failures too (as their message, which keeps no graph alive); the
  HLO of a success is cached by :func:`.compile_lib.compile_to_hlo`.
  """
  try:
    compile_lib.compile_to_hlo(function_flat_tf, sig, platform)
  except (errors.CallTfCompileError,
          errors.CallTfStatefulFunctionError) as e:  # call_tf's own: in full
    return str(e)
  except Exception as e:  # pylint: disable=broad-except
    return ("TensorFlow said: "
            + errors.first_line(e, ("XLA compilation", "XLA")))
  return None


compat.register_cache(_compile_failure, "call_tf: XLA compile failures")


compat.register_cache(_batched_tf_functions,
                      "call_tf: vectorized TF functions")
