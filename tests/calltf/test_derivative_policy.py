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
"""The derivative policy, op by op, and one Jacobian per function.

call_tf differentiates a function's module with JAX's rules only where its
graph holds no op whose TF gradient differs from JAX's derivative of the
op's lowering (``exactness``'s lists). Each entry of those lists is here
with a point where the two differ (or the reason it is listed), so that an
entry that is wrong shows; TF's own custom gradients that are the
derivative (``EXACT_CUSTOM_GRADIENTS``) are here with points where they
agree. And ``jacfwd`` and ``jacrev`` of one function give one Jacobian:
``tf.math.cumprod`` at a zero, whose TF gradient is 0 where the derivative
is the product of the other elements, takes the derivative both ways.
"""

from __future__ import annotations

import collections
from typing import Any, Callable

import pytest

from tests.calltf.util import assert_close, count_calls  # noqa: I001

import jax  # noqa: E402
from jax._src import config  # noqa: E402
from jax._src.export import stablehlo_to_jax  # noqa: E402
from jax.experimental import jax2tf  # noqa: E402
from jax.experimental.jax2tf.call_tf_lib.stablehlo import exactness  # noqa: E402
from jax.experimental.jax2tf.call_tf_lib.stablehlo import path  # noqa: E402
from jax.experimental.jax2tf.call_tf_lib.stablehlo import tf_derivatives  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

call_tf = jax2tf.call_tf
_LOWEST = float(np.finfo(np.float32).min)


def _segments(op: Callable[..., Any]) -> Callable[[Any], Any]:
  return lambda x: op(x, tf.constant([0, 0, 1, 1]), 2)


def _quantized(op: Callable[..., Any], **kw: Any) -> Callable[[Any], Any]:
  return lambda x: op(input=x, input_min=-1., input_max=1., range_given=True,
                      **kw)


def _batch_norm(op: Callable[..., Any]) -> Callable[[Any], Any]:
  def f(x):
    x4 = tf.reshape(x, [1, 2, 2, 1])
    mean = tf.reduce_mean(x4, [0, 1, 2])  # (its own moments: inference)
    return op(x=x4, scale=[1.5], offset=[.2], mean=mean, variance=[2.],
              is_training=False)[0]
  return f


