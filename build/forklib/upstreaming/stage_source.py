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
"""The overlay's and the tests' source as one staged commit has it.

Two mechanical transformations, neither of which changes what the
distribution computes (it builds and ships the files as they are):

**Variants** (`overlay_variant`). The modules of `jax/` and the tests of
`tests/upstream/` hold one program, the distribution's. Where a queue pull
request's commit differs from them (a branch for other JAX releases left
out, a later pull request's code held back, the stand-in that earlier
commits have), the plan gives it an `overlay` patch of `patches/stage/`:
a diff against this repository's files, applied with `git apply` to the
files that commit lays. A patch that no longer applies (the module
changed) is a problem that names it; refresh it as docs/maintainers.md
says.

**Shaking** (`shake`). A module listed as `shaken` in the plan (`errors.py`,
`compat.py`: one definition per message or internal) is staged definition
by definition: a commit holds the top-level definitions that the code it
stages uses, with what they use, and the imports they need, so that each
pull request adds the messages and internals of its own concern.
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import re
import subprocess
import tempfile
from collections.abc import Iterable

from forklib import ForkError

_DIFF_FILE_RE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)


class VariantError(ForkError):
  """An overlay patch that does not apply to this repository's files."""


def variant_files(patch_text: str) -> list[str]:
  """The files (paths in this repository) an overlay patch changes."""
  return [m.group(2) for m in _DIFF_FILE_RE.finditer(patch_text)]


def overlay_variant(root: pathlib.Path, patch: str) -> dict[str, str]:
  """The files `patch` (a path under `root`) changes, as it changes them.

  Args:
    root: this repository's root.
    patch: an overlay patch of `patches/stage/`, relative to `root`: a diff
      (`diff --git a/PATH b/PATH`, then unified hunks) of files of `jax/`
      and `tests/upstream/`; text before the first `diff` line is its
      description.

  Returns:
    Each changed file's path, and its text with the patch applied.

  Raises:
    VariantError: the patch is missing, changes no file, or does not apply
      (git apply's message names the file and the hunk).
  """
  path = root / patch
  if not path.is_file():
    raise VariantError(f"{patch} does not exist")
  return variant_of_text(root, patch, path.read_text(encoding="utf-8"))


def variant_of_text(root: pathlib.Path, patch: str, text: str
                    ) -> dict[str, str]:
  """As `overlay_variant`, of an overlay patch's `text` (named `patch`)."""
  files = variant_files(text)
  if not files:
    raise VariantError(f"{patch} changes no file (no `diff --git` line)")
  with tempfile.TemporaryDirectory(prefix="stage-variant-") as tmp:
    work = pathlib.Path(tmp)
    for f in files:
      source = root / f
      if not source.is_file():
        raise VariantError(f"{patch} changes {f}, which this repository "
                           "does not have")
      (work / f).parent.mkdir(parents=True, exist_ok=True)
      (work / f).write_bytes(source.read_bytes())
    proc = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"],
                          input=text, cwd=work, capture_output=True,
                          text=True, encoding="utf-8", check=False)
    if proc.returncode != 0:
      detail = "; ".join(l.strip() for l in proc.stderr.splitlines()
                         if l.strip())
      raise VariantError(
          f"{patch} does not apply to this repository's files ({detail}): "
          "refresh it (docs/maintainers.md, \"Staging the queue for "
          "upstream\")")
    return {f: (work / f).read_text(encoding="utf-8") for f in files}


# ---------------------------------------------------------------------------
# References between the overlay's modules.
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Reference:
  """A use of a name of a module: `module.name`, or the module itself."""
  module: str          # dotted: jax.experimental.jax2tf.call_tf_lib.errors
  name: str | None     # the attribute used, if any
  line: int


def _dotted(node: ast.AST) -> list[str] | None:
  parts = []
  while isinstance(node, ast.Attribute):
    parts.append(node.attr)
    node = node.value
  if isinstance(node, ast.Name):
    return [node.id, *reversed(parts)]
  return None


def references(text: str, path: str, modules: Iterable[str]
               ) -> list[Reference]:
  """The uses of `modules` (dotted names) in the Python source `text`.

  Follows `import a.b as c`, `from a import b` and attribute chains of
  those names (`call_tf_lib.batching.dispatch.batch`): each use is reported
  as the longest module of `modules` the chain names, and the name used
  from it.

  Raises:
    ForkError: `text` is not valid Python.
  """
  modules = set(modules)
  local: dict[str, str] = {}
  found: list[Reference] = []
  if not any(m.rsplit(".", 1)[-1] in text for m in modules):
    return found
  try:
    tree = ast.parse(text)
  except SyntaxError:
    # Newer syntax than the tool's Python reads (upstream's files may use
    # the release's): the import statements and attribute chains by regex.
    return _references_by_regex(text, modules)

  def use(dotted: list[str], line: int) -> None:
    for n in range(len(dotted), 0, -1):
      candidate = ".".join(dotted[:n])
      if candidate in modules:
        found.append(Reference(candidate, dotted[n] if n < len(dotted)
                               else None, line))
        return

  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        if alias.asname:
          local[alias.asname] = alias.name
        else:
          local[alias.name.split(".")[0]] = alias.name.split(".")[0]
        use(alias.name.split("."), node.lineno)
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      for alias in node.names:
        full = f"{node.module}.{alias.name}"
        local[alias.asname or alias.name] = full
        use(full.split("."), node.lineno)
  for node in ast.walk(tree):
    if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(
        getattr(node, "ctx", None), ast.Load):
      dotted = _dotted(node)
      if dotted and dotted[0] in local:
        use(local[dotted[0]].split(".") + dotted[1:], node.lineno)
  return found


