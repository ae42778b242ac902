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
"""The TF traces of ``call_tf``, and when one is reused.

The rule is upstream's, and JAX's own for Python functions: the TF function
runs as Python, and so reads Python state, whenever JAX traces the call
(each ``jax.jit`` trace, each eager ``jax.vmap`` call) and on every eager
call. Every form of a call made in one JAX trace (its value, its VJP, its
JVP, its batched forms) is derived from TF traces made then, so they agree
with each other. Calling a ``tf.function`` follows TensorFlow's own rule for
it: it traces once per input signature, and later calls reuse that trace,
eagerly too.

One call of a ``call_tf`` made in one JAX trace is traced once: the JVP
rule and its differentiability probe read the TF trace that the call's
primal made (:class:`CallTraces`), also where JAX differentiates the call
after tracing it (``jax.grad`` of a ``jax.jit``, ``jax.checkpoint`` or
``lax.scan`` holding it). The reuse is keyed to the call itself (a
``CallTraces`` per call, carried by the ``custom_jvp`` as a static argument,
so that it reaches the JVP rule however late JAX calls it), never to an
earlier call: a new JAX trace of the call is a new call, and traces again.
Where such a late JVP rule needs TF's own derivatives (their functions
trace the TF function again when they are made), it computes the value
from a new trace too, so that the value and its derivatives always read
the same Python state (see ``autodiff.jvp.define_jvp``).

What is reused across calls is the work that follows a trace: the vectorization
of ``jax.vmap``, the compiled HLO, the TF function of the VJP.
:class:`TraceCache` keeps, per argument signature, the flat callable and
``tf.function`` of each distinct *graph* traced (a fingerprint of the graph,
its captured values and its result structure): a new trace that is the same
graph is replaced by the kept one, whose caches are warm; a new graph (Python
state changed what the function computes) is kept beside it. The caches are
shared by every ``call_tf`` of the same callable
(:meth:`TraceCache.for_callable`), so re-wrapping the same function reuses
them, as ``jax.jit`` of the same function does. ``jax.clear_caches()`` empties
them.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable, Iterator, Sequence
import contextlib
import contextvars
import hashlib
import threading
from typing import Any, NamedTuple, TypeVar
import weakref

from jax._src import core
from jax._src import tree_util
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
from jax.experimental.jax2tf.call_tf_lib.tf_function import own_trace
import tensorflow as tf

_T = TypeVar("_T")

# Signatures kept per call_tf object; beyond it the least recent is dropped.
MAX_SIGNATURES = 64

_ALL: weakref.WeakSet[TraceCache] = weakref.WeakSet()


class TraceKey(NamedTuple):
  """What a call's traces are kept by in a :class:`TraceCache`.

  ``call_tf`` builds it from the call's argument signature and options; two
  calls with equal keys may share a trace of the same graph.

  Attributes:
    args_treedef: the tree of the call's arguments.
    args_flat_sig_tf: the ``tf.TensorSpec`` of each flat argument.
    output_avals: the declared result avals (``output_shape_dtype``,
      flattened), or None where none were declared.
    output_shape_dtype_tree: the tree of ``output_shape_dtype``, or None.
    call_tf_graph: ``call_tf``'s ``call_tf_graph`` option.
  """

  args_treedef: tree_util.PyTreeDef
  args_flat_sig_tf: tuple[tf.TensorSpec, ...]
  output_avals: tuple[core.ShapedArray, ...] | None
  output_shape_dtype_tree: tree_util.PyTreeDef | None
  call_tf_graph: bool


# What TraceCache.reuse gives: the flat callable, its tf.function, and the
# getter of the result treedef the callable records when it runs.
Triple = tuple[Callable[..., Any], tf.types.experimental.GenericFunction,
               Callable[[], tree_util.PyTreeDef | None]]


class TraceCache:
  """The traces of one callable given to ``call_tf``, by signature and graph.

  Also what else a ``call_tf`` object keeps by signature: the ``call_tf``
  of its VJP (see :func:`.vjp.vjp_call_key`).
  """

  def __init__(
      self, tf_function: tf.types.experimental.GenericFunction | None = None):
    self._entries: collections.OrderedDict[Hashable, object] = (
        collections.OrderedDict())
    self._lock = threading.Lock()
    # The tf.function given to call_tf, if it is one (weakly).
    self._tf_function = (weakref.ref(tf_function) if tf_function is not None
                         else lambda: None)
    _ALL.add(self)

  @classmethod
  def for_callable(cls, callable_tf: Callable[..., Any]) -> TraceCache:
    """The cache shared by every ``call_tf`` of ``callable_tf``.

    Args:
      callable_tf: the function given to ``call_tf``.

    Returns:
      The same cache for the same (weakly referenceable) function, so that
      ``call_tf(f)`` made again around ``f`` reuses its vectorizations and
      compilations; a new cache for anything else (a bound method is made
      anew on each attribute access).
    """
    try:
      with _FOR_CALLABLE_LOCK:
        cache = _FOR_CALLABLE.get(callable_tf)
        if cache is None:
          cache = _FOR_CALLABLE[callable_tf] = cls(
              callable_tf if isinstance(callable_tf, _TF_FUNCTION) else None)
        return cache
    except TypeError:  # not weakly referenceable, or not hashable
      return cls()

  def reuse(self, key: TraceKey, callable_flat_tf: Callable[..., Any],
            function_flat_tf: tf.types.experimental.GenericFunction,
            res_treedef: Callable[[], tree_util.PyTreeDef | None],
            args_flat: Sequence[object]) -> Triple:
    """The callable, ``tf.function`` and result treedef getter to call.

    Args:
      key: the argument signature and call options (hashable unless an
        option is not).
      callable_flat_tf: the flat callable this call made.
      function_flat_tf: its ``tf.function``.
      res_treedef: returns the result treedef that ``callable_flat_tf``
        records when it runs.
      args_flat: the call's flat arguments.

    Returns:
      This call's own triple for an eager call (no tracer among the
      arguments: the function runs as Python now, as upstream's does).
      Otherwise the function is traced now, as the call's abstract
      evaluation would, and the triple kept for the same graph is returned
      if there is one; else this call's own, kept. A kept callable is then
      called by every call that reuses it, eagerly too (``jax.vmap`` of a
      batch of one, ``"sequential"``), from any thread: it keeps nothing of
      a call (``res_tf_flat`` is a local of ``callable_flat_tf``).
      Within one call (:meth:`CallTraces.active`), the function is traced
      once: a second look at the call (its JVP rule) gets the first one's
      triple.
    """
    own = (callable_flat_tf, function_flat_tf, res_treedef)
    if not any(isinstance(a, core.Tracer) for a in args_flat):
      return own
    try:
      hash(key)
    except TypeError:
      return own
    call = _CURRENT_CALL.get()
    if call is None:
      return self._traced(key, own)
    return call.get((self, key), lambda: self._traced(key, own))

  def _traced(self, key: TraceKey, own: Triple) -> Triple:
    """The kept triple for the graph ``own`` traces to, kept if new."""
    callable_flat_tf, function_flat_tf, res_treedef = own
    del callable_flat_tf
    if (user_trace := self._user_trace(key)) is not None:
      # A tf.function keeps its own traces, by TensorFlow's rule: its trace
      # for these arguments tells the graph, and where ours would add
      # nothing, it is ours (no second trace).
      graph_key = (key, id(user_trace), _Keep(user_trace))
      return self.get(graph_key, lambda: own_trace.stand_in(
          own, user_trace, key.args_flat_sig_tf,
          flat_args=key.args_treedef == tree_util.tree_structure(
              (0,) * key.args_treedef.num_leaves),
          checks_results=(key.output_avals is not None
                          or key.call_tf_graph)))[:3]
    concrete = graph_lib.concrete_function(function_flat_tf,
                                           key.args_flat_sig_tf)
    graph_key = (key, fingerprint(concrete), res_treedef())
    return self.get(graph_key, lambda: own + (concrete,))[:3]

  def _user_trace(self, key: TraceKey
                  ) -> tf.types.experimental.ConcreteFunction | None:
    """The trace of the ``tf.function`` given to ``call_tf``, or None."""
    tf_function = self._tf_function()
    if tf_function is None:
      return None
    try:
      return graph_lib.concrete_function(
          tf_function, key.args_treedef.unflatten(list(key.args_flat_sig_tf)))
    except Exception:  # pylint: disable=broad-except
      return None  # traced as any function, below

  def get(self, key: Hashable, make: Callable[[], _T]) -> _T:
    """The value kept for ``key``; ``make()``'s, kept, if there is none.

    Args:
      key: hashable; if it is not hashable, nothing is kept.
      make: builds the value.

    Returns:
      The value the first call with ``key`` made.
    """
    try:
      hash(key)
    except TypeError:
      return make()
    with self._lock:
      found = self._entries.get(key)
      if found is None:
        found = self._entries[key] = make()
        while len(self._entries) > MAX_SIGNATURES:
          self._entries.popitem(last=False)
      else:
        self._entries.move_to_end(key)
      return found

  def clear(self) -> None:
    with self._lock:
      self._entries.clear()

  def __len__(self) -> int:
    return len(self._entries)


class CallTraces:
  """The TF traces of one call of a ``call_tf``, made in one JAX trace.

  ``call_tf``'s callable makes one per call and passes it to its
  ``custom_jvp`` as a static argument, so that the primal and the JVP rule
  (with its differentiability probe) of that call, and only of that call,
  see it. While :meth:`active`, :meth:`TraceCache.reuse` traces the TF
  function for a signature once and gives the same triple again: TF's
  trace, and so the Python state it read, is the same for the call's value
  and its derivatives, however late JAX differentiates the call (after
  ``jax.jit``, ``jax.checkpoint`` or ``lax.scan`` traced it).
  """

  __slots__ = ("_traced",)

  def __init__(self) -> None:
    self._traced: dict[Hashable, Triple] = {}

  def traced(self) -> bool:
    """Whether this call traced its function already (its primal ran)."""
    return bool(self._traced)

  @contextlib.contextmanager
  def active(self) -> Iterator[None]:
    """Makes this call's traces the ones :meth:`TraceCache.reuse` reads."""
    token = _CURRENT_CALL.set(self)
    try:
      yield
    finally:
      _CURRENT_CALL.reset(token)

  def get(self, key: Hashable, make: Callable[[], Triple]) -> Triple:
    """The triple this call traced for ``key``; ``make()``'s, kept, if none."""
    found = self._traced.get(key)
    if found is None:
      # Two threads differentiating one cached jaxpr may both trace; the
      # first kept is the one both use.
      found = self._traced.setdefault(key, make())
    return found


