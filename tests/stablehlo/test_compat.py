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
"""The JAX internals the interpreter reads are where it reads them."""

from __future__ import annotations

import sys

import jax
from jax._src.export.stablehlo_to_jax import compat
import jax.numpy as jnp
import pytest


def test_every_internal_the_interpreter_reads_is_there():
  assert compat.check() == []


def test_a_missing_internal_is_named(monkeypatch):
  from jax._src.interpreters import mlir  # pylint: disable=g-import-not-at-top
  monkeypatch.delattr(mlir, "refine_polymorphic_shapes")
  assert "jax._src.interpreters.mlir.refine_polymorphic_shapes" in (
      compat.check())


def test_the_changed_internal_error_names_jax_only():
  e = compat.internals_changed("jax._src.util.register_cache",
                               "its caches could not be cleared")
  assert isinstance(e, compat.InternalsChangedError)
  assert "jax._src.util.register_cache" in str(e)
  assert "TensorFlow" not in str(e)


def test_transformations_of_a_staging_trace_only():
  seen = []

  def f(x):
    seen.append(compat.transforms_a_staging_trace())
    return jnp.sum(jnp.sin(x))
  x = jnp.ones(2)
  f(x)
  jax.vmap(f)(x[None])
  jax.grad(f)(x)
  jax.vmap(jax.grad(f))(x[None])
  jax.jit(f)(x)  # (staging, with nothing between)
  assert seen == [False] * 5
  seen.clear()
  jax.jit(jax.vmap(jax.grad(f)))(x[None])
  jax.make_jaxpr(jax.jvp, static_argnums=0)(f, (x,), (x,))
  assert seen == [True] * 2


@pytest.mark.skipif("tensorflow" in sys.modules,
                    reason="another test of this process imported it")
def test_the_interpreter_imports_no_tensorflow():
  import jax._src.export.transforms.rules  # noqa: F401  # pylint: disable=g-import-not-at-top,unused-import
  assert "tensorflow" not in sys.modules
  assert not any(m.startswith("jax.experimental.jax2tf") for m in sys.modules)
