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
"""``jax.vmap`` of ``call_tf``.

* :mod:`.dispatch`: the one dispatcher of ``vmap_method`` semantics, for
  every kind of call (like ``jax._src.ffi.ffi_batching_rule``), and the one
  check of a batched call's results.
* :mod:`.rule`: the ``call_tf_p`` primitive's batching rule: a TF function
  called on a batch (the StableHLO path, pfor, or the one-call methods).
* :mod:`.pfor`: TensorFlow's vectorizer, and reading what it failed on.
"""

from jax.experimental.jax2tf.call_tf_lib import _lazy

__getattr__ = _lazy.lazy_submodules(__name__)
