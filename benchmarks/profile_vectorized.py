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
"""Where the vectorized path spends its time, against native JAX.

Run inside the benchmark venv, from the repository root:

  benchmarks/.venv/bin/python -m benchmarks.profile_vectorized [--sizes 10000]

Prints, per workload:

* the first jit call of ``vmap(call_tf(f))`` broken down: TF tracing (the
  unbatched function and pfor's vectorized one), the batching rule's probe
  conversion to HLO, the lowering's second conversion, XLA compilation;
* a census of the compiled HLO (dots, transposes, copies, gathers, while
  loops, converts, fusions, custom calls) of native JAX and the vectorized
  path, and their steady-state times;
* the dispatch cost of ``has_side_effects=True`` at N=1;
* for the forward-mode workloads, the HLO census and steady
  time of native JAX, tf2jax, the fork (its JVP rule) and ``fwdacc`` (the
  same derivative by hand, tangents from ``tf.autodiff.ForwardAccumulator``);

and finally the effect of XLA:CPU's YNNPACK fusions on native JAX (a child
process with ``XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type=``), on
speed, and on correctness (native ``jit(vmap(jacrev(jacfwd(energy))))``
against the eager, unbatched result).
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Callable
import functools
import importlib
import os
import re
import subprocess
import sys
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import logging as absl_logging  # noqa: E402
import jax  # noqa: E402
from jax.experimental import jax2tf  # noqa: E402
from jax.experimental.jax2tf.call_tf_lib import compile as compile_lib  # noqa: E402
from jax.experimental.jax2tf.call_tf_lib import vmap_tf  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks import methods as methods_lib  # noqa: E402
from benchmarks import timing  # noqa: E402
from benchmarks import workloads as wl  # noqa: E402

_ct = importlib.import_module("jax.experimental.jax2tf.call_tf")
CENSUS = ("dot", "transpose", "copy", "gather", "while", "convert", "fusion",
          "custom-call", "reduce")


class _Timers:
  """Accumulates the time spent in wrapped functions."""

  def __init__(self):
    self.total: dict[str, float] = collections.defaultdict(float)
    self.count: dict[str, int] = collections.defaultdict(int)

  def wrap(self, name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(f)
    def timed(*args, **kwargs):
      t0 = time.perf_counter()
      try:
        return f(*args, **kwargs)
      finally:
        self.total[name] += time.perf_counter() - t0
        self.count[name] += 1
    return timed

  def reset(self) -> None:
    self.total.clear()
    self.count.clear()


TIMERS = _Timers()


def _instrument() -> None:
  """Times TF tracing and TF->HLO conversion inside call_tf and its rule."""
  gcf = _ct._get_concrete_function_tf  # pylint: disable=protected-access
  _ct._get_concrete_function_tf = functools.lru_cache(128)(  # pylint: disable=protected-access
      TIMERS.wrap("TF tracing (incl. pfor)", gcf.__wrapped__))
  probe = vmap_tf._xla_conversion_error  # pylint: disable=protected-access
  vmap_tf._xla_conversion_error = TIMERS.wrap(  # pylint: disable=protected-access
      "probe: TF->HLO", probe)
  compile_lib.compile_to_hlo = TIMERS.wrap(
      "all TF->HLO", compile_lib.compile_to_hlo)


def _per_example(w: wl.Workload, f: Callable[[Any], Any]) -> Callable[..., Any]:
  return wl.per_example(w, f)


def _census(hlo: str) -> dict[str, int]:
  return {op: len(re.findall(rf"= \S+ {re.escape(op)}\(", hlo))
          for op in CENSUS}


def first_call(w: wl.Workload, n: int) -> None:
  """Prints the first jit call's breakdown, native and vectorized."""
  x = jax.device_put(w.inputs(n))
  for name in ("native", "vectorized"):
    best = None
    for _ in range(2):
      TIMERS.reset()
      fn = (w.jnp_fn if name == "native" else
            jax2tf.call_tf(w.tf_fn, has_side_effects=False))
      b = timing.compile_breakdown(
          lambda fn=fn: jax.jit(jax.vmap(_per_example(w, fn))), x)
      row = (b.trace + b.lower + b.compile, b.trace, b.lower, b.compile,
             dict(TIMERS.total))
      if best is None or row[0] < best[0]:
        best = row
    total, tr, lo, co, parts = best
    probe = parts.get("probe: TF->HLO", 0.)
    second = max(0., parts.get("all TF->HLO", 0.) - probe)
    print(f"  first call {name:10s} {total * 1e3:7.1f} ms = trace "
          f"{tr * 1e3:6.1f} + lower {lo * 1e3:6.1f} + XLA compile "
          f"{co * 1e3:6.1f}" + (
              "" if name == "native" else
              f"  [TF tracing {parts.get('TF tracing (incl. pfor)', 0) * 1e3:.1f}"
              f", probe TF->HLO {probe * 1e3:.1f}, lowering TF->HLO "
              f"{second * 1e3:.1f} ms]"))


def _print_census_and_steady(fns: dict[str, Any], x: Any, n: int) -> None:
  """Times the jitted ``fns`` on ``x`` side by side; prints each HLO census."""
  prepared = {k: timing.prepare(lambda f=f: f, x, "jax", budget_s=0.5)
              for k, f in fns.items()}
  timing.sample_interleaved(list(prepared.values()))
  for k, f in fns.items():
    census = _census(f.lower(x).compile().as_text())
    print(f"  N={n} {k:10s} steady {prepared[k].timing().steady * 1e3:8.3f} "
          "ms  HLO: " + ", ".join(f"{op} {c}" for op, c in census.items()
                                   if c))


