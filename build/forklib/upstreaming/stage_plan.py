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
"""`patches/stage.toml`: the queue cut into upstream pull requests.

The staging plan lists the pull requests in order. Each names the patches of
the series it carries, the overlay modules it adds, the upstream-style tests
of `tests/upstream/` it adds (and where upstream keeps them), its
`CHANGELOG.md` entries, its edits of upstream's documentation, and the text
of earlier patches that only it may show (`deferred`). Every patch, overlay
module and upstream-style test belongs to exactly one pull request; loading
the plan checks that, and names what is missing or doubled.

```toml
branch = "call-tf-vmap"          # the series' branch in the staged repository
bug = "https://github.com/jax-ml/jax/issues/11753"
max_added_lines = 1500           # non-test code a pull request may add
module_root = "jax/experimental/jax2tf"   # modules are named from here
shaken = ["call_tf_lib/errors.py"]        # staged definition by definition

[scrub]                          # more fork-internal words (see stage_checks)
patterns = [{ regex = 'internal-name', why = "a name of ours" }]
allow = ['os\\.fork']            # lines matching these are not findings

[[pr]]
name = "vmap"                    # [a-z0-9-]; markers say `until vmap`
title = "[jax2tf] call_tf: support jax.vmap with vmap_method"
summary = "Optional opening paragraph of the message."
patches = ["0003-call-tf-vmap-method-and-batching-rule.patch"]
modules = ["call_tf_lib/batching/rule.py"]
changelog = [{ section = "New features", text = "..." }]

[[pr.test]]
file = "call_tf_vmap_test.py"    # in tests/upstream/
to = "jax/experimental/jax2tf/tests/call_tf_vmap_test.py"
like = "call_tf_test"            # the BUILD rule to model its rule on

[[pr.edit]]                      # an edit of an upstream file
file = "jax/experimental/jax2tf/README.md"
find = "(no forward-mode autodiff, nor ``vmap``)"
replace = "(no forward-mode autodiff)"

[[pr.deferred]]                  # a patch's text shown from this PR on
file = "jax/_src/config.py"
text = "call_tf_vectorizer = enum_state(..."
before = ""                      # what earlier commits have instead
```
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
from typing import Any

from forklib import ForkError
from forklib import load_toml

PLAN_NAME = "stage.toml"
UPSTREAM_TESTS = "tests/upstream"
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
# Where upstream keeps tests, and the BUILD rule a new test's is modelled on
# by default.
TEST_HOMES = {"jax/experimental/jax2tf/tests/": "call_tf_test"}


@dataclasses.dataclass(frozen=True)
class Test:
  """An upstream-style test of `tests/upstream/` and its place upstream."""
  file: str       # its name in tests/upstream/
  to: str         # its path in upstream's repository
  like: str       # the BUILD rule its rule is modelled on


@dataclasses.dataclass(frozen=True)
class Edit:
  """A replacement of text in an upstream file (documentation)."""
  file: str
  find: str
  replace: str


@dataclasses.dataclass(frozen=True)
class Deferred:
  """Text a patch adds that only this pull request and later ones show."""
  file: str
  text: str
  before: str


@dataclasses.dataclass(frozen=True)
class ChangelogEntry:
  section: str    # "New features", "Bug fixes", "Changes", ...
  text: str


@dataclasses.dataclass(frozen=True)
class PullRequest:
  """One pull request: one commit of the staged series."""
  index: int      # 1-based, in plan order
  name: str
  title: str
  summary: str
  patches: tuple[str, ...]
  modules: tuple[str, ...]   # relative to the plan's module_root
  tests: tuple[Test, ...]
  changelog: tuple[ChangelogEntry, ...]
  edits: tuple[Edit, ...]
  deferred: tuple[Deferred, ...]

  @property
  def slug(self) -> str:
    return f"{self.index:02d}-{self.name}"


@dataclasses.dataclass(frozen=True)
class ScrubPattern:
  regex: str
  why: str


@dataclasses.dataclass(frozen=True)
class Plan:
  """The staging plan, validated against the project."""
  path: pathlib.Path
  branch: str
  bug: str
  max_added_lines: int
  module_root: str
  shaken: tuple[str, ...]
  scrub_patterns: tuple[ScrubPattern, ...]
  scrub_allow: tuple[str, ...]
  prs: tuple[PullRequest, ...]

  def index_of(self, name: str) -> int:
    """The index of the pull request `name` (1-based)."""
    for pr in self.prs:
      if pr.name == name:
        return pr.index
    raise KeyError(name)

  def pr_of_module(self, module: str) -> PullRequest:
    return next(pr for pr in self.prs if module in pr.modules)

  def repo_path(self, module: str) -> str:
    """A module's path in upstream's repository."""
    return repo_path(self.module_root, module)


def repo_path(module_root: str, module: str) -> str:
  """A plan's module in upstream's repository: from `module_root`, or from
  the repository's root for a module named from `jax/` (the StableHLO
  interpreter, in `jax/_src/export/`)."""
  return module if module.startswith("jax/") else f"{module_root}/{module}"


def _fail(path: pathlib.Path, where: str, message: str) -> ForkError:
  return ForkError(f"{path}: {where}: {message}")


def _check_keys(path: pathlib.Path, where: str, table: dict[str, Any],
                allowed: set[str], required: set[str] = frozenset()) -> None:
  unknown = sorted(set(table) - allowed)
  if unknown:
    raise _fail(path, where, f"unknown key(s) {', '.join(unknown)} (known: "
                f"{', '.join(sorted(allowed))})")
  missing = sorted(required - set(table))
  if missing:
    raise _fail(path, where, f"missing {', '.join(missing)}")


def _strings(path: pathlib.Path, where: str, value: Any) -> tuple[str, ...]:
  if not isinstance(value, list) or not all(isinstance(v, str)
                                            for v in value):
    raise _fail(path, where, "must be a list of strings")
  return tuple(value)


def _string(path: pathlib.Path, where: str, value: Any) -> str:
  if not isinstance(value, str):
    raise _fail(path, where, "must be a string")
  return value


def _default_like(to: str) -> str | None:
  for home, like in TEST_HOMES.items():
    if to.startswith(home):
      return like
  return None


def _load_pr(path: pathlib.Path, index: int, raw: Any) -> PullRequest:
  where = f"pull request {index}"
  if not isinstance(raw, dict):
    raise _fail(path, where, "[[pr]] must be a table")
  _check_keys(path, where, raw,
              {"name", "title", "summary", "patches", "modules", "test",
               "changelog", "edit", "deferred"}, {"name", "title"})
  name = _string(path, f"{where} name", raw["name"])
  if not _NAME_RE.match(name):
    raise _fail(path, where, f"name {name!r} must be lower-case letters, "
                "digits and dashes")
  where = f"pull request {index} ({name})"
  tests = []
  for t in raw.get("test", []):
    _check_keys(path, f"{where} [[pr.test]]", t, {"file", "to", "like"},
                {"file", "to"})
    to = _string(path, f"{where} test to", t["to"])
    like = t.get("like") or _default_like(to)
    if not like:
      raise _fail(path, where, f"test {t['file']!r}: say which BUILD rule "
                  f"its rule is modelled on (like = \"<neighbour>_test\"); "
                  f"only {', '.join(TEST_HOMES)} has a default")
    if not re.fullmatch(r"(tests|jax/.+/tests)/\w+_test\.py", to):
      raise _fail(path, where, f"test {t['file']!r} goes to {to!r}: upstream "
                  "keeps tests as tests/<name>_test.py or "
                  "jax/.../tests/<name>_test.py")
    tests.append(Test(_string(path, f"{where} test file", t["file"]), to,
                      like))
  changelog = []
  for c in raw.get("changelog", []):
    _check_keys(path, f"{where} changelog", c, {"section", "text"},
                {"section", "text"})
    changelog.append(ChangelogEntry(c["section"], c["text"].strip()))
  edits = []
  for e in raw.get("edit", []):
    _check_keys(path, f"{where} [[pr.edit]]", e, {"file", "find", "replace"},
                {"file", "find", "replace"})
    if not e["find"]:
      raise _fail(path, where, f"edit of {e['file']}: `find` is empty")
    edits.append(Edit(e["file"], e["find"], e["replace"]))
  deferred = []
  for d in raw.get("deferred", []):
    _check_keys(path, f"{where} [[pr.deferred]]", d,
                {"file", "text", "before"}, {"file", "text"})
    if not d["text"]:
      raise _fail(path, where, f"deferred text of {d['file']} is empty")
    deferred.append(Deferred(d["file"], d["text"], d.get("before", "")))
  return PullRequest(
      index=index, name=name,
      title=_string(path, f"{where} title", raw["title"]).strip(),
      summary=_string(path, f"{where} summary", raw.get("summary", "")
                      ).strip(),
      patches=_strings(path, f"{where} patches", raw.get("patches", [])),
      modules=_strings(path, f"{where} modules", raw.get("modules", [])),
      tests=tuple(tests), changelog=tuple(changelog), edits=tuple(edits),
      deferred=tuple(deferred))


def _once(path: pathlib.Path, what: str, owners: dict[str, list[str]],
          universe: list[str], where_missing: str) -> None:
  """Every item of `universe` is in exactly one pull request."""
  doubled = {k: v for k, v in owners.items() if len(v) > 1}
  if doubled:
    raise _fail(path, what, "in more than one pull request: " + "; ".join(
        f"{k} ({', '.join(v)})" for k, v in sorted(doubled.items())))
  unknown = sorted(set(owners) - set(universe))
  if unknown:
    raise _fail(path, what, f"not in {where_missing}: {', '.join(unknown)}")
  missing = [u for u in universe if u not in owners]
  if missing:
    raise _fail(path, what, f"in no pull request (each one of "
                f"{where_missing} must be staged by one): "
                + ", ".join(missing))


def load(root: pathlib.Path, series: list[str],
         overlay_files: list[str]) -> Plan:
  """Reads and checks `patches/stage.toml`.

  Args:
    root: the project root.
    series: the names of the series' patches, in order.
    overlay_files: the overlay's files, as paths in upstream's repository
      (`jax/experimental/jax2tf/call_tf_lib/...`).

  Returns:
    The plan.

  Raises:
    ForkError: the plan is malformed, or leaves out, doubles or names
      unknown patches, modules or tests, or orders patches against the
      series; the message names the file, the pull request and the item.
  """
  path = root / "patches" / PLAN_NAME
  if not path.is_file():
    raise ForkError(
        f"{path} does not exist: `stage` needs a staging plan listing the "
        "pull requests (their patches, overlay modules and tests); see "
        "docs/maintainers.md, \"Staging the queue for upstream\"")
  raw = load_toml(path)
  _check_keys(path, "top level", raw,
              {"branch", "bug", "max_added_lines", "module_root", "shaken",
               "scrub", "pr"}, {"pr"})
  scrub = raw.get("scrub", {})
  _check_keys(path, "[scrub]", scrub, {"patterns", "allow"})
  patterns = []
  for p in scrub.get("patterns", []):
    _check_keys(path, "[scrub] patterns", p, {"regex", "why"},
                {"regex", "why"})
    try:
      re.compile(p["regex"])
    except re.error as e:
      raise _fail(path, "[scrub] patterns", f"{p['regex']!r}: {e}")
    patterns.append(ScrubPattern(p["regex"], p["why"]))
  allow = _strings(path, "[scrub] allow", scrub.get("allow", []))
  for a in allow:
    try:
      re.compile(a)
    except re.error as e:
      raise _fail(path, "[scrub] allow", f"{a!r}: {e}")
  max_lines = raw.get("max_added_lines", 1500)
  if not isinstance(max_lines, int) or max_lines <= 0:
    raise _fail(path, "max_added_lines", "must be a positive integer")
  module_root = _string(path, "module_root",
                        raw.get("module_root", "jax/experimental/jax2tf")
                        ).strip("/")
  if not isinstance(raw["pr"], list) or not raw["pr"]:
    raise _fail(path, "pr", "list at least one [[pr]]")
  prs = tuple(_load_pr(path, i, r) for i, r in enumerate(raw["pr"], 1))
  names = [pr.name for pr in prs]
  doubled = sorted({n for n in names if names.count(n) > 1})
  if doubled:
    raise _fail(path, "pr", f"names used twice: {', '.join(doubled)}")

  owners: dict[str, list[str]] = {}
  for pr in prs:
    for p in pr.patches:
      owners.setdefault(p, []).append(pr.name)
  _once(path, "patches", owners, series, "patches/series")
  order = [p for pr in prs for p in pr.patches]
  if order != [p for p in series if p in order]:
    first = next(a for a, b in zip(order, series) if a != b)
    raise _fail(path, "patches", f"{first} is staged out of the series' "
                "order; stage patches in the order of patches/series (git "
                "applies each onto the ones before it)")

  owners = {}
  for pr in prs:
    for m in pr.modules:
      owners.setdefault(repo_path(module_root, m), []).append(pr.name)
  _once(path, "modules", owners, overlay_files,
        "the overlay (jax/), as module_root/<module>")
  shaken = _strings(path, "shaken", raw.get("shaken", []))
  for s in shaken:
    if not any(s in pr.modules for pr in prs) or not s.endswith(".py"):
      raise _fail(path, "shaken", f"{s} is not a module of any pull request")

  owners = {}
  for pr in prs:
    for t in pr.tests:
      owners.setdefault(t.file, []).append(pr.name)
  tests_dir = root / UPSTREAM_TESTS
  universe = sorted(p.name for p in tests_dir.glob("*_test.py")
                    ) if tests_dir.is_dir() else []
  _once(path, "tests", owners, universe, UPSTREAM_TESTS)
  destinations = [t.to for pr in prs for t in pr.tests]
  twice = sorted({d for d in destinations if destinations.count(d) > 1})
  if twice:
    raise _fail(path, "tests", f"two tests go to {', '.join(twice)}")
  return Plan(path=path, branch=raw.get("branch", "call-tf-vmap"),
              bug=raw.get("bug", "https://github.com/jax-ml/jax/issues/11753"),
              max_added_lines=max_lines, module_root=module_root,
              shaken=shaken, scrub_patterns=tuple(patterns),
              scrub_allow=allow, prs=prs)
