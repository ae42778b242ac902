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
"""Every JAX and TensorFlow internal ``call_tf_lib`` uses that moves.

The rest of the package calls these functions instead of the internals, so
that what differs between JAX releases and TensorFlow releases lives here,
found by feature detection, never by version numbers.
:func:`check` verifies that each internal is still there, with the shape this
module expects; the test suite runs it against every supported release, so a
rename upstream fails a test instead of a user's program.

Where an internal is missing at run time and guessing could hang or mislead
(a deadlock on TF's graph lock, a gradient silently lost), the functions here
raise :class:`InternalsChangedError`, which says what changed and what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import inspect
from typing import TYPE_CHECKING, Any

from jax._src import core
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax._src import util
# The JAX internals that the StableHLO interpreter uses too live with it
# (it imports neither TensorFlow nor jax2tf); call_tf_lib uses them from here.
from jax._src.export.stablehlo_to_jax.compat import aval_to_ir_type as aval_to_ir_type
from jax._src.export.stablehlo_to_jax.compat import check as _jax_interpreter_missing
from jax._src.export.stablehlo_to_jax.compat import deserialize_module as deserialize_module
from jax._src.export.stablehlo_to_jax.compat import InternalsChangedError as InternalsChangedError
from jax._src.export.stablehlo_to_jax.compat import mlir_extension as mlir_extension
from jax._src.export.stablehlo_to_jax.compat import refine_polymorphic_shapes as refine_polymorphic_shapes
from jax._src.export.stablehlo_to_jax.compat import register_batching_rule as register_batching_rule
from jax._src.export.stablehlo_to_jax.compat import register_cache as register_cache
from jax._src.export.stablehlo_to_jax.compat import typeof as typeof
# What the transformations of Exported.call ask of jax.export.
from jax._src.export.transforms.exported import pieces_missing as export_pieces_missing
from jax import tree_util
import numpy as np

if TYPE_CHECKING:
  import tensorflow as tf


def internals_changed(what: str, consequence: str
                      ) -> InternalsChangedError:
  """The error for an internal, `what`, that moved: `consequence` fails."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import jax  # pylint: disable=g-import-not-at-top
  return InternalsChangedError(
      f"call_tf relies on {what}, which this installation (jax "
      f"{jax.__version__}, TensorFlow {tf.__version__}) does not have in the "
      f"form call_tf expects; {consequence}. "
      "Use the TensorFlow release this jax was verified with (the "
      "`tensorflow` extra of the jax package), and "
      "report this at https://github.com/jax-ml/jax/issues/11753.")


# ---------------------------------------------------------------------------
# JAX internals.
# ---------------------------------------------------------------------------

def serialize_module(module: ir.Module, target: str) -> bytes:
  """``module`` as a portable artifact (VHLO) at StableHLO version ``target``.

  jax serializes with shardy annotations where its backend does.
  """
  from jax._src import xla_bridge  # pylint: disable=g-import-not-at-top
  ext = mlir_extension()
  with_sdy = getattr(xla_bridge.get_backend(), "serialize_with_sdy", None)
  extra = () if with_sdy is None else (with_sdy,)
  try:
    return ext.serialize_portable_artifact(module, target, *extra)
  except TypeError:  # older jaxlibs take the module's bytecode
    return ext.serialize_portable_artifact(mlir.module_to_bytecode(module),
                                           target, *extra)


def stablehlo_version_jax_serializes() -> str:
  """The StableHLO version ``jax.export`` serializes to (4 weeks back)."""
  from jax._src.lib.mlir.dialects import hlo  # pylint: disable=g-import-not-at-top
  return hlo.get_version_from_compatibility_requirement(
      hlo.StablehloCompatibilityRequirement.WEEK_4)


def smaller_stablehlo_version(a: str, b: str) -> str:
  """The older of two StableHLO versions."""
  from jax._src.lib.mlir.dialects import hlo  # pylint: disable=g-import-not-at-top
  return hlo.get_smaller_version(a, b)


def tensorflow_stablehlo_version() -> str | None:
  """The StableHLO version TF's ``XlaCallModule`` deserializes with, if known."""
  try:
    from tensorflow.compiler.mlir.stablehlo import stablehlo as tf_stablehlo  # pylint: disable=g-import-not-at-top
    return tf_stablehlo.get_current_version()
  except (ImportError, AttributeError):
    return None


