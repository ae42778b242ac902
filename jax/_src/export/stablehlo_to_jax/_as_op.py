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
"""Elementwise ops as themselves, where lax lowers its function otherwise.

JAX lowers a few ``lax`` functions to other ops than their StableHLO
namesake, for some types: ``lax.cos`` and ``lax.sin`` of complex numbers by
formulas of their parts, ``lax.abs`` of complex numbers by a ``hypot``,
``lax.max`` and ``lax.min`` of complex numbers by comparisons and selects,
``lax.logistic`` of the narrow float types in ``float32``, and a conversion
of floats to booleans as a comparison with zero. XLA computes the op itself
otherwise (measured, ``tests/stablehlo``: in the last bits, in the sign of
a zero, at subnormal numbers and infinities).

:data:`op_p` is the op itself: its lowering is ``stablehlo.<name>``, so its
values are XLA's for the module; its batching rule applies it to the
batched arrays (elementwise), and its derivative is JAX's derivative of the
``lax`` function (``cos``' is ``-sin``), which JAX transposes.
:data:`to_bool_p` is ``stablehlo.convert`` to booleans, whose derivative
is zero.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
from jax._src import core
from jax._src.interpreters import ad
from jax._src.interpreters import batching
from jax._src.lib.mlir import ir
from jax._src.export.stablehlo_to_jax import _primitive
from jax._src.export.stablehlo_to_jax import compat
from jax import lax
from jax.typing import ArrayLike
import numpy as np


# Each op's lax function: its derivative is the op's. A name with a dialect
# is that op (``chlo.erf``); a name without one, ``stablehlo.<name>``.
_LAX: dict[str, Callable[..., jax.Array]] = {
    "cosine": lax.cos, "sine": lax.sin, "abs": lax.abs, "maximum": lax.max,
    "minimum": lax.min, "logistic": lax.logistic,
    # CHLO's elementwise ops, which jax.export keeps in modules for several
    # platforms (XLA decomposes them when it compiles the module).
    **{f"chlo.{name}": getattr(lax, fn) for name, fn in (
        ("acos", "acos"), ("acosh", "acosh"), ("asin", "asin"),
        ("asinh", "asinh"), ("atan", "atan"), ("atanh", "atanh"),
        ("cosh", "cosh"), ("sinh", "sinh"), ("erf", "erf"), ("erfc", "erfc"),
        ("erf_inv", "erf_inv"), ("lgamma", "lgamma"),
        ("digamma", "digamma"), ("bessel_i1e", "bessel_i1e"),
        ("conj", "conj"), ("square", "square"), ("next_after", "nextafter"),
        ("polygamma", "polygamma"), ("zeta", "zeta"))
       if hasattr(lax, fn)},
}


def chlo_ops() -> tuple[str, ...]:
  """The CHLO ops :func:`apply` writes as themselves."""
  return tuple(n for n in _LAX if n.startswith("chlo."))


def apply(name: str, *operands: ArrayLike) -> jax.Array:
  """The op `name` (``stablehlo.<name>`` without a dialect) of `operands`
  (of one shape and type)."""
  if name not in _LAX:
    raise ValueError(f"no op {name!r} here")
  return op_p.bind(*operands, name=name)


def to_bool(x: ArrayLike) -> jax.Array:
  """``stablehlo.convert`` of `x` to booleans."""
  return to_bool_p.bind(x)


def _abstract_eval(*operands, name):
  x = operands[0]
  if name == "abs" and np.issubdtype(x.dtype, np.complexfloating):
    return core.ShapedArray(x.shape, np.finfo(x.dtype).dtype)
  return core.ShapedArray(x.shape, x.dtype)


def _to_bool_abstract_eval(x):
  return core.ShapedArray(x.shape, np.dtype(np.bool_))


def _lower(ctx, *operands, name="convert"):
  aval_out, = ctx.avals_out
  result = compat.aval_to_ir_type(ctx.module_context, aval_out)
  op = ir.Operation.create(name if "." in name else f"stablehlo.{name}",
                           results=[result], operands=list(operands))
  return op.results


def _batch(args, dims, **params):
  prim = op_p if params else to_bool_p
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
  moved = [batching.bdim_at_front(a, d, size) for a, d in zip(args, dims)]
  return prim.bind(*moved, **params), 0


def _jvp(primals, tangents, *, name):
  out = op_p.bind(*primals, name=name)
  # Differentiated with respect to the operands with a tangent only (the
  # order of polygamma has no derivative).
  moving = [i for i, t in enumerate(tangents) if type(t) is not ad.Zero]  # pylint: disable=unidiomatic-typecheck

  def fn(*xs):
    args = list(primals)
    for i, x in zip(moving, xs):
      args[i] = x
    return _LAX[name](*args)
  _, tangent = jax.jvp(fn, tuple(primals[i] for i in moving),
                       tuple(tangents[i] for i in moving))
  return out, tangent


op_p = _primitive.op_primitive(
    "stablehlo_elementwise", abstract_eval=_abstract_eval, lower=_lower,
    batch=_batch, jvp=_jvp)
to_bool_p = _primitive.op_primitive(
    "stablehlo_convert_to_bool", abstract_eval=_to_bool_abstract_eval,
    lower=_lower, batch=_batch, jvp=None)
