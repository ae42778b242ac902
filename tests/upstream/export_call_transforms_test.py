# Copyright 2026 The JAX Authors.
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
"""Tests for jax.vmap and forward mode of jax.export's Exported.call."""

import unittest

from absl.testing import absltest
from absl.testing import parameterized
import jax
from jax import export
from jax._src import test_util as jtu
from jax._src.export.transforms import exported as exported_api
import jax.numpy as jnp
import numpy as np

_MISSING = exported_api.pieces_missing()

jax.config.parse_flags_with_absl()


def _f(x, w):
  return jnp.stack([jnp.sum(jnp.tanh(x @ w)), jnp.sum(jnp.sin(x) * x)])


def _roundtrip(fun, *args, vjp_order=1):
  exp = export.export(jax.jit(fun))(*args)
  return export.deserialize(exp.serialize(vjp_order=vjp_order))


_DERIVATIVES = dict(
    jacrev=lambda g: jax.jacrev(g, argnums=(0, 1)),
    jacfwd=lambda g: jax.jacfwd(g, argnums=(0, 1)),
    hessian=lambda g: jax.hessian(lambda x, w: jnp.sum(jnp.sin(g(x, w)))),
    vmap_grad=lambda g: jax.vmap(
        jax.grad(lambda x, w: jnp.sum(g(x, w) ** 2)), in_axes=(0, None)),
)
# The vjp_order each derivative needs (hessian is jacfwd of jacrev).
_ORDER_NEEDED = dict(jacrev=1, jacfwd=1, hessian=2, vmap_grad=1)


@unittest.skipIf(bool(_MISSING), f"Test requires {_MISSING}")
class ExportCallTransformsTest(jtu.JaxTestCase):

  def setUp(self):
    super().setUp()
    rng = np.random.default_rng(0)
    self.x = rng.normal(size=(3, 4)).astype(np.float32)
    self.xs = rng.normal(size=(5, 3, 4)).astype(np.float32)
    self.w = rng.normal(size=(4, 5)).astype(np.float32)

  @parameterized.named_parameters(
      dict(testcase_name=f"_vjp_order={k}", vjp_order=k) for k in (0, 1))
  def test_vmap(self, vjp_order):
    exp = _roundtrip(_f, self.x, self.w, vjp_order=vjp_order)
    for wrap in (lambda g: g, jax.jit):
      for in_axes, xs in (((0, None), self.xs),
                          ((1, None), np.moveaxis(self.xs, 0, 1))):
        self.assertAllClose(wrap(jax.vmap(exp.call, in_axes))(xs, self.w),
                            jax.vmap(_f, in_axes)(xs, self.w))
    nested = lambda g: jax.vmap(jax.vmap(g, (0, None)), (None, 0))  # noqa: E731
    ws = np.stack([self.w, 2. * self.w])
    self.assertAllClose(jax.jit(nested(exp.call))(self.xs, ws),
                        nested(_f)(self.xs, ws))

  def test_vmap_of_a_symbolic_artifact(self):
    def g(x, w):
      return jnp.tanh(x @ w) - jnp.mean(x @ w, axis=0, keepdims=True)

    b, c = export.symbolic_shape("b, c")
    exp = _roundtrip(g, jax.ShapeDtypeStruct((b, 4), np.float32), self.w)
    self.assertAllClose(jax.jit(jax.vmap(exp.call, (0, None)))(self.xs, self.w),
                        jax.vmap(g, (0, None))(self.xs, self.w))
    # Exported again, with a symbolic vmap axis.
    again = export.export(jax.jit(jax.vmap(exp.call, (0, None))))(
        jax.ShapeDtypeStruct((c, 3, 4), np.float32), self.w)
    self.assertAllClose(again.call(self.xs[:2], self.w),
                        jax.vmap(g, (0, None))(self.xs[:2], self.w))

  @parameterized.named_parameters(
      dict(testcase_name=f"_{name}_vjp_order={k}", name=name, vjp_order=k)
      for name in _DERIVATIVES for k in (0, 1, 2))
  def test_derivatives(self, name, vjp_order):
    exp = _roundtrip(_f, self.x, self.w, vjp_order=vjp_order)
    t = _DERIVATIVES[name]
    x = self.xs if name == "vmap_grad" else self.x
    if vjp_order >= _ORDER_NEEDED[name]:
      self.assertAllClose(jax.jit(t(exp.call))(x, self.w), t(_f)(x, self.w),
                          rtol=1e-5, atol=1e-5)
    else:
      with self.assertRaisesRegex(ValueError, "serialize.vjp_order=k."):
        jax.jit(t(exp.call))(x, self.w)

  def test_forward_mode_is_the_transpose_of_a_custom_vjp(self):
    @jax.custom_vjp
    def scaled(x):
      return jnp.sin(x)

    scaled.defvjp(lambda x: (jnp.sin(x), x),
                  lambda x, ct: (0.5 * ct * jnp.cos(x),))
    exp = _roundtrip(scaled, self.x)
    self.assertAllClose(jax.jacfwd(exp.call)(self.x),
                        jax.jacrev(scaled)(self.x))

  def test_serialized_module_is_not_differentiated(self):
    # The module of sin(x) * stop_gradient(x) computes sin(x) * x.
    def g(x):
      return jnp.sin(x) * jax.lax.stop_gradient(x)

    hessian = lambda g: jax.hessian(lambda x: jnp.sum(g(x)))  # noqa: E731
    with self.assertRaisesRegex(ValueError, "stop_gradient"):
      hessian(_roundtrip(g, self.x[0], vjp_order=1).call)(self.x[0])
    self.assertAllClose(hessian(_roundtrip(g, self.x[0], vjp_order=2).call)(
        self.x[0]), hessian(g)(self.x[0]))

  def test_op_without_a_rule_is_named(self):
    # XLA's stateful random numbers (stablehlo.rng) have no rule.
    exp = _roundtrip(
        lambda x: x + jax.lax.rng_uniform(np.float32(0), np.float32(1),
                                          x.shape), self.x)
    with self.assertRaisesRegex(NotImplementedError, "stablehlo.rng"):
      jax.vmap(exp.call)(self.xs)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
