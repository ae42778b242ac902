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
"""Compiling a TF function to HLO for ``call_tf``, in every TensorFlow mode.

``call_tf`` embeds a TF function in a JAX computation by compiling it to HLO,
whose parameters are the function's arguments followed by the values it
captures, in the order of the concrete function's ``captured_inputs``.
:func:`compile_to_hlo` does so in TF2 eager mode, while a ``tf.function`` is
being traced, and in TF1 graph mode (``tf.compat.v1``), where it re-imports
the function's graph into an eager ``tf.function`` first, since TF compiles
only eager functions. Every compilation first checks the TensorFlow version
(:mod:`.version`).

See https://github.com/jax-ml/jax/issues/11753.
"""

from __future__ import annotations

from collections.abc import Sequence
import functools
import sys

from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib.tf_function import captures
from jax.experimental.jax2tf.call_tf_lib.tf_function import effects
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
from jax.experimental.jax2tf.call_tf_lib.tf_function import persistent_cache
from jax.experimental.jax2tf.call_tf_lib.tf_function import version
from jax.experimental.jax2tf.call_tf_lib.tf_function import xla_fidelity
from jax.experimental.jax2tf import jax2tf as jax2tf_internal
import tensorflow as tf


# The platform of the module call_tf reads to analyse a TF function (its
# result shapes, whether XLA compiles it) and to express it as JAX
# operations, which JAX lowers for whatever platform a computation targets:
# the CPU, for which every TensorFlow compiles (tensorflow-cpu, the
# TensorFlow that installs beside jax[tpu] and jax[cuda12], has no other).
ENGINE_PLATFORM = "CPU"

# TensorFlow's names of JAX's lowering platforms.
_TF_PLATFORMS = {"cpu": "CPU", "cuda": "GPU", "rocm": "GPU", "gpu": "GPU",
                 "tpu": "TPU"}


def tf_platform(jax_platform: str) -> str:
  """TensorFlow's name ("CPU", "GPU", "TPU") of a JAX platform.

  Raises:
    ValueError: a platform TensorFlow has no name for.
  """
  try:
    return _TF_PLATFORMS[jax_platform.lower()]
  except KeyError:
    raise ValueError(
        f"call_tf: platform {jax_platform!r} is not one TensorFlow compiles "
        f"for ({', '.join(sorted(_TF_PLATFORMS))})") from None


@functools.cache
def tf_compiles_for(platform: str) -> bool:
  """Whether the installed TensorFlow compiles for ``platform`` here.

  The CPU always. A GPU or a TPU only where TensorFlow was built for it
  and sees such a device: tf2xla asked for a platform it lacks fails, or
  (tensorflow-cpu asked for the GPU) returns a module and leaves the
  process to die at exit.

  Args:
    platform: "CPU", "GPU" or "TPU".
  """
  if platform == "CPU":
    return True
  if platform == "GPU" and not tf.test.is_built_with_gpu_support():
    return False
  try:
    return bool(tf.config.list_physical_devices(platform))
  except Exception:  # pylint: disable=broad-except
    return False


def _compile_eager(function_flat_tf: tf.types.experimental.GenericFunction,
                   concrete_fn: tf.types.experimental.ConcreteFunction,
                   specs: Sequence[tf.TensorSpec], platform: str) -> bytes:
  return compat.hlo_of_concrete_function(function_flat_tf, concrete_fn, specs,
                                         platform)


def _compile_graph_mode(concrete_fn: tf.types.experimental.ConcreteFunction,
                        specs: Sequence[tf.TensorSpec],
                        platform: str) -> bytes:
  """Compiles a function traced in a TF1 graph, by re-importing it eagerly.

  The function body (with its function library) is imported into a new
  ``tf.function`` built in eager mode: arguments bind to new arguments, and
  each captured value, in order, to an eager stand-in variable of its shape
  and dtype, so that the compiled function takes them in the original
  order. Their values do not matter: call_tf passes the values read through
  the session as operands.
  """
  from tensorflow.python.eager import context as tf_context  # pylint: disable=g-import-not-at-top
  graph = concrete_fn.graph
  graph_def = graph.as_graph_def()
  internal = list(graph.internal_captures)
  captured = captures.captured_objects(concrete_fn)
  arg_placeholders = list(graph.inputs[:len(graph.inputs) - len(internal)])
  if len(arg_placeholders) != len(specs):
    raise errors.argument_count_error(len(arg_placeholders), len(specs))
  _drop_rebound_placeholders(
      graph_def, {t.op.name for t in [*arg_placeholders, *internal]})
  out_names = [t.name for t in graph.outputs]
  with tf_context.eager_mode():
    stand_ins = [tf.Variable(tf.zeros(c.shape, c.dtype.base_dtype),
                             trainable=False) for c in captured]

    def body(*args):
      input_map = {p.name: a for p, a in zip(arg_placeholders, args)}
      func_graph = tf.compat.v1.get_default_graph()
      for placeholder, v in zip(internal, stand_ins):
        handle = func_graph.capture(v.handle)
        input_map[placeholder.name] = (
            handle if placeholder.dtype == tf.resource
            else tf.raw_ops.ReadVariableOp(resource=handle,
                                           dtype=v.dtype.base_dtype))
      return tf.graph_util.import_graph_def(
          graph_def, input_map=input_map, return_elements=out_names, name="")

    fn = tf.function(body, jit_compile=True, autograph=False)
    return fn.experimental_get_compiler_ir(*specs)(
        stage="hlo_serialized", platform_name=platform)


