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
"""Temporary directories the tool can recognise, and clean up after a crash.

Every temporary directory the tool makes beside its outputs (in the cache, in
`dist/`, beside `apply --out`) is named `.fork-tmp-<what>-<random>`, and
beside it is a lock file of the same name plus `.lock`, made first, on which
its creator keeps an exclusive lock (flock) while it works. The lock file is
locked before it gets its name (it is made as `.fork-lock-<random>`, locked,
then linked), so a lock file that is not locked belongs to no live run. The
lock dies with the process, however it dies, so a later run can tell a
crashed run's leftovers (lock free) from a concurrent run's work (lock held),
and removes only the former. Nothing without these prefixes is touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import shutil
import tempfile
import time
from typing import Iterator

from forklib import log

PREFIX = ".fork-tmp-"
_PENDING = ".fork-lock-"
_LOCK_SUFFIX = ".lock"
# A directory without its lock file is left by a crash while it was being
# removed: stale once older than this.
_GRACE_SECONDS = 60.0


def _age(path: pathlib.Path) -> float:
  try:
    return time.time() - path.lstat().st_mtime
  except FileNotFoundError:
    return 0.0


def _remove(path: pathlib.Path) -> None:
  if path.is_dir() and not path.is_symlink():
    shutil.rmtree(path, ignore_errors=True)
  else:
    with contextlib.suppress(FileNotFoundError):
      path.unlink()


def _lock_is_free(lock: pathlib.Path) -> bool | None:
  """Whether nobody holds `lock`'s flock (None: there is no such file)."""
  try:
    fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
  except FileNotFoundError:
    return None
  except OSError:
    return False
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return True
  except BlockingIOError:
    return False
  finally:
    os.close(fd)


def sweep(parent: pathlib.Path) -> list[pathlib.Path]:
  """Removes the temporary directories of crashed runs in `parent`.

  Args:
    parent: a directory in which the tool makes temporary directories.

  Returns:
    The directories and lock files removed.
  """
  removed = []
  try:
    entries = sorted(parent.iterdir())
  except FileNotFoundError:
    return removed
  for entry in entries:
    if entry.is_symlink():
      continue
    if entry.name.startswith(_PENDING):
      if _lock_is_free(entry):
        _remove(entry)  # its creator died before naming it, or retries
        removed.append(entry)
      continue
    if (not entry.name.startswith(PREFIX)
        or entry.name.endswith(_LOCK_SUFFIX)):
      continue
    lock = entry.with_name(entry.name + _LOCK_SUFFIX)
    free = _lock_is_free(lock)
    if free is None and _age(entry) > _GRACE_SECONDS or free:
      _remove(entry)
      removed.append(entry)
  for entry in entries:  # lock files whose directory is gone
    if (entry.name.startswith(PREFIX) and entry.name.endswith(_LOCK_SUFFIX)
        and not entry.with_name(entry.name[:-len(_LOCK_SUFFIX)]).exists()
        and not entry.is_symlink() and _lock_is_free(entry)):
      _remove(entry)
      removed.append(entry)
  if removed:
    log.step("cleanup", f"removed {len(removed)} temporary files and "
             f"directories left by crashed runs in {parent}")
  return removed


@contextlib.contextmanager
def directory(parent: pathlib.Path, what: str) -> Iterator[pathlib.Path]:
  """A locked temporary directory in `parent`, removed on exit.

  Stale directories of crashed runs in `parent` are swept first.

  Args:
    parent: where to make it (created if missing).
    what: a short word for its name, e.g. "tree" or "wheel".

  Yields:
    The directory's path.
  """
  parent.mkdir(parents=True, exist_ok=True)
  sweep(parent)
  while True:
    token = os.urandom(6).hex()
    path = parent / f"{PREFIX}{what}-{token}"
    lock = path.with_name(path.name + _LOCK_SUFFIX)
    pending = parent / f"{_PENDING}{token}"
    try:
      fd = os.open(pending, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
      continue
    try:
      fcntl.flock(fd, fcntl.LOCK_EX)
      os.link(pending, lock)  # the lock file appears already locked
    except (FileExistsError, FileNotFoundError):
      os.close(fd)  # a name taken, or a sweep took the pending file: retry
      continue
    finally:
      with contextlib.suppress(FileNotFoundError):
        pending.unlink()
    break
  try:
    path.mkdir(mode=0o700)
    yield path
  finally:
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
      lock.unlink()
    os.close(fd)


def probe_writable(parent: pathlib.Path) -> None:
  """Creates and removes a file in `parent`: raises OSError if it cannot.

  The file is named and locked like a lock file being made
  (`.fork-lock-<random>`), so one left by a process killed in between is
  removed by the next `sweep` of `parent`.
  """
  path = parent / f"{_PENDING}{os.urandom(6).hex()}"
  fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX)
    with contextlib.suppress(FileNotFoundError):
      path.unlink()
  finally:
    os.close(fd)


@contextlib.contextmanager
def temporary_files_in(path: pathlib.Path) -> Iterator[None]:
  """Makes `path` the temporary directory of this process and its children.

  For the duration, $TMPDIR (read by git, pip and every Python child) and
  `tempfile`'s default point at `path`, so that what they leave behind stays
  in the tool's own scratch directory (`directory`) and goes with it,
  instead of in /tmp.

  Args:
    path: an existing directory, usually a `directory()`.
  """
  saved_env = os.environ.get("TMPDIR")
  saved_default = tempfile.tempdir
  os.environ["TMPDIR"] = str(path)
  tempfile.tempdir = str(path)
  try:
    yield
  finally:
    if saved_env is None:
      os.environ.pop("TMPDIR", None)
    else:
      os.environ["TMPDIR"] = saved_env
    tempfile.tempdir = saved_default
