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
"""TensorFlow's vectorizer (``tf.vectorized_map``, pfor), and its failures.

:func:`vectorized_map` runs pfor without its fallback to a while loop (a slow
path must never be silent), with converters of our own wrapping pfor's: a
better one for ``MatMul``, function calls that find their function in an
outer graph, ``DepthwiseConv2dNative`` with a shared kernel,
``FusedBatchNormV3`` with TF's batch statistics in inference; and
converters for ops pfor has none for (``Svd``, ``Qr``,
``MatrixDeterminant``, the resize ops and their gradients,
``CumulativeLogsumexp``, ``ScatterNd``, ``TensorScatterAdd`` and its kin,
``FusedBatchNorm``, ``V2`` and their gradients, ``InplaceAdd``,
``InplaceSub``, ``InplaceUpdate``). pfor's own wrappers are traced without
autograph, and TF's deprecation checks are off while it runs.
:func:`pfor_failure` and :func:`xla_failure` read the op that pfor or tf2xla
failed on out of their messages, which is all TensorFlow gives: pfor's errors
are re-raised by ``tf.function`` as new exceptions without the original.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
import contextlib
import logging
import re
import threading
from typing import Any

from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import tf_overrides
import tensorflow as tf

# pfor's messages (tensorflow/python/ops/parallel_for/pfor.py):
#   "No pfor vectorization defined for {op_type}\n{node_def}..."
#   "Input {name} of op '{op_type}' expected to be (not) loop invariant."
_NO_PFOR_RE = re.compile(r"No pfor vectorization defined for ([\w.>-]+)")
_LOOP_INVARIANT_RE = re.compile(
    r"of op '([\w.>-]+)' expected to be (?:not )?loop invariant")
_NODE_NAME_RE = re.compile(r'name: "([^"]+)"')
_NODE_OP_RE = re.compile(r'op: "([^"]+)"')
_PFOR_LOG_PREFIX = "Got error while pfor was converting op"
# tf2xla's messages for ops it cannot compile.
_XLA_NO_KERNEL_RE = re.compile(r"No registered '([\w.>-]+)' OpKernel")
_XLA_NODE_RE = re.compile(r"\{\{node ([^}]+)\}\}")


class LogCapture(logging.Filter):
  """Records, and keeps off the console, TF's error log of this thread.

  pfor logs a long error before it raises; while pfor is traced, those
  records are read for the op's name instead. Other threads' records pass.
  """

  def __init__(self):
    super().__init__()
    self.messages: list[str] = []
    self._thread = threading.get_ident()

  def filter(self, record: logging.LogRecord) -> bool:
    if record.thread == self._thread and record.levelno >= logging.ERROR:
      self.messages.append(record.getMessage())
      return False
    return True

  def __enter__(self) -> LogCapture:
    tf.get_logger().addFilter(self)
    return self

  def __exit__(self, *exc: Any) -> None:
    tf.get_logger().removeFilter(self)


def pfor_failure(e: BaseException, logs: Sequence[str] = ()
                 ) -> tuple[str | None, str | None] | None:
  """Reads ``(op_type, node_name)`` out of a pfor vectorization failure.

  Args:
    e: the exception raised while tracing ``tf.vectorized_map(...,
      fallback_to_while_loop=False)``.
    logs: TF error log messages recorded while tracing.

  Returns:
    ``(op_type, node_name)`` (either may be None) if ``e`` is a pfor failure,
    else None.
  """
  pfor_logs = [l for l in logs if _PFOR_LOG_PREFIX in l]
  if not isinstance(e, (ValueError, NotImplementedError)):
    # A converter that fails otherwise (a TypeError converting a TensorList
    # loop's gradient) is a failure to vectorize too, if pfor logged it.
    return (_logged_op(pfor_logs) or (None, None)) if pfor_logs else None
  msg = str(e)
  if m := _NO_PFOR_RE.search(msg):
    node = _NODE_NAME_RE.search(msg[m.end():])
    return m.group(1), node.group(1) if node else None
  if m := _LOOP_INVARIANT_RE.search(msg):
    for log in pfor_logs:
      op = _NODE_OP_RE.search(log)
      if op and op.group(1) == m.group(1):
        node = _NODE_NAME_RE.search(log)
        return m.group(1), node.group(1) if node else None
    return m.group(1), None
  return _logged_op(pfor_logs)  # another converter error: the log names it


def _logged_op(pfor_logs: Sequence[str]
               ) -> tuple[str | None, str | None] | None:
  """``(op_type, node_name)`` of the first op pfor's error logs name."""
  for log in pfor_logs:
    if op := _NODE_OP_RE.search(log):
      node = _NODE_NAME_RE.search(log)
      return op.group(1), node.group(1) if node else None
  return None