def tensorflow_reads(module_bytes: bytes) -> bool | None:
  """Whether TF's StableHLO deserializer reads ``module_bytes`` (None: unknown)."""
  try:
    from tensorflow.compiler.mlir.stablehlo import stablehlo as tf_stablehlo  # pylint: disable=g-import-not-at-top
    read = tf_stablehlo.deserialize_portable_artifact_str
  except (ImportError, AttributeError):
    return None
  try:
    read(module_bytes)
    return True
  except Exception:  # pylint: disable=broad-except
    return False


def hlo_to_module(hlo: bytes) -> ir.Module:
  """A serialized HLO module as a StableHLO module, in the current context.

  With jaxlib's ``hlo_to_stablehlo``; older jaxlibs, through an
  ``XlaComputation``.
  """
  ext = mlir_extension()
  if hasattr(ext, "hlo_to_stablehlo"):
    return ir.Module.parse(ext.hlo_to_stablehlo(hlo))
  from jax._src.lib import xla_client  # pylint: disable=g-import-not-at-top
  return mlir.xla_computation_to_mlir_module(xla_client.XlaComputation(hlo))


def hlo_to_stablehlo(hlo: bytes) -> bytes:
  """A serialized HLO module as a StableHLO module, in MLIR bytecode.

  jaxlib converts it directly (no text is printed and parsed again); older
  jaxlibs, through :func:`hlo_to_module`.
  """
  ext = mlir_extension()
  if hasattr(ext, "hlo_to_stablehlo"):
    return ext.hlo_to_stablehlo(hlo)
  with mlir.make_ir_context():
    return mlir.module_to_bytecode(hlo_to_module(hlo))


def hlo_op_types(hlo: bytes) -> dict[str, str]:
  """The TF op type of each op name in a serialized HLO module's metadata.

  tf2xla gives every instruction it emits the type and name of the TF op
  it lowers (``metadata={op_type="Relu" op_name="dense/Relu"}``); the
  StableHLO module converted from it names its locations after the op
  names. A name whose instructions have several types is left out.

  Returns:
    ``{op_name: op_type}``; empty if TensorFlow's HLO proto module is not
    where this function reads it (then no op takes TF's derivative at
    ties, and TF's gradients differentiate such functions).
  """
  try:
    from tensorflow.compiler.xla.service import hlo_pb2  # pylint: disable=g-import-not-at-top
  except ImportError:
    return {}
  module = hlo_pb2.HloModuleProto.FromString(hlo)
  types: dict[str, str] = {}
  ambiguous: set[str] = set()
  for computation in module.computations:
    for instruction in computation.instructions:
      name, op_type = (instruction.metadata.op_name,
                       instruction.metadata.op_type)
      if name and op_type and types.setdefault(name, op_type) != op_type:
        ambiguous.add(name)
  return {n: t for n, t in types.items() if n not in ambiguous}


def has_registered_gradient(op_type: str) -> bool:
  """Whether TF's gradient registry has a gradient function for ``op_type``.

  False for ops registered with ``tf.no_gradient`` (their gradient is None)
  and for ops with no entry.

  Raises:
    InternalsChangedError: the registry is not where this module reads it.
  """
  from tensorflow.python.framework import ops as tf_ops  # pylint: disable=g-import-not-at-top
  registry = getattr(tf_ops, "_gradient_registry", None)
  if registry is None or not hasattr(registry, "lookup"):
    raise internals_changed(
        "tensorflow.python.framework.ops._gradient_registry",
        "call_tf cannot tell which TF ops have gradients")
  try:
    return registry.lookup(op_type) is not None
  except LookupError:
    return False


def is_stateful(op: Any) -> bool:
  """Whether TensorFlow's op registry marks ``op`` stateful.

  ``tf.Operation`` has no public accessor: ``op._is_stateful`` reads the
  op definition's ``is_stateful`` flag.

  Raises:
    InternalsChangedError: the attribute is gone.
  """
  try:
    return bool(op._is_stateful)  # pylint: disable=protected-access
  except AttributeError:
    raise internals_changed(
        "tf.Operation._is_stateful",
        "call_tf cannot tell which TF ops have side effects") from None


def flat_args_tree(nr_args: int) -> tree_util.PyTreeDef:
  """The ``in_tree`` of an ``Exported`` taking ``nr_args`` positional arrays.

  ``Exported.call`` flattens its arguments with ``tree_util``'s internal
  ``tracing_registry`` (older releases, with the default registry).
  """
  from jax._src import tree_util as tree_util_internal  # pylint: disable=g-import-not-at-top
  args = (tuple(range(nr_args)), {})
  registry = getattr(tree_util_internal, "tracing_registry", None)
  if registry is not None:
    return registry.flatten(args)[1]
  return tree_util.tree_structure(args)


