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
"""`patches/stage.toml`: what of the queue goes upstream, and how.

The staging plan lists the pull requests in order. A pull request is one
commit, on upstream's base alone (the default: each can be reviewed and
merged on its own) or stacked `after` an earlier one. Its content is one
of:

* `source`: a patch written for upstream, kept in `patches/stage/` (its
  code and its tests in upstream's files, its commit message): what a
  maintainer can take as it is, where the queue's form (an overlay package,
  hooks) would not do;
* the queue's own `patches`, with the overlay `modules` it adds and its
  upstream-style `test`s of `tests/upstream/`, and where its commit holds
  them otherwise than the distribution ships them (a later pull request's
  code held back, branches for other releases left out) its `overlay`
  patch of `patches/stage/overlay/` (`stage_source.overlay_variant`), its
  message made of the patches' DEP-3 descriptions;
* `files` of this repository copied into upstream's tree;
* a `jep`: a design proposal of this repository, in JAX's form. JAX asks
  for a JEP issue first, and names the document and its index line after
  the issue's number: until `issue` is given, the pull request is held and
  `stage` writes the issue's text (`jep-issue.md`); with it, the commit
  adds `docs/jep/<issue>-<slug>.md` (its title "JEP <issue>: ...", the
  author's name under it) and its line of `docs/jep/index.rst`, in numeric
  order;

and, in all cases, its CHANGELOG entries and edits of upstream's
documentation. A pull request that waits (`held`, with the reason: until a
design proposal is accepted, say) is listed but not committed. What stays
in the distribution is listed in `[[stays]]`, with the reason. Every patch
of the series, overlay module and upstream-style test is accounted for
once: in a pull request (held or not) or in `[[stays]]`; or, for a patch
or test, `replaces`d by a source pull request that does its work for
upstream. Loading the plan checks that, and names what is missing or
doubled.

```toml
branch = "call-tf-vmap"          # the series' branch in the staged repository
bug = "https://github.com/jax-ml/jax/issues/11753"   # "Part of <bug>."
max_added_lines = 1500           # non-test code a pull request may add
module_root = "jax/experimental/jax2tf"   # modules are named from here
shaken = ["call_tf_lib/errors.py"]        # staged definition by definition

[scrub]                          # more fork-internal words (see stage_checks)
patterns = [{ regex = 'internal-name', why = "a name of ours" }]
allow = ['os\\.fork']            # lines matching these are not findings

[[pr]]                           # written for upstream
name = "vmap-method"             # [a-z0-9-]
source = "patches/stage/call-tf-vmap-method.patch"  # title, message: its own
replaces = ["0003-call-tf-vmap.patch", "call_tf_vmap_test.py"]
max_added_lines = 400            # this pull request's own limit
touches = ["jax/experimental/jax2tf/call_tf.py", "CHANGELOG.md"]  # only
breaking = false                 # true: needs a "Breaking changes" entry
changelog = [{ section = "New features", text = "..." }]

[[pr.edit]]                      # an edit of an upstream file
file = "jax/experimental/jax2tf/README.md"
find = "(no forward-mode autodiff, nor ``vmap``)"
replace = "(no forward-mode autodiff)"

[[pr]]                           # the queue's own
name = "pfor"
title = "[jax2tf] call_tf: vectorize with pfor"
summary = "Optional opening paragraph of the message."
bug = ""                         # no "Part of" line (default: the plan's)
after = "vmap-method"            # stacked on it (default: on the base)
held = "until the design proposal is accepted"   # listed, not committed
patches = ["0004-call-tf-pfor.patch"]
modules = ["call_tf_lib/batching/pfor.py"]
overlay = "patches/stage/overlay/pfor.patch"   # its commit's variant of the
                                 # chain's modules and tests (a diff of them)
overlay_from = { pr = "NAME", keep = ["import pfor"] }
                                 # optional: the overlay above is written
                                 # by `stage_overlays` from pull request
                                 # NAME's (one written by hand), with those
                                 # of its removed lines kept

[[pr.test]]
file = "call_tf_pfor_test.py"    # in tests/upstream/
to = "jax/experimental/jax2tf/tests/call_tf_pfor_test.py"
like = "call_tf_test"            # the BUILD rule to model its rule on

[[pr.deferred]]                  # a patch's text shown from this PR on
file = "jax/_src/config.py"
text = "call_tf_vectorizer = enum_state(..."
before = ""                      # what earlier commits have instead

[[pr]]                           # a document of ours
name = "notes"
title = "[docs] ..."
summary = "..."
files = [{ from = "docs/x.md", to = "docs/x.md" }]

[[pr]]                           # a design proposal, as a JEP
name = "proposal"
title = "[JEP] ..."
summary = "..."
jep = { source = "docs/jep/x.md", slug = "x", issue = 0, numbers = true }
                                 # issue: its JEP issue's number, 0 until
                                 # it is opened; numbers: its tables are
                                 # checked against jep_numbers

[[stays]]                        # not staged: the distribution's own
name = "tf1-graph-mode"
why = "..."
patches = ["0005-call-tf-graph-mode.patch"]
modules = ["call_tf_lib/tf_function/captures.py"]
tests = ["call_tf_graph_mode_test.py"]
```
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
from typing import Any

from forklib import ForkError
from forklib import load_toml
from forklib.project import Project
from forklib.sources import patchq
from forklib.upstreaming import stage_source

PLAN_NAME = "stage.toml"
UPSTREAM_TESTS = "tests/upstream"
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
# Where upstream keeps tests, and the BUILD rule a new test's is modelled on
# by default.
TEST_HOMES = {"jax/experimental/jax2tf/tests/": "call_tf_test"}
BREAKING_SECTION = "Breaking changes"


@dataclasses.dataclass(frozen=True, slots=True)
class Test:
  """An upstream-style test of `tests/upstream/` and its place upstream."""
  file: str       # its name in tests/upstream/
  to: str         # its path in upstream's repository
  like: str       # the BUILD rule its rule is modelled on


@dataclasses.dataclass(frozen=True, slots=True)
class Edit:
  """A replacement of text in an upstream file (documentation)."""
  file: str
  find: str
  replace: str


@dataclasses.dataclass(frozen=True, slots=True)
class Deferred:
  """Text a patch adds that only this pull request and later ones show."""
  file: str
  text: str
  before: str


@dataclasses.dataclass(frozen=True, slots=True)
class ChangelogEntry:
  section: str    # "New features", "Bug fixes", "Changes", ...
  text: str


@dataclasses.dataclass(frozen=True, slots=True)
class FileCopy:
  """A file of this repository, copied to a path of upstream's tree."""
  source: str     # relative to the project root
  to: str         # in upstream's repository


