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
"""The GPU libraries' custom calls (``._gpu_calls``) on the CPU.

JAX lowers a function for CUDA and ROCm on any machine: each function here
is exported for a GPU (its module holds cuSOLVER's, hipSOLVER's, cuSPARSE's
or the PRNG's calls), read by the engine and run on the CPU, where it must
equal the same function run natively on the CPU (to tolerance; a
decomposition free up to signs or phases by invariants), ``jax.vmap`` must
equal a loop and ``jax.jvp`` the native function's. The shapes JAX's test
data does not hold are here: wide and tall matrices (``gesvd`` of the
transpose), reduced vectors (``gesvdj`` without them, more than 32 rows),
the upper triangle, batches, out-of-range pivots. On the GPU platform
itself the engine writes the module's own call again; elsewhere lowering
it is refused by name.
"""

from __future__ import annotations

from collections.abc import Callable
import re

import jax
from jax import lax
from jax._src import config
from jax._src.export import stablehlo_to_jax
import jax.numpy as jnp
import numpy as np
import pytest

# The lowerings checked are the default release's; older releases' JAX
# writes older GPU targets for some (descriptors as operands), which the
# engine refuses by name.
pytestmark = [
    pytest.mark.filterwarnings("ignore"),
    pytest.mark.skipif(not jax.__version__.startswith("0.12"),
                       reason="the GPU lowerings of the default release")]
_PLATFORMS = ("cuda", "rocm")
# (None on releases without it, whose tests are skipped.)
_QR = getattr(getattr(lax.linalg, "SvdAlgorithm", None), "QR", None)


def _export(f: Callable, args, platform: str) -> jax.export.Exported:
  # (jax.export writes ROCm's gtsv2 only where its check is disabled: it
  # keeps no compatibility promise for it.)
  disabled = [jax.export.DisabledSafetyCheck.custom_call(
      "hipsparse_gtsv2_ffi")]
  return jax.export.export(jax.jit(f), platforms=[platform],
                           disabled_checks=disabled)(*args)


def _program(f: Callable, args, platform: str) -> stablehlo_to_jax.Program:
  program = stablehlo_to_jax.parse(_export(f, args, platform).mlir_module())
  assert not program.unsupported, program.reasons
  return program


def _targets(f: Callable, args, platform: str) -> str:
  return _export(f, args, platform).mlir_module()


def _close(got, want, tol=1e-9):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape and got.dtype == want.dtype, (
      got.shape, got.dtype, want.shape, want.dtype)
  if not np.issubdtype(want.dtype, np.number):  # (float0: no tangent)
    return
  scale = max(float(np.max(np.abs(want), initial=0.0)), 1.0)
  np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale)


