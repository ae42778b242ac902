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
"""The composer's cycle: a model exported, reloaded inside a larger one,
transformed, exported again (tests/export, and tests/calltf with SavedModels).
"""

from __future__ import annotations

import jax
from jax import export
import jax.numpy as jnp

from .util import assert_close
from .util import randn


def roundtrip(fun, *specs, vjp_order=1, export_kwargs=None, **kwargs):
  """`fun(*specs, **kwargs)` exported, serialized with `vjp_order`,
  deserialized."""
  exported = export.export(jax.jit(fun), **(export_kwargs or {}))(
      *specs, **kwargs)
  return export.deserialize(exported.serialize(vjp_order=vjp_order))


P0 = (randn(4, 8) / 2, randn(8), randn(8, 4) / 2)


def mlp(params, x):
  w1, b1, w2 = params
  return jnp.tanh(x @ w1 + b1) @ w2


def larger(inner):
  """A larger model around `inner(x)`: on the batch, and row by row."""
  def g(x):
    return (jnp.sin(inner(x))
            + 0.5 * jax.vmap(lambda row: inner(row[None] * 2.)[0])(x))
  return g


def check_model(g, g_ref, tol=2e-4):
  """Values, gradients and per-example gradients (eagerly and under jit),
  and the Jacobian by forward mode, at batch sizes 1 and 3."""
  loss = lambda h: lambda x: jnp.sum(h(x) ** 2)  # noqa: E731
  rows = lambda h: jax.vmap(jax.grad(  # noqa: E731
      lambda r: jnp.sum(h(r[None]) ** 2)))
  for batch in (1, 3):
    x = randn(batch, 4)
    for wrap in (lambda h: h, jax.jit):
      assert_close(wrap(g)(x), g_ref(x), tol=tol)
      assert_close(wrap(rows(g))(x), rows(g_ref)(x), tol=tol)
    assert_close(jax.jit(jax.grad(loss(g)))(x), jax.grad(loss(g_ref))(x),
                 tol=tol)
    assert_close(jax.jit(jax.jacfwd(g))(x), jax.jacfwd(g_ref)(x), tol=tol)
