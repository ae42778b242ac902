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
"""Compiling a TF function for ``call_tf``, in every TensorFlow mode.

``call_tf`` embeds a TF function in a JAX computation by compiling it to HLO,
and passes the values of the variables and tensors it captures as extra
operands. This module does both in TF2 eager mode, while a ``tf.function`` is
being traced, and in TF1 graph mode (``tf.compat.v1``, a ``Session``):

* :func:`read_captured_values` reads captured values; in graph mode through
  the session that owns them, never by running initializers (which would
  replace restored or assigned weights with their initial values).
* :func:`compile_to_hlo` compiles the function for static argument shapes;
  in graph mode it re-imports the function's graph into an eager
  ``tf.function`` first, since TF compiles only eager functions.
* :func:`check_tensorflow_version`: the compiler API ``call_tf`` uses takes
  ``platform_name`` only from TF 2.16.

See https://github.com/jax-ml/jax/issues/11753.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
import functools
import gc
import re
import threading
from typing import Any
import weakref

from jax._src import util
import numpy as np
import tensorflow as tf

MIN_TENSORFLOW = (2, 16)


class LruCache:
  """A small thread-safe LRU cache that ``jax.clear_caches()`` clears.

  The call_tf modules cache TF functions, HLO and exported modules across
  traces; these caches hold TF objects alive, so they are bounded and take
  part in JAX's cache management.
  """

  def __init__(self, name: str, maxsize: int):
    self._data: collections.OrderedDict[Any, Any] = collections.OrderedDict()
    self._maxsize = maxsize
    self._lock = threading.Lock()
    self.hits = self.misses = 0
    util.register_cache(self, name)

  def get(self, key: Any) -> Any | None:
    """The value of ``key`` (most recently used now), or None."""
    with self._lock:
      value = self._data.get(key)
      if value is None:
        self.misses += 1
      else:
        self.hits += 1
        self._data.move_to_end(key)
      return value

  def put(self, key: Any, value: Any) -> None:
    """Stores ``value``, evicting the least recently used entry if full."""
    with self._lock:
      self._data[key] = value
      self._data.move_to_end(key)
      while len(self._data) > self._maxsize:
        self._data.popitem(last=False)

  def cache_clear(self) -> None:
    with self._lock:
      self._data.clear()

  def cache_info(self) -> tuple[int, int, int, int]:
    return (self.hits, self.misses, self._maxsize, len(self._data))

  def cache_keys(self) -> list[Any]:
    with self._lock:
      return list(self._data)


def default_tf_platform() -> str:
  """The TF platform name ("CPU", "GPU", "TPU") of JAX's default backend."""
  import jax  # pylint: disable=g-import-not-at-top
  return {"cpu": "CPU", "gpu": "GPU", "cuda": "GPU", "rocm": "GPU",
          "tpu": "TPU"}.get(jax.default_backend(), "CPU")


class CallTfUninitializedVariablesError(ValueError):
  """``call_tf`` needs the value of a TF1 variable that is not initialized."""


class CallTfTensorFlowVersionError(ImportError):
  """The installed TensorFlow is older than ``call_tf`` supports."""


def _verified_tensorflow_range() -> str | None:
  """The TF range this jax build was verified with (its `tensorflow` extra)."""
  try:
    from importlib import metadata  # pylint: disable=g-import-not-at-top
    requires = metadata.requires("jax") or []
  except Exception:  # pylint: disable=broad-except
    return None
  for req in requires:
    if 'extra == "tensorflow"' in req and req.startswith("tensorflow"):
      return req.split(";", 1)[0].strip()
  return None


