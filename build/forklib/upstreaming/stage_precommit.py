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
"""Upstream's pre-commit checks, at the versions upstream pins.

The base's `.pre-commit-config.yaml` pins each hook by commit, with the
release in a `# frozen: vX.Y.Z` comment (as `pre-commit autoupdate
--freeze` writes it). `pinned` reads the releases of ruff's and Pyrefly's
hooks and Pyrefly's `additional_dependencies`; `ruff_executable` and
`pyrefly_venv` install those releases into cached venvs of their own.

ruff runs per file (`stage_checks.ruff_commit`). Pyrefly's hook runs on
the whole project (`pass_filenames: false`, its `[tool.pyrefly]`
configuration), so `pyrefly_commit` checks the tree of the commit and of
its parent and reports the errors the commit adds: an error is matched by
file, kind and message, not line, so that moved code is not new.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from forklib import ForkError
from forklib import log
from forklib.testing import envs
from forklib.upstreaming import gitcmd

CONFIG = ".pre-commit-config.yaml"
_REPO_RE = re.compile(r"^\s*-\s*repo:\s*(?P<url>\S+)\s*$")
_FROZEN_RE = re.compile(r"^\s*rev:\s*\S+\s*#\s*frozen:\s*v?(?P<v>[\w.]+)")
_REV_RE = re.compile(r"^\s*rev:\s*v?(?P<v>\d[\w.]*)\s*$")
_DEPS_RE = re.compile(r"^(?P<indent>\s*)additional_dependencies:\s*$")
_ITEM_RE = re.compile(r"^(?P<indent>\s*)-\s*(?P<item>\S.*?)\s*$")


@dataclasses.dataclass(frozen=True, slots=True)
class Hooks:
  """The releases of upstream's ruff and Pyrefly hooks (None: not pinned)."""
  ruff: str | None = None
  pyrefly: str | None = None
  # Pyrefly's additional_dependencies that are packages (not pip options,
  # nor jaxlib from JAX's nightly index, which cannot be reached here).
  pyrefly_deps: tuple[str, ...] = ()
  # What of the hooks' dependencies is not installed, said in the report.
  left_out: tuple[str, ...] = ()


def pinned(repo: pathlib.Path) -> Hooks:
  """The releases of ruff and Pyrefly the base's pre-commit config pins."""
  path = repo / CONFIG
  if not path.is_file():
    return Hooks()
  versions: dict[str, str] = {}
  deps: dict[str, list[str]] = collections.defaultdict(list)
  hook = None
  lines = path.read_text(encoding="utf-8").splitlines()
  i = 0
  while i < len(lines):
    line = lines[i]
    m = _REPO_RE.match(line)
    if m:
      url = m.group("url")
      hook = ("ruff" if "ruff-pre-commit" in url else
              "pyrefly" if "pyrefly" in url else None)
    elif hook:
      m = _FROZEN_RE.match(line) or _REV_RE.match(line)
      if m and hook not in versions:
        versions[hook] = m.group("v")
      m = _DEPS_RE.match(line)
      if m:
        while i + 1 < len(lines):
          item = _ITEM_RE.match(lines[i + 1])
          if not item or len(item.group("indent")) <= len(m.group("indent")) - 2:
            break
          deps[hook].append(item.group("item"))
          i += 1
    i += 1
  kept, left_out = [], []
  skip_next = False
  for d in deps.get("pyrefly", []):
    if skip_next:
      skip_next = False
      continue
    if d.startswith("-"):
      skip_next = d in ("--extra-index-url", "--index-url", "-i")
      continue
    if d == "jaxlib":
      left_out.append("jaxlib (Pyrefly's, from JAX's nightly index)")
      continue
    kept.append(d)
  return Hooks(versions.get("ruff"), versions.get("pyrefly"), tuple(kept),
               tuple(left_out))


def _venv(name: str, requirements: list[str]) -> pathlib.Path:
  key = "\n".join(requirements)
  venv = (envs.cache_root() / "venvs" /
          f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}")
  marker = venv / ".stage-hook"
  if marker.is_file() and marker.read_text() == key:
    return venv
  if venv.exists():
    shutil.rmtree(venv)
  log.step("stage", f"installing {', '.join(requirements)} into {venv} "
           "(upstream's pre-commit pins)")
  subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
  envs.pip(venv, "install", "--quiet", *requirements)
  marker.write_text(key)
  return venv


def ruff_executable(hooks: Hooks) -> str:
  """ruff at the release the base pins, else the tool's own pin."""
  if hooks.ruff is None:
    return envs.ruff()
  return str(_venv("ruff", [f"ruff=={hooks.ruff}"]) / "bin" / "ruff")


def pyrefly_venv(hooks: Hooks) -> pathlib.Path | None:
  """A venv with Pyrefly at the pinned release and its dependencies."""
  if hooks.pyrefly is None:
    return None
  return _venv("pyrefly", [f"pyrefly=={hooks.pyrefly}", *hooks.pyrefly_deps])


def _export(repo: pathlib.Path, commit: str, dest: pathlib.Path) -> None:
  archive = dest.with_suffix(".tar")
  gitcmd.git(repo, "archive", "--format=tar", "-o", str(archive), commit,
             command="stage")
  dest.mkdir(parents=True)
  subprocess.run(["tar", "-xf", str(archive), "-C", str(dest)], check=True)
  archive.unlink()


def pyrefly_errors(venv: pathlib.Path, repo: pathlib.Path, commit: str
                   ) -> list[dict[str, object]]:
  """Pyrefly's errors on the tree of `commit`, as upstream's hook runs it."""
  with tempfile.TemporaryDirectory(prefix="stage-pyrefly-") as tmp:
    tree = pathlib.Path(tmp) / "tree"
    _export(repo, commit, tree)
    proc = subprocess.run(
        [str(venv / "bin" / "pyrefly"), "check", "--output-format=json",
         "--python-interpreter-path", str(venv / "bin" / "python")],
        cwd=tree, capture_output=True, text=True, check=False)
  if proc.returncode not in (0, 1):
    raise ForkError(f"pyrefly failed at {commit[:12]} (exit "
                    f"{proc.returncode}): {proc.stderr.strip()[-2000:]}")
  try:
    errors = json.loads(proc.stdout or "{}").get("errors", [])
  except json.JSONDecodeError as e:
    raise ForkError(f"pyrefly's output at {commit[:12]} is not JSON ({e}): "
                    f"{proc.stdout[:500]}")
  return [{"file": e["path"], "line": e["line"], "code": e["name"],
           "message": e["description"]}
          for e in errors if e.get("severity", "error") == "error"]


def new_errors(before: list[dict[str, object]],
               after: list[dict[str, object]]) -> list[dict[str, object]]:
  """The errors of `after` that `before` does not have (by file, kind and
  message: as many of each as `before` has are not new)."""
  known = collections.Counter((e["file"], e["code"], e["message"])
                              for e in before)
  new = []
  for e in after:
    key = (e["file"], e["code"], e["message"])
    if known[key]:
      known[key] -= 1
    else:
      new.append(e)
  return new
