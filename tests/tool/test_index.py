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
come from pip's configured index, as they would for a user. Publication is
append-only and transactional: a lock, a ledger of published hashes verified
before any change, nothing deleted that the tool did not write.
"""

from __future__ import annotations

import email.parser
import hashlib
import html.parser
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

import packaging.specifiers
import pytest

from forklib import ForkError
from forklib import manifest as manifest_lib
from forklib.publishing import index as index_lib
from forklib.publishing import serve as serve_lib
from forklib.sources import fetch
from forklib.sources import jaxlib_mirror


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


def _jaxlib_pins(root: pathlib.Path, release: manifest_lib.Release
                 ) -> list[jaxlib_mirror.PinnedWheel]:
  """The jaxlib wheels `index` mirrors for `release`: its pins.toml entry."""
  return jaxlib_mirror.load_pins(root / "jaxlib_build" / "pins.toml")[
      release.test_jaxlib]


def _upstream_requires_python(release: manifest_lib.Release) -> str:
  """Requires-Python of upstream's sdist of `release` (verified, cached)."""
  with tarfile.open(fetch.fetch(release)) as tar:
    pkg_info = tar.extractfile(f"jax-{release.version}/PKG-INFO").read()
  return email.parser.BytesParser().parsebytes(pkg_info)["Requires-Python"]


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


def _pip(python: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
  """`pip install` with the venv's pip.

  --no-compile: byte-compiling the installed modules (jax's, jaxlib's,
  scipy's) is most of an install's time, and pip ignores a module that does
  not compile, so it checks nothing here.
  """
  return subprocess.run([str(python), "-m", "pip", "install",
                         "--disable-pip-version-check", "--no-compile",
                         *args], capture_output=True, text=True)


def test_pages_link_every_file_with_hashes_and_metadata(root, index,
                                                        fork_wheel, release):
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
  # upstream's Requires-Python (>=3.11 up to 0.10.x, >=3.12 from 0.11),
  # which admits the Python the release is tested with.
  upstream = _upstream_requires_python(release)
  assert link["data-requires-python"] == upstream
  assert packaging.specifiers.SpecifierSet(upstream).contains(
      release.test_python)
  assert email.parser.BytesParser().parsebytes(metadata)["Version"] == (
      release.label)
  # jaxlib: exactly the wheels pinned for the release, with their hashes.
  pins = _jaxlib_pins(root, release)
  jaxlib_links = _links(index / "simple" / "jaxlib" / "index.html")
  assert {urllib.parse.unquote(l["href"].split("#")[0].rsplit("/", 1)[1]):
          l["href"].split("#sha256=")[1] for l in jaxlib_links} == {
              p.name: p.sha256 for p in pins}
  install = (index / "install" / f"{release.label}.txt").read_text()
  assert f"jax=={release.label} --hash=sha256:{digest}" in install


def test_pip_installs_the_fork_from_the_index(server, release, new_venv,
                                              tmp_path):
  python = new_venv(tmp_path / "venv")
  proc = _pip(python, "--extra-index-url", server.url,
              f"jax=={release.label}", f"jaxlib=={release.test_jaxlib}")
  assert proc.returncode == 0, proc.stdout + proc.stderr
  out = subprocess.run(
      [str(python), "-c", "import jax; print(jax.__version__, "
       "jax.__version_info__, jax.config.jax_call_tf_slow_vmap)"],
      capture_output=True, text=True, check=True).stdout.strip()
  # __version_info__ is upstream's tuple, (0, 10, 2) or (0, 12, 0, 1).
  version_info = manifest_lib.version_tuple(release.version)
  assert out == f"{release.label} {version_info} False"
  log = "".join(server.log)
  wheel = urllib.parse.quote(f"jax-{release.label}-py3-none-any.whl")
  assert "GET /simple/jax/" in log
  assert f"GET /files/{wheel}.metadata " in log  # PEP 658 metadata used
  assert f"GET /files/{wheel} " in log


def test_hash_pinned_install_file(server, release, new_venv, tmp_path):
  python = new_venv(tmp_path / "venv")
  install = server.url.replace("/simple/", f"/install/{release.label}.txt")
  proc = _pip(python, "--no-deps", "--require-hashes", "--extra-index-url",
              server.url, "-r", install)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  versions = subprocess.run(
      [str(python), "-c", "import importlib.metadata as m; "
       "print(m.version('jax'), m.version('jaxlib'))"],
      capture_output=True, text=True, check=True).stdout.split()
  assert versions == [release.label, release.test_jaxlib]


def test_pip_refuses_a_tampered_wheel(root, index, release, new_venv,
                                      tmp_path):
  tampered = tmp_path / "tampered"
  shutil.copytree(index, tampered)
  wheel = tampered / "files" / f"jax-{release.label}-py3-none-any.whl"
  wheel.write_bytes(wheel.read_bytes() + b"\0")
  server = _Server(root, tampered)
  try:
    python = new_venv(tmp_path / "venv")
    proc = _pip(python, "--no-deps", "--extra-index-url", server.url,
                f"jax=={release.label}")
  finally:
    server.close()
  assert proc.returncode != 0
  assert "409" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
  assert any(f"REFUSED files/{wheel.name}" in line for line in server.log)


def test_serve_refuses_a_file_that_does_not_match_the_ledger(
    root, index, release, tmp_path):
  copy = _linked_copy(index, tmp_path / "index")
  name = f"jax-{release.label}-py3-none-any.whl"
  wheel = copy / "files" / name
  good = wheel.read_bytes()
  server = _Server(root, copy)
  try:
    url = server.url.removesuffix("simple/") + "files/" + name
    with urllib.request.urlopen(url) as answer:
      assert answer.status == 200 and answer.read() == good
    _replace(wheel, good[:-1] + bytes([good[-1] ^ 1]))
    for method in ("GET", "HEAD"):
      with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(url, method=method))
      assert refused.value.code == 409, method
    page = copy / "simple" / "jax" / "index.html"
    _replace(page, page.read_bytes() + b"<!-- edited -->\n")
    with pytest.raises(urllib.error.HTTPError) as refused:
      urllib.request.urlopen(server.url + "jax/")
    assert refused.value.code == 409
  finally:
    server.close()
  assert any(f"REFUSED files/{name}" in line for line in server.log)