_IMPORT_RE = re.compile(
    r"^\s*(?:from\s+(?P<package>[\w.]+)\s+import\s+(?P<names>[\w, ]+?)"
    r"|import\s+(?P<module>[\w.]+)(?:\s+as\s+(?P<alias>\w+))?)\s*(?:#.*)?$",
    re.MULTILINE)


def _references_by_regex(text: str, modules: set[str]) -> list[Reference]:
  """`references` for source `ast` cannot parse: imports and `a.b.c` chains."""
  local: dict[str, str] = {}
  found = []

  def use(dotted: list[str], line: int) -> None:
    for n in range(len(dotted), 0, -1):
      if ".".join(dotted[:n]) in modules:
        found.append(Reference(".".join(dotted[:n]), dotted[n]
                               if n < len(dotted) else None, line))
        return

  for m in _IMPORT_RE.finditer(text):
    line = text.count("\n", 0, m.start()) + 1
    if m.group("package"):
      for item in m.group("names").split(","):
        name, _, alias = item.strip().partition(" as ")
        local[(alias or name).strip()] = f"{m.group('package')}.{name.strip()}"
        use(local[(alias or name).strip()].split("."), line)
    else:
      module = m.group("module")
      local[m.group("alias") or module.split(".")[0]] = (
          module if m.group("alias") else module.split(".")[0])
      use(module.split("."), line)
  for n, line_text in enumerate(text.splitlines(), 1):
    for m in re.finditer(r"\b([A-Za-z_]\w*)((?:\.\w+)+)", line_text):
      if m.group(1) in local:
        # Each prefix of the chain too, as `ast` sees each attribute node.
        base, attrs = local[m.group(1)].split("."), m.group(2)[1:].split(".")
        for k in range(len(attrs) + 1):
          use(base + attrs[:k], n)
  return found


def _collapse_blank_lines(text: str) -> str:
  """At most two blank lines in a row (one before an indented line), none
  at the end of the file: what removing definitions leaves."""
  text = re.sub(r"\n{4,}", "\n\n\n", text)
  text = re.sub(r"\n{3,}(?=[ \t]+\S)", "\n\n", text)
  return text.rstrip("\n") + "\n" if text.strip() else ""


# ---------------------------------------------------------------------------
# Shaking a module down to the definitions in use.
# ---------------------------------------------------------------------------

def _is_type_checking_block(stmt: ast.stmt) -> bool:
  """`if TYPE_CHECKING:` with only imports in it (annotations' imports)."""
  return (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Name)
          and stmt.test.id == "TYPE_CHECKING" and not stmt.orelse
          and all(isinstance(s, (ast.Import, ast.ImportFrom))
                  for s in stmt.body))


def _is_import(stmt: ast.stmt) -> bool:
  return (isinstance(stmt, (ast.Import, ast.ImportFrom))
          or _is_type_checking_block(stmt))


def _bound_names(stmt: ast.stmt) -> set[str]:
  if _is_type_checking_block(stmt):
    return set().union(*(_bound_names(s) for s in stmt.body))
  if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
    return {stmt.name}
  if isinstance(stmt, (ast.Import, ast.ImportFrom)):
    return {(a.asname or a.name).split(".")[0] for a in stmt.names}
  if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return {n.id for t in targets for n in ast.walk(t)
            if isinstance(n, ast.Name)}
  return set()


def _used_names(stmt: ast.stmt) -> set[str]:
  """The names `stmt` reads (an assignment: those of its value)."""
  if isinstance(stmt, ast.Assign):
    nodes = [stmt.value]
  elif isinstance(stmt, ast.AnnAssign):
    nodes = [stmt.value, stmt.annotation]
  else:
    nodes = [stmt]
  return {n.id for node in nodes if node is not None
          for n in ast.walk(node) if isinstance(n, ast.Name)}


