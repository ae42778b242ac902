# Copyright 2026 The JAX Authors.
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
"""The GPU libraries' custom calls ``jax.export`` writes for CUDA and ROCm.

JAX lowers ``lax.linalg``'s operations on a GPU to jaxlib's cuSOLVER and
hipSOLVER kernels (``cusolver_<routine>_ffi``, ``hipsolver_<routine>_ffi``),
whose routines are LAPACK's: the same operands, the same results in the
same layout (factors in place, the triangle not read left as it was,
pivots numbered from 1, an info code that is LAPACK's). Each such call is
a call of the LAPACK routine (:mod:`._lapack`: batched as one call,
differentiated as the ``lax`` operation that wrote it) with the GPU call
as its native form (:class:`._custom_calls.Native`): computed by LAPACK on
the CPU, by the call itself on its own GPU platform.

========================  ===========================  ====================
GPU call                  LAPACK routine                written by
========================  ===========================  ====================
``potrf``                 ``potrf`` (``lower``:        ``cholesky``
                          ``uplo``)
``getrf``                 ``getrf``                     ``lu``
``geqrf``, ``orgqr``      ``geqrf``, ``orgqr/ungqr``    ``qr``
``syevd`` (any            ``syevd/heevd``               ``eigh``
``algorithm``)
``sytrd``                 ``sytrd/hetrd``               ``tridiagonal``
``gesvd``, ``gesdd``,     ``gesdd`` (``gesvd``'s        ``svd``
``gesvdj``                ``transposed`` and
                          ``gesvdj``'s ``V``: LAPACK's
                          results reordered, adjoint)
========================  ===========================  ====================

Where a decomposition is free (an eigenvector's sign, a singular vector's
phase, the basis of a repeated eigenvalue's space), LAPACK's is a
decomposition of the same matrix, not necessarily the GPU's; the other
results are the GPU's to rounding. Where a factorization fails, its info
code is LAPACK's, zero where the GPU's is zero (JAX's lowering compares
it with 0; a Jacobi solver's code for no convergence is another nonzero
one), and its partial factors LAPACK's.

The calls that are ``lax`` operations themselves:

* ``cu_lu_pivots_to_permutation``/``hip_lu_pivots_to_permutation``: the
  permutation of LU's row swaps (0-based), as the kernel computes it (a
  swap out of range skipped);
* ``cusparse_gtsv2_ffi``: ``lax.linalg.tridiagonal_solve`` (a singular
  system's solution NaN);
* ``cu_threefry2x32_ffi``/``hip_threefry2x32_ffi``: JAX's ``threefry2x32``
  primitive, bit for bit on every platform.

hipSOLVER's older ``hipsolver_syevd``/``hipsolver_syevj`` (api_version
2, their attributes an opaque descriptor, in JAX's test data) are
LAPACK's ``syevd`` on the CPU only. (The TPU's calls are in
:mod:`._tpu_calls`.)

:data:`CUDA_CALLS` and :data:`ROCM_CALLS` are the platforms' tables of
these calls (:class:`._registry.PlatformCalls`): each rule is registered
from them, and a call of theirs without a rule is refused naming what they
hold.

An SVD without its vectors (``compute_uv`` false) is LAPACK's without
them; the GPU call's placeholder vector results (which its kernel does
not write) zeros, refused where the module reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import functools
import re

import jax
from jax import lax
from jax._src.export.stablehlo_to_jax import _custom_calls
from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _lapack
from jax._src.export.stablehlo_to_jax import _registry
from jax._src.export.stablehlo_to_jax import compat
import jax.numpy as jnp
import numpy as np

NoRule = _ir.NoRule
Op = _ir.Op
Compiler = _registry.Compiler
Call = _custom_calls.Call
NativeForm = _custom_calls.NativeForm

_LIBRARIES = {"cusolver": "cuda", "hipsolver": "rocm"}

# The GPU libraries' routines that are LAPACK's (``<solver>_<routine>_ffi``).
_LAPACK_ROUTINES = ("potrf", "getrf", "geqrf", "orgqr", "syevd", "sytrd",
                    "gesvd", "gesdd", "gesvdj")
_AS_LAPACK = "whose routines are LAPACK's"
_AS_LAX = "that are lax operations"


def _table(platform: str, library: str, prefixes: tuple[str, ...],
           names: tuple[str, str, str], older: Sequence[str] = ()
           ) -> _registry.PlatformCalls:
  """A GPU platform's table: its calls of LAPACK's routines and of lax
  operations; `names` its solver's, sparse library's and own prefixes."""
  solver, sparse, own = names
  rules = {f"{solver}_{r}_ffi": (_AS_LAPACK, r) for r in _LAPACK_ROUTINES}
  rules.update({f"{solver}_{r}": ("older ones whose routines are LAPACK's",
                                  r) for r in older})
  rules.update({f"{own}_lu_pivots_to_permutation": (_AS_LAX, "LU pivots"),
                f"{sparse}_gtsv2_ffi": (_AS_LAX, "gtsv2"),
                f"{own}_threefry2x32_ffi": (_AS_LAX, "threefry2x32")})
  return _registry.PlatformCalls(platform, library, prefixes, rules)


# The GPU platforms' tables of custom calls (see _registry.PlatformCalls).
CUDA_CALLS = _table("cuda", "a CUDA library's",
                    ("cusolver_", "cusparse_", "cu_", "cublas"),
                    ("cusolver", "cusparse", "cu"))
ROCM_CALLS = _table("rocm", "a ROCm library's",
                    ("hipsolver_", "hipsparse_", "hip_", "rocsolver"),
                    ("hipsolver", "hipsparse", "hip"), older=("syevd", "syevj"))
_registry.RULES.add_platform(CUDA_CALLS)
_registry.RULES.add_platform(ROCM_CALLS)
# The geqrf calls whose factors a GPU's orgqr follows (LAPACK's too).
_GEQRF = _lapack.GEQRF | {target for calls in (CUDA_CALLS, ROCM_CALLS)
                          for target, (_, routine) in calls.rules.items()
                          if routine == "geqrf"}


def _rule(*targets: tuple[str, str]
          ) -> Callable[[_registry.Rule], _registry.Rule]:
  """Registers a rule for the targets ``(CUDA's, ROCm's)``, each in its
  platform's table."""
  def decorate(rule):
    for cuda, rocm in targets:
      _registry.RULES.platform_rule(CUDA_CALLS, cuda)(rule)
      _registry.RULES.platform_rule(ROCM_CALLS, rocm)(rule)
    return rule
  return decorate
