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
"""The LAPACK calls' derivatives are JAX's (issue 58, item 4).

The engine differentiates a LAPACK call by JAX's own JVP rule of the
``lax.linalg`` primitive that wrote it, at the call's results
(``_lapack.lax_tangents``); what stays its own is the packing of the
call's results (an untouched triangle, a failed factorization's NaN,
LAPACK's compact QR factors) and ``geev``'s eigenvalues. Each is pinned
here against ``jax.jvp`` of the ``jnp``/``lax.linalg`` function on the same
inputs, real and complex, square and not, batched: the sweep under
``full_run``, two representatives by default.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
from jax import export
from jax import lax
from jax._src import config
from jax._src.export import stablehlo_to_jax
from jax._src.export.stablehlo_to_jax import _lapack
from jax._src.lax import linalg as lax_linalg
import jax.numpy as jnp
import numpy as np
import pytest

from .util import assert_close

pytestmark = pytest.mark.skipif(
    not jax.__version__.startswith("0.12"),
    reason="older releases write older LAPACK targets")


def _hermitian(a):
  n = a.shape[-1]
  return a @ jnp.conj(jnp.swapaxes(a, -1, -2)) + n * jnp.eye(n, dtype=a.dtype)


def _triangular(a):
  lower = jnp.tril(a) + 4 * jnp.eye(a.shape[-1], dtype=a.dtype)
  return jax.scipy.linalg.solve_triangular(lower, a[..., :2], lower=True,
                                           trans="C")


def _tridiagonal(a):
  d = a[..., 0]
  dl = jnp.concatenate([jnp.zeros_like(d[..., :1]), 0.3 * d[..., 1:]], -1)
  du = jnp.concatenate([0.2 * d[..., :-1], jnp.zeros_like(d[..., :1])], -1)
  return lax.linalg.tridiagonal_solve(dl, d + 3, du, a[..., 1:])


# Each function (of one argument) and the shapes of its argument.
_FUNCTIONS: dict[str, tuple[Callable[..., object], list[tuple[int, ...]]]] = {
    "potrf": (lambda a: jnp.linalg.cholesky(_hermitian(a)),
              [(3, 3), (2, 4, 4)]),
    "getrf": (lambda a: lax.linalg.lu(a)[0], [(4, 3), (3, 3), (3, 5)]),
    "syevd": (lambda a: tuple(jnp.linalg.eigh(a + jnp.conj(a.mT))),
              [(3, 3), (2, 4, 4)]),
    "gesdd": (lambda a: tuple(jnp.linalg.svd(a, full_matrices=False)),
              [(4, 3), (3, 4), (3, 3)]),
    "gesdd without vectors": (lambda a: jnp.linalg.svd(a, compute_uv=False),
                              [(3, 4), (2, 3, 3)]),
    "geqrf, orgqr": (lambda a: tuple(jnp.linalg.qr(a)),
                     [(4, 3), (3, 3), (3, 5)]),
    "geqrf (r only)": (lambda a: jnp.linalg.qr(a, mode="r"), [(3, 4)]),
    "geev": (jnp.linalg.eigvals, [(3, 3), (2, 4, 4)]),
    "trsm": (_triangular, [(3, 3), (2, 4, 4)]),
    "gtsv": (_tridiagonal, [(4, 3), (2, 5, 3)]),
}
# The default run's cases: geev's own rule, and eigh's (JAX's rule at the
# call's eigenvectors, of the triangle it reads), complex, of the first
# shape (tests/export/test_families.py differentiates each real family).
_DEFAULT = ("geev", "syevd")
_CASES = [pytest.param(name, shape, dtype, id=f"{name}-{shape}-{dtype}",
                       marks=() if i == 0 and name in _DEFAULT
                       and dtype == "complex128" else pytest.mark.full_run)
          for name, (_, shapes) in _FUNCTIONS.items()
          for dtype in ("complex128", "float64")
          for i, shape in enumerate(shapes if dtype == "complex128"
                                    else shapes[1:] or shapes)]


def _normal(rng, shape, dtype):
  x = rng.standard_normal(shape)
  if dtype == "complex128":
    x = x + 1j * rng.standard_normal(shape)
  return x.astype(dtype)


@pytest.mark.parametrize("name,shape,dtype", _CASES)
def test_the_engines_jvp_of_a_lapack_call_is_jaxs(name, shape, dtype):
  fun = _FUNCTIONS[name][0]
  rng = np.random.default_rng(0)
  with config.enable_x64(True):
    x, t = _normal(rng, shape, dtype), _normal(rng, shape, dtype)
    exported = export.export(jax.jit(fun), platforms=("cpu",))(x)
    program = stablehlo_to_jax.parse(exported.mlir_module())
    assert not program.unsupported, program.reasons
    assert f"@lapack_{'z' if dtype == 'complex128' else 'd'}" in (
        exported.mlir_module())

    def engine(x):
      return jax.tree.unflatten(exported.out_tree, program(x))
    assert_close(jax.jvp(engine, (x,), (t,)), jax.jvp(fun, (x,), (t,)),
                 tol=1e-9)


def test_jaxs_rule_is_refused_where_it_does_not_compute_the_call():
  x = jnp.ones((3, 3))
  with pytest.raises(NotImplementedError, match="its rule does not compute"):
    _lapack.lax_tangents(jnp.sin, lax_linalg.eigh_p, [x, x[0]], [x], [x])
  with pytest.raises(NotImplementedError, match="its rule does not compute"):
    _lapack.lax_tangents(lax.linalg.eigh, lax_linalg.eigh_p,
                         [x[:2], x[0]], [x], [x])