@dataclasses.dataclass(frozen=True, slots=True)
class Jep:
  """A design proposal of this repository, staged in JAX's form."""
  source: str     # the document, relative to the project root
  slug: str       # its file is docs/jep/<issue>-<slug>.md
  issue: int      # the JEP issue's number; 0 until it is opened
  numbers: bool   # whether its tables are checked (jep_numbers)

  def path(self) -> str:
    """The document's path in JAX's tree."""
    return f"docs/jep/{self.issue}-{self.slug}.md"


@dataclasses.dataclass(frozen=True, slots=True)
class PullRequest:
  """One pull request: one commit of the staged series (unless held)."""
  index: int      # 1-based, in plan order
  name: str
  title: str      # a source pull request's: its patch's subject
  summary: str
  patches: tuple[str, ...]
  modules: tuple[str, ...]   # relative to the plan's module_root
  tests: tuple[Test, ...]
  changelog: tuple[ChangelogEntry, ...]
  edits: tuple[Edit, ...]
  deferred: tuple[Deferred, ...]
  source: str = ""           # a patch written for upstream (project path)
  after: str = ""            # the pull request it is stacked on; "": base
  held: str = ""             # why it is not committed yet; "": committed
  bug: str | None = None     # None: the plan's; "": no "Part of" line
  max_added_lines: int | None = None   # None: the plan's
  replaces: tuple[str, ...] = ()       # patches and tests it stands for
  touches: tuple[str, ...] = ()        # if given, the only files it changes
  breaking: bool = False
  files: tuple[FileCopy, ...] = ()
  overlay: str = ""          # its variant of the overlay (project path)
  overlay_from: OverlaySource | None = None   # its overlay is derived
  jep: Jep | None = None     # a design proposal (held until its issue)

  @property
  def slug(self) -> str:
    return f"{self.index:02d}-{self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class OverlaySource:
  """Where a derived overlay patch comes from (`stage_overlays`): the
  overlay of pull request `pr`, with the removed lines `keep` kept."""
  pr: str
  keep: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Stays:
  """What stays in the distribution, not staged, and why."""
  name: str
  why: str
  patches: tuple[str, ...]
  modules: tuple[str, ...]
  tests: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class ScrubPattern:
  regex: str
  why: str


