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
"""The batching rule (``jax.vmap``) of the ``call_tf`` primitive.

``call_tf(f, vmap_method=...)`` chooses how ``jax.vmap`` batches a call:

* ``None`` (default): TensorFlow vectorizes ``f`` with ``tf.vectorized_map``
  (pfor), one TF call for the whole batch. Where pfor cannot vectorize an op,
  the call runs sequentially if the ``jax_call_tf_slow_vmap`` option is on,
  and otherwise raises :class:`CallTfVectorizationError`, which names the op,
  the option and the other methods.
* ``"vectorized"``: as ``None``, but never falls back.
* ``"sequential"``: one call per batch element; under a staging trace a
  ``lax.map`` loop inside one program (its size does not grow with the
  batch), eagerly a Python loop of eager TF calls (no XLA needed).
* ``"expand_dims"``: one call; batched arguments carry the batch at axis 0,
  unbatched ones get a size-1 axis 0.
* ``"broadcast_all"``: one call; every argument is broadcast to the batch at
  axis 0.
* ``"batch_polymorphic"``: one call; the batch is merged into axis 0 of every
  argument (unbatched ones are broadcast first) and split out of every
  result. For functions whose arguments and results share a leading batch
  axis with independent rows, such as SavedModels exported with a polymorphic
  batch dimension.

The names follow ``jax.pure_callback``'s ``vmap_method`` where the meaning is
the same. See https://github.com/jax-ml/jax/issues/11753.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import logging
import re
import threading
from typing import Any
import weakref

from jax import lax
from jax import numpy as jnp
from jax._src import config
from jax._src import core
from jax._src import util
from jax._src.interpreters import batching
from jax.experimental.jax2tf import call_tf_compile
from jax.experimental.jax2tf import jax2tf as jax2tf_internal
import tensorflow as tf

map, unsafe_map = util.safe_map, map
zip, unsafe_zip = util.safe_zip, zip

VMAP_METHODS: tuple[str | None, ...] = (
    None, "vectorized", "sequential", "expand_dims", "broadcast_all",
    "batch_polymorphic")
ONE_CALL_METHODS: tuple[str, ...] = (
    "expand_dims", "broadcast_all", "batch_polymorphic")

_FLAG_HINT = ("the jax_call_tf_slow_vmap option (JAX_CALL_TF_SLOW_VMAP=1, "
              "jax.config.update('jax_call_tf_slow_vmap', True), or "
              "--jax_call_tf_slow_vmap)")


def check_vmap_method(vmap_method: Any) -> None:
  """Raises ``ValueError`` unless ``vmap_method`` is a known method.

  Args:
    vmap_method: the value given to ``call_tf(..., vmap_method=...)``.
  """
  if vmap_method not in VMAP_METHODS:
    raise ValueError(
        f"call_tf got vmap_method={vmap_method!r}; it must be one of "
        + ", ".join(repr(m) for m in VMAP_METHODS) + ".")


def vjp_vmap_method(vmap_method: str | None) -> str | None:
  """The ``vmap_method`` of the ``call_tf`` that computes the VJP.

  ``jax.jacrev`` is ``vmap`` of the VJP, whose ``call_tf`` takes the primal
  arguments (unbatched there) and the output cotangents (batched). With
  ``"expand_dims"`` the TF function would compute a size-1 primal output that
  does not match the batched cotangents, so the VJP broadcasts instead.

  Args:
    vmap_method: the method of the forward ``call_tf``.

  Returns:
    The method for the VJP's ``call_tf``.
  """
  return "broadcast_all" if vmap_method == "expand_dims" else vmap_method


class CallTfVectorizationError(ValueError):
  """``jax.vmap`` of ``call_tf``: TensorFlow could not vectorize the function.

  Attributes:
    op_type: the TF op type TensorFlow could not vectorize, or None if the
      error did not say.
    op_name: the name of that node in the TF graph, or None.
  """

  def __init__(self, msg: str, op_type: str | None, op_name: str | None):
    super().__init__(msg)
    self.op_type = op_type
    self.op_name = op_name


# pfor's messages (tensorflow/python/ops/parallel_for/pfor.py) are re-raised
# by tf.function as new exceptions without the original traceback, so the
# message text and pfor's error log are all there is to read the op from:
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


class _LogCapture(logging.Filter):
  """Records, and keeps off the console, TF's error log of this thread.

  pfor logs a long error before it raises; while the rule probes pfor, those
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

  def __enter__(self) -> _LogCapture:
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
  if not isinstance(e, (ValueError, NotImplementedError)):
    return None
  msg = str(e)
  if m := _NO_PFOR_RE.search(msg):
    node = _NODE_NAME_RE.search(msg[m.end():])
    return m.group(1), node.group(1) if node else None
  pfor_logs = [l for l in logs if _PFOR_LOG_PREFIX in l]
  if m := _LOOP_INVARIANT_RE.search(msg):
    for log in pfor_logs:
      op = _NODE_OP_RE.search(log)
      if op and op.group(1) == m.group(1):
        node = _NODE_NAME_RE.search(log)
        return m.group(1), node.group(1) if node else None
    return m.group(1), None
  for log in pfor_logs:  # another pfor converter error: the log names the op
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


