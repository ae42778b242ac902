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
"""The linear map of a forward-mode rule (``transforms.linear``), alone.

The map turns a call's tangent function and its VJP into a linear call and
its transpose; the end-to-end behaviour is test_exported_call.py's.
"""

from __future__ import annotations

from jax import tree_util
from jax._src import dtypes
from jax._src.export.transforms import linear
import numpy as np


def _linear_map(tangent_call=None, vjp_bwd=None, *, perturbed=(False, True)):
  primals = ({"x": np.float32(1.), "i": np.int32(2)},)
  flat_primals, primals_tree = tree_util.tree_flatten(primals)
  outs = (np.zeros(3, np.float32), np.int32(0))
  flat_outs, outs_tree = tree_util.tree_flatten(outs)
  return flat_primals, linear._LinearMap(
      tangent_call, vjp_bwd, primals_tree, list(perturbed), flat_outs,
      outs_tree)


def test_linear_map_knows_the_outputs_with_tangents():
  _, linear_map = _linear_map()
  assert linear_map.has_tangent == [True, False]


def test_linear_map_tangent_fun_passes_none_for_unperturbed_arguments():
  calls = []

  def tangent_call(args, tangents):
    calls.append((args, tangents))
    return (np.ones(3, np.float32),)

  flat_primals, linear_map = _linear_map(tangent_call)
  # flat order: "i", then "x"; "x" is perturbed.
  res = linear_map.tangent_fun(*flat_primals, np.float32(5.))
  assert isinstance(res, list) and len(res) == 1
  (args,), (tangents,) = calls[0]
  assert args == {"i": flat_primals[0], "x": flat_primals[1]}
  assert tangents == {"i": None, "x": np.float32(5.)}


def test_linear_map_transpose_fun_gives_perturbed_cotangents():
  calls = []

  def vjp_bwd(args, cts):
    calls.append((args, cts))
    return ({"i": "ct of i", "x": "ct of x"},)

  flat_primals, linear_map = _linear_map(
      vjp_bwd=vjp_bwd, perturbed=(False, True))
  ct = np.arange(3, dtype=np.float32)
  assert linear_map.transpose_fun(*flat_primals, ct) == ["ct of x"]
  (args,), (ct_float, ct_int) = calls[0]
  assert args == {"i": flat_primals[0], "x": flat_primals[1]}
  assert ct_float is ct
  assert ct_int.dtype == dtypes.float0 and ct_int.shape == ()


def test_out_tangents_without_perturbed_arguments_are_zeros():
  flat_primals, linear_map = _linear_map(perturbed=(False, False))
  t_float, t_int = linear._out_tangents(
      linear_map, flat_primals, [None, None])
  np.testing.assert_array_equal(t_float, np.zeros(3, np.float32))
  assert t_float.dtype == np.float32
  assert t_int.dtype == dtypes.float0
