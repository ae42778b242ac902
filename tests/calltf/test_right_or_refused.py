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
"""Every answer is right or refused: derivatives, effects, complex values.

Each test here is a case that returned a wrong number, or refused with an
error that pointed the wrong way, and is checked against a TF-only
reference (`tf.GradientTape`, `tape.jacobian`, a loop of TF calls) or the
same function in `jnp`.
"""

from __future__ import annotations

import jax
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close
from .util import compiles as _compiles

call_tf = jax2tf.call_tf
rng = np.random.default_rng(7)


def _tf_jacobian(f, x):
  x = tf.constant(x)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y = f(x)
  return tape.jacobian(y, x, experimental_use_pfor=False).numpy()


def _tf_hessian(f, x):
  x = tf.constant(x)
  with tf.GradientTape(persistent=True) as outer:
    outer.watch(x)
    with tf.GradientTape() as inner:
      inner.watch(x)
      y = f(x)
    g = inner.gradient(y, x)
  return outer.jacobian(g, x, experimental_use_pfor=False).numpy()


# --- Forward mode where TF's has no tangent: TF's reverse-mode Jacobian ----

def _resize(x):
  return tf.image.resize(x, [5, 4], method="bilinear")


def _jvp_of_jacobian(f, x, t):
  return np.tensordot(_tf_jacobian(f, x), t, axes=t.ndim)


def test_forward_mode_without_a_second_order_gradient_is_reverse_modes():
  # ResizeBilinearGrad has no gradient: TF's forward mode computes no
  # tangent (which was returned as zeros, then refused). The tangent is
  # J t with J TF's reverse-mode Jacobian. TF's tangents are chosen with
  # vmap_method="pfor" (no StableHLO module).
  x = rng.random((1, 3, 2, 1)).astype(np.float32)
  t = rng.random((1, 3, 2, 1)).astype(np.float32)
  f = call_tf(_resize, vmap_method="pfor")
  got = jax.jvp(f, (x,), (t,))[1]
  assert_close(got, _jvp_of_jacobian(_resize, x, t).astype(np.float32), 1e-5)
  # Under jit that Jacobian is ResizeBilinearGrad's, whose XLA kernel is
  # inexact: refused, naming it (with the defaults JAX differentiates the
  # module instead, below).
  with pytest.raises(ValueError, match="'ResizeBilinearGrad'.*XLA kernel"):
    jax.jit(lambda x, t: jax.jvp(f, (x,), (t,))[1])(x, t)


@pytest.mark.parametrize("method,vmap_method", [
    # XLA has no kernel for ResizeBicubic: TF's tangents, eagerly.
    ("bicubic", None),
    # XLA's bilinear resize takes another pixel at some scales: eagerly,
    # TF's kernels and tangents.
    ("bilinear", None),
    ("nearest", "pfor")])
def test_forward_mode_through_an_unregistered_second_order_gradient(
    method, vmap_method):
  # TF raised its LookupError ("gradient registry has no entry for: ...",
  # the op's gradient's gradient), then call_tf refused; now J t from TF's
  # reverse-mode Jacobian.
  def resize(x):
    return tf.image.resize(x, [5, 4], method=method)
  x = rng.random((1, 3, 2, 1)).astype(np.float32)
  t = rng.random((1, 3, 2, 1)).astype(np.float32)
  f = call_tf(resize, vmap_method=vmap_method)
  got = jax.jvp(f, (x,), (t,))[1]
  assert_close(got, _jvp_of_jacobian(resize, x, t).astype(np.float32), 1e-5)
  assert_close(jax.jacfwd(f)(x), _tf_jacobian(resize, x), 1e-5)


@pytest.mark.parametrize("op", ["InplaceAdd", "InplaceUpdate"])
@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_an_op_without_a_tf_gradient_is_refused_naming_it(op, transform):
  # TF has no gradient for InplaceAdd: its tape raises LookupError, which
  # call_tf raised as it was.
  def f(x):
    return getattr(tf.raw_ops, op)(x=tf.sin(x), i=[1, 3], v=x[:2] * x[:2])
  x = rng.random((5, 2)).astype(np.float32)
  with pytest.raises(call_tf_errors.CallTfDerivativeError,
                     match=f"call_tf: TensorFlow has no gradient for op type "
                           f"'{op}'"):
    getattr(jax, transform)(call_tf(f))(x)


