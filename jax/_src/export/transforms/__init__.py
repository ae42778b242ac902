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
"""``jax.export``'s ``Exported.call`` under ``jax.vmap`` and forward mode.

``call_exported_p`` had no batching rule, and ``Exported.call`` was a
``jax.custom_vjp``, which forward mode cannot differentiate.
``jax._src.export._export`` hooks these modules in:

* :mod:`.function`: a StableHLO module as a JAX function
  (``ModuleFunction``), the one owner of that for every user (these rules,
  and ``call_tf``): refinement for static shapes (:mod:`.refine`), the
  platform branch (:mod:`.platforms`), the derivative policy, the caches;
  read by the StableHLO interpreter
  (:mod:`jax._src.export.stablehlo_to_jax`).
* :mod:`.refine`: a serialized module's shapes, refined for static
  argument shapes and a platform, named, computed.
* :mod:`.rules`: the batching rule (JAX's ``vmap`` of that function) and the
  JVP rule (forward mode from the serialized VJPs; reverse mode is the
  serialized VJP, as before).
* :mod:`.linear`: the linear call whose transpose is a VJP, of which the
  JVP rule's tangents are made.
* :mod:`.platforms`: which platform's branch of a module runs, chosen
  where JAX lowers the program; a platform the module lacks refused by
  name there.
* :mod:`.exported`: what they ask of ``jax.export`` (the interpreter reads
  StableHLO and asks ``jax.export`` nothing).
* :mod:`.errors`: the messages.

Nothing here imports TensorFlow or ``jax.experimental``; see
https://github.com/jax-ml/jax/issues/28327.
"""
