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
"""A traced TF function's graph: its concrete function, and its ops.

:func:`concrete_function` traces a call's ``tf.function`` as ``call_tf``
does; :func:`graph_ops` walks every op of a graph and of the functions it
calls (loop bodies, branches, nested ``tf.function``s), which is where
``call_tf`` looks for side effects, custom gradients and ops whose gradients
differ from their lowering's; :func:`scanned` keeps what such a scan found,
once per graph and question.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
import functools
import re
from typing import TYPE_CHECKING, TypeVar

from jax._src.export import stablehlo_to_jax
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf import jax2tf as jax2tf_internal

if TYPE_CHECKING:
  import tensorflow as tf

T = TypeVar("T")

# TF's messages for a symbolic tensor used as a Python value: len(x), a
# Python bool, iteration (tf.errors.OperatorNotAllowedInGraphError).
_SYMBOLIC_AS_PYTHON_VALUE = re.compile(
    r"len is not well defined for a symbolic Tensor|symbolic `?tf\.Tensor`? "
    r"as a Python `?bool`?|Iterating over a symbolic `?tf\.Tensor`?")

# Ops that call other functions: their bodies are inspected instead.
CALLS = frozenset({
    "PartitionedCall", "StatefulPartitionedCall", "While", "StatelessWhile",
    "If", "StatelessIf", "Case", "StatelessCase"})

# The attribute TensorFlow sets on an op whose gradient is overridden: by
# ``tf.custom_gradient`` (on its ``IdentityN``, also under
# ``tf.recompute_grad`` and ``tf.grad_pass_through``) or by
# ``Graph.gradient_override_map`` (which ``tf.GradientTape`` does not read:
# both ways then give the type's registered gradient).
GRADIENT_OVERRIDE_ATTR = "_gradient_op_type"


def concrete_function(function_flat_tf: tf.types.experimental.GenericFunction,
                      specs: Sequence[object]
                      ) -> tf.types.experimental.ConcreteFunction:
  """The concrete function of ``function_flat_tf`` for ``specs``.

  Traced inside ``call_tf`` (``jax2tf`` functions called from it then know
  it), and cached by TensorFlow: the same as upstream's
  ``_get_concrete_function_tf``. The trace runs on a chunk of Python's
  frame stack of its own (``stablehlo_to_jax.with_stack_room``), so that
  its time does not depend on how deep in the caller's trace it starts.

  Args:
    function_flat_tf: the ``tf.function`` of a call (a ``call_tf_p`` param),
      or the user's own ``tf.function``.
    specs: the argument specs (``args_flat_sig_tf``), or for the user's
      function its positional arguments' structures of them.

  Returns:
    The ``ConcreteFunction``, traced on first use.

  Raises:
    errors.CallTfTraceError: the function uses a symbolic tensor as a
      Python value (``len(x)``), which its trace (autograph off) cannot.
  """
  with jax2tf_internal.inside_call_tf():
    try:
      return stablehlo_to_jax.with_stack_room(
          function_flat_tf.get_concrete_function, *specs)
    except TypeError as e:  # (OperatorNotAllowedInGraphError is one)
      if not _SYMBOLIC_AS_PYTHON_VALUE.search(str(e)):
        raise
      raise errors.traced_without_autograph_error(e) from e


@functools.lru_cache(maxsize=1024)
def _scanned(function_flat_tf: tf.types.experimental.GenericFunction,
             specs: tuple[tf.TensorSpec, ...],
             scan: Callable[[tf.Graph], Iterable[T]]) -> tuple[T, ...]:
  return tuple(scan(concrete_function(function_flat_tf, specs).graph))


compat.register_cache(_scanned, "call_tf: scans of TF functions' graphs")


def scanned(function_flat_tf: tf.types.experimental.GenericFunction,
            specs: Sequence[tf.TensorSpec],
            scan: Callable[[tf.Graph], Iterable[T]]) -> tuple[T, ...]:
  """What ``scan`` finds in the function's graph for ``specs``, cached.

  The one cache of the questions call_tf asks of a traced graph (its side
  effects, what XLA computes otherwise than TF, where TF's gradients
  differ from the lowering's derivative): each graph is scanned once per
  question, whatever asks.

  Args:
    function_flat_tf: the ``tf.function`` of a call.
    specs: the argument specs.
    scan: a module-level function of a graph (the cache's key).
  """
  return _scanned(function_flat_tf, tuple(specs), scan)


def called_graphs(op: tf.Operation) -> list[tf.Graph]:
  """The graphs of the functions ``op`` calls (its function attributes)."""
  graphs = []
  for attr in op.node_def.attr.values():
    names = ([attr.func.name] if attr.HasField("func")
             else [f.name for f in attr.list.func])
    for name in names:
      f = compat.find_function(op.graph, name)
      if f is not None:
        graphs.append(f.graph)
  return graphs


def ops_and_called_graphs(graph: tf.Graph
                          ) -> Iterator[tuple[tf.Operation, list[tf.Graph]]]:
  """:func:`graph_ops`, each op with the graphs of the functions it calls.

  The list is empty for an op that calls no function (or whose functions
  are not found); each graph is walked once.
  """
  seen: set[int] = set()
  todo = [graph]
  while todo:
    g = todo.pop(0)
    if id(g) in seen:
      continue
    seen.add(id(g))
    for op in g.get_operations():
      called = called_graphs(op) if op.type in CALLS else []
      yield op, called
      todo += called


def graph_ops(graph: tf.Graph) -> Iterator[tf.Operation]:
  """Every op of ``graph`` and of the functions it calls, each graph once.

  Args:
    graph: a ``tf.Graph`` (a concrete function's ``graph``).

  Yields:
    The ops, in graph order, each graph's before those of the functions it
    calls; the ops that call functions (``PartitionedCall``, ``While``, ...)
    too.
  """
  for op, _ in ops_and_called_graphs(graph):
    yield op


def overrides_gradient(op: tf.Operation) -> bool:
  """Whether ``op``'s gradient is not its type's registered gradient."""
  return GRADIENT_OVERRIDE_ATTR in op.node_def.attr