@pytest.mark.parametrize("method,staged", [
    ("bilinear", True), ("nearest", False), ("nearest", True)])
def test_forward_mode_of_resize_is_jaxs_and_right(method, staged):
  # JAX differentiates the lowering of ResizeBilinear (ResizeNearestNeighbor),
  # whose TF gradient is registered: exact, eagerly as under jit. (Eagerly,
  # bilinear resizing keeps TF's kernels, which XLA's differ from at some
  # scales: its forward mode is refused, as above with pfor.)
  def resize(x):
    return tf.image.resize(x, [5, 4], method=method)
  x = rng.random((1, 3, 2, 1)).astype(np.float32)
  t = rng.random((1, 3, 2, 1)).astype(np.float32)

  def tangent(x, t):
    return jax.jvp(call_tf(resize), (x,), (t,))[1]
  got = (jax.jit(tangent) if staged else tangent)(x, t)
  jac = _tf_jacobian(resize, x)  # (1, 5, 4, 1, 1, 3, 2, 1)
  expected = np.tensordot(jac, t, axes=t.ndim)
  assert_close(got, expected.astype(np.float32), 1e-5)


def test_reverse_mode_of_resize_still_right():
  x = rng.random((1, 3, 2, 1)).astype(np.float32)
  g = jax.grad(lambda x: jnp.sum(call_tf(_resize)(x) ** 2))(x)
  xt = tf.constant(x)
  with tf.GradientTape() as tape:
    tape.watch(xt)
    y = tf.reduce_sum(_resize(xt) ** 2)
  assert_close(g, tape.gradient(y, xt).numpy(), 1e-5)


def test_unconnected_tangent_is_zero():
  # An output that does not depend on the argument: zero, not an error.
  f = call_tf(lambda x: (x * 2., tf.ones((2,))))
  x = np.ones(3, np.float32)
  _, (t0, t1) = jax.jvp(f, (x,), (np.ones_like(x),))
  assert_close(t0, np.full(3, 2., np.float32))
  assert_close(t1, np.zeros(2, np.float32))


# --- Gradients with gathers, sorts and slices -------------------------------

def _gather(x):
  return tf.gather(x, [3, 0, 1]) ** 2


def _gather_energy(x):
  return tf.reduce_sum(tf.gather(x, [3, 0, 1]) * tf.roll(x, 1, 0)[:3])


X42 = np.arange(8, dtype=np.float32).reshape(4, 2) / 3.


def test_jit_jacrev_of_gather():
  # Was: "Node 'gradient_tape/Shape' expects to be colocated with unknown
  # node 'args_tf_flat_0'".
  jac = jax.jit(jax.jacrev(call_tf(_gather)))(X42)
  assert_close(jac, _tf_jacobian(_gather, X42))


def test_jit_vmap_grad_of_gather():
  xs = np.stack([X42, X42 + 1., X42 * 2.])
  grads = jax.jit(jax.vmap(jax.grad(call_tf(_gather_energy))))(xs)
  expected = np.stack([_tf_jacobian(_gather_energy, x) for x in xs])
  assert_close(grads, expected)


def test_jit_hessian_of_gather():
  # Was: "returns a result that is not convertible to JAX: IndexedSlices".
  hess = jax.jit(jax.hessian(call_tf(_gather_energy)))(X42)
  assert_close(hess, _tf_hessian(_gather_energy, X42))


def _concat_slices(x):
  return tf.concat([x[:2] * 2., x[1:] ** 2], 0)


