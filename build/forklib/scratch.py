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
its creator keeps an exclusive lock (flock) while it works. The lock dies
with the process, however it dies, so a later run can tell a crashed run's
leftovers (lock free) from a concurrent run's work (lock held), and removes
only the former. Nothing without the prefix is ever touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import shutil
import time
from typing import Iterator

from forklib import log

PREFIX = ".fork-tmp-"
_LOCK_SUFFIX = ".lock"
# A lock file without its directory, or a directory without its lock file,
# is left by a crash between two steps, or is a run's very first moment:
# stale once older than this.
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


def sweep(parent: pathlib.Path) -> list[pathlib.Path]:
  """Removes the temporary directories of crashed runs in `parent`.

  Args:
    parent: a directory in which the tool makes temporary directories.

  Returns:
    The directories (and lone lock files) removed.
  """
  removed = []
  try:
    entries = sorted(parent.iterdir())
  except FileNotFoundError:
    return removed
  names = {e.name for e in entries}
  for entry in entries:
    if not entry.name.startswith(PREFIX) or entry.is_symlink():
      continue
    if entry.name.endswith(_LOCK_SUFFIX):
      lock, work = entry, entry.with_name(entry.name[:-len(_LOCK_SUFFIX)])
      if work.name in names:
        continue  # handled with its directory
    else:
      work, lock = entry, entry.with_name(entry.name + _LOCK_SUFFIX)
    try:
      fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
      if _age(work) > _GRACE_SECONDS:
        _remove(work)
        removed.append(work)
      continue
    except OSError:
      continue
    try:
      try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
      except BlockingIOError:
        continue  # its creator is alive and working in it
      if work.exists():
        _remove(work)
        removed.append(work)
      elif _age(lock) > _GRACE_SECONDS:
        removed.append(lock)
      else:
        continue
      _remove(lock)
    finally:
      os.close(fd)
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
    path = parent / f"{PREFIX}{what}-{os.urandom(6).hex()}"
    lock = path.with_name(path.name + _LOCK_SUFFIX)
    try:
      fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
      break
    except FileExistsError:
      continue
  try:
    fcntl.flock(fd, fcntl.LOCK_EX)
    path.mkdir(mode=0o700)
    yield path
  finally:
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
      lock.unlink()
    os.close(fd)
