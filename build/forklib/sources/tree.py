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
"""The patched tree: upstream sdist + overlay + patch queue + version stamp.

Every step works in a temporary directory beside the destination; the tree is
renamed into place only when it is whole, so a failure leaves nothing behind
(and a crash leaves a temporary directory that the next run removes: see
`forklib.scratch`).

Each tree carries a manifest, `.fork-tree.json`, with the sha256 of every file
and the list of directories as built. A cached tree is checked against it
before every use and rebuilt if anything changed. `apply --force` replaces
only a tree that is exactly as `apply` wrote it: one that holds anything else
(a `.git`, a new file, a new directory) or anything changed since (an edit, a
removed file) is refused, naming what differs, and left as it is. So nothing
of the user's is ever deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import shutil
import tarfile

from forklib import ForkError
from forklib import log
from forklib import scratch
from forklib.manifest import Release
from forklib.project import Project
from forklib.project import cache_root
from forklib.project import check_writable_dir
from forklib.project import sha256_of
from forklib.sources import fetch
from forklib.sources import patchq

TREE_MANIFEST = ".fork-tree.json"
_TREE_FORMAT = "jax-calltf-fork tree 1"

_RELEASE_VERSION_RE = re.compile(
    r"^_release_version: str = (?:'[^']*'|\"[^\"]*\"|None)$", re.MULTILINE)


def inputs_digest(project: Project, release: Release) -> str:
  """A digest of everything that determines the patched tree.

  The sdist, the patches, the overlay, the NOTICE, and the tool's own code
  (how it applies and stamps).
  """
  h = hashlib.sha256()
  h.update(f"{release.label}\0{release.sdist_sha256}\0".encode())
  tool = pathlib.Path(__file__).resolve().parents[1]  # build/forklib
  for tool_file in sorted(tool.rglob("*.py")):
    name = tool_file.relative_to(tool).as_posix()
    h.update(f"tool\0{name}\0".encode() + tool_file.read_bytes())
  for name in patchq.read_series(project.patches):
    path = patchq.resolve(project.patches, name, release.version)
    h.update(f"patch\0{name}\0".encode() + path.read_bytes())
  for rel in project.overlay_files():
    h.update(f"overlay\0{rel.as_posix()}\0".encode()
             + (project.overlay / rel).read_bytes())
  if project.notice.exists():
    h.update(b"notice\0" + project.notice.read_bytes())
  return h.hexdigest()


def unpack(sdist: pathlib.Path, dest: pathlib.Path) -> pathlib.Path:
  """Unpacks `sdist` into `dest`; returns its single top-level directory."""
  with tarfile.open(sdist) as tar:
    tar.extractall(dest, filter="data")
  entries = list(dest.iterdir())
  if len(entries) != 1 or not entries[0].is_dir():
    raise ForkError(f"{sdist} does not unpack to a single directory "
                    f"(found {', '.join(e.name for e in entries)})")
  return entries[0]


def _lay_overlay(project: Project, tree: pathlib.Path) -> list[str]:
  laid = []
  for rel in project.overlay_files():
    dest = tree / "jax" / rel
    if dest.exists():
      raise ForkError(
          f"overlay file jax/{rel.as_posix()} would replace upstream's "
          f"jax/{rel.as_posix()}. The overlay only adds new modules; change "
          "upstream files through a patch in patches/.")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(project.overlay / rel, dest)
    laid.append(f"jax/{rel.as_posix()}")
  return laid


def stamp_version(tree: pathlib.Path, release: Release) -> None:
  """Sets `_release_version` in jax/version.py to the fork's version."""
  version_py = tree / "jax" / "version.py"
  try:
    text = version_py.read_text(encoding="utf-8")
  except FileNotFoundError:
    raise ForkError(f"the upstream tree has no jax/version.py to stamp "
                    f"({version_py})")
  matches = _RELEASE_VERSION_RE.findall(text)
  if len(matches) != 1:
    raise ForkError(
        f"expected exactly one `_release_version: str = ...` line in "
        f"jax/version.py of jax {release.version}, found {len(matches)}; "
        "upstream changed how it stamps versions: update "
        "forklib/sources/tree.py:stamp_version.")
  text = _RELEASE_VERSION_RE.sub(
      f"_release_version: str = {release.label!r}", text)
  version_py.write_text(text, encoding="utf-8")


def _tree_files(tree: pathlib.Path) -> dict[str, str]:
  """Every file (and symlink) of `tree` but its manifest: path -> digest."""
  files = {}
  for dirpath, dirnames, filenames in os.walk(tree):
    base = pathlib.Path(dirpath)
    for name in [*filenames, *(d for d in dirnames
                               if (base / d).is_symlink())]:
      path = base / name
      rel = path.relative_to(tree).as_posix()
      if rel == TREE_MANIFEST:
        continue
      if path.is_symlink():
        files[rel] = "symlink:" + os.readlink(path)
      else:
        files[rel] = "sha256:" + sha256_of(path)
  return dict(sorted(files.items()))


