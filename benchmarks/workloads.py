"""The benchmark workloads: one function, written in TensorFlow and in jnp.

Each :class:`Workload` describes one example (the unbatched function); the
methods in :mod:`benchmarks.methods` batch it over ``N`` examples. The ``tf``
and ``jnp`` versions compute the same numbers, which the harness checks.

A workload may ask for a derivative of the function instead of the function
(``derivative``): ``jacrev``, ``jacfwd``, ``hessian`` (``jacfwd(jacrev)``),
``jacrev_jacfwd``, or ``jvp`` (the tangent along a fixed direction); every
method applies the same JAX transformation to its own version of the
function (:func:`per_example`).
"""
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

from __future__ import annotations

from collections.abc import Callable
import dataclasses
import functools
import os
import tempfile
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import tensorflow as tf

# The MLP layer: R^64 -> R, one hidden layer of 256 tanh units.
MLP_IN, MLP_HIDDEN = 64, 256
# The molecular energy: n atoms in R^3.
N_ATOMS = 16
# The Lennard-Jones energy of the forward-mode rows: 27 atoms (a 3x3x3 lattice) -> R.
LJ_ATOMS = 27
# The MLP of the eager, first-call and memory rows: R^64 -> R, 128 tanh units.
MLP128_HIDDEN = 128
# The Lennard-Jones energy of the first calls of each transformation: 8 atoms.
LJ8_ATOMS = 8
# The derivatives a workload may ask for (see per_example).
DERIVATIVES = (None, "jacrev", "jacfwd", "hessian", "jacrev_jacfwd", "jvp")
# The Keras model: R^16 -> R, two hidden layers of 64 ReLU units.
KERAS_IN, KERAS_HIDDEN = 16, 64


@dataclasses.dataclass(frozen=True)
class Workload:
  """One benchmark function, in TensorFlow and in jnp.

  Attributes:
    name: short identifier, used in tables and file names.
    title: one-line description for the report.
    example_shape: the shape of one example (the vmapped argument).
    tf_fn: the TensorFlow function of one example.
    jnp_fn: the same function in ``jax.numpy``.
    derivative: what every method computes per example: None (the
      function), or a JAX transformation of it, one of ``DERIVATIVES``
      (``jacrev`` is ``GradientTape.batch_jacobian`` in TensorFlow).
    one_call_methods: the one-call ``vmap_method``\\ s that are correct for
      ``tf_fn`` (it handles extra leading axes itself).
    tol: relative tolerance of the check against the jnp reference.
    methods: if set, only these methods run it (``native`` always does).
    modes: the modes it runs in.
    max_n: if set, the largest batch size measured (large Hessians).
    family: the function's name without the derivative (``energy``).
  """
  name: str
  title: str
  example_shape: tuple[int, ...]
  tf_fn: Callable[[Any], Any]
  jnp_fn: Callable[[Any], Any]
  derivative: str | None = None
  one_call_methods: tuple[str, ...] = ()
  tol: float = 1e-4
  methods: tuple[str, ...] | None = None
  modes: tuple[str, ...] = ("jit", "eager")
  max_n: int | None = None
  family: str = ""

  @property
  def jacobian(self) -> bool:
    """Whether every method computes the Jacobian with ``jax.jacrev``."""
    return self.derivative == "jacrev"

  def runs(self, method: str) -> bool:
    """Whether ``method`` runs this workload."""
    return (method == "native" or self.methods is None
            or method in self.methods)

  def inputs(self, n: int, seed: int = 0) -> np.ndarray:
    """``n`` examples, float32, stacked along axis 0."""
    rng = np.random.default_rng(seed)
    if self.name.startswith(("energy", "lj")):
      # Atoms near the sites of a cubic lattice: no two atoms too close.
      atoms = self.example_shape[0]
      side = int(np.ceil(atoms ** (1 / 3) - 1e-9))
      grid = np.array([[i, j, k] for i in range(side) for j in range(side)
                       for k in range(side)][:atoms], np.float32)
      x = 1.2 * grid + 0.1 * rng.standard_normal((n, atoms, 3))
      return x.astype(np.float32)
    return rng.standard_normal((n, *self.example_shape)).astype(np.float32)

  def tangent(self) -> np.ndarray:
    """The fixed direction of the ``jvp`` workloads (one example's shape)."""
    rng = np.random.default_rng(99)
    return rng.standard_normal(self.example_shape).astype(np.float32)


