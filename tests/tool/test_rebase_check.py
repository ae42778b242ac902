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

import io
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile

import pytest

from . import patchutil

PAD = "".join(f"PAD_{i} = {i}\n" for i in range(12))
OLD = f"""import os


def _flag():
  return os.environ.get("FLAG")


{PAD}
def configure():
  x = 1
  return x


TAIL = 0
"""
PATCHED = OLD.replace("  x = 1\n", "  x = 1\n  y = _flag()\n").replace(
    "  return x\n", "  return x, y\n")


def _sdist_files(version: str, config: str) -> dict[str, str]:
  files = {name: text.replace("9.9.9", version)
           for name, text in patchutil.SDIST_FILES.items()}
  files["jax/_src/config.py"] = config
  return files


@pytest.fixture
def project(tmp_path, setuptools_links):
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
  proc = project["fork"]("rebase", "9.9.8", "--from", "9.9.9",
                         "--no-suites")
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
  proc = project["fork"]("rebase", "9.9.8", "--from", "9.9.9",
                         "--no-suites")
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert "1 refreshed as variants in patches/variants/9.9.8/" in proc.stdout
  variant = (project["root"] / "patches" / "variants" / "9.9.8" /
             "0001-config-flag.patch")
  assert "+  y = _flag()" in variant.read_text()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_problems_upstream_already_has_are_not_blamed_on_the_patch(project):
  # Upstream's own file already uses an undefined name; the patch adds none.
  project["add_release"]("def other():\n  return missing\n" + OLD)
  proc = project["fork"]("rebase", "9.9.8", "--from", "9.9.9",
                         "--no-suites")
  assert proc.returncode == 0, proc.stdout + proc.stderr


TEST_FILE = "tests/config_test.py"
TEST_OLD = "".join(f"def test_{i}():\n  assert True\n\n\n" for i in range(6))
TEST_PATCHED = TEST_OLD.replace("def test_3():\n  assert True\n",
                                "def test_3():\n  assert False is not True\n")


def _tests_tarball(directory: pathlib.Path, version: str, text: str) -> None:
  """An export of upstream's tests at tag jax-v<version>, as in shared/."""
  directory.mkdir(parents=True, exist_ok=True)
  with tarfile.open(directory / f"jax-v{version}.tar.gz", "w:gz") as tar:
    data = text.encode()
    info = tarfile.TarInfo(f"jax-v{version}/{TEST_FILE}")
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _add_test_patch(root: pathlib.Path) -> None:
  """A second patch, which edits upstream's test (no sdist holds it)."""
  patch = patchutil.format_patch("test: the flag's test",
                                 {TEST_FILE: (TEST_OLD, TEST_PATCHED)})
  (root / "patches" / "0002-test.patch").write_text(patch)
  series = root / "patches" / "series"
  series.write_text(series.read_text() + "0002-test.patch\n")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_test_file_hunks_need_upstreams_tests_and_say_so(project):
  project["add_release"](OLD)
  _add_test_patch(project["root"])
  proc = project["fork"]("rebase", "9.9.8", "--from", "9.9.9", "--no-suites")
  assert proc.returncode == 2, proc.stdout + proc.stderr
  assert (f"the queue edits upstream's tests (0002-test.patch: {TEST_FILE})"
          in proc.stderr)
  assert "--upstream-tests DIR" in proc.stderr
  assert "[fork] fetch" not in proc.stderr  # said before any work


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_test_file_hunks_are_rebased_on_upstreams_tests(project, tmp_path):
  project["add_release"](OLD)
  _add_test_patch(project["root"])
  tests = tmp_path / "upstream-tests"
  _tests_tarball(tests, "9.9.7", "# moved down\n" + TEST_OLD.replace(
      "def test_4", "def test_four"))
  _tests_tarball(tests, "9.9.9", TEST_OLD)
  proc = project["fork"]("rebase", "9.9.8", "--from", "9.9.9", "--no-suites",
                         "--upstream-tests", str(tests))
  assert proc.returncode == 0, proc.stdout + proc.stderr
  # 9.9.8 has no tag of its own there: the nearest earlier one's tests.
  assert "no tests tagged jax-v9.9.8 there" in proc.stdout
  variant = (project["root"] / "patches" / "variants" / "9.9.8" /
             "0002-test.patch")
  assert " def test_four():" in variant.read_text()
  assert "+  assert False is not True" in variant.read_text()
  assert not (project["root"] / "patches" / "variants" / "9.9.8" /
              "0001-config-flag.patch").exists()


def _upstream_checkout(path: pathlib.Path, trees: dict[str, dict[str, str]]
                       ) -> pathlib.Path:
  """A git repository with a tag jax-v<version> for each of `trees`."""
  path.mkdir()
  env = dict(os.environ, GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@u",
             GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@u")
  subprocess.run(["git", "init", "-q"], cwd=path, check=True)
  for version, files in trees.items():
    for name, text in files.items():
      (path / name).parent.mkdir(parents=True, exist_ok=True)
      (path / name).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run(["git", "commit", "-qm", version], cwd=path, check=True,
                   env=env)
    subprocess.run(["git", "tag", f"jax-v{version}"], cwd=path, check=True)
  return path


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_rebase_on_a_checkout_of_upstream_at_its_tags(project, tmp_path):
  changed = OLD.replace("PAD_11 = 11\n\ndef configure",
                        "PAD_11 = 11\n# configure\ndef configure")
  project["add_release"](changed)
  _add_test_patch(project["root"])
  checkout = _upstream_checkout(tmp_path / "jax", {
      "9.9.9": {**_sdist_files("9.9.9", OLD), TEST_FILE: TEST_OLD},
      "9.9.8": {**_sdist_files("9.9.8", changed), TEST_FILE: TEST_OLD}})
  proc = project["fork"]("rebase", "9.9.8", "--from", "9.9.9", "--no-suites",
                         "--checkout", str(checkout))
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert f"trees: upstream's repository {checkout} at its tags" in proc.stdout
  variants = project["root"] / "patches" / "variants" / "9.9.8"
  assert sorted(p.name for p in variants.iterdir()) == [
      "0001-config-flag.patch"]
  assert "+  y = _flag()" in (variants / "0001-config-flag.patch").read_text()
  # A tag the checkout lacks is named before any work.
  proc = project["fork"]("rebase", "9.9.7", "--from", "9.9.9", "--no-suites",
                         "--checkout", str(checkout))
  assert proc.returncode == 2
  assert f"{checkout} has no tag jax-v9.9.7" in proc.stderr
