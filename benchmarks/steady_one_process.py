"""The steady state of native's and call_tf's compiled programs, in one process.

``keras_models.py`` times each method's steady state in the process that
made its program (TensorFlow imported in call_tf's), and on a small shared
machine a call of a millisecond moves by 5-10% from one process to the
next: a ratio of two processes cannot tell 1.05x from 1.00x. Here each
method's worker, a fresh process as there, compiles ``jax.jit`` of the same
transformation of ``f`` with the same weights and serializes the
executable; a third process, which imports neither TensorFlow nor Keras,
loads both and times them in turns: ``--rounds`` rounds of ``--calls``
calls of each (fewer where they would take more than ``--seconds``, at
least 10), the methods alternating. The ratio is call_tf's median call
over native's, of all calls; each round's median is kept, to show the
spread. The results of the loaded executables are checked against the
workers' own.

Run from the repository root in the venv of ``keras_models.py``::

  python -m benchmarks.steady_one_process --out DIR [--models vit]
      [--transforms vmap,vmap_grad] [--batch 4] [--rounds 6] [--calls 200]
      [--seconds 0.5]

``DIR/steady_one_process.json`` has every measurement and
``DIR/steady_one_process.md`` the table (``--report DIR`` writes it again);
the weights are ``keras_models.py``'s (``DIR/weights/``, made if missing).
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
from collections.abc import Sequence
import json
import os
import pathlib
import pickle
import statistics
import sys
import tempfile
import time
from typing import Any

from benchmarks import keras_models

ROOT = keras_models.ROOT
METHODS = (("native", "jax"), ("call_tf", "tensorflow"))


def _worker_compile(args: argparse.Namespace) -> dict[str, Any]:
  """Compiles one method's program and writes it, serialized, to
  ``args.executable``, with the input and the program's result."""
  import jax  # pylint: disable=g-import-not-at-top
  from jax.experimental import serialize_executable  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  model_fn = keras_models.model_function(args.model, args.weights,
                                         args.method)
  x = jax.device_put(keras_models._inputs(args.model, args.batch))  # pylint: disable=protected-access
  fn = jax.jit(keras_models._transformed(args.transform, model_fn))  # pylint: disable=protected-access
  compiled = fn.lower(x).compile()
  result = np.asarray(compiled(x))
  payload, in_tree, out_tree = serialize_executable.serialize(compiled)
  with open(args.executable, "wb") as f:
    pickle.dump((payload, in_tree, out_tree, np.asarray(x), result), f)
  return {"bytes": len(payload)}


def _worker_time(args: argparse.Namespace) -> dict[str, Any]:
  """Loads the methods' executables and times them in turns."""
  import jax  # pylint: disable=g-import-not-at-top
  from jax.experimental import serialize_executable  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  assert "tensorflow" not in sys.modules and "keras" not in sys.modules
  programs = {}
  for method, _ in METHODS:
    with open(os.path.join(args.executable, f"{method}.pkl"), "rb") as f:
      payload, in_tree, out_tree, x, expected = pickle.load(f)
    fn = serialize_executable.deserialize_and_load(payload, in_tree, out_tree)
    x = jax.device_put(x)
    got = np.asarray(fn(x))
    if got.shape != expected.shape or not np.array_equal(got, expected):
      raise AssertionError(f"{method}'s loaded program computes another "
                           "result than its worker's")
    programs[method] = (fn, x)
  # Calls a round: --calls, fewer where they would take more than
  # --seconds (ResNet50's call takes a tenth of a second), at least 10.
  slowest = 0.
  for fn, x in programs.values():
    jax.block_until_ready(fn(x))
    t0 = time.perf_counter()
    jax.block_until_ready(fn(x))
    slowest = max(slowest, time.perf_counter() - t0)
  n = max(10, min(args.calls, int(args.seconds / slowest)))
  calls: dict[str, list[float]] = {m: [] for m in programs}
  rounds: dict[str, list[float]] = {m: [] for m in programs}
  for r in range(args.rounds + 1):  # (round 0 warms both up, untimed)
    for method, (fn, x) in programs.items():
      ts = []
      for _ in range(n):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(x))
        ts.append(time.perf_counter() - t0)
      if r:
        calls[method].extend(ts)
        rounds[method].append(statistics.median(ts))
  out: dict[str, Any] = {"calls": n}
  out.update({
      m: {"median_s": statistics.median(calls[m]), "min_s": min(calls[m]),
          "round_medians_s": rounds[m]} for m in programs})
  out["ratio"] = out["call_tf"]["median_s"] / out["native"]["median_s"]
  return out


_WORKERS = {"compile": _worker_compile, "time": _worker_time}


def _run(kind: str, backend: str, extra: Sequence[str],
         timeout: float) -> dict[str, Any]:
  """One worker of this module in a fresh process; its JSON, or the error."""
  return keras_models._run_worker(  # pylint: disable=protected-access
      kind, backend, extra, timeout, module="benchmarks.steady_one_process")


