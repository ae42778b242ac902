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
"""The Python errors a peer project's op tests found, each right or refused.

Each case raised an error that was neither an answer nor a refusal: a
`tf.while_loop` returned as it is (a tuple eagerly, a list in a graph),
`SelfAdjointEigV2` without vectors inside `tf.function(jit_compile=True)`
(its eager vectors XLA's whole matrix, its graph's empty), a bilinear
`tf.image.resize` of float64 images (a float32 result) in forward mode, and
`tf.math.top_k` with a `k` the function captures under `jax.jit`. Checked
against TF-only references (`tf.GradientTape`, `tape.jacobian`, loops of
TF calls); the op matrix's `ISSUE_49_FAMILIES` run their neighbours
through every transformation.
"""

from __future__ import annotations

import jax
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
from jax.experimental.jax2tf.call_tf_lib.tf_function import traces
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close

call_tf = jax2tf.call_tf
rng = np.random.default_rng(49)


def _tf_jacobian_by_rows(f, x):
  """TF's reverse-mode Jacobian, one tape.gradient per result element
  (tape.jacobian itself fails where the result's dtype is not the
  argument's)."""
  x = tf.constant(x)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y = f(x)
  n = int(np.prod(y.shape))
  rows = [tape.gradient(y, x, output_gradients=tf.reshape(
      tf.one_hot(i, n, dtype=y.dtype), y.shape)).numpy() for i in range(n)]
  return np.stack(rows).reshape(tuple(y.shape) + tuple(x.shape))


def _tf_jacobian(f, x):
  """tape.jacobian of each result of `f` (a tensor or a sequence)."""
  x = tf.constant(x)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    ys = f(x)
  single = not isinstance(ys, (tuple, list))
  jacs = [tape.jacobian(y, x, experimental_use_pfor=False,
                        unconnected_gradients=tf.UnconnectedGradients.ZERO
                        ).numpy() for y in ([ys] if single else ys)]
  return jacs[0] if single else jacs


# --- tf.while_loop returned as it is ---------------------------------------

def _loop(x):
  """The issue's function: the loop's (counter, value), a tuple eagerly (the
  body's) and a list in a graph (the loop_vars')."""
  return tf.while_loop(lambda i, y: i < 3,
                       lambda i, y: (i + 1, tf.sin(y) * 1.5 + x),
                       [tf.constant(0), x])


def test_tf_itself_gives_a_tuple_eagerly_and_a_list_in_a_graph():
  x = tf.constant([.5, 1.])
  assert isinstance(_loop(x), tuple)
  assert isinstance(tf.function(_loop)(x), list)


def test_while_loop_structure_is_the_first_runs_eager_and_jit():
  x = rng.standard_normal(4).astype(np.float32)
  i_ref, y_ref = (t.numpy() for t in _loop(tf.constant(x)))
  g = call_tf(_loop)
  eager = g(x)  # the Python function's result: a tuple
  jitted = jax.jit(g)(x)  # the graph's: a list
  assert isinstance(eager, tuple) and isinstance(jitted, list)
  for result in (eager, jitted):
    assert_close(list(result), [i_ref, y_ref])