def _describe_op(op_type: str | None, node_name: str | None) -> str:
  where = f"op '{op_type}'" if op_type else "an op"
  return where + (f" (node '{node_name}')" if node_name else "")


def _first_line(e: BaseException, keywords: Sequence[str] = ()) -> str:
  lines = [l.strip() for l in str(e).strip().splitlines() if l.strip()]
  for l in lines:
    if any(k in l for k in keywords):
      return l
  return lines[0] if lines else type(e).__name__


def _what_to_do(vmap_method: str | None) -> str:
  if vmap_method is None:
    return (
        "To run one TensorFlow call per batch element instead (a loop, "
        f"slower), pass vmap_method='sequential' to call_tf, or turn on "
        f"{_FLAG_HINT} to fall back to it automatically. If the TensorFlow "
        "function already handles a leading batch axis, one of the one-call "
        "methods vmap_method='expand_dims', 'broadcast_all' or "
        "'batch_polymorphic' makes a single call.")
  return (
      "vmap_method='vectorized' never falls back: pass "
      "vmap_method='sequential' (one call per batch element), or one of the "
      "one-call methods 'expand_dims', 'broadcast_all' or "
      "'batch_polymorphic' if the function handles a leading batch axis, or "
      f"vmap_method=None with {_FLAG_HINT}.")


def vectorization_error(op_type: str | None, node_name: str | None,
                        vmap_method: str | None,
                        cause: BaseException) -> CallTfVectorizationError:
  """The error for a function pfor cannot vectorize.

  Args:
    op_type: the op pfor could not vectorize, if known.
    node_name: its node, if known.
    vmap_method: the ``vmap_method`` of the call.
    cause: pfor's error.

  Returns:
    The error to raise, saying what to do.
  """
  return CallTfVectorizationError(
      f"jax.vmap of call_tf (vmap_method={vmap_method!r}) vectorizes the "
      "TensorFlow function with tf.vectorized_map (pfor), which cannot "
      f"vectorize {_describe_op(op_type, node_name)}. "
      f"{_what_to_do(vmap_method)}\nTensorFlow said: "
      f"{_first_line(cause, ('pfor', 'loop invariant'))}",
      op_type, node_name)


def opaque_module_error(vmap_method: str | None) -> CallTfVectorizationError:
  """The error for a vectorized vmap of an embedded jax2tf module.

  A function restored from a jax2tf SavedModel is one ``XlaCallModule`` op,
  which pfor cannot vectorize; ``call_tf`` embeds its StableHLO directly, and
  batches it the way ``vmap_method`` says.

  Args:
    vmap_method: the ``vmap_method`` of the call (None or "vectorized").

  Returns:
    The error to raise, saying what to do.
  """
  return CallTfVectorizationError(
      f"jax.vmap of call_tf (vmap_method={vmap_method!r}) of a function "
      "saved by jax2tf: it is one XlaCallModule op (serialized StableHLO), "
      "which TensorFlow's vectorizer cannot vectorize. If the saved function "
      "takes a leading batch axis whose rows are independent (jax2tf.convert "
      "with polymorphic_shapes=['(b, ...)']), vmap_method='batch_polymorphic' "
      "makes one call for the whole batch. "
      + _what_to_do(vmap_method), "XlaCallModule", None)


