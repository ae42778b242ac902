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
"""The errors ``call_tf`` raises, and their messages.

Each message says what went wrong, with the values involved, and what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
import re
from typing import TYPE_CHECKING

from jax.experimental.jax2tf.call_tf_lib import vmap_methods

if TYPE_CHECKING:
  from jax._src import core
  import tensorflow as tf

FLAG_HINT = ("the jax_call_tf_slow_vmap option (JAX_CALL_TF_SLOW_VMAP=1, "
             "jax.config.update('jax_call_tf_slow_vmap', True), or "
             "--jax_call_tf_slow_vmap)")

ONE_CALL_HINT = ("one of the one-call methods "
                 f"vmap_method={vmap_methods.EXPAND_DIMS!r}, "
                 f"{vmap_methods.BROADCAST_ALL!r} or "
                 f"{vmap_methods.BATCH_POLYMORPHIC!r}")

# The words that mark the line of pfor's error that says what failed (these
# are TensorFlow's words, not vmap_method names).
_PFOR_FAILURE_WORDS = ("pfor", "loop invariant")  # not a vmap_method


class CallTfVectorizationError(ValueError):
  """``jax.vmap`` of ``call_tf``: the function could not be vectorized.

  Attributes:
    op_type: the TF op type that could not be vectorized, or None if the
      error did not say.
    op_name: the name of that node in the TF graph, or None.
  """

  def __init__(self, msg: str, op_type: str | None = None,
               op_name: str | None = None):
    super().__init__(msg)
    self.op_type = op_type
    self.op_name = op_name


class CallTfUninitializedVariablesError(ValueError):
  """``call_tf`` needs the value of a TF1 variable that is not initialized."""


class CallTfTensorFlowVersionError(ImportError):
  """The installed TensorFlow is older than ``call_tf`` supports."""


class CallTfStatefulFunctionError(ValueError):
  """A TF function with side effects where ``call_tf`` cannot run them."""


class CallTfCompileError(ValueError):
  """A TF function that XLA would compile into one that computes otherwise."""


class CallTfTraceError(TypeError):
  """A TF function that fails where ``call_tf`` traces it into a graph.

  A ``TypeError`` as TensorFlow's own error (``len`` of a symbolic tensor)
  was.
  """


class CallTfDynamicShapeError(ValueError):
  """A TF function's results have sizes that depend on the values."""


class CallTfDerivativeError(ValueError):
  """A derivative of ``call_tf`` that TensorFlow cannot compute.

  Raised rather than returning zeros for it.
  """


class CallTfPlatformError(ValueError):
  """A call ``call_tf`` cannot lower for a platform.

  The installed TensorFlow does not compile for the platform, and the
  function's CPU module has an op the StableHLO interpreter cannot express
  as JAX operations (which JAX would lower for any platform).
  """


def describe_op(op_type: str | None, node_name: str | None) -> str:
  """"op 'T' (node 'N')" for messages."""
  where = f"op '{op_type}'" if op_type else "an op"
  return where + (f" (node '{node_name}')" if node_name else "")


def first_line(e: BaseException | str, keywords: Sequence[str] = ()) -> str:
  """The first line of ``e``'s message that has one of ``keywords``."""
  lines = [l.strip() for l in str(e).strip().splitlines() if l.strip()]
  for l in lines:
    if any(k in l for k in keywords):
      return l
  return lines[0] if lines else type(e).__name__


def what_to_do(vmap_method: vmap_methods.VmapMethod | None) -> str:
  """What a user can do when a vectorizing vmap_method cannot vectorize."""
  if vmap_method is None:
    return (
        "To run one TensorFlow call per batch element instead (a loop, "
        f"slower), pass vmap_method={vmap_methods.SEQUENTIAL!r} to call_tf, "
        f"or turn on {FLAG_HINT} to fall back to it automatically. If the "
        "TensorFlow function already handles a leading batch axis, "
        f"{ONE_CALL_HINT} makes a single call.")
  return (
      f"vmap_method={vmap_method!r} never falls back: pass "
      f"vmap_method={vmap_methods.SEQUENTIAL!r} (one call per batch "
      f"element), or {ONE_CALL_HINT} if the function handles a leading "
      f"batch axis, or vmap_method=None with {FLAG_HINT}.")


