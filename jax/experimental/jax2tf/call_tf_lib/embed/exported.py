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
"""A ``jax.export.Exported`` for the module of a jax2tf ``XlaCallModule`` op.

A function that ``jax2tf.convert`` saved is, inside, one ``XlaCallModule`` op
whose attributes carry everything ``jax.export`` serializes: the StableHLO
module, its calling convention version, its platforms and disabled safety
checks. :func:`exported_from_module_op` rebuilds the ``Exported`` from them:
argument shapes from the module (symbolic names recovered from its dimension
variables), result shapes by shape refinement, and the saved VJP module as
its gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import functools
from typing import TYPE_CHECKING, Any

import jax
from jax._src import core
from jax._src.export import shape_poly
from jax._src.export.transforms import platforms as platforms_lib
from jax._src.export.transforms import refine
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib.tf_function import shapes
from jax.experimental.jax2tf import jax2tf as jax2tf_internal
from jax import tree_util
import tensorflow as tf

if TYPE_CHECKING:
  import numpy as np


class NotEmbeddableError(Exception):
  """The TF function is not (only) a call of one embeddable XlaCallModule."""


def _module_attrs(op: tf.Operation) -> dict[str, Any]:
  attrs = {}
  for name in ("module", "version", "platforms", "Tin", "Tout",
               "function_list", "has_token_input_output", "disabled_checks",
               "dim_args_spec"):
    try:
      attrs[name] = op.get_attr(name)
    except ValueError:
      attrs[name] = None
  return attrs


def _check_convention(attrs: dict[str, Any]) -> None:
  if attrs["function_list"]:
    raise NotEmbeddableError("the module calls TF functions (call_tf_graph)")
  if attrs["has_token_input_output"] or attrs["dim_args_spec"]:
    raise NotEmbeddableError("the module uses an old calling convention")


def _jax_dtypes(tf_dtypes: Sequence[tf.DType | int]) -> list[np.dtype]:
  return [jax2tf_internal._to_jax_dtype(tf.as_dtype(t))  # pylint: disable=protected-access
          for t in tf_dtypes]


def _exported(attrs: dict[str, Any], fun_name: str,
              in_avals: tuple[core.ShapedArray, ...],
              out_avals: tuple[core.ShapedArray, ...],
              platforms: tuple[str, ...], uses_poly: bool,
              get_vjp: Callable[..., jax.export.Exported] | None
              ) -> jax.export.Exported:
  return compat.make_exported(
      fun_name=fun_name,
      in_tree=compat.flat_args_tree(len(in_avals)),
      in_avals=in_avals,
      out_tree=tree_util.tree_structure(tuple(range(len(out_avals)))),
      out_avals=out_avals,
      nr_devices=1,
      platforms=platforms,
      ordered_effects=(),
      unordered_effects=(),
      disabled_safety_checks=tuple(
          compat.disabled_safety_check(c.decode())
          for c in (attrs["disabled_checks"] or ())),
      mlir_module_serialized=attrs["module"],
      calling_convention_version=attrs["version"],
      module_kept_var_idx=tuple(range(len(in_avals))),
      uses_global_constants=uses_poly,
      _get_vjp=get_vjp)


def exported_from_module_op(op: tf.Operation, fun_name: str,
                            vjp_op: tf.Operation | None = None
                            ) -> jax.export.Exported:
  """A ``jax.export.Exported`` for an XlaCallModule op.

  Args:
    op: the XlaCallModule op.
    fun_name: the name the embedded function gets.
    vjp_op: the XlaCallModule op of its saved VJP, if any. By jax2tf's
      convention it takes the primal operands and the output cotangents and
      returns the operand cotangents, so its shapes are the primal's: they are
      not inferred again (the cotangents' sizes, such as ``2*b``, could not be
      named from the VJP module alone).

  Returns:
    The Exported; with ``vjp()`` if ``vjp_op`` is given.

  Raises:
    NotEmbeddableError: the op cannot be embedded.
  """
  attrs = _module_attrs(op)
  vjp_attrs = _module_attrs(vjp_op) if vjp_op is not None else None
  return _exported_cached(
      fun_name, _AttrsKey(attrs),
      None if vjp_attrs is None else _AttrsKey(vjp_attrs))


def _hashable(value: object) -> object:
  return tuple(map(_hashable, value)) if isinstance(value, list) else value


class _AttrsKey:
  """Module attributes as a cache key: equal when every attribute is.

  The module's bytes alone do not say its platforms (a module serialized
  for one platform has no platform argument, whichever it is), its types
  or its disabled checks.
  """

  def __init__(self, attrs: dict[str, Any]):
    self.attrs = attrs
    self._key = tuple((name, _hashable(value))
                      for name, value in sorted(attrs.items()))

  def __eq__(self, other: object) -> bool:
    return isinstance(other, _AttrsKey) and self._key == other._key

  def __hash__(self) -> int:
    return hash(self._key)


@functools.lru_cache(maxsize=64)
def _exported_cached(fun_name: str, attrs_key: _AttrsKey,
                     vjp_key: _AttrsKey | None) -> jax.export.Exported:
  attrs = attrs_key.attrs
  _check_convention(attrs)
  module_bytes = attrs["module"]
  platforms = (tuple(p.decode().lower() for p in attrs["platforms"])
               or (jax.default_backend(),))
  nr_platform_args = platforms_lib.nr_platform_args(platforms)
  specs, uses_poly = refine.input_shape_specs(module_bytes,
                                                 nr_platform_args)
  scope = shape_poly.SymbolicScope()
  in_avals = tuple(
      core.ShapedArray(jax.export.symbolic_shape(spec, scope=scope), dt)
      for spec, dt in zip(specs, _jax_dtypes(attrs["Tin"])))
  try:
    out_shapes = shapes.fit_symbolic_output_shapes(
        in_avals, lambda in_shapes: refine.refined_result_shapes(
            module_bytes, nr_platform_args, in_shapes))
  except ValueError as e:
    raise NotEmbeddableError(str(e)) from e
  out_avals = tuple(core.ShapedArray(s, dt) for s, dt in
                    zip(out_shapes, _jax_dtypes(attrs["Tout"])))
  get_vjp = None
  if vjp_key is not None:
    vjp_attrs = vjp_key.attrs
    _check_convention(vjp_attrs)
    vjp_in, vjp_out = (_jax_dtypes(vjp_attrs["Tin"]),
                       _jax_dtypes(vjp_attrs["Tout"]))
    if (len(vjp_in) != len(in_avals) + len(out_avals)
        or len(vjp_out) != len(in_avals)):
      raise NotEmbeddableError("the saved gradient has an unexpected signature")
    vjp = _exported(
        vjp_attrs, fun_name + "_vjp",
        tuple(a.update(dtype=dt) for a, dt in zip(in_avals + out_avals,
                                                  vjp_in)),
        tuple(a.update(dtype=dt) for a, dt in zip(in_avals, vjp_out)),
        platforms,
        refine.serialized_uses_shape_polymorphism(vjp_attrs["module"]), None)
    get_vjp = lambda _: vjp
  return _exported(attrs, fun_name, in_avals, out_avals, platforms, uses_poly,
                   get_vjp)


compat.register_cache(_exported_cached, "call_tf: embedded jax2tf modules")
