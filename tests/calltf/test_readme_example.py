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
"""The README's Python example runs as written, and computes the right thing.

The first ```python block of README.md is run in a fresh process against the
installed wheel, followed by checks of its results against the same
function written in jax.numpy.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

# Appended to the example: its names (jax, jnp, x, batch, jac, energies,
# per_example) checked against the same energy in jnp.
_CHECKS = '''
import numpy as np


def energy_jnp(x):
  r2 = jnp.sum((x[:, None] - x[None]) ** 2, -1)
  return jnp.stack([jnp.sum(jnp.exp(-r2)), jnp.sum(jnp.sin(x))])


np.testing.assert_allclose(jac, jax.jacrev(energy_jnp)(x), rtol=1e-5,
                           atol=1e-5)
np.testing.assert_allclose(energies, jax.vmap(energy_jnp)(batch), rtol=1e-5,
                           atol=1e-5)
np.testing.assert_allclose(per_example,
                           jax.vmap(jax.jacrev(energy_jnp))(batch),
                           rtol=1e-5, atol=1e-5)
print("checked against jnp")
'''


def readme_example(root: pathlib.Path) -> str:
  """The first ```python block of the README."""
  blocks = re.findall(r"^```python\n(.*?)^```$",
                      (root / "README.md").read_text(), re.M | re.S)
  assert blocks, "README.md has no ```python block"
  return blocks[0]


def test_readme_example_runs_as_written(root, tmp_path):
  script = tmp_path / "readme_example.py"
  script.write_text(readme_example(root) + _CHECKS)
  proc = subprocess.run(
      [sys.executable, str(script)], cwd=tmp_path, capture_output=True,
      text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert proc.stdout.splitlines() == [
      "(2, 8, 3) (3, 2) (3, 2, 8, 3)", "checked against jnp"], proc.stdout