def pfor_error(op_type: str | None, node_name: str | None,
               vmap_method: vmap_methods.VmapMethod | None,
               cause: BaseException | str, *,
               compile_failure: str | None = None
               ) -> CallTfVectorizationError:
  """pfor (``tf.vectorized_map``) cannot vectorize an op of the function.

  Args:
    op_type: the op pfor cannot vectorize.
    node_name: its node.
    vmap_method: the method that asked for pfor.
    cause: pfor's error.
    compile_failure: under ``jax.jit``, why XLA cannot compile the
      unbatched function either, if it cannot: then no ``vmap_method`` runs
      it under ``jax.jit``, and the way out is to call it outside.
  """
  if compile_failure is None:
    remedy = what_to_do(vmap_method)
  else:
    remedy = (
        "Under jax.jit no vmap_method runs it: XLA cannot compile the "
        f"unbatched function either ({compile_failure}). Call it outside "
        "jax.jit, where call_tf runs it in TensorFlow and "
        f"vmap_method={vmap_methods.SEQUENTIAL!r} runs it once per batch "
        "element.")
  return CallTfVectorizationError(
      f"jax.vmap of call_tf (vmap_method={vmap_method!r}) vectorizes the "
      "TensorFlow function with tf.vectorized_map (pfor), which cannot "
      f"vectorize {describe_op(op_type, node_name)}. "
      f"{remedy}\nTensorFlow said: "
      f"{first_line(cause, _PFOR_FAILURE_WORDS)}",
      op_type, node_name)


def stateful_error(op_type: str, node_name: str | None,
                   vmap_method: vmap_methods.VmapMethod | None, *,
                   effect: str = "",
                   under_jit: bool = False, writes_variable: bool = False
                   ) -> CallTfVectorizationError:
  """The function has an op with side effects; one call would run it once.

  Args:
    op_type: the op with side effects.
    node_name: its node.
    vmap_method: the method that would make fewer calls than the batch.
    effect: what the op does (:func:`.effects.describe_effect`).
    under_jit: whether the call is under ``jax.jit``.
    writes_variable: whether the op assigns a variable, which no call under
      ``jax.jit`` can do.
  """
  effect = effect or "which has side effects"
  if "side effects" not in effect:
    effect += ", so it has side effects"
  op = f"{describe_op(op_type, node_name)}, {effect}"
  if under_jit and writes_variable:
    return CallTfVectorizationError(
        f"jax.vmap of call_tf (vmap_method={vmap_method!r}) under jax.jit: "
        f"the TensorFlow function has {op}. Under jax.jit call_tf compiles "
        "the function with XLA into the JAX program, where side effects "
        "such as a variable assignment cannot happen, with or without "
        "jax.vmap. Call it "
        "outside jax.jit, where call_tf runs it in TensorFlow eager mode "
        f"and vmap_method={vmap_methods.SEQUENTIAL!r} runs it once per batch "
        "element; or "
        "return the new value from the function and assign the variable "
        "outside call_tf.", op_type, node_name)
  if vmap_method in vmap_methods.ONE_CALL:
    return CallTfVectorizationError(
        f"jax.vmap of call_tf (vmap_method={vmap_method!r}) makes one "
        "TensorFlow call for the whole batch, but the TensorFlow function "
        f"has {op}: it would run once instead of once per batch element. "
        f"Pass vmap_method={vmap_methods.SEQUENTIAL!r} to call_tf to run the "
        "function once per batch element.", op_type, node_name)
  return CallTfVectorizationError(
      f"jax.vmap of call_tf (vmap_method={vmap_method!r}): the TensorFlow "
      f"function has {op}. tf.vectorized_map (pfor) would run it once for "
      "the whole batch instead of once per batch element, so call_tf does "
      f"not vectorize it. {what_to_do(vmap_method)}",
      op_type, node_name)


def opaque_module_error(vmap_method: vmap_methods.VmapMethod | None
                        ) -> CallTfVectorizationError:
  """A jax2tf function (saved, or converted live) is one XlaCallModule op,
  which pfor cannot vectorize; its module is not interpreted here (the
  option ``jax_call_tf_vectorizer`` is ``"pfor"``, or the interpreter has
  no rule for an op of it)."""
  return CallTfVectorizationError(
      f"jax.vmap of call_tf (vmap_method={vmap_method!r}) of a jax2tf "
      "function (jax2tf.convert, or a SavedModel of one): TensorFlow's "
      "vectorizer (pfor) cannot vectorize op 'XlaCallModule' (its "
      "serialized StableHLO), and its module is not expressed as JAX "
      "operations here (the option jax_call_tf_vectorizer is "
      f"{vmap_methods.PFOR!r}, or "
      "the debug log of jax.experimental.jax2tf.call_tf_lib.stablehlo.path "
      "says why). If the function takes a leading batch axis whose rows "
      "are independent (jax2tf.convert with "
      "polymorphic_shapes=['(b, ...)']), "
      f"vmap_method={vmap_methods.BATCH_POLYMORPHIC!r} "
      "makes one call for the whole batch. " + what_to_do(vmap_method),
      "XlaCallModule", None)


