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
"""Recognizing a function restored from a jax2tf SavedModel.

A function that ``jax2tf.convert`` saved (and ``tf.saved_model.load``
restored) is, inside, one ``XlaCallModule`` op, plus variable reads,
identities and function calls; its gradient, when saved with
``experimental_custom_gradients``, is another ``XlaCallModule``.
:func:`find_embeddable_module` walks the function's graph from its outputs
to that op, and records where each of the op's operands comes from (an
argument, a variable, a constant), so that :mod:`.embed` can call the module
as StableHLO. A Python function is never inspected: its own code always
runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import enum
import logging
from typing import TYPE_CHECKING, Any
import weakref

from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib.embed import exported as exported_lib
from jax.experimental.jax2tf.call_tf_lib.tf_function import captures
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
from jax.experimental.jax2tf import jax2tf as jax2tf_internal
from jax import tree_util
import tensorflow as tf

if TYPE_CHECKING:
  import jax
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
  """
  exported: jax.export.Exported
  operands: tuple[_Source, ...]
  outputs: tuple[int, ...]
  out_tree: tree_util.PyTreeDef
  gradient_disabled: str | None = None


_FOUND: weakref.WeakKeyDictionary[Any, dict[Any, EmbeddedModule | None]] = (
    weakref.WeakKeyDictionary())


def is_candidate(callable_tf: Callable[..., Any]) -> bool:
  """Whether ``callable_tf`` may be a restored jax2tf function.

  Only ``tf.function``s and concrete functions (which is what
  ``tf.saved_model.load`` restores) are inspected; a Python function is
  never embedded, so its own code always runs.
  """
  return (hasattr(callable_tf, "get_concrete_function")
          or hasattr(callable_tf, "structured_outputs"))


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
                       ) -> tf.types.experimental.ConcreteFunction:
  """The concrete function of ``callable_tf`` of flat arguments.

  Args:
    callable_tf: the TF function given to ``call_tf``.
    args_treedef: the pytree of its arguments.
    args_flat_sig_tf: the flat argument specs (None for symbolic sizes).

  Returns:
    The traced ``tf.function`` of the flat arguments.
  """
  def flat_fun(*args_flat):
    return callable_tf(*args_treedef.unflatten(args_flat))
  with jax2tf_internal.inside_call_tf():
    return tf.function(flat_fun, autograph=False
                       ).get_concrete_function(*args_flat_sig_tf)


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
  concrete_fn = _concrete_function(callable_tf, args_treedef,
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
  vjp_op = _saved_vjp_op(walker, op)
  return EmbeddedModule(
      exported=exported_lib.exported_from_module_op(
          op, f"call_tf_{_function_name(callable_tf)}", vjp_op),
      operands=operands, outputs=tuple(s.index for s in sources),
      out_tree=tree_util.tree_structure(tree_util.tree_map(
          lambda _: 0, concrete_fn.structured_outputs)),
      gradient_disabled=walker.gradient_disabled)


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
  cache = _cache_of(callable_tf)
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
