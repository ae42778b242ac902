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
"""Which ops of a TF function have side effects.

A TF function is *pure* here if no op in its graph, or in the functions it
calls, writes state, prints, or draws from a stateful random generator:
TensorFlow marks such ops stateful. Reading a variable is stateful in
TensorFlow's registry too, but has no effect a caller can see, so the
variable reads are allowed in a pure function (a Keras model is pure). So
are checks (``tf.debugging.assert_*``, ``tf.debugging.check_numerics``,
the assertions of a ``tf.RaggedTensor``): they compute nothing, XLA drops
them, and a vectorized check checks every element of the batch
(:mod:`.xla_fidelity` keeps TensorFlow's kernels where eager calls check
them).

``call_tf`` uses this twice. A pure function needs no JAX effect (so that a
jitted program calling it keeps JAX's fast dispatch path), while a function
with side effects keeps ``has_side_effects``'s meaning. And ``jax.vmap``
never vectorizes a function with side effects, since pfor would run them
once for the whole batch; so a function it vectorized is pure, and needs no
tracing to say so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
from jax.experimental.jax2tf.call_tf_lib.tf_function import xla_fidelity
import tensorflow as tf

if TYPE_CHECKING:
  from jax._src import core

# Stateful in TensorFlow's op registry, but only reading state.
_READS_ONLY = frozenset({
    "ReadVariableOp", "ResourceGather", "ResourceGatherNd", "VariableShape",
    "VarIsInitializedOp", "VarHandleOp", "Placeholder", "Const",
    "ReadVariableXlaSplitND", "_Arg", "_Retval"})


# Ops that write a resource variable.
_WRITES_PREFIXES = ("Assign", "ResourceScatter", "ResourceApply",
                    "ResourceSparseApply", "ResourceStridedSliceAssign")


def writes_variable(op_type: str) -> bool:
  """Whether ops of type ``op_type`` assign to a resource variable."""
  return op_type.startswith(_WRITES_PREFIXES)


_PYTHON_OPS = frozenset({"PyFunc", "EagerPyFunc", "PyFuncStateless"})
_PRINT_OPS = frozenset({"PrintV2", "Print"})


def describe_effect(op_type: str) -> str:
  """What an op with side effects does, for messages.

  Args:
    op_type: the TF op type.

  Returns:
    A clause such as "which assigns a TensorFlow variable".
  """
  if writes_variable(op_type):
    return "which assigns a TensorFlow variable"
  if op_type in _PYTHON_OPS:
    return ("which runs Python code (tf.py_function or tf.numpy_function), "
            "which TensorFlow treats as having side effects")
  if op_type in _PRINT_OPS:
    return "which prints"
  if "Random" in op_type or op_type.startswith(("Stateful", "Multinomial")):
    return "which draws random numbers from a stateful generator"
  return "which has side effects"


def _module_has_side_effects(op: tf.Operation) -> bool:
  for attr in ("has_token_input_output", "function_list"):
    try:
      if op.get_attr(attr):
        return True
    except ValueError:
      pass
  return False


def side_effect_ops(graph: tf.Graph) -> list[tuple[str, str]]:
  """The ops with side effects in ``graph`` and the functions it calls.

  Args:
    graph: a ``tf.Graph`` (a concrete function's ``graph``).

  Returns:
    ``(op_type, node_name)`` of each op with side effects, in graph order.
  """
  found: list[tuple[str, str]] = []
  for op, called in graph_lib.ops_and_called_graphs(graph):
    if called:
      continue  # Its body is inspected instead.
    if op.type == "XlaCallModule":
      # TF registers it as stateful; a jax2tf module has side effects only
      # if it threads a token (ordered effects) or calls TF functions.
      if _module_has_side_effects(op):
        found.append((op.type, op.name))
    elif (op.type not in _READS_ONLY and op.type not in xla_fidelity.CHECKS
          and compat.is_stateful(op)):
      found.append((op.type, op.name))
  return found


def function_side_effect_ops(
    function_flat_tf: tf.types.experimental.GenericFunction,
    sig: Sequence[tf.TensorSpec],
) -> tuple[tuple[str, str], ...]:
  """The ops with side effects of ``function_flat_tf`` traced for ``sig``."""
  return graph_lib.scanned(function_flat_tf, sig, side_effect_ops)


def needs_effect(function_flat_tf: tf.types.experimental.GenericFunction,
                 sig: Sequence[tf.TensorSpec],
                 call_tf_graph: bool) -> bool:
  """Whether a ``call_tf`` with ``has_side_effects=True`` needs a JAX effect.

  With ``call_tf_graph``, TF runs the function when the program runs, so
  the call keeps its effect. Otherwise only a function with side effects
  does: for a pure function, the effect would only take jitted programs off
  JAX's fast dispatch path.

  Args:
    function_flat_tf: the ``tf.function`` of the call.
    sig: the argument specs.
    call_tf_graph: the ``call_tf`` argument of that name.
  """
  return call_tf_graph or bool(function_side_effect_ops(function_flat_tf, sig))


def effect_only_if_needed(abstract_eval: Callable[..., Any],
                          effect: core.Effect) -> Callable[..., Any]:
  """``call_tf_p``'s abstract eval, with ``effect`` only where it is needed.

  Args:
    abstract_eval: upstream's abstract evaluation rule, which adds ``effect``
      (the unordered ``CallTfEffect``) whenever ``has_side_effects``, and
      traces the function.
    effect: that effect.

  Returns:
    The rule, dropping ``effect`` for a pure TF function called without
    ``call_tf_graph`` (see :func:`needs_effect`). A function ``jax.vmap``
    vectorized (its ``vectorized`` param is set) is pure and its avals are
    known: the rule does not trace it, so that it is vectorized only where
    it is needed (see :mod:`.batching.rule`).
  """
  def rule(*args_flat_avals: core.AbstractValue, **params: Any
           ) -> tuple[Sequence[core.AbstractValue], set[core.Effect]]:
    if (not params["ordered"] and params["output_avals"] is not None
        and params["vectorized"] is not None):
      return params["output_avals"], set()
    out_avals, effs = abstract_eval(*args_flat_avals, **params)
    if effect in effs and not needs_effect(
        params["function_flat_tf"], params["args_flat_sig_tf"],
        params["call_tf_graph"]):
      effs = {e for e in effs if e != effect}
    return out_avals, effs
  return rule