@pytest.mark.parametrize("jit", [False, True])
def test_while_loop_as_it_is_differentiates_and_batches(jit):
  x = rng.standard_normal(4).astype(np.float32)
  maybe_jit = jax.jit if jit else (lambda f: f)
  g = call_tf(_loop)
  jac = _tf_jacobian(lambda x: _loop(x)[1], x)
  # jacfwd of both results (the counter's tangent is float0): the value's
  # Jacobian is TF's.
  _, jy = maybe_jit(jax.jacfwd(g))(x)
  np.testing.assert_allclose(jy, jac, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(
      maybe_jit(jax.jacrev(lambda x: g(x)[1]))(x), jac, rtol=1e-5,
      atol=1e-5)
  t = rng.standard_normal(4).astype(np.float32)
  (_, y), (_, ty) = maybe_jit(lambda x, t: jax.jvp(g, (x,), (t,)))(x, t)
  np.testing.assert_allclose(ty, jac @ t, rtol=1e-5, atol=1e-5)
  xs = rng.standard_normal((3, 4)).astype(np.float32)
  _, ys = maybe_jit(jax.vmap(g))(xs)
  np.testing.assert_allclose(
      ys, np.stack([_loop(tf.constant(r))[1].numpy() for r in xs]),
      rtol=1e-5, atol=1e-5)


def _loop_random(x):
  def body(i, y):
    noise = tf.random.uniform(tf.shape(x))
    return i + 1, tf.sin(y) * 1.5 + x + 0. * noise
  return tf.while_loop(lambda i, y: i < 3, body, [tf.constant(0), x])


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_while_loop_with_a_stateful_op_refuses_or_runs_per_element(
    transform):
  """Eagerly, jacrev and jacfwd (vmaps of one call per basis vector) of a
  function with side effects: refused, naming the op; run once per
  element with vmap_method="sequential"."""
  x = rng.standard_normal(3).astype(np.float32)
  diff = getattr(jax, transform)
  value = lambda g: (lambda x: g(x)[1])
  with pytest.raises(call_tf_errors.CallTfVectorizationError,
                     match="RandomUniform"):
    diff(value(call_tf(_loop_random)))(x)
  got = diff(value(call_tf(_loop_random, vmap_method="sequential")))(x)
  np.testing.assert_allclose(
      got, _tf_jacobian(lambda x: _loop_random(x)[1], x), rtol=1e-5,
      atol=1e-5)


def test_results_structure_is_tfs_structure():
  """A list and a tuple of the same results are one structure (as tf.nest's
  check_types=False); the first run's is kept. Anything else differs."""
  leaf = lambda tree: jax.tree.structure(tree)
  first, now = leaf((0, {"a": 0, "b": (0, 0)})), leaf([0, {"a": 0, "b": [0, 0]}])
  assert traces.results_structure(None, now) == now
  assert traces.results_structure(first, now) == first
  for other in ([0, {"a": 0, "c": [0, 0]}], [0, {"a": 0, "b": [0]}], [0, 0]):
    with pytest.raises(call_tf_errors.CallTfTraceError,
                       match="different structures"):
      traces.results_structure(first, leaf(other))


def test_results_of_another_structure_on_a_later_run_are_refused():
  """A function whose runs return other dict keys (Python state read while
  it runs): a clear error, not upstream's AssertionError. (An eager call
  with a result of size 0 or 1 runs the function, then traces it for the
  shapes its graph gives such results.)"""
  runs = []

  def f(x):
    runs.append(None)
    return {"a" if len(runs) == 1 else "b": x * 2.}
  with pytest.raises(call_tf_errors.CallTfTraceError,
                     match="different structures"):
    call_tf(f)(np.float32(1.))
  assert len(runs) == 2


# --- decompositions without vectors in a jit_compile tf.function ----------

def _eigh_values_only(x):
  return tuple(tf.raw_ops.SelfAdjointEigV2(input=x, compute_v=False))


def test_eigh_values_only_xla_value_is_tfs_or_xlas():
  """TF disagrees with itself about the vectors it does not compute: its
  graph says shape (0,), its eager kernel a scalar, XLA (which runs a
  jit_compile function eagerly) the whole matrix. Any is a right value;
  the values are TF's."""
  x = rng.standard_normal((3, 5, 5)).astype(np.float32)
  x = x + np.swapaxes(x, 1, 2)
  f = tf.function(_eigh_values_only, jit_compile=True)
  e_ref = _eigh_values_only(tf.constant(x))[0].numpy()
  g = call_tf(f)
  for e, v in (g(x), jax.jit(g)(x)):
    np.testing.assert_allclose(e, e_ref, rtol=1e-4, atol=1e-4)
    assert v.shape in ((0,), (), (3, 5, 5))


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd", "jvp", "grad",
                                       "hessian"])