@functools.cache
def check_tensorflow_version(version: str | None = None) -> None:
  """Raises unless TensorFlow ``version`` (default: the installed) is new enough.

  Args:
    version: a TensorFlow version string such as "2.21.0"; by default
      ``tf.__version__``.

  Raises:
    CallTfTensorFlowVersionError: naming the version found and the one needed.
  """
  version = version or tf.__version__
  m = re.match(r"(\d+)\.(\d+)", version)
  if m is None or (int(m.group(1)), int(m.group(2))) >= MIN_TENSORFLOW:
    return
  verified = _verified_tensorflow_range()
  raise CallTfTensorFlowVersionError(
      f"jax2tf.call_tf needs TensorFlow {MIN_TENSORFLOW[0]}."
      f"{MIN_TENSORFLOW[1]} or newer, but TensorFlow {version} is installed. "
      "call_tf compiles TensorFlow functions with "
      "experimental_get_compiler_ir(...)(platform_name=...), which TensorFlow "
      f"added in {MIN_TENSORFLOW[0]}.{MIN_TENSORFLOW[1]}. Upgrade TensorFlow"
      + (f"; this jax was verified with {verified} (pip install "
         f"'{verified}', or install jax with the extra [tensorflow])."
         if verified else "."))


def captured_objects(concrete_fn: Any) -> list[Any]:
  """The inputs a concrete function captures, as objects one can read.

  Args:
    concrete_fn: a ``tf.types.experimental.ConcreteFunction``.

  Returns:
    For each of its captured inputs, in order: the ``tf.Variable`` whose
    handle it is, or the captured tensor itself.

  Raises:
    ValueError: a captured resource belongs to no variable of the function.
  """
  res = []
  for inp in concrete_fn.captured_inputs:
    if inp.dtype == tf.resource:  # A variable: look it up by its handle.
      found = [v for v in concrete_fn.variables if inp is v.handle]
      if len(found) != 1:
        raise ValueError(
            f"call_tf: cannot find the variable of the captured resource "
            f"{inp} (found {len(found)}).")
      res.append(found[0])
    else:
      res.append(inp)
  return res


def _executing_eagerly_outside_functions() -> bool:
  with tf.init_scope():
    return tf.executing_eagerly()


def _find_session(graph: tf.Graph) -> tuple[Any, int]:
  """The open ``tf.compat.v1.Session`` on ``graph`` that holds its state.

  The default session if it is on ``graph``, else the only open session on
  ``graph``. Never a new session: it would see uninitialized variables.

  Returns:
    The session or None, and how many open sessions are on ``graph`` (when
    there is no default session on it).
  """
  sess = tf.compat.v1.get_default_session()
  if sess is not None and sess.graph is graph and not sess._closed:  # pylint: disable=protected-access
    return sess, 1
  # No default session on the graph (rare): look for the one open session.
  # This scans the heap, once per lowering that needs it.
  candidates = [o for o in gc.get_objects()
                if isinstance(o, tf.compat.v1.Session) and o.graph is graph
                and not o._closed]  # pylint: disable=protected-access
  return (candidates[0] if len(candidates) == 1 else None), len(candidates)


def _graph_locked_for_mutation(graph: tf.Graph) -> bool:
  """Whether ``graph`` is being mutated (e.g. inside ``tf.gradients``).

  ``Session.run`` then waits for the lock held by our own caller.
  """
  try:
    from tensorflow.python.framework import ops as tf_ops  # pylint: disable=g-import-not-at-top
    counts = graph._group_lock._group_member_counts  # pylint: disable=protected-access
    return counts[tf_ops._MUTATION_LOCK_GROUP] > 0  # pylint: disable=protected-access
  except (AttributeError, ImportError, IndexError):
    return False


# Per session, the values last read for each variable or tensor of its graph:
# a VJP lowered inside tf.gradients (graph locked) uses the forward's values.
_SNAPSHOTS: weakref.WeakKeyDictionary[Any, dict[str, np.ndarray]] = (
    weakref.WeakKeyDictionary())


def _snapshot_key(v: Any) -> str:
  return v.handle.name if isinstance(v, tf.Variable) else v.name


