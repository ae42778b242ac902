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
"""`stage`: the queue as a series of upstream pull requests.

Fast tests of the parts (overlay variants, shaking, references, messages,
the change log, the fork-word scan, upstream's pre-commit pins, the plan's
checks), then the whole command on a toy fork of a toy upstream
(`stage_fixture`: three pull requests, overlay patches, shaken modules, a
deferred text), `--verify` included, with
light packages; then the real queue and plan onto a repository laid out
like upstream's (the release's sdist, upstream's tests, BUILD files).
With JAX_FORK_STAGE_VERIFY=1, the real series is verified too (a venv with
jaxlib and tensorflow-cpu per commit: slow).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

from forklib.project import Project
from forklib.sources import fetch
from forklib.sources import patchq
from forklib.testing import upstream_tests as upstream_tests_lib
from forklib.upstreaming import jep_numbers
from forklib.upstreaming import stage as stage_lib
from forklib.upstreaming import stage_checks
from forklib.upstreaming import stage_conventions
from forklib.upstreaming import stage_plan
from forklib.upstreaming import stage_precommit
from forklib.upstreaming import stage_source
from forklib.upstreaming import stage_text
from forklib.upstreaming import stage_verify

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import stage_fixture as toy  # noqa: E402  pylint: disable=g-import-not-at-top

pytestmark = pytest.mark.skipif(shutil.which("git") is None,
                                reason="git is not installed")

_GIT = toy.GIT
_AUTHOR = "Jane Doe <jane.doe@jaxdev.org>"


def _git(repo, *args):
  return toy.git(repo, *args)


def _fork(root, *args, env=None):
  return subprocess.run([sys.executable, str(root / "build" / "fork.py"),
                         *args], capture_output=True, text=True,
                        env=None if env is None else dict(os.environ, **env))


# ---------------------------------------------------------------------------
# Overlay variants, and one program in the product's modules.
# ---------------------------------------------------------------------------

def _variant_root(tmp_path):
  (tmp_path / "jax").mkdir()
  (tmp_path / "jax" / "m.py").write_text("import a\nimport b\n\nx = b.x\n")
  return tmp_path


def test_an_overlay_patch_gives_the_variant_of_the_files_it_changes(
    tmp_path):
  root = _variant_root(tmp_path)
  (root / "v.patch").write_text(toy.overlay_patch(
      root, [("jax/m.py", "import b\n", ""), ("jax/m.py", "b.x", "a.x")]))
  assert stage_source.overlay_variant(root, "v.patch") == {
      "jax/m.py": "import a\n\nx = a.x\n"}
  assert (root / "jax" / "m.py").read_text().endswith("b.x\n")  # untouched


def test_an_overlay_patch_that_no_longer_applies_is_named(tmp_path):
  root = _variant_root(tmp_path)
  (root / "v.patch").write_text(toy.overlay_patch(
      root, [("jax/m.py", "b.x", "a.x")]))
  (root / "jax" / "m.py").write_text("import a\nimport b\n\nx = b.y\n")
  with pytest.raises(stage_source.VariantError,
                     match=r"v.patch does not apply.*jax/m.py.*refresh"):
    stage_source.overlay_variant(root, "v.patch")
  (root / "w.patch").write_text("no diff here\n")
  with pytest.raises(stage_source.VariantError, match="changes no file"):
    stage_source.overlay_variant(root, "w.patch")


def _commented_code(text: str) -> list[int]:
  """The lines of `text` that are comments holding Python statements (an
  assignment, a call, a return, an import, a definition): code commented
  out, not prose."""
  found = []
  for n, line in enumerate(text.splitlines(), 1):
    stripped = line.strip()
    if not stripped.startswith("#") or stripped.startswith("#!"):
      continue
    body = stripped.lstrip("#").strip()
    if not re.match(r"(return\b|raise\b|import\b|from \S+ import\b|def "
                    r"\w+\(|class \w+[(:]|[\w.\[\]]+ = |[\w.]+\(.*\)$)",
                    body):
      continue
    try:
      compile("def _():\n  " + body + (" pass" if body.endswith(":")
                                        else ""), "<comment>", "exec")
    except SyntaxError:
      continue
    found.append(n)
  return found


def test_product_modules_hold_one_program(root):
  """No `# stage:` marker and no commented-out code in jax/ and
  tests/upstream/: what a staged pull request holds otherwise is its
  overlay patch of patches/stage/overlay/."""
  markers, commented = [], []
  for folder in ("jax", stage_plan.UPSTREAM_TESTS):
    for path in sorted((root / folder).rglob("*.py")):
      text = path.read_text(encoding="utf-8")
      rel = path.relative_to(root).as_posix()
      markers += [f"{rel}:{n}" for n, line in enumerate(text.splitlines(), 1)
                  if re.search(r"#\s*stage:", line)]
      commented += [f"{rel}:{n}" for n in _commented_code(text)]
  assert not markers, markers
  assert not commented, commented


def test_commented_code_is_told_from_prose():
  assert _commented_code("# return core.typeof(x)\n# x = f(y)\n"
                         "# def f(x):\n") == [1, 2, 3]
  assert _commented_code("# Return the value: see below.\n# x is small.\n"
                         "# (a note)\n# TODO(b/1): later\n") == []


def test_upstreams_pre_commit_pins_are_read(tmp_path):
  (tmp_path / ".pre-commit-config.yaml").write_text("""\
repos:
- repo: https://github.com/pre-commit/pre-commit-hooks
  rev: 3e8a8703264a2f4a69428a0aa4dcb512790b2c8c  # frozen: v6.0.0
  hooks:
  - id: check-ast
- repo: https://github.com/astral-sh/ruff-pre-commit
  rev: 39d9ac5938dadb73df0564a45f163e25ff9fa6e2  # frozen: v0.16.1
  hooks:
  - id: ruff
- repo: https://github.com/facebook/pyrefly-pre-commit
  rev: 14025642291adc2db2f9d9fa398e98699ef3fafc  # frozen: v1.1.1
  hooks:
    - id: pyrefly-check
      pass_filenames: false
      additional_dependencies:
        - absl-py==2.4.0
        - numpy~=2.4.0
        - --pre
        - --extra-index-url
        - https://example.com/simple/
        - jaxlib
- repo: local
  hooks:
  - id: check-copyright
    additional_dependencies: [google-re2]
