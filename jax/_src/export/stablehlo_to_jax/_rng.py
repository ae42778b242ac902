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
"""A ``rng_bit_generator`` with any key XLA takes, as a JAX primitive.

``lax.rng_bit_generator`` takes a key of ``uint64[2]`` or ``uint32[4]``.
tf2xla's stateless random ops (``tf.random.stateless_normal``...) draw with
Philox from a ``uint64[3]`` key (the key and a two-word counter), which
lax refuses. :data:`rng_bit_generator_p` is the op itself: it lowers to the
same ``stablehlo.rng_bit_generator``, with the same algorithm, key and
result types, so its numbers are XLA's for the module.

Its results are integers (the new key, the bits), without tangents. A batch
of keys (a seed computed from the data, under ``jax.vmap``) draws once per
key, in a loop inside the program (``lax.map``): the op draws from one key,
and each batch element gets the numbers its unbatched call draws, as JAX's
own ``rng_bit_generator`` does for a batch of keys.
"""

from __future__ import annotations

import jax
from jax._src import core
from jax._src.lib.mlir.dialects import hlo
from jax._src.export.stablehlo_to_jax import _primitive
from jax._src.export.stablehlo_to_jax import compat
from jax import lax
import jax.numpy as jnp
from jax.typing import ArrayLike, DTypeLike
import numpy as np


def rng_bit_generator(key: ArrayLike, *, shape: tuple[int, ...],
                      dtype: DTypeLike, algorithm: str) -> list[jax.Array]:
  """``stablehlo.rng_bit_generator``: the new key and the random bits.

  Args:
    key: the state, of the type the algorithm takes (``uint64[3]`` for
      tf2xla's Philox).
    shape: the bits' shape.
    dtype: the bits' unsigned integer dtype.
    algorithm: ``"DEFAULT"``, ``"THREE_FRY"`` or ``"PHILOX"``.
  """
  return rng_bit_generator_p.bind(key, shape=tuple(shape),
                                  dtype=np.dtype(dtype), algorithm=algorithm)


def _abstract_eval(key, *, shape, dtype, algorithm):
  del algorithm
  if key.ndim != 1 or not np.issubdtype(key.dtype, np.unsignedinteger):
    raise TypeError(f"rng_bit_generator takes a vector key of unsigned "
                    f"integers, not {key.str_short()}")
  return [key.update(weak_type=False), core.ShapedArray(shape, dtype)]


def _lower(ctx, key, *, shape, dtype, algorithm):
  del shape, dtype
  types = [compat.aval_to_ir_type(ctx.module_context, a)
           for a in ctx.avals_out]
  op = hlo.RngBitGeneratorOp(
      *types, hlo.RngAlgorithmAttr.get(algorithm), key)
  return op.results


def _batch(args, dims, *, shape, dtype, algorithm):
  key, = args
  dim, = dims
  keys = jnp.moveaxis(key, dim, 0)

  def one(k):
    return tuple(rng_bit_generator(k, shape=shape, dtype=dtype,
                                   algorithm=algorithm))
  new_keys, bits = lax.map(one, keys)
  return [new_keys, bits], [0, 0]


rng_bit_generator_p = _primitive.op_primitive(
    "stablehlo_rng_bit_generator", abstract_eval=_abstract_eval,
    lower=_lower, batch=_batch, jvp=None, multiple_results=True)
