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
"""The private package index: a static PEP 503 tree, written transactionally.

Layout (servable by any static web server)::

  <out>/simple/index.html           the projects: jax, jaxlib
  <out>/simple/<project>/index.html  one link per file, with #sha256=, PEP 658
                                     / 714 metadata attributes and
                                     data-requires-python
  <out>/files/<wheel>               the wheels
  <out>/files/<wheel>.metadata      their core metadata (PEP 658)
  <out>/install/<jax version>.txt   a release's exact pins (jax and jaxlib)
                                     with their hashes, for pip -r
  <out>/ledger.json                 the record of what was published: every
                                     file above with its sha256, and each
                                     release's files (not served)

Publication is append-only and transactional:

* One `index` run at a time: a run holds an exclusive lock (flock) on the
  index directory; a second run waits for it.
* Before anything is written, every file in the ledger is checked against its
  recorded sha256; a mismatch (a tampered wheel, an edited page) stops the run
  and names the file. Pages and install files are written from the ledger's
  hashes, never from whatever is on disk.
* Published wheels are immutable (a different file under a published name is
  refused: bump `fork_release`), releases only gain files, and nothing the
  tool did not write is ever deleted or overwritten. A directory without a
  ledger is written into only if it is empty.
* A journal written before the first change makes a crash recoverable: the
  next run removes the files the interrupted run added, or completes it if
  its ledger was already committed.
"""

from __future__ import annotations

import contextlib
import email.parser
import fcntl
import hashlib
import html
import json
import os
import pathlib
import re
import secrets
import shutil
import urllib.parse
import zipfile
from typing import Any, Iterator

from forklib import ForkError
from forklib import log
from forklib.project import check_writable_dir
from forklib.project import sha256_of
from forklib.publishing import publication

LEDGER = "ledger.json"
JOURNAL = "ledger.journal.json"
_TMP_PREFIX = ".fork-tmp-"
_FORMAT = "jax-calltf-fork index ledger 1"
_NAME_RE = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)-")


def _sha256(data: bytes) -> str:
  return hashlib.sha256(data).hexdigest()


def project_of(wheel_name: str) -> str:
  """The normalized project name (PEP 503) of a wheel file name."""
  m = _NAME_RE.match(wheel_name)
  if not m or not wheel_name.endswith(".whl"):
    raise ForkError(f"{wheel_name!r} is not a wheel file name")
  return re.sub(r"[-_.]+", "-", m.group("name")).lower()