""")
  hooks = stage_precommit.pinned(tmp_path)
  assert hooks.ruff == "0.16.1" and hooks.pyrefly == "1.1.1"
  assert hooks.pyrefly_deps == ("absl-py==2.4.0", "numpy~=2.4.0")
  assert hooks.left_out and "jaxlib" in hooks.left_out[0]
  assert stage_precommit.pinned(tmp_path / "none") == stage_precommit.Hooks()


def test_pyrefly_errors_are_new_by_file_kind_and_message():
  def e(file, line, code="bad-argument-type", message="m"):
    return {"file": file, "line": line, "code": code, "message": message}
  before = [e("a.py", 3), e("a.py", 9)]
  after = [e("a.py", 5), e("a.py", 12), e("a.py", 14), e("b.py", 1)]
  assert stage_precommit.new_errors(before, after) == [e("a.py", 14),
                                                       e("b.py", 1)]


def test_the_landing_order_names_each_conflict():
  text = stage_text.landing_order(2, ["a", "b", "c"],
                                  {"c": ["x.py", "CHANGELOG.md"]})
  assert text.startswith("Order: pull request 2 of 3, sent one at a time, "
                         "in this order: `a`, **`b`**, `c`.")
  assert ("It conflicts with `c` in `x.py`, `CHANGELOG.md`: `b` lands "
          "first, and `c` is rebased onto `main` after it.") in text
  assert "conflicts with none" in stage_text.landing_order(1, ["a"], {})


# ---------------------------------------------------------------------------
# Shaking and references.
# ---------------------------------------------------------------------------

_ERRORS = '''\
"""Errors."""

from __future__ import annotations

import re
import sys

HINT = "hint"


# ---------------------------------------------------------------------------
# Batching.
# ---------------------------------------------------------------------------

def vmap_error():
  return ValueError(_fmt("vmap") + HINT)


register(vmap_error)


def _fmt(s):
  return re.sub("a", "b", s)


def pfor_error():
  return ValueError("pfor" + sys.platform)


# ---------------------------------------------------------------------------
# Other.
# ---------------------------------------------------------------------------

def unused():
  return 1
'''


def test_shake_keeps_what_is_used_and_what_it_uses():
  text, undefined = stage_source.shake(_ERRORS, "errors.py",
                                       {"vmap_error", "nothing_such"})
  assert undefined == {"nothing_such"}
  assert "def vmap_error" in text and "def _fmt" in text
  assert "HINT = " in text and "import re" in text
  assert "register(vmap_error)" in text
  assert "pfor_error" not in text and "def unused" not in text
  assert "import sys" not in text  # only pfor_error used it
  assert "# Batching." in text and "# Other." not in text
  assert text.startswith('"""Errors."""\n\nfrom __future__ import')
  compile(text, "errors.py", "exec")


def test_shake_keeps_only_the_used_names_of_an_import():
  text, _ = stage_source.shake(
      "from collections.abc import Callable, Sequence\n"
      "import os, sys as system\n\n\n"
      "def f(g: Callable[[], None]) -> str:\n  return system.platform\n",
      "compat.py", {"f"})
  assert "from collections.abc import Callable\n" in text
  assert "import sys as system\n" in text
  assert "Sequence" not in text and "os" not in text.replace("import", "")
  compile(text, "compat.py", "exec")


@pytest.mark.parametrize("quote", ["'", '"'])
def test_verify_sees_the_jaxlib_range_of_a_tree_however_quoted(tmp_path,
                                                               quote):
  # Upstream's main at 0.11.1 writes _minimum_jaxlib_version = '0.11.0' in
  # single quotes: the pinned 0.12.0.1 jaxlib must be named as the problem
  # before pip fails on it.
  (tmp_path / "jax").mkdir()
  (tmp_path / "jax" / "version.py").write_text(
      f'_version = "0.11.1"\n_minimum_jaxlib_version = {quote}0.11.0{quote}\n')
  problem = stage_verify._jaxlib_range_problem(tmp_path, "0.12.0.1")  # pylint: disable=protected-access
  assert "0.11.0 to 0.11.1" in problem and "--jaxlib" in problem
  assert not stage_verify._jaxlib_range_problem(tmp_path, "0.11.0")  # pylint: disable=protected-access


def test_shake_keeps_the_type_checking_imports_its_annotations_use():
  text, _ = stage_source.shake(
      "from __future__ import annotations\n\n"
      "from typing import TYPE_CHECKING, Any\n\n"
      "if TYPE_CHECKING:\n"
      "  from jax._src import core\n"
      "  import tensorflow as tf\n\n\n"
      "def f(x: core.ShapedArray) -> int:\n  return 1\n\n\n"
      "def g(t: tf.Tensor) -> Any:\n  return t\n",
      "errors.py", {"f"})
  assert "from typing import TYPE_CHECKING\n" in text
  assert "if TYPE_CHECKING:\n  from jax._src import core\n" in text
  assert "tensorflow" not in text and "def g" not in text
  compile(text, "errors.py", "exec")
  text, _ = stage_source.shake(text, "errors.py", set())
  assert "TYPE_CHECKING" not in text


def test_references_follow_imports_and_attribute_chains():
  modules = ["pkg.lib", "pkg.lib.errors", "pkg.lib.batching",
             "pkg.lib.batching.rule"]
  text = ("from pkg import lib\nfrom pkg.lib import errors as e\n"
          "lib.batching.rule.batch(e.vmap_error)\n")
  found = {(r.module, r.name)
           for r in stage_source.references(text, "x.py", modules)}
  assert ("pkg.lib.batching.rule", "batch") in found
  assert ("pkg.lib.errors", "vmap_error") in found
  # Syntax newer than the tool's Python: the same, by regex.
  newer = text + "type Alias = int\nclass C[T]: pass\n"
  assert {(r.module, r.name) for r in stage_source.references(
      newer, "x.py", modules)} >= found


# ---------------------------------------------------------------------------
# Words: messages, the change log, fork words.
# ---------------------------------------------------------------------------

def test_commit_message_is_prose_of_the_dep3_headers(root):
  patch = patchq.parse(root / "patches" /
                       "0003-call-tf-vmap-method-and-batching-rule.patch")
  message = stage_text.commit_message("Title line", "A summary.", [patch],
                                      patchq.BUG_URL)
  title, body = message.split("\n\n", 1)
  assert title == "Title line"
  assert body.startswith("A summary.\n\nHook the call_tf batching rule")
  assert body.rstrip().endswith(f"Part of {patchq.BUG_URL}.")
  for field in ("Description:", "Author:", "Forwarded:", "Last-Update:",
                "Bug:"):
    assert field not in message
  assert max(len(line) for line in body.splitlines()) <= 72


def test_changelog_entries_go_under_unreleased():
  text = ("# Change log\n\n## Unreleased\n\n* Bug fixes\n  * A fix.\n\n"
          "## JAX 1.0\n\n* New features\n  * Old.\n")
  out = stage_text.changelog_with(text, [("Bug fixes", "Another fix."),
                                         ("New features", "A feature.")])
  unreleased = out.split("## JAX 1.0")[0]
  assert "  * A fix.\n  * Another fix.\n" in unreleased
  assert "* New features\n  * A feature." in unreleased
  assert out.endswith("* New features\n  * Old.\n")
  fresh = stage_text.changelog_with("# Change log\n\n## JAX 1.0\n",
                                    [("Changes", "x " * 60)])
  assert fresh.index("## Unreleased") < fresh.index("## JAX 1.0")
  assert max(len(line) for line in fresh.splitlines()) <= 80


@pytest.mark.parametrize("line", [
    "the fork's behaviour before", "jax 0.12.0.1+calltf.4",
    "see patch 0010", "0003-call-tf-vmap-method-and-batching-rule.patch",
    "# stage-with: x", "x = 1  # stage: drop", "see docs/stablehlo.md",
    "pip install jax[tensorflow]", "jaxlib before 0.10 returns text",
    "from jax 0.7, register_cache", "see tests/upstream/x_test.py",
    "upstream's call_tf_test", "as upstream does",
])
def test_fork_words_are_found(line):
  scrubber = stage_checks.Scrubber([], [], ["docs/stablehlo.md"], "0.12.0.1")
  assert scrubber.scan(line, "f.py:1"), line


@pytest.mark.parametrize("line", [
    "os.fork() copies the process", "jax 0.12 and later",
    "CallTfVectorizationError", "TensorFlow 2.16 or newer",
    "upstream_known_failures.toml",
])
def test_upstream_words_are_not_findings(line):
  scrubber = stage_checks.Scrubber([], [], ["docs/stablehlo.md"], "0.12.0.1")
  assert not scrubber.scan(line, "f.py:1"), line


def test_plan_patterns_and_allow_lines():
  scrubber = stage_checks.Scrubber([("internal-thing", "ours")],
                                   [r"fork of the process"], [], "1.0")
  assert scrubber.scan("an internal-thing", "x")[0].why == "ours"
  assert not scrubber.scan("a fork of the process", "x")


@pytest.mark.parametrize("line,word", [
    ("*Author: TODO(sender): your name*", "TODO("),
    ("# JEP NNNNN: a proposal", "NNNNN"),
    ("| mlp, `vmap` | 1.2 | TBD |", "TBD"),
    ("re-run with the script /tmp/bench_loop.py", "/tmp"),
    ("<!-- tpu-results -->", "<!--"),
    ("to be re-run before this JEP is sent", "before this JEP is sent"),
    ("measure it again before sending", "before sending"),
    ("the implementation keeps Part 2 in its own distribution",
     "distribution"),
])
def test_prose_leaks_are_found_in_prose_only(line, word):
  """What a reviewer found by hand in the proposal and the descriptions:
  placeholders, notes to the sender, /tmp, markers, "distribution"."""
  scrubber = stage_checks.Scrubber([], [], [], "0.12.0.1")
  assert [f.text for f in scrubber.scan(line, "x.md:1", prose=True)] == [
      word]
  assert not scrubber.scan(line, "x.py:1")  # code: TODO(name) is JAX's own


def test_this_repositorys_paths_are_found():
  scrubber = stage_checks.Scrubber(
      [], [], [], "0.12.0.1",
      ["benchmarks/", "tests/stablehlo", "tests/export", "tools/extra.py"])
  for line, path in [
      ("`benchmarks/accelerator.py`, N = 100", "benchmarks/accelerator.py"),
      ("(`tests/stablehlo/test_backcompat.py`)",
       "tests/stablehlo/test_backcompat.py"),
      ("its tests (tests/export), run", "tests/export"),
      ("see tools/extra.py, then", "tools/extra.py")]:
    assert [f.text for f in scrubber.scan(line, "x.md:1")] == [path], line
  for line in ["tests/export_test.py has them", "the benchmarks measured",
               "jax/_src/export/stablehlo_to_jax/_rules.py",
               "src/enzyme_ad/jax/primitives.py of Enzyme-JAX"]:
    assert not scrubber.scan(line, "x.md:1"), line


def test_the_paths_of_this_repository_that_upstream_lacks(tmp_path):
  upstream = toy.make_upstream(tmp_path / "up")
  base = _git(upstream, "rev-parse", "HEAD").strip()
  project = tmp_path / "fork"
  toy.write(project, {"benchmarks/run.py": "", "benchmarks/results/a.md": "",
                      "docs/notes.md": "", "docs/jep/toy.md": "",
                      "tests/version_test.py": "", "tests/tool/t.py": "",
                      "jax/experimental/jax2tf/call_tf_lib/x.py": "",
                      "NOTICE": ""})
  paths = stage_lib._fork_paths(Project(project), upstream, base,
                                {"docs/jep/toy.md"})
  assert paths == ["benchmarks/", "docs/notes.md", "tests/tool"]


def test_the_jep_index_is_in_numeric_order():
  index = ("  263: JAX PRNG Design <263-prng>\n"
           "  4410: Omnistaging <4410-omnistaging>\n"
           "  28845: Stateful Randomness in JAX <28845-stateful-rng>\n")
  assert stage_checks.jep_index_order(index) == []
  added = stage_text.jep_index_with(index, 39000, "A proposal", "a")
  assert added.endswith("  39000: A proposal <39000-a>\n")
  assert stage_checks.jep_index_order(added) == []
  middle = stage_text.jep_index_with(index, 9000, "A proposal", "a")
  assert middle.split("\n")[2] == "  9000: A proposal <9000-a>"
  misordered = index.replace("  4410: Omnistaging <4410-omnistaging>\n", "")
  misordered = ("  NNNNN: A proposal <NNNNN-a>\n" + misordered
                + "  4410: Omnistaging <4410-omnistaging>\n")
  problems = stage_checks.jep_index_order(misordered)
  assert "'NNNNN' is not the number of a JEP's issue" in problems[0]
  assert "JEP 4410 comes after JEP 28845" in problems[1]


def test_a_jep_is_titled_by_its_issue_with_its_author():
  text = "(x-jep)=\n# A proposal\n\n*December 2026*\n\nBody.\n"
  assert stage_text.jep_title(text) == "A proposal"
  assert stage_text.jep_document(text, 39000, "Jane Doe") == (
      "(x-jep)=\n# JEP 39000: A proposal\n\n*Jane Doe*\n\n"
      "*December 2026*\n\nBody.\n")
  assert stage_text.jep_document(text, 0, "Jane Doe").startswith(
      "(x-jep)=\n# A proposal\n\n*Jane Doe*\n")


def test_a_patch_header_names_its_author_or_none():
  assert stage_checks.patch_author(
      "From 0 Mon Sep 17 00:00:00 2001\nFrom: Test Person "
      "<test@example.com>\nSubject: x\n\nbody\nFrom: Not <a@header>\n"
      ) == ("Test Person", "test@example.com")
  assert stage_checks.patch_author(
      "From 0 Mon Sep 17 00:00:00 2001\nSubject: x\n\nbody\n") is None


# ---------------------------------------------------------------------------
# What a reviewer checks (stage_conventions).
# ---------------------------------------------------------------------------

def test_a_message_needs_a_body_and_no_paragraph_twice():
  assert stage_conventions.message_problems(
      "Title\n\nWhat changes, and why it must.\n") == []
  assert "has no body" in stage_conventions.message_problems("Title\n")[0]
  repeated = "A paragraph long enough to count as one, said twice here."
  assert "repeats the paragraph" in stage_conventions.message_problems(
      f"Title\n\n{repeated}\n\n{repeated}\n")[0]


@pytest.mark.parametrize("name,email,why", [
    ("JAX call_tf fork maintainers", "calltf-fork@users.noreply.github.com",
     "not a person"),
    ("Jane Doe", "calltf-fork@users.noreply.github.com", "reaches no one"),
    ("Jane Doe", "you@example.com", "reaches no one"),
    ("Release bot", "bot@jaxdev.org", "names a bot"),
])
def test_the_author_must_be_a_person(name, email, why):
  assert any(why in p for p in stage_conventions.identity_problems(
      name, email))


def test_a_person_is_an_author():
  assert stage_conventions.identity_problems(
      "Jane Doe", "12345+janedoe@users.noreply.github.com") == []
  assert stage_conventions.identity_problems("Jane Doe", "jane@jaxdev.org") == []


_DOCSTRINGS = '''\
"""A module; see :func:`jax.lax.scan` and ``helper``."""
from jax import lax
import tensorflow as tf


def helper(x, vmap_method=None):
  """Calls ``check()``, then :func:`lax.no_such_thing`; ``tf.function``
  and ``vmap_method`` are fine, as are ``None``, ``V2`` and ``jax.lax``."""
  # As register_cache() did before (a removed fallback).
  return x
'''


def test_docstrings_name_only_what_the_tree_defines(tmp_path):
  repo = tmp_path / "repo"
  repo.mkdir()
  _git(repo, "init", "-q")
  (repo / "jax" / "lax").mkdir(parents=True)
  (repo / "jax" / "lax" / "loops.py").write_text("def scan(f):\n  pass\n")
  (repo / "jax" / "mod.py").write_text(_DOCSTRINGS)
  _git(repo, "add", "-A")
  _git(repo, "commit", "-qm", "x")
  added = [("jax/mod.py", n, line)
           for n, line in enumerate(_DOCSTRINGS.splitlines(), 1)]
  tree = stage_conventions.tree_definitions(repo, "HEAD")
  assert {"scan", "helper", "loops", "mod"} <= tree
  found = stage_conventions.docstring_references(repo, "HEAD", added, tree)
  assert sorted((f.where, f.text) for f in found) == [
      ("jax/mod.py:7", "check"), ("jax/mod.py:7", "lax.no_such_thing"),
      ("jax/mod.py:9", "register_cache")]


def test_compatibility_branches_are_found():
  added = [("jax/a.py", 1, "  if hasattr(jtu, 'thread_unsafe_test_class'):"),
           ("jax/a.py", 2, "  # older jaxlibs return the module's text"),
           ("jax/a.py", 3, "if jax.__version_info__ < (0, 5):"),
           ("jax/a.py", 4, "  if hasattr(tf_stablehlo, 'get_version'):"),
           ("docs/a.md", 5, "on older jax releases")]
  found = stage_conventions.compat_branches(added)
  assert [f.where for f in found] == ["jax/a.py:1", "jax/a.py:2",
                                      "jax/a.py:3"]


def test_dataclasses_take_slots():
  added = [("jax/a.py", 1, "@dataclasses.dataclass(frozen=True)"),
           ("jax/a.py", 2, "@dataclasses.dataclass(frozen=True, slots=True)"),
           ("jax/a.py", 3, "@dataclass"),
           ("jax/tests/a_test.py", 4, "@dataclasses.dataclass")]
  assert [f.where for f in stage_conventions.dataclass_slots(added)] == [
      "jax/a.py:1", "jax/a.py:3"]


def test_tests_go_in_the_file_of_their_subject():
  existing = ["jax/experimental/jax2tf/tests/call_tf_test.py",
              "tests/version_test.py"]
  found = stage_conventions.test_placement(
      ["jax/experimental/jax2tf/tests/call_tf_vmap_test.py",
       "tests/version_local_label_test.py", "tests/export_call_test.py",
       "jax/experimental/jax2tf/call_tf.py"], existing)
  assert [(f.where, f.why.rsplit(" ", 1)[-1]) for f in found] == [
      ("jax/experimental/jax2tf/tests/call_tf_vmap_test.py",
       "jax/experimental/jax2tf/tests/call_tf_test.py"),
      ("tests/version_local_label_test.py", "tests/version_test.py")]


def test_an_option_in_the_jit_key_is_justified():
  added = [("jax/_src/config.py", 9, "    include_in_jit_key=True,")]
  assert stage_conventions.option_keys(added, "Title\n\nAn option.")
  assert not stage_conventions.option_keys(
      added, "Title\n\nIt is in the jit key because traces differ.")


# ---------------------------------------------------------------------------
# The plan.
# ---------------------------------------------------------------------------

def _real_plan(root):
  return stage_plan.load_project(Project(root))


def test_the_real_plan_accounts_for_every_patch_module_and_test(root):
  plan = _real_plan(root)
  series = patchq.read_series(Project(root).patches)
  staged = {p for pr in plan.prs for p in pr.patches}
  staying = {p for s in plan.stays for p in s.patches}
  replaced = {r for pr in plan.prs for r in pr.replaces} & set(series)
  assert staged | staying | replaced == set(series)
  assert not staged & staying
  # PR 1: the batching rule written for upstream's call_tf.py alone.
  first = plan.prs[0]
  assert first.source and not first.after and not first.held
  assert plan.limit(first) <= 400
  assert set(first.touches) == {
      "jax/experimental/jax2tf/call_tf.py",
      "jax/experimental/jax2tf/tests/call_tf_test.py", "CHANGELOG.md",
      "jax/experimental/jax2tf/README.md"}
  # The fixes: each on the base alone, none citing #11753.
  fixes = [pr for pr in plan.prs[1:] if pr.source]
  assert len(fixes) >= 5 and all(not pr.after for pr in fixes)
  for pr in fixes:
    text = (root / pr.source).read_text()
    assert "11753" not in text.split("\n---\n")[0], pr.name
  breaking = [pr for pr in plan.prs if pr.breaking]
  assert [pr.name for pr in breaking] == ["call-tf-vjp-complex-convention"]
  # The proposal, a JEP held until its issue is opened, then only held pull
  # requests.
  names = [pr.name for pr in plan.prs]
  proposal = names.index("proposal")
  assert plan.prs[proposal].jep is not None
  assert plan.prs[proposal].jep.numbers
  assert plan.prs[proposal].held == (
      "" if plan.prs[proposal].jep.issue else stage_plan.JEP_HELD)
  assert all(pr.held for pr in plan.prs[proposal + 1:])
  assert not any(pr.held for pr in plan.prs[:proposal])
  assert {s.name for s in plan.stays} >= {
      "tf1-graph-mode", "embedded-savedmodels", "pfor-converters",
      "tf-internals"}
  assert all(len(s.why) > 80 for s in plan.stays)


@pytest.mark.parametrize("edit,message", [
    (lambda p: p.replace('"0001-version-info.patch"', ""),
     "0001-version-info.patch"),
    (lambda p: p.replace('"call_tf_lib/batching/pfor.py"', ""),
     "call_tf_lib/batching/pfor.py"),
    (lambda p: p.replace('patches = ["0003-call-tf-options.patch"]',
                         'patches = ["0003-call-tf-options.patch"]\n'
                         'modules_x = []'), "unknown key"),
    (lambda p: p.replace('file = "call_tf_batch_test.py"',
                         'file = "version_info_test.py"'),
     "version_info_test.py (version, vmap)"),
    (lambda p: p.replace('patches = ["0001-version-info.patch"]',
                         'patches = ["0002-call-tf-vmap.patch"]').replace(
                             'patches = ["0002-call-tf-vmap.patch"]\n'
                             'overlay', 'patches = ["0001-version-info.'
                             'patch"]\noverlay'), "out of the series"),
    (lambda p: p.replace('after = "vmap"', 'after = "nothing"'),
     "after = 'nothing' names no earlier pull request"),
    (lambda p: p.replace('after = "version"', 'after = "version"\n'
                         'held = "later"'),
     "is stacked on vmap, which is held"),
    (lambda p: p.replace('source = "patches/stage/twice.patch"',
                         'source = "patches/stage/twice.patch"\n'
                         'breaking = true'),
     "a breaking change needs its CHANGELOG entry"),
    (lambda p: p.replace('source = "patches/stage/twice.patch"',
                         'source = "patches/stage/twice.patch"\n'
                         'title = "A title"'),
     "carries its own code, tests and message: drop title"),
    (lambda p: p.replace('patches/stage/twice.patch', 'patches/stage/x.patch'),
     "source patches/stage/x.patch does not exist"),
    (lambda p: p.replace('modules = ["call_tf_lib/internal.py"]', ''),
     "call_tf_lib/internal.py"),
    (lambda p: p.replace('why = "only the distribution needs it"',
                         'why = " "'), "say why it stays"),
    (lambda p: p.replace('overlay = "patches/stage/overlay/pfor.patch"',
                         'overlay = "patches/stage/overlay/none.patch"'),
     "overlay patches/stage/overlay/none.patch does not exist"),
    (lambda p: p.replace('name = "version"\n',
                         'name = "version"\noverlay = '
                         '"patches/stage/overlay/pfor.patch"\n'),
     "changes jax/experimental/jax2tf/call_tf_lib/compat.py, which its "
     "commit does not lay"),
    (lambda p: p.replace('overlay = "patches/stage/overlay/pfor.patch"',
                         'overlay = "patches/stage/overlay/pfor.patch"\n'
                         'overlay_from = { pr = "nope" }'),
     "overlay_from: 'nope' is not a pull request of the plan whose overlay "
     "patch is written by hand"),
    (lambda p: p.replace('name = "version"\n',
                         'name = "version"\noverlay_from = { pr = "pfor" }\n'),
     "overlay_from needs overlay"),
])
def test_a_plan_that_leaves_out_doubles_or_misorders_is_refused(
    root, tmp_path, edit, message):
  upstream = toy.make_upstream(tmp_path / "up")
  project = toy.make_project(tmp_path / "fork", root, upstream)
  plan = project / "patches" / "stage.toml"
  plan.write_text(edit(plan.read_text()))
  proc = _fork(root, "--root", str(project), "stage", "0.12.0.1", "--out",
               str(tmp_path / "out"), "--onto", str(upstream), "--author",
               _AUTHOR)
  assert proc.returncode == 2, proc.stderr
  assert message in proc.stderr and "stage.toml" in proc.stderr
  assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------
# The proposal's numbers (jep_numbers).
# ---------------------------------------------------------------------------

def test_code_lines_leave_out_prose():
  text = ('"""Module doc."""\n\nimport os  # why\n\n\ndef f(x):\n'
          '  """Doc,\n  two lines."""\n  # a comment\n  return x\n')
  assert jep_numbers.code_lines(text) == 3


def test_the_proposals_tables_are_this_trees_numbers(root, tmp_path):
  plan = _real_plan(root)
  tables = jep_numbers.render(root, plan)
  assert set(tables) == {"cost", "tests", "speed-cpu", "speed-tpu",
                         "derivatives", "coverage"}
  headers = "\n\n".join(t.split("\n", 1)[0] + "\n|---|\n| old | 1 |"
                        for t in tables.values())
  jep = tmp_path / "jep.md"
  jep.write_text(f"# A proposal\n\n{headers}\n\nThe end.\n")
  problems = jep_numbers.check(root, plan, jep.read_text())
  assert sum("table is not what this tree gives" in p
             for p in problems) == 6
  assert jep_numbers.write(root, plan, jep) == []
  text = jep.read_text()
  assert text.endswith("\n\nThe end.\n") and "| old |" not in text
  assert not any("table" in p for p in jep_numbers.check(root, plan, text))
  interpreter = jep_numbers.cost_row(root, plan, jep_numbers.PARTS[1])
  assert f"| Part 1: the interpreter | {interpreter['modules']} | " \
         f"{interpreter['lines']:,} |" in text
  edited = text.replace(f"{interpreter['lines']:,}",
                        f"{interpreter['lines'] - 80:,}")
  assert any("its cost table is not what this tree gives" in p
             for p in jep_numbers.check(root, plan, edited))
  missing = text.replace(jep_numbers.COST_HEADER, "| part | lines |")
  assert any(p.startswith("has no cost table")
             for p in jep_numbers.check(root, plan, missing))


def test_measurements_missing_or_wrong_are_problems(tmp_path):
  problems = jep_numbers._measurement_problems(tmp_path)
  assert any("no CPU measurement of Exported.call" in p for p in problems)
  assert any("no TPU measurement of Exported.call" in p for p in problems)
  assert any("no run time of the tests of Part 1: the interpreter" in p
             for p in problems)
  speed = tmp_path / jep_numbers.SPEED
  speed.mkdir(parents=True)
  row = {"workload": "mlp", "transform": "vmap", "n": 10,
         "interpreter_rel_err": 0., "loop_rel_err": 0.3}
  (speed / "tpu.json").write_text(json.dumps({"rows": [row]}))
  assert any("tpu.json: results differ from native JAX's by more than "
             "0.0001: mlp vmap N=10" in p
             for p in jep_numbers._measurement_problems(tmp_path))
  # A measurement not made renders as a placeholder, which stage refuses.
  assert "TBD" in jep_numbers.render_speed(tmp_path, "cpu")
  times = tmp_path / jep_numbers.TEST_TIMES
  times.parent.mkdir(parents=True)
  times.write_text(json.dumps({"date": "d", "machine": "m", "parts": {
      jep_numbers.PARTS[1].label: {
          "seconds": 60, "passed": 3, "failed": 1, "skipped": 0, "exit": 1,
          "summary": "1 failed", "failed_tests": ["t.py::test_x"]}}}))
  assert any("tests failed when timed: Part 1: the interpreter: "
             "t.py::test_x" in p
             for p in jep_numbers._measurement_problems(tmp_path))


# ---------------------------------------------------------------------------
# The toy fork, staged.
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def toy_upstream(tmp_path_factory):
  return toy.make_upstream(tmp_path_factory.mktemp("toy") / "upstream")


@pytest.fixture(scope="module")
def toy_project(root, toy_upstream, tmp_path_factory):
  return toy.make_project(tmp_path_factory.mktemp("toy") / "fork", root,
                          toy_upstream)


@pytest.fixture(scope="module")
def toy_staged(root, toy_project, toy_upstream, tmp_path_factory):
  out = tmp_path_factory.mktemp("toy-stage") / "out"
  proc = _fork(root, "-q", "--root", str(toy_project), "stage", "0.12.0.1",
               "--out", str(out), "--onto", str(toy_upstream), "--author",
               _AUTHOR)
  assert proc.returncode == 0, proc.stderr
  return out


def _show(repo, rev, path):
  return _git(repo, "show", f"{rev}:{path}")


def test_one_commit_per_pull_request_by_the_maintainer(toy_staged):
  repo = toy_staged / "repo"
  log = _git(repo, "log", "--reverse", "--format=%s|%an <%ae>|%cn <%ce>",
             "jax-v0.12.0.1..call-tf-vmap-03-pfor").splitlines()
  assert log == [f"{t}|{_AUTHOR}|{_AUTHOR}" for t in (
      "Make jax.__version_info__ numeric",
      "[jax2tf] call_tf: support jax.vmap",
      "[jax2tf] call_tf: vectorize with pfor")]
  branches = _git(repo, "branch", "--format=%(refname:short)").split()
  assert {"call-tf-vmap-01-version", "call-tf-vmap-02-vmap",
          "call-tf-vmap-03-pfor", "call-tf-vmap-04-twice"} <= set(branches)
  assert not any("later" in b for b in branches)  # held: no commit
  message = _git(repo, "log", "-1", "--format=%B", "call-tf-vmap-02-vmap")
  assert message == ("[jax2tf] call_tf: support jax.vmap\n\nThe summary "
                     "paragraph.\n\nBatch call_tf. jax.vmap of call_tf "
                     "failed.\n\nNow it batches.\n\nPart of "
                     "https://github.com/jax-ml/jax/issues/11753.\n\n")
  assert (toy_staged / "pull-requests" / "02-vmap.md").read_text(
      ).startswith("# [jax2tf] call_tf: support jax.vmap\n\nStacked on the "
                   "pull request `version`: review that one first.\n\nThe "
                   "summary")


def test_overlay_patches_give_each_commit_its_own_code(toy_staged):
  repo = toy_staged / "repo"
  rule = "jax/experimental/jax2tf/call_tf_lib/batching/rule.py"
  at_vmap = _show(repo, "call-tf-vmap-02-vmap", rule)
  assert "raise errors.vmap_error()" in at_vmap
  assert "pfor" not in at_vmap and "stage:" not in at_vmap
  at_pfor = _show(repo, "call-tf-vmap-03-pfor", rule)
  assert "return pfor.vectorize(xs)" in at_pfor
  assert "from jax.experimental.jax2tf.call_tf_lib.batching import pfor\n" in (
      at_pfor)
  assert "vmap_error" not in at_pfor
  compat = _show(repo, "call-tf-vmap-03-pfor",
                 "jax/experimental/jax2tf/call_tf_lib/compat.py")
  assert "return [x for x in xs]" in compat
  assert "sys" not in compat and "def check" not in compat
  test = "jax/experimental/jax2tf/tests/batching_test.py"
  assert "def test_not_vectorized_yet" in _show(repo, "call-tf-vmap-02-vmap",
                                                test)
  at_end = _show(repo, "call-tf-vmap-03-pfor", test)
  assert "def test_vectorized" in at_end
  assert "not_vectorized" not in at_end


def test_shaken_modules_grow_with_their_users(toy_staged):
  repo = toy_staged / "repo"
  errors = "jax/experimental/jax2tf/call_tf_lib/errors.py"
  at_vmap = _show(repo, "call-tf-vmap-02-vmap", errors)
  assert "def empty_error" in at_vmap and "def vmap_error" in at_vmap
  assert "pfor_error" not in at_vmap
  at_pfor = _show(repo, "call-tf-vmap-03-pfor", errors)
  assert "def pfor_error" in at_pfor and "unused_error" not in at_pfor


def test_tests_build_rules_changelog_readme_and_deferred_text(toy_staged):
  repo = toy_staged / "repo"
  files = _git(repo, "show", "--name-only", "--format=",
               "call-tf-vmap-01-version").split()
  assert files == ["jax/version.py", "tests/BUILD",
                   "tests/local_label_test.py"]
  build = _show(repo, "call-tf-vmap-01-version", "tests/BUILD")
  assert ('jax_py_test(\n    name = "local_label_test",\n    srcs = '
          '["local_label_test.py"],\n    deps = ["//jax"],\n)') in build
  tests_build = _show(repo, "call-tf-vmap-02-vmap",
                      "jax/experimental/jax2tf/tests/BUILD")
  assert 'name = "batching_test"' in tests_build
  assert tests_build.count('deps = [":tf_test_util"]') == 2
  library = _show(repo, "call-tf-vmap-03-pfor",
                  "jax/experimental/jax2tf/BUILD")
  srcs = re.findall(r'"([^"]+\.py)"', library)
  assert srcs == sorted(srcs) and "call_tf_lib/batching/pfor.py" in srcs
  assert "call_tf_lib/batching/pfor.py" not in _show(
      repo, "call-tf-vmap-02-vmap", "jax/experimental/jax2tf/BUILD")
  changelog = _show(repo, "call-tf-vmap-02-vmap", "CHANGELOG.md")
  assert "  * Something upstream added.\n  * `call_tf` supports `jax.vmap`." in (
      changelog)
  assert "vectorizes" not in changelog
  assert "* Changes\n  * `call_tf` vectorizes." in _show(
      repo, "call-tf-vmap-03-pfor", "CHANGELOG.md").split("## JAX")[0]
  readme = "jax/experimental/jax2tf/README.md"
  assert "nor ``vmap``" in _show(repo, "call-tf-vmap-01-version", readme)
  assert "(no forward-mode autodiff)." in _show(repo, "call-tf-vmap-02-vmap",
                                                readme)
  config = _show(repo, "call-tf-vmap-03-pfor", "jax/_src/config.py")
  assert 'OPTIONS["call_tf_vectorizer"]' in config
  # Patch 0003 adds both options; the plan shows the second from pfor on:
  # in the series, pfor's commit adds both.
  assert _git(repo, "diff", "call-tf-vmap-02-vmap", "call-tf-vmap-03-pfor",
              "--", "jax/_src/config.py").count("\n+OPTIONS") == 2


def test_report_json_says_it_per_commit(toy_staged):
  report = json.loads((toy_staged / "report.json").read_text())
  assert report["ok"] is True and report["problems"] == []
  assert report["ruff_config"] == "pyproject.toml"
  assert [c["slug"] for c in report["commits"]] == [
      "01-version", "02-vmap", "03-pfor", "04-twice"]
  assert [c["onto"] for c in report["commits"]] == [
      "base", "version", "vmap", "base"]
  assert [c["kind"] for c in report["commits"]] == [
      "series", "series", "series", "source"]
  for c in report["commits"]:
    assert c["applies"] and c["author"] == _AUTHOR
    assert c["within_size_limit"] and c["fork_words"] == [] and not c["ruff"]
    assert c["conventions"] == [] and c["pyrefly"] is None
    assert set(c["added_lines"]) == {"code", "build", "tests", "docs",
                                     "non_test"}
    assert c["tests_run"] is None
  vmap = report["commits"][1]
  assert vmap["added_lines"]["tests"] == 15
  assert vmap["tests"] == [
      "jax/experimental/jax2tf/tests/batching_test.py"]
  assert report["held"] == [
      {"index": 5, "name": "later", "title": (
          "[jax2tf] call_tf: what comes after the proposal"), "why": (
              "until the proposal is accepted"), "after": "pfor",
       "overlay": "", "overlay_problem": ""},
      {"index": 6, "name": "proposal", "title": "[JEP] A toy proposal",
       "why": stage_plan.JEP_HELD, "after": "", "overlay": "",
       "overlay_problem": ""}]
  assert report["pre_commit"]["pyrefly"] is None  # the toy pins none
  twice = report["commits"][3]
  assert twice["modules"] == ["jax/experimental/jax2tf/call_tf.py"]
  assert twice["tests"] == ["jax/experimental/jax2tf/tests/call_tf_test.py"]
  call_tf = "jax/experimental/jax2tf/call_tf.py"
  assert call_tf in twice["conflicts"]["vmap"]
  assert call_tf in report["commits"][1]["conflicts"]["twice"]
  assert "version" not in report["commits"][1]["conflicts"]  # stacked
  text = (toy_staged / "pull-requests" / "04-twice.md").read_text()
  assert ("Order: pull request 4 of 4, sent one at a time, in this order: "
          "`version`, `vmap`, `pfor`, **`twice`**.") in text
  assert (f"It conflicts with `vmap` in `{call_tf}`: `vmap` lands first, "
          "and `twice` is rebased onto `main` after it.") in text
  assert [s["name"] for s in report["stays"]] == ["internal"]
  md = (toy_staged / "report.md").read_text()
  assert "Every check passed" in md and "## Held" in md
  assert "- **internal** (call_tf_lib/internal.py): only the distribution" in (
      md)


def test_a_source_pull_request_goes_on_the_base_with_its_message(
    toy_staged):
  repo = toy_staged / "repo"
  base = _git(repo, "rev-parse", "jax-v0.12.0.1").strip()
  assert _git(repo, "rev-parse", "call-tf-vmap-04-twice~1").strip() == base
  message = _git(repo, "log", "-1", "--format=%B|%an <%ae>|%cn <%ce>",
                 "call-tf-vmap-04-twice")
  assert message.startswith("[jax2tf] call_tf: call_tf_twice\n\nCalling a "
                            "function twice")
  assert message.rstrip().endswith(f"|{_AUTHOR}|{_AUTHOR}")
  files = _git(repo, "show", "--name-only", "--format=",
               "call-tf-vmap-04-twice").split()
  assert files == ["CHANGELOG.md", "jax/experimental/jax2tf/call_tf.py",
                   "jax/experimental/jax2tf/tests/call_tf_test.py"]
  changelog = _show(repo, "call-tf-vmap-04-twice", "CHANGELOG.md")
  assert "  * `call_tf_twice`." in changelog
  assert "vmap" not in changelog  # the stacked series' entries are not here
  text = (toy_staged / "pull-requests" / "04-twice.md").read_text()
  assert text.startswith("# [jax2tf] call_tf: call_tf_twice\n\nCalling")
  assert "Stacked on the pull request `vmap`" in (
      toy_staged / "pull-requests" / "03-pfor.md").read_text()
  assert not (toy_staged / "pull-requests" / "05-later.md").exists()


def test_the_author_is_required_and_must_be_a_person(root, toy_project,
                                                     toy_upstream, tmp_path):
  config = tmp_path / "gitconfig"
  config.write_text("[user]\n\tname = Config Person\n"
                    "\temail = config@jaxdev.org\n")
  env = {"GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1"}
  proc = _fork(root, "--root", str(toy_project), "stage", "0.12.0.1",
               "--out", str(tmp_path / "a"), "--onto", str(toy_upstream),
               env=env)
  assert proc.returncode == 2 and "stage needs --author" in proc.stderr
  assert "never used" in proc.stderr and not (tmp_path / "a").exists()
  proc = _fork(root, "--root", str(toy_project), "stage", "0.12.0.1",
               "--out", str(tmp_path / "c"), "--onto", str(toy_upstream),
               "--author", "nobody")
  assert proc.returncode == 2 and "Name <email>" in proc.stderr
  proc = _fork(root, "-q", "--root", str(toy_project), "stage", "0.12.0.1",
               "--out", str(tmp_path / "d"), "--onto", str(toy_upstream),
               "--author", "JAX call_tf team <calltf@users.noreply.github.com>")
  assert proc.returncode == 1
  assert "error: --author: the author 'JAX call_tf team' names a team" in (
      proc.stderr)
  assert "reaches no one" in proc.stderr


def test_ref_takes_any_branch_tag_or_commit(root, toy_project,
                                            toy_upstream, tmp_path):
  checkout = tmp_path / "checkout"
  _git(tmp_path, "clone", "-q", str(toy_upstream), str(checkout))
  _git(checkout, "checkout", "-q", "-b", "feature")
  (checkout / "NOTES").write_text("x\n")
  _git(checkout, "add", "NOTES")
  _git(checkout, "commit", "-qm", "notes")
  feature = _git(checkout, "rev-parse", "HEAD").strip()
  _git(checkout, "checkout", "-q", "main")
  _git(checkout, "branch", "-q", "-D", "feature")  # only origin/feature now?
  _git(checkout, "update-ref", "refs/remotes/origin/feature", feature)
  _git(checkout, "branch", "-q", "other", "jax-v0.12.0.1")
  for ref, base in (("other", None), ("jax-v0.12.0.1", None),
                    ("feature", feature), (feature[:12], feature),
                    ("origin/feature", feature)):
    out = tmp_path / f"out-{ref.replace('/', '-')}"
    proc = _fork(root, "-q", "--root", str(toy_project), "stage",
                 "0.12.0.1", "--out", str(out), "--onto", str(checkout),
                 "--ref", ref, "--author", _AUTHOR)
    assert proc.returncode == 0, (ref, proc.stderr)
    first = _git(out / "repo", "rev-list", "--max-parents=0", "--reverse",
                 "call-tf-vmap-03-pfor").split()
    parent = _git(out / "repo", "rev-parse", "call-tf-vmap-03-pfor~3").strip()
    if base:
      assert parent == base, ref
    else:
      assert parent == _git(toy_upstream, "rev-parse", "main").strip()
    assert first
  proc = _fork(root, "--root", str(toy_project), "stage", "0.12.0.1",
               "--out", str(tmp_path / "none"), "--onto", str(checkout),
               "--ref", "no-such-branch", "--author", _AUTHOR)
  assert proc.returncode == 2
  assert "no branch, tag or commit 'no-such-branch'" in proc.stderr
  assert "jax-v0.12.0.1" in proc.stderr


def _stage_broken(root, toy_project, toy_upstream, tmp_path, module, text):
  """Stages the toy fork with one overlay module replaced by `text`."""
  project = tmp_path / "fork"
  shutil.copytree(toy_project, project)
  (project / "jax/experimental/jax2tf" / module).write_text(text)
  return _fork(root, "--root", str(project), "stage", "0.12.0.1", "--out",
               str(tmp_path / "out"), "--onto", str(toy_upstream),
               "--author", _AUTHOR)


def test_fork_words_fail_loudly_naming_each(root, toy_project, toy_upstream,
                                            tmp_path):
  pfor = toy.OVERLAY["call_tf_lib/batching/pfor.py"]
  text = toy.textwrap.dedent(pfor).lstrip().replace(
      '"""Vectorizes."""',
      '"""Vectorizes, as the fork did (patch 0003, docs/design-notes.md)."""')
  proc = _stage_broken(root, toy_project, toy_upstream, tmp_path,
                       "call_tf_lib/batching/pfor.py", text)
  assert proc.returncode == 1
  errors = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
  where = "call_tf_lib/batching/pfor.py:7"
  for word in ("'fork'", "'patch 0003'", "'docs/design-notes.md'"):
    assert any("03-pfor" in e and where in e and word in e
               for e in errors), (word, errors)
  report = json.loads((tmp_path / "out" / "report.json").read_text())
  assert report["ok"] is False
  assert len(report["commits"][2]["fork_words"]) == 3
  assert (tmp_path / "out" / "repo").is_dir()  # to read, not to send


def test_ruff_with_upstreams_config_and_the_size_limit(root, toy_project,
                                                       toy_upstream, tmp_path):
  pfor = toy.textwrap.dedent(toy.OVERLAY["call_tf_lib/batching/pfor.py"]
                             ).lstrip()
  text = pfor.replace("  return [2 * x", "  unused = 1\n" + "  # pad\n" * 200
                      + "  return [2 * x")
  proc = _stage_broken(root, toy_project, toy_upstream, tmp_path,
                       "call_tf_lib/batching/pfor.py", text)
  assert proc.returncode == 1
  assert "03-pfor: ruff: jax/experimental/jax2tf/call_tf_lib/batching/" \
         "pfor.py:10: F841" in proc.stderr
  assert re.search(r"03-pfor: adds 2\d\d lines of non-test code, more "
                   "than 200 \\(max_added_lines\\)", proc.stderr)


def _stage_with_overlay(root, toy_project, toy_upstream, tmp_path, edit):
  """Stages the toy fork with the `vmap` overlay patch's edits `edit`ed."""
  project = tmp_path / "fork"
  shutil.copytree(toy_project, project)
  (project / "patches/stage/overlay/vmap.patch").write_text(
      toy.overlay_patch(project, edit(toy.VARIANTS["vmap"])))
  return project, _fork(root, "--root", str(project), "stage", "0.12.0.1",
                        "--out", str(tmp_path / "out"), "--onto",
                        str(toy_upstream), "--author", _AUTHOR)


