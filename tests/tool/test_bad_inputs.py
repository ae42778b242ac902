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
"""A bad path or a bad patch file: one `error:` line, naming it, before work.

On the synthetic sdist of `test_pipeline_synthetic`, through the CLI. "Before
any work" is read off the progress lines: no `[fork] fetch`, `apply` or
`wheel` step is printed before the error.
"""

from __future__ import annotations

import pathlib

import pytest

from . import patchutil
from .test_pipeline_synthetic import synthetic  # noqa: F401

CONFIG = patchutil.SDIST_FILES["jax/_src/config.py"]


def _one_error(proc, *names: str) -> str:
  """The run failed with one `error:` line naming `names`, before any work."""
  assert proc.returncode == 2, proc.stdout + proc.stderr
  assert "Traceback" not in proc.stderr, proc.stderr
  errors = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
  assert len(errors) == 1, proc.stderr
  assert proc.stderr.rstrip().splitlines()[-1] == errors[0], proc.stderr
  for name in names:
    assert name in errors[0], errors[0]
  work = [l for l in proc.stderr.splitlines()
          if l.startswith(("[fork] fetch", "[fork] apply", "[fork] wheel"))]
  assert not work, proc.stderr
  return errors[0]


def _unwritable(tmp_path: pathlib.Path) -> list[pathlib.Path]:
  """Directories nobody can write, root included: under a file, in /proc."""
  blocker = tmp_path / "a-file"
  blocker.write_text("not a directory\n")
  paths = [blocker / "out"]
  if pathlib.Path("/proc/self").is_dir():
    paths.append(pathlib.Path("/proc/fork-test-out"))
  return paths


@pytest.mark.parametrize("command", ["wheel", "apply"])
def test_an_unwritable_out_is_one_error_before_the_build(synthetic,  # noqa: F811
                                                          command):
  for out in _unwritable(synthetic["tmp"]):
    proc = synthetic["fork"](command, "9.9.9", "--out", str(out))
    _one_error(proc, str(out))


def test_index_into_an_unwritable_out_is_one_error_before_the_build(
    synthetic):  # noqa: F811
  for out in _unwritable(synthetic["tmp"]):
    proc = synthetic["fork"]("index", "--out", str(out), "--no-jaxlib")
    _one_error(proc, "--out", str(out))


def test_index_into_a_foreign_directory_is_refused_before_the_build(
    synthetic):  # noqa: F811
  out = synthetic["tmp"] / "www"
  out.mkdir()
  (out / "notes.txt").write_text("not yours\n")
  proc = synthetic["fork"]("index", "--out", str(out), "--no-jaxlib")
  _one_error(proc, str(out), "notes.txt")
  assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_a_missing_wheel_is_one_error(synthetic):  # noqa: F811
  missing = synthetic["tmp"] / "jax-9.9.9+calltf.3-py3-none-any.whl"
  proc = synthetic["fork"]("index", "--out", str(synthetic["tmp"] / "i"),
                           "--wheel", str(missing), "--no-jaxlib")
  _one_error(proc, str(missing))


@pytest.mark.parametrize("command", [("apply", "9.9.9", "--out", "{tmp}/t"),
                                     ("wheel", "9.9.9", "--out", "{tmp}/d"),
                                     ("check",)])
def test_a_patch_that_is_not_utf8_is_one_error_naming_it(synthetic,  # noqa: F811
                                                         command):
  patch = synthetic["project"] / "patches" / "0001-config-add-option.patch"
  patch.write_bytes(patch.read_bytes().replace(b"Test Author",
                                               b"Test Auth\xf6r"))
  proc = synthetic["fork"](*(a.format(tmp=synthetic["tmp"]) for a in command))
  if command[0] == "check":
    # `check` reports per release; the file is named all the same.
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert f"{patch} is not UTF-8" in proc.stdout + proc.stderr
    return
  error = _one_error(proc, str(patch))
  assert "not UTF-8" in error and "line 2" in error


def test_a_series_that_is_not_utf8_is_one_error_naming_it(synthetic):  # noqa: F811
  series = synthetic["project"] / "patches" / "series"
  series.write_bytes(b"# s\xe9rie\n" + series.read_bytes())
  proc = synthetic["fork"]("apply", "9.9.9", "--out",
                           str(synthetic["tmp"] / "t"))
  _one_error(proc, str(series), "not UTF-8")


def test_a_manifest_that_is_not_utf8_is_one_error_naming_it(synthetic):  # noqa: F811
  manifest = synthetic["project"] / "patches" / "upstream.toml"
  manifest.write_bytes(b"# \xff\n" + manifest.read_bytes())
  proc = synthetic["fork"]("fetch", "9.9.9")
  _one_error(proc, str(manifest), "not UTF-8")


def _two_patches(project: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
  """0001 adds two lines in two hunks; 0002 edits the second one's line."""
  first = CONFIG.replace("line 5\n", "line 5\nfirst = 1\n").replace(
      "line 30\n", "line 30\nsecond = 2\n")
  second = first.replace("second = 2\n", "second = 3\n")
  p1 = patchutil.format_patch("config: two options",
                              {"jax/_src/config.py": (CONFIG, first)},
                              context=1)
  p2 = patchutil.format_patch("config: the second changes",
                              {"jax/_src/config.py": (first, second)},
                              context=1)
  # git format-patch's diffstat, which the cut file keeps.
  p1 = p1.replace("---\n\n", "---\n jax/_src/config.py | 2 ++\n 1 file "
                  "changed, 2 insertions(+)\n\n", 1)
  p2 = p2.replace("---\n\n", "---\n jax/_src/config.py | 2 +-\n 1 file "
                  "changed, 1 insertion(+), 1 deletion(-)\n\n", 1)
  patches = project / "patches"
  (patches / "0001-config-add-option.patch").unlink()
  (patches / "series").write_text("0001-two.patch\n0002-second.patch\n")
  (patches / "0001-two.patch").write_text(p1)
  (patches / "0002-second.patch").write_text(p2)
  return patches / "0001-two.patch", patches / "0002-second.patch"


def test_the_two_patches_apply_whole(synthetic):  # noqa: F811
  _two_patches(synthetic["project"])
  proc = synthetic["fork"]("apply", "9.9.9", "--out",
                           str(synthetic["tmp"] / "t"))
  assert proc.returncode == 0, proc.stderr
  assert "second = 3\n" in (synthetic["tmp"] / "t" / "jax" / "_src" /
                            "config.py").read_text()


def test_a_patch_cut_at_a_hunk_boundary_is_blamed_on_itself(synthetic):  # noqa: F811
  p1, _ = _two_patches(synthetic["project"])
  text = p1.read_text()
  p1.write_text(text[:text.rindex("@@ -")])  # the second hunk is gone
  proc = synthetic["fork"]("apply", "9.9.9", "--out",
                           str(synthetic["tmp"] / "t"))
  error = _one_error(proc, str(p1), "patch 0001-two.patch", "is truncated")
  assert "0002" not in error
  assert "2 insertion(s)" in error and "1 insertion(s)" in error
