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
"""Helpers that make synthetic patches, sdists and fork projects for tests."""

from __future__ import annotations

import difflib
import hashlib
import io
import pathlib
import tarfile
import textwrap

DEP3 = """\
Description: {subject}.
Author: Test Author <test@example.com>
Bug: https://github.com/jax-ml/jax/issues/11753
Forwarded: no
Last-Update: 2026-11-30
"""


def format_patch(subject: str, changes: dict[str, tuple[str | None,
                                                          str | None]],
                 *, headers: str | None = None, context: int = 3) -> str:
  """A `git format-patch`-style patch of `changes` {path: (old, new)}."""
  out = [
      "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n",
      "From: Test Author <test@example.com>\n",
      "Date: Mon, 30 Nov 2026 00:00:00 +0000\n",
      f"Subject: [PATCH] {subject}\n", "\n",
      headers if headers is not None else DEP3.format(subject=subject),
      "---\n", "\n"]
  for path, (old, new) in changes.items():
    out.append(f"diff --git a/{path} b/{path}\n")
    if old is None:
      out.append("new file mode 100644\n")
    if new is None:
      out.append("deleted file mode 100644\n")
    diff = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        (new or "").splitlines(keepends=True),
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile="/dev/null" if new is None else f"b/{path}", n=context)
    out.extend(diff)
  out.append("-- \n2.39.5\n\n")
  return "".join(out)


SDIST_FILES = {
    "setup.py": "from setuptools import setup\nsetup(name='jax', "
                "version='9.9.9', packages=['jax'])\n",
    "PKG-INFO": "Metadata-Version: 2.1\nName: jax\nVersion: 9.9.9\n",
    "jax/__init__.py": "from jax.version import __version__\n",
    "jax/version.py": textwrap.dedent("""\
        _version = "9.9.9"
        _release_version: str = '9.9.9'
        __version__ = _release_version
        """),
    "jax/_src/__init__.py": "",
    "jax/_src/config.py": "".join(f"line {i}\n" for i in range(1, 41)),
}


def make_sdist(path: pathlib.Path, files: dict[str, str] | None = None,
               version: str = "9.9.9") -> str:
  """Writes a small jax sdist at `path`; returns its sha256."""
  files = files or SDIST_FILES
  path.parent.mkdir(parents=True, exist_ok=True)
  with tarfile.open(path, "w:gz") as tar:
    for name, text in sorted(files.items()):
      data = text.encode()
      info = tarfile.TarInfo(f"jax-{version}/{name}")
      info.size = len(data)
      info.mode = 0o644
      tar.addfile(info, io.BytesIO(data))
  return hashlib.sha256(path.read_bytes()).hexdigest()


MANIFEST = """\
[[release]]
version = "{version}"
sdist_sha256 = "{sha}"
fork_release = 3
python = ["3.11", "3.12", "3.13"]
tensorflow = ">=2.21,<2.22"
jaxlib = ">=9.9.9,<=9.9.9"
test_jaxlib = "9.9.9"
test_tensorflow = "2.21.0"
"""


def make_project(root: pathlib.Path, sha: str,
                 patches: dict[str, str],
                 overlay: dict[str, str] | None = None,
                 version: str = "9.9.9") -> pathlib.Path:
  """Writes a fork project (manifest, series, patches, overlay) at `root`."""
  (root / "patches").mkdir(parents=True, exist_ok=True)
  (root / "patches" / "upstream.toml").write_text(
      MANIFEST.format(version=version, sha=sha))
  (root / "patches" / "series").write_text(
      "# test series\n" + "".join(f"{n}\n" for n in patches))
  for name, text in patches.items():
    (root / "patches" / name).write_text(text)
  for rel, text in (overlay or {}).items():
    path = root / "jax" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
  return root
