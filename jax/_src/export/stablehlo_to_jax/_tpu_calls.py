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
"""The TPU's custom calls that ``jax.export`` writes.

On a TPU, ``lax.linalg`` and ``lax.approx_max_k`` lower to XLA's custom
calls, which the TPU computes. Those whose definition a ``lax`` operation
computes on any platform are that operation:

============================================  ============================
TPU call                                      computed as
============================================  ============================
``Qr``                                        ``lax.linalg.geqrf``
``ProductOfElementaryHouseholderReflectors``  ``householder_product``
``LuDecomposition``                           ``lax.linalg.lu``
``ApproxTopK``                                ``lax.approx_max_k``/
                                              ``approx_min_k``, with the
                                              call's parameters
============================================  ============================

``Eigh`` has no rule (:data:`CALLS` says why). :data:`CALLS` is the
platform's table (:class:`._registry.PlatformCalls`): each rule is
registered from it, and a TPU call without a rule is refused naming what
it holds.
"""

from __future__ import annotations

from jax import lax
from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _registry
from jax._src.lax import linalg
import numpy as np

NoRule = _ir.NoRule
Op = _ir.Op
Compiler = _registry.Compiler

_AS_LAX = ("that lax operations write and the CPU computes by the same "
           "definition")

# The TPU's table of custom calls (see _registry.PlatformCalls).
CALLS = _registry.PlatformCalls(
    platform="tpu", library="a TPU's", prefixes=(),
    rules={"Qr": (_AS_LAX, "Qr"),
           "ProductOfElementaryHouseholderReflectors": (
               _AS_LAX, "ProductOfElementaryHouseholderReflectors"),
           "LuDecomposition": (_AS_LAX, "LuDecomposition"),
           "ApproxTopK": (_AS_LAX, "ApproxTopK")},
    refused={"Eigh": "Eigh is XLA's Jacobi solver, whose eigenvectors' "
                     "signs and order no lax operation reproduces",
             "Svd": "", "TopK": ""})
_registry.RULES.add_platform(CALLS)
rule = _registry.RULES.platform_rule


def _pure(op: Op) -> None:
  """NoRule for a custom call that declares side effects."""
  if op.attrs.get("has_side_effect"):
    raise NoRule("a custom call with side effects")


@rule(CALLS, "Qr")
def _qr_rule(op: Op, c: Compiler) -> _registry.Step:
  """XLA's Householder QR in LAPACK's compact form, as lax's geqrf.

  (JAX has no derivative of geqrf or householder_product.)
  """
  _pure(op)
  c.no_derivative.add("stablehlo.custom_call @Qr")
  if len(op.results) == 2:  # (jax.export's; tf2xla's is one tuple)
    return lambda env, x: list(linalg.geqrf(x))
  return lambda env, x: [tuple(linalg.geqrf(x))]


@rule(CALLS, "LuDecomposition")
def _lu_rule(op: Op, c: Compiler) -> _registry.Step:
  """XLA's LU with partial pivoting (TPU's), as ``lax.linalg.lu``, which
  writes it: ``(lu, pivots, permutation)``, both 0-based (on a TPU the
  call itself; elsewhere the platform's LU of the same definition: of a
  matrix with an exactly zero pivot, LAPACK's factors, with the column
  below it unscaled, where a TPU's may be inf or NaN)."""
  del c
  _pure(op)
  if len(op.results) == 3:  # (jax.export's; older ones write one tuple)
    return lambda env, x: list(lax.linalg.lu(x))
  return lambda env, x: [tuple(lax.linalg.lu(x))]


@rule(CALLS, "ProductOfElementaryHouseholderReflectors")
def _householder_product_rule(op: Op, c: Compiler) -> _registry.Step:
  """XLA's product of Householder reflectors, as lax's."""
  _pure(op)
  c.no_derivative.add(
      "stablehlo.custom_call @ProductOfElementaryHouseholderReflectors")
  return lambda env, x, taus: [linalg.householder_product(x, taus)]


@rule(CALLS, "ApproxTopK")
def _approx_top_k_rule(op: Op, c: Compiler) -> _registry.Step:
  """``ApproxTopK``: ``lax.approx_max_k``/``approx_min_k``."""
  config = op.attrs.get("mhlo.backend_config")
  if not isinstance(config, dict) or len(op.operands) != 4:
    raise NoRule("an ApproxTopK other than the one lax.approx_max_k writes "
                 "(a dictionary backend_config, 4 operands)")
  dim = int(config["reduction_dim"])
  is_max = _approx_top_k_order(op, c)
  _check_iota_and_inits(op, c, dim, is_max)
  fn = lax.approx_max_k if is_max else lax.approx_min_k
  kwargs = dict(
      k=int(config["top_k"]), reduction_dimension=dim,
      recall_target=float(config["recall_target"]),
      reduction_input_size_override=int(
          config.get("reduction_input_size_override", -1)),
      aggregate_to_topk=bool(config.get("aggregate_to_topk", True)))
  return lambda env, x, *_: list(fn(x, **kwargs))


def _approx_top_k_order(op: Op, c: Compiler) -> bool:
  """Whether the comparator is ``GT`` of the values (max) or ``LT`` (min)."""
  called = op.attrs.get("called_computations") or ()
  comparator = c.funcs.get(called[0]) if len(called) == 1 else None
  ops = comparator.body.ops if comparator is not None else ()
  cmp = ops[0] if len(ops) == 1 else None
  if (cmp is None or cmp.name != "stablehlo.compare"
      or cmp.operands != comparator.body.args[:2]
      or cmp.attrs["comparison_direction"] not in ("GT", "LT")):
    raise NoRule("an ApproxTopK comparator other than GT or LT of the values")
  return cmp.attrs["comparison_direction"] == "GT"


def _check_iota_and_inits(op: Op, c: Compiler, dim: int, is_max: bool
                          ) -> None:
  """The indices an iota along `dim`, the initial values lax's."""
  iota = c.defining.get(op.operands[1])
  if (iota is None or iota.name != "stablehlo.iota"
      or iota.attrs["iota_dimension"] != dim):
    raise NoRule("ApproxTopK indices other than an iota along the reduced "
                 "dimension")
  init, init_index = (c.constant(v) for v in op.operands[2:])
  want = -np.inf if is_max else np.inf
  if (init is None or init_index is None or np.asarray(init) != want
      or np.asarray(init_index) != -1):
    raise NoRule(f"ApproxTopK initial values other than {want} and -1")
