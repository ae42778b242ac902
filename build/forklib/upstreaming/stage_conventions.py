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
"""What a reviewer of a staged commit checks, as far as a scan can.

* `message_problems`: a message has a body that says what and why, and no
  paragraph twice.
* `identity_problems`: the author is a person (upstream's CLA check): not
  a team, a bot, or a placeholder address.
* `docstring_references`: a name that a docstring or comment the commit
  adds refers to (``name``, `name()`, :func:`module.name`) is defined in
  the commit's tree: no docstring describes code of a later commit, or
  code that was removed.
* `compat_branches`: code for other JAX releases (feature tests of JAX's
  modules, version comparisons, "older jaxlib" in a comment): a staged
  tree always matches its JAX.
* `dataclass_slots`: new dataclasses take `slots=True`, as upstream's do.
* `test_placement`: a new test file beside the one that holds its
  subject's tests (`call_tf_x_test.py` beside `call_tf_test.py`) belongs
  in that file.
* `option_keys`: a new configuration option in every user's jit key or
  trace context, unless the message says why it must be.
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import pathlib
import re
import tokenize
from collections.abc import Iterable

from forklib.upstreaming import gitcmd
from forklib.upstreaming.stage_checks import Finding

# The name of a person, not of a team, bot or project.
_NOT_A_PERSON_RE = re.compile(
    r"(?i)\b(?:maintainers?|team|bots?|forks?|admin|root|nobody|"
    r"automation)\b")
# Addresses that reach no one: documentation's placeholders, and GitHub's
# no-reply addresses that are not a user's (`12345+user@...`).
_PLACEHOLDER_EMAIL_RE = re.compile(
    r"(?i)@(?:example\.(?:com|org|net)|localhost|invalid|test)$"
    r"|^(?!\d+\+)[^@]*@users\.noreply\.github\.com$")

_REFERENCE_RES = (
    re.compile(r":(?:func|class|meth|mod|attr|data|obj|exc):`[~!]?"
               r"(?:[^`<]*<)?([A-Za-z_][\w.]*)>?`"),
    re.compile(r"``([A-Za-z_][\w.]*)(?:\(\))?``"),
    re.compile(r"(?<![\w.`'\"])([A-Za-z_][\w.]*)\(\)"),
)
# Modules of JAX a staged file may name a module by (``lax.scan``).
_JAX_ALIASES_RE = re.compile(
    r"^\s*(?:from\s+(jax[\w.]*)\s+import\s+(.+)|import\s+(jax[\w.]*)"
    r"(?:\s+as\s+(\w+))?)", re.MULTILINE)

_COMPAT_CODE = (
    (re.compile(r"\b(?:hasattr|getattr)\(\s*(?:jax|jtu|jaxlib|core|lax|mlir|"
                r"config|util|dispatch|batching|ad|pxla|xla_bridge|xb|"
                r"xla_client|_jax|export|_export|jax2tf|jax2tf_internal)\b"),
     "a feature test of a JAX module: a branch for other JAX releases"),
    (re.compile(r"__version_info__\s*[<>]|jaxlib_version\s*[<>]|"
                r"\bxla_extension_version\b|\bjaxlib_extension_version\b"),
     "a JAX version test: a branch for other JAX releases"),
)
_COMPAT_WORDS_RE = re.compile(
    r"(?i)\b(?:older|newer|earlier|previous|other)\s+(?:jax|jaxlib)"
    r"(?:'s|s)?\b(?:\s+releases?)?")
_DATACLASS_RE = re.compile(r"^\s*@(?:dataclasses\.)?dataclass\b(.*)$")
_OPTION_KEY_RE = re.compile(
    r"\binclude_in_(?:jit_key|trace_context)\s*=\s*True\b")


def message_problems(message: str) -> list[str]:
  """What a commit message lacks: a body, or has twice: a paragraph."""
  title, _, body = message.strip().partition("\n")
  problems = []
  if not body.strip():
    problems.append(f"the message {title[:60]!r} has no body: say what "
                    "changes and why, after a blank line")
  paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", body)]
  seen = set()
  for p in paragraphs:
    if len(p) > 40 and p in seen:
      problems.append(f"the message repeats the paragraph {p[:60]!r}...")
    seen.add(p)
  return problems


def identity_problems(name: str, email: str) -> list[str]:
  """Why `name <email>` may not be a person who signed upstream's CLA."""
  problems = []
  m = _NOT_A_PERSON_RE.search(name)
  if m:
    problems.append(f"the author {name!r} names a {m.group(0).lower()}, not "
                    "a person: pass --author with the name of whoever "
                    "signed the CLA")
  if _PLACEHOLDER_EMAIL_RE.search(email):
    problems.append(f"the author's address {email!r} reaches no one (a "
                    "placeholder, or a no-reply address that is not a "
                    "GitHub user's): pass the address the CLA covers")
  return problems


