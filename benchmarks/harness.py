"""The measurement loop: every workload, batch size, method and mode.

For each workload and batch size (ascending), native JAX is measured first,
then every other method, so that each ratio to native compares measurements
of the same run, minutes apart at most. A method whose next measurement
would take longer than ``max_config_s`` (predicted linearly in N from the
last one) is skipped from there on, as are sizes above its ``max_n``; both
apply only to the per-example loops (the methods with a ``max_n``). The
report marks those and extrapolates linearly.
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
import dataclasses
import datetime
import json
import logging
import os
import pathlib
import platform
import sys
import time
import traceback
from typing import Any
import warnings

from absl import logging as absl_logging
import jax
import numpy as np
import tensorflow as tf

from benchmarks import methods as methods_lib
from benchmarks import report
from benchmarks import timing
from benchmarks import workloads as workloads_lib

BENCH = pathlib.Path(__file__).resolve().parent
# Methods whose jit compile is also broken into trace / lower / compile.
BREAKDOWN_METHODS = ("native", "vectorized", "vectorized_pure", "tf2jax")


@dataclasses.dataclass
class Record:
  """One measurement (or the reason there is none).

  Times are in seconds; see :class:`benchmarks.timing.Timing`.
  """
  workload: str
  method: str
  mode: str
  n: int
  first_call: float | None = None
  steady: float | None = None
  compile: float | None = None
  samples: list[float] | None = None
  calls_per_sample: int | None = None
  max_rel_err: float | None = None
  trace: float | None = None
  lower: float | None = None
  xla_compile: float | None = None
  skipped: str | None = None
  error: str | None = None


def _quiet() -> None:
  absl_logging.set_verbosity(absl_logging.ERROR)
  tf.get_logger().setLevel(logging.ERROR)
  logging.getLogger("jax").setLevel(logging.ERROR)
  warnings.filterwarnings("ignore")


# The reference values: this many examples, one by one, op by op.
REF_EXAMPLES = 4


def _reference(w: workloads_lib.Workload, x_np: np.ndarray) -> np.ndarray:
  """The jnp function's result on the first examples, eagerly, unbatched.

  Eager and unbatched on purpose: jaxlib 0.10.2's XLA:CPU miscompiles
  native JAX's own ``jit(vmap(jacrev(jacfwd(energy))))`` (6% off), so a jitted
  native result is no reference.
  """
  f = workloads_lib.per_example(w, w.jnp_fn)
  with jax.disable_jit():
    rows = [np.asarray(f(jax.numpy.asarray(x)), np.float64)
            for x in x_np[:REF_EXAMPLES]]
  return np.stack(rows)


def rel_err(result: Any, ref: np.ndarray | None) -> float | None:
  """Max abs error of ``result`` over the max abs of ``ref`` (None: no ref)."""
  if ref is None:
    return None
  r = np.asarray(result, np.float64)
  r = r.reshape((r.shape[0], *ref.shape[1:]))[:ref.shape[0]]
  return float(np.max(np.abs(r - ref)) / (np.max(np.abs(ref)) + 1e-30))


def environment() -> dict[str, Any]:
  """Versions, date and machine: the provenance of a results file."""
  import jaxlib  # pylint: disable=g-import-not-at-top
  import tf2jax  # pylint: disable=g-import-not-at-top
  return {
      "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M"),
      "jax": jax.__version__, "jaxlib": jaxlib.__version__,
      "tensorflow": tf.__version__, "tf2jax": tf2jax.__version__,
      "numpy": np.__version__, "python": platform.python_version(),
      "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
                 f"{platform.system()}",
      "backend": jax.default_backend(),
  }


def _predicted_cost(last: tuple[int, float, float], n: int, budget_s: float,
                    compile_grows: bool, breakdown: bool) -> float:
  """Seconds one measurement at ``n`` will take, from the one at ``n0``.

  The run time is linear in N; the compile time is flat, except for a loop
  unrolled into the program. A measurement is the first call, up to three
  warm-up and calibration calls, and samples lasting about ``budget_s`` (at
  least three calls).
  """
  n0, compile_s, steady = last
  steady *= n / n0
  if compile_grows:
    compile_s *= n / n0
  if breakdown:
    compile_s *= 2
  return compile_s + 3 * steady + max(budget_s, 3 * steady)


def measure_all(workloads: Sequence[workloads_lib.Workload],
                methods: Sequence[methods_lib.Method], sizes: Sequence[int],
                modes: Sequence[str], *, budget_s: float, max_config_s: float,
                quick: bool, log=print) -> list[Record]:
  """Measures every (workload, N, method, mode); returns the records.

  For one workload and N: every method's first call and warm-up, then the
  steady-state samples of all of them round-robin, then the compile
  breakdowns.
  """
  records: list[Record] = []
  for w in workloads:
    # (method, mode) -> (n, compile time, steady time) at the last n
    last: dict[tuple[str, str], tuple[int, float, float]] = {}
    stopped: dict[tuple[str, str], str] = {}
    for n in sizes:
      if w.max_n is not None and n > w.max_n:
        continue
      x_np = w.inputs(n)
      prepared: list[tuple[Record, methods_lib.Method, timing.Prepared]] = []
      for m in methods:
        if not (m.applies(w) and w.runs(m.name)):
          continue
        for mode in modes:
          if mode not in m.modes or mode not in w.modes:
            continue
          rec = Record(w.name, m.name, mode, n)
          records.append(rec)
          key = (m.name, mode)
          cap = m.max_n.get(mode)
          if key in stopped:
            rec.skipped = stopped[key]
            continue
          if cap is not None and n > cap and not quick:
            rec.skipped = f"N > {cap}"
            continue
          if key in last and cap is not None:
            predicted = _predicted_cost(last[key], n, budget_s,
                                        mode in m.compile_grows,
                                        m.name in BREAKDOWN_METHODS)
            if predicted > max_config_s:
              stopped[key] = rec.skipped = (
                  f"predicted {predicted:.0f} s > {max_config_s:.0f} s")
              continue
          x = timing.as_input(x_np, m.framework)
          try:
            p = timing.prepare(lambda m=m, mode=mode: m.build(w, mode, n), x,
                               m.framework, budget_s=budget_s)
          except Exception as e:  # pylint: disable=broad-except
            rec.error = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
            stopped[key] = "failed at a smaller N"
            log(f"  {w.name} N={n} {m.name}/{mode}: FAILED {rec.error}")
            if os.environ.get("BENCH_TRACEBACK"):
              traceback.print_exc()
            continue
          prepared.append((rec, m, p))
      timing.sample_interleaved([p for _, _, p in prepared])
      ref = _reference(w, x_np)
      for rec, m, p in prepared:
        t = p.timing()
        last[(m.name, rec.mode)] = (n, t.first_call - t.steady, t.steady)
        rec.first_call, rec.steady, rec.compile = (
            t.first_call, t.steady, t.compile)
        rec.samples, rec.calls_per_sample = t.samples, t.calls_per_sample
        rec.max_rel_err = rel_err(t.result, ref)
        if (rec.mode == "jit" and m.name in BREAKDOWN_METHODS
            and w.derivative in (None, "jacrev")):
          # Two more fresh compilations: keep the fastest (noisy machine).
          for _ in range(2):
            b = timing.compile_breakdown(
                lambda m=m: m.build(w, "jit", n), p.x)
            total = b.trace + b.lower + b.compile
            if rec.trace is None or total < rec.compile:
              rec.trace, rec.lower, rec.xla_compile = (
                  b.trace, b.lower, b.compile)
              rec.compile = min(rec.compile, total)
        bad = (rec.max_rel_err is not None and rec.max_rel_err > w.tol)
        log(f"  {w.name:10s} N={n:<6d} {m.name:18s} {rec.mode:5s} "
            f"steady {rec.steady * 1e6:11.1f} us  first call "
            f"{rec.first_call * 1e3:8.1f} ms"
            + (f"  MISMATCH {rec.max_rel_err:.1e}" if bad else ""))
      del prepared
  return records


SECTIONS = ("steady", "eager", "first_call", "memory", "dispatch")


def _wanted(args: argparse.Namespace, names: Sequence[str]) -> list[str]:
  """``names``, restricted to ``--workloads`` if given."""
  if not args.workloads:
    return list(names)
  wanted = args.workloads.split(",")
  return [n for n in names if n in wanted]


def _sections(args: argparse.Namespace, data: dict[str, Any],
              cache: pathlib.Path, out: pathlib.Path, log) -> None:
  """The measurements besides the steady-state tables, into ``data``.

  Files a section writes (the first call's profile) go to ``out``.
  """
  # pylint: disable=g-import-not-at-top
  from benchmarks import dispatch
  from benchmarks import eager
  from benchmarks import first_call
  from benchmarks import memory
  # pylint: enable=g-import-not-at-top
  sections = args.sections.split(",")

  def eager_section() -> None:
    names = _wanted(args, eager.WORKLOADS)
    if args.quick:
      names = [n for n in names if n != "energy_jac"]
    log(f"[bench] eager vmap, N={eager.N}: {', '.join(names)}")
    data["eager"] = {
        "n": eager.N, "methods": eager.methods_doc(),
        "rows": eager.measure(
            [workloads_lib.by_name(n, str(cache)) for n in names],
            budget_s=0.3 if args.quick else 1.5, log=log)}

  def dispatch_section() -> None:
    log("[bench] dispatch at N=1: effects")
    data["dispatch"] = dispatch.measure(budget_s=0.3 if args.quick else 1.0,
                                        log=log)

  def first_call_section() -> None:
    names = _wanted(args, first_call.WORKLOADS)
    log(f"[bench] first call under jit in fresh processes: {', '.join(names)}")
    data["first_call"] = first_call.measure(
        names, repeats=1 if args.quick else 5,
        profile_path=None if args.quick else out / "first_call_profile.txt",
        log=log)

  def memory_section() -> None:
    log("[bench] resident memory over eager calls, fresh processes")
    data["memory"] = memory.measure(calls=100 if args.quick else 1000,
                                    log=log)

  for name, section in (("eager", eager_section),
                        ("dispatch", dispatch_section),
                        ("first_call", first_call_section),
                        ("memory", memory_section)):
    if name not in sections:
      continue
    # A section that fails loses only itself, not the run's other results.
    try:
      section()
    except Exception as e:  # pylint: disable=broad-except
      msg = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
      log(f"[bench] section {name} FAILED: {msg}")
      traceback.print_exc()
      data.setdefault("section_errors", {})[name] = msg


def run(args: argparse.Namespace, full_sizes: Sequence[int],
        quick_sizes: Sequence[int]) -> int:
  """Runs the benchmark as the command line says; writes the results."""
  _quiet()
  start = time.perf_counter()
  sizes = (tuple(int(s) for s in args.sizes.split(",")) if args.sizes
           else quick_sizes if args.quick else full_sizes)
  out = pathlib.Path(args.out) if args.out else (
      BENCH / "results" / ("quick" if args.quick else ""))
  out.mkdir(parents=True, exist_ok=True)
  cache = BENCH / ".cache"
  cache.mkdir(exist_ok=True)
  workloads = workloads_lib.all_workloads(str(cache))
  if args.workloads:
    wanted = args.workloads.split(",")
    workloads = [w for w in workloads if w.name in wanted]
  methods = methods_lib.by_name(args.methods)
  if methods[0].name != "native":
    methods = (methods_lib.by_name("native")[0], *methods)
  modes = [m for m in args.modes.split(",") if m]
  budget_s = args.budget or (0.1 if args.quick else 0.4)
  max_config_s = args.max_config_seconds or (5. if args.quick else 15.)
  unknown = set(args.sections.split(",")) - set(SECTIONS)
  if unknown:
    raise SystemExit(f"unknown sections {sorted(unknown)}; known: "
                     + ",".join(SECTIONS))
  env = environment()
  print(f"[bench] jax {env['jax']}, jaxlib {env['jaxlib']}, tensorflow "
        f"{env['tensorflow']}, tf2jax {env['tf2jax']}; {env['machine']}",
        flush=True)
  log = lambda s: print(s, flush=True)
  records = []
  if "steady" in args.sections.split(","):
    records = measure_all(
        workloads, methods, sizes, modes, budget_s=budget_s,
        max_config_s=max_config_s, quick=args.quick, log=log)
  data = {
      "environment": env,
      "sizes": list(sizes),
      "workloads": [{"name": w.name, "title": w.title, "tol": w.tol,
                     "derivative": w.derivative, "family": w.family}
                    for w in workloads],
      "methods": [{"name": m.name, "title": m.title} for m in methods],
      "records": [dataclasses.asdict(r) for r in records],
  }
  with open(out / "results.json", "w") as f:  # kept if a section crashes
    json.dump(data, f, indent=1)
  _sections(args, data, cache, out, log)
  env["total_seconds"] = round(time.perf_counter() - start, 1)
  env["command"] = " ".join(["python3 benchmarks/run.py", *sys.argv[1:]])
  with open(out / "results.json", "w") as f:
    json.dump(data, f, indent=1)
  report.write(data, out)
  default_run = not (args.quick or args.workloads
                     or args.methods or args.sizes or args.out
                     or args.modes != "jit,eager"
                     or args.sections != ",".join(SECTIONS))
  if default_run and not args.no_readme:
    report.write_summaries(data, BENCH.parent)
  print(f"[bench] done in {env['total_seconds']:.0f} s; wrote "
        f"{out / 'results.md'} and its plots", flush=True)
  return 0
