"""Resident memory over many eager ``vmap`` calls.

Each scenario runs in a fresh process, once with the fork's ``call_tf`` of
the 128-unit MLP (a plain Python TF function) and once with native JAX doing
the same calls, and samples the resident set size (``/proc/self/statm``)
as it goes:

* ``one_object``: 1000 eager ``jax.vmap`` calls (N=256) of one ``call_tf``
  object (native: of one jnp function);
* ``per_example_grads``: 1000 eager ``jax.vmap(jax.grad(...))`` calls of one
  ``call_tf`` object: per-example gradients, which run the VJP's ``call_tf``;
* ``batch_sizes``: one object over batch sizes 1..200, twice, then 201..400;
* ``many_objects``: 1000 calls, each of a new ``call_tf`` object (native: a
  new Python function each time);

then ``jax.clear_caches()`` and ``gc.collect()``, then glibc's
``malloc_trim(0)`` (which returns freed heap pages to the system: what a
process "keeps" after freeing is partly the allocator's, not the fork's).
Also counted at each of those points: TensorFlow ``FuncGraph``\\ s alive
(traces held by someone).

Run from the repository root in the benchmark venv::

  benchmarks/.venv/bin/python -m benchmarks.memory
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
import ctypes
import gc
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

BENCH = pathlib.Path(__file__).resolve().parent
SCENARIOS = ("one_object", "per_example_grads", "batch_sizes", "many_objects")
IMPLS = ("fork", "native")
N = 256
CALLS = 1000
WARMUP = 50


def rss_mb() -> float:
  """The resident set size of this process, MB."""
  with open("/proc/self/statm") as f:
    resident = int(f.read().split()[1])
  return resident * os.sysconf("SC_PAGE_SIZE") / 2**20


def _funcgraphs() -> int:
  from tensorflow.python.framework import func_graph  # pylint: disable=g-import-not-at-top
  gc.collect()
  return sum(isinstance(o, func_graph.FuncGraph) for o in gc.get_objects())


def _malloc_trim() -> None:
  try:
    ctypes.CDLL("libc.so.6").malloc_trim(0)
  except OSError:
    pass


def _child(scenario: str, impl: str, calls: int) -> None:
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  sys.path.insert(0, str(BENCH.parent))
  # pylint: disable=g-import-not-at-top
  import jax
  from jax.experimental import jax2tf
  import tensorflow as tf
  from benchmarks import workloads as wl
  # pylint: enable=g-import-not-at-top
  tf.get_logger().setLevel("ERROR")
  w = wl.mlp128()
  points: list[dict[str, Any]] = []

  def point(label: str, i: int, count: bool = False) -> None:
    p = {"label": label, "i": i, "rss_mb": rss_mb(),
         "t": time.perf_counter() - t0}
    if count:
      p["funcgraphs"] = _funcgraphs()
    points.append(p)

  def new_fn():
    if impl == "fork":
      return jax2tf.call_tf(w.tf_fn)
    return lambda x: w.jnp_fn(x)  # a new Python function: new JAX traces

  xs = {n: jax.device_put(w.inputs(n)) for n in range(1, 401)}
  big = jax.device_put(w.inputs(N))
  t0 = time.perf_counter()
  point("start", 0, count=True)
  if scenario in ("one_object", "per_example_grads"):
    f = (jax.vmap(new_fn()) if scenario == "one_object"
         else jax.vmap(jax.grad(new_fn())))
    for i in range(1, calls + 1):
      jax.block_until_ready(f(big))
      if i in (1, 10, WARMUP) or i % 100 == 0:
        point("call", i, count=i == calls)
  elif scenario == "many_objects":
    for i in range(1, calls + 1):
      jax.block_until_ready(jax.vmap(new_fn())(big))
      if i in (1, 10, WARMUP) or i % 100 == 0:
        point("call", i, count=i == calls)
  elif scenario == "batch_sizes":
    f = jax.vmap(new_fn())
    for label, sizes in (("sizes 1..200", range(1, 201)),
                         ("sizes 1..200 again", range(1, 201)),
                         ("sizes 201..400", range(201, 401))):
      for n in sizes:
        jax.block_until_ready(f(xs[n]))
      point(label, sizes[-1], count=True)
  else:
    raise ValueError(scenario)
  del xs
  jax.clear_caches()
  gc.collect()
  point("jax.clear_caches(), gc.collect()", -1, count=True)
  _malloc_trim()
  point("malloc_trim(0)", -1)
  print("RESULT " + json.dumps({"scenario": scenario, "impl": impl,
                                "points": points}), flush=True)


def _run_child(scenario: str, impl: str, calls: int) -> dict[str, Any]:
  cmd = [sys.executable, "-m", "benchmarks.memory", "--child", scenario, impl,
         "--calls", str(calls)]
  out = subprocess.run(cmd, cwd=BENCH.parent, capture_output=True, text=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
                       check=False)
  for line in out.stdout.splitlines():
    if line.startswith("RESULT "):
      return json.loads(line[len("RESULT "):])
  return {"scenario": scenario, "impl": impl,
          "error": (out.stderr.strip().splitlines() or ["no output"])[-1][:300]}


def summarize(res: dict[str, Any]) -> dict[str, Any]:
  """The numbers the report states, from one child's points."""
  pts = res.get("points")
  if not pts:
    return {}
  by = {(p["label"], p["i"]): p for p in pts}
  start = pts[0]["rss_mb"]
  s: dict[str, Any] = {"start_mb": start}
  calls = [p for p in pts if p["label"] == "call"]
  if calls:
    warm = next(p for p in calls if p["i"] >= WARMUP)
    last = calls[-1]
    s.update(after_first_mb=calls[0]["rss_mb"], warm_mb=warm["rss_mb"],
             end_mb=last["rss_mb"], calls=last["i"],
             growth_after_warmup_mb=last["rss_mb"] - warm["rss_mb"],
             growth_last_half_mb=last["rss_mb"] - next(
                 p for p in calls if p["i"] >= last["i"] // 2)["rss_mb"],
             seconds_per_call=(last["t"] - calls[0]["t"])
             / max(1, last["i"] - calls[0]["i"]),
             funcgraphs_end=last.get("funcgraphs"))
  for label in ("sizes 1..200", "sizes 1..200 again", "sizes 201..400"):
    p = next((p for p in pts if p["label"] == label), None)
    if p:
      s[label] = p["rss_mb"]
      s[label + " funcgraphs"] = p.get("funcgraphs")
  before_clear = [p for p in pts if p["i"] != -1][-1]
  cleared = by.get(("jax.clear_caches(), gc.collect()", -1))
  trimmed = by.get(("malloc_trim(0)", -1))
  s.update(before_clear_mb=before_clear["rss_mb"],
           cleared_mb=cleared["rss_mb"] if cleared else None,
           trimmed_mb=trimmed["rss_mb"] if trimmed else None,
           funcgraphs_before_clear=next(
               (p.get("funcgraphs") for p in reversed(pts)
                if p["i"] != -1 and "funcgraphs" in p), None),
           funcgraphs_cleared=cleared.get("funcgraphs") if cleared else None)
  return s


def measure(calls: int = CALLS, log=print) -> dict[str, Any]:
  """Every scenario, fork and native, each in a fresh process."""
  out = {"n": N, "calls": calls, "warmup": WARMUP, "runs": []}
  for scenario in SCENARIOS:
    for impl in IMPLS:
      res = _run_child(scenario, impl, calls)
      res["summary"] = summarize(res)
      out["runs"].append(res)
      s = res["summary"]
      log(f"  memory {scenario:12s} {impl:6s}: " + (
          f"FAILED {res['error']}" if "error" in res else
          f"start {s['start_mb']:.0f} MB, before clear "
          f"{s['before_clear_mb']:.0f} MB, after clear_caches "
          f"{s['cleared_mb']:.0f} MB, after malloc_trim "
          f"{s['trimmed_mb']:.0f} MB"
          + (f"; growth after warm-up {s['growth_after_warmup_mb']:+.1f} MB"
             if "growth_after_warmup_mb" in s else "")))
  return out


def main(argv: list[str]) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--child", nargs=2, metavar=("SCENARIO", "IMPL"))
  p.add_argument("--calls", type=int, default=CALLS)
  p.add_argument("--out")
  args = p.parse_args(argv)
  if args.child:
    _child(*args.child, args.calls)
    return 0
  data = measure(args.calls)
  if args.out:
    pathlib.Path(args.out).write_text(json.dumps(data, indent=1))
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
