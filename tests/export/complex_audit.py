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
"""The complex-value audit: every derivative, against JAX's of `jnp`.

TensorFlow's gradient of a complex function is the conjugate of JAX's VJP;
whichever way a function comes in (a TF function through `call_tf`, the
round trip `call_tf(jax2tf.convert(f))`, a SavedModel, TF1 graph mode,
`Exported.call`), its derivatives must be JAX's derivatives of the same
function written in `jnp`. Three kinds of function, each with the
transformations JAX defines for it:

- `c2r`: complex to real, not holomorphic: `grad`, `vmap(grad)`, `vjp`,
  `jvp` with a complex tangent;
- `holo`: holomorphic complex to complex: `vjp` and `jvp` with complex
  vectors, `jacrev` and `jacfwd` with `holomorphic=True`;
- `r2c`: real to complex: `vjp` with a complex cotangent, `jvp`, `jacfwd`.

Each eagerly and under `jax.jit`. No TensorFlow here: the tests without it
use this module too.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

C = np.array([1. + 2.j, -.5 + .3j, .7 - 1.1j], np.complex64)
Z = np.array([.3 + .1j, -1.2 + .5j, .4 - .9j], np.complex64)
X = np.array([.3, -1.2, .8], np.float32)
# Cotangents and tangents: complex, not conjugate-symmetric.
U = np.array([1. + 1.j, .5 - 2.j, -1.j], np.complex64)
T = np.array([.2 - .7j, 1.5 + .4j, -.3 + .9j], np.complex64)
T_REAL = np.array([.7, -.4, 1.1], np.float32)
TOL = 2e-4


def c2r(z):
  """Complex to real, not holomorphic."""
  return jnp.sum(jnp.real(z * z * C) + jnp.abs(z) ** 2)


def holo(z):
  """Holomorphic, complex to complex."""
  return z * z * C + jnp.exp(z)


def r2c(x):
  """Real to complex."""
  return jnp.exp(1j * x) * C + x * x


JNP = dict(c2r=c2r, holo=holo, r2c=r2c)


def _vjp(f: Callable[..., Any], ct: Any) -> Callable[..., Any]:
  return lambda a: jax.vjp(f, a)[1](ct)[0]


def _jvp(f: Callable[..., Any], t: Any) -> Callable[..., Any]:
  return lambda a: jax.jvp(f, (a,), (t,))[1]


@dataclasses.dataclass(frozen=True)
class Check:
  """One transformation of one kind of function.

  Attributes:
    name: the transformation, as reports name it.
    transform: makes the function to call from the function under test.
    arg: the argument to call it on.
  """
  name: str
  transform: Callable[[Callable[..., Any]], Callable[..., Any]]
  arg: np.ndarray


CHECKS: dict[str, tuple[Check, ...]] = dict(
    c2r=(Check("grad", jax.grad, Z),
         Check("vmap(grad)", lambda f: jax.vmap(jax.grad(f)),
               np.stack([Z, Z[::-1] * 1j])),
         Check("vjp", lambda f: _vjp(f, np.float32(1.7)), Z),
         Check("jvp", lambda f: _jvp(f, T), Z)),
    holo=(Check("vjp", lambda f: _vjp(f, U), Z),
          Check("jvp", lambda f: _jvp(f, T), Z),
          Check("jacrev", lambda f: jax.jacrev(f, holomorphic=True), Z),
          Check("jacfwd", lambda f: jax.jacfwd(f, holomorphic=True), Z)),
    r2c=(Check("vjp", lambda f: _vjp(f, U), X),
         Check("jvp", lambda f: _jvp(f, T_REAL), X),
         Check("jacfwd", jax.jacfwd, X)),
)


def audit(kind: str, fun: Callable[..., Any],
          wraps: tuple[str, ...] = ("eager", "jit")) -> list[str]:
  """The checks of ``kind`` on ``fun`` that do not give JAX's answer.

  Args:
    kind: "c2r", "holo" or "r2c".
    fun: the function under test, of one argument.
    wraps: "eager", "jit", or both.

  Returns:
    One line per check that is wrong or raises, saying how; empty if all
    give what they give on the ``jnp`` function.
  """
  failures = []
  for check in CHECKS[kind]:
    expected = np.asarray(check.transform(JNP[kind])(check.arg))
    for wrap in wraps:
      f = check.transform(fun)
      f = jax.jit(f) if wrap == "jit" else f
      try:
        got = np.asarray(f(check.arg))
      except Exception as e:  # pylint: disable=broad-except
        failures.append(f"{kind} {check.name} {wrap}: {type(e).__name__}: "
                        f"{str(e).splitlines()[0] if str(e) else ''}")
        continue
      if got.shape != expected.shape or not np.allclose(
          got, expected, rtol=TOL, atol=TOL):
        failures.append(f"{kind} {check.name} {wrap}: {got} != {expected}")
  return failures


def count() -> int:
  """How many checks an audit of all three kinds, eager and jit, makes."""
  return 2 * sum(len(c) for c in CHECKS.values())