def xla_compile_error(op_type: str | None, node_name: str | None,
                      vmap_method: vmap_methods.VmapMethod | None,
                      cause: BaseException | str
                      ) -> CallTfVectorizationError:
  """pfor vectorized the function, but XLA cannot compile the result."""
  if isinstance(cause, CallTfCompileError):
    # call_tf's own refusal of what pfor made (a list that grows, an
    # inexact kernel): it names the op and says why.
    return CallTfVectorizationError(
        f"jax.vmap of call_tf (vmap_method={vmap_method!r}) under jax.jit: "
        "tf.vectorized_map (pfor) vectorized the TensorFlow function, but "
        "call_tf cannot compile the result with XLA (eagerly, without "
        f"jax.jit, the vectorized call may work). {what_to_do(vmap_method)}"
        f"\n{cause}", op_type, node_name)
  if op_type and op_type.startswith(("TensorList", "TensorArray")):
    why = ("pfor vectorizes a tf.map_fn, tf.scan or TensorArray loop into "
           "TensorList ops whose element shapes XLA cannot infer")
  elif op_type in ("DynamicStitch", "ParallelDynamicStitch", "Where",
                   "DynamicPartition"):
    why = ("pfor turns a tf.cond or tf.while_loop whose predicate depends on "
           "the batched values into ops with data-dependent shapes, which "
           "XLA does not support")
  else:
    why = "pfor made an op that XLA cannot compile in this function"
  return CallTfVectorizationError(
      f"jax.vmap of call_tf (vmap_method={vmap_method!r}) under jax.jit: "
      "tf.vectorized_map (pfor) vectorized the TensorFlow function, but XLA "
      f"cannot compile the result: {describe_op(op_type, node_name)}. {why} "
      "(eagerly, without jax.jit, the vectorized call may work). "
      f"{what_to_do(vmap_method)}\nTensorFlow said: {first_line(cause)}",
      op_type, node_name)


def symbolic_batch_error(axis_size: core.DimSize,
                         vmap_method: vmap_methods.VmapMethod | None,
                         reason: str | None = None
                         ) -> CallTfVectorizationError:
  """One TF call for a symbolic batch size, which XLA cannot compile."""
  why = (f" JAX batches the function's StableHLO module for any batch size "
         f"only where it can use it, and here {reason}."
         if reason else "")
  return CallTfVectorizationError(
      f"jax.vmap of call_tf with the symbolic batch size {axis_size} and "
      f"vmap_method={vmap_method!r} would compile the TensorFlow function "
      "with XLA for an unknown batch size, and XLA needs static shapes."
      f"{why} Pass vmap_method={vmap_methods.SEQUENTIAL!r} (a loop of calls "
      "with static shapes), or, under jax2tf.convert, call_tf_graph=True "
      "(TensorFlow then runs the function at the actual batch size).")


def ordered_error(vmap_method: vmap_methods.VmapMethod | None
                  ) -> NotImplementedError:
  """ordered=True needs calls in batch order: one per element."""
  return NotImplementedError(
      "jax.vmap of call_tf with ordered=True must keep the order of the "
      "calls, one per batch element: pass "
      f"vmap_method={vmap_methods.SEQUENTIAL!r} to call_tf, or turn on "
      f"{FLAG_HINT} (got vmap_method={vmap_method!r}).")


def scalar_error(kind: str, index: int, aval_str: str) -> ValueError:
  """batch_polymorphic needs an axis 0 to merge the batch into."""
  return ValueError(
      "jax.vmap of call_tf with "
      f"vmap_method={vmap_methods.BATCH_POLYMORPHIC!r} merges the batch "
      f"into axis 0 of every argument and result, but {kind} {index} "
      f"is a scalar ({aval_str}). Use another vmap_method, or give the "
      "function a leading batch axis.")


