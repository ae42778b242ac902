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
"""docs/export.md's code runs as it is, and imports no TensorFlow."""

from __future__ import annotations

import os
import re
import subprocess
import sys


def test_the_export_page_runs_without_tensorflow(root):
  text = (root / "docs" / "export.md").read_text(encoding="utf-8")
  blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
  assert len(blocks) == 1, "docs/export.md has one example"
  assert "tensorflow" not in text.lower()
  code = blocks[0] + (
      "\nimport sys\n"
      "print(sorted(m for m in sys.modules if m.split('.')[0] == "
      "'tensorflow' or m.startswith('jax.experimental.jax2tf')))\n")
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                        text=True, check=False,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert proc.stdout.strip().splitlines()[-1] == "[]"
