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
"""Every transformation of ``Exported.call`` checks what the plain call
checks, per element, with the plain call's message (no TensorFlow).

A wrong dtype, rank or static dimension, or arguments that break the shape
constraints of a polymorphic module, are refused by ``Exported.call``
(``jax.export``'s abstract evaluation of the call). Under ``jax.vmap`` the
call is batched by its own rule, which JAX does not pass through that
evaluation: each case here is crossed with every transformation, and each
must raise the plain call's ``ValueError``, message for message, never
return numbers (a ``float32`` batch into a ``uint32`` module was converted
and clipped).
"""

from __future__ import annotations

import functools

import jax
from jax import export
from jax._src.export.transforms import exported as exported_api
import jax.numpy as jnp
import numpy as np
import pytest

from ..export.cycle import roundtrip

pytestmark = pytest.mark.skipif(
    bool(exported_api.pieces_missing()),
    reason=f"this jax's jax.export lacks {exported_api.pieces_missing()}")


def _scalar(call):
  return lambda x: jnp.sum(jnp.sin(call(x).astype(np.float32)))


def _tangent(x):
  if np.issubdtype(x.dtype, np.inexact):
    return jnp.ones_like(x)
  return np.zeros(x.shape, jax.dtypes.float0)


# Each transformation: how it calls `call` on an element `x` (batched
# ones on a batch of it). Differentiation with respect to an integer
# argument JAX refuses itself, before the call: only float ones get those.
_TRANSFORMS = {
    "vmap": lambda call, x: jax.vmap(call)(np.stack([x, x])),
    "jit(vmap)": lambda call, x: jax.jit(jax.vmap(call))(np.stack([x, x])),
    "vmap(vmap)": lambda call, x: jax.vmap(jax.vmap(call))(
        np.stack([np.stack([x, x])] * 3)),
    "vmap(in_axes=-1)": lambda call, x: jax.vmap(call, in_axes=-1)(
        np.stack([x, x], axis=-1)),
    "jvp": lambda call, x: jax.jvp(call, (x,), (_tangent(x),)),
    "jit(jvp)": lambda call, x: jax.jit(
        lambda x, t: jax.jvp(call, (x,), (t,)))(x, _tangent(x)),
    "vmap(jvp)": lambda call, x: jax.vmap(
        lambda x: jax.jvp(call, (x,), (_tangent(x),)))(np.stack([x, x])),
}
_FLOAT_TRANSFORMS = {
    "grad": lambda call, x: jax.grad(_scalar(call))(x),
    "jit(jacfwd)": lambda call, x: jax.jit(jax.jacfwd(call))(x),
    "hessian": lambda call, x: jax.hessian(_scalar(call))(x),
    "per-example gradients": lambda call, x: jax.jit(jax.vmap(jax.grad(
        _scalar(call))))(np.stack([x, x])),
    "vmap(hessian)": lambda call, x: jax.vmap(jax.hessian(_scalar(call)))(
        np.stack([x, x])),
}


@functools.lru_cache(maxsize=None)
def _exported(name: str) -> export.Exported:
  """The module of each case (serialized with the VJPs of a Hessian)."""
  if name == "uint32":
    return roundtrip(lambda a: a // jnp.uint32(3), np.zeros(4, np.uint32),
                     vjp_order=2)
  if name == "float32":
    return roundtrip(lambda x: jnp.sin(x) @ jnp.ones((4, 2), np.float32),
                     np.zeros((3, 4), np.float32), vjp_order=2)
  b, = export.symbolic_shape("b", constraints=("b >= 2",))
  if name == "b >= 2":
    return roundtrip(lambda x: jnp.cumsum(x, axis=0),
                     jax.ShapeDtypeStruct((b, 4), np.float32), vjp_order=2)
  assert name == "b, b", name
  return roundtrip(lambda x: x @ x, jax.ShapeDtypeStruct((b, b), np.float32),
                   vjp_order=2)