def _only_names(stmt: ast.stmt, lines: list[str], wanted: set[str]
                ) -> list[str]:
  """`stmt`'s source `lines`; an import of several names, of the wanted ones.

  `from a import b, c` of which only `b` is used becomes `from a import b`,
  so that the shaken module imports nothing it does not use.
  """
  if _is_type_checking_block(stmt):
    first = stmt.body[0].lineno - stmt.lineno
    kept = [_only_names(s, lines[s.lineno - stmt.lineno:
                                 s.end_lineno - stmt.lineno + 1], wanted)
            for s in stmt.body
            if any((a.asname or a.name).split(".")[0] in wanted
                   for a in s.names)]
    return lines[:first] + [line for k in kept for line in k]
  if (not isinstance(stmt, (ast.Import, ast.ImportFrom))
      or getattr(stmt, "module", None) == "__future__"):
    return lines
  names = [a for a in stmt.names
           if (a.asname or a.name).split(".")[0] in wanted]
  if len(names) == len(stmt.names):
    return lines
  indent = lines[0][:len(lines[0]) - len(lines[0].lstrip())]
  listed = ", ".join(a.name + (f" as {a.asname}" if a.asname else "")
                     for a in names)
  if isinstance(stmt, ast.Import):
    return [f"{indent}import {listed}\n"]
  module = "." * stmt.level + (stmt.module or "")
  return [f"{indent}from {module} import {listed}\n"]


def shake(text: str, path: str, used: set[str]) -> tuple[str, set[str]]:
  """The module `text` with only the top-level definitions in use.

  Kept: the module docstring, `from __future__` imports, the definitions
  named in `used` and every module-level name they use (transitively),
  statements that bind nothing but use a kept name (a registration call),
  and the imports kept code uses (of an import of several names, those). A
  comment block separated by a blank line from the next statement heads a
  section: it is kept while anything up to the next such block is.

  Args:
    text: the module's source (its pull request's variant).
    path: its name, for errors.
    used: the names other staged code uses from it.

  Returns:
    The shaken source, and the names in `used` it does not define.
  """
  try:
    tree = ast.parse(text)
  except SyntaxError as e:
    raise ForkError(f"{path}:{e.lineno}: not valid Python: {e.msg}")
  body = tree.body
  bound = [_bound_names(s) for s in body]
  defined = set().union(*bound) if bound else set()
  keep, wanted = _kept(body, bound, defined, used)
  return (_collapse_blank_lines(_kept_source(text, body, keep, wanted)),
          set(used) - defined)


def _kept(body: list[ast.stmt], bound: list[set[str]], defined: set[str],
          used: set[str]) -> tuple[list[bool], set[str]]:
  """Which statements of `body` `shake` keeps, and the names kept code uses.

  `bound`: the names each statement binds; `defined`: all of them.
  """
  keep = [False] * len(body)
  for i, stmt in enumerate(body):
    if (i == 0 and isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)):
      keep[i] = True
    elif isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
      keep[i] = True
  wanted = set(used) & defined
  changed = True
  while changed:
    changed = False
    for i, stmt in enumerate(body):
      if keep[i]:
        continue
      is_import = _is_import(stmt)
      if bound[i] & wanted or (not bound[i] and not is_import
                               and _used_names(stmt) & wanted):
        keep[i] = True
        changed = True
        if not is_import:
          wanted |= _used_names(stmt) & defined
        elif _is_type_checking_block(stmt):
          wanted |= {"TYPE_CHECKING"} & defined
  return keep, wanted


def _kept_source(text: str, body: list[ast.stmt], keep: list[bool],
                 wanted: set[str]) -> str:
  """`text` with the statements of `body` that `keep` marks, each with the
  comments that lead it, and its section's heading comment block."""
  lines = text.splitlines(keepends=True)
  starts = [min([s.lineno] + [d.lineno for d in getattr(
      s, "decorator_list", [])]) for s in body]
  out: list[str] = []
  previous_end = 0
  pending_header: list[str] = []
  for i, stmt in enumerate(body):
    gap = lines[previous_end:starts[i] - 1]
    previous_end = stmt.end_lineno
    # A comment block followed by a blank line in the gap heads a section.
    last_blank = max((j for j, l in enumerate(gap) if not l.strip()),
                     default=-1)
    header = list(gap[:last_blank + 1])
    if any(l.strip().startswith("#") for l in header):
      pending_header = header
      lead = gap[last_blank + 1:]
    else:
      lead = gap
    if keep[i]:
      if pending_header:
        out += pending_header
        pending_header = []
      out += lead + _only_names(stmt, lines[starts[i] - 1:stmt.end_lineno],
                                wanted)
  out += lines[previous_end:] if keep and keep[-1] else []
  return "".join(out)


def module_name(repo_path: str) -> str:
  """`jax/a/b.py` -> `jax.a.b`; `jax/a/__init__.py` -> `jax.a`."""
  p = pathlib.PurePosixPath(repo_path).with_suffix("")
  parts = list(p.parts)
  if parts[-1] == "__init__":
    parts = parts[:-1]
  return ".".join(parts)
