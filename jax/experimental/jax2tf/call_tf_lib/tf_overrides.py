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
"""Where ``call_tf_lib`` changes TensorFlow's behaviour while it runs.

Each override is a context manager that lasts only while call_tf builds a
graph that needs it, and restores TF's own state on exit, after an error too.
Each exists because TF, left alone, gives a wrong or missing derivative or a
refusal that eager TF does not give; the tests of this module show TF's
behaviour without each one, and with it.

- :func:`outside_xla_context`: hides the ``XLAControlFlowContext`` of the
  graphs being built (``tf.function(jit_compile=True)`` marks them), so that
  a function traced meanwhile is built as outside XLA. Scope: the graphs of
  this thread's default-graph stack.
- :func:`slice_gradient_outside_xla`: TF's registered gradient of ``Slice``
  (global), wrapped so that it is built outside XLA: a ``Pad``, which has a
  gradient and a pfor converter, not an ``XlaDynamicUpdateSlice``, which has
  neither. Other threads see the wrapper too (the same values).
- :func:`custom_gradients_recorded_as_eagerly`: TF's ``record`` module as
  ``tf.custom_gradient`` sees it (global, behaving as TF's in other threads),
  so that a graph-mode custom gradient is recorded with the inputs eager TF
  records; else TF's graph mode loses a dependence through a captured tensor
  (a zero derivative where eager ``jax.grad`` is right).
- :func:`tf_deprecation_checks_off`: TF's global deprecation-warning switch,
  off while pfor copies ops with deprecated APIs (speed only).

pfor's own converters and its ``def_function`` are swapped while call_tf
vectorizes a function: that is ``batching/pfor.py`` (``_converters``), since
it is pfor's machinery, not TF's behaviour elsewhere.

:func:`check` says which of the TF internals these overrides read are
missing; each override does nothing (TF's own behaviour) where its internal
moved, except where that would lose a gradient silently, which raises
:class:`.compat.InternalsChangedError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
import contextlib
import threading
import types
from typing import TYPE_CHECKING, Any

from jax.experimental.jax2tf.call_tf_lib import compat

if TYPE_CHECKING:
  import tensorflow as tf


@contextlib.contextmanager
def outside_xla_context() -> Iterator[None]:
  """Hides, while it lasts, the XLA context of the graphs being built.

  ``tf.function(jit_compile=True)`` marks the graph it traces with an
  ``XLAControlFlowContext``, and a function traced while it is being built
  sees it, even under ``tf.init_scope``: pfor then wraps its loop in a
  function of its own. Restored on exit, after an error too. Nothing if TF
  moved the graph's control-flow context.
  """
  from tensorflow.python.framework import ops as tf_ops  # pylint: disable=g-import-not-at-top
  hidden = []
  graph = tf_ops.get_default_graph()
  try:
    while graph is not None:
      get = getattr(graph, "_get_control_flow_context", None)
      context = get() if get is not None else None
      if context is not None and context.IsXLAContext():
        graph._set_control_flow_context(None)  # pylint: disable=protected-access
        hidden.append((graph, context))
      graph = getattr(graph, "outer_graph", None)
    yield
  finally:
    for graph, context in hidden:
      graph._set_control_flow_context(context)  # pylint: disable=protected-access


_SLICE_GRADIENT_LOCK = threading.RLock()
_slice_gradient_depth = 0


@contextlib.contextmanager
def slice_gradient_outside_xla() -> Iterator[None]:
  """While it lasts, TF's ``Slice`` gradient is built as outside XLA.

  In an XLA context (a ``tf.function(jit_compile=True)`` being traced) TF's
  gradient of ``Slice`` (of ``tf.concat``'s gradient, ``x[1:]``, every
  ``tf.slice``) is an ``XlaDynamicUpdateSlice``, which has neither a
  gradient nor a pfor converter: forward mode and ``jax.vmap`` of a VJP
  failed on it. Outside, it is a ``Pad`` of the same values, which has
  both, and which XLA compiles as well. The gradient function registered
  for ``Slice`` is wrapped meanwhile (other threads building a ``Slice``
  gradient then get the ``Pad`` too: the same values). Nothing if TF moved
  its gradient registry.
  """
  global _slice_gradient_depth
  from tensorflow.python.framework import ops as tf_ops  # pylint: disable=g-import-not-at-top
  registry = getattr(getattr(tf_ops, "_gradient_registry", None),
                     "_registry", None)
  entry = registry.get("Slice") if isinstance(registry, dict) else None
  if not isinstance(entry, dict) or "type" not in entry:
    yield
    return
  with _SLICE_GRADIENT_LOCK:
    if _slice_gradient_depth == 0:
      original = entry["type"]

      def slice_gradient(*args, **kwargs):
        with outside_xla_context():
          return original(*args, **kwargs)
      slice_gradient.original = original  # type: ignore[attr-defined]
      entry["type"] = slice_gradient
    _slice_gradient_depth += 1
  try:
    yield
  finally:
    with _SLICE_GRADIENT_LOCK:
      _slice_gradient_depth -= 1
      if _slice_gradient_depth == 0:
        entry["type"] = entry["type"].original


class _RecordAsEagerly:
  """TF's ``record`` module, as ``tf.custom_gradient`` sees it.

  While :func:`custom_gradients_recorded_as_eagerly` lasts in a thread, the
  gradient of a ``tf.custom_gradient`` function built in graph mode is
  recorded as eager TF records it; otherwise, and in other threads, this is
  TF's module.
  """

  def __init__(self, module: types.ModuleType):
    self._module = module

  def __getattr__(self, name: str) -> Any:
    return getattr(self._module, name)

  def record_operation(
      self, op_type: str, output_tensors: Sequence[tf.Tensor],
      input_tensors: Sequence[tf.Tensor],
      backward_function: Callable[..., Sequence[tf.Tensor | None]],
      *args: Any, **kwargs: Any) -> None:
    if getattr(_EAGER_RULE, "depth", 0):
      nr_results = _custom_gradient_result_count(backward_function)
      if nr_results is not None:
        input_tensors = list(input_tensors)[nr_results:]
        graph_backward_function = backward_function

        def backward_function(*output_gradients: tf.Tensor | None
                              ) -> Sequence[tf.Tensor | None]:
          return graph_backward_function(*output_gradients)[nr_results:]
    return self._module.record_operation(op_type, output_tensors,
                                         input_tensors, backward_function,
                                         *args, **kwargs)


def _custom_gradient_result_count(
    backward_function: Callable[..., Sequence[tf.Tensor | None]]
) -> int | None:
  """How many results a graph-mode custom gradient records, else None.

  TF's graph-mode decorator records ``results + args + variables`` as the
  inputs of its op, and its backward function (``tape_grad_fn``) has the
  number of results in its closure; eager TF's (``actual_grad_fn``) does
  not: None.

  Raises:
    compat.InternalsChangedError: a graph-mode custom gradient's backward function
      does not have it (TF changed the decorator): its gradient could be
      silently lost.
  """
  code = getattr(backward_function, "__code__", None)
  names = code.co_freevars if code is not None else ()
  if "flat_result_len" in names:
    value = backward_function.__closure__[
        names.index("flat_result_len")].cell_contents
    if isinstance(value, int):
      return value
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if tf.executing_eagerly():
    return None
  raise compat.internals_changed(
      "the closure of tf.custom_gradient's graph-mode backward function "
      "(tape_grad_fn's flat_result_len)",
      "call_tf cannot differentiate a tf.custom_gradient function whose "
      "results depend on the differentiated arguments through tensors it "
      "captures, where TensorFlow's graph-mode gradient drops that "
      "dependence")


_EAGER_RULE = threading.local()
_RECORD_PROXY_LOCK = threading.Lock()


def _custom_gradient_module() -> types.ModuleType | None:
  try:
    from tensorflow.python.ops import custom_gradient  # pylint: disable=g-import-not-at-top
  except ImportError:
    return None
  record = getattr(custom_gradient, "record", None)
  return (custom_gradient
          if callable(getattr(record, "record_operation", None)) else None)


@contextlib.contextmanager
def custom_gradients_recorded_as_eagerly() -> Iterator[None]:
  """While it lasts, graph-mode ``tf.custom_gradient``\\s record as eager ones.

  Eager TF records a ``tf.custom_gradient`` function's gradient on a tape
  with the function's arguments and the variables it uses as the inputs.
  Graph-mode TF (a ``tf.function``, pfor's trace, XLA: every gradient
  call_tf computes except the eager unbatched VJP) records it with the
  function's *results* as inputs too, and gives the results no gradient.
  The two differ where a result depends on a watched tensor only through a
  tensor the function captures, not through its arguments or variables
  (TF Probability's ODE solvers use ``tf.custom_gradient``, the adjoint
  method, and an ``ode_fn`` usually closes over the parameters): eager TF
  does not record the custom gradient and differentiates the ops the
  function ran (``tape.jacobian`` and finite differences agree); graph-mode
  TF records it, and the dependence is lost: None, which call_tf's VJP
  made a zero derivative (``jacrev``, ``jacfwd``, ``vmap`` of ``grad``,
  ``hessian``: all zero, where the eager ``jax.grad`` was right).

  So, in the thread that enters this, a graph-mode custom gradient is
  recorded with the inputs eager TF records: each tape and forward
  accumulator records it, by TF's own rule, only if it watches one of the
  function's arguments or variables, and then with the gradients TF gives
  them in either mode (the results' are None in graph mode, and are left
  out with them). Where it records, both modes leave out a dependence
  through a captured tensor, as TF does. Other threads see TF's module.

  Raises:
    compat.InternalsChangedError: (on use) a graph-mode custom gradient's backward
      function is not the one this module reads.
  """
  module = _custom_gradient_module()
  if module is not None and not isinstance(module.record, _RecordAsEagerly):
    with _RECORD_PROXY_LOCK:
      if not isinstance(module.record, _RecordAsEagerly):
        module.record = _RecordAsEagerly(module.record)
  _EAGER_RULE.depth = getattr(_EAGER_RULE, "depth", 0) + 1
  try:
    yield
  finally:
    _EAGER_RULE.depth -= 1


def gradient_through_captured_tensor(x: tf.Tensor) -> tf.Tensor | None:
  """d/dx of a custom-gradient function that owes `x` only to a capture.

  The function is ``y -> captured * y`` with ``captured = 2 * x``, called at
  ``y = 1``: eager TF's gradient is 2; TF's graph mode, left alone, gives
  None (see :func:`custom_gradients_recorded_as_eagerly`).
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with tf.GradientTape() as tape:
    tape.watch(x)
    captured = 2. * x

    @tf.custom_gradient
    def times_captured(y):
      return captured * y, lambda dy: dy * captured

    y = times_captured(tf.constant(1.))
  return tape.gradient(y, x)