# ---------------------------------------------------------------------------
# Names docstrings refer to.
# ---------------------------------------------------------------------------

def docstring_lines(tree: ast.AST) -> set[int]:
  """The lines of the docstrings of parsed Python source `tree`."""
  lines: set[int] = set()
  for node in ast.walk(tree):
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                         ast.AsyncFunctionDef)) and node.body:
      first = node.body[0]
      if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
          and isinstance(first.value.value, str)):
        lines.update(range(first.lineno, first.end_lineno + 1))
  return lines


def _prose_lines(text: str) -> set[int]:
  """The lines of docstrings and comments in Python source `text`."""
  try:
    lines = docstring_lines(ast.parse(text))
  except SyntaxError:
    return set()
  try:
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
      if tok.type == tokenize.COMMENT:
        lines.add(tok.start[0])
  except (tokenize.TokenError, IndentationError):
    pass
  return lines


def _defined_in(text: str) -> set[str]:
  """Every name `text` binds: definitions, assignments, parameters,
  attributes it assigns, imports."""
  names: set[str] = set()
  try:
    tree = ast.parse(text)
  except SyntaxError:
    return names
  for node in ast.walk(tree):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef)):
      names.add(node.name)
    elif isinstance(node, ast.arg):
      names.add(node.arg)
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
      names.add(node.id)
    elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
      names.add(node.attr)
    elif isinstance(node, ast.keyword) and node.arg:
      names.add(node.arg)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
      names.update((a.asname or a.name).split(".")[0] for a in node.names)
      names.update(a.name.split(".")[-1] for a in node.names)
  return names


def tree_definitions(repo: pathlib.Path, commit: str) -> set[str]:
  """The names JAX's Python files define at `commit` (functions, classes,
  module-level assignments, modules and packages, and the names they give
  as strings: options, ops)."""
  out = gitcmd.git(repo, "grep", "-h", "-o", "-E",
                   r"^\s*(def|class)\s+\w+|^[A-Za-z_]\w*\s*(:[^=]*)?=",
                   commit, "--", "jax/*.py", "jax/**/*.py", command="stage",
                   check=False).stdout
  names = {m.group(1) for m in re.finditer(
      r"^\s*(?:def|class)?\s*([A-Za-z_]\w*)", out, re.MULTILINE)}
  # Names given as strings: options ('jax_enable_x64'), ops
  # ('stablehlo.set_dimension_size').
  strings = gitcmd.git(repo, "grep", "-h", "-o", "-E",
                       r"[\"'][A-Za-z_][A-Za-z0-9_.]*[\"']", commit, "--",
                       "jax/*.py", command="stage", check=False).stdout
  names.update(part for s in strings.split() for part in
               s.strip("\"'").split(".") if part)
  files = gitcmd.git(repo, "ls-tree", "-r", "--name-only", commit, "--",
                     "jax", command="stage", check=False).stdout.split()
  for f in files:
    path = pathlib.PurePosixPath(f)
    names.add(path.stem)
    names.update(path.parent.parts)  # packages
  return names


def _jax_aliases(text: str) -> set[str]:
  """The names under which `text` imports JAX's modules (`lax`, `core`)."""
  aliases = {"jax"}
  for m in _JAX_ALIASES_RE.finditer(text):
    if m.group(3):
      aliases.add(m.group(4) or m.group(3).split(".")[0])
    else:
      for item in m.group(2).strip("()\\ ").split(","):
        name, _, alias = item.strip().partition(" as ")
        if name:
          aliases.add((alias or name).strip())
  return aliases