def xla_compile_error(op_type: str | None, node_name: str | None,
                      vmap_method: str | None,
                      cause: BaseException) -> CallTfVectorizationError:
  """The error for a vectorized function XLA cannot compile.

  Args:
    op_type: the op XLA cannot compile, if known.
    node_name: its node, if known.
    vmap_method: the ``vmap_method`` of the call.
    cause: TF's conversion error.

  Returns:
    The error to raise, saying what to do.
  """
  return CallTfVectorizationError(
      f"jax.vmap of call_tf (vmap_method={vmap_method!r}) under jax.jit: "
      "tf.vectorized_map (pfor) vectorized the TensorFlow function, but XLA "
      f"cannot compile the result: {_describe_op(op_type, node_name)}. pfor "
      "turns a tf.cond or tf.while_loop whose predicate depends on the "
      "batched values into ops with data-dependent shapes, which XLA does "
      "not support (eagerly, without jax.jit, the vectorized call works). "
      f"{_what_to_do(vmap_method)}\nTensorFlow said: {_first_line(cause)}",
      op_type, node_name)


def _slow_vmap_enabled() -> bool:
  return bool(config.call_tf_slow_vmap.value)


_CONVERSION_ERRORS = call_tf_compile.LruCache(
    "call_tf: XLA conversion of vectorized functions", 256)


def _xla_conversion_error(function_flat_tf: Callable,
                          sig: tuple[tf.TensorSpec, ...]) -> str | None:
  """Converts ``function_flat_tf`` to HLO (cached); the error message or None.

  The HLO itself is cached by ``call_tf_compile`` for the lowering to reuse.
  """
  key = (function_flat_tf, sig)
  found = _CONVERSION_ERRORS.get(key)
  if found is None:
    try:
      with jax2tf_internal.inside_call_tf():
        concrete_fn = function_flat_tf.get_concrete_function(*sig)
        call_tf_compile.compile_to_hlo(
            function_flat_tf, concrete_fn, sig,
            call_tf_compile.default_tf_platform(),
            call_tf_compile.captured_objects(concrete_fn))
      found = ("",)
    except Exception as e:  # pylint: disable=broad-except
      found = (f"{type(e).__name__}: {e}",)
    _CONVERSION_ERRORS.put(key, found)
  return found[0] or None


def _matmul_of_stacked_column(original: Callable) -> Callable:
  """A pfor converter for ``MatMul`` that keeps the batch in front.

  pfor batches ``a @ b[n]``, with ``a`` loop invariant and ``b[n]`` a
  ``(k, 1)`` column (what ``tf.linalg.matvec`` makes), by transposing the
  stacked ``b`` to ``(k, N)`` and the product back: two copies of the data
  XLA does not remove. The same product is ``b[:, :, 0] @ op(a)^T``, with the
  batch staying in axis 0. Other cases go to pfor's own converter.
  """
  from tensorflow.python.ops.parallel_for import pfor as pfor_lib  # pylint: disable=g-import-not-at-top

  def convert(pfor_input):
    a, a_stacked, _ = pfor_input.input(0)
    b, b_stacked, _ = pfor_input.input(1)
    if (b_stacked and not a_stacked
        and not pfor_input.get_attr("transpose_b")
        and b.shape.rank == 3 and b.shape[2] == 1):
      prod = tf.matmul(b[:, :, 0], a,
                       transpose_b=not pfor_input.get_attr("transpose_a"))
      return pfor_lib.wrap(prod[:, :, None], True)
    return original(pfor_input)
  return convert


# pfor's converter registry is global: the rule swaps its converters in and
# out under this lock, so that concurrent traces do not undo each other.
_PFOR_LOCK = threading.RLock()


