"""Where an eager call of ``call_tf`` of a plain Python function goes.

An eager ``jax.vmap(call_tf(f))(x)`` (and per-example gradients, forces:
``vmap(jacrev)``) of a plain Python TF function ``f`` runs ``f``'s Python
at every call, as upstream's eager ``call_tf`` does: TensorFlow traces it
into a graph. Everything after that trace depends only on the graph, which
a repeated call gives again. This measures, call after call in one warm
process (N = 256, one ``call_tf`` object reused), the fork's time per call
split into phases (exclusive wall time, as ``first_call`` times them):

* TF tracing (``f``'s Python building the graph) and TensorFlow's
  ``tf.function`` machinery around it;
* the overlay's fingerprint of the graph, and its other Python;
* the interpreted program's compiled call (the batch's arithmetic, which
  native JAX computes too);
* JAX's own Python (``vmap``, ``custom_jvp``, the dispatch of the rest);

beside native eager JAX (``jax.vmap`` of the ``jnp`` function) and
``call_tf`` of a ``tf.function`` of ``f`` (traced once, by TF's rule),
all interleaved, round after round; every result checked against native's.

Run from the repository root in the benchmark venv::

  benchmarks/.venv/bin/python -m benchmarks.eager_parts [--out FILE]
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
import collections
from collections.abc import Callable, Sequence
import json
import os
import pathlib
import statistics
import sys
import time
from typing import Any

BENCH = pathlib.Path(__file__).resolve().parent
N = 256
# The workloads: vmap of a function, per-example gradients, forces.
WORKLOADS = ("mlp128", "energy", "mlp128_grad", "lj8_grad")
METHODS = ("native", "fork", "fork_tf_function")
TF_TRACE = ("TF: f traced (its Python building the graph), tf.function's "
            "work around it")
FINGERPRINT = "overlay: the graph's fingerprint"
PROGRAM = "the interpreted program's compiled call (the arithmetic)"
REST = "JAX's and the overlay's other Python (vmap, custom_jvp, dispatch)"


def _instrument(phases: Any) -> None:
  """Wraps TF's tracing, the fingerprint and the program's call.

  TF's work is all of it: the ``tf.function`` call_tf makes of ``f`` at
  every call (upstream's code), its ``get_concrete_function`` (the
  overlay's one call into TF to trace) and the trace itself.
  """
  # pylint: disable=g-import-not-at-top
  from jax.experimental.jax2tf.call_tf_lib.stablehlo import path
  from jax.experimental.jax2tf.call_tf_lib.tf_function import graph
  from jax.experimental.jax2tf.call_tf_lib.tf_function import traces
  import tensorflow as tf
  from tensorflow.python.eager.polymorphic_function import tracing_compilation
  # pylint: enable=g-import-not-at-top
  tracing_compilation._create_concrete_function = phases.wrap(  # pylint: disable=protected-access
      TF_TRACE, tracing_compilation._create_concrete_function)  # pylint: disable=protected-access
  graph.concrete_function = phases.wrap(TF_TRACE, graph.concrete_function)
  tf.function = phases.wrap(TF_TRACE, tf.function)
  traces.graph_digest = phases.wrap(FINGERPRINT, traces.graph_digest)
  function = path.Interpreted._function  # pylint: disable=protected-access

  def timed_function(self, *args, **kwargs):
    return phases.wrap(PROGRAM, function(self, *args, **kwargs))
  path.Interpreted._function = timed_function  # pylint: disable=protected-access


def _methods(w: Any) -> dict[str, Callable[[Any], Any]]:
  # pylint: disable=g-import-not-at-top
  import jax
  from jax.experimental import jax2tf
  import tensorflow as tf
  from benchmarks import workloads as wl
  # pylint: enable=g-import-not-at-top
  return {
      "native": jax.vmap(wl.per_example(w, w.jnp_fn)),
      "fork": jax.vmap(wl.per_example(w, jax2tf.call_tf(w.tf_fn))),
      "fork_tf_function": jax.vmap(wl.per_example(w, jax2tf.call_tf(
          tf.function(w.tf_fn, autograph=False))))}


def measure_workload(name: str, n: int = N, rounds: int = 15,
                     calls: int = 5) -> dict[str, Any]:
  """One workload: per-call medians of each method, the fork's phases.

  Args:
    name: the workload.
    n: the batch size.
    rounds: rounds of ``calls`` calls of each method, interleaved.
    calls: calls per method and round.

  Returns:
    ``{"workload", "n", "per_call": {method: seconds}, "phases": {phase:
    seconds per call}, "ratio": {method: median over rounds of the
    round's ratio to native}, "max_rel_err"}``.
  """
  # pylint: disable=g-import-not-at-top
  import jax
  import numpy as np
  from benchmarks import first_call
  from benchmarks import workloads as wl
  # pylint: enable=g-import-not-at-top
  w = wl.by_name(name, str(BENCH / ".cache"))
  x = jax.device_put(w.inputs(n))
  fns = _methods(w)
  phases = first_call.Phases()
  _instrument(phases)
  results = {m: jax.block_until_ready(f(x)) for m, f in fns.items()}
  for f in fns.values():  # warm: compiled programs, TF's caches
    jax.block_until_ready(f(x))
  times: dict[str, list[float]] = collections.defaultdict(list)
  per_phase: dict[str, list[float]] = collections.defaultdict(list)
  for _ in range(rounds):
    for m, f in fns.items():
      before = dict(phases.exclusive)
      t0 = time.perf_counter()
      for _ in range(calls):
        jax.block_until_ready(f(x))
      times[m].append((time.perf_counter() - t0) / calls)
      if m == "fork":
        spent = {p: (phases.exclusive[p] - before.get(p, 0.)) / calls
                 for p in phases.exclusive}
        for p, v in spent.items():
          per_phase[p].append(v)
        per_phase[REST].append(times[m][-1] - sum(spent.values()))
  ref = np.asarray(results["native"], np.float64)
  err = max(float(np.max(np.abs(np.asarray(r, np.float64) - ref))
                  / (np.max(np.abs(ref)) + 1e-30)) for r in results.values())
  return {"workload": name, "n": n,
          "per_call": {m: statistics.median(v) for m, v in times.items()},
          "ratio": {m: statistics.median(a / b for a, b in zip(
              v, times["native"])) for m, v in times.items()},
          "phases": {p: statistics.median(v) for p, v in per_phase.items()},
          "max_rel_err": err, "wrong": not err <= w.tol}


def table(rows: Sequence[dict[str, Any]]) -> str:
  """The per-call breakdown as a Markdown table."""
  names = [TF_TRACE, FINGERPRINT, PROGRAM, REST]
  head = "| | " + " | ".join(r["workload"] for r in rows) + " |"
  lines = [head, "|---|" + "---:|" * len(rows)]

  def ms(v: float) -> str:
    return f"{v * 1e3:.2f} ms"
  for p in names:
    lines.append(f"| fork: {p} | " + " | ".join(
        ms(r["phases"].get(p, 0.)) for r in rows) + " |")
  for m in METHODS:
    lines.append(f"| {m}, per call | " + " | ".join(
        f"{ms(r['per_call'][m])} ({r['ratio'][m]:.2f}x)" for r in rows)
        + " |")
  def without_trace(r: dict[str, Any]) -> float:
    per_call = r["per_call"]
    return (per_call["fork"] - r["phases"].get(TF_TRACE, 0.)) / per_call[
        "native"]
  lines.append("| fork without TF's trace, over native | " + " | ".join(
      f"{without_trace(r):.2f}x" for r in rows) + " |")
  return "\n".join(lines)


def main(argv: list[str]) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--workloads", default=",".join(WORKLOADS))
  p.add_argument("--n", type=int, default=N)
  p.add_argument("--rounds", type=int, default=15)
  p.add_argument("--out", help="write the JSON (and FILE.md, the table)")
  args = p.parse_args(argv)
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  sys.path.insert(0, str(BENCH.parent))
  from benchmarks import first_call  # pylint: disable=g-import-not-at-top
  load_before = first_call.load_average()
  rows = [measure_workload(w, args.n, args.rounds)
          for w in args.workloads.split(",")]
  data = {"n": args.n, "rows": rows,
          "load": {"before": load_before, "after": first_call.load_average()}}
  text = table(rows)
  print(text)
  print(f"load average before {load_before}, after {data['load']['after']}")
  if args.out:
    pathlib.Path(args.out).write_text(json.dumps(data, indent=1))
    pathlib.Path(args.out).with_suffix(".md").write_text(text + "\n")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