@pytest.mark.parametrize("jit", [False, True])
def test_eigh_values_only_xla_derivatives(transform, jit):
  """The issue's case: eagerly, jacrev and jacfwd failed (a cotangent of the
  XLA-shaped vectors given to a function traced for (0,); a primal of one
  shape with a tangent of another). Derivatives are TF's, the vectors
  their graph's (0,)."""
  # Small matrices: eagerly, the forward mode's tangent of the eigenvalues
  # is one VJP per eigenvalue (the accumulator has none), and TF's XLA
  # cache misses the backward function of this values-only decomposition
  # on every call (measured: a compile of 0.4-0.6 s each, several a VJP;
  # 44 s for 3 matrices of 5x5, where a FusedBatchNorm's hits).
  x = rng.standard_normal((2, 3, 3)).astype(np.float32)
  x = x + np.swapaxes(x, 1, 2)
  g = call_tf(tf.function(_eigh_values_only, jit_compile=True))
  maybe_jit = jax.jit if jit else (lambda f: f)
  jac_e = _tf_jacobian(lambda x: _eigh_values_only(x)[0], x)
  tol = dict(rtol=1e-3, atol=1e-3)
  if transform in ("jacrev", "jacfwd"):
    je, jv = maybe_jit(getattr(jax, transform)(g))(x)
    np.testing.assert_allclose(je, jac_e, **tol)
    assert jv.shape == (0, 2, 3, 3)
  elif transform == "jvp":
    t = rng.standard_normal(x.shape).astype(np.float32)
    t = t + np.swapaxes(t, 1, 2)
    (e, v), (te, tv) = maybe_jit(lambda x, t: jax.jvp(g, (x,), (t,)))(x, t)
    np.testing.assert_allclose(te, np.tensordot(jac_e, t, 3), **tol)
    assert v.shape == tv.shape == (0,)
  elif transform == "grad":
    w = rng.standard_normal((2, 3)).astype(np.float32)
    got = maybe_jit(jax.grad(lambda x: jnp.sum(g(x)[0] * w)))(x)
    np.testing.assert_allclose(got, np.tensordot(w, jac_e, 2), **tol)
  else:
    # (A batch of one matrix here aborts the process in TF's kernels, in
    # tf.vectorized_map of the tangent function alone: reported.)
    w = rng.standard_normal((2, 3)).astype(np.float32)
    f = lambda x: tf.reduce_sum(_eigh_values_only(x)[0] ** 2 * w)
    xt = tf.constant(x)
    with tf.GradientTape(persistent=True) as outer:
      outer.watch(xt)
      with tf.GradientTape() as inner:
        inner.watch(xt)
        y = f(xt)
      gr = inner.gradient(y, xt)
    expected = outer.jacobian(gr, xt, experimental_use_pfor=False).numpy()
    got = maybe_jit(jax.hessian(lambda x: jnp.sum(g(x)[0] ** 2 * w)))(x)
    np.testing.assert_allclose(got, expected, **tol)


@pytest.mark.parametrize("vmap_method", ["sequential", "pfor"])
def test_eigh_values_only_xla_derivatives_with_other_methods(vmap_method):
  """Without the engine's probe (which traces the function anyway), the
  JVP rule traces it to shape the XLA-computed empties as the graph."""
  x = rng.standard_normal((2, 3, 3)).astype(np.float32)
  x = x + np.swapaxes(x, 1, 2)
  g = call_tf(tf.function(_eigh_values_only, jit_compile=True),
              vmap_method=vmap_method)
  jac_e = _tf_jacobian(lambda x: _eigh_values_only(x)[0], x)
  for transform in (jax.jacrev, jax.jacfwd):
    je, jv = transform(g)(x)
    np.testing.assert_allclose(je, jac_e, rtol=1e-3, atol=1e-3)
    assert jv.shape == (0, 2, 3, 3)


def test_eig_values_only_eager_derivatives_are_tfs():
  x = rng.standard_normal((2, 3, 3)).astype(np.float32)

  def f(x):
    e, v = tf.raw_ops.Eig(input=x, compute_v=False, Tout=tf.complex64)
    return tf.math.real(tf.reduce_sum(e * e, -1)), tf.math.real(v)
  g = call_tf(f)
  jac = _tf_jacobian(lambda x: f(x)[0], x)
  for transform in (jax.jacrev, jax.jacfwd):
    je, jv = transform(g)(x)
    np.testing.assert_allclose(je, jac, rtol=1e-4, atol=1e-4)
    assert jv.shape == (0, 2, 3, 3)


# --- resize with another result dtype than its argument --------------------

@pytest.mark.parametrize("half_pixel_centers", [False, True])
@pytest.mark.parametrize("jit", [False, True])
def test_resize_bilinear_of_float64_images_jacfwd(half_pixel_centers, jit):
  """A bilinear resize of float64 images is float32 in TF: forward mode's
  tangent from TF's reverse Jacobian wrote float64 rows into a float32
  list, and TF's executor failed ("Graph execution error")."""
  x = rng.standard_normal((3, 4, 2))

  def f(x):
    y = tf.compat.v1.image.resize_bilinear(
        tf.expand_dims(x, 0), [5, 3], half_pixel_centers=half_pixel_centers)
    return tf.squeeze(y, 0)
  with jax.enable_x64(True):
    g = call_tf(f)
    maybe_jit = jax.jit if jit else (lambda f: f)
    jac = _tf_jacobian_by_rows(f, x)
    got = maybe_jit(jax.jacfwd(g))(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, jac, rtol=1e-5, atol=1e-5)
    t = rng.standard_normal(x.shape)
    _, tangent = maybe_jit(lambda x, t: jax.jvp(g, (x,), (t,)))(x, t)
    np.testing.assert_allclose(tangent, np.tensordot(jac, t, 3), rtol=1e-5,
                               atol=1e-5)


