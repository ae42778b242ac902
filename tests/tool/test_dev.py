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
"""`dev`'s tree: patched as `apply` patches, the overlay linked, not copied.

On a small synthetic sdist, placed in the cache as `fetch` leaves a
verified one. The venv half (`pip install -e` beside jaxlib and
tensorflow-cpu) is what `fork.py dev` adds; docs/maintainers.md records
its timings.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from forklib import ForkError
from forklib.project import Project
from forklib.testing import dev

from . import patchutil

CONFIG = patchutil.SDIST_FILES["jax/_src/config.py"]


def _patch(line: str) -> str:
  return patchutil.format_patch(
      "config: add option",
      {"jax/_src/config.py": (CONFIG, CONFIG.replace("line 20\n",
                                                     f"line 20\n{line}\n"))})


@pytest.fixture
def project(tmp_path, monkeypatch) -> Project:
  cache = tmp_path / "cache"
  sha = patchutil.make_sdist(
      cache / "sdists" / "jax-9.9.9.tar.gz",
      dict(patchutil.SDIST_FILES, **{"jax/experimental/__init__.py": ""}))
  root = patchutil.make_project(
      tmp_path / "project", sha,
      patches={"0001-config-add-option.patch": _patch("slow_vmap = False")},
      overlay={"experimental/ours/__init__.py": "OURS = 1\n",
               "_src/ours.py": "MINE = 2\n"})
  monkeypatch.setenv("JAX_FORK_CACHE", str(cache))
  # The test command sets the release under test; this project has its own.
  monkeypatch.delenv("JAX_FORK_UPSTREAM", raising=False)
  return Project(root)


def _release(project: Project):
  return project.manifest().select(None)


def test_the_tree_is_patched_and_stamped(project, tmp_path):
  tree = dev.build_tree(project, _release(project), tmp_path / "tree")
  assert "slow_vmap = False\n" in (tree / "jax/_src/config.py").read_text()
  assert "9.9.9+calltf.3" in (tree / "jax/version.py").read_text()


def test_a_new_overlay_folder_is_linked_whole_a_new_file_alone(project,
                                                               tmp_path):
  tree = dev.build_tree(project, _release(project), tmp_path / "tree")
  folder = tree / "jax/experimental/ours"
  assert folder.is_symlink()
  assert folder.resolve() == (project.overlay / "experimental/ours").resolve()
  assert (tree / "jax/_src/ours.py").is_symlink()
  assert not (tree / "jax/_src").is_symlink()  # upstream's folder
  # A module added to the linked folder later needs no new `dev` run.
  (project.overlay / "experimental/ours/later.py").write_text("LATER = 3\n")
  assert (folder / "later.py").read_text() == "LATER = 3\n"


def test_an_overlay_edit_is_what_python_imports(project, tmp_path):
  tree = dev.build_tree(project, _release(project), tmp_path / "tree")
  (project.overlay / "experimental/ours/__init__.py").write_text("OURS = 7\n")
  proc = subprocess.run(
      [sys.executable, "-c",
       "import jax.experimental.ours as o; print(o.OURS)"],
      cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(tree)),
      capture_output=True, text=True)
  assert proc.stdout.strip() == "7", proc.stderr


def test_running_again_takes_an_edited_patch(project, tmp_path):
  release = _release(project)
  out = tmp_path / "tree"
  dev.build_tree(project, release, out)
  (project.patches / "0001-config-add-option.patch").write_text(
      _patch("slow_vmap = True"))
  tree = dev.build_tree(project, release, out)
  config = (tree / "jax/_src/config.py").read_text()
  assert "slow_vmap = True\n" in config and "slow_vmap = False" not in config
  # Nothing left beside it: the old tree and the scratch folder are gone.
  assert sorted(p.name for p in out.parent.iterdir()) == [
      "cache", "project", "tree"]


def test_a_patch_that_fails_leaves_the_tree_as_it_was(project, tmp_path):
  release = _release(project)
  out = tmp_path / "tree"
  dev.build_tree(project, release, out)
  (project.patches / "0001-config-add-option.patch").write_text(
      patchutil.format_patch("config: add option", {
          "jax/_src/config.py": ("not upstream\n", "ours\n")}))
  with pytest.raises(ForkError):
    dev.build_tree(project, release, out)
  assert "slow_vmap = False\n" in (out / "jax/_src/config.py").read_text()


def test_a_folder_dev_did_not_make_is_refused_not_replaced(project, tmp_path):
  out = tmp_path / "mine"
  out.mkdir()
  (out / "notes.txt").write_text("keep me")
  with pytest.raises(ForkError, match="not made by `dev`"):
    dev.build_tree(project, _release(project), out)
  assert (out / "notes.txt").read_text() == "keep me"


def test_overlay_links_name_the_highest_new_folder(project, tmp_path):
  tree = tmp_path / "bare"
  (tree / "jax/_src").mkdir(parents=True)
  (tree / "jax/experimental").mkdir()
  assert dev.overlay_links(project, tree) == {
      "jax/_src/ours.py": "_src/ours.py",
      "jax/experimental/ours": "experimental/ours"}