_TYPE_LETTERS = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
                 np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}
_CONFIG = "mhlo.backend_config"


def _type_letter(op: Op) -> str:
  t = op.operand_types[0]
  dtype = np.dtype(t.dtype) if isinstance(t, _ir.TensorType) else None
  if dtype not in _TYPE_LETTERS:
    raise NoRule(f"an operand of type {t} (LAPACK's routines take float32, "
                 "float64, complex64 and complex128)")
  return _TYPE_LETTERS[dtype]


def _flag(op: Op, name: str, default: bool | None = None) -> bool:
  value = _lapack.backend_config(op).get(name, default)
  if not isinstance(value, (bool, np.bool_)) and value not in (0, 1):
    raise NoRule(f"its attribute {name}={value!r} (a boolean)")
  return bool(value)


def _known_config(op: Op, known: Sequence[str]) -> None:
  unknown = sorted(set(_lapack.backend_config(op)) - set(known))
  if unknown:
    raise NoRule(f"its attributes {', '.join(unknown)}, which this rule does "
                 "not know")


def _config_text(config: dict[str, str]) -> str:
  return "{" + ", ".join(f"{k} = {ord(v)} : ui8"
                         for k, v in sorted(config.items())) + "}"


def _lapack_layouts_text(ranks: Sequence[int], matrix_rank: int) -> str:
  """The layouts JAX writes for LAPACK's calls: arrays of the operand's
  rank column-major (batch dimensions most major), the others
  row-major."""
  def layout(r: int) -> list[int]:
    if r == matrix_rank and r >= 2:
      return [r - 2, r - 1, *range(r - 3, -1, -1)]
    return list(range(r - 1, -1, -1))
  return "[" + ", ".join(
      f"dense<{layout(r) if r else ''}> : tensor<{r}xindex>".replace(
          "dense<[]>", "dense<>") for r in ranks) + "]"