def _rng_matrix(shape, dtype=np.float64, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.standard_normal(shape)
  if np.issubdtype(dtype, np.complexfloating):
    x = x + 1j * rng.standard_normal(shape)
  return x.astype(dtype)


def _spd(shape, dtype=np.float64):
  x = _rng_matrix(shape, dtype)
  n = shape[-1]
  return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def _check(f: Callable, args, platform: str, *, smooth: Callable | None = None,
           tol: float = 1e-9, jvp: bool = True):
  """``f`` exported for `platform`, run by the engine here: its values, its
  batch and its derivative, against ``f`` here (``smooth``: the
  gauge-free functions of its results compared)."""
  smooth = smooth or (lambda *outs: outs)
  program = _program(f, args, platform)
  # (The engine's program under jax.jit, compiled once for the value, each
  # element of the loop and each side of a difference, all of the same
  # shapes: eagerly each op of the module compiled on its own.)
  run = jax.jit(lambda *a: tuple(smooth(*program(*a))))
  native = lambda *a: tuple(smooth(*jax.tree.leaves(f(*a))))  # noqa: E731
  for g, w in zip(run(*args), native(*args), strict=True):
    _close(g, w, tol)
  batch = [np.stack([a, (a * 1.5).astype(a.dtype)]) for a in args]
  got = jax.jit(jax.vmap(run))(*batch)
  for k in range(2):
    for g, w in zip(got, run(*[b[k] for b in batch]), strict=True):
      _close(np.asarray(g)[k], w, tol)
  if jvp:
    tangents = [_rng_matrix(a.shape, a.dtype, seed=1) for a in args]
    try:
      _, want = jax.jvp(native, tuple(args), tuple(tangents))
    except NotImplementedError:
      # JAX has none (the full vectors of a non-square matrix): the engine
      # refuses, or (a GPU's full vectors, whose leading ones are the
      # reduced SVD's) its derivative of the gauge-free results is a
      # central difference's.
      h = 1e-6
      want = [(np.asarray(p) - np.asarray(m)) / (2 * h) for p, m in zip(
          run(*[a + h * t for a, t in zip(args, tangents)]),
          run(*[a - h * t for a, t in zip(args, tangents)]))]
      try:
        _, got = _jitted_jvp(run, args, tangents)
      except NotImplementedError as e:
        assert "Differentiation of" in str(e)
        return
      for g, w in zip(got, want, strict=True):
        _close(g, w, 1e-5)
      return
    _, got = _jitted_jvp(run, args, tangents)
    for g, w in zip(got, want, strict=True):
      _close(g, w, 1e-7)


def _jitted_jvp(fun: Callable, args, tangents):
  """``jax.jvp`` of `fun` under ``jax.jit`` (one compile of the derivative,
  where eagerly each op of it compiled on its own)."""
  return jax.jit(lambda p, t: jax.jvp(fun, p, t))(tuple(args),
                                                  tuple(tangents))


def _svd_smooth(u, s, vt):
  k = s.shape[-1]
  return s, (u[..., :k] * s[..., None, :]) @ vt[..., :k, :]


@pytest.fixture(autouse=True)
def _x64():
  with config.enable_x64(True):
    yield


@pytest.mark.parametrize("platform", _PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_cholesky(platform, dtype):
  _check(jnp.linalg.cholesky, [_spd((2, 4, 4), dtype)], platform)


@pytest.mark.parametrize("platform", _PLATFORMS)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 4, 4)])
def test_lu_and_its_permutation(platform, shape):
  _check(lax.linalg.lu, [_rng_matrix(shape)], platform)


@pytest.mark.parametrize("platform", _PLATFORMS)
@pytest.mark.parametrize("shape,mode", [((5, 3), "reduced"), ((3, 5),
                                                              "reduced"),
                                        ((2, 4, 4), "complete")])
def test_qr(platform, shape, mode):
  _check(lambda x: jnp.linalg.qr(x, mode=mode), [_rng_matrix(shape)],
         platform)


@pytest.mark.parametrize("platform", _PLATFORMS)
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eigh(platform, lower, dtype):
  f = lambda x: lax.linalg.eigh(x, lower=lower)  # noqa: E731
  _check(f, [_rng_matrix((2, 4, 4), dtype)], platform)


@pytest.mark.parametrize("platform", _PLATFORMS)
@pytest.mark.parametrize("algorithm", [None, _QR])
@pytest.mark.parametrize("shape,full", [((4, 4), True), ((3, 5), True),
                                        ((5, 3), True), ((3, 5), False),
                                        ((5, 3), False)])
def test_svd(platform, algorithm, shape, full):
  """``gesvdj`` (the default) and ``gesvd`` (of the transpose, for a wide
  matrix), full and reduced vectors."""
  f = lambda x: lax.linalg.svd(x, full_matrices=full, algorithm=algorithm)  # noqa: E731
  text = _targets(f, [_rng_matrix(shape)], platform)
  assert ("gesvd_ffi" if algorithm else "gesvdj_ffi") in text
  if algorithm and shape[0] < shape[1]:
    assert "transposed = true" in text
  _check(f, [_rng_matrix((2, *shape), np.complex128)], platform,
         smooth=_svd_smooth)


