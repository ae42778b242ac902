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
"""call_tf's StableHLO path: JAX batches and differentiates the TF module.

Under ``jax.jit``, ``jax.vmap`` of a pure ``call_tf`` batches the function's
StableHLO module as JAX primitives instead of pfor, and JAX differentiates it
where that gives TF's gradients. Results are checked against TF alone (a
Python loop of TF calls, ``tf.GradientTape``, ``tape.jacobian``) or the same
function in jnp; the path taken is checked by counting pfor's conversions
and TF traces, and by the debug log.
"""

from __future__ import annotations

import collections
import logging

import pytest

from tests.calltf.util import assert_close, compiles, count_calls, randn  # noqa: I001

import jax  # noqa: E402
from jax.experimental import jax2tf  # noqa: E402
from jax.experimental.jax2tf.call_tf_lib import errors  # noqa: E402
from jax.experimental.jax2tf.call_tf_lib.stablehlo import exactness  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

call_tf = jax2tf.call_tf
LOGGER = "jax.experimental.jax2tf.call_tf_lib.stablehlo"


@pytest.fixture
def counts(monkeypatch):
  """Counts pfor's conversions and ForwardAccumulator/GradientTape uses."""
  from tensorflow.python.ops.parallel_for import pfor as pfor_lib  # pylint: disable=g-import-not-at-top
  found = collections.Counter()

  def count(obj, attr, kind):
    count_calls(monkeypatch, found, obj, attr, kind)

  count(pfor_lib.PFor, "convert", "pfor")
  count(tf.GradientTape, "gradient", "tape")
  count(tf.autodiff.ForwardAccumulator, "jvp", "accumulator")
  jax.clear_caches()
  return found


def lj_tf(x):
  d = x[:, None, :] - x[None, :, :]
  n = tf.shape(x)[0]
  r2 = tf.reduce_sum(d * d, -1) + tf.eye(n, dtype=x.dtype)
  inv6 = 1. / (r2 * r2 * r2)
  return 2. * tf.reduce_sum((1. - tf.eye(n, dtype=x.dtype))
                            * (inv6 * inv6 - inv6))


def lj_jnp(x):
  d = x[:, None, :] - x[None, :, :]
  n = x.shape[0]
  r2 = jnp.sum(d * d, -1) + jnp.eye(n, dtype=x.dtype)
  inv6 = 1. / (r2 * r2 * r2)
  return 2. * jnp.sum((1. - jnp.eye(n, dtype=x.dtype)) * (inv6 * inv6 - inv6))


def lattice(n_batch: int, seed: int = 0) -> np.ndarray:
  """Batches of 8 atoms near a cubic lattice (no two atoms close)."""
  base = np.stack(np.meshgrid(*[np.arange(2.)] * 3), -1).reshape(8, 3) * 1.2
  noise = np.random.default_rng(seed).uniform(-.05, .05, (n_batch, 8, 3))
  return (base + noise).astype(np.float32)


def loop_of_tf_calls(f_tf, *batched):
  """The TF-only reference of vmap: one eager TF call per batch element."""
  outs = [f_tf(*[tf.constant(a[i]) for a in batched])
          for i in range(batched[0].shape[0])]
  return jax.tree.map(lambda *o: np.stack([np.asarray(x) for x in o]), *outs)


# --- vmap --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex64])
@pytest.mark.parametrize("batch", [0, 1, 5])
def test_jit_vmap_batches_the_module_not_pfor(counts, dtype, batch):
  w = (randn(3, 4) * 3).astype(dtype)

  def f_tf(x, y):
    return {"mm": tf.linalg.matmul(x[None], tf.constant(w))[0] + y,
            "sum": tf.reduce_sum(x * x)}

  x = (randn(batch, 3) * 3).astype(dtype)
  y = (randn(4) * 3).astype(dtype)
  got = jax.jit(jax.vmap(call_tf(f_tf), in_axes=(0, None)))(x, y)
  if batch == 0:
    expected = {"mm": np.zeros((0, 4), dtype), "sum": np.zeros((0,), dtype)}
  else:
    expected = loop_of_tf_calls(lambda a: f_tf(a, tf.constant(y)), x)
  assert counts["pfor"] == 0
  split = lambda t: jax.tree.map(  # noqa: E731
      lambda a: (np.real(a), np.imag(a)) if np.iscomplexobj(a) else a, t)
  assert_close(split(got), split(expected), 1e-5)