class _PforConverters:
  """Installs our pfor converters while the batching rule traces pfor."""

  def __enter__(self) -> None:
    _PFOR_LOCK.acquire()
    self._saved = None
    try:
      from tensorflow.python.ops.parallel_for import pfor as pfor_lib  # pylint: disable=g-import-not-at-top
      registry = pfor_lib._pfor_converter_registry  # pylint: disable=protected-access
      original = registry["MatMul"]
    except (ImportError, AttributeError, KeyError):
      return  # another TF layout: pfor's converters as they are
    self._saved = (registry, original)
    registry["MatMul"] = _matmul_of_stacked_column(original)

  def __exit__(self, *exc: Any) -> None:
    try:
      if self._saved is not None:
        registry, original = self._saved
        registry["MatMul"] = original
    finally:
      _PFOR_LOCK.release()


def _tf_shape(shape: Sequence[Any]) -> tuple[int | None, ...]:
  return tuple(d if core.is_constant_dim(d) else None for d in shape)


def _python_function(callable_flat_tf: Callable) -> Callable:
  # The batched callables are tf.functions; call their Python function so
  # that nested vmap does not nest tf.function calls.
  return getattr(callable_flat_tf, "python_function", callable_flat_tf)


def _call_unchecked(callable_flat_tf: Callable,
                    args_tf: Sequence[Any]) -> list[Any]:
  """Calls the TF function without checking results against output_avals.

  The one-call methods call the function on batched shapes, which the
  unbatched ``output_shape_dtype`` check would reject.
  """
  fn = _python_function(callable_flat_tf)
  unchecked = getattr(fn, "call_unchecked", None)
  if unchecked is None:
    raise TypeError(
        "call_tf's batching rule needs callable_flat_tf.call_unchecked; "
        f"{fn!r} lacks it. This is a bug in the call_tf fork.")
  return list(unchecked(*args_tf))


def _check_batched_results(results: Sequence[Any],
                           expected: Sequence[tuple[int | None, ...]],
                           vmap_method: str | None,
                           batch_size_tf: Callable[[], Any]) -> list[Any]:
  """Checks (at trace time) the shapes the batched TF function returns.

  With ``"expand_dims"``, a size-1 axis of a result is broadcast to the
  expected size, as NumPy broadcasting would: ``x * 2`` of an unbatched
  (size-1) argument works.
  """
  if len(results) != len(expected):
    raise ValueError(
        f"jax.vmap of call_tf (vmap_method={vmap_method!r}): the batched "
        f"TensorFlow function returned {len(results)} results, expected "
        f"{len(expected)}.")
  checked = []
  for i, (r, exp) in enumerate(zip(results, expected)):
    r = tf.convert_to_tensor(r)
    if (vmap_method == "expand_dims" and r.shape.rank == len(exp)
        and any(a == 1 and e != 1 for a, e in zip(r.shape.as_list(), exp))):
      target = [e if e is not None
                else batch_size_tf() if j == 0 else tf.shape(r)[j]
                for j, e in enumerate(exp)]
      r = tf.broadcast_to(r, tf.stack(target))
    shape = r.shape
    if shape.rank is not None and (
        shape.rank != len(exp)
        or any(a is not None and e is not None and a != e
               for a, e in zip(shape.as_list(), exp))):
      where = ("merged into axis 0" if vmap_method == "batch_polymorphic"
               else "at axis 0")
      raise ValueError(
          f"jax.vmap of call_tf (vmap_method={vmap_method!r}): result {i} of "
          f"the TensorFlow function has shape {shape.as_list()}, expected "
          f"{list(exp)} (the unbatched result's shape with the batch {where})."
          " With this vmap_method the TensorFlow function must handle the "
          "batch axis itself; use vmap_method=None or 'sequential' for a "
          "function written for one example.")
    checked.append(tf.ensure_shape(r, exp))
  return checked


def stable_key(callable_tf: Any, *parts: Any) -> tuple[Any, ...] | None:
  """A key for the batching rule's caches that outlives one ``call_tf`` call.

  ``call_tf`` makes its flat callable anew on every call, so eager ``vmap``
  would trace and vectorize the TF function on every call. For a
  ``tf.function`` (or a restored function), which TF itself traces once per
  signature, the batched functions can be cached on the function instead. A
  plain Python function is not: its code may read Python state that changes
  between calls, and eagerly it runs anew each time, as upstream's does.

  Args:
    callable_tf: the TF function given to ``call_tf``.
    *parts: the rest of what determines the flat callable (hashable).

  Returns:
    A hashable key, or None if ``callable_tf`` must not be cached.
  """
  if not hasattr(callable_tf, "get_concrete_function"):
    return None
  try:
    return (weakref.ref(callable_tf), *parts)
  except TypeError:
    return None


