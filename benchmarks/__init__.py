"""Benchmarks of batched call_tf against native JAX, loops, TF and tf2jax.

`python3 benchmarks/run.py` runs them (`--quick`: a smoke run) in
`benchmarks/.venv`, with the patched wheel, and writes `benchmarks/results/`;
`python3 -m benchmarks.report` redraws the report from its `results.json`.
`benchmarks/README.md` says what each one measures.
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