def make_exported(**fields: Any) -> Any:
  """A ``jax.export.Exported`` from the fields every release understands.

  ``Exported`` is a dataclass whose private fields change between releases
  (its named shardings).
  Fields given here that a release does not have are dropped if they only
  say "no sharding"; a field a release needs and that is not given is an
  error.
  """
  from jax._src.export import _export  # pylint: disable=g-import-not-at-top
  names = {f.name for f in dataclasses.fields(_export.Exported)}
  n_in, n_out = len(fields["in_avals"]), len(fields["out_avals"])
  defaults = {"_has_named_shardings": True,
              "_in_named_shardings": (None,) * n_in,
              "_out_named_shardings": (None,) * n_out,
              "in_shardings_hlo": (None,) * n_in,
              "out_shardings_hlo": (None,) * n_out}
  given = {**{k: v for k, v in defaults.items() if k in names}, **fields}
  missing = sorted(names - set(given))
  if missing:
    raise internals_changed(
        f"the fields of jax.export.Exported (missing {missing})",
        "restored jax2tf functions cannot be embedded")
  return _export.Exported(**{k: v for k, v in given.items() if k in names})


def disabled_safety_check(name: str) -> Any:
  """``jax.export.DisabledSafetyCheck`` from its serialized name."""
  from jax._src.export import _export  # pylint: disable=g-import-not-at-top
  return _export.DisabledSafetyCheck(name)


# ---------------------------------------------------------------------------
# TensorFlow internals.
# ---------------------------------------------------------------------------

def pfor_converter_registry() -> dict[str, Any] | None:
  """pfor's registry of op converters, or None if TF moved it.

  Our converters wrap pfor's (see :mod:`.pfor`); without the registry pfor's
  own converters are used, and the vectorized function runs the Python
  function again instead of calling the unbatched trace.
  """
  try:
    from tensorflow.python.ops.parallel_for import pfor as pfor_lib  # pylint: disable=g-import-not-at-top
    registry = pfor_lib._pfor_converter_registry  # pylint: disable=protected-access
  except (ImportError, AttributeError):
    return None
  return registry if isinstance(registry, dict) else None


def find_function(graph: Any, name: str) -> Any | None:
  """The function ``name`` in ``graph``'s library or an outer graph's.

  Args:
    graph: a ``tf.Graph``; a ``FuncGraph`` has an ``outer_graph``.
    name: the function's name, as a call op's ``f`` attribute has it.

  Returns:
    TF's function object (with its ``graph``), or None.
  """
  while graph is not None:
    found = graph._get_function(name)  # pylint: disable=protected-access
    if found is not None:
      return found
    graph = getattr(graph, "outer_graph", None)
  return None


def add_function_from_outer_graphs(graph: Any, name: str) -> None:
  """Adds function ``name`` to ``graph`` if only an outer graph has it.

  pfor looks the function of a call it converts up in the call's own graph
  only; see :func:`.pfor._call_of_outer_function`.
  """
  if graph._get_function(name) is None:  # pylint: disable=protected-access
    found = find_function(graph, name)
    if found is not None:
      graph._add_function_recursive(found)  # pylint: disable=protected-access


def pfor_modules_wrapping_functions() -> list[Any]:
  """pfor's modules that wrap their own closures in ``def_function.function``.

  ``control_flow_ops.pfor`` wraps the loop under XLA, and ``pfor`` a function
  call or a while loop it converts. Empty if TF moved them: the closures are
  then traced with autograph, as TF does.
  """
  try:
    from tensorflow.python.ops.parallel_for import control_flow_ops  # pylint: disable=g-import-not-at-top
    from tensorflow.python.ops.parallel_for import pfor as pfor_lib  # pylint: disable=g-import-not-at-top
  except ImportError:
    return []
  return [m for m in (control_flow_ops, pfor_lib)
          if callable(getattr(getattr(m, "def_function", None), "function",
                              None))]


def watch_variables(variables: Sequence[Any]) -> None:
  """Records ``variables`` as used by the graph being built and its outers.

  What calling a concrete function does for the variables it captures, so
  that the enclosing ``tf.function`` lists them in its ``variables``.
  Nothing outside a ``FuncGraph``.
  """
  from tensorflow.python.framework import ops as tf_ops  # pylint: disable=g-import-not-at-top
  watch = getattr(tf_ops.get_default_graph(), "watch_variable", None)
  if watch is not None:
    for v in variables:
      watch(v)


def under_tf_interpretation(args: Sequence[Any]) -> bool:
  """Whether ``args`` are traced by ``jax2tf.convert`` with
  ``native_serialization=False`` (releases before 0.7), which interprets
  JAX primitives as TF ops and has no rule for the ones an embedded
  module's call binds."""
  from jax.experimental.jax2tf import jax2tf as jax2tf_internal  # pylint: disable=g-import-not-at-top
  tracer = getattr(jax2tf_internal, "TensorFlowTracer", None)
  return tracer is not None and any(isinstance(a, tracer) for a in args)


