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
"""The Jacobian of a TensorFlow function inside JAX, under jit.

A TensorFlow energy R^(n x 3) -> R^3 (pairwise Lennard-Jones, radius of
gyration, a sum of sines), its Jacobian with jax.jacrev under jax.jit, checked
against the same function written in jax.numpy. Upstream JAX fails here with
"Batching rule for 'call_tf' not implemented".

Run: python examples/tf_jacobian.py
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import jax  # noqa: E402
from jax.experimental import jax2tf  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def energy_tf(x):
  d = x[:, None, :] - x[None, :, :]
  n = tf.shape(x)[0]
  r2 = tf.reduce_sum(d * d, -1) + tf.eye(n)
  inv6 = 1. / (r2 * r2 * r2)
  lj = tf.reduce_sum((1. - tf.eye(n)) * (inv6 * inv6 - inv6))
  rg = tf.reduce_mean(tf.reduce_sum((x - tf.reduce_mean(x, 0)) ** 2, -1))
  return tf.stack([lj, rg, tf.reduce_sum(tf.sin(x))])


def energy_jnp(x):
  d = x[:, None, :] - x[None, :, :]
  n = x.shape[0]
  r2 = jnp.sum(d * d, -1) + jnp.eye(n)
  inv6 = 1. / (r2 * r2 * r2)
  lj = jnp.sum((1. - jnp.eye(n)) * (inv6 * inv6 - inv6))
  rg = jnp.mean(jnp.sum((x - jnp.mean(x, 0)) ** 2, -1))
  return jnp.stack([lj, rg, jnp.sum(jnp.sin(x))])


def main():
  # Eight atoms on the corners of a cube, slightly displaced.
  corners = np.array([[i, j, k] for i in (0, 1) for j in (0, 1)
                      for k in (0, 1)], np.float32)
  x = 1.2 * corners + 0.05 * np.sin(np.arange(24, dtype=np.float32)
                                    ).reshape(8, 3)
  jac = jax.jit(jax.jacrev(jax2tf.call_tf(energy_tf)))(x)
  ref = jax.jacrev(energy_jnp)(x)
  err = float(jnp.max(jnp.abs(jac - ref)))
  print(f"jax {jax.__version__}: jit(jacrev(call_tf(energy_tf))) -> "
        f"shape {jac.shape}, max |difference from jnp| = {err:.1e}")
  assert err < 1e-4 * float(jnp.max(jnp.abs(ref))), err

  # The round trip of jax-ml/jax#11753: a JAX function converted to TF and
  # called back from JAX, batched and differentiated eagerly (and under jit
  # alike): JAX's own rules transform its StableHLO.
  def f(v):
    return [jnp.sum(v * v), jnp.prod(v)]
  f_rt = jax2tf.call_tf(jax2tf.convert(jax.jit(f), with_gradient=True))
  v = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
  ok = [bool(jnp.allclose(a, b, rtol=1e-5, atol=1e-6)) for a, b in zip(
      jax.vmap(f_rt)(v) + jax.jacrev(f_rt)(v[0]),
      jax.vmap(f)(v) + jax.jacrev(f)(v[0]))]
  print("round trip, eager vmap and jacrev equal JAX's:", all(ok))
  assert all(ok), ok

if __name__ == "__main__":
  main()
