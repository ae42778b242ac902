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
from typing import Any

from jax._src import core
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax.experimental.jax2tf.call_tf_lib import compat
import tensorflow as tf


def custom_call(ctx: mlir.LoweringRuleContext, result_types: Sequence[ir.Type],
                operands: Sequence[ir.Value], has_side_effects: bool,
                ordered: bool, result_avals: Sequence[core.AbstractValue]
                ) -> Any:
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
  """
  result_shapes = None
  if any(not core.is_constant_shape(a.shape) for a in result_avals):
    result_shapes = [mlir.eval_dynamic_shape_as_tensor(ctx, a.shape)
                     for a in result_avals]
    if ordered:
      result_shapes.insert(0, compat.shape_tensor(ctx.module_context, ()))
  return mlir.custom_call(
      "tf.call_tf_function",
      result_types=list(result_types),
      operands=list(operands),
      has_side_effect=has_side_effects,
      result_shapes=result_shapes,
      api_version=2,
  )


def without_variables(concrete_fn: Any) -> Any:
  """``concrete_fn`` with the variables it captures frozen into constants.

  TF runs a ``call_tf_graph`` function from the ``XlaCallModule``'s function
  list with the custom call's operands as its arguments. ``call_tf`` passes
  the values of captured variables there, but the function takes variable
  handles (``DT_RESOURCE``), and TF aborts the whole process
  (``Check failed: DataTypeCanUseMemcpy``). Upstream already snapshots the
  values at lowering time; frozen, the snapshot lives in the function.

  Args:
    concrete_fn: the concrete function of a ``call_tf_graph`` call.

  Returns:
    ``concrete_fn`` itself if it captures no variable, else its frozen copy.

  Raises:
    ValueError: the variables cannot be frozen (the function assigns them).
  """
  if not any(t.dtype == tf.resource for t in concrete_fn.captured_inputs):
    return concrete_fn
  from tensorflow.python.framework import convert_to_constants  # pylint: disable=g-import-not-at-top
  try:
    with tf.init_scope():
      return convert_to_constants.convert_variables_to_constants_v2(
          concrete_fn)
  except Exception as e:  # pylint: disable=broad-except
    raise ValueError(
        "call_tf(..., call_tf_graph=True) runs the TensorFlow function in "
        "TensorFlow at run time with the values its variables have now, "
        "frozen into it; that fails for this function, which assigns a "
        "variable or uses one in another way than reading it ("
        f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}). "
        "Return the new value from the function and assign the variable "
        "outside call_tf, or call the function without call_tf_graph.") from e