def xla_failure(e: BaseException | str) -> tuple[str | None, str | None]:
  """Reads ``(op_type, node_name)`` out of a tf2xla conversion error.

  Args:
    e: the error TF raised converting a function to HLO, or its message.

  Returns:
    The op type and node name the message mentions (either may be None).
  """
  msg = str(e)
  kernel, node = _XLA_NO_KERNEL_RE.search(msg), _XLA_NODE_RE.search(msg)
  node_name = node.group(1) if node else None
  op_type = (kernel.group(1) if kernel
             else node_name.rsplit("/", 1)[-1] if node_name else None)
  return op_type, node_name


def _matmul_of_stacked_column(original: Callable[[Any], Any]
                              ) -> Callable[[Any], Any]:
  """A pfor converter for ``MatMul`` that keeps the batch in front.

  pfor batches ``a @ b[n]``, with ``a`` loop invariant and ``b[n]`` a
  ``(k, 1)`` column (what ``tf.linalg.matvec`` makes), by transposing the
  stacked ``b`` to ``(k, N)`` and the product back: two copies of the data
  XLA does not remove. The same product is ``b[:, :, 0] @ op(a)^T``, with the
  batch staying in axis 0. Other cases go to pfor's own converter.
  """
  def convert(pfor_input):
    a, a_stacked, _ = pfor_input.input(0)
    b, b_stacked, _ = pfor_input.input(1)
    if (b_stacked and not a_stacked
        and not pfor_input.get_attr("transpose_b")
        and b.shape.rank == 3 and b.shape[2] == 1):
      prod = tf.matmul(b[:, :, 0], a,
                       transpose_b=not pfor_input.get_attr("transpose_a"))
      return compat.pfor_wrap(prod[:, :, None], True)
    return original(pfor_input)
  return convert


def _call_of_outer_function(original: Callable[[Any], Any]
                            ) -> Callable[[Any], Any]:
  """pfor's converter for ops that call functions, finding those of outer
  graphs.

  pfor looks the called function up in the call op's own graph. A call that
  pfor copied into a function it builds (converting the body of a call, it
  copies a loop-invariant call as it is) names a function that only an outer
  graph has: vectorizing a vectorized function, such as ``jacfwd`` of
  ``jacfwd``, whose tangents ``tf.autodiff.ForwardAccumulator`` computes
  with function calls, then failed with ``AttributeError: 'NoneType' object
  has no attribute 'graph'``. The function is added to the call's graph:
  the graph pfor converts, which may be a cached concrete function's (an
  inner ``vmap``'s vectorized function). Adding a function definition to
  its library changes nothing else in it.
  """
  def convert(pfor_input):
    for name in _called_function_names(pfor_input.op):
      compat.add_function_from_outer_graphs(pfor_input.op.graph, name)
    return original(pfor_input)
  return convert


def _called_function_names(op: Any) -> list[str]:
  """The functions an op calls: a call's ``f``, a branch's, a loop's."""
  names = []
  for attr in op.node_def.attr.values():
    if attr.HasField("func"):
      names.append(attr.func.name)
    names += [f.name for f in attr.list.func]
  return names