def test_jit_vmap_of_the_energy_matches_jnp_and_takes_the_module(caplog):
  x = lattice(6)
  with caplog.at_level(logging.DEBUG, logger=LOGGER):
    got = jax.jit(jax.vmap(call_tf(lj_tf)))(x)
  assert_close(got, jax.vmap(lj_jnp)(x), 1e-5)
  assert any("jax.vmap of" in r.getMessage()
             and "uses its StableHLO module" in r.getMessage()
             for r in caplog.records), caplog.text


def test_nested_vmap_is_jax_batching(counts):
  x = lattice(12).reshape(3, 4, 8, 3)
  f = call_tf(lj_tf)
  got = jax.jit(jax.vmap(jax.vmap(f)))(x)
  assert_close(got, jax.vmap(jax.vmap(lj_jnp))(x), 1e-5)
  got = jax.jit(jax.vmap(jax.vmap(f), in_axes=1))(np.moveaxis(x, 0, 1))
  assert_close(got, jax.vmap(jax.vmap(lj_jnp))(x), 1e-5)
  assert counts["pfor"] == 0


def test_in_and_out_axes_and_pytrees(counts):
  def f_tf(a, b):
    return a["u"] * b, (tf.reduce_sum(a["v"], 0), b - 1.)

  a = {"u": randn(3, 5), "v": randn(4, 5, 2)}
  b = randn(3)
  f = call_tf(f_tf)
  got = jax.jit(jax.vmap(f, in_axes=({"u": 1, "v": 1}, None),
                         out_axes=(1, (0, 0))))(a, b)

  def f_jnp(a, b):
    return a["u"] * b, (jnp.sum(a["v"], 0), b - 1.)
  expected = jax.vmap(f_jnp, in_axes=({"u": 1, "v": 1}, None),
                      out_axes=(1, (0, 0)))(a, b)
  assert_close(got, expected)
  assert counts["pfor"] == 0


def test_eager_vmap_batches_the_module_as_jit_does(counts):
  """One engine: eager ``vmap`` is JAX's batching of the module too, one
  compiled program, compiled once per argument types."""
  x = lattice(3)
  f = call_tf(lj_tf)
  assert_close(jax.jit(jax.vmap(f))(x), jax.vmap(lj_jnp)(x), 1e-5)
  assert_close(jax.vmap(f)(x), jax.vmap(lj_jnp)(x), 1e-5)
  assert counts["pfor"] == 0
  with jax.log_compiles(), compiles() as compiled:
    again = jax.vmap(f)(lattice(3, seed=1))
  assert compiled == [], compiled
  assert_close(again, jax.vmap(lj_jnp)(lattice(3, seed=1)), 1e-5)
  assert counts["pfor"] == 0


@pytest.mark.parametrize("how", ["option", "context", "vmap_method"])
def test_pfor_can_be_chosen(counts, how):
  x = lattice(4)
  f = call_tf(lj_tf, vmap_method="pfor" if how == "vmap_method" else None)
  if how == "option":
    jax.config.update("jax_call_tf_vectorizer", "pfor")
    try:
      got = jax.jit(jax.vmap(f))(x)
    finally:
      jax.config.update("jax_call_tf_vectorizer", "stablehlo")
  elif how == "context":
    with _config_state()("pfor"):
      got = jax.jit(jax.vmap(f))(x)
  else:
    got = jax.jit(jax.vmap(f))(x)
  assert_close(got, jax.vmap(lj_jnp)(x), 1e-5)
  assert counts["pfor"] >= 1


def _config_state():
  from jax._src import config  # pylint: disable=g-import-not-at-top
  return config.call_tf_vectorizer


def test_the_option_is_part_of_the_jit_key(counts):
  x = lattice(4)
  g = jax.jit(jax.vmap(call_tf(lj_tf)))
  g(x)
  assert counts["pfor"] == 0
  with _config_state()("pfor"):
    got = g(x)
  assert counts["pfor"] >= 1
  assert_close(got, jax.vmap(lj_jnp)(x), 1e-5)


def test_the_option_rejects_unknown_values():
  with pytest.raises(ValueError, match="stablehlo"):
    jax.config.update("jax_call_tf_vectorizer", "loop")


def test_captured_variables_are_read_on_each_trace(counts):
  v = tf.Variable(np.float32(2.))
  w = tf.Variable(randn(3))

  def f_tf(x):
    return x * v + w

  f = call_tf(f_tf)
  x = randn(4, 3)
  assert_close(jax.jit(jax.vmap(f))(x), x * 2. + w.numpy())
  v.assign(5.)
  w.assign(w * 2.)
  # A new trace (a new jitted function) sees the values now.
  assert_close(jax.jit(lambda a: jax.vmap(f)(a))(x), x * 5. + w.numpy())
  # As the unbatched call does.
  assert_close(jax.jit(f)(x[0]), x[0] * 5. + w.numpy())
  assert counts["pfor"] == 0


