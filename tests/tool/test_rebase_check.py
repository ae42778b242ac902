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
"""`rebase` treats a clean 3-way merge that breaks the code as a conflict.

Two synthetic releases: in the newer one upstream renamed a helper far from
the patch's hunk, so git merges the patch without a textual conflict, but the
patched line still calls the old name.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from . import patchutil
from .test_pipeline_synthetic import setuptools_links  # noqa: F401

PAD = "".join(f"PAD_{i} = {i}\n" for i in range(12))
OLD = f"""import os


def _flag():
  return os.environ.get("FLAG")


{PAD}
def configure():
  x = 1
  return x
"""
PATCHED = OLD.replace("  x = 1\n", "  x = 1\n  y = _flag()\n").replace(
    "  return x\n", "  return x, y\n")


def _sdist_files(version: str, config: str) -> dict[str, str]:
  files = {name: text.replace("9.9.9", version)
           for name, text in patchutil.SDIST_FILES.items()}
  files["jax/_src/config.py"] = config
  return files


@pytest.fixture
def project(tmp_path, setuptools_links):  # noqa: F811
  """Releases 9.9.9 (the queue applies) and 9.9.8, served by pip."""
  links = tmp_path / "links"
  links.mkdir()
  for whl in setuptools_links.iterdir():
    os.link(whl, links / whl.name)
  patch = patchutil.format_patch("config: read the flag",
                                 {"jax/_src/config.py": (OLD, PATCHED)})
  sha = patchutil.make_sdist(links / "jax-9.9.9.tar.gz",
                             _sdist_files("9.9.9", OLD))
  root = patchutil.make_project(tmp_path / "project", sha,
                                patches={"0001-config-flag.patch": patch})

  def add_release(config: str) -> None:
    sha = patchutil.make_sdist(links / "jax-9.9.8.tar.gz",
                               _sdist_files("9.9.8", config), version="9.9.8")
    manifest = root / "patches" / "upstream.toml"
    manifest.write_text(manifest.read_text() + "\n" + patchutil.MANIFEST.format(
        version="9.9.8", sha=sha))

  env = dict(os.environ, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(links),
             JAX_FORK_CACHE=str(tmp_path / "cache"))
  env.pop("JAX_FORK_UPSTREAM", None)

  def fork(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(pathlib.Path(__file__).parents[2] / "build" /
                             "fork.py"), "--root", str(root), *args],
        env=env, capture_output=True, text=True)

  return dict(root=root, add_release=add_release, fork=fork)


def _patch_files(root: pathlib.Path) -> list[str]:
  return sorted(str(p.relative_to(root)) for p in (root / "patches").rglob("*"))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_clean_merge_that_leaves_an_undefined_name_is_a_conflict(project):
  # Upstream renamed _flag and added lines above it: the patch's context
  # moved (a variant is needed) and git merges it without complaint.
  project["add_release"]("# header\n" + OLD.replace("_flag", "_flag_value"))
  before = _patch_files(project["root"])
  proc = project["fork"]("rebase", "9.9.8", "--from", "9.9.9")
  assert proc.returncode == 2, proc.stdout + proc.stderr
  err = proc.stderr
  assert ("'config: read the flag' merged into jax 9.9.8 without a textual "
          "conflict") in err
  assert "jax/_src/config.py: F821 Undefined name `_flag`" in err
  assert "git rebase --continue" in err and "--resume" in err
  assert _patch_files(project["root"]) == before


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_clean_merge_that_still_works_writes_the_variant(project):
  # A context line of the hunk changed upstream (a moved hunk would still
  # apply, with an offset): the 3-way merge is clean and the file works.
  project["add_release"](OLD.replace("PAD_11 = 11\n\ndef configure",
                                     "PAD_11 = 11\n# configure\ndef configure"))
  proc = project["fork"]("rebase", "9.9.8", "--from", "9.9.9")
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert "1 patch(es) refreshed for jax 9.9.8" in proc.stdout
  variant = (project["root"] / "patches" / "variants" / "9.9.8" /
             "0001-config-flag.patch")
  assert "+  y = _flag()" in variant.read_text()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_problems_upstream_already_has_are_not_blamed_on_the_patch(project):
  # Upstream's own file already uses an undefined name; the patch adds none.
  project["add_release"]("def other():\n  return missing\n" + OLD)
  proc = project["fork"]("rebase", "9.9.8", "--from", "9.9.9")
  assert proc.returncode == 0, proc.stdout + proc.stderr
