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
"""Forward-mode autodiff of call_tf: jvp, jacfwd, hessian, and their mixes.

Each transformation of a call_tf is checked against the same transformation
of the function written in jnp, eagerly and under jit.
"""

from __future__ import annotations

import jax
from jax._src import config
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import ALL_METHODS
from .util import assert_close
from .util import check_eager_and_jit
from .util import randn

call_tf = jax2tf.call_tf
N_ATOMS = 5


def energy_tf(x):
  """A Lennard-Jones energy of N_ATOMS atoms, R^(n x 3) -> R."""
  d = x[:, None, :] - x[None, :, :]
  r2 = tf.reduce_sum(d * d, -1) + tf.eye(N_ATOMS)
  inv6 = 1. / r2 ** 3
  return tf.reduce_sum(4. * (inv6 * inv6 - inv6) * (1. - tf.eye(N_ATOMS))) / 2.


def energy_jnp(x):
  d = x[:, None, :] - x[None, :, :]
  r2 = jnp.sum(d * d, -1) + jnp.eye(N_ATOMS)
  inv6 = 1. / r2 ** 3
  return jnp.sum(4. * (inv6 * inv6 - inv6) * (1. - jnp.eye(N_ATOMS))) / 2.


def _coords():
  grid = np.stack(np.meshgrid(*[np.arange(2)] * 3), -1).reshape(-1, 3)[
      :N_ATOMS]
  return (grid * 1.2 + 0.05 * randn(N_ATOMS, 3)).astype(np.float32)


def _keras():
  model = tf.keras.Sequential([tf.keras.layers.Dense(6, activation="tanh"),
                               tf.keras.layers.Dense(2)])
  model.build((None, 3))
  (w1, b1), (w2, b2) = [(l.kernel.numpy(), l.bias.numpy())
                        for l in model.layers]
  return model, lambda x: jnp.tanh(x @ w1 + b1) @ w2 + b2


def _functions():
  model, model_jnp = _keras()
  return {
      "energy": (energy_tf, energy_jnp, _coords()),
      "keras": (lambda x: model(x), model_jnp, randn(4, 3)),
      "two_outputs": (lambda x: (tf.sin(x) * x, tf.reduce_sum(x ** 3)),
                      lambda x: (jnp.sin(x) * x, jnp.sum(x ** 3)), randn(3)),
  }


TRANSFORMS = {
    "jvp": lambda f: (lambda x: jax.jvp(f, (x,), (jnp.ones_like(x),))),
    "jacfwd": jax.jacfwd,
    "hessian": jax.hessian,
    "jacfwd(jacrev)": lambda f: jax.jacfwd(jax.jacrev(f)),
    "jacrev(jacfwd)": lambda f: jax.jacrev(jax.jacfwd(f)),
    "jacfwd(jacfwd)": lambda f: jax.jacfwd(jax.jacfwd(f)),
}


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("name", ["energy", "keras", "two_outputs"])
def test_forward_mode_matches_jax(name, transform):
  f_tf, f_jnp, x = _functions()[name]
  t = TRANSFORMS[transform]
  check_eager_and_jit(t(call_tf(f_tf)), t(f_jnp), x, tol=2e-3)


def test_custom_gradient_is_used_in_both_modes():
  @tf.custom_gradient
  def triple_grad(x):
    def grad(dy):
      return 3. * dy
    return tf.identity(x), grad

  f = call_tf(lambda x: triple_grad(x) * 2.)
  x = randn(4)
  expected = 6. * np.eye(4, dtype=np.float32)
  for jac in (jax.jacfwd(f), jax.jacrev(f), jax.jit(jax.jacfwd(f))):
    assert_close(jac(x), expected)
  _, tangent = jax.jvp(f, (x,), (np.ones(4, np.float32),))
  assert_close(tangent, 6. * np.ones(4, np.float32))


def test_integer_and_unconnected_inputs_and_outputs():
  def f_tf(x, n, unused):
    del unused
    return x * tf.cast(n, tf.float32), n + 1, tf.ones((2,))

  def f_jnp(x, n, unused):
    del unused
    return x * n.astype(np.float32), n + 1, jnp.ones((2,))

  args = (randn(3), np.int32(4), randn(2))
  tangents = (np.ones(3, np.float32), np.zeros((), jax.dtypes.float0),
              np.ones(2, np.float32))
  for wrap in (lambda g: g, jax.jit):
    out, out_t = wrap(lambda *a: jax.jvp(call_tf(f_tf), a, tangents))(*args)
    ref, ref_t = jax.jvp(f_jnp, args, tangents)
    assert_close(out, ref)
    assert_close(out_t[0], ref_t[0])
    assert out_t[1].dtype == jax.dtypes.float0  # integer output
    assert_close(out_t[2], np.zeros(2, np.float32))  # unconnected output
  jac = jax.jacfwd(lambda x: call_tf(f_tf)(x, np.int32(4), args[2])[0])
  assert_close(jac(args[0]), 4. * np.eye(3, dtype=np.float32))