def test_a_use_of_a_later_module_is_named(root, toy_project, toy_upstream,
                                          tmp_path):
  _, proc = _stage_with_overlay(
      root, toy_project, toy_upstream, tmp_path,
      lambda edits: [e for e in edits if "import pfor" not in e[1]])
  assert proc.returncode == 1
  assert ("02-vmap: jax/experimental/jax2tf/call_tf_lib/batching/rule.py:5 "
          "uses jax.experimental.jax2tf.call_tf_lib.batching.pfor, which "
          "this commit lacks") in proc.stderr
  assert "overlay patch (patches/stage/overlay/)" in proc.stderr


def test_an_overlay_patch_that_no_longer_applies_fails_loudly(
    root, toy_project, toy_upstream, tmp_path):
  project, _ = _stage_with_overlay(root, toy_project, toy_upstream,
                                   tmp_path / "a", lambda edits: edits)
  rule = project / "jax/experimental/jax2tf/call_tf_lib/batching/rule.py"
  rule.write_text(rule.read_text().replace("return pfor.vectorize(xs)",
                                           "return pfor.vectorize(list(xs))"))
  proc = _fork(root, "--root", str(project), "stage", "0.12.0.1", "--out",
               str(tmp_path / "out"), "--onto", str(toy_upstream),
               "--author", _AUTHOR)
  assert proc.returncode == 1
  assert re.search(r"02-vmap: patches/stage/overlay/vmap.patch does not "
                   r"apply to this repository's files \(.*batching/rule.py",
                   proc.stderr), proc.stderr


