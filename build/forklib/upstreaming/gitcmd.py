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
"""Running git for the commands that need it (`stage`, `rebase`)."""

from __future__ import annotations

import os
import pathlib
import subprocess

from forklib import ForkError


def committer() -> dict[str, str]:
  """Who commits in the tool's work repositories (`stage`, `rebase`).

  The environment's GIT_COMMITTER_NAME and GIT_COMMITTER_EMAIL, else the
  fork's maintainers.
  """
  return {"GIT_COMMITTER_NAME": os.environ.get(
              "GIT_COMMITTER_NAME", "JAX call_tf fork maintainers"),
          "GIT_COMMITTER_EMAIL": os.environ.get(
              "GIT_COMMITTER_EMAIL", "calltf-fork@users.noreply.github.com")}


def git(cwd: pathlib.Path, *args: str, command: str, check: bool = True,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
  """Runs ``git args`` in ``cwd``.

  Args:
    cwd: the repository.
    *args: git's arguments.
    command: the fork command that needs git, for the error if it is missing.
    check: raise a ForkError, with git's output, if git fails.
    env: environment variables to set for git (identities and dates).

  Returns:
    The completed process, its output captured as text.
  """
  try:
    proc = subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=cwd,
                          env=dict(os.environ, **(env or {})),
                          capture_output=True, text=True)
  except FileNotFoundError:
    raise ForkError(f"`{command}` needs git, which is not installed")
  if check and proc.returncode != 0:
    raise ForkError(f"git {' '.join(args)} failed in {cwd}:\n"
                    f"{proc.stdout}{proc.stderr}")
  return proc
