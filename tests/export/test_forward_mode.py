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
"""Forward mode and second derivatives of artifacts whose VJP modules hold
ops JAX transposes only as the engine writes them (no TensorFlow).

Forward mode is the transpose of the serialized VJP: ``jacfwd`` needs
``vjp_order=1`` and ``hessian`` ``vjp_order=2``, as ``docs/export.md``
says, also where the VJP holds a window reduction (``cumsum``, pooling)
or an optimization barrier (``jax.checkpoint``). Where it holds an op
that is not linear algebra (``ldexp``'s bit manipulation), the refusal
says that one more ``vjp_order`` serves; an artifact without a VJP is
told how to export its forward mode where JAX cannot serialize one.
"""

from __future__ import annotations

import jax
from jax import export
from jax._src import config
from jax._src.export.transforms import exported as exported_api
import jax.numpy as jnp
import numpy as np
import pytest

from .util import assert_close

pytestmark = pytest.mark.skipif(
    bool(exported_api.pieces_missing()),
    reason=f"this jax's jax.export lacks {exported_api.pieces_missing()}")


def _avg_pool(x):
  return jax.lax.reduce_window(x, 0., jax.lax.add, (2,), (1,), "VALID") / 2


def _checkpointed(x):
  return jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)) * y)(x)


def _conv(x):
  return jax.lax.conv_general_dilated(x[None, None], jnp.ones((1, 1, 3)),
                                      (1,), "SAME")[0, 0]


FUNCTIONS = {"cumsum": jnp.cumsum, "average pooling": _avg_pool,
             "checkpoint": _checkpointed, "convolution": _conv,
             "cumprod": jnp.cumprod}


def _roundtrip(f, *args, vjp_order):
  return export.deserialize(
      export.export(jax.jit(f))(*args).serialize(vjp_order=vjp_order))


def _hessian(f):
  return jax.hessian(lambda y: jnp.sum(jnp.sin(f(y))))


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_forward_mode_and_hessian_at_the_documented_vjp_order(name):
  f = FUNCTIONS[name]
  with config.enable_x64(True):
    x = np.random.default_rng(0).standard_normal(6)
    assert_close(jax.jit(jax.jacfwd(_roundtrip(f, x, vjp_order=1).call))(x),
                 jax.jacfwd(f)(x), tol=1e-10)
    assert_close(jax.jit(_hessian(_roundtrip(f, x, vjp_order=2).call))(x),
                 _hessian(f)(x), tol=1e-10)


def test_a_vjp_of_bit_manipulation_asks_for_one_more_vjp_order():
  def f(x):
    return jnp.ldexp(x, 3)
  with config.enable_x64(True):
    x = np.random.default_rng(0).standard_normal(6)
    try:  # (whether ldexp's VJP is bit manipulation depends on the release)
      got = jax.jacfwd(_roundtrip(f, x, vjp_order=1).call)(x)
    except NotImplementedError as e:
      assert "Serialize it with one more vjp_order" in str(e), str(e)
    else:
      assert_close(got, jax.jacfwd(f)(x))
    assert_close(jax.jacfwd(_roundtrip(f, x, vjp_order=2).call)(x),
                 jax.jacfwd(f)(x))


def test_without_a_vjp_forward_mode_says_how_to_export_it():
  def f(x):  # JAX cannot serialize its VJP (a while_loop)
    return jax.lax.while_loop(lambda c: c[1] < 5,
                              lambda c: (jnp.sin(c[0]) + c[0], c[1] + 1),
                              (x, 0))[0]
  x = np.ones(3, np.float32)
  with pytest.raises(ValueError, match="Reverse-mode differentiation"):
    _roundtrip(f, x, vjp_order=1)
  with pytest.raises(ValueError) as e:
    jax.jacfwd(_roundtrip(f, x, vjp_order=0).call)(x)
  assert "jax.jvp(f, (x,), (t,))" in str(e.value)
  # ... and that export works.
  g = lambda x, t: jax.jvp(f, (x,), (t,))[1]  # noqa: E731
  t = np.arange(3, dtype=np.float32)
  jvp_artifact = _roundtrip(g, x, t, vjp_order=0)
  assert_close(jvp_artifact.call(x, t), g(x, t))
  xs, ts = np.stack([x, 2 * x]), np.stack([t, t])
  assert_close(jax.vmap(jvp_artifact.call)(xs, ts), jax.vmap(g)(xs, ts))