def test_a_jep_waits_for_its_issue_whose_text_is_written(toy_staged):
  branches = _git(toy_staged / "repo", "branch",
                  "--format=%(refname:short)").split()
  assert not any("proposal" in b for b in branches)
  issue = (toy_staged / "jep-issue.md").read_text()
  assert issue.startswith("(toy-proposal-jep)=\n# A toy proposal\n\n"
                          "*Jane Doe*\n\n*December 2026*\n")
  assert "jax.vmap(f)(xs)" in issue


def _stage_edited(root, toy_project, toy_upstream, tmp_path, edits):
  """Stages a copy of the toy fork with `edits` ({path: (find, replace)})
  made to its files."""
  project = tmp_path / "fork"
  shutil.copytree(toy_project, project)
  for path, (find, replace) in edits.items():
    text = (project / path).read_text()
    assert text.count(find) == 1, (path, find)
    (project / path).write_text(text.replace(find, replace))
  out = tmp_path / "out"
  return out, _fork(root, "--root", str(project), "stage", "0.12.0.1",
                    "--out", str(out), "--onto", str(toy_upstream),
                    "--author", _AUTHOR)


def test_a_jep_with_its_issue_is_committed_in_the_index_order(
    root, toy_project, toy_upstream, tmp_path):
  out, proc = _stage_edited(root, toy_project, toy_upstream, tmp_path, {
      "patches/stage.toml": ('slug = "toy-proposal" }',
                             'slug = "toy-proposal", issue = 9000 }')})
  assert proc.returncode == 0, proc.stderr
  repo = out / "repo"
  branch = "call-tf-vmap-06-proposal"
  assert _git(repo, "rev-parse", f"{branch}~1").strip() == _git(
      repo, "rev-parse", "jax-v0.12.0.1").strip()
  assert sorted(_git(repo, "show", "--name-only", "--format=",
                     branch).split()) == [
      "docs/jep/9000-toy-proposal.md", "docs/jep/index.rst"]
  assert _show(repo, branch, "docs/jep/9000-toy-proposal.md").startswith(
      "(toy-proposal-jep)=\n# JEP 9000: A toy proposal\n\n*Jane Doe*\n")
  index = _show(repo, branch, "docs/jep/index.rst")
  assert ("  4410: Omnistaging <4410-omnistaging>\n"
          "  9000: A toy proposal <9000-toy-proposal>\n"
          "  28845: Stateful") in index
  assert not (out / "jep-issue.md").exists()
  assert _git(repo, "log", "-1", "--format=%B", branch).startswith(
      "[JEP] A toy proposal\n\nA design proposal for the rest.\n")