def result_shape_error(vmap_method: vmap_methods.VmapMethod | None, index: int,
                       shape: Sequence[core.DimSize | None],
                       expected: Sequence[core.DimSize | None]
                       ) -> ValueError:
  """A one-call method's result does not have the batched shape."""
  where = ("merged into axis 0"
           if vmap_method == vmap_methods.BATCH_POLYMORPHIC
           else "at axis 0")
  return ValueError(
      f"jax.vmap of call_tf (vmap_method={vmap_method!r}): result {index} of "
      f"the function has shape {list(shape)}, expected {list(expected)} (the "
      f"unbatched result's shape with the batch {where}). With this "
      "vmap_method the function must handle the batch axis itself; use "
      f"vmap_method=None or {vmap_methods.SEQUENTIAL!r} for a function "
      "written for one example.")


def result_count_error(vmap_method: vmap_methods.VmapMethod | None, got: int,
                       expected: int) -> ValueError:
  """A batched call returned another number of results."""
  return ValueError(
      f"jax.vmap of call_tf (vmap_method={vmap_method!r}): the batched "
      f"function returned {got} results, expected {expected}.")


def tangent_unknown_error(index: int | None, op_types: Sequence[str]
                          ) -> CallTfDerivativeError:
  """Forward mode: TF computes no tangent for a connected output."""
  ops = (" (op types without a gradient of their gradient here: "
         + ", ".join(repr(t) for t in op_types) + ")") if op_types else ""
  result = "a result" if index is None else f"result {index}"
  return CallTfDerivativeError(
      f"Forward-mode differentiation (jax.jvp, jax.jacfwd, jax.hessian) of "
      f"call_tf: TensorFlow computes no tangent for {result} of the "
      f"function, although the result depends on the differentiated "
      f"arguments: an op on the way has no second-order gradient{ops}. "
      "call_tf does not return zeros for it. Reverse mode works: use "
      "jax.jacrev or jax.vjp instead of jax.jacfwd or jax.jvp, and "
      "jax.jacrev(jax.jacrev(f)) instead of jax.hessian(f).")


def dynamic_result_error(output_shapes: object, op_type: str | None,
                         node_name: str | None, xla: str,
                         bounded: bool) -> CallTfDynamicShapeError:
  """Results whose sizes depend on the values of the arguments.

  Upstream's message first (its tests match it), then why, and where
  ``output_shape_dtype`` helps: only eagerly, and only for a size that is
  the same for every input.
  """
  made_by = (f", made by {describe_op(op_type, node_name)}" if op_type
             else "")
  if bounded:
    why = (f"XLA compiles it to a result of a size bounded but unknown "
           f"({xla}): under jax.jit call_tf needs static result shapes, "
           "which output_shape_dtype cannot give it")
  else:
    why = (f"XLA cannot compile the function ({xla}): under jax.jit nothing "
           "runs it, with output_shape_dtype or without")
  return CallTfDynamicShapeError(
      "call_tf cannot call functions whose output has dynamic shape. Found "
      f"output shapes: {output_shapes}. The size of a result depends on the "
      f"values of the arguments{made_by}, and {why}. Eagerly (without "
      "jax.jit), output_shape_dtype helps if the size is the same for "
      "every input: then the call and its derivatives run, and jax.vmap "
      f"with vmap_method={vmap_methods.SEQUENTIAL!r}. Otherwise, compute a "
      "result of a "
      "fixed size in TensorFlow (pad it to a bound with tf.pad, or mask it "
      "with the three-argument tf.where) and return its size beside it.")


def traced_without_autograph_error(e: Exception) -> CallTfTraceError:
  """A function that uses a symbolic tensor as a Python value."""
  return CallTfTraceError(
      "call_tf traces the TensorFlow function into a graph (under "
      "jax.jit, jax.vmap and JAX's differentiation, with autograph off, as "
      "upstream's call_tf always has), where its arguments are symbolic "
      "tensors, and the function uses one as a Python value: TensorFlow "
      f"said {first_line(e)!r}. Pass call_tf the function wrapped in "
      "tf.function (its autograph converts len(x), Python conditions and "
      "loops on tensors), or write x.shape[0] or tf.shape(x)[0] for "
      "len(x). (The eager call, without a transformation, runs it on "
      "concrete tensors.)")


def results_structure_error(first: object, now: object) -> CallTfTraceError:
  """Two runs of one call's TF function returned other result structures."""
  return CallTfTraceError(
      "call_tf runs the TensorFlow function more than once for one call "
      "(eagerly and traced into a graph, for jax.jit, jax.vmap and JAX's "
      "derivatives), and two runs returned results of different "
      f"structures: first {first}, then {now}. A list and a tuple of the "
      "same results are the same structure here, as they are to "
      "TensorFlow's tf.while_loop (which returns its loop_vars' list in a "
      "graph where it returns the body's tuple eagerly); other differences "
      "are not. Return the same structure (the same dict keys, the same "
      "number of results) every time, for example by building it from the "
      "values tf.while_loop or tf.cond return.")