def _custom_call_tf(x):
  # An op XLA compiles to a custom call that neither JAX nor pfor knows.
  from tensorflow.compiler.tf2xla.python import xla as tfxla  # pylint: disable=g-import-not-at-top
  res = tfxla.custom_call_v2("call_tf_test_unknown_target", [x],
                             [tf.TensorSpec(x.shape, x.dtype)],
                             has_side_effect=False)
  return res[0] if isinstance(res, (list, tuple)) else res


def test_an_op_without_a_rule_falls_back_to_pfor_and_says_so(caplog):
  f = call_tf(_custom_call_tf)
  with caplog.at_level(logging.DEBUG, logger=LOGGER):
    with pytest.raises(errors.CallTfVectorizationError,
                       match="XlaCustomCallV2"):
      jax.jit(jax.vmap(f)).lower(randn(2, 3))
  messages = [r.getMessage() for r in caplog.records]
  assert any("jax.vmap of" in m and "without a JAX rule" in m
             and "custom_call" in m for m in messages), messages


def test_a_function_xla_cannot_compile_keeps_pfor_and_says_so(caplog):
  def f_tf(x):  # HistogramFixedWidth has no XLA kernel
    return tf.cast(tf.histogram_fixed_width(x, [0., 1.], nbins=5), tf.float32)

  with caplog.at_level(logging.DEBUG, logger=LOGGER):
    with pytest.raises(ValueError, match="HistogramFixedWidth"):
      jax.jit(jax.vmap(call_tf(f_tf)))(randn(2, 3))
  assert any("XLA cannot compile it" in r.getMessage()
             for r in caplog.records), caplog.text


def test_a_function_with_side_effects_is_still_refused(counts):
  v = tf.Variable(0.)

  def f_tf(x):
    v.assign_add(1.)
    return x * 2.

  with pytest.raises(errors.CallTfVectorizationError, match="side effects"):
    jax.jit(jax.vmap(call_tf(f_tf)))(randn(2, 3))
  # Its pure variant is batched as StableHLO.
  x = randn(2, 3)
  assert_close(jax.jit(jax.vmap(call_tf(lambda x: x * v)))(x), x * 0.)
  assert counts["pfor"] == 0


# --- differentiation ---------------------------------------------------------

def tf_jacobian(f_tf, x):
  x = tf.constant(x)
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = f_tf(x)
  return tape.jacobian(y, x).numpy()


def tf_hessian(f_tf, x):
  x = tf.constant(x)
  with tf.GradientTape() as outer:
    outer.watch(x)
    with tf.GradientTape() as inner:
      inner.watch(x)
      y = f_tf(x)
    g = inner.gradient(y, x)
  return outer.jacobian(g, x).numpy()


def _counted(f):
  """`f`, and the list it appends to each time its Python runs."""
  runs = []

  def counted(x):
    runs.append(1)
    return f(x)
  return counted, runs


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "hessian",
                                       "vmap_hessian", "grad"])
def test_jit_derivatives_of_the_energy_are_jax_only(counts, transform):
  f_tf, runs = _counted(lj_tf)
  f = call_tf(f_tf)
  x = lattice(3)
  if transform == "vmap_hessian":
    got = jax.jit(jax.vmap(jax.hessian(f)))(x)
  else:
    t = {"jacfwd": jax.jacfwd, "jacrev": jax.jacrev, "grad": jax.grad,
         "hessian": jax.hessian}[transform]
    got = jax.jit(t(f))(x[0])
  seen = (len(runs), counts["pfor"], counts["tape"], counts["accumulator"])
  # (The references use TF's autodiff and pfor.)
  if transform == "vmap_hessian":
    expected = np.stack([tf_hessian(lj_tf, a) for a in x])
  else:
    expected = (tf_hessian(lj_tf, x[0]) if transform == "hessian"
                else tf_jacobian(lj_tf, x[0]))
  assert_close(got, expected, 2e-4)
  # One trace of the TF function (f's Python runs once), no pfor, and
  # nothing from TF's autodiff: reverse mode is JAX's transpose of the module.
  assert seen == (1, 0, 0, 0), seen


