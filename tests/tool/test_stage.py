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
"""`stage`: the patch queue as upstream pull requests.

Onto a synthetic git repository laid out like upstream's: the release's
real source (its sdist, without what only the sdist has), upstream's tests
(from $JAX_FORK_UPSTREAM_TESTS: `main` where there is a snapshot of it, else
the nearest earlier tag) and BUILD files written here in upstream's form;
and onto the sdist alone.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

from forklib import fetch
from forklib import patchq
from forklib import stage as stage_lib
from forklib import tree as tree_lib
from forklib import upstream_tests as upstream_tests_lib
from forklib.project import Project

pytestmark = pytest.mark.skipif(shutil.which("git") is None,
                                reason="git is not installed")

_GIT = ["git", "-c", "safe.directory=*", "-c", "user.name=Upstream",
        "-c", "user.email=upstream@example.com"]

# BUILD files in upstream's form (Bazel): the library that lists call_tf.py,
# and the tests' package with call_tf_test's rule.
_LIBRARY_BUILD = """\
load("//jaxlib:jax.bzl", "jax_visibility", "py_deps")

py_library(
    name = "jax2tf",
    srcs = ["__init__.py"],
    visibility = ["//visibility:public"],
    deps = [":jax2tf_internal"],
)

py_library(
    name = "jax2tf_internal",
    srcs = [
        "call_tf.py",
        "jax2tf.py",
    ],
    deps = ["//jax"] + py_deps("numpy"),
)
"""
_TESTS_BUILD = """\
load("//jaxlib:jax.bzl", "jax_multiplatform_test", "py_deps")

jax_multiplatform_test(
    name = "jax2tf_test",
    srcs = ["jax2tf_test.py"],
    tags = ["jax2tf"],
)

jax_multiplatform_test(
    name = "call_tf_test",
    srcs = ["call_tf_test.py"],
    tags = ["jax2tf"],
    deps = [
        ":tf_test_util",
    ] + py_deps("tpu_ops"),
)
"""


def _git(repo, *args):
  return subprocess.run([*_GIT, *args], cwd=repo, check=True,
                        capture_output=True, text=True).stdout


def _fork(root, *args):
  return subprocess.run([sys.executable, str(root / "build" / "fork.py"),
                         *args], capture_output=True, text=True)


def _upstream_test_files(release) -> dict[str, bytes]:
  """Upstream's tests: main's snapshot if there is one, else by tag."""
  folder = os.environ.get("JAX_FORK_UPSTREAM_TESTS")
  if not folder:
    return {}
  main = sorted(pathlib.Path(folder).glob("jax-main-*.tar.gz"))
  if main:
    files = {}
    with tarfile.open(main[-1]) as tar:
      for member in tar.getmembers():
        if member.isfile():
          rel = member.name.split("/", 1)[1]
          files[rel] = tar.extractfile(member).read()
    return files
  return upstream_tests_lib.source_files(
      upstream_tests_lib.find_set(pathlib.Path(folder), release.version))


def _make_upstream(release, path: pathlib.Path) -> pathlib.Path:
  """A git repository laid out like upstream's, tagged jax-v<release>."""
  with tarfile.open(fetch.fetch(release)) as tar:
    tar.extractall(path.parent / "unpacked", filter="data")
  os.rename(path.parent / "unpacked" / f"jax-{release.version}", path)
  (path / "PKG-INFO").unlink()
  for egg in path.glob("*.egg-info"):
    shutil.rmtree(egg)
  upstream_tests_lib.lay_files(_upstream_test_files(release), path)
  jax2tf = path / "jax" / "experimental" / "jax2tf"
  (jax2tf / "BUILD").write_text(_LIBRARY_BUILD)
  (jax2tf / "tests").mkdir(exist_ok=True)
  (jax2tf / "tests" / "BUILD").write_text(_TESTS_BUILD)
  _git(path, "init", "-q", "-b", "main")
  _git(path, "add", "-A")
  _git(path, "commit", "-q", "-m", f"Release {release.version}")
  _git(path, "tag", f"jax-v{release.version}")
  return path


@pytest.fixture(scope="module")
def upstream(release, tmp_path_factory) -> pathlib.Path:
  return _make_upstream(release, tmp_path_factory.mktemp("upstream") / "jax")


@pytest.fixture(scope="module")
def staged(root, release, upstream, tmp_path_factory) -> pathlib.Path:
  out = tmp_path_factory.mktemp("stage") / "out"
  proc = _fork(root, "-q", "stage", release.version, "--out", str(out),
               "--onto", str(upstream), "--ref", f"jax-v{release.version}")
  assert proc.returncode == 0, proc.stderr
  return out


