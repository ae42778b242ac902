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
"""What the transformations of ``Exported.call`` ask of ``jax.export``.

The StableHLO interpreter (:mod:`jax._src.export.stablehlo_to_jax`) reads
modules and nothing else; what ``jax.vmap`` and forward mode of
``Exported.call`` need to know of an ``Exported`` and of this release's
``jax.export`` is asked here, found by feature detection, never by version
numbers.
"""

from __future__ import annotations

import dataclasses

from jax._src import core
from jax._src.export import _export


def platform_check_disabled(exported: _export.Exported) -> bool:
  """Whether ``exported`` was exported without its platform check."""
  return (_export.DisabledSafetyCheck.platform()
          in exported.disabled_safety_checks)


def check_arguments(exported: _export.Exported,
                    avals: list[core.ShapedArray]) -> None:
  """Checks arguments of ``avals`` as ``Exported.call`` checks its own.

  ``jax.export``'s own abstract evaluation of the call: its dtypes, ranks
  and static dimensions, and the shape constraints of a polymorphic
  module, with its messages.

  Raises:
    ValueError: ``Exported.call``'s error.
  """
  _export.call_exported_p.abstract_eval(*avals, exported=exported)


def pieces_missing() -> list[str]:
  """What the transformations of ``Exported.call`` need and this JAX lacks.

  ``jax.vmap`` and forward mode of ``Exported.call``
  (:mod:`jax._src.export.transforms`) interpret the serialized module: they
  need its call primitive, its serialized VJPs, the arguments its module
  keeps, and its platforms.
  """
  missing = []
  if not isinstance(getattr(_export, "call_exported_p", None), core.Primitive):
    missing.append("jax._src.export._export.call_exported_p")
  for name in ("has_vjp", "vjp", "call"):
    if not callable(getattr(_export.Exported, name, None)):
      missing.append(f"jax.export.Exported.{name}")
  fields = {f.name for f in dataclasses.fields(_export.Exported)}
  for name in ("module_kept_var_idx", "platforms", "nr_devices",
               "ordered_effects", "unordered_effects",
               "disabled_safety_checks", "mlir_module_serialized"):
    if name not in fields:
      missing.append(f"jax.export.Exported.{name}")
  if not callable(getattr(getattr(_export, "DisabledSafetyCheck", None),
                          "platform", None)):
    missing.append("jax.export.DisabledSafetyCheck.platform")
  return missing
