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
"""Where XLA computes a TF function otherwise than TensorFlow's kernels.

Eagerly, ``call_tf`` runs a function with TensorFlow's kernels; under
``jax.jit``, compiled by XLA (tf2xla). For most ops the two differ only in
rounding, and eager transformations (``jax.vmap``, ``jax.jvp``) may run the
function's XLA module as ``jit`` does. Not for the ops named here:

* :func:`eager_differences`: ops whose XLA lowering gives another answer:
  stateless random ops (XLA draws other numbers), singular and eigenvectors
  (XLA's Jacobi solvers choose other signs), ``Ndtri`` (-inf for small
  probabilities), bilinear resizing without ``align_corners`` (a
  neighbouring pixel at some scales), the inexact kernels below, and checks
  (``Assert``, ``CheckNumerics``), which XLA drops. An eager transformation
  of such a function runs TensorFlow's kernels, so that it agrees with the
  eager call (and checks what the eager call checks).
* :func:`inexact_kernel_ops`: ops whose tf2xla kernel loses precision
  beyond rounding, such as ``MaxPoolGradGrad``, which packs a value and an
  index into one 32-bit word so that values equal in their top 16 bits tie.
  TF's derivative functions hold them (the second-order gradient of max
  pooling, the gradient of bilinear resizing); ``call_tf`` never compiles
  a function with one.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses

from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
import tensorflow as tf

# Ops XLA drops: a compiled function does not check them.
CHECKS = frozenset({"Assert", "CheckNumerics", "CheckNumericsV2"})
# Ops whose XLA lowering gives other values than TF's kernels beyond
# rounding (measured with TF 2.21 on CPU): other signs of singular vectors
# and eigenvectors (and a tolerance of 1e-6 for float64 too); -inf for
# probabilities below about 3e-8 (float32) of Ndtri. Bilinear resizing
# without align_corners (tf.image.resize's default) is below, by its
# attribute.
_OTHERWISE = {
    "Svd": "has vectors whose signs XLA chooses otherwise than TensorFlow's "
           "kernel",
    "SelfAdjointEig": "has vectors whose signs XLA chooses otherwise than "
                      "TensorFlow's kernel",
    "SelfAdjointEigV2": "has vectors whose signs XLA chooses otherwise than "
                        "TensorFlow's kernel",
    "Ndtri": "is -inf under XLA for small probabilities, where TensorFlow's "
             "kernel is finite",
    # (Under jit it compiles, as upstream: the two differ only where the
    # output is exactly 0; JAX's derivative of Selu is TF's kernel's.)
    "SeluGrad": "takes the exponential branch under XLA where the output is "
                "0, where TensorFlow's kernel takes the linear one",
}
_RESIZE_OFF_BY_A_PIXEL = (
    "takes a neighbouring pixel under XLA at some scales (3x upsampling "
    "among them) without align_corners, where TensorFlow's kernel does not")
_MAX_POOL_PACKED = (
    "packs each value's top 16 bits and its index into one 32-bit word, so "
    "values that agree in their top 16 bits tie and the derivative may come "
    "from the wrong element of a window")
# Ops whose tf2xla kernel is not exact: the op, and what its kernel does.
INEXACT_KERNELS = {
    "MaxPoolGradGrad": _MAX_POOL_PACKED,
    "MaxPoolGradGradV2": _MAX_POOL_PACKED,
    "MaxPool3DGradGrad": _MAX_POOL_PACKED,
    "ResizeBilinearGrad": _RESIZE_OFF_BY_A_PIXEL,
}


@dataclasses.dataclass(frozen=True)
class Difference:
  """An op that XLA computes otherwise than TensorFlow's kernels.

  Attributes:
    op_type: the TF op type.
    node: the node's name.
    why: a clause saying how XLA's answer differs, for messages and logs.
  """
  op_type: str
  node: str
  why: str

  def __str__(self) -> str:
    return f"op {self.op_type!r} (node {self.node!r}) {self.why}"


def _is_stateless_random(op_type: str) -> bool:
  return op_type.startswith("Stateless") and op_type not in graph_lib.CALLS


def eager_differences(graph: tf.Graph) -> list[Difference]:
  """The ops of ``graph`` (and the functions it calls) XLA computes otherwise.

  Args:
    graph: a ``tf.Graph`` (a concrete function's ``graph``).

  Returns:
    Each op whose XLA lowering gives another answer than TF's kernel by
    design, in graph order.
  """
  found = []
  for op in graph_lib.graph_ops(graph):
    if _is_stateless_random(op.type):
      why = "draws other random numbers under XLA than TensorFlow's kernel"
    elif op.type in _OTHERWISE and _computes_vectors(op):
      why = _OTHERWISE[op.type]
    elif _is_inexact(op):
      why = INEXACT_KERNELS[op.type]
    elif op.type == "ResizeBilinear" and not _attr(op, "align_corners"):
      why = _RESIZE_OFF_BY_A_PIXEL
    elif op.type in CHECKS:
      why = "is a check, which XLA drops"
    else:
      continue
    found.append(Difference(op.type, op.name, why))
  return found


def function_eager_differences(
    function_flat_tf: tf.types.experimental.GenericFunction,
    sig: Sequence[tf.TensorSpec],
) -> tuple[Difference, ...]:
  """:func:`eager_differences` of ``function_flat_tf`` traced for ``sig``."""
  return graph_lib.scanned(function_flat_tf, sig, eager_differences)


def inexact_kernel_ops(graph: tf.Graph) -> list[Difference]:
  """The ops of ``graph`` (and the functions it calls) tf2xla computes inexactly.

  Args:
    graph: a ``tf.Graph``.

  Returns:
    Each op of :data:`INEXACT_KERNELS`, in graph order.
  """
  return [Difference(op.type, op.name, INEXACT_KERNELS[op.type])
          for op in graph_lib.graph_ops(graph) if _is_inexact(op)]


def _computes_vectors(op: tf.Operation) -> bool:
  """False for a decomposition that returns no vectors (``Svd`` without
  ``compute_uv``, ``SelfAdjointEigV2`` without ``compute_v``): its values
  are XLA's and TF's alike."""
  for name in ("compute_uv", "compute_v"):
    value = _attr(op, name)
    if value is not None:
      return bool(value)
  return True


def _attr(op: tf.Operation, name: str) -> object:
  try:
    return op.get_attr(name)
  except ValueError:
    return None


def _is_inexact(op: tf.Operation) -> bool:
  if op.type == "ResizeBilinearGrad":
    return not _attr(op, "align_corners")
  return op.type in INEXACT_KERNELS
