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
names (functions, classes, constants) that exist. Every package of the
repository says what it is in its docstring, and outside the overlay opens
with it (the licence below it), as the benchmarks' modules do.
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


# Every package says what it is at its top, under the licence every file
# carries (Apache 2.0, as JAX's). The overlay's packages go upstream, so they
# keep JAX's order: the licence, then the docstring. Everywhere else a file
# opens with its docstring, the licence below it: a reader (a person, or a
# tool that shows a file's first comment) meets first what the file is, not
# the licence. Each package's __init__.py, and each module of benchmarks/.
LICENCE = """\
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
"""
# The folders that hold the repository's packages; the overlay's, jax/, keeps
# JAX's header order.
PACKAGE_ROOTS = ("benchmarks", "build", "examples", "jax", "tests")
AS_UPSTREAM = "jax"


def _headed_files(root: pathlib.Path) -> list[pathlib.Path]:
  """Each package's __init__.py, and each module of benchmarks/."""
  files = [p for name in PACKAGE_ROOTS if (root / name).is_dir()
           for p in (root / name).rglob("__init__.py")]
  files += (root / "benchmarks").glob("*.py")
  return sorted({p for p in files
                 if not {"__pycache__", ".venv"} & set(p.parts)})


def _header_problems(root: pathlib.Path) -> list[str]:
  """What each of `_headed_files` lacks at its top."""
  problems = []
  for path in _headed_files(root):
    name = path.relative_to(root).as_posix()
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    doc = ast.get_docstring(tree) or ""
    first = doc.split("\n", 1)[0]
    if not first or "License" in first or "WARRANTIES" in first:
      problems.append(f"{name}: no docstring saying what it is")
    if "# Copyright " not in text or LICENCE not in text:
      problems.append(f"{name}: no licence header (Apache 2.0, whole)")
    opening = int(text.startswith("#!")) + 1  # a shebang, then the docstring
    if (first and name.split("/")[0] != AS_UPSTREAM
        and tree.body[0].lineno != opening):
      problems.append(f"{name}: does not open with its docstring (the "
                      "licence goes below it)")
  return problems


def test_every_package_says_what_it_is_at_its_top():
  files = _headed_files(ROOT)
  assert len(files) > 30, files  # the packages were found
  problems = _header_problems(ROOT)
  assert not problems, "\n".join(problems)


def test_the_header_check_catches_a_licence_on_top(tmp_path):
  """The check above can fail: a package whose licence hides its docstring,
  one with none, one without the licence; the overlay's order is JAX's."""
  licensed = "# Copyright 2026 The authors.\n#\n" + LICENCE
  doc = '"""The package: what it is."""\n'
  files = {"benchmarks/__init__.py": doc + licensed,
           "benchmarks/run.py": "#!/usr/bin/env python3\n" + doc + licensed,
           "benchmarks/report.py": licensed + doc,
           "tests/__init__.py": "",
           "build/forklib/__init__.py": doc,
           "build/forklib/sources/__init__.py": licensed + doc,
           "jax/a/__init__.py": licensed + doc}
  for name, text in files.items():
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(text, encoding="utf-8")
  assert _header_problems(tmp_path) == [
      "benchmarks/report.py: does not open with its docstring (the licence "
      "goes below it)",
      "build/forklib/__init__.py: no licence header (Apache 2.0, whole)",
      "build/forklib/sources/__init__.py: does not open with its docstring "
      "(the licence goes below it)",
      "tests/__init__.py: no docstring saying what it is",
      "tests/__init__.py: no licence header (Apache 2.0, whole)"]


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
