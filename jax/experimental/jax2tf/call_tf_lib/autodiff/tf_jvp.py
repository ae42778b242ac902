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
"""TensorFlow functions of a TF function's output tangents (forward mode).

:func:`tf_jvp_function` computes the tangents with TensorFlow's own
gradients, so that registered and custom gradients hold in forward mode as
in reverse mode: ``tf.autodiff.ForwardAccumulator`` where it is exact, else
a "double VJP" of two ``tf.GradientTape``s. A tangent TF cannot compute is
an error, never a zero.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
import contextlib
import dataclasses
import re
from typing import Any

from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib import tf_overrides
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
from jax import tree_util
import tensorflow as tf

# Signatures whose choice of tangent computation is kept, per call_tf.
_MAX_SIGNATURES = 64

# The attribute TensorFlow sets on an op whose gradient is overridden: by
# ``tf.custom_gradient`` (on its ``IdentityN``, also under
# ``tf.recompute_grad`` and ``tf.grad_pass_through``) or by
# ``Graph.gradient_override_map`` (which ``tf.GradientTape`` does not read:
# both ways then give the type's registered gradient).
_GRADIENT_OVERRIDE_ATTR = "_gradient_op_type"


def gradient_override_ops(graph: tf.Graph) -> list[tuple[str, str]]:
  """The ops of ``graph`` (and the functions it calls) with custom gradients.

  Args:
    graph: a ``tf.Graph`` (a concrete function's ``graph``).

  Returns:
    ``(op_type, node_name)`` of each op whose gradient is not its type's
    registered gradient.
  """
  return [(op.type, op.name) for op in graph_lib.graph_ops(graph)
          if _GRADIENT_OVERRIDE_ATTR in op.node_def.attr]


def _accumulator_is_exact(callable_tf: Callable[..., Any],
                          flat_args: Sequence[tf.Tensor],
                          args_tree: tree_util.PyTreeDef,
                          watched: Sequence[tuple[tf.Tensor, tf.Tensor]]
                          ) -> bool:
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
  try:
    with _caching_device_kept():
      concrete = tf.function(probe, autograph=False, jit_compile=True
                             ).get_concrete_function(
                                 *specs, *[specs[i] for i in positions])
  except Exception:  # pylint: disable=broad-except
    # The double VJP then differentiates it, or raises the function's error.
    return False
  return not gradient_override_ops(concrete.graph)


@contextlib.contextmanager
def _caching_device_kept() -> Iterator[None]:
  """Restores the variable scope's caching device on the way out.

  A trace that fails in a ``tf.map_fn`` leaves the caching device
  ``map_fn`` sets on the variable scope, which graphs share with eager TF:
  every eager ``tf.compat.v1.variable_scope`` (TF Probability's ODE solvers)
  then failed ("Caching devices is not yet supported when eager execution is
  enabled").
  """
  scope = tf.compat.v1.get_variable_scope()
  caching_device = scope.caching_device
  try:
    yield
  finally:
    if scope.caching_device is not caching_device:
      with tf.Graph().as_default():  # TF sets it only outside eager mode
        scope.set_caching_device(caching_device)


def tf_jvp_function(callable_tf: Callable[..., Any]) -> Callable[..., Any]:
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
  ``callable_tf`` of its own (see :func:`_accumulator_is_exact`), and kept
  in an :class:`_AccumulatorChoices` of this function's own. Custom
  gradients are recorded as eager TF records them, as in the VJP (see
  :func:`.tf_overrides.custom_gradients_recorded_as_eagerly`).

  Args:
    callable_tf: the TF function given to ``call_tf``.

  Returns:
    ``tf_jvp_fun(args_tf, tangents_tf)``: it takes the arguments and a
    pytree of their tangents (None where an argument has none) and returns
    the tangents of the floating and complex outputs, in the order of the
    flat outputs.
  """
  choices = _AccumulatorChoices()

  def tf_jvp_fun(args_tf: Any, tangents_tf: Any) -> list[tf.Tensor]:
    return _tangents(callable_tf, choices, args_tf, tangents_tf)
  return tf_jvp_fun


# A signature of a call of the tangent function: the arguments' pytree
# structure, each flat argument's shape (None if its rank is unknown) and
# dtype, and which flat arguments have a tangent.
_SignatureKey = tuple[
    tree_util.PyTreeDef,
    tuple[tuple[tuple[int | None, ...] | None, tf.DType], ...],
    tuple[bool, ...]]


def _flat_tangents(tangents_tf: Any) -> list[tf.Tensor | None]:
  """The flat leaves of a pytree of tangents, None (no tangent) a leaf."""
  return tree_util.tree_leaves(tangents_tf, is_leaf=lambda t: t is None)


def _signature_key(args_tf: Any, tangents_tf: Any) -> _SignatureKey:
  """The signature the accumulator-or-double-VJP choice is kept for.

  Args:
    args_tf: the arguments, a pytree of TF tensors.
    tangents_tf: their tangents, the same pytree with None where an
      argument has no tangent.

  Returns:
    The hashable key of the signature (see :data:`_SignatureKey`).
  """
  flat_args, args_tree = tree_util.tree_flatten(args_tf)
  return (args_tree,
          tuple((None if a.shape.rank is None
                 else tuple(a.shape.as_list()), a.dtype) for a in flat_args),
          tuple(t is not None for t in _flat_tangents(tangents_tf)))


@dataclasses.dataclass
class _AccumulatorChoices:
  """Per signature, whether the accumulator is exact (see below).

  Bounded: past ``max_signatures`` the choices made are forgotten and made
  again as needed.

  Attributes:
    max_signatures: how many signatures' choices are kept.
    exact: per signature, True for the accumulator, False for the double VJP.
  """
  max_signatures: int = _MAX_SIGNATURES
  exact: dict[_SignatureKey, bool] = dataclasses.field(default_factory=dict)
  # Per signature, of an eager call: the gradient kernel TF does not
  # differentiate on a path from the arguments, or None (see _tangents).
  dropped: dict[_SignatureKey, str | None] = dataclasses.field(
      default_factory=dict)

  def dropped_kernel(self, key: _SignatureKey,
                     find: Callable[[], str | None]) -> str | None:
    """The kernel kept for ``key``, found with ``find()`` if none is."""
    if key not in self.dropped:
      if len(self.dropped) >= self.max_signatures:
        self.dropped.clear()
      self.dropped[key] = find()
    return self.dropped[key]

  def choose(self, key: _SignatureKey, decide: Callable[[], bool]) -> bool:
    """The choice kept for ``key``, made with ``decide()`` if there is none.

    Args:
      key: the signature.
      decide: makes the choice (True: the accumulator is exact).

    Returns:
      The choice for ``key``.
    """
    if key not in self.exact:
      if len(self.exact) >= self.max_signatures:
        self.exact.clear()
      self.exact[key] = decide()
    return self.exact[key]

  def fall_back(self, key: _SignatureKey) -> bool:
    """Chooses the double VJP for ``key`` if the accumulator was chosen.

    Args:
      key: the signature.

    Returns:
      True if the accumulator was the choice for ``key`` (now the double
      VJP); False if it was not, or no choice is kept.
    """
    if not self.exact.get(key):
      return False
    self.exact[key] = False
    return True


def _tangents(callable_tf: Callable[..., Any], choices: _AccumulatorChoices,
              args_tf: Any, tangents_tf: Any) -> list[tf.Tensor]:
  """The output tangents, with TF's overrides, its errors made ours.

  Args:
    callable_tf: the TF function.
    choices: the accumulator choices of ``callable_tf``'s tangent function.
    args_tf: the arguments, a pytree of TF tensors.
    tangents_tf: their tangents (None where an argument has none).

  Returns:
    The tangents of the floating and complex outputs, flat.

  Raises:
    errors.CallTfDerivativeError: an op on the way has no gradient of its
      gradient.
  """
  if tf.executing_eagerly():
    # Eager tensors keep no graph to look for a kernel TF does not
    # differentiate (_dense_tangent looks in a graph): a trace of its own.
    if (dropped := choices.dropped_kernel(
        _signature_key(args_tf, tangents_tf),
        lambda: _dropped_in_a_trace(callable_tf, args_tf, tangents_tf))):
      raise errors.no_tf_gradient_error(dropped, forward=True)
  with (tf_overrides.slice_gradient_outside_xla(),
        tf_overrides.custom_gradients_recorded_as_eagerly()):
    try:
      try:
        return _tangents_by_choice(callable_tf, choices, args_tf, tangents_tf)
      except TypeError as e:
        # The accumulator fails in TF's own code on some graphs (a
        # tf.while_loop whose trip count depends on the data: "`dtype`
        # <dtype: 'variant'> is not compatible with 1 of dtype int64"):
        # the double VJP, from the gradients reverse mode uses.
        if "variant" not in str(e) or not choices.fall_back(
            _signature_key(args_tf, tangents_tf)):
          raise
        return _tangents_by_choice(callable_tf, choices, args_tf, tangents_tf)
    except LookupError as e:
      # The accumulator or the double VJP differentiates an op's gradient
      # that has no gradient of its own (ResizeBicubicGrad): J t from TF's
      # reverse-mode Jacobian, which needs first-order gradients only.
      if _NO_GRADIENT_RE.search(str(e)) is None:
        raise
      return _tangents_from_jacobians(callable_tf, args_tf, tangents_tf)


def _dropped_in_a_trace(callable_tf: Callable[..., Any], args_tf: Any,
                        tangents_tf: Any) -> str | None:
  """A kernel of UNDIFFERENTIATED_GRADIENTS between the arguments with
  tangents and an output, in a trace of ``callable_tf`` (never run), or
  None (also where it does not trace: its eager call then says why)."""
  flat_args, args_tree = tree_util.tree_flatten(args_tf)
  has_tangent = [t is not None for t in _flat_tangents(tangents_tf)]
  found: list[str | None] = [None]

  def probe(*flat):
    outs = [tf.convert_to_tensor(r) for r in tf.nest.flatten(
        callable_tf(*args_tree.unflatten(list(flat))))]
    sources = [a for a, t in zip(flat, has_tangent) if t]
    for o in outs:
      if (dropped := _undifferentiated_gradient_on_path(o, sources)):
        found[0] = dropped
        break
    return outs

  specs = [tf.TensorSpec(a.shape, a.dtype) for a in flat_args]
  try:
    with _caching_device_kept():
      tf.function(probe, autograph=False).get_concrete_function(*specs)
  except Exception:  # pylint: disable=broad-except
    return None
  return found[0]


def _tangents_from_jacobians(callable_tf: Callable[..., Any], args_tf: Any,
                             tangents_tf: Any) -> list[tf.Tensor]:
  """The output tangents as TF's reverse-mode Jacobians times the tangents.

  Raises:
    errors.CallTfDerivativeError: an op on the way has no gradient at all
      (``InplaceAdd``), or a result is complex.
  """
  try:
    return _tangents_by_choice(callable_tf, None, args_tf, tangents_tf)
  except LookupError as e:
    found = _NO_GRADIENT_RE.search(str(e))
    if found is None:
      raise
    raise errors.no_tf_gradient_error(found.group(1), forward=True) from e


def _tangents_by_choice(callable_tf: Callable[..., Any],
                        choices: _AccumulatorChoices | None, args_tf: Any,
                        tangents_tf: Any) -> list[tf.Tensor]:
  """The output tangents, by the accumulator or the double VJP.

  Args:
    callable_tf: the TF function.
    choices: where the choice of the arguments' signature is kept (made
      here if it is not); None: neither way, every tangent from TF's
      reverse-mode Jacobian (see :func:`_dense_tangent`).
    args_tf: the arguments, a pytree of TF tensors.
    tangents_tf: their tangents (None where an argument has none).

  Returns:
    The dense tangents of the floating and complex outputs, flat.
  """
  flat_args, args_tree = tree_util.tree_flatten(args_tf)
  watched = [(a, t) for a, t in zip(flat_args, _flat_tangents(tangents_tf))
             if t is not None]
  sources = [a for a, _ in watched]
  exact = choices is not None and choices.choose(
      _signature_key(args_tf, tangents_tf),
      lambda: _accumulator_is_exact(callable_tf, flat_args, args_tree,
                                    watched))
  # A persistent tape beside the tangents: where TF computes no tangent
  # for an output that reverse mode finds connected (an op on the way has
  # no gradient of its gradient), the tangent is unknown, not zero.
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(sources)
    if exact:
      with tf.autodiff.ForwardAccumulator(
          sources, [t for _, t in watched]) as acc:
        res = callable_tf(*args_tf)
    else:
      res = callable_tf(*args_tf)
  outs = [tf.convert_to_tensor(r) for r in tf.nest.flatten(res)]
  outs = [r for r in outs if r.dtype.is_floating or r.dtype.is_complex]
  if not outs:
    return []
  if choices is None:
    jvps = [None] * len(outs)
  elif exact:
    jvps = [acc.jvp(r, unconnected_gradients=tf.UnconnectedGradients.NONE)
            for r in outs]
  else:
    jvps = _double_vjp(tape, outs, watched)
  return [_dense_tangent(tape, j, r, watched, i)
          for i, (j, r) in enumerate(zip(jvps, outs))]


def _double_vjp(tape: tf.GradientTape, outs: Sequence[tf.Tensor],
                watched: Sequence[tuple[tf.Tensor, tf.Tensor]]
                ) -> list[tf.Tensor | tf.IndexedSlices | None]:
  """The tangents of ``outs``: the gradient of ``<J^T u, t>`` in ``u``.

  Args:
    tape: a persistent tape that recorded ``outs`` from the watched
      arguments.
    outs: the floating and complex outputs.
    watched: ``(argument, tangent)`` pairs of the arguments with tangents.

  Returns:
    The tangent of each of ``outs``; None where TF computes none.
  """
  # The VJP is linear in the cotangents u, so the gradient with respect to
  # them is the same at any u; at u = 0 some TF gradients are not finite
  # (cumulative_logsumexp's takes the log of the cotangent), so u = 1.
  us = [tf.ones_like(r) for r in outs]
  with tf.GradientTape() as outer:
    outer.watch(us)
    vjps = tape.gradient(
        outs, [a for a, _ in watched], output_gradients=us,
        unconnected_gradients=tf.UnconnectedGradients.ZERO)
    dot = tf.add_n(_in_one_dtype(
        [tf.reduce_sum(tf.math.real(v * tf.math.conj(t))
                       if v.dtype.is_complex else v * t)
         for v, (_, t) in zip(vjps, watched)]))
  return outer.gradient(dot, us,
                        unconnected_gradients=tf.UnconnectedGradients.NONE)


def _in_one_dtype(values: Sequence[tf.Tensor]) -> list[tf.Tensor]:
  """Real scalars of several float dtypes (arguments of several precisions),
  cast to the widest of them, so that ``tf.add_n`` can sum them."""
  widest = max((v.dtype for v in values), key=lambda d: d.size)
  return [tf.cast(v, widest) for v in values]


# TF's message for an op type without a registered gradient.
_NO_GRADIENT_RE = re.compile(r"gradient registry has no entry for: (\w+)")


def _dense_tangent(tape: tf.GradientTape,
                   jvp: tf.Tensor | tf.IndexedSlices | None, out: tf.Tensor,
                   watched: Sequence[tuple[tf.Tensor, tf.Tensor]],
                   index: int) -> tf.Tensor:
  """The tangent of ``out`` as a dense tensor; zero only if it is zero.

  TF gives no tangent (None) both for an output that does not depend on the
  perturbed arguments, whose tangent is zero, and for one whose tangent its
  forward mode cannot compute: an op on the way has a gradient but no
  gradient of that gradient (``ResizeBilinear``, whose gradient
  ``ResizeBilinearGrad`` has none), or a gradient that leaves that output
  out (``FusedBatchNorm``'s takes y's cotangent only: its batch statistics
  have none). Reverse mode tells them apart: an output it finds connected
  to the arguments gets the tangent reverse mode gives it, ``J t`` with
  ``J`` TF's Jacobian (:func:`_jacobian_tangent`).

  A gradient kernel TF does not differentiate (``ResizeBilinearGrad``) on
  a path from the arguments leaves its term out of every tangent TF
  computes, connected or not (its forward mode and its reverse mode alike):
  such a tangent is refused, naming the op.

  Raises:
    errors.CallTfDerivativeError: the tangent of a complex output is
      unknown, or TF's leaves out a term (above).
  """
  if out.shape.num_elements() == 0:
    return tf.zeros(out.shape, out.dtype)  # (holds no value)
  sources = [a for a, _ in watched]
  if (dropped := _undifferentiated_gradient_on_path(out, sources)):
    raise errors.no_tf_gradient_error(dropped, forward=True)
  if jvp is not None:
    return tf.convert_to_tensor(jvp)  # a gather's gradient: IndexedSlices
  grads = tape.gradient(out, sources,
                        unconnected_gradients=tf.UnconnectedGradients.NONE)
  if all(g is None for g in grads):
    return tf.zeros_like(out)  # (unconnected: above, not through a kernel)
  if out.dtype.is_complex or any(a.dtype.is_complex for a in sources):
    raise errors.tangent_unknown_error(
        index, [] if tf.executing_eagerly()
        else _ops_without_gradient(out.graph))
  return _jacobian_tangent(tape, out, watched)


def _jacobian_tangent(tape: tf.GradientTape, out: tf.Tensor,
                      watched: Sequence[tuple[tf.Tensor, tf.Tensor]]
                      ) -> tf.Tensor:
  """``J t`` of a real output, ``J`` TF's reverse-mode Jacobian.

  One VJP per element of ``out``, in a loop of a fixed trip count (which
  XLA compiles, as it does not ``tape.jacobian``'s loop of a growing
  list): exact, as reverse mode is, and slower than TF's forward mode, so
  used only where that has no tangent.
  """
  n = out.shape.num_elements()
  if n == 0:
    return tf.zeros(out.shape, out.dtype)
  if n is None:
    raise errors.tangent_unknown_error(None, [])
  sources = [a for a, _ in watched]

  def row(i, rows):
    cotangent = tf.reshape(tf.one_hot(i, n, dtype=out.dtype), tf.shape(out))
    grads = tape.gradient(out, sources, output_gradients=cotangent,
                          unconnected_gradients=tf.UnconnectedGradients.ZERO)
    # Each argument's part in its own dtype, summed in the output's: an
    # output may have another dtype than the arguments (a bilinear
    # tf.image.resize of float64 images is float32).
    value = tf.add_n([tf.cast(tf.reduce_sum(tf.convert_to_tensor(g) * t),
                              out.dtype)
                      for g, (_, t) in zip(grads, watched)])
    return i + 1, rows.write(i, value)
  _, rows = tf.while_loop(lambda i, _: i < n, row,
                          (tf.constant(0), tf.TensorArray(out.dtype, size=n)),
                          maximum_iterations=n)
  return tf.reshape(rows.stack(), tf.shape(out))


# Gradient kernels TF declares not differentiable (tf.no_gradient) although
# they are smooth in their float inputs: the tangent of a result that
# depends on the arguments only through one is not zero, but TF's reverse
# mode finds the result unconnected (ResizeBilinearGrad: TF has no second
# derivative of a bilinear resize). Forward mode through one is refused,
# naming it, rather than zero. (Under jit, JAX's derivative of the
# function's module has that second derivative.) Each maps to the inputs
# its result is smooth in: ResizeBilinearGrad reads only the shape of its
# second input (the original image).
UNDIFFERENTIATED_GRADIENTS: dict[str, tuple[int, ...]] = {
    "ResizeBilinearGrad": (0,)}

# Ops whose result depends on their input's shape only, never its values:
# a value reached only through them does not depend on the arguments.
_SHAPE_ONLY = frozenset({"Shape", "ShapeN", "Size", "Rank", "ZerosLike",
                         "OnesLike", "BroadcastGradientArgs"})


def _undifferentiated_gradient_on_path(out: tf.Tensor,
                                       sources: Sequence[tf.Tensor]
                                       ) -> str | None:
  """The type of an op of :data:`UNDIFFERENTIATED_GRADIENTS` between
  ``sources`` and ``out`` in a graph, or None (eagerly: None).

  Only the values of an op's smooth inputs count: one that reaches the
  sources only through a shape (a bilinear resize's gradient of a linear
  function reads the image's shape) has a zero derivative, which TF's
  answer of "unconnected" gives right.
  """
  if tf.executing_eagerly() or not hasattr(out, "op"):
    return None
  source_ops = {id(s.op) for s in sources if hasattr(s, "op")}
  depends: dict[int, bool] = {}

  def reaches_sources(op: tf.Operation) -> bool:
    stack, seen = [op], set()
    while stack:
      o = stack.pop()
      if id(o) in source_ops:
        return True
      if id(o) in seen or o.type in _SHAPE_ONLY:
        continue
      seen.add(id(o))
      stack += [t.op for t in o.inputs]
    return False

  stack, seen = [out.op], set()
  while stack:
    op = stack.pop()
    if id(op) in seen:
      continue
    seen.add(id(op))
    if op.type in UNDIFFERENTIATED_GRADIENTS:
      if id(op) not in depends:
        depends[id(op)] = any(
            reaches_sources(op.inputs[i].op)
            for i in UNDIFFERENTIATED_GRADIENTS[op.type])
      if depends[id(op)]:
        return op.type
    stack += [t.op for t in op.inputs]
  return None


def _ops_without_gradient(graph: tf.Graph) -> list[str]:
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