def _tree_dirs(tree: pathlib.Path) -> list[str]:
  """Every directory of `tree` (not following symlinks), sorted."""
  dirs = []
  for dirpath, dirnames, _ in os.walk(tree):
    base = pathlib.Path(dirpath)
    dirs += [(base / d).relative_to(tree).as_posix() for d in dirnames
             if not (base / d).is_symlink()]
  return sorted(dirs)


def write_tree_manifest(tree: pathlib.Path, release: Release) -> None:
  """Records the digest of every file, and every directory, of `tree`."""
  manifest = {"format": _TREE_FORMAT, "release": release.label,
              "files": _tree_files(tree), "dirs": _tree_dirs(tree)}
  (tree / TREE_MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n",
                                    encoding="utf-8")


def verify_tree(tree: pathlib.Path) -> list[str]:
  """Compares `tree` with its manifest.

  Returns:
    What differs, one line per file ("changed: jax/__init__.py"); empty if
    the tree is exactly as built.
  """
  try:
    manifest = json.loads((tree / TREE_MANIFEST).read_text(encoding="utf-8"))
    recorded = manifest["files"]
    if manifest.get("format") != _TREE_FORMAT:
      return [f"{TREE_MANIFEST}: unknown format {manifest.get('format')!r}"]
  except (OSError, ValueError, KeyError, TypeError) as e:
    return [f"{TREE_MANIFEST}: missing or unreadable ({e})"]
  actual = _tree_files(tree)
  problems = [f"changed: {p}" for p in recorded
              if p in actual and actual[p] != recorded[p]]
  problems += [f"missing: {p}" for p in recorded if p not in actual]
  added = [p for p in actual if p not in recorded]
  recorded_dirs = set(manifest.get("dirs", []))
  if "dirs" in manifest:  # added directories, empty ones too, as a whole
    new_dirs = [d for d in _tree_dirs(tree) if d not in recorded_dirs]
    tops = [d for d in new_dirs
            if not any(d.startswith(o + "/") for o in new_dirs)]
    problems += [f"added: {d}/ ({sum(p.startswith(d + '/') for p in added)}"
                 " files)" for d in tops]
    added = [p for p in added if not any(p.startswith(d + "/") for d in tops)]
  problems += [f"added: {p}" for p in added]
  return problems


def check_replaceable(out: pathlib.Path, project: Project) -> None:
  """Raises ForkError unless `out` may be deleted to make way for a new tree.

  Never the root, the home directory, the repository or a directory holding
  any of them, nor anything inside the repository's `.git` or `patches`;
  and only a directory that `apply` made (it has a tree manifest) and that
  is still exactly as it wrote it (`verify_tree`): no file or directory
  added, none changed or removed.

  Args:
    out: the existing directory `apply --force` would replace.
    project: the repository.
  """
  out = out.resolve()
  protected = [(pathlib.Path("/"), "the root directory"),
               (pathlib.Path.home().resolve(), "your home directory"),
               (project.root.resolve(), "the repository")]
  for path, what in protected:
    if out == path or out in path.parents:
      raise ForkError(
          f"refusing to replace {out}: it is {what}"
          + ("" if out == path else f" or holds it ({path})")
          + ". --force only replaces a tree that `apply` made; pass another "
          "--out.")
  for name in (".git", "patches"):
    inside = project.root.resolve() / name
    if out == inside or inside in out.parents:
      raise ForkError(
          f"refusing to replace {out}: it is in the repository's {name}/. "
          "Pass an --out outside the repository.")
  if out.is_symlink() or not out.is_dir():
    raise ForkError(f"refusing to replace {out}: it is not a directory. "
                    "Remove it yourself or pass another --out.")
  if not (out / TREE_MANIFEST).is_file():
    raise ForkError(
        f"refusing to replace {out}: it has no {TREE_MANIFEST}, so `apply` "
        "did not make it. Remove it yourself if it can go, or pass another "
        "--out.")
  problems = verify_tree(out)
  if problems:
    shown = problems[:20] + ([f"... and {len(problems) - 20} more"]
                             if len(problems) > 20 else [])
    raise ForkError(
        f"refusing to replace {out}: it is not as `apply` wrote it, and "
        "--force replaces only a tree that is, so that nothing of yours is "
        "deleted. It differs in:\n  " + "\n  ".join(shown) + "\nNothing "
        "was changed. Keep your work (commit it, or make it a patch: "
        "docs/maintainers.md, \"Writing a patch\"), then remove the "
        "directory yourself or pass another --out.")


