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
"""The patch queue: parsing, DEP-3 headers, exact application."""

from __future__ import annotations

import pathlib

import pytest

from forklib import ForkError
from forklib.sources import patchq

from . import patchutil

ORIGINAL = "".join(f"line {i}\n" for i in range(1, 41))


def _edit(text: str, replacements: dict[int, str]) -> str:
  lines = text.splitlines(keepends=True)
  for lineno, new in replacements.items():
    lines[lineno - 1] = new
  return "".join(lines)


def _write(tmp_path: pathlib.Path, name: str, text: str) -> patchq.Patch:
  path = tmp_path / name
  path.write_text(text)
  return patchq.parse(path)


@pytest.fixture
def tree(tmp_path: pathlib.Path) -> pathlib.Path:
  t = tmp_path / "tree"
  (t / "pkg").mkdir(parents=True)
  (t / "pkg" / "mod.py").write_text(ORIGINAL)
  return t


def test_two_hunks_apply_exactly(tmp_path, tree):
  new = _edit(ORIGINAL, {5: "line five\n", 30: "line thirty\nextra\n"})
  patch = _write(tmp_path, "0001-x.patch", patchutil.format_patch(
      "two hunks", {"pkg/mod.py": (ORIGINAL, new)}))
  assert len(patch.files[0].hunks) == 2
  assert patchq.apply(patch, tree) == ["pkg/mod.py"]
  assert (tree / "pkg" / "mod.py").read_text() == new


def test_context_mismatch_names_patch_file_and_hunk(tmp_path, tree):
  new = _edit(ORIGINAL, {5: "line five\n", 30: "line thirty\n"})
  patch = _write(tmp_path, "0007-topic.patch", patchutil.format_patch(
      "topic", {"pkg/mod.py": (ORIGINAL, new)}))
  # Upstream changed a context line of the second hunk.
  drifted = _edit(ORIGINAL, {28: "line 28 changed upstream\n"})
  (tree / "pkg" / "mod.py").write_text(drifted)
  with pytest.raises(patchq.PatchError) as e:
    patchq.apply(patch, tree)
  msg = str(e.value)
  assert "0007-topic.patch" in msg
  assert "pkg/mod.py" in msg
  assert "hunk 2 of 2" in msg
  assert "line 28 changed upstream" in msg
  assert "differs at line 28" in msg
  # Nothing was written: the first hunk's change is not in the file.
  assert (tree / "pkg" / "mod.py").read_text() == drifted


def test_an_offset_applies_with_exact_context_and_is_reported(tmp_path,
                                                               tree):
  """A hunk whose lines moved (an insertion above it) applies, as with
  `patch --fuzz=0`, `git apply` and quilt, and the offset is reported."""
  new = _edit(ORIGINAL, {20: "line twenty\n"})
  patch = _write(tmp_path, "0001-x.patch", patchutil.format_patch(
      "x", {"pkg/mod.py": (ORIGINAL, new)}))
  (tree / "pkg" / "mod.py").write_text("new 1\nnew 2\n" + ORIGINAL)
  assert patchq.apply(patch, tree) == ["pkg/mod.py (offsets +2 lines)"]
  assert (tree / "pkg" / "mod.py").read_text() == "new 1\nnew 2\n" + new


def test_an_offset_takes_the_nearest_exact_match(tmp_path, tree):
  """Where the hunk's lines occur twice, the one nearest its line wins."""
  new = _edit(ORIGINAL, {20: "line twenty\n"})
  patch = _write(tmp_path, "0001-x.patch", patchutil.format_patch(
      "x", {"pkg/mod.py": (ORIGINAL, new)}))
  (tree / "pkg" / "mod.py").write_text(ORIGINAL + ORIGINAL)
  patchq.apply(patch, tree)
  assert (tree / "pkg" / "mod.py").read_text() == new + ORIGINAL


def test_no_fuzz(tmp_path, tree):
  """One changed outer context line is enough to refuse the hunk."""
  new = _edit(ORIGINAL, {20: "line twenty\n"})
  patch = _write(tmp_path, "0001-x.patch", patchutil.format_patch(
      "x", {"pkg/mod.py": (ORIGINAL, new)}))
  (tree / "pkg" / "mod.py").write_text(_edit(ORIGINAL, {17: "LINE 17\n"}))
  with pytest.raises(patchq.PatchError, match="hunk 1 of 1"):
    patchq.apply(patch, tree)


def test_new_and_deleted_files(tmp_path, tree):
  (tree / "pkg" / "old.py").write_text("gone\n")
  patch = _write(tmp_path, "0001-x.patch", patchutil.format_patch(
      "x", {"pkg/new.py": (None, "a\nb\n"), "pkg/old.py": ("gone\n", None)}))
  patchq.apply(patch, tree)
  assert (tree / "pkg" / "new.py").read_text() == "a\nb\n"
  assert not (tree / "pkg" / "old.py").exists()


def test_creating_an_existing_file_is_refused(tmp_path, tree):
  patch = _write(tmp_path, "0001-x.patch", patchutil.format_patch(
      "x", {"pkg/mod.py": (None, "a\n")}))
  with pytest.raises(patchq.PatchError, match="already exists"):
    patchq.apply(patch, tree)


def test_modifying_a_missing_file_is_refused(tmp_path, tree):
  patch = _write(tmp_path, "0001-x.patch", patchutil.format_patch(
      "x", {"pkg/missing.py": ("a\n", "b\n")}))
  with pytest.raises(patchq.PatchError, match="does not exist"):
    patchq.apply(patch, tree)