def per_example(w: Workload, f: Callable[[Any], Any]) -> Callable[[Any], Any]:
  """What every method computes for one example: ``f`` or its derivative.

  Args:
    w: the workload (its ``derivative``).
    f: one example's function, in the method's own form (jnp, call_tf,
      tf2jax).

  Returns:
    ``f``, or the JAX transformation of it that ``w.derivative`` names.
  """
  d = w.derivative
  if d is None:
    return f
  if d == "jacrev":
    return jax.jacrev(f)
  if d == "jacfwd":
    return jax.jacfwd(f)
  if d == "hessian":
    return jax.hessian(f)
  if d == "jacrev_jacfwd":
    return jax.jacrev(jax.jacfwd(f))
  if d == "jvp":
    v = w.tangent()
    return lambda x: jax.jvp(f, (x,), (jnp.asarray(v),))[1]
  raise ValueError(f"unknown derivative {d!r}; known: {DERIVATIVES}")


# --- R^7 -> R^2: sum of squares and product --------------------------------

def small_tf(x):
  return tf.stack([tf.reduce_sum(x * x, -1), tf.reduce_prod(x, -1)], -1)


def small_jnp(x):
  return jnp.stack([jnp.sum(x * x, -1), jnp.prod(x, -1)], -1)


# --- the MLP layer: R^64 -> R -------------------------------------------------

_rng = np.random.default_rng(1234)
MLP_W1 = (_rng.standard_normal((MLP_IN, MLP_HIDDEN)) / 8).astype(np.float32)
MLP_B1 = (0.1 * _rng.standard_normal(MLP_HIDDEN)).astype(np.float32)
MLP_W2 = (_rng.standard_normal((MLP_HIDDEN, 1)) / 16).astype(np.float32)
MLP_B2 = np.float32(0.5)


def mlp_tf(x):
  # einsum over the last axis: the function also maps over leading axes.
  h = tf.tanh(tf.einsum("...i,ij->...j", x, MLP_W1) + MLP_B1)
  return tf.einsum("...j,jk->...k", h, MLP_W2)[..., 0] + MLP_B2


def mlp_matvec_tf(x):
  # The same layer with tf.linalg.matvec: pfor batches MatMul with a stacked
  # right operand by transposing it (see the README's profiling notes).
  h = tf.tanh(tf.linalg.matvec(MLP_W1, x, transpose_a=True) + MLP_B1)
  return tf.linalg.matvec(MLP_W2, h, transpose_a=True)[0] + MLP_B2


def mlp_jnp(x):
  h = jnp.tanh(x @ MLP_W1 + MLP_B1)
  return (h @ MLP_W2)[..., 0] + MLP_B2


# --- the 128-unit MLP: R^64 -> R, 128 tanh units -----------------------------

MLP128_W1 = (_rng.standard_normal((MLP_IN, MLP128_HIDDEN)) / 8).astype(
    np.float32)
MLP128_B1 = (0.1 * _rng.standard_normal(MLP128_HIDDEN)).astype(np.float32)
MLP128_W2 = (_rng.standard_normal((MLP128_HIDDEN, 1)) / 12).astype(np.float32)


def mlp128_tf(x):
  h = tf.tanh(tf.einsum("...i,ij->...j", x, MLP128_W1) + MLP128_B1)
  return tf.einsum("...j,jk->...k", h, MLP128_W2)[..., 0] + MLP_B2


def mlp128_jnp(x):
  h = jnp.tanh(x @ MLP128_W1 + MLP128_B1)
  return (h @ MLP128_W2)[..., 0] + MLP_B2


# --- the molecular energy: R^(n x 3) -> R^3 ------------------------------------

def energy_tf(x):
  d = x[:, None, :] - x[None, :, :]
  n = tf.shape(x)[0]
  r2 = tf.reduce_sum(d * d, -1) + tf.eye(n)
  inv6 = 1. / (r2 * r2 * r2)
  lj = 2. * tf.reduce_sum((1. - tf.eye(n)) * (inv6 * inv6 - inv6))
  rg = tf.reduce_mean(tf.reduce_sum((x - tf.reduce_mean(x, 0)) ** 2, -1))
  return tf.stack([lj, rg, tf.reduce_sum(tf.sin(x))])


def energy_jnp(x):
  d = x[:, None, :] - x[None, :, :]
  n = x.shape[0]
  r2 = jnp.sum(d * d, -1) + jnp.eye(n)
  inv6 = 1. / (r2 * r2 * r2)
  lj = 2. * jnp.sum((1. - jnp.eye(n)) * (inv6 * inv6 - inv6))
  rg = jnp.mean(jnp.sum((x - jnp.mean(x, 0)) ** 2, -1))
  return jnp.stack([lj, rg, jnp.sum(jnp.sin(x))])