@pytest.fixture(scope="module")
def default_index(root, tmp_path_factory) -> pathlib.Path:
  """`index` with no release named: the wheel it builds, no jaxlib."""
  out = tmp_path_factory.mktemp("default-index") / "index"
  proc = _fork(root, "-q", "index", "--out", str(out), "--no-jaxlib")
  assert proc.returncode == 0, proc.stderr
  return out


def test_index_publishes_the_default_release_unless_told(root,
                                                         default_index):
  manifest = manifest_lib.load(root / "patches" / "upstream.toml")
  ledger = json.loads((default_index / "ledger.json").read_text())
  assert sorted(ledger["releases"]) == [manifest.default().label]
  assert sorted(ledger["wheels"]) == [
      f"jax-{manifest.default().label}-py3-none-any.whl"]


def test_release_choice_of_index_and_publish(root):
  from forklib.publishing import publication  # pylint: disable=g-import-not-at-top
  manifest = manifest_lib.load(root / "patches" / "upstream.toml")
  assert publication.select(manifest, [], False) == [manifest.default()]
  assert publication.select(manifest, [], True) == manifest.newest()
  oldest = manifest.newest()[-1]
  assert publication.select(manifest, [oldest.version], False) == [oldest]
  with pytest.raises(ForkError, match="not both"):
    publication.select(manifest, [oldest.version], True)
  # Wheels built already, or releases to build: one would be left out.
  with pytest.raises(ForkError, match=r"\(--wheel\) or .* not both"):
    publication.chosen(manifest, [oldest.version], False, ["x.whl"])
  with pytest.raises(ForkError, match=r"\(--wheel\) or .* not both"):
    publication.chosen(manifest, [], True, ["x.whl"])
  assert publication.chosen(manifest, [], False, []) == (
      [manifest.default()], {})
  for command in ("index", "publish"):
    help_text = " ".join(_fork(root, command, "--help").stdout.split())
    assert "default: the newest in the manifest" in help_text, command
    assert "--all" in help_text, command
    assert "--wheel" in help_text, command  # a wheel built already