def _depthwise_conv_of_stacked_images(original: Callable[[Any], Any]
                                      ) -> Callable[[Any], Any]:
  """A pfor converter for ``DepthwiseConv2dNative`` with a shared kernel.

  pfor's own requires stacked images and kernel (it folds the batch into
  the channels), and refused ``tf.nn.depthwise_conv2d`` of a batch of images
  with one kernel, the usual case: then the batch is folded into the
  images'. Shared images are stacked for pfor's own.
  """
  def convert(pfor_input):
    _, kernel_stacked, _ = pfor_input.input(1)
    if kernel_stacked:
      pfor_input.stack_inputs([0])
      return original(pfor_input)
    images = _flatten_batch(pfor_input.stacked_input(0))
    out = tf.raw_ops.DepthwiseConv2dNative(
        input=images, filter=pfor_input.unstacked_input(1),
        **_attrs(pfor_input, "strides", "padding", "explicit_paddings",
                 "data_format", "dilations"))
    return compat.pfor_wrap(
        _unflatten_batch(out, pfor_input.pfor.loop_len_vector), True)
  return convert


def _check_of_invariant_tensor(original: Callable[[Any], Any]
                               ) -> Callable[[Any], Any]:
  """A pfor converter for ``CheckNumerics`` of a loop-invariant tensor.

  pfor converts a stateful op even where no input is stacked, and its own
  converter for ``CheckNumerics`` wants a stacked one: ``jax.jacfwd`` of a
  function that checks its input (its tangent function checks the primal,
  which only the tangents' batch leaves unbatched) was refused. The tensor
  is checked once, as the unbatched call checks it.
  """
  def convert(pfor_input):
    _, stacked, _ = pfor_input.input(0)
    if stacked:
      return original(pfor_input)
    return compat.pfor_wrap(tf.raw_ops.CheckNumerics(
        tensor=pfor_input.unstacked_input(0),
        message=pfor_input.get_attr("message")), False)
  return convert


def _fused_batch_norm_statistics(original: Callable[[Any], Any]
                                 ) -> Callable[[Any], Any]:
  """pfor's converter for ``FusedBatchNormV3``, with TF's kernel's batch
  statistics in inference.

  In inference (``is_training`` False) pfor's converter returns zeros for
  the batch mean and variance results ("CPU outputs zero", its comment
  says); TF's kernels (and XLA) return the mean and variance inputs, the
  running statistics, which ``jax.vmap`` then gave as zeros. Here they are
  those inputs again. (In training, and for the reserve spaces, which TF's
  kernel leaves undefined in inference, pfor's converter is kept.)
  """
  def convert(pfor_input):
    outputs = original(pfor_input)
    n = len(pfor_input.outputs)
    if pfor_input.get_attr("is_training"):
      return outputs[:n]
    return [outputs[0], compat.pfor_wrap(pfor_input.unstacked_input(3), False),
            compat.pfor_wrap(pfor_input.unstacked_input(4), False),
            *outputs[3:n]]
  return convert


# Our converters, each wrapping pfor's own for that op type.
_CONVERTERS = {
    "MatMul": _matmul_of_stacked_column,
    # (Also the branches of a tf.cond and the bodies of a loop: the
    # AssertGuard of tf.debugging.assert_* in a tangent function.)
    **{op: _call_of_outer_function for op in (
        "PartitionedCall", "StatefulPartitionedCall", "If", "StatelessIf",
        "Case", "StatelessCase", "While", "StatelessWhile")},
    "DepthwiseConv2dNative": _depthwise_conv_of_stacked_images,
    "CheckNumerics": _check_of_invariant_tensor,
    "FusedBatchNormV3": _fused_batch_norm_statistics,
}


# Converters for ops pfor has none for (TF 2.21), each computing the op on
# the stacked inputs with the same kernels: ops that take leading batch
# dimensions, ops on a batch of images whose batch axis takes pfor's too,
# and scatters whose indices get the iteration's index in front. Each is
# used only while TF has no converter of its own for the op.

def _attrs(pfor_input: Any, *names: str) -> dict[str, Any]:
  return {n: pfor_input.get_attr(n) for n in names}


def _flatten_batch(t: Any) -> Any:
  """``t`` of shape ``(N, b, ...)`` as ``(N * b, ...)``."""
  shape = tf.shape(t)
  return tf.reshape(t, tf.concat([[-1], shape[2:]], 0))


