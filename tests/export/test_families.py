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
"""Real exported programs (linear algebra, sorting, top-k, special
functions, sharding constraints) under every transformation, no
TensorFlow.

Each family of :mod:`.families` is exported (for the CPU, and for the CPU
and a TPU: a module that keeps CHLO's ops and chooses between platforms),
serialized with ``vjp_order=1``, deserialized, and transformed: ``vmap``,
``jit(vmap)``, nested ``vmap``, ``jacrev``, ``jacfwd`` and per-example
gradients equal the same transformations of the original function
(``vmap`` on batches of 0, 1 and 3). The engine also differentiates each module itself
(its rules' derivatives, :mod:`jax._src.export.stablehlo_to_jax`): equal to
JAX's derivative of the function.
"""

from __future__ import annotations

import jax
from jax import export
from jax._src import config
from jax._src.export import stablehlo_to_jax
from jax._src.export.transforms import exported as exported_api
import numpy as np
import pytest

from .families import FAMILIES
from .families import TRANSFORMS
from .util import assert_close

pytestmark = pytest.mark.skipif(
    bool(exported_api.pieces_missing()),
    reason=f"this jax's jax.export lacks {exported_api.pieces_missing()}")

_PLATFORMS = {"cpu": ("cpu",), "cpu and tpu": ("cpu", "tpu")}
# Every family is expressed on the default release; older releases' jax
# writes older LAPACK targets (descriptors as operands), which are refused
# by name.
_DEFAULT_RELEASE = jax.__version__.startswith("0.12")


def _roundtrip(fun, x, platforms):
  exported = export.export(jax.jit(fun), platforms=platforms)(x)
  return export.deserialize(exported.serialize(vjp_order=1))


def _batch(make, rng, shape):
  """A batch of `shape` of arguments."""
  one = make(rng)
  if not np.prod(shape):
    return np.zeros((*shape, *one.shape))
  return np.stack([make(rng) for _ in range(int(np.prod(shape)))]).reshape(
      *shape, *one.shape)


@pytest.mark.parametrize("platforms", list(_PLATFORMS))
@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_artifact_transforms_as_the_function(family, platforms):
  fam = FAMILIES[family]
  if platforms != "cpu" and not fam.multi_platform:
    pytest.skip("tested for the CPU only (the other families' modules for "
                "several platforms are tested)")
  rng = np.random.default_rng(0)
  refused = []
  with config.enable_x64(True):
    x = fam.make(rng)
    try:
      ex = _roundtrip(fam.fun, x, _PLATFORMS[platforms])
    except NotImplementedError as e:  # (JAX cannot serialize its VJP)
      if _DEFAULT_RELEASE:
        raise
      pytest.skip(f"this JAX has no VJP of it: {str(e)[:200]}")
    for name, (transform, shapes) in TRANSFORMS.items():
      for shape in shapes:
        arg = x if not shape else _batch(fam.make, rng, shape)
        try:
          want = transform(fam.fun)(arg)
        except NotImplementedError:
          continue  # (this JAX has no such derivative of the function)
        try:
          got = transform(ex.call)(arg)
        except NotImplementedError as e:
          if _DEFAULT_RELEASE:
            raise AssertionError(f"{family}, {name}, batch {shape}") from e
          refused.append(f"{name}: {str(e)[:200]}")  # (older targets)
          continue
        try:
          assert_close(got, want, tol=1e-9)
        except Exception as e:
          raise AssertionError(f"{family}, {name}, batch {shape}") from e
  if refused:
    pytest.skip("refused by this release's engine, by name: "
                + "; ".join(refused))


@pytest.mark.skipif(not _DEFAULT_RELEASE,
                    reason="older releases write older LAPACK targets")
@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_engine_differentiates_the_module_as_jax_the_function(family):
  """The engine's own derivative of each module (its rules' derivatives:
  LAPACK calls as the lax.linalg operations that wrote them)."""
  fam = FAMILIES[family]
  rng = np.random.default_rng(1)
  with config.enable_x64(True):
    x, t = fam.make(rng), fam.make(rng)
    exported = export.export(jax.jit(fam.fun))(x)
    program = stablehlo_to_jax.parse(exported.mlir_module())
    assert not program.unsupported, program.reasons

    def g(x):
      return jax.tree.unflatten(exported.out_tree, program(x))
    assert_close(jax.jvp(g, (x,), (t,)), jax.jvp(fam.fun, (x,), (t,)),
                 tol=1e-9)
    _, vjp_g = jax.vjp(g, x)
    out, vjp_f = jax.vjp(fam.fun, x)
    ct = jax.tree.map(lambda o: np.cos(np.arange(o.size)).reshape(
        o.shape).astype(o.dtype), out)
    assert_close(vjp_g(ct), vjp_f(ct), tol=1e-9)
