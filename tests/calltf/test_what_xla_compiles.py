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
"""What XLA compiles unbatched, vmap and autodiff compute too.

Functions that ``jit(call_tf(f))`` runs were refused under ``vmap``:
assertions (side effects, so pfor would have run them once), bounded
dynamic shapes inside a function whose results are static, stateless
random draws from a seed computed from the data, and forward mode through a
loop whose trip count depends on the data. Each is checked here against a
TensorFlow-only reference: a loop of TF calls (compiled by XLA where the
column is under ``jit``, since XLA drops assertions and draws other random
numbers), ``tf.GradientTape``.
"""

from __future__ import annotations

import jax
from jax.experimental import jax2tf
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close

call_tf = jax2tf.call_tf
rng = np.random.default_rng(0)
XS = rng.normal(size=(4, 6)).astype(np.float32)


def _loop(f, xs, xla=False):
  g = tf.function(f, jit_compile=True, autograph=False) if xla else f
  return np.stack([np.asarray(g(tf.constant(x))) for x in xs])


def _tape_jacobian(f, x):
  xt = tf.constant(x)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(xt)
    y = f(xt)
  return tape.jacobian(y, xt, experimental_use_pfor=False).numpy()


def _jacobians(f, staged):
  g = call_tf(f)
  wrap = jax.jit if staged else (lambda h: h)
  for transform in (jax.jacrev, jax.jacfwd):
    got = wrap(jax.vmap(transform(g)))(XS)
    assert_close(got, np.stack([_tape_jacobian(f, x) for x in XS]), 1e-5)


# --- checks ------------------------------------------------------------------

def _asserted(x):
  tf.debugging.assert_all_finite(x, "not finite")
  tf.debugging.assert_less(tf.reduce_max(x), 100., "too large")
  return x * 2. + tf.reduce_sum(x)


def _ragged(x):  # its constructor asserts its row lengths
  return tf.reduce_sum(tf.RaggedTensor.from_row_lengths(x, [2, 4]), axis=1)


@pytest.mark.parametrize("staged", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("f", [_asserted, _ragged], ids=["assert", "ragged"])
def test_functions_with_checks_batch_and_differentiate(f, staged):
  g = jax.vmap(call_tf(f))
  assert_close((jax.jit(g) if staged else g)(XS), _loop(f, XS), 1e-5)
  _jacobians(f, staged)


def test_eager_vmap_checks_every_elements_assertion():
  """Eagerly, as the unbatched eager call: one element's failed assertion
  raises TensorFlow's error."""
  xs = XS.copy()
  xs[2, 3] = np.nan
  with pytest.raises(tf.errors.InvalidArgumentError, match="not finite"):
    call_tf(_asserted)(xs[2])
  # (A NaN fails both assertions; a graph runs them in no set order.)
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match="not finite|too large"):
    jax.vmap(call_tf(_asserted))(xs)
  xs[2, 3] = 1e3
  with pytest.raises(tf.errors.InvalidArgumentError, match="too large"):
    jax.vmap(call_tf(_asserted))(xs)


def test_under_jit_checks_are_dropped_as_xla_drops_them():
  """Under jit, as XLA compiles the unbatched call: no assertion runs."""
  xs = XS.copy()
  xs[2, 3] = 1e3
  expected = _loop(_asserted, xs, xla=True)
  assert_close(jax.jit(call_tf(_asserted))(xs[2]), expected[2], 1e-5)
  assert_close(jax.jit(jax.vmap(call_tf(_asserted)))(xs), expected, 1e-5)


# --- bounded dynamic shapes ------------------------------------------------

def _where_gather_sum(x):
  idx = tf.where(x > 0)[:, 0]
  return tf.reduce_sum(tf.gather(x, idx) ** 2) * tf.ones([2])


def _unique_count(x):
  u, _ = tf.unique(tf.cast(x > 0, tf.int32))
  return x * tf.cast(tf.size(u), x.dtype)


def _boolean_mask_mean(x):
  kept = tf.boolean_mask(x, x > -0.5)
  return tf.stack([tf.reduce_sum(kept), tf.reduce_max(kept),
                   tf.cast(tf.shape(kept)[0], x.dtype)])