def _commits(repo) -> list[str]:
  return _git(repo, "log", "--reverse", "--format=%H").split()


def test_stage_works_on_the_sdist_and_names_what_it_cannot_hold(
    root, release, tmp_path):
  out = tmp_path / "out"
  proc = _fork(root, "-q", "stage", release.version, "--out", str(out))
  assert proc.returncode == 0, proc.stderr
  queue = patchq.load_queue(root / "patches", release.version)
  repo = out / "repo"
  files = _git(repo, "ls-files").split()
  assert "PKG-INFO" not in files
  assert not any(".egg-info/" in f for f in files)
  assert len(_commits(repo)) == 1 + len(queue)
  report = (out / "report.md").read_text()
  test_edits = sorted({fp.path for p in queue for fp in p.files
                       if patchq.is_test_path(fp.path)})
  assert test_edits, "the queue edits none of upstream's tests"
  held = report.split("Edits this base cannot hold", 1)[1].split("\n\n")[1]
  for path in test_edits:
    assert path in held, path
  assert f"{len(queue)} of {len(queue)} commits apply" in report
  help_text = " ".join(_fork(root, "stage", "--help").stdout.split())
  assert "--onto CHECKOUT" in help_text and "sdist" in help_text


def test_one_commit_per_patch_with_its_author(root, release, staged):
  queue = patchq.load_queue(root / "patches", release.version)
  repo = staged / "repo"
  subjects = _git(repo, "log", "--reverse", "--format=%s").splitlines()
  assert subjects == [f"Release {release.version}",
                      *(p.subject for p in queue)]
  authors = _git(repo, "log", "--reverse", "--format=%an <%ae>").splitlines()
  for patch, author in zip(queue, authors[1:]):
    sender = re.search(r"^From: (.+)$", patch.path.read_text(), re.M)[1]
    assert author == sender, patch.name
  assert _git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == (
      "call-tf-vmap")
  report = (staged / "report.md").read_text()
  assert f"{len(queue)} of {len(queue)} commits apply" in report


def test_no_fork_markers_reach_upstream(staged):
  repo = staged / "repo"
  proc = subprocess.run([*_GIT, "grep", "-n", "stage-with:"], cwd=repo,
                        capture_output=True, text=True)
  assert proc.returncode == 1, proc.stdout  # no match anywhere


def test_build_files_list_every_new_module_and_test(root, staged):
  repo = staged / "repo"
  library = (repo / "jax/experimental/jax2tf/BUILD").read_text()
  srcs = re.search(r'name = "jax2tf_internal",\n    srcs = \[([^\]]*)\]',
                   library).group(1)
  modules = sorted(p.relative_to(repo / "jax/experimental/jax2tf").as_posix()
                   for p in (repo / "jax/experimental/jax2tf/call_tf_lib"
                             ).rglob("*.py"))
  assert modules
  assert re.findall(r'"([^"]+)"', srcs) == sorted(
      ["call_tf.py", "jax2tf.py", *modules])
  tests_build = (repo / "jax/experimental/jax2tf/tests/BUILD").read_text()
  for test in sorted((root / "tests" / "upstream").glob("*_test.py")):
    name = test.name.removesuffix(".py")
    rule = re.search(rf'\njax_multiplatform_test\(\n    name = "{name}",\n'
                     rf'    srcs = \["{test.name}"\],\n.*?\n\)\n',
                     tests_build, re.S)
    assert rule, name
    assert '":tf_test_util"' in rule.group(0)  # as call_tf_test's rule


def test_each_commit_carries_its_build_entries(staged):
  """A commit that adds a module or a test lists it in BUILD itself."""
  repo = staged / "repo"
  for commit in _commits(repo)[1:]:
    files = _git(repo, "show", "--name-status", "--format=", commit)
    added = [line.split("\t")[1] for line in files.splitlines()
             if line.startswith("A\t")]
    for path in added:
      if path.startswith("jax/experimental/jax2tf/call_tf_lib/"):
        build = _git(repo, "show", f"{commit}:jax/experimental/jax2tf/BUILD")
        assert '"' + path.split("jax2tf/", 1)[1] + '"' in build, path
      elif path.startswith("jax/experimental/jax2tf/tests/") and (
          path.endswith("_test.py")):
        build = _git(repo, "show",
                     f"{commit}:jax/experimental/jax2tf/tests/BUILD")
        assert f'"{path.rsplit("/", 1)[1]}"' in build, path


