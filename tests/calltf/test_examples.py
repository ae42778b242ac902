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
"""The examples the README and the demo show run as documented."""

from __future__ import annotations

import os
import subprocess
import sys


def test_tf_jacobian_example(root):
  proc = subprocess.run(
      [sys.executable, str(root / "examples" / "tf_jacobian.py")],
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), capture_output=True,
      text=True)
  assert proc.returncode == 0, proc.stderr[-3000:]
  lines = proc.stdout.splitlines()
  assert "jit(jacrev(call_tf(energy_tf))) -> shape (3, 8, 3)" in lines[0]
  assert lines[1] == "round trip, eager vmap and jacrev equal JAX's: True"