def _layouts(text: str) -> list[list[int]]:
  """The layouts of a ``*_layouts`` attribute's text, as lists."""
  return [[int(d) for d in re.findall(r"\d+", inner)]
          for inner in re.findall(r"dense<([^>]*)>", text)]


def _as_lapack(op: Op, call: Call, routine: str, t: str,
               config: dict[str, str],
               form: NativeForm = NativeForm.LAPACK) -> Call:
  """`call` (the GPU library's, as the module writes it) as a call of
  LAPACK's ``routine`` with `config`, standing for it."""
  library = call.target.split("_", 1)[0]
  native = _custom_calls.Native(call.target, call.attributes,
                                _LIBRARIES[library], call.results, form)
  target = f"lapack_{t}{routine}_ffi"
  attributes = dict(call.attributes)
  if attributes.get("call_target_name") != f'"{call.target}"':
    raise NoRule("a call whose target's text is not its name")
  attributes["call_target_name"] = f'"{target}"'
  attributes[_CONFIG] = _config_text(config)
  # (A sharding rule of the GPU call's results' shapes; one device needs
  # none.)
  attributes.pop("sdy.sharding_rule", None)
  results, live = list(call.results), list(call.live)
  if form is NativeForm.VECTORS_SWAPPED:
    results[2], results[3] = results[3], results[2]
    live[2], live[3] = live[3], live[2]
  elif form is NativeForm.V:
    shape, dtype = results[3]
    results[3] = ((*shape[:-2], shape[-1], shape[-2]), dtype)
  elif form is NativeForm.NO_VECTORS:
    # (LAPACK's shapes: its FFI writes none.)
    (*batch, m, n), dtype = results[0]
    k = min(m, n)
    full = config.get("mode") != "S" and _flag(op, "full_matrices", True)
    results[2] = ((*batch, m, m if full else k), dtype)
    results[3] = ((*batch, n if full else k, n), dtype)
  # LAPACK's kernels read and write column-major matrices (a GPU call of
  # the transpose has row-major ones): its layouts are JAX's for LAPACK.
  # The GPU call's own must be those the rule assumes (JAX's), or its
  # matrices would be read transposed.
  ranks = [len(t.shape) for t in op.operand_types]
  matrix_rank = -1 if _flag(op, "transposed", False) else max(ranks)
  for name, of in (("operand_layouts", ranks),
                   ("result_layouts", [len(t.shape) for t in
                                       op.result_types])):
    given = dict(call.attributes).get(name)
    if given is not None and _layouts(given) != _layouts(
        _lapack_layouts_text(of, matrix_rank)):
      raise NoRule(f"a call with {name} {given} (JAX writes "
                   f"{_lapack_layouts_text(of, matrix_rank)})")
  attributes["operand_layouts"] = _lapack_layouts_text(ranks, max(ranks))
  attributes["result_layouts"] = _lapack_layouts_text(
      [len(shape) for shape, _ in results], max(ranks))
  return dataclasses.replace(
      call, target=target,
      attributes=tuple(sorted(attributes.items())), results=tuple(results),
      live=tuple(live), native=native)


def _register(routine: str
              ) -> Callable[[_registry.Rule], _registry.Rule]:
  """Registers a rule for ``cusolver_<routine>_ffi`` and
  ``hipsolver_<routine>_ffi``."""
  return _rule((f"cusolver_{routine}_ffi", f"hipsolver_{routine}_ffi"))


def _step(call: Call, form: NativeForm = NativeForm.LAPACK
          ) -> _registry.Step:
  """The step of `call` (LAPACK's), its results in the GPU call's order."""
  def step(env, *xs):
    ys = list(_custom_calls.apply(call, *xs))
    if form is NativeForm.VECTORS_SWAPPED:
      ys[2], ys[3] = ys[3], ys[2]
    elif form is NativeForm.V:
      ys[3] = _lapack.adjoint(ys[3])
    elif form is NativeForm.NO_VECTORS:
      # (The GPU call's placeholders: unread.)
      for i in (2, 3):
        shape, dtype = call.native.results[i]
        ys[i] = jnp.zeros(shape, dtype)
    return ys
  return step


