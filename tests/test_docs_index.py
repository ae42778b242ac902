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
"""The indexes a newcomer reads stay true to the code.

Each package of the overlay says in its docstring what each of its modules
and subpackages is for (``:mod:`.name```), all of them; ``docs/design.md``'s
table of where each decision lives names modules that exist, and in them
names (functions, classes, constants) that exist.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
OVERLAY = ROOT / "jax"
CALL_TF_LIB = OVERLAY / "experimental" / "jax2tf" / "call_tf_lib"
EXPORT = OVERLAY / "_src" / "export"


def _packages() -> list[pathlib.Path]:
  return sorted(p.parent for p in OVERLAY.rglob("__init__.py")
                if "__pycache__" not in p.parts)


def _members(package: pathlib.Path) -> list[str]:
  return sorted(
      [p.stem for p in package.glob("*.py") if p.name != "__init__.py"]
      + [p.name for p in package.iterdir()
         if p.is_dir() and (p / "__init__.py").exists()])


@pytest.mark.parametrize("package", _packages(),
                         ids=lambda p: str(p.relative_to(OVERLAY)))
def test_package_docstring_lists_every_module(package):
  doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
  listed = set(re.findall(r":mod:`\.(\w+)`", doc or ""))
  missing = [m for m in _members(package) if m not in listed]
  assert not missing, (
      f"{package.relative_to(ROOT)}/__init__.py's docstring does not say "
      f"what these are for (as :mod:`.name`): {missing}")
  gone = sorted(listed - set(_members(package)))
  assert not gone, (
      f"{package.relative_to(ROOT)}/__init__.py's docstring lists modules "
      f"that do not exist: {gone}")


def _resolve(path: str) -> pathlib.Path | None:
  for base in (CALL_TF_LIB, EXPORT, ROOT):
    if (base / path).is_file():
      return base / path
  return None


def _design_entries() -> list[tuple[str, list[str]]]:
  text = (ROOT / "docs" / "design.md").read_text()
  section = text.split("## 4. Where each decision lives", 1)[1].split(
      "\n## ", 1)[0]
  entries = []
  for line in section.splitlines():
    if not line.startswith("|"):
      continue
    cell = line.rstrip("|").rsplit("|", 1)[-1]
    for m in re.finditer(r"`([\w/.]+\.py)`(?: \(([^)]*)\))?", cell):
      names = re.findall(r"`([\w.]+)`", m.group(2) or "")
      entries.append((m.group(1), names))
  return entries


def _definitions(tree: ast.Module) -> set[str]:
  """The names a module defines at its top level, and its classes' members
  (as ``Class.member``)."""
  names: set[str] = set()
  for node in tree.body:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
      names.add(node.name)
    elif isinstance(node, ast.ClassDef):
      names.add(node.name)
      for member in node.body:
        if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
          names.add(f"{node.name}.{member.name}")
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
      targets = node.targets if isinstance(node, ast.Assign) else [node.target]
      for t in targets:
        for n in ast.walk(t):
          if isinstance(n, ast.Name):
            names.add(n.id)
  return names


def test_design_table_names_what_exists():
  problems = []
  entries = _design_entries()
  assert len(entries) > 20, "docs/design.md's table was not found"
  for path, names in entries:
    file = _resolve(path)
    if file is None:
      problems.append(f"{path}: no such module")
      continue
    defined = _definitions(ast.parse(file.read_text()))
    for name in names:
      if name not in defined:
        problems.append(f"{path}: {name!r} is not defined there")
  assert not problems, ("docs/design.md, section 4, is stale:\n"
                        + "\n".join(problems))
