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
"""The words of a staged commit: its message, CHANGELOG entry, doc edits.

Upstream's commit messages are prose: a title line, a blank line, then
paragraphs wrapped at 72 columns. A patch's DEP-3 headers become that: its
`Description` (the synopsis line, then the long description, `.` lines
separating paragraphs), and the `Bug` as "Part of <url>."; `Author`,
`Forwarded` and `Last-Update` are the queue's bookkeeping and are dropped.
"""

from __future__ import annotations

import re
import textwrap

from forklib.sources import patchq

WIDTH = 72
CHANGELOG = "CHANGELOG.md"


def paragraphs(description: str) -> list[str]:
  """A DEP-3 `Description` as paragraphs of prose (one line each)."""
  lines = description.split("\n")
  out: list[str] = []
  current: list[str] = []
  for line in lines:
    if line.strip() in (".", ""):
      if current:
        out.append(" ".join(current))
        current = []
      continue
    current.append(line.strip())
  if current:
    out.append(" ".join(current))
  return out


def _wrap(paragraph: str, width: int = WIDTH) -> str:
  return textwrap.fill(paragraph, width, break_long_words=False,
                       break_on_hyphens=False)


def commit_message(title: str, summary: str, patches: list[patchq.Patch],
                   bug: str) -> str:
  """A pull request's commit message, from the plan and its patches.

  The title, the summary, the patches' DEP-3 descriptions as paragraphs,
  and "Part of <bug>." unless `bug` is empty (a fix that no issue of the
  series' is about).
  """
  body: list[str] = []
  if summary:
    body += [_wrap(p) for p in paragraphs(summary)]
  for patch in patches:
    body += [_wrap(p) for p in paragraphs(patch.headers.get(
        "Description", patch.subject))]
  if bug:
    body.append(_wrap(f"Part of {bug}."))
  return title + "\n\n" + "\n\n".join(body) + "\n"


def changelog_with(text: str, entries: list[tuple[str, str]]) -> str:
  """`CHANGELOG.md` with `entries` ((section, text)) in its Unreleased part.

  Upstream's change log starts with `## Unreleased`, whose items are
  grouped under bullets such as `* New features` and `* Bug fixes`. An
  entry goes at the end of its group (made if missing, at the end of the
  section); a missing `## Unreleased` section is made above the first
  release's.
  """
  lines = text.split("\n")
  head = next((i for i, l in enumerate(lines)
               if re.match(r"^## +Unreleased\b", l, re.IGNORECASE)), None)
  if head is None:
    first = next((i for i, l in enumerate(lines) if l.startswith("## ")),
                 len(lines))
    lines[first:first] = ["## Unreleased", ""]
    head = first
  end = next((i for i in range(head + 1, len(lines))
              if lines[i].startswith("## ")), len(lines))
  for section, entry in entries:
    item = textwrap.fill(entry, 80, initial_indent="  * ",
                         subsequent_indent="    ", break_long_words=False,
                         break_on_hyphens=False).split("\n")
    group = next((i for i in range(head + 1, end)
                  if re.match(rf"^\* +{re.escape(section)}\s*$", lines[i],
                              re.IGNORECASE)), None)
    if group is None:
      at = end
      while at > head + 1 and not lines[at - 1].strip():
        at -= 1
      new = ["", f"* {section}", *item] if at > head + 1 else [
          f"* {section}", *item]
      lines[at:at] = new
      end += len(new)
      continue
    at = next((i for i in range(group + 1, end)
               if lines[i].startswith("* ")), end)
    while at > group + 1 and not lines[at - 1].strip():
      at -= 1
    lines[at:at] = item
    end += len(item)
  return "\n".join(lines)