def _broadcasting(name):
  """A function that broadcasts over leading axes (for one-call methods)."""
  f_tf = lambda x: tf.reduce_sum(tf.sin(x) ** 2, axis=-1)
  f_jnp = lambda x: jnp.sum(jnp.sin(x) ** 2, axis=-1)
  if name == "batch_polymorphic":  # rows of a leading batch axis
    f_tf = lambda x: tf.sin(x) * x
    f_jnp = lambda x: jnp.sin(x) * x
  return f_tf, f_jnp


@pytest.mark.parametrize("method", ALL_METHODS, ids=str)
def test_vmap_of_forward_mode_with_every_method(method):
  f_tf, f_jnp = _broadcasting(method)
  f = call_tf(f_tf, vmap_method=method)
  xs = randn(4, 2, 3)
  for t in (jax.jacfwd, jax.hessian if method != "batch_polymorphic"
            else jax.jacfwd,
            lambda g: (lambda x: jax.jvp(g, (x,), (jnp.ones_like(x),))[1])):
    check_eager_and_jit(jax.vmap(t(f)), jax.vmap(t(f_jnp)), xs, tol=1e-4)


def test_forward_mode_under_jax2tf_convert_with_call_tf_graph():
  f = call_tf(lambda x: tf.sin(x) * 2., call_tf_graph=True)
  g = jax2tf.convert(lambda x: jax.jvp(f, (x,), (jnp.ones_like(x),))[1],
                     with_gradient=False)
  x = randn(3)
  assert_close(tf.function(g, autograph=False)(x).numpy(), 2. * np.cos(x))


def test_custom_gradient_inside_a_called_tf_function_is_used():
  # Forward mode takes tf.autodiff.ForwardAccumulator's fast path only when
  # no op overrides its gradient; the override here sits in a tf.function
  # the function calls (a PartitionedCall), and must still be found.
  @tf.custom_gradient
  def triple_grad(x):
    return tf.identity(x), lambda dy: 3. * dy

  inner = tf.function(lambda x: triple_grad(x) * 2., autograph=False)
  f = call_tf(lambda x: inner(x) + x)
  x = randn(3)
  expected = 7. * np.eye(3, dtype=np.float32)
  for jac in (jax.jacfwd(f), jax.jit(jax.jacfwd(f)), jax.jacrev(f)):
    assert_close(jac(x), expected)


_TIMES_FIVE = "CallTfForkTestTimesFive"
try:
  tf.RegisterGradient(_TIMES_FIVE)(lambda op, dy: 5. * dy)
except KeyError:  # registered already (the module imported twice)
  pass


def test_gradient_override_map_gives_the_same_jacobian_in_both_modes():
  # TF2's GradientTape, which reverse mode uses, does not read
  # gradient_override_map (only tf.gradients does): the gradient is the
  # registered one of Identity. Forward mode must agree with reverse mode,
  # and takes the double VJP, as for any override.
  from jax.experimental.jax2tf.call_tf_lib.autodiff import tf_jvp  # pylint: disable=g-import-not-at-top

  def f_tf(x):
    with tf.compat.v1.get_default_graph().gradient_override_map(
        {"Identity": _TIMES_FIVE}):
      return tf.identity(x) * 2.

  spec = tf.TensorSpec((3,), tf.float32)
  found = tf_jvp.gradient_override_ops(
      tf.function(f_tf, autograph=False).get_concrete_function(spec).graph)
  assert [op_type for op_type, _ in found] == ["Identity"]
  f = call_tf(f_tf)
  x = randn(3)
  assert_close(jax.jacrev(f)(x), 2. * np.eye(3, dtype=np.float32))
  assert_close(jax.jacfwd(f)(x), jax.jacrev(f)(x))


def test_forward_mode_of_a_tensor_list_loop():
  # tf.map_fn's TensorList loop: the accumulator fails to trace it where
  # XLA compiles it, so the tangents come from the double VJP.
  f_tf = lambda x: tf.map_fn(lambda r: tf.sin(r) * r, x)
  f_jnp = lambda x: jnp.sin(x) * x
  x, t = randn(3), randn(3)
  jvp = lambda f: (lambda x: jax.jvp(f, (x,), (t,))[1])
  check_eager_and_jit(jvp(call_tf(f_tf)), jvp(f_jnp), x, tol=1e-5)
  # pfor cannot vectorize the loop for XLA: sequential batches it.
  seq = call_tf(f_tf, vmap_method="sequential")
  check_eager_and_jit(jax.jacfwd(seq), jax.jacfwd(f_jnp), x, tol=1e-5)
  check_eager_and_jit(jax.hessian(lambda x: seq(x).sum()),
                      jax.hessian(lambda x: f_jnp(x).sum()), x, tol=1e-4)


