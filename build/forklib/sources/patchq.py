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
"""The patch queue: `patches/series`, DEP-3 headers, and exact application.

The queue follows quilt's layout (a `series` file naming one patch per line,
`#` comments) and every patch is a `git format-patch` file whose commit
message carries DEP-3 fields, so the same files work with `quilt push -a`,
`git am` and this module.

Application is exact: every hunk must match the upstream file with all its
context lines, as `patch --fuzz=0`, `git apply` and `quilt push --fuzz=0`
require. Like them, a hunk may match at another line than its header names
(an offset: upstream added or removed lines above it), at the match nearest
to that line and after the previous hunk; the offsets are reported. There is
no fuzz: a hunk whose context changed is a patch to rebase, not one to guess
at. So one queue serves many releases as long as the lines each hunk touches
and its context stay the same upstream.
"""

from __future__ import annotations

import dataclasses
import datetime
import pathlib
import re

from forklib import ForkError

DEP3_REQUIRED = ("Description", "Author", "Bug", "Forwarded", "Last-Update")
# The bug call_tf's patches cite (the others cite the bug they fix).
BUG_URL = "https://github.com/jax-ml/jax/issues/11753"

_HUNK_RE = re.compile(
    r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")
_DEP3_RE = re.compile(r"^([A-Z][A-Za-z-]*): ?(.*)$")


class PatchError(ForkError):
  """A patch that is malformed or does not apply exactly."""


@dataclasses.dataclass
class Hunk:
  """One `@@` hunk. `lines` holds (tag, text) with tag in ' ', '-', '+'."""
  header: str
  old_start: int
  old_len: int
  new_start: int
  new_len: int
  lines: list[tuple[str, str]]

  @property
  def old_lines(self) -> list[str]:
    return [text for tag, text in self.lines if tag in " -"]

  @property
  def new_lines(self) -> list[str]:
    return [text for tag, text in self.lines if tag in " +"]

  @property
  def context(self) -> tuple[int, int]:
    """The number of context lines before and after the change."""
    tags = [tag for tag, _ in self.lines]
    leading = next((i for i, t in enumerate(tags) if t != " "), len(tags))
    trailing = next((i for i, t in enumerate(reversed(tags)) if t != " "),
                    len(tags))
    return leading, trailing


@dataclasses.dataclass
class FilePatch:
  """The changes to one file; a None path means created or deleted."""
  old_path: str | None
  new_path: str | None
  hunks: list[Hunk]

  @property
  def path(self) -> str:
    return self.new_path or self.old_path or ""


@dataclasses.dataclass
class Patch:
  """A parsed patch file of the queue."""
  name: str
  path: pathlib.Path
  subject: str
  headers: dict[str, str]
  files: list[FilePatch]

  def missing_dep3(self) -> list[str]:
    """The required DEP-3 fields this patch lacks."""
    return [k for k in DEP3_REQUIRED if not self.headers.get(k)]

  def asymmetric_hunks(self) -> list[str]:
    """Hunks with more context on one side than the other.

    GNU patch (and so quilt) anchors such a hunk to the start or the end of
    the file, and refuses it anywhere else without fuzz; give each hunk as
    many context lines before its change as after.
    """
    return [f"{fp.path} {h.header.split(' @@')[0]} @@ (context "
            f"{h.context[0]} before, {h.context[1]} after)"
            for fp in self.files for h in fp.hunks
            if h.context[0] != h.context[1] and h.old_start > 1]

  @property
  def last_update(self) -> datetime.date | None:
    try:
      return datetime.date.fromisoformat(self.headers.get("Last-Update", ""))
    except ValueError:
      return None


def read_series(patches_dir: pathlib.Path) -> list[str]:
  """The patch names listed in `patches_dir/series`, in order.

  Quilt syntax: one patch per line, `#` starts a comment; an optional `-p1`
  after the name is accepted (that is the level all our patches use).
  """
  series = patches_dir / "series"
  text = read_text(series)
  names = []
  for lineno, raw in enumerate(text.splitlines(), 1):
    line = raw.split("#", 1)[0].strip()
    if not line:
      continue
    parts = line.split()
    if len(parts) > 2 or (len(parts) == 2 and parts[1] != "-p1"):
      raise ForkError(f"{series}:{lineno}: expected a patch name optionally "
                      f"followed by -p1, got {raw!r}")
    names.append(parts[0])
  dupes = sorted({n for n in names if names.count(n) > 1})
  if dupes:
    raise ForkError(f"{series} lists {', '.join(dupes)} more than once")
  return names


def resolve(patches_dir: pathlib.Path, name: str,
            version: str | None = None) -> pathlib.Path:
  """The file of patch `name` for upstream `version`.

  A variant replaces `patches/<name>` for some releases only, where a patch
  needs a different form: `patches/variants/<version>/<name>` for one
  release, `patches/variants/<first>..<last>/<name>` for the releases from
  `first` to `last` (inclusive). A single-release variant wins over a range.
  """
  if version:
    variant = patches_dir / "variants" / version / name
    if variant.exists():
      return variant
    for first, last, path in _range_variants(patches_dir, name):
      if first <= _version_key(version) <= last:
        return path
  path = patches_dir / name
  if not path.exists():
    raise ForkError(f"{patches_dir / 'series'} names {name}, but {path} does "
                    "not exist")
  return path


def _version_key(version: str) -> tuple[int, ...]:
  return tuple(int(p) for p in re.findall(r"\d+", version))


def _range_variants(patches_dir: pathlib.Path, name: str
                    ) -> list[tuple[tuple[int, ...], tuple[int, ...],
                                    pathlib.Path]]:
  found = []
  variants = patches_dir / "variants"
  if not variants.is_dir():
    return found
  for d in sorted(variants.iterdir()):
    if ".." not in d.name or not (d / name).exists():
      continue
    first, last = d.name.split("..", 1)
    found.append((_version_key(first), _version_key(last), d / name))
  return found


def load_queue(patches_dir: pathlib.Path,
               version: str | None = None) -> list[Patch]:
  """Parses every patch of the series, in order."""
  return [parse(resolve(patches_dir, n, version), name=n)
          for n in read_series(patches_dir)]


def read_text(path: pathlib.Path) -> str:
  """The UTF-8 text of a file of the queue.

  Raises:
    PatchError: naming the file, if it is missing, unreadable or not UTF-8.
  """
  try:
    data = path.read_bytes()
  except FileNotFoundError:
    raise PatchError(f"{path} does not exist") from None
  except OSError as e:
    raise PatchError(f"{path} cannot be read: {e.strerror}") from None
  try:
    return data.decode("utf-8")
  except UnicodeDecodeError as e:
    line = data[:e.start].count(b"\n") + 1
    raise PatchError(
        f"{path} is not UTF-8 text (byte 0x{data[e.start]:02x} on line "
        f"{line}); patches and the series are UTF-8: re-encode the file "
        "(e.g. `iconv -f latin1 -t utf-8`) or write it again with git "
        "format-patch") from None


def parse(path: pathlib.Path, name: str | None = None) -> Patch:
  """Parses a `git format-patch` file (or a plain unified diff).

  Raises:
    PatchError: naming the file: it is not UTF-8, holds no diff, a hunk is
      cut short, or it holds fewer changes than its diffstat lists (the
      file was cut at a hunk boundary).
  """
  name = name or path.name
  text = read_text(path)
  lines = text.splitlines(keepends=True)
  # The header: everything before the first "diff --git" or "--- ".
  first_diff = next((i for i, l in enumerate(lines)
                     if l.startswith("diff --git ") or l.startswith("--- ")),
                    len(lines))
  subject, headers = _parse_header(lines[:first_diff])
  files = _parse_diffs(name, lines[first_diff:])
  if not files:
    raise PatchError(f"patch {name} ({path}) contains no diff")
  _check_diffstat(name, path, lines[:first_diff], files)
  return Patch(name=name, path=path, subject=subject, headers=headers,
               files=files)


_DIFFSTAT_RE = re.compile(
    r"^ (\d+) files? changed(?:, (\d+) insertions?\(\+\))?"
    r"(?:, (\d+) deletions?\(-\))?$")


def _check_diffstat(name: str, path: pathlib.Path, header: list[str],
                    files: list[FilePatch]) -> None:
  """Raises a PatchError if the diff holds less than its diffstat lists.

  `git format-patch` writes a diffstat (" 2 files changed, 10
  insertions(+), 1 deletion(-)") before the diff; a file cut at a hunk
  boundary parses as a shorter, valid patch, and would otherwise only fail
  a later patch that needs the lost lines.
  """
  stat = next((m for l in header if (m := _DIFFSTAT_RE.match(l.rstrip("\n")))),
              None)
  if stat is None:
    return  # a plain diff: nothing to compare with
  want = tuple(int(g or 0) for g in stat.groups())
  hunks = [h for fp in files for h in fp.hunks]
  have = (len(files), sum(t == "+" for h in hunks for t, _ in h.lines),
          sum(t == "-" for h in hunks for t, _ in h.lines))
  if have != want:
    last = files[-1]
    raise PatchError(
        f"patch {name} ({path}) is truncated: its diffstat lists {want[0]} "
        f"file(s), {want[1]} insertion(s), {want[2]} deletion(s), but its "
        f"diff holds {have[0]} file(s), {have[1]} insertion(s), {have[2]} "
        f"deletion(s); it ends after {last.path}, hunk {len(last.hunks)}. "
        "Restore the whole file (git checkout, or git format-patch again).")


def _parse_header(lines: list[str]) -> tuple[str, dict[str, str]]:
  subject = ""
  headers: dict[str, str] = {}
  key = None
  for raw in lines:
    line = raw.rstrip("\n")
    if line == "---":  # end of the commit message in format-patch output
      break
    if line.startswith("Subject: "):
      subject = re.sub(r"^\[PATCH[^\]]*\] *", "", line[len("Subject: "):])
      key = "Subject"
      continue
    if key == "Subject" and line.startswith(" "):
      subject += line  # a folded (RFC 2822) subject line
      continue
    m = _DEP3_RE.match(line)
    if m and m.group(1) in ("Description", "Author", "Bug", "Forwarded",
                            "Last-Update", "Origin", "Applied-Upstream",
                            "Reviewed-by", "Bug-Debian"):
      key = m.group(1)
      headers[key] = m.group(2).strip()
    elif key == "Description" and line.startswith(" "):
      # DEP-3 continuation lines of a long description.
      headers[key] += "\n" + line.strip()
    else:
      key = None
  return subject, headers


def _strip_prefix(path: str) -> str | None:
  path = path.split("\t", 1)[0].strip()
  if path == "/dev/null":
    return None
  if path.startswith(("a/", "b/")):
    return path[2:]
  raise PatchError(f"path {path!r} lacks the a/ or b/ prefix of -p1 patches")


def _parse_diffs(name: str, lines: list[str]) -> list[FilePatch]:
  files: list[FilePatch] = []
  i = 0
  current: FilePatch | None = None
  while i < len(lines):
    line = lines[i]
    if line.startswith("diff --git "):
      current = None
      i += 1
      continue
    if line.startswith(("rename from", "copy from", "GIT binary patch")):
      raise PatchError(f"patch {name}: renames, copies and binary diffs are "
                       f"not supported ({line.strip()!r})")
    if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
      current = FilePatch(old_path=_strip_prefix(line[4:]),
                          new_path=_strip_prefix(lines[i + 1][4:]), hunks=[])
      files.append(current)
      i += 2
      continue
    m = _HUNK_RE.match(line.rstrip("\n"))
    if m:
      if current is None:
        raise PatchError(f"patch {name}: hunk {line.strip()!r} before any "
                         "file header")
      hunk, i = _parse_hunk(name, current, m, lines, i + 1)
      current.hunks.append(hunk)
      continue
    if line.startswith("-- \n") or line == "--\n":
      break  # the format-patch signature
    i += 1
  return files


def _parse_hunk(name: str, fp: FilePatch, m: re.Match, lines: list[str],
                i: int) -> tuple[Hunk, int]:
  old_start, new_start = int(m.group(1)), int(m.group(3))
  old_len = int(m.group(2)) if m.group(2) is not None else 1
  new_len = int(m.group(4)) if m.group(4) is not None else 1
  hunk = Hunk(header=m.group(0), old_start=old_start, old_len=old_len,
              new_start=new_start, new_len=new_len, lines=[])
  old_seen = new_seen = 0
  while i < len(lines) and (old_seen < old_len or new_seen < new_len):
    line = lines[i]
    tag, text = line[:1], line[1:]
    if line == "\n":  # an empty context line whose space was stripped
      tag, text = " ", "\n"
    if tag not in " -+":
      raise PatchError(
          f"patch {name}: {fp.path}: hunk {hunk.header!r} ends early (it "
          f"declares -{old_len} +{new_len} lines); the patch is truncated or "
          "was edited by hand without fixing the hunk header")
    hunk.lines.append((tag, text))
    old_seen += tag in " -"
    new_seen += tag in " +"
    i += 1
    if i < len(lines) and lines[i].startswith("\\ No newline at end of file"):
      hunk.lines[-1] = (tag, text.rstrip("\n"))
      i += 1
  if old_seen != old_len or new_seen != new_len:
    raise PatchError(f"patch {name}: {fp.path}: hunk {hunk.header!r} has "
                     f"-{old_seen} +{new_seen} lines, its header declares "
                     f"-{old_len} +{new_len}")
  return hunk, i


# Upstream's tests are not in its source distribution: hunks for them apply
# to a checkout (or a `git archive`) of upstream's repository at the release.
UPSTREAM_TEST_DIRS = ("tests/", "jax/experimental/jax2tf/tests/")


def is_test_path(path: str) -> bool:
  """Whether `path` is one of upstream's tests, not part of the sdist."""
  return path.startswith(UPSTREAM_TEST_DIRS)


def apply(patch: Patch, tree: pathlib.Path, *,
          tests: bool | None = False) -> list[str]:
  """Applies `patch` exactly to the tree at `tree`; returns the files touched.

  All files are checked before any is written, so a patch that fails leaves
  the tree as it was.

  Args:
    patch: the patch.
    tree: an unpacked sdist, or (with `tests`) upstream's tests at the
      release.
    tests: apply the hunks for upstream's tests (see `is_test_path`) instead
      of those for the sdist; None: both (a tree with the sdist's files and
      upstream's tests, as upstream's repository has them).

  Returns:
    The paths touched, each followed by its hunks' offsets if any hunk
    applied at another line than its header names.

  Raises:
    PatchError: naming the patch, the file and the hunk that does not apply,
      with the lines expected and the lines found.
  """
  results: dict[pathlib.Path, str | None] = {}
  touched = []
  for fp in patch.files:
    if tests is not None and is_test_path(fp.path) != tests:
      continue
    path, text, label = _patched_file(patch.name, fp, tree)
    results[path] = text
    touched.append(label)
  for path, text in results.items():
    if text is None:
      path.unlink()
    else:
      path.parent.mkdir(parents=True, exist_ok=True)
      with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
  return touched


def _patched_file(name: str, fp: FilePatch, tree: pathlib.Path
                  ) -> tuple[pathlib.Path, str | None, str]:
  """What the patch `name` makes of one file of `tree`; writes nothing.

  Returns:
    The file to write, its new text (None: delete it), and how `apply`
    names it: its path, with its hunks' offsets if any moved.

  Raises:
    PatchError: the file is not as the patch expects.
  """
  target = tree / fp.path
  if fp.old_path is None:
    if target.exists():
      raise PatchError(f"patch {name} creates {fp.path}, which "
                       "already exists in the upstream tree")
    return target, "".join(fp.hunks[0].new_lines) if fp.hunks else "", fp.path
  source = tree / fp.old_path
  if not source.exists():
    raise PatchError(f"patch {name} modifies {fp.old_path}, which "
                     "does not exist in the upstream tree")
  with open(source, encoding="utf-8", newline="") as f:
    content = f.read().splitlines(keepends=True)
  offsets: list[int] = []
  new_content = _apply_hunks(name, fp, content, offsets)
  moved = [f"{o:+d}" for o in offsets if o]
  label = fp.path + (f" (offsets {', '.join(moved)} lines)" if moved else "")
  if fp.new_path is None:
    if new_content:
      raise PatchError(f"patch {name} deletes {fp.old_path}, but the "
                       "file has content the patch does not list")
    return source, None, label
  return target, "".join(new_content), label


def _apply_hunks(name: str, fp: FilePatch, content: list[str],
                 offsets: list[int] | None = None) -> list[str]:
  out = list(content)
  shift = 0  # how far earlier hunks moved the lines of this file
  lowest = 0  # a hunk applies after the previous one
  for n, hunk in enumerate(fp.hunks, 1):
    old = hunk.old_lines
    # With no old lines, old_start is the line after which to insert.
    stated = (hunk.old_start if hunk.old_len == 0 else hunk.old_start - 1)
    expected = stated + shift
    start = _find(out, old, expected, lowest)
    if start is None:
      found = out[expected:expected + len(old)]
      raise PatchError(_mismatch_message(name, fp, n, hunk, old, found,
                                         expected - shift + 1))
    if offsets is not None:
      offsets.append(start - expected)
    out[start:start + len(old)] = hunk.new_lines
    shift += len(hunk.new_lines) - len(old) + (start - expected)
    lowest = start + len(hunk.new_lines)
  return out


def hunk_found(hunk: Hunk, lines: list[str]) -> bool:
  """Whether `hunk`'s old lines (context and removals) occur in `lines`."""
  return _find(lines, hunk.old_lines, 0, 0) is not None


def _find(lines: list[str], block: list[str], expected: int,
          lowest: int) -> int | None:
  """Where `block` occurs in `lines` at or after `lowest`, nearest `expected`."""
  if not block:
    return expected if lowest <= expected <= len(lines) else None
  first = block[0]
  best = None
  for i in range(lowest, len(lines) - len(block) + 1):
    if lines[i] == first and lines[i:i + len(block)] == block:
      if best is None or abs(i - expected) < abs(best - expected):
        best = i
      elif i > expected:
        break
  return best


def _mismatch_message(name: str, fp: FilePatch, n: int, hunk: Hunk,
                      expected: list[str], found: list[str],
                      line: int) -> str:
  def show(lines: list[str]) -> str:
    if not lines:
      return "    (end of file)\n"
    return "".join(f"    | {l.rstrip(chr(10))}\n" for l in lines)
  first_bad = next((i for i, (a, b) in enumerate(zip(expected, found))
                    if a != b), min(len(expected), len(found)))
  return (
      f"patch {name} does not apply: {fp.path}, hunk {n} of "
      f"{len(fp.hunks)} ({hunk.header.split(' @@')[0]} @@): the upstream "
      f"file differs at line {line + first_bad}.\n"
      f"  the patch expects:\n{show(expected[first_bad:first_bad + 3])}"
      f"  the file has:\n{show(found[first_bad:first_bad + 3])}"
      "The hunk's lines are found nowhere else in the file either. Patches "
      "apply exactly (no fuzz; offsets only): refresh the patch for this "
      "release as docs/maintainers.md describes (\"Refreshing a patch\").")


def latest_update(patches: list[Patch]) -> datetime.date:
  """The newest Last-Update of `patches`; the build's SOURCE_DATE_EPOCH."""
  dates = [p.last_update for p in patches if p.last_update]
  return max(dates) if dates else datetime.date(2020, 1, 1)