def _drop_rebound_placeholders(graph_def: tf.compat.v1.GraphDef,
                               rebound: set[str]) -> None:
  """Removes from ``graph_def`` the nodes named in ``rebound``, the control
  inputs on them, and every node's colocation attributes.

  The placeholders that are rebound must go, or XLA would try to compile
  them, and with them the control inputs on them (TF's gradients add such,
  as Exp's conjugate of a complex result; the arguments exist before any
  op runs): ``import_graph_def``'s ``input_map`` rebinds values only.
  Colocation attributes may name nodes of the outer graph.
  """
  kept = [n for n in graph_def.node if n.name not in rebound]
  del graph_def.node[:]
  graph_def.node.extend(kept)
  for node in graph_def.node:
    if "_class" in node.attr:
      del node.attr["_class"]
    inputs = [i for i in node.input
              if not (i.startswith("^") and i[1:] in rebound)]
    if len(inputs) != len(node.input):
      del node.input[:]
      node.input.extend(inputs)


def _check_no_variable_writes(side_effect_ops: Sequence[tuple[str, str]]
                              ) -> None:
  """Raises a clear error for a function that writes variables.

  XLA compiles such a function into one that returns the new values of the
  variables as extra results, which call_tf cannot embed (upstream failed
  with an obscure length mismatch).

  Args:
    side_effect_ops: the function's ops with side effects
      (:func:`.effects.side_effect_ops`).
  """
  writes = [(t, n) for t, n in side_effect_ops if effects.writes_variable(t)]
  if writes:
    raise errors.variable_write_under_jit_error(*writes[0])


def _check_no_growing_lists(graph: tf.Graph) -> None:
  """Raises for a list that grows, which XLA compiles into a wrong one.

  A ``tf.TensorArray(..., dynamic_size=True)`` (a ``TensorListSetItem``
  that may resize its list) compiles with XLA into a list of its initial
  size whose writes beyond it are lost: TensorFlow's own
  ``tf.function(jit_compile=True)`` returns other values than TensorFlow
  does (measured: a loop of three writes into a list of initial size 0
  gives zeros). A wrong number is never an answer: the call is refused.

  Args:
    graph: the graph of the function to compile (with the functions it
      calls).

  Raises:
    errors.CallTfCompileError: naming the op.
  """
  for op in graph_lib.graph_ops(graph):
    if op.type == "TensorListSetItem" and _attr(
        op, "resize_if_index_out_of_bounds", False):
      raise errors.growing_list_error(op.name)


def _check_no_inexact_kernels(graph: tf.Graph) -> None:
  """Raises for an op whose XLA kernel computes otherwise than TF's.

  tf2xla's kernels of some ops trade exactness for speed
  (:data:`.xla_fidelity.INEXACT_KERNELS`: max pooling's second-order
  gradient packs a value and an index into one word). TensorFlow's own
  ``tf.function(jit_compile=True)`` returns their wrong values; a wrong
  number is never an answer: the call is refused.

  Args:
    graph: the graph of the function to compile (with the functions it
      calls).

  Raises:
    errors.CallTfCompileError: naming the op.
  """
  inexact = xla_fidelity.inexact_kernel_ops(graph)
  if inexact:
    raise errors.inexact_kernel_error(inexact[0].op_type, inexact[0].node,
                                      inexact[0].why)