# --- the Lennard-Jones energy: R^(27 x 3) -> R ----------------------------------

def lj_tf(x):
  d = x[:, None, :] - x[None, :, :]
  n = tf.shape(x)[0]
  r2 = tf.reduce_sum(d * d, -1) + tf.eye(n)
  inv6 = 1. / (r2 * r2 * r2)
  return 2. * tf.reduce_sum((1. - tf.eye(n)) * (inv6 * inv6 - inv6))


def lj_jnp(x):
  d = x[:, None, :] - x[None, :, :]
  n = x.shape[0]
  r2 = jnp.sum(d * d, -1) + jnp.eye(n)
  inv6 = 1. / (r2 * r2 * r2)
  return 2. * jnp.sum((1. - jnp.eye(n)) * (inv6 * inv6 - inv6))


# --- a Keras model reloaded from a SavedModel ----------------------------------

def _build_keras_savedmodel(path: str) -> None:
  import keras  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(7)
  model = keras.Sequential([
      keras.Input((KERAS_IN,)),
      keras.layers.Dense(KERAS_HIDDEN, activation="relu"),
      keras.layers.Dense(KERAS_HIDDEN, activation="relu"),
      keras.layers.Dense(1),
  ])
  model.export(path, format="tf_saved_model", verbose=False)


class KerasSavedModel:
  """A Keras MLP exported as a SavedModel and reloaded with TensorFlow.

  The TensorFlow function calls the reloaded ``serve`` endpoint (input
  ``(None, 16)``, variables captured from the SavedModel); the jnp function
  reads the same variables' values.
  """

  def __init__(self, cache_dir: str | None = None):
    path = os.path.join(cache_dir or tempfile.mkdtemp(prefix="bench-keras-"),
                        "keras_mlp")
    if not os.path.exists(os.path.join(path, "saved_model.pb")):
      _build_keras_savedmodel(path)
    self.path = path
    self.loaded = tf.saved_model.load(path)
    values = {v.name.split("/", 1)[1].rsplit(":", 1)[0]: v.numpy()
              for v in self.loaded.variables}
    self.layers = [(values[f"{name}/kernel"], values[f"{name}/bias"])
                   for name in ("dense", "dense_1", "dense_2")]

  def tf_fn(self, x):
    """One example: a row of shape ``(1, 16)`` -> ``(1, 1)``."""
    return self.loaded.serve(x)

  def jnp_fn(self, x):
    """The same function in ``jax.numpy``."""
    for i, (w, b) in enumerate(self.layers):
      x = x @ w + b
      if i < len(self.layers) - 1:
        x = jnp.maximum(x, 0.)
    return x


# The methods that run the forward-mode workloads.
FORWARD_METHODS = ("native", "vectorized", "tf2jax", "fwdacc")
_DERIVATIVE_TITLES = {
    "jvp": "jax.jvp along a fixed direction (the tangent)",
    "jacfwd": "jax.jacfwd",
    "hessian": "jax.hessian (jacfwd of jacrev)",
    "jacrev_jacfwd": "jax.jacrev(jax.jacfwd(f))",
    "jacrev": "jax.jacrev",
}


def _forward_workloads() -> list[Workload]:
  """The forward-mode rows: next to jacrev, the energy and the LJ energy."""
  out = []
  for fam, shape, tf_fn, jnp_fn, title in (
      ("energy", (N_ATOMS, 3), energy_tf, energy_jnp,
       f"the energy R^({N_ATOMS}x3) -> R^3"),
      ("lj27", (LJ_ATOMS, 3), lj_tf, lj_jnp,
       f"Lennard-Jones energy of {LJ_ATOMS} atoms R^({LJ_ATOMS}x3) -> R")):
    for d in ("jacrev", "jvp", "jacfwd", "hessian", "jacrev_jacfwd"):
      if fam == "energy" and d == "jacrev":
        continue  # that is energy_jac, with every method
      # Native JAX's jacrev(jacfwd) takes 0.1-1 s per example on XLA:CPU
      # (and is wrong, see the README): one example only. Hessians are
      # large (up to 81x81 per example): N <= 1000.
      max_n = (1 if d == "jacrev_jacfwd"
               else 1000 if d == "hessian" or fam == "lj27" and d == "jacfwd"
               else None)
      out.append(Workload(
          f"{fam}_{d}", f"{_DERIVATIVE_TITLES[d]} of {title}", shape, tf_fn,
          jnp_fn, derivative=d, tol=1e-3,
          methods=FORWARD_METHODS if d != "jacrev_jacfwd"
          else FORWARD_METHODS[:3],
          modes=("jit",), max_n=max_n, family=fam))
  return out


