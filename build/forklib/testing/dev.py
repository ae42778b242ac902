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
"""`dev`: the maintainer's inner loop, an editable patched tree in a venv.

`python3 build/fork.py dev` makes, in the cache:

* `dev/jax-<release>`: upstream's sdist with the patch queue applied and
  the version stamped, as `apply` makes it, except that the overlay is
  *linked*, not copied: each directory the overlay adds (`call_tf_lib/`) is
  a symbolic link to the repository's. An edit to an overlay module is the
  code that runs, with nothing rebuilt.
* `dev/venv-jax<release>`: a venv of the release's Python with the pinned
  jaxlib, tensorflow-cpu, the test tools and the release's
  `test_packages`, and the tree installed editable (`pip install -e`), so
  `import jax` is the tree.

Run again after editing a patch (or pulling): the tree is rebuilt from the
sdist in a few seconds and swapped in whole; the venv is reused (the
editable install is redone only when the fork's version changes). The
tree is the tool's: it carries a marker file, and a directory without it
is refused, not replaced.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import time

from forklib import ForkError
from forklib import log
from forklib import project as project_lib
from forklib import scratch
from forklib.manifest import Release
from forklib.project import Project
from forklib.project import cache_root
from forklib.sources import fetch
from forklib.sources import patchq
from forklib.sources import tree as tree_lib
from forklib.testing import envs

_TREE_MARKER = ".fork-dev-tree"
_INSTALLED_MARKER = ".fork-dev-installed"


@dataclasses.dataclass(frozen=True)
class DevEnv:
  """Where `dev` put things."""
  tree: pathlib.Path
  venv: pathlib.Path
  seconds: float


def overlay_links(project: Project, tree: pathlib.Path) -> dict[str, str]:
  """Which paths of `tree` link to which overlay paths.

  The highest directory of each overlay file that upstream's tree lacks
  is linked whole (so a new module in it needs no new link); a new file in
  a directory upstream has is linked alone.

  Args:
    project: the repository (its overlay, `jax/`).
    tree: a patched tree without the overlay.

  Returns:
    Tree-relative paths (`jax/...`) to the overlay paths they link to,
    relative to the repository's `jax/`.
  """
  links: dict[str, str] = {}
  for rel in project.overlay_files():
    parts = rel.parts
    for depth in range(1, len(parts) + 1):
      candidate = pathlib.PurePosixPath("jax", *parts[:depth])
      if not (tree / candidate).exists():
        links.setdefault(candidate.as_posix(),
                         pathlib.PurePosixPath(*parts[:depth]).as_posix())
        break
    else:
      raise ForkError(
          f"overlay file jax/{rel.as_posix()} would replace upstream's; the "
          "overlay only adds new modules")
  return links


def build_tree(project: Project, release: Release,
               out: pathlib.Path) -> pathlib.Path:
  """The patched tree of `release` at `out`, its overlay linked, atomically.

  Raises:
    ForkError: a patch does not apply, or `out` is not a tree `dev` made;
      `out` is then as it was.
  """
  out = out.resolve()
  project_lib.refuse_unless_ours(
      out, (_TREE_MARKER,), maker="`dev`",
      advice="Move it away, or pass another release.")
  queue = patchq.load_queue(project.patches, release.version)
  sdist = fetch.fetch(release)
  out.parent.mkdir(parents=True, exist_ok=True)
  with scratch.directory(out.parent, "dev-tree") as tmp:
    tree = tree_lib.unpack(sdist, tmp / "unpacked")
    for patch in queue:
      patchq.apply(patch, tree)
    tree_lib.stamp_version(tree, release)
    links = overlay_links(project, tree)
    for rel, target in sorted(links.items()):
      (tree / rel).parent.mkdir(parents=True, exist_ok=True)
      os.symlink(project.overlay.resolve() / target, tree / rel)
    (tree / _TREE_MARKER).write_text(release.label + "\n")
    if out.exists():
      os.rename(out, tmp / "replaced")
    os.rename(tree, out)
  log.step("dev", f"patched tree of jax {release.label} at {out} ("
           f"{len(queue)} patches; linked: "
           + ", ".join(sorted(links)) + ")")
  return out


def _install_editable(venv: pathlib.Path, tree: pathlib.Path,
                      release: Release) -> None:
  marker = venv / _INSTALLED_MARKER
  wanted = f"{release.label}\n{tree}\ncompat\n"
  if marker.is_file() and marker.read_text() == wanted:
    return
  log.step("dev", f"installing {tree} editable into {venv}")
  # "compat": a .pth entry of the tree, not an import hook: a path entry is
  # searched with sys.path, so the tree's `jax` package wins over the
  # repository's overlay folder `jax/` (a namespace portion without
  # __init__.py) when pytest runs from the repository.
  envs.pip(venv, "install", "--quiet", "--no-deps",
           "--ignore-requires-python", "--config-settings",
           "editable_mode=compat", "-e", str(tree))
  marker.write_text(wanted)


def dev(project: Project, release: Release,
        venv: pathlib.Path | None = None) -> DevEnv:
  """Makes (or refreshes) the editable patched tree and its venv.

  Args:
    project: the repository.
    release: the upstream release to work on.
    venv: the venv to use (default: in the cache). One `dev` did not make
      is refused.

  Returns:
    Where the tree and the venv are, and how long this took.
  """
  start = time.monotonic()
  root = cache_root() / "dev"
  tree = build_tree(project, release, root / f"jax-{release.version}")
  venv = (venv or root / f"venv-jax{release.version}").absolute()
  requirements = [*envs.base_requirements(release),
                  *envs.test_requirements(project)]
  envs.make_venv(venv, release, envs.env_key(
      release, requirements + list(release.test_packages)), requirements,
                 no_deps=release.test_packages, in_cache=False)
  _install_editable(venv, tree, release)
  return DevEnv(tree=tree, venv=venv, seconds=time.monotonic() - start)


def instructions(project: Project, release: Release, env: DevEnv,
                 default: bool) -> str:
  """What to run next, for the command's output."""
  python = envs.venv_python(env.venv)
  prefix = "" if default else f"JAX_FORK_UPSTREAM={release.version} "
  return (
      f"jax {release.label}, editable, in {env.venv} ({env.seconds:.1f} s).\n"
      f"The overlay is linked: edit jax/... in {project.root} and rerun.\n"
      f"After editing a patch: python3 build/fork.py dev"
      + ("" if default else f" --upstream {release.version}") + "\n\n"
      f"  cd {project.root}\n"
      f"  {prefix}{python} -m pytest tests/calltf/test_smoke.py -q\n\n"
      f"Activate it with: source {env.venv}/bin/activate\n"
      "(Tests of the built wheel and its metadata, "
      "tests/calltf/test_installed_fork.py, the version-range tests of "
      "tests/calltf/test_tf_modes.py and the tool's wheel tests, run with "
      "`python3 build/fork.py test`.)")
