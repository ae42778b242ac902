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
"""The private package index: a static PEP 503 tree, and a server for it.

Layout (servable by any static web server)::

  <out>/simple/index.html           the projects: jax, jaxlib
  <out>/simple/<project>/index.html  one link per file, with #sha256=, PEP 658
                                     / 714 metadata attributes and
                                     data-requires-python
  <out>/files/<wheel>               the wheels
  <out>/files/<wheel>.metadata      their core metadata (PEP 658)
  <out>/install/<jax version>.txt   a release's exact pins (jax and jaxlib)
                                     with their hashes, for pip -r

Published files are immutable: rebuilding the index keeps every file already
in it, and refuses a different file under an existing name (bump
`fork_release` instead). The new tree is renamed into place only when whole.
"""

from __future__ import annotations

import email.parser
import hashlib
import html
import http.server
import os
import pathlib
import re
import shutil
import tempfile
import urllib.parse
import zipfile

from forklib import ForkError
from forklib import log

_NAME_RE = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)-")


def _sha256(data: bytes) -> str:
  return hashlib.sha256(data).hexdigest()


def project_of(wheel_name: str) -> str:
  """The normalized project name (PEP 503) of a wheel file name."""
  m = _NAME_RE.match(wheel_name)
  if not m:
    raise ForkError(f"{wheel_name!r} is not a wheel file name")
  return re.sub(r"[-_.]+", "-", m.group("name")).lower()


