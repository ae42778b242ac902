"""The library behind `python build/fork.py` (which only parses arguments).

Shared basics, at the top level (they import no subpackage):

* `ForkError` and `load_toml` (here); `project`: where the inputs live
  (`Project`), the cache, file hashes; `manifest`: `patches/upstream.toml`,
  the supported upstream releases; `scratch`: temporary directories a crash
  cannot leave behind; `log`: what the tool prints.

Subpackages, in pipeline order; each imports only the top level and the
subpackages before it (`tests/test_layout.py` checks):

* `sources`: upstream's sdist to the fork's wheel. `fetch`: `pip download`
  into the cache, verified: upstream's sdist, the pinned jaxlib wheels,
  upstream's own wheel; `patchq`: the patch queue: `patches/series`, DEP-3
  headers, exact apply; `tree`: sdist + overlay + patches + version stamp ->
  a patched tree, `check`; `wheel`, `setup_support`: the patched tree -> a
  reproducible wheel; `jaxlib_mirror`: `jaxlib_build/pins.toml`.
* `testing`: `envs`: virtual environments: the demo, the tests, tools (ruff,
  twine); `dev`: the inner loop, an editable patched tree with the overlay
  linked; `testrun`: `test` and `matrix`; `upstream_tests`, `pytest_plugin`
  and `baseline`: upstream's own suites, judged against stock upstream.
* `publishing`: `publication`: which files a release publishes; `index`: the
  static index; `serve`: serving it; `publish` (and `twine_probe`):
  uploading to an index server; `workflow`: the GitHub Actions workflow from
  the manifest.
* `upstreaming`: the queue across releases and towards upstream: `rebase`
  (and `mergecheck`, `newrelease`), `stage` (and `stage_plan`,
  `stage_source`, `stage_bazel`, `stage_text`, `stage_checks`,
  `stage_verify`), `gitcmd`.
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
  except UnicodeDecodeError as e:
    raise ForkError(f"{path} is not UTF-8 text ({e.reason} at byte "
                    f"{e.start}); TOML files are UTF-8")
  except OSError as e:
    raise ForkError(f"{path} cannot be read: {e.strerror}")
  except tomllib.TOMLDecodeError as e:
    raise ForkError(f"{path} is not valid TOML: {e}")
