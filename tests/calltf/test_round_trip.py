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
"""The round trip `call_tf(jax2tf.convert(f))` takes JAX's module.

A converted function is JAX's StableHLO for the platforms it was serialized
for (by default the machine's): `call_tf` calls that module as `jax.export`
does, with the VJPs `jax.export` makes (every order), and never asks
TensorFlow to run or compile it for a platform it was not serialized for.
Checked against the same function in `jnp`, for every transformation,
eagerly and under `jit`; on the CPU with the module's platforms as
`convert`'s defaults give them and explicitly, refused by name where the
module has no branch for the CPU, and exported for the TPU and CUDA
(modules serialized for that platform only) on this CPU-only machine.
"""

from __future__ import annotations

import jax
from jax import export
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
from jax.experimental.jax2tf.call_tf_lib.embed import restored
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close

call_tf = jax2tf.call_tf
X = np.linspace(.1, 1., 6, dtype=np.float32)
XS = np.stack([X, 2. * X, -X])


def f(x):
  return jnp.sum(jnp.sin(x) * jnp.cos(x[::-1]) + x ** 3)


TRANSFORMS = dict(
    call=(lambda g: g, X), vmap=(jax.vmap, XS), grad=(jax.grad, X),
    jacrev=(jax.jacrev, X), jacfwd=(jax.jacfwd, X),
    hessian=(jax.hessian, X),
    vmap_grad=(lambda g: jax.vmap(jax.grad(g)), XS),
    vmap_hessian=(lambda g: jax.vmap(jax.hessian(g)), XS))


@pytest.mark.parametrize("platforms", [None, ("cpu", "tpu")],
                         ids=["default", "cpu_tpu"])
def test_every_transformation_is_jaxs(platforms):
  g = call_tf(jax2tf.convert(f, native_serialization_platforms=platforms))
  for name, (transform, arg) in TRANSFORMS.items():
    expected = transform(f)(arg)
    assert_close(transform(g)(arg), expected, tol=1e-4), name
    assert_close(jax.jit(transform(g))(arg), expected, tol=1e-4), name


@pytest.mark.parametrize("wrap", [
    lambda converted: converted,
    lambda converted: tf.function(converted, autograph=False)],
                         ids=["converted", "tf_function"])
def test_a_module_without_the_cpu_is_refused_by_name_on_the_cpu(wrap):
  g = call_tf(wrap(jax2tf.convert(f, native_serialization_platforms=("tpu",))))
  for name, (transform, arg) in TRANSFORMS.items():
    for wrapped in (transform(g), jax.jit(transform(g))):
      with pytest.raises(ValueError, match=(
          r"was exported for platforms '\('tpu',\)' but it is used on "
          r"'\('cpu',\)'")):
        wrapped(arg)


def test_the_same_module_for_another_platform_is_another_module():
  """The module's bytes do not say its platform: a module serialized for
  the CPU and the same module for the TPU are not one cache entry."""
  on_cpu = call_tf(jax2tf.convert(f, native_serialization_platforms=("cpu",)))
  assert_close(on_cpu(X), f(X), tol=1e-5)
  on_tpu = call_tf(jax2tf.convert(f, native_serialization_platforms=("tpu",)))
  with pytest.raises(ValueError, match="exported for platforms"):
    on_tpu(X)


@pytest.mark.parametrize("platform", ["tpu", "cuda"])
def test_exports_for_the_platform_the_module_was_serialized_for(platform):
  g = call_tf(jax2tf.convert(f, native_serialization_platforms=(platform,)))
  for name, (transform, arg) in TRANSFORMS.items():
    exp = export.export(jax.jit(transform(g)), platforms=(platform,))(arg)
    assert exp.platforms == (platform,), name
    text = exp.mlir_module()
    assert "XlaCallModule" not in text and "tf." not in text, name
  with pytest.raises(ValueError, match="exported for platforms"):
    export.export(jax.jit(g), platforms=("cpu", platform))(X)


def test_what_tensorflow_runs_is_what_call_tf_runs():
  """A converted Python function is traced at every call, as TensorFlow
  runs it at every call: call_tf computes what TensorFlow computes, before
  and after the Python state it reads changes (JAX's own trace cache
  decides whether the conversion reads it again)."""
  scale = [1.]
  converted = jax2tf.convert(lambda x: f(x) * scale[0])
  g = call_tf(converted)
  for new_scale in (1., 3.):
    scale[0] = new_scale
    assert_close(g(X), converted(tf.constant(X)).numpy(), tol=1e-5)
  converted_again = jax2tf.convert(lambda x: f(x) * scale[0])
  assert_close(call_tf(converted_again)(X), 3. * f(X), tol=1e-5)
  assert_close(jax.grad(call_tf(converted_again))(X), 3. * jax.grad(f)(X),
               tol=1e-4)


def test_a_tf_function_traced_before_has_its_gradient():
  """A tf.function of a converted function that TensorFlow traced before
  (so its conversion is cached) still has jax.export's VJPs."""
  f_tf = tf.function(jax2tf.convert(f), autograph=False)
  f_tf(tf.constant(X))
  g = call_tf(f_tf)
  found = restored.find_embeddable_module(
      f_tf, jax.tree_util.tree_structure((0,)),
      (tf.TensorSpec(X.shape, tf.float32),))
  assert found is not None and found.live_vjp is not None
  assert_close(jax.jit(jax.hessian(g))(X), jax.hessian(f)(X), tol=1e-4)


def test_among_other_ops_a_module_without_the_cpu_is_refused_by_name():
  converted = jax2tf.convert(f, native_serialization_platforms=("tpu",))
  g = call_tf(lambda x: converted(x) * 2.)
  with pytest.raises(ValueError, match=(
      r"holds the module of a jax2tf.convert function .* serialized for "
      r"\['TPU'\] only.*include 'cpu'")):
    jax.jit(g)(X)
  with pytest.raises(call_tf_errors.CallTfPlatformError, match=(
      r"serialized for \['TPU'\] only")):
    export.export(jax.jit(g), platforms=("tpu",))(X)