def test_a_jep_with_a_placeholder_a_note_or_a_path_is_refused(
    root, toy_project, toy_upstream, tmp_path):
  """Each leak the reviewer found by hand in the proposal, refused by
  name, in the issue's text and in the committed document."""
  leaks = ("*Implementation: TODO(sender): a link*\n\n<!-- tpu-results -->"
           "\nRun /tmp/bench.py again before sending; the fork's "
           "distribution keeps `docs/design-notes.md`.\n")
  for issue in ("", ", issue = 9000"):
    out, proc = _stage_edited(
        root, toy_project, toy_upstream, tmp_path / f"i{bool(issue)}", {
            "docs/jep/toy-proposal.md": ("## Summary\n",
                                         "## Summary\n\n" + leaks),
            "patches/stage.toml": ('slug = "toy-proposal" }',
                                   f'slug = "toy-proposal"{issue} }}')})
    assert proc.returncode == 1
    errors = [l for l in proc.stderr.splitlines()
              if l.startswith("error:") and "06-proposal" in l]
    for word in ("'TODO('", "'<!--'", "'/tmp'", "'before sending'",
                 "'fork'", "'distribution'", "'docs/design-notes.md'"):
      assert any(word in e for e in errors), (issue, word, errors)


def test_a_patch_from_a_placeholder_author_is_refused(
    root, toy_project, toy_upstream, tmp_path):
  _, proc = _stage_edited(root, toy_project, toy_upstream, tmp_path, {
      "patches/stage/twice.patch": ("Subject: ", "From: Test Person "
                                    "<test@example.com>\nSubject: ")})
  assert proc.returncode == 1
  assert ("04-twice: patches/stage/twice.patch: its From: header: the "
          "author's address 'test@example.com' reaches no one") in proc.stderr
  # (A team's or the fork's name: identity_problems, tested above.)