@dataclasses.dataclass(frozen=True, slots=True)
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
  stays: tuple[Stays, ...] = ()

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

  def chain(self, pr: PullRequest) -> list[PullRequest]:
    """`pr` and the pull requests it is stacked on, the base's first."""
    by_name = {p.name: p for p in self.prs}
    chain = [pr]
    while chain[0].after:
      chain.insert(0, by_name[chain[0].after])
    return chain

  def limit(self, pr: PullRequest) -> int:
    """The non-test lines `pr` may add."""
    return (self.max_added_lines if pr.max_added_lines is None
            else pr.max_added_lines)

  def bug_of(self, pr: PullRequest) -> str:
    """The issue `pr`'s message cites ("" for none)."""
    return self.bug if pr.bug is None else pr.bug


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


_PR_KEYS = {"name", "title", "summary", "patches", "modules", "test",
            "changelog", "edit", "deferred", "source", "after", "held", "bug",
            "max_added_lines", "replaces", "touches", "breaking", "files",
            "overlay", "overlay_from", "jep"}
# What a pull request written for upstream (`source`) carries in its patch.
_NOT_WITH_SOURCE = ("title", "summary", "patches", "modules", "test",
                    "deferred", "files", "overlay", "jep")
# What a design proposal (`jep`) does not stage.
_NOT_WITH_JEP = ("patches", "modules", "test", "deferred", "files",
                 "overlay", "edit")
JEP_HELD = ("until its JEP issue is opened (JAX asks for the issue first): "
            "open it with jep-issue.md, then give its number as the plan's "
            "jep.issue")


def _load_jep(root: pathlib.Path, path: pathlib.Path, where: str,
              raw: dict[str, Any]) -> Jep | None:
  """A pull request's design proposal, checked."""
  if "jep" not in raw:
    return None
  table = raw["jep"]
  if not isinstance(table, dict):
    raise _fail(path, where, "jep must be a table")
  _check_keys(path, f"{where} jep", table,
              {"source", "slug", "issue", "numbers"}, {"source", "slug"})
  both = [k for k in _NOT_WITH_JEP if k in raw]
  if both:
    raise _fail(path, where, f"a jep stages its document alone: drop "
                f"{', '.join(both)}")
  source = _string(path, f"{where} jep source", table["source"])
  if not (root / source).is_file():
    raise _fail(path, where, f"jep: {source} does not exist")
  slug = _string(path, f"{where} jep slug", table["slug"])
  if not _NAME_RE.match(slug):
    raise _fail(path, where, f"jep slug {slug!r} must be lower-case "
                "letters, digits and dashes")
  issue = table.get("issue", 0)
  if not isinstance(issue, int) or isinstance(issue, bool) or issue < 0:
    raise _fail(path, where, "jep issue must be the number of the JEP's "
                "issue, or 0 until it is opened")
  numbers = table.get("numbers", False)
  if not isinstance(numbers, bool):
    raise _fail(path, where, "jep numbers must be true or false")
  return Jep(source, slug, issue, numbers)