@_register("potrf")
def _potrf_rule(op: Op, c: Compiler) -> _registry.Step:
  """``potrf``: ``(factor, info)``, LAPACK's."""
  t = _type_letter(op)
  _known_config(op, ["lower"])
  lower = _flag(op, "lower")
  call = _lapack.call_of(op, c, functools.partial(
      _lapack.potrf_tangents, lower=lower))
  return _step(_as_lapack(op, call, "potrf", t, {"uplo": "L" if lower else "U"}))


@_register("getrf")
def _getrf_rule(op: Op, c: Compiler) -> _registry.Step:
  """``getrf``: ``(lu, pivots (1-based), info)``, LAPACK's."""
  t = _type_letter(op)
  _known_config(op, [])
  call = _lapack.call_of(op, c, _lapack.getrf_tangents)
  return _step(_as_lapack(op, call, "getrf", t, {}))


@_register("geqrf")
def _geqrf_rule(op: Op, c: Compiler) -> _registry.Step:
  """``geqrf``: ``(R and reflectors, taus)``, LAPACK's."""
  t = _type_letter(op)
  _known_config(op, [])
  call = _lapack.call_of(op, c, _lapack.geqrf_tangents, "the Householder "
                         "reflectors of a QR factorization (JAX differentiates "
                         "its Q, from orgqr, and its R)")
  return _step(_as_lapack(op, call, "geqrf", t, {}))


@_register("orgqr")
def orgqr_rule(op: Op, c: Compiler) -> _registry.Step:
  """``orgqr`` (``ungqr`` of complex matrices): LAPACK's."""
  t = _type_letter(op)
  _known_config(op, [])
  routine = "orgqr" if t in "sd" else "ungqr"
  return _lapack.orgqr_rule(
      op, c, t, form=lambda call: _as_lapack(op, call, routine, t, {}),
      geqrf=_GEQRF)


@_register("syevd")
def _syevd_rule(op: Op, c: Compiler) -> _registry.Step:
  """``syevd``: ``(eigenvectors, eigenvalues, info)``, LAPACK's
  ``syevd/heevd``'s (whatever its ``algorithm``: the decomposition)."""
  t = _type_letter(op)
  _known_config(op, ["lower", "algorithm"])
  lower = _flag(op, "lower")
  algorithm = _lapack.backend_config(op).get("algorithm", 0)
  if algorithm not in (0, 1, 2):
    raise NoRule(f"its algorithm={algorithm!r} (known: 0 default, 1 QR, 2 "
                 "Jacobi)")
  if len(op.result_types) != 3:
    raise NoRule(f"a syevd of {len(op.result_types)} results (JAX writes 3)")
  call = _lapack.call_of(op, c, functools.partial(
      _lapack.syevd_tangents, lower=lower))
  routine = "syevd" if t in "sd" else "heevd"
  return _step(_as_lapack(op, call, routine, t,
                          {"mode": "V", "uplo": "L" if lower else "U"}))


@_register("sytrd")
def _sytrd_rule(op: Op, c: Compiler) -> _registry.Step:
  """``sytrd``: ``(tridiagonal form and reflectors, d, e, taus, info)``,
  LAPACK's ``sytrd/hetrd``'s."""
  t = _type_letter(op)
  _known_config(op, ["lower"])
  lower = _flag(op, "lower")
  call = _lapack.call_of(op, c, None, "JAX has no derivative of "
                         "lax.linalg.tridiagonal")
  routine = "sytrd" if t in "sd" else "hetrd"
  return _step(_as_lapack(op, call, routine, t, {"uplo": "L" if lower else "U"}))