def test_every_commit_has_the_overlay_modules_it_imports(staged):
  repo = staged / "repo"
  for commit in _commits(repo)[1:]:
    files = set(_git(repo, "ls-tree", "-r", "--name-only", commit).split())
    for path in files:
      if not path.startswith("jax/experimental/jax2tf/call_tf"):
        continue
      text = _git(repo, "show", f"{commit}:{path}")
      names = re.findall(
          r"from jax\.experimental\.jax2tf import (call_tf_\w+)", text)
      names += [f"{package.replace('.', '/')}/{m}" for package, m in re.findall(
          r"from jax\.experimental\.jax2tf\.(call_tf_lib(?:\.\w+)*) "
          r"import (\w+)", text)]
      # call_tf.py reaches the package's modules as attribute chains,
      # call_tf_lib.<subpackage>.<module>.<name>.
      names += [chain.replace(".", "/") for chain in re.findall(
          r"\b(call_tf_lib(?:\.[a-z_]\w*)+)\.", text)]
      for module in names:
        assert (f"jax/experimental/jax2tf/{module}.py" in files
                or f"jax/experimental/jax2tf/{module}/__init__.py" in files), (
                    commit, path, module)


def test_the_branch_ends_at_the_patched_tree(root, release, staged,
                                             tmp_path):
  tree = tree_lib.build_tree(Project(root), release,
                             tmp_path / "tree")
  touched = tree_lib.touched_files(Project(root), release)
  for path in touched - {"jax/version.py"}:
    assert (staged / "repo" / path).read_text() == (tree / path).read_text()


def test_pull_request_descriptions_come_from_dep3(root, release, staged):
  patch = patchq.load_queue(root / "patches", release.version)[2]
  text = (staged / "pull-requests" /
          (patch.name.removesuffix(".patch") + ".md")).read_text()
  assert text.startswith(f"# {patch.subject}\n")
  assert patch.headers["Description"].split("\n")[0] in text
  assert patchq.BUG_URL in text
  assert ("`jax/experimental/jax2tf/call_tf_lib/batching/dispatch.py`"
          in text)


def test_upstream_tests_are_staged_with_their_patch(root, staged):
  tests = stage_lib.staged_tests(Project(root))
  assert tests, "tests/upstream has no staged tests"
  for patch_name, paths in tests.items():
    subject = patchq.parse(root / "patches" / patch_name).subject
    commit = _git(staged / "repo", "log", "--format=%H", "-F",
                  f"--grep={subject}").split()[0]
    files = _git(staged / "repo", "show", "--name-only", "--format=",
                 commit).split()
    for path in paths:
      assert f"{stage_lib.UPSTREAM_TESTS_DIR}/{path.name}" in files


def test_a_patch_that_does_not_apply_is_reported_for_rework(
    root, release, upstream, tmp_path):
  """Upstream changed the lines a patch edits: the others still stage."""
  checkout = tmp_path / "jax"
  _git(tmp_path, "clone", "-q", str(upstream), str(checkout))
  queue = patchq.load_queue(root / "patches", release.version)
  first = queue[0]
  path = first.files[0].path
  removed = next(text for h in first.files[0].hunks for tag, text in h.lines
                 if tag == "-")
  target = checkout / path
  target.write_text(target.read_text().replace(removed, removed.rstrip()
                                               + "  # upstream's edit\n", 1))
  _git(checkout, "commit", "-qam", "upstream edits the patched lines")
  others = [p for p in queue[1:] if path not in {fp.path for fp in p.files}]
  out = tmp_path / "out"
  proc = _fork(root, "-q", "stage", release.version, "--out", str(out),
               "--onto", str(checkout))
  assert proc.returncode == 0, proc.stderr
  report = (out / "report.md").read_text()
  assert re.search(rf"\| {re.escape(first.name)} \| needs rework \|.*"
                   rf"conflicts in {re.escape(path)}", report), report
  for patch in others:
    assert f"| {patch.name} | applies" in report, patch.name
  rework = report.split("Needs rework before sending", 1)[1]
  assert f"- {first.name}" in rework
  subjects = _git(out / "repo", "log", "--format=%s").splitlines()
  assert first.subject not in subjects
  assert _git(out / "repo", "status", "--porcelain") == ""


def test_stage_refuses_an_existing_directory(root, release, staged):
  proc = _fork(root, "stage", release.version, "--out", str(staged))
  assert proc.returncode == 2 and "already exists" in proc.stderr


def test_stage_refuses_a_directory_that_is_not_a_checkout(root, release,
                                                         tmp_path):
  proc = _fork(root, "stage", release.version, "--out", str(tmp_path / "o"),
               "--onto", str(tmp_path))
  assert proc.returncode == 2
  assert "is not a git checkout of upstream's repository" in proc.stderr
  assert not (tmp_path / "o").exists()