def pull_request_text(title: str, message: str, files: list[str],
                      tests: list[str], after: str = "",
                      breaking: bool = False, order: str = "") -> str:
  """The description of a pull request, in Markdown.

  Args:
    title: its title.
    message: its commit message (the body is the description's).
    files: the files it changes.
    tests: the test files among them.
    after: the pull request it is stacked on, if any.
    breaking: whether it is a breaking change.
    order: where it lands in the series and what it conflicts with
      (`landing_order`).
  """
  body = message.split("\n\n", 1)[1] if "\n\n" in message else ""
  notes = []
  if breaking:
    notes.append("**Breaking change** (see its CHANGELOG entry).")
  if after:
    notes.append(f"Stacked on the pull request `{after}`: review that one "
                 "first.")
  return (f"# {title}\n\n"
          + "".join(n + "\n\n" for n in notes)
          + f"{body.strip()}\n\n"
          + "Files:\n" + "".join(f"- `{f}`\n" for f in files)
          + ("\nTests:\n" + "".join(f"- `{t}`\n" for t in tests)
             if tests else "")
          + (f"\n{order.strip()}\n" if order.strip() else ""))


def landing_order(position: int, names: list[str],
                  conflicts: dict[str, list[str]]) -> str:
  """The paragraph that says when a pull request lands and what it
  conflicts with.

  Args:
    position: its 1-based place among `names`.
    names: the series' pull requests, in the order they land.
    conflicts: each pull request it conflicts with, and the files.
  """
  name = names[position - 1]
  lines = [f"Order: pull request {position} of {len(names)}, sent one at a "
           "time, in this order: "
           + ", ".join(f"`{n}`" if n != name else f"**`{n}`**"
                       for n in names) + "."]
  if not conflicts:
    lines.append("It conflicts with none of the others: it merges onto "
                 "`main` with any of them landed.")
  else:
    for other, files in sorted(conflicts.items(),
                               key=lambda kv: names.index(kv[0])):
      first, second = sorted((name, other), key=names.index)
      lines.append(f"It conflicts with `{other}` in "
                   + ", ".join(f"`{f}`" for f in files)
                   + f": `{first}` lands first, and `{second}` is rebased "
                   "onto `main` after it.")
  return "\n\n".join(lines)


# ---------------------------------------------------------------------------
# A design proposal in JAX's form (a JEP).
# ---------------------------------------------------------------------------

_TITLE_RE = re.compile(r"^# +(?P<title>\S.*?)\s*$", re.MULTILINE)
_INDEX_LINE_RE = re.compile(r"^(?P<indent>\s+)(?P<number>\d+):\s")


def jep_title(text: str) -> str:
  """The title of a JEP's document (its first `# ` heading)."""
  m = _TITLE_RE.search(text)
  if not m:
    raise ValueError("the document has no title (a line starting '# ')")
  return m.group("title")


def jep_document(text: str, issue: int, author: str) -> str:
  """The JEP as JAX keeps it: "JEP <issue>: " before its title (none while
  `issue` is 0, for the issue's text), and the author's name under it."""
  m = _TITLE_RE.search(text)
  if not m:
    raise ValueError("the document has no title (a line starting '# ')")
  title = (f"# JEP {issue}: {m.group('title')}" if issue
           else f"# {m.group('title')}")
  return text[:m.start()] + f"{title}\n\n*{author}*\n" + text[m.end():]


def jep_index_with(index: str, issue: int, title: str, slug: str) -> str:
  """`docs/jep/index.rst` with the JEP's line, in numeric order among the
  lines of its table of contents (`  263: JAX PRNG Design <263-prng>`).

  Raises:
    ValueError: the index has no such line to put it among.
  """
  lines = index.split("\n")
  numbered = [(i, int(m.group("number")), m.group("indent"))
              for i, line in enumerate(lines)
              if (m := _INDEX_LINE_RE.match(line))]
  if not numbered:
    raise ValueError("docs/jep/index.rst lists no JEP ('  <number>: "
                     "<title> <<file>>')")
  at = next((i for i, number, _ in numbered if number > issue),
            numbered[-1][0] + 1)
  lines.insert(at, f"{numbered[0][2]}{issue}: {title} <{issue}-{slug}>")
  return "\n".join(lines)
