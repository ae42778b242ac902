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
"""The repository's Python follows JAX's lint rules and 2-space indentation."""

from __future__ import annotations

import ast
import subprocess
import sys
import tokenize

SOURCES = ("build", "jax", "tests", "benchmarks", "examples", "setup.py")


def _python_files(root):
  for name in SOURCES:
    path = root / name
    if path.is_file():
      yield path
    elif path.is_dir():
      yield from (p for p in sorted(path.rglob("*.py"))
                  if "__pycache__" not in p.parts and ".venv" not in p.parts)


def test_ruff_passes(root):
  proc = subprocess.run(
      [sys.executable, "-m", "ruff", "check", "--no-cache",
       *[n for n in SOURCES if (root / n).exists()]],
      cwd=root, capture_output=True, text=True)
  assert proc.returncode == 0, proc.stdout + proc.stderr


def test_two_space_indentation(root):
  """Every indented block opens with a 2-space step (JAX's style)."""
  bad = []
  for path in _python_files(root):
    with open(path, "rb") as f:
      tokens = list(tokenize.tokenize(f.readline))
    depth = [0]
    for tok in tokens:
      if tok.type == tokenize.INDENT:
        width = len(tok.string.expandtabs())
        if width - depth[-1] != 2:
          bad.append(f"{path.relative_to(root)}:{tok.start[0]}")
        depth.append(width)
      elif tok.type == tokenize.DEDENT:
        depth.pop()
  assert not bad, "not 2-space indented: " + ", ".join(bad[:20])


def test_public_functions_have_docstrings_in_overlay(root):
  """Overlay modules (they go upstream) document their public API."""
  missing = []
  for path in sorted((root / "jax").rglob("*.py")):
    tree = ast.parse(path.read_text())
    if ast.get_docstring(tree) is None:
      missing.append(f"{path.relative_to(root)}: module docstring")
    for node in tree.body:
      if (isinstance(node, (ast.FunctionDef, ast.ClassDef))
          and not node.name.startswith("_")
          and ast.get_docstring(node) is None):
        missing.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
  assert not missing, missing
