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
"""`Exported.call`'s transformations take the branch of the platform JAX
lowers for, chosen when it lowers, as `Exported.call` itself does: a
module exported for a TPU batches and differentiates in an export for the
TPU on this CPU-only machine, a module exported for several platforms
takes each platform's branch, and a platform the module was not exported
for is refused by name, also where only a derivative's tangents or
cotangents are kept (`jax.jacfwd`, `jax.grad` of a transposed program).
"""

from __future__ import annotations

from jax import export
from jax import lax
from jax._src.export.transforms import platforms
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from .util import assert_close

X = np.linspace(.1, 1., 6, dtype=np.float32)
XS = np.stack([X, -X, 2. * X])


def f(x):
  return jnp.sum(jnp.sin(x) * x ** 2)


def per_platform(x):
  return lax.platform_dependent(x, cpu=lambda x: x * 2., tpu=lambda x: x * 3.,
                                cuda=lambda x: x * 5.)


def _artifact(fun, platforms_, arg=X):
  return export.deserialize(export.export(
      jax.jit(fun), platforms=platforms_)(arg).serialize(vjp_order=2))


TRANSFORMS = dict(vmap=(jax.vmap, XS), jacfwd=(jax.jacfwd, X),
                  hessian=(jax.hessian, X),
                  vmap_jacfwd=(lambda g: jax.vmap(jax.jacfwd(g)), XS))


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_a_tpu_module_is_transformed_in_an_export_for_the_tpu(name):
  transform, arg = TRANSFORMS[name]
  exp = _artifact(f, ("tpu",))
  lowered = export.export(jax.jit(transform(exp.call)), platforms=("tpu",))(
      arg)
  assert lowered.platforms == ("tpu",)
  # For the CPU it is refused by name (the function's, or its VJP's whose
  # transpose forward mode is): lowered for it, and run here.
  message = (r"Function '(f|fun_vjp_jax)' was exported for platforms "
             r"'\('tpu',\)' but it is used on '\('cpu',\)'")
  with pytest.raises(ValueError, match=message):
    export.export(jax.jit(transform(exp.call)), platforms=("cpu",))(arg)
  with pytest.raises(ValueError, match=message):
    jax.jit(transform(exp.call))(arg)
  with pytest.raises(ValueError, match=message):
    transform(exp.call)(arg)


def test_the_branch_of_each_platform_lowered_for():
  exp = _artifact(per_platform, ("cpu", "tpu", "cuda"))
  batched = jax.jit(jax.vmap(exp.call))
  assert_close(batched(XS), 2. * XS)
  for platform, factor in (("tpu", 3.), ("cuda", 5.)):
    text = export.export(batched, platforms=(platform,))(XS).mlir_module()
    assert f"{factor:e}" in text and f"{2.:e}" not in text, platform
  both = export.export(batched, platforms=("cpu", "tpu"))(XS)
  assert_close(both.call(XS), 2. * XS)


@pytest.mark.parametrize("keep", ["tangents", "cotangents"])
def test_a_refused_branch_stays_refused_in_a_derivative(keep):
  """Its tangents and cotangents are refusals too, never zeros: a program
  that keeps only them (jacfwd, grad) is refused as the call is."""
  refuse = platforms.refusal(platforms.message_template(
      f"refused on {platforms.LOWERED}"), [jax.ShapeDtypeStruct((), np.float32)])

  def g(x):
    return platforms.select({"tpu": lambda x: (jnp.sum(x * x),)},
                            refuse)(x)[0]
  derivative = jax.jacfwd(g) if keep == "tangents" else jax.grad(g)
  with pytest.raises(ValueError, match=r"refused on \('cpu',\)"):
    jax.jit(derivative)(X)
  with pytest.raises(ValueError, match=r"refused on \('cpu',\)"):
    jax.jit(jax.vmap(derivative))(XS)
  tpu = export.export(jax.jit(derivative), platforms=("tpu",))(X)
  assert "exported_platform_refused" not in tpu.mlir_module()
