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
"""The complex audit through `Exported.call` (with TensorFlow installed and
in the run without it): a deserialized artifact's derivatives are JAX's."""

from __future__ import annotations

from jax import export
import jax
import pytest

from . import complex_audit


@pytest.mark.parametrize("kind", sorted(complex_audit.JNP))
def test_exported_call_derivatives_are_jaxs(kind):
  fun = complex_audit.JNP[kind]
  arg = complex_audit.CHECKS[kind][0].arg
  exported = export.deserialize(
      export.export(jax.jit(fun))(arg).serialize(vjp_order=2))
  assert complex_audit.audit(kind, exported.call) == []


def test_the_audit_catches_a_conjugated_gradient():
  """A VJP in TensorFlow's convention (the conjugate of JAX's) fails it."""
  @jax.custom_vjp
  def conjugated(z):
    return complex_audit.c2r(z)

  def fwd(z):
    return complex_audit.c2r(z), z

  def bwd(z, ct):
    return (jax.numpy.conj(jax.vjp(complex_audit.c2r, z)[1](ct)[0]),)
  conjugated.defvjp(fwd, bwd)
  failures = complex_audit.audit("c2r", conjugated, wraps=("eager",))
  wrong = [f.split(":")[0] for f in failures if "!=" in f]
  assert wrong == ["c2r grad eager", "c2r vmap(grad) eager", "c2r vjp eager"]