def _unflatten_batch(t: Any, loop_len_vector: Any) -> Any:
  """``t`` of shape ``(N * b, ...)`` as ``(N, b, ...)``."""
  shape = tf.shape(t)
  return tf.reshape(t, tf.concat(
      [tf.cast(loop_len_vector, shape.dtype), [-1], shape[1:]], 0))


def _batched_linalg(op: Callable[..., Any], *attrs: str,
                    stacked_outputs: Callable[[Any], Sequence[bool]]
                    | None = None) -> Callable[[Any], Any]:
  """A converter for an op of matrices with leading batch dimensions."""
  def convert(pfor_input):
    kw = _attrs(pfor_input, *attrs)
    outs = op(pfor_input.stacked_input(0), **kw)
    if not isinstance(outs, (tuple, list)):
      return compat.pfor_wrap(outs, True)
    stacked = (stacked_outputs(kw) if stacked_outputs
               else (True,) * len(outs))
    return [compat.pfor_wrap(o, b) for o, b in zip(outs, stacked)]
  return convert


def _svd(input, compute_uv, full_matrices):  # pylint: disable=redefined-builtin
  return tuple(tf.raw_ops.Svd(input=input, compute_uv=compute_uv,
                              full_matrices=full_matrices))


def _qr(input, full_matrices):  # pylint: disable=redefined-builtin
  return tuple(tf.raw_ops.Qr(input=input, full_matrices=full_matrices))


def _matrix_determinant(input):  # pylint: disable=redefined-builtin
  return tf.raw_ops.MatrixDeterminant(input=input)


# Resize ops and their gradients: op -> (the raw op, the names of its
# inputs, which of them are image batches).
_RESIZE = {
    "ResizeBilinear": (tf.raw_ops.ResizeBilinear, ("images", "size"),
                       (True, False)),
    "ResizeNearestNeighbor": (tf.raw_ops.ResizeNearestNeighbor,
                              ("images", "size"), (True, False)),
    "ResizeBicubic": (tf.raw_ops.ResizeBicubic, ("images", "size"),
                      (True, False)),
    "ResizeArea": (tf.raw_ops.ResizeArea, ("images", "size"), (True, False)),
    "ResizeBilinearGrad": (tf.raw_ops.ResizeBilinearGrad,
                           ("grads", "original_image"), (True, True)),
    "ResizeBicubicGrad": (tf.raw_ops.ResizeBicubicGrad,
                          ("grads", "original_image"), (True, True)),
    "ResizeNearestNeighborGrad": (tf.raw_ops.ResizeNearestNeighborGrad,
                                  ("grads", "size"), (True, False)),
}


def _resize(pfor_input: Any) -> Any:
  """Resize ops of a batch of images: pfor's batch folded into theirs."""
  op, names, images = _RESIZE[pfor_input.op_type]
  pfor_input.stack_inputs([i for i, image in enumerate(images) if image])
  args = {name: _flatten_batch(pfor_input.stacked_input(i)) if image
          else pfor_input.unstacked_input(i)
          for i, (name, image) in enumerate(zip(names, images))}
  attrs = [a.name for a in pfor_input.op.op_def.attr if a.name != "T"]
  out = op(**args, **_attrs(pfor_input, *attrs))
  return compat.pfor_wrap(
      _unflatten_batch(out, pfor_input.pfor.loop_len_vector), True)


def _cumulative_logsumexp(pfor_input: Any) -> Any:
  """As pfor's ``Cumsum``: the axis shifted past the batch."""
  t = pfor_input.stacked_input(0)
  axis = pfor_input.unstacked_input(1)
  axis += tf.cast(axis >= 0, axis.dtype)
  return compat.pfor_wrap(tf.raw_ops.CumulativeLogsumexp(
      x=t, axis=axis, **_attrs(pfor_input, "exclusive", "reverse")), True)


