# Copyright 2026 The JAX call_tf fork authors.
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
"""The pieces of the StableHLO path, each alone.

The path's helpers (the interpreter's registry of rules is tested in
``tests/stablehlo/test_registry.py``); the interpreter run on whole modules
is tested in ``test_stablehlo_to_jax.py``, the path in
``test_stablehlo_path.py``.
"""

from __future__ import annotations

import jax
from jax import export
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import hlo
from jax.experimental.jax2tf.call_tf_lib.stablehlo import exactness
from jax._src.export.transforms import refine as stablehlo_module
from jax._src.export.stablehlo_to_jax import _ir
import jax.numpy as jnp
import numpy as np
import tensorflow as tf


def test_a_function_that_is_not_one_call_tf_has_no_call_to_differentiate():
  tree = jax.tree_util.tree_structure((0,))
  x = np.ones((3,), np.float32)
  assert exactness._one_call_tf(lambda x: x + 1, [x], tree) is None  # pylint: disable=protected-access
  assert exactness.differentiable(lambda x: x + 1, [x], tree,
                                  staged=False) is None


def test_a_module_is_differentiated_unless_a_tf_gradient_differs():
  sig = [tf.TensorSpec((3,), tf.float32)]
  sine = tf.function(tf.sin, autograph=False)
  stopped = tf.function(lambda x: tf.stop_gradient(x) * x, autograph=False)
  assert exactness._module_to_differentiate(  # pylint: disable=protected-access
      sine, sig, staged=False) is not None
  assert exactness._module_to_differentiate(  # pylint: disable=protected-access
      stopped, sig, staged=False) is None


def _module_bytes(f, *shapes):
  args = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
  return export.export(jax.jit(f))(*args).mlir_module_serialized


def test_input_shape_specs_name_dimensions_after_their_variables():
  b, = export.symbolic_shape("b")
  module = _module_bytes(lambda x, y: x.sum() + y.sum(), (b, 4), (2, b))
  assert stablehlo_module.input_shape_specs(module, 0) == (
      ["b, 4", "2, b"], True)


def test_input_shape_specs_of_static_shapes():
  module = _module_bytes(jnp.sin, (3, 4))
  assert stablehlo_module.input_shape_specs(module, 0) == (["3, 4"], False)


def test_dimension_numbers_attributes_are_read_into_dicts():
  with mlir.make_ir_context():
    dot = hlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=[0], rhs_batching_dimensions=[0],
        lhs_contracting_dimensions=[2], rhs_contracting_dimensions=[1])
    gather = ir.Attribute.parse(
        "#stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], "
        "start_index_map = [0], index_vector_dim = 1>")
    table = _ir._dtype_table()  # pylint: disable=protected-access
    assert _ir.read_attr(dot, table) == dict(
        lhs_batching_dimensions=(0,), rhs_batching_dimensions=(0,),
        lhs_contracting_dimensions=(2,), rhs_contracting_dimensions=(1,))
    read = _ir.read_attr(gather, table)
    assert read["offset_dims"] == (1,) and read["start_index_map"] == (0,)
    assert read["collapsed_slice_dims"] == (0,)
    assert read["index_vector_dim"] == 1
    assert _ir.read_attr(ir.Attribute.parse("true"), table) is True
    assert _ir.read_attr(ir.Attribute.parse("[1 : i64, \"a\"]"),
                         table) == (1, "a")
