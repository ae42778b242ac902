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
"""Derived overlay patches (`stage_overlays`): one source for two variants.

The committed derived patches are what their source derives to now (a test
that fails when one drifts), the derivation keeps exactly the lines it is
told to, and a drifted patch or a `keep` line its source does not remove
is named.
"""

from __future__ import annotations

import pathlib
import shutil

import pytest

from forklib import ForkError
from forklib.project import Project
from forklib.upstreaming import stage_overlays
from forklib.upstreaming import stage_plan

pytestmark = pytest.mark.skipif(shutil.which("git") is None,
                                reason="git is not installed")


def _real_plan(root):
  return stage_plan.load_project(Project(root))


def test_the_committed_derived_overlays_are_current(root):
  plan = _real_plan(root)
  derived = [pr for pr in plan.prs if pr.overlay_from is not None]
  assert derived, "the plan derives at least one overlay patch"
  assert stage_overlays.stale(root, plan) == []


def _toy(root: pathlib.Path) -> None:
  (root / "jax").mkdir()
  (root / "jax" / "m.py").write_text(
      "import a\nimport b\nimport c\n\nx = 1\ny = 2\nz = 3\n\n"
      "def f():\n  return a, b, c\n")
  (root / "src.patch").write_text(
      "Held back: b and c, and f.\n\n"
      "diff --git a/jax/m.py b/jax/m.py\n"
      "index 1111111..2222222 100644\n"
      "--- a/jax/m.py\n"
      "+++ b/jax/m.py\n"
      "@@ -1,3 +1,1 @@\n"
      " import a\n"
      "-import b\n"
      "-import c\n"
      "@@ -9,2 +7,2 @@\n"
      " def f():\n"
      "-  return a, b, c\n"
      "+  return a\n")


def test_a_derived_overlay_keeps_the_lines_it_is_told_to(tmp_path):
  """A kept line turns back into context; the next hunk's new start moves
  with it; a hunk left with no change is dropped; the post-image's blob is
  the variant's."""
  _toy(tmp_path)
  text = stage_overlays.derive(tmp_path, "later", "src.patch",
                               ("import b", "import c"))
  body = text[text.index("diff --git "):]
  assert body.splitlines()[1].startswith("index 1111111..")
  assert body.splitlines()[1] != "index 1111111..2222222 100644"
  assert body.splitlines()[2:] == [
      "--- a/jax/m.py", "+++ b/jax/m.py",
      "@@ -9,2 +9,2 @@", " def f():", "-  return a, b, c", "+  return a"]
  assert "`later`" in text and "src.patch" in text
  one = stage_overlays.derive(tmp_path, "later", "src.patch", ("import c",))
  assert "@@ -1,3 +1,2 @@\n import a\n-import b\n import c\n" in one
  assert "@@ -9,2 +8,2 @@\n def f():\n" in one


def test_a_keep_line_the_source_does_not_remove_is_refused(tmp_path):
  _toy(tmp_path)
  with pytest.raises(ForkError, match=r"keeps lines that src.patch does not "
                     r"remove: \['import d'\]"):
    stage_overlays.derive(tmp_path, "later", "src.patch", ("import d",))


def test_a_drifted_derived_overlay_is_named(root, tmp_path):
  """The check above fails when the source changes and the derived patch
  is not written again (here: one added line of the source edited)."""
  plan = _real_plan(root)
  for part in ("jax", "tests/upstream", "patches/stage/overlay"):
    shutil.copytree(root / part, tmp_path / part,
                    ignore=shutil.ignore_patterns("__pycache__"))
  pr = next(pr for pr in plan.prs if pr.overlay_from is not None)
  source = next(p for p in plan.prs if p.name == pr.overlay_from.pr).overlay
  text = (tmp_path / source).read_text(encoding="utf-8")
  edited = text.replace("+  ", "+    ", 1)
  assert edited != text
  (tmp_path / source).write_text(edited, encoding="utf-8")
  assert stage_overlays.stale(tmp_path, plan) == [
      f"{pr.overlay} is not what its plan's overlay_from derives from "
      f"{source}: run `{stage_overlays.WRITE}`"]
