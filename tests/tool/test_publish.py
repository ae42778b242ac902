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
"""publish: twine uploads to real index servers on 127.0.0.1.

pypiserver runs as teams run it: anonymous reads, authenticated uploads (an
htpasswd file), no fallback to the public index; devpi-server too, offline,
with a user and an index of its own. `publish` uploads the fork's
wheel and the pinned jaxlib wheels, skips what is already there with the same
hash, refuses a different file under a published name, and pip then installs
the fork from the server into a fresh virtual environment.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

import pytest

from forklib.publishing import publish as publish_lib
from forklib.sources import jaxlib_mirror

from .test_index import _pip
from .test_index import _small_wheel

USER, PASSWORD = "fork-publisher", "correct horse battery staple"


def _sha(path: pathlib.Path) -> str:
  return hashlib.sha256(path.read_bytes()).hexdigest()


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _get(url: str, data: bytes | None = None) -> tuple[int, str]:
  try:
    with urllib.request.urlopen(urllib.request.Request(url, data=data),
                                timeout=30) as response:
      return response.status, response.read().decode()
  except urllib.error.HTTPError as e:
    return e.code, e.read().decode(errors="replace")


class _PypiServer:
  """pypiserver on 127.0.0.1: anonymous reads, uploads need the password."""

  def __init__(self, directory: pathlib.Path, hash_algo: str = "sha256"):
    from passlib.apache import HtpasswdFile
    directory.mkdir()
    (directory / "packages").mkdir()
    htpasswd = HtpasswdFile(str(directory / "htpasswd"), new=True)
    htpasswd.set_password(USER, PASSWORD)
    htpasswd.save()
    port = _free_port()
    self.log = directory / "server.log"
    self.proc = subprocess.Popen(
        [sys.executable, "-m", "pypiserver", "run", "-i", "127.0.0.1", "-p",
         str(port), "-P", str(directory / "htpasswd"), "-a", "update",
         "--disable-fallback", "--hash-algo", hash_algo,
         str(directory / "packages")],
        stdout=self.log.open("w"), stderr=subprocess.STDOUT)
    self.url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 60
    while _get_or_none(self.url + "simple/") != 200:
      if self.proc.poll() is not None or time.monotonic() > deadline:
        raise RuntimeError(f"pypiserver did not start: {self.log.read_text()}")
      time.sleep(0.2)

  def hashes(self, project: str) -> dict[str, str]:
    """The files of `project` on the server, with their sha256 fragments."""
    status, page = _get(f"{self.url}simple/{project}/")
    if status == 404:
      return {}
    assert status == 200, page
    return {urllib.parse.unquote(m[0]): m[1] for m in re.findall(
        r'href="[^"]*/([^/"#]+)#sha256=([0-9a-f]{64})"', page)}

  def close(self):
    self.proc.terminate()
    self.proc.wait(timeout=30)


def _get_or_none(url: str) -> int | None:
  try:
    return _get(url)[0]
  except OSError:
    return None


@pytest.fixture
def pypiserver(tmp_path):
  server = _PypiServer(tmp_path / "pypiserver")
  yield server
  server.close()


def _env(credentials: bool = True) -> dict[str, str]:
  env = {k: v for k, v in os.environ.items() if not k.startswith("TWINE_")}
  if credentials:
    env.update(TWINE_USERNAME=USER, TWINE_PASSWORD=PASSWORD)
  return env


def _publish(root, release, url, *args, credentials=True, wheel=None):
  """`fork.py publish` of `release`: the tool builds the wheel, or takes
  `wheel` (`--wheel`, checked against the release's patched tree, no
  build: 10-15 s less a call)."""
  which = (["--wheel", str(wheel)] if wheel is not None
           else ["--upstream", release.version])
  return subprocess.run(
      [sys.executable, str(root / "build" / "fork.py"), "publish",
       "--repository-url", url, *which, *args],
      env=_env(credentials), capture_output=True, text=True,
      stdin=subprocess.DEVNULL)


def _twine_upload(url: str, wheel: pathlib.Path, credentials: bool = True,
                  password: str = PASSWORD) -> subprocess.CompletedProcess:
  env = _env(credentials)
  if credentials:
    env["TWINE_PASSWORD"] = password
  return subprocess.run(
      [sys.executable, "-m", "twine", "upload", "--non-interactive",
       "--disable-progress-bar", "--repository-url", url, str(wheel)],
      env=env, capture_output=True, text=True)


def _installed_version(python: pathlib.Path, dist: str) -> str:
  return subprocess.run(
      [str(python), "-c", "import importlib.metadata as m, sys; "
       "print(m.version(sys.argv[1]))", dist],
      capture_output=True, text=True, check=True).stdout.strip()


def test_publish_round_trip_then_pip_installs_the_fork(
    root, release, fork_wheel, pypiserver, new_venv, tmp_path):
  proc = _publish(root, release, pypiserver.url)
  assert proc.returncode == 0, proc.stderr
  pins = jaxlib_mirror.load_pins(root / "jaxlib_build" / "pins.toml")[
      release.test_jaxlib]
  expected = {p.name: p.sha256 for p in pins}
  assert proc.stdout.split() == [*expected, fork_wheel.name]  # jaxlib first
  assert pypiserver.hashes("jaxlib") == expected
  # The wheel publish built is the wheel under test, byte for byte.
  assert pypiserver.hashes("jax") == {fork_wheel.name: _sha(fork_wheel)}

  # Again, with the wheel built already: each file is there already.
  again = _publish(root, release, pypiserver.url, wheel=fork_wheel)
  assert again.returncode == 0, again.stderr
  assert again.stdout == ""
  assert again.stderr.count("same sha256") == len(expected) + 1
  for name in [*expected, fork_wheel.name]:
    assert f"{name}: already on {pypiserver.url}, same sha256" in again.stderr

  python = new_venv(tmp_path / "venv")
  proc = _pip(python, "--no-deps", "--index-url",
              pypiserver.url + "simple/", f"jax=={release.label}")
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert _installed_version(python, "jax") == release.label

  # The hash-pinned route, with the pins kept by the user.
  pinned = tmp_path / "requirements.txt"
  pinned.write_text(f"jax=={release.label} "
                    f"--hash=sha256:{_sha(fork_wheel)}\n")
  python = new_venv(tmp_path / "venv-pinned")
  proc = _pip(python, "--no-deps", "--require-hashes", "--index-url",
              pypiserver.url + "simple/", "-r", str(pinned))
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert _installed_version(python, "jax") == release.label


def test_uploads_without_credentials_are_refused(root, release, fork_wheel,
                                                 pypiserver):
  # The server itself: an upload request without credentials.
  status, _ = _get(pypiserver.url, data=b":action=file_upload")
  assert status in (401, 403)
  wrong = _twine_upload(pypiserver.url, fork_wheel, password="guess")
  assert wrong.returncode != 0
  assert re.search(r"\b(401|403)\b", wrong.stdout + wrong.stderr)
  # publish without credentials: refused, says where credentials come from.
  proc = _publish(root, release, pypiserver.url, "--no-jaxlib",
                  credentials=False, wheel=fork_wheel)
  assert proc.returncode == 2
  assert f"twine upload of {fork_wheel.name}" in proc.stderr
  assert "TWINE_USERNAME and TWINE_PASSWORD" in proc.stderr
  assert pypiserver.hashes("jax") == {}


def test_publish_refuses_a_simple_index_that_does_not_answer(
    root, release, fork_wheel, pypiserver):
  """A wrong --simple-url must not read as "nothing published yet"."""
  proc = _publish(root, release, pypiserver.url, "--no-jaxlib",
                  "--simple-url", pypiserver.url + "elsewhere/",
                  wheel=fork_wheel)
  assert proc.returncode == 2
  assert (f"no simple index found at {pypiserver.url}elsewhere/ (HTTP 404)"
          in proc.stderr)
  assert pypiserver.hashes("jax") == {}


def _forged(wheel: pathlib.Path, directory: pathlib.Path) -> pathlib.Path:
  """A valid wheel under the same name, with one more module."""
  directory.mkdir()
  forged = directory / wheel.name
  shutil.copyfile(wheel, forged)
  with zipfile.ZipFile(forged, "a") as z:
    z.writestr("jax/_forged.py", "print('not from the fork')\n")
  return forged


def test_publish_refuses_a_different_file_already_there(
    root, release, fork_wheel, pypiserver, tmp_path):
  forged = _forged(fork_wheel, tmp_path / "forged")
  assert _twine_upload(pypiserver.url, forged).returncode == 0
  proc = _publish(root, release, pypiserver.url, "--no-jaxlib",
                  wheel=fork_wheel)
  assert proc.returncode == 2
  assert "already holds a different file" in proc.stderr
  assert (f"{fork_wheel.name}: the server has sha256 {_sha(forged)}, the "
          f"verified file has {_sha(fork_wheel)}") in proc.stderr
  assert "nothing was uploaded" in proc.stderr
  assert pypiserver.hashes("jax") == {fork_wheel.name: _sha(forged)}


def test_publish_hashes_files_listed_without_sha256(root, release, fork_wheel,
                                                    tmp_path):
  server = _PypiServer(tmp_path / "md5-server", hash_algo="md5")
  try:
    assert _twine_upload(server.url, fork_wheel).returncode == 0
    proc = _publish(root, release, server.url, "--no-jaxlib",
                    wheel=fork_wheel)
    assert proc.returncode == 0, proc.stderr
    assert f"{fork_wheel.name}: already on {server.url}, same sha256" in (
        proc.stderr)
    forged = _forged(fork_wheel, tmp_path / "forged")
    other = _PypiServer(tmp_path / "md5-server-2", hash_algo="md5")
    try:
      assert _twine_upload(other.url, forged).returncode == 0
      proc = _publish(root, release, other.url, "--no-jaxlib",
                      wheel=fork_wheel)
      assert proc.returncode == 2
      assert "already holds a different file" in proc.stderr
    finally:
      other.close()
  finally:
    server.close()


class _Devpi:
  """devpi-server on 127.0.0.1, offline, with a user's index."""

  def __init__(self, directory: pathlib.Path):
    bindir = pathlib.Path(sys.executable).parent
    server_dir = directory / "server"
    subprocess.run([str(bindir / "devpi-init"), "--serverdir",
                    str(server_dir), "--root-passwd", "root-password"],
                   check=True, capture_output=True)
    port = _free_port()
    self.log = directory / "server.log"
    # --argon2-*: devpi-server's hidden options for tests (it is pinned in
    # tests/requirements.txt). They make it derive its login-token key from
    # its random secret cheaply: at the defaults (512 MiB, 16 passes) that
    # takes about ten seconds of each start. twine and pip here send the
    # password (basic auth), not a token, so nothing checked uses that key.
    self.proc = subprocess.Popen(
        [str(bindir / "devpi-server"), "--serverdir", str(server_dir),
         "--host", "127.0.0.1", "--port", str(port), "--offline-mode",
         "--argon2-memory-cost", "8", "--argon2-parallelism", "1",
         "--argon2-time-cost", "1"],
        stdout=self.log.open("w"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while _get_or_none(base + "/+api") != 200:
      if self.proc.poll() is not None or time.monotonic() > deadline:
        self.close()
        raise RuntimeError(f"devpi-server did not start: "
                           f"{self.log.read_text()}")
      time.sleep(0.3)
    self._request("PUT", f"{base}/{USER}", {"password": PASSWORD})
    self._request("PUT", f"{base}/{USER}/dev",
                  {"type": "stage", "bases": [], "volatile": False},
                  auth=True)
    self.url = f"{base}/{USER}/dev/"

  @staticmethod
  def _request(method, url, body, auth=False):
    request = urllib.request.Request(
        url, method=method, data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"})
    if auth:
      token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
      request.add_header("Authorization", f"Basic {token}")
    with urllib.request.urlopen(request, timeout=30) as response:
      assert response.status in (200, 201), response.read()

  def close(self):
    self.proc.terminate()
    self.proc.wait(timeout=30)


def test_publish_to_devpi_then_pip_installs_the_fork(root, release,
                                                     fork_wheel, new_venv,
                                                     tmp_path):
  devpi = _Devpi(tmp_path / "devpi")
  try:
    # No --simple-url: publish finds devpi's <index>/+simple/ itself.
    proc = _publish(root, release, devpi.url, "--no-jaxlib",
                    wheel=fork_wheel)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [fork_wheel.name]
    again = _publish(root, release, devpi.url, "--no-jaxlib",
                     wheel=fork_wheel)
    assert again.returncode == 0 and again.stdout == "", again.stderr
    assert "same sha256" in again.stderr
    anonymous = _twine_upload(devpi.url, _forged(fork_wheel, tmp_path / "f"),
                              password="guess")
    assert anonymous.returncode != 0
    python = new_venv(tmp_path / "venv")
    proc = _pip(python, "--no-deps", "--index-url",
                devpi.url + "+simple/", f"jax=={release.label}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _installed_version(python, "jax") == release.label
  finally:
    devpi.close()


def test_the_twine_pin_matches_the_test_requirements(root):
  requirements = (root / "tests" / "requirements.txt").read_text()
  assert f"twine=={publish_lib.TWINE_VERSION}\n" in requirements


def test_no_jaxlib_is_refused_on_a_server_that_serves_jaxlib(
    root, release, fork_wheel, pypiserver, tmp_path):
  """uv would take jaxlib from this server only, and miss the release's."""
  other = _small_wheel(tmp_path, "0.0.1", project="jaxlib")
  assert _twine_upload(pypiserver.url, other).returncode == 0
  proc = _publish(root, release, pypiserver.url, "--no-jaxlib",
                  wheel=fork_wheel)
  assert proc.returncode == 2, proc.stdout + proc.stderr
  assert (f"serves jaxlib, but not the jaxlib of jax {release.label}"
          in proc.stderr), proc.stderr
  assert "Nothing was uploaded" in proc.stderr
  assert pypiserver.hashes("jax") == {}


def test_publish_refuses_a_given_wheel_that_is_not_the_forks(
    root, release, fork_wheel, pypiserver, tmp_path):
  """`--wheel` takes a wheel built elsewhere, as `index --wheel` does, and
  checks it against the release's patched tree before any upload."""
  forged = _forged(fork_wheel, tmp_path / "forged")
  proc = _publish(root, release, pypiserver.url, "--no-jaxlib", wheel=forged)
  assert proc.returncode == 2, proc.stdout + proc.stderr
  assert f"is not the fork's wheel of jax {release.label}" in proc.stderr
  assert "jax/_forged.py: not in the patched tree" in proc.stderr
  assert pypiserver.hashes("jax") == {}
  renamed = tmp_path / "jax-0.0.1-py3-none-any.whl"
  shutil.copyfile(fork_wheel, renamed)
  proc = _publish(root, release, pypiserver.url, "--no-jaxlib",
                  wheel=renamed)
  assert proc.returncode == 2, proc.stdout + proc.stderr
  assert "is not a wheel of a release in" in proc.stderr
  assert pypiserver.hashes("jax") == {}
