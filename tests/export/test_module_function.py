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
"""How a module's program is called: replayed the first time
transformations inside ``jax.jit`` meet it, else its ``jax.jit`` function."""

from __future__ import annotations

import jax
from jax import export
from jax._src.export.transforms import function
import jax.numpy as jnp
import numpy as np


def _jit_equations(closed: jax.core.ClosedJaxpr) -> int:
  return sum(e.primitive.name in ("pjit", "jit") for e in closed.jaxpr.eqns)


def _transformed(fun):
  return jax.vmap(jax.grad(lambda x: jnp.sum(fun(x)[0])))


def test_replayed_the_first_time_transformations_inside_jit_meet_it():
  # A jax.jit function that is not inlined: its bound calls stay in the
  # jaxpr as equations, replayed ones do not.
  fun = function.Replayed(jax.jit(lambda x: (jnp.sin(x) * 2.,)))
  x = jnp.linspace(-1., 1., 6).reshape(2, 3)
  assert _jit_equations(jax.make_jaxpr(_transformed(fun))(x)) == 0
  assert fun.replayed
  # Later: the jax.jit function, whose transformations JAX keeps.
  assert _jit_equations(jax.make_jaxpr(_transformed(fun))(x)) > 0
  # Eagerly, and in a staging trace with nothing between: not replayed.
  fresh = function.Replayed(fun.fun)
  assert _jit_equations(jax.make_jaxpr(lambda x: fresh(x)[0])(x)) == 1
  _transformed(fresh)(x)
  assert not fresh.replayed
  want = 2. * np.cos(np.asarray(x))
  for f in (jax.jit(_transformed(function.Replayed(fun.fun))),
            jax.jit(_transformed(fun)), _transformed(fresh)):
    np.testing.assert_allclose(f(x), want, rtol=1e-6)
  np.testing.assert_allclose(
      jax.jit(jax.hessian(lambda x: jnp.sum(
          function.Replayed(fun.fun)(x)[0])))(x[0]),
      np.diag(-2. * np.sin(np.asarray(x[0]))), rtol=1e-6, atol=1e-7)


def test_a_module_is_called_through_a_replayed_function():
  exp = export.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((3,),
                                                             np.float32))
  module = function.of_exported(exp)
  jitted = module.jitted(module.program(((3,),)), None)
  assert isinstance(jitted, function.Replayed)
  x = np.linspace(-1., 1., 3, dtype=np.float32)
  np.testing.assert_allclose(
      jax.jit(jax.grad(lambda x: jnp.sum(jitted(x)[0])))(x), np.cos(x),
      rtol=1e-6)
  assert jitted.replayed
