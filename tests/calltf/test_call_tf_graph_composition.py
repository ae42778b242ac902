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
"""The composer's cycle with ``call_tf_graph=True``, twice over.

A jax2tf SavedModel (made in another process, as a user's would be) is
restored, called with ``call_tf(restored.f, call_tf_graph=True)`` inside a
bigger JAX function, converted with a polymorphic batch, saved with
``tf.saved_model.save``, reloaded, run at two batch sizes, and composed
again. Saving failed, in the fork as upstream, with "Found invalid capture
... when saving custom gradients" (the model's weights as variables), or on
the second cycle with "No gradient defined for operation ... IdentityN"
(weights as constants): ``tf.saved_model.save`` re-traces the custom
gradients of the functions that ``XlaCallModule`` calls back, which it can
neither trace nor needs.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

import jax
from jax.experimental import jax2tf
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close

rng = np.random.default_rng(0)
PARAMS = (rng.normal(size=(4, 8)).astype(np.float32) / 2,
          rng.normal(size=(8,)).astype(np.float32),
          rng.normal(size=(8, 4)).astype(np.float32) / 2)
TOL = 2e-4

_MAKE_LEVEL0 = textwrap.dedent("""
    import sys
    import numpy as np
    import tensorflow as tf
    import jax.numpy as jnp
    from jax.experimental import jax2tf
    kind, path = sys.argv[1], sys.argv[2]
    params = [np.load(path + ".npz")[k] for k in ("w1", "b1", "w2")]
    def mlp(p, x):
      return jnp.tanh(x @ p[0] + p[1]) @ p[2]
    module = tf.Module()
    spec = [tf.TensorSpec((None, 4), tf.float32)]
    if kind == "variables":
      module.vars = [tf.Variable(p) for p in params]
      f_tf = jax2tf.convert(mlp, polymorphic_shapes=[None, "(b, 4)"])
      module.f = tf.function(lambda x: f_tf(module.vars, x), autograph=False,
                             input_signature=spec)
    else:
      module.f = tf.function(
          jax2tf.convert(lambda x: mlp(params, x),
                         polymorphic_shapes=["(b, 4)"]),
          autograph=False, input_signature=spec)
    tf.saved_model.save(module, path)
""")

_RUN_SAVED = textwrap.dedent("""
    import json
    import sys
    import numpy as np
    import tensorflow as tf
    restored = tf.saved_model.load(sys.argv[1])
    for batch in (2, 5):
      x = tf.constant(np.ones((batch, 4), np.float32) / batch)
      print(json.dumps([batch, restored.f(x).numpy().tolist()]))
""")


def mlp(x):
  w1, b1, w2 = PARAMS
  return jnp.tanh(x @ w1 + b1) @ w2


def level0(tmp_path: pathlib.Path, kind: str) -> str:
  """A jax2tf SavedModel of `mlp`, saved by a fresh process."""
  path = str(tmp_path / f"level0_{kind}")
  np.savez(path + ".npz", w1=PARAMS[0], b1=PARAMS[1], w2=PARAMS[2])
  subprocess.run([sys.executable, "-c", _MAKE_LEVEL0, kind, path],
                 check=True, capture_output=True)
  return path


def save(fun_tf, path: pathlib.Path):
  module = tf.Module()
  module.f = tf.function(fun_tf, autograph=False, input_signature=[
      tf.TensorSpec((None, 4), tf.float32)])
  tf.saved_model.save(module, str(path))  # custom gradients saved (default)
  return tf.saved_model.load(str(path))


def value_and_grad_tf(f, x):
  xt = tf.constant(x)
  with tf.GradientTape() as tape:
    tape.watch(xt)
    y = f(xt)
    loss = tf.reduce_sum(y ** 2)
  return y.numpy(), tape.gradient(loss, xt).numpy()


@pytest.mark.parametrize("kind,with_gradient", [
    ("variables", True), ("constants", True), ("variables", False)])
def test_call_tf_graph_cycle_saves_and_reloads_twice(tmp_path, kind,
                                                     with_gradient):
  restored = tf.saved_model.load(level0(tmp_path, kind))
  ref = mlp
  for cycle in (1, 2):
    f = jax2tf.call_tf(restored.f, call_tf_graph=True)

    def g(x, f=f):
      return jnp.sin(f(x)) * 2. + x

    def g_ref(x, ref=ref):
      return jnp.sin(ref(x)) * 2. + x

    path = tmp_path / f"cycle{cycle}"
    restored = save(jax2tf.convert(g, polymorphic_shapes=["(b, 4)"],
                                   with_gradient=with_gradient), path)
    for batch in (1, 3):
      x = rng.normal(size=(batch, 4)).astype(np.float32)
      if with_gradient:
        y, dx = value_and_grad_tf(restored.f, x)
        assert_close(dx, jax.grad(lambda x: jnp.sum(g_ref(x) ** 2))(x),
                     tol=TOL)
      else:
        y = restored.f(tf.constant(x)).numpy()
      assert_close(y, g_ref(x), tol=TOL)
    ref = g_ref
  # The last model runs in a process that never saw the others.
  out = subprocess.run([sys.executable, "-c", _RUN_SAVED, str(path)],
                       check=True, capture_output=True, text=True).stdout
  lines = out.strip().splitlines()
  assert len(lines) == 2, out
  for line in lines:
    batch, y = json.loads(line)
    x = np.ones((batch, 4), np.float32) / batch
    assert_close(np.array(y, np.float32), ref(x), tol=TOL)
