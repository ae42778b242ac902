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
"""Every derivative of two models, from the engine, against TF's references.

A SchNet-like potential (message passing in a ``tf.while_loop`` whose trip
count the module fixes, without ``maximum_iterations``, and shifted
softplus) and a Keras CNN (convolutions, batch normalization, max pooling,
swish, global pooling, dropout, dense). TF's own derivatives of either
cannot be compiled by XLA (the loop's gradient grows TensorLists; forward
mode through max pooling needs ``MaxPoolGradGrad``, an inexact kernel):
the engine differentiates their modules, both ways, eagerly and under
``jit`` (issue 57). References are TF's alone: the values and
``tf.GradientTape`` outside ``jit``, and central differences of TF's
gradient for second derivatives.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable

import pytest

from tests.calltf.util import assert_close, count_calls  # noqa: I001

import jax  # noqa: E402
from jax.experimental import jax2tf  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

call_tf = jax2tf.call_tf
# Central differences of TF's float32 gradient: step and tolerance.
_STEP = 1e-2
_FD_TOL = 2e-2


@dataclasses.dataclass(frozen=True)
class _Model:
  """A TF function of one array, a point and a batch of points.

  Attributes:
    fn: the function; its results are a vector (Jacobians) and a scalar
      (gradients and Hessians).
    x: the point.
    xs: a batch of two points.
    references: TF's references made so far, by transformation.
  """
  fn: Callable[[Any], tuple[Any, Any]]
  x: np.ndarray
  xs: np.ndarray
  references: dict[str, tuple[np.ndarray, float]] = dataclasses.field(
      default_factory=dict)


def _schnet() -> _Model:
  """Message passing over a neighbour list: 8 atoms, 3 interactions."""
  n, width, layers = 8, 4, 3
  rng = np.random.default_rng(57)
  weights = tf.constant(0.4 * rng.standard_normal((layers, width, width)),
                        tf.float32)
  embedding = tf.constant(rng.standard_normal((n, width)), tf.float32)
  pairs = np.array([(i, j) for i in range(n) for j in range(n) if i != j],
                   np.int32)
  src, dst = tf.constant(pairs[:, 0]), tf.constant(pairs[:, 1])

  def shifted_softplus(v):
    return tf.nn.softplus(v) - np.log(2.).astype(np.float32)

  def energy(x):
    r = tf.gather(x, dst) - tf.gather(x, src)
    filt = tf.exp(-tf.reduce_sum(r * r, -1, keepdims=True))

    def interaction(i, h):
      messages = tf.gather(h, src) * filt
      summed = tf.math.unsorted_segment_sum(messages, dst, n)
      return i + 1, h + shifted_softplus(summed @ tf.gather(weights, i))
    # (No maximum_iterations: the module's counter fixes the trip count.)
    _, h = tf.while_loop(lambda i, h: i < layers, interaction,
                         (tf.constant(0), embedding))
    per_atom = tf.reduce_sum(h, -1)
    return per_atom, tf.reduce_sum(per_atom)

  x = (1.2 * rng.standard_normal((n, 3))).astype(np.float32)
  xs = x + 0.1 * rng.standard_normal((2, n, 3)).astype(np.float32)
  return _Model(energy, x, xs)


def _keras_cnn() -> _Model:
  """Conv2D, BatchNormalization, MaxPooling2D, Conv2D(swish), pooling,
  Dropout, Dense, called with training=False."""
  keras = pytest.importorskip("keras")
  keras.utils.set_random_seed(57)
  model = keras.Sequential([
      keras.Input((6, 6, 1)),
      keras.layers.Conv2D(3, 3, padding="same"),
      keras.layers.BatchNormalization(),
      keras.layers.MaxPooling2D(2),
      keras.layers.Conv2D(3, 2, activation="swish"),
      keras.layers.GlobalAveragePooling2D(),
      keras.layers.Dropout(0.2),
      keras.layers.Dense(2)])
  # Running statistics that are not the initial 0 and 1.
  bn = model.layers[1]
  bn.moving_mean.assign(np.array([.1, -.2, .3], np.float32))
  bn.moving_variance.assign(np.array([.5, 2., 1.5], np.float32))

  def f(x):
    y = model(x[None], training=False)[0]
    return y, tf.reduce_sum(y * tf.constant([1., -2.]))

  x = np.random.default_rng(58).standard_normal((6, 6, 1)).astype(
      np.float32)
  # (Scaled copies of x: every pooling window keeps its maximum, and no
  # other element comes within the differences' step of it, which would
  # make the reference a difference across the kink.)
  xs = np.stack([0.8 * x, 1.3 * x])
  return _Model(f, x, xs)


_MODELS = {"schnet": _schnet, "keras_cnn": _keras_cnn}


@pytest.fixture(scope="module", params=sorted(_MODELS))
def model(request) -> tuple[str, _Model]:
  return request.param, _MODELS[request.param]()


# --- TF's references ----------------------------------------------------------


def _tf_gradient(m: _Model, x: np.ndarray) -> np.ndarray:
  xt = tf.constant(x)
  with tf.GradientTape() as tape:
    tape.watch(xt)
    _, total = m.fn(xt)
  return tf.convert_to_tensor(tape.gradient(total, xt)).numpy()


def _tf_jacobian(m: _Model, x: np.ndarray) -> np.ndarray:
  xt = tf.constant(x)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(xt)
    vector, _ = m.fn(xt)
  return tape.jacobian(vector, xt, experimental_use_pfor=False).numpy()


def _tf_hessian(m: _Model, x: np.ndarray) -> np.ndarray:
  """Central differences of TF's gradient."""
  flat = x.reshape(-1)
  columns = []
  for i in range(flat.size):
    e = np.zeros_like(flat)
    e[i] = _STEP
    columns.append((_tf_gradient(m, (flat + e).reshape(x.shape)).astype(
        np.float64) - _tf_gradient(m, (flat - e).reshape(x.shape))) / (
            2 * _STEP))
  return np.stack(columns, -1).reshape(x.shape + x.shape).astype(np.float32)