@pytest.mark.parametrize("transform", ["grad", "hessian"])
def test_jit_derivatives_of_a_float64_energy_are_jax_only(counts, transform):
  # With jax_enable_x64, a float64 sum's initial zero stays a constant, so
  # the sum is reduce_sum, which JAX transposes (no TF VJP).
  f_tf, runs = _counted(lj_tf)
  x = lattice(1)[0].astype(np.float64)
  with jax.enable_x64(True):
    got = jax.jit(getattr(jax, transform)(call_tf(f_tf)))(x)
    assert got.dtype == np.float64
  seen = (len(runs), counts["pfor"], counts["tape"], counts["accumulator"])
  expected = (tf_hessian(lj_tf, x) if transform == "hessian"
              else tf_jacobian(lj_tf, x))
  assert_close(got, expected, 1e-10)
  assert seen == (1, 0, 0, 0), seen


@pytest.mark.parametrize("transform", ["grad_of_jit", "hessian_of_jit",
                                       "grad_of_checkpoint", "grad_of_scan"])
def test_a_call_differentiated_after_its_trace_is_traced_once(counts,
                                                              transform):
  # JAX traces the call into a jaxpr first (jit, checkpoint, scan), then
  # differentiates the jaxpr: the JVP rule reads the call's own TF trace.
  f_tf, runs = _counted(lj_tf)
  f = call_tf(f_tf)
  x = lattice(3)

  def total(xs):  # one call in the body of a scan
    return jax.lax.scan(lambda c, a: (c + f(a), None), np.float32(0.), xs)[0]

  got = {"grad_of_jit": lambda: jax.grad(jax.jit(f))(x[0]),
         "hessian_of_jit": lambda: jax.hessian(jax.jit(f))(x[0]),
         "grad_of_checkpoint": lambda: jax.jit(jax.grad(jax.checkpoint(f)))(
             x[0]),
         "grad_of_scan": lambda: jax.jit(jax.grad(total))(x)}[transform]()
  seen = (len(runs), counts["pfor"], counts["tape"], counts["accumulator"])
  # (The references use TF's autodiff and pfor.)
  if transform == "hessian_of_jit":
    expected = tf_hessian(lj_tf, x[0])
  elif transform == "grad_of_scan":
    expected = np.stack([tf_jacobian(lj_tf, a) for a in x])
  else:
    expected = tf_jacobian(lj_tf, x[0])
  assert_close(got, expected, 2e-4)
  assert seen == (1, 0, 0, 0), seen


def _scaled_sum():
  """A sum scaled by Python state, and a data-dependent loop of it."""
  state = {"k": 1.}

  def plain(a):
    return tf.reduce_sum(a * state["k"])

  def looped(a):  # JAX differentiates it forward only: reverse is TF's
    _, y = tf.while_loop(lambda i, y: tf.reduce_sum(y) < 10.,
                         lambda i, y: (i + 1, y * 1.5), (0, a * state["k"]),
                         maximum_iterations=10)
    return tf.reduce_sum(y)
  return state, {"plain": plain, "looped": looped}


@pytest.mark.parametrize("function,vmap_method", [
    ("plain", None), ("plain", "sequential"), ("looped", None)])
def test_a_cached_jit_differentiated_later_reads_one_python_state(
    function, vmap_method):
  # jax.jit(g) is traced with k=1 and cached; the state changes; then JAX
  # differentiates the cached jaxpr. Its value and gradient must read the
  # same state: k=1 where JAX differentiates the module (as native JAX
  # would), k=2 where TF's derivatives trace the function again (as stock
  # upstream, whose value and VJP both trace again). Was: value k=1 and
  # gradient k=2 for the last two.
  state, functions = _scaled_sum()
  f_tf = functions[function]
  gj = jax.jit(call_tf(f_tf, vmap_method=vmap_method))
  x = np.full(3, .5, np.float32)
  gj(x)
  state["k"] = 2.
  value, grad = jax.value_and_grad(gj)(x)
  expected = {}
  for k in (1., 2.):
    state["k"] = k
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
      tape.watch(xt)
      y = f_tf(xt)
    expected[k] = (y.numpy(), tape.gradient(y, xt).numpy())
  assert expected[1.][0] != expected[2.][0]
  k = 1. if (function, vmap_method) == ("plain", None) else 2.
  assert_close((value, grad), expected[k], 1e-5)


