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
"""A module read once, kept as bytes, compiled again without MLIR.

``read``, ``dumps`` and ``loads`` (what a persistent cache keeps), and
``parse`` of the copy: the same program as ``parse`` of the text, however
the copy travelled; bytes that are not a copy are refused, whatever they
would build. No TensorFlow.
"""

from __future__ import annotations

import os
import pickle

import jax
from jax._src.export import stablehlo_to_jax as s2j
import ml_dtypes
import numpy as np
import pytest

from ..export.util import assert_close

# Constants of several dtypes (bfloat16 too), a reduction's region, a loop,
# a call of a private function.
_MODULE = """
module {
  func.func private @helper(%a: tensor<3xf32>) -> tensor<3xf32> {
    %c = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    %r = stablehlo.multiply %a, %c : tensor<3xf32>
    return %r : tensor<3xf32>
  }
  func.func public @main(%x: tensor<3xf32>, %n: tensor<i32>) -> (tensor<f32>, tensor<3xf32>) {
    %zero = stablehlo.constant dense<0.0> : tensor<f32>
    %half = stablehlo.constant dense<0.5> : tensor<bf16>
    %h = stablehlo.convert %half : (tensor<bf16>) -> tensor<f32>
    %y = func.call @helper(%x) : (tensor<3xf32>) -> tensor<3xf32>
    %s = stablehlo.reduce(%y init: %zero) across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
      reducer(%a: tensor<f32>, %b: tensor<f32>) {
        %t = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %t : tensor<f32>
      }
    %one = stablehlo.constant dense<1> : tensor<i32>
    %i0 = stablehlo.constant dense<0> : tensor<i32>
    %w:2 = stablehlo.while(%i = %i0, %v = %x) : tensor<i32>, tensor<3xf32>
      cond {
        %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %p : tensor<i1>
      } do {
        %i1 = stablehlo.add %i, %one : tensor<i32>
        %hb = stablehlo.broadcast_in_dim %h, dims = [] : (tensor<f32>) -> tensor<3xf32>
        %v1 = stablehlo.add %v, %hb : tensor<3xf32>
        stablehlo.return %i1, %v1 : tensor<i32>, tensor<3xf32>
      }
    %out = stablehlo.multiply %s, %h : tensor<f32>
    return %out, %w#1 : tensor<f32>, tensor<3xf32>
  }
}
"""


def test_a_copy_through_bytes_computes_what_the_text_does():
  copy = s2j.loads(s2j.dumps(s2j.read(_MODULE)))
  from_text = s2j.parse(_MODULE)
  from_copy = s2j.parse(copy)
  assert from_copy.in_avals == from_text.in_avals
  assert from_copy.out_avals == from_text.out_avals
  x = np.asarray([0.25, -1., 2.], np.float32)
  n = np.int32(3)
  for got, want in zip(from_copy(x, n), from_text(x, n)):
    assert_close(got, want, tol=0.)
  jitted = jax.jit(lambda *a: from_copy(*a))(x, n)
  assert_close(jitted[1], x + 1.5, tol=1e-6)
  weights = np.asarray([1., 2., 3.], np.float32)
  assert_close(jitted[0], np.sum(x * weights) * 0.5, tol=1e-6)


def test_the_copy_keeps_constants_of_every_dtype():
  copy = s2j.loads(s2j.dumps(s2j.read(_MODULE)))
  values = [op.attrs["value"] for f in copy.funcs.values()
            for op in f.body.ops if op.name == "stablehlo.constant"]
  dtypes = {np.asarray(v).dtype for v in values}
  assert np.dtype(ml_dtypes.bfloat16) in dtypes
  assert np.dtype(np.int32) in dtypes and np.dtype(np.float32) in dtypes


_COMPLEX_CONSTANTS = """
func.func @main() -> (tensor<2xcomplex<f32>>, tensor<complex<f64>>) {
  %0 = stablehlo.constant dense<[(1.0, 2.0), (3.0, -4.0)]> : tensor<2xcomplex<f32>>
  %1 = stablehlo.constant dense<(1.5, -0.0)> : tensor<complex<f64>>
  return %0, %1 : tensor<2xcomplex<f32>>, tensor<complex<f64>>
}
"""


def test_a_complex_constant_is_read_from_its_text():
  """Complex dense elements, which MLIR's bindings cannot give (newer ones
  raise TypeError, jaxlib 0.6's abort: tests/calltf/test_smoke.py), are
  read from the op's text: values, dtypes and signed zeros, through bytes."""
  copy = s2j.loads(s2j.dumps(s2j.read(_COMPLEX_CONSTANTS)))
  a, b = [op.attrs["value"] for op in copy.funcs["main"].body.ops]
  np.testing.assert_array_equal(a, np.asarray([1 + 2j, 3 - 4j], np.complex64))
  assert a.dtype == np.complex64 and b.dtype == np.complex128
  assert b == 1.5 and np.signbit(b.imag)


class _Evil:
  def __reduce__(self):
    return (os.system, ("true",))


@pytest.mark.parametrize("data", [
    pickle.dumps(({"main": _Evil()}, "main", False)),
    pickle.dumps((os.getcwd, ())),
    pickle.dumps(({}, "main", False)),  # no entry function
    b"not a pickle",
    b"",
])
def test_bytes_that_are_not_a_copy_are_refused(data):
  with pytest.raises(s2j.UnreadableCopy):
    s2j.loads(data)


def test_the_source_digest_names_the_reader_and_the_rest():
  reader = s2j.source_digest()
  everything = s2j.source_digest(everything=True)
  assert len(reader) == len(everything) == 64 and reader != everything