# Each op of the lists, a function of a float32 vector using it, and a
# point where TF's gradient is not JAX's derivative of its lowering.
_DIFFERS: dict[str, tuple[Callable[[Any], Any], list[float]]] = {
    # The gradient stops, or is an error.
    "StopGradient": (lambda x: tf.stop_gradient(x) * x, [1., 2., 3., 4.]),
    "PreventGradient": (lambda x: tf.raw_ops.PreventGradient(input=x) * x,
                        [1., 2., 3., 4.]),
    # Ties and kinks: TF's conventions.
    "Maximum": (lambda x: tf.maximum(x, [0., 1., 5., 0.]), [0., 1., -1., 2.]),
    "Minimum": (lambda x: tf.minimum(x, [0., 1., 5., 0.]), [0., 1., -1., 2.]),
    "Relu": (tf.nn.relu, [0., 1., -1., 2.]),
    "Abs": (tf.abs, [0., 1., -1., 2.]),
    "Selu": (tf.nn.selu, [0., 1., -1., 2.]),
    "ClipByValue": (lambda x: tf.raw_ops.ClipByValue(
        t=x, clip_value_min=-1., clip_value_max=1.), [1., -1., .5, 2.]),
    # Straight-through estimators: 1 inside the range, the rounding's 0.
    "FakeQuantWithMinMaxArgs": (
        lambda x: tf.quantization.fake_quant_with_min_max_args(x, -1., 1.),
        [.3, .7, 2., -.1]),
    "FakeQuantWithMinMaxVars": (
        lambda x: tf.quantization.fake_quant_with_min_max_vars(
            x, tf.constant(-1.), tf.constant(1.)), [.3, .7, 2., -.1]),
    "FakeQuantWithMinMaxVarsPerChannel": (
        lambda x: tf.quantization.fake_quant_with_min_max_vars_per_channel(
            x, tf.constant([-1.] * 4), tf.constant([1.] * 4)),
        [.3, .7, 2., -.1]),
    "QuantizeAndDequantizeV2": (
        _quantized(tf.raw_ops.QuantizeAndDequantizeV2), [.3, .7, 2., -.1]),
    "QuantizeAndDequantizeV3": (
        _quantized(tf.raw_ops.QuantizeAndDequantizeV3, num_bits=8),
        [.3, .7, 2., -.1]),
    "QuantizeAndDequantizeV4": (
        _quantized(tf.raw_ops.QuantizeAndDequantizeV4), [.3, .7, 2., -.1]),
    # TF symmetrizes; the lowering reads the lower triangle.
    "Cholesky": (lambda x: tf.linalg.cholesky(tf.reshape(x, [2, 2])),
                 [4., 1., 1., 3.]),
    # The lowering scatters into the lowest float, which JAX's derivative
    # counts as one more tie where the elements are that value; and a NaN.
    "UnsortedSegmentMax": (_segments(tf.math.unsorted_segment_max),
                           [_LOWEST, _LOWEST, np.nan, 3.]),
    "UnsortedSegmentMin": (_segments(tf.math.unsorted_segment_min),
                           [-_LOWEST, -_LOWEST, np.nan, 3.]),
    # TF's gradient has no path through the mean and variance inputs.
    "FusedBatchNorm": (_batch_norm(tf.raw_ops.FusedBatchNorm),
                       [1., 2., -1., .5]),
    "FusedBatchNormV2": (_batch_norm(tf.raw_ops.FusedBatchNormV2),
                         [1., 2., -1., .5]),
    "FusedBatchNormV3": (_batch_norm(tf.raw_ops.FusedBatchNormV3),
                         [1., 2., -1., .5]),
    # TF's gradient is wrong: 0 at a zero (the module takes the derivative).
    "Cumprod": (tf.math.cumprod, [0., .5, 2., 3.]),
}

# Ops of the lists with no point where the two differ here, and why they
# are listed: how the reason shows.
_REASONS = {
    # XLA has no kernel for the sorted segment reductions: listed for a
    # TensorFlow whose XLA has one (their gradients, like the unsorted
    # ones', follow TF's conventions at ties and empty segments).
    "SegmentMax": ("no XLA kernel", lambda x: tf.math.segment_max(
        x, tf.constant([0, 0, 1, 1]))),
    "SegmentMin": ("no XLA kernel", lambda x: tf.math.segment_min(
        x, tf.constant([0, 0, 1, 1]))),
    "SegmentProd": ("no XLA kernel", lambda x: tf.math.segment_prod(
        x, tf.constant([0, 0, 1, 1]))),
    # JAX has no derivative of a scatter-multiply with repeated indices,
    # its lowering: TF's gradient (which handles zeros) is the only one.
    "UnsortedSegmentProd": ("no JAX derivative",
                            _segments(tf.math.unsorted_segment_prod)),
    # Removed from TF's GraphDef (version 22): no graph holds it now.
    "QuantizeAndDequantize": ("removed", _quantized(
        tf.raw_ops.QuantizeAndDequantize)),
}


def test_every_op_of_the_policy_has_its_case():
  listed = (exactness._GRADIENT_DIFFERS | exactness._STOPS_GRADIENT  # pylint: disable=protected-access
            | exactness._GRADIENT_WRONG | exactness._BATCH_NORM)  # pylint: disable=protected-access
  assert set(_DIFFERS) | set(_REASONS) == set(listed), (
      set(listed) ^ (set(_DIFFERS) | set(_REASONS)))
  assert not set(_DIFFERS) & set(_REASONS)


