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
"""Uploading the fork to an index server the team runs, with twine.

pypiserver, devpi, Artifactory, cloud artifact registries: every one accepts
`twine upload`. `publish` uploads the fork's wheels, built here from the
verified sdist and patches, and the jaxlib wheels verified against
`jaxlib_build/pins.toml`; nothing else, and nothing whose hash it did not
verify itself. Before uploading it reads what the server already holds (its
simple index, with the same credentials twine uses): a file there with the
same sha256 is skipped; one with a different sha256 stops everything before
any upload, naming the file. After uploading it reads the server again and
checks that every file there has the verified hash.

twine comes from the running interpreter if it has the pinned version, else
from a virtual environment in the cache that `publish` makes with pip.
"""

from __future__ import annotations

import importlib.metadata
import json
import pathlib
import re
import shutil
import subprocess
import sys

from forklib import ForkError
from forklib import log
from forklib import scratch
from forklib.manifest import Release
from forklib.project import Project
from forklib.project import cache_root
from forklib.project import verify
from forklib.publishing import index as index_lib
from forklib.publishing import publication
from forklib.testing import envs

TWINE_VERSION = "7.0.0"
_PROBE = pathlib.Path(__file__).with_name("twine_probe.py")
_CREDENTIALS_HELP = (
    "twine takes credentials from TWINE_USERNAME and TWINE_PASSWORD, from "
    "keyring, or from a .pypirc section given with --repository NAME.")


def twine_python() -> str:
  """An interpreter with twine==TWINE_VERSION: this one, or a cached venv."""
  try:
    if importlib.metadata.version("twine") == TWINE_VERSION:
      return sys.executable
  except importlib.metadata.PackageNotFoundError:
    pass
  return str(envs.venv_python(envs.tool_venv(f"twine=={TWINE_VERSION}")))


def _probe(python: str, twine_args: list[str], simple_url: str | None,
           names: list[str], projects: tuple[str, ...] = ()) -> dict:
  files: dict[str, list[str]] = {p: [] for p in projects}
  for name in names:
    files.setdefault(index_lib.project_of(name), []).append(name)
  proc = subprocess.run(
      [python, str(_PROBE)], capture_output=True, text=True,
      input=json.dumps({"twine_args": twine_args, "simple_url": simple_url,
                        "files": files}))
  try:
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
  except (ValueError, IndexError):
    raise ForkError(f"reading the server's index failed (exit "
                    f"{proc.returncode}):\n{proc.stdout[-2000:]}"
                    f"{proc.stderr[-2000:]}")
  if "error" in answer:
    raise ForkError(
        f"could not read what the server holds: {answer['error']}. Check "
        "--repository-url (or --repository) and --simple-url (devpi: "
        "<server>/<user>/<index>/+simple/), and that the credentials may "
        f"read the index. {_CREDENTIALS_HELP}")
  return answer


def _verified_files(project: Project, releases: list[Release],
                    jaxlib: bool, given: dict[Release, pathlib.Path] | None
                    ) -> list[publication.File]:
  """Every file to publish, verified, jaxlib first, each once."""
  files = publication.collect(project, releases, jaxlib=jaxlib, given=given)
  jaxlibs = {f.path.name: f for r in files for f in r.jaxlib}
  return [*jaxlibs.values(), *(r.fork_wheel for r in files)]


def _check_jaxlib_on_server(project: Project, releases: list[Release],
                            server: str, held: list[str]) -> None:
  """Refuses `--no-jaxlib` where uv could then not resolve a release.

  uv takes a package only from the first index that has it: on a server
  that serves jaxlib, a release whose pinned jaxlib wheels are not there
  cannot resolve with uv. (A server without jaxlib leaves it to the public
  index, as `--no-jaxlib` means.)
  """
  if not held:
    return
  for release in releases:
    try:
      wanted = [p.name for p in publication.jaxlib_pins(project, release)]
    except ForkError:
      wanted = [f"jaxlib {release.test_jaxlib} (not pinned)"]
    missing = [n for n in wanted if n not in held]
    if missing:
      raise ForkError(
          f"{server} serves jaxlib, but not the jaxlib of jax "
          f"{release.label} ({', '.join(missing[:3])}"
          f"{', ...' if len(missing) > 3 else ''}); uv takes a package "
          "only from the first index that has it, so with --no-jaxlib uv "
          f"could not resolve jax {release.label} from this server. Nothing "
          "was uploaded. Publish it with its jaxlib (leave out "
          "--no-jaxlib).")