def _read_in_graph_mode(values: Sequence[Any]) -> list[np.ndarray]:
  graphs = {id(v.graph): v.graph for v in values}
  names = [getattr(v, "name", str(v)) for v in values]
  if len(graphs) != 1:
    raise ValueError(f"call_tf: the captured variables and tensors {names} "
                     "belong to different graphs; use one graph.")
  graph, = graphs.values()
  sess, open_sessions = _find_session(graph)
  if sess is None:
    found = (f"{open_sessions} open sessions are on their graph and none is "
             "the default session" if open_sessions
             else "no open session on their graph was found")
    raise ValueError(
        f"call_tf needs the values of the TF1 variables or tensors {names} "
        "that the TensorFlow function captures, and in graph mode only the "
        f"tf.compat.v1.Session holding them can read them, but {found}. "
        "Convert or lower the JAX function inside `with sess.as_default():` "
        "(or `with tf.compat.v1.Session(graph=g) as sess:`) for the session "
        "where the variables are initialized or restored.")
  keys = [_snapshot_key(v) for v in values]
  if _graph_locked_for_mutation(graph):
    snapshot = _SNAPSHOTS.get(sess, {})
    missing = [n for n, k in zip(names, keys) if k not in snapshot]
    if missing:
      raise ValueError(
          f"call_tf cannot read the TF1 variables or tensors {missing} while "
          "their graph is locked for mutation (inside tf.gradients), and no "
          "earlier lowering read them. Convert the forward function before "
          "taking its gradient.")
    return [snapshot[k] for k in keys]
  try:
    # Variables are fetched through their own graph elements: reading them
    # adds no ops to the user's graph.
    res = [np.asarray(r) for r in sess.run(list(values))]
  except tf.errors.FailedPreconditionError:
    variables = [v for v in values if isinstance(v, tf.Variable)]
    with graph.as_default():
      ops = {n.decode() for n in sess.run(
          tf.compat.v1.report_uninitialized_variables(variables))}
    uninitialized = [v.name for v in variables if v.op.name in ops]
    if not uninitialized:
      raise
    raise CallTfUninitializedVariablesError(
        f"call_tf needs the values of the TF1 variables {uninitialized}, "
        "which are not initialized in their session. Run "
        "`sess.run(tf.compat.v1.global_variables_initializer())`, or restore "
        "them (`tf.compat.v1.train.Saver().restore(sess, path)`), before "
        "converting or lowering the JAX function. call_tf does not run "
        "initializers itself: that would replace restored or assigned "
        "values with initial ones.")
  _SNAPSHOTS.setdefault(sess, {}).update(zip(keys, res))
  return res


def read_captured_values(captured: Sequence[Any]) -> list[np.ndarray]:
  """Reads the current values of the variables and tensors a function captures.

  Works in TF2 eager mode, while a ``tf.function`` is traced (it lifts out
  with ``tf.init_scope``), and in TF1 graph mode, through the session that
  owns the graph.

  Args:
    captured: ``tf.Variable``s and tensors, as :func:`captured_objects`
      returns them.

  Returns:
    Their values as NumPy arrays, in order.

  Raises:
    CallTfUninitializedVariablesError: a TF1 variable is not initialized.
    ValueError: in TF1 graph mode, no open session holds the values.
  """
  if not captured:
    return []
  with tf.init_scope():
    if tf.executing_eagerly():
      return [np.asarray(v) for v in captured]
  return _read_in_graph_mode(captured)


def _compile_eager(function_flat_tf: Any, concrete_fn: Any,
                   specs: Sequence[tf.TensorSpec], platform: str) -> bytes:
  try:
    from tensorflow.python.eager.polymorphic_function import compiler_ir  # pylint: disable=g-import-not-at-top
  except ImportError:
    compiler_ir = None
  if compiler_ir is not None and hasattr(compiler_ir,
                                         "from_concrete_function"):
    # Specialize the concrete function to `specs`: through the tf.function,
    # TF may pick a more general trace (a restored function's (None, 4)) and
    # then refuse to compile it.
    return compiler_ir.from_concrete_function(concrete_fn, list(specs))(
        stage="hlo_serialized", platform_name=platform)
  return function_flat_tf.experimental_get_compiler_ir(*specs)(
      stage="hlo_serialized", platform_name=platform)