def test_no_newline_at_end_of_file(tmp_path, tree):
  (tree / "pkg" / "eof.py").write_text("a\nb")
  text = (
      "Subject: [PATCH] x\n\n---\n"
      "diff --git a/pkg/eof.py b/pkg/eof.py\n"
      "--- a/pkg/eof.py\n+++ b/pkg/eof.py\n@@ -1,2 +1,2 @@\n a\n-b\n"
      "\\ No newline at end of file\n+c\n\\ No newline at end of file\n")
  patch = _write(tmp_path, "0001-x.patch", text)
  patchq.apply(patch, tree)
  assert (tree / "pkg" / "eof.py").read_text() == "a\nc"


def test_truncated_hunk_is_a_clear_error(tmp_path):
  text = patchutil.format_patch(
      "x", {"pkg/mod.py": (ORIGINAL, _edit(ORIGINAL, {5: "five\n"}))})
  text = text.replace(" line 8\n", "")  # drop the last context line
  with pytest.raises(patchq.PatchError, match="declares"):
    _write(tmp_path, "0001-x.patch", text)


def test_dep3_headers_are_parsed(tmp_path):
  patch = _write(tmp_path, "0001-x.patch", patchutil.format_patch(
      "the subject", {"a.py": (None, "x\n")}))
  assert patch.subject == "the subject"
  assert patch.missing_dep3() == []
  assert patch.headers["Bug"] == patchq.BUG_URL
  assert str(patch.last_update) == "2026-11-30"


def test_missing_dep3_headers_are_reported(tmp_path):
  patch = _write(tmp_path, "0001-x.patch", patchutil.format_patch(
      "x", {"a.py": (None, "x\n")}, headers="Description: only this.\n"))
  assert patch.missing_dep3() == ["Author", "Bug", "Forwarded", "Last-Update"]


def test_series_syntax(tmp_path):
  (tmp_path / "series").write_text(
      "# comment\n\n0001-a.patch\n0002-b.patch -p1  # trailing comment\n")
  assert patchq.read_series(tmp_path) == ["0001-a.patch", "0002-b.patch"]
  (tmp_path / "series").write_text("0001-a.patch -p0\n")
  with pytest.raises(ForkError, match="-p1"):
    patchq.read_series(tmp_path)
  (tmp_path / "series").write_text("0001-a.patch\n0001-a.patch\n")
  with pytest.raises(ForkError, match="more than once"):
    patchq.read_series(tmp_path)


def test_series_naming_a_missing_patch(tmp_path):
  (tmp_path / "series").write_text("0001-missing.patch\n")
  with pytest.raises(ForkError, match="0001-missing.patch"):
    patchq.load_queue(tmp_path)


def test_variant_replaces_patch_for_one_release(tmp_path):
  (tmp_path / "0001-a.patch").write_text("plain")
  (tmp_path / "variants" / "1.2.3").mkdir(parents=True)
  (tmp_path / "variants" / "1.2.3" / "0001-a.patch").write_text("variant")
  assert patchq.resolve(tmp_path, "0001-a.patch", "1.2.3").read_text() == (
      "variant")
  assert patchq.resolve(tmp_path, "0001-a.patch", "1.2.4").read_text() == (
      "plain")


def test_repository_patches_carry_dep3_headers(root):
  queue = patchq.load_queue(root / "patches")
  assert queue, "the series is empty"
  for patch in queue:
    assert patch.missing_dep3() == [], patch.name
    # call_tf's patches cite #11753; the others the bug they fix.
    if "call-tf" in patch.name:
      assert patch.headers["Bug"] == patchq.BUG_URL, patch.name
    assert patch.headers["Bug"].startswith(
        "https://github.com/jax-ml/jax/issues/"), patch.name
    assert patch.headers["Forwarded"].split()[0].rstrip(",") in (
        "no", "not-needed") or patch.headers["Forwarded"].startswith(
            "https://"), patch.name
    assert patch.last_update is not None, patch.name
    assert patch.subject, patch.name


def test_folded_subject_is_joined(tmp_path):
  text = patchutil.format_patch("x", {"a.py": (None, "x\n")}).replace(
      "Subject: [PATCH] x\n",
      "Subject: [PATCH] version: keep __version_info__ numeric under a local\n"
      " version label\n")
  patch = _write(tmp_path, "0001-x.patch", text)
  assert patch.subject == (
      "version: keep __version_info__ numeric under a local version label")


def test_asymmetric_context_is_flagged(tmp_path):
  """GNU patch (quilt) anchors a lopsided hunk to the file's start or end."""
  new = _edit(ORIGINAL, {20: "line twenty\n"})
  text = patchutil.format_patch("x", {"pkg/mod.py": (ORIGINAL, new)})
  assert not _write(tmp_path, "0001-x.patch", text).asymmetric_hunks()
  # Drop the first context line and fix the header: 2 before, 3 after.
  lopsided = text.replace("@@ -17,7 +17,7 @@\n line 17\n", "@@ -18,6 +18,6 @@\n")
  assert lopsided != text
  problems = _write(tmp_path, "0002-y.patch", lopsided).asymmetric_hunks()
  assert problems == ["pkg/mod.py @@ -18,6 +18,6 @@ (context 2 before, 3 after)"]