def _svd_rule(op: Op, c: Compiler, *, jacobi: bool) -> _registry.Step:
  """An SVD: ``(overwritten input, s, u, vt, info)`` (``gesvdj``: ``v``;
  ``gesvd`` of the transpose: ``vt`` and ``u`` swapped), LAPACK
  ``gesdd``'s."""
  t = _type_letter(op)
  _known_config(op, ["compute_uv", "full_matrices"]
                + ([] if jacobi else ["transposed"]))
  if len(op.result_types) != 5:
    raise NoRule(f"an SVD of {len(op.result_types)} results (JAX writes 5)")
  full = _flag(op, "full_matrices", True)
  transposed = not jacobi and _flag(op, "transposed", False)
  mode = "A" if full else "S"
  form = (NativeForm.V if jacobi else
          (NativeForm.VECTORS_SWAPPED if transposed else NativeForm.LAPACK))
  if not _flag(op, "compute_uv", True):
    # The vector results are placeholders the kernel does not write.
    if any(r in c.live for r in op.results[2:4]):
      raise NoRule("an SVD without its vectors (compute_uv false) whose "
                   "placeholder vector results the module reads (the GPU "
                   "kernel does not write them)")
    mode, form = "N", NativeForm.NO_VECTORS
  # gesvdj computes full vectors for a reduced SVD of up to 32 rows or
  # columns, which JAX's lowering slices: their leading min(m, n) have the
  # reduced SVD's derivative. The others (an arbitrary completion) have
  # none, so only where the module reads nothing but those leading ones
  # (NaN, never read, stands for the rest); otherwise differentiating the
  # vectors is refused (a constant's cotangent would be dropped silently
  # in reverse mode).
  completion = jacobi and full and _reads_leading_vectors_only(op, c)
  call = _lapack.call_of(op, c, functools.partial(
      _lapack.gesdd_tangents, mode=mode, completion_nan=completion),
                       "the input the routine overwrites and the full "
                       "vectors of a non-square matrix (JAX has no "
                       "derivative of those)")
  call = _as_lapack(op, call, "gesdd", t, {"mode": mode}, form)
  (m, n), k = call.results[0][0][-2:], min(call.results[0][0][-2:])
  u_shape, vt_shape = call.results[2][0][-2:], call.results[3][0][-2:]
  want = ((m, m), (n, n)) if full else ((m, k), (k, n))
  if mode == "N":
    return _step(call, form)
  if (u_shape, vt_shape) != want:
    raise NoRule(f"an SVD of a {m}x{n} matrix with vectors of shapes "
                 f"{u_shape} and {vt_shape} (LAPACK's: {want[0]}, {want[1]})")
  return _step(call, form)


_register("gesvd")(functools.partial(_svd_rule, jacobi=False))
_register("gesdd")(functools.partial(_svd_rule, jacobi=False))
_register("gesvdj")(functools.partial(_svd_rule, jacobi=True))


# The calls that are lax operations.

@_rule(("cu_lu_pivots_to_permutation", "hip_lu_pivots_to_permutation"))
def _lu_pivots_to_permutation_rule(op: Op, c: Compiler) -> _registry.Step:
  """The permutation of LU's row swaps ``pivots`` (0-based; the last
  dimension): the identity's entries swapped in order, a swap out of
  range skipped (the kernel's)."""
  del c
  (t,), (r,) = op.operand_types, op.result_types
  if not (isinstance(t, _ir.TensorType) and isinstance(r, _ir.TensorType)
          and np.dtype(t.dtype) == np.int32 and np.dtype(r.dtype) == np.int32
          and len(t.shape) >= 1 and tuple(r.shape[:-1]) == tuple(
              t.shape[:-1])):
    raise NoRule(f"operand {t} and result {r} (JAX writes int32 pivots and "
                 "permutations of the same batch)")
  k, m = t.shape[-1], r.shape[-1]
  if k > m:
    raise NoRule(f"{k} swaps of a permutation of {m} (the kernel writes "
                 "out of its result)")
  return lambda env, pivots: [_lu_pivots_to_permutation(pivots, m)]


