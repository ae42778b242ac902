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
"""The values of the variables and tensors a TF function captures.

``call_tf`` passes them to the compiled function as operands. In TF2 eager
mode, and while a ``tf.function`` is traced (``tf.init_scope`` lifts out of
it), they are read directly. In TF1 graph mode (``tf.compat.v1``, a
``Session``) only the session that owns them can read them:
:func:`read_captured_values` uses the default session, or else the only open
session on their graph, and never runs initializers, which would replace
restored or assigned weights with their initial values.

See https://github.com/jax-ml/jax/issues/11753.
"""

from __future__ import annotations

from collections.abc import Sequence
import gc
import logging
import weakref

from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import errors
import numpy as np
import tensorflow as tf


def captured_objects(concrete_fn: tf.types.experimental.ConcreteFunction
                     ) -> tuple[tf.Variable | tf.Tensor, ...]:
  """The inputs a concrete function captures, as objects one can read.

  Found once per concrete function (its captures do not change once it is
  traced): a model captures hundreds of variables, and every step of a
  first call (checks, cache keys, the lowering) asks.

  Args:
    concrete_fn: a ``tf.types.experimental.ConcreteFunction``.

  Returns:
    For each of its captured inputs, in order: the ``tf.Variable`` whose
    handle it is, or the captured tensor itself.

  Raises:
    ValueError: a captured resource belongs to no variable of the function.
  """
  try:
    return _CAPTURED[concrete_fn]
  except (KeyError, TypeError):
    pass
  found = _captured_objects(concrete_fn)
  try:
    _CAPTURED[concrete_fn] = found
  except TypeError:  # not weakly referenceable: not kept
    pass
  return found


_CAPTURED: weakref.WeakKeyDictionary[
    tf.types.experimental.ConcreteFunction,
    tuple[tf.Variable | tf.Tensor, ...]] = weakref.WeakKeyDictionary()


# The logger of call_tf's own messages (upstream's warning was its).
_CALL_TF_LOGGER = logging.getLogger("jax.experimental.jax2tf.call_tf")
# How many captured inputs the warning names.
_NAMED = 5
_WARNED: weakref.WeakSet[tf.types.experimental.ConcreteFunction] = (
    weakref.WeakSet())


def warn_about_captures(concrete_fn: tf.types.experimental.ConcreteFunction
                        ) -> None:
  """Warns, once per function, that it captures variables or tensors.

  Formatted by ``logging`` (only where a handler shows it), with how many
  it captures and the first names, not every captured input's text.

  Args:
    concrete_fn: the traced function, which captures inputs.
  """
  try:
    if concrete_fn in _WARNED:
      return
    _WARNED.add(concrete_fn)
  except TypeError:  # not weakly referenceable: warned each time
    pass
  objects = captured_objects(concrete_fn)
  nr_variables = sum(isinstance(c, tf.Variable) for c in objects)
  names = [getattr(c, "name", "?") for c in objects[:_NAMED]]
  _CALL_TF_LOGGER.warning(
      "call_tf works best with a TensorFlow function that does not capture "
      "variables or tensors from the context. See "
      "https://github.com/jax-ml/jax/blob/main/jax/experimental/jax2tf/"
      "README.md#limitations-of-call_tf for a discussion. The function "
      "captures %d variables and %d tensors: %s%s", nr_variables,
      len(objects) - nr_variables, ", ".join(names),
      ", ..." if len(objects) > _NAMED else "")


def _captured_objects(concrete_fn: tf.types.experimental.ConcreteFunction
                      ) -> tuple[tf.Variable | tf.Tensor, ...]:
  """:func:`captured_objects`, found: each variable by its handle."""
  by_handle: dict[int, list[tf.Variable]] = {}
  for v in concrete_fn.variables:
    by_handle.setdefault(id(v.handle), []).append(v)
  res = []
  for inp in concrete_fn.captured_inputs:
    if inp.dtype == tf.resource:  # A variable: look it up by its handle.
      found = by_handle.get(id(inp), [])
      if len(found) != 1:
        raise errors.captured_resource_error(inp, len(found))
      res.append(found[0])
    else:
      res.append(inp)
  return tuple(res)


