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
"""A TensorFlow function as ``call_tf`` needs it, in every TF mode.

* :mod:`.traces`: the TF traces of a ``call_tf``, and when one is reused.
* :mod:`.own_trace`: a ``tf.function``'s own trace as ``call_tf``'s flat
  function's, where that adds nothing (one TF trace).
* :mod:`.graph`: a traced function's graph: its concrete function and ops.
* :mod:`.compile`: TF function to HLO (TF2 eager, ``tf.function``, TF1).
* :mod:`.version`: the TensorFlow versions ``call_tf`` can use.
* :mod:`.captures`: the values of captured variables and tensors.
* :mod:`.shapes`: output shapes that TF leaves unknown.
* :mod:`.effects`: which ops have side effects.
* :mod:`.graph_call`: the ``call_tf_graph=True`` custom call.
* :mod:`.xla_fidelity`: what XLA computes otherwise than TF's kernels, and
  tf2xla's inexact kernels.
* :mod:`.empty`: results that hold no value, shaped as TF's graph says.
* :mod:`.persistent_cache`: conversions kept on disk across processes,
  beside JAX's compilation cache.
"""

from jax.experimental.jax2tf.call_tf_lib import _lazy

__getattr__ = _lazy.lazy_submodules(__name__)
