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
"""Checks the Python files a rebased patch touched: do they still work?

`rebase` runs this after every commit git's three-way merge makes
(`git rebase --exec`): a merge without a textual conflict can still leave a
file that does not compile, or that uses a name the new upstream release no
longer defines. For each `.py` file the commit added or changed:

* it must compile with the release's Python (`compile()`, nothing written);
* ruff's F821 (undefined name) and F822 (undefined name in `__all__`) must
  find nothing that they do not already find in upstream's own file.

Problems are printed as `path: problem`; the exit status is 1 if any. Only
the standard library is used: git runs this with the tool's Python.

Usage: python mergecheck.py --python PY --ruff RUFF --base REV
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import re
import subprocess
import sys
import tempfile

_COMPILE = ("import sys\n"
            "path = sys.argv[1]\n"
            "with open(path, 'rb') as f:\n"
            "  compile(f.read(), sys.argv[2], 'exec', dont_inherit=True)\n")
# ruff's concise format: path:line:col: CODE message
_RUFF_RE = re.compile(r"^.*?:\d+:\d+: (?P<msg>F82[12] .*)$")


def _git(*args: str) -> str:
  return subprocess.run(["git", "-c", "safe.directory=*", *args],
                        capture_output=True, text=True, check=True).stdout


def compile_error(python: str, path: pathlib.Path, name: str) -> str | None:
  """The first line of `python`'s compile error for `path`, or None."""
  proc = subprocess.run([python, "-c", _COMPILE, str(path), name],
                        capture_output=True, text=True)
  if proc.returncode == 0:
    return None
  lines = [l for l in proc.stderr.strip().splitlines() if l.strip()]
  return lines[-1] if lines else f"exit {proc.returncode}"


def undefined_names(ruff: str, path: pathlib.Path, target: str
                    ) -> collections.Counter[str]:
  """ruff's F821/F822 messages for `path`, without line numbers."""
  proc = subprocess.run(
      [ruff, "check", "--isolated", "--no-cache", "--select", "F821,F822",
       "--output-format", "concise", "--target-version", target,
       str(path)], capture_output=True, text=True)
  if proc.returncode not in (0, 1):
    raise RuntimeError(f"ruff failed on {path}: {proc.stderr.strip()}")
  return collections.Counter(m.group("msg") for line in proc.stdout.splitlines()
                             if (m := _RUFF_RE.match(line)))


def check(python: str, ruff: str, base: str, files: list[str]) -> list[str]:
  """The problems of `files` (in the work tree) that `base`'s copy lacks."""
  version = subprocess.run(
      [python, "-c", "import sys; print('py%d%d' % sys.version_info[:2])"],
      capture_output=True, text=True, check=True).stdout.strip()
  problems = []
  with tempfile.TemporaryDirectory() as tmp:
    for name in files:
      path = pathlib.Path(name)
      if not path.exists():
        continue
      before = None
      try:
        original = _git("show", f"{base}:{name}")
        before = pathlib.Path(tmp) / path.name
        before.write_text(original, encoding="utf-8")
      except subprocess.CalledProcessError:
        pass  # a file the patch creates
      error = compile_error(python, path, name)
      if error and not (before and compile_error(python, before, name)):
        problems.append(f"{name}: does not compile with Python "
                        f"{version[2]}.{version[3:]}: {error}")
        continue
      new = undefined_names(ruff, path, version)
      if before is not None:
        new -= undefined_names(ruff, before, version)
      problems += [f"{name}: {msg}" for msg in sorted(new)]
  return problems


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--python", required=True,
                      help="the release's Python, to compile with")
  parser.add_argument("--ruff", required=True, help="the ruff executable")
  parser.add_argument("--base", required=True,
                      help="upstream's tree, for problems it has already")
  args = parser.parse_args(argv)
  files = [f for f in _git("diff-tree", "--no-commit-id", "--name-only",
                           "-r", "--diff-filter=AMR", "HEAD").splitlines()
           if f.endswith(".py")]
  problems = check(args.python, args.ruff, args.base, files)
  subject = _git("log", "-1", "--format=%s", "HEAD").strip()
  for problem in problems:
    print(f"merge-check: {subject}: {problem}")
  return 1 if problems else 0


if __name__ == "__main__":
  sys.exit(main())