def _load_tests(path: pathlib.Path, where: str, raw: list[Any]
                ) -> tuple[Test, ...]:
  tests = []
  for t in raw:
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
  return tuple(tests)


def _load_texts(path: pathlib.Path, where: str, raw: dict[str, Any]
                ) -> tuple[tuple[ChangelogEntry, ...], tuple[Edit, ...],
                           tuple[Deferred, ...], tuple[FileCopy, ...]]:
  """A pull request's CHANGELOG entries, edits, deferred texts and files."""
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
  files = []
  for f in raw.get("files", []):
    _check_keys(path, f"{where} files", f, {"from", "to"}, {"from", "to"})
    files.append(FileCopy(_string(path, f"{where} files from", f["from"]),
                          _string(path, f"{where} files to", f["to"])))
  return tuple(changelog), tuple(edits), tuple(deferred), tuple(files)


def _source_title(root: pathlib.Path, path: pathlib.Path, where: str,
                  source: str) -> str:
  """The subject of a pull request's patch written for upstream."""
  if not (root / source).is_file():
    raise _fail(path, where, f"source {source} does not exist (a patch "
                "written for upstream, as `git format-patch` writes it)")
  try:
    patch = patchq.parse(root / source)
  except ForkError as e:
    raise _fail(path, where, f"source {source}: {e}")
  if not patch.subject:
    raise _fail(path, where, f"source {source} has no Subject: line")
  return patch.subject


def _check_source_pr(root: pathlib.Path, path: pathlib.Path, where: str,
                     raw: dict[str, Any]) -> str:
  """The title of a pull request: its own, or its source patch's subject."""
  source = raw.get("source", "")
  if not source:
    if "title" not in raw:
      raise _fail(path, where, "missing title (or a source patch, whose "
                  "subject is the title)")
    return _string(path, f"{where} title", raw["title"]).strip()
  both = [k for k in _NOT_WITH_SOURCE if k in raw]
  if both:
    raise _fail(path, where, f"source {source} carries its own code, tests "
                f"and message: drop {', '.join(both)}")
  return _source_title(root, path, where, _string(path, f"{where} source",
                                                  source))


def _load_pr(root: pathlib.Path, path: pathlib.Path, index: int, raw: Any
             ) -> PullRequest:
  where = f"pull request {index}"
  if not isinstance(raw, dict):
    raise _fail(path, where, "[[pr]] must be a table")
  _check_keys(path, where, raw, _PR_KEYS, {"name"})
  name = _string(path, f"{where} name", raw["name"])
  if not _NAME_RE.match(name):
    raise _fail(path, where, f"name {name!r} must be lower-case letters, "
                "digits and dashes")
  where = f"pull request {index} ({name})"
  title = _check_source_pr(root, path, where, raw)
  limit = raw.get("max_added_lines")
  if limit is not None and (not isinstance(limit, int) or limit <= 0):
    raise _fail(path, where, "max_added_lines must be a positive integer")
  bug = raw.get("bug")
  changelog, edits, deferred, files = _load_texts(path, where, raw)
  jep = _load_jep(root, path, where, raw)
  held = _string(path, f"{where} held", raw.get("held", "")).strip()
  if jep is not None and not jep.issue and not held:
    held = JEP_HELD
  pr = PullRequest(
      index=index, name=name, title=title,
      summary=_string(path, f"{where} summary", raw.get("summary", "")
                      ).strip(),
      patches=_strings(path, f"{where} patches", raw.get("patches", [])),
      modules=_strings(path, f"{where} modules", raw.get("modules", [])),
      tests=_load_tests(path, where, raw.get("test", [])),
      changelog=changelog, edits=edits, deferred=deferred,
      source=raw.get("source", ""),
      after=_string(path, f"{where} after", raw.get("after", "")),
      held=held,
      bug=None if bug is None else _string(path, f"{where} bug", bug),
      max_added_lines=limit,
      replaces=_strings(path, f"{where} replaces", raw.get("replaces", [])),
      touches=_strings(path, f"{where} touches", raw.get("touches", [])),
      breaking=bool(raw.get("breaking", False)), files=files,
      overlay=_string(path, f"{where} overlay", raw.get("overlay", "")),
      overlay_from=_load_overlay_source(path, where, raw), jep=jep)
  _check_pr(root, path, where, pr)
  return pr