def runs_with_xla_eagerly(callable_tf: object) -> bool:
  """Whether ``callable_tf`` is a ``tf.function(jit_compile=True)``.

  TF runs such a function with XLA eagerly too, so its eager results are
  XLA's (where XLA and TF's graph disagree on a result that holds no
  value, XLA's shape). True also for a ``tf.function`` whose setting this
  TensorFlow does not say where it was read (``_jit_compile``): then
  ``call_tf`` checks its results against the graph, a few milliseconds.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not isinstance(callable_tf, tf.types.experimental.PolymorphicFunction):
    return False
  return bool(getattr(callable_tf, "_jit_compile", True))


def uncapture_constants(graph: object) -> None:
  """Makes the constants ``graph`` captured by value plain constants.

  A ``FuncGraph`` captures a small eager tensor (TF's threshold: 128
  elements) as a ``Const`` op, but also lists it among its inputs, so the
  function takes it as an argument (its ``captured_inputs``) and XLA, which
  compiles the function for argument specs, sees a parameter where the
  graph has a constant. Removed from the inputs and the captures, the
  ``Const`` stays in the graph as any constant does. Nothing if TF moved
  its captures (``check`` names them).

  Args:
    graph: the ``FuncGraph`` being traced (anything else: nothing done).
  """
  captures = getattr(graph, "_function_captures", None)
  by_value = getattr(captures, "by_val_internal", None)
  inputs = getattr(graph, "inputs", None)
  if by_value is None or not hasattr(captures, "pop") or not isinstance(
      inputs, list):
    return
  for key, internal in list(by_value.items()):
    if getattr(internal, "graph", None) is graph and internal.op.type == "Const":
      captures.pop(key, is_by_ref=False)
      inputs[:] = [t for t in inputs if t is not internal]


def set_stack_traces(ops: Sequence[Any]) -> None:
  """Gives ops without a stack trace the current one, as op creation does.

  ``import_graph_def`` leaves the ops it makes without one, and pfor's
  error log reads it. Nothing if TF moved ``TF_SetOpStackTrace``.
  """
  from tensorflow.python.client import pywrap_tf_session  # pylint: disable=g-import-not-at-top
  from tensorflow.python.util import tf_stack  # pylint: disable=g-import-not-at-top
  set_trace = getattr(pywrap_tf_session, "TF_SetOpStackTrace", None)
  if set_trace is None:
    return
  trace = tf_stack.extract_stack(stacklevel=2)
  for op in ops:
    if op.traceback is None:
      set_trace(op._c_op, trace)  # pylint: disable=protected-access


def pfor_fallback_converter() -> Callable[..., Any]:
  """pfor's converter that loops over the batch for one op.

  ``_fallback_converter(pfor_input, root_cause="", warn=False)``: the op
  alone in a ``while_loop``, its outputs stacked.

  Raises:
    InternalsChangedError: pfor has no such function.
  """
  from tensorflow.python.ops.parallel_for import pfor as pfor_lib  # pylint: disable=g-import-not-at-top
  converter = getattr(pfor_lib, "_fallback_converter", None)
  if converter is None:
    raise internals_changed(
        "tensorflow.python.ops.parallel_for.pfor._fallback_converter",
        "call_tf cannot vectorize stateless random ops with a "
        "batched seed")
  return converter


def pfor_wrap(value: Any, is_stacked: bool) -> Any:
  """``pfor.wrap``: a converter's result."""
  from tensorflow.python.ops.parallel_for import pfor as pfor_lib  # pylint: disable=g-import-not-at-top
  return pfor_lib.wrap(value, is_stacked)