def all_workloads(cache_dir: str | None = None) -> list[Workload]:
  """The benchmark's workloads, in report order.

  Args:
    cache_dir: where the Keras SavedModel is written (a temporary directory
      if None).

  Returns:
    The workloads.
  """
  keras_model = KerasSavedModel(cache_dir)
  return [
      Workload("small", "R^7 -> R^2: sum of squares and product", (7,),
               small_tf, small_jnp,
               one_call_methods=("expand_dims", "broadcast_all"),
               family="small"),
      Workload("mlp", f"MLP layer R^{MLP_IN} -> R ({MLP_HIDDEN} tanh units, "
               "fixed weights)", (MLP_IN,), mlp_tf, mlp_jnp,
               one_call_methods=("expand_dims", "broadcast_all"),
               family="mlp"),
      Workload("mlp_matvec", "the MLP layer written with tf.linalg.matvec",
               (MLP_IN,), mlp_matvec_tf, mlp_jnp, family="mlp_matvec"),
      Workload("energy", f"molecular energy R^({N_ATOMS}x3) -> R^3 "
               "(Lennard-Jones, radius of gyration, sum of sines)",
               (N_ATOMS, 3), energy_tf, energy_jnp, family="energy"),
      Workload("energy_jac", f"Jacobian of the energy: R^({N_ATOMS}x3) -> "
               f"R^(3x{N_ATOMS}x3), jax.jacrev", (N_ATOMS, 3), energy_tf,
               energy_jnp, derivative="jacrev", tol=1e-3, family="energy"),
      Workload("keras", f"Keras MLP R^{KERAS_IN} -> R ({KERAS_HIDDEN}-"
               f"{KERAS_HIDDEN} ReLU) reloaded from a SavedModel",
               (1, KERAS_IN), keras_model.tf_fn, keras_model.jnp_fn,
               one_call_methods=("batch_polymorphic",), family="keras"),
      *_forward_workloads(),
  ]


def mlp128() -> Workload:
  """The 128-unit MLP (64-128-1, tanh): the eager and first-call rows."""
  return Workload("mlp128", f"MLP R^{MLP_IN} -> R ({MLP128_HIDDEN} tanh units)",
                  (MLP_IN,), mlp128_tf, mlp128_jnp,
                  one_call_methods=("expand_dims", "broadcast_all"),
                  family="mlp128")


def lj8() -> Workload:
  """The 8-atom Lennard-Jones energy: the first calls of each transformation."""
  return Workload("lj8", f"Lennard-Jones energy of {LJ8_ATOMS} atoms "
                  f"R^({LJ8_ATOMS}x3) -> R", (LJ8_ATOMS, 3), lj_tf, lj_jnp,
                  tol=1e-3, modes=("jit",), family="lj8")


def eager_derivatives() -> list[Workload]:
  """The eager section's derivatives: per-example gradients and Hessians."""
  return [
      dataclasses.replace(mlp128(), name="mlp128_grad", derivative="jacrev",
                          title=f"gradient of the MLP R^{MLP_IN} -> R "
                          f"({MLP128_HIDDEN} tanh units): per-example "
                          "gradients"),
      dataclasses.replace(lj8(), name="lj8_grad", derivative="jacrev",
                          modes=("eager",),
                          title=f"gradient of the Lennard-Jones energy of "
                          f"{LJ8_ATOMS} atoms: per-example forces"),
      dataclasses.replace(lj8(), name="lj8_hessian", derivative="hessian",
                          modes=("eager",),
                          title=f"Hessian of the Lennard-Jones energy of "
                          f"{LJ8_ATOMS} atoms"),
  ]


@functools.cache
def _all_by_name(cache_dir: str | None) -> dict[str, Workload]:
  return {w.name: w for w in [*all_workloads(cache_dir), mlp128(), lj8(),
                              *eager_derivatives()]}


def by_name(name: str, cache_dir: str | None = None) -> Workload:
  """The workload called ``name`` (``mlp128`` and ``lj8`` included)."""
  found = _all_by_name(cache_dir)
  if name not in found:
    raise ValueError(f"unknown workload {name!r}; known: {sorted(found)}")
  return found[name]