@pytest.mark.parametrize("jit", [False, True])
def test_jacfwd_of_concat_and_slices(jit):
  # Was: "cannot vectorize op 'XlaDynamicUpdateSlice'".
  x = np.arange(1, 5, dtype=np.float32)
  jac = (jax.jit if jit else (lambda f: f))(jax.jacfwd(call_tf(
      _concat_slices)))(x)
  assert_close(jac, _tf_jacobian(_concat_slices, x))


def test_jit_hessian_of_concat_and_slices():
  # Was: "gradient registry has no entry for: XlaDynamicUpdateSlice".
  f = lambda x: tf.reduce_sum(_concat_slices(x) ** 3)
  x = np.arange(1, 5, dtype=np.float32) / 4.
  assert_close(jax.jit(jax.hessian(call_tf(f)))(x), _tf_hessian(f, x), 1e-4)


def test_jit_jacfwd_of_cholesky():
  a = np.array([[4., 1., 0.5], [1., 3., 0.2], [0.5, 0.2, 2.]], np.float32)
  jac = jax.jit(jax.jacfwd(call_tf(tf.linalg.cholesky)))(a)
  assert_close(jac, jax.jacfwd(jnp.linalg.cholesky)(a), 1e-4)


# --- A list that grows: XLA loses the writes beyond its initial size -------

def _growing_list(size):
  def f(x):
    n = tf.shape(x)[0]  # three writes
    ta = tf.TensorArray(tf.float32, size=size, dynamic_size=size == 0)

    def body(i, ta):
      return i + 1, ta.write(i, tf.reduce_sum(x) * tf.cast(i, tf.float32))

    _, ta = tf.while_loop(lambda i, _: i < n, body, (0, ta))
    return tf.reduce_sum(ta.stack()) + x
  return f


def test_a_growing_list_under_jit_is_refused():
  # TF's own tf.function(jit_compile=True) returns 0 + x here: XLA keeps the
  # list at size 0 and drops the writes. call_tf under jit returned it too.
  f, x = _growing_list(0), np.ones(3, np.float32)
  assert_close(call_tf(f)(x), f(tf.constant(x)).numpy())  # eager: TF's
  xs = np.stack([x, 2 * x])
  for run, arg in ((jax.jit(call_tf(f)), x),
                   (jax.jit(jax.vmap(call_tf(f))), xs),
                   (jax.jit(jax.vmap(call_tf(f, vmap_method="sequential"))),
                    xs)):
    with pytest.raises(ValueError, match="dynamic_size=True") as e:
      run(arg)
    assert "TensorListSetItem" in str(e.value)
    assert "dynamic_size=False" in str(e.value)


def test_a_list_of_fixed_size_compiles_and_is_right():
  f, x = _growing_list(3), np.ones(3, np.float32)
  expected = f(tf.constant(x)).numpy()
  assert_close(jax.jit(call_tf(f))(x), expected)
  assert_close(jax.jit(jax.vmap(call_tf(f)))(np.stack([x, 2 * x])),
               np.stack([expected, _growing_list(3)(tf.constant(2 * x))]))


def _grows_until(bound):
  """Multiplies x by 1.5 until its sum reaches 10: a data-dependent loop."""
  def f(x):
    _, y = tf.while_loop(lambda i, y: tf.reduce_sum(y) < 10.,
                         lambda i, y: (i + 1, y * 1.5), (0, x),
                         maximum_iterations=bound)
    return y
  return f


def test_the_gradient_of_an_unbounded_loop_under_jit_is_refused():
  # TF's gradient of a tf.while_loop without maximum_iterations keeps the
  # loop's values in lists that grow, which XLA cannot: refused, naming the
  # bound; with a bound it compiles and is tape.jacobian's.
  x = np.array([1., 2.], np.float32)
  unbounded = _grows_until(None)
  assert_close(jax.jacrev(call_tf(unbounded))(x), _tf_jacobian(unbounded, x))
  with pytest.raises(ValueError, match="maximum_iterations=n"):
    jax.jit(jax.jacrev(call_tf(unbounded)))(x)
  bounded = _grows_until(20)
  expected = _tf_jacobian(bounded, x)
  assert np.abs(expected).max() > 1.
  assert_close(jax.jit(jax.jacrev(call_tf(bounded)))(x), expected)
  assert_close(jax.jit(jax.jacfwd(call_tf(bounded)))(x), expected)