def compiler_ir_of_concrete_function(concrete_fn: Any,
                                     specs: Sequence[Any]) -> Any | None:
  """TF's compiler IR getter for ``concrete_fn`` specialized to ``specs``.

  ``compiler_ir.from_concrete_function`` (TF 2.13+) compiles exactly the
  given concrete function; None if TF lacks it. Called with a
  ``platform_name``, the getter returned here asks TF for the IR directly:
  TF's own getter first runs an eager op (``random_normal``) to find the
  "preferred" device, whose name TF does not use once it has the platform;
  in a fresh process that op is the first eager one, 15-25 ms of a first
  call (measured). Without a platform, TF's getter.
  """
  try:
    from tensorflow.python.eager import context as tf_context  # pylint: disable=g-import-not-at-top
    from tensorflow.python.eager.polymorphic_function import compiler_ir  # pylint: disable=g-import-not-at-top
  except ImportError:
    return None
  fn = getattr(compiler_ir, "from_concrete_function", None)
  if fn is None:
    return None
  specs = list(specs)
  tf_getter = fn(concrete_fn, specs)  # checks that the shapes are static
  get_ir = getattr(tf_context.context(), "get_compiler_ir", None)
  if get_ir is None or "platform_name" not in inspect.signature(
      get_ir).parameters:
    return tf_getter

  def getter(stage: str = "hlo", platform_name: str | None = None) -> Any:
    if platform_name is None:
      return tf_getter(stage=stage)
    res = get_ir(device_name=None, platform_name=platform_name,
                 function_name=concrete_fn.name, flat_args=specs,
                 captured_inputs=concrete_fn.captured_inputs, stage=stage)
    return res if stage.endswith("_serialized") else res.decode("utf-8")
  return getter


def hlo_of_concrete_function(
    function_flat_tf: tf.types.experimental.GenericFunction,
    concrete_fn: tf.types.experimental.ConcreteFunction,
    specs: Sequence[tf.TensorSpec], platform: str) -> bytes:
  """The serialized HLO of ``concrete_fn``, ``function_flat_tf`` for ``specs``.

  Compiles exactly ``concrete_fn``, specialized to ``specs``: through the
  ``tf.function``, TF may pick a more general trace (a restored function's
  ``(None, 4)``) and then refuse to compile it; and its
  ``experimental_get_compiler_ir`` cannot bind a keyword argument that is
  not a tensor (call_tf's flat callables take ``check_output_avals``).

  Args:
    function_flat_tf: the ``tf.function``.
    concrete_fn: its concrete function for ``specs``.
    specs: the argument specs, static shapes.
    platform: "CPU", "GPU" or "TPU".

  Returns:
    The HLO module, serialized.
  """
  # (TF's from_concrete_function fails for a function without arguments.)
  getter = (compiler_ir_of_concrete_function(concrete_fn, specs)
            if specs else None)
  if getter is None:
    # The keyword arguments the concrete function was traced with, which
    # TF does not fill in.
    _, kwargs = concrete_fn.structured_input_signature
    getter = function_flat_tf.experimental_get_compiler_ir(*specs, **kwargs)
  return getter(stage="hlo_serialized", platform_name=platform)


def _registered_gradient(op_type: str) -> Any | None:
  """The gradient function registered under ``op_type``, or None.

  Raises:
    InternalsChangedError: TF's gradient registry is not where it was.
  """
  from tensorflow.python.framework import ops as tf_ops  # pylint: disable=g-import-not-at-top
  registry = getattr(tf_ops, "_gradient_registry", None)
  if registry is None or not hasattr(registry, "lookup"):
    raise internals_changed(
        "tensorflow.python.framework.ops._gradient_registry",
        "the gradient of a jax2tf function cannot be found")
  try:
    return registry.lookup(op_type)
  except LookupError:
    return None


def restored_gradient_function(op_type: str) -> Any | None:
  """The concrete gradient function TF's SavedModel loader registered.

  Returns:
    The restored concrete function, or None if no gradient is registered
    under ``op_type`` or the registered one is a Python function (a custom
    gradient not restored from disk).

  Raises:
    InternalsChangedError: a gradient is registered, but not in the form
      this module can read; guessing "no gradient" would mislead the user.
  """
  gradient = _registered_gradient(op_type)
  if gradient is None:
    return None
  if getattr(gradient, "__module__", "") != _SAVED_MODEL_LOADER:
    return None  # a gradient registered in Python, not restored from disk
  for cell in getattr(gradient, "__closure__", None) or ():
    value = cell.cell_contents
    if hasattr(value, "graph") and hasattr(value, "captured_inputs"):
      return value
  raise internals_changed(
      "the closure of the gradient functions TF's SavedModel "
      "loader registers (_gen_gradient_func)",
      "the gradient saved with a jax2tf SavedModel cannot be "
      "found")


def python_gradient_registered(op_type: str) -> bool:
  """Whether a Python function (a ``tf.custom_gradient`` of this process,
  not one restored from a SavedModel) is registered as gradient
  ``op_type``."""
  gradient = _registered_gradient(op_type)
  return (gradient is not None
          and getattr(gradient, "__module__", "") != _SAVED_MODEL_LOADER)


