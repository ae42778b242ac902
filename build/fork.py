#!/usr/bin/env python3
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
"""The fork's build tool: python build/fork.py <command> [options].

Commands:
  fetch VERSION            download upstream's sdist with pip, verify sha256
  apply VERSION --out DIR  sdist + overlay + patches + version stamp -> DIR
  wheel [VERSION] --out DIR  the patched, reproducible wheel
  check                    apply the series to every release; print a table
  index --out DIR          publish the newest release's wheel and its pinned
                           jaxlibs as a PEP 503 index (static files);
                           --upstream V or --all for others
  pins [VERSION...|--all]  pin upstream's jaxlib wheels for every platform
                           (jaxlib_build/pins.toml)
  serve DIR                serve an index on http://127.0.0.1
  publish --repository-url URL  upload the newest release's wheel and its
                           pinned jaxlibs to an index server with twine
                           (skips files already there, refuses different
                           ones); --upstream V or --all for others
  rebase VERSION [--from V] refresh the queue for another release (3-way);
                           writes patches/variants/VERSION/ where needed
  stage VERSION --out DIR [--onto CHECKOUT]
                           the queue as upstream pull requests: a git branch
                           on upstream's sdist or a checkout of its repository,
                           one commit per patch with its test and BUILD
                           entries, a report of what applies, descriptions
  baseline [VERSION...] --upstream-tests DIR
                           run upstream's tests against upstream's own
                           wheel; record what fails in
                           tests/upstream_known_failures.toml
  demo                     build the wheel, install it in .venv, show it works
  test [--upstream-tests DIR] [-- PYTEST_ARGS]
                           build, install into a test venv, run pytest (and
                           upstream's own tests): the default release in
                           full, the others' smoke suite (--upstream V: V in
                           full)
  matrix [--upstream-tests DIR]
                           every release in full; a table, written to
                           docs/compatibility.md
  workflow [--check]       write .github/workflows/wheels.yml from the
                           manifest

Run `python build/fork.py <command> --help` for a command's options.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "build"))

from forklib import ForkError  # noqa: E402
from forklib import baseline as baseline_lib  # noqa: E402
from forklib import envs  # noqa: E402
from forklib import fetch  # noqa: E402
from forklib import index as index_lib  # noqa: E402
from forklib import jaxlib_mirror  # noqa: E402
from forklib import log  # noqa: E402
from forklib import manifest as manifest_lib  # noqa: E402
from forklib import patchq  # noqa: E402
from forklib import publication  # noqa: E402
from forklib import publish as publish_lib  # noqa: E402
from forklib import rebase as rebase_lib  # noqa: E402
from forklib import stage as stage_lib  # noqa: E402
from forklib import testrun  # noqa: E402
from forklib import tree as tree_lib  # noqa: E402
from forklib import upstream_tests  # noqa: E402
from forklib import wheel as wheel_lib  # noqa: E402
from forklib import workflow as workflow_lib  # noqa: E402


def _project(args: argparse.Namespace) -> tree_lib.Project:
  return tree_lib.Project(pathlib.Path(args.root).resolve())


def _release(args: argparse.Namespace) -> manifest_lib.Release:
  project = _project(args)
  manifest = manifest_lib.load(project.manifest_path)
  return manifest.select(getattr(args, "version", None))


def cmd_fetch(args: argparse.Namespace) -> int:
  path = fetch.fetch(_release(args))
  print(path)
  return 0


def cmd_apply(args: argparse.Namespace) -> int:
  out = tree_lib.build_tree(_project(args), _release(args),
                            pathlib.Path(args.out), force=args.force)
  print(out)
  return 0


def cmd_wheel(args: argparse.Namespace) -> int:
  path = wheel_lib.build(_project(args), _release(args), pathlib.Path(args.out))
  print(path)
  return 0


def cmd_check(args: argparse.Namespace) -> int:
  """Applies the queue to every release in a scratch dir; prints a table."""
  project = _project(args)
  manifest = manifest_lib.load(project.manifest_path)
  rows = []
  failed = False
  for release in manifest.releases:
    queue = patchq.load_queue(project.patches, release.version)
    problems = [f"{p.name}: missing DEP-3 {', '.join(p.missing_dep3())}"
                for p in queue if p.missing_dep3()]
    problems += [f"{p.name}: asymmetric context in {h}"
                 for p in queue for h in p.asymmetric_hunks()]
    log.step("check", f"jax {release.version}: applying {len(queue)} "
             "patches")
    quiet = log.is_quiet()
    try:
      log.set_quiet(True)
      with tempfile.TemporaryDirectory(prefix="fork-check-") as tmp:
        tree_lib.build_tree(project, release, pathlib.Path(tmp) / "tree")
      status = "ok" if not problems else "headers"
    except ForkError as e:
      status, problems = "FAILS", [str(e).splitlines()[0], *problems]
    finally:
      log.set_quiet(quiet)
    failed |= status != "ok"
    rows.append((release.version, release.label, str(len(queue)), status,
                 "; ".join(problems)))
  header = ("upstream", "fork version", "patches", "status", "details")
  widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
  for row in [header, *rows]:
    print("  ".join(c.ljust(w) for c, w in zip(row[:4], widths)), row[4],
          flush=True)
  return 1 if failed else 0


def cmd_index(args: argparse.Namespace) -> int:
  """Publishes fork wheels and the pinned jaxlib wheels into an index."""
  project = _project(args)
  manifest = manifest_lib.load(project.manifest_path)
  given: dict[manifest_lib.Release, pathlib.Path] = {}
  if args.wheel:
    by_label = {r.label: r for r in manifest.releases}
    for w in args.wheel:
      path = pathlib.Path(w).resolve()
      label = path.name.split("-")[1]
      if label not in by_label:
        raise ForkError(f"{path.name} is not a wheel of a release in "
                        f"{manifest.path}")
      given[by_label[label]] = path
    releases = list(given)
  else:
    releases = publication.select(manifest, args.upstream, args.all)
  wheels, pairs, origins = [], {}, {}
  for release in releases:
    files = publication.release_files(project, release,
                                      jaxlib=not args.no_jaxlib,
                                      fork_wheel=given.get(release))
    jaxlibs = [jaxlib_mirror.fetch_wheel(p) for p in files.jaxlib]
    wheels += [files.fork_wheel, *jaxlibs]
    pairs[release.label] = [files.fork_wheel.name, *(j.name for j in jaxlibs)]
    origins.update({j.name: index_lib.ORIGIN_PINNED for j in jaxlibs})
    if release not in given:
      origins[files.fork_wheel.name] = index_lib.build_origin(
          tree_lib.inputs_digest(project, release))
  print(index_lib.build(pathlib.Path(args.out), wheels, pairs, origins))
  return 0


def cmd_serve(args: argparse.Namespace) -> int:
  index_lib.serve(pathlib.Path(args.directory), args.host, args.port)
  return 0


def cmd_publish(args: argparse.Namespace) -> int:
  """Uploads the fork's wheels and the pinned jaxlib wheels with twine."""
  project = _project(args)
  manifest = manifest_lib.load(project.manifest_path)
  releases = publication.select(manifest, args.upstream, args.all)
  uploaded = publish_lib.publish(
      project, releases, repository_url=args.repository_url,
      repository=args.repository, simple_url=args.simple_url,
      config_file=args.config_file, jaxlib=not args.no_jaxlib)
  for name in uploaded:
    print(name)
  return 0


