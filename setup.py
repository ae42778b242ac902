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
"""Builds the patched `jax` wheel: `pip wheel . --no-deps -w dist`.

The release is the newest in patches/upstream.toml that this Python supports;
JAX_FORK_UPSTREAM=<version> selects another. The upstream sdist is fetched
with pip and verified, then the overlay and the patch queue are applied (see
build/forklib). `python build/fork.py wheel` runs this same recipe.
"""

import os
import pathlib
import sys

ROOT = pathlib.Path(os.path.abspath(__file__)).parent
sys.path.insert(0, str(ROOT / "build"))

from forklib import ForkError  # noqa: E402
from forklib.sources import setup_support  # noqa: E402

try:
  setup_support.main(ROOT)
except ForkError as e:
  sys.exit(f"error: {e}")