def _forge(index: pathlib.Path, name: str, data: bytes) -> None:
  """Replaces a published wheel, and its hashes in the page and the ledger."""
  old = _sha((index / "files" / name).read_bytes())
  new = _sha(data)
  _replace(index / "files" / name, data)
  for path in [index / "ledger.json",
               *(index / "simple").rglob("index.html"),
               *(index / "install").glob("*.txt")]:
    text = path.read_text()
    if old in text:
      _replace(path, text.replace(old, new).encode())
  ledger = json.loads((index / "ledger.json").read_text())
  pages = {k: _sha((index / k).read_bytes()) for k in ledger["files"]}
  ledger["files"].update(pages)
  _replace(index / "ledger.json",
           (json.dumps(ledger, indent=1, sort_keys=True) + "\n").encode())


def test_a_forged_index_is_named_as_changed_outside_the_tool(
    root, default_index, tmp_path):
  """Wheel, page and ledger forged together: `index` says what happened."""
  copy = _linked_copy(default_index, tmp_path / "index")
  name = next(n for n in json.loads((copy / "ledger.json").read_text())[
      "wheels"])
  wheel = copy / "files" / name
  _forge(copy, name, wheel.read_bytes() + b"\0")
  before = _tree(copy)
  proc = _fork(root, "index", "--out", str(copy), "--no-jaxlib")
  assert proc.returncode == 2
  assert "the index was changed outside the tool" in proc.stderr, proc.stderr
  assert "bump fork_release" not in proc.stderr
  assert _tree(copy) == before


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
    serve_lib.serve(tmp_path)


def test_index_of_an_unknown_wheel_is_refused(root, tmp_path):
  stray = tmp_path / "jax-9.9.9+calltf.1-py3-none-any.whl"
  stray.write_bytes(b"")
  proc = subprocess.run(
      [sys.executable, str(root / "build" / "fork.py"), "index", "--out",
       str(tmp_path / "index"), "--wheel", str(stray)],
      capture_output=True, text=True, env=dict(os.environ))
  assert proc.returncode == 2
  assert "not a wheel of a release" in proc.stderr


# Append-only, transactional publication.


def _fork(root: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, str(root / "build" / "fork.py"),
                         *args], capture_output=True, text=True)


def _linked_copy(index: pathlib.Path, dest: pathlib.Path) -> pathlib.Path:
  """A copy of `index` whose files are hard links (cheap for jaxlib wheels).

  Tests replace files in it (unlink, then write) and never write through a
  link, so the module's index stays as built.
  """
  shutil.copytree(index, dest, copy_function=os.link)
  return dest


def _replace(path: pathlib.Path, data: bytes) -> None:
  path.unlink()
  path.write_bytes(data)


def _tree(path: pathlib.Path) -> dict[str, str]:
  return {p.relative_to(path).as_posix(): _sha(p.read_bytes())
          for p in sorted(path.rglob("*")) if p.is_file()}


def _small_wheel(directory: pathlib.Path, version: str,
                 project: str = "jax", requires_python: str = ">=3.11",
                 payload: str = "", metadata: str = "") -> pathlib.Path:
  """A minimal wheel of `project` (metadata and one module).

  `metadata`: more METADATA lines, e.g. "Provides-Extra: tensorflow\\n".
  """
  name = f"{project}-{version}"
  path = directory / f"{name}-py3-none-any.whl"
  with zipfile.ZipFile(path, "w") as z:
    z.writestr(f"{project}/__init__.py", f"{payload}\n")
    z.writestr(f"{name}.dist-info/METADATA",
               f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}"
               f"\nRequires-Python: {requires_python}\n{metadata}")
    z.writestr(f"{name}.dist-info/WHEEL", "Wheel-Version: 1.0\n")
    z.writestr(f"{name}.dist-info/RECORD", "")
  return path


def test_index_refuses_a_directory_that_is_not_an_index(root, fork_wheel,
                                                        tmp_path):
  out = tmp_path / "www"
  out.mkdir()
  (out / "notes.txt").write_text("not yours\n")
  proc = _fork(root, "index", "--out", str(out), "--wheel", str(fork_wheel),
               "--no-jaxlib")
  assert proc.returncode == 2
  assert f"{out} is not empty and has no ledger.json" in proc.stderr
  assert "notes.txt" in proc.stderr
  assert [p.name for p in out.iterdir()] == ["notes.txt"]
  assert (out / "notes.txt").read_text() == "not yours\n"


