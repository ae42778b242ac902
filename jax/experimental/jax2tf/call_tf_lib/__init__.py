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
"""The machinery behind ``jax2tf.call_tf``'s ``vmap``, autodiff and TF modes.

``call_tf.py`` imports this package once and calls into it. One subpackage
per concern, each readable in one sitting:

* :mod:`.batching`: ``jax.vmap`` of a call: the ``vmap_method`` dispatcher
  (``dispatch``), the ``call_tf_p`` batching rule (``rule``) and TF's
  vectorizer (``pfor``).
* :mod:`.stablehlo`: the StableHLO path: a TF function's XLA lowering
  expressed as JAX primitives by JAX's StableHLO interpreter
  (``jax._src.export.stablehlo_to_jax``), when ``call_tf`` uses it
  (``path``), with TF's gradients at ties (``tf_derivatives``), when JAX
  may differentiate it (``exactness``, ``transposable``), and on the
  platforms TensorFlow does not compile for (``platforms``).
* :mod:`.autodiff`: derivatives: the VJP's call (``vjp``), forward mode
  (``jvp``) and TF's tangent functions (``tf_jvp``); the linear primitive
  of the tangents is JAX's (``jax._src.export.transforms.linear``).
* :mod:`.tf_function`: a TF function as JAX needs it, in every TF mode: its
  traces (``traces``, ``graph``), compilation (``compile``, ``version``),
  captured values, output shapes, side effects, and the ``call_tf_graph``
  custom call.
* :mod:`.embed`: functions restored from jax2tf SavedModels, embedded as
  StableHLO.
* :mod:`.vmap_methods`: the names of the ``vmap_method``s and their groups.
* :mod:`.errors`: every error a user sees, and its message.
* :mod:`.compat`: every JAX and TF internal that differs across releases.
* :mod:`.tf_overrides`: where call_tf changes TensorFlow's behaviour while
  it builds a graph (each a context manager, restored on exit).

Submodules load on first use (``call_tf_lib.batching.dispatch``, through
:mod:`._lazy`), so that each can be added on its own and importing one
loads only what it imports; those every call uses load with jax2tf
(:mod:`.preload`, which ``call_tf.py`` imports), so that a first call does
not load them; see https://github.com/jax-ml/jax/issues/11753.
"""

from jax.experimental.jax2tf.call_tf_lib import _lazy

__getattr__ = _lazy.lazy_submodules(__name__)