def test_an_error_of_tf_in_a_derivative_is_calls_tfs_naming_the_node():
  """TF's executor failing inside a derivative function call_tf built (here
  a custom gradient that asserts): a CallTfDerivativeError naming the node,
  not TF's InvalidArgumentError."""
  @tf.custom_gradient
  def checked(x):
    def grad(dy):
      tf.debugging.assert_less(tf.reduce_max(dy), 0., message="dy too big")
      return dy
    return tf.identity(x), grad
  g = call_tf(lambda x: checked(x) * 2.)
  x = np.ones(3, np.float32)
  np.testing.assert_allclose(g(x), 2. * x)
  with pytest.raises(call_tf_errors.CallTfDerivativeError,
                     match="Reverse-mode.*dy too big") as e:
    jax.grad(lambda x: jnp.sum(g(x)))(x)
  assert "InvalidArgumentError" in str(e.value)
  with pytest.raises(call_tf_errors.CallTfDerivativeError,
                     match="Forward-mode.*dy too big"):
    jax.jvp(g, (x,), (x,))


def test_derivative_failed_error_names_the_node_and_the_reason():
  message = ("Graph execution error:\n\nDetected at node 'a/Grad' defined "
             "at (most recent call last):\n  File \"x.py\", line 1\n"
             "Invalid data types; op elements double but list elements "
             "float\n\t [[{{node a/Grad}}]] [Op:__inference_f_1]")
  text = str(call_tf_errors.derivative_failed_error(True, ValueError(message)))
  assert "node 'a/Grad'" in text and "op elements double" in text
  assert text.startswith("Forward-mode differentiation")


# --- top_k with a k the function captures ----------------------------------

K = tf.constant(2)


def _top_k(x):
  return tf.math.top_k(x * x, K).values


def test_captured_constant_is_a_constant_of_the_traced_graph():
  """TF passes a small captured eager tensor to its function as an argument
  (XLA then sees no constant k); call_tf's trace keeps it a constant."""
  spec = tf.TensorSpec((2, 5), tf.float32)
  assert tf.function(_top_k).get_concrete_function(spec).captured_inputs
  seen = []

  def record(x):
    seen.append(tf.compat.v1.get_default_graph())
    return _top_k(x)
  jax.jit(call_tf(record))(np.ones((2, 5), np.float32))
  assert seen and not seen[-1].captures


@pytest.mark.parametrize("transform", ["value", "jacrev", "jacfwd", "vmap",
                                       "hessian"])
def test_top_k_with_a_captured_k_eager_and_jit(transform):
  """Under jit, top_k's k is XLA's constant: value, jacrev and jacfwd
  compile ("Error compiling TensorFlow function" before), as eagerly."""
  x = rng.standard_normal((2, 5)).astype(np.float32)
  g = call_tf(_top_k)
  if transform == "value":
    expected, f = _top_k(tf.constant(x)).numpy(), g
  elif transform == "vmap":
    xs = rng.standard_normal((3, 2, 5)).astype(np.float32)
    expected = np.stack([_top_k(tf.constant(r)).numpy() for r in xs])
    f, x = jax.vmap(g), xs
  elif transform == "hessian":
    s = lambda x: jnp.sum(g(x))
    f = jax.hessian(s)
    xt = tf.constant(x)
    with tf.GradientTape(persistent=True) as outer:
      outer.watch(xt)
      with tf.GradientTape() as inner:
        inner.watch(xt)
        y = tf.reduce_sum(_top_k(xt))
      gr = inner.gradient(y, xt)
    expected = outer.jacobian(gr, xt, experimental_use_pfor=False).numpy()
  else:
    expected, f = _tf_jacobian(_top_k, x), getattr(jax, transform)(g)
  for got in (f(x), jax.jit(f)(x)):
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_top_k_with_a_variable_k_is_refused_under_jit():
  """A variable's value may change: under jit its k is no constant, and the
  refusal names TopKV2 (eagerly it runs)."""
  k = tf.Variable(2)
  g = call_tf(lambda x: tf.math.top_k(x, k).values)
  x = rng.standard_normal((2, 5)).astype(np.float32)
  np.testing.assert_allclose(g(x), tf.math.top_k(x, 2).values.numpy())
  with pytest.raises(call_tf_errors.CallTfDynamicShapeError, match="TopKV2"):
    jax.jit(g)(x)
