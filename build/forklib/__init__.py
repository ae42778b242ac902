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
"""The library behind `python build/fork.py`.

Modules, in pipeline order:

* `manifest`: `patches/upstream.toml`, the supported upstream releases.
* `fetch`: upstream's source distribution through `pip download`, verified.
* `patchq`: the patch queue: `patches/series`, DEP-3 headers, exact apply.
* `tree`: sdist + overlay + patches + version stamp -> a patched tree.
* `wheel`: the patched tree -> a reproducible wheel.
* `setup_support`: what the repository's `setup.py` runs.
* `envs`: virtual environments for the demo and the tests.
"""


class ForkError(Exception):
  """An error the user can act on; the CLI prints it without a traceback."""