_BATCHED_CACHE = call_tf_compile.LruCache(
    "call_tf: vectorized TF functions", 256)


def _batched_tf_functions(
    callable_flat_tf: Callable,
    vmap_method: str | None,
    is_batched: tuple[bool, ...],
    batch_arg: int,
    expected_shapes: tuple[tuple[int | None, ...], ...],
    call_tf_graph: bool,
) -> tuple[Callable, Callable]:
  """``_make_batched_tf_functions``, cached (LRU) on a stable key if any."""
  base = getattr(_python_function(callable_flat_tf), "cache_key", None)
  key = (base if base is not None else callable_flat_tf, vmap_method,
         is_batched, batch_arg, expected_shapes, call_tf_graph)
  found = _BATCHED_CACHE.get(key)
  if found is None:
    found = _make_batched_tf_functions(callable_flat_tf, vmap_method,
                                       is_batched, batch_arg, expected_shapes,
                                       call_tf_graph,
                                       key if base is not None else None)
    _BATCHED_CACHE.put(key, found)
  return found


def _make_batched_tf_functions(
    callable_flat_tf: Callable,
    vmap_method: str | None,
    is_batched: tuple[bool, ...],
    batch_arg: int,
    expected_shapes: tuple[tuple[int | None, ...], ...],
    call_tf_graph: bool,
    cache_key: tuple[Any, ...] | None,
) -> tuple[Callable, Callable]:
  """The batched ``(callable_flat_tf, function_flat_tf)`` pair for one call.

  Args:
    callable_flat_tf: the unbatched flat TF callable (a primitive param).
    vmap_method: None, "vectorized" or one of the one-call methods.
    is_batched: which flat arguments carry the batch at axis 0.
    batch_arg: an argument batched under vmap (its axis 0 is the batch).
    expected_shapes: the batched results' shapes (None for unknown sizes).
    call_tf_graph: the primitive param of the same name.
    cache_key: the stable key of these functions, for a nested vmap's cache.

  Returns:
    The callable used eagerly (a ``tf.function`` that is never compiled with
    XLA) and the ``tf.function`` used for shape inference and lowering.
  """
  inner = _python_function(callable_flat_tf)
  n_out = len(expected_shapes)

  def batch_size_tf(args_tf):
    if expected_shapes and expected_shapes[0] and expected_shapes[0][0]:
      return expected_shapes[0][0]
    return tf.shape(args_tf[batch_arg])[0]

  if vmap_method in (None, "vectorized"):
    def impl(args_tf, check: bool) -> list[Any]:
      unbatched, batched = util.partition_list(list(is_batched), list(args_tf))

      def body(elems):
        res = inner(*util.merge_lists(list(is_batched), unbatched,
                                      list(elems)))
        if n_out == 0:
          # pfor needs an output. The body's stateful ops (a tf.print) still
          # run: tf.function orders them by its automatic control deps.
          return (tf.zeros((), tf.int32),)
        return tuple(res)

      with _PforConverters():
        res = tf.vectorized_map(body, tuple(batched),
                                fallback_to_while_loop=False, warn=False)
      res = [] if n_out == 0 else list(res)
      if check:
        res = _check_batched_results(res, expected_shapes, vmap_method,
                                     lambda: batch_size_tf(args_tf))
      return res
  else:
    def impl(args_tf, check: bool) -> list[Any]:
      res = _call_unchecked(inner, args_tf)
      if check:
        res = _check_batched_results(res, expected_shapes, vmap_method,
                                     lambda: batch_size_tf(args_tf))
      return res

  def batched_flat_tf(*args_tf):
    return impl(args_tf, check=True)
  batched_flat_tf.call_unchecked = lambda *args_tf: impl(args_tf, check=False)
  batched_flat_tf.cache_key = cache_key
  batched_flat_tf.__name__ = (
      f"{getattr(inner, '__name__', 'callable_flat_tf')}_vmap_"
      f"{vmap_method or 'default'}")
  eager_fn = tf.function(batched_flat_tf, autograph=False, jit_compile=False)
  staged_fn = tf.function(batched_flat_tf, autograph=False,
                          jit_compile=not call_tf_graph)
  return eager_fn, staged_fn