def test_a_gpu_call_of_other_layouts_is_refused():
  """A rule reads the GPU call's matrices in the layouts JAX writes: a
  module whose call has others (the transpose, for a potrf) is refused by
  name, not computed on the other triangle."""
  text = _targets(jnp.linalg.cholesky, [_spd((2, 4, 4))], "cuda")
  assert "operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>]" in text
  assert not stablehlo_to_jax.parse(text).unsupported
  other = text.replace(
      "operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>]",
      "operand_layouts = [dense<[2, 1, 0]> : tensor<3xindex>]")
  program = stablehlo_to_jax.parse(other)
  assert program.unsupported == ("stablehlo.custom_call @cusolver_potrf_ffi",)
  assert "operand_layouts" in str(program.reasons)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_full_vectors_past_the_leading_ones_are_not_differentiated(shape):
  """``gesvdj``'s full vectors of a non-square matrix, read past the
  leading ``min(m, n)`` (a projector on the null space): their completion
  has no derivative, so forward and reverse mode refuse (a NaN tangent of
  a constant would vanish in reverse mode: a wrong gradient)."""
  k = min(shape)

  def f(x):
    u, _, vh = lax.linalg.svd(x, full_matrices=True)
    if shape[0] > k:
      rest = u[:, k:]
      return jnp.sum(rest @ jnp.conj(rest.T) @ x * x)
    rest = jnp.conj(vh[k:, :].T)
    return jnp.sum(x @ (rest @ jnp.conj(rest.T)) * x)
  x = _rng_matrix(shape)
  program = _program(f, [x], "cuda")
  run = lambda a: program(a)[0]  # noqa: E731
  np.testing.assert_allclose(jax.jit(run)(x), f(x), atol=1e-9)
  with pytest.raises(NotImplementedError, match="Differentiation of"):
    jax.jvp(run, (x,), (x,))
  with pytest.raises(NotImplementedError, match="Differentiation of"):
    jax.grad(run)(x)


def test_svd_without_full_vectors_of_a_large_matrix():
  """``gesvdj`` in its economic mode (both sizes over 32)."""
  f = lambda x: jnp.linalg.svd(x, full_matrices=False)  # noqa: E731
  x = _rng_matrix((40, 34))
  assert "full_matrices = false" in _targets(f, [x], "cuda")
  _check(f, [x], "cuda", smooth=_svd_smooth, jvp=False)


@pytest.mark.parametrize("platform", _PLATFORMS)
@pytest.mark.parametrize("algorithm", [None, _QR])
@pytest.mark.parametrize("shape", [(2, 4, 4), (3, 5), (5, 3)])
def test_svd_without_vectors(platform, algorithm, shape):
  """The singular values alone (``compute_uv`` false: the call's vector
  results placeholders, which the module does not read)."""
  f = lambda x: lax.linalg.svd(x, compute_uv=False, algorithm=algorithm)  # noqa: E731
  assert "compute_uv = false" in _targets(f, [_rng_matrix(shape)], platform)
  _check(f, [_rng_matrix(shape, np.complex128)], platform)


@pytest.mark.parametrize("platform", _PLATFORMS)
@pytest.mark.parametrize("lower", [True, False])
def test_tridiagonal(platform, lower):
  f = lambda x: lax.linalg.tridiagonal(x, lower=lower)  # noqa: E731
  _check(f, [_rng_matrix((2, 4, 4), np.complex128)], platform, jvp=False)


@pytest.mark.parametrize("platform", _PLATFORMS)
def test_tridiagonal_solve(platform):
  args = [_rng_matrix((2, 5), seed=s) for s in range(3)]
  args[1] = args[1] + 4  # (diagonally dominant)
  args.append(_rng_matrix((2, 5, 3), seed=3))
  assert "sparse_gtsv2_ffi" in _targets(lax.linalg.tridiagonal_solve, args,
                                        platform)
  _check(lax.linalg.tridiagonal_solve, args, platform)


def _kernel_permutation(pivots: np.ndarray, m: int) -> np.ndarray:
  """jaxlib's GPU kernel: swaps applied in order, those out of range
  skipped."""
  out = np.empty((*pivots.shape[:-1], m), np.int32)
  for index in np.ndindex(*pivots.shape[:-1]):
    perm = list(range(m))
    for i, j in enumerate(pivots[index]):
      if 0 <= j < m:
        perm[i], perm[j] = perm[j], perm[i]
    out[index] = perm
  return out