def _reads_leading_vectors_only(op: Op, c: Compiler) -> bool:
  """Whether the module reads ``gesvdj``'s full vectors of a non-square
  matrix (``u`` of a tall one, ``v`` of a wide one) only through slices of
  their leading ``min(m, n)`` vectors, as JAX's lowering of a reduced SVD
  does with a GPU's full vectors (after a transpose and a conjugation,
  elementwise, for ``v``)."""
  m, n = op.operand_types[0].shape[-2:]
  k = min(m, n)
  rank = len(op.operand_types[0].shape)
  u, v = op.results[2:4]
  # Each value that holds the completion: the axis its vectors index (the
  # columns of u and v at first).
  axis = {val: rank - 1 for val, size in ((u, m), (v, n)) if size > k}
  users: dict[int, list[Op]] = {}
  returned: set[int] = set()

  def walk(block) -> None:
    returned.update(block.returns)
    for o in block.ops:
      for x in o.operands:
        users.setdefault(x, []).append(o)
      for r in o.regions:
        walk(r)
  for f in c.funcs.values():
    walk(f.body)
  work = list(axis)
  while work:
    val = work.pop()
    if val in returned:
      return False
    for o in users.get(val, ()):
      name = o.name.removeprefix("stablehlo.")
      if name == "slice":
        if int(o.attrs["limit_indices"][axis[val]]) > k:
          return False
        continue
      if name == "transpose":
        new_axis = list(o.attrs["permutation"]).index(axis[val])
      elif name in _POSITIONWISE and len(o.results) == 1:
        if any(axis.get(x, axis[val]) != axis[val] for x in o.operands):
          return False
        new_axis = axis[val]
      else:
        return False
      (result,) = o.results
      if axis.setdefault(result, new_axis) != new_axis:
        return False
      work.append(result)
  return True


# Ops whose result's element at each position is computed from the
# operands' elements at that position alone.
_POSITIONWISE = frozenset({"real", "imag", "negate", "complex", "convert",
                           "copy"})


def _lu_pivots_to_permutation(pivots: jax.Array, m: int) -> jax.Array:
  k = pivots.shape[-1]
  iota = lax.broadcasted_iota(np.int32, (*pivots.shape[:-1], m),
                              pivots.ndim - 1)

  def swap(i, perm):
    j = lax.dynamic_index_in_dim(pivots, i, axis=-1, keepdims=True)
    j = jnp.where((j >= 0) & (j < m), j, i)
    x = lax.dynamic_index_in_dim(perm, i, axis=-1, keepdims=True)
    y = jnp.take_along_axis(perm, j, axis=-1)
    return jnp.where(iota == i, y, jnp.where(iota == j, x, perm))
  return lax.fori_loop(0, k, swap, iota)


@_rule(("cusparse_gtsv2_ffi", "hipsparse_gtsv2_ffi"))
def _gtsv2_rule(op: Op, c: Compiler) -> _registry.Step:
  """``gtsv2``: the solution of a tridiagonal system,
  ``lax.linalg.tridiagonal_solve``'s (NaN where it is singular)."""
  del c
  _known_config(op, [])
  if len(op.operands) != 4 or len(op.result_types) != 1:
    raise NoRule("a gtsv2 of other than 4 operands and 1 result (JAX writes "
                 "those)")
  return lambda env, dl, d, du, b: [
      lax.linalg.tridiagonal_solve(dl, d, du, b)]


@_rule(("cu_threefry2x32_ffi", "hip_threefry2x32_ffi"))
def _threefry2x32_rule(op: Op, c: Compiler) -> _registry.Step:
  """``threefry2x32`` of keys and counts of one shape: JAX's primitive."""
  del c
  types = (*op.operand_types, *op.result_types)
  if (len(op.operands) != 4 or len(op.result_types) != 2 or not all(
      isinstance(t, _ir.TensorType) and np.dtype(t.dtype) == np.uint32
      and tuple(t.shape) == tuple(types[0].shape) for t in types)):
    raise NoRule("other than 4 uint32 operands and 2 results of one shape "
                 "(JAX writes those)")
  threefry2x32_p = compat.threefry2x32_p()
  return lambda env, *xs: list(threefry2x32_p.bind(*xs))


# hipSOLVER's older eigendecompositions (api_version 2: their attributes an
# opaque descriptor), in JAX's test data.

_LEGACY_TYPES = {0: np.dtype(np.float32), 1: np.dtype(np.float64),
                 2: np.dtype(np.complex64), 3: np.dtype(np.complex128)}
