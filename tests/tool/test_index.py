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
"""The private index: PEP 503 pages, PEP 658 metadata, pip installing from it.

The index is served by the tool's own server on 127.0.0.1 and consumed by a
real `pip install` into a fresh virtual environment; the fork's dependencies
come from pip's configured index, as they would for a user.
"""

from __future__ import annotations

import email.parser
import hashlib
import html.parser
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import urllib.parse

import pytest

from forklib import ForkError
from forklib import index as index_lib


class _Links(html.parser.HTMLParser):

  def __init__(self):
    super().__init__()
    self.links: list[dict[str, str]] = []

  def handle_starttag(self, tag, attrs):
    if tag == "a":
      self.links.append(dict(attrs))


def _links(page: pathlib.Path) -> list[dict[str, str]]:
  parser = _Links()
  parser.feed(page.read_text())
  return parser.links


def _sha(data: bytes) -> str:
  return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def index(root, fork_wheel, tmp_path_factory) -> pathlib.Path:
  out = tmp_path_factory.mktemp("index") / "index"
  subprocess.run([sys.executable, str(root / "build" / "fork.py"), "-q",
                  "index", "--out", str(out), "--wheel", str(fork_wheel)],
                 check=True)
  return out


class _Server:
  """`python build/fork.py serve` in a subprocess; collects its log."""

  def __init__(self, root: pathlib.Path, directory: pathlib.Path):
    self.proc = subprocess.Popen(
        [sys.executable, str(root / "build" / "fork.py"), "serve",
         str(directory), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    self.url = self.proc.stdout.readline().strip()
    assert self.url.startswith("http://127.0.0.1:"), self.url
    self.log: list[str] = []
    self._reader = threading.Thread(target=self._read, daemon=True)
    self._reader.start()

  def _read(self):
    for line in self.proc.stderr:
      self.log.append(line)

  def close(self):
    self.proc.terminate()
    self.proc.wait(timeout=10)


@pytest.fixture
def server(root, index):
  s = _Server(root, index)
  yield s
  s.close()


def _venv(path: pathlib.Path) -> pathlib.Path:
  subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
  return path / "bin" / "python"


def _pip(python: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
  return subprocess.run([str(python), "-m", "pip", "install",
                         "--disable-pip-version-check", *args],
                        capture_output=True, text=True)


def test_pages_link_every_file_with_hashes_and_metadata(index, fork_wheel,
                                                        release):
  root_links = [l["href"] for l in _links(index / "simple" / "index.html")]
  assert root_links == ["jax/", "jaxlib/"]
  jax_links = _links(index / "simple" / "jax" / "index.html")
  assert len(jax_links) == 1
  link = jax_links[0]
  href, digest = link["href"].split("#sha256=")
  assert href == f"../../files/{urllib.parse.quote(fork_wheel.name)}"
  wheel = index / "files" / fork_wheel.name
  assert digest == _sha(wheel.read_bytes()) == _sha(fork_wheel.read_bytes())
  metadata = (index / "files" / (fork_wheel.name + ".metadata")).read_bytes()
  assert metadata == index_lib.wheel_metadata(wheel)
  assert link["data-core-metadata"] == f"sha256={_sha(metadata)}"
  assert link["data-dist-info-metadata"] == link["data-core-metadata"]
  assert link["data-requires-python"] == ">=3.11"
  assert email.parser.BytesParser().parsebytes(metadata)["Version"] == (
      release.label)
  jaxlib_links = _links(index / "simple" / "jaxlib" / "index.html")
  assert {l["href"].split("#")[0].rsplit("/", 1)[1] for l in jaxlib_links} == {
      f"jaxlib-{release.test_jaxlib}-cp{v}-cp{v}-manylinux_2_27_x86_64.whl"
      for v in ("311", "312", "313")}
  install = (index / "install" / f"{release.label}.txt").read_text()
  assert f"jax=={release.label} --hash=sha256:{digest}" in install


def test_pip_installs_the_fork_from_the_index(server, release, tmp_path):
  python = _venv(tmp_path / "venv")
  proc = _pip(python, "--extra-index-url", server.url,
              f"jax=={release.label}", f"jaxlib=={release.test_jaxlib}")
  assert proc.returncode == 0, proc.stdout + proc.stderr
  out = subprocess.run(
      [str(python), "-c", "import jax; print(jax.__version__, "
       "jax.__version_info__, jax.config.jax_call_tf_slow_vmap)"],
      capture_output=True, text=True, check=True).stdout.strip()
  major, minor, patch = release.version.split(".")
  assert out == f"{release.label} ({major}, {minor}, {patch}) False"
  log = "".join(server.log)
  wheel = urllib.parse.quote(f"jax-{release.label}-py3-none-any.whl")
  assert "GET /simple/jax/" in log
  assert f"GET /files/{wheel}.metadata " in log  # PEP 658 metadata used
  assert f"GET /files/{wheel} " in log


def test_hash_pinned_install_file(server, release, tmp_path):
  python = _venv(tmp_path / "venv")
  install = server.url.replace("/simple/", f"/install/{release.label}.txt")
  proc = _pip(python, "--no-deps", "--require-hashes", "--extra-index-url",
              server.url, "-r", install)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  versions = subprocess.run(
      [str(python), "-c", "import importlib.metadata as m; "
       "print(m.version('jax'), m.version('jaxlib'))"],
      capture_output=True, text=True, check=True).stdout.split()
  assert versions == [release.label, release.test_jaxlib]


def test_pip_refuses_a_tampered_wheel(root, index, release, tmp_path):
  tampered = tmp_path / "tampered"
  shutil.copytree(index, tampered)
  wheel = tampered / "files" / f"jax-{release.label}-py3-none-any.whl"
  wheel.write_bytes(wheel.read_bytes() + b"\0")
  server = _Server(root, tampered)
  try:
    python = _venv(tmp_path / "venv")
    proc = _pip(python, "--no-deps", "--extra-index-url", server.url,
                f"jax=={release.label}")
  finally:
    server.close()
  assert proc.returncode != 0
  assert "DO NOT MATCH THE HASHES" in proc.stderr


def test_published_files_are_immutable(root, index, fork_wheel, tmp_path):
  other = tmp_path / fork_wheel.name
  other.write_bytes(fork_wheel.read_bytes() + b"\0")
  before = {p.name: _sha(p.read_bytes()) for p in (index / "files").iterdir()}
  proc = subprocess.run(
      [sys.executable, str(root / "build" / "fork.py"), "index", "--out",
       str(index), "--wheel", str(other), "--no-jaxlib"],
      capture_output=True, text=True)
  assert proc.returncode == 2
  assert "already published" in proc.stderr and "immutable" in proc.stderr
  after = {p.name: _sha(p.read_bytes()) for p in (index / "files").iterdir()}
  assert after == before


def test_rebuilding_keeps_published_files(fork_wheel, tmp_path):
  out = tmp_path / "index"
  index_lib.build(out, [fork_wheel])
  old = tmp_path / "jax-0.0.1-py3-none-any.whl"
  shutil.copyfile(fork_wheel, old)
  index_lib.build(out, [old])
  names = sorted(p.name for p in (out / "files").glob("*.whl"))
  assert names == sorted([fork_wheel.name, old.name])
  assert len(_links(out / "simple" / "jax" / "index.html")) == 2


def test_serve_refuses_a_directory_that_is_not_an_index(tmp_path):
  with pytest.raises(ForkError, match="not an index"):
    index_lib.serve(tmp_path)


def test_index_of_an_unknown_wheel_is_refused(root, tmp_path):
  stray = tmp_path / "jax-9.9.9+calltf.1-py3-none-any.whl"
  stray.write_bytes(b"")
  proc = subprocess.run(
      [sys.executable, str(root / "build" / "fork.py"), "index", "--out",
       str(tmp_path / "index"), "--wheel", str(stray)],
      capture_output=True, text=True, env=dict(os.environ))
  assert proc.returncode == 2
  assert "not a wheel of a release" in proc.stderr