# The call whose traces TraceCache.reuse reads (per thread and context).
_CURRENT_CALL: contextvars.ContextVar[CallTraces | None] = (
    contextvars.ContextVar("call_tf_current_call", default=None))


def results_structure(first: tree_util.PyTreeDef | None,
                      now: tree_util.PyTreeDef) -> tree_util.PyTreeDef:
  """The structure of a call's results, checked on a run of its function.

  One call runs the TF function more than once: eagerly (the Python function
  itself) and traced (its graph, for ``jax.jit``, ``jax.vmap`` and the
  derivatives), and TensorFlow itself does not return the same containers
  both ways: ``tf.while_loop`` returns the body's structure eagerly (the
  tuple it returns) and its ``loop_vars``' in a graph (the list it was
  given). A list and a tuple of the same results are one structure here,
  as they are to TensorFlow's own ``while_loop``; everything else (dict
  keys, lengths, nesting, other containers) must agree. The results'
  leaves then line up, and the call returns the structure of its first
  run, the one the user's code saw: the Python function's eagerly, its
  graph's under ``jax.jit``.

  Args:
    first: the structure of the call's first run, None if this is the
      first.
    now: the structure of this run's results.

  Returns:
    ``first`` (``now`` if there is none).

  Raises:
    errors.CallTfTraceError: the structures differ otherwise than in lists
      and tuples.
  """
  if first is None or first == now:
    return now
  if _lists_as_tuples(first) != _lists_as_tuples(now):
    raise errors.results_structure_error(first, now)
  return first