_EARLY_JEP = '''[[pr.edit]]
file = "docs/jep/index.rst"
find = "  28845: Stateful Randomness in JAX <28845-stateful-rng>\\n"
replace = """  28845: Stateful Randomness in JAX <28845-stateful-rng>
  5: An early one <5-early>
"""

[[pr]]
name = "later"'''


def test_a_jep_index_out_of_order_is_refused(root, toy_project,
                                             toy_upstream, tmp_path):
  _, proc = _stage_edited(root, toy_project, toy_upstream, tmp_path, {
      "patches/stage.toml": ('[[pr]]\nname = "later"', _EARLY_JEP)})
  assert proc.returncode == 1
  assert ("04-twice: docs/jep/index.rst:10: JEP 5 comes after JEP 28845 "
          "(line 9): the index is in numeric order") in proc.stderr


def test_verify_installs_each_commit_and_runs_its_tests(root, toy_project,
                                                        toy_upstream,
                                                        tmp_path, release):
  """--verify with a light base venv (pytest, setuptools): the toy's tests
  pass at each commit; upstream's test that fails at the base is said so."""
  project = tmp_path / "fork"
  shutil.copytree(toy_project, project)
  # The pfor commit also edits upstream's call_tf_test (a patch would).
  plan = project / "patches" / "stage.toml"
  requirements = [stage_lib.stage_verify._pinned(root, "pytest"),
                  "setuptools"]
  result = stage_lib.stage(Project(project), release, tmp_path / "out",
                           onto=toy_upstream, author=_AUTHOR, verify=True,
                           verify_requirements=requirements)
  assert result.ok, result.problems
  runs = [c.test_run for c in result.commits if c.commit]
  assert [r.files for r in runs] == [
      ["tests/local_label_test.py"],
      ["jax/experimental/jax2tf/tests/batching_test.py",
       "tests/local_label_test.py"],
      ["jax/experimental/jax2tf/tests/batching_test.py",
       "tests/local_label_test.py"],
      ["jax/experimental/jax2tf/tests/call_tf_test.py"]]
  assert [len(r.passed) for r in runs] == [1, 3, 3, 2]
  # The source pull request runs upstream's file it changes: the test
  # that fails at the base is said so, not held against it.
  assert [t.rsplit("::", 1)[-1] for t in runs[3].failed_at_base] == [
      "test_broken_upstream"]
  assert runs[3].ok
  assert any("test_not_vectorized_yet" in t for t in runs[1].passed)
  assert any("test_vectorized" in t for t in runs[2].passed)
  report = json.loads((tmp_path / "out" / "report.json").read_text())
  assert report["verified"] and report["commits"][2]["tests_run"]["ok"]
  assert (tmp_path / "out" / report["commits"][2]["tests_run"]["log"]
          ).is_file()
  # A commit whose test fails is reported as such.
  test = project / "tests" / "upstream" / "call_tf_batch_test.py"
  test.write_text(test.read_text().replace("[2, 4]", "[2, 5]"))
  # ... and vmap's overlay patch refreshed for it, as a maintainer would.
  (project / "patches/stage/overlay/vmap.patch").write_text(
      toy.overlay_patch(project, [(f, find.replace("[2, 4]", "[2, 5]"), r)
                                  for f, find, r in toy.VARIANTS["vmap"]]))
  broken = stage_lib.stage(Project(project), release, tmp_path / "out2",
                           onto=toy_upstream, author=_AUTHOR, verify=True,
                           verify_requirements=requirements)
  assert not broken.ok
  assert broken.commits[1].test_run.ok
  assert [t.rsplit("::", 1)[-1] for t in broken.commits[2].test_run.failed
          ] == ["test_vectorized"]
  assert plan.is_file()