_HIPSOLVER_FILL_MODE_LOWER = 122


def _check_legacy_syevd(op: Op) -> None:
  """Refuses a ``hipsolver_syevd``/``syevj`` other than JAX wrote: api
  version 2, no side effect, 4 results, a descriptor of five int32 that
  describes its operand, the lower triangle's fill mode."""
  if op.attrs.get("has_side_effect") or op.attrs.get("api_version") != 2:
    raise NoRule("an older hipSOLVER call other than the api_version 2 "
                 "one JAX wrote")
  config = op.attrs.get("backend_config")
  if isinstance(config, str):
    config = config.encode("latin-1")
  if not isinstance(config, bytes) or len(config) != 20:
    raise NoRule(f"a descriptor of {type(config).__name__} {config!r} (JAX "
                 "wrote five int32: type, fill mode, batch, n, lwork)")
  type_code, fill, batch, n, _ = np.frombuffer(config, "<i4").tolist()
  (a,), results = op.operand_types, op.result_types
  if not (isinstance(a, _ir.TensorType) and len(a.shape) >= 2
          and len(results) == 4 and _LEGACY_TYPES.get(type_code) == np.dtype(
              a.dtype) and tuple(a.shape[-2:]) == (n, n)
          and int(np.prod(a.shape[:-2])) == batch):
    raise NoRule(f"a descriptor (type {type_code}, batch {batch}, n {n}) "
                 f"that does not describe its operand {a}, or other than 4 "
                 "results")
  if fill != _HIPSOLVER_FILL_MODE_LOWER:
    raise NoRule(f"its fill mode {fill} (JAX wrote the lower triangle's, "
                 f"{_HIPSOLVER_FILL_MODE_LOWER})")


@_registry.RULES.platform_rule(ROCM_CALLS, "hipsolver_syevd",
                               "hipsolver_syevj")
def _legacy_syevd_rule(op: Op, c: Compiler) -> _registry.Step:
  """``hipsolver_syevd``/``syevj`` (api_version 2): ``(eigenvectors,
  eigenvalues, info, workspace)``; its descriptor ``(type, fill mode,
  batch, n, lwork)`` as five int32. LAPACK's ``syevd/heevd`` on the CPU
  (the workspace, which the module does not read, zeros); on no other
  platform."""
  _check_legacy_syevd(op)
  (a,), results = op.operand_types, op.result_types
  if op.results[3] in c.live:
    raise NoRule("its workspace result, which the module reads")
  t = _TYPE_LETTERS[np.dtype(a.dtype)]
  routine = "syevd" if t in "sd" else "heevd"
  rank = len(a.shape)
  lapack_results = tuple((tuple(r.shape), np.dtype(r.dtype))
                         for r in results[:3])
  attributes = (  # (as the typed FFI's calls of JAX's modules read)
      ("call_target_name", f'"lapack_{t}{routine}_ffi"'),
      (_CONFIG, _config_text({"mode": "V", "uplo": "L"})),
      ("operand_layouts", _lapack_layouts_text([rank], rank)),
      ("output_operand_aliases", "[#stablehlo.output_operand_alias<"
       "output_tuple_indices = [0], operand_index = 0, "
       "operand_tuple_indices = []>]"),
      ("result_layouts",
       _lapack_layouts_text([rank, rank - 1, rank - 2], rank)))
  texts = op.attrs.get(_ir.ATTRIBUTE_TEXTS) or ()
  native = _custom_calls.Native(
      op.attrs["call_target_name"], tuple(texts), "", tuple(
          (tuple(r.shape), np.dtype(r.dtype)) for r in results),
      NativeForm.CPU_ONLY)
  call = Call(f"lapack_{t}{routine}_ffi", attributes, lapack_results,
              tangents=functools.partial(_lapack.syevd_tangents,
                                         lower=True),
              live=tuple(r in c.live for r in op.results[:3]), native=native)
  work_shape, work_dtype = native.results[3]

  def step(env, x):
    v, w, info = _custom_calls.apply(call, x)
    return [v, w, info, jnp.zeros(work_shape, work_dtype)]
  return step