def _sequential(prim: core.Primitive, args: Sequence[Any],
                is_batched: Sequence[bool], axis_size: Any,
                out_avals: Sequence[core.ShapedArray],
                params: dict[str, Any]) -> list[Any]:
  """One unbatched call per batch element; batched args have it at axis 0."""
  unbatched, batched = util.partition_list(list(is_batched), list(args))

  def one(elems):
    return prim.bind(*util.merge_lists(list(is_batched), unbatched,
                                       list(elems)), **params)

  # Under a staging trace, or for a symbolic batch size: a loop inside the
  # program, whose size does not grow with the batch. (The arguments being
  # tracers does not tell: under nested eager vmap they are BatchTracers.)
  if core.unsafe_am_i_under_a_jit() or not core.is_constant_dim(axis_size):
    return list(lax.map(one, batched))
  # Eagerly: a Python loop of eager TF calls, in batch order; lax.map would
  # stage the loop out and need XLA to compile the TF function.
  per_element = [one([b[i] for b in batched]) for i in range(axis_size)]
  if not per_element:
    return [jnp.zeros((0, *a.shape), a.dtype) for a in out_avals]
  return [jnp.stack(outs) for outs in unsafe_zip(*per_element)]


def call_tf_batching_rule(
    prim: core.Primitive,
    axis_data: batching.AxisData,
    args: Sequence[Any],
    dims: Sequence[int | None],
    *,
    vmap_method: str | None,
    **params: Any,
) -> tuple[list[Any], list[int | None]]:
  """Batches ``call_tf_p`` along the vmap axis, as ``vmap_method`` says.

  Registered in ``batching.fancy_primitive_batchers``, for ``axis_data``:
  its size may be symbolic under shape polymorphism.

  Args:
    prim: ``call_tf_p``.
    axis_data: the vmap axis.
    args: the flat arguments; batched ones at ``dims[i]``.
    dims: each argument's batch dimension, or None.
    vmap_method: see the module docstring.
    **params: the other ``call_tf_p`` params (``callable_flat_tf``,
      ``function_flat_tf``, ``args_flat_sig_tf``, ``output_avals``,
      ``has_side_effects``, ``ordered``, ``call_tf_graph``).

  Returns:
    The batched results and their batch dimensions (all 0).
  """
  check_vmap_method(vmap_method)
  axis_size = axis_data.size
  all_params = dict(params, vmap_method=vmap_method)
  if all(d is None for d in dims):
    outs = prim.bind(*args, **all_params)
    return list(outs), [None] * len(outs)

  slow_ok = vmap_method is None and _slow_vmap_enabled()
  if params["ordered"] and vmap_method != "sequential" and not slow_ok:
    raise NotImplementedError(
        "jax.vmap of call_tf with ordered=True must keep the order of the "
        "calls, one per batch element: pass vmap_method='sequential' to "
        f"call_tf, or turn on {_FLAG_HINT} (got vmap_method="
        f"{vmap_method!r}).")

  is_batched = tuple(d is not None for d in dims)
  args = [batching.moveaxis(a, d, 0) if d is not None else a
          for a, d in zip(args, dims)]
  unbatched_in_avals = [
      core.mapped_aval(axis_size, 0, core.typeof(a)) if b else core.typeof(a)
      for a, b in zip(args, is_batched)]
  # Traces the unbatched TF function in graph mode (no XLA); cached.
  out_avals, _ = prim.abstract_eval(*unbatched_in_avals, **all_params)
  out_avals = list(out_avals)

  def sequential() -> tuple[list[Any], list[int | None]]:
    outs = _sequential(prim, args, is_batched, axis_size, out_avals,
                       all_params)
    return outs, [0] * len(outs)

  if vmap_method == "sequential" or (params["ordered"] and slow_ok):
    return sequential()

  # The other methods make one TF call on batched shapes.
  if not core.is_constant_dim(axis_size) and not params["call_tf_graph"]:
    if slow_ok:
      return sequential()
    raise ValueError(
        f"jax.vmap of call_tf with the symbolic batch size {axis_size} and "
        f"vmap_method={vmap_method!r} would compile the TensorFlow function "
        "with XLA for an unknown batch size, and XLA needs static shapes. "
        "Pass vmap_method='sequential' (a loop of calls with static shapes), "
        "or, under jax2tf.convert, call_tf_graph=True (TensorFlow then runs "
        "the function at the actual batch size).")

  if vmap_method in (None, "vectorized", "expand_dims", "broadcast_all"):
    if vmap_method in (None, "vectorized"):
      new_args = args
    else:
      size = axis_size if vmap_method == "broadcast_all" else 1
      new_args = [a if b else batching.broadcast(
                      a, size, 0, axis_data.explicit_mesh_axis)
                  for a, b in zip(args, is_batched)]
    new_out_avals = [core.unmapped_aval(axis_size, 0, a) for a in out_avals]
  else:
    assert vmap_method == "batch_polymorphic", vmap_method
    for kind, avals in (("argument", unbatched_in_avals),
                        ("result", out_avals)):
      for i, a in enumerate(avals):
        if not a.shape:
          raise ValueError(
              "jax.vmap of call_tf with vmap_method='batch_polymorphic' "
              "merges the batch into axis 0 of every argument and result, "
              f"but {kind} {i} is a scalar ({a.str_short()}). Use another "
              "vmap_method, or give the function a leading batch axis.")
    new_args = [
        jnp.reshape(batching.bdim_at_front(a, 0 if b else None, axis_size,
                                           axis_data.explicit_mesh_axis),
                    (axis_size * u.shape[0], *u.shape[1:]))
        for a, b, u in zip(args, is_batched, unbatched_in_avals)]
    new_out_avals = [a.update(shape=(axis_size * a.shape[0], *a.shape[1:]))
                     for a in out_avals]

  vectorized = vmap_method in (None, "vectorized")
  eager_fn, staged_fn = _batched_tf_functions(
      params["callable_flat_tf"], vmap_method,
      is_batched if vectorized else (True,) * len(args),
      is_batched.index(True),
      tuple(_tf_shape(a.shape) for a in new_out_avals),
      params["call_tf_graph"])
  new_sig = tuple(tf.TensorSpec(_tf_shape(core.typeof(a).shape), s.dtype)
                  for a, s in zip(new_args, params["args_flat_sig_tf"]))
  new_params = dict(all_params, callable_flat_tf=eager_fn,
                    function_flat_tf=staged_fn, args_flat_sig_tf=new_sig,
                    output_avals=tuple(new_out_avals))

  if vectorized:
    # Trace the vectorized function now (graph mode, no XLA): pfor fails
    # here, where falling back is still possible, eagerly and under jit. It
    # fills the concrete-function cache that abstract eval and lowering use.
    with _LogCapture() as logs:
      try:
        prim.abstract_eval(*map(core.typeof, new_args), **new_params)
      except Exception as e:  # pylint: disable=broad-except
        failure = pfor_failure(e, logs.messages)
        if failure is None:
          raise
        if slow_ok:
          return sequential()
        raise vectorization_error(*failure, vmap_method, e) from e
    if core.unsafe_am_i_under_a_jit() and not params["call_tf_graph"]:
      # Ops pfor emits may not compile with XLA (DynamicStitch for a tf.cond
      # on a batched predicate). Convert now, to fall back or explain; if the
      # unbatched function does not convert either, the lowering reports it.
      err = _xla_conversion_error(staged_fn, new_sig)
      if err is not None and _xla_conversion_error(
          params["function_flat_tf"],
          tuple(params["args_flat_sig_tf"])) is None:
        if slow_ok:
          return sequential()
        cause = ValueError(err)
        raise xla_compile_error(*xla_failure(err), vmap_method,
                                cause) from cause

  outs = list(prim.bind(*new_args, **new_params))
  if vmap_method == "batch_polymorphic":
    outs = [jnp.reshape(o, (axis_size, *a.shape))
            for o, a in zip(outs, out_avals)]
  return outs, [0] * len(outs)