def hlo_and_steady(w: wl.Workload, n: int) -> None:
  """Prints the HLO census and steady-state time, native and vectorized."""
  x = jax.device_put(w.inputs(n))
  fns = {"native": jax.jit(jax.vmap(_per_example(w, w.jnp_fn))),
         "vectorized": jax.jit(jax.vmap(_per_example(
             w, jax2tf.call_tf(w.tf_fn, has_side_effects=False))))}
  _print_census_and_steady(fns, x, n)


def dispatch(w: wl.Workload) -> None:
  """Prints the steady jit time at N=1 with and without the effect."""
  x = jax.device_put(w.inputs(1))
  prepared = {}
  for hse in (True, False):
    f = jax.jit(jax.vmap(_per_example(
        w, jax2tf.call_tf(w.tf_fn, has_side_effects=hse))))
    prepared[hse] = timing.prepare(lambda f=f: f, x, "jax", budget_s=0.5)
  f = jax.jit(jax.vmap(_per_example(w, w.jnp_fn)))
  prepared["native"] = timing.prepare(lambda: f, x, "jax", budget_s=0.5)
  timing.sample_interleaved(list(prepared.values()))
  t = {k: p.timing().steady * 1e6 for k, p in prepared.items()}
  print(f"  N=1 dispatch: has_side_effects=True {t[True]:.1f} us, False "
        f"{t[False]:.1f} us, native {t['native']:.1f} us")


def forward(w: wl.Workload, n: int) -> None:
  """Forward mode: HLO census and steady time, native, fork and fwdacc."""
  x = jax.device_put(w.inputs(n))
  builds = {m.name: m for m in methods_lib.ALL_METHODS
            if m.name in ("native", "vectorized", "fwdacc", "tf2jax")
            and m.applies(w)}
  fns = {k: m.build(w, "jit", n) for k, m in builds.items()}
  _print_census_and_steady(fns, x, n)


_YNN_CHILD = """
import os, sys
sys.path.insert(0, {root!r})
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import jax
from benchmarks import timing, workloads as wl
import numpy as np
for w in wl.all_workloads({cache!r}):
  if w.name not in ("energy", "energy_jac", "mlp", "energy_jacrev_jacfwd"):
    continue
  f = jax.vmap(wl.per_example(w, w.jnp_fn))
  for n in ((1,) if w.max_n == 1 else (1000, 10000)):
    x = jax.device_put(w.inputs(n))
    t = timing.measure(lambda: jax.jit(f), x, "jax", budget_s=0.5)
    with jax.disable_jit():
      ref = np.asarray(wl.per_example(w, w.jnp_fn)(x[0]), np.float64)
    got = np.asarray(t.result, np.float64)[0]
    err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
    print(f"{{w.name}} {{n}} {{t.steady * 1e3:.3f}} {{err:.1e}}")
"""


def ynn(root: str, cache: str) -> None:
  """Native JAX with XLA:CPU's default fusions against YNN fusions off."""
  results = {}
  for label, flags in (("default", ""),
                       ("ynn off", "--xla_cpu_experimental_ynn_fusion_type=")):
    env = dict(os.environ, XLA_FLAGS=flags)
    out = subprocess.run(
        [sys.executable, "-c", _YNN_CHILD.format(root=root, cache=cache)],
        env=env, capture_output=True, text=True, check=True).stdout
    for line in out.split("\n"):
      if line.strip():
        name, n, ms, err = line.split()
        results[(name, int(n), label)] = (float(ms), float(err))
  for name, n in sorted({(k[0], k[1]) for k in results}):
    (d, de), (o, oe) = (results[(name, n, "default")],
                        results[(name, n, "ynn off")])
    print(f"  native {name:10s} N={n:<6d} default {d:8.3f} ms (rel. error "
          f"{de:.0e}), YNN fusions off {o:8.3f} ms (rel. error {oe:.0e}) "
          f"({d / o:.2f}x)")


def main(argv: list[str]) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--sizes", default="1000,10000")
  p.add_argument("--workloads")
  p.add_argument("--no-ynn", action="store_true")
  p.add_argument("--forward-n", type=int, default=100,
                 help="batch size of the forward-mode census")
  args = p.parse_args(argv)
  absl_logging.set_verbosity(absl_logging.ERROR)
  tf.get_logger().setLevel("ERROR")
  _instrument()
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  cache = os.path.join(root, "benchmarks", ".cache")
  os.makedirs(cache, exist_ok=True)
  sizes = [int(s) for s in args.sizes.split(",")]
  for w in wl.all_workloads(cache):
    if args.workloads and w.name not in args.workloads.split(","):
      continue
    if w.derivative not in (None, "jacrev"):
      continue
    print(f"{w.name}: {w.title}", flush=True)
    first_call(w, sizes[0])
    for n in sizes:
      hlo_and_steady(w, n)
    dispatch(w)
  for w in wl.all_workloads(cache):
    if w.derivative not in ("jvp", "jacfwd", "hessian"):
      continue
    if args.workloads and w.name not in args.workloads.split(","):
      continue
    print(f"{w.name} (forward mode): {w.title}", flush=True)
    forward(w, args.forward_n)
  if not args.no_ynn:
    print("XLA:CPU YNNPACK fusions (native JAX)", flush=True)
    ynn(root, cache)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
