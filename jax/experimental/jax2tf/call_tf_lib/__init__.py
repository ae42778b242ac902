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
"""The machinery behind ``jax2tf.call_tf``'s ``vmap``, TF modes and embedding.

``call_tf.py`` imports this package once and calls into its modules, one job
each:

* :mod:`.vmap`: the one dispatcher of ``vmap_method`` semantics, shared by
  the two ways ``call_tf`` makes a call (like ``ffi_batching_rule``).
* :mod:`.vmap_tf`: the ``call_tf_p`` primitive's batching rule: how a TF
  function is called on a batch (vectorized with pfor, or once on batched
  shapes).
* :mod:`.pfor`: TF's vectorizer, and reading what it failed on.
* :mod:`.effects`: which TF ops have side effects.
* :mod:`.errors`: the errors users see, and their messages.
* :mod:`.captures`: the values of captured variables, in every TF mode.
* :mod:`.compile`: TF function to HLO, in every TF mode.
* :mod:`.shapes`: output shapes TF leaves unknown.
* :mod:`.restored`, :mod:`.stablehlo`, :mod:`.exported`, :mod:`.embed`:
  functions restored from jax2tf SavedModels, embedded as StableHLO.
* :mod:`.compat`: every JAX and TF internal that differs across releases.

Submodules load on first use (``call_tf_lib.vmap``), so that each can be
added on its own; see https://github.com/jax-ml/jax/issues/11753.
"""

import importlib
import types


def __getattr__(name: str) -> types.ModuleType:
  if name.startswith("_"):
    raise AttributeError(name)
  try:
    return importlib.import_module(f"{__name__}.{name}")
  except ModuleNotFoundError as e:
    if e.name != f"{__name__}.{name}":
      raise
    raise AttributeError(f"module {__name__!r} has no submodule {name!r}"
                         ) from None