def _lists_as_tuples(treedef: tree_util.PyTreeDef) -> tree_util.PyTreeDef:
  """``treedef`` with every list a tuple, other containers as they are."""
  def convert(node: object) -> object:
    if type(node) in (list, tuple):
      return tuple(convert(n) for n in node)
    if type(node) is dict:
      return {k: convert(v) for k, v in node.items()}
    return node  # a leaf, None, or another container (compared as it is)
  return tree_util.tree_structure(
      convert(treedef.unflatten([0] * treedef.num_leaves)))


def fingerprint(concrete_fn: tf.types.experimental.ConcreteFunction
                ) -> tuple[str, tuple[int, ...], _Keep]:
  """What makes two traces of a function the same function.

  Its graph (:func:`graph_digest`), and the values it captures, by identity
  (a variable's handle, a captured tensor): a trace that reads other Python
  state has other constants or captures.

  Args:
    concrete_fn: a traced TF function.

  Returns:
    A hashable fingerprint; it keeps the captured values alive, so that
    their identities are not reused.
  """
  captured = tuple(concrete_fn.captured_inputs)
  return (graph_digest(concrete_fn), tuple(id(c) for c in captured),
          _Keep(captured))


def graph_digest(concrete_fn: tf.types.experimental.ConcreteFunction) -> str:
  """The SHA-256 of a traced function's graph, the same in every process.

  The graph's ops, constants and attributes, and the functions it calls;
  their names, unique per trace (a counter of the process), are replaced
  by the order in which the graph first refers to them, and the library is
  sorted by those names (TensorFlow lists it in no fixed order). Computed
  once per trace.

  Args:
    concrete_fn: a traced TF function.

  Returns:
    The hex digest.
  """
  try:
    found = _DIGESTS.get(concrete_fn)
  except TypeError:  # not weakly referenceable
    found = None
  if found is not None:
    return found
  graph_def = concrete_fn.graph.as_graph_def()
  if graph_def.library.function:
    _rename_functions(graph_def, _canonical_names(graph_def))
    _sort_library(graph_def)
  digest = hashlib.sha256(
      graph_def.SerializeToString(deterministic=True)).hexdigest()
  try:
    _DIGESTS[concrete_fn] = digest
  except TypeError:
    pass
  return digest