def wheel_metadata(path: pathlib.Path) -> bytes:
  """The METADATA file of the wheel at ``path``."""
  with zipfile.ZipFile(path) as z:
    names = [n for n in z.namelist()
             if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if len(names) != 1:
      raise ForkError(f"{path} has {len(names)} .dist-info/METADATA files")
    return z.read(names[0])


def _project_page(project: str, files: list[pathlib.Path]) -> str:
  links = []
  for f in sorted(files, key=lambda p: p.name):
    digest = _sha256(f.read_bytes())
    metadata = f.with_name(f.name + ".metadata").read_bytes()
    requires_python = email.parser.BytesParser().parsebytes(metadata).get(
        "Requires-Python")
    url = urllib.parse.quote(f.name)
    attrs = [f'href="../../files/{html.escape(url)}#sha256={digest}"',
             f'data-dist-info-metadata="sha256={_sha256(metadata)}"',
             f'data-core-metadata="sha256={_sha256(metadata)}"']
    if requires_python:
      attrs.append(
          f'data-requires-python="{html.escape(requires_python, quote=True)}"')
    links.append(f'    <a {" ".join(attrs)}>{html.escape(f.name)}</a><br/>')
  return ("<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:"
          "repository-version\" content=\"1.0\">\n    <title>Links for "
          f"{project}</title>\n  </head>\n  <body>\n    <h1>Links for "
          f"{project}</h1>\n" + "\n".join(links) + "\n  </body>\n</html>\n")


def _root_page(projects: list[str]) -> str:
  links = "\n".join(f'    <a href="{p}/">{p}</a><br/>' for p in projects)
  return ("<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:"
          "repository-version\" content=\"1.0\">\n    <title>Simple index"
          "</title>\n  </head>\n  <body>\n" + links + "\n  </body>\n</html>\n")


def _install_txt(label: str, files: list[pathlib.Path]) -> str:
  """Exact pins with their hashes, for `pip install --require-hashes -r`."""
  by_requirement: dict[str, list[str]] = {}
  for f in files:
    m = _NAME_RE.match(f.name)
    req = f"{project_of(f.name)}=={m.group('version')}"
    by_requirement.setdefault(req, []).append(_sha256(f.read_bytes()))
  lines = [f"# jax {label}: the fork and its jaxlib, pinned by hash.",
           "# pip install --no-deps --require-hashes --extra-index-url "
           "<index>/simple/ -r <this file>",
           "# then the dependencies: pip install --extra-index-url "
           f"<index>/simple/ 'jax[tensorflow]=={label}'"]
  for req in sorted(by_requirement):
    hashes = " ".join(f"--hash=sha256:{h}"
                      for h in sorted(by_requirement[req]))
    lines.append(f"{req} {hashes}")
  return "\n".join(lines) + "\n"


def build(out: pathlib.Path, wheels: list[pathlib.Path],
          releases: dict[str, list[str]] | None = None) -> pathlib.Path:
  """Builds (or extends) the index at ``out`` with ``wheels``.

  Args:
    out: the index directory; files already published there are kept.
    wheels: wheel files to publish.
    releases: for each fork version (e.g. "0.10.2+calltf.1"), the names of
      the files its install/<version>.txt pins (its jax and jaxlib wheels).

  Returns:
    ``out``.

  Raises:
    ForkError: a wheel would replace a published file with different bytes.
  """
  out = out.resolve()
  out.parent.mkdir(parents=True, exist_ok=True)
  with tempfile.TemporaryDirectory(prefix=f".{out.name}.partial-",
                                   dir=out.parent) as tmp:
    new = pathlib.Path(tmp) / "index"
    (new / "files").mkdir(parents=True)
    published = out / "files"
    if published.is_dir():
      for f in published.iterdir():
        if f.suffix == ".whl":
          os.link(f, new / "files" / f.name)
    for wheel in wheels:
      dest = new / "files" / wheel.name
      if dest.exists():
        if dest.read_bytes() != wheel.read_bytes():
          raise ForkError(
              f"{wheel.name} is already published in {out} with different "
              "contents. Published files are immutable: bump fork_release "
              "in patches/upstream.toml for a new build.")
        log.step("index", f"{wheel.name}: already published, unchanged")
        continue
      shutil.copyfile(wheel, dest)
      log.step("index", f"{wheel.name}: added")
    files = sorted((new / "files").glob("*.whl"))
    projects: dict[str, list[pathlib.Path]] = {}
    for f in files:
      f.with_name(f.name + ".metadata").write_bytes(wheel_metadata(f))
      projects.setdefault(project_of(f.name), []).append(f)
    for project, project_files in projects.items():
      page = new / "simple" / project / "index.html"
      page.parent.mkdir(parents=True)
      page.write_text(_project_page(project, project_files), encoding="utf-8")
    (new / "simple" / "index.html").write_text(
        _root_page(sorted(projects)), encoding="utf-8")
    if releases:
      (new / "install").mkdir()
      old_install = out / "install"
      if old_install.is_dir():
        for f in old_install.iterdir():
          shutil.copyfile(f, new / "install" / f.name)
      for label, names in releases.items():
        (new / "install" / f"{label}.txt").write_text(
            _install_txt(label, [new / "files" / n for n in names]),
            encoding="utf-8")
    if out.exists():
      os.rename(out, pathlib.Path(tmp) / "replaced")
    os.rename(new, out)
  log.step("index", f"{out}: {len(files)} files, projects "
           f"{', '.join(sorted(projects))}")
  return out


class _Handler(http.server.SimpleHTTPRequestHandler):

  def log_message(self, format, *args):  # noqa: A002
    log.step("serve", format % args)


def serve(directory: pathlib.Path, host: str = "127.0.0.1",
          port: int = 0) -> None:
  """Serves ``directory`` over HTTP until interrupted.

  Prints the index URL (``http://host:port/simple/``) first, on stdout.
  """
  directory = directory.resolve()
  if not (directory / "simple" / "index.html").exists():
    raise ForkError(f"{directory} is not an index (no simple/index.html); "
                    "build one with `python build/fork.py index --out DIR`")

  def handler(*args, **kwargs):
    return _Handler(*args, directory=str(directory), **kwargs)

  with http.server.ThreadingHTTPServer((host, port), handler) as server:
    print(f"http://{host}:{server.server_address[1]}/simple/", flush=True)
    server.serve_forever()