def test_index_keeps_files_it_did_not_write(tmp_path):
  out = tmp_path / "index"
  a = _small_wheel(tmp_path, "0.1")
  index_lib.build(out, [a])
  (out / "robots.txt").write_text("User-agent: *\n")
  (out / "files" / "README").write_text("ours, not the tool's\n")
  b = _small_wheel(tmp_path, "0.2")
  index_lib.build(out, [b])
  assert (out / "robots.txt").read_text() == "User-agent: *\n"
  assert (out / "files" / "README").read_text() == "ours, not the tool's\n"
  assert [l.get("href").split("#")[0].rsplit("/", 1)[1]
          for l in _links(out / "simple" / "jax" / "index.html")] == [
              a.name, b.name]
  # A file the tool did not write, where it would write one, is refused.
  c = _small_wheel(tmp_path, "0.3")
  (out / "files" / c.name).write_bytes(b"someone else's")
  with pytest.raises(ForkError, match=f"files/{c.name} is in the way"):
    index_lib.build(out, [c])
  assert (out / "files" / c.name).read_bytes() == b"someone else's"


def test_concurrent_index_runs_lose_no_publication(root, tmp_path):
  out = tmp_path / "index"
  go = tmp_path / "go"
  wheels = [_small_wheel(tmp_path, f"0.{i}") for i in range(1, 5)]
  script = ("import pathlib, sys, time\n"
            f"sys.path.insert(0, {str(root / 'build')!r})\n"
            "from forklib.publishing import index\n"
            "go = pathlib.Path(sys.argv[1])\n"
            "while not go.exists():\n  time.sleep(0.001)\n"
            "index.build(pathlib.Path(sys.argv[2]), [pathlib.Path(sys.argv[3])],"
            " {sys.argv[4]: [pathlib.Path(sys.argv[3]).name]})\n")
  procs = [subprocess.Popen(
      [sys.executable, "-c", script, str(go), str(out), str(w),
       f"0.{i}+calltf.1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
      text=True) for i, w in enumerate(wheels, 1)]
  time.sleep(1.0)  # every process is waiting for the go file
  go.touch()
  results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
  assert [rc for rc, _ in results] == [0] * 4, results
  published = sorted(l["href"].split("#")[0].rsplit("/", 1)[1]
                     for l in _links(out / "simple" / "jax" / "index.html"))
  assert published == sorted(w.name for w in wheels)
  assert sorted(p.name for p in (out / "install").iterdir()) == [
      f"0.{i}+calltf.1.txt" for i in range(1, 5)]


def test_no_jaxlib_keeps_the_jaxlib_pins_of_a_published_release(
    root, index, fork_wheel, release, tmp_path):
  copy = _linked_copy(index, tmp_path / "index")
  install = copy / "install" / f"{release.label}.txt"
  before = install.read_text()
  jaxlibs = len(_jaxlib_pins(root, release))
  assert before.count("jaxlib==") == 1
  assert before.count("--hash") == 1 + jaxlibs  # the fork and each jaxlib
  proc = _fork(root, "index", "--out", str(copy), "--wheel", str(fork_wheel),
               "--no-jaxlib")
  assert proc.returncode == 0, proc.stderr
  assert install.read_text() == before


def test_index_refuses_a_tampered_published_wheel(root, index, fork_wheel,
                                                  release, tmp_path):
  copy = _linked_copy(index, tmp_path / "index")
  jaxlib = sorted((copy / "files").glob("jaxlib-*.whl"))[-1]
  _replace(jaxlib, jaxlib.read_bytes() + b"\0")
  before = _tree(copy)
  proc = _fork(root, "index", "--out", str(copy), "--wheel", str(fork_wheel),
               "--no-jaxlib")
  assert proc.returncode == 2
  assert f"{jaxlib} does not match the index's ledger" in proc.stderr
  assert _tree(copy) == before  # the forged hash was not published
  page = (copy / "simple" / "jaxlib" / "index.html").read_text()
  assert _sha(jaxlib.read_bytes()) not in page


def test_index_refuses_an_edited_page(root, index, fork_wheel, tmp_path):
  copy = _linked_copy(index, tmp_path / "index")
  page = copy / "simple" / "jax" / "index.html"
  forged = _sha(b"forged")
  _replace(page, re.sub(r"#sha256=[0-9a-f]{64}", f"#sha256={forged}",
                        page.read_text()).encode())
  proc = _fork(root, "index", "--out", str(copy), "--wheel", str(fork_wheel),
               "--no-jaxlib")
  assert proc.returncode == 2
  assert f"{page} does not match the index's ledger" in proc.stderr
  assert forged in page.read_text()


class _Crash(Exception):
  pass


def test_an_interrupted_publication_is_undone(tmp_path, monkeypatch):
  out = tmp_path / "index"
  a, b = _small_wheel(tmp_path, "0.1"), _small_wheel(tmp_path, "0.2")
  index_lib.build(out, [a], {"0.1+calltf.1": [a.name]})
  published = _tree(out)
  write = index_lib._write_atomic

  def crash_at_commit(path, data):
    if path.name == index_lib.LEDGER:
      raise _Crash()
    write(path, data)

  monkeypatch.setattr(index_lib, "_write_atomic", crash_at_commit)
  with pytest.raises(_Crash):
    index_lib.build(out, [b], {"0.2+calltf.1": [b.name]})
  assert (out / "files" / b.name).exists()  # written, not committed
  assert (out / index_lib.JOURNAL).exists()
  monkeypatch.setattr(index_lib, "_write_atomic", write)
  index_lib.build(out, [])
  assert _tree(out) == published


def test_an_interrupted_publication_after_its_commit_is_kept(tmp_path,
                                                             monkeypatch):
  out = tmp_path / "index"
  a, b = _small_wheel(tmp_path, "0.1"), _small_wheel(tmp_path, "0.2")
  index_lib.build(out, [a])
  real_unlink = pathlib.Path.unlink

  def crash_on_journal(self, *args, **kwargs):
    if self.name == index_lib.JOURNAL:
      raise _Crash()
    return real_unlink(self, *args, **kwargs)

  monkeypatch.setattr(pathlib.Path, "unlink", crash_on_journal)
  with pytest.raises(_Crash):
    index_lib.build(out, [b])
  monkeypatch.setattr(pathlib.Path, "unlink", real_unlink)
  index_lib.build(out, [])
  assert not (out / index_lib.JOURNAL).exists()
  assert len(_links(out / "simple" / "jax" / "index.html")) == 2


# serve: the index's files, nothing else.


def _get(url: str, method: str = "GET") -> tuple[int, bytes]:
  request = urllib.request.Request(url, method=method,
                                   data=b"x" if method in ("PUT", "POST")
                                   else None)
  try:
    with urllib.request.urlopen(request, timeout=30) as response:
      return response.status, response.read()
  except urllib.error.HTTPError as e:
    return e.code, e.read()


def test_serve_lists_no_directories(server, index):
  base = server.url.removesuffix("/simple/")
  for path in ("/", "/files/", "/files", "/install/", "/simple/jax/../",
               "/ledger.json", "/files/../ledger.json", "/%2e%2e/"):
    status, body = _get(base + path)
    assert status == 404, (path, status, body[:200])
  status, body = _get(base + "/simple/")
  assert status == 200 and b'href="jax/"' in body
  status, _ = _get(base + "/simple/jax")  # redirected to /simple/jax/
  assert status == 200


def test_serve_follows_no_symlink_out_of_the_tree(root, index, release,
                                                  tmp_path):
  copy = _linked_copy(index, tmp_path / "index")
  secret = tmp_path / "secret.txt"
  secret.write_text("outside the index\n")
  (copy / "files" / "secret.whl").symlink_to(secret)
  install = copy / "install" / f"{release.label}.txt"
  install.unlink()
  install.symlink_to(secret)  # a published name, now a link out of the tree
  server = _Server(root, copy)
  try:
    base = server.url.removesuffix("/simple/")
    for path in ("/files/secret.whl",
                 f"/install/{urllib.parse.quote(install.name)}"):
      status, body = _get(base + path)
      assert status == 404, (path, body)
      assert b"outside the index" not in body
  finally:
    server.close()


def test_serve_refuses_writes(server):
  base = server.url.removesuffix("/simple/")
  for method in ("PUT", "POST", "DELETE"):
    status, _ = _get(base + "/files/new.whl", method=method)
    assert status == 405, method