def cmd_pins(args: argparse.Namespace) -> int:
  """Pins upstream's jaxlib wheels of releases for every platform."""
  project = _project(args)
  manifest = manifest_lib.load(project.manifest_path)
  releases = publication.select(manifest, args.version, args.all)
  path = project.root / "jaxlib_build" / "pins.toml"
  updates: dict[str, list[jaxlib_mirror.PinnedWheel]] = {}
  for release in releases:
    pythons = tuple(sorted(
        {p for r in manifest.releases if r.test_jaxlib == release.test_jaxlib
         for p in r.python}, key=manifest_lib.version_tuple))
    updates[release.test_jaxlib] = jaxlib_mirror.find_upstream_wheels(
        release.test_jaxlib, pythons)
  jaxlib_mirror.write_pins(path, updates)
  for version, wheels in updates.items():
    print(f"jaxlib {version}: {len(wheels)} wheels pinned")
  return 0


def cmd_rebase(args: argparse.Namespace) -> int:
  """Refreshes the queue for a release, from one it applies to exactly."""
  project = _project(args)
  manifest = manifest_lib.load(project.manifest_path)
  target = manifest.get(args.version)
  if args.source:
    source = manifest.get(args.source)
  else:
    others = [r for r in manifest.releases if r.version != target.version]
    if not others:
      raise ForkError("rebase needs a second release in the manifest to "
                      "rebase from; pass --from")
    source = max(others, key=lambda r: manifest_lib.version_tuple(r.version))
  written = rebase_lib.rebase(
      project, source, target,
      resume=pathlib.Path(args.resume).resolve() if args.resume else None)
  print(f"{len(written)} patch(es) refreshed for jax {target.version}"
        + (": " + ", ".join(written) if written else
           " (the queue applies exactly)"))
  return 0