def test_reverse_mode_matches_the_gradient_tape(counts):
  def f_tf(x, w):
    return tf.reduce_sum(tf.tanh(tf.linalg.matvec(w, x)) ** 2), tf.sin(x)

  x, w = randn(4), randn(3, 4)
  f = call_tf(f_tf)

  def loss(x, w):
    a, b = f(x, w)
    return a + jnp.sum(b * jnp.arange(4.))

  got = jax.jit(jax.grad(loss, argnums=(0, 1)))(x, w)
  tapes = counts["tape"]
  xt, wt = tf.constant(x), tf.constant(w)
  with tf.GradientTape() as tape:
    tape.watch([xt, wt])
    a, b = f_tf(xt, wt)
    total = a + tf.reduce_sum(b * tf.range(4.))
  expected = tuple(g.numpy() for g in tape.gradient(total, [xt, wt]))
  assert_close(got, expected, 1e-5)
  assert tapes == 0, tapes  # JAX's transpose of the module, no TF tape


def _stop(x):
  return tf.reduce_sum(tf.stop_gradient(x) * x * x)


@tf.custom_gradient
def _triple_grad_identity(x):
  return tf.identity(x), lambda dy: 3. * dy


def _custom(x):
  return tf.reduce_sum(_triple_grad_identity(x) ** 2)


def _ties(x):
  return (tf.reduce_sum(tf.nn.relu(x)) + tf.reduce_sum(tf.maximum(x, 0.5))
          + tf.reduce_sum(tf.minimum(x, 0.5)) + tf.reduce_sum(tf.abs(x))
          + tf.reduce_sum(tf.nn.selu(x))
          + tf.reduce_sum(tf.clip_by_value(x, -1., 0.5) ** 2))


@pytest.mark.parametrize("f_tf,op", [(_stop, "StopGradient"),
                                     (_custom, "IdentityN")])
@pytest.mark.parametrize("transform", ["jacfwd", "grad", "hessian"])
def test_ops_whose_tf_gradient_differs_keep_tf_derivatives(f_tf, op,
                                                           transform, caplog):
  x = np.array([-1., 0., 0.5, 2.], np.float32)
  t = {"jacfwd": jax.jacfwd, "grad": jax.grad, "hessian": jax.hessian
       }[transform]
  with caplog.at_level(logging.DEBUG, logger=LOGGER):
    got = jax.jit(t(call_tf(f_tf)))(x)
  expected = (tf_hessian(f_tf, x) if transform == "hessian"
              else tf_jacobian(f_tf, x))
  assert_close(got, expected, 1e-5)
  assert any(op in r.getMessage() and "differs" in r.getMessage()
             for r in caplog.records), caplog.text