@pytest.mark.parametrize("platform", _PLATFORMS)
def test_lu_pivots_to_permutation_as_the_kernel(platform):
  rng = np.random.default_rng(0)
  pivots = rng.integers(-2, 9, size=(3, 2, 5)).astype(np.int32)
  f = lambda p: lax.linalg.lu_pivots_to_permutation(p, 7)  # noqa: E731
  program = _program(f, [pivots], platform)
  np.testing.assert_array_equal(program(pivots)[0],
                                _kernel_permutation(pivots, 7))
  program = _program(f, [pivots[0]], platform)
  got = jax.vmap(lambda p: program(p)[0])(pivots)
  np.testing.assert_array_equal(got, _kernel_permutation(pivots, 7))


@pytest.mark.parametrize("platform", _PLATFORMS)
def test_threefry2x32_bit_for_bit(platform):
  def f(key):
    return jax.random.bits(jax.random.wrap_key_data(key, impl="threefry2x32"),
                           (3, 5))
  keys = np.array([[0, 42], [7, 1 << 31]], np.uint32)
  with config.threefry_gpu_kernel_lowering(True):
    text = _targets(f, [keys[0]], platform)
    program = _program(f, [keys[0]], platform)
  assert "threefry2x32_ffi" in text
  for key in keys:
    np.testing.assert_array_equal(program(key)[0], f(key))
  np.testing.assert_array_equal(jax.vmap(lambda k: program(k)[0])(keys),
                                jax.vmap(f)(keys))


def test_on_its_gpu_the_engine_writes_the_modules_call_again():
  """Exported again for CUDA, the engine's program holds cuSOLVER's call
  itself (batched under vmap: a batch dimension added, most major);
  for TPU, it is refused by name."""
  x = _rng_matrix((3, 5), np.complex128)
  f = lambda x: lax.linalg.svd(x, algorithm=_QR)  # noqa: E731
  program = _program(f, [x], "cuda")
  again = _targets(jax.vmap(lambda a: program(a)), [np.stack([x, x])],
                   "cuda")
  assert "lapack_" not in again
  assert ("stablehlo.custom_call @cusolver_gesvd_ffi(%arg0) {"
          "mhlo.backend_config = {compute_uv = true, full_matrices = true, "
          "transposed = true}") in again
  assert "(tensor<2x3x5xcomplex<f64>>) -> (tensor<2x3x5xcomplex<f64>>" in again
  for f, call in [
      (lambda x: lax.linalg.svd(x, compute_uv=False),
       "@cusolver_gesvdj_ffi(%arg0) {mhlo.backend_config = {compute_uv = "
       "false"),
      (lambda x: lax.linalg.svd(x, full_matrices=False),
       "@cusolver_gesvdj_ffi(%arg0) {mhlo.backend_config = {compute_uv = "
       "true")]:
    program = _program(f, [x], "cuda")
    again = _targets(lambda a: program(a), [x], "cuda")  # noqa: B023
    assert call in again and "lapack_" not in again
  program = _program(jnp.linalg.cholesky, [_spd((3, 3))], "rocm")
  assert "@hipsolver_potrf_ffi" in _targets(lambda a: program(a),
                                            [_spd((3, 3))], "rocm")
  for platform in ("tpu", "cuda"):
    with pytest.raises(NotImplementedError,
                       match=f"'hipsolver_potrf_ffi' on {platform}"):
      _targets(lambda a: program(a), [_spd((3, 3))], platform)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 4, 4)])
def test_a_tpus_lu_decomposition(shape):
  """TPU's ``LuDecomposition``, which ``lax.linalg.lu`` writes: on the CPU,
  its LU (partial pivoting, 0-based pivots, the permutation)."""
  x = _rng_matrix(shape)
  assert "@LuDecomposition" in _targets(lax.linalg.lu, [x], "tpu")
  _check(lax.linalg.lu, [x], "tpu")