# BUILD files in upstream's form (Bazel): the library that lists call_tf.py,
# and the tests' package with call_tf_test's rule.
_LIBRARY_BUILD = """\
load("//jaxlib:jax.bzl", "jax_visibility", "py_deps")

py_library(
    name = "jax2tf",
    srcs = ["__init__.py"],
    visibility = ["//visibility:public"],
    deps = [":jax2tf_internal"],
)

py_library(
    name = "jax2tf_internal",
    srcs = [
        "call_tf.py",
        "jax2tf.py",
    ],
    deps = ["//jax"] + py_deps("numpy"),
)
"""
_TESTS_BUILD = """\
load("//jaxlib:jax.bzl", "jax_multiplatform_test", "py_deps")

jax_multiplatform_test(
    name = "jax2tf_test",
    srcs = ["jax2tf_test.py"],
    tags = ["jax2tf"],
)

jax_multiplatform_test(
    name = "call_tf_test",
    srcs = ["call_tf_test.py"],
    tags = ["jax2tf"],
    deps = [
        ":tf_test_util",
    ] + py_deps("tpu_ops"),
)
"""


# tests/BUILD in upstream's form: the rules of version_test, config_test and
# export_test.
_TOP_TESTS_BUILD = """\
load("//jaxlib:jax.bzl", "jax_multiplatform_test", "jax_py_test", "py_deps")

jax_multiplatform_test(
    name = "export_test",
    srcs = ["export_test.py"],
    deps = [
        "//jax/_src:export",
        "//jax/_src:test_util",
    ] + py_deps("absl/testing"),
)

jax_py_test(
    name = "config_test",
    srcs = ["config_test.py"],
    deps = [
        "//jax",
        "//jax/_src:test_util",
    ] + py_deps("absl/testing"),
)

jax_py_test(
    name = "version_test",
    srcs = ["version_test.py"],
    deps = [
        "//jax",
        "//jax/_src:test_util",
    ] + py_deps("absl/testing"),
)
"""