def measure(out: pathlib.Path, model: str, transform: str, batch: int,
            rounds: int, calls: int, seconds: float,
            timeout: float) -> dict[str, Any]:
  """One model and transformation: both programs compiled, then timed."""
  row: dict[str, Any] = {"model": model, "transform": transform,
                         "batch": batch, "rounds": rounds, "calls": calls}
  common = ["--model", model, "--transform", transform, "--batch",
            str(batch), "--weights", str(keras_models._weights(out, model))]  # pylint: disable=protected-access
  with tempfile.TemporaryDirectory() as tmp:
    for method, backend in METHODS:
      made = _run("compile", backend, [
          *common, "--method", method,
          "--executable", os.path.join(tmp, f"{method}.pkl")], timeout)
      if "error" in made:
        row["error"] = f"{method}: {made['error']}"
        return row
    timed = _run("time", "jax", [*common, "--executable", tmp,
                                 "--rounds", str(rounds),
                                 "--calls", str(calls),
                                 "--seconds", str(seconds)], timeout)
  row.update(timed)
  return row


def markdown(data: dict[str, Any]) -> str:
  """The table of a run."""
  env = data.get("env", {})
  lines = [
      "# Steady state of both compiled programs in one process",
      "",
      f"Device: {env.get('device', '?')} (backend `{env.get('backend', '?')}`);"
      f" jax {env.get('jax', '?')}, TensorFlow {env.get('tensorflow', '?')},"
      f" Keras {env.get('keras', '?')}, Python {env.get('python', '?')}, "
      f"{env.get('cpus', '?')} CPUs; {env.get('date', '?')}. Generated by "
      "`python -m benchmarks.steady_one_process --report DIR`.",
      "",
  ]
  if env.get("note"):
    lines += [env["note"], ""]
  lines += [
      "Each method's program compiled in a fresh process of its own (as "
      "`keras_models.py`'s), serialized, and both loaded into a third "
      "process without TensorFlow or Keras, then timed in turns: rounds of "
      "calls of each (the row's calls a round), the methods alternating. The ratio is call_tf's "
      f"median call over native's; target: within {keras_models.STEADY_FACTOR:.2f}x.",
      "",
      "| model | transformation | batch | rounds x calls | native | call_tf | call_tf / native | met | round medians, native (ms) | round medians, call_tf (ms) |",
      "|---|---|---|---|---|---|---|---|---|---|",
  ]
  for row in data.get("rows", []):
    name = f"| {row['model']} | {keras_models._transformation(row['transform'])} | {row['batch']} | "  # pylint: disable=protected-access
    if "error" in row:
      lines.append(name + f"error: {row['error'][:200]} | | | | | | |")
      continue
    def ms(s: float) -> str:
      return f"{s * 1e3:.3f} ms"
    ratio = row["ratio"]
    met = "yes" if ratio <= keras_models.STEADY_FACTOR else "**no**"
    spread = {m: ", ".join(f"{s * 1e3:.3f}" for s in row[m]["round_medians_s"])
              for m in ("native", "call_tf")}
    lines.append(
        name + f"{row['rounds']} x {row['calls']} | "
        f"{ms(row['native']['median_s'])} | "
        f"{ms(row['call_tf']['median_s'])} | {ratio:.2f}x | {met} | "
        f"{spread['native']} | {spread['call_tf']} |")
  return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--out", type=pathlib.Path)
  p.add_argument("--report", type=pathlib.Path)
  p.add_argument("--models", default=",".join(keras_models.MODELS))
  p.add_argument("--transforms", default=",".join(keras_models.TRANSFORMS))
  p.add_argument("--batch", type=int, default=4)
  p.add_argument("--rounds", type=int, default=6)
  p.add_argument("--calls", type=int, default=200,
                 help="calls of each method a round, at most")
  p.add_argument("--seconds", type=float, default=0.5,
                 help="fewer calls a round where they would take longer")
  p.add_argument("--timeout", type=float, default=1800.)
  p.add_argument("--worker", choices=sorted(_WORKERS))
  p.add_argument("--worker-out")
  for name in ("model", "transform", "weights", "method", "executable"):
    p.add_argument(f"--{name}")
  args = p.parse_args(argv)
  if args.worker:
    pathlib.Path(args.worker_out).write_text(json.dumps(
        _WORKERS[args.worker](args)))
    return 0
  if args.report:
    data = json.loads((args.report / "steady_one_process.json").read_text())
    (args.report / "steady_one_process.md").write_text(markdown(data))
    return 0
  if args.out is None:
    p.error("--out DIR (or --report DIR) is required")
  keras_models.check_selection(p, args.models, args.transforms)
  args.out.mkdir(parents=True, exist_ok=True)
  env = keras_models._run_worker("env", "tensorflow", [], args.timeout)  # pylint: disable=protected-access
  data: dict[str, Any] = {"env": env, "rows": []}
  failed = False
  for model in args.models.split(","):
    weights = keras_models._weights(args.out, model)  # pylint: disable=protected-access
    if not weights.exists():
      prepared = keras_models._run_worker(  # pylint: disable=protected-access
          "prepare", "tensorflow", ["--model", model, "--weights",
                                    str(weights)], args.timeout)
      if "error" in prepared:
        print(f"{model}: {prepared['error']}", file=sys.stderr)
        failed = True
        continue
    for transform in args.transforms.split(","):
      row = measure(args.out, model, transform, args.batch, args.rounds,
                    args.calls, args.seconds, args.timeout)
      failed = failed or "error" in row
      data["rows"].append(row)
      print(json.dumps(row), flush=True)
      (args.out / "steady_one_process.json").write_text(
          json.dumps(data, indent=1))
      (args.out / "steady_one_process.md").write_text(markdown(data))
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
