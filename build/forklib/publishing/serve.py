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
"""`serve`: an index `index` wrote, over HTTP, as its ledger records it.

Only the files the index's ledger lists are served, by GET and HEAD, and
only with the bytes it records: a file whose sha256 is not the ledger's is
refused (409) and the refusal logged. No directory listings, no symlinks, no
other methods (405). For the tests and for one machine; a shared index wants
a web server with TLS (docs/install.md).
"""

from __future__ import annotations

import errno
import hashlib
import http.server
import ipaddress
import os
import pathlib
import shutil
import socket
import urllib.parse

from forklib import ForkError
from forklib import log
from forklib.publishing import index

_CONTENT_TYPES = {".html": "text/html; charset=utf-8",
                  ".txt": "text/plain; charset=utf-8",
                  ".metadata": "text/plain; charset=utf-8",
                  ".whl": "application/octet-stream"}


class _Handler(http.server.BaseHTTPRequestHandler):
  """GET and HEAD of the index's published files; nothing else."""

  server_version = "jax-fork-index"
  root: pathlib.Path  # set on the subclass `serve` makes

  def log_message(self, format, *args):  # noqa: A002
    log.step("serve", format % args)

  def do_GET(self):  # noqa: N802
    self._respond(send_body=True)

  def do_HEAD(self):  # noqa: N802
    self._respond(send_body=False)

  def _refuse_method(self):
    self._send(405, b"", False, {"Allow": "GET, HEAD"})

  do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method  # noqa: N815

  def _send(self, status: int, body: bytes, send_body: bool,
            headers: dict[str, str] | None = None) -> None:
    """A response with a small body (text), or none."""
    self.send_response(status)
    for key, value in (headers or {}).items():
      self.send_header(key, value)
    if body:
      self.send_header("Content-Type", "text/plain; charset=utf-8")
    self.send_header("Content-Length", str(len(body)))
    self.end_headers()
    if send_body and body:
      self.wfile.write(body)

  def _respond(self, send_body: bool) -> None:
    path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
    parts = path.split("/")
    if (not path.startswith("/") or "\\" in path or "\0" in path
        or any(p in (".", "..") for p in parts)):
      return self._send(404, b"404 Not Found\n", send_body)
    rel = path.lstrip("/")
    if rel == "" or rel.endswith("/"):
      rel += "index.html"
    try:
      allowed = index.published_files(self.root)
    except ForkError:
      allowed = {}
    if rel not in allowed:
      if f"{rel}/index.html" in allowed:
        return self._send(301, b"", send_body, {"Location": path + "/"})
      return self._send(404, b"404 Not Found\n", send_body)
    full = self.root / rel
    # Only regular files inside the tree: no component may be a symlink.
    if os.path.realpath(full) != str(full):
      return self._send(404, b"404 Not Found\n", send_body)
    try:
      fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
      return self._send(404, b"404 Not Found\n", send_body)
    with os.fdopen(fd, "rb") as f:
      size = os.fstat(f.fileno()).st_size
      h = hashlib.sha256()
      for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
      if h.hexdigest() != allowed[rel]:
        # Not the published bytes: refuse rather than serve them.
        log.step("serve", f"REFUSED {rel}: sha256 {h.hexdigest()}, the "
                 f"ledger has {allowed[rel]}; the file was changed after "
                 "publication (`index` names what to restore)")
        return self._send(409, (
            f"409 Conflict: {rel} does not match the index's ledger; it was "
            "changed after publication.\n").encode(), send_body)
      f.seek(0)
      self.send_response(200)
      self.send_header("Content-Type", _CONTENT_TYPES.get(
          pathlib.PurePosixPath(rel).suffix, "application/octet-stream"))
      self.send_header("Content-Length", str(size))
      self.end_headers()
      if send_body:
        shutil.copyfileobj(f, self.wfile)
    return None


def _is_loopback(host: str) -> bool:
  try:
    return ipaddress.ip_address(host).is_loopback
  except ValueError:
    return host == "localhost"


def serve(directory: pathlib.Path, host: str = "127.0.0.1",
          port: int = 0) -> None:
  """Serves the index at `directory` over HTTP until interrupted.

  Prints the index URL (`http://host:port/simple/`) first, on stdout.

  Raises:
    ForkError: `directory` is not an index `index` wrote, or the port is in
      use.
  """
  directory = directory.resolve()
  index.published_files(directory)  # a readable ledger, or a clear error now
  if not _is_loopback(host):
    log.step("serve", f"WARNING: serving on {host}, beyond this machine, "
             "over plain HTTP: anyone between the server and its users can "
             "change what they download unless they install with hash pins. "
             "For a shared index, serve the directory with a web server "
             "that has TLS (see docs/install.md).")

  class Handler(_Handler):
    root = directory

  server_class = http.server.ThreadingHTTPServer
  if ":" in host:
    server_class = type("Server6", (server_class,),
                        {"address_family": socket.AF_INET6})
  try:
    server = server_class((host, port), Handler)
  except OSError as e:
    if e.errno == errno.EADDRINUSE:
      raise ForkError(f"port {port} on {host} is in use; pass --port 0 for "
                      "a free one")
    raise
  with server:
    shown = f"[{host}]" if ":" in host else host
    print(f"http://{shown}:{server.server_address[1]}/simple/", flush=True)
    server.serve_forever()
