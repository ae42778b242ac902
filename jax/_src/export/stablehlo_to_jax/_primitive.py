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
"""An op as itself: the private primitive that writes one StableHLO op.

Where no ``lax`` operation lowers to an op exactly as the module writes it
(a sort with its own comparator, tf2xla's random bits, a custom call, an
elementwise op JAX lowers otherwise, a barrier JAX does not transpose), the
interpreter binds a primitive of its own that lowers to that op. Each is
made here, by :func:`op_primitive`: evaluated eagerly by compiling it (as
JAX's own primitives), with its abstract evaluation, lowering, batching
rule and derivative (a JVP, or none: zero tangents; and a transpose where
the op is linear).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
import functools
from typing import Any

from jax._src import core
from jax._src import dispatch
from jax._src.interpreters import ad
from jax._src.interpreters import batching
from jax._src.interpreters import mlir

# JAX's rules of a primitive, as its registries take them.
Rule = Callable[..., Any]


def op_primitive(name: str, *, abstract_eval: Rule, lower: Rule,
                 batch: Rule, jvp: Rule | None,
                 transpose: Rule | None = None,
                 multiple_results: bool = False,
                 platform_lowerings: Mapping[str, Rule] | None = None
                 ) -> core.Primitive:
  """The primitive `name`, registered with JAX.

  Args:
    name: its name, as jaxprs print it (``stablehlo_<op>``).
    abstract_eval: ``abstract_eval(*avals, **params)``: its results' avals.
    lower: its lowering on every platform that `platform_lowerings` does
      not name.
    batch: its batching rule, ``batch(args, dims, **params)``.
    jvp: its JVP rule, ``jvp(primals, tangents, **params)``; None: its
      results do not depend differentiably on its operands (zero
      tangents).
    transpose: its transpose, where it is linear; None: it has none.
    multiple_results: whether it returns a list of values.
    platform_lowerings: lowerings by platform (``"cuda"``, ...) that
      replace `lower` there.
  """
  p = core.Primitive(name)
  p.multiple_results = multiple_results
  p.def_impl(functools.partial(dispatch.apply_primitive, p))
  p.def_abstract_eval(abstract_eval)
  mlir.register_lowering(p, lower)
  for platform, rule in (platform_lowerings or {}).items():
    mlir.register_lowering(p, rule, platform=platform)
  batching.primitive_batchers[p] = batch
  if jvp is None:
    ad.defjvp_zero(p)
  else:
    ad.primitive_jvps[p] = jvp
  if transpose is not None:
    ad.primitive_transposes[p] = transpose
  return p
