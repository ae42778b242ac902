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
"""The batch normalization ops: XLA's bits, batched, differentiated.

``batch_norm_inference``, ``batch_norm_training`` and ``batch_norm_grad``
(tf2xla lowers TensorFlow's ``FusedBatchNorm`` and its gradient to them),
run by XLA (tests/stablehlo/xla.py) and by the interpreter under ``jit``,
compared bit for bit under the conformance run's rules
(``conformance.compare``: in ``f16``, ``bf16`` and the float8 types a
subnormal matches the zero of its sign, which XLA:CPU gives on some
instruction sets; XLA computes the ops by its own expansion, which the
rules follow; run op by op, eagerly, XLA's reductions round otherwise);
``jax.vmap`` against a loop; ``jax.jvp`` against JAX's derivative of the
specification's decomposition, written here with ``lax`` (not XLA's
expansion: the same function, rounded otherwise, so to a tolerance).
"""

from __future__ import annotations

import jax
from jax import lax
from jax._src import config
from jax._src.export import stablehlo_to_jax as s2j
import ml_dtypes
import numpy as np
import pytest

from . import conformance
from .xla import xla_function

_rng = np.random.default_rng(1)
_EPSILON = 0.001


def _module(ty: str, shape: tuple[int, ...], index: int) -> str:
  """The three ops on the same operands, one module."""
  x = "tensor<" + "x".join(map(str, shape)) + f"x{ty}>"
  f = f"tensor<{shape[index]}x{ty}>"
  attrs = f"{{epsilon = {_EPSILON} : f32, feature_index = {index} : i64}}"
  return f"""module {{
  func.func @main(%x: {x}, %s: {f}, %o: {f}, %m: {f}, %v: {f}, %g: {x}) -> ({x}, {x}, {f}, {f}, {x}, {f}, {f}) {{
    %0 = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v) {attrs} : ({x}, {f}, {f}, {f}, {f}) -> {x}
    %1:3 = "stablehlo.batch_norm_training"(%x, %s, %o) {attrs} : ({x}, {f}, {f}) -> ({x}, {f}, {f})
    %2:3 = "stablehlo.batch_norm_grad"(%x, %s, %m, %v, %g) {attrs} : ({x}, {f}, {f}, {f}, {x}) -> ({x}, {f}, {f})
    return %0, %1#0, %1#1, %1#2, %2#0, %2#1, %2#2 : {x}, {x}, {f}, {f}, {x}, {f}, {f}
  }}
}}"""


def _args(shape: tuple[int, ...], index: int, dtype: np.dtype,
          special: bool = False) -> list[np.ndarray]:
  n = shape[index]
  x = _rng.standard_normal(shape) * 3 + 1
  variance = np.abs(_rng.standard_normal(n))
  if special:  # a zero variance (epsilon alone), a constant feature, -0
    variance[0] = 0.
    x[(slice(None),) * index + (0,)] = -0.
  args = [x, _rng.standard_normal(n), _rng.standard_normal(n),
          _rng.standard_normal(n), variance, _rng.standard_normal(shape)]
  return [np.asarray(a, dtype) for a in args]


_TYPES = [("f32", np.float32), ("f64", np.float64), ("f16", np.float16),
          ("bf16", ml_dtypes.bfloat16), ("f8E4M3FN", ml_dtypes.float8_e4m3fn),
          ("f8E5M2", ml_dtypes.float8_e5m2)]
_SHAPES = [((4, 3, 5), 1), ((7, 2), 0), ((2, 3, 2, 5), 3)]


@pytest.mark.parametrize("ty,dtype", _TYPES)
@pytest.mark.parametrize("shape,index", _SHAPES)
def test_batch_norm_ops_give_xlas_bits(ty, dtype, shape, index):
  text = _module(ty, shape, index)
  with config.enable_x64(ty == "f64"):
    prog = s2j.parse(text)
    assert not prog.unsupported, prog.reasons
    for special in (False, True):
      args = _args(shape, index, dtype, special)
      expected = xla_function(text, prog)(*args)
      got = jax.jit(prog)(*args)
      for i, (g, e) in enumerate(zip(got, expected)):
        check = conformance.compare(g, e, 0)
        assert check == conformance.EXACT, f"result {i}, {special=}: {check}"


@pytest.mark.parametrize("in_axes", [0, (1, None, None, None, None, 0),
                                     (None, 0, 0, 0, 0, None)])
def test_batch_norm_ops_batch_as_a_loop(in_axes):
  shape, index = (4, 3, 5), 1
  prog = s2j.parse(_module("f32", shape, index))
  examples = [_args(shape, index, np.float32) for _ in range(3)]
  axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * 6
  batched = [np.stack([e[i] for e in examples], axis=a) if a is not None
             else examples[0][i] for i, a in enumerate(axes)]
  got = jax.jit(jax.vmap(prog, in_axes=in_axes))(*batched)
  loop = [jax.jit(prog)(*[np.take(b, k, axis=a) if a is not None else b
                          for b, a in zip(batched, axes)]) for k in range(3)]
  for i, g in enumerate(got):
    np.testing.assert_allclose(np.asarray(g),
                               np.stack([np.asarray(o[i]) for o in loop]),
                               rtol=2e-6, atol=2e-6, err_msg=f"result {i}")


def _spec(x, scale, offset, mean, variance, grad_out, *, index: int):
  """The specification's decompositions of the three ops, as lax."""
  dims = tuple(d for d in range(x.ndim) if d != index)
  spread = lambda v: lax.broadcast_in_dim(v, x.shape, (index,))
  count = np.prod([x.shape[d] for d in dims]).astype(x.dtype)
  mean_of = lambda y: lax.reduce_sum(y, dims) / count
  eps = np.float32(_EPSILON).astype(x.dtype)  # an f32 attribute

  def inference(mean, variance):
    normalized = (x - spread(mean)) / lax.sqrt(spread(variance) + eps)
    return spread(scale) * normalized + spread(offset)

  batch_mean = mean_of(x)
  batch_var = mean_of((x - spread(batch_mean)) ** 2)
  stddev = lax.sqrt(spread(variance) + eps)
  centered = x - spread(mean)
  n = count
  i6 = (grad_out * n - spread(lax.reduce_sum(grad_out, dims))
        - spread(lax.reduce_sum(grad_out * centered, dims)) * centered
        / (spread(variance) + eps))
  grad_x = spread(scale) / stddev / n * i6
  grad_scale = lax.reduce_sum(grad_out * centered / stddev, dims)
  return (inference(mean, variance), inference(batch_mean, batch_var),
          batch_mean, batch_var, grad_x, grad_scale,
          lax.reduce_sum(grad_out, dims))


@pytest.mark.parametrize("shape,index", _SHAPES)
def test_batch_norm_ops_differentiate_as_the_specification(shape, index):
  with config.enable_x64(True):
    prog = s2j.parse(_module("f64", shape, index))
    primals = _args(shape, index, np.float64)
    tangents = _args(shape, index, np.float64)
    spec = lambda *a: _spec(*a, index=index)
    out, jvp = jax.jit(lambda p, t: jax.jvp(prog, p, t))(primals, tangents)
    want_out, want_jvp = jax.jvp(spec, primals, tangents)
    for i in range(7):
      np.testing.assert_allclose(out[i], want_out[i], rtol=1e-12, atol=1e-12)
      np.testing.assert_allclose(jvp[i], want_jvp[i], rtol=1e-10, atol=1e-10,
                                 err_msg=f"tangent of result {i}")