@pytest.mark.parametrize("staged", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("f", [_where_gather_sum, _unique_count,
                               _boolean_mask_mean],
                         ids=["where_gather", "unique", "boolean_mask"])
def test_bounded_dynamic_shapes_inside_a_static_result(f, staged):
  xs = XS.copy()
  xs[1] = -np.abs(xs[1])  # a row with no positive element
  xs[3] = np.abs(xs[3])  # one with all of them
  g = jax.vmap(call_tf(f))
  assert_close((jax.jit(g) if staged else g)(xs), _loop(f, xs), 1e-5)
  _jacobians(f, staged)


def test_a_dynamic_shape_an_op_cannot_take_keeps_tf_path():
  """A sort of a dynamically sized value has no rule: TF's path (pfor),
  which cannot vectorize Where; refused, naming the op, as before."""
  def f(x):
    return tf.reduce_sum(tf.sort(tf.gather(x, tf.where(x > 0)[:, 0]))[:1])
  assert_close(jax.jit(call_tf(f))(XS[0]), _loop(f, XS[:1])[0], 1e-6)
  from jax.experimental.jax2tf.call_tf_lib import errors
  with pytest.raises(errors.CallTfVectorizationError, match="'Where'"):
    jax.jit(jax.vmap(call_tf(f)))(XS)


# --- stateless random draws from a seed of the data ------------------------

def _seeded(x):
  seed = tf.cast(tf.stack([tf.reduce_sum(x) * 1e3, 7.]), tf.int32)
  return x + tf.random.stateless_normal([6], seed=seed)


def test_data_dependent_seeds_draw_each_elements_numbers():
  """Under jit, XLA's numbers (those of the jitted unbatched call); eagerly,
  TF's (those of the eager call)."""
  assert_close(jax.jit(jax.vmap(call_tf(_seeded)))(XS),
               _loop(_seeded, XS, xla=True), 1e-6)
  assert_close(jax.vmap(call_tf(_seeded))(XS), _loop(_seeded, XS), 1e-6)
  assert not np.allclose(_loop(_seeded, XS), _loop(_seeded, XS, xla=True))
  _jacobians(_seeded, staged=True)


# --- loops whose trip count depends on the data -----------------------------

def _data_dependent_loop(x):
  _, s = tf.while_loop(
      lambda i, s: tf.reduce_sum(s) < 10.,
      lambda i, s: (i + 1, tf.nn.relu(s * 1.5 + x)), (0, x),
      maximum_iterations=50)
  return s


@pytest.mark.parametrize("vmap_method", [None, "sequential", "pfor"],
                         ids=str)
def test_forward_mode_through_a_data_dependent_loop(vmap_method):
  """TF's forward mode failed in TF's own code ("`dtype` <dtype: 'variant'>
  is not compatible"); its tangents now come from the double VJP."""
  x = np.abs(XS[0]) + .1
  f = call_tf(_data_dependent_loop, vmap_method=vmap_method)
  expected = _tape_jacobian(_data_dependent_loop, x)
  assert_close(jax.jacfwd(f)(x), expected, 1e-5)
  if vmap_method != "pfor":  # (pfor's TensorLists do not compile with XLA)
    assert_close(jax.jit(jax.jacfwd(f))(x), expected, 1e-5)


# --- a symbolic batch under jax.export ------------------------------------

def test_export_with_a_symbolic_batch_and_its_gradient():
  def f(x):
    return tf.reduce_sum(tf.nn.relu(x) * tf.sin(x), axis=-1)
  g = call_tf(f)
  spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 6"), np.float32)
  values = jax.export.export(jax.jit(jax.vmap(g)))(spec)
  grads = jax.export.export(jax.jit(jax.vmap(jax.grad(
      lambda x: jnp.sum(g(x))))))(spec)
  for n in (1, 4):
    assert_close(values.call(XS[:n]), _loop(f, XS[:n]), 1e-5)
    assert_close(grads.call(XS[:n]),
                 np.stack([_tape_jacobian(f, x) for x in XS[:n]]), 1e-5)


@pytest.mark.parametrize("f", [
    lambda x: tf.reduce_sum(tf.math.log(tf.boolean_mask(x, x > .5))),
    lambda x: tf.math.reduce_variance(tf.boolean_mask(x, x > 10.)),
    lambda x: tf.reduce_max(tf.boolean_mask(x, x < 2.5)),
], ids=["log", "empty", "max_with_inf"])
def test_no_derivative_flows_through_the_padding(f):
  """The padding of a dynamically sized value held the values a gather
  read at the padding's indices: their derivatives (log at 0) reached the
  real elements as NaN, and a max's tie with the padding split its
  gradient (review)."""
  for x in (np.array([0., 1., 2., -1.], np.float32),
            np.array([-np.inf, 1., 2., 3.], np.float32)):
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
      tape.watch(xt)
      y = f(xt)
    expected = tape.gradient(y, xt)
    expected = np.zeros_like(x) if expected is None else expected.numpy()
    for g in (jax.grad(call_tf(f)), jax.jit(jax.grad(call_tf(f)))):
      assert_close(g(x), expected, 1e-6)
    assert_close(jax.vmap(jax.grad(call_tf(f)))(x[None]), expected[None],
                 1e-6)


@pytest.mark.parametrize("f", [_seeded, _asserted, _where_gather_sum],
                         ids=["seeded", "asserted", "where"])
def test_a_batch_of_none(f):
  """Eagerly, pfor's loops failed on an empty batch (review): a batch of
  none needs no call."""
  empty = np.zeros((0, 6), np.float32)
  expected_shape = (0, *np.shape(f(tf.constant(XS[0]))))
  for g in (jax.vmap(call_tf(f)), jax.jit(jax.vmap(call_tf(f)))):
    assert g(empty).shape == expected_shape


def test_integer_power_keeps_tf_path():
  """lax.pow takes no integer base: such a module keeps TF's path (it
  raised a TypeError while tracing; review)."""
  def f(x):
    return tf.cast(tf.pow(tf.cast(x, tf.int32), 2), tf.float32)
  xs = np.array([[1., 2., 0., 4.], [0., 0., 3., 4.]], np.float32)
  expected = _loop(f, xs)
  assert_close(jax.vmap(call_tf(f))(xs), expected, 0)
  assert_close(jax.jit(jax.vmap(call_tf(f)))(xs), expected, 0)