def _with_iteration_index(indices: Any, loop_len_vector: Any) -> Any:
  """Stacked scatter indices ``(N, ..., k)`` with the iteration in front."""
  shape = tf.shape(indices)
  n = tf.cast(loop_len_vector[0], indices.dtype)
  iteration = tf.reshape(tf.range(n), tf.concat(
      [[-1], tf.ones([tf.rank(indices) - 1], shape.dtype)], 0))
  iteration = tf.broadcast_to(iteration, tf.concat([shape[:-1], [1]], 0))
  return tf.concat([iteration, indices], -1)


def _scatter_nd(pfor_input: Any) -> Any:
  """``ScatterNd`` of stacked indices or updates into one output each."""
  pfor_input.stack_inputs([0, 1])
  n = pfor_input.pfor.loop_len_vector
  shape = pfor_input.unstacked_input(2)
  indices = _with_iteration_index(pfor_input.stacked_input(0), n)
  return compat.pfor_wrap(tf.raw_ops.ScatterNd(
      indices=indices, updates=pfor_input.stacked_input(1),
      shape=tf.concat([tf.cast(n, shape.dtype), shape], 0)), True)


def _tensor_scatter(op: Callable[..., Any]) -> Callable[[Any], Any]:
  """``TensorScatter{Add,Sub,Max,Min}``, as pfor's ``TensorScatterUpdate``."""
  def convert(pfor_input):
    pfor_input.stack_inputs([0, 1, 2])
    indices = _with_iteration_index(pfor_input.stacked_input(1),
                                    pfor_input.pfor.loop_len_vector)
    return compat.pfor_wrap(op(tensor=pfor_input.stacked_input(0),
                               indices=indices,
                               updates=pfor_input.stacked_input(2)), True)
  return convert


def _swap_leading(t: tf.Tensor) -> tf.Tensor:
  """``t`` with its first two axes swapped."""
  rank = tf.rank(t)
  return tf.transpose(t, tf.concat([[1, 0], tf.range(2, rank)], 0))


def _inplace(op: Callable[..., Any]) -> Callable[[Any], Any]:
  """``InplaceAdd``/``Sub``/``Update`` of rows ``i`` (loop invariant): the
  op on the stacked tensors with pfor's axis second."""
  def convert(pfor_input):
    if pfor_input.input(1)[1]:
      raise ValueError(f"No pfor vectorization defined for "
                       f"{pfor_input.op_type} with per-element rows")
    pfor_input.stack_inputs([0, 2])
    out = op(x=_swap_leading(pfor_input.stacked_input(0)),
             i=pfor_input.unstacked_input(1),
             v=_swap_leading(pfor_input.stacked_input(2)))
    return compat.pfor_wrap(_swap_leading(out), True)
  return convert


def _check_numerics_v2(pfor_input: Any) -> Any:
  """``CheckNumericsV2``: the (stacked or invariant) tensor, checked."""
  t, stacked, _ = pfor_input.input(0)
  return compat.pfor_wrap(tf.raw_ops.CheckNumericsV2(
      tensor=t, message=pfor_input.get_attr("message")), stacked)


def _draws_per_element(pfor_input: Any) -> Any:
  """A stateless random op with a stacked seed, key or counter: one draw per
  element, in a loop of the op alone.

  pfor's own converters of the first stateless random ops do this: each
  element draws the numbers its own seed gives (the eager call's), which
  one batched op cannot. ``tf.random.stateless_*`` now make a key and a
  counter of the seed (``StatelessRandomGetKeyCounter``) and draw with the
  ``V2`` ops, which pfor has no converter for: a seed computed from the data
  was refused. XLA batches such draws the same way (one per key).
  """
  return compat.pfor_fallback_converter()(pfor_input, warn=False)


def _as_version_3(op_type: str) -> Callable[[Any], Any]:
  """A converter for ``FusedBatchNorm``/``V2`` (and their gradients): the
  ``V3`` op's converter, which creates the op of its input's own type."""
  def convert(pfor_input):
    registry = compat.pfor_converter_registry() or {}
    if op_type not in registry:
      raise ValueError(f"No pfor vectorization defined for {op_type}")
    return registry[op_type](pfor_input)
  return convert


