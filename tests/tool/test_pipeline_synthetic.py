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
"""The tool end to end on a small synthetic sdist, through its CLI.

The synthetic sdist is served to `pip download` from a find-links folder
(with pip's own PIP_NO_INDEX / PIP_FIND_LINKS settings), next to the
setuptools wheel pip needs to read its metadata.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from . import patchutil

CONFIG = patchutil.SDIST_FILES["jax/_src/config.py"]


def _config_patch(old_line: str = "line 20\n") -> str:
  new = CONFIG.replace("line 20\n", "line 20\nslow_vmap = False\n")
  old = CONFIG.replace("line 20\n", old_line)
  return patchutil.format_patch("config: add option",
                                {"jax/_src/config.py": (old, new)})


@pytest.fixture
def synthetic(tmp_path, setuptools_links, root):
  """A synthetic sdist served by pip, and a fork project pinning it.

  `setuptools_links` (conftest.py): the session's setuptools wheel, linked
  into this test's own find-links folder.
  """
  links = tmp_path / "links"
  links.mkdir()
  for whl in setuptools_links.iterdir():
    os.link(whl, links / whl.name)
  sha = patchutil.make_sdist(links / "jax-9.9.9.tar.gz")
  project = patchutil.make_project(
      tmp_path / "project", sha,
      patches={"0001-config-add-option.patch": _config_patch()},
      overlay={"experimental/ours.py": "OURS = 1\n"})
  env = dict(os.environ, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(links),
             JAX_FORK_CACHE=str(tmp_path / "cache"))
  env.pop("JAX_FORK_UPSTREAM", None)

  def fork(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(root / "build" / "fork.py"),
         "--root", str(project), *args],
        env=env, capture_output=True, text=True)

  return dict(project=project, links=links, cache=tmp_path / "cache",
              sha=sha, fork=fork, tmp=tmp_path)


def test_fetch_verifies_and_caches(synthetic):
  proc = synthetic["fork"]("fetch", "9.9.9")
  assert proc.returncode == 0, proc.stderr
  cached = synthetic["cache"] / "sdists" / "jax-9.9.9.tar.gz"
  assert proc.stdout.strip() == str(cached)
  assert "sha256 ok" in proc.stderr
  # A second fetch uses the cache, and checks it again.
  proc = synthetic["fork"]("fetch", "9.9.9")
  assert proc.returncode == 0 and "cached at" in proc.stderr


def test_tampered_download_is_refused(synthetic):
  sdist = synthetic["links"] / "jax-9.9.9.tar.gz"
  files = dict(patchutil.SDIST_FILES)
  files["jax/__init__.py"] += "import os; os.system('echo pwned')\n"
  actual = patchutil.make_sdist(sdist, files)
  proc = synthetic["fork"]("fetch", "9.9.9")
  assert proc.returncode == 2
  assert "sha256 mismatch" in proc.stderr
  assert "jax-9.9.9.tar.gz" in proc.stderr
  assert f"expected {synthetic['sha']}" in proc.stderr
  assert f"actual   {actual}" in proc.stderr
  assert not (synthetic["cache"] / "sdists" / "jax-9.9.9.tar.gz").exists()
  # And nothing gets built from it.
  out = synthetic["tmp"] / "tree"
  proc = synthetic["fork"]("apply", "9.9.9", "--out", str(out))
  assert proc.returncode == 2 and not out.exists()


def test_tampered_cache_is_refused(synthetic):
  assert synthetic["fork"]("fetch", "9.9.9").returncode == 0
  cached = synthetic["cache"] / "sdists" / "jax-9.9.9.tar.gz"
  cached.write_bytes(cached.read_bytes() + b"\0")
  proc = synthetic["fork"]("fetch", "9.9.9")
  assert proc.returncode == 2
  assert "sha256 mismatch" in proc.stderr and "cached copy" in proc.stderr


def test_apply_lays_overlay_patches_and_stamps(synthetic):
  out = synthetic["tmp"] / "tree"
  proc = synthetic["fork"]("apply", "9.9.9", "--out", str(out))
  assert proc.returncode == 0, proc.stderr
  assert (out / "jax" / "experimental" / "ours.py").read_text() == "OURS = 1\n"
  assert "slow_vmap = False\n" in (out / "jax/_src/config.py").read_text()
  assert "_release_version: str = '9.9.9+calltf.3'" in (
      out / "jax/version.py").read_text()
  assert "0001-config-add-option.patch: ok" in proc.stderr
  # The output exists now; a second apply refuses to overwrite it...
  proc = synthetic["fork"]("apply", "9.9.9", "--out", str(out))
  assert proc.returncode == 2 and "already exists" in proc.stderr
  # ...unless asked to.
  proc = synthetic["fork"]("apply", "9.9.9", "--out", str(out), "--force")
  assert proc.returncode == 0, proc.stderr


def test_patch_that_does_not_apply_leaves_nothing(synthetic):
  project = synthetic["project"]
  (project / "patches" / "0001-config-add-option.patch").write_text(
      _config_patch(old_line="line 20 as it was before upstream changed it\n"))
  out = synthetic["tmp"] / "out" / "tree"
  proc = synthetic["fork"]("apply", "9.9.9", "--out", str(out))
  assert proc.returncode == 2
  assert "0001-config-add-option.patch does not apply" in proc.stderr
  assert "jax/_src/config.py, hunk 1 of 1" in proc.stderr
  assert not out.exists()
  assert list((synthetic["tmp"] / "out").iterdir()) == []  # no partial dir


def test_overlay_may_not_replace_upstream_files(synthetic):
  overlay = synthetic["project"] / "jax" / "version.py"
  overlay.write_text("hijack = True\n")
  out = synthetic["tmp"] / "tree"
  proc = synthetic["fork"]("apply", "9.9.9", "--out", str(out))
  assert proc.returncode == 2
  assert "would replace upstream's jax/version.py" in proc.stderr
  assert not out.exists()


def test_unknown_release_is_a_clear_error(synthetic):
  proc = synthetic["fork"]("fetch", "1.2.3")
  assert proc.returncode == 2
  assert "'1.2.3' is not in" in proc.stderr and "9.9.9" in proc.stderr


def test_check_prints_a_table(synthetic):
  proc = synthetic["fork"]("check")
  assert proc.returncode == 0, proc.stderr
  header, row = proc.stdout.splitlines()[:2]
  assert header.split()[:4] == ["upstream", "fork", "version", "patches"]
  assert row.split()[:4] == ["9.9.9", "9.9.9+calltf.3", "1", "ok"]
  (synthetic["project"] / "patches" / "0001-config-add-option.patch"
  ).write_text(_config_patch(old_line="drifted\n"))
  proc = synthetic["fork"]("check")
  assert proc.returncode == 1
  assert "FAILS" in proc.stdout and "does not apply" in proc.stdout


def test_manifest_errors_say_what_is_wrong(synthetic):
  manifest = synthetic["project"] / "patches" / "upstream.toml"
  manifest.write_text(manifest.read_text().replace(synthetic["sha"], "abc"))
  proc = synthetic["fork"]("fetch", "9.9.9")
  assert proc.returncode == 2 and "not 64 lowercase hex digits" in proc.stderr


def test_a_test_package_without_an_exact_pin_is_refused(synthetic):
  manifest = synthetic["project"] / "patches" / "upstream.toml"
  manifest.write_text(manifest.read_text().replace(
      'test_tensorflow = "2.21.0"\n',
      'test_tensorflow = "2.21.0"\n'
      'test_packages = ["tensorflow-probability>=0.25"]\n'))
  proc = synthetic["fork"]("fetch", "9.9.9")
  assert proc.returncode == 2, proc.stdout + proc.stderr
  assert "test_packages must be a list of exact pins" in proc.stderr
  assert "tensorflow-probability>=0.25" in proc.stderr


def _add_release(synthetic, version: str, config: str) -> None:
  """Serves another synthetic release whose config.py is `config`."""
  files = {name: text.replace("9.9.9", version)
           for name, text in patchutil.SDIST_FILES.items()}
  files["jax/_src/config.py"] = config
  sha = patchutil.make_sdist(synthetic["links"] / f"jax-{version}.tar.gz",
                             files, version=version)
  manifest = synthetic["project"] / "patches" / "upstream.toml"
  manifest.write_text(manifest.read_text() + "\n" + patchutil.MANIFEST.format(
      version=version, sha=sha))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_an_offset_needs_no_variant(synthetic):
  _add_release(synthetic, "9.9.8", "new 1\nnew 2\n" + CONFIG)
  proc = synthetic["fork"]("check")
  assert proc.returncode == 0, proc.stdout + proc.stderr
  proc = synthetic["fork"]("rebase", "9.9.8", "--from", "9.9.9",
                           "--no-suites")
  assert proc.returncode == 0, proc.stderr
  assert "the queue applies to it exactly" in proc.stdout
  assert not (synthetic["project"] / "patches" / "variants").exists()


def test_rebase_writes_a_variant_where_the_context_changed(synthetic):
  _add_release(synthetic, "9.9.8", CONFIG.replace(
      "line 18\n", "line 18, changed upstream\n"))
  assert synthetic["fork"]("check").returncode == 1  # no fuzz
  proc = synthetic["fork"]("rebase", "9.9.8", "--from", "9.9.9",
                           "--no-suites")
  assert proc.returncode == 0, proc.stderr
  assert ("1 refreshed as variants in patches/variants/9.9.8/: "
          "0001-config-add-option.patch") in proc.stdout
  variant = (synthetic["project"] / "patches" / "variants" / "9.9.8" /
             "0001-config-add-option.patch")
  text = variant.read_text()
  assert " line 18, changed upstream\n" in text
  assert "Bug: https://github.com/jax-ml/jax/issues/11753" in text
  proc = synthetic["fork"]("check")
  assert proc.returncode == 0, proc.stdout + proc.stderr
  out = synthetic["tmp"] / "tree"
  assert synthetic["fork"]("apply", "9.9.8", "--out", str(out)).returncode == 0
  assert "changed upstream" in (out / "jax/_src/config.py").read_text()
  assert "slow_vmap = False\n" in (out / "jax/_src/config.py").read_text()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_rebase_stops_at_a_conflict_and_changes_nothing(synthetic):
  _add_release(synthetic, "9.9.8", CONFIG.replace("line 21\n", "line 21 was "
                                                  "rewritten upstream\n"))
  before = sorted(p.name for p in (synthetic["project"] / "patches").rglob("*"))
  proc = synthetic["fork"]("rebase", "9.9.8", "--from", "9.9.9",
                           "--no-suites")
  assert proc.returncode == 2
  assert ("patch 0001-config-add-option.patch conflicts with jax 9.9.8"
          in proc.stderr)
  # Each file and each hunk to resolve, by name.
  assert "  jax/_src/config.py: conflict markers at lines " in proc.stderr
  assert ("    hunk 1 of 1 (@@ -18,6 +18,7 @@): its lines are not in jax "
          "9.9.8's file") in proc.stderr
  assert "<<<<<<<" in proc.stderr and "line 21 was rewritten" in proc.stderr
  assert "git rebase --continue" in proc.stderr
  after = sorted(p.name for p in (synthetic["project"] / "patches").rglob("*"))
  assert after == before
  # The work repository is kept in the cache, and nothing else is left.
  rebase_dir = synthetic["cache"] / "rebase"
  assert sorted(p.name for p in rebase_dir.iterdir()) == [
      "jax-9.9.8-from-9.9.9"]
  repo = rebase_dir / "jax-9.9.8-from-9.9.9" / "repo"
  assert f"--resume {repo}" in proc.stderr
  # A second run refuses to start over it.
  again = synthetic["fork"]("rebase", "9.9.8", "--from", "9.9.9",
                            "--no-suites")
  assert again.returncode == 2 and "--resume" in again.stderr

  # The maintainer resolves it, and --resume writes the variant.
  config = repo / "jax" / "_src" / "config.py"
  text = config.read_text()
  resolved = re.sub(r"<<<<<<< [^\n]*\n.*?>>>>>>> [^\n]*\n",
                    "slow_vmap = False\nline 21 was rewritten upstream\n",
                    text, flags=re.DOTALL)
  assert resolved != text
  config.write_text(resolved)
  env = dict(os.environ, GIT_EDITOR="true")
  subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
  subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t",
                  "rebase", "--continue"], cwd=repo, check=True, env=env,
                 capture_output=True)
  proc = synthetic["fork"]("rebase", "9.9.8", "--resume", str(repo),
                           "--no-suites")
  assert proc.returncode == 0, proc.stdout + proc.stderr
  variant = (synthetic["project"] / "patches" / "variants" / "9.9.8" /
             "0001-config-add-option.patch")
  assert "+slow_vmap = False" in variant.read_text()
  assert "check: ok" in proc.stdout