def custom_gradient_function(op_type: str) -> tuple[str, str] | None:
  """The gradient function a ``tf.custom_gradient`` was given, by name.

  ``tf.custom_gradient`` in a graph registers, under the op's
  ``_gradient_op_type``, a function (``internal_grad_fn``) whose closure
  holds one (``tape_grad_fn``) whose closure holds the function it was
  given.

  Returns:
    ``(module, qualified name)`` of that function, or None where the
    registry has no such chain for ``op_type`` (another override, or TF
    moved the chain: then the override is not recognized, and TF's
    gradients are used, as for any other).

  Raises:
    InternalsChangedError: TF's gradient registry is not where it was.
  """
  fn = _registered_gradient(op_type)
  for wrapper in ("internal_grad_fn", "tape_grad_fn"):
    if not getattr(fn, "__qualname__", "").endswith(
        f"_graph_mode_decorator.<locals>.{wrapper}"):
      return None
    inner = [c.cell_contents for c in getattr(fn, "__closure__", None) or ()
             if _cell_is_function(c)]
    if len(inner) != 1:
      return None
    fn, = inner
  return (getattr(fn, "__module__", ""), getattr(fn, "__qualname__", ""))


def _cell_is_function(cell: Any) -> bool:
  try:
    return callable(cell.cell_contents) and hasattr(cell.cell_contents,
                                                    "__code__")
  except ValueError:  # an empty cell
    return False


# The module whose _gen_gradient_func wraps restored gradient functions.
_SAVED_MODEL_LOADER = "tensorflow.python.saved_model.function_deserialization"


def graph_locked_for_mutation(graph: Any) -> bool:
  """Whether ``graph`` is locked for mutation (inside ``tf.gradients``).

  ``Session.run`` on such a graph waits for the lock, which our own caller
  holds: a deadlock. So if TF no longer exposes the lock's state, this raises
  instead of guessing.
  """
  try:
    from tensorflow.python.framework import ops as tf_ops  # pylint: disable=g-import-not-at-top
    counts = graph._group_lock._group_member_counts  # pylint: disable=protected-access
    return counts[tf_ops._MUTATION_LOCK_GROUP] > 0  # pylint: disable=protected-access
  except (AttributeError, ImportError, IndexError, TypeError) as e:
    raise internals_changed(
        "tf.Graph._group_lock._group_member_counts and "
        "ops._MUTATION_LOCK_GROUP",
        "call_tf cannot tell whether reading variables through the session "
        "would deadlock, so it does not read them") from e


def session_is_open(sess: Any) -> bool:
  """Whether a ``tf.compat.v1.Session`` is still open."""
  closed = getattr(sess, "_closed", None)
  if not isinstance(closed, bool):
    raise internals_changed(
        "tf.compat.v1.Session._closed",
        "call_tf cannot tell which session holds the variables")
  return not closed


def is_plain_resource_variable(value: object) -> bool:
  """Whether ``value`` is a plain resource variable (``tf.Variable``'s class
  eagerly, not a subclass: a distributed variable reads otherwise), which a
  ``ReadVariableOp`` of its handle reads. False where TF moved the class:
  every value is then read as NumPy reads it."""
  try:
    from tensorflow.python.ops import resource_variable_ops  # pylint: disable=g-import-not-at-top
  except ImportError:
    return False
  return type(value) is getattr(resource_variable_ops, "ResourceVariable",  # pylint: disable=unidiomatic-typecheck
                                None)


def read_only_numpy_view(tensor: tf.Tensor) -> np.ndarray:
  """An eager tensor's value as a read-only NumPy view of its buffer.

  ``numpy()`` copies the buffer: a ResNet50's 320 variable reads (94 MB)
  took 40-80 ms with the copies, 5-8 ms without. The view holds the
  tensor's buffer, so it stays the value read: TF copies a variable's
  buffer before an update while a read holds it (copy-on-write; in
  copy-on-read mode, after a sparse update, the read is a copy already).
  It is made read-only, since a read aliases the variable's buffer. A
  copy where TF moved ``_numpy``.
  """
  view = getattr(tensor, "_numpy", None)
  if view is None:
    return tensor.numpy()
  array = view()
  if isinstance(array, np.ndarray):
    array.flags.writeable = False
  return array


# ---------------------------------------------------------------------------
# The check the tests run.
# ---------------------------------------------------------------------------

class _Missing:
  """Collects what a group of checks needs and cannot find, in order."""

  def __init__(self) -> None:
    self.problems: list[str] = []

  def __call__(self, ok: bool, what: str) -> None:
    if not ok:
      self.problems.append(what)