def _calls(text: str) -> list[str]:
  """A module's custom calls: target, attributes and types, without the
  value names, locations and sharding rules."""
  out = []
  for line in text.splitlines():
    if "stablehlo.custom_call @" not in line:
      continue
    line = re.sub(r", sdy\.sharding_rule = #sdy\.op_sharding_rule<.*?custom>",
                  "", line.strip())
    line = re.sub(r"\s*loc\(#loc\d*\)$", "", line)
    line = re.sub(r"^%[\w:#]+ = ", "", line)
    out.append(re.sub(r"\((%[\w#]+(, )?)+\)", "(...)", line, count=1))
  return out


@pytest.mark.parametrize("name,f,shape", [
    ("cholesky", lambda x: jnp.linalg.cholesky(x @ x.T + 4 * jnp.eye(4)),
     (4, 4)),
    ("lu", lax.linalg.lu, (3, 5)),
    ("qr", jnp.linalg.qr, (5, 3)),
    ("eigh", lambda x: jnp.linalg.eigh(x, UPLO="U"), (4, 4)),
    ("svd", jnp.linalg.svd, (3, 5)),
    ("svd QR", lambda x: lax.linalg.svd(x, algorithm=_QR), (3, 5)),
    ("svd QR without vectors",
     lambda x: lax.linalg.svd(x, compute_uv=False, algorithm=_QR), (3, 5)),
    ("svd without vectors", lambda x: lax.linalg.svd(x, compute_uv=False),
     (5, 3)),
    ("tridiagonal", lax.linalg.tridiagonal, (4, 4))])
@pytest.mark.parametrize("platform", ("cpu", *_PLATFORMS))
@pytest.mark.parametrize("batch", ["3", "symbolic"])
def test_batched_on_its_gpu_the_calls_are_jaxs_own(name, f, shape, platform,
                                                   batch):
  """``vmap`` of the engine's program, exported for the GPU (and the CPU's
  LAPACK calls for the CPU), writes the very calls JAX writes for the
  batched function (but for their sharding rules, which one device does
  not need): under a symbolic batch size too, each result's shape an
  operand of the call, which shape refinement reads."""
  if platform == "cpu" and name.startswith("svd QR"):
    pytest.skip("jax.export refuses LAPACK's gesvd (no compatibility "
                "guarantee)")
  if platform == "cpu" and batch == "3":
    pytest.skip("the CPU's calls of a static batch: tests/export")
  x = _rng_matrix(shape, np.float32)
  program = _program(f, [x], platform)
  arg = np.stack([x, 2 * x, 3 * x]) if batch == "3" else (
      jax.ShapeDtypeStruct((*jax.export.symbolic_shape("c"), *shape),
                           np.float32))
  engine = _calls(_targets(jax.vmap(lambda a: program(a)), [arg],
                           platform))
  # (The LU pivots' permutation is lax operations, not the kernel; the
  # symbolic batch's assertion that it is at least 1 is jax.export's.)
  jax_own = [c for c in _calls(_targets(jax.vmap(f), [arg], platform))
             if "lu_pivots_to_permutation" not in c]
  assert engine and engine == jax_own
  if batch == "symbolic":
    assert all("indices_of_shape_operands" in c for c in engine
               if "@shape_assertion" not in c), engine


@pytest.mark.parametrize("name,f,shape", [
    ("lu", lax.linalg.lu, (3, 5)), ("qr", jnp.linalg.qr, (5, 3))])
def test_a_tpus_calls_under_a_symbolic_batch_are_jaxs_own(name, f, shape):
  """A TPU's module (its ``LuDecomposition``, ``Qr``: the ``lax``
  operations that write them), batched symbolically and exported for the
  TPU: JAX's own calls for the batched function."""
  del name
  x = _rng_matrix(shape, np.float32)
  program = _program(f, [x], "tpu")
  arg = jax.ShapeDtypeStruct((*jax.export.symbolic_shape("c"), *shape),
                             np.float32)
  engine = _calls(_targets(jax.vmap(lambda a: program(a)), [arg], "tpu"))
  assert any("@LuDecomposition" in c or "@Qr" in c for c in engine), engine
  assert engine == _calls(_targets(jax.vmap(f), [arg], "tpu"))
