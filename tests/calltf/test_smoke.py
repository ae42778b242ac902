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
"""The smoke suite: the fork's core features, on every release, quickly.

`python3 build/fork.py test` runs it (with tests/calltf/test_installed_fork.py)
on every release but the default, which gets the whole suite: vmap of a TF
function against vmap of the same function in jnp, jacrev, jacfwd and
hessian, the jax2tf round trip (refused by default, run with the option and
with "sequential"), a restored jax2tf SavedModel embedded under vmap with
"batch_polymorphic", TF1 graph mode, an output shape TF leaves unknown, a
function with a side effect, call_tf_graph under a symbolic batch, and a
jax.export artifact under vmap, jacrev, jacfwd and hessian.
"""

from __future__ import annotations

import subprocess
import sys

import jax
from jax._src import config
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
from jax.experimental.jax2tf.call_tf_lib import preload
import jax.numpy as jnp
import pytest
import tensorflow as tf

from .util import assert_close
from .util import check_eager_and_jit
from .util import randn

call_tf = jax2tf.call_tf
X = randn(5, 4, 3)
W = randn(3, 2)


def energy_tf(x):
  return tf.reduce_sum(tf.sin(x) * tf.matmul(x, W)[..., :1], axis=-1)


def energy(x):
  return jnp.sum(jnp.sin(x) * (x @ W)[..., :1], axis=-1)


def test_the_modules_every_call_uses_load_with_jax2tf():
  """call_tf.py imports call_tf_lib.preload (patch 0003), so that its
  modules load with jax2tf, not in a first call."""
  assert sys.modules["jax.experimental.jax2tf.call_tf"].preload is preload
  for name in ("autodiff.jvp", "embed.embedding", "stablehlo.exactness",
               "tf_function.shapes"):
    assert f"jax.experimental.jax2tf.call_tf_lib.{name}" in sys.modules


@pytest.mark.parametrize("method", [None, "vectorized", "sequential"],
                         ids=str)
def test_vmap_matches_jnp(method):
  f = call_tf(energy_tf, vmap_method=method)
  check_eager_and_jit(jax.vmap(f), jax.vmap(energy), X)


def test_jacrev_matches_jnp():
  check_eager_and_jit(jax.jacrev(call_tf(energy_tf)), jax.jacrev(energy),
                      X[0])


def test_round_trip_batches_by_default_eagerly_and_under_jit():
  """JAX batches the round trip's module (jax-ml/jax#11753)."""
  round_trip = call_tf(jax2tf.convert(jnp.sin))
  check_eager_and_jit(jax.vmap(round_trip), jax.vmap(jnp.sin), X)
  check_eager_and_jit(jax.jacrev(round_trip), jax.jacrev(jnp.sin), X[0])


def test_round_trip_is_refused_when_pfor_is_chosen():
  round_trip = call_tf(jax2tf.convert(jnp.sin), vmap_method="pfor")
  with pytest.raises(call_tf_errors.CallTfVectorizationError) as e:
    jax.vmap(round_trip)(X)
  assert "'XlaCallModule'" in str(e.value)
  assert "vmap_method='sequential'" in str(e.value)


def test_round_trip_with_the_option_and_with_sequential():
  with config.call_tf_slow_vmap(True):
    check_eager_and_jit(jax.vmap(call_tf(jax2tf.convert(jnp.sin))),
                        jax.vmap(jnp.sin), X)
  sequential = call_tf(jax2tf.convert(jnp.sin), vmap_method="sequential")
  check_eager_and_jit(jax.vmap(sequential), jax.vmap(jnp.sin), X)
  check_eager_and_jit(jax.jacrev(sequential), jax.jacrev(jnp.sin), X[0])


def test_restored_jax2tf_model_is_embedded_under_vmap(tmp_path):
  """A jax2tf SavedModel with a polymorphic batch, called under vmap."""
  w = randn(4, 3)

  def model(x):
    return jnp.tanh(x @ w)

  module = tf.Module()
  module.f = tf.function(
      jax2tf.convert(model, polymorphic_shapes=["(b, 4)"]), autograph=False,
      input_signature=[tf.TensorSpec((None, 4), tf.float32)])
  tf.saved_model.save(module, str(tmp_path / "model"),
                      options=tf.saved_model.SaveOptions(
                          experimental_custom_gradients=True))
  restored = tf.saved_model.load(str(tmp_path / "model"))
  f = call_tf(restored.f, vmap_method="batch_polymorphic")
  x = randn(6, 2, 4)
  check_eager_and_jit(jax.vmap(f), jax.vmap(model), x, tol=2e-5)
  grad = jax.grad(lambda x: jnp.sum(jax.vmap(f)(x) ** 2))
  assert_close(jax.jit(grad)(x),
               jax.grad(lambda x: jnp.sum(jax.vmap(model)(x) ** 2))(x),
               tol=2e-4)