def _jax_core_missing() -> list[str]:
  """What is missing of jax._src.mlir and jaxlib, beyond the interpreter's.

  (:func:`_jax_interpreter_missing`, the interpreter's own check, covers
  the internals both use.)
  """
  need = _Missing()
  for name in ("custom_call", "eval_dynamic_shape_as_tensor"):
    need(hasattr(mlir, name), f"jax._src.interpreters.mlir.{name}")
  if hasattr(mlir, "custom_call"):
    need("result_shapes" in inspect.signature(mlir.custom_call).parameters,
         "mlir.custom_call(result_shapes=...)")
  need(hasattr(mlir_extension(), "hlo_to_stablehlo")
       or hasattr(mlir, "xla_computation_to_mlir_module"),
       "jaxlib's mlir.hlo_to_stablehlo (or mlir.xla_computation_to_mlir_module)")
  return need.problems


def _jax_export_missing() -> list[str]:
  """What is missing of jax.export's Exported and its pieces."""
  from jax._src.export import _export  # pylint: disable=g-import-not-at-top
  need = _Missing()
  fields = {f.name for f in dataclasses.fields(_export.Exported)}
  for name in ("fun_name", "in_tree", "in_avals", "out_tree", "out_avals",
               "nr_devices", "platforms", "ordered_effects",
               "unordered_effects", "disabled_safety_checks",
               "mlir_module_serialized", "calling_convention_version",
               "module_kept_var_idx", "uses_global_constants", "_get_vjp"):
    need(name in fields, f"jax.export.Exported.{name}")
  return need.problems


def _jax_transforms_missing() -> list[str]:
  """What is missing of JAX's shapes, autodiff, lowering and jax2tf."""
  from jax._src.export import shape_poly  # pylint: disable=g-import-not-at-top
  from jax._src.interpreters import ad  # pylint: disable=g-import-not-at-top
  from jax.experimental.jax2tf import jax2tf as jax2tf_internal  # pylint: disable=g-import-not-at-top
  need = _Missing()
  need(hasattr(util, "partition_list") and hasattr(util, "merge_lists"),
       "jax._src.util.partition_list and merge_lists")
  for name in ("unsafe_am_i_under_a_jit", "is_constant_dim",
               "is_constant_shape", "definitely_equal",
               "definitely_equal_shape", "evaluate_shape"):
    need(hasattr(core, name), f"jax._src.core.{name}")
  for name in ("SymbolicScope", "all_dim_vars"):
    need(hasattr(shape_poly, name), f"jax._src.export.shape_poly.{name}")
  for name in ("instantiate_zeros", "is_undefined_primal", "Zero",
               "primitive_jvps", "primitive_transposes"):
    need(hasattr(ad, name), f"jax._src.interpreters.ad.{name}")
  need(hasattr(mlir, "lower_fun") and hasattr(mlir, "register_lowering"),
       "jax._src.interpreters.mlir.lower_fun and register_lowering")
  for name in ("inside_call_tf", "_to_jax_dtype", "_to_tf_dtype"):
    need(hasattr(jax2tf_internal, name),
         f"jax.experimental.jax2tf.jax2tf.{name}")
  return need.problems


def _tf_pfor_missing() -> list[str]:
  """What is missing of TF's vectorizer (pfor) and the HLO proto."""
  from tensorflow.python.ops.parallel_for import pfor as pfor_lib  # pylint: disable=g-import-not-at-top
  need = _Missing()
  for op_type in ("MatMul", "PartitionedCall", "StatefulPartitionedCall",
                  "CheckNumerics"):
    need(op_type in (pfor_converter_registry() or {}),
         f"tensorflow pfor._pfor_converter_registry[{op_type!r}]")
  need(callable(getattr(pfor_lib, "_fallback_converter", None)),
       "tensorflow pfor._fallback_converter")
  try:
    from tensorflow.compiler.xla.service import hlo_pb2  # pylint: disable=g-import-not-at-top
    need(hasattr(hlo_pb2, "HloModuleProto"),
         "tensorflow.compiler.xla.service.hlo_pb2.HloModuleProto")
  except ImportError:
    need(False, "tensorflow.compiler.xla.service.hlo_pb2")
  need(len(pfor_modules_wrapping_functions()) == 2,
       "tensorflow control_flow_ops.def_function and pfor.def_function")
  return need.problems


