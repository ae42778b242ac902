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
"""Eager vectorized calls run compiled by XLA, as under ``jax.jit``.

Eager ``jax.vmap(call_tf(f))`` of a small Keras attention block killed the
process ("double free or corruption") or returned NaN: TF's executor ran
pfor's graph with oneDNN kernels, as TF's own eager ``tf.vectorized_map``
does (which dies too), while the same call under ``jax.jit``, compiled by
XLA, was right. The eager call now runs the function ``jit`` compiles,
compiled by XLA, wherever XLA compiles it; TF's executor only where XLA
cannot (eager ``vmap`` still needs no XLA: see
``test_vmap_function_kinds.py``, ``tf.math.special.dawsn``), and where the
function has ops XLA computes otherwise (random numbers, the signs of
singular vectors and eigenvectors).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jax
from jax.experimental import jax2tf
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close

call_tf = jax2tf.call_tf


def test_eager_vectorized_call_is_the_jit_call():
  """XLA's gather clamps an index out of range, TF's executor raises: eager
  ``vmap`` used to raise where ``jit(vmap)`` returns."""
  f = jax.vmap(call_tf(lambda x: tf.gather(x, [5])))
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  expected = jax.jit(f)(x)
  assert_close(f(x), expected)
  np.testing.assert_array_equal(np.asarray(expected), x[:, 3:4])


def test_eager_vmap_without_xla_kernel_still_runs():
  """Where XLA cannot compile the vectorized function, TF's executor runs it."""
  f = call_tf(lambda x: tf.math.special.dawsn(x) * 2.)
  x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
  expected = np.stack([2. * tf.math.special.dawsn(r).numpy() for r in x])
  assert_close(jax.vmap(f)(x), expected, tol=1e-5)


def test_eager_vmap_of_random_ops_draws_the_eager_calls_numbers():
  """XLA draws other stateless random numbers than TF's kernels: eager
  ``vmap`` draws those of the eager call (TF's executor), ``jit(vmap)``
  those of the jitted call (XLA)."""
  f = call_tf(lambda x: x * tf.random.stateless_normal([5], seed=[1, 2])
              + tf.random.stateless_uniform([5], seed=[3, 4]))
  xs = np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)
  eager = np.stack([np.asarray(f(x)) for x in xs])
  jitted = np.stack([np.asarray(jax.jit(f)(x)) for x in xs])
  assert not np.allclose(eager, jitted, atol=1e-2)  # two sets of numbers
  assert_close(jax.vmap(f)(xs), eager)
  assert_close(jax.jit(jax.vmap(f))(xs), jitted)


@pytest.mark.parametrize("name", ["svd", "eigh"])
def test_eager_vmap_of_singular_and_eigenvectors_has_the_eager_calls_signs(
    name):
  """XLA's Jacobi solvers choose other signs of singular vectors and
  eigenvectors than TF's kernels: eager ``vmap`` has the eager call's."""
  op = {"svd": lambda x: tf.linalg.svd(x)[1],
        "eigh": lambda x: tf.linalg.eigh(x + tf.transpose(x))[1]}[name]
  f = call_tf(op)
  xs = np.random.default_rng(0).standard_normal((3, 4, 4)).astype(np.float32)
  eager = np.stack([np.asarray(f(x)) for x in xs])
  assert not np.allclose(eager[0], jax.jit(f)(xs[0]), atol=1e-2)
  assert_close(jax.vmap(f)(xs), eager, tol=1e-4)


_KERAS_BLOCK = textwrap.dedent("""
    import json
    import numpy as np
    import keras
    import jax
    from jax.experimental import jax2tf
    keras.utils.set_random_seed(0)
    inp = keras.Input((6, 8))
    h = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)(inp, inp)
    h = keras.layers.LayerNormalization()(h + inp)
    h = keras.layers.Dense(16, activation="gelu")(h)
    h = keras.layers.GlobalAveragePooling1D()(h)
    model = keras.Model(inp, keras.layers.Dense(1)(h))
    x = np.random.default_rng(0).normal(size=(4, 6, 8)).astype(np.float32)
    f = jax2tf.call_tf(lambda xi: model(xi[None])[0])
    eager = np.asarray(jax.vmap(f)(x))
    jitted = np.asarray(jax.jit(jax.vmap(f))(x))
    print(json.dumps({"eager": eager.tolist(), "jit": jitted.tolist()}))
""")


@pytest.mark.parametrize("run", range(3))
def test_eager_vmap_of_a_keras_attention_block_in_a_subprocess(run):
  """Intermittent (heap corruption): a fresh process each time."""
  del run
  out = subprocess.run(
      [sys.executable, "-c", _KERAS_BLOCK], capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=600,
      check=False)
  assert out.returncode == 0, (
      f"the process died (exit {out.returncode}): {out.stderr[-2000:]}")
  res = json.loads(out.stdout.strip().splitlines()[-1])
  eager, jitted = np.array(res["eager"]), np.array(res["jit"])
  assert np.all(np.isfinite(eager)), eager
  assert_close(eager, jitted, tol=1e-5)