def _check_modules_compile_for(graph: tf.Graph, platform: str) -> None:
  """Raises for a jax2tf module that TensorFlow cannot compile here.

  A ``jax2tf.convert`` function serialized for other platforms only (the
  TPU's, by default on a TPU) is an ``XlaCallModule`` op that TensorFlow
  refuses to compile for ``platform`` (or, eagerly, to run). Said before
  TensorFlow is asked, naming the op and what to do.

  Args:
    graph: the graph of the function to compile (with the functions it
      calls).
    platform: TensorFlow's name of the platform ("CPU").

  Raises:
    errors.CallTfPlatformError: naming the op and its platforms.
  """
  for op in graph_lib.graph_ops(graph):
    if op.type != "XlaCallModule":
      continue
    platforms = [p.decode() if isinstance(p, bytes) else p
                 for p in _attr(op, "platforms", ())]
    checks = [c.decode() if isinstance(c, bytes) else c
              for c in _attr(op, "disabled_checks", ())]
    if platforms and platform not in platforms and "platform" not in checks:
      raise errors.foreign_module_error(op.name, platforms, platform)


def _attr(op: tf.Operation, name: str, default: object) -> object:
  try:
    return op.get_attr(name)
  except ValueError:
    return default


@functools.lru_cache(maxsize=256)
def _compile_eager_cached(
    function_flat_tf: tf.types.experimental.GenericFunction,
    specs: tuple[tf.TensorSpec, ...], platform: str) -> bytes:
  concrete_fn = graph_lib.concrete_function(function_flat_tf, specs)
  # The scan abstract evaluation made (cached): the graph is walked once.
  _check_no_variable_writes(
      effects.function_side_effect_ops(function_flat_tf, specs))
  _check_no_growing_lists(concrete_fn.graph)
  _check_no_inexact_kernels(concrete_fn.graph)
  _check_modules_compile_for(concrete_fn.graph, platform)

  def compile_now() -> bytes:
    with jax2tf_internal.inside_call_tf():
      return _compile_eager(function_flat_tf, concrete_fn, specs, platform)
  # The HLO of the same graph, if a process made it before (the checks
  # above passed for it then too).
  return persistent_cache.get_or_make(
      hlo_cache_key(concrete_fn, specs, platform), compile_now)


def hlo_cache_key(concrete_fn: tf.types.experimental.ConcreteFunction,
                  specs: Sequence[tf.TensorSpec], platform: str
                  ) -> persistent_cache.Key | None:
  """The persistent cache's key of a trace's HLO (None: not to be kept).

  Its code is every module whose checks a kept entry stands for (a hit
  skips them: the entry passed them when it was made).
  """
  return persistent_cache.conversion_key(
      "hlo", concrete_fn, specs, platform,
      code=[persistent_cache.source_digest(
          sys.modules[__name__], compat, captures, effects, graph_lib,
          version, xla_fidelity)])


# Under jit with the slow-vmap fallback, the batching rule compiles the
# vectorized function to probe XLA compatibility, and the lowering compiles
# it again: the HLO is shared.
compat.register_cache(_compile_eager_cached, "call_tf: HLO of TF functions")


def compile_to_hlo(function_flat_tf: tf.types.experimental.GenericFunction,
                   specs: Sequence[tf.TensorSpec],
                   platform: str) -> bytes:
  """Compiles a TF function to serialized HLO, in any TF execution mode.

  Args:
    function_flat_tf: the ``tf.function(jit_compile=True)`` of the call.
    specs: static ``tf.TensorSpec``s of the arguments.
    platform: "CPU", "GPU" or "TPU".

  Returns:
    The serialized HLO. Its parameters are the arguments, then the values
    the function captures, in the order of its ``captured_inputs``.

  Raises:
    errors.CallTfStatefulFunctionError: the function assigns a variable.
    errors.CallTfCompileError: XLA would compute it otherwise than TF (a
      list that grows, an op whose XLA kernel is not exact).
    errors.CallTfPlatformError: it holds a jax2tf module serialized for
      other platforms than ``platform``.
    Exception: TensorFlow's error where XLA cannot compile the function.
  """
  version.check_tensorflow_version()
  specs = tuple(specs)
  if captures.executing_eagerly_outside_functions():
    return _compile_eager_cached(function_flat_tf, specs, platform)
  concrete_fn = graph_lib.concrete_function(function_flat_tf, specs)
  with jax2tf_internal.inside_call_tf():
    _check_no_variable_writes(effects.side_effect_ops(concrete_fn.graph))
    _check_no_growing_lists(concrete_fn.graph)
    _check_no_inexact_kernels(concrete_fn.graph)
    _check_modules_compile_for(concrete_fn.graph, platform)
    return _compile_graph_mode(concrete_fn, specs, platform)
