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


import pathlib
import tomllib
from typing import Any


class ForkError(Exception):
  """An error the user can act on; the CLI prints it without a traceback."""


def load_toml(path: pathlib.Path) -> dict[str, Any]:
  """Reads a TOML file of the project, or raises a ForkError saying why not."""
  try:
    return tomllib.loads(path.read_text(encoding="utf-8"))
  except FileNotFoundError:
    raise ForkError(f"{path} does not exist")
  except tomllib.TOMLDecodeError as e:
    raise ForkError(f"{path} is not valid TOML: {e}")
