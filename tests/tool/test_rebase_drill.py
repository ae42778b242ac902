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
"""The maintainer's drill: `rebase` between real upstream releases.

On a clean clone of this repository, with upstream's real sdists (fetched
with pip) and upstream's tests by tag (`--upstream-tests`):

* `rebase 0.12.0 --from 0.12.0.1`: 0.12.0 is not in the manifest; the
  rebase adds its entry (the sdist's sha256, the jaxlib range the sdist
  states, a test_jaxlib in it, checked by installing stock jax 0.12.0 with
  its pins and running stock call_tf) and its jaxlib pins;
* `rebase 0.12.0.1 --from 0.11.2`: both are listed; the queue's test-file
  hunks (patches 0007 and 0009 edit `call_tf_test.py`, which no sdist
  holds) come from upstream's tests.

Each must exit 0 and leave `check` green for the new release, and leave
nothing in the temporary directory: $TMPDIR is a directory of the test's
own, empty before and after, and /tmp gains no `fork-*` entry.

What is left out here, for CI's time: `--no-suites`, so the release's smoke
suite and upstream's suites do not run (the rebase runs them without it;
`test --upstream 0.12.0.1` runs them for the listed release). The cache is
the test's own, but for its venvs, which are the test run's: the 0.12.0
check-by-installing makes that release's test venv once per machine (about
four minutes on a loaded 2-core machine, from pip's cache), and reuses it
after (the whole test then takes about a minute and a half).
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

from forklib import manifest as manifest_lib
from forklib.project import cache_root
from forklib.project import sha256_of
from forklib.sources import jaxlib_mirror

pytestmark = [pytest.mark.network,
              pytest.mark.skipif(shutil.which("git") is None,
                                 reason="needs git")]


def _tests_dir(root: pathlib.Path) -> pathlib.Path:
  given = os.environ.get("JAX_FORK_UPSTREAM_TESTS")
  path = pathlib.Path(given) if given else (root.parent / "shared" /
                                            "upstream-tests")
  if not path.is_dir():
    pytest.skip("needs upstream's tests by tag (`test --upstream-tests DIR`"
                " or ../shared/upstream-tests)")
  return path


@pytest.fixture(scope="module")
def drill(root, tmp_path_factory):
  """A clean clone, a cache and a $TMPDIR of its own, and `fork.py` in it."""
  if not (root / ".git").exists():
    pytest.skip("needs the repository's git history to clone")
  base = tmp_path_factory.mktemp("drill")
  clone = base / "clone"
  subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(root),
                  str(clone)], check=True)
  cache = base / "cache"
  (cache / "sdists").mkdir(parents=True)
  (cache_root() / "venvs").mkdir(parents=True, exist_ok=True)
  (cache / "venvs").symlink_to(cache_root() / "venvs")
  for version in ("0.11.2", "0.12.0.1"):  # verified again on use
    seeded = cache_root() / "sdists" / f"jax-{version}.tar.gz"
    if seeded.exists():
      shutil.copyfile(seeded, cache / "sdists" / seeded.name)
  tmpdir = base / "tmp"
  tmpdir.mkdir()
  env = dict(os.environ, JAX_FORK_CACHE=str(cache), TMPDIR=str(tmpdir))
  env.pop("JAX_FORK_UPSTREAM", None)
  tests_dir = _tests_dir(root)

  def fork(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(root / "build" / "fork.py"), "--root",
         str(clone), *args], env=env, capture_output=True, text=True)

  return dict(clone=clone, cache=cache, tmpdir=tmpdir, fork=fork,
              tests_dir=tests_dir)


def _tmp_fork_entries() -> set[str]:
  return {p.name for p in pathlib.Path("/tmp").glob("fork-*")}


def _no_leftovers(drill, before: set[str]) -> None:
  assert list(drill["tmpdir"].iterdir()) == []
  assert _tmp_fork_entries() <= before
  rebase_dir = drill["cache"] / "rebase"
  assert not rebase_dir.exists() or list(rebase_dir.iterdir()) == []


def _sdist_member(sdist: pathlib.Path, version: str, name: str) -> str:
  with tarfile.open(sdist) as tar:
    return tar.extractfile(f"jax-{version}/{name}").read().decode()


def test_rebase_onto_a_release_the_manifest_lacks(drill):
  manifest_path = drill["clone"] / "patches" / "upstream.toml"
  assert "0.12.0" not in {r.version for r in
                          manifest_lib.load(manifest_path).releases}
  before = _tmp_fork_entries()
  proc = drill["fork"]("rebase", "0.12.0", "--from", "0.12.0.1",
                       "--upstream-tests", str(drill["tests_dir"]),
                       "--no-suites")
  assert proc.returncode == 0, proc.stdout + proc.stderr[-6000:]
  assert "check: ok" in proc.stdout
  _no_leftovers(drill, before)

  release = manifest_lib.load(manifest_path).get("0.12.0")
  sdist = drill["cache"] / "sdists" / "jax-0.12.0.tar.gz"
  assert release.sdist_sha256 == sha256_of(sdist)
  assert re.search(r"^Version: 0\.12\.0$",
                   _sdist_member(sdist, "0.12.0", "PKG-INFO"), re.MULTILINE)
  minimum = re.search(r"^_minimum_jaxlib_version = '([^']+)'",
                      _sdist_member(sdist, "0.12.0", "jax/version.py"),
                      re.MULTILINE).group(1)
  assert release.jaxlib == f">={minimum},<=0.12.0"
  assert release.fork_release == 1
  assert "stock call_tf: ok" in proc.stderr  # checked by installing
  pins = jaxlib_mirror.load_pins(drill["clone"] / "jaxlib_build" /
                                 "pins.toml")
  assert jaxlib_mirror.missing_platforms(pins[release.test_jaxlib],
                                         release.python) == []

  proc = drill["fork"]("check", "0.12.0")
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert re.search(r"^0\.12\.0 +0\.12\.0\+calltf\.1 +\d+ +ok", proc.stdout,
                   re.MULTILINE), proc.stdout


def test_rebase_between_listed_releases_with_test_file_hunks(drill):
  manifest_path = drill["clone"] / "patches" / "upstream.toml"
  manifest_before = manifest_path.read_text()
  before = _tmp_fork_entries()
  proc = drill["fork"]("rebase", "0.12.0.1", "--from", "0.11.2",
                       "--upstream-tests", str(drill["tests_dir"]),
                       "--no-suites")
  assert proc.returncode == 0, proc.stdout + proc.stderr[-6000:]
  # The queue edits upstream's tests: they came from the test sets.
  assert "upstream's tests for jax 0.11.2: jax-v" in proc.stdout
  assert "check: ok" in proc.stdout
  _no_leftovers(drill, before)
  assert manifest_path.read_text() == manifest_before
  proc = drill["fork"]("check", "0.12.0.1")
  assert proc.returncode == 0, proc.stdout + proc.stderr
