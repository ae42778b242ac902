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
"""When JAX's rules may differentiate a TF function's StableHLO module.

Differentiating the module (:mod:`.path`) with JAX's rules gives
TensorFlow's gradients only where no op of the TF graph has a TF gradient
that differs from the derivative of its lowering (:func:`gradient_mismatch_ops`):
stop/prevent gradient, custom gradients (but TF's own that are the
derivative, :data:`EXACT_CUSTOM_GRADIENTS`), ops without a registered
gradient, and ops whose TF gradient takes other values at ties, kinks or
through straight-through estimators. :func:`differentiable` gives the call
as a function JAX may differentiate, or None where TF's derivatives are
needed; and whether JAX can also transpose it (not through a loop whose
trip count depends on the data). Forward and reverse mode take one
derivative: where TF's gradient is wrong (``Cumprod`` at zeros) the module
takes the derivative, and only where JAX transposes it too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import logging
from typing import Any

import jax
from jax._src import core
from jax._src.export.transforms import linear
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib.stablehlo import path as stablehlo_path
from jax.experimental.jax2tf.call_tf_lib.stablehlo import tf_derivatives
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
import numpy as np
import tensorflow as tf

logger = logging.getLogger(__name__)

# Ops whose TF gradient is not the derivative of their lowering.
# Gradients TensorFlow stops or refuses, where the lowering is the identity.
_STOPS_GRADIENT = frozenset({"StopGradient", "PreventGradient"})
# Ops whose TF gradient takes other values than JAX's derivative of their
# tf2xla lowering at some points: ties and kinks (Maximum's gradient goes to
# its first argument at a tie, JAX's derivative of `max` splits it; Relu's
# is 0 at 0, the derivative of `max(x, 0)` is 1/2; Abs's is 0 at 0, that of
# `abs` 1; Selu's at 0 is its scale, the derivative of its lowering's
# `select(x > 0, ...)` scale * alpha; ClipByValue's passes at the bounds,
# that of `clamp` does not), and straight-through estimators (the gradient
# of a fake quantization is 1 inside its range, the derivative of its
# rounding 0). Measured against TF's gradients at those points; Relu6,
# LeakyRelu, Elu, Max (reductions), MaxPool, Sign, Round and Floor agree.
# Also Cholesky, whose TF gradient symmetrizes the input while its lowering
# reads one triangle (derivatives agree only along symmetric tangents), and
# the segment reductions whose TF gradients are NaN or 0 for empty segments
# where the lowering's derivative is not.
_GRADIENT_DIFFERS = frozenset({
    "Cholesky", "UnsortedSegmentMax", "UnsortedSegmentMin",
    "UnsortedSegmentProd", "SegmentMax", "SegmentMin", "SegmentProd",
    "Maximum", "Minimum", "Relu", "Abs", "Selu", "ClipByValue",
    "FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars",
    "FakeQuantWithMinMaxVarsPerChannel", "QuantizeAndDequantize",
    "QuantizeAndDequantizeV2", "QuantizeAndDequantizeV3",
    "QuantizeAndDequantizeV4"})
# Ops whose TF gradient is not even their derivative at some points, where
# the module takes the derivative (a rule of .tf_derivatives.EXACT_BY_RULE):
# Cumprod's gradient is 0 at an element that is 0, where the derivative of
# the product is the product of the others (jnp.cumprod's). JAX's
# derivative of the module is used there in both modes or in none (TF's
# gradient in both, where JAX cannot transpose the module), so that
# jax.jacfwd and jax.jacrev give one Jacobian.
_GRADIENT_WRONG = frozenset(tf_derivatives.EXACT_BY_RULE)
# Ops that carry no tangent although their types are floating: ZerosLike
# and OnesLike (not differentiable in TF; their lowering, a constant, has
# no derivative either), which TF's tape makes for unused results.
_NO_TANGENT = frozenset({"Const", "Placeholder", "_Arg", "_Retval", "NoOp",
                         "ZerosLike", "OnesLike"})
# Fused batch normalization: TF's gradient (nn_grad._BaseFusedBatchNormGrad)
# takes the cotangent of y only (none flows through the batch mean, the
# batch variance or the reserve spaces: their gradient is 0) and gives none
# to the mean and variance inputs; the derivative of the lowering
# (stablehlo.batch_norm_training, batch_norm_inference) has both. So JAX's
# derivative is TF's only where neither path carries a tangent (see
# _batch_norm_differs). The gradient ops' own gradient
# (_FusedBatchNormGradGrad) is their lowering's derivative: it recomputes
# the batch statistics from x, as the lowering's batch_norm_grad reads
# them from batch_norm_training of the same x.
_BATCH_NORM = frozenset({"FusedBatchNorm", "FusedBatchNormV2",
                         "FusedBatchNormV3"})
_BATCH_NORM_GRAD = frozenset({"FusedBatchNormGrad", "FusedBatchNormGradV2",
                              "FusedBatchNormGradV3"})


def _has_tangent_dtype(dtype: Any) -> bool:
  return dtype.is_floating or dtype.is_complex


def gradient_mismatch_ops(graph: Any) -> list[tuple[str, str]]:
  """The ops whose TF gradient differs from the derivative of their lowering.

  JAX's rules differentiate a TF function's lowering exactly as TensorFlow's
  gradients do only if its graph (and the functions it calls) has none of:

  * ``StopGradient``/``PreventGradient``, lowered to the identity;
  * ops whose gradient is overridden (``tf.custom_gradient``,
    ``tf.recompute_grad``, ``tf.grad_pass_through``,
    ``gradient_override_map``: the ``_gradient_op_type`` attribute);
  * ops with a floating input and output and no gradient in TF's registry
    (``tf.no_gradient``, or none registered: ``ResizeBilinearGrad``);
  * ops whose TF gradient takes other values at ties, kinks or through a
    straight-through estimator (``Maximum``, ``Minimum``, ``Relu``, ``Abs``,
    ``Selu``, ``ClipByValue``, fake quantization);
  * fused batch normalization whose batch statistics are used (training),
    or whose mean and variance inputs depend on the function's arguments
    (inference): TF's gradient has no path through either.

  Args:
    graph: a ``tf.Graph`` (a concrete function's ``graph``).

  Only ops with a floating or complex input and output count: no tangent
  flows through the others.

  Returns:
    ``(op_type, node_name)`` of each such op, in graph order.
  """
  return [(m.op_type, m.node) for m in _mismatches(graph)]


@dataclasses.dataclass(frozen=True)
class _Mismatch:
  """An op of :func:`gradient_mismatch_ops`."""
  op_type: str
  node: str


def _mismatches(graph: Any) -> list[_Mismatch]:
  found = []
  for op in graph_lib.graph_ops(graph):
    if (op.type in _NO_TANGENT
        or not any(_has_tangent_dtype(t.dtype) for t in op.inputs)
        or not any(_has_tangent_dtype(t.dtype) for t in op.outputs)):
      # No tangent flows through it (integer shape arithmetic: tf.eye's
      # Minimum).
      continue
    if (op.type in _STOPS_GRADIENT or op.type in _GRADIENT_DIFFERS
        or op.type in _GRADIENT_WRONG
        or (graph_lib.overrides_gradient(op) and not exact_custom_gradient(op))
        or _batch_norm_differs(op)
        or (op.type not in graph_lib.CALLS
            and not compat.has_registered_gradient(op.type))):
      # (TF differentiates a function call through its body, walked here.)
      found.append(_Mismatch(op.type, op.name))
  return found


# TensorFlow's own custom gradients that are the derivative of the ops they
# wrap, by (module, qualified name) of the gradient function
# ``tf.custom_gradient`` was given: tf.nn.silu (tf.nn.swish, Keras'
# "swish" and "silu"), whose custom gradient only recomputes the sigmoid
# to save memory: sigmoid(b x) (1 + b x (1 - sigmoid(b x))), and its beta's.
EXACT_CUSTOM_GRADIENTS = frozenset({
    ("tensorflow.python.ops.nn_impl",
     "swish.<locals>.swish_impl.<locals>.grad"),
})


def exact_custom_gradient(op: tf.Operation) -> bool:
  """Whether ``op``'s overridden gradient is one TF's own custom gradients
  that are the derivative (:data:`EXACT_CUSTOM_GRADIENTS`): JAX's
  derivative of the ops it wraps is then its gradient."""
  try:
    op_type = op.get_attr(graph_lib.GRADIENT_OVERRIDE_ATTR)
  except ValueError:
    return False
  if isinstance(op_type, bytes):
    op_type = op_type.decode()
  return compat.custom_gradient_function(op_type) in EXACT_CUSTOM_GRADIENTS


def _batch_norm_differs(op: tf.Operation) -> bool:
  """Whether a fused batch normalization's TF gradient is not its lowering's
  derivative here (see :data:`_BATCH_NORM`).

  In training, where a result other than y (the batch statistics, mixed
  with the running ones, or a reserve space) is used other than by the
  op's gradient; in inference, where the mean or variance input depends on
  an argument of the function (the running statistics, constants or
  variables, do not).
  """
  if op.type not in _BATCH_NORM:
    return False
  if op.get_attr("is_training"):
    return any(c.type not in _BATCH_NORM_GRAD and c.type not in _NO_TANGENT
               for t in op.outputs[1:] for c in t.consumers())
  return any(_depends_on_arguments(op.inputs[i]) for i in (3, 4))


def _depends_on_arguments(tensor: tf.Tensor) -> bool:
  """Whether ``tensor`` may depend on an argument of its graph's function.

  Walks the ops it is computed from, back to placeholders: a placeholder of
  a captured value (a variable, a tensor) is not an argument; any other is
  (in a called function's graph, every placeholder, conservatively).
  """
  graph = tensor.graph
  captured = {t.name for t in [*getattr(graph, "internal_captures", ()),
                               *getattr(graph, "deferred_internal_captures",
                                        ())]}
  seen: set[int] = set()
  todo = [tensor.op]
  while todo:
    op = todo.pop()
    if id(op) in seen:
      continue
    seen.add(id(op))
    if op.type == "Placeholder" and op.outputs[0].name not in captured:
      return True
    todo += [t.op for t in op.inputs]
  return False


def _one_call_tf(make_call: Callable[..., Any], flat_primals: Sequence[Any],
                 primals_tree: Any
                 ) -> tuple[core.JaxprEqn, Any] | None:
  """The one ``call_tf_p`` of the arguments ``make_call`` makes, or None.

  Returns:
    The call's equation and the pytree of the results' shapes, if the
    function's jaxpr is that call alone on its arguments, not a graph or an
    ordered call, not vectorized, and on no complex value.
  """
  def flat_call(*flat):
    return make_call(*primals_tree.unflatten(list(flat)))
  closed, out_shape = jax.make_jaxpr(flat_call, return_shape=True)(
      *flat_primals)
  jaxpr = closed.jaxpr
  calls = [e for e in jaxpr.eqns if e.primitive.name == "call_tf"]
  if (len(jaxpr.eqns) != 1 or len(calls) != 1 or closed.consts
      or list(calls[0].invars) != list(jaxpr.invars)
      or list(calls[0].outvars) != list(jaxpr.outvars)):
    logger.debug("call_tf: differentiation uses TensorFlow's gradients: the "
                 "call is not one call_tf_p of its arguments")
    return None
  params = calls[0].params
  if params["call_tf_graph"] or params["ordered"]:
    return None
  if any(np.issubdtype(v.aval.dtype, np.complexfloating)
         for v in [*jaxpr.invars, *jaxpr.outvars]):
    # TF's gradients of complex values follow TF's convention.
    logger.debug("call_tf: differentiation uses TensorFlow's gradients: "
                 "complex arguments or results")
    return None
  if params["vectorized"] is not None:
    return None
  return calls[0], out_shape


@dataclasses.dataclass(frozen=True)
class _ToDifferentiate:
  """A module JAX's rules may differentiate.

  Attributes:
    interp: the module.
    both_modes: whether JAX's derivative of it is used only where JAX also
      transposes it: where the graph has an op whose TF gradient is wrong
      (:data:`_GRADIENT_WRONG`), whose derivative the module takes.
  """
  interp: stablehlo_path.Interpreted
  both_modes: bool


def _module_to_differentiate(fn: tf.types.experimental.GenericFunction,
                             sig: Sequence[tf.TensorSpec], *, staged: bool
                             ) -> _ToDifferentiate | None:
  """The function's interpreted module, if JAX's derivatives of it are TF's
  (or the derivative, where TF's gradient is wrong: ``both_modes``).

  None (the reason logged at debug level) if there is no module, or an op
  of it branches or kinks, or the TF graph has an op whose gradient differs
  from the derivative of its lowering, or JAX cannot differentiate an op.
  """
  interp = stablehlo_path.lookup(fn, sig, purpose="differentiation",
                                 staged=staged)
  if interp is None:
    return None
  if not interp.takes_tf_derivatives:
    logger.debug("call_tf: differentiation of %s uses TensorFlow's "
                 "gradients: an op of its module branches or kinks where "
                 "JAX's derivative of it may not be TF's gradient",
                 getattr(fn, "__name__", fn))
    return None
  # Ops whose TF gradient differs from JAX's derivative of their lowering,
  # unless the module takes TF's derivative for them (ties of Relu,
  # Maximum, Minimum, Abs, Selu, Elu; the StopGradients it stops too).
  found = graph_lib.scanned(fn, sig, _mismatches)
  stopped = {stop for stop, _, _ in graph_lib.scanned(
      fn, sig, tf_derivatives.stopped_inputs)}
  mismatch = [m for m in found
              if not ((m.op_type in tf_derivatives.LOWERED_TO
                       or m.op_type in _GRADIENT_WRONG
                       or (m.op_type == "StopGradient" and m.node in stopped))
                      and interp.takes_tf_derivatives)]
  if mismatch:
    logger.debug("call_tf: differentiation of %s uses TensorFlow's "
                 "gradients: the TF gradient of %s differs from the "
                 "derivative of its lowering", getattr(fn, "__name__", fn),
                 ", ".join(f"op {m.op_type!r} (node {m.node!r})"
                           for m in mismatch))
    return None
  if interp.program.no_derivative:
    # (tf2xla's QR, solve and inverse: lax's geqrf has no JVP.)
    logger.debug("call_tf: differentiation of %s uses TensorFlow's "
                 "gradients: JAX cannot differentiate %s of its module",
                 getattr(fn, "__name__", fn),
                 ", ".join(interp.program.no_derivative))
    return None
  return _ToDifferentiate(
      interp, any(m.op_type in _GRADIENT_WRONG for m in found))


def differentiable(make_call: Callable[..., Any], flat_primals: Sequence[Any],
                   primals_tree: Any, *, staged: bool
                   ) -> linear.Differentiable | None:
  """The call ``make_call`` makes on these arguments, if JAX may differentiate it.

  Traces ``make_call`` (its TF traces are cached by the ``call_tf``) to find
  its ``call_tf_p``, and gives that call's interpreted module if
  :func:`lookup` finds one, the TF graph has no op that
  :func:`gradient_mismatch_ops` names, and no argument or result is complex
  (TF's gradients of complex values follow TF's own convention).

  Args:
    make_call: the undecorated function of one ``call_tf`` (``custom_jvp``'s
      ``fun``).
    flat_primals: the flat arguments.
    primals_tree: their pytree.
    staged: whether the call is under a staging trace (``jax.jit``); see
      :func:`.path.lookup`.

  Returns:
    None where TF's derivatives are needed (the reason is logged at debug
    level).
  """
  call = _one_call_tf(make_call, flat_primals, primals_tree)
  if call is None:
    return None
  eqn, out_shape = call
  fn = eqn.params["function_flat_tf"]
  found = _module_to_differentiate(fn, eqn.params["args_flat_sig_tf"],
                                   staged=staged)
  if found is None:
    return None
  interp = found.interp
  if found.both_modes and not interp.transposable:
    # Forward mode follows reverse mode (TF's VJP, where JAX cannot
    # transpose the module) to TF's gradient: one Jacobian either way.
    logger.debug("call_tf: differentiation of %s uses TensorFlow's "
                 "gradients: JAX cannot transpose its module, and TF's "
                 "gradient of %s is not its derivative at some points",
                 getattr(fn, "__name__", fn), ", ".join(sorted(_GRADIENT_WRONG)))
    return None
  if not interp.transposable:
    logger.debug("call_tf: reverse-mode differentiation of %s uses "
                 "TensorFlow's VJP: JAX cannot transpose its module (a "
                 "while loop whose trip count depends on the data, or a "
                 "reduction with a region of its own); forward mode is "
                 "JAX's", getattr(fn, "__name__", fn))
  out_avals = [v.aval for v in eqn.outvars]

  def fun(*flat):
    outs = interp(*flat)
    return [stablehlo_path.fit_result(o, a) for o, a in zip(outs, out_avals)]

  return linear.Differentiable(
      fun, jax.tree_util.tree_structure(out_shape), interp.transposable)