def _upstream_test_files(release) -> dict[str, bytes]:
  """Upstream's tests: main's snapshot if there is one, else by tag."""
  folder = os.environ.get("JAX_FORK_UPSTREAM_TESTS")
  if not folder:
    return {}
  main = sorted(pathlib.Path(folder).glob("jax-main-*.tar.gz"))
  if main:
    files = {}
    with tarfile.open(main[-1]) as tar:
      for member in tar.getmembers():
        if member.isfile():
          rel = member.name.split("/", 1)[1]
          files[rel] = tar.extractfile(member).read()
    return files
  return upstream_tests_lib.source_files(
      upstream_tests_lib.find_set(pathlib.Path(folder), release.version))


def _make_upstream(release, path: pathlib.Path) -> pathlib.Path:
  """A git repository laid out like upstream's, tagged jax-v<release>."""
  with tarfile.open(fetch.fetch(release)) as tar:
    tar.extractall(path.parent / "unpacked", filter="data")
  os.rename(path.parent / "unpacked" / f"jax-{release.version}", path)
  (path / "PKG-INFO").unlink()
  for egg in path.glob("*.egg-info"):
    shutil.rmtree(egg)
  upstream_tests_lib.lay_files(_upstream_test_files(release), path)
  jax2tf = path / "jax" / "experimental" / "jax2tf"
  (jax2tf / "BUILD").write_text(_LIBRARY_BUILD)
  (jax2tf / "tests").mkdir(exist_ok=True)
  (jax2tf / "tests" / "BUILD").write_text(_TESTS_BUILD)
  (path / "tests").mkdir(exist_ok=True)
  (path / "tests" / "BUILD").write_text(_TOP_TESTS_BUILD)
  _git(path, "init", "-q", "-b", "main")
  _git(path, "add", "-A")
  _git(path, "commit", "-q", "-m", f"Release {release.version}")
  _git(path, "tag", f"jax-v{release.version}")
  return path


def _commits(repo) -> list[str]:
  return _git(repo, "log", "--reverse", "--format=%H").split()


@pytest.fixture(scope="module")
def upstream(release, tmp_path_factory) -> pathlib.Path:
  return _make_upstream(release, tmp_path_factory.mktemp("upstream") / "jax")


@pytest.fixture(scope="module")
def staged(root, release, upstream, tmp_path_factory) -> pathlib.Path:
  out = tmp_path_factory.mktemp("stage") / "out"
  proc = _fork(root, "-q", "stage", release.version, "--out", str(out),
               "--onto", str(upstream), "--ref", f"jax-v{release.version}",
               "--author", _AUTHOR)
  assert proc.returncode in (0, 1), proc.stderr
  return out


def test_real_queue_one_commit_per_planned_pull_request(root, release,
                                                        staged):
  plan = _real_plan(root)
  repo = staged / "repo"
  base = _git(repo, "rev-parse", f"jax-v{release.version}").strip()
  branches = set(_git(repo, "for-each-ref", "--format=%(refname:short)",
                      "refs/heads").split())
  for pr in plan.prs:
    branch = f"call-tf-vmap-{pr.slug}"
    if pr.held:
      assert branch not in branches, pr.name
      continue
    subject, who = _git(repo, "log", "-1", "--format=%s%n%an <%ae>|%cn <%ce>",
                        branch).splitlines()
    assert subject == pr.title
    assert who == f"{_AUTHOR}|{_AUTHOR}"
    parent = _git(repo, "rev-parse", f"{branch}~1").strip()
    assert parent == (base if not pr.after else _git(
        repo, "rev-parse", f"call-tf-vmap-{plan.chain(pr)[-2].slug}").strip())
  report = json.loads((staged / "report.json").read_text())
  assert all(c["applies"] for c in report["commits"]), report["problems"]
  for c in report["commits"]:
    assert {"applies", "added_lines", "author", "tests_run", "fork_words",
            "conventions", "ruff", "onto", "kind"} <= set(c)
  assert [h["name"] for h in report["held"]] == [
      pr.name for pr in plan.prs if pr.held]


def test_real_queue_pull_request_one_is_small_and_alone(root, staged):
  plan = _real_plan(root)
  first = plan.prs[0]
  report = json.loads((staged / "report.json").read_text())
  commit = report["commits"][0]
  assert commit["name"] == first.name and commit["onto"] == "base"
  assert 0 < commit["added_lines"]["non_test"] <= 400
  repo = staged / "repo"
  files = _git(repo, "show", "--name-only", "--format=",
               f"call-tf-vmap-{first.slug}").split()
  assert "jax/experimental/jax2tf/call_tf.py" in files
  assert set(files) <= set(first.touches)
  assert commit["problems"] == [] and commit["fork_words"] == []
  assert commit["conventions"] == []


def test_real_queue_no_marker_or_fork_word_reaches_upstream(root, release,
                                                            staged):
  repo = staged / "repo"
  for branch in _git(repo, "for-each-ref", "--format=%(refname:short)",
                     "refs/heads/call-tf-vmap-*").split():
    changed = _git(repo, "diff", "--name-only", f"jax-v{release.version}",
                   branch).split()
    if not changed:
      # A commit that did not apply changes nothing (the test above says
      # so); `git grep` of no path would search upstream's whole tree.
      continue
    proc = subprocess.run([*_GIT, "grep", "-n", "-e", "stage-with", "-e",
                           "# stage:", "-e", "call_tf_lib", branch, "--",
                           *changed], cwd=repo, capture_output=True,
                          text=True)
    assert proc.returncode == 1, proc.stdout  # no marker reaches upstream
  report = json.loads((staged / "report.json").read_text())
  assert all(c["fork_words"] == [] for c in report["commits"]), [
      c["fork_words"] for c in report["commits"]]


def test_stage_refuses_an_existing_directory(root, release, staged):
  proc = _fork(root, "stage", release.version, "--out", str(staged))
  assert proc.returncode == 2 and "already exists" in proc.stderr


def test_stage_refuses_a_directory_that_is_not_a_checkout(root, release,
                                                         tmp_path):
  proc = _fork(root, "stage", release.version, "--out", str(tmp_path / "o"),
               "--onto", str(tmp_path), "--author", _AUTHOR)
  assert proc.returncode == 2
  assert "is not a git checkout of upstream's repository" in proc.stderr
  assert not (tmp_path / "o").exists()


@pytest.mark.skipif(not os.environ.get("JAX_FORK_STAGE_VERIFY"),
                    reason="slow (a venv with jaxlib and tensorflow-cpu per "
                           "commit): set JAX_FORK_STAGE_VERIFY=1")
def test_real_series_verified(root, release, upstream, tmp_path):
  """Every commit of the real series passes its tests, within the size
  limit, without fork words, ruff-clean: report.json says ok."""
  out = tmp_path / "out"
  proc = _fork(root, "stage", release.version, "--out", str(out), "--onto",
               str(upstream), "--ref", f"jax-v{release.version}",
               "--author", _AUTHOR, "--verify")
  report = json.loads((out / "report.json").read_text())
  assert proc.returncode == 0 and report["ok"], report["problems"]
  for c in report["commits"]:
    if c["added_lines"]["tests"]:
      assert c["tests_run"]["ok"], c["slug"]