def _load_overlay_source(path: pathlib.Path, where: str, raw: dict
                         ) -> OverlaySource | None:
  """`overlay_from = { pr = "NAME", keep = ["LINE", ...] }`, or None."""
  source = raw.get("overlay_from")
  if source is None:
    return None
  if not isinstance(source, dict):
    raise _fail(path, where, 'overlay_from: a table { pr = "NAME", keep = '
                '["LINE", ...] }')
  _check_keys(path, f"{where} overlay_from", source, {"pr", "keep"},
              {"pr"})
  if not raw.get("overlay"):
    raise _fail(path, where, "overlay_from needs overlay: the path of the "
                "patch derived from it")
  return OverlaySource(
      pr=_string(path, f"{where} overlay_from pr", source["pr"]),
      keep=_strings(path, f"{where} overlay_from keep",
                    source.get("keep", [])))


def _check_pr(root: pathlib.Path, path: pathlib.Path, where: str,
              pr: PullRequest) -> None:
  """What one pull request's entries must hold, alone."""
  if pr.breaking and not any(c.section == BREAKING_SECTION
                             for c in pr.changelog):
    raise _fail(path, where, "a breaking change needs its CHANGELOG entry: "
                f'changelog = [{{ section = "{BREAKING_SECTION}", text = '
                '"..." }]')
  for f in pr.files:
    if not (root / f.source).is_file():
      raise _fail(path, where, f"files: {f.source} does not exist")
  if pr.overlay and not (root / pr.overlay).is_file():
    raise _fail(path, where, f"overlay {pr.overlay} does not exist (a diff "
                "of this repository's jax/ and tests/upstream/ files)")
  if (not pr.source and not pr.patches and not pr.modules and not pr.files
      and not pr.tests and not pr.held and pr.jep is None):
    raise _fail(path, where, "stages nothing: give it a source patch, "
                "patches, modules or files")


def _load_stays(path: pathlib.Path, raw: Any) -> tuple[Stays, ...]:
  stays = []
  for i, s in enumerate(raw or [], 1):
    where = f"[[stays]] {i}"
    _check_keys(path, where, s, {"name", "why", "patches", "modules",
                                 "tests"}, {"name", "why"})
    why = _string(path, f"{where} why", s["why"]).strip()
    if not why:
      raise _fail(path, where, "say why it stays (why = \"...\")")
    stays.append(Stays(
        _string(path, f"{where} name", s["name"]), why,
        _strings(path, f"{where} patches", s.get("patches", [])),
        _strings(path, f"{where} modules", s.get("modules", [])),
        _strings(path, f"{where} tests", s.get("tests", []))))
  return tuple(stays)


def _once(path: pathlib.Path, what: str, owners: dict[str, list[str]],
          universe: list[str], where_missing: str,
          replaced: set[str] = frozenset()) -> None:
  """Every item of `universe` is in exactly one pull request or [[stays]],
  or is replaced by a source pull request."""
  doubled = {k: v for k, v in owners.items() if len(v) > 1}
  if doubled:
    raise _fail(path, what, "in more than one pull request or [[stays]]: "
                + "; ".join(f"{k} ({', '.join(v)})"
                            for k, v in sorted(doubled.items())))
  unknown = sorted(set(owners) - set(universe))
  if unknown:
    raise _fail(path, what, f"not in {where_missing}: {', '.join(unknown)}")
  missing = [u for u in universe if u not in owners and u not in replaced]
  if missing:
    raise _fail(path, what, f"in no pull request (each one of "
                f"{where_missing} must be staged by one, replaced by a "
                "source pull request, or listed in [[stays]]): "
                + ", ".join(missing))