def publish(project: Project, releases: list[Release], *,
            repository_url: str | None = None,
            repository: str | None = None,
            simple_url: str | None = None,
            config_file: str | None = None,
            jaxlib: bool = True,
            given: dict[Release, pathlib.Path] | None = None) -> list[str]:
  """Uploads the fork's wheels of `releases` (and their jaxlib) with twine.

  Args:
    project: the repository.
    releases: the releases whose wheels to publish.
    repository_url: the server's upload URL (twine --repository-url).
    repository: a .pypirc section instead (twine --repository).
    simple_url: the server's simple index (default: <repository>/simple/,
      else <repository>/+simple/ as devpi has it, whichever answers).
    config_file: the .pypirc to read (twine's default when None).
    jaxlib: also publish the pinned jaxlib wheels.
    given: fork wheels built already, by release (`publish --wheel`), checked
      as `index --wheel` checks them; the others are built.

  Returns:
    The names of the files uploaded (files already there are skipped).

  Raises:
    ForkError: the server holds a different file under a name to publish
      (nothing is uploaded then), an upload failed, or the server does not
      hold the verified hash afterwards.
  """
  twine_args = _twine_args(repository_url, repository, config_file)
  python = twine_python()
  files = _verified_files(project, releases, jaxlib, given)
  uploaded = []
  with scratch.directory(cache_root() / "publish", "publish") as staging:
    staged = _staged(files, staging)
    names = [p.name for p, _ in staged]
    state = _probe(python, twine_args, simple_url, names,
                   projects=("jaxlib",))
    server = state["repository"]
    if not jaxlib:
      _check_jaxlib_on_server(project, releases, server,
                              state.get("listed", {}).get("jaxlib", []))
    _refuse_conflicts(server, staged, state["found"])
    for path, _ in staged:
      if path.name in state["found"]:
        log.step("publish", f"{path.name}: already on {server}, same sha256")
        continue
      _upload(python, twine_args, server, path)
      uploaded.append(path.name)
    _check_served(server, staged,
                  _probe(python, twine_args, simple_url, names)["found"])
  log.step("publish", f"{server}: {len(uploaded)} uploaded, "
           f"{len(staged) - len(uploaded)} already there; all verified")
  return uploaded


def _twine_args(repository_url: str | None, repository: str | None,
                config_file: str | None) -> list[str]:
  """Where twine uploads: the options `publish` was given, as twine's."""
  twine_args = (["--repository-url", repository_url] if repository_url
                else ["--repository", repository or "pypi"])
  if config_file:
    twine_args += ["--config-file", config_file]
  return twine_args


def _staged(files: list[publication.File],
            staging: pathlib.Path) -> list[tuple[pathlib.Path, str]]:
  """Copies of `files` in `staging`, each verified: (copy, sha256)."""
  staged = []
  for f in files:
    copy = staging / f.path.name
    shutil.copyfile(f.path, copy)
    verify(copy, f.sha256, origin=f"a copy of {f.path}",
           pin=f.origin or "the given wheel, hashed before copying")
    staged.append((copy, f.sha256))
  return staged


def _refuse_conflicts(server: str, staged: list[tuple[pathlib.Path, str]],
                      found: dict[str, str]) -> None:
  """Raises a ForkError if `server` holds other bytes under a staged name."""
  conflicts = [(p.name, sha, found[p.name]) for p, sha in staged
               if p.name in found and found[p.name] != sha]
  if conflicts:
    raise ForkError(
        f"{server} already holds a different file under a name to publish; "
        "nothing was uploaded:\n" + "\n".join(
            f"  {name}: the server has sha256 {theirs}, the verified file "
            f"has {ours}" for name, ours, theirs in conflicts)
        + "\nPublished files are immutable. Find out where the server's "
        "file came from; if it must go, remove it on the server, or bump "
        "fork_release in patches/upstream.toml for a new fork build.")


def _upload(python: str, twine_args: list[str], server: str,
            path: pathlib.Path) -> None:
  """Uploads `path` with `twine upload`; raises a ForkError if it fails."""
  log.step("publish", f"{path.name}: uploading to {server}")
  cmd = [python, "-m", "twine", "upload", "--disable-progress-bar",
         *twine_args, str(path)]
  if not sys.stdin.isatty():
    cmd.append("--non-interactive")
  proc = subprocess.run(cmd, capture_output=True, text=True)
  if proc.returncode != 0:
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    raise ForkError(
        f"twine upload of {path.name} to {server} failed (exit "
        f"{proc.returncode}):\n{output[-3000:].strip()}\n"
        f"{_CREDENTIALS_HELP} Files uploaded before it stay; run again "
        "to continue (they are skipped).")


def _check_served(server: str, staged: list[tuple[pathlib.Path, str]],
                  after: dict[str, str]) -> None:
  """Raises a ForkError unless `server` now serves each staged file's
  verified sha256 (`after`: what it serves)."""
  wrong = [f"{p.name}: {after.get(p.name) or 'not listed'} (verified "
           f"{sha})" for p, sha in staged if after.get(p.name) != sha]
  if wrong:
    raise ForkError(f"after the upload, {server} does not serve the "
                    "verified files:\n  " + "\n  ".join(wrong)
                    + "\nCheck --simple-url; if it is right, the server "
                    "changed the files: do not install from it.")
