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
"""Overlay patches derived from another: one source for two variants.

Two held pull requests stacked one on the other can hold back the same
code, but for a few lines the later one adds (the import of a module only
it stages). Rather than two copies of one diff, the plan gives the later
one `overlay_from = { pr = "NAME", keep = ["LINE", ...] }`: its overlay
patch is NAME's, with the removed lines `keep` lists kept (turned back into
context; a hunk left with no change is dropped), its hunk headers and
`index` lines recomputed. The derived patch is committed, so that
`git apply` and a reader see it as any other; `stage` and the tests check
that it is what this module derives, and

    PYTHONPATH=build python3 -m forklib.upstreaming.stage_overlays --write

rewrites it after its source changes.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys

from forklib import ForkError
from forklib.project import Project
from forklib.upstreaming import stage_plan
from forklib.upstreaming import stage_source

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")
_INDEX_RE = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)( \d+)?$")
WRITE = "PYTHONPATH=build python3 -m forklib.upstreaming.stage_overlays --write"


def _description(name: str, source: str) -> str:
  return (f"What pull request `{name}` of patches/stage.toml holds of the\n"
          "overlay and tests/upstream/: the overlay patch\n"
          f"{source}\n"
          "(the plan's `overlay_from`), with the removed lines its `keep`\n"
          "lists kept, written by `stage_overlays`. Do not edit it: edit\n"
          f"that patch, then run\n`{WRITE}`.\n\n")


def _count(body: list[str], kinds: str) -> int:
  return sum(1 for l in body if l[:1] and l[:1] in kinds)


def _hunk(header: re.Match, body: list[str], shift: int) -> list[str]:
  """A hunk of `body` lines, its header recounted, its new start moved by
  `shift`; [] if it changes nothing."""
  if not _count(body, "+-"):
    return []
  start = int(header.group(1))
  return [f"@@ -{start},{_count(body, ' -')} +{start + shift},"
          f"{_count(body, ' +')} @@{header.group(5)}", *body]


def _files(diff: str) -> list[list[str]]:
  """`diff` cut into its files' sections, each a list of lines."""
  sections: list[list[str]] = []
  for line in diff.splitlines():
    if line.startswith("diff --git "):
      sections.append([])
    sections[-1].append(line)
  return sections


def _kept(section: list[str], keep: set[str], found: set[str]) -> list[str]:
  """One file's section with the `keep` lines kept; [] if it changes
  nothing then. Adds the kept lines to `found`."""
  first = next(i for i, l in enumerate(section) if l.startswith("@@ "))
  hunks: list[tuple[re.Match, list[str]]] = []
  for line in section[first:]:
    header = _HUNK_RE.match(line)
    if header:
      hunks.append((header, []))
      continue
    if line.startswith("-") and line[1:] in keep:
      found.add(line[1:])
      line = " " + line[1:]
    hunks[-1][1].append(line)
  out: list[str] = []
  shift = 0
  for header, body in hunks:
    out += _hunk(header, body, shift)
    shift += _count(body, " +") - _count(body, " -")
  return section[:first] + out if out else []


def _post_images(root: pathlib.Path, name: str, text: str) -> str:
  """`text` with each `index` line naming its file's blob as `text` makes
  it (the pre-image's stays)."""
  variant = stage_source.variant_of_text(root, name, text)
  lines, path = text.splitlines(), None
  for i, line in enumerate(lines):
    if line.startswith("diff --git "):
      path = line.split(" b/", 1)[1]
    match = _INDEX_RE.match(line)
    if match and path in variant:
      blob = subprocess.run(
          ["git", "hash-object", "--stdin"], input=variant[path],
          capture_output=True, text=True, encoding="utf-8",
          check=True).stdout.strip()
      lines[i] = (f"index {match.group(1)}.."
                  f"{blob[:len(match.group(2))]}{match.group(3) or ''}")
  return "\n".join(lines) + "\n"


def derive(root: pathlib.Path, name: str, source: str,
           keep: tuple[str, ...]) -> str:
  """Pull request `name`'s overlay patch: `source`'s (a path under
  `root`), with its removed lines `keep` kept.

  Raises:
    ForkError: a line of `keep` is not a removed line of `source`, or the
      patch does not apply to this repository's files.
  """
  text = (root / source).read_text(encoding="utf-8")
  diff = text[text.index("diff --git "):]
  found: set[str] = set()
  sections = [_kept(s, set(keep), found) for s in _files(diff)]
  missing = [k for k in keep if k not in found]
  if missing:
    raise ForkError(f"{name}'s overlay_from keeps lines that {source} does "
                    f"not remove: {missing}")
  body = "\n".join(l for s in sections for l in s) + "\n"
  return _post_images(root, name, _description(name, source) + body)


def derived(root: pathlib.Path, plan: stage_plan.Plan) -> dict[str, str]:
  """Each derived overlay patch of `plan` (its path), as derived now."""
  by_name = {pr.name: pr for pr in plan.prs}
  return {pr.overlay: derive(root, pr.name, by_name[pr.overlay_from.pr].overlay,
                             pr.overlay_from.keep)
          for pr in plan.prs if pr.overlay_from is not None}


def stale_problem(root: pathlib.Path, plan: stage_plan.Plan,
                  pr: stage_plan.PullRequest) -> str:
  """Why `pr`'s derived overlay patch is not what it derives to now ("":
  it is, or it is written by hand)."""
  if pr.overlay_from is None:
    return ""
  source = next(p for p in plan.prs if p.name == pr.overlay_from.pr)
  try:
    text = derive(root, pr.name, source.overlay, pr.overlay_from.keep)
  except ForkError as e:
    return str(e)
  committed = root / pr.overlay
  if committed.is_file() and committed.read_text(encoding="utf-8") == text:
    return ""
  return (f"{pr.overlay} is not what its plan's overlay_from derives from "
          f"{source.overlay}: run `{WRITE}`")


def stale(root: pathlib.Path, plan: stage_plan.Plan) -> list[str]:
  """The derived overlay patches whose committed text is not what they
  derive to now (a problem each, saying what to run)."""
  return [p for p in (stale_problem(root, plan, pr) for pr in plan.prs) if p]


def main(argv: list[str] | None = None) -> int:
  """Checks the derived overlay patches (`--write`: rewrites them)."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--root", type=pathlib.Path,
                      default=pathlib.Path(__file__).resolve().parents[3])
  parser.add_argument("--write", action="store_true",
                      help="rewrite the derived overlay patches")
  args = parser.parse_args(argv)
  root = args.root.resolve()
  plan = stage_plan.load_project(Project(root))
  if args.write:
    for path, text in derived(root, plan).items():
      (root / path).write_text(text, encoding="utf-8")
      print(f"wrote {path}")
  problems = stale(root, plan)
  for p in problems:
    print(p, file=sys.stderr)
  return 1 if problems else 0


if __name__ == "__main__":
  sys.exit(main())
