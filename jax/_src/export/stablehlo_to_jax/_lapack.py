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
"""The LAPACK custom calls ``jax.export`` writes on the CPU.

JAX lowers ``lax.linalg``'s operations on the CPU to jaxlib's LAPACK
kernels (``lapack_<t><routine>_ffi``, ``<t>`` one of ``s d c z``). Each
rule here writes the call itself (:mod:`._custom_calls`: its values, info
codes, pivots and untouched triangles are the call's, its batch one call)
and gives it the derivative of the ``lax`` operation that wrote it,
computed from the call's own results:

=================  =============================  ===========================
routine            written by                     derivative
=================  =============================  ===========================
``potrf``          ``lax.linalg.cholesky``        ``cholesky``'s
``getrf``          ``lax.linalg.lu``              ``lu``'s
``syevd/heevd``    ``lax.linalg.eigh``            ``eigh``'s
``gesdd/gesvd``    ``lax.linalg.svd``             ``svd``'s (not of the full
                                                  vectors of a non-square
                                                  matrix, as JAX)
``geev``           ``lax.linalg.eig``             of the eigenvalues (as JAX)
``geqrf``          ``lax.linalg.qr`` (and         ``qr``'s, where ``orgqr``
``orgqr/ungqr``    ``geqrf``,                     follows ``geqrf`` (the
                   ``householder_product``)       compact factors alone: none)
``trsm``           ``lax.linalg.triangular_solve``  ``triangular_solve``'s
``gtsv``           ``lax.linalg.tridiagonal_solve``  ``tridiagonal_solve``'s
``gees``           ``lax.linalg.schur``           none (JAX has none)
``gehrd``          ``lax.linalg.hessenberg``      none (JAX has none)
``sytrd/hetrd``    ``lax.linalg.tridiagonal``     none (JAX has none)
=================  =============================  ===========================

Each derivative of a ``lax.linalg`` primitive is JAX's own JVP rule of
that primitive (:func:`lax_tangents`), evaluated at the call's results
(the decomposition it returned, not another one of the same matrix):
what stays this module's is the packing of the call's results (the
triangle a routine reads and the one it leaves, LAPACK's compact QR
factors) and ``geev``'s eigenvalues, each pinned against ``jax.jvp`` of the
``lax.linalg`` function in ``tests/export/test_lapack_derivatives.py``.

Where a factorization fails (its info code is not 0), the tangents of its
results are NaN: JAX's lowering replaces those results by NaN.

:data:`CALLS` is the CPU's table of these calls
(:class:`._registry.PlatformCalls`): each rule is registered from it.

The public names (:func:`call_of`, :func:`backend_config`, :func:`adjoint`,
:func:`lax_tangents`, the routines' tangents, :func:`orgqr_rule`) are those that
:mod:`._gpu_calls` shares: it writes the GPU libraries' calls as these.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
import functools

import jax
from jax import lax
from jax._src import core
from jax._src.interpreters import ad
from jax._src.lax import linalg as lax_linalg
from jax._src.export.stablehlo_to_jax import _custom_calls
from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _registry
from jax._src.export.stablehlo_to_jax import compat
import jax.numpy as jnp
import numpy as np

NoRule = _ir.NoRule
Op = _ir.Op
Compiler = _registry.Compiler
Call = _custom_calls.Call
NO_DERIVATIVE = _custom_calls.NO_DERIVATIVE
_TYPES = {"s": np.float32, "d": np.float64, "c": np.complex64,
          "z": np.complex128}


# Matrix helpers (batched: the last two dimensions are the matrix).

def _mT(x: jax.Array) -> jax.Array:
  return jnp.swapaxes(x, -1, -2)


def adjoint(x: jax.Array) -> jax.Array:
  """The conjugate transpose of (each matrix of) `x`."""
  return jnp.conj(_mT(x)) if jnp.iscomplexobj(x) else _mT(x)


def _tril(x: jax.Array, k: int = 0) -> jax.Array:
  return jnp.tril(x, k)


def _triu(x: jax.Array, k: int = 0) -> jax.Array:
  return jnp.triu(x, k)


def _hermitian_of_lower(t: jax.Array) -> jax.Array:
  """The Hermitian matrix whose lower triangle is `t`'s (a routine that
  reads one triangle reads that; the diagonal's imaginary part is not
  read)."""
  if jnp.iscomplexobj(t):
    r, i = jnp.real(t), jnp.imag(t)
    return lax.complex(_tril(r) + _mT(_tril(r, -1)),
                       _tril(i, -1) - _mT(_tril(i, -1)))
  return _tril(t) + _mT(_tril(t, -1))


def _read_lower(x: jax.Array, lower: bool) -> jax.Array:
  """The triangle a routine reads, as the lower one."""
  return x if lower else adjoint(x)


def _nan_where_failed(t: jax.Array, info: jax.Array) -> jax.Array:
  """`t` where the call succeeded (info 0), NaN where it failed."""
  ok = lax.eq(info, lax.full_like(info, 0))
  ok = lax.broadcast_in_dim(ok, t.shape, tuple(range(info.ndim)))
  return jnp.where(ok, t, jnp.full_like(t, jnp.nan))


# JAX's own derivatives, at the call's results.

def lax_tangents(fn: Callable[..., object], primitive: core.Primitive,
                 outputs: Sequence[jax.Array], primals: Sequence[jax.Array],
                 tangents: Sequence[jax.Array]) -> list[jax.Array]:
  """The tangents of ``fn(*primals)`` (a ``lax.linalg`` function) along
  `tangents` by JAX's own JVP rule, the first result of `primitive` it
  computes (the decomposition its rule differentiates) taken to be
  `outputs`: JAX's derivative, at the factors the call returned (a
  decomposition free up to signs is differentiated at the call's)."""
  avals = [jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x))
           for x in (*primals, *tangents)]
  n = len(primals)
  closed = jax.make_jaxpr(lambda *xs: jax.jvp(fn, xs[:n], xs[n:]))(*avals)
  jaxpr = closed.jaxpr
  first = next((e for e in jaxpr.eqns if e.primitive is primitive), None)
  if first is None or [tuple(v.aval.shape) for v in first.outvars] != [
      tuple(jnp.shape(y)) for y in outputs]:
    raise NotImplementedError(
        f"JAX's derivative of {primitive} here: its rule does not compute "
        "the decomposition once, of the call's shapes")
  env: dict[core.Var, object] = dict(zip(jaxpr.constvars, closed.consts))
  env.update(zip(jaxpr.invars, [*primals, *tangents]))

  def read(v):
    return v.val if isinstance(v, core.Literal) else env[v]
  for eqn in jaxpr.eqns:
    if eqn is first:
      outs = [lax.convert_element_type(y, v.aval.dtype)
              for y, v in zip(outputs, eqn.outvars)]
    else:
      outs = compat.bind_equation(eqn, [read(v) for v in eqn.invars])
    env.update(zip(eqn.outvars, outs))
  results = [read(v) for v in jaxpr.outvars]
  return results[len(results) // 2:]


# The calls' attributes.

def backend_config(op: Op) -> dict[str, _ir.AttrValue]:
  """The call's ``mhlo.backend_config`` dictionary (empty if absent)."""
  config = op.attrs.get("mhlo.backend_config", {})
  if not isinstance(config, dict):
    raise NoRule(f"a backend_config other than a dictionary: {config!r}")
  return config


def _char(op: Op, name: str, allowed: str) -> str:
  value = backend_config(op).get(name)
  if not isinstance(value, int) or chr(value) not in allowed:
    raise NoRule(f"its attribute {name}={value!r} (known: "
                 f"{', '.join(allowed)})")
  return chr(value)


def call_of(op: Op, c: Compiler, tangents: _custom_calls.Tangents | None,
            no_derivative: str = "", leading: int = 0,
            transpose: _custom_calls.Transpose | None = None) -> Call:
  """The :class:`Call` of `op`."""
  if op.attrs.get("has_side_effect"):
    raise NoRule("a custom call with side effects")
  if op.attrs.get("api_version", 4) != 4:
    raise NoRule(f"api_version {op.attrs.get('api_version')} (the typed "
                 "FFI's is 4)")
  texts = op.attrs.get(_ir.ATTRIBUTE_TEXTS)
  if texts is None:
    raise NoRule("its attributes' text was not kept (a copy of the module "
                 "made by an older reader)")
  if any(text is None for _, text in texts):
    raise NoRule("an attribute that is not UTF-8 text")
  results = []
  for t in op.result_types:
    if not isinstance(t, _ir.TensorType):
      raise NoRule(f"a result of type {t}")
    results.append((tuple(t.shape), np.dtype(t.dtype)))
  return Call(op.attrs["call_target_name"], texts,
              tuple(results), tangents=tangents, no_derivative=no_derivative,
              leading=leading, live=tuple(r in c.live for r in op.results),
              transpose=transpose)


def _step(call: Call) -> _registry.Step:
  return lambda env, *xs: _custom_calls.apply(call, *xs)


Routine = Callable[[Op, Compiler, str], _registry.Step]

# The CPU's custom calls that have rules: each LAPACK routine, with the
# types it is called for (``lapack_<t><routine>_ffi``).
_ROUTINES = {"potrf": "sdcz", "getrf": "sdcz", "syevd": "sd", "heevd": "cz",
             "gesdd": "sdcz", "gesvd": "sdcz", "geev": "sdcz",
             "trsm": "sdcz", "gtsv": "sdcz", "geqrf": "sdcz", "orgqr": "sd",
             "ungqr": "cz", "gees": "sdcz", "gehrd": "sdcz", "sytrd": "sd",
             "hetrd": "cz"}

# The CPU's table of custom calls (see _registry.PlatformCalls).
CALLS = _registry.PlatformCalls(
    platform="cpu", library="a LAPACK", prefixes=("lapack_",),
    rules={f"lapack_{t}{routine}_ffi": (
        "of the typed FFI, lapack_<t><routine>_ffi, of LAPACK's routines",
        routine)
           for routine, types in _ROUTINES.items() for t in types},
    advice="")
_registry.RULES.add_platform(CALLS)


def _register(routines: Sequence[str], types: str = "sdcz"
              ) -> Callable[[Routine], Routine]:
  """Registers a rule ``rule(op, c, t)`` (``t`` the type letter) for
  ``lapack_<t><routine>_ffi`` of each type and routine (each in
  :data:`CALLS`)."""
  def decorate(rule: Routine) -> Routine:
    for routine in routines:
      for t in types:
        _registry.RULES.platform_rule(CALLS, f"lapack_{t}{routine}_ffi")(
            functools.partial(_typed, rule=rule, t=t))
    return rule
  return decorate


def _typed(op: Op, c: Compiler, *, rule: Routine, t: str) -> _registry.Step:
  return rule(op, c, t)


# Cholesky.

@_register(["potrf"])
def _potrf_rule(op: Op, c: Compiler, t: str) -> _registry.Step:
  """``potrf``: ``(factor, info)``; the other triangle untouched."""
  lower = _char(op, "uplo", "LU") == "L"
  return _step(call_of(op, c, functools.partial(potrf_tangents, lower=lower)))


def potrf_tangents(call, xs, ys, dxs, *, lower: bool):
  """``cholesky``'s tangents (see :data:`._custom_calls.Tangents`): JAX's
  rule at the call's factor, of the triangle the call reads."""
  del call
  (x,), (out, info), (dx,) = xs, ys, dxs
  l = _tril(_read_lower(out, lower))
  (l_dot,) = lax_tangents(
      functools.partial(lax.linalg.cholesky, symmetrize_input=False),
      lax_linalg.cholesky_p, [l],
      [_hermitian_of_lower(_read_lower(x, lower))],
      [_hermitian_of_lower(_read_lower(dx, lower))])
  n = out.shape[-1]
  mask = jnp.tril(jnp.ones((n, n), bool)) if lower else jnp.triu(
      jnp.ones((n, n), bool))
  t = jnp.where(mask, l_dot if lower else adjoint(l_dot), dx)
  return [_nan_where_failed(t, info), None]


# LU.

@_register(["getrf"])
def _getrf_rule(op: Op, c: Compiler, t: str) -> _registry.Step:
  """``getrf``: ``(lu, pivots (1-based), info)``."""
  return _step(call_of(op, c, getrf_tangents))


def getrf_tangents(call, xs, ys, dxs):
  """``lu``'s tangents (see :data:`._custom_calls.Tangents`): JAX's rule
  at the call's factors."""
  del call
  (x,), (lu, pivots, _), (dx,) = xs, ys, dxs
  pivots = pivots - 1
  perm = lax.linalg.lu_pivots_to_permutation(pivots, lu.shape[-2])
  lu_dot, *_ = lax_tangents(lax.linalg.lu, lax_linalg.lu_p,
                            [lu, pivots, perm], [x], [dx])
  return [lu_dot, None, None]


# Symmetric and Hermitian eigendecomposition.

@_register(["syevd"], "sd")
@_register(["heevd"], "cz")
def _syevd_rule(op: Op, c: Compiler, t: str) -> _registry.Step:
  """``syevd``/``heevd``: ``(eigenvectors, eigenvalues, info)``."""
  lower = _char(op, "uplo", "LU") == "L"
  if _char(op, "mode", "VN") != "V":
    return _step(call_of(op, c, None, "eigenvalues without eigenvectors "
                         "(JAX writes none)"))
  return _step(call_of(op, c, functools.partial(syevd_tangents, lower=lower)))


def syevd_tangents(call, xs, ys, dxs, *, lower: bool):
  """``eigh``'s tangents (see :data:`._custom_calls.Tangents`): JAX's rule
  at the call's eigenvectors, of the triangle the call reads."""
  del call
  (x,), (v, w, info), (dx,) = xs, ys, dxs
  dv, dw = lax_tangents(
      functools.partial(lax.linalg.eigh, lower=True, symmetrize_input=False),
      lax_linalg.eigh_p, [v, w],
      [_hermitian_of_lower(_read_lower(x, lower))],
      [_hermitian_of_lower(_read_lower(dx, lower))])
  return [_nan_where_failed(dv, info), _nan_where_failed(dw, info), None]


# Singular value decomposition.

@_register(["gesdd", "gesvd"])
def _gesdd_rule(op: Op, c: Compiler, t: str) -> _registry.Step:
  """``gesdd``/``gesvd``: ``(overwritten input, s, u, vt, info)``."""
  mode = _char(op, "mode", "ASN")
  return _step(call_of(op, c, functools.partial(gesdd_tangents, mode=mode),
                       "the input the routine "
                       "overwrites, the vectors of an SVD computed without "
                       "them, and the full vectors of a non-square matrix "
                       "(JAX has no derivative of those)"))


def gesdd_tangents(call, xs, ys, dxs, *, mode: str,
                   completion_nan: bool = False):
  """``svd``'s tangents (JAX's rule at the call's vectors); with
  `completion_nan`, of full vectors of a non-square matrix too: those of
  its reduced vectors, NaN in the columns of ``u`` and rows of ``vt`` past
  ``min(m, n)`` (an arbitrary orthonormal completion, which has none: a
  GPU's reduced SVD computes full vectors and slices them)."""
  del call
  (a,), (_, s, u, vt, info), (dx,) = xs, ys, dxs
  m, n = a.shape[-2:]
  k = min(m, n)
  if mode == "N":  # (JAX's rule computes vectors; s's tangent is theirs)
    _, ds = jax.jvp(functools.partial(lax.linalg.svd, compute_uv=False),
                    (a,), (dx,))
    return [NO_DERIVATIVE, _nan_where_failed(ds, info), NO_DERIVATIVE,
            NO_DERIVATIVE, None]
  du, ds, dvt = lax_tangents(
      functools.partial(lax.linalg.svd, full_matrices=False),
      lax_linalg.svd_p, [s, u[..., :, :k], vt[..., :k, :]], [a], [dx])
  vectors = [NO_DERIVATIVE, NO_DERIVATIVE]
  if mode == "S" or (mode == "A" and (m == n or completion_nan)):
    if mode == "A" and m != n:
      du = jnp.concatenate([du, jnp.full((*du.shape[:-1], m - k), jnp.nan,
                                         du.dtype)], axis=-1)
      dvt = jnp.concatenate([dvt, jnp.full((*dvt.shape[:-2], n - k, n),
                                           jnp.nan, dvt.dtype)], axis=-2)
    vectors = [_nan_where_failed(du, info), _nan_where_failed(dvt, info)]
  return [NO_DERIVATIVE, _nan_where_failed(ds, info), *vectors, None]


# Nonsymmetric eigendecomposition.

@_register(["geev"])
def _geev_rule(op: Op, c: Compiler, t: str) -> _registry.Step:
  """``geev``: ``(w, vl, vr, info)``; of real matrices ``(wr, wi, vl, vr,
  info)``."""
  _char(op, "compute_left", "VN")
  right = _char(op, "compute_right", "VN") == "V"
  return _step(call_of(op, c, functools.partial(
      _geev_tangents, real=t in "sd", right=right),
                     "the eigenvectors of a nonsymmetric matrix (JAX "
                     "differentiates them only where "
                     "lax.linalg.eig(enable_eigvec_derivs=True) asks)"))


def _geev_tangents(call, xs, ys, dxs, *, real: bool, right: bool):
  del call
  (a,), (dx,) = xs, dxs
  *_, vr, info = ys
  if not right:
    vr = lax.linalg.eig(a, compute_left_eigenvectors=False,
                        compute_right_eigenvectors=True)[-1]
  da = dx.astype(vr.dtype)
  dw = jnp.sum(jnp.linalg.solve(vr, da) * _mT(vr), axis=-1)
  dw = _nan_where_failed(dw, info)
  values = [jnp.real(dw), jnp.imag(dw)] if real else [dw]
  return [*values, NO_DERIVATIVE, NO_DERIVATIVE, None]


# Triangular and tridiagonal solves.

@_register(["trsm"])
def _trsm_rule(op: Op, c: Compiler, t: str) -> _registry.Step:
  """``trsm``: the solution of a triangular system."""
  for name, allowed in (("side", "LR"), ("uplo", "LU"), ("trans_x", "NTC"),
                        ("diag", "UN")):
    _char(op, name, allowed)
  if len(op.operands) != 2:
    raise NoRule(f"a trsm of {len(op.operands)} operands (JAX writes 2)")
  flags = {name: _char(op, name, "LRUNTC")
           for name in ("side", "uplo", "trans_x", "diag")}
  return _step(call_of(op, c, functools.partial(_trsm_tangents, **flags),
                       transpose=functools.partial(_trsm_transpose, **flags)))


def _trsm_transpose(call, cts, operands, *, side, uplo, trans_x, diag):
  """The transpose of ``b -> solve(a, b)`` (``a`` known)."""
  del call
  (ct,), (a, b) = cts, operands
  if ct is None:
    return [None, None]
  if ad.is_undefined_primal(a) or not ad.is_undefined_primal(b):
    raise NotImplementedError("a triangular solve is linear in its "
                              "right-hand side only")
  return [None, lax.linalg.triangular_solve(
      a, ct, left_side=side == "L", lower=uplo == "L",
      transpose_a=trans_x == "N", conjugate_a=trans_x == "C",
      unit_diagonal=diag == "U")]


def _trsm_tangents(call, xs, ys, dxs, *, side, uplo, trans_x, diag):
  """``triangular_solve``'s tangents: JAX's rule at the call's solution."""
  del call
  return lax_tangents(functools.partial(
      lax.linalg.triangular_solve, left_side=side == "L", lower=uplo == "L",
      transpose_a=trans_x != "N", conjugate_a=trans_x == "C",
      unit_diagonal=diag == "U"), lax_linalg.triangular_solve_p, ys, xs, dxs)


@_register(["gtsv"])
def _gtsv_rule(op: Op, c: Compiler, t: str) -> _registry.Step:
  """``gtsv``: ``(dl, d, du (overwritten), x, info)``."""
  call = call_of(op, c, _gtsv_tangents, "the factors the routine overwrites "
                 "its diagonals with", transpose=_gtsv_transpose)
  if not any(call.live[:3] + call.live[4:]):
    return _step(call)

  def step(env, dl, d, du, b):
    # The factors and the info code depend on the diagonals only (the
    # pivots compare them): computed again for a zero right-hand side, so
    # that they do not depend on it (a solve is linear in it, and JAX then
    # transposes it).
    *_, x, _ = _custom_calls.apply(call, dl, d, du, b)
    *factors, _, info = _custom_calls.apply(call, dl, d, du,
                                            jnp.zeros_like(b))
    return [*factors, x, info]
  return step


def _gtsv_transpose(call, cts, operands):
  """The transpose of ``b -> solve(T, b)`` (the diagonals known)."""
  dl, d, du, b = operands
  if (any(ad.is_undefined_primal(x) for x in (dl, d, du))
      or not ad.is_undefined_primal(b)):
    raise NotImplementedError("a tridiagonal solve is linear in its "
                              "right-hand side only")
  del call
  *factor_cts, ct, _ = cts
  if any(x is not None for x in factor_cts):
    raise NotImplementedError("a cotangent of the factors gtsv overwrites "
                              "its diagonals with")
  if ct is None:
    return [None] * 4
  # T^T's diagonals: its lower one is T's upper one shifted down, and back.
  zero = jnp.zeros_like(d[..., :1])
  dl_t = jnp.concatenate([zero, du[..., :-1]], axis=-1)
  du_t = jnp.concatenate([dl[..., 1:], zero], axis=-1)
  return [None, None, None, lax.linalg.tridiagonal_solve(dl_t, d, du_t, ct)]


def _gtsv_tangents(call, xs, ys, dxs):
  """``tridiagonal_solve``'s tangents: JAX's rule at the call's solution
  (the overwritten diagonals have none)."""
  del call
  *_, x, info = ys
  (dx,) = lax_tangents(lax.linalg.tridiagonal_solve,
                       lax_linalg.tridiagonal_solve_p, [x], xs, dxs)
  return [NO_DERIVATIVE] * 3 + [_nan_where_failed(dx, info), None]


# QR: geqrf, then orgqr/ungqr of its factors.

@_register(["geqrf"])
def _geqrf_rule(op: Op, c: Compiler, t: str) -> _registry.Step:
  """``geqrf``: ``(R above the diagonal, reflectors below; taus)``."""
  return _step(call_of(op, c, geqrf_tangents, "the Householder reflectors "
                       "of a QR factorization (JAX differentiates its Q, "
                       "from orgqr, and its R)"))


def _qr_tangents(x: jax.Array, dx: jax.Array, q: jax.Array, r: jax.Array
                 ) -> list[jax.Array]:
  """``qr``'s reduced tangents ``[dq, dr]``: JAX's rule at the factors `q`
  (m x k) and `r` (k x n)."""
  return lax_tangents(functools.partial(lax.linalg.qr, full_matrices=False),
                      lax_linalg.qr_p, [q, r], [x], [dx])


def _reduced_qr(x, g, taus):
  """The reduced ``(q, r)`` of geqrf's factors of `x`."""
  m, n = x.shape[-2:]
  k = min(m, n)
  q = lax.linalg.householder_product(g[..., :, :k], taus)
  return q, _triu(g[..., :k, :])


def geqrf_tangents(call, xs, ys, dxs):
  """``qr``'s tangents of the compact factors (see
  :data:`._custom_calls.Tangents`)."""
  del call
  (x,), (g, taus), (dx,) = xs, ys, dxs
  q, r = _reduced_qr(x, g, taus)
  _, dr = _qr_tangents(x, dx, q, r)
  m, n = x.shape[-2:]
  dr = jnp.pad(dr, [(0, 0)] * (dr.ndim - 2) + [(0, m - dr.shape[-2]), (0, 0)])
  upper = jnp.triu(jnp.ones((m, n), bool))
  # The reflectors below the diagonal and the taus have no derivative:
  # NaN, so that no use of theirs passes for one.
  return [jnp.where(upper, dr, jnp.full_like(dr, jnp.nan)),
          jnp.full_like(taus, jnp.nan)]


@_register(["orgqr"], "sd")
@_register(["ungqr"], "cz")
def orgqr_rule(op: Op, c: Compiler, t: str,
               form: Callable[[Call], Call] = lambda call: call,
               geqrf: Collection[str] | None = None) -> _registry.Step:
  """``orgqr``/``ungqr``: Q of Householder reflectors; of a geqrf's
  factors of a matrix, with ``qr``'s derivative with respect to it.

  `form` makes the call of `op` (a GPU library's call: LAPACK's, standing
  for it; see ._gpu_calls); `geqrf` names the targets of the geqrf calls
  whose factors it follows (:data:`GEQRF`, LAPACK's, if None).
  """
  source = _qr_source(op, c, GEQRF if geqrf is None else geqrf)
  if source is None:
    return _step(form(call_of(op, c, None, "the product of Householder "
                              "reflectors other than a QR factorization's (JAX "
                              "has no derivative of "
                              "lax.linalg.householder_product)")))
  call = form(call_of(op, c, _orgqr_tangents, "the full Q of a tall matrix "
                      "(this rule differentiates the reduced QR only)",
                      leading=1))

  def step(env, g, taus):
    return _custom_calls.apply(call, env[source], g, taus)
  return step


def _qr_source(op: Op, c: Compiler, geqrf: Collection[str]) -> int | None:
  """The matrix whose geqrf factors `op` multiplies, or None."""
  taus_op = c.defining.get(op.operands[1])
  g = op.operands[0]
  g_op = c.defining.get(g)
  if g_op is not None and g_op.name == "stablehlo.slice":
    # (Of a wide matrix, the reflectors of its leading square.)
    if (any(g_op.attrs.get("start_indices", ()))
        or any(s != 1 for s in g_op.attrs.get("strides") or ())):
      return None
    g = g_op.operands[0]
    g_op = c.defining.get(g)
  elif g_op is not None and g_op.name == "stablehlo.pad":
    pad_value = c.constants.get(g_op.operands[1])
    if (pad_value is None or np.any(np.asarray(pad_value) != 0)
        or any(g_op.attrs.get("edge_padding_low", ()))
        or any(g_op.attrs.get("interior_padding", ()))):
      return None
    g = g_op.operands[0]
    g_op = c.defining.get(g)
  if (g_op is None or g_op is not taus_op
      or g_op.name != _registry.CUSTOM_CALL
      or g_op.attrs.get("call_target_name") not in geqrf
      or g != g_op.results[0] or op.operands[1] != g_op.results[1]):
    return None
  return g_op.operands[0]


# The CPU's geqrf calls (from its table).
GEQRF = frozenset(target for target, (_, routine) in CALLS.rules.items()
                  if routine == "geqrf")


def _orgqr_tangents(call, xs, ys, dxs):
  (x, g, taus), (q_out,), (dx, _, _) = xs, ys, dxs
  m, n = x.shape[-2:]
  if q_out.shape[-1] != min(m, n):
    return [NO_DERIVATIVE]
  del call
  _, r = _reduced_qr(x, g[..., :, :n], taus)
  if m < n:  # (of a wide matrix, the reflectors of its leading square:
    # R's other columns, which Q's tangent does not depend on, Q^H x's)
    r = jnp.concatenate([r, adjoint(q_out) @ x[..., :, r.shape[-1]:]], -1)
  dq, _ = _qr_tangents(x, dx, q_out, r)
  return [dq]


# The factorizations JAX has no derivative of.

@_register(["gees"])
def _gees_rule(op: Op, c: Compiler, t: str) -> _registry.Step:
  """``gees``: the Schur form, vectors, eigenvalues, info."""
  _char(op, "sort", "N")
  return _step(call_of(op, c, None, "JAX has no derivative of "
                       "lax.linalg.schur"))


@_register(["gehrd"])
def _gehrd_rule(op: Op, c: Compiler, t: str) -> _registry.Step:
  """``gehrd``: the Hessenberg form and reflectors, info."""
  return _step(call_of(op, c, None, "JAX has no derivative of "
                       "lax.linalg.hessenberg"))


@_register(["sytrd"], "sd")
@_register(["hetrd"], "cz")
def _sytrd_rule(op: Op, c: Compiler, t: str) -> _registry.Step:
  """``sytrd``/``hetrd``: the tridiagonal form, reflectors, info."""
  return _step(call_of(op, c, None, "JAX has no derivative of "
                       "lax.linalg.tridiagonal"))