def _specs(x: np.ndarray) -> tuple[tf.TensorSpec, ...]:
  return (tf.TensorSpec(x.shape, tf.float32),)


def _module_jacobian(f_tf: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
  """JAX's derivative of the function's module, without TF's rules."""
  f = tf.function(f_tf, jit_compile=True, autograph=False)
  program = stablehlo_to_jax.parse(path.stablehlo_of_tf(f, _specs(x)))
  captured = path.captured_values(f, _specs(x))

  def column(t):
    return jax.jvp(lambda v: program(v, *captured)[0], (x,), (t,))[1]
  # (Columns one by one: JAX batches no reduce_window of * through a jvp.)
  return np.stack([np.asarray(column(t)) for t in np.eye(x.size, dtype=x.dtype)
                   ], -1)


def _tf_jacobian(f_tf: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
  xt = tf.constant(x)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(xt)
    y = f_tf(xt)
  return tape.jacobian(y, xt, experimental_use_pfor=False,
                       unconnected_gradients=tf.UnconnectedGradients.ZERO
                       ).numpy().reshape(-1, x.size)


def _graph(f_tf: Callable[[Any], Any], x: np.ndarray) -> tf.Graph:
  return tf.function(f_tf, autograph=False).get_concrete_function(
      *_specs(x)).graph


@pytest.mark.parametrize("op_type", sorted(_DIFFERS))
def test_tf_gradient_of_each_listed_op_differs_somewhere(op_type):
  f_tf, point = _DIFFERS[op_type]
  x = np.array(point, np.float32)
  assert op_type in [t for t, _ in exactness.gradient_mismatch_ops(
      _graph(f_tf, x))]
  module = _module_jacobian(f_tf, x).reshape(-1, x.size)
  if op_type == "PreventGradient":
    with pytest.raises(LookupError, match="explicitly disabled"):
      _tf_jacobian(f_tf, x)
    assert np.all(np.isfinite(module))
    return
  tf_jac = _tf_jacobian(f_tf, x)
  same = np.isclose(tf_jac, module, rtol=1e-4, atol=1e-4, equal_nan=True)
  assert not same.all(), (tf_jac, module)


@pytest.mark.parametrize("op_type", sorted(_REASONS))
def test_each_listed_op_without_a_difference_has_its_reason(op_type):
  reason, f_tf = _REASONS[op_type]
  x = np.array([0., 2., 3., 4.], np.float32)
  f = tf.function(f_tf, jit_compile=True, autograph=False)
  if reason == "removed":
    with pytest.raises(NotImplementedError, match="removed"):
      f.get_concrete_function(*_specs(x))
  elif reason == "no XLA kernel":
    with pytest.raises(Exception, match=f"{op_type} .No registered"):
      path.stablehlo_of_tf(f, _specs(x))
  else:
    assert reason == "no JAX derivative"
    with pytest.raises(NotImplementedError, match="scatter_mul"):
      _module_jacobian(f_tf, x)


@pytest.mark.parametrize("point", [[0., 1., -1., 2.], [-30., 30., 1e-3, -5.]])
def test_tf_own_custom_gradient_that_is_the_derivative_is_no_mismatch(point):
  x = np.array(point, np.float32)
  assert exactness.gradient_mismatch_ops(_graph(tf.nn.silu, x)) == []
  assert_close(_module_jacobian(tf.nn.silu, x), _tf_jacobian(tf.nn.silu, x),
               1e-5)

  @tf.custom_gradient
  def own(v):  # (the same function, another custom gradient: a mismatch)
    return tf.nn.silu(v), lambda dy: dy * tf.sigmoid(v)
  assert "IdentityN" in [t for t, _ in exactness.gradient_mismatch_ops(
      _graph(own, x))]


@pytest.fixture
def tf_autodiff(monkeypatch) -> collections.Counter:
  found: collections.Counter = collections.Counter()
  count_calls(monkeypatch, found, tf.GradientTape, "gradient", "tf")
  count_calls(monkeypatch, found, tf.autodiff.ForwardAccumulator, "jvp", "tf")
  return found


@pytest.mark.parametrize("f_tf,point", [
    (tf.nn.softplus, [100., -100., 0., 14.]),  # (the branches' bounds)
    (lambda x: tf.linalg.band_part(tf.reshape(x, [2, 2]), -1, 0),
     [1., 2., 3., 4.]),
    (tf.nn.silu, [0., -30., 2., 1e-3]),
    (tf.nn.softsign, [0., -30., 2., 1e-3]),
    # (Erfc's branches meet at |x| = 1; 0, large inputs, negative ones.)
    (tf.math.erfc, [1., -1., 0., 1e-3, -30., 30., .5, 9.]),
    (lambda x: tf.nn.gelu(x, approximate=False),
     [1.4142135, -1.4142135, 0., -30., 30., .5, -2., 1e-3]),
], ids=["softplus", "band_part", "silu", "softsign", "erfc", "exact_gelu"])
def test_branches_jax_differentiates_as_tf_take_the_module(
    f_tf, point, tf_autodiff):
  """Softplus's and Erfc's selects (with TF's gradient from their input),
  MatrixBandPart's select, Softsign's abs and tf.nn.silu's custom gradient:
  JAX differentiates the module, both ways, as TF's gradient."""
  x = np.array(point, np.float32)
  expected = _tf_jacobian(f_tf, x).reshape(np.shape(f_tf(x)) + x.shape)
  used = tf_autodiff["tf"]
  f = call_tf(f_tf)
  for t in (jax.jacfwd, jax.jacrev):
    assert_close(jax.jit(t(f))(x), expected, 1e-6)
  assert tf_autodiff["tf"] == used  # JAX's derivatives of the module


@pytest.mark.parametrize("dtype", [np.float64, np.float16],
                         ids=["float64", "float16"])
def test_erfc_takes_tf_gradient_at_each_precision(dtype, tf_autodiff):
  """Erfc's lowering at float64 (more selects) and at float16 (computed in
  float32, converted back): the module, both ways and to second order, as
  TF's gradient and its own gradient."""
  x = np.array([1., -1., 0., -3., 3., .25, 9.], dtype)
  xt = tf.constant(x)
  with tf.GradientTape() as outer:
    outer.watch(xt)
    with tf.GradientTape() as inner:
      inner.watch(xt)
      y = tf.reduce_sum(tf.math.erfc(xt))
    first = inner.gradient(y, xt)
  second = outer.gradient(first, xt)  # (the Hessian's diagonal, summed)
  used = tf_autodiff["tf"]
  f = call_tf(tf.math.erfc)
  tol = 1e-12 if dtype == np.float64 else 2e-3

  def total(v):
    return jnp.sum(f(v))
  with config.enable_x64(True):
    assert_close(jax.jit(jax.grad(total))(x), first.numpy(), tol)
    assert_close(jax.vmap(jax.grad(lambda v: f(v)))(x), first.numpy(), tol)
    assert_close(jnp.diagonal(jax.jit(jax.hessian(total))(x)),
                 second.numpy(), tol)
  assert tf_autodiff["tf"] == used  # JAX's derivatives of the module


def _linear_primitives(f: Callable[[Any], Any], x: np.ndarray) -> set[str]:
  """The primitives of ``f``'s linearization at ``x``, nested ones too."""
  def walk(jaxpr, found):
    for eqn in jaxpr.eqns:
      found.add(str(eqn.primitive))
      for p in eqn.params.values():
        inner = getattr(p, "jaxpr", p)
        if hasattr(inner, "eqns"):
          walk(inner, found)
    return found
  _, linear = jax.linearize(f, x)
  return walk(jax.make_jaxpr(linear)(x).jaxpr, set())


_SOFTMAXES = {
    "softmax": tf.nn.softmax,
    "log_softmax": tf.nn.log_softmax,
    "softmax_axis_0": lambda x: tf.nn.softmax(x, axis=0),
    # A mask by the lowest number as an addend (attention masks).
    "masked_softmax": lambda x: tf.nn.softmax(
        x + tf.constant([[0., 1., 0.], [0., 0., 1.]], x.dtype) * x.dtype.min),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16],
                         ids=["float32", "float64", "float16"])
@pytest.mark.parametrize("name", list(_SOFTMAXES))
def test_softmax_takes_tf_gradient_by_its_formula(name, dtype, tf_autodiff):
  """Softmax's and LogSoftmax's lowerings (the max and the sum broadcast
  back; the sum in float32 for float16) take TF's gradients, SoftmaxGrad's
  and LogSoftmaxGrad's formulas (``tf_softmax``): the linearization has no
  division (JAX's derivative of the module's divides by the sum, and the
  log's by its operand). At ties of the max and a row of large values,
  both ways, under vmap and to second order, as TF's tapes, and no TF
  autodiff runs."""
  f_tf = _SOFTMAXES[name]
  x = np.array([[1., 1., 0.], [1000., -3., 1000.]], dtype)
  weights = np.arange(1., 7.).reshape(2, 3).astype(dtype)
  expected = _tf_jacobian(f_tf, x).reshape(x.shape + x.shape)
  by_row = np.stack([_tf_jacobian(f_tf, r) for r in x])
  hessian = _tf_hessian_of_sum_sin(lambda v: weights * f_tf(v), x)
  tol = {np.float16: 2e-3, np.float32: 1e-6, np.float64: 1e-12}[dtype]
  f = call_tf(f_tf)
  used = tf_autodiff["tf"]
  with config.enable_x64(dtype == np.float64):
    assert "div" not in _linear_primitives(f, x)
    for t in (jax.jacfwd, jax.jacrev):
      assert_close(jax.jit(t(f))(x), expected, tol)
      assert_close(t(f)(x), expected, tol)
    if name in ("softmax", "log_softmax"):
      assert_close(jax.vmap(jax.jacrev(f))(x), by_row, tol)
    if dtype != np.float16:
      h = jax.hessian(lambda v: jnp.sum(jnp.sin(weights * f(v))))
      assert_close(jax.jit(h)(x), hessian, 1e3 * tol)
  assert tf_autodiff["tf"] == used  # JAX's derivatives of the module


@pytest.mark.parametrize("of_argument", [False, True],
                         ids=["of_an_op", "of_the_argument"])
def test_softmax_of_a_stopped_value_is_stopped(of_argument, tf_autodiff):
  """tf.nn.softmax(tf.stop_gradient(z)) + z: the softmax's rule reads its
  input through the stop, as the module's own ops do. Of the function's
  argument, no op of the module is at the stop's producer: TF's gradients
  differentiate the function."""
  def f_tf(x):
    z = x if of_argument else 2. * x
    return tf.nn.softmax(tf.stop_gradient(z)) * 3. + z
  x = np.array([[1., 1., 0.], [2., -3., 1.]], np.float32)
  expected = _tf_jacobian(f_tf, x).reshape(x.shape + x.shape)
  f = call_tf(f_tf)
  used = tf_autodiff["tf"]
  for t in (jax.jacfwd, jax.jacrev):
    assert_close(jax.jit(t(f))(x), expected, 1e-6)
  assert (tf_autodiff["tf"] > used) == of_argument


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16],
                         ids=["float16", "bfloat16"])
