"""Eager ``vmap_method="sequential"`` against a hand loop of eager calls.

``jax.vmap(call_tf(f, vmap_method="sequential"))(x)``, with no ``jax.jit``
anywhere, makes one eager call per row. This measures it against what a user
would write by hand, the same eager calls of one ``call_tf(f)`` object in a
Python loop, with the rows stacked by NumPy::

  np.stack([np.asarray(g(x[i])) for i in range(len(x))])

Each (method, rows) pair runs in a fresh process: it builds the function,
warms it up on 2 rows (the per-row call's trace and dispatch), records the
resident set size (RSS), times one call on all rows, checks the result
against the TF function run on the whole batch, drops it, runs
``gc.collect()`` and records the RSS again. "Kept" is that RSS minus the one
before the call: what the call leaves behind. The goal is linear: at 32,000
rows within 2x the hand loop's time and within 50 MB of what it keeps.

Run from the repository root with the Python of an environment that has the
fork and TensorFlow installed::

  python -m benchmarks.eager_sequential            # 32,000 rows
  python -m benchmarks.eager_sequential --rows 2000 8000 16000 32000
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
import gc
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

BENCH = pathlib.Path(__file__).resolve().parent
METHODS = ("sequential", "hand_loop")
FEATURES = 16


def rss_mb() -> float:
  """The resident set size of this process, MB."""
  with open("/proc/self/statm") as f:
    resident = int(f.read().split()[1])
  return resident * os.sysconf("SC_PAGE_SIZE") / 2**20


def _child(method: str, rows: int) -> dict[str, Any]:
  """One measurement, in this (fresh) process."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  # pylint: disable=g-import-not-at-top
  import jax
  from jax.experimental import jax2tf
  import numpy as np
  import tensorflow as tf
  # pylint: enable=g-import-not-at-top
  tf.get_logger().setLevel("ERROR")
  rng = np.random.default_rng(0)
  w = tf.constant(rng.normal(size=(FEATURES, FEATURES)).astype(np.float32)
                  / FEATURES ** 0.5)

  def f_tf(x):  # one row of FEATURES values -> a scalar and a vector
    h = tf.tanh(tf.linalg.matvec(w, x, transpose_a=True))
    return tf.reduce_sum(h * h), h

  x = rng.normal(size=(rows, FEATURES)).astype(np.float32)
  if method == "sequential":
    g = jax.vmap(jax2tf.call_tf(f_tf, vmap_method="sequential"))
    run = g
  elif method == "hand_loop":
    g = jax2tf.call_tf(f_tf)

    def run(x):
      outs = [g(x[i]) for i in range(x.shape[0])]
      return tuple(np.stack([np.asarray(o[k]) for o in outs])
                   for k in range(2))
  else:
    raise ValueError(method)

  jax.block_until_ready(run(x[:2]))
  gc.collect()
  before = rss_mb()
  t0 = time.perf_counter()
  out = jax.block_until_ready(run(x))
  seconds = time.perf_counter() - t0
  peak = rss_mb()
  ref = tf.vectorized_map(f_tf, tf.constant(x))
  err = max(float(np.max(np.abs(np.asarray(o) - r.numpy())))
            for o, r in zip(out, ref))
  del out, ref
  gc.collect()
  after = rss_mb()
  return {"method": method, "rows": rows, "seconds": seconds,
          "rss_before_mb": before, "rss_peak_mb": peak,
          "rss_after_gc_mb": after, "kept_mb": after - before,
          "max_abs_err": err, "jax": jax.__version__,
          "tensorflow": tf.__version__}


def _run_child(method: str, rows: int) -> dict[str, Any]:
  cmd = [sys.executable, "-m", "benchmarks.eager_sequential", "--child",
         method, "--rows", str(rows)]
  out = subprocess.run(cmd, cwd=BENCH.parent, capture_output=True, text=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
                       check=False)
  for line in out.stdout.splitlines():
    if line.startswith("RESULT "):
      return json.loads(line[len("RESULT "):])
  return {"method": method, "rows": rows,
          "error": (out.stderr.strip().splitlines() or ["no output"])[-1][:300]}


def main(argv: list[str]) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--rows", type=int, nargs="+", default=[32_000])
  p.add_argument("--child", choices=METHODS)
  p.add_argument("--out", help="write the results as JSON here")
  args = p.parse_args(argv)
  if args.child:
    print("RESULT " + json.dumps(_child(args.child, args.rows[0])),
          flush=True)
    return 0
  results = []
  ok = True
  for rows in args.rows:
    by = {}
    for method in METHODS:
      r = by[method] = _run_child(method, rows)
      results.append(r)
      if "error" in r:
        print(f"{rows:6d} rows {method:10s}: FAILED {r['error']}", flush=True)
        ok = False
        continue
      print(f"{rows:6d} rows {method:10s}: {r['seconds']:7.2f} s, kept "
            f"{r['kept_mb']:+7.1f} MB after gc (peak +"
            f"{r['rss_peak_mb'] - r['rss_before_mb']:.0f} MB), max abs err "
            f"{r['max_abs_err']:.1e}", flush=True)
    s, h = by["sequential"], by["hand_loop"]
    if "error" not in s and "error" not in h:
      ratio = s["seconds"] / h["seconds"]
      extra = s["kept_mb"] - h["kept_mb"]
      within = ratio <= 2 and extra <= 50
      ok = ok and within
      print(f"{rows:6d} rows: sequential/hand loop {ratio:.2f}x time, "
            f"{extra:+.1f} MB kept ({'within' if within else 'OUTSIDE'} the "
            "goal: 2x, 50 MB)", flush=True)
  if args.out:
    pathlib.Path(args.out).write_text(json.dumps(results, indent=1))
  return 0 if ok else 1


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
