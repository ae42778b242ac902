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

(The TPU's ``ApproxTopK`` call is in :mod:`._tpu_calls`.)
"""

from __future__ import annotations

import inspect

from jax import lax
from jax._src.export.stablehlo_to_jax import _as_op
from jax._src.export.stablehlo_to_jax import _dynamic
from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _registry

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