# --- Forward over reverse is finite where TF's own is -----------------------

def _cumulative(x):
  return tf.concat([tf.math.cumsum(x), tf.math.cumulative_logsumexp(x)], 0)


def _cumulative_jnp(x):
  return jnp.concatenate([jnp.cumsum(x), jax.lax.cumlogsumexp(x)])


@pytest.mark.parametrize("jit", [False, True])
def test_jvp_of_grad_through_cumulative_logsumexp(jit):
  # The double VJP evaluated the VJP at zero cotangents, where the gradient
  # of cumulative_logsumexp takes the log of zero: all NaN.
  loss = lambda f: (lambda x: jnp.sum(f(x) ** 2))
  x = np.array([0.1, 0.5, -0.3], np.float32)
  t = np.array([1., 0.5, 2.], np.float32)
  jvp = lambda f: (lambda x, t: jax.jvp(jax.grad(loss(f)), (x,), (t,))[1])
  got = (jax.jit if jit else (lambda f: f))(jvp(call_tf(_cumulative)))(x, t)
  assert_close(got, jvp(_cumulative_jnp)(x, t), 1e-4)


# --- A custom gradient's captured tensors: eager TF's gradient, not zero ----
# A tf.custom_gradient function whose result depends on the argument only
# through a tensor it captures (TF Probability's ODE solvers: the adjoint
# method, with the parameters closed over by `ode_fn`). TF's graph-mode
# gradient gave None there, which call_tf made zero wherever it traces the
# VJP (jacrev, jacfwd, vmap of grad, hessian, eagerly and under jit); eager
# TF (tape.jacobian) differentiates the ops the function ran.

C3 = np.array([1., 2., 3.], np.float32)
T3 = np.array([.3, -1.2, .8], np.float32)
TS = np.stack([T3, T3 / 2., -T3])


def _closes_over(x):
  a = tf.sin(x) * x  # captured by the custom-gradient function

  @tf.custom_gradient
  def scaled(y):
    return a * y, lambda dy: dy * a

  return scaled(tf.constant(C3))


def _closes_over_in_a_loop(x):
  # As the ODE solvers: a while loop of the captured parameter, with a
  # custom gradient with respect to the initial state.
  a = tf.exp(x)

  @tf.custom_gradient
  def euler(y0):
    _, y = tf.while_loop(lambda i, y: i < 5,
                         lambda i, y: (i + 1, y - .1 * a * y), (0, y0),
                         maximum_iterations=5)
    return y, lambda dy: dy * (1. - .1 * a) ** 5

  return euler(tf.constant(C3))


def _energy(f):
  return lambda x: tf.reduce_sum(f(x) ** 2)


_maybe_jit = {False: lambda f: f, True: jax.jit}


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("f", [_closes_over, _closes_over_in_a_loop])
@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobian_through_tensors_a_custom_gradient_captures(transform, f,
                                                             jit):
  jac = _maybe_jit[jit](getattr(jax, transform)(call_tf(f)))(T3)
  expected = _tf_jacobian(f, T3)
  assert np.all(np.diag(expected) != 0.)  # the test could not fail on zeros
  assert_close(jac, expected, 1e-5)


@pytest.mark.parametrize("jit", [False, True])
def test_hessian_through_tensors_a_custom_gradient_captures(jit):
  f = _energy(_closes_over)
  hess = _maybe_jit[jit](jax.hessian(call_tf(f)))(T3)
  assert_close(hess, _tf_hessian(f, T3), 1e-4)


@pytest.mark.parametrize("jit", [False, True])
def test_vmap_grad_and_hessian_through_tensors_a_custom_gradient_captures(
    jit):
  f = _energy(_closes_over)
  grads = _maybe_jit[jit](jax.vmap(jax.grad(call_tf(f))))(TS)
  assert_close(grads, np.stack([_tf_jacobian(f, x) for x in TS]), 1e-5)
  hess = _maybe_jit[jit](jax.vmap(jax.hessian(call_tf(f))))(TS)
  assert_close(hess, np.stack([_tf_hessian(f, x) for x in TS]), 1e-4)