def test_wide_softmax_gradient_in_half_precision(dtype):
  """A softmax over 4096 classes in float16 and bfloat16: the gradient is
  as accurate as TF's own in that type (against float64). JAX's
  derivative of the lowering was not: its division's derivative,
  ``a * db / b**2`` with ``b`` the sum of thousands of terms, underflows
  (relative errors of 17 in float16 and 0.33 in bfloat16)."""
  rng = np.random.default_rng(0)
  x = (rng.standard_normal((2, 4096)) * .1).astype(np.float32)
  w = rng.standard_normal((2, 4096)).astype(np.float32)

  def tf_gradient(v):
    with tf.GradientTape() as tape:
      tape.watch(v)
      loss = tf.reduce_sum(tf.cast(tf.nn.softmax(v), tf.float32) * w)
    return tape.gradient(loss, v).numpy().astype(np.float64)
  exact = tf_gradient(tf.constant(x, tf.float64))
  tf_own = tf_gradient(tf.constant(x, dtype))
  f = call_tf(tf.nn.softmax)
  narrow = jnp.asarray(x).astype(dtype.as_numpy_dtype)
  got = jax.jit(jax.grad(
      lambda v: jnp.sum(f(v).astype(jnp.float32) * w)))(narrow)

  def error(g):
    return np.max(np.abs(np.asarray(g, np.float64) - exact)) / np.max(
        np.abs(exact))
  assert error(got) <= 2 * error(tf_own) + 1e-3, (error(got), error(tf_own))


