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
"""What an index server already holds, seen as `twine upload` would see it.

Run by `forklib.publishing.publish` with an interpreter that has twine (not
imported by the tool itself). It reads a JSON request on stdin::

  {"twine_args": ["--repository-url", URL],   # as given to twine upload
   "simple_url": null or URL,                 # the server's PEP 503 index
   "files": {"jax": ["jax-....whl"], ...}}    # what to look for

resolves the repository and the credentials exactly as `twine upload` does
(its options, TWINE_* environment variables, keyring, .pypirc), reads each
project's simple page (PEP 691 JSON or PEP 503 HTML) with them, and prints::

  {"repository": URL, "simple_url": URL, "found": {"jax-....whl": sha256},
   "listed": {"jax": ["jax-....whl", ...], ...}}  # every file of the pages

A file listed without a sha256 is downloaded and hashed. On an error it
prints {"error": message} and exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import html.parser
import json
import sys
import urllib.parse

from twine import exceptions
from twine import settings
from twine import utils

_ACCEPT = ("application/vnd.pypi.simple.v1+json, "
           "application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1")


class _Anchors(html.parser.HTMLParser):

  def __init__(self):
    super().__init__()
    self.hrefs: list[str] = []

  def handle_starttag(self, tag, attrs):
    if tag == "a" and dict(attrs).get("href"):
      self.hrefs.append(dict(attrs)["href"])


def _files_of(response) -> dict[str, tuple[str, str | None]]:
  """A project page's files: name -> (absolute URL, sha256 or None)."""
  files = {}
  if "json" in response.headers.get("Content-Type", ""):
    for f in response.json().get("files", []):
      url = urllib.parse.urljoin(response.url, f["url"])
      files[f["filename"]] = (url, f.get("hashes", {}).get("sha256"))
    return files
  parser = _Anchors()
  parser.feed(response.text)
  for href in parser.hrefs:
    url = urllib.parse.urljoin(response.url, href)
    parts = urllib.parse.urlsplit(url)
    name = urllib.parse.unquote(parts.path.rsplit("/", 1)[-1])
    fragment = urllib.parse.parse_qs(parts.fragment)
    sha = fragment.get("sha256", [None])[0]
    files[name] = (parts._replace(fragment="").geturl(), sha)
  return files


def _origin(url: str) -> tuple[str, str]:
  parts = urllib.parse.urlsplit(url)
  return parts.scheme, parts.netloc


def _get_on_server(session, url: str):
  """GET `url`, following redirects on the same server only.

  Some servers send requests for projects they do not hold to another index
  (pypiserver's fallback to the public index): what is there is not on this
  server, so such a redirect means "not held" (None).
  """
  for _ in range(10):
    response = session.get(url, headers={"Accept": _ACCEPT}, timeout=120,
                           allow_redirects=False)
    if not response.is_redirect:
      return response
    target = urllib.parse.urljoin(url, response.headers["Location"])
    if _origin(target) != _origin(url):
      return None
    url = target
  return None


class _Refused(Exception):
  """What the probe answers as {"error": message}."""


def _upload_settings(twine_args: list[str]) -> settings.Settings:
  """twine upload's settings for `twine_args`, resolved as twine does."""
  parser = argparse.ArgumentParser()
  settings.Settings.register_argparse_arguments(parser)
  args = parser.parse_args([*twine_args, "--non-interactive"])
  try:
    return settings.Settings.from_argparse(args)
  except exceptions.TwineException as e:
    raise _Refused(f"{type(e).__name__}: {e}")


def _session(upload_settings: settings.Settings):
  """A requests session with twine's credentials and certificates."""
  try:
    username, password = upload_settings.username, upload_settings.password
  except exceptions.NonInteractive:
    username = password = None  # read anonymously
  session = utils.make_requests_session()
  if username and password:
    session.auth = (username, password)
  if upload_settings.cacert:
    session.verify = upload_settings.cacert
  if upload_settings.client_cert:
    session.cert = upload_settings.client_cert
  return session


def _simple_index(session, simple_url: str | None, repository: str) -> str:
  """The server's simple index: `simple_url`, or found beside `repository`.

  The simple index must answer: a wrong URL must not read as "nothing
  published yet". Without --simple-url, <repository>/simple/ (pypiserver,
  Artifactory, most servers) or <repository>/+simple/ (devpi).
  """
  candidates = ([simple_url] if simple_url else
                [repository.rstrip("/") + "/simple/",
                 repository.rstrip("/") + "/+simple/"])
  tried = []
  for candidate in candidates:
    candidate = candidate.rstrip("/") + "/"
    root = _get_on_server(session, candidate)
    status = "a redirect to another server" if root is None else (
        f"HTTP {root.status_code}")
    if root is not None and root.status_code == 200:
      return candidate
    tried.append(f"{candidate} ({status})")
  raise _Refused("no simple index found at " + ", ".join(tried))


def _held(session, simple: str, wanted: dict[str, list[str]]
          ) -> tuple[dict[str, str], dict[str, list[str]]]:
  """What the server holds of each project of `wanted` (project -> names).

  Returns:
    The sha256 of each wanted file it holds, and every file its project
    pages list.
  """
  found = {}
  listed: dict[str, list[str]] = {}
  for project, names in wanted.items():
    url = f"{simple}{project}/"
    response = _get_on_server(session, url)
    if response is None or response.status_code == 404:
      continue  # not on this server (or only on another it redirects to)
    if response.status_code != 200:
      raise _Refused(f"GET {url} answered HTTP "
                     f"{response.status_code} {response.reason}")
    files = _files_of(response)
    listed[project] = sorted(files)
    for name, (file_url, sha) in files.items():
      if name not in names:
        continue
      if sha is None:
        download = session.get(file_url, timeout=600)
        download.raise_for_status()
        sha = hashlib.sha256(download.content).hexdigest()
      found[name] = sha
  return found, listed


def main() -> int:
  request = json.load(sys.stdin)
  try:
    upload_settings = _upload_settings(request["twine_args"])
    repository = upload_settings.repository_config["repository"]
    session = _session(upload_settings)
    simple = _simple_index(session, request["simple_url"], repository)
    found, listed = _held(session, simple, request["files"])
  except _Refused as e:
    print(json.dumps({"error": str(e)}))
    return 1
  print(json.dumps({"repository": repository, "simple_url": simple,
                    "found": found, "listed": listed}))
  return 0


if __name__ == "__main__":
  sys.exit(main())