@pytest.mark.parametrize("staged", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("transform", ["jacfwd", "grad", "hessian"])
def test_ties_take_tf_gradients_in_jaxs_derivative_of_the_module(
    transform, staged, counts):
  """Relu, Maximum, Minimum, Abs and Selu at their ties and kinks (0, the
  clip bounds): JAX differentiates the module, with TF's gradient there
  (TF's Relu gradient is 0 at 0, JAX's of max(x, 0) 1/2; TF's Maximum's goes
  to its first argument, JAX's splits it; Abs's is sign(x); Selu's the
  linear branch's at 0)."""
  x = np.array([-1., 0., 0.5, 2., -0.5, 1e-30, -0.], np.float32)
  t = {"jacfwd": jax.jacfwd, "grad": jax.grad, "hessian": jax.hessian
       }[transform]
  f = t(call_tf(_ties))
  got = (jax.jit(f) if staged else f)(x)
  tapes = counts["tape"] + counts["accumulator"]
  expected = (tf_hessian(_ties, x) if transform == "hessian"
              else tf_jacobian(_ties, x))
  assert_close(got, expected, 1e-5)
  assert tapes == 0, tapes  # JAX's derivative of the module


def test_gradient_mismatch_ops_names_them():
  def graph(f, *specs):
    return tf.function(f).get_concrete_function(*specs).graph

  spec = tf.TensorSpec([4], tf.float32)
  assert exactness.gradient_mismatch_ops(graph(lj_tf, tf.TensorSpec(
      [8, 3], tf.float32))) == []
  assert [t for t, _ in exactness.gradient_mismatch_ops(
      graph(_stop, spec))] == ["StopGradient"]
  assert "IdentityN" in [t for t, _ in exactness.gradient_mismatch_ops(
      graph(_custom, spec))]
  assert {"Relu", "Maximum", "Minimum", "Abs", "Selu"} <= {
      t for t, _ in exactness.gradient_mismatch_ops(graph(_ties, spec))}

  def resize_vjp(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = tf.image.resize(x, (6, 6), "bilinear")
    return tape.gradient(y, x)
  found = exactness.gradient_mismatch_ops(
      graph(resize_vjp, tf.TensorSpec([1, 3, 3, 1], tf.float32)))
  assert "ResizeBilinearGrad" in [t for t, _ in found]

  def prevent(x):
    return tf.raw_ops.PreventGradient(input=x) * 2.
  assert [t for t, _ in exactness.gradient_mismatch_ops(
      graph(prevent, spec))] == ["PreventGradient"]


def test_fused_batch_norm_differs_where_tf_has_no_gradient_path():
  """TF's gradient of FusedBatchNorm* takes y's cotangent only and gives the
  mean and variance inputs none: JAX's derivative of the lowering is TF's
  where the batch statistics are unused (training) and the mean and
  variance do not depend on the arguments (inference)."""
  def graph(f):
    return tf.function(f).get_concrete_function(
        tf.TensorSpec([2, 2, 2, 3], tf.float32)).graph
  c = tf.constant([1., 2., 3.])
  v = tf.Variable([.5, 1., 2.])

  def bn(x, mean, training, outputs=1):
    out = tf.raw_ops.FusedBatchNormV3(x=x, scale=c, offset=c, mean=mean,
                                      variance=v, is_training=training)
    return out[:outputs]

  def differs(f):
    return [t for t, _ in exactness.gradient_mismatch_ops(graph(f))]
  assert differs(lambda x: bn(x, c, False, 3)) == []  # running statistics
  assert differs(lambda x: bn(x, c, True)) == []  # y only
  assert differs(lambda x: bn(x, c, True, 2)) == ["FusedBatchNormV3"]
  assert differs(lambda x: bn(x, tf.reduce_mean(x, [0, 1, 2]), False)) == [
      "FusedBatchNormV3"]

  def vjp(x):  # the gradient op reads the statistics: no mismatch
    with tf.GradientTape() as tape:
      tape.watch(x)
      y, = bn(x, c, True)
    return tape.gradient(y, x)
  assert differs(vjp) == []


def test_pfor_choice_keeps_tf_derivatives(counts):
  x = lattice(1)[0]
  got = jax.jit(jax.jacfwd(call_tf(lj_tf, vmap_method="pfor")))(x)
  assert counts["accumulator"] + counts["tape"] >= 1
  assert_close(got, tf_jacobian(lj_tf, x), 2e-4)


# --- what the path unlocks ---------------------------------------------------

def test_jax2tf_round_trip_under_jit_vmap_with_the_defaults(counts):
  def g(x):
    return jnp.sin(x) @ jnp.ones((3, 2)) + jnp.sum(x ** 2)

  f = call_tf(jax2tf.convert(g, with_gradient=True))
  x = randn(4, 3)
  assert_close(jax.jit(jax.vmap(f))(x), jax.vmap(g)(x), 1e-5)
  assert counts["pfor"] == 0


def _while_tf(x):
  def body(i, y):
    return i + 1, tf.sin(y) * 1.5 + y
  # (maximum_iterations: TF's gradient of the loop then compiles with XLA.)
  _, y = tf.while_loop(lambda i, y: i < 3, body, (tf.constant(0), x),
                       maximum_iterations=3)
  return tf.reduce_sum(y ** 2)


def _map_fn_tf(x):
  return tf.reduce_sum(tf.map_fn(lambda r: tf.reduce_sum(tf.sin(r) * r), x))


@pytest.mark.parametrize("f_tf", [_while_tf, _map_fn_tf],
                         ids=["while_loop", "map_fn"])
def test_forward_mode_of_loops_under_jit(counts, f_tf):
  x = randn(3, 2)
  f = call_tf(f_tf)
  got = jax.jit(jax.jacfwd(f))(x)
  # JAX's jvp of the module, no TF autodiff.
  assert counts["accumulator"] == 0 and counts["tape"] == 0
  assert_close(got, tf_jacobian(f_tf, x), 1e-4)
  assert_close(jax.jit(jax.hessian(f))(x), tf_hessian(f_tf, x), 1e-4)
  # Reverse mode too (JAX cannot transpose a loop: TF's VJP does).
  assert_close(jax.jit(jax.grad(f))(x), tf_jacobian(f_tf, x), 1e-4)
  xs = randn(4, 3, 2)
  assert_close(jax.jit(jax.vmap(jax.jacfwd(f)))(xs),
               np.stack([tf_jacobian(f_tf, a) for a in xs]), 1e-4)


# --- where a lowering branches or kinks -------------------------------------

_BRANCHING = [
    ("lgamma", tf.math.lgamma, [1., 2., 3., .5]),
    ("erfinv", tf.math.erfinv, [.5, -.3, 0.]),
    ("asinh", tf.math.asinh, [0., 1., -2.]),
    ("bessel_i0e", tf.math.bessel_i0e, [0., 1., -1.]),
    ("bessel_i1e", tf.math.bessel_i1e, [0., 1., -1.]),
    ("elu", tf.nn.elu, [100., 1., -1., 0., -1e-9]),
    ("selu", tf.nn.selu, [100., 1., -1., 0., -1e-9]),
    ("softplus", tf.nn.softplus, [100., 1., -100.]),
    ("log_sigmoid", tf.math.log_sigmoid, [-100., 1., 100.]),
    ("divide_no_nan", lambda x: tf.math.divide_no_nan(1. + x, x),
     [0., 2., -1.]),
    ("xlogy", lambda x: tf.math.xlogy(x, x), [0., 2., 1.]),
]


@pytest.mark.parametrize("staged", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name,f_tf,points", _BRANCHING,
                         ids=[c[0] for c in _BRANCHING])
def test_lowerings_that_branch_give_tf_gradients(name, f_tf, points, staged):
  """tf2xla lowers these ops to selects whose untaken branch is not finite,
  or with kinks inside: JAX's derivative of the lowering is NaN, or another
  value, where TF's gradient is finite (review of the one engine). JAX
  differentiates the module only where its branches and kinks are of TF
  ops whose gradient that is (Relu, Selu, Elu... with TF's rules at
  ties); TF's gradients elsewhere."""
  del name
  x = np.array(points, np.float32)

  def total(v):
    return jnp.sum(call_tf(f_tf)(v))
  g = jax.grad(total)
  got = (jax.jit(g) if staged else g)(x)
  xt = tf.constant(x)
  with tf.GradientTape() as tape:
    tape.watch(xt)
    y = tf.reduce_sum(f_tf(xt))
  expected = tape.gradient(y, xt).numpy()
  assert np.all(np.isfinite(got)) == np.all(np.isfinite(expected))
  assert_close(got, expected, 1e-5)
  t = np.ones_like(x)
  _, tangent = jax.jvp(call_tf(f_tf), (x,), (t,))
  assert_close(tangent, expected, 1e-5)  # elementwise: J t = grad


@pytest.mark.parametrize("dtype,value,op", [
    ("float64", 1. + 1e-10, lambda v, x: tf.cast(v, tf.float32) * 0. + x
     + tf.cast((v - 1.) * 1e10, tf.float32)),
    ("int64", 2 ** 40 + 3, lambda v, x: x + tf.cast(v % 7, tf.float32)),
])
def test_captured_64_bit_values_keep_their_bits(dtype, value, op):
  """Without jax_enable_x64, a captured float64 or int64 variable reached
  the program as a jax.jit argument, cut to 32 bits (review)."""
  v = tf.Variable(np.array(value, dtype))
  f = call_tf(lambda x: op(v, x))
  xs = np.zeros((3,), np.float32)
  expected = np.stack([op(v, tf.constant(x)).numpy() for x in xs])
  assert_close(jax.vmap(f)(xs), expected, 1e-6)
  assert_close(jax.jit(jax.vmap(f))(xs), expected, 1e-6)
  assert_close(jax.grad(lambda x: jnp.sum(f(x)))(xs), np.ones(3, np.float32),
               1e-6)


def test_a_module_result_takes_the_dtype_of_its_aval():
  """One conversion for every caller of a module (to_jax.with_dtype)."""
  from jax._src.export import stablehlo_to_jax as to_jax  # pylint: disable=g-import-not-at-top
  x = np.arange(3, dtype=np.int64)
  y = to_jax.with_dtype(x, np.dtype(np.int32))
  assert y.dtype == np.int32 and np.array_equal(y, [0, 1, 2])
  same = jnp.ones(2, np.float32)
  assert to_jax.with_dtype(same, np.dtype(np.float32)) is same
  assert to_jax.with_dtype(2.5, np.dtype(np.float32)).dtype == np.float32


def test_gradients_tf_does_not_differentiate_are_known():
  # A gradient kernel TF declares not differentiable although it is smooth:
  # forward mode through it is refused (autodiff.tf_jvp), not zero. A TF
  # that declares another such kernel fails here.
  from tensorflow.python.framework import ops as tf_ops  # pylint: disable=g-import-not-at-top
  from jax.experimental.jax2tf.call_tf_lib.autodiff import tf_jvp  # pylint: disable=g-import-not-at-top
  registry = tf_ops._gradient_registry  # pylint: disable=protected-access
  no_gradient = {n for n in registry.list() if registry.lookup(n) is None}
  # Not gradients of smooth float ops: sparse, shape, TensorArray handles,
  # stop_gradient, and fake quantization's (zero almost everywhere).
  others = {"SparseAddGrad", "BroadcastGradientArgs", "StopGradient",
            "TensorArrayGrad", "TensorArrayGradV2", "TensorArrayGradV3",
            "TensorArrayGradWithShape", "FakeQuantWithMinMaxArgsGradient",
            "FakeQuantWithMinMaxVarsGradient",
            "FakeQuantWithMinMaxVarsPerChannelGradient"}
  grads = {n for n in no_gradient if "Grad" in n}
  assert grads - others == set(tf_jvp.UNDIFFERENTIATED_GRADIENTS), (
      grads - others)


def test_second_derivative_of_a_bilinear_resize_refused_or_right():
  # TF's gradient of a bilinear resize (ResizeBilinearGrad) has no gradient:
  # TF's tapes find the Hessian unconnected (None). Eagerly (TF's
  # derivatives) call_tf refuses it, naming the op, rather than give zeros;
  # first derivatives are TF's.
  def f(x):
    y = tf.image.resize(x, [5, 7], "bilinear")
    return tf.reduce_sum(y * y * y)
  x = np.random.default_rng(3).standard_normal((3, 4, 1)).astype(np.float32)
  xt = tf.constant(x)
  with tf.GradientTape() as outer:
    outer.watch(xt)
    with tf.GradientTape() as inner:
      inner.watch(xt)
      y = f(xt)
    g = inner.gradient(y, xt)
  assert outer.jacobian(g, xt) is None  # what TF itself says
  fun = jax2tf.call_tf(f)
  with pytest.raises(errors.CallTfDerivativeError, match="ResizeBilinearGrad"):
    jax.hessian(fun)(x)
  # Under jit, JAX's second derivative of the module: central differences
  # of TF's gradient (quadratic in x: exact up to rounding) agree.
  def tf_grad(z):
    zt = tf.constant(z)
    with tf.GradientTape() as tape:
      tape.watch(zt)
      out = f(zt)
    return tape.gradient(out, zt).numpy().astype(np.float64)
  step, flat = 0.1, x.reshape(-1)
  columns = []
  for i in range(flat.size):
    e = np.zeros_like(flat)
    e[i] = step
    columns.append((tf_grad((flat + e).reshape(x.shape))
                    - tf_grad((flat - e).reshape(x.shape))) / (2 * step))
  want = np.stack(columns, -1).reshape(x.shape + x.shape)
  got = jax.jit(jax.hessian(fun))(x)
  np.testing.assert_allclose(got, want, rtol=2e-3,
                             atol=2e-3 * np.abs(want).max())
  np.testing.assert_allclose(jax.jit(jax.grad(fun))(x), g.numpy(),
                             rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("resize", [
    lambda x: tf.image.resize(x, [5, 7], "bilinear"),
    lambda x: tf.compat.v1.image.resize_bilinear(x[None], [5, 7])[0],
])
def test_second_derivative_of_a_linear_bilinear_resize_is_zero(resize):
  # A bilinear resize is linear: its gradient (ResizeBilinearGrad) reads the
  # image only for its shape, so the Hessian is zero, eagerly and under
  # jit, as TF's tapes say; not refused.
  def f(x):
    return tf.reduce_sum(resize(x) * tf.constant(0.5))
  x = np.random.default_rng(4).standard_normal((3, 4, 1)).astype(np.float32)
  fun = jax2tf.call_tf(f)
  for h in (jax.hessian(fun), jax.jit(jax.hessian(fun))):
    got = h(x)
    assert got.shape == x.shape + x.shape
    np.testing.assert_array_equal(got, np.zeros_like(got))


def test_second_derivative_through_a_bilinear_resize_beside_other_terms():
  # TF's tangent of the gradient is connected through x**3 and leaves out
  # the resize's term (ResizeBilinearGrad has no gradient): refused, not
  # the other terms alone (review).
  def f(x):
    return (tf.reduce_sum(tf.image.resize(x, [5, 7], "bilinear") ** 3)
            + tf.reduce_sum(x ** 3))
  x = np.random.default_rng(5).standard_normal((3, 4, 1)).astype(np.float32)
  fun = jax2tf.call_tf(f)
  with pytest.raises(errors.CallTfDerivativeError, match="ResizeBilinearGrad"):
    jax.hessian(fun)(x)
  with pytest.raises(errors.CallTfDerivativeError, match="ResizeBilinearGrad"):
    jax.jvp(jax.grad(fun), (x,), (np.ones_like(x),))