def no_tf_gradient_error(op_type: str, forward: bool
                         ) -> CallTfDerivativeError:
  """A derivative through an op type TF has no gradient for."""
  mode = ("Forward-mode differentiation (jax.jvp, jax.jacfwd, jax.hessian)"
          if forward else "Reverse-mode differentiation (jax.grad, jax.vjp, "
          "jax.jacrev, jax.hessian)")
  return CallTfDerivativeError(
      f"{mode} of call_tf: TensorFlow has no gradient for op type "
      f"{op_type!r}, which the function (or its gradient) uses, and "
      "call_tf's derivatives are TensorFlow's gradients: no derivative of "
      "the function exists in TensorFlow (tf.GradientTape raises "
      "LookupError too). Differentiate a function without the op (for "
      "InplaceAdd and InplaceUpdate: tf.tensor_scatter_nd_add and "
      "tf.tensor_scatter_nd_update, which have gradients), or give it one "
      "with tf.custom_gradient.")


def derivative_failed_error(forward: bool, e: BaseException
                            ) -> CallTfDerivativeError:
  """TensorFlow failed running a derivative function ``call_tf`` made.

  The forward-mode tangents and the reverse-mode VJP are TF functions that
  ``call_tf`` builds from TF's gradients of the function; TF's own error
  there (an ``InvalidArgumentError`` of its executor) would say nothing of
  ``call_tf`` or of the op.

  Args:
    forward: the tangent function (else the VJP).
    e: TensorFlow's error.
  """
  mode = ("Forward-mode differentiation (jax.jvp, jax.jacfwd, jax.hessian)"
          if forward else "Reverse-mode differentiation (jax.grad, jax.vjp, "
          "jax.jacrev, jax.hessian)")
  nodes = list(dict.fromkeys(a or b for a, b in _NODE_RE.findall(str(e))))
  where = (" at " + ", ".join(f"node '{n}'" for n in nodes[:3])
           if nodes else "")
  return CallTfDerivativeError(
      f"{mode} of call_tf: TensorFlow failed{where} running the "
      f"{'tangent' if forward else 'VJP'} function that call_tf built from "
      "TensorFlow's gradients of the function "
      f"({type(e).__name__}: {_tf_error_line(e)}). The node names the op of "
      "the function (or of its gradient) where TensorFlow failed. This is "
      "call_tf's error, not a wrong number: report it at "
      "https://github.com/jax-ml/jax/issues/11753 with the function; "
      + ("reverse mode (jax.jacrev, jax.vjp) may compute the derivative "
         "meanwhile." if forward else "forward mode (jax.jacfwd, jax.jvp) "
         "may compute the derivative meanwhile."))


def _tf_error_line(e: BaseException) -> str:
  """The line of a TF executor's error that says what failed.

  Its first lines are "Graph execution error:" and "Detected at node ...
  defined at", then the Python traceback of the node, then the reason.
  """
  for line in str(e).splitlines():
    text = line.strip()
    if (text and line == line.lstrip() and not text.startswith(
        ("Graph execution error", "Detected at node", "File ", "[["))):
      return text
  return first_line(e)


# A node TensorFlow's executor names in its errors ("[[{{node Foo}}]]",
# "Detected at node 'Foo'").
_NODE_RE = re.compile(r"node '([^']+)'|\{\{node ([^}]+)\}\}")


def tensorflow_version_error(version: str, minimum: tuple[int, int],
                             verified: str | None
                             ) -> CallTfTensorFlowVersionError:
  """The installed TensorFlow is older than ``minimum``."""
  need = f"{minimum[0]}.{minimum[1]}"
  return CallTfTensorFlowVersionError(
      f"jax2tf.call_tf needs TensorFlow {need} or newer, but TensorFlow "
      f"{version} is installed. call_tf compiles TensorFlow functions with "
      "experimental_get_compiler_ir(...)(platform_name=...), which TensorFlow "
      f"added in {need}. Upgrade TensorFlow"
      + (f"; this jax was verified with {verified} (pip install "
         f"'{verified}', or install jax with the extra [tensorflow])."
         if verified else "."))