def _tf_graph_missing() -> list[str]:
  """What is missing of TF's graphs, gradients, operations and sessions."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow.python.client import pywrap_tf_session  # pylint: disable=g-import-not-at-top
  from tensorflow.python.framework import func_graph  # pylint: disable=g-import-not-at-top
  from tensorflow.python.framework import ops as tf_ops  # pylint: disable=g-import-not-at-top
  from tensorflow.python.saved_model import function_deserialization  # pylint: disable=g-import-not-at-top
  need = _Missing()
  need(hasattr(getattr(tf_ops, "_gradient_registry", None), "lookup"),
       "tensorflow ops._gradient_registry.lookup")
  need(function_deserialization.__name__ == _SAVED_MODEL_LOADER
       and hasattr(function_deserialization, "_gen_gradient_func"),
       f"{_SAVED_MODEL_LOADER}._gen_gradient_func")
  need(hasattr(tf_ops, "_MUTATION_LOCK_GROUP"),
       "tensorflow ops._MUTATION_LOCK_GROUP")
  graph = tf.Graph()
  need(hasattr(getattr(graph, "_group_lock", None), "_group_member_counts"),
       "tf.Graph._group_lock._group_member_counts")
  for name in ("_get_function", "_add_function_recursive"):
    need(hasattr(graph, name), f"tf.Graph.{name}")
  need(hasattr(func_graph.FuncGraph, "watch_variable"),
       "tensorflow FuncGraph.watch_variable")
  with func_graph.FuncGraph("call_tf_check").as_default() as fgraph:
    captures = getattr(fgraph, "_function_captures", None)
    need(hasattr(captures, "by_val_internal") and hasattr(captures, "pop")
         and isinstance(getattr(fgraph, "inputs", None), list),
         "tensorflow FuncGraph._function_captures.by_val_internal, pop")
  need(hasattr(pywrap_tf_session, "TF_SetOpStackTrace"),
       "tensorflow pywrap_tf_session.TF_SetOpStackTrace")
  with graph.as_default():
    op = tf.constant(0.).op
    silu = tf.nn.silu(tf.constant([1.])).op
  need(isinstance(getattr(op, "_is_stateful", None), bool),
       "tf.Operation._is_stateful")
  override = silu.node_def.attr.get("_gradient_op_type")
  need(override is not None and (custom_gradient_function(
      override.s.decode()) or ("",))[0] == "tensorflow.python.ops.nn_impl",
       "tf.custom_gradient's registered gradient functions "
       "(_graph_mode_decorator's internal_grad_fn, tape_grad_fn)")
  with tf.compat.v1.Session(graph=graph) as sess:
    need(isinstance(getattr(sess, "_closed", None), bool),
         "tf.compat.v1.Session._closed")
  with tf.init_scope():
    need(is_plain_resource_variable(tf.Variable(0.)),
         "tensorflow resource_variable_ops.ResourceVariable, the class of "
         "an eager tf.Variable")
    need(callable(getattr(tf.constant(0.), "_numpy", None)),
         "tensorflow EagerTensor._numpy, the view of an eager tensor's "
         "buffer")
  return need.problems


def _tf_compiler_ir_missing() -> list[str]:
  """What is missing of TF's compiler IR of a concrete function."""
  need = _Missing()
  try:
    from tensorflow.python.eager.polymorphic_function import compiler_ir  # pylint: disable=g-import-not-at-top
    need(hasattr(compiler_ir, "from_concrete_function"),
         "tensorflow compiler_ir.from_concrete_function")
    from tensorflow.python.eager import context as tf_context  # pylint: disable=g-import-not-at-top
    need("platform_name" in inspect.signature(
        tf_context.context().get_compiler_ir).parameters,
         "tensorflow context.get_compiler_ir(platform_name=...)")
  except ImportError:
    need(False, "tensorflow.python.eager.polymorphic_function.compiler_ir")
  try:
    from tensorflow.python.framework import config as tf_config  # pylint: disable=g-import-not-at-top
    need(hasattr(tf_config, "is_op_determinism_enabled"),
         "tensorflow config.is_op_determinism_enabled")
  except ImportError:
    need(False, "tensorflow.python.framework.config")
  return need.problems


def op_determinism_enabled() -> bool | None:
  """Whether TF's ops are deterministic (``enable_op_determinism``).

  Returns:
    None where this TensorFlow does not say (then ``check`` names it).
  """
  try:
    from tensorflow.python.framework import config as tf_config  # pylint: disable=g-import-not-at-top
  except ImportError:
    return None
  enabled = getattr(tf_config, "is_op_determinism_enabled", None)
  return None if enabled is None else bool(enabled())


# The groups `check` runs, in order.
_CHECKS: tuple[Callable[[], list[str]], ...] = (
    _jax_interpreter_missing, export_pieces_missing, _jax_core_missing,
    _jax_export_missing,
    _jax_transforms_missing, _tf_pfor_missing, _tf_graph_missing, _tf_compiler_ir_missing)


def check() -> list[str]:
  """What this module relies on and cannot find; empty if all is there."""
  return [problem for group in _CHECKS for problem in group()]
