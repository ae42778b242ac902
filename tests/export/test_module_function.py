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
"""How a module's program is called: replayed where a trace stages out."""

from __future__ import annotations

import jax
from jax._src.export.transforms import function
import jax.numpy as jnp
import numpy as np


def _jit_equations(closed: jax.core.ClosedJaxpr) -> list[str]:
  return [e.primitive.name for e in closed.jaxpr.eqns
          if e.primitive.name in ("pjit", "jit")]


def test_replayed_under_transformations_inside_jit():
  fun = function._Replayed(jax.jit(lambda x: (jnp.sin(x) * 2.,)))  # pylint: disable=protected-access

  def g(x):
    return fun(x)[0]
  x = jnp.linspace(-1., 1., 6).reshape(2, 3)
  staged = jax.make_jaxpr(jax.vmap(jax.grad(lambda x: jnp.sum(g(x)))))(x)
  # Its equations are in the trace, transformed in one pass; bound as the
  # jax.jit call it is, they would stay behind one (a plain jit inlines
  # nowhere).
  assert not _jit_equations(staged)
  assert _jit_equations(jax.make_jaxpr(lambda x: fun.fun(x)[0])(x))
  want = 2. * np.cos(np.asarray(x))
  for f in (jax.jit(jax.vmap(jax.grad(lambda x: jnp.sum(g(x))))),
            jax.vmap(jax.grad(lambda x: jnp.sum(g(x))))):  # (eagerly: jit)
    np.testing.assert_allclose(f(x), want, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.hessian(lambda x: jnp.sum(g(x))))(
      x[0]), np.diag(-2. * np.sin(np.asarray(x[0]))), rtol=1e-6, atol=1e-7)
