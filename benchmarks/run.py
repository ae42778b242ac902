#!/usr/bin/env python3
"""Benchmarks batched call_tf against native JAX, loops, TF and tf2jax.

Run from the repository root:

  python3 benchmarks/run.py            # the full run (about 30 minutes)
  python3 benchmarks/run.py --quick    # a smoke run (about 8 minutes)

The script creates (or reuses) ``benchmarks/.venv`` with the patched wheel
from ``dist/`` and re-runs itself there. It writes ``results.json``,
``results.md`` and PNG plots into ``benchmarks/results/`` (``--quick``:
``benchmarks/results/quick/``), and the full run refreshes the summary table
of ``README.md`` and ``benchmarks/README.md``.
"""
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

from __future__ import annotations

import argparse
import os
import pathlib
import sys

BENCH = pathlib.Path(__file__).resolve().parent
# Import the benchmarks as a package from the repository root, not as loose
# modules from this directory.
if sys.path and pathlib.Path(sys.path[0] or ".").resolve() == BENCH:
  sys.path[0] = str(BENCH.parent)
else:
  sys.path.insert(0, str(BENCH.parent))

from benchmarks import bench_env  # noqa: E402  (standard library only)

FULL_SIZES = (1, 10, 100, 1000, 10000)
QUICK_SIZES = (1, 10, 100)


def parse_args(argv: list[str]) -> argparse.Namespace:
  """The command line."""
  p = argparse.ArgumentParser(
      description=__doc__.split("\n\n")[0],
      formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--quick", action="store_true",
                 help="smoke run: N up to 100, short timings, results in "
                 "results/quick/, README untouched")
  p.add_argument("--workloads", help="comma-separated subset, e.g. mlp,keras")
  p.add_argument("--methods", help="comma-separated subset, e.g. "
                 "native,vectorized,tf2jax (native is always included)")
  p.add_argument("--sizes", help="comma-separated batch sizes")
  p.add_argument("--modes", default="jit,eager", help="jit, eager or both")
  p.add_argument("--sections",
                 default="steady,eager,first_call,memory,dispatch",
                 help="comma-separated subset of: steady (the tables by N, "
                 "forward mode included), eager (eager vmap at N=256), "
                 "first_call (fresh processes), memory (RSS over eager "
                 "calls), dispatch (effects at N=1)")
  p.add_argument("--out", help="output directory (default results/ or "
                 "results/quick/)")
  p.add_argument("--budget", type=float, default=None,
                 help="seconds of steady-state samples per measurement")
  p.add_argument("--max-config-seconds", type=float, default=None,
                 help="skip a larger N of a method once one measurement "
                 "would take longer than this")
  p.add_argument("--no-readme", action="store_true",
                 help="do not refresh the summary table of README.md and "
                 "benchmarks/README.md")
  p.add_argument("--no-venv", action="store_true",
                 help="run in this interpreter (it must have the patched "
                 "jax, jaxlib, tensorflow-cpu, tf2jax and matplotlib)")
  return p.parse_args(argv)


def main(argv: list[str]) -> int:
  args = parse_args(argv)
  if not args.no_venv and not bench_env.inside_venv():
    python = bench_env.ensure()
    os.execv(str(python), [str(python), str(pathlib.Path(__file__).resolve()),
                           *argv])
  # Quiet TensorFlow before it is imported.
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  from benchmarks import harness  # pylint: disable=g-import-not-at-top
  return harness.run(args, FULL_SIZES, QUICK_SIZES)


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