def test_forward_mode_of_a_tensor_list_loop_leaves_eager_tf_usable():
  # The accumulator's failed trace of tf.map_fn left the caching device
  # map_fn sets on TF's variable scope, which graphs share with eager TF:
  # every later eager tf.compat.v1.variable_scope (TF Probability's ODE
  # solvers enter one) raised "Caching devices is not yet supported when
  # eager execution is enabled".
  scope = tf.compat.v1.get_variable_scope()
  before = scope.caching_device
  f_tf = lambda x: tf.map_fn(lambda r: tf.sin(r) * r, x)
  x = randn(3)
  jax.jvp(call_tf(f_tf), (x,), (x,))
  jax.jit(lambda x: jax.jvp(call_tf(f_tf), (x,), (x,)))(x)
  assert scope.caching_device is before
  if before is None:
    with tf.compat.v1.variable_scope(scope, use_resource=True):
      pass


def test_hessian_of_a_tensor_list_loop_fails_to_vectorize_clearly():
  # pfor's converter for the VJP's TensorList loop raises a TypeError of its
  # own under jit(hessian); that is a failure to vectorize like any other:
  # a CallTfVectorizationError naming the op, or with the option, a loop.
  # (By default, under jit, JAX differentiates and batches the StableHLO.)
  f_tf = lambda x: tf.reduce_sum(tf.map_fn(lambda r: tf.sin(r) * r, x))
  f_jnp = lambda x: jnp.sum(jnp.sin(x) * x)
  x = randn(3)
  assert_close(jax.jit(jax.hessian(call_tf(f_tf)))(x),
               jax.hessian(f_jnp)(x), tol=1e-4)
  with config.call_tf_vectorizer("pfor"):
    hess = jax.jit(jax.hessian(call_tf(f_tf)))
    with pytest.raises(call_tf_errors.CallTfVectorizationError,
                       match=r"(?s)cannot vectorize op '\w+'.*TensorFlow said: "):
      hess(x)
    with config.call_tf_slow_vmap(True):
      assert_close(jax.jit(jax.hessian(call_tf(f_tf)))(x),
                   jax.hessian(f_jnp)(x), tol=1e-4)


def test_gradient_override_ops_finds_overrides_in_called_functions():
  from jax.experimental.jax2tf.call_tf_lib.autodiff import tf_jvp  # pylint: disable=g-import-not-at-top

  @tf.custom_gradient
  def triple_grad(x):
    return tf.identity(x), lambda dy: 3. * dy

  inner = tf.function(lambda x: triple_grad(x), autograph=False)
  spec = tf.TensorSpec((3,), tf.float32)
  with_override = tf.function(lambda x: inner(x) * 2., autograph=False)
  plain = tf.function(lambda x: tf.sin(x) * 2., autograph=False)
  found = tf_jvp.gradient_override_ops(
      with_override.get_concrete_function(spec).graph)
  assert [op_type for op_type, _ in found] == ["IdentityN"]
  assert not tf_jvp.gradient_override_ops(
      plain.get_concrete_function(spec).graph)


def test_unbatched_tangent_under_vmap_transposes_to_a_sum():
  # vmap over the primal with one tangent for the whole batch: the batched
  # tangent map keeps the tangent unbatched, and its transpose (reverse mode
  # through it) sums the cotangent over the batch.
  f_tf = lambda x: tf.sin(x) * x
  f_jnp = lambda x: jnp.sin(x) * x
  # A jax.Array: JAX 0.12 asserts on a NumPy array vmapped into any
  # custom_jvp under jit ("non-canonical constant"), call_tf or not.
  xs = jnp.asarray(randn(4, 3))

  def pushforward(f):
    return lambda t: jnp.sum(
        jax.vmap(lambda x: jax.jvp(f, (x,), (t,))[1])(xs) ** 2)

  t = randn(3)
  for wrap in (lambda g: g, jax.jit):
    assert_close(wrap(pushforward(call_tf(f_tf)))(t),
                 pushforward(f_jnp)(t))
    assert_close(wrap(jax.grad(pushforward(call_tf(f_tf))))(t),
                 jax.grad(pushforward(f_jnp))(t))