def keep_constants_constant() -> None:
  """Makes the small tensors the function being traced captures constants.

  Called by ``call_tf``'s flat callable where it traces the TF function: an
  eager tensor the function uses (``k = tf.constant(3)``, then
  ``tf.math.top_k(x, k)``) is a constant of its graph, but TF passes it to
  the function as an argument too, and XLA then compiled ``top_k``'s result
  to a dynamic size (under ``jax.jit`` a refusal, and for its derivatives
  "Error compiling TensorFlow function") where TF's own ``jit_compile``
  runs it. Eager tensors do not change, so the constant is the value.
  Variables and large tensors stay captured; eagerly nothing is traced.
  """
  if not tf.executing_eagerly():
    compat.uncapture_constants(tf.compat.v1.get_default_graph())


def executing_eagerly_outside_functions() -> bool:
  """Whether the program is in TF2 eager mode (not in a TF1 graph)."""
  with tf.init_scope():
    return tf.executing_eagerly()


def _find_session(graph: tf.Graph
                  ) -> tuple[tf.compat.v1.Session | None, int]:
  """The open ``tf.compat.v1.Session`` on ``graph`` that holds its state.

  The default session if it is on ``graph``, else the only open session on
  ``graph``. Never a new session: it would see uninitialized variables.

  Returns:
    The session or None, and how many open sessions are on ``graph`` (when
    there is no default session on it).
  """
  sess = tf.compat.v1.get_default_session()
  if sess is not None and sess.graph is graph and compat.session_is_open(sess):
    return sess, 1
  # No default session on the graph: look for the one open session. TF keeps
  # no registry of sessions, so this scans the heap, once per lowering that
  # needs it.
  candidates = [o for o in gc.get_objects()
                if isinstance(o, tf.compat.v1.Session) and o.graph is graph
                and compat.session_is_open(o)]
  return (candidates[0] if len(candidates) == 1 else None), len(candidates)


# Per session, the values last read for each variable or tensor of its graph:
# a VJP lowered inside tf.gradients (graph locked) uses the forward's values.
_SNAPSHOTS: weakref.WeakKeyDictionary[
    tf.compat.v1.Session, dict[str, np.ndarray]] = (
    weakref.WeakKeyDictionary())


def _snapshot_key(v: tf.Variable | tf.Tensor) -> str:
  return v.handle.name if isinstance(v, tf.Variable) else v.name


def _read_in_graph_mode(values: Sequence[tf.Variable | tf.Tensor]
                        ) -> list[np.ndarray]:
  graphs = {id(v.graph): v.graph for v in values}
  names = [getattr(v, "name", str(v)) for v in values]
  if len(graphs) != 1:
    raise errors.captures_in_several_graphs_error(names)
  graph, = graphs.values()
  sess, open_sessions = _find_session(graph)
  if sess is None:
    raise errors.no_session_error(names, open_sessions)
  keys = [_snapshot_key(v) for v in values]
  if compat.graph_locked_for_mutation(graph):
    snapshot = _SNAPSHOTS.get(sess, {})
    missing = [n for n, k in zip(names, keys) if k not in snapshot]
    if missing:
      raise errors.graph_locked_error(missing)
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
    raise errors.uninitialized_variables_error(uninitialized) from None
  _SNAPSHOTS.setdefault(sess, {}).update(zip(keys, res))
  return res


def read_captured_values(captured: Sequence[tf.Variable | tf.Tensor]
                         ) -> list[np.ndarray]:
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
      return [_read_eagerly(v) for v in captured]
  return _read_in_graph_mode(captured)


def _read_eagerly(value: tf.Variable | tf.Tensor) -> np.ndarray:
  """An eager variable's or tensor's value, as a NumPy array.

  A plain resource variable (what ``tf.Variable`` makes eagerly, and Keras's
  TensorFlow backend holds) is read by its ``ReadVariableOp`` alone:
  ``np.asarray`` reads it through ``read_value``'s Python layers and an
  ``Identity``, twice the time or more (a ViT's 66 variables in
  ``call_tf``'s first call: 17-24 ms against 8-10 ms; every call that
  passes them pays it), into a read-only view of the read's buffer
  (``compat.read_only_numpy_view``: no copy). Any other kind (a
  distributed variable, a tensor) is read as NumPy reads it.
  """
  if compat.is_plain_resource_variable(value):
    return compat.read_only_numpy_view(tf.raw_ops.ReadVariableOp(
        resource=value.handle, dtype=value.dtype))
  return np.asarray(value)