# The stateless random ops of TF 2.21 that take a seed, key or counter as
# an input; pfor converts them only where one of those is stacked.
_STATELESS_RANDOM_V2 = (
    "StatelessRandomGetKeyCounter", "StatelessRandomGetKeyCounterAlg",
    "StatelessRandomNormalV2", "StatelessRandomUniformV2",
    "StatelessRandomUniformIntV2", "StatelessRandomUniformFullIntV2",
    "StatelessTruncatedNormalV2", "StatelessRandomGammaV3",
    "StatelessShuffle")


_NEW_CONVERTERS = {
    "CheckNumericsV2": _check_numerics_v2,
    **{op: _draws_per_element for op in _STATELESS_RANDOM_V2},
    "Svd": _batched_linalg(
        _svd, "compute_uv", "full_matrices",
        stacked_outputs=lambda kw: (True, kw["compute_uv"],
                                    kw["compute_uv"])),
    "Qr": _batched_linalg(_qr, "full_matrices"),
    "MatrixDeterminant": _batched_linalg(_matrix_determinant),
    **{op: _resize for op in _RESIZE},
    "CumulativeLogsumexp": _cumulative_logsumexp,
    "ScatterNd": _scatter_nd,
    "TensorScatterAdd": _tensor_scatter(tf.raw_ops.TensorScatterAdd),
    "TensorScatterSub": _tensor_scatter(tf.raw_ops.TensorScatterSub),
    "TensorScatterMax": _tensor_scatter(tf.raw_ops.TensorScatterMax),
    "TensorScatterMin": _tensor_scatter(tf.raw_ops.TensorScatterMin),
    "InplaceAdd": _inplace(tf.raw_ops.InplaceAdd),
    "InplaceSub": _inplace(tf.raw_ops.InplaceSub),
    "InplaceUpdate": _inplace(tf.raw_ops.InplaceUpdate),
    **{op: _as_version_3("FusedBatchNormV3")
       for op in ("FusedBatchNorm", "FusedBatchNormV2")},
    **{op: _as_version_3("FusedBatchNormGradV3")
       for op in ("FusedBatchNormGrad", "FusedBatchNormGradV2")},
}


def inlined(concrete_fn: tf.types.experimental.ConcreteFunction
            ) -> Callable[..., list[tf.Tensor]] | None:
  """``concrete_fn`` called by copying its graph into the caller's.

  pfor converts a function call by building a new function and copying
  every op of the called graph into it, those that do not depend on the loop
  (constants, most of a VJP's forward pass under ``jacrev``'s ``vmap``)
  included, one Python op creation each; a vectorized function called by an
  outer ``vmap`` is copied and converted again. Copied into the loop body
  with ``tf.graph_util.import_graph_def`` (in C++, all at once), its ops are
  converted in place: pfor leaves the ops that do not depend on the loop as
  they are, and creates only the batched ones. The first
  ``jit(vmap(jacrev(f)))`` call of the benchmarks' energy spends about 40%
  less time in pfor (742 -> 464 ms, medians of 7 fresh processes on a
  loaded machine; ``benchmarks/results/first-call-inline``).

  Args:
    concrete_fn: a traced TF function.

  Returns:
    A function of the arguments that returns the flat outputs, or None if
    the graph calls functions (control flow, nested ``tf.function``s): pfor
    converts those ops by looking their functions up in the graph's own
    function registry, where an imported function would not be what it
    expects, so those are called instead.
  """
  graph = concrete_fn.graph
  graph_def = graph.as_graph_def()
  if _calls_functions(graph_def):
    return None
  # The argument (and capture) placeholders are left out: their uses get the
  # values instead (a placeholder left in would reach XLA, which rejects it).
  input_ops = {t.op.name for t in graph.inputs}
  nodes = _needed_nodes(graph_def, [t.name for t in graph.outputs], input_ops)
  used = _used_tensors(nodes, input_ops)
  if used is None:
    return None
  del graph_def.node[:]
  graph_def.node.extend(nodes)
  return _importing_call(concrete_fn, graph_def, nodes, used)


