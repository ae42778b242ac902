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
"""The names of ``call_tf``'s ``vmap_method``s, and their groups.

Each name is spelled here only: the other modules, and the messages they
write, use these constants. What each method does is
:mod:`.batching.dispatch`'s docstring.

The values of the option ``jax_call_tf_vectorizer`` are here too: its
``"pfor"`` and the method ``"pfor"`` both name TensorFlow's vectorizer.
``jax/_src/config.py`` declares the option with the same values, written out,
since JAX's config cannot import jax2tf.

This module imports nothing of JAX or TensorFlow, so that every module of
``call_tf_lib``, and ``call_tf.py``'s annotations, can use it.
"""

from __future__ import annotations

from typing import Final, Literal

# A vmap_method other than None, the default.
VmapMethod = Literal["vectorized", "pfor", "sequential", "expand_dims",
                     "broadcast_all", "batch_polymorphic"]

VECTORIZED: Final = "vectorized"
PFOR: Final = "pfor"
SEQUENTIAL: Final = "sequential"
EXPAND_DIMS: Final = "expand_dims"
BROADCAST_ALL: Final = "broadcast_all"
BATCH_POLYMORPHIC: Final = "batch_polymorphic"

# Every valid vmap_method, None (the default) first, in the order messages
# list them.
ALL: tuple[VmapMethod | None, ...] = (
    None, VECTORIZED, PFOR, SEQUENTIAL, EXPAND_DIMS, BROADCAST_ALL,
    BATCH_POLYMORPHIC)

# The methods that vectorize the function: one call for the whole batch, of
# the function batched by JAX's rules (its StableHLO module) or by pfor.
VECTORIZING: frozenset[VmapMethod | None] = frozenset(
    {None, VECTORIZED, PFOR})

# The methods whose vectorizer (and derivatives) the option
# jax_call_tf_vectorizer chooses; PFOR always takes pfor.
FOLLOW_VECTORIZER_OPTION: frozenset[VmapMethod | None] = frozenset(
    {None, VECTORIZED})

# The methods that make one call of the function itself on batched shapes,
# in the order messages list them.
ONE_CALL: tuple[VmapMethod, ...] = (
    EXPAND_DIMS, BROADCAST_ALL, BATCH_POLYMORPHIC)

# The values of the option jax_call_tf_vectorizer: JAX's rules on the
# function's StableHLO module (the default), or TensorFlow's pfor only.
Vectorizer = Literal["stablehlo", "pfor"]

STABLEHLO: Final = "stablehlo"
VECTORIZERS: tuple[Vectorizer, ...] = (STABLEHLO, PFOR)