def build_tree(project: Project, release: Release, out: pathlib.Path, *,
               sdist: pathlib.Path | None = None,
               force: bool = False, what: str | None = None) -> pathlib.Path:
  """Builds the patched tree of `release` at `out`, atomically.

  Args:
    project: where the overlay, the patches and the manifest live.
    release: the upstream release to build.
    out: the directory to create. It must not exist unless `force`.
    sdist: an already verified sdist; fetched when None.
    force: replace an existing `out`, if it is a tree `apply` made and
      nothing in it changed since (see `check_replaceable`).
    what: what `out` is, for errors (default: "--out", as `apply` names it).

  Returns:
    `out`.

  Raises:
    ForkError: on a bad sdist, an overlay collision, a patch that does not
      apply, or an `out` that exists and may not be replaced; nothing is
      left at `out` (or it is left as it was).
  """
  out = out.resolve()
  if out.exists() or out.is_symlink():
    if not force:
      raise ForkError(f"{out} already exists; remove it or pass --force")
    check_replaceable(out, project)
  check_writable_dir(out, "--out" if what is None else what)
  queue = patchq.load_queue(project.patches, release.version)
  sdist = sdist or fetch.fetch(release)
  with scratch.directory(out.parent, "tree") as tmp:
    tree = unpack(sdist, tmp / "unpacked")
    log.step("apply", f"unpacked {sdist.name}")
    laid = _lay_overlay(project, tree)
    log.step("apply", f"overlay: {len(laid)} file(s) laid in"
             + (f" ({', '.join(laid)})" if laid else ""))
    for patch in queue:
      touched = patchq.apply(patch, tree)
      log.step("apply", f"{patch.name}: ok ({', '.join(touched)})")
    stamp_version(tree, release)
    if project.notice.exists():
      shutil.copyfile(project.notice, tree / "NOTICE")
    log.step("apply", f"version stamped {release.label}")
    write_tree_manifest(tree, release)
    trash = tmp / "replaced"
    if out.exists():
      os.rename(out, trash)
    try:
      os.rename(tree, out)
    except OSError:
      if trash.exists() and not out.exists():
        os.rename(trash, out)  # put the old tree back as it was
      raise
  log.step("apply", f"patched tree of jax {release.label} at {out}")
  return out


def cached_tree(project: Project, release: Release,
                cache: pathlib.Path | None = None) -> pathlib.Path:
  """A patched tree in the cache, keyed by a digest of all its inputs.

  A cached tree is used only if every file is as its manifest recorded;
  otherwise it is removed and built again.
  """
  cache = cache or cache_root()
  digest = inputs_digest(project, release)[:16]
  out = cache / "trees" / f"jax-{release.label}-{digest}"
  if out.exists():
    problems = verify_tree(out)
    if not problems:
      log.step("apply", f"patched tree of jax {release.label} is cached at "
               f"{out}, every file as built")
      return out
    log.step("apply", f"cached tree {out} is not as built ("
             + "; ".join(problems[:3])
             + (f"; {len(problems) - 3} more" if len(problems) > 3 else "")
             + "): rebuilding it")
    with scratch.directory(out.parent, "stale-tree") as tmp:
      try:
        os.rename(out, tmp / "stale")
      except FileNotFoundError:
        pass  # another build removed it first
  try:
    return build_tree(project, release, out, what="the cached tree")
  except (OSError, ForkError):
    if out.exists() and not verify_tree(out):
      return out  # another build of the same inputs finished first
    raise


def preflight(project: Project, releases: list[Release]) -> None:
  """Reads every patch file `releases` use; raises on a bad one, naming it.

  Cheap (nothing is fetched or applied), so commands call it before any
  work: a file that is not UTF-8, cut short or missing stops them with one
  error naming it, instead of failing a build halfway (or a later patch).
  """
  for release in releases:
    patchq.load_queue(project.patches, release.version)


def touched_files(project: Project, release: Release) -> set[str]:
  """Files of the wheel our overlay, patches and version stamp change."""
  files = {"jax/version.py"}
  files.update(f"jax/{rel.as_posix()}" for rel in project.overlay_files())
  for patch in patchq.load_queue(project.patches, release.version):
    files.update(fp.path for fp in patch.files
                 if not patchq.is_test_path(fp.path))
  return files


def check(project: Project, versions: list[str] | None = None) -> int:
  """`check`: applies the queue to every release; prints a table.

  Args:
    project: the repository.
    versions: the releases to check (default: every one in the manifest).

  Returns:
    The exit status: 1 if the queue does not apply to a release or a patch
    lacks DEP-3 headers or has lopsided context, else 0.
  """
  manifest = project.manifest()
  releases = ([manifest.get(v) for v in versions] if versions
              else manifest.releases)
  rows = [["upstream", "fork version", "patches", "status", "details"]]
  for release in releases:
    queue = patchq.load_queue(project.patches, release.version)
    problems = [f"{p.name}: missing DEP-3 {', '.join(p.missing_dep3())}"
                for p in queue if p.missing_dep3()]
    problems += [f"{p.name}: asymmetric context in {h}"
                 for p in queue for h in p.asymmetric_hunks()]
    log.step("check", f"jax {release.version}: applying {len(queue)} "
             "patches")
    quiet = log.is_quiet()
    try:
      log.set_quiet(True)
      with scratch.directory(cache_root() / "check", "check") as tmp:
        build_tree(project, release, tmp / "tree", what="the scratch tree")
      status = "ok" if not problems else "headers"
    except ForkError as e:
      status, problems = "FAILS", [str(e).splitlines()[0], *problems]
    finally:
      log.set_quiet(quiet)
    rows.append([release.version, release.label, str(len(queue)), status,
                 "; ".join(problems)])
  print(log.table(rows), flush=True)
  return 1 if any(row[3] != "ok" for row in rows[1:]) else 0