def wheel_metadata(path: pathlib.Path) -> bytes:
  """The METADATA file of the wheel at ``path``."""
  try:
    with zipfile.ZipFile(path) as z:
      names = [n for n in z.namelist()
               if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
      if len(names) != 1:
        raise ForkError(f"{path} has {len(names)} .dist-info/METADATA files")
      return z.read(names[0])
  except zipfile.BadZipFile as e:
    raise ForkError(f"{path} is not a wheel (not a zip file: {e})")


# Rendering: every page and install file is a function of the ledger alone.


def _project_page(project: str, wheels: dict[str, dict[str, Any]]) -> str:
  links = []
  for name in sorted(wheels):
    entry = wheels[name]
    url = urllib.parse.quote(name)
    attrs = [f'href="../../files/{html.escape(url)}#sha256={entry["sha256"]}"',
             f'data-dist-info-metadata="sha256={entry["metadata_sha256"]}"',
             f'data-core-metadata="sha256={entry["metadata_sha256"]}"']
    if entry.get("requires_python"):
      attrs.append('data-requires-python="'
                   f'{html.escape(entry["requires_python"], quote=True)}"')
    links.append(f'    <a {" ".join(attrs)}>{html.escape(name)}</a><br/>')
  return _page(f"Links for {project}",
               [f"    <h1>Links for {project}</h1>", *links])


def _page(title: str, body: list[str]) -> str:
  return ("<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:"
          "repository-version\" content=\"1.0\">\n    <title>"
          f"{title}</title>\n  </head>\n  <body>\n" + "\n".join(body)
          + "\n  </body>\n</html>\n")


def _install_txt(label: str, wheels: dict[str, dict[str, Any]],
                 names: list[str]) -> str:
  """Exact pins with their hashes, for `pip install --require-hashes -r`."""
  by_requirement: dict[str, list[str]] = {}
  for name in names:
    entry = wheels[name]
    req = f"{entry['project']}=={entry['version']}"
    by_requirement.setdefault(req, []).append(entry["sha256"])
  lines = [f"# jax {label}: the fork and its jaxlib, pinned by hash.",
           "# Keep a reviewed copy of this file in your own repository and "
           "install from it:",
           "# pip install --no-deps --require-hashes --extra-index-url "
           "<index>/simple/ -r <this file>",
           "# then the dependencies: pip install --extra-index-url "
           f"<index>/simple/ 'jax[tensorflow]=={label}'"]
  for req in sorted(by_requirement):
    hashes = " ".join(f"--hash=sha256:{h}"
                      for h in sorted(by_requirement[req]))
    lines.append(f"{req} {hashes}")
  return "\n".join(lines) + "\n"


def _render(ledger: dict[str, Any]) -> dict[str, bytes]:
  """The pages and install files of `ledger`: path in the index -> bytes."""
  wheels = ledger["wheels"]
  projects: dict[str, dict[str, dict[str, Any]]] = {}
  for name, entry in wheels.items():
    projects.setdefault(entry["project"], {})[name] = entry
  out = {"simple/index.html": _page("Simple index", [
      f'    <a href="{p}/">{p}</a><br/>' for p in sorted(projects)])}
  for project, project_wheels in projects.items():
    out[f"simple/{project}/index.html"] = _project_page(project,
                                                        project_wheels)
  for label, names in ledger["releases"].items():
    out[f"install/{label}.txt"] = _install_txt(label, wheels, names)
  return {path: text.encode("utf-8") for path, text in out.items()}


# The ledger, the journal and the lock.


def _empty_ledger() -> dict[str, Any]:
  return {"format": _FORMAT, "wheels": {}, "releases": {}, "files": {}}


def _read_json(path: pathlib.Path) -> dict[str, Any]:
  try:
    data = json.loads(path.read_text(encoding="utf-8"))
  except (OSError, ValueError) as e:
    raise ForkError(f"{path} cannot be read ({e}). It is the index's record "
                    "of what was published: restore it from a backup; the "
                    "index was not changed.")
  if not isinstance(data, dict) or data.get("format") != _FORMAT:
    raise ForkError(f"{path} is not a ledger of this tool (format "
                    f"{data.get('format') if isinstance(data, dict) else '?'}"
                    f", expected {_FORMAT!r}); the index was not changed.")
  return data


def _dump(data: dict[str, Any]) -> bytes:
  return (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8")


def _write_atomic(path: pathlib.Path, data: bytes) -> None:
  """Writes `data` to `path` through a temporary file and a rename."""
  path.parent.mkdir(parents=True, exist_ok=True)
  tmp = path.with_name(f"{_TMP_PREFIX}{secrets.token_hex(6)}-{path.name}")
  try:
    with open(tmp, "xb") as f:
      f.write(data)
      f.flush()
      os.fsync(f.fileno())
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
  except BaseException:
    with contextlib.suppress(FileNotFoundError):
      os.unlink(tmp)
    raise


def _copy_verified(src: pathlib.Path, dest: pathlib.Path, sha256: str) -> None:
  """Copies `src` to a new file `dest` only if the copy has `sha256`."""
  dest.parent.mkdir(parents=True, exist_ok=True)
  tmp = dest.with_name(f"{_TMP_PREFIX}{secrets.token_hex(6)}-{dest.name}")
  try:
    shutil.copyfile(src, tmp)
    with open(tmp, "rb") as f:
      os.fsync(f.fileno())
    os.chmod(tmp, 0o644)
    actual = sha256_of(tmp)
    if actual != sha256:
      raise ForkError(f"{src} changed while it was being published (sha256 "
                      f"{sha256}, then {actual}); nothing was published.")
    if dest.exists() or dest.is_symlink():
      raise ForkError(f"{dest} appeared while it was being published; "
                      "nothing was overwritten.")
    os.replace(tmp, dest)
  finally:
    with contextlib.suppress(FileNotFoundError):
      os.unlink(tmp)


def _file_sha(path: pathlib.Path) -> str | None:
  """The sha256 of the regular file at `path`; None if there is none."""
  if path.is_symlink():
    return "symlink"
  if not path.exists():
    return None
  if not path.is_file():
    return "not-a-file"
  return sha256_of(path)


@contextlib.contextmanager
def _locked(out: pathlib.Path) -> Iterator[None]:
  """Holds an exclusive lock on the index directory `out` (created)."""
  try:
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
  except (FileExistsError, NotADirectoryError):
    raise ForkError(f"{out} exists and is not a directory; pass an index "
                    "directory to --out")
  try:
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      log.step("index", f"{out} is being written by another `index` run; "
               "waiting for it to finish")
      fcntl.flock(fd, fcntl.LOCK_EX)
    yield
  finally:
    os.close(fd)


def _sweep_temporaries(out: pathlib.Path) -> None:
  """Removes temporary files of crashed runs (the lock is held)."""
  for sub in ("", "files", "simple", "install"):
    directory = out / sub
    if not directory.is_dir():
      continue
    for entry in directory.rglob(f"{_TMP_PREFIX}*"):
      if entry.is_file() and not entry.is_symlink():
        entry.unlink()
        log.step("index", f"removed {entry}, left by a crashed run")


def _undo_writes(out: pathlib.Path, writes: dict[str, dict[str, Any]],
                 accepted: dict[str, set[str | None]]) -> None:
  """Undoes the `writes` (the journal's: path to sha256 `before` and
  `after`) of a run interrupted before it committed its ledger: removes
  the files it added; a file it rewrote (a page, an install file, which the
  caller rewrites from the ledger) may have either version, added to
  `accepted`.

  Raises:
    ForkError: a file has neither version: something else changed it.
  """
  for path, change in writes.items():
    current = _file_sha(out / path)
    if change["before"] is None and current == change["after"]:
      (out / path).unlink()
      log.step("index", f"removed {path}, added by the interrupted run")
    elif current in (change["before"], change["after"]):
      accepted.setdefault(path, set()).update(
          {change["before"], change["after"]})
    else:
      raise ForkError(
          f"{out / path} is neither the published version nor the one "
          "an interrupted `index` run was writing: it was changed by "
          "something else. Nothing was changed; restore it from a backup "
          f"(sha256 {change['before'] or '(no file)'}).")


def _open_index(out: pathlib.Path) -> dict[str, Any]:
  """The ledger of `out`, after recovery and verification (lock held).

  Raises:
    ForkError: `out` is neither empty nor an index; or a published file is
      missing or differs from the ledger.
  """
  ledger_path = out / LEDGER
  journal_path = out / JOURNAL
  if not ledger_path.exists() and not journal_path.exists():
    _refuse_foreign(
        out, str(out),
        ". Nothing was changed. Pass a new or empty directory to --out. (An "
        f"index written before the tool kept a {LEDGER} counts as foreign "
        "too: publish into a new directory and point the web server at it.)")
    return _empty_ledger()
  ledger = (_read_json(ledger_path) if ledger_path.exists()
            else _empty_ledger())  # the first publication was interrupted
  accepted = {path: {sha} for path, sha in ledger["files"].items()}
  if journal_path.exists():
    journal = json.loads(journal_path.read_text(encoding="utf-8"))
    if (ledger_path.exists() and _sha256(ledger_path.read_bytes())
        == journal["ledger_after"]):
      log.step("index", "the previous run was interrupted after it committed "
               "its ledger; verifying its files")
    else:
      log.step("index", "the previous run was interrupted before it "
               "committed; undoing its changes")
      _undo_writes(out, journal["writes"], accepted)
  for path, shas in sorted(accepted.items()):
    actual = _file_sha(out / path)
    if actual not in shas:
      expected = " or ".join(sorted(s or "(no file)" for s in shas))
      raise ForkError(
          f"{out / path} does not match the index's ledger: sha256 "
          f"{actual or '(missing)'}, published as {expected}. A published "
          "file was changed or removed after publication; nothing was "
          "changed. Restore the published file from a backup or from its "
          f"source (its hash is in {ledger_path}), then run again.")
  if journal_path.exists():
    journal_path.unlink()
  return ledger


def _conflict(out: pathlib.Path, name: str, published: dict[str, Any],
              digest: str, origin: str | None) -> str:
  """Why `name` cannot be published again with `digest`, and what to do."""
  head = (f"{name} is already published in {out} with sha256 "
          f"{published['sha256']}; this file has {digest}. Published files "
          "are immutable; nothing was changed.")
  outside = (" So the index was changed outside the tool: its ledger, pages "
             "and files no longer record what `index` published. Do not "
             "serve it; restore the index from a backup, or publish into a "
             "new directory, and find out who changed it.")
  if origin == publication.ORIGIN_PINNED:
    return (head + " This file is the one jaxlib_build/pins.toml pins by "
            "sha256, and a pinned file never changes." + outside)
  if origin and published.get("origin") == origin:
    return (head + " The fork's builds are reproducible, and this wheel was "
            "built from the same inputs (sdist, patches, overlay, tool) as "
            "the published one, so the published bytes cannot be a build of "
            "them." + outside)
  if origin and published.get("origin"):
    return (head + " It was built from other inputs than the published "
            "wheel (the patches, the overlay or the tool changed): bump "
            "fork_release in patches/upstream.toml for a new build.")
  return (head + " If this wheel was built from changed patches or overlay, "
          "bump fork_release in patches/upstream.toml for a new build; if "
          "not, the index was changed outside the tool: restore it from a "
          "backup.")


def _check_jaxlib_everywhere(out: pathlib.Path,
                             ledger: dict[str, Any]) -> None:
  """Refuses an index that mirrors jaxlib for some releases but not all.

  uv takes a package only from the first index that has it (its default
  `first-index` strategy): once the index serves any jaxlib, a release
  whose jaxlib it does not mirror cannot resolve from it with uv (pip,
  which merges indexes, still can).
  """
  def has_jaxlib(names: list[str]) -> bool:
    return any(ledger["wheels"][n]["project"] == "jaxlib" for n in names)
  releases = ledger["releases"]
  with_jaxlib = sorted(l for l, names in releases.items() if has_jaxlib(names))
  without = sorted(l for l in releases if l not in with_jaxlib)
  if with_jaxlib and without:
    upstream = " ".join(f"--upstream {l.split('+', 1)[0]}" for l in without)
    raise ForkError(
        f"{out} would mirror jaxlib for jax {', '.join(with_jaxlib)} but not "
        f"for jax {', '.join(without)}: uv takes a package only from the "
        "first index that has it, so with this index first, uv could not "
        f"resolve the jaxlib of jax {', '.join(without)}. Nothing was "
        "changed. Publish their jaxlib too (`python3 build/fork.py index "
        f"--out {out} {upstream}`, without --no-jaxlib), or publish releases"
        " without jaxlib into an index of their own.")


def build(out: pathlib.Path, wheels: list[pathlib.Path],
          releases: dict[str, list[str]] | None = None,
          origins: dict[str, str] | None = None) -> pathlib.Path:
  """Publishes ``wheels`` into the index at ``out`` (created if missing).

  Args:
    out: the index directory: new, empty, or an index written by `build`.
    wheels: wheel files to publish; any already published must be identical.
    releases: for each fork version (e.g. "0.10.2+calltf.1"), the names of
      the files its install/<version>.txt pins (its jax and jaxlib wheels).
      Files are added to what the release already pins, never removed.
    origins: where each wheel (by file name) came from (`publication`'s
      `ORIGIN_PINNED` or `build_origin`); recorded in the ledger, it tells a
      rebuild from changed inputs apart from an index changed outside the
      tool when a published name meets other bytes.

  Returns:
    ``out``.

  Raises:
    ForkError: `out` is not an index and not empty; a published file does
      not match the ledger; a wheel would replace a published file with
      different bytes; a file the tool did not write is in the way.
  """
  out = out.resolve()
  with _locked(out):
    ledger = _open_index(out)
    _sweep_temporaries(out)
    new = json.loads(json.dumps(ledger))
    data_files = _add_wheels(out, new, wheels, origins or {})
    _add_release_pins(new, releases or {})
    _check_jaxlib_everywhere(out, new)
    rendered = _render(new)
    writes = _writes(out, ledger, data_files, rendered)
    new["files"].update({path: w["after"] for path, w in writes.items()})
    if not writes and new == ledger:
      log.step("index", f"{out}: nothing new to publish")
      return out
    _commit(out, new, writes, data_files, rendered)
  log.step("index", f"{out}: {len(new['wheels'])} wheels, projects "
           f"{', '.join(sorted({w['project'] for w in new['wheels'].values()}))}"
           f"; {len(data_files) // 2} added")
  return out


# A data file to publish: the wheel to copy (or None), the bytes to write
# (or None), and the sha256 it must have.
_DataFile = tuple[pathlib.Path | None, bytes | None, str]


def _add_wheels(out: pathlib.Path, new: dict[str, Any],
                wheels: list[pathlib.Path],
                origins: dict[str, str]) -> dict[str, _DataFile]:
  """Enters `wheels` not yet published in the ledger `new`.

  Returns:
    The files to write for them: path in the index -> what to write.

  Raises:
    ForkError: a wheel's name is published with other bytes.
  """
  data_files: dict[str, _DataFile] = {}
  for wheel in wheels:
    name = wheel.name
    project = project_of(name)
    digest = sha256_of(wheel)
    published = new["wheels"].get(name)
    origin = origins.get(name)
    if published:
      if published["sha256"] != digest:
        raise ForkError(_conflict(out, name, published, digest, origin))
      log.step("index", f"{name}: already published, unchanged")
      continue
    metadata = wheel_metadata(wheel)
    requires_python = email.parser.BytesParser().parsebytes(metadata).get(
        "Requires-Python")
    new["wheels"][name] = {
        "project": project, "version": _NAME_RE.match(name)["version"],
        "sha256": digest, "size": wheel.stat().st_size,
        "metadata_sha256": _sha256(metadata),
        "requires_python": requires_python}
    if origin:
      new["wheels"][name]["origin"] = origin
    data_files[f"files/{name}"] = (wheel, None, digest)
    data_files[f"files/{name}.metadata"] = (None, metadata, _sha256(metadata))
    log.step("index", f"{name}: adding (sha256 {digest})")
  return data_files


def _add_release_pins(new: dict[str, Any],
                      releases: dict[str, list[str]]) -> None:
  """Adds to each release of the ledger `new` the files it pins.

  Raises:
    ForkError: a release pins a file that is not in the ledger.
  """
  for label, names in releases.items():
    missing = [n for n in names if n not in new["wheels"]]
    if missing:
      raise ForkError(f"release {label} pins {', '.join(missing)}, which "
                      "is neither published nor being published")
    kept = new["releases"].get(label, [])
    new["releases"][label] = sorted(set(kept) | set(names))


def _writes(out: pathlib.Path, ledger: dict[str, Any],
            data_files: dict[str, _DataFile],
            rendered: dict[str, bytes]) -> dict[str, dict[str, str | None]]:
  """The files a run changes: path -> its sha256 before and after.

  The data files are new; a page or install file is rewritten where its
  bytes change.

  Raises:
    ForkError: a file to write is there but the ledger does not list it.
  """
  writes = {path: {"before": None, "after": sha}
            for path, (_, _, sha) in data_files.items()}
  for path, data in rendered.items():
    current = _file_sha(out / path)
    if current != _sha256(data):
      writes[path] = {"before": ledger["files"].get(path),
                      "after": _sha256(data)}
  for path in writes:
    if path not in ledger["files"] and (out / path).exists():
      raise ForkError(
          f"{out / path} is in the way: the index's ledger does not list "
          "it, so `index` did not write it, and will not overwrite it. "
          "Move it out of the index, then run again.")
  return writes


def _commit(out: pathlib.Path, new: dict[str, Any],
            writes: dict[str, dict[str, str | None]],
            data_files: dict[str, _DataFile],
            rendered: dict[str, bytes]) -> None:
  """Writes the journal, the files, then the ledger `new` (the commit
  point), and removes the journal."""
  ledger_bytes = _dump(new)
  _write_atomic(out / JOURNAL, _dump({
      "format": _FORMAT, "writes": writes,
      "ledger_after": _sha256(ledger_bytes)}))
  for path, (source, data, sha) in data_files.items():
    if source is not None:
      _copy_verified(source, out / path, sha)
    else:
      _write_atomic(out / path, data)
  for path, data in rendered.items():
    if path in writes:
      _write_atomic(out / path, data)
  _write_atomic(out / LEDGER, ledger_bytes)  # the commit point
  (out / JOURNAL).unlink()


def check_out(out: pathlib.Path) -> None:
  """Raises a ForkError unless `out` can take an index; writes nothing.

  Checked before anything is built or downloaded (and again, under the
  lock, when the index is written): a directory the tool can write, new,
  empty, or an index `index` wrote.
  """
  out = pathlib.Path(os.path.abspath(out))
  check_writable_dir(out, "--out")
  if out.is_dir() and not (out / LEDGER).exists() and not (
      out / JOURNAL).exists():
    _refuse_foreign(out, f"--out {out}", "; pass a new or empty directory")


def _refuse_foreign(out: pathlib.Path, label: str, advice: str) -> None:
  """Raises a ForkError if `out` (no ledger) holds files the tool did not write.

  Args:
    out: the directory.
    label: how the message names it.
    advice: what the message says after naming the files.
  """
  foreign = sorted(e.name for e in out.iterdir()
                   if not e.name.startswith(_TMP_PREFIX))
  if foreign:
    raise ForkError(
        f"{label} is not empty and has no {LEDGER}, so it is not an index "
        f"written by `index` (it holds {', '.join(foreign[:5])}"
        f"{', ...' if len(foreign) > 5 else ''}){advice}")


def add_releases(out: pathlib.Path,
                 releases: list[publication.ReleaseFiles]) -> pathlib.Path:
  """Publishes the files of `releases` into the index at `out` (`build`).

  Each release's install file pins its fork wheel and its jaxlib wheels.
  """
  files = [f for r in releases for f in r.files]
  return build(out, [f.path for f in files],
               {r.release.label: [f.path.name for f in r.files]
                for r in releases},
               {f.path.name: f.origin for f in files if f.origin})


def published_files(directory: pathlib.Path) -> dict[str, str]:
  """The files the ledger of the index at `directory` lists: path -> sha256.

  Raises:
    ForkError: the ledger is missing, unreadable or not this tool's.
  """
  if not (directory / LEDGER).is_file():
    raise ForkError(f"{directory} is not an index (no {LEDGER}); build one "
                    "with `python build/fork.py index --out DIR`")
  return dict(_read_json(directory / LEDGER)["files"])
