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
"""Bazel BUILD entries for the modules and tests a staged commit adds.

Upstream builds with Bazel: a new module must be in the `srcs` of a
`py_library` (the one that lists `call_tf.py`), and a new test needs a
rule, which `stage` models on a neighbour's (`call_tf_test`'s for jax2tf
tests, `version_test`'s for a test of `tests/`; the plan says which).
"""

from __future__ import annotations

import pathlib
import re

LIBRARY_ANCHOR = "call_tf.py"


def build_file(repo: pathlib.Path, path: str) -> pathlib.Path | None:
  """The BUILD (or BUILD.bazel) of the package `path` (a file) is in.

  The nearest one in `path`'s directory or above it.
  """
  parts = pathlib.PurePosixPath(path).parent.parts
  for n in range(len(parts), 0, -1):
    for name in ("BUILD", "BUILD.bazel"):
      candidate = repo.joinpath(*parts[:n], name)
      if candidate.is_file():
        return candidate
  return None


def _read(build: pathlib.Path, name: str, pattern: str
          ) -> tuple[str, re.Match[str] | None, bool]:
  """The text of `build`, the first match of `pattern`, and whether the
  file `name` is listed already."""
  text = build.read_text(encoding="utf-8")
  return text, re.search(pattern, text), f'"{name}"' in text


def add_to_library(build: pathlib.Path, src: str, anchor: str) -> bool:
  """Adds `src` to the srcs of the py_library listing `anchor`.

  Returns:
    Whether `src` is listed now (False: no library lists `anchor`).
  """
  text, m, listed = _read(build, src, r'srcs = \[(?P<body>[^\]]*"'
                          + re.escape(anchor) + r'"[^\]]*)\]')
  if listed or not m:
    return listed
  names = re.findall(r'"([^"]+)"', m.group("body"))
  line = text[:m.start()].rsplit("\n", 1)[-1]
  pad = line[:len(line) - len(line.lstrip())]
  body = "".join(f'\n{pad}    "{n}",' for n in sorted({*names, src}))
  text = text[:m.start()] + f"srcs = [{body}\n{pad}]" + text[m.end():]
  build.write_text(text, encoding="utf-8")
  return True


def add_test_rule(build: pathlib.Path, test: str, like: str) -> bool:
  """Adds a rule for the test file `test`, modelled on the rule `like`.

  The new rule is `like`'s (same macro, tags, deps, env) with the name and
  srcs of `test`, placed after it.

  Returns:
    Whether `test` has a rule now (False: no rule named `like`).
  """
  text, m, listed = _read(build, test, r'(?m)^(\w+)\(\n\s+name = "'
                          + re.escape(like) + r'",\n(?s:.*?)\n\)\n')
  if listed or not m:
    return listed
  name = test.removesuffix(".py")
  rule = m.group(0).replace(f'"{like}"', f'"{name}"').replace(
      f'"{like}.py"', f'"{test}"')
  text = text[:m.end()] + "\n" + rule + text[m.end():]
  build.write_text(text, encoding="utf-8")
  return True


def update(repo: pathlib.Path, modules: list[str],
           tests: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
  """Lists new modules and tests in the BUILD files of `repo`.

  Args:
    repo: the work tree.
    modules: the modules' paths in the repository.
    tests: (path in the repository, the rule to model its rule on).

  Returns:
    The BUILD files changed, and what could not be listed (no BUILD file,
    or no library or rule to model on), as paths in the repository.
  """
  changed, missing = set(), []
  for path in modules:
    build = build_file(repo, path)
    if build is None:
      missing.append(path)
      continue
    src = pathlib.PurePosixPath(path).relative_to(
        build.parent.relative_to(repo).as_posix()).as_posix()
    before = build.read_text(encoding="utf-8")
    if not add_to_library(build, src, LIBRARY_ANCHOR):
      missing.append(path)
    elif build.read_text(encoding="utf-8") != before:
      changed.add(build.relative_to(repo).as_posix())
  for path, like in tests:
    build = build_file(repo, path)
    if build is None or build.parent != repo / pathlib.PurePosixPath(
        path).parent:
      missing.append(path)
      continue
    before = build.read_text(encoding="utf-8")
    if not add_test_rule(build, pathlib.PurePosixPath(path).name, like):
      missing.append(f"{path} (no rule {like!r} to model it on)")
    elif build.read_text(encoding="utf-8") != before:
      changed.add(build.relative_to(repo).as_posix())
  return sorted(changed), missing