# --- the transformations ----------------------------------------------------


def _transformed(name: str, m: _Model) -> tuple[Callable[..., Any], Any]:
  """The transformation of call_tf(m.fn), its argument."""
  g = call_tf(m.fn)

  def total(x):
    return g(x)[1]

  def vector(x):
    return g(x)[0]
  return {
      "grad": (jax.grad(total), m.x),
      "jacrev": (jax.jacrev(vector), m.x),
      "jacfwd": (jax.jacfwd(vector), m.x),
      "hessian": (jax.hessian(total), m.x),
      "vmap(grad)": (jax.vmap(jax.grad(total)), m.xs),
      "vmap(hessian)": (jax.vmap(jax.hessian(total)), m.xs),
      "jvp": (lambda x: jax.jvp(vector, (x,), (jnp.ones_like(x),))[1], m.x),
  }[name]


def _expected(name: str, m: _Model) -> tuple[np.ndarray, float]:
  """TF's reference of a transformation, and its tolerance (made once)."""
  if name not in m.references:
    m.references[name] = _reference(name, m)
  return m.references[name]


def _reference(name: str, m: _Model) -> tuple[np.ndarray, float]:
  if name == "grad":
    return _tf_gradient(m, m.x), 1e-4
  if name in ("jacrev", "jacfwd"):
    return _tf_jacobian(m, m.x), 1e-4
  if name == "jvp":
    jac = _tf_jacobian(m, m.x)
    return np.tensordot(jac, np.ones_like(m.x), m.x.ndim), 1e-4
  if name == "hessian":
    return _tf_hessian(m, m.x), _FD_TOL
  if name == "vmap(grad)":
    return np.stack([_tf_gradient(m, x) for x in m.xs]), 1e-4
  assert name == "vmap(hessian)", name
  return np.stack([_tf_hessian(m, x) for x in m.xs]), _FD_TOL


_TRANSFORMS = ("grad", "jacrev", "jacfwd", "hessian", "vmap(grad)",
               "vmap(hessian)", "jvp")
# The default run: forward mode through the pooling and the loop under
# jit and eagerly, reverse mode through them batched, and the Hessian (both
# modes) under jit; the full run every transformation both ways.
_DEFAULT = frozenset({("jacfwd", True), ("hessian", True),
                      ("vmap(grad)", True), ("jacfwd", False)})


def _cases() -> list[Any]:
  return [pytest.param(name, staged, marks=(
      [] if (name, staged) in _DEFAULT else [pytest.mark.full_run]),
                       id=f"{'jit' if staged else 'eager'}-{name}")
          for name in _TRANSFORMS for staged in (True, False)]


@pytest.fixture
def tf_autodiff(monkeypatch) -> collections.Counter:
  """Counts TF's autodiff (tapes, accumulators) while a transformation runs."""
  found: collections.Counter = collections.Counter()
  count_calls(monkeypatch, found, tf.GradientTape, "gradient", "tf")
  count_calls(monkeypatch, found, tf.autodiff.ForwardAccumulator, "jvp", "tf")
  return found


@pytest.mark.parametrize("name,staged", _cases())
def test_every_derivative_from_the_engine(model, name, staged, tf_autodiff):
  _, m = model
  f, arg = _transformed(name, m)
  got = np.asarray((jax.jit(f) if staged else f)(arg))
  used_tf = tf_autodiff["tf"]
  expected, tol = _expected(name, m)
  assert_close(got, expected, tol)
  # JAX's derivatives of the module: no TF tape or accumulator ran.
  assert used_tf == 0, used_tf


def test_the_values_and_their_batch(model):
  _, m = model
  g = call_tf(m.fn)
  for f in (g, jax.jit(g)):
    assert_close(f(m.x), tuple(t.numpy() for t in m.fn(tf.constant(m.x))),
                 1e-5)
  batched = jax.jit(jax.vmap(g))(m.xs)
  expected = [m.fn(tf.constant(x)) for x in m.xs]
  assert_close(tuple(np.asarray(b) for b in batched),
               tuple(np.stack([e[k].numpy() for e in expected])
                     for k in range(2)), 1e-5)