def argument_count_error(takes: int, given: int) -> ValueError:
  """A TF1 graph-mode function called with another number of arguments."""
  return ValueError(f"call_tf: the function takes {takes} arguments, but "
                    f"{given} were given.")


def variable_write_under_jit_error(op_type: str, node_name: str | None
                                   ) -> CallTfStatefulFunctionError:
  """A function that assigns a variable, compiled into a JAX program."""
  return CallTfStatefulFunctionError(
      "call_tf under jax.jit (or another staging transformation) compiles "
      "the TensorFlow function with XLA into the JAX program, but the "
      f"function has {describe_op(op_type, node_name)}, which assigns a "
      "TensorFlow variable: compiled into the JAX program, the assignment "
      "cannot happen. Call the function outside jax.jit (call_tf then runs "
      "it in TF eager mode), or, under jax2tf.convert, pass "
      "call_tf_graph=True so that TensorFlow runs it; or return the new "
      "value from the function and assign the variable outside call_tf.")


def captures_in_several_graphs_error(names: Sequence[str]) -> ValueError:
  """TF1 captures from more than one graph."""
  return ValueError(f"call_tf: the captured variables and tensors {names} "
                    "belong to different graphs; use one graph.")


def no_session_error(names: Sequence[str], open_sessions: int) -> ValueError:
  """TF1 captures that no session can be found to read."""
  found = (f"{open_sessions} open sessions are on their graph and none is "
           "the default session" if open_sessions
           else "no open session on their graph was found")
  return ValueError(
      f"call_tf needs the values of the TF1 variables or tensors {names} "
      "that the TensorFlow function captures, and in graph mode only the "
      f"tf.compat.v1.Session holding them can read them, but {found}. "
      "Convert or lower the JAX function inside `with sess.as_default():` "
      "(or `with tf.compat.v1.Session(graph=g) as sess:`) for the session "
      "where the variables are initialized or restored.")


def graph_locked_error(names: Sequence[str]) -> ValueError:
  """TF1 captures that cannot be read inside ``tf.gradients``."""
  return ValueError(
      f"call_tf cannot read the TF1 variables or tensors {names} while "
      "their graph is locked for mutation (inside tf.gradients), and no "
      "earlier lowering read them. Convert the forward function before "
      "taking its gradient.")


def uninitialized_variables_error(names: Sequence[str]
                                  ) -> CallTfUninitializedVariablesError:
  """TF1 variables that are not initialized in their session."""
  return CallTfUninitializedVariablesError(
      f"call_tf needs the values of the TF1 variables {names}, "
      "which are not initialized in their session. Run "
      "`sess.run(tf.compat.v1.global_variables_initializer())`, or restore "
      "them (`tf.compat.v1.train.Saver().restore(sess, path)`), before "
      "converting or lowering the JAX function. call_tf does not run "
      "initializers itself: that would replace restored or assigned "
      "values with initial ones.")


def captured_resource_error(resource: tf.Tensor, found: int) -> ValueError:
  """A captured resource that is not the handle of one variable."""
  return ValueError(f"call_tf: cannot find the variable of the captured "
                    f"resource {resource} (found {found}).")


def freeze_variables_error(e: Exception) -> ValueError:
  """``call_tf_graph=True`` of a function whose variables cannot be frozen."""
  return ValueError(
      "call_tf(..., call_tf_graph=True) runs the TensorFlow function in "
      "TensorFlow at run time with the values its variables have now, "
      "frozen into it; that fails for this function, which assigns a "
      "variable or uses one in another way than reading it ("
      f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}). "
      "Return the new value from the function and assign the variable "
      "outside call_tf, or call the function without call_tf_graph.")


def embedded_weights_batched_error() -> NotImplementedError:
  """``jax.vmap`` over the weights of an embedded SavedModel function."""
  return NotImplementedError(
      "call_tf of a jax2tf-saved function: only its arguments can be "
      "batched by jax.vmap.")


def embedded_second_derivative_error(name: str) -> NotImplementedError:
  """A second derivative of an embedded function (not saved by jax2tf)."""
  return NotImplementedError(
      f"call_tf cannot compute a second derivative of {name} (such as "
      "jax.hessian, jax.jacfwd(jax.jacrev(f)) or jax.jacfwd(jax.jacfwd(f))): "
      "it is embedded from a jax2tf SavedModel, which holds its first "
      "derivative only (the VJP), and JAX does not differentiate the saved "
      "StableHLO modules themselves: they do not record the function's "
      "jax.custom_jvp and jax.custom_vjp rules or its lax.stop_gradient, so "
      "their derivatives can differ from the function's. "
      + EMBEDDED_NEXT_ORDER)