def _needed_nodes(graph_def: tf.compat.v1.GraphDef, outputs: Sequence[str],
                  input_ops: set[str]) -> list[tf.compat.v1.NodeDef]:
  """The nodes the ``outputs`` need, but the inputs' (colocations dropped).

  Only the ops the outputs need: pfor leaves the ops it converted in the
  graph it converts in place, unused (an inner vmap's, eagerly traced).
  """
  by_name = {n.name: n for n in graph_def.node}
  needed, stack = set(), [o.split(":")[0] for o in outputs]
  while stack:
    name = stack.pop()
    if name not in needed and name in by_name:
      needed.add(name)
      stack.extend(i.lstrip("^").split(":")[0] for i in by_name[name].input)
  nodes = [n for n in graph_def.node
           if n.name in needed and n.name not in input_ops]
  kept = {n.name for n in nodes}
  for node in nodes:
    _drop_colocation_with(node, {n for n in by_name if n not in kept})
  return nodes


def _used_tensors(nodes: Sequence[tf.compat.v1.NodeDef], input_ops: set[str]
                  ) -> set[str] | None:
  """The tensors ``nodes`` read, or None if one waits on an input op."""
  used = set()
  for node in nodes:
    for name in node.input:
      if name.startswith("^"):
        if name[1:] in input_ops:  # a control edge from an argument
          return None
      else:
        used.add(name if ":" in name else name + ":0")
  return used


def _importing_call(concrete_fn: tf.types.experimental.ConcreteFunction,
                    graph_def: tf.compat.v1.GraphDef,
                    nodes: Sequence[tf.compat.v1.NodeDef], used: set[str]
                    ) -> Callable[..., list[tf.Tensor]]:
  """The function that imports ``graph_def`` (of ``nodes``) into the caller's
  graph."""
  graph = concrete_fn.graph
  inputs = [t.name for t in graph.inputs]
  outputs = [t.name for t in graph.outputs]
  imported = [o for o in outputs if o not in inputs]
  captured = list(concrete_fn.captured_inputs)
  variables = list(concrete_fn.variables)

  def call(*args: tf.Tensor) -> list[tf.Tensor]:
    # Identity brings each value into the current graph (capturing those of
    # outer graphs, a variable's handle too), where the import can use it.
    values = dict(zip(inputs, (tf.identity(v) for v in (*args, *captured))))
    # As a call would: the graphs being built learn the variables they use
    # (call_tf's lowering looks a captured handle up among them).
    compat.watch_variables(variables)
    returned = tf.graph_util.import_graph_def(
        graph_def, input_map={k: v for k, v in values.items() if k in used},
        return_elements=imported + [n.name for n in nodes], name="call")
    # Imported ops have no stack trace, which pfor's error log reads.
    compat.set_stack_traces(returned[len(imported):])
    results = dict(zip(imported, returned))
    return [values[o] if o in values else results[o] for o in outputs]
  return call


def _drop_colocation_with(node: Any, names: set[str]) -> None:
  """Removes ``node``'s colocation constraints with the ops ``names``.

  A gradient graph colocates ops with the tensors they differentiate (a
  ``tf.gather``'s gradient: ``Shape`` with its argument, or with an op of
  the forward pass). The argument placeholders and the ops the outputs do
  not need are not imported, so such a constraint would name an unknown
  node, which ``import_graph_def`` refuses ("expects to be colocated with
  unknown node"). Colocation is a placement hint; the values the imported
  ops get are where the caller has them.
  """
  if "_class" not in node.attr:
    return
  kept = [c for c in node.attr["_class"].list.s
          if not (c.startswith(b"loc:@") and c[5:].decode() in names)]
  if kept:
    del node.attr["_class"].list.s[:]
    node.attr["_class"].list.s.extend(kept)
  else:
    del node.attr["_class"]


def _calls_functions(graph_def: Any) -> bool:
  return bool(graph_def.library.function or graph_def.library.gradient)


def calls_functions(concrete_fn: Any) -> bool:
  """Whether a traced TF function calls functions (:func:`inlined` refuses).

  Args:
    concrete_fn: a traced TF function.
  """
  return _calls_functions(concrete_fn.graph.as_graph_def())


