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
"""TensorFlow's gradients where tf2xla's lowerings branch or kink.

call_tf's derivative rules for the StableHLO interpreter
(:class:`TfDerivatives`, a ``stablehlo_to_jax.DerivativeRules``), and the
decision whether JAX's derivative of a tf2xla module is TF's gradient
(:meth:`TfDerivatives.takes_tf_derivatives`).

JAX's derivative of a smooth lowering is TF's gradient of the op. Where a
lowering branches (``select``) or has a kink (``abs``, ``maximum``...), it
need not be:

* At ties, TF's gradients follow their own conventions: ``Relu``'s is 0 at
  0 (``ReluGrad``: where the input exceeds 0), where JAX's derivative of
  ``max(x, 0)`` is 1/2; ``Maximum``/``Minimum`` give the whole gradient to
  the first argument at a tie (JAX splits it); ``Abs``'s is ``sign(x)``, 0
  at 0 (JAX's derivative of ``abs`` is 1 there); ``Selu``'s and ``Elu``'s
  are the linear branch's where TF's kernel computes an output that is not
  negative (at 0, and for inputs so small that ``exp(x) - 1`` rounds to 0).
* Branches that are not taken still enter JAX's derivative: the transpose
  of ``select`` gives the untaken branch a zero cotangent, which its own
  derivative multiplies, and ``0 * inf`` is NaN (``Lgamma``'s reflection
  branch at integers, ``Erfinv``, ``Softplus`` and ``Elu`` at large inputs,
  ``DivNoNan`` at 0); a kink inside a smooth op's lowering (``Asinh``,
  ``BesselI0e``) has JAX's derivative, not the op's.

tf2xla records the type and name of the TF op each instruction lowers in
its metadata, and the module's locations carry the name. Given the TF op
type of each location name, :meth:`TfDerivatives.rule` gives the ops of
``Relu``, ``Maximum``, ``Minimum``, ``Abs``, ``Selu``, ``Elu``,
``Softplus`` and ``Erfc`` (whose lowering is a piecewise approximation:
Keras's exact GELU) as ``jax.custom_jvp``\\ s of the same ``lax``
operations with TF's gradients (the values are the module's), the
``reduce_window`` of ``Cumprod`` (whose TF gradient is wrong at zeros) the
derivative in a form JAX transposes, and the interpreter records the other
branches and kinks (``DerivativeRecord.branching``): a module whose
branches and kinks are all of TF ops whose gradient JAX's derivative is
(:data:`SAFE_BRANCHES`) is differentiated by JAX as TF differentiates the
graph; any other keeps TF's gradients. The derivatives are linear in the
tangents, which JAX transposes.

Softmax and LogSoftmax have no kink that matters (the max's shift
cancels), but JAX's derivative of their lowerings is long: their final ops
take TF's formulas instead (:mod:`.tf_softmax`).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TYPE_CHECKING

import jax
from jax._src import dtypes
from jax._src.export import stablehlo_to_jax
from jax import lax
from jax.experimental.jax2tf.call_tf_lib.stablehlo import tf_softmax
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
import numpy as np

if TYPE_CHECKING:
  import tensorflow as tf

# The TF op types handled here, and the StableHLO op of each lowering that
# takes TF's gradient.
LOWERED_TO = {"Relu": "stablehlo.maximum", "Maximum": "stablehlo.maximum",
              "Minimum": "stablehlo.minimum", "Abs": "stablehlo.abs",
              "Selu": "stablehlo.select", "Elu": "stablehlo.select",
              "Softplus": "stablehlo.select", "Erfc": "stablehlo.select"}
# TF ops whose TF gradient is not their derivative at some points, and the
# StableHLO op of each lowering that a rule here gives the derivative, in a
# form JAX also transposes: Cumprod's gradient (math_grad._CumprodGrad)
# divides by the input with div_no_nan, so it is 0 where an element is 0,
# where the derivative of a product is the product of the other elements
# (jnp.cumprod's). The module then takes the derivative in both modes, or
# TF's gradient does in both (see .exactness).
EXACT_BY_RULE = {"Cumprod": "stablehlo.reduce_window"}
# Ops a lowering of them may also hold, whose derivatives are TF's
# everywhere: the constant 0 of Relu, broadcasts of Maximum's operands, and
# the branches of Selu and Elu (``select(x > 0, scale * x,
# scale * alpha * expm1(x))``) and their comparison, whose derivatives the
# select's rule does not use.
_SMOOTH = frozenset({"stablehlo.constant", "stablehlo.broadcast_in_dim",
                     "stablehlo.reshape", "stablehlo.convert",
                     "stablehlo.transpose"})
_BRANCHES = frozenset({"stablehlo.compare", "stablehlo.multiply",
                       "stablehlo.exponential_minus_one",
                       "stablehlo.exponential", "stablehlo.subtract"})
# Softplus's lowering: select(x > t, x, select(x < -t, exp(x),
# log1p(exp(x)))), t computed from constants (-log(eps) - 2); the outer
# select's rule takes TF's gradient from x, so the branches' derivatives
# (exp(x) overflows: 0 * inf in JAX's transpose) are not used.
_SOFTPLUS = frozenset({"stablehlo.compare", "stablehlo.exponential",
                       "stablehlo.log_plus_one", "stablehlo.log",
                       "stablehlo.add", "stablehlo.negate"})
# Erfc's lowering (XLA's Erfc; upcast to f32 for f16 and bf16):
# select(|x| > 1, erfc's rational approximation in exp(-x^2) (whose sign
# branch selects 2 - y for x < 0, and whose abs is clamped by a minimum),
# 1 - erf's polynomial); the outer select's rule takes TF's gradient from
# x, so the approximations' derivatives, which are not the derivative of
# erfc, are not used, nor their selects and kinks.
_ERFC = frozenset({"stablehlo.compare", "stablehlo.abs", "stablehlo.minimum",
                   "stablehlo.multiply", "stablehlo.negate",
                   "stablehlo.exponential", "stablehlo.divide",
                   "stablehlo.add", "stablehlo.subtract"})
_LOWERING = {"Selu": _BRANCHES, "Elu": _BRANCHES, "Softplus": _SOFTPLUS,
             "Erfc": _ERFC}
ALLOWED = {
    op_type: _SMOOTH | {lowered} | _LOWERING.get(op_type, frozenset())
    for op_type, lowered in LOWERED_TO.items()}

# The TF ops whose branches and kinks JAX differentiates as TF does, each
# with the ops of its lowering that do: besides those of LOWERED_TO (with
# the rules below), tf.where's select (TF's gradient selects the
# cotangents, as JAX's transpose does, NaN of an untaken branch included),
# Relu6's clamp (0 at both bounds in both), LeakyRelu's select (no
# non-finite branch), Sign's sign (0), MatrixBandPart's select of the
# band or a constant 0 (TF's gradient is the band of the cotangent, JAX's
# transpose of the select), Softsign's abs (x / (|x| + 1): at 0 the abs's
# derivative is multiplied by x, so JAX's derivative is SoftsignGrad's
# 1 / (|x| + 1)^2 everywhere).
SAFE_BRANCHES = {
    **{t: frozenset({op}) for t, op in LOWERED_TO.items()},
    "Select": frozenset({"stablehlo.select"}),
    "SelectV2": frozenset({"stablehlo.select"}),
    "Relu6": frozenset({"stablehlo.clamp"}),
    "LeakyRelu": frozenset({"stablehlo.select"}),
    "Sign": frozenset({"stablehlo.sign"}),
    "MatrixBandPart": frozenset({"stablehlo.select"}),
    "Softsign": frozenset({"stablehlo.abs"}),
    # (The inner selects and kinks of Erfc's approximations, whose
    # derivatives its outer select's rule does not use.)
    "Erfc": frozenset({"stablehlo.select", "stablehlo.abs",
                       "stablehlo.minimum"}),
}


@jax.custom_jvp
def _relu_max(x: jax.Array, y: jax.Array) -> jax.Array:
  return lax.max(x, y)


@_relu_max.defjvp
def _relu_max_jvp(primals, tangents):
  # ReluGrad: the gradient flows where the input exceeds 0 strictly, so at
  # a tie (and where either operand is NaN) none does.
  x, y = primals
  tx, ty = tangents
  zero = lax.full_like(tx, 0)
  return _relu_max(x, y), lax.select(
      lax.gt(x, y), tx, lax.select(lax.gt(y, x), ty, zero))


@jax.custom_jvp
def _first_max(x: jax.Array, y: jax.Array) -> jax.Array:
  return lax.max(x, y)


@_first_max.defjvp
def _first_max_jvp(primals, tangents):
  # _MaximumGrad: the first argument's where x >= y, else the second's.
  x, y = primals
  tx, ty = tangents
  return _first_max(x, y), lax.select(lax.ge(x, y), tx, ty)


@jax.custom_jvp
def _first_min(x: jax.Array, y: jax.Array) -> jax.Array:
  return lax.min(x, y)


@_first_min.defjvp
def _first_min_jvp(primals, tangents):
  # _MinimumGrad: the first argument's where x <= y, else the second's.
  x, y = primals
  tx, ty = tangents
  return _first_min(x, y), lax.select(lax.le(x, y), tx, ty)


@jax.custom_jvp
def _sign_abs(x: jax.Array) -> jax.Array:
  return lax.abs(x)


@_sign_abs.defjvp
def _sign_abs_jvp(primals, tangents):
  # _AbsGrad: the gradient times sign(x), which is 0 at 0.
  x, = primals
  t, = tangents
  return _sign_abs(x), lax.mul(lax.sign(x), t)


# SELU's constants, as TF's kernels have them.
_SELU_SCALE = 1.0507009873554805
_SELU_ALPHA = 1.6732632423543772


def _exponential_select(scale: float, alpha: float) -> Callable[..., Any]:
  """The select of an ELU-like lowering, with TF's gradient.

  ``f(x, pred, a, b) = select(pred, a, b)``, where ``pred`` is ``x > 0``,
  ``a`` the linear branch ``scale * x`` and ``b`` the exponential one
  ``scale * alpha * expm1(x)``. Its derivative is TF's (``SeluGrad``,
  ``EluGrad``): ``scale * alpha * exp(x)`` where TF's kernel computes a
  negative output (``exp(x) - 1 < 0``), else ``scale``, times the tangent
  of ``x``. The branches' own derivatives are not used, so an untaken
  branch that overflows (``expm1(100)``) gives no NaN.
  """
  @jax.custom_jvp
  def f(x, pred, a, b):
    del x
    return lax.select(pred, a, b)

  @f.defjvp
  def f_jvp(primals, tangents):
    x, pred, a, b = primals
    tx = tangents[0]
    e = lax.exp(x)
    one = lax.full_like(x, 1)
    negative = lax.lt(lax.sub(e, one), lax.full_like(x, 0))
    factor = lax.select(negative,
                        lax.mul(lax.full_like(x, scale * alpha), e),
                        lax.full_like(x, scale))
    return f(x, pred, a, b), lax.mul(tx, factor)
  return f


_selu_select = _exponential_select(_SELU_SCALE, _SELU_ALPHA)
_elu_select = _exponential_select(1., 1.)


@jax.custom_jvp
def _softplus_select(pred: jax.Array, x: jax.Array, b: jax.Array
                     ) -> jax.Array:
  """Softplus's outer select, ``select(x > t, x, b)``, with TF's gradient.

  _SoftplusGrad: the tangent of ``x`` times ``sigmoid(x)``; ``b``'s
  derivative (``log1p(exp(x))``, whose ``exp`` overflows) is not used.
  """
  return lax.select(pred, x, b)


@_softplus_select.defjvp
def _softplus_select_jvp(primals, tangents):
  pred, x, b = primals
  tx = tangents[1]
  return _softplus_select(pred, x, b), lax.mul(tx, lax.logistic(x))


@jax.custom_jvp
def _erfc_select(x: jax.Array, pred: jax.Array, a: jax.Array, b: jax.Array
                 ) -> jax.Array:
  """Erfc's outer select, ``select(|x| > 1, a, b)``, with TF's gradient.

  _ErfcGrad: the tangent of ``x`` times ``-2 / sqrt(pi) * exp(-x^2)``, the
  derivative of erfc; the branches' (rational approximations) are not used.
  """
  del x
  return lax.select(pred, a, b)


@_erfc_select.defjvp
def _erfc_select_jvp(primals, tangents):
  x, pred, a, b = primals
  factor = lax.mul(lax.full_like(x, -2. / np.sqrt(np.pi)),
                   lax.exp(lax.neg(lax.mul(x, x))))
  return _erfc_select(x, pred, a, b), lax.mul(tangents[0], factor)


def cumulative_product(axis: int, reverse: bool, exclusive: bool,
                       window: dict[str, Any], differentiable: bool = True
                       ) -> Callable[..., jax.Array]:
  """tf2xla's cumulative product, with its derivative in a form JAX transposes.

  The value is the module's ``reduce_window`` of ``*`` from 1 (``window``:
  its attributes, as ``lax.reduce_window`` takes them), exactly; the
  derivative is JAX's of ``lax.cumprod`` along ``axis`` (of the input
  with a 1 before it, or after it in ``reverse``, where ``exclusive``),
  which is the derivative at zeros too and which JAX transposes (it cannot
  transpose the derivative of a ``reduce_window`` of ``*``). Not
  ``differentiable`` (integers, complex numbers): the value alone.
  """
  def value(x):
    return lax.reduce_window(x, np.array(1, x.dtype), lax.mul, **window)
  if not differentiable:
    return value
  f = jax.custom_jvp(value)

  def cumulative(x):
    if exclusive:
      pad = [(0, 0, 0)] * x.ndim
      pad[axis] = (0, 1, 0) if reverse else (1, 0, 0)
      x = lax.pad(x, np.array(1, x.dtype), pad)
    return lax.cumprod(x, axis, reverse=reverse)

  @f.defjvp
  def f_jvp(primals, tangents):
    x, = primals
    _, ty = jax.jvp(cumulative, (x,), (tangents[0],))
    return f(x), ty
  return f


_FUNCTIONS: dict[tuple[str, str], Callable[..., Any]] = {
    ("Relu", "stablehlo.maximum"): _relu_max,
    ("Maximum", "stablehlo.maximum"): _first_max,
    ("Minimum", "stablehlo.minimum"): _first_min,
    ("Abs", "stablehlo.abs"): _sign_abs,
}


def function(tf_op_type: str | None, op_name: str,
             dtype: np.dtype) -> Callable[..., jax.Array] | None:
  """The ``lax`` operation with TF's gradient, for an op of a TF op.

  Args:
    tf_op_type: the type of the TF op the StableHLO op is located at, or
      None.
    op_name: the StableHLO op's name (``"stablehlo.maximum"``).
    dtype: the dtype of its result (``abs`` of a complex number is real, and
      TF's gradient of it another).

  Returns:
    A function of the op's operands, or None where JAX's own rule is TF's
    gradient (or no tangent flows: integers). For the ``select`` of Selu
    and Elu, see :func:`select_of_x`.
  """
  if tf_op_type is None or not dtypes.issubdtype(dtype, np.floating):
    return None
  return _FUNCTIONS.get((tf_op_type, op_name))


def select_of_x(tf_op_type: str | None, dtype: np.dtype
                ) -> tuple[Callable[..., int | None],
                           Callable[..., jax.Array]] | None:
  """For the ``select`` of Selu, Elu or Erfc: how to find its input ``x``
  from the predicate, and ``f(x, pred, a, b)``; else None."""
  if tf_op_type is None or not dtypes.issubdtype(dtype, np.floating):
    return None
  return _SELECTS_OF_X.get(tf_op_type)


def _input_compared_with_zero(pred: int, c: stablehlo_to_jax.Compiler
                              ) -> int | None:
  """``x`` of a predicate ``compare GT, x, 0`` (a broadcast 0), or None."""
  compare = c.defining.get(pred)
  if (compare is None or compare.name != "stablehlo.compare"
      or compare.attrs.get("comparison_direction") != "GT"):
    return None
  zero = c.defining.get(compare.operands[1])
  while zero is not None and zero.name == "stablehlo.broadcast_in_dim":
    zero = c.defining.get(zero.operands[0])
  if (zero is None or zero.name != "stablehlo.constant"
      or np.any(np.asarray(zero.attrs["value"]) != 0)):
    return None
  return compare.operands[0]


def _input_of_abs_above_one(pred: int, c: stablehlo_to_jax.Compiler
                            ) -> int | None:
  """``x`` of a predicate ``compare GT, abs(x), 1`` (a broadcast 1), or None.

  (Erfc's outer select; its inner ones compare ``x`` itself, or ``|x|``
  with another bound.)
  """
  compare = c.defining.get(pred)
  if (compare is None or compare.name != "stablehlo.compare"
      or compare.attrs.get("comparison_direction") != "GT"):
    return None
  abs_ = c.defining.get(compare.operands[0])
  one = c.constant(compare.operands[1])
  if (abs_ is None or abs_.name != "stablehlo.abs" or one is None
      or np.any(np.asarray(one) != 1)):
    return None
  return abs_.operands[0]


# The selects that need their input x: (TF op type) -> how to find x from
# the predicate, and the function of (x, pred, a, b).
_SELECTS_OF_X: dict[str, tuple[Callable[..., int | None],
                               Callable[..., jax.Array]]] = {
    "Selu": (_input_compared_with_zero, _selu_select),
    "Elu": (_input_compared_with_zero, _elu_select),
    "Erfc": (_input_of_abs_above_one, _erfc_select)}


def _softplus_input(op: stablehlo_to_jax.Op,
                    c: stablehlo_to_jax.Compiler) -> bool:
  """Whether a select is Softplus's outer one: ``select(x > t, x, b)``,
  ``t`` independent of the arguments."""
  pred, x, _ = op.operands
  compare = c.defining.get(pred)
  return (compare is not None and compare.name == "stablehlo.compare"
          and compare.attrs.get("comparison_direction") == "GT"
          and compare.operands[0] == x
          and compare.operands[1] in c.maybe_constant)


def cumulative_window(op: stablehlo_to_jax.Op, c: stablehlo_to_jax.Compiler
                      ) -> tuple[int, bool, bool, dict[str, Any]] | None:
  """tf2xla's cumulative product in a ``reduce_window``, or None.

  Returns:
    ``(axis, reverse, exclusive, window)`` where the op is a product from
    1, with no stride or dilation, whose window is one axis whole, padded
    by its size less one (plus one where ``exclusive``) before it (after
    it where ``reverse``): element ``k`` is the product of the elements up
    to ``k`` (from ``k``), as tf2xla lowers ``tf.math.cumprod``.
  """
  if len(op.operands) != 2 or not tf_softmax.combines_by(
      op, "stablehlo.multiply"):
    return None
  init = c.constant(op.operands[1])
  shape = op.operand_types[0].shape
  a = op.attrs
  rank = len(shape)
  if init is None or init.size != 1 or init.reshape(()) != 1 or any(
      tuple(a.get(k) or (1,) * rank) != (1,) * rank for k in (
          "window_strides", "base_dilations", "window_dilations")):
    return None
  dims = tuple(int(d) for d in a["window_dimensions"])
  padding = (tuple((int(lo), int(hi)) for lo, hi in np.asarray(a["padding"]))
             if a.get("padding") is not None else ((0, 0),) * rank)
  axes = [i for i in range(rank) if dims[i] != 1 or padding[i] != (0, 0)]
  if not axes:  # (an inclusive product along an axis of size 1: x itself)
    axes = [i for i in range(rank) if shape[i] == 1][:1]
  if len(axes) != 1 or dims[axes[0]] != shape[axes[0]] or shape[axes[0]] < 1:
    return None
  axis, = axes
  n = shape[axis]
  forms = {(n - 1 + e, 0): (False, bool(e)) for e in (0, 1)}
  forms.update({(0, n - 1 + e): (True, bool(e)) for e in (0, 1)})
  if padding[axis] not in forms:
    return None
  reverse, exclusive = forms[padding[axis]]
  window = dict(window_dimensions=dims, window_strides=(1,) * rank,
                padding=padding)
  return axis, reverse, exclusive, window


# Ops tf2xla lowers to no op of their own (their result is their input's
# value in the module), and calls, whose results may be their arguments.
_FORWARDING = frozenset({"Identity", "IdentityN", "Snapshot", "EnsureShape",
                         "StopGradient", "PreventGradient"})


def _may_be_value_of(t: tf.Tensor, producer: tf.Operation,
                     depth: int = 0) -> bool:
  """Whether ``t`` may be ``producer``'s value itself in the module (through
  ops that lower to nothing of their own, or a call)."""
  op = t.op
  if op is producer:
    return True
  if depth > 64 or (op.type not in _FORWARDING
                    and op.type not in graph_lib.CALLS):
    return False
  return any(_may_be_value_of(i, producer, depth + 1) for i in op.inputs)


def stopped_inputs(graph: tf.Graph) -> Iterator[tuple[str, str, str]]:
  """The ``StopGradient``\\ s whose stop the module can make too.

  tf2xla lowers ``StopGradient`` to nothing: its consumer's ops read its
  input's value. Where that value is the one result of the op that makes
  it (the producer), the ops of each consumer's location that read a value
  of the producer's location read it through the stop, and
  :meth:`TfDerivatives.rule` gives them ``lax.stop_gradient`` of it: JAX's
  derivative of the module is then TF's gradient at every order (a Keras
  ``LayerNormalization``'s ``tf.nn.moments``). Left out (TF's gradients
  then differentiate the function, ``.exactness``): a producer of several
  results, a consumer that also reads the producer's value unstopped (or
  may: through an ``Identity``, a call), and names that occur twice in the
  graph and the functions it calls.

  The names are those of the graph that holds the nodes; tf2xla names a
  node of a called function after the call too (``call/node``), which
  :class:`TfDerivatives` matches with :func:`call_sites`.

  Args:
    graph: a ``tf.Graph`` (a concrete function's ``graph``).

  Yields:
    ``(stop, consumer, producer)`` node names, one per consumer.
  """
  ops = list(graph_lib.graph_ops(graph))
  counts = collections.Counter(op.name for op in ops)
  for op in ops:
    if op.type != "StopGradient" or counts[op.name] != 1:
      continue
    producer = op.inputs[0].op
    consumers = op.outputs[0].consumers()
    if (len(producer.outputs) != 1 or counts[producer.name] != 1
        or not consumers or any(
            counts[c.name] != 1 or any(
                t is not op.outputs[0] and _may_be_value_of(t, producer)
                for t in c.inputs)
            for c in consumers)):
      continue
    for c in consumers:
      yield op.name, c.name, producer.name


def call_sites(graph: tf.Graph) -> Iterator[str]:
  """The names of the nodes of ``graph`` and the functions it calls that
  call functions (tf2xla's prefixes of the called functions' nodes)."""
  for op in graph_lib.graph_ops(graph):
    if op.type in graph_lib.CALLS:
      yield op.name


def _result_dtype(op: stablehlo_to_jax.Op) -> np.dtype | None:
  t = op.result_types[0] if op.result_types else None
  return t.dtype if isinstance(t, stablehlo_to_jax.TensorType) else None


class TfDerivatives:
  """TF's gradients for the ops of a tf2xla module, at ties and branches.

  A ``stablehlo_to_jax.DerivativeRules``: the interpreter asks
  :meth:`rule` for each op it computes.

  Attributes:
    op_types: the TF op type of each location name of the module (tf2xla's
      metadata, ``compat.hlo_op_types``).
    stopped: for each consumer of a ``StopGradient`` the module stops too
      (:func:`stopped_inputs`), the producers whose values it reads stopped.
    calls: the names of the graph's nodes that call functions
      (:func:`call_sites`).
  """

  def __init__(self, op_types: Mapping[str, str],
               stops: Iterable[tuple[str, str, str]] = (),
               calls: Iterable[str] = ()):
    self.op_types = dict(op_types)
    stopped: dict[str, set[str]] = collections.defaultdict(set)
    for _, consumer, producer in stops:
      stopped[consumer].add(producer)
    self.stopped = {c: frozenset(p) for c, p in stopped.items()}
    self.calls = frozenset(calls)
    # The locations whose ops :meth:`rule` gave stopped operands (another
    # rule of the same location, Relu's, is no stop).
    self.stopped_at: set[str] = set()
    # (The consumers by their names' last part, for :meth:`_instance`.)
    self._by_leaf: dict[str, list[str]] = collections.defaultdict(list)
    for c in self.stopped:
      self._by_leaf[c.rsplit("/", 1)[-1]].append(c)

  def _instance(self, location: str) -> tuple[str, str] | None:
    """``(prefix, consumer)`` where ``location`` is ``prefix + consumer``,
    a consumer of :attr:`stopped` in the graph or, after the names of the
    calls that lead to it (``call/``), in a function it calls."""
    for c in self._by_leaf.get(location.rsplit("/", 1)[-1], ()):
      if location == c:
        return "", c
      prefix = location[:-len(c)]
      if location.endswith("/" + c) and any(
          prefix[:-1] == n or prefix[:-1].endswith("/" + n)
          for n in self.calls):
        return prefix, c
    return None

  def _stopped_producers(self, location: str) -> frozenset[str]:
    """The locations whose values the ops at ``location`` read stopped."""
    found = self._instance(location)
    if found is None:
      return frozenset()
    prefix, consumer = found
    return frozenset(prefix + p for p in self.stopped[consumer])

  def rule(self, op: stablehlo_to_jax.Op, compiler: stablehlo_to_jax.Compiler,
           step: stablehlo_to_jax.Step) -> stablehlo_to_jax.Step | None:
    """``op``'s step with TF's gradient (or, for :data:`EXACT_BY_RULE`,
    the derivative), where its TF op needs one; with the operands a
    ``StopGradient`` stops (:attr:`stopped`) under ``lax.stop_gradient``."""
    producers = self._stopped_producers(op.location)
    own = self._tf_gradient(op, compiler, step, producers)
    stops = frozenset(
        i for i, (v, t) in enumerate(zip(op.operands, op.operand_types))
        if isinstance(t, stablehlo_to_jax.TensorType)
        and dtypes.issubdtype(t.dtype, np.inexact)
        and (d := compiler.defining.get(v)) is not None
        and d.location in producers)
    if not stops:
      return own
    self.stopped_at.add(op.location)
    base = own or step

    def stopped(env, *xs):
      return base(env, *(lax.stop_gradient(x) if i in stops else x
                         for i, x in enumerate(xs)))
    return stablehlo_to_jax.reading(stopped,
                                    stablehlo_to_jax.read_by_id(base))

  def _tf_gradient(self, op: stablehlo_to_jax.Op,
                   compiler: stablehlo_to_jax.Compiler,
                   step: stablehlo_to_jax.Step,
                   producers: frozenset[str]
                   ) -> stablehlo_to_jax.Step | None:
    """:meth:`rule`'s step for an op of a TF op whose TF gradient is not
    JAX's derivative of the module's ops (or is, at less cost: a
    softmax's), or None. ``step`` is the interpreter's; ``producers``, the
    locations whose values the op's location reads stopped."""
    op_type = self.op_types.get(op.location)
    dtype = _result_dtype(op)
    if op_type is None or dtype is None:
      return None
    if op_type in tf_softmax.FINAL_OPS:
      return tf_softmax.step(
          op_type, op, compiler, step,
          stopped=lambda v: (d := compiler.defining.get(v)) is not None
          and d.location in producers)
    if (op_type == "Softplus" and op.name == "stablehlo.select"
        and dtypes.issubdtype(dtype, np.floating)):
      if not _softplus_input(op, compiler):
        return None  # (the inner select: the outer one's rule ignores it)
      return lambda env, p, a, b: [_softplus_select(p, a, b)]
    if EXACT_BY_RULE.get(op_type) == op.name:
      found = cumulative_window(op, compiler)
      if found is None:
        return None
      product = cumulative_product(
          *found, differentiable=dtypes.issubdtype(dtype, np.floating))
      return lambda env, x, init: [product(x)]
    if op.name == "stablehlo.select":
      found = select_of_x(op_type, dtype)
      if found is None:
        return None
      input_of, special = found
      x = input_of(op.operands[0], compiler)
      if x is None:
        return None
      # Selu's, Elu's and Erfc's: TF's gradient, from their input x.
      return stablehlo_to_jax.reading(
          lambda env, p, a, b: [special(env[x], p, a, b)], [x])
    fn = function(op_type, op.name, dtype)
    if fn is None:
      return None
    return lambda env, *xs: [fn(*xs)]

  def takes_tf_derivatives(self, record: stablehlo_to_jax.DerivativeRecord
                           ) -> bool:
    """Whether JAX's derivative of the program is TF's gradient.

    True if every op that branches or kinks in the module's function
    bodies is of a TF op whose branches JAX differentiates as TF does
    (:data:`SAFE_BRANCHES`), those of :data:`LOWERED_TO` with TF's gradient
    at ties (:meth:`rule` gave their ops a step), and none lacks a TF op
    type; and the ops of :data:`EXACT_BY_RULE` took their rule (the
    derivative where TF's gradient is wrong: the module's is then not
    TF's, but the derivative TF's gradient approximates, see
    ``.exactness``). A module without op types (not tf2xla's) takes them
    only if nothing in it branches. Every consumer of a ``StopGradient``
    in :attr:`stopped` must have had its operands stopped.
    """
    instances = {location: found for location in record.located
                 if (found := self._instance(location)) is not None}
    if ({c for _, c in instances.values()} != self.stopped.keys()
        or not instances.keys() <= self.stopped_at):
      return False  # (a stopped value read where no rule could stop it)
    for location, ops in record.located.items():
      op_type = self.op_types.get(location)
      if (EXACT_BY_RULE.get(op_type) in ops
          and location not in record.replaced):
        return False  # (a cumulative product tf2xla lowered otherwise)
    for location, name in record.branching:
      op_type = self.op_types.get(location)
      if name not in SAFE_BRANCHES.get(op_type, ()):
        return False  # a branch or kink of another TF op (or of none known)
      if op_type in LOWERED_TO and location not in record.replaced:
        return False
    for location, ops in record.located.items():
      op_type = self.op_types.get(location)
      if op_type not in LOWERED_TO:
        continue
      # (Its constants and broadcasts may be located apart from its op.)
      if (not ops <= ALLOWED[op_type]
          or (LOWERED_TO[op_type] in ops and location not in record.replaced)):
        return False
    return True