def embedded_forward_mode_error(name: str) -> NotImplementedError:
  """Forward mode of an embedded function whose VJP is not interpretable."""
  return NotImplementedError(
      f"call_tf cannot compute forward-mode derivatives (jax.jvp, "
      f"jax.jacfwd, jax.hessian) of {name}: it is embedded "
      "from a jax2tf SavedModel, which saves only its reverse-mode "
      "derivative (the VJP), and the VJP's StableHLO module cannot be "
      "transposed as JAX primitives here (see the debug log of "
      "jax.experimental.jax2tf.call_tf_lib.stablehlo.path; or "
      f"jax_call_tf_vectorizer is {vmap_methods.PFOR!r}). Use reverse mode: "
      "jax.grad, jax.vjp, jax.jacrev. For forward mode, call the JAX "
      "function the model was converted from.")


def embedded_transpose_error(name: str, e: Exception) -> NotImplementedError:
  """Forward mode of an embedded function: JAX cannot transpose its VJP."""
  return NotImplementedError(
      f"call_tf cannot compute forward-mode derivatives of {name}: JAX "
      f"cannot transpose the StableHLO module of its saved VJP "
      f"({type(e).__name__}: {e}). Use reverse mode (jax.grad, jax.jacrev), "
      "or call the JAX function the model was converted from.")


def gradient_disabled_error(reason: str) -> LookupError:
  """TensorFlow's own error for a ``PreventGradient`` op, word for word."""
  return LookupError("Gradient explicitly disabled. Reason: " + reason)


def embedded_no_gradient_error(name: str) -> ValueError:
  """Reverse mode of an embedded function saved without its gradient."""
  return ValueError(
      f"call_tf cannot differentiate {name}: the SavedModel was saved "
      "without its gradient. Save it with "
      "tf.saved_model.SaveOptions(experimental_custom_gradients=True) "
      "(and jax2tf.convert(..., with_gradient=True), the default).")


def vmap_method_error(vmap_method: object, methods: Sequence[str | None]
                      ) -> ValueError:
  """An unknown ``vmap_method``."""
  return ValueError(
      f"call_tf got vmap_method={vmap_method!r}; it must be one of "
      + ", ".join(repr(m) for m in methods) + ".")


def foreign_module_error(node_name: str, module_platforms: Sequence[str],
                         platform: str) -> CallTfPlatformError:
  """A jax2tf module among other ops, without a branch TensorFlow compiles.

  Args:
    node_name: the ``XlaCallModule`` node.
    module_platforms: the platforms the module was serialized for.
    platform: TensorFlow's name of the platform it compiles for ("CPU").
  """
  return CallTfPlatformError(
      "call_tf cannot compile the TensorFlow function: it holds the module "
      f"of a jax2tf.convert function ({describe_op('XlaCallModule', node_name)})"
      f" serialized for {list(module_platforms)} only, among other "
      f"TensorFlow ops, and TensorFlow compiles the function for {platform!r} "
      "(tensorflow-cpu compiles for the CPU only). Call the converted "
      "function by itself (call_tf(jax2tf.convert(f)), or a tf.function of "
      "it, calls its module as jax.export does, on the platforms it was "
      "serialized for), or convert it with native_serialization_platforms "
      "that include 'cpu'.")


def growing_list_error(node_name: str) -> CallTfCompileError:
  """A ``TensorArray`` with ``dynamic_size=True``, to compile with XLA."""
  return CallTfCompileError(
      "call_tf under jax.jit (or another staging transformation) compiles "
      "the TensorFlow function with XLA, but the function has "
      f"{describe_op('TensorListSetItem', node_name)} that grows its list "
      "(a tf.TensorArray with dynamic_size=True, or one TensorFlow makes "
      "for a tf.while_loop without maximum_iterations, as its gradient "
      "does): XLA keeps the list at its initial size and loses the writes "
      "beyond it, so the results would be wrong (TensorFlow's own "
      "tf.function(jit_compile=True) returns them). Give the TensorArray "
      "the size it reaches (size=n, dynamic_size=False) or the loop a bound "
      "(maximum_iterations=n), or call the function outside jax.jit, where "
      "call_tf runs it in TF eager mode.")