def cmd_stage(args: argparse.Namespace) -> int:
  out = stage_lib.stage(
      _project(args), _release(args), pathlib.Path(args.out),
      onto=pathlib.Path(args.onto) if args.onto else None, ref=args.ref)
  print(out)
  return 0


def cmd_demo(args: argparse.Namespace) -> int:
  project = _project(args)
  release = _release(args)
  wheel = wheel_lib.build(project, release, project.root / "dist")
  venv = envs.demo_env(project, release, wheel)
  return envs.show_fork(project, venv)


def _tests_dir(args: argparse.Namespace) -> pathlib.Path | None:
  return (pathlib.Path(args.upstream_tests).resolve() if args.upstream_tests
          else None)


def cmd_test(args: argparse.Namespace) -> int:
  """Builds, installs and tests the releases (see forklib/testrun.py)."""
  project = _project(args)
  manifest = manifest_lib.load(project.manifest_path)
  tests_dir = _tests_dir(args)
  rows, wheels = [], {}
  for release, mode in testrun.plan(manifest, args.version, args.full,
                                    args.python):
    log.step("test", f"jax {release.label} on Python {release.test_python} "
             f"({mode})")
    rows.append(testrun.run_release(project, release, mode,
                                    pytest_args=list(args.pytest_args),
                                    tests_dir=tests_dir,
                                    wheel=wheels.get(release.label)))
    built = project.root / "dist" / wheel_lib.wheel_name(release)
    if rows[-1].fork is not None and built.exists():
      wheels[release.label] = built
  print(testrun.summary(rows, tests_dir), flush=True)
  if args.write_compatibility:
    path = project.root / "docs" / "compatibility.md"
    testrun.write_compatibility(path, rows, tests_dir,
                                upstream_tests.today(),
                                upstream_tests.machine())
    print(f"wrote {path}")
  return 0 if all(r.ok for r in rows) else 1


def cmd_baseline(args: argparse.Namespace) -> int:
  """Records which upstream tests fail on stock upstream, per release."""
  project = _project(args)
  manifest = manifest_lib.load(project.manifest_path)
  releases = ([manifest.get(v) for v in args.version] if args.version
              else manifest.newest())
  failed = []
  for release in releases:
    try:
      baseline_lib.run(project, release,
                       pathlib.Path(args.upstream_tests).resolve())
    except ForkError as e:
      if len(releases) == 1:
        raise
      print(f"error: jax {release.version}: {e}", file=sys.stderr)
      failed.append(release.version)
  return 1 if failed else 0


def cmd_workflow(args: argparse.Namespace) -> int:
  """Writes (or checks) the GitHub Actions workflow from the manifest."""
  project = _project(args)
  manifest = manifest_lib.load(project.manifest_path)
  if args.check:
    workflow_lib.check(project.root, manifest)
    print(f"{project.root / workflow_lib.PATH} matches {manifest.path}")
  else:
    print(workflow_lib.write(project.root, manifest))
  return 0