def _check_order(path: pathlib.Path, prs: tuple[PullRequest, ...]) -> None:
  """Names are unique; `after` names an earlier, committed pull request."""
  names = [pr.name for pr in prs]
  doubled = sorted({n for n in names if names.count(n) > 1})
  if doubled:
    raise _fail(path, "pr", f"names used twice: {', '.join(doubled)}")
  seen: dict[str, PullRequest] = {}
  for pr in prs:
    if pr.after:
      before = seen.get(pr.after)
      if before is None:
        raise _fail(path, f"pull request {pr.index} ({pr.name})",
                    f"after = {pr.after!r} names no earlier pull request")
      if before.held and not pr.held:
        raise _fail(path, f"pull request {pr.index} ({pr.name})",
                    f"is stacked on {pr.after}, which is held: hold it too")
    seen[pr.name] = pr


def _check_patches(path: pathlib.Path, prs: tuple[PullRequest, ...],
                   stays: tuple[Stays, ...], series: list[str],
                   replaced: set[str]) -> None:
  owners: dict[str, list[str]] = {}
  for pr in prs:
    for p in pr.patches:
      owners.setdefault(p, []).append(pr.name)
  for s in stays:
    for p in s.patches:
      owners.setdefault(p, []).append(f"stays {s.name}")
  _once(path, "patches", owners, series, "patches/series", replaced)
  by_name = {pr.name: pr for pr in prs}
  for pr in prs:
    if pr.held:
      continue  # its patches are applied when it is staged
    chain = [pr]
    while chain[0].after:
      chain.insert(0, by_name[chain[0].after])
    order = [p for q in chain for p in q.patches]
    in_series = [p for p in series if p in order]
    if order != in_series:
      first = next(a for a, b in zip(order, in_series) if a != b)
      raise _fail(path, "patches", f"{first} is staged out of the series' "
                  "order; stage patches in the order of patches/series (git "
                  "applies each onto the ones before it)")


def _check_modules_and_tests(root: pathlib.Path, path: pathlib.Path,
                             prs: tuple[PullRequest, ...],
                             stays: tuple[Stays, ...], module_root: str,
                             overlay_files: list[str],
                             replaced: set[str]) -> None:
  owners: dict[str, list[str]] = {}
  for pr in prs:
    for m in pr.modules:
      owners.setdefault(repo_path(module_root, m), []).append(pr.name)
  for s in stays:
    for m in s.modules:
      owners.setdefault(repo_path(module_root, m), []).append(
          f"stays {s.name}")
  _once(path, "modules", owners, overlay_files,
        "the overlay (jax/), as module_root/<module>")
  owners = {}
  for pr in prs:
    for t in pr.tests:
      owners.setdefault(t.file, []).append(pr.name)
  for s in stays:
    for t in s.tests:
      owners.setdefault(t, []).append(f"stays {s.name}")
  universe = upstream_style_tests(root)
  _once(path, "tests", owners, universe, UPSTREAM_TESTS, replaced)
  destinations = [t.to for pr in prs for t in pr.tests]
  twice = sorted({d for d in destinations if destinations.count(d) > 1})
  if twice:
    raise _fail(path, "tests", f"two tests go to {', '.join(twice)}")