# A softmax along dimension 1 of a 2x3 array, as tf2xla lowers it: the max
# and the sum reduced, reshaped to 2x1 and broadcast back. {max_dims},
# {sum_init}: where a module differs.
_SOFTMAX_MODULE = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {{
  %lowest = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<{sum_init}> : tensor<f32>
  %m = stablehlo.reduce(%x init: %lowest) applies stablehlo.maximum
      across dimensions = [{max_dims}] : (tensor<2x3xf32>, tensor<f32>)
      -> tensor<{max_shape}xf32> loc("sm")
  %mb = stablehlo.broadcast_in_dim %m, dims = [{max_bdims}]
      : (tensor<{max_shape}xf32>) -> tensor<2x3xf32> loc("sm")
  %d = stablehlo.subtract %x, %mb : tensor<2x3xf32> loc("sm")
  %e = stablehlo.exponential %d : tensor<2x3xf32> loc("sm")
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add
      across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>)
      -> tensor<2xf32> loc("sm")
  %s1 = stablehlo.reshape %s : (tensor<2xf32>) -> tensor<2x1xf32> loc("sm")
  %sb = stablehlo.broadcast_in_dim %s1, dims = [0, 1]
      : (tensor<2x1xf32>) -> tensor<2x3xf32> loc("sm")
  %y = stablehlo.divide %e, %sb : tensor<2x3xf32> loc("sm")
  return %y : tensor<2x3xf32>
}}
"""


@pytest.mark.parametrize("max_dims,sum_init,takes", [
    ("1", "0.0", True),
    ("0", "0.0", False),  # a max along the other axis: not constant
    ("1", "1.0", False),  # a sum from 1: not a softmax
], ids=["softmax", "max_along_another_axis", "sum_from_one"])
def test_softmax_rule_takes_only_a_softmax(max_dims, sum_init, takes):
  """The rule recognizes a softmax's lowering, and nothing that only looks
  like one: where it does not apply, JAX differentiates the module's own
  ops. Both are the derivative of what the module computes."""
  max_shape, max_bdims = ("2", "0") if max_dims == "1" else ("3", "1")
  text = _SOFTMAX_MODULE.format(max_dims=max_dims, sum_init=sum_init,
                                max_shape=max_shape, max_bdims=max_bdims)
  program = stablehlo_to_jax.parse(
      text, derivatives=tf_derivatives.TfDerivatives({"sm": "Softmax"}))
  assert ("sm" in program.derivative_record.replaced) == takes

  def ref(x):
    m = jnp.max(x, axis=int(max_dims), keepdims=True)
    e = jnp.exp(x - m)
    return e / (float(sum_init) + jnp.sum(e, axis=1, keepdims=True))
  x = np.array([[1., 1., 0.], [2., -3., .5]], np.float32)
  f = lambda v: program(v)[0]  # noqa: E731
  assert_close(f(x), ref(x), 1e-6)
  for t in (jax.jacfwd, jax.jacrev):
    assert_close(jax.jit(t(f))(x), t(ref)(x), 1e-6)


def _layer_norm(x):
  mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
  return (x - mean) * tf.math.rsqrt(variance + 1e-3) * tf.constant(
      [1., 2., 3.], x.dtype)


_LAYER_NORM_CALLED = tf.function(_layer_norm, autograph=False)


def _tf_hessian_of_sum_sin(f_tf: Callable[[Any], Any], x: np.ndarray
                           ) -> np.ndarray:
  """TF eager's nested tapes: the Hessian of sum(sin(f(x)))."""
  xt = tf.constant(x)
  with tf.GradientTape(persistent=True) as outer:
    outer.watch(xt)
    with tf.GradientTape() as inner:
      inner.watch(xt)
      y = tf.reduce_sum(tf.sin(f_tf(xt)))
    g = inner.gradient(y, xt)
  return outer.jacobian(g, xt, experimental_use_pfor=False).numpy()


