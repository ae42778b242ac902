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
"""Recognizing a jax2tf function: restored from a SavedModel, or live.

A function that ``jax2tf.convert`` saved (and ``tf.saved_model.load``
restored) is, inside, one ``XlaCallModule`` op, plus variable reads,
identities and function calls; its gradient, when saved with
``experimental_custom_gradients``, is another ``XlaCallModule``.
:func:`find_embeddable_module` walks the function's graph from its outputs
to that op, and records where each of the op's operands comes from (an
argument, a variable, a constant), so that :mod:`.embed` can call the module
as StableHLO. The same holds for a function ``jax2tf.convert`` made in this
process (the round trip ``call_tf(jax2tf.convert(f))``) and a
``tf.function`` of one: its module is JAX's, for the platforms it was
serialized for, and its gradient is the VJP its custom gradient exports
(``jax.export``'s, with every higher order), traced when first needed. Any other Python function is never
inspected; a converted one is traced at every call, so its own code
always runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import enum
import functools
import logging
from typing import TYPE_CHECKING, Any
import weakref

from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib.embed import exported as exported_lib
from jax.experimental.jax2tf.call_tf_lib.tf_function import captures
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
from jax.experimental.jax2tf import jax2tf as jax2tf_internal
import jax
from jax import tree_util
import tensorflow as tf

if TYPE_CHECKING:
  import numpy as np

logger = logging.getLogger(__name__)

NotEmbeddableError = exported_lib.NotEmbeddableError


# Ops seen through on the way from the outputs to the XlaCallModule.
_ALLOWED_OPS = frozenset({
    "Placeholder", "Identity", "IdentityN", "EnsureShape", "NoOp",
    "ReadVariableOp", "Const", "XlaCallModule", "PartitionedCall",
    "StatefulPartitionedCall", "PreventGradient"})


class SourceKind(enum.StrEnum):
  """What a value (an operand of the embedded module) comes from."""

  ARG = "arg"
  """A flat argument of the call (``index``)."""
  RESOURCE = "resource"
  """A captured ``tf.Variable``, its handle (``payload``)."""
  VAR = "var"
  """A read of a captured ``tf.Variable`` (``payload``)."""
  TENSOR = "tensor"
  """A captured tensor (``payload``)."""
  CONST = "const"
  """A constant of the graph (``payload``: an ndarray)."""
  MODULE = "module"
  """A result (``index``) of the XlaCallModule op (``payload``)."""


@dataclasses.dataclass(frozen=True)
class _Source:
  """Where a value comes from: its ``kind``, and the ``payload`` and
  ``index`` that :class:`SourceKind` says it has."""
  kind: SourceKind
  payload: tf.Variable | tf.Tensor | np.ndarray | tf.Operation | None = None
  index: int = 0


def _function_graph(graph: tf.Graph, name: str) -> tf.Graph:
  g = graph
  while g is not None:
    f = g._get_function(name)  # pylint: disable=protected-access
    if f is not None:
      return f.graph
    g = getattr(g, "outer_graph", None)
  raise NotEmbeddableError(f"cannot find the graph of function {name}")


class _GraphWalker:
  """Follows values through calls, identities and variable reads."""

  def __init__(self):
    self.modules: dict[int, tuple[tf.Operation, tuple[_Source, ...]]] = {}
    # The message of a PreventGradient op on the way (jax2tf's
    # with_gradient=False), if any.
    self.gradient_disabled: str | None = None
    self.gradient_op_types: dict[int, bytes] = {}
    self._checked: set[int] = set()

  def check_graph(self, graph: tf.Graph) -> None:
    if id(graph) in self._checked:
      return
    self._checked.add(id(graph))
    other = sorted({op.type for op in graph.get_operations()} - _ALLOWED_OPS)
    if other:
      raise NotEmbeddableError(f"the function also has ops {other}")
    for op in graph.get_operations():
      if op.type != "IdentityN":
        continue
      try:
        gradient_type = op.get_attr(graph_lib.GRADIENT_OVERRIDE_ATTR)
      except ValueError:
        continue
      for i in op.inputs:
        if i.op.type == "XlaCallModule":
          self.gradient_op_types[id(i.op)] = gradient_type

  def resolve(self, t: tf.Tensor, env: dict[Any, _Source]) -> _Source:
    """Where the value of tensor ``t`` comes from."""
    if t.ref() in env:
      return env[t.ref()]
    op = t.op
    op_type = op.type
    if op_type == "Placeholder":
      raise NotEmbeddableError(f"unbound placeholder {t.name}")
    if op_type in ("Identity", "EnsureShape"):
      return self.resolve(op.inputs[0], env)
    if op_type == "PreventGradient":
      try:
        message = op.get_attr("message")
      except ValueError:
        message = b""
      self.gradient_disabled = (message.decode() if isinstance(message, bytes)
                                else str(message))
      return self.resolve(op.inputs[0], env)
    if op_type == "IdentityN":
      return self.resolve(op.inputs[t.value_index], env)
    if op_type == "ReadVariableOp":
      src = self.resolve(op.inputs[0], env)
      if src.kind != SourceKind.RESOURCE:
        raise NotEmbeddableError(f"a variable read of {src.kind}")
      return _Source(SourceKind.VAR, src.payload)
    if op_type == "Const":
      return _Source(SourceKind.CONST, tf.make_ndarray(op.get_attr("value")))
    if op_type in ("PartitionedCall", "StatefulPartitionedCall"):
      graph = _function_graph(op.graph, op.get_attr("f").name)
      self.check_graph(graph)
      inner_env = {p.ref(): self.resolve(a, env)
                   for p, a in zip(graph.inputs, op.inputs)}
      return self.resolve(graph.outputs[t.value_index], inner_env)
    if op_type == "XlaCallModule":
      operands = tuple(self.resolve(i, env) for i in op.inputs)
      seen = self.modules.get(id(op))
      if seen is not None and seen[1] != operands:
        raise NotEmbeddableError("a module reached with different operands")
      self.modules[id(op)] = (op, operands)
      return _Source(SourceKind.MODULE, op, t.value_index)
    raise NotEmbeddableError(f"op {op_type}")


@dataclasses.dataclass(frozen=True)
class EmbeddedModule:
  """A TF function that is one XlaCallModule, ready to embed.

  Attributes:
    exported: the module, as a ``jax.export.Exported``.
    operands: for each module operand, where its value comes from.
    outputs: for each flat output of the TF function, the module result.
    out_tree: the pytree of the TF function's outputs.
    gradient_disabled: if the function was saved with its gradient disabled
      (``jax2tf.convert(..., with_gradient=False)``), the reason it gives.
    live_vjp: for a function ``jax2tf.convert`` made in this process (whose
      gradient is a Python function, not a saved module), its VJP as
      ``jax.export`` exports it (with the next order as its own ``vjp()``),
      traced when first called; None otherwise (``exported.vjp()`` then).
  """
  exported: jax.export.Exported
  operands: tuple[_Source, ...]
  outputs: tuple[int, ...]
  out_tree: tree_util.PyTreeDef
  gradient_disabled: str | None = None
  live_vjp: Callable[[], jax.export.Exported] | None = None


_FOUND: weakref.WeakKeyDictionary[Any, dict[Any, EmbeddedModule | None]] = (
    weakref.WeakKeyDictionary())


def vjp_of(embedded: EmbeddedModule,
           vjp: jax.export.Exported) -> EmbeddedModule:
  """The VJP of a live jax2tf function, as a module to embed in turn.

  Args:
    embedded: the function's module.
    vjp: its VJP, as ``jax.export`` exports it: a function of the module's
      operands and its results' cotangents, returning the operands'
      cotangents.

  Returns:
    ``vjp`` with the module's operands, then the cotangents as the call's
    next arguments; its own VJP the next order ``jax.export`` makes.

  Raises:
    NotEmbeddableError: ``vjp`` takes other operands than the module (the
      module dropped an argument it does not read).
  """
  nr_args = sum(s.kind == SourceKind.ARG for s in embedded.operands)
  nr_outs = len(embedded.exported.out_avals)
  if len(vjp.in_avals) != len(embedded.operands) + nr_outs:
    raise NotEmbeddableError(
        f"its VJP takes {len(vjp.in_avals)} operands, and the module "
        f"{len(embedded.operands)} and {nr_outs} cotangents")
  return EmbeddedModule(
      exported=vjp,
      operands=(*embedded.operands,
                *(_Source(SourceKind.ARG, None, nr_args + i)
                  for i in range(nr_outs))),
      outputs=tuple(range(len(vjp.out_avals))),
      out_tree=tree_util.tree_structure(tuple(vjp.out_avals)),
      live_vjp=functools.cache(vjp.vjp))


def is_converted(callable_tf: Callable[..., Any]) -> bool:
  """Whether ``callable_tf`` is a function ``jax2tf.convert`` returned."""
  return (getattr(callable_tf, "__module__", None) == jax2tf_internal.__name__
          and getattr(callable_tf, "__qualname__", None)
          == _CONVERTED_QUALNAME)


# The function jax2tf.convert returns, in every release.
_CONVERTED_QUALNAME = "convert.<locals>.converted_fun_tf"


def is_candidate(callable_tf: Callable[..., Any]) -> bool:
  """Whether ``callable_tf`` may be a jax2tf function, restored or live.

  ``tf.function``s and concrete functions (which is what
  ``tf.saved_model.load`` restores) are inspected, and the functions
  ``jax2tf.convert`` returns; any other Python function is never embedded,
  so its own code always runs.
  """
  return (hasattr(callable_tf, "get_concrete_function")
          or hasattr(callable_tf, "structured_outputs")
          or is_converted(callable_tf))


def _cache_of(callable_tf: Callable
              ) -> dict[tuple[tree_util.PyTreeDef, tuple[tf.TensorSpec, ...]],
                        EmbeddedModule | None]:
  """The modules found for ``callable_tf``, by argument signature.

  Args:
    callable_tf: the TF function given to ``call_tf``.

  Returns:
    Its cache, kept while it lives; a new empty one if it is not weakly
    referenceable.
  """
  try:
    return _FOUND.setdefault(callable_tf, {})
  except TypeError:  # not weakly referenceable
    return {}


def _concrete_function(callable_tf: Callable,
                       args_treedef: tree_util.PyTreeDef,
                       args_flat_sig_tf: Sequence[tf.TensorSpec]
                       ) -> tuple[tf.types.experimental.ConcreteFunction,
                                  list[jax.export.Exported]]:
  """The concrete function of ``callable_tf`` of flat arguments.

  A ``tf.function``'s own traces are reused (its Python runs once per
  signature, for call_tf's general path as for this).

  Args:
    callable_tf: the TF function given to ``call_tf``, or its Python
      function (:func:`_retraced`).
    args_treedef: the pytree of its arguments.
    args_flat_sig_tf: the flat argument specs (None for symbolic sizes).

  Returns:
    The traced ``tf.function`` of the flat arguments, and the
    ``jax.export.Exported`` of each function ``jax2tf.convert`` converted
    in the trace (none where TensorFlow reused a trace, or for a function
    restored from a SavedModel).
  """
  def flat_fun(*args_flat):
    return callable_tf(*args_treedef.unflatten(args_flat))
  with (jax2tf_internal.inside_call_tf(),
        jax2tf_internal.exported_functions() as made):
    if _takes_flat(callable_tf, args_treedef):
      concrete = callable_tf.get_concrete_function(*args_flat_sig_tf)
    else:
      concrete = tf.function(flat_fun, autograph=False).get_concrete_function(
          *args_flat_sig_tf)
  return concrete, made


@functools.cache
def _live_tf_function_type() -> type:
  """The type of the functions ``tf.function`` makes (not a subclass:
  restored ones are their own)."""
  return type(tf.function(lambda: None))


def _takes_flat(callable_tf: Callable, args_treedef: tree_util.PyTreeDef
                ) -> bool:
  """Whether ``callable_tf`` is a ``tf.function`` (not a restored one) called
  with array arguments only: its own concrete function then takes the flat
  arguments, in their order, and needs no wrapper. (A wrapper's trace
  captures every variable again: for a Keras model, a tenth of a second.)
  """
  return (type(callable_tf) is _live_tf_function_type()
          and args_treedef == tree_util.tree_structure(
              (0,) * args_treedef.num_leaves))


def _retraced(callable_tf: Callable, walker: _GraphWalker,
              op: tf.Operation) -> Callable | None:
  """What to trace again to collect module ``op``'s ``Exported``, or None.

  Module ``op`` has a live gradient (a ``tf.custom_gradient`` of this
  process: ``jax2tf.convert``'s) but its conversion ran in a trace
  TensorFlow made before (a ``tf.function`` called before): its Python
  function converts again. Not for a function restored from a SavedModel
  (whose gradient was saved, or not: then it has none), nor a disabled
  gradient.
  """
  if (walker.gradient_disabled is not None
      or id(op) not in walker.gradient_op_types
      or not compat.python_gradient_registered(
          walker.gradient_op_types[id(op)].decode())):
    return None
  return getattr(callable_tf, "python_function", None)


def _input_sources(concrete_fn: tf.types.experimental.ConcreteFunction
                   ) -> dict[Any, _Source]:
  """Where each input of a concrete function's graph comes from.

  Args:
    concrete_fn: a concrete function.

  Returns:
    By reference of its graph's inputs: its arguments (``ARG``, by flat
    index), then its captures (``RESOURCE`` for a ``tf.Variable``, else
    ``TENSOR``).
  """
  graph = concrete_fn.graph
  internal = list(graph.internal_captures)
  env = {p.ref(): _Source(SourceKind.ARG, None, i) for i, p in enumerate(
      graph.inputs[:len(graph.inputs) - len(internal)])}
  for ic, obj in zip(internal, captures.captured_objects(concrete_fn)):
    env[ic.ref()] = (_Source(SourceKind.RESOURCE, obj)
                     if isinstance(obj, tf.Variable)
                     else _Source(SourceKind.TENSOR, obj))
  return env


def _saved_vjp_op(walker: _GraphWalker,
                  op: tf.Operation) -> tf.Operation | None:
  """The XlaCallModule op of the saved gradient of module ``op``, if any.

  Args:
    walker: the walker that reached ``op``.
    op: the function's XlaCallModule op.

  Returns:
    The one XlaCallModule op of the restored gradient function of ``op``
    (saved with ``experimental_custom_gradients``), or None if there is
    none, or the gradient is disabled.
  """
  if walker.gradient_disabled is not None or id(op) not in (
      walker.gradient_op_types):
    return None
  gradient = compat.restored_gradient_function(
      walker.gradient_op_types[id(op)].decode())
  if gradient is None:
    return None
  vjp_ops = [o for o in gradient.graph.get_operations()
             if o.type == "XlaCallModule"]
  return vjp_ops[0] if len(vjp_ops) == 1 else None


def _live_vjp(callable_tf: Callable, args_treedef: tree_util.PyTreeDef,
              args_flat_sig_tf: Sequence[tf.TensorSpec],
              primal_module: bytes) -> jax.export.Exported:
  """The VJP that a live jax2tf function's gradient exports, as jax.export's.

  ``jax2tf.convert``'s custom gradient exports JAX's VJP of the function
  (and converts it to another ``XlaCallModule``) when TensorFlow
  differentiates it: a trace of a ``tf.GradientTape`` of the function
  (never run) makes it, and ``jax2tf.exported_functions`` collects it. It
  is ``jax.export``'s own ``Exported``, whose ``vjp()`` gives the next
  order.

  Args:
    callable_tf: the TF function given to ``call_tf``.
    args_treedef: the pytree of its arguments.
    args_flat_sig_tf: the flat argument specs.
    primal_module: the serialized module of the function itself.

  Returns:
    The VJP: a function of the primal operands and the output cotangents,
    returning the operands' cotangents.

  Raises:
    NotEmbeddableError: the gradient exported no module.
  """
  fun = getattr(callable_tf, "python_function", callable_tf)

  def flat_gradient(*args_flat):
    with tf.GradientTape() as tape:
      tape.watch([a for a in args_flat
                  if a.dtype.is_floating or a.dtype.is_complex])
      outs = [o for o in tf.nest.flatten(
          fun(*args_treedef.unflatten(args_flat)))
              if o.dtype.is_floating or o.dtype.is_complex]
    return tape.gradient(outs, list(args_flat),
                         output_gradients=[tf.ones_like(o) for o in outs])
  with (jax2tf_internal.inside_call_tf(),
        jax2tf_internal.exported_functions() as made):
    tf.function(flat_gradient, autograph=False).get_concrete_function(
        *args_flat_sig_tf)
  # The gradient converts the VJP after the trace converted the function
  # again (whose module some releases serialize otherwise in another trace).
  if not made or made[-1].mlir_module_serialized == primal_module:
    raise NotEmbeddableError("its gradient exported no module")
  return made[-1]


def _function_name(callable_tf: Callable) -> str:
  """The name of ``callable_tf`` as an identifier ("tf_function" if none)."""
  return "".join(c if c.isalnum() else "_"
                 for c in getattr(callable_tf, "__name__", "tf_function"))


def _embeddable_module(callable_tf: Callable,
                       args_treedef: tree_util.PyTreeDef,
                       args_flat_sig_tf: Sequence[tf.TensorSpec]
                       ) -> EmbeddedModule:
  """The embeddable module of ``callable_tf``.

  Args:
    callable_tf: the TF function given to ``call_tf``.
    args_treedef: the pytree of its arguments.
    args_flat_sig_tf: the flat argument specs (None for symbolic sizes).

  Returns:
    The function's single XlaCallModule, with where its operands come from.

  Raises:
    NotEmbeddableError: if the function is not (wrappers around) a single
      XlaCallModule with its weights.
  """
  concrete_fn, made = _concrete_function(callable_tf, args_treedef,
                                         args_flat_sig_tf)
  walker = _GraphWalker()
  walker.check_graph(concrete_fn.graph)
  env = _input_sources(concrete_fn)
  outs = list(concrete_fn.graph.outputs)
  if len(tree_util.tree_leaves(concrete_fn.structured_outputs)) != len(outs):
    raise NotEmbeddableError("outputs that are not tensors")
  sources = [walker.resolve(t, env) for t in outs]
  if len(walker.modules) != 1 or any(s.kind != SourceKind.MODULE
                                     for s in sources):
    raise NotEmbeddableError(
        f"{len(walker.modules)} XlaCallModule ops reach the outputs")
  (op, operands), = walker.modules.values()
  fun_name = f"call_tf_{_function_name(callable_tf)}"
  exported = exported_lib.exported_from_module_op(
      op, fun_name, _saved_vjp_op(walker, op))
  live_vjp = None
  primal_module = op.get_attr("module")
  if (not exported.has_vjp() and not made
      and (retraced := _retraced(callable_tf, walker, op)) is not None):
    made = _concrete_function(retraced, args_treedef, args_flat_sig_tf)[1]
  if (not exported.has_vjp() and walker.gradient_disabled is None
      and any(e.mlir_module_serialized == primal_module for e in made)):
    # Converted in this trace: its gradient is jax2tf's, in this process.

    @functools.cache
    def live_vjp() -> jax.export.Exported:
      return _live_vjp(callable_tf, args_treedef, args_flat_sig_tf,
                       primal_module)
  return EmbeddedModule(
      exported=exported, operands=operands,
      outputs=tuple(s.index for s in sources),
      out_tree=tree_util.tree_structure(tree_util.tree_map(
          lambda _: 0, concrete_fn.structured_outputs)),
      gradient_disabled=walker.gradient_disabled, live_vjp=live_vjp)


def find_embeddable_module(callable_tf: Callable,
                           args_treedef: tree_util.PyTreeDef,
                           args_flat_sig_tf: Sequence[tf.TensorSpec]
                           ) -> EmbeddedModule | None:
  """The embeddable module of ``callable_tf``, or None.

  Args:
    callable_tf: the TF function given to ``call_tf``.
    args_treedef: the pytree of its arguments.
    args_flat_sig_tf: the flat argument specs (None for symbolic sizes).

  Returns:
    An :class:`EmbeddedModule` if the function is (wrappers around) a single
    XlaCallModule with its weights, else None: call_tf then uses its general
    path.
  """
  # A converted Python function is traced at every call: its Python runs.
  cache = {} if is_converted(callable_tf) else _cache_of(callable_tf)
  key = (args_treedef, tuple(args_flat_sig_tf))
  if key in cache:
    return cache[key]
  found = None
  try:
    found = _embeddable_module(callable_tf, args_treedef, args_flat_sig_tf)
  except NotEmbeddableError as e:
    logger.debug("call_tf: the general path for %s: %s", callable_tf, e)
  except Exception as e:  # pylint: disable=broad-except
    # Embedding is an optimization of the general path, never a new failure.
    logger.warning(
        "call_tf could not embed %s as StableHLO (%s: %s); it takes the "
        "general path, which compiles it with TensorFlow for static shapes "
        "only.", getattr(callable_tf, "__name__", callable_tf),
        type(e).__name__, e)
  cache[key] = found
  return found
