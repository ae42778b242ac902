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
"""CHLO's ops and the top-k custom call, which ``jax.export`` writes.

A module exported for one platform has CHLO's ops decomposed into
StableHLO; one exported for several (a TPU among them) keeps them
(``chlo.erf``, ``chlo.acos``, ``chlo.top_k``...), and XLA decomposes them
when it compiles the module. Each elementwise one is written as itself
(:mod:`._as_op`: XLA's values, the ``lax`` function's derivative);
``chlo.top_k`` is ``lax.top_k``, whose lowering is that op.

``ApproxTopK`` (``lax.approx_max_k``/``approx_min_k``) is the
``lax`` operation whose lowering is that call, with the call's parameters.
"""

from __future__ import annotations

import inspect

from jax import lax
from jax._src.export.stablehlo_to_jax import _as_op
from jax._src.export.stablehlo_to_jax import _dynamic
from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _registry
import numpy as np

NoRule = _ir.NoRule
Op = _ir.Op
Compiler = _registry.Compiler


@_registry.rule(*_as_op.chlo_ops(), padded=_dynamic.elementwise)
def _chlo_elementwise_rule(op: Op, c: Compiler) -> _registry.Step:
  """A CHLO elementwise op, as itself."""
  del c
  name = op.name
  return lambda env, *xs: [_as_op.apply(name, *xs)]


@_registry.rule("chlo.top_k")
def _top_k_rule(op: Op, c: Compiler) -> _registry.Step:
  """``chlo.top_k``: ``lax.top_k`` along the last dimension."""
  del c
  k = op.attrs["k"]
  stable = bool(op.attrs.get("is_stable", False))
  kwargs = {}
  if "is_stable" in inspect.signature(lax.top_k).parameters:
    kwargs["is_stable"] = stable
  elif "is_stable" in op.attrs:
    raise NoRule("is_stable, which this JAX's lax.top_k does not take")
  return lambda env, x: list(lax.top_k(x, k, **kwargs))


@_registry.rule("stablehlo.custom_call @ApproxTopK")
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