@pytest.mark.parametrize("f_tf,point", [
    (_layer_norm, [[.5, -1., 2.], [3., 3.5, -2.]]),
    (lambda x: tf.sin(x) * tf.stop_gradient(tf.cos(x)), [[0., 1., -2.]]),
    # (A called function's nodes: tf2xla names them after the call too.)
    (lambda x: 2. * _LAYER_NORM_CALLED(x), [[.5, -1., 2.], [3., 3.5, -2.]]),
    # A stopped scalar: tf2xla broadcasts it at the consumer, whose stop the
    # interpreter keeps (it does not hand the multiply the scalar itself).
    (lambda x: x * tf.stop_gradient(tf.reduce_sum(x) * 2.)
     + tf.reduce_sum(x), [[.5, -1., 2.], [3., 3.5, -2.]]),
], ids=["moments", "stopped_cos", "moments_in_a_called_function",
        "stopped_scalar"])
def test_stop_gradient_the_module_stops_too(f_tf, point, tf_autodiff):
  """A StopGradient of a value one op makes (tf.nn.moments' mean in a
  LayerNormalization): the module's ops that read it read it through
  lax.stop_gradient, so JAX's derivatives are TF's tapes', at first and
  second order, and no TF autodiff runs."""
  x = np.array(point, np.float32)
  expected = _tf_jacobian(f_tf, x).reshape(x.shape + x.shape)
  hessian = _tf_hessian_of_sum_sin(f_tf, x)
  used = tf_autodiff["tf"]
  f = call_tf(f_tf)
  for t in (jax.jacfwd, jax.jacrev):
    assert_close(jax.jit(t(f))(x), expected, 1e-5)
  h = jax.hessian(lambda v: jnp.sum(jnp.sin(f(v))))
  assert_close(jax.jit(h)(x), hessian, 1e-4)
  assert_close(h(x), hessian, 1e-4)
  assert tf_autodiff["tf"] == used  # JAX's derivatives of the module


