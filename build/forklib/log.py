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
"""What the tool prints: progress lines (`[fork] step: ...`) and tables."""

from __future__ import annotations

import sys

_quiet = False


def set_quiet(quiet: bool) -> None:
  global _quiet
  _quiet = quiet


def is_quiet() -> bool:
  return _quiet


def step(stage: str, message: str) -> None:
  """Prints one progress line to stderr, e.g. `[fork] fetch: ...`."""
  if not _quiet:
    print(f"[fork] {stage}: {message}", file=sys.stderr, flush=True)


def table(rows: list[list[str]]) -> str:
  """`rows` (the first a header) as aligned columns, two spaces apart."""
  widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
  return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
                   for row in rows)