def inexact_kernel_error(op_type: str, node_name: str,
                         why: str) -> CallTfCompileError:
  """An op whose XLA kernel is not exact, in a function to compile."""
  return CallTfCompileError(
      "call_tf under jax.jit (or another staging transformation) compiles "
      "the TensorFlow function with XLA, but the function has "
      f"{describe_op(op_type, node_name)}, whose XLA kernel {why}: the "
      "results would differ from TensorFlow's own kernel beyond rounding. "
      "Such ops are TensorFlow's gradients (of max pooling's gradient, of "
      "bilinear resizing), taken in the function itself (a "
      "tf.GradientTape inside it) or where call_tf differentiates it with "
      "TensorFlow's gradients (a custom gradient, "
      f"vmap_method={vmap_methods.PFOR!r} or {vmap_methods.SEQUENTIAL!r}). "
      "Call it outside jax.jit, where TensorFlow's kernels "
      "compute it.")


EMBEDDED_NEXT_ORDER = (
    "For second derivatives, call the JAX function the model was converted "
    "from, or serialize it with jax.export (serialize(vjp_order=2)) and "
    "call that.")


def cache_write_warning(directory: str, e: OSError) -> str:
  """The warning of a persistent cache entry that could not be written."""
  return (f"call_tf could not write its persistent cache in {directory} "
          f"({type(e).__name__}: {e}); TF functions will be converted again "
          "in the next process. Make the directory writable, set "
          "jax_compilation_cache_dir to another one, or turn call_tf's cache "
          "off with jax_call_tf_cache_max_size=0.")


def platform_error(platform: str, reason: str) -> CallTfPlatformError:
  """A call that neither TensorFlow nor the interpreter lowers for a platform.

  Args:
    platform: JAX's name of the platform ("tpu", "cuda", "rocm").
    reason: why the interpreter refuses the function's CPU module.
  """
  return CallTfPlatformError(
      f"call_tf cannot lower the TensorFlow function for the platform "
      f"{platform!r}: the "
      f"installed TensorFlow does not compile for {platform!r} (tensorflow-cpu "
      "compiles for the CPU only), so call_tf expresses the function's CPU "
      "module (TensorFlow's XLA lowering) as JAX operations, which JAX "
      f"lowers for {platform!r}; but {reason}. Run the call on the CPU "
      "(arguments placed with jax.device_put(x, jax.devices('cpu')[0]), or "
      "under jax.default_device(jax.devices('cpu')[0])), install a "
      f"TensorFlow that compiles for {platform!r}, or write that part of the "
      "function with jax.numpy.")


def ordered_symbolic_results_error(
    result_avals: Sequence[core.AbstractValue]) -> NotImplementedError:
  """``call_tf_graph=True`` and ``ordered=True`` with symbolic result shapes.

  Under ``jax2tf.convert`` the call is a custom call that also returns a
  token, and ``XlaCallModule``'s shape refinement does not refine the results
  of such a call (with or without a shape operand for the token): TensorFlow
  failed when it ran the function, with "Module has dynamic shapes".

  Args:
    result_avals: the avals of the call's results (without the token).
  """
  return NotImplementedError(
      "call_tf with call_tf_graph=True and ordered=True cannot have results "
      "of symbolic shape under jax2tf.convert (the results have shapes "
      f"{[str(a.shape) for a in result_avals]}): TensorFlow cannot refine the "
      "result shapes of a call that also returns a token. Use ordered=False, "
      "or shapes known at conversion.")


def stablehlo_version_error(tf_version: str, jax_version: str,
                            cause: Exception) -> ValueError:
  """A module that cannot be serialized at the StableHLO version TF reads.

  Args:
    tf_version: the StableHLO version the installed TensorFlow reads.
    jax_version: the version ``jax.export`` serialized the module at.
    cause: the serializer's error.
  """
  return ValueError(
      "The module jax2tf.convert made cannot be given to TensorFlow: the "
      f"installed TensorFlow reads StableHLO up to version {tf_version}, and "
      "the module uses a feature of a newer version (jax.export serializes "
      f"at {jax_version}). Install a TensorFlow that reads StableHLO "
      f"{jax_version}, or leave the feature out of the function. The "
      f"serializer said: {cause}")


def ordered_under_jit_error() -> NotImplementedError:
  """A call with ``ordered=True`` lowered without ``call_tf_graph``.

  The words of call_tf's own lowering, which raises it on the CPU.
  """
  return NotImplementedError(
      "ordered=True is not supported in the jitted context without"
      " `call_tf_graph=True`")