def test_jit_vmap_grad_through_tensors_captured_in_a_loop():
  f = _energy(_closes_over_in_a_loop)
  grads = jax.jit(jax.vmap(jax.grad(call_tf(f))))(TS)
  assert_close(grads, np.stack([_tf_jacobian(f, x) for x in TS]), 1e-5)


def test_a_custom_gradient_of_a_differentiated_argument_still_applies():
  # Where the function's argument is differentiated, TF records the custom
  # gradient in both modes: a gradient 3 dy, not the identity's 1.
  def f(x):
    @tf.custom_gradient
    def triple_grad(y):
      return tf.identity(y), lambda dy: 3. * dy
    return triple_grad(tf.sin(x))

  expected = _tf_jacobian(f, T3)
  assert_close(expected, np.diag(3. * np.cos(T3)), 1e-6)
  for jac in (jax.jacrev, jax.jacfwd):
    assert_close(jax.jit(jac(call_tf(f)))(T3), expected, 1e-6)


def test_graph_mode_custom_gradients_are_tfs_outside_call_tf():
  # call_tf records custom gradients as eager TF does only while it traces
  # its own derivatives: a tf.function elsewhere keeps TF's gradient (None).
  jax.jacrev(call_tf(_closes_over))(T3)

  @tf.function(autograph=False)
  def tf_gradient(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = _closes_over(x)
    return tape.gradient(y, x)

  assert tf_gradient(tf.constant(T3)) is None


def _tfp_ode():
  """The states at t = .5, 1 of y' = A(theta) y, solved by TF Probability."""
  tfp = pytest.importorskip("tensorflow_probability")
  y0 = tf.constant([1., .5])

  def f(theta):
    a = tf.reshape(tf.stack([-theta[0], 1., 0., -theta[1]]), [2, 2])
    solver = tfp.math.ode.DormandPrince(rtol=1e-6, atol=1e-8)
    return solver.solve(lambda t, y: tf.linalg.matvec(a, y), 0., y0,
                        solution_times=[.5, 1.]).states
  return f


THETA = np.array([.7, 1.3], np.float32)


def _right_or_refused(compute, expected, tol, errors, *names):
  """`compute()` is `expected()`, or raises one of `errors` naming `names`.

  `expected` is called only for an answer (a TF reference can cost more
  than the refusal).
  """
  try:
    got = compute()
  except errors as e:
    assert all(n in str(e) for n in names), e
  else:
    assert_close(got, expected(), tol)


def test_tfp_ode_gradient_right():
  # Was: zeros. Reverse mode of one solve: TF's gradient of the solver.
  f = _tfp_ode()
  x = tf.constant(THETA)
  with tf.GradientTape() as tape:
    tape.watch(x)
    total = tf.reduce_sum(f(x))
  expected = tape.gradient(total, x).numpy()
  assert np.abs(expected).max() > .1
  grad = jax.grad(lambda v: jnp.sum(call_tf(f)(v)))(THETA)
  assert_close(grad, expected, 2e-3)


# A Jacobian solves the ODE and its adjoint once per element (the
# sequential retry), minutes on 2 cores: the full run's. The default run
# keeps the gradient (above), the refusal under jit (below) and the op
# matrix's tfp_ode value, vmap and jvp.
@pytest.mark.full_run
def test_tfp_ode_jacobian_eagerly_right_or_refused():
  # Was: zeros, for jacrev and jacfwd.
  f = _tfp_ode()
  expected = _tf_jacobian(f, THETA)
  assert np.abs(expected).max() > .1
  for transform in (jax.jacrev, jax.jacfwd):
    # pfor vectorizes neither the gradient of the solver's while loop nor
    # its gradient's gradient today: refused, naming the op and the loop,
    # which works.
    _right_or_refused(lambda: transform(call_tf(f))(THETA), lambda: expected,
                      2e-3, call_tf_errors.CallTfVectorizationError,
                      "StatelessWhile", "vmap_method='sequential'")
    jac = transform(call_tf(f, vmap_method="sequential"))(THETA)
    assert_close(jac, expected, 2e-3)


def test_tfp_ode_jacobian_under_jit_right_or_refused():
  # Was: zeros. XLA cannot compile the gradient of the solver's while loop,
  # whose number of steps is not bounded.
  f = _tfp_ode()
  # pfor cannot vectorize that gradient and XLA cannot compile it unbatched
  # either, so no vmap_method runs it under jit: the refusal says so, and
  # points outside jit, where "sequential" works (above).
  _right_or_refused(lambda: jax.jit(jax.jacrev(call_tf(f)))(THETA),
                    lambda: _tf_jacobian(f, THETA), 2e-3,
                    call_tf_errors.CallTfVectorizationError,
                    "StatelessWhile", "Under jax.jit no vmap_method runs it",
                    "outside jax.jit")


# --- One convention for complex derivatives ---------------------------------

Z = np.complex64(0.3 + 1.1j)


@pytest.mark.parametrize("jit", [False, True])
def test_holomorphic_jacrev_and_jacfwd_agree_with_jnp(jit):
  maybe_jit = jax.jit if jit else (lambda f: f)
  f = call_tf(lambda v: v * v)
  expected = jax.jacrev(lambda v: v * v, holomorphic=True)(Z)
  assert_close(maybe_jit(jax.jacrev(f, holomorphic=True))(Z), expected)
  assert_close(maybe_jit(jax.jacfwd(f, holomorphic=True))(Z), expected)


def test_grad_of_real_function_of_complex_argument():
  f = lambda v: tf.math.real(v * tf.math.conj(v)) + tf.math.imag(v) * 2.
  fj = lambda v: jnp.real(v * jnp.conj(v)) + jnp.imag(v) * 2.
  assert_close(jax.grad(call_tf(f))(Z), jax.grad(fj)(Z))


# --- Side effects: once per element or refused, whatever the batch ---------

@pytest.mark.parametrize("vmap_method", [None, "vectorized", "expand_dims",
                                         "broadcast_all",
                                         "batch_polymorphic"])
@pytest.mark.parametrize("batch", [1, 4])
def test_methods_with_fewer_calls_refuse_side_effects(vmap_method, batch):
  v = tf.Variable(0.)

  def f(x):
    v.assign_add(1.)
    return x * 2.

  xs = np.ones((batch, 3), np.float32)
  with pytest.raises(call_tf_errors.CallTfVectorizationError,
                     match="sequential"):
    jax.vmap(call_tf(f, vmap_method=vmap_method))(xs)
  assert float(v.numpy()) == 0.  # refused before any call
  # The sequential method runs it once per element.
  out = jax.vmap(call_tf(f, vmap_method="sequential"))(xs)
  assert_close(out, xs * 2.)
  assert float(v.numpy()) == batch


def test_variable_write_under_jit_vmap_says_why_and_what_works():
  v = tf.Variable(0.)

  def f(x):
    v.assign_add(1.)
    return x * 2.

  with pytest.raises(call_tf_errors.CallTfVectorizationError) as e:
    jax.jit(jax.vmap(call_tf(f)))(np.ones((2, 3), np.float32))
  msg = str(e.value)
  assert "assigns a TensorFlow variable" in msg
  assert "outside jax.jit" in msg
  assert msg.index("outside jax.jit") < msg.index("sequential")


def test_python_function_op_is_described_as_python():
  f = lambda x: tf.numpy_function(lambda a: a * 2, [x], tf.float32,
                                  stateful=True)
  with pytest.raises(call_tf_errors.CallTfVectorizationError,
                     match="runs Python code"):
    jax.vmap(call_tf(f, output_shape_dtype=jax.ShapeDtypeStruct(
        (3,), np.float32)))(np.ones((2, 3), np.float32))


def test_map_fn_under_jit_is_not_blamed_on_a_batched_predicate():
  f = call_tf(lambda x: tf.map_fn(lambda r: tf.reduce_sum(r ** 2), x))
  try:
    jac = jax.jit(jax.jacrev(f))(np.ones((4, 3), np.float32))
  except call_tf_errors.CallTfVectorizationError as e:
    assert "predicate" not in str(e)
    assert "tf.map_fn" in str(e)
  else:  # vectorized by a path that handles the loop: must be right
    assert_close(jac, jax.jacrev(lambda x: jnp.sum(x ** 2, axis=1))(
        np.ones((4, 3), np.float32)))


# --- One trace per JAX trace: value, VJP, JVP and batched forms agree -------

def _stateful_python():
  state = {"k": 1.0}
  f = call_tf(lambda a: tf.reduce_sum(a * state["k"]))
  return state, f


X3 = np.ones(3, np.float32)


def test_value_and_grad_read_the_same_python_state():
  state, g = _stateful_python()
  jax.jit(g)(X3)
  state["k"] = 2.0
  value, grad = jax.jit(jax.value_and_grad(g))(X3)
  assert float(value) == 6.0
  assert_close(grad, np.full(3, 2., np.float32))


def test_a_new_jit_trace_reads_python_state_again():
  state, g = _stateful_python()
  got = []
  for state["k"] in (1., 2., 3.):
    got.append(float(jax.jit(lambda a: g(a))(X3)))
  assert got == [3., 6., 9.]


def test_jvp_primal_and_tangent_read_the_same_state():
  state, g = _stateful_python()
  jax.jit(lambda x: jax.jvp(g, (x,), (x,)))(X3)
  state["k"] = 2.0
  primal, tangent = jax.jit(lambda x: jax.jvp(g, (x,), (x,)))(X3)
  assert (float(primal), float(tangent)) == (6.0, 6.0)


def test_eager_vmap_and_eager_call_read_the_same_state():
  state, g = _stateful_python()
  xs = np.ones((2, 3), np.float32)
  assert_close(jax.vmap(g)(xs), np.full(2, 3., np.float32))
  state["k"] = 2.0
  assert_close(jax.vmap(g)(xs), np.full(2, 6., np.float32))
  assert float(g(X3)) == 6.0


def test_a_new_wrapper_of_the_same_function_reuses_its_vectorization(
    monkeypatch):
  """pfor's vectorization (vmap_method="pfor") and JAX's compiled batching
  of the module (the default) are made once per function and graph."""
  from jax.experimental.jax2tf.call_tf_lib.batching import pfor as call_tf_pfor
  calls = []
  original = call_tf_pfor.vectorized_map

  def counted(*args, **kwargs):
    calls.append(1)
    return original(*args, **kwargs)

  monkeypatch.setattr(call_tf_pfor, "vectorized_map", counted)
  tfn = tf.function(lambda a: tf.tanh(a) * 2.)
  xs = rng.standard_normal((5, 4)).astype(np.float32)
  for _ in range(3):
    assert_close(jax.vmap(call_tf(tfn, vmap_method="pfor"))(xs),
                 np.tanh(xs) * 2., 1e-6)
  assert len(calls) == 1
  # A plain Python function is traced again (it may read Python state),
  # but the same graph is vectorized once.
  py = lambda a: tf.sin(a) + 1.
  for _ in range(3):
    assert_close(jax.vmap(call_tf(py, vmap_method="pfor"))(xs),
                 np.sin(xs) + 1., 1e-6)
  assert len(calls) == 2
  # The default: JAX batches the module, compiled once.
  for f, expected in ((tfn, np.tanh(xs) * 2.), (py, np.sin(xs) + 1.)):
    compiled = []
    for _ in range(3):
      with jax.log_compiles(), _compiles() as now:
        assert_close(jax.vmap(call_tf(f))(xs), expected, 1e-6)
      compiled.append(len(now))
    assert compiled[0] >= 1 and compiled[1:] == [0, 0], compiled
  assert len(calls) == 2