def undefined_references(line: str, local: set[str], aliases: set[str],
                         tree: set[str]) -> list[str]:
  """The names a docstring or comment line refers to that nothing defines.

  A bare name is checked where it looks like code (``a_name``, `name()`,
  :func:`name`, not ``V2`` of a formula) and must be bound in its file
  (`local`) or defined in the tree; a dotted one is checked only if it
  starts with a JAX module of the file (`aliases`), and its last part must
  be defined in the tree. Builtins, keywords and other libraries' names
  (``tf.function``) are not checked.
  """
  missing = []
  for k, regex in enumerate(_REFERENCE_RES):
    for m in regex.finditer(line):
      parts = m.group(1).strip(".").split(".")
      name = parts[-1]
      code_like = (k != 1 or len(parts) > 1 or "_" in name
                   or m.group(0).endswith("()``"))
      if (not name or not code_like or keyword.iskeyword(name)
          or hasattr(builtins, name)
          or (len(parts) > 1 and parts[0] not in aliases)):
        continue
      known = tree if len(parts) > 1 else tree | local
      if name not in known and m.group(1) not in missing:
        missing.append(m.group(1))
  return missing


def docstring_references(repo: pathlib.Path, commit: str,
                         added: Iterable[tuple[str, int, str]],
                         tree: set[str]) -> list[Finding]:
  """Findings for the names added docstrings and comments refer to that
  the commit's tree does not define."""
  by_file: dict[str, list[tuple[int, str]]] = {}
  for path, n, text in added:
    if path.endswith(".py"):
      by_file.setdefault(path, []).append((n, text))
  found = []
  for path, lines in sorted(by_file.items()):
    source = gitcmd.git(repo, "show", f"{commit}:{path}", command="stage",
                        check=False).stdout
    prose = _prose_lines(source)
    local, aliases = _defined_in(source), _jax_aliases(source)
    for n, text in lines:
      if n not in prose:
        continue
      for name in undefined_references(text, local, aliases, tree):
        found.append(Finding(f"{path}:{n}", name, "a docstring or comment "
                             "names what this commit's tree does not "
                             "define", text.strip()))
  return found


# ---------------------------------------------------------------------------
# Code for other releases, dataclasses, tests' places, options.
# ---------------------------------------------------------------------------

def compat_branches(added: Iterable[tuple[str, int, str]]) -> list[Finding]:
  """Findings for code and words of compatibility with other JAX releases."""
  found = []
  for path, n, text in added:
    if not path.endswith(".py"):
      continue
    for regex, why in _COMPAT_CODE:
      for m in regex.finditer(text):
        found.append(Finding(f"{path}:{n}", m.group(0), why, text.strip()))
    for m in _COMPAT_WORDS_RE.finditer(text):
      found.append(Finding(f"{path}:{n}", m.group(0), "words of a branch "
                           "for other JAX releases", text.strip()))
  return found


def dataclass_slots(added: Iterable[tuple[str, int, str]]) -> list[Finding]:
  """Findings for new dataclasses without `slots=True`."""
  found = []
  for path, n, text in added:
    m = _DATACLASS_RE.match(text)
    if (m and path.endswith(".py") and "/tests/" not in f"/{path}"
        and not re.search(r"\bslots\s*=\s*True\b", m.group(1))):
      found.append(Finding(f"{path}:{n}", text.strip(), "a dataclass "
                           "without slots=True, which upstream's take",
                           text.strip()))
  return found


def test_placement(new_files: Iterable[str],
                   existing: Iterable[str]) -> list[Finding]:
  """Findings for new test files whose tests belong in an existing one.

  `call_tf_vmap_test.py`, new beside `call_tf_test.py`, tests what
  `call_tf_test.py` does: upstream keeps such tests in that file.
  """
  existing = set(existing)
  found = []
  for path in new_files:
    p = pathlib.PurePosixPath(path)
    if not p.name.endswith("_test.py"):
      continue
    stem = p.name[:-len("_test.py")]
    parts = stem.split("_")
    for k in range(len(parts) - 1, 0, -1):
      home = str(p.with_name("_".join(parts[:k]) + "_test.py"))
      if home in existing:
        found.append(Finding(path, p.name, f"a new test file: upstream "
                             f"keeps these tests in {home}", path))
        break
  return found


def option_keys(added: Iterable[tuple[str, int, str]],
                message: str) -> list[Finding]:
  """Findings for options added to the jit key or trace context that the
  message does not justify (it says "jit key" or "trace context")."""
  if re.search(r"(?i)jit key|trace context", message):
    return []
  return [Finding(f"{path}:{n}", m.group(0), "a new option in every user's "
                  "jit key or trace context: say in the message why it "
                  "must be, or leave it out", text.strip())
          for path, n, text in added
          for m in _OPTION_KEY_RE.finditer(text)]
