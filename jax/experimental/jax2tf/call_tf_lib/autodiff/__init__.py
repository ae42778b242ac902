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
"""Derivatives of ``call_tf``.

* :mod:`.vjp`: the VJP's ``call_tf`` (reverse mode).
* :mod:`.jvp`: the JVP rule (forward mode), TF's or JAX's.
* :mod:`.tf_jvp`: TensorFlow functions of the output tangents.

The tangents are a linear call whose transpose is the VJP
(``jax._src.export.transforms.linear``, which ``Exported.call`` uses too).
"""

from jax.experimental.jax2tf.call_tf_lib import _lazy

__getattr__ = _lazy.lazy_submodules(__name__)