def test_forward_mode_matches_jnp():
  f = call_tf(energy_tf)
  check_eager_and_jit(jax.jacfwd(f), jax.jacfwd(energy), X[0], tol=1e-4)
  scalar = lambda g: (lambda x: jnp.sum(g(x)))
  check_eager_and_jit(jax.hessian(scalar(f)), jax.hessian(scalar(energy)),
                      X[0], tol=1e-3)


def test_tf1_graph_mode_reads_variables_through_the_session():
  w = randn(3, 2)
  graph = tf.Graph()
  with graph.as_default():
    v = tf.compat.v1.Variable(w, use_resource=True)
    x = tf.compat.v1.placeholder(tf.float32, (4, 3))
    with tf.compat.v1.Session(graph=graph) as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      # Converted (and lowered) in the session that holds the variable.
      y = jax2tf.convert(
          lambda x: jnp.sin(call_tf(lambda x: tf.matmul(x, v))(x)),
          with_gradient=False)(x)
      xs = randn(4, 3)
      assert_close(sess.run(y, {x: xs}), jnp.sin(xs @ w), tol=1e-5)


def test_an_output_shape_tf_leaves_unknown_is_inferred(tmp_path):
  module = tf.Module()
  module.f = tf.function(lambda x: tf.concat([x, 2. * x], 0),
                         input_signature=[tf.TensorSpec((None, 3),
                                                         tf.float32)])
  tf.saved_model.save(module, str(tmp_path / "plain"))
  restored = tf.saved_model.load(str(tmp_path / "plain"))
  x = randn(2, 3)
  assert_close(jax.jit(call_tf(restored.f))(x),
               jnp.concatenate([x, 2. * x]))


def test_a_side_effect_is_never_vectorized():
  v = tf.Variable(0.)

  def f(x):
    v.assign_add(1.)
    return x * 2.

  with pytest.raises(call_tf_errors.CallTfVectorizationError):
    jax.vmap(call_tf(f))(X[:, 0])
  jax.vmap(call_tf(f, vmap_method="sequential"))(X[:, 0])
  assert v.numpy() == len(X)


def test_call_tf_graph_with_a_symbolic_batch():
  f = call_tf(lambda x: tf.sin(x) * 2., vmap_method="batch_polymorphic",
              call_tf_graph=True)
  g = tf.function(jax2tf.convert(
      lambda x: jax.vmap(f)(x[None])[0], polymorphic_shapes=["(b, 3)"],
      with_gradient=False), autograph=False).get_concrete_function(
          tf.TensorSpec((None, 3), tf.float32))
  x = randn(5, 3)
  assert_close(g(tf.constant(x)).numpy(), jnp.sin(x) * 2., tol=1e-5)


def test_jax_export_artifact_under_vmap_and_autodiff():
  """Exported.call of a deserialized artifact (patch 0020): vmap through the
  interpreter, derivatives to the order serialized, the next one refused."""
  from jax.experimental.jax2tf.call_tf_lib import compat  # pylint: disable=g-import-not-at-top
  if compat.export_pieces_missing():
    pytest.skip(f"jax.export lacks {compat.export_pieces_missing()}")
  x = X[0]
  exported = jax.export.export(jax.jit(energy))(x)
  by_order = {k: jax.export.deserialize(exported.serialize(vjp_order=k))
              for k in (0, 1, 2)}
  check_eager_and_jit(jax.vmap(by_order[0].call), jax.vmap(energy), X)
  for t in (jax.jacrev, jax.jacfwd):
    check_eager_and_jit(t(by_order[1].call), t(energy), x, tol=1e-5)
    with pytest.raises(ValueError, match="vjp_order"):
      t(by_order[0].call)(x)
  hessian = lambda g: jax.hessian(lambda x: jnp.sum(g(x)))  # noqa: E731
  check_eager_and_jit(hessian(by_order[2].call), hessian(energy), x,
                      tol=1e-4)
  with pytest.raises(ValueError, match="vjp_order"):
    hessian(by_order[1].call)(x)


_COMPLEX_CONSTANT = """
import jax, numpy as np, tensorflow as tf
from jax.experimental import jax2tf
c = np.asarray([1 + 2j, 3 - 4j], np.complex64)
f = jax2tf.call_tf(lambda x: x * tf.constant(c))
x = np.asarray([[1j, 2], [3, -1j], [0.5, 0.5j]], np.complex64)
for g in (jax.vmap(f), jax.jit(jax.vmap(f))):
  np.testing.assert_allclose(np.asarray(g(x)), x * c, rtol=1e-6)
print("ok")
"""


def test_a_complex_constant_under_vmap_in_a_process_of_its_own():
  """The interpreter reads the complex constant tf2xla writes from its
  text: asked for it, the MLIR bindings of jaxlib 0.6 abort the process."""
  proc = subprocess.run([sys.executable, "-c", _COMPLEX_CONSTANT],
                        capture_output=True, text=True, timeout=600,
                        check=False)
  assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), (
      f"exit {proc.returncode}: {proc.stderr[-2000:]}")