@pytest.mark.parametrize("f_tf", [
    lambda x: tf.nn.relu(tf.stop_gradient(tf.identity(2. * x))) + x,
    lambda x: tf.maximum(tf.stop_gradient(tf.identity(2. * x)), x),
], ids=["relu", "maximum"])
def test_stop_gradient_the_module_cannot_see_is_tf_gradient(f_tf):
  """A StopGradient of an Identity (which tf2xla lowers to nothing, so no
  op of the module is located at the producer) read by an op with a rule
  of its own (Relu's, Maximum's): the module cannot stop the value, and
  its other rule is no stop, so TF's gradients (the derivatives were the
  stopped value's before)."""
  x = np.array([1., -1., 2.], np.float32)
  expected = _tf_jacobian(f_tf, x)
  f = call_tf(f_tf)
  for t in (jax.jacfwd, jax.jacrev):
    assert_close(jax.jit(t(f))(x), expected, 1e-6)


@pytest.mark.parametrize("through", [lambda c: c, tf.identity],
                         ids=["directly", "through_identity"])
def test_stop_gradient_of_a_value_also_read_unstopped_is_tf_gradient(
    through, tf_autodiff):
  """A consumer that reads a value both stopped and not (also through an
  Identity, which tf2xla lowers to nothing): the module cannot tell the two
  apart, so TF's gradients differentiate the function."""
  def f_tf(x):
    c = tf.cos(x)
    return through(c) * tf.stop_gradient(c)
  x = np.array([0., 1., -2.], np.float32)
  expected = _tf_jacobian(f_tf, x)
  used = tf_autodiff["tf"]
  assert_close(jax.jit(jax.jacrev(call_tf(f_tf)))(x), expected, 1e-6)
  assert tf_autodiff["tf"] > used


