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
"""call_tf_graph=True under jax2tf.convert with a symbolic batch.

The route the docs recommend for symbolic batch sizes: gradients through it,
TF functions that capture variables (a Keras layer), and the modules jax2tf
gives TensorFlow, which must be at a StableHLO version TF reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
from jax.experimental import jax2tf
import jax.numpy as jnp
import numpy as np
import tensorflow as tf

from .util import assert_close

call_tf = jax2tf.call_tf
SPEC = tf.TensorSpec([None, 4], tf.float32)


def _converted(f_jax, **kwargs):
  return tf.function(jax2tf.convert(f_jax, polymorphic_shapes=["(b, 4)"],
                                    **kwargs),
                     autograph=False).get_concrete_function(SPEC)


def test_a_symbolic_batch_runs_in_tensorflow():
  """jax2tf's module (with a shape assertion custom call) is TF-readable."""
  f = _converted(jnp.sin)
  for batch in (1, 3):
    x = np.arange(4 * batch, dtype=np.float32).reshape(batch, 4)
    assert_close(f(tf.constant(x)).numpy(), np.sin(x))


def test_gradient_through_call_tf_graph_with_a_symbolic_batch():
  def f_tf(x):
    return tf.sin(x) * 2.

  def loss(x):
    y = jax.vmap(call_tf(f_tf, vmap_method="batch_polymorphic",
                         call_tf_graph=True))(x[None])[0]
    return jnp.sum(y ** 2)

  g = _converted(jax.grad(loss), with_gradient=False)
  x = np.linspace(-1., 1., 12, dtype=np.float32).reshape(3, 4)
  assert_close(g(tf.constant(x)).numpy(),
               jax.grad(lambda x: jnp.sum((jnp.sin(x) * 2.) ** 2))(x))


# Each case runs in its own process: upstream aborts the process there
# (TF's "Check failed: DataTypeCanUseMemcpy"), which must not take the test
# runner down with it.
_KERAS_CASE = textwrap.dedent("""
    import os
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np, tensorflow as tf, jax, jax.numpy as jnp
    from jax.experimental import jax2tf
    layer = tf.keras.layers.Dense(3)
    layer.build((None, 4))
    w, b = (v.numpy() for v in layer.weights)
    f = jax2tf.call_tf(layer, call_tf_graph=True)
    g = tf.function(jax2tf.convert(
        lambda x: jnp.tanh(f(x)) if MODE == "value"
        else jax.grad(lambda x: jnp.sum(jnp.tanh(f(x))))(x),
        polymorphic_shapes=["(b, 4)"], with_gradient=False),
        autograph=False).get_concrete_function(
            tf.TensorSpec([None, 4], tf.float32))
    x = np.linspace(-1., 1., 20, dtype=np.float32).reshape(5, 4)
    ref = (jnp.tanh(x @ w + b) if MODE == "value" else
           jax.grad(lambda x: jnp.sum(jnp.tanh(x @ w + b)))(x))
    np.testing.assert_allclose(g(tf.constant(x)).numpy(), ref,
                               rtol=1e-5, atol=1e-5)
    print("ok")
""")


def _run_case(mode: str) -> subprocess.CompletedProcess:
  return subprocess.run(
      [sys.executable, "-c", f"MODE = {mode!r}\n" + _KERAS_CASE],
      capture_output=True, text=True, timeout=600,
      env=dict(os.environ, JAX_PLATFORMS="cpu"))


def test_a_keras_layer_under_call_tf_graph_with_a_symbolic_batch():
  for mode in ("value", "grad"):
    proc = _run_case(mode)
    assert proc.returncode == 0, (mode, proc.returncode, proc.stderr[-3000:])
    assert proc.stdout.strip().endswith("ok"), proc.stdout


def test_call_tf_graph_of_a_function_that_assigns_a_variable_is_an_error():
  v = tf.Variable(0.)

  def f_tf(x):
    v.assign_add(1.)
    return x

  g = jax2tf.convert(lambda x: call_tf(f_tf, call_tf_graph=True)(x))
  try:
    tf.function(g, autograph=False).get_concrete_function(
        tf.TensorSpec([2], tf.float32))
  except ValueError as e:
    assert "assigns a variable" in str(e) and "call_tf_graph" in str(e)
  else:
    raise AssertionError("expected a ValueError")


_CYCLE_CASE = textwrap.dedent("""
    import os, sys, tempfile
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np, tensorflow as tf, jax, jax.numpy as jnp
    from jax.experimental import jax2tf
    layer = tf.keras.layers.Dense(4, activation="tanh")
    layer.build((None, 4))
    w, b = (v.numpy() for v in layer.weights)
    f = jax2tf.call_tf(layer, vmap_method="batch_polymorphic",
                       call_tf_graph=True)
    def model(x):  # a JAX model around the TF layer, vmapped over rows
      return jnp.sum(jax.vmap(f)(x[:, None, :])[:, 0, :] ** 2, axis=-1)
    def ref(x):
      return jnp.sum(jnp.tanh(x @ w + b) ** 2, axis=-1)
    module = tf.Module()
    module.f = tf.function(
        jax2tf.convert(model, polymorphic_shapes=["(b, 4)"]), autograph=False,
        input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    path = tempfile.mkdtemp()
    tf.saved_model.save(module, path, options=tf.saved_model.SaveOptions(
        experimental_custom_gradients=True))
    restored = tf.saved_model.load(path)
    for batch in (1, 5):
      x = tf.constant(np.linspace(-1, 1, 4 * batch, dtype=np.float32)
                      .reshape(batch, 4))
      with tf.GradientTape() as tape:
        tape.watch(x)
        y = restored.f(x)
        total = tf.reduce_sum(y)
      g = tape.gradient(total, x)
      np.testing.assert_allclose(y.numpy(), ref(x.numpy()), rtol=1e-5,
                                 atol=1e-5)
      np.testing.assert_allclose(
          g.numpy(), jax.grad(lambda x: jnp.sum(ref(x)))(x.numpy()),
          rtol=1e-4, atol=1e-4)
    print("ok")
""")


def test_the_composed_cycle_with_call_tf_graph_saves_and_reloads():
  """A JAX model around a TF layer (call_tf_graph, symbolic batch), saved
  with its gradient, reloaded, run and differentiated at two batch sizes."""
  proc = subprocess.run([sys.executable, "-c", _CYCLE_CASE],
                        capture_output=True, text=True, timeout=600,
                        env=dict(os.environ, JAX_PLATFORMS="cpu"))
  assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
  assert proc.stdout.strip().endswith("ok"), proc.stdout