def _add_release_choice(p: argparse.ArgumentParser, verb: str) -> None:
  p.add_argument("--upstream", action="append", default=[],
                 help=f"{verb} this upstream release (repeatable; default: "
                      "the newest in the manifest)")
  p.add_argument("--all", action="store_true",
                 help=f"{verb} every release in the manifest")


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(
      prog="python build/fork.py", description=__doc__.split("\n\n")[0],
      formatter_class=argparse.RawDescriptionHelpFormatter,
      epilog=__doc__.split("\n\n", 1)[1])
  parser.add_argument("--root", default=str(ROOT),
                      help="the project root holding patches/ and jax/ "
                           "(default: this repository)")
  parser.add_argument("-q", "--quiet", action="store_true",
                      help="print only results, no progress")
  sub = parser.add_subparsers(dest="command", required=True)

  p = sub.add_parser("fetch", help="download and verify upstream's sdist")
  p.add_argument("version", help="upstream release, e.g. 0.10.2")
  p.set_defaults(func=cmd_fetch)

  p = sub.add_parser("apply", help="build the patched source tree")
  p.add_argument("version", help="upstream release, e.g. 0.10.2")
  p.add_argument("--out", required=True, help="directory to create")
  p.add_argument("--force", action="store_true",
                 help="replace --out if it exists")
  p.set_defaults(func=cmd_apply)

  p = sub.add_parser("wheel", help="build the patched wheel")
  p.add_argument("version", nargs="?",
                 help="upstream release (default: the newest in the manifest)")
  p.add_argument("--out", default=str(ROOT / "dist"),
                 help="directory for the wheel (default: dist/)")
  p.set_defaults(func=cmd_wheel)

  p = sub.add_parser("check", help="apply the series to every release")
  p.set_defaults(func=cmd_check)

  p = sub.add_parser("index", help="publish wheels into a PEP 503 index")
  p.add_argument("--out", required=True, help="the index directory")
  p.add_argument("--wheel", action="append", default=[],
                 help="a fork wheel to publish (repeatable), for its release; "
                      "default: build the wheel of the release chosen below")
  _add_release_choice(p, "publish")
  p.add_argument("--no-jaxlib", action="store_true",
                 help="do not mirror the pinned jaxlib wheels (users then "
                      "take jaxlib from the public index)")
  p.set_defaults(func=cmd_index)

  p = sub.add_parser("serve", help="serve an index over HTTP")
  p.add_argument("directory", help="an index built by `index`")
  p.add_argument("--host", default="127.0.0.1")
  p.add_argument("--port", type=int, default=8000,
                 help="0 picks a free port (default: 8000)")
  p.set_defaults(func=cmd_serve)

  p = sub.add_parser("publish", help="upload wheels to an index server "
                     "with twine")
  where = p.add_mutually_exclusive_group(required=True)
  where.add_argument("--repository-url",
                     help="the server's upload URL, as for twine upload "
                          "(pypiserver: http://HOST:PORT/; devpi: "
                          "http://HOST:PORT/USER/INDEX/)")
  where.add_argument("-r", "--repository",
                     help="a section of .pypirc naming the server and its "
                          "credentials, as for twine upload")
  p.add_argument("--simple-url",
                 help="the server's simple index, read to see what it holds "
                      "(default: the upload URL + simple/, or + +simple/ as "
                      "devpi has it, whichever answers)")
  p.add_argument("--config-file",
                 help="the .pypirc to read (default: twine's, ~/.pypirc)")
  _add_release_choice(p, "publish")
  p.add_argument("--no-jaxlib", action="store_true",
                 help="do not upload the pinned jaxlib wheels")
  p.set_defaults(func=cmd_publish)

  p = sub.add_parser("pins", help="pin upstream's jaxlib wheels for every "
                     "platform in jaxlib_build/pins.toml")
  p.add_argument("version", nargs="*",
                 help="upstream releases whose test_jaxlib to pin (default: "
                      "the newest in the manifest)")
  p.add_argument("--all", action="store_true", help="every release")
  p.set_defaults(func=cmd_pins)

  p = sub.add_parser("rebase", help="refresh the queue for a release")
  p.add_argument("version", help="the upstream release to rebase onto")
  p.add_argument("--from", dest="source",
                 help="a release the queue applies to (default: the newest "
                      "other release in the manifest)")
  p.add_argument("--resume", metavar="REPO",
                 help="after resolving a conflict in the work repository "
                      "REPO and `git rebase --continue`: write the variants")
  p.set_defaults(func=cmd_rebase)

  p = sub.add_parser("stage", help="stage the queue as upstream PRs")
  p.add_argument("version", help="upstream release, e.g. 0.10.2")
  p.add_argument("--out", required=True,
                 help="directory to create: DIR/repo (branch call-tf-vmap), "
                      "DIR/report.md, DIR/pull-requests/")
  p.add_argument("--onto", metavar="CHECKOUT",
                 help="a git checkout of upstream's repository to stage onto "
                      "(at a release tag or main); default: upstream's sdist "
                      "of VERSION, which has no tests or BUILD files (the "
                      "report names the edits left out)")
  p.add_argument("--ref", help="with --onto: the tag, branch or commit to "
                 "start from (default: the checkout's HEAD)")
  p.set_defaults(func=cmd_stage)

  p = sub.add_parser("baseline", help="record the upstream tests that fail "
                      "on stock upstream (tests/upstream_known_failures.toml)")
  p.add_argument("version", nargs="*",
                 help="upstream releases (default: every release)")
  p.add_argument("--upstream-tests", required=True, metavar="DIR",
                 help="upstream's tests: jax-v<version>.tar.gz files or "
                      "checkouts (e.g. ../shared/upstream-tests)")
  p.set_defaults(func=cmd_baseline)

  p = sub.add_parser("demo", help="build, install into .venv, show it works")
  p.add_argument("--upstream", dest="version",
                 help="upstream release (default: the newest in the manifest)")
  p.set_defaults(func=cmd_demo)

  upstream_tests_help = ("upstream's own tests: a folder of jax-v<version>."
                         "tar.gz files or checkouts of upstream's repository "
                         "(e.g. ../shared/upstream-tests); without it they "
                         "are not run, and the summary says so")
  p = sub.add_parser("test", help="build, install, run pytest, per release")
  p.add_argument("--upstream", dest="version", action="append", default=[],
                 help="only this upstream release, in full (repeatable; "
                      "default: the default release in full, the others "
                      "with the smoke suite)")
  p.add_argument("--full", action="store_true",
                 help="every release in full (as `matrix`)")
  p.add_argument("--python", metavar="X.Y",
                 help="test on this Python of the release(s) (one of their "
                      "`python` in patches/upstream.toml) instead of the "
                      "first; default: the first in the mode chosen, the "
                      "others with the fork's smoke suite")
  p.add_argument("--upstream-tests", metavar="DIR", help=upstream_tests_help)
  p.add_argument("pytest_args", nargs=argparse.REMAINDER,
                 help="arguments after -- go to the fork suite's pytest")
  p.set_defaults(func=cmd_test, write_compatibility=False)

  p = sub.add_parser("matrix", help="every release in full, a table, and "
                      "docs/compatibility.md")
  p.add_argument("--upstream-tests", metavar="DIR", help=upstream_tests_help)
  p.set_defaults(func=cmd_test, version=[], full=True, pytest_args=[],
                 python=None, write_compatibility=True)

  p = sub.add_parser("workflow", help="write .github/workflows/wheels.yml "
                      "from the manifest")
  p.add_argument("--check", action="store_true",
                 help="fail if the committed workflow is not the generated "
                      "one")
  p.set_defaults(func=cmd_workflow)

  args = parser.parse_args(argv)
  log.set_quiet(args.quiet)
  if getattr(args, "pytest_args", None) and args.pytest_args[0] == "--":
    args.pytest_args = args.pytest_args[1:]
  try:
    return args.func(args)
  except ForkError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  except KeyboardInterrupt:
    return 130


if __name__ == "__main__":
  sys.exit(main())
