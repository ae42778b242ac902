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
"""A toy upstream and a toy fork of it, for the `stage` tests.

The upstream is a git repository shaped like JAX's (a `jax` package with
`jax2tf/call_tf.py`, Bazel BUILD files, tests in `tests/` and
`jax/experimental/jax2tf/tests/`, `CHANGELOG.md`, the jax2tf README, ruff's
and pytest's configuration in `pyproject.toml`, a `setup.py`), small enough
to install in a second. The fork is a project root like this repository's:
a queue of three patches made with git (DEP-3 headers), an overlay of
one program with shaken modules, overlay patches (`patches/stage/overlay/`)
that give two pull requests their variants of it, upstream-style tests, a fork document, a patch
written for upstream (`patches/stage/`) and a staging plan: three stacked
pull requests of the queue, one independent fix from the patch written for
upstream, one held pull request, a design proposal (a JEP, held until its
issue is opened) and one module that stays.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import difflib
import textwrap

GIT = ["git", "-c", "safe.directory=*", "-c", "user.name=Upstream",
       "-c", "user.email=upstream@example.com", "-c", "commit.gpgsign=false"]


def git(repo: pathlib.Path, *args: str) -> str:
  return subprocess.run([*GIT, *args], cwd=repo, check=True,
                        capture_output=True, text=True).stdout


def write(root: pathlib.Path, files: dict[str, str]) -> None:
  for path, text in files.items():
    dest = root / path
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(textwrap.dedent(text).lstrip("\n"))


UPSTREAM = {
    "pyproject.toml": """
        [tool.ruff]
        line-length = 80
        indent-width = 2

        [tool.ruff.lint]
        select = ["F", "W"]

        [tool.pytest.ini_options]
        filterwarnings = ["error"]
        addopts = "--import-mode=importlib"
        """,
    "setup.py": """
        from setuptools import find_packages, setup

        setup(name="jax", version="0.12.0.1",
              packages=find_packages(include=["jax", "jax.*"]))
        """,
    "conftest.py": '"""pytest configuration."""\n',
    "jax/__init__.py": "from jax.version import __version__  # noqa: F401\n",
    "jax/version.py": """
        _version = "0.12.0.1"
        __version__ = _version
        """,
    "jax/_src/__init__.py": "",
    "jax/_src/config.py": """
        OPTIONS = {}
        OPTIONS["x64"] = False
        """,
    "jax/experimental/__init__.py": "",
    "jax/experimental/jax2tf/__init__.py": "",
    "jax/experimental/jax2tf/call_tf.py": '''
        """Calling TensorFlow from JAX."""


        def call_tf(f):
          return f
        ''',
    "jax/experimental/jax2tf/BUILD": """
        py_library(
            name = "jax2tf_internal",
            srcs = [
                "call_tf.py",
                "jax2tf.py",
            ],
            deps = ["//jax"],
        )
        """,
    "jax/experimental/jax2tf/README.md": """
        # jax2tf

        ## Calling TensorFlow functions from JAX

        For now, only reverse-mode autodiff is supported for these functions
        (no forward-mode autodiff, nor ``vmap``).
        """,
    "jax/experimental/jax2tf/tests/__init__.py": "",
    "jax/experimental/jax2tf/tests/BUILD": """
        jax_multiplatform_test(
            name = "call_tf_test",
            srcs = ["call_tf_test.py"],
            tags = ["jax2tf"],
            deps = [":tf_test_util"],
        )
        """,
    "jax/experimental/jax2tf/tests/call_tf_test.py": '''
        """call_tf's tests."""
        import unittest

        from jax.experimental.jax2tf import call_tf


        class CallTfTest(unittest.TestCase):

          def test_identity(self):
            self.assertEqual(call_tf.call_tf(abs)(-1), 1)

          def test_broken_upstream(self):
            self.assertEqual(1, 2)  # fails at the base too
        ''',
    "tests/BUILD": """
        jax_py_test(
            name = "version_test",
            srcs = ["version_test.py"],
            deps = ["//jax"],
        )
        """,
    "tests/version_test.py": '''
        """Version tests."""
        import unittest

        import jax


        class VersionTest(unittest.TestCase):

          def test_version(self):
            self.assertEqual(jax.__version__, "0.12.0.1")
        ''',
    "docs/jep/index.rst": """
        JAX Enhancement Proposals (JEPs)
        ================================

        .. toctree::
          :maxdepth: 1

          263: JAX PRNG Design <263-prng>
          4410: Omnistaging <4410-omnistaging>
          28845: Stateful Randomness in JAX <28845-stateful-rng>


        Several early JEPs were converted in hindsight.
        """,
    "CHANGELOG.md": """
        # Change log

        ## Unreleased

        * New features
          * Something upstream added.

        * Bug fixes
          * Something upstream fixed.

        ## JAX 0.12.0.1

        * Changes
          * Released.
        """,
}

# (file, new text of the file, DEP-3 description), in series order.
PATCHES = [
    ("0001-version-info.patch", "jax/version.py", """
        _version = "0.12.0.1"
        __version__ = _version
        __version_info__ = tuple(
            int(p) for p in __version__.split("+")[0].split("."))
        """, "version: a numeric __version_info__",
     "Compute __version_info__ from the public version.\n"
     " A local label must not reach the tuple."),
    ("0002-call-tf-vmap.patch", "jax/experimental/jax2tf/call_tf.py", '''
        """Calling TensorFlow from JAX."""

        from jax.experimental.jax2tf import call_tf_lib


        def call_tf(f):
          return f


        def batch(xs):
          return call_tf_lib.batching.rule.batch(xs)
        ''', "call_tf: a batching rule",
     "Batch call_tf.\n jax.vmap of call_tf failed.\n .\n Now it batches."),
    ("0003-call-tf-options.patch", "jax/_src/config.py", """
        OPTIONS = {}
        OPTIONS["x64"] = False
        OPTIONS["call_tf_slow_vmap"] = False
        OPTIONS["call_tf_vectorizer"] = "pfor"
        """, "config: call_tf's options",
     "Declare call_tf's options."),
]

OVERLAY = {
    "call_tf_lib/__init__.py": '''
        """call_tf's machinery."""
        import importlib


        def __getattr__(name):
          return importlib.import_module(f"{__name__}.{name}")
        ''',
    "call_tf_lib/batching/__init__.py": '''
        """Batching."""
        import importlib


        def __getattr__(name):
          return importlib.import_module(f"{__name__}.{name}")
        ''',
    "call_tf_lib/batching/rule.py": '''
        """The batching rule."""

        from jax.experimental.jax2tf.call_tf_lib import compat
        from jax.experimental.jax2tf.call_tf_lib import errors
        from jax.experimental.jax2tf.call_tf_lib.batching import pfor


        def batch(xs):
          """Batches `xs`."""
          if not compat.as_list(xs):
            raise errors.empty_error()
          return pfor.vectorize(xs)
        ''',
    "call_tf_lib/batching/pfor.py": '''
        """TensorFlow's vectorizer."""

        from jax.experimental.jax2tf.call_tf_lib import errors


        def vectorize(xs):
          """Vectorizes."""
          if xs is None:
            raise errors.pfor_error()
          return [2 * x for x in xs]
        ''',
    "call_tf_lib/errors.py": '''
        """Every error message."""

        HINT = "see the documentation"


        def empty_error() -> ValueError:
          return ValueError("an empty batch; " + HINT)


        def vmap_error() -> NotImplementedError:
          return NotImplementedError("no vectorizer yet; " + HINT)


        def pfor_error() -> ValueError:
          return ValueError("pfor failed")


        def unused_error() -> ValueError:
          return ValueError("never staged")
        ''',
    "call_tf_lib/compat.py": '''
        """Internals that differ between releases."""

        import sys


        def as_list(xs):
          """`xs` as a list."""
          if sys.version_info < (3, 8):
            return list(xs or [])
          return list(xs)


        # ---------------------------------------------------------------------
        # Only the fork needs these.
        # ---------------------------------------------------------------------

        def check():
          return sys.platform
        ''',
    "call_tf_lib/internal.py": '''
        """What only the distribution needs."""
        ''',
}

# A fix written for upstream: (file, new text), its test, and its message.
SOURCE_PATCH = (
    {"jax/experimental/jax2tf/call_tf.py": '''
        """Calling TensorFlow from JAX."""


        def call_tf(f):
          return f


        def call_tf_twice(f):
          """Calls ``f`` twice (see :func:`call_tf`)."""
          return lambda x: f(f(x))
        ''',
     "jax/experimental/jax2tf/tests/call_tf_test.py": '''
        """call_tf's tests."""
        import unittest

        from jax.experimental.jax2tf import call_tf


        class CallTfTest(unittest.TestCase):

          def test_identity(self):
            self.assertEqual(call_tf.call_tf(abs)(-1), 1)

          def test_broken_upstream(self):
            self.assertEqual(1, 2)  # fails at the base too

          def test_twice(self):
            self.assertEqual(call_tf.call_tf_twice(abs)(-1), 1)
        '''},
    "[jax2tf] call_tf: call_tf_twice\n\nCalling a function twice took two "
    "calls. call_tf_twice makes it\none, for whoever needs it.")

TESTS = {
    "version_info_test.py": '''
        """Tests for __version_info__."""
        import unittest

        import jax.version


        class VersionInfoTest(unittest.TestCase):

          def test_tuple(self):
            self.assertEqual(jax.version.__version_info__, (0, 12, 0, 1))
        ''',
    "call_tf_batch_test.py": '''
        """Tests for batching call_tf."""
        import unittest

        from jax.experimental.jax2tf import call_tf


        class BatchTest(unittest.TestCase):

          def test_empty_batch_is_refused(self):
            with self.assertRaises(ValueError):
              call_tf.batch([])

          def test_vectorized(self):
            self.assertEqual(call_tf.batch([1, 2]), [2, 4])
        ''',
}

_COMPAT = "jax/experimental/jax2tf/call_tf_lib/compat.py"
_ONE_BRANCH = ("  if sys.version_info < (3, 8):\n"
               "    return list(xs or [])\n"
               "  return list(xs)\n", "  return [x for x in xs]\n")

# What a pull request's commit holds otherwise than the overlay ships:
# (path in the project, text to find, its replacement), made into
# patches/stage/overlay/<pull request>.patch. Both drop compat.py's branch
# for other releases; `vmap` holds pfor back and has a stand-in.
VARIANTS = {
    "vmap": [
        (_COMPAT, *_ONE_BRANCH),
        ("jax/experimental/jax2tf/call_tf_lib/batching/rule.py",
         "from jax.experimental.jax2tf.call_tf_lib.batching import pfor\n",
         ""),
        ("jax/experimental/jax2tf/call_tf_lib/batching/rule.py",
         "  return pfor.vectorize(xs)\n", "  raise errors.vmap_error()\n"),
        ("tests/upstream/call_tf_batch_test.py", """
  def test_vectorized(self):
    self.assertEqual(call_tf.batch([1, 2]), [2, 4])
""", """
  def test_not_vectorized_yet(self):
    with self.assertRaises(NotImplementedError):
      call_tf.batch([1, 2])
"""),
    ],
    "pfor": [(_COMPAT, *_ONE_BRANCH)],
}


# A design proposal, as the plan stages it (its JEP).
JEP = """
    (toy-proposal-jep)=
    # A toy proposal

    *December 2026*

    ## Summary

    Batch everything, with an example:

    ```python
    jax.vmap(f)(xs)
    ```
    """


def overlay_patch(root: pathlib.Path,
                  edits: list[tuple[str, str, str]]) -> str:
  """A diff of `root`'s files with `edits` made, as `git diff` writes it."""
  changed: dict[str, str] = {}
  for path, find, replace in edits:
    text = changed.get(path) or (root / path).read_text()
    assert text.count(find) == 1, (path, find)
    changed[path] = text.replace(find, replace)
  out = "The toy pull request's variant of the overlay.\n\n"
  for path, text in changed.items():
    out += f"diff --git a/{path} b/{path}\n" + "".join(difflib.unified_diff(
        (root / path).read_text().splitlines(keepends=True),
        text.splitlines(keepends=True), f"a/{path}", f"b/{path}"))
  return out

PLAN = """
    branch = "call-tf-vmap"
    max_added_lines = 200
    shaken = ["call_tf_lib/errors.py", "call_tf_lib/compat.py"]

    [[pr]]
    name = "version"
    title = "Make jax.__version_info__ numeric"
    patches = ["0001-version-info.patch"]

    [[pr.test]]
    file = "version_info_test.py"
    to = "tests/local_label_test.py"
    like = "version_test"

    [[pr]]
    name = "vmap"
    after = "version"
    title = "[jax2tf] call_tf: support jax.vmap"
    summary = "The summary paragraph."
    patches = ["0002-call-tf-vmap.patch"]
    overlay = "patches/stage/overlay/vmap.patch"
    modules = ["call_tf_lib/__init__.py", "call_tf_lib/errors.py",
               "call_tf_lib/compat.py", "call_tf_lib/batching/__init__.py",
               "call_tf_lib/batching/rule.py"]
    changelog = [{ section = "New features", text = "`call_tf` supports `jax.vmap`." }]

    [[pr.test]]
    file = "call_tf_batch_test.py"
    to = "jax/experimental/jax2tf/tests/batching_test.py"

    [[pr.edit]]
    file = "jax/experimental/jax2tf/README.md"
    find = "(no forward-mode autodiff, nor ``vmap``)."
    replace = "(no forward-mode autodiff)."

    [[pr]]
    name = "pfor"
    after = "vmap"
    title = "[jax2tf] call_tf: vectorize with pfor"
    patches = ["0003-call-tf-options.patch"]
    overlay = "patches/stage/overlay/pfor.patch"
    modules = ["call_tf_lib/batching/pfor.py"]
    changelog = [{ section = "Changes", text = "`call_tf` vectorizes." }]

    [[pr.deferred]]
    file = "jax/_src/config.py"
    text = '''
    OPTIONS["call_tf_vectorizer"] = "pfor"
    '''

    [[pr]]
    name = "twice"
    source = "patches/stage/twice.patch"
    touches = ["jax/experimental/jax2tf/call_tf.py",
               "jax/experimental/jax2tf/tests/call_tf_test.py",
               "CHANGELOG.md"]
    changelog = [{ section = "Bug fixes", text = "`call_tf_twice`." }]

    [[pr]]
    name = "later"
    title = "[jax2tf] call_tf: what comes after the proposal"
    held = "until the proposal is accepted"
    after = "pfor"

    [[pr]]
    name = "proposal"
    title = "[JEP] A toy proposal"
    summary = "A design proposal for the rest."
    jep = { source = "docs/jep/toy-proposal.md", slug = "toy-proposal" }

    [[stays]]
    name = "internal"
    why = "only the distribution needs it"
    modules = ["call_tf_lib/internal.py"]
    """


def make_upstream(path: pathlib.Path) -> pathlib.Path:
  """The toy upstream repository at `path`, tagged jax-v0.12.0.1."""
  path.mkdir(parents=True)
  write(path, UPSTREAM)
  git(path, "init", "-q", "-b", "main")
  git(path, "add", "-A")
  git(path, "commit", "-q", "-m", "Release 0.12.0.1")
  git(path, "tag", "jax-v0.12.0.1")
  return path


def make_project(path: pathlib.Path, real_root: pathlib.Path,
                 upstream: pathlib.Path) -> pathlib.Path:
  """The toy fork at `path`, its queue made against `upstream`."""
  (path / "patches").mkdir(parents=True)
  shutil.copy(real_root / "patches" / "upstream.toml", path / "patches")
  (path / "tests").mkdir()
  shutil.copy(real_root / "tests" / "requirements.txt", path / "tests")
  work = path.parent / (path.name + "-queue-work")
  git(path.parent, "clone", "-q", str(upstream), str(work))
  for name, file, text, subject, description in PATCHES:
    write(work, {file: text})
    git(work, "commit", "-q", "-am", f"{subject}\n\nDescription: "
        f"{description}\nAuthor: The fork's maintainers "
        "<calltf-fork@users.noreply.github.com>\nBug: "
        "https://github.com/jax-ml/jax/issues/11753\nForwarded: no\n"
        "Last-Update: 2026-12-01")
    out = git(work, "format-patch", "--zero-commit", "--no-signature",
              "-1", "-o", str(path / "patches")).strip()
    pathlib.Path(out).rename(path / "patches" / name)
  files, message = SOURCE_PATCH
  git(work, "checkout", "-q", "jax-v0.12.0.1")
  write(work, files)
  git(work, "commit", "-q", "-am", message)
  (path / "patches" / "stage").mkdir()
  out = git(work, "format-patch", "--zero-commit", "--no-signature",
            "--full-index", "-1", "-o", str(path / "patches" / "stage")
            ).strip()
  # As patches written for upstream are kept: no From: or Date: line (stage
  # applies them as --author).
  text = pathlib.Path(out).read_text()
  pathlib.Path(out).unlink()
  (path / "patches" / "stage" / "twice.patch").write_text("".join(
      line for line in text.splitlines(keepends=True)
      if not line.startswith(("From: ", "Date: "))))
  shutil.rmtree(work)
  (path / "patches" / "series").write_text(
      "".join(name + "\n" for name, *_ in PATCHES))
  write(path / "jax" / "experimental" / "jax2tf", OVERLAY)
  write(path / "tests" / "upstream", TESTS)
  write(path, {"docs/design-notes.md": "# Notes of the fork\n",
               "docs/jep/toy-proposal.md": JEP,
               "patches/stage.toml": PLAN})
  for name, edits in VARIANTS.items():
    (path / "patches" / "stage" / "overlay").mkdir(exist_ok=True)
    (path / "patches" / "stage" / "overlay" / f"{name}.patch").write_text(
        overlay_patch(path, edits))
  return path
