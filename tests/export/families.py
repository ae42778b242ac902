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
"""Programs users export, in the families that write more than StableHLO's
spec ops: linear algebra (LAPACK custom calls on the CPU), sorting, top-k,
special functions (``result_accuracy``, CHLO ops in multi-platform
modules) and sharding annotations.

Each family is a function of one array and a maker of its arguments.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses

import jax
from jax.sharding import SingleDeviceSharding
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class Family:
  """A function and its argument: ``make(rng)`` gives one."""
  fun: Callable[[jax.Array], object]
  make: Callable[[np.random.Generator], np.ndarray]
  # Whether it is also tested exported for the CPU and a TPU (a module that
  # keeps CHLO's ops, and chooses its platform's code by a case).
  multi_platform: bool = False


def _normal(*shape: int, scale: float = 1.0):
  return lambda rng: scale * rng.standard_normal(shape)


def _gp_nll(p: jax.Array) -> jax.Array:
  """The negative log likelihood of a Gaussian process (of its log
  length scale, amplitude and noise) for fixed data."""
  x = jnp.linspace(0.0, 1.0, 6)
  y = jnp.sin(3.0 * x)
  ls, amp, noise = jnp.exp(p[0]), jnp.exp(p[1]), jnp.exp(p[2])
  k = amp * jnp.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / ls ** 2)
  k = k + (noise + 1e-3) * jnp.eye(6)
  chol = jnp.linalg.cholesky(k)
  alpha = jax.scipy.linalg.cho_solve((chol, True), y)
  return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(chol)))


def _tridiagonal(d: jax.Array) -> jax.Array:
  dl = jnp.concatenate([jnp.zeros(1, d.dtype), 0.3 * d[1:]])
  du = jnp.concatenate([0.2 * d[:-1], jnp.zeros(1, d.dtype)])
  return jax.lax.linalg.tridiagonal_solve(
      dl, d + 3, du, jnp.outer(d, jnp.arange(1.0, 3.0, dtype=d.dtype)))


def _eigvals(a: jax.Array) -> jax.Array:
  w = jnp.linalg.eigvals(a)
  return jnp.stack([jnp.real(w), jnp.imag(w)])


def _constrained(x: jax.Array) -> jax.Array:
  device = SingleDeviceSharding(jax.devices()[0])
  return jnp.sin(jax.lax.with_sharding_constraint(2 * x, device))


FAMILIES: dict[str, Family] = {
    "solve": Family(lambda a: jnp.linalg.solve(a + 4 * jnp.eye(4),
                                               jnp.arange(4.0)),
                    _normal(4, 4)),
    "inv": Family(lambda a: jnp.linalg.inv(a + 4 * jnp.eye(4)),
                  _normal(4, 4)),
    "det": Family(lambda a: jnp.linalg.det(a + 2 * jnp.eye(3)),
                  _normal(3, 3)),
    "slogdet": Family(lambda a: jnp.stack(jnp.linalg.slogdet(
        a + 2 * jnp.eye(3))), _normal(3, 3)),
    "cholesky": Family(lambda a: jnp.linalg.cholesky(a @ a.T + 3 * jnp.eye(3)),
                       _normal(3, 3),
        multi_platform=True),
    "eigh": Family(lambda a: tuple(jnp.linalg.eigh(a + a.T)), _normal(4, 4),
        multi_platform=True),
    "svd": Family(lambda a: tuple(jnp.linalg.svd(a, full_matrices=False)),
                  _normal(5, 3)),
    "svdvals": Family(lambda a: jnp.linalg.svd(a, compute_uv=False),
                      _normal(3, 5),
        multi_platform=True),
    "qr": Family(lambda a: tuple(jnp.linalg.qr(a)), _normal(5, 3),
        multi_platform=True),
    "qr of a wide matrix": Family(lambda a: tuple(jnp.linalg.qr(a)),
                                  _normal(3, 5)),
    "eigvals": Family(_eigvals, _normal(3, 3)),
    "solve_triangular": Family(
        lambda a: jax.scipy.linalg.solve_triangular(
            a + 4 * jnp.eye(4), jnp.ones((4, 2)), lower=True),
        _normal(4, 4)),
    "expm": Family(jax.scipy.linalg.expm, _normal(3, 3, scale=0.3)),
    "tridiagonal_solve": Family(_tridiagonal, _normal(4)),
    "gaussian process likelihood": Family(_gp_nll, _normal(3, scale=0.3)),
    "sort": Family(jnp.sort, _normal(6)),
    "argsort": Family(lambda x: x[jnp.argsort(x)] * 2, _normal(6)),
    "median": Family(jnp.median, _normal(7),
        multi_platform=True),
    "top_k": Family(lambda x: jax.lax.top_k(x, 3)[0], _normal(8),
        multi_platform=True),
    "approx_max_k": Family(lambda x: jax.lax.approx_max_k(x, 3)[0],
                           _normal(8)),
    "erf": Family(jax.scipy.special.erf, _normal(5),
        multi_platform=True),
    "exact gelu": Family(lambda x: jax.nn.gelu(x, approximate=False),
                         _normal(5),
        multi_platform=True),
    "single-device sharding constraint": Family(_constrained, _normal(5),
        multi_platform=True),
}


def scalar(f: Callable[[jax.Array], object]) -> Callable[[jax.Array],
                                                         jax.Array]:
  """A scalar function of `f`'s results (for gradients)."""
  return lambda x: sum(jnp.sum(jnp.sin(o)) for o in jax.tree.leaves(f(x)))


# Each transformation of the issue, and the batch shapes it is run on (()
# for one example).
TRANSFORMS: dict[str, tuple[Callable[[Callable], Callable],
                            tuple[tuple[int, ...], ...]]] = {
    "vmap": (jax.vmap, ((0,), (1,), (3,))),
    "jit(vmap)": (lambda f: jax.jit(jax.vmap(f)), ((3,),)),
    "vmap(vmap)": (lambda f: jax.vmap(jax.vmap(f)), ((2, 3),)),
    "jacrev": (lambda f: jax.jit(jax.jacrev(f)), ((),)),
    "jacfwd": (lambda f: jax.jit(jax.jacfwd(f)), ((),)),
    "per-example gradients": (lambda f: jax.jit(jax.vmap(jax.grad(
        scalar(f)))), ((3,),)),
}