def _cumprod_ref(x: np.ndarray, axis: int, exclusive: bool,
                 reverse: bool) -> jax.Array:
  v = jnp.flip(x, axis) if reverse else x
  p = jnp.cumprod(v, axis=axis)
  if exclusive:
    ones = jnp.ones_like(jnp.take(v, jnp.arange(1), axis=axis))
    p = jnp.concatenate(
        [ones, jnp.take(p, jnp.arange(x.shape[axis] - 1), axis=axis)], axis)
  return jnp.flip(p, axis) if reverse else p


@pytest.mark.parametrize("axis,exclusive,reverse,staged", [
    (0, False, False, False), (0, False, False, True), (1, True, False, True),
    (0, True, True, True)])
def test_cumprod_at_zeros_has_one_jacobian(axis, exclusive, reverse, staged,
                                           tf_autodiff):
  """jnp.cumprod's Jacobian both ways (issue 57: jacrev was TF's gradient,
  0 at a zero, and jacfwd the derivative)."""
  x = np.array([[0., .5, 2.], [1.5, 0., -1.]], np.float32)
  f = call_tf(lambda v: tf.math.cumprod(v, axis, exclusive, reverse))

  def ref(v):
    return _cumprod_ref(v, axis, exclusive, reverse)
  expected = jax.jacfwd(ref)(x)
  for t in (jax.jacfwd, jax.jacrev):
    g = t(f)
    assert_close((jax.jit(g) if staged else g)(x), expected, 1e-6)
  weights = np.arange(1., 7., dtype=np.float32).reshape(2, 3)
  h = jax.hessian(lambda v: jnp.sum(weights * jnp.sin(f(v))))
  assert_close((jax.jit(h) if staged else h)(x), jax.hessian(
      lambda v: jnp.sum(weights * jnp.sin(ref(v))))(x), 1e-5)
  assert tf_autodiff["tf"] == 0


def test_cumprod_where_jax_cannot_transpose_the_module_is_tf_both_ways():
  """A module JAX cannot transpose (a loop whose trip count depends on the
  data): reverse mode is TF's VJP, so forward mode follows it to TF's
  gradient (0 at a zero): one Jacobian, TF's."""
  def f_tf(x):
    _, y = tf.while_loop(lambda i, y: tf.reduce_sum(y) < 10.,
                         lambda i, y: (i + 1, y * 1.5), (0, x),
                         maximum_iterations=20)
    return tf.math.cumprod(x) + y
  x = np.array([0., .5, 2.], np.float32)
  expected = _tf_jacobian(f_tf, x)
  assert expected[1, 0] == 0.  # (the derivative is .5: TF's gradient)
  f = call_tf(f_tf)
  for t in (jax.jacfwd, jax.jacrev):
    assert_close(jax.jit(t(f))(x), expected, 1e-6)
    assert_close(t(f)(x), expected, 1e-6)