def converts_calls_of_outer_functions() -> bool:
  """Whether pfor, as we run it, converts a call of an outer graph's function.

  False if TF moved pfor's converter registry: then the vectorized function
  must not call functions of the unbatched trace (see
  :func:`.rule._batched_tf_functions`).
  """
  registry = compat.pfor_converter_registry()
  return registry is not None and all(
      op in registry for op, converter in _CONVERTERS.items()
      if converter is _call_of_outer_function)


# The modules whose closures pfor wraps in tf.function.
_PFOR_MODULES = ("tensorflow.python.ops.parallel_for.",)


class _DefFunctionWithoutAutograph:
  """TF's ``def_function`` module, as pfor sees it while we vectorize.

  pfor wraps closures of its own in ``def_function.function``, with
  autograph on: the loop, under XLA (``control_flow_ops.pfor``), and each
  function call and while loop it converts. Autograph converting them reads
  and transforms pfor's source, the largest part of a first call's pfor
  (measured: 50 ms of a 64-128-1 MLP's first call under ``jit(vmap)``, 90 ms
  under ``jacrev``), and changes nothing they build: their calls are to TF's
  own functions, which autograph does not convert. The one difference is the
  autograph status the loop body runs under, where it runs Python (the
  vectorized methods call the unbatched trace instead, unless TF moved
  pfor's converter registry): disabled, as when call_tf traces the
  unbatched function (``tf.function(autograph=False)``) and as pfor runs it
  outside XLA; TF-internal ``tf_convert`` users (``tf.map_fn`` bodies) then
  see the same status batched and unbatched. Functions of other modules (a
  user's ``pfor_config.reduce``) and other threads' pfor keep TF's default.
  """

  def __init__(self, module: Any):
    self._module = module
    self._thread = threading.get_ident()

  def __getattr__(self, name: str) -> Any:
    return getattr(self._module, name)

  def function(self, func: Any = None, **kwargs: Any) -> Any:
    if (threading.get_ident() == self._thread and func is not None
        and str(getattr(func, "__module__", None) or "").startswith(
            _PFOR_MODULES)):
      kwargs.setdefault("autograph", False)
    return self._module.function(func, **kwargs)


# pfor's converter registry and def_function are global: they are swapped in
# and out under this lock, so that concurrent traces do not undo each other.
_PFOR_LOCK = threading.RLock()


@contextlib.contextmanager
def _converters() -> Iterator[None]:
  """While pfor traces: our converters, pfor's wrappers without autograph.

  Also TF's deprecation checks off, as pfor copies every loop-invariant op
  with the deprecated ``Graph.create_op`` (see
  :func:`.tf_overrides.tf_deprecation_checks_off`). That setting is global to
  the process: other threads' TF calls log no deprecation warning while it
  lasts. Everything is restored on exit, after an error too.
  """
  with (_PFOR_LOCK, tf_overrides.tf_deprecation_checks_off(),
        contextlib.ExitStack() as undo):
    for module in compat.pfor_modules_wrapping_functions():
      original = module.def_function
      if not isinstance(original, _DefFunctionWithoutAutograph):  # reentry
        module.def_function = _DefFunctionWithoutAutograph(original)
        undo.callback(setattr, module, "def_function", original)
    registry = compat.pfor_converter_registry()
    if registry is not None:  # else another TF layout: pfor's own converters
      originals = {op: registry[op] for op in _CONVERTERS if op in registry}
      undo.callback(registry.update, originals)
      for op, original in originals.items():
        registry[op] = _CONVERTERS[op](original)
      for op, converter in _NEW_CONVERTERS.items():
        if op not in registry:
          registry[op] = converter
          undo.callback(registry.pop, op, None)
    yield


def vectorized_map(body: Callable[[Any], Any], batched: Sequence[Any]
                   ) -> Any:
  """``tf.vectorized_map`` without its silent fallback to a while loop.

  Args:
    body: the per-element function of the batched arguments (a tuple).
    batched: the batched arguments, batch at axis 0.

  Returns:
    What ``tf.vectorized_map`` returns.
  """
  with _converters():
    return tf.vectorized_map(body, tuple(batched),
                             fallback_to_while_loop=False, warn=False)
