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
"""The round-trip test of jax-ml/jax#11753, as the thread writes it.

The thread's test builds ``f_rt = call_tf(jax2tf.convert(f,
with_gradient=True))`` of a jitted ``f``, on NumPy's float64 randoms, and
compares ``f`` and ``f_rt`` under ``grad``, ``vmap`` and ``jacrev``; first
for ``f(x) = sum(x * x)``, then for ``f(x) = [sum(x * x), prod(x)]``. Here
each comparison is an assertion, with no flag and no ``vmap_method``,
eagerly and under ``jit``; also with ``jax_enable_x64``, where the arrays
stay float64.
"""

from __future__ import annotations

import jax
from jax import jacrev, jit, vmap
from jax.experimental import jax2tf
import jax.numpy as jnp
import numpy as np
import pytest

from .util import assert_close


def _scalar(x):
  return jnp.sum(x * x)


def _two_outputs(x):
  return [jnp.sum(x * x), jnp.prod(x)]


def _check(f, staged: bool):
  f = jit(f)
  f_rt = jax2tf.call_tf(jax2tf.convert(f, with_gradient=True))

  x = np.random.random((7))
  y = np.random.random((5, 7))

  def run(g, *args):
    return (jit(g) if staged else g)(*args)

  tol = 1e-12 if jax.config.jax_enable_x64 else 1e-5
  # test f==f_rt
  assert_close(run(f_rt, x), f(x), tol)
  if not isinstance(f(x), list):
    assert_close(run(jax.grad(f_rt), x), jax.grad(f)(x), tol)
  # test vmap
  assert_close(run(vmap(f_rt), y), vmap(f)(y), tol)
  # test jacrev
  assert_close(run(jacrev(f_rt), x), jacrev(f)(x), tol)
  # and what is built on them
  assert_close(run(jax.hessian(f_rt), x), jax.hessian(f)(x), tol)
  assert_close(run(vmap(jacrev(f_rt)), y), vmap(jacrev(f))(y), tol)
  assert_close(run(jax.jacfwd(f_rt), x), jax.jacfwd(f)(x), tol)


@pytest.mark.parametrize("x64", [False, True], ids=["float32", "float64"])
@pytest.mark.parametrize("staged", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("f", [_scalar, _two_outputs],
                         ids=["sum", "sum_and_prod"])
def test_the_threads_round_trip(f, staged, x64):
  with jax.enable_x64(x64):
    np.random.seed(0)
    _check(f, staged)