def custom_gradients_take_effect() -> bool:
  """Whether :func:`custom_gradients_recorded_as_eagerly` takes effect.

  The graph-mode :func:`gradient_through_captured_tensor`, with it: a
  tensor, as eager TF's, where TF's graph mode gives None.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    with custom_gradients_recorded_as_eagerly():
      graph = tf.function(gradient_through_captured_tensor,
                          autograph=False).get_concrete_function(
                              tf.TensorSpec((), tf.float32)).graph
  except compat.InternalsChangedError:
    return False
  return bool(graph.outputs) and graph.outputs[0].dtype == tf.float32


@contextlib.contextmanager
def tf_deprecation_checks_off() -> Iterator[None]:
  """TF's deprecation warnings off, restored on exit (even on an error).

  Each call of a TF function with deprecated arguments then skips binding
  its arguments by name to look for them (``tf_inspect.getcallargs``, about
  0.5 ms a call): pfor copies every loop-invariant op with the deprecated
  ``Graph.create_op`` (300 calls in the first ``jit(vmap(jacrev(f)))`` of
  the benchmarks' energy, whose extra time over native JAX fell from 544
  to 479 ms). TF's own ``deprecation.silence()`` does not
  restore the setting when its body raises. Nothing if TF moved it. The
  setting is global: while it is off, no thread logs TF deprecation
  warnings.
  """
  try:
    from tensorflow.python.util import deprecation  # pylint: disable=g-import-not-at-top
  except ImportError:
    deprecation = None
  if not isinstance(getattr(deprecation, "_PRINT_DEPRECATION_WARNINGS", None),
                    bool):
    yield
    return
  saved = deprecation._PRINT_DEPRECATION_WARNINGS  # pylint: disable=protected-access
  deprecation._PRINT_DEPRECATION_WARNINGS = False  # pylint: disable=protected-access
  try:
    yield
  finally:
    deprecation._PRINT_DEPRECATION_WARNINGS = saved  # pylint: disable=protected-access


def check() -> list[str]:
  """The TF internals the overrides read that are missing; empty if none."""
  problems = []
  from tensorflow.python.util import deprecation  # pylint: disable=g-import-not-at-top
  if not isinstance(getattr(deprecation, "_PRINT_DEPRECATION_WARNINGS", None),
                    bool):
    problems.append("tensorflow deprecation._PRINT_DEPRECATION_WARNINGS")
  from tensorflow.python.framework import ops as tf_ops  # pylint: disable=g-import-not-at-top
  registry = getattr(getattr(tf_ops, "_gradient_registry", None),
                     "_registry", None)
  entry = registry.get("Slice") if isinstance(registry, dict) else None
  if not (isinstance(entry, dict) and callable(entry.get("type"))):
    problems.append("tensorflow ops._gradient_registry._registry['Slice']"
                    "['type']")
  graph = tf_ops.Graph()
  if not (callable(getattr(graph, "_get_control_flow_context", None))
          and callable(getattr(graph, "_set_control_flow_context", None))):
    problems.append("tf.Graph._get_control_flow_context and "
                    "_set_control_flow_context")
  if not custom_gradients_take_effect():
    problems.append("tensorflow custom_gradient.record.record_operation, "
                    "called with tape_grad_fn (closing over flat_result_len) "
                    "in graph mode")
  return problems