# (module, argument): each one the plain call refuses.
_CASES = {
    "float32 into uint32": ("uint32", np.array([1., 5e9, 3e9, 7.],
                                               np.float32)),
    "int32 into float32": ("float32", np.arange(12, dtype=np.int32).reshape(
        3, 4)),
    "float16 into float32": ("float32", np.ones((3, 4), np.float16)),
    "rank": ("float32", np.ones((12,), np.float32)),
    "static dimension": ("float32", np.ones((3, 5), np.float32)),
    "constraint b >= 2": ("b >= 2", np.ones((1, 4), np.float32)),
    "b, b": ("b, b", np.ones((2, 3), np.float32)),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_every_transformation_refuses_what_the_call_refuses(case):
  module, x = _CASES[case]
  ex = _exported(module)
  with pytest.raises(ValueError) as plain:
    ex.call(x)
  message = str(plain.value)
  transforms = dict(_TRANSFORMS)
  if np.issubdtype(x.dtype, np.floating):
    transforms.update(_FLOAT_TRANSFORMS)
  accepted, other = [], []
  for name, transform in transforms.items():
    try:
      transform(ex.call, x)
    except ValueError as e:
      if str(e) != message:
        other.append(f"{name}: {e}")
    else:
      accepted.append(name)
  assert not accepted, f"accepted what the call refuses ({message}): " \
      f"{accepted}"
  assert not other, f"refused otherwise than the call ({message}): {other}"


def test_the_check_comes_before_a_missing_vjp():
  """Forward mode of an artifact without VJPs, with a wrong dtype: the
  plain call's error, as JAX's own order (the primal first)."""
  ex = roundtrip(jnp.sin, np.zeros(3, np.float32), vjp_order=0)
  x = np.ones(3, np.float16)
  with pytest.raises(ValueError) as plain:
    ex.call(x)
  for transform in (lambda: jax.jvp(ex.call, (x,), (x,)),
                    lambda: jax.vmap(lambda x: jax.jvp(
                        ex.call, (x,), (x,)))(np.stack([x, x]))):
    with pytest.raises(ValueError) as e:
      transform()
    assert str(e.value) == str(plain.value)


def test_the_right_arguments_still_give_the_numbers():
  """(The checks pass the arguments each case's module takes.)"""
  for module, x in (("uint32", np.array([1, 5, 3, 7], np.uint32)),
                    ("float32", np.ones((3, 4), np.float32)),
                    ("b >= 2", np.ones((2, 4), np.float32)),
                    ("b, b", np.ones((3, 3), np.float32))):
    ex = _exported(module)
    xs = np.stack([x, x + 1])
    np.testing.assert_array_equal(
        np.asarray(jax.jit(jax.vmap(ex.call))(xs)),
        np.stack([np.asarray(ex.call(x)), np.asarray(ex.call(x + 1))]))


# --------------------------------------------------------------------------
# The platform: checked, and its module chosen, where the call is lowered.
# --------------------------------------------------------------------------

def _by_platform(x):
  return jax.lax.platform_dependent(x, tpu=lambda x: x * 3.,
                                    default=lambda x: x * 2.)


_BATCHED = {
    "jit(vmap)": lambda call: jax.jit(jax.vmap(call)),
    "jit(vmap(vmap))": lambda call: jax.jit(jax.vmap(jax.vmap(call))),
    "jit(jacfwd)": lambda call: jax.jit(jax.jacfwd(call)),
    "per-example gradients": lambda call: jax.jit(jax.vmap(jax.grad(
        lambda x: jnp.sum(call(x))))),
}


def _arg(name: str) -> np.ndarray:
  return np.ones((2, 2, 3) if name == "jit(vmap(vmap))" else
                 (3,) if name == "jit(jacfwd)" else (2, 3), np.float32)


@pytest.mark.parametrize("platforms", [("tpu",), ("cpu", "tpu")])
def test_lowering_for_a_platform_not_exported_for_is_refused(platforms):
  """As the call: `jax.export` of a transformation for a platform the
  module was not exported for refuses it, with the call's message."""
  ex = roundtrip(jnp.sin, np.zeros(3, np.float32))
  # (Upstream's own messages: of the call, and, where only derivatives are
  # computed, jax.grad's, of the call of the serialized VJP.)
  messages = []
  for plain in (ex.call, jax.grad(lambda x: jnp.sum(ex.call(x)))):
    with pytest.raises(ValueError) as e:
      export.export(jax.jit(plain), platforms=platforms)(
          np.zeros(3, np.float32))
    messages.append(str(e.value))
  assert "Function 'sin' was exported for platforms" in messages[0]
  assert "Function 'fun_vjp_jax' was exported for platforms" in messages[1]
  for name, transform in _BATCHED.items():
    with pytest.raises(ValueError) as e:
      export.export(transform(ex.call), platforms=platforms)(_arg(name))
    derivatives_only = name in ("jit(jacfwd)", "per-example gradients")
    assert str(e.value) == messages[derivatives_only], name


@pytest.mark.parametrize("name", list(_BATCHED))
def test_each_platform_runs_its_own_module(name):
  """A module for a TPU and the CPU, transformed and exported again: for
  each platform, its own code (the TPU's run here with the platform check
  disabled: x * 3, the CPU's x * 2), as the call runs them."""
  ex = roundtrip(_by_platform, np.zeros(3, np.float32),
                 export_kwargs=dict(platforms=("tpu", "cpu")))
  transform = _BATCHED[name]
  x = _arg(name)
  unchecked = [export.DisabledSafetyCheck.platform()]
  for platforms, factor in ((("tpu",), 3.), (("cpu",), 2.),
                            (("tpu", "cpu"), 2.)):
    again = export.deserialize(export.export(
        transform(ex.call), platforms=platforms,
        disabled_checks=unchecked)(x).serialize())
    np.testing.assert_allclose(
        np.asarray(again.call(x)),
        np.asarray(transform(lambda v: v * factor)(x)), rtol=1e-6)


def test_a_platform_whose_module_has_no_rule_is_refused_where_lowered():
  """The TPU's code has an op without a rule: refused by name where it is
  lowered for a TPU; the CPU's runs."""
  def g(x):
    return jax.lax.platform_dependent(
        x, tpu=lambda x: x + jax.lax.rng_uniform(np.float32(0),
                                                 np.float32(1), (3,)),
        default=lambda x: x * 2.)

  ex = roundtrip(g, np.zeros(3, np.float32),
                 export_kwargs=dict(platforms=("tpu", "cpu")))
  xs = np.ones((2, 3), np.float32)
  np.testing.assert_allclose(jax.jit(jax.vmap(ex.call))(xs), xs * 2.)
  with pytest.raises(ValueError) as e:
    export.export(jax.jit(jax.vmap(ex.call)), platforms=("tpu",))(xs)
  assert "jax.vmap of the exported function 'g'" in str(e.value)
  assert "its branch for 'tpu'" in str(e.value)
  assert "stablehlo.rng" in str(e.value)


@pytest.mark.parametrize("name", list(_BATCHED))
def test_without_the_platform_check_each_platform_still_runs_its_own(name):
  """As the call: a module exported for a TPU and the CPU without its
  platform check runs the CPU's code on the CPU (the first platform's only
  where it was not exported for one: here, a GPU's)."""
  ex = roundtrip(_by_platform, np.zeros(3, np.float32), export_kwargs=dict(
      platforms=("tpu", "cpu"),
      disabled_checks=[export.DisabledSafetyCheck.platform()]))
  transform = _BATCHED[name]
  x = _arg(name)
  np.testing.assert_allclose(
      np.asarray(transform(ex.call)(x)),
      np.asarray(transform(lambda v: v * 2.)(x)), rtol=1e-6)
  text = export.export(transform(ex.call), platforms=("cuda",))(
      x).mlir_module()
  assert f"{3.:e}" in text and f"{2.:e}" not in text
