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
"""The ``tf.call_tf_function`` custom call of ``call_tf_graph=True``.

With ``call_tf_graph=True`` under ``jax2tf.convert``, a ``call_tf`` becomes a
custom call that TensorFlow's ``XlaCallModule`` runs as a TF function at run
time. With symbolic shapes (``polymorphic_shapes``) its result types are
dynamic; :func:`custom_call` passes the result shapes as operands, which
``XlaCallModule``'s shape refinement resolves to static ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from jax._src import core
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
import tensorflow as tf

if TYPE_CHECKING:
  from tensorflow.core.framework import attr_value_pb2
  from tensorflow.core.framework import function_pb2
  from tensorflow.core.framework import graph_pb2
  from tensorflow.core.framework import node_def_pb2

ConcreteFunction = tf.types.experimental.ConcreteFunction


def custom_call(ctx: mlir.LoweringRuleContext, result_types: Sequence[ir.Type],
                operands: Sequence[ir.Value], has_side_effects: bool,
                ordered: bool, result_avals: Sequence[core.AbstractValue]
                ) -> ir.Operation:
  """Emits the ``tf.call_tf_function`` custom call.

  Args:
    ctx: the lowering context.
    result_types: the result types, the token's first if ``ordered``.
    operands: the operands, the token first if ``ordered``.
    has_side_effects: whether the custom call has side effects.
    ordered: whether the call takes and returns a token.
    result_avals: the avals of the results (without the token).

  Returns:
    The custom call op.

  Raises:
    NotImplementedError: ``ordered`` with a result of symbolic shape, which
      ``XlaCallModule``'s shape refinement cannot refine.
  """
  result_shapes = None
  if any(not core.is_constant_shape(a.shape) for a in result_avals):
    if ordered:
      raise errors.ordered_symbolic_results_error(result_avals)
    result_shapes = [mlir.eval_dynamic_shape_as_tensor(ctx, a.shape)
                     for a in result_avals]
  return mlir.custom_call(
      "tf.call_tf_function",
      result_types=list(result_types),
      operands=list(operands),
      has_side_effect=has_side_effects,
      result_shapes=result_shapes,
      api_version=2,
  )


def runnable_by_tf(concrete_fn: ConcreteFunction) -> ConcreteFunction:
  """``concrete_fn`` as TF runs it for the custom call, and saves it.

  TF runs a ``call_tf_graph`` function from the ``XlaCallModule``'s function
  list, with the custom call's operands as its arguments, and
  ``tf.saved_model.save`` saves it with the model. Two things in the function
  break that, and both are rewritten here, in a copy:

  * Captured variables. ``call_tf`` passes their values as operands, but the
    function takes variable handles (``DT_RESOURCE``), and TF aborts the
    whole process (``Check failed: DataTypeCanUseMemcpy``). Upstream already
    snapshots the values at lowering time; frozen, the snapshot lives in the
    function.
  * Custom gradients (``tf.custom_gradient``, and the saved gradients of a
    restored jax2tf function). ``tf.saved_model.save`` re-traces the
    gradient of every op marked with one in every function of the model, and
    fails for these: the gradient of a restored function captures tensors of
    its original graph ("Found invalid capture ... when saving custom
    gradients"), and the saved gradient of a gradient has none of its own
    ("No gradient defined for operation ... IdentityN"). TF never
    differentiates a function-list function (the ``XlaCallModule``'s gradient
    is jax2tf's, computed by the VJP's own call), so the marks are dropped.

  The copy has its function calls inlined (grappler's function inlining, as
  ``convert_variables_to_constants_v2`` does), so it holds the marks of the
  functions it calls too; library functions it still calls (control flow
  bodies, grappler's specializations) are copied under new names if they
  change, never changed in place. Grappler marks its specializations with a
  function attribute that ``tf.saved_model.load`` refuses
  (``_GrapplerSpecializedFunc``); attributes the loader does not allow are
  dropped too.

  Args:
    concrete_fn: the concrete function of a ``call_tf_graph`` call.

  Returns:
    ``concrete_fn`` itself if it captures no variable and has no custom
    gradient, else the rewritten copy.

  Raises:
    ValueError: the variables cannot be frozen (the function assigns them).
  """
  has_variables = any(t.dtype == tf.resource
                      for t in concrete_fn.captured_inputs)
  if not has_variables and not _has_custom_gradients(
      concrete_fn.graph.as_graph_def()):
    return concrete_fn
  frozen, graph_def = _frozen(concrete_fn, has_variables)
  if not _has_custom_gradients(graph_def) and not _unloadable_attrs(graph_def):
    return frozen
  _drop_custom_gradients(graph_def)
  return _function_from_graph_def(graph_def, frozen)


def _frozen(concrete_fn: ConcreteFunction, has_variables: bool
            ) -> tuple[ConcreteFunction, graph_pb2.GraphDef]:
  """``concrete_fn`` with its variables frozen and its calls inlined.

  Args:
    concrete_fn: the concrete function of a ``call_tf_graph`` call.
    has_variables: whether it captures variables (then control flow is
      lowered, as freezing variables read in a loop needs).

  Returns:
    The frozen function and its ``GraphDef``.

  Raises:
    ValueError: the variables cannot be frozen (the function assigns them).
  """
  from tensorflow.python.framework import convert_to_constants  # pylint: disable=g-import-not-at-top
  try:
    with tf.init_scope():
      return convert_to_constants.convert_variables_to_constants_v2_as_graph(
          concrete_fn, lower_control_flow=has_variables)
  except Exception as e:  # pylint: disable=broad-except
    if not has_variables:
      raise
    raise errors.freeze_variables_error(e) from e


def _function_from_graph_def(graph_def: graph_pb2.GraphDef,
                             frozen: ConcreteFunction) -> ConcreteFunction:
  """The function of a rewritten ``graph_def``, with ``frozen``'s signature."""
  from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top
  from tensorflow.python.eager import wrap_function  # pylint: disable=g-import-not-at-top
  with tf.init_scope():
    # As convert_variables_to_constants_v2: the library functions of this
    # graph replace those of the same name (a copy made before).
    for f in graph_def.library.function:
      if context.context().has_function(f.signature.name):
        context.context().remove_function(f.signature.name)
    rewritten = wrap_function.function_from_graph_def(
        graph_def, [t.name for t in frozen.inputs],
        [t.name for t in frozen.outputs])
  # Shapes the import loses (scalars), as convert_variables_to_constants_v2.
  for new, old in zip(rewritten.inputs, frozen.inputs):
    new.set_shape(old.shape)
  return rewritten


# The suffix of a library function copied without its custom gradients.
_RENAMED = "_call_tf_graph"


def _has_custom_gradients(graph_def: graph_pb2.GraphDef) -> bool:
  """Whether any node of ``graph_def`` or its library has a custom gradient."""
  return any(graph_lib.GRADIENT_OVERRIDE_ATTR in n.attr for n in graph_def.node) or any(
      graph_lib.GRADIENT_OVERRIDE_ATTR in n.attr
      for f in graph_def.library.function for n in f.node_def)


def _unloadable_attrs(
    function_def: function_pb2.FunctionDef | graph_pb2.GraphDef) -> list[str]:
  """The attributes of a ``FunctionDef`` that ``tf.saved_model.load`` refuses.

  Given a ``GraphDef``, those of all its library functions.
  """
  from tensorflow.python.eager.polymorphic_function import attributes  # pylint: disable=g-import-not-at-top
  if hasattr(function_def, "library"):
    return [a for f in function_def.library.function
            for a in _unloadable_attrs(f)]
  return [a for a in function_def.attr
          if a not in attributes.MONOMORPHIC_FUNCTION_ALLOWLIST]


def _function_refs(node: node_def_pb2.NodeDef
                   ) -> list[attr_value_pb2.NameAttrList]:
  """The ``NameAttrList`` protos of the functions a ``NodeDef`` refers to."""
  refs = []
  for attr in node.attr.values():
    if attr.HasField("func"):
      refs.append(attr.func)
    elif attr.HasField("list"):
      refs.extend(attr.list.func)
  return refs


def _drop_custom_gradients(graph_def: graph_pb2.GraphDef) -> None:
  """Drops every custom gradient mark in ``graph_def``, in place.

  And the function attributes the loader refuses. A library function that
  changes (or calls one that does) gets a new name, and every reference to
  it follows: the original may be in use elsewhere in the process, with its
  gradients.
  """
  functions = {f.signature.name: f for f in graph_def.library.function}
  changed = {name for name, f in functions.items()
             if any(graph_lib.GRADIENT_OVERRIDE_ATTR in n.attr for n in f.node_def)
             or _unloadable_attrs(f)}
  while True:
    callers = {name for name, f in functions.items() if name not in changed
               and any(r.name in changed for n in f.node_def
                       for r in _function_refs(n))}
    if not callers:
      break
    changed |= callers
  renamed = {name: name + _RENAMED for name in changed}
  nodes = list(graph_def.node) + [n for f in functions.values()
                                  for n in f.node_def]
  for node in nodes:
    if graph_lib.GRADIENT_OVERRIDE_ATTR in node.attr:
      del node.attr[graph_lib.GRADIENT_OVERRIDE_ATTR]
    for ref in _function_refs(node):
      ref.name = renamed.get(ref.name, ref.name)
  for name in changed:
    f = functions[name]
    f.signature.name = renamed[name]
    for a in _unloadable_attrs(f):
      del f.attr[a]