def _check_overlays(root: pathlib.Path, path: pathlib.Path,
                    prs: tuple[PullRequest, ...], module_root: str) -> None:
  """An overlay patch changes only files its pull request's commit lays:
  the modules and tests of it and of those it is stacked on."""
  by_name = {pr.name: pr for pr in prs}
  for pr in prs:
    if not pr.overlay:
      continue
    _check_overlay_source(path, pr, by_name)
    chain = [pr]
    while chain[0].after:
      chain.insert(0, by_name[chain[0].after])
    laid = {repo_path(module_root, m) for q in chain for m in q.modules}
    laid |= {f"{UPSTREAM_TESTS}/{t.file}" for q in chain for t in q.tests}
    text = (root / pr.overlay).read_text(encoding="utf-8")
    outside = [f for f in stage_source.variant_files(text) if f not in laid]
    if outside:
      raise _fail(path, f"pull request {pr.index} ({pr.name})",
                  f"overlay {pr.overlay} changes {', '.join(outside)}, which "
                  "its commit does not lay (not a module or test of it or "
                  "of a pull request it is stacked on)")


def _check_overlay_source(path: pathlib.Path, pr: PullRequest,
                          by_name: dict[str, PullRequest]) -> None:
  """`overlay_from` names a pull request whose overlay is written by hand."""
  if pr.overlay_from is None:
    return
  source = by_name.get(pr.overlay_from.pr)
  if source is None or not source.overlay or source.overlay_from:
    raise _fail(path, f"pull request {pr.index} ({pr.name})",
                f"overlay_from: {pr.overlay_from.pr!r} is not a pull request "
                "of the plan whose overlay patch is written by hand")


def upstream_style_tests(root: pathlib.Path) -> list[str]:
  """The names of the upstream-style tests of `tests/upstream/`."""
  tests_dir = root / UPSTREAM_TESTS
  return sorted(p.name for p in tests_dir.glob("*_test.py")
                ) if tests_dir.is_dir() else []


def _load_top(path: pathlib.Path, raw: dict[str, Any]
              ) -> tuple[list[ScrubPattern], tuple[str, ...], int, str]:
  """The plan's scrub patterns and allowed lines, limit and module root."""
  _check_keys(path, "top level", raw,
              {"branch", "bug", "max_added_lines", "module_root", "shaken",
               "scrub", "pr", "stays"}, {"pr"})
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
  return patterns, allow, max_lines, module_root


def overlay_paths(project: Project) -> list[str]:
  """The overlay's files, as paths in upstream's repository (`load`'s
  `overlay_files`)."""
  return [f"jax/{r.as_posix()}" for r in project.overlay_files()]


def load_project(project: Project) -> Plan:
  """The project's plan (`load`), checked against its series and overlay."""
  return load(project.root, patchq.read_series(project.patches),
              overlay_paths(project))


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
  patterns, allow, max_lines, module_root = _load_top(path, raw)
  if not isinstance(raw["pr"], list) or not raw["pr"]:
    raise _fail(path, "pr", "list at least one [[pr]]")
  prs = tuple(_load_pr(root, path, i, r) for i, r in enumerate(raw["pr"], 1))
  stays = _load_stays(path, raw.get("stays"))
  _check_order(path, prs)
  replaced = {r for pr in prs for r in pr.replaces}
  unknown = sorted(replaced - set(series) - set(upstream_style_tests(root)))
  if unknown:
    raise _fail(path, "replaces", "names no patch of patches/series and no "
                f"test of {UPSTREAM_TESTS}: {', '.join(unknown)}")
  _check_patches(path, prs, stays, series, replaced)
  _check_modules_and_tests(root, path, prs, stays, module_root,
                           overlay_files, replaced)
  _check_overlays(root, path, prs, module_root)
  shaken = _strings(path, "shaken", raw.get("shaken", []))
  for s in shaken:
    if not s.endswith(".py") or not any(
        s in entry.modules for entry in (*prs, *stays)):
      raise _fail(path, "shaken", f"{s} is not a module of any pull request "
                  "or [[stays]]")
  return Plan(path=path, branch=raw.get("branch", "call-tf-vmap"),
              bug=raw.get("bug", "https://github.com/jax-ml/jax/issues/11753"),
              max_added_lines=max_lines, module_root=module_root,
              shaken=shaken, scrub_patterns=tuple(patterns),
              scrub_allow=allow, prs=prs, stays=stays)