# Each trace's graph_digest, while the trace lives.
_DIGESTS: weakref.WeakKeyDictionary[
    tf.types.experimental.ConcreteFunction, str] = weakref.WeakKeyDictionary()


class _Keep:
  """Holds values in a key without taking part in its hash or equality."""

  __slots__ = ("values",)

  def __init__(self, values: object):
    self.values = values

  def __eq__(self, other: object) -> bool:
    return isinstance(other, _Keep)

  def __hash__(self) -> int:
    return 0


def _function_references(node: tf.compat.v1.NodeDef) -> list[str]:
  """The names of the functions a node refers to, in a fixed order."""
  refs = [node.op]
  for name in sorted(node.attr):
    attr = node.attr[name]
    if attr.HasField("func"):
      refs.append(attr.func.name)
    refs.extend(f.name for f in attr.list.func)
  return refs


def _canonical_names(graph_def: tf.compat.v1.GraphDef) -> dict[str, str]:
  """A name for each library function: the order the graph refers to it.

  Depth first from the graph's nodes (in their order, the order TF made
  them), then into each function's body; a function nothing refers to (a
  registered gradient) is named after those, in the order of its name.
  """
  library = {f.signature.name: f for f in graph_def.library.function}
  names: dict[str, str] = {}

  def visit(nodes: Sequence[tf.compat.v1.NodeDef]) -> None:
    for node in nodes:
      for r in _function_references(node):
        if r in library and r not in names:
          names[r] = f"__call_tf_fn_{len(names)}"
          visit(library[r].node_def)

  visit(graph_def.node)
  for name in sorted(library):
    names.setdefault(name, f"__call_tf_fn_{len(names)}")
  return names


def _sort_library(graph_def: tf.compat.v1.GraphDef) -> None:
  """Orders the function library (and its gradients) by name."""
  functions = sorted(graph_def.library.function,
                     key=lambda f: f.signature.name)
  gradients = sorted(graph_def.library.gradient,
                     key=lambda g: (g.function_name, g.gradient_func))
  library = type(graph_def.library)()
  library.function.extend(functions)
  library.gradient.extend(gradients)
  graph_def.library.CopyFrom(library)


def _rename_functions(graph_def: tf.compat.v1.GraphDef,
                      names: dict[str, str]) -> None:
  """Renames the functions of ``graph_def`` and every reference to them."""
  def nodes():
    yield from graph_def.node
    for f in graph_def.library.function:
      yield from f.node_def

  for f in graph_def.library.function:
    f.signature.name = names.get(f.signature.name, f.signature.name)
  for g in graph_def.library.gradient:
    g.function_name = names.get(g.function_name, g.function_name)
    g.gradient_func = names.get(g.gradient_func, g.gradient_func)
  for node in nodes():
    if node.op in names:
      node.op = names[node.op]
    for attr in node.attr.values():
      if attr.HasField("func"):
        attr.func.name = names.get(attr.func.name, attr.func.name)
      for func in attr.list.func:
        func.name = names.get(func.name, func.name)


_TF_FUNCTION = tf.types.experimental.PolymorphicFunction


# The caches of the callables given to call_tf, shared by their call_tf's.
_FOR_CALLABLE: weakref.WeakKeyDictionary[Callable[..., Any], TraceCache] = (
    weakref.WeakKeyDictionary())
_FOR_CALLABLE_LOCK = threading.Lock()


class _AllTraceCaches:
  """What ``jax.clear_caches()`` sees: every :class:`TraceCache`."""

  def cache_clear(self) -> None:
    for cache in list(_ALL):
      cache.clear()

  def cache_info(self) -> tuple[int, int]:
    caches = list(_ALL)
    return len(caches), sum(len(c) for c in caches)

  def cache_keys(self) -> list[Hashable]:
    return []


_CLEARER = _AllTraceCaches()
compat.register_cache(_CLEARER, "call_tf: TF traces of call_tf objects")
