"""The fork's tests, run on the built wheel by `python3 build/fork.py test`.

By subpackage: `calltf` (`jax2tf.call_tf` under every transformation and in
TF's modes), `export` (`Exported.call` transformed: with TensorFlow and
without), `stablehlo` (the StableHLO interpreter, in the lane without
TensorFlow), `upstream` (upstream-style tests, each staged with its pull request) and
`tool` (the build tool). The modules at the top check the repository itself:
its layout, lint, documentation indexes and benchmark summary.
"""
# Copyright 2026 The JAX call_tf fork authors.
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
