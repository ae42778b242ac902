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
"""Helpers of the tests that need no TensorFlow (tests/export,
tests/stablehlo): they run in a venv without it too."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

rng = np.random.default_rng(0)


def randn(*shape: int, dtype: Any = np.float32) -> np.ndarray:
  return rng.standard_normal(shape).astype(dtype)


def assert_close(actual: Any, expected: Any, tol: float = 1e-5) -> None:
  """Same pytree, shapes, dtypes and values (to `tol`)."""
  a_leaves, a_tree = jax.tree.flatten(actual)
  e_leaves, e_tree = jax.tree.flatten(expected)
  assert a_tree == e_tree, (a_tree, e_tree)
  for a, e in zip(a_leaves, e_leaves):
    a, e = np.asarray(a), np.asarray(e)
    assert a.shape == e.shape, (a.shape, e.shape)
    assert a.dtype == e.dtype, (a.dtype, e.dtype)
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
      np.testing.assert_array_equal(a, e)
    else:
      wide = np.complex128 if np.iscomplexobj(a) else np.float64
      np.testing.assert_allclose(a.astype(wide), e.astype(wide),
                                 rtol=tol, atol=tol)
