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
"""Building the patched wheel, reproducibly.

The wheel is built by the repository's `setup.py` (the same recipe
`pip wheel .` uses), with the build backend pinned in `pyproject.toml`. Every
wheel is then rewritten into a canonical form: entries sorted, timestamps set
to SOURCE_DATE_EPOCH, permissions normalized, RECORD regenerated. Two builds of
the same inputs are byte-identical.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile
import zipfile

from forklib import ForkError
from forklib import log
from forklib import scratch
from forklib.manifest import Release
from forklib.project import Project
from forklib.project import check_writable_dir
from forklib.project import sha256_of
from forklib.sources import patchq
from forklib.sources import tree as tree_lib


def source_date_epoch(project: Project, release: Release) -> int:
  """$SOURCE_DATE_EPOCH, else midnight UTC of the newest patch Last-Update."""
  if os.environ.get("SOURCE_DATE_EPOCH"):
    return int(os.environ["SOURCE_DATE_EPOCH"])
  day = patchq.latest_update(
      patchq.load_queue(project.patches, release.version))
  return int(datetime.datetime(day.year, day.month, day.day,
                               tzinfo=datetime.timezone.utc).timestamp())


def wheel_name(release: Release) -> str:
  return f"jax-{release.label}-py3-none-any.whl"


def _record_hash(data: bytes) -> str:
  digest = hashlib.sha256(data).digest()
  return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def normalize(path: pathlib.Path, epoch: int) -> None:
  """Rewrites the wheel at `path` in canonical, reproducible form."""
  # Zip timestamps cannot predate 1980.
  stamp = max(epoch, 315532800)
  date_time = datetime.datetime.fromtimestamp(
      stamp, datetime.timezone.utc).timetuple()[:6]
  with zipfile.ZipFile(path) as zin:
    entries = {}
    for info in zin.infolist():
      if info.is_dir():
        continue
      executable = bool((info.external_attr >> 16) & 0o111)
      entries[info.filename] = (zin.read(info), executable)
  records = [n for n in entries if n.endswith(".dist-info/RECORD")]
  if len(records) != 1:
    raise ForkError(f"{path} has {len(records)} RECORD files, expected 1")
  record_name = records[0]
  del entries[record_name]
  dist_info = record_name.rsplit("/", 1)[0] + "/"
  # Package files first, then .dist-info, RECORD last (as the wheel spec
  # recommends, so installers can stream the archive).
  names = sorted(n for n in entries if not n.startswith(dist_info))
  names += sorted(n for n in entries if n.startswith(dist_info))
  record_lines = [f"{n},{_record_hash(entries[n][0])},{len(entries[n][0])}"
                  for n in names]
  record_lines.append(f"{record_name},,")
  record = ("\n".join(record_lines) + "\n").encode()
  fd, tmp = tempfile.mkstemp(prefix=".normalize-", suffix=".whl",
                             dir=path.parent)
  os.close(fd)
  try:
    with zipfile.ZipFile(tmp, "w") as zout:
      for name in [*names, record_name]:
        data, executable = (record, False) if name == record_name else entries[name]
        info = zipfile.ZipInfo(name, date_time=date_time)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.create_system = 3  # Unix, so external_attr means permissions.
        info.external_attr = (0o100755 if executable else 0o100644) << 16
        zout.writestr(info, data, compresslevel=9)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o644 & ~umask)
    os.replace(tmp, path)
  except BaseException:
    os.unlink(tmp)
    raise


def build(project: Project, release: Release,
          out_dir: pathlib.Path) -> pathlib.Path:
  """Builds the patched wheel of `release` into `out_dir`; returns its path.

  The patched tree is built (or taken from the cache), then
  `pip wheel <project root>` runs `setup.py` on it in an isolated build
  environment with the pinned build backend. The wheel is moved into
  `out_dir` only when complete.
  """
  check_writable_dir(out_dir, "--out")
  tree_lib.preflight(project, [release])
  tree = tree_lib.cached_tree(project, release)
  epoch = source_date_epoch(project, release)
  out_dir = out_dir.resolve()
  out_dir.mkdir(parents=True, exist_ok=True)
  env = dict(os.environ, JAX_FORK_UPSTREAM=release.version,
             JAX_FORK_TREE=str(tree), SOURCE_DATE_EPOCH=str(epoch))
  log.step("wheel", f"building jax {release.label} from {tree} "
           f"(SOURCE_DATE_EPOCH={epoch})")
  with scratch.directory(out_dir, "wheel") as tmp:
    # The wheel is pure Python, the same whatever Python builds it; it keeps
    # upstream's Requires-Python (0.11 and later: >=3.12), which pip would
    # otherwise check against this interpreter.
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps",
           "--ignore-requires-python", "--disable-pip-version-check",
           "--wheel-dir", str(tmp), str(project.root)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
      raise ForkError(f"pip wheel failed (exit {proc.returncode}):\n"
                      f"{proc.stdout}{proc.stderr}")
    built = pathlib.Path(tmp) / wheel_name(release)
    if not built.exists():
      found = ", ".join(sorted(os.listdir(tmp))) or "nothing"
      raise ForkError(f"pip wheel produced {found}, not {built.name}")
    normalize(built, epoch)  # Already canonical from setup.py; idempotent.
    dest = out_dir / built.name
    os.replace(built, dest)
  log.step("wheel", f"{dest} (sha256 {sha256_of(dest)})")
  return dest
