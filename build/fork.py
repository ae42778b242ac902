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

This file only parses arguments: each command calls a function of `forklib`
(its modules: build/forklib/__init__.py).
"""

from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "build"))

from forklib import ForkError  # noqa: E402
from forklib import log  # noqa: E402
from forklib.manifest import Release  # noqa: E402
from forklib.project import Project  # noqa: E402
from forklib.publishing import index  # noqa: E402
from forklib.publishing import publication  # noqa: E402
from forklib.publishing import publish  # noqa: E402
from forklib.publishing import serve  # noqa: E402
from forklib.publishing import workflow  # noqa: E402
from forklib.sources import fetch  # noqa: E402
from forklib.sources import jaxlib_mirror  # noqa: E402
from forklib.sources import tree  # noqa: E402
from forklib.sources import wheel  # noqa: E402
from forklib.testing import baseline  # noqa: E402
from forklib.testing import dev  # noqa: E402
from forklib.testing import envs  # noqa: E402
from forklib.testing import testrun  # noqa: E402
from forklib.upstreaming import rebase  # noqa: E402
from forklib.upstreaming import stage  # noqa: E402


def _project(args: argparse.Namespace) -> Project:
  return Project(pathlib.Path(args.root).resolve())


def _release(args: argparse.Namespace) -> Release:
  return _project(args).manifest().select(getattr(args, "version", None))


def _path(value: str | None) -> pathlib.Path | None:
  return pathlib.Path(value).resolve() if value else None


# Each command: the function it runs (cmd_NAME) and its parser (_add_NAME,
# given what `add_subparsers` returns), which `_parser` adds in the order of
# _COMMANDS, that of `--help`.

_Subparsers = argparse._SubParsersAction

_UPSTREAM_RELEASE_HELP = "upstream release, e.g. 0.10.2"
_NEWEST_HELP = "upstream release (default: the newest in the manifest)"
_UPSTREAM_TESTS_HELP = (
    "upstream's own tests: a folder of jax-v<version>.tar.gz files or "
    "checkouts of upstream's repository (e.g. ../shared/upstream-tests); "
    "without it they are not run, and the summary says so")
_JOBS_HELP = (f"runs at a time (default: {testrun.JOBS}); with more than "
              "one, each run's output is printed when it ends, and at most "
              "one runs in full")


def cmd_fetch(args: argparse.Namespace) -> int:
  print(fetch.fetch(_release(args)))
  return 0


def _add_fetch(sub: _Subparsers) -> None:
  p = sub.add_parser("fetch", help="download and verify upstream's sdist")
  p.add_argument("version", help=_UPSTREAM_RELEASE_HELP)
  p.set_defaults(func=cmd_fetch)


def cmd_apply(args: argparse.Namespace) -> int:
  print(tree.build_tree(_project(args), _release(args),
                        pathlib.Path(args.out), force=args.force))
  return 0


def _add_apply(sub: _Subparsers) -> None:
  p = sub.add_parser("apply", help="build the patched source tree")
  p.add_argument("version", help=_UPSTREAM_RELEASE_HELP)
  p.add_argument("--out", required=True, help="directory to create")
  p.add_argument("--force", action="store_true",
                 help="replace --out if it exists")
  p.set_defaults(func=cmd_apply)


def cmd_wheel(args: argparse.Namespace) -> int:
  print(wheel.build(_project(args), _release(args), pathlib.Path(args.out)))
  return 0


def _add_wheel(sub: _Subparsers) -> None:
  p = sub.add_parser("wheel", help="build the patched wheel")
  p.add_argument("version", nargs="?", help=_NEWEST_HELP)
  p.add_argument("--out", default=str(ROOT / "dist"),
                 help="directory for the wheel (default: dist/)")
  p.set_defaults(func=cmd_wheel)


def cmd_check(args: argparse.Namespace) -> int:
  return tree.check(_project(args), args.version)


def _add_check(sub: _Subparsers) -> None:
  p = sub.add_parser("check", help="apply the series to every release")
  p.add_argument("version", nargs="*",
                 help="only these upstream releases (default: every one in "
                      "the manifest)")
  p.set_defaults(func=cmd_check)


def cmd_index(args: argparse.Namespace) -> int:
  index.check_out(pathlib.Path(args.out))
  project = _project(args)
  releases, given = publication.chosen(project.manifest(), args.upstream,
                                       args.all, args.wheel)
  print(index.add_releases(pathlib.Path(args.out), publication.collect(
      project, releases, jaxlib=not args.no_jaxlib, given=given)))
  return 0


def _add_publication_choice(p: argparse.ArgumentParser,
                            no_jaxlib: str) -> None:
  """Which releases `index` and `publish` publish, and with which files."""
  p.add_argument("--upstream", action="append", default=[],
                 help="publish this upstream release (repeatable; default: "
                      "the newest in the manifest)")
  p.add_argument("--all", action="store_true",
                 help="publish every release in the manifest")
  p.add_argument("--no-jaxlib", action="store_true", help=no_jaxlib)


def _add_index(sub: _Subparsers) -> None:
  p = sub.add_parser("index", help="publish wheels into a PEP 503 index")
  p.add_argument("--out", required=True, help="the index directory")
  p.add_argument("--wheel", action="append", default=[],
                 help="a fork wheel to publish (repeatable), for its release; "
                      "default: build the wheel of the release chosen below")
  _add_publication_choice(p, "do not mirror the pinned jaxlib wheels "
                          "(users then take jaxlib from the public index)")
  p.set_defaults(func=cmd_index)


def cmd_serve(args: argparse.Namespace) -> int:
  serve.serve(pathlib.Path(args.directory), args.host, args.port)
  return 0


def _add_serve(sub: _Subparsers) -> None:
  p = sub.add_parser("serve", help="serve an index over HTTP")
  p.add_argument("directory", help="an index built by `index`")
  p.add_argument("--host", default="127.0.0.1")
  p.add_argument("--port", type=int, default=8000,
                 help="0 picks a free port (default: 8000)")
  p.set_defaults(func=cmd_serve)


def cmd_publish(args: argparse.Namespace) -> int:
  project = _project(args)
  releases, given = publication.chosen(project.manifest(), args.upstream,
                                       args.all, args.wheel)
  for name in publish.publish(
      project, releases, repository_url=args.repository_url,
      repository=args.repository, simple_url=args.simple_url,
      config_file=args.config_file, jaxlib=not args.no_jaxlib, given=given):
    print(name)
  return 0


def _add_publish(sub: _Subparsers) -> None:
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
  p.add_argument("--wheel", action="append", default=[],
                 help="a fork wheel to upload (repeatable), for its release; "
                      "default: build the wheel of the release chosen below")
  _add_publication_choice(p, "do not upload the pinned jaxlib wheels")
  p.set_defaults(func=cmd_publish)


def cmd_pins(args: argparse.Namespace) -> int:
  project = _project(args)
  releases = publication.select(project.manifest(), args.version, args.all)
  for version, wheels in jaxlib_mirror.pin_releases(project,
                                                    releases).items():
    print(f"jaxlib {version}: {len(wheels)} wheels pinned")
  return 0


def _add_pins(sub: _Subparsers) -> None:
  p = sub.add_parser("pins", help="pin upstream's jaxlib wheels for every "
                     "platform in jaxlib_build/pins.toml")
  p.add_argument("version", nargs="*",
                 help="upstream releases whose test_jaxlib to pin (default: "
                      "the newest in the manifest)")
  p.add_argument("--all", action="store_true", help="every release")
  p.set_defaults(func=cmd_pins)


def cmd_rebase(args: argparse.Namespace) -> int:
  result = rebase.rebase(_project(args), args.version, args.source,
                         checkout=_path(args.checkout),
                         tests_dir=_path(args.upstream_tests),
                         suites=not args.no_suites, resume=_path(args.resume))
  print(result.report())
  return 0 if result.ok else 1


def _add_rebase(sub: _Subparsers) -> None:
  p = sub.add_parser("rebase", help="refresh the queue for a release (and "
                     "add it to the manifest)")
  p.add_argument("version", help="the upstream release to rebase onto; one "
                 "the manifest lacks gets its entry (sha256, pins, checked)")
  p.add_argument("--from", dest="source",
                 help="a release of the manifest the queue applies to "
                      "(default: the newest other release in the manifest)")
  p.add_argument("--checkout", metavar="DIR",
                 help="a git checkout of upstream's repository: its tags "
                      "jax-v<release> are the trees (default: the sdists "
                      "and upstream's tests by tag, --upstream-tests)")
  p.add_argument("--upstream-tests", metavar="DIR",
                 help="upstream's tests: jax-v<version>.tar.gz exports of "
                      "upstream's tags, for the test files the queue edits "
                      "and for upstream's suites (default: "
                      "../shared/upstream-tests beside the repository, if "
                      "it exists)")
  p.add_argument("--no-suites", action="store_true",
                 help="stop after `check`: do not run the release's smoke "
                      "suite and upstream's suites")
  p.add_argument("--resume", metavar="REPO",
                 help="after resolving a conflict in the work repository "
                      "REPO and `git rebase --continue`: write the variants "
                      "and go on")
  p.set_defaults(func=cmd_rebase)


def cmd_stage(args: argparse.Namespace) -> int:
  result = stage.stage(_project(args), _release(args), pathlib.Path(args.out),
                       onto=_path(args.onto), ref=args.ref,
                       author=args.author, verify=args.verify,
                       jaxlib=args.jaxlib)
  print(result.out)
  for problem in result.problems:
    print(f"error: {problem}", file=sys.stderr)
  if result.problems:
    print(f"error: {len(result.problems)} problems (each in "
          f"{result.out}/report.md and report.json); the series is in "
          f"{result.out}/repo to read, not to send", file=sys.stderr)
  return 0 if result.ok else 1


def _add_stage(sub: _Subparsers) -> None:
  p = sub.add_parser("stage", help="stage the queue as upstream pull "
                     "requests (patches/stage.toml)")
  p.add_argument("version", help="upstream release, e.g. 0.12.0.1")
  p.add_argument("--out", required=True,
                 help="directory to create: DIR/repo (a branch per pull "
                      "request, call-tf-vmap-NN-name), DIR/report.md, "
                      "DIR/report.json, DIR/pull-requests/")
  p.add_argument("--onto", metavar="CHECKOUT",
                 help="a git repository of upstream's to stage onto (a "
                      "checkout or a bare clone); default: upstream's sdist "
                      "of VERSION, which has no tests, BUILD files or "
                      "CHANGELOG (the report names the edits left out)")
  p.add_argument("--ref", help="with --onto: any branch, remote-tracking "
                 "branch, tag or commit of it to start from (default: its "
                 "HEAD)")
  p.add_argument("--author", metavar="'NAME <EMAIL>'",
                 help="author and committer of the commits: required, the "
                      "person who signed upstream's CLA (the machine's git "
                      "identity is never used)")
  p.add_argument("--verify", action="store_true",
                 help="install each commit's tree into a venv of its own "
                      "(the pinned jaxlib and tensorflow-cpu) and run its "
                      "tests; slow")
  p.add_argument("--jaxlib", metavar="VERSION",
                 help="with --verify: the jaxlib to test with (default: the "
                      "release's test_jaxlib)")
  p.set_defaults(func=cmd_stage)


def cmd_baseline(args: argparse.Namespace) -> int:
  return baseline.run_releases(_project(args), args.version,
                               _path(args.upstream_tests))


def _add_baseline(sub: _Subparsers) -> None:
  p = sub.add_parser("baseline", help="record the upstream tests that fail "
                      "on stock upstream (tests/upstream_known_failures.toml)")
  p.add_argument("version", nargs="*",
                 help="upstream releases (default: every release)")
  p.add_argument("--upstream-tests", required=True, metavar="DIR",
                 help="upstream's tests: jax-v<version>.tar.gz files or "
                      "checkouts (e.g. ../shared/upstream-tests)")
  p.set_defaults(func=cmd_baseline)


def cmd_demo(args: argparse.Namespace) -> int:
  return envs.demo(_project(args), _release(args))


def _add_demo(sub: _Subparsers) -> None:
  p = sub.add_parser("demo", help="build, install into .venv, show it works")
  p.add_argument("--upstream", dest="version", help=_NEWEST_HELP)
  p.set_defaults(func=cmd_demo)


def cmd_dev(args: argparse.Namespace) -> int:
  project, release = _project(args), _release(args)
  env = dev.dev(project, release, _path(args.venv))
  default = release.version == project.manifest().select(None).version
  print(dev.instructions(project, release, env, default))
  return 0


def _add_dev(sub: _Subparsers) -> None:
  p = sub.add_parser("dev", help="an editable patched tree in a venv, the "
                      "overlay linked: edit, rerun pytest")
  p.add_argument("--upstream", dest="version", help=_NEWEST_HELP)
  p.add_argument("--venv", metavar="DIR",
                 help="the venv to make or refresh (default: in the cache)")
  p.set_defaults(func=cmd_dev)


def cmd_test(args: argparse.Namespace) -> int:
  return testrun.run(_project(args), args.version, full=args.full,
                     python=args.python, pytest_args=args.pytest_args,
                     tests_dir=_path(args.upstream_tests),
                     write_compatibility_page=args.write_compatibility,
                     jobs=args.jobs)


def _add_run_options(p: argparse.ArgumentParser) -> None:
  """Where `test` and `matrix` find upstream's tests, and how many runs at
  a time."""
  p.add_argument("--upstream-tests", metavar="DIR", help=_UPSTREAM_TESTS_HELP)
  p.add_argument("--jobs", type=int, default=testrun.JOBS, metavar="N",
                 help=_JOBS_HELP)


def _add_test(sub: _Subparsers) -> None:
  p = sub.add_parser("test", help="build, install, run pytest, per release")
  p.add_argument("--upstream", dest="version", action="append", default=[],
                 help="only this upstream release, in full (repeatable; "
                      "default: the default release in full, the others "
                      "with the smoke suite)")
  p.add_argument("--full", action="store_true",
                 help="every release in full (as `matrix`; with --upstream, "
                      "those releases), and on the default release (with "
                      "--upstream, on those) the fork suite's tests marked "
                      "full_run, which the default run leaves out "
                      "(docs/maintainers.md, \"CI\")")
  p.add_argument("--python", metavar="X.Y",
                 help="test on this Python of the release(s) (one of their "
                      "`python` in patches/upstream.toml) instead of the "
                      "first; default: the first in the mode chosen, the "
                      "others with the fork's smoke suite")
  _add_run_options(p)
  p.add_argument("pytest_args", nargs=argparse.REMAINDER,
                 help="arguments after -- go to the fork suite's pytest")
  p.set_defaults(func=cmd_test, write_compatibility=False)


def _add_matrix(sub: _Subparsers) -> None:
  p = sub.add_parser("matrix", help="every release in full, a table, and "
                      "docs/compatibility.md")
  _add_run_options(p)
  p.set_defaults(func=cmd_test, version=[], full=True, pytest_args=[],
                 python=None, write_compatibility=True)


def cmd_workflow(args: argparse.Namespace) -> int:
  workflow.run(_project(args), args.check)
  return 0


def _add_workflow(sub: _Subparsers) -> None:
  p = sub.add_parser("workflow", help="write .github/workflows/wheels.yml "
                      "from the manifest")
  p.add_argument("--check", action="store_true",
                 help="fail if the committed workflow is not the generated "
                      "one")
  p.set_defaults(func=cmd_workflow)


_COMMANDS = (_add_fetch, _add_apply, _add_wheel, _add_check, _add_index,
             _add_serve, _add_publish, _add_pins, _add_rebase, _add_stage,
             _add_baseline, _add_demo, _add_dev, _add_test, _add_matrix,
             _add_workflow)


def _parser() -> argparse.ArgumentParser:
  """The tool's argument parser: its options, then each of _COMMANDS."""
  top = argparse.ArgumentParser(
      prog="python build/fork.py", description=__doc__.split("\n\n")[0],
      epilog="A command's options: python build/fork.py <command> --help; "
             "what each does: docs/maintainers.md.")
  top.add_argument("--root", default=str(ROOT),
                   help="the project root holding patches/ and jax/ "
                        "(default: this repository)")
  top.add_argument("-q", "--quiet", action="store_true",
                   help="print only results, no progress")
  sub = top.add_subparsers(dest="command", required=True)
  for add in _COMMANDS:
    add(sub)
  return top


def main(argv: list[str] | None = None) -> int:
  args = _parser().parse_args(argv)
  log.set_quiet(args.quiet)
  if getattr(args, "pytest_args", None) and args.pytest_args[0] == "--":
    args.pytest_args = args.pytest_args[1:]
  try:
    return args.func(args)
  except ForkError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  except OSError as e:  # a path the checks above did not foresee
    print(f"error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
    return 2
  except KeyboardInterrupt:
    return 130


if __name__ == "__main__":
  sys.exit(main())
