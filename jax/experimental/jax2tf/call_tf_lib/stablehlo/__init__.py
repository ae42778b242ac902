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
"""The StableHLO path: a TF function's XLA lowering as JAX primitives.

The interpreter itself, a StableHLO module as ``lax`` operations, is
JAX's: ``jax._src.export.stablehlo_to_jax``; a module as a JAX function
(refined, for a platform, cached) is ``jax._src.export.transforms.function``'s
``ModuleFunction``. Here, TensorFlow's policy around them:

* :mod:`.path`: when ``call_tf`` takes the path, and the module of a TF
  function as a ``ModuleFunction`` with its captured values and TF's
  derivatives.
* :mod:`.platforms`: ``call_tf`` on the platforms TensorFlow does not
  compile for (a TPU or a GPU with ``tensorflow-cpu``, the other platforms
  of a ``jax.export``): the CPU module through the interpreter.
* :mod:`.tf_derivatives`: TF's gradients where tf2xla's lowerings branch
  or kink (the interpreter's ``DerivativeRules``).
* :mod:`.tf_softmax`: Softmax's and LogSoftmax's lowerings with TF's
  gradients' formulas, which cost less than JAX's derivative of their ops.
* :mod:`.exactness`: when JAX may differentiate that function itself.
* :mod:`.transposable`: modules whose derivative JAX surely transposes
  (reverse mode), read from their ops.
"""

from jax.experimental.jax2tf.call_tf_lib import _lazy

__getattr__ = _lazy.lazy_submodules(__name__)