def _compile_graph_mode(concrete_fn: Any, specs: Sequence[tf.TensorSpec],
                        platform: str, captured: Sequence[Any]
                        ) -> tuple[bytes, list[int]]:
  """Compiles a function traced in a TF1 graph, by re-importing it eagerly.

  The function body (with its function library) is imported into a new
  ``tf.function`` built in eager mode: arguments bind to new arguments,
  captured tensors to extra arguments, captured variables to eager stand-in
  variables of the same shape and dtype. Their values do not matter: call_tf
  passes the values read through the session as operands.
  """
  from tensorflow.python.eager import context as tf_context  # pylint: disable=g-import-not-at-top
  graph = concrete_fn.graph
  graph_def = graph.as_graph_def()
  internal = list(graph.internal_captures)
  arg_placeholders = list(graph.inputs[:len(graph.inputs) - len(internal)])
  if len(arg_placeholders) != len(specs):
    raise ValueError(f"call_tf: the function takes {len(arg_placeholders)} "
                     f"arguments, but {len(specs)} were given.")
  # The placeholders we rebind must go, or XLA would try to compile them;
  # colocation attributes may name nodes of the outer graph.
  rebound = {t.op.name for t in [*arg_placeholders, *internal]}
  kept = [n for n in graph_def.node if n.name not in rebound]
  del graph_def.node[:]
  graph_def.node.extend(kept)
  for node in graph_def.node:
    if "_class" in node.attr:
      del node.attr["_class"]
  out_names = [t.name for t in graph.outputs]
  resources = [(i, k) for k, i in enumerate(internal)
               if i.dtype == tf.resource]
  tensors = [(i, k) for k, i in enumerate(internal)
             if i.dtype != tf.resource]
  with tf_context.eager_mode():
    stand_ins = [tf.Variable(tf.zeros(captured[k].shape,
                                      captured[k].dtype.base_dtype),
                             trainable=False) for _, k in resources]

    def body(*args):
      input_map = {p.name: a for p, a in zip(arg_placeholders, args)}
      for (i, _), a in zip(tensors, args[len(arg_placeholders):]):
        input_map[i.name] = a
      func_graph = tf.compat.v1.get_default_graph()
      for (i, _), v in zip(resources, stand_ins):
        input_map[i.name] = func_graph.capture(v.handle)
      return tf.graph_util.import_graph_def(
          graph_def, input_map=input_map, return_elements=out_names, name="")

    fn = tf.function(body, jit_compile=True, autograph=False)
    all_specs = [*specs, *(tf.TensorSpec(captured[k].shape, captured[k].dtype)
                           for _, k in tensors)]
    hlo = fn.experimental_get_compiler_ir(*all_specs)(
        stage="hlo_serialized", platform_name=platform)
    order = []
    for c in fn.get_concrete_function(*all_specs).captured_inputs:
      idx = [j for j, v in enumerate(stand_ins) if c is v.handle]
      order.append(resources[idx[0]][1])
  # The HLO takes the arguments, the captured tensors, then the variables.
  return hlo, [*(k for _, k in tensors), *order]


def compile_to_hlo(function_flat_tf: Any, concrete_fn: Any,
                   specs: Sequence[tf.TensorSpec], platform: str,
                   captured: Sequence[Any]) -> tuple[bytes, list[int]]:
  """Compiles a TF function to serialized HLO, in any TF execution mode.

  Args:
    function_flat_tf: the ``tf.function(jit_compile=True)`` of the call.
    concrete_fn: its concrete function for ``specs``.
    specs: static ``tf.TensorSpec``s of the arguments.
    platform: "CPU", "GPU" or "TPU".
    captured: ``captured_objects(concrete_fn)``.

  Returns:
    The serialized HLO, and for each HLO parameter after the arguments, the
    index of its value in ``captured``.
  """
  check_tensorflow_version()
  if _executing_eagerly_outside_functions():
    return (_compile_eager_cached(function_flat_tf, concrete_fn, tuple(specs),
                                  platform), list(range(len(captured))))
  return _compile_graph_mode(concrete_fn, specs, platform, captured)


# Under jit, the batching rule compiles the vectorized function to probe XLA
# compatibility, and the lowering compiles it again: the concrete function
# follows from the function and the specs, so the HLO is shared.
_HLO_CACHE = LruCache("call_tf: HLO of TF functions", 128)


def _compile_eager_cached(function_flat_tf: Any, concrete_fn: Any,
                          specs: tuple[tf.TensorSpec, ...],
                          platform: str) -> bytes:
  key = (function_flat_tf, specs, platform)
  hlo = _HLO_CACHE.get(key)
  if hlo is None:
    hlo = _compile_eager(function_flat_tf, concrete_fn, specs, platform)
    _HLO_CACHE.put(key, hlo)
  return hlo
