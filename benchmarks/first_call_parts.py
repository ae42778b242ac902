"""Two parts of the first call under ``jit``, measured in one process.

:mod:`benchmarks.first_call` times first calls in fresh processes, as a user
meets them; a pair of fresh processes differs by up to 170 ms on a shared
machine. This measures, in one warm process, with less noise:

* **each new function's first call**: ``jax.jit(jax.vmap(g))`` of a new
  Python function again and again (the workload's function plus a new
  constant; a new function object, so no cache hits), native JAX and the
  fork in turn (which goes first alternates), N=100, each fork result
  checked against native's. The median over the functions after the first
  is the fork's extra work per new function, without any one-time setup of
  the process;
* **TensorFlow's conversion to HLO** (``experimental_get_compiler_ir``, the
  stage ``call_tf`` asks for, ``hlo_serialized``) of small functions
  on a ``(100, 64)`` argument, each traced once and converted
  ``--repeats`` times: a trivial one, one ``MatMul`` by a ``(64, 128)``
  constant, the same product as one and as two ``tf.einsum``\\ s, the
  ``mlp128`` workload called on the whole batch (its einsums map over
  leading axes) and TensorFlow's own ``tf.vectorized_map`` of it.

Run from the repository root in the benchmark venv::

  benchmarks/.venv/bin/python -m benchmarks.first_call_parts [--functions 25]
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
from collections.abc import Callable, Sequence
import json
import os
import pathlib
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import jax  # noqa: E402
from jax.experimental import jax2tf  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks import first_call  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import workloads as wl  # noqa: E402

BENCH = pathlib.Path(__file__).resolve().parent
N = 100
WORKLOADS = ("mlp128", "energy", "energy_jac")


def _ms(f: Callable[[], Any]) -> tuple[float, Any]:
  """Calls ``f``: its wall time in ms, and what it returned."""
  t0 = time.perf_counter()
  out = f()
  return (time.perf_counter() - t0) * 1e3, out


def new_functions(workload: str, functions: int) -> dict[str, Any]:
  """First calls of ``functions`` new functions, native and fork alternating.

  Args:
    workload: a workload name (``energy_jac`` is ``vmap(jacrev(energy))``).
    functions: how many new functions of each method.

  Returns:
    ``times_ms``: every first call's time (ms), per method;
    ``median_ms``: their medians over the functions after the first;
    ``extra_median_ms`` and ``extra_range_ms``: the median and the range of
    the per-function differences, fork minus native, over the same.

  Raises:
    AssertionError: if a fork result is not native's, within the
      workload's tolerance.
  """
  w = wl.by_name(workload, str(BENCH / ".cache"))
  x = jax.block_until_ready(jax.device_put(w.inputs(N)))
  times: dict[str, list[float]] = {"native": [], "fork": []}
  for i in range(functions):
    c = np.float32(i)
    results: dict[str, Any] = {}
    # Which method goes first alternates: no order bias.
    for method in ("native", "fork") if i % 2 == 0 else ("fork", "native"):
      if method == "native":
        f = lambda a, c=c: w.jnp_fn(a) + c
      else:
        f = jax2tf.call_tf(lambda a, c=c: w.tf_fn(a) + c)
      g = jax.jit(jax.vmap(wl.per_example(w, f)))
      ms, results[method] = _ms(lambda g=g: jax.block_until_ready(g(x)))
      times[method].append(ms)
    # A first call that computes something else would time nothing useful;
    # checked as the harness checks every method.
    err = harness.rel_err(results["fork"],
                          np.asarray(results["native"], np.float64))
    if not err <= w.tol:
      raise AssertionError(f"{workload}: the fork's result differs from "
                           f"native's by {err:.2e} (tolerance {w.tol:.0e})")
  later = {m: statistics.median(t[1:]) for m, t in times.items()}
  extra = [f - n for f, n in zip(times["fork"][1:], times["native"][1:])]
  return {"times_ms": times, "median_ms": later,
          "extra_median_ms": statistics.median(extra),
          "extra_range_ms": (min(extra), max(extra))}


def _conversions() -> list[tuple[str, Callable[..., Any]]]:
  """The functions whose conversion is timed, with their table names."""
  w1 = wl.MLP128_W1
  return [
      ("trivial (`tf.sin`)", lambda x: tf.sin(x)),
      ("`tf.matmul` by a (64, 128) constant",
       lambda x: tf.matmul(x, w1)),
      ("the same product, one `tf.einsum`",
       lambda x: tf.einsum("bi,ij->bj", x, w1)),
      ("two `tf.einsum`s",
       lambda x: tf.einsum("bj,ij->bi", tf.einsum("bi,ij->bj", x, w1), w1)),
      ("`mlp128` on the whole batch (2 einsums)", wl.mlp128_tf),
      ("`tf.vectorized_map` of `mlp128`",
       lambda x: tf.vectorized_map(wl.mlp128_tf, x)),
  ]


def conversions(repeats: int) -> list[dict[str, Any]]:
  """Times of TF's conversion to HLO of small functions, N=100.

  Args:
    repeats: conversions of each function (the first is reported apart).

  Returns:
    One row per function: the first conversion and the median of the
    others (ms).
  """
  spec = tf.TensorSpec((N, wl.MLP_IN), tf.float32)
  rows = []
  for name, fn in _conversions():
    f = tf.function(fn, jit_compile=True, autograph=False)
    getter = f.experimental_get_compiler_ir(spec)
    ts = [_ms(lambda: getter(stage="hlo_serialized", platform_name="CPU"))[0]
          for _ in range(repeats)]
    rows.append({"function": name, "first_ms": ts[0],
                 "median_ms": statistics.median(ts[1:])})
  return rows


def _report(result: dict[str, Any]) -> str:
  """The results as two Markdown tables."""
  lines = ["## Each new function's first call, N=100, one warm process", "",
           "| workload | native | fork | extra (median) | extra (range) |",
           "|---|---:|---:|---:|---:|"]
  for name, r in result["new_functions"].items():
    lo, hi = r["extra_range_ms"]
    lines.append(f"| `{name}` | {r['median_ms']['native']:.0f} | "
                 f"{r['median_ms']['fork']:.0f} | {r['extra_median_ms']:.0f} "
                 f"| {lo:.0f} to {hi:.0f} |")
  lines += ["", "## TensorFlow's conversion to HLO, (100, 64) argument", "",
            "| function | first (ms) | then (median, ms) |", "|---|---:|---:|"]
  for r in result["conversions"]:
    lines.append(f"| {r['function']} | {r['first_ms']:.1f} | "
                 f"{r['median_ms']:.1f} |")
  return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
  """Runs both parts, prints the tables, writes the JSON (``--out``)."""
  p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
  p.add_argument("--functions", type=int, default=25,
                 help="new functions per method and workload (default 25)")
  p.add_argument("--repeats", type=int, default=5,
                 help="conversions of each function (default 5)")
  p.add_argument("--workloads", default=",".join(WORKLOADS),
                 help=f"comma-separated subset of {','.join(WORKLOADS)}")
  p.add_argument("--out", help="also write the results as JSON here")
  args = p.parse_args(argv)
  if args.functions < 2 or args.repeats < 2:
    p.error("--functions and --repeats must be at least 2: the first "
            "is reported apart")
  unknown = set(args.workloads.split(",")) - set(WORKLOADS)
  if unknown:
    p.error(f"unknown workloads {sorted(unknown)}; known: {WORKLOADS}")
  tf.get_logger().setLevel("ERROR")
  # JAX's backend and TF's first conversion, before anything is timed.
  jax.block_until_ready(jax.jit(lambda a: a * 2)(np.ones(3, np.float32)))
  first_call.warm_tensorflow()
  command = sys.argv[1:] if argv is None else argv
  result = {
      "n": N, "functions": args.functions, "repeats": args.repeats,
      **harness.environment(),
      "command": " ".join(["python -m benchmarks.first_call_parts",
                           *command]),
      "conversions": conversions(args.repeats),
      "new_functions": {name: new_functions(name, args.functions)
                        for name in args.workloads.split(",")},
  }
  print(_report(result))
  if args.out:
    with open(args.out, "w") as f:
      json.dump(result, f, indent=1)
  sys.stdout.flush()


if __name__ == "__main__":
  main()
