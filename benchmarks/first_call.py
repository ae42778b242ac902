"""The first call under ``jax.jit`` in a fresh process, broken down.

Each measurement is its own Python process: import JAX and TensorFlow, put
the input on the device, warm JAX's backend with a trivial jitted function,
then time the first call of ``jax.jit(jax.vmap(f))`` (``jacrev`` for a
Jacobian workload): build, trace, lower, XLA compile, run. Native JAX,
the fork's ``call_tf``, tf2jax and TensorFlow's own ``tf.vectorized_map``
(``batch_jacobian`` for a Jacobian) in a ``tf.function(jit_compile=True)``
alternate, repeat after repeat, so that "fork minus native" compares
neighbours in time, and each repeat gives a paired ratio (the fork over the
faster of native and tf2jax in that repeat).

The cases of :data:`TRANSFORMED` time the first call of one transformation
of an 8-atom Lennard-Jones energy (``lj8``): ``jax.jit`` of ``vmap`` (N
examples), ``jacrev``, ``jacfwd``, ``hessian`` (one example) and
``vmap(hessian)``, for native JAX, the fork and tf2jax. Every result is
checked, after the clock, against native JAX's.

In the fork's processes the phases are timed by wrapping TensorFlow's and
the overlay's functions (exclusive time: a phase's nested phases are
subtracted), which costs microseconds:

* TF tracing (FuncGraph building): of the unbatched function, and inside
  ``jax.vmap``'s vectorized function (pfor's loop body and its wrappers);
* TF autograph (the functions pfor wraps in ``tf.function``);
* pfor's conversion (``PFor.convert``);
* TF to HLO (``experimental_get_compiler_ir``);
* TF's autodiff: ``GradientTape.gradient`` and ``ForwardAccumulator.jvp``
  (inside the traces of TF's VJP and tangent functions);
* the overlay's side-effect scan of TF graphs;
* the overlay's reading of a StableHLO module into JAX
  (``stablehlo_to_jax.parse``; ``call_tf_lib.stablehlo.to_jax.parse`` in
  wheels before the interpreter moved);
* what is left of JAX's trace (JAX and the overlay's own Python), JAX's
  lowering, XLA's compilation, the run.

``--profile`` writes a cProfile of one fork first call per workload
(a separate process: the profiler's overhead would distort the timings).

Run from the repository root in the benchmark venv::

  benchmarks/.venv/bin/python -m benchmarks.first_call [--repeats 5]
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
import contextlib
import functools
import json
import os
import pathlib
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from typing import Any

BENCH = pathlib.Path(__file__).resolve().parent
# The first calls of one transformation of one example's function: case ->
# (workload, transformation). "vmap" ones take N examples, the others one.
TRANSFORMED = {
    "lj8_vmap": ("lj8", "vmap"),
    "lj8_jacrev": ("lj8", "jacrev"),
    "lj8_jacfwd": ("lj8", "jacfwd"),
    "lj8_hessian": ("lj8", "hessian"),
    "lj8_vmap_hessian": ("lj8", "vmap_hessian"),
}
WORKLOADS = ("mlp128", "energy", "energy_jac", *TRANSFORMED)
METHODS = ("native", "fork", "tf2jax", "tf")
# The references of the paired ratio: the fork over the faster of them.
REFERENCES = ("native", "tf2jax")
N = 100
# An earlier fork's first calls, (fork, native) seconds: the reference of
# the JSON's ``issue_extra`` and ``target_extra`` (half of it).
ISSUE_TODAY = {"mlp128": (0.20, 0.04), "energy": (0.34, 0.18),
               "energy_jac": (1.03, 0.41)}


class Phases:
  """Exclusive wall time of nested phases (a phase minus its sub-phases)."""

  def __init__(self):
    self.exclusive: dict[str, float] = collections.defaultdict(float)
    self.count: dict[str, int] = collections.defaultdict(int)
    self._stack: list[list[Any]] = []

  def _push(self, name: str) -> None:
    self._stack.append([name, time.perf_counter(), 0.])

  def _pop(self) -> None:
    name, t0, child = self._stack.pop()
    elapsed = time.perf_counter() - t0
    self.exclusive[name] += elapsed - child
    self.count[name] += 1
    if self._stack:
      self._stack[-1][2] += elapsed

  def names(self) -> list[str]:
    return [s[0] for s in self._stack]

  @contextlib.contextmanager
  def phase(self, name: str):
    self._push(name)
    try:
      yield
    finally:
      self._pop()

  def wrap(self, name: str | Callable[..., str], f: Callable[..., Any]
           ) -> Callable[..., Any]:
    """``f`` timed as phase ``name`` (or ``name(*args, **kwargs)``)."""
    @functools.wraps(f)
    def timed(*args, **kwargs):
      self._push(name(*args, **kwargs) if callable(name) else name)
      try:
        return f(*args, **kwargs)
      finally:
        self._pop()
    return timed


TF_TRACE_UNBATCHED = "TF tracing: the unbatched function"
TF_TRACE_VMAP = "TF tracing: inside the vectorized function (pfor's loop body)"
TF_AUTOGRAPH = "TF autograph (pfor's tf.function wrappers)"
TF_PFOR = "TF pfor conversion (PFor.convert)"
TF_HLO = "TF to HLO (experimental_get_compiler_ir)"
IMPORTS = "imports: modules loaded on first use"
OVERLAY_FINGERPRINT = "overlay: the traced graph's fingerprint"
OVERLAY_EFFECTS = "overlay: side-effect scan of TF graphs"
OVERLAY_TO_STABLEHLO = "jaxlib: tf2xla's HLO to StableHLO, its op metadata"
OVERLAY_READ = ("overlay: StableHLO module read into Python "
                "(stablehlo_to_jax.read)")
OVERLAY_BUILD = ("overlay: the interpreted program built from the module "
                 "(stablehlo_to_jax.parse)")
OVERLAY_CACHE_READ = "overlay: persistent cache read"
OVERLAY_CACHE_WRITE = "overlay: persistent cache write"
OVERLAY_PROBE = ("overlay: reverse-mode probe of the program "
                 "(jax.vjp, traced)")
TF_TAPE = "TF autodiff: GradientTape.gradient"
TF_ACCUMULATOR = "TF autodiff: ForwardAccumulator.jvp"
JAX_TRACE = "JAX trace: JAX and overlay Python"
JAX_LOWER = "JAX lowering"
XLA_COMPILE = "XLA compile (or the persistent cache's executable)"
BUILD = "build the function (tf2jax: convert)"
TF_FIRST_CALL = ("TF: trace, pfor, XLA compile and run "
                 "(tf.function(jit_compile=True))")
RUN = "run"
TF_PHASES = (TF_TRACE_UNBATCHED, TF_TRACE_VMAP, TF_AUTOGRAPH, TF_PFOR, TF_HLO,
             TF_TAPE, TF_ACCUMULATOR)
# The phases in the order of a first call, for tables.
ORDER = (IMPORTS, BUILD, TF_TRACE_UNBATCHED, TF_TRACE_VMAP, TF_AUTOGRAPH,
         TF_PFOR, OVERLAY_FINGERPRINT, OVERLAY_EFFECTS, OVERLAY_CACHE_READ,
         TF_HLO, OVERLAY_TO_STABLEHLO, OVERLAY_READ, OVERLAY_BUILD,
         OVERLAY_CACHE_WRITE, OVERLAY_PROBE, TF_TAPE, TF_ACCUMULATOR,
         JAX_TRACE, JAX_LOWER, XLA_COMPILE, RUN)
# Where the overlay's phases are, in this version of it or an older one
# (a run against an older wheel, for a before/after comparison, times what
# it can): (module, attribute, phase).
_CALL_TF_LIB = "jax.experimental.jax2tf.call_tf_lib"
_OVERLAY_PHASES = (
    (f"{_CALL_TF_LIB}.tf_function.compile", "_compile_eager", TF_HLO),
    (f"{_CALL_TF_LIB}.tf_function.effects", "side_effect_ops",
     OVERLAY_EFFECTS),
    (f"{_CALL_TF_LIB}.tf_function.traces", "graph_digest",
     OVERLAY_FINGERPRINT),
    (f"{_CALL_TF_LIB}.compat", "hlo_to_stablehlo", OVERLAY_TO_STABLEHLO),
    (f"{_CALL_TF_LIB}.compat", "hlo_op_types", OVERLAY_TO_STABLEHLO),
    ("jax._src.export.stablehlo_to_jax", "read", OVERLAY_READ),
    ("jax._src.export.stablehlo_to_jax", "parse", OVERLAY_BUILD),
    (f"{_CALL_TF_LIB}.stablehlo.to_jax", "parse", OVERLAY_BUILD),
)


def _when_imported(module: str, apply: Callable[[Any], None],
                   pending: dict[str, list[Callable[[Any], None]]]) -> None:
  """Calls ``apply(module)`` now if it is imported, else when it is."""
  if module in sys.modules:
    apply(sys.modules[module])
  else:
    pending.setdefault(module, []).append(apply)


def _wrap_imports(phases: Phases,
                  pending: dict[str, list[Callable[[Any], None]]]) -> None:
  """Times the loading of modules (not an import of a loaded one).

  And wraps the functions of a module when it is loaded (``pending``), so
  that the instrumentation imports nothing before the clock starts.
  """
  import importlib._bootstrap as bootstrap  # pylint: disable=g-import-not-at-top
  find_and_load = bootstrap._find_and_load  # pylint: disable=protected-access

  def loading(name, *args, **kwargs):
    with phases.phase(IMPORTS):
      module = find_and_load(name, *args, **kwargs)
    for apply in pending.pop(name, ()):
      apply(module)
    return module
  bootstrap._find_and_load = loading  # pylint: disable=protected-access


def _wrapper(phases: Phases, attr: str, name: str,
             cls: str | None = None) -> Callable[[Any], None]:
  """Wraps ``module.attr`` (or ``module.cls.attr``) as phase ``name``."""
  def apply(module):
    owner = getattr(module, cls) if cls else module
    if hasattr(owner, attr):
      setattr(owner, attr, phases.wrap(name, getattr(owner, attr)))
  return apply


def instrument(phases: Phases) -> None:
  """Wraps TF's and the overlay's functions to time the phases.

  TF's modules are imported (the child imported TensorFlow already); the
  overlay's are wrapped when the call imports them.
  """
  # pylint: disable=g-import-not-at-top
  from tensorflow.python.autograph.impl import api as ag_api
  from tensorflow.python.eager.polymorphic_function import tracing_compilation
  from tensorflow.python.ops.parallel_for import pfor as pfor_lib
  import tensorflow as tf
  # pylint: enable=g-import-not-at-top

  def trace_name(function_type, type_context, func_graph, tracing_options):
    del function_type, type_context
    name = getattr(tracing_options, "name", "") or func_graph.name
    inside = any(n in (TF_TRACE_VMAP, TF_PFOR) for n in phases.names())
    return TF_TRACE_VMAP if inside or "_vmap_" in name else TF_TRACE_UNBATCHED

  tracing_compilation._create_concrete_function = phases.wrap(  # pylint: disable=protected-access
      trace_name, tracing_compilation._create_concrete_function)  # pylint: disable=protected-access
  ag_api._convert_actual = phases.wrap(TF_AUTOGRAPH, ag_api._convert_actual)  # pylint: disable=protected-access
  pfor_lib.PFor.convert = phases.wrap(TF_PFOR, pfor_lib.PFor.convert)
  tf.GradientTape.gradient = phases.wrap(TF_TAPE, tf.GradientTape.gradient)
  tf.autodiff.ForwardAccumulator.jvp = phases.wrap(
      TF_ACCUMULATOR, tf.autodiff.ForwardAccumulator.jvp)
  pending: dict[str, list[Callable[[Any], None]]] = {}
  for module, attr, name in _OVERLAY_PHASES:
    _when_imported(module, _wrapper(phases, attr, name), pending)
  cache = f"{_CALL_TF_LIB}.tf_function.persistent_cache"
  _when_imported(cache, _wrapper(phases, "get", OVERLAY_CACHE_READ, "Store"),
                 pending)
  _when_imported(cache, _wrapper(phases, "put", OVERLAY_CACHE_WRITE, "Store"),
                 pending)
  _when_imported(f"{_CALL_TF_LIB}.stablehlo.path",
                 _wrapper(phases, "_jax_transposes", OVERLAY_PROBE,
                          "Interpreted"), pending)
  _wrap_imports(phases, pending)


def warm_tensorflow() -> None:
  """TF's one-time work: a trivial function traced and converted to HLO."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  f = tf.function(lambda a: a * 2., jit_compile=True, autograph=False)
  spec = tf.TensorSpec((2,), tf.float32)
  f.get_concrete_function(spec)
  f.experimental_get_compiler_ir(spec)(stage="hlo_serialized",
                                       platform_name="CPU")


def use_persistent_caches(directory: str) -> None:
  """JAX's persistent compilation cache (and so call_tf's) in ``directory``.

  Every compilation is kept, however fast (JAX keeps by default only those
  that took a second or more).
  """
  import jax  # pylint: disable=g-import-not-at-top
  jax.config.update("jax_compilation_cache_dir", directory)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
  jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def _child(workload: str, method: str, n: int, profile: str | None,
           warm_tf: bool = False, cache_dir: str | None = None) -> None:
  """One fresh process: one first call, its phases as a JSON line.

  With ``warm_tf``, TensorFlow's one-time work (its first trace, its first
  conversion to HLO) is done before the clock starts, as JAX's backend is:
  the first call of a function in a process that has used TF before. With
  ``cache_dir``, JAX's persistent caches (and call_tf's) are there.
  """
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  sys.path.insert(0, str(BENCH.parent))
  t_import = time.perf_counter()
  # pylint: disable=g-import-not-at-top
  import jax
  import tensorflow as tf
  from jax.experimental import jax2tf
  import numpy as np
  # pylint: enable=g-import-not-at-top
  import_s = time.perf_counter() - t_import
  from benchmarks import methods as methods_lib  # pylint: disable=g-import-not-at-top
  from benchmarks import workloads as wl  # pylint: disable=g-import-not-at-top
  if cache_dir:
    use_persistent_caches(cache_dir)
  tf.get_logger().setLevel("ERROR")
  name, transformation = TRANSFORMED.get(workload, (workload, None))
  w = wl.by_name(name, str(BENCH / ".cache"))
  inputs = w.inputs(n)
  if transformation is not None and not transformation.startswith("vmap"):
    inputs = inputs[0]  # one example
  x = jax.block_until_ready(jax.device_put(inputs))
  jax.block_until_ready(jax.jit(lambda a: a * 2)(x))  # the backend is up
  if warm_tf:
    warm_tensorflow()
  phases = Phases()
  if method == "fork":
    instrument(phases)
  else:
    _wrap_imports(phases, {})
  prof = None
  if profile:
    import cProfile  # pylint: disable=g-import-not-at-top
    prof = cProfile.Profile()
    prof.enable()
  x_tf = tf.constant(np.asarray(x))
  t0 = time.perf_counter()
  if method == "tf":
    # TensorFlow's own: tf.vectorized_map (batch_jacobian for a Jacobian)
    # in a tf.function compiled with XLA, as the steady-state "tf" method.
    with phases.phase(BUILD):
      (tf_method,) = methods_lib.by_name("tf")
      g_tf = tf_method.build(w, "jit", n)
    with phases.phase(TF_FIRST_CALL):
      g_tf(x_tf).numpy()
    total = time.perf_counter() - t0
  else:
    with phases.phase(BUILD):
      if method == "native":
        f = w.jnp_fn
      elif method == "fork":
        f = jax2tf.call_tf(w.tf_fn)
      else:
        import tf2jax  # pylint: disable=g-import-not-at-top
        jax_fn, params = tf2jax.convert(tf.function(w.tf_fn, autograph=False),
                                        np.zeros(w.example_shape, np.float32))
        f = lambda a: jax_fn(params, a)[0]
      g = jax.jit(transformed(transformation, w, f))
    with phases.phase(JAX_TRACE):
      traced = g.trace(x)
    with phases.phase(JAX_LOWER):
      lowered = traced.lower()
    with phases.phase(XLA_COMPILE):
      compiled = lowered.compile()
    with phases.phase(RUN):
      got = jax.block_until_ready(compiled(x))
    total = time.perf_counter() - t0
  if prof is not None:
    prof.disable()
    _write_profile(prof, profile, f"{workload} N={n}, the fork's first call "
                   f"under jit in a fresh process: {total * 1e3:.0f} ms "
                   "(with the profiler's overhead)")
  result = {"workload": workload, "method": method, "n": n, "total": total,
            "phases": dict(phases.exclusive), "counts": dict(phases.count),
            "import": import_s}
  if method in ("fork", "tf2jax"):
    # After the clock: the result against native JAX's.
    expected = jax.jit(transformed(transformation, w, w.jnp_fn))(x)
    err = float(np.max(np.abs(np.asarray(got) - np.asarray(expected))) /
                max(float(np.max(np.abs(np.asarray(expected)))), 1e-30))
    result["max_rel_err"] = err
    result["wrong"] = not err <= w.tol
  print("RESULT " + json.dumps(result), flush=True)


def transformed(transformation: str | None, w: Any,
                f: Callable[[Any], Any]) -> Callable[[Any], Any]:
  """What a first call computes: ``f`` of one example, transformed.

  Args:
    transformation: a transformation of :data:`TRANSFORMED`, or None for
      ``vmap`` of the workload's own derivative (:func:`.per_example`).
    w: the workload.
    f: one example's function, in the method's own form.
  """
  import jax  # pylint: disable=g-import-not-at-top
  from benchmarks import workloads as wl  # pylint: disable=g-import-not-at-top
  if transformation is None:
    return jax.vmap(wl.per_example(w, f))
  return {"vmap": jax.vmap, "jacrev": jax.jacrev, "jacfwd": jax.jacfwd,
          "hessian": jax.hessian,
          "vmap_hessian": lambda g: jax.vmap(jax.hessian(g)),
          }[transformation](f)


def runs(workload: str, method: str) -> bool:
  """Whether ``method`` runs the first call ``workload``.

  TensorFlow's own batched forms exist for the vmap workloads only.
  """
  return not (method == "tf" and workload in TRANSFORMED)


def _package(filename: str) -> str:
  if "call_tf_lib" in filename:
    return "overlay (call_tf_lib)"
  if filename.endswith("jax2tf/call_tf.py"):
    return "call_tf.py"
  if "/tensorflow/" in filename or "__autograph_generated" in filename:
    return "tensorflow (Python)"
  if "/jax/" in filename or "/jaxlib/" in filename:
    return "jax (Python)"
  if "/benchmarks/" in filename:
    return "the workload's own Python"
  return "other Python"


def _write_profile(prof: Any, path: str, title: str) -> None:
  """Exclusive time by package, then the top functions by cumulative time."""
  import io  # pylint: disable=g-import-not-at-top
  import pstats  # pylint: disable=g-import-not-at-top
  st = pstats.Stats(prof)
  by_pkg: dict[str, float] = collections.defaultdict(float)
  for (filename, _, _), (_, _, tt, _, callers) in st.stats.items():  # pytype: disable=attribute-error
    if filename == "~":  # a builtin (C): charge its callers' packages
      total_ct = sum(c[2] for c in callers.values()) or 1.
      for (cf, _, _), c in callers.items():
        by_pkg[f"C, called from {_package(cf)}"] += tt * c[2] / total_ct
    else:
      by_pkg[_package(filename)] += tt
  total = sum(by_pkg.values())
  out = io.StringIO()
  out.write(f"{title}\n\nExclusive time by package (builtins charged to "
            "their callers):\n")
  for k, v in sorted(by_pkg.items(), key=lambda kv: -kv[1]):
    out.write(f"  {v * 1e3:8.1f} ms  {100 * v / total:5.1f}%  {k}\n")
  out.write("\nTop functions by cumulative time:\n")
  s = io.StringIO()
  pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(45)
  text = s.getvalue()
  site = sysconfig.get_paths()["purelib"]
  for prefix in (site + "/", str(BENCH.parent) + "/"):
    text = text.replace(prefix, "")
  out.write(text[text.find("   ncalls"):])
  with open(path, "a") as f:
    f.write(out.getvalue() + "\n")


def _run_child(workload: str, method: str, n: int,
               profile: str | None = None,
               python: str | None = None,
               warm_tf: bool = False,
               cache_dir: pathlib.Path | None = None) -> dict[str, Any]:
  cmd = [python or sys.executable, "-m", "benchmarks.first_call", "--child",
         workload, method, str(n)] + (["--profile", profile] if profile else []
                                     ) + (["--warm-tf"] if warm_tf else []
                                          ) + (["--cache-dir", str(cache_dir)]
                                               if cache_dir else [])
  # Bytecode cached as an installed package has it (pip compiles it at
  # install time): PYTHONDONTWRITEBYTECODE would make every child compile
  # every module it imports, jax's, TensorFlow's and the overlay's.
  env = {k: v for k, v in os.environ.items()
         if k != "PYTHONDONTWRITEBYTECODE"}
  env["TF_CPP_MIN_LOG_LEVEL"] = "3"
  out = subprocess.run(cmd, cwd=BENCH.parent, env=env, capture_output=True,
                       text=True, check=False)
  for line in out.stdout.splitlines():
    if line.startswith("RESULT "):
      return json.loads(line[len("RESULT "):])
  return {"workload": workload, "method": method, "n": n,
          "error": (out.stderr.strip().splitlines() or ["no output"])[-1][:300]}


# The states of the persistent caches a first call is measured in: "cold",
# none (JAX's default: no cache directory); "warm", JAX's compilation cache
# (and call_tf's) filled by an earlier process running the same first call,
# as for a re-run script.
CACHES = ("cold", "warm")


def runs_warm(method: str) -> bool:
  """Whether ``method`` has a persistent cache to warm (TF's own has not)."""
  return method.removesuffix("_before") != "tf"


def _prime(workloads: Sequence[str], methods: Sequence[str], n: int,
           root: pathlib.Path, child: Callable[..., dict[str, Any]],
           log) -> dict[tuple[str, str], pathlib.Path]:
  """A cache directory per workload and method, filled by one first call."""
  dirs = {}
  for w in workloads:
    for m in methods:
      if not (runs(w, m.removesuffix("_before")) and runs_warm(m)):
        continue
      dirs[(w, m)] = root / f"{w}-{m}"
      res = child(w, m, dirs[(w, m)])
      log(f"  cache filled for {w} {m}: "
          + (f"{res['total'] * 1e3:.0f} ms" if "total" in res
             else f"FAILED {res['error']}"))
  return dirs


def _summary(done: Sequence[dict[str, Any]], workloads: Sequence[str],
             methods: Sequence[str], repeats: int,
             before_native: bool) -> dict[str, Any]:
  """Per workload: each method's medians, and the paired ratios."""
  summary = {}
  for w in workloads:
    s: dict[str, Any] = {}
    for m in methods:
      ok = [x for x in done if x["workload"] == w and x["method"] == m
            and "total" in x]
      if ok:
        s[m] = _method_summary(ok)
    _paired(s, [x for x in done if x["workload"] == w], repeats,
            before_native)
    if w in ISSUE_TODAY and "fork" in s:
      fork, native = ISSUE_TODAY[w]
      s["issue_extra"] = fork - native
      s["target_extra"] = (fork - native) / 2
    summary[w] = s
  return summary


def _method_summary(ok: Sequence[dict[str, Any]]) -> dict[str, Any]:
  names = sorted({p for x in ok for p in x["phases"]})
  s = {"median": statistics.median(x["total"] for x in ok),
       "min": min(x["total"] for x in ok),
       "phases": {p: statistics.median(x["phases"].get(p, 0.) for x in ok)
                  for p in names},
       "counts": {p: statistics.median(x["counts"].get(p, 0) for x in ok)
                  for p in names}}
  if any("import" in x for x in ok):
    s["import"] = statistics.median(x.get("import", 0.) for x in ok)
  if any("wrong" in x for x in ok):
    s["wrong"] = any(x.get("wrong") for x in ok)
    s["max_rel_err"] = max(x.get("max_rel_err", 0.) for x in ok)
  return s


def _paired(s: dict[str, Any], done: Sequence[dict[str, Any]], repeats: int,
            before_native: bool) -> None:
  """The ratios and differences within each repeat, and their medians."""
  series: dict[str, list[float]] = collections.defaultdict(list)
  native_before = "native_before" if before_native else "native"
  for r in range(repeats):
    pair = {x["method"]: x["total"] for x in done
            if x["repeat"] == r and "total" in x}
    refs = [pair[m] for m in REFERENCES if m in pair]
    if "fork" in pair and refs:
      # The fork over the faster reference, within each repeat.
      series["ratio"].append(pair["fork"] / min(refs))
    if "fork" in pair and "native" in pair:
      series["ratio_native"].append(pair["fork"] / pair["native"])
      series["extra"].append(pair["fork"] - pair["native"])
      if "fork_before" in pair and native_before in pair:
        series["extra_before"].append(pair["fork_before"]
                                      - pair[native_before])
        series["extra_ratio"].append(series["extra"][-1]
                                     / series["extra_before"][-1])
  for k, v in series.items():
    s[k] = statistics.median(v)
    s[f"{k}_runs"] = v


def measure(workloads: Sequence[str] = WORKLOADS, n: int = N,
            repeats: int = 5, profile_path: pathlib.Path | None = None,
            log=print, before_python: str | None = None,
            before_native: bool = False,
            methods: Sequence[str] = METHODS,
            warm_tf: bool = False,
            caches: Sequence[str] = CACHES) -> dict[str, Any]:
  """Fresh-process first calls, ``repeats`` times, methods interleaved.

  Args:
    workloads: workload names.
    n: the batch size.
    repeats: processes per workload, method and cache state.
    profile_path: if set, a cProfile of one fork first call per workload
      is written there.
    log: progress.
    before_python: if set, the interpreter of another environment (an older
      wheel of the fork): its ``call_tf`` runs as method ``fork_before``,
      interleaved with the others.
    before_native: with ``before_python``, also run native JAX there
      (``native_before``), for an older wheel built on another JAX release:
      its extra is then over its own JAX's native first call.
    methods: the methods run in this interpreter (a subset of ``METHODS``;
      ``native`` and ``fork`` for the extra).
    warm_tf: every process does TF's one-time work before the clock starts
      (see :func:`_child`).
    caches: the states of the persistent caches measured (:data:`CACHES`).

  Returns:
    ``{"n", "repeats", "runs": [...], "summary": {workload: {...}},
    "warm_summary": {...}, "load"}``: per workload and method the median
    and minimum first call, the median of each phase (and of the import of
    JAX, TensorFlow and jax2tf before it), and per repeat the fork's ratio
    to the faster of native and tf2jax (``ratio``), to native
    (``ratio_native``) and its extra over native, with their medians; with
    ``before_python``, the older wheel's extra and, per repeat, the ratio
    of the two extras. ``summary`` without persistent caches,
    ``warm_summary`` with them warm.
  """
  done = []
  load_before = load_average()
  methods = tuple(methods) + (
      (("native_before",) if before_native else ()) + ("fork_before",)
      if before_python else ())

  def child(w: str, m: str, cache_dir: pathlib.Path | None = None):
    if m.endswith("_before"):
      return dict(_run_child(w, m[:-len("_before")], n, python=before_python,
                             warm_tf=warm_tf, cache_dir=cache_dir), method=m)
    return _run_child(w, m, n, warm_tf=warm_tf, cache_dir=cache_dir)

  with tempfile.TemporaryDirectory(prefix="first-call-caches-") as root:
    dirs = (_prime(workloads, methods, n, pathlib.Path(root), child, log)
            if "warm" in caches else {})
    for r in range(repeats):
      for w in workloads:
        for cache in caches:
          for m in methods:
            if not runs(w, m.removesuffix("_before")) or (
                cache == "warm" and (w, m) not in dirs):
              continue
            res = dict(child(w, m, dirs.get((w, m)) if cache == "warm"
                             else None), repeat=r, cache=cache)
            done.append(res)
            log(f"  first call {w:16s} N={n} {cache:4s} {m:13s} repeat {r}: "
                + (f"{res['total'] * 1e3:7.0f} ms" if "total" in res
                   else f"FAILED {res['error']}")
                + (" WRONG RESULT" if res.get("wrong") else ""))
  if profile_path is not None:
    profile_path.write_text("")
    for w in workloads:
      _run_child(w, "fork", n, profile=str(profile_path))
  summaries = {c: _summary([x for x in done if x["cache"] == c], workloads,
                           methods, repeats, before_native) for c in caches}
  return {"n": n, "repeats": repeats, "warm_tf": warm_tf, "runs": done,
          "summary": summaries.get("cold", {}),
          "warm_summary": summaries.get("warm", {}),
          "load": {"before": load_before, "after": load_average()}}


def load_average() -> list[float] | None:
  """The machine's 1, 5 and 15 minute load averages (as ``uptime``)."""
  try:
    return [round(v, 2) for v in os.getloadavg()]
  except OSError:
    return None


def main(argv: list[str]) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--child", nargs=3, metavar=("WORKLOAD", "METHOD", "N"))
  p.add_argument("--profile", help="a child: append a cProfile of the call "
                 "to FILE; else: write a cProfile of one fork first call per "
                 "workload to FILE")
  p.add_argument("--repeats", type=int, default=5)
  p.add_argument("--workloads", default=",".join(WORKLOADS))
  p.add_argument("--n", type=int, default=N)
  p.add_argument("--out", help="write the JSON here")
  p.add_argument("--before-python", help="also run the fork_before method "
                 "with this interpreter (a venv with an older wheel)")
  p.add_argument("--before-native", action="store_true",
                 help="also run native JAX with --before-python's "
                 "interpreter (an older wheel on another JAX release)")
  p.add_argument("--methods", default=",".join(METHODS),
                 help="the methods run in this interpreter")
  p.add_argument("--warm-tf", action="store_true",
                 help="do TensorFlow's one-time work (first trace, first "
                 "conversion to HLO) before the clock starts")
  p.add_argument("--caches", default=",".join(CACHES),
                 help="the persistent caches' states measured: cold (none), "
                 "warm (filled by a first run), or both")
  p.add_argument("--cache-dir", help="a child: JAX's persistent caches there")
  args = p.parse_args(argv)
  unknown = set(args.methods.split(",")) - set(METHODS)
  if unknown:
    p.error(f"unknown --methods {sorted(unknown)}; choose from {METHODS}")
  if args.before_native and not args.before_python:
    p.error("--before-native needs --before-python")
  if args.child:
    w, m, n = args.child
    _child(w, m, int(n), args.profile, args.warm_tf, args.cache_dir)
    return 0
  data = measure(args.workloads.split(","), args.n, args.repeats,
                 pathlib.Path(args.profile) if args.profile else None,
                 before_python=args.before_python,
                 before_native=args.before_native,
                 methods=args.methods.split(","),
                 warm_tf=args.warm_tf, caches=args.caches.split(","))
  text = json.dumps(data, indent=1)
  if args.out:
    pathlib.Path(args.out).write_text(text)
  for cache, key in (("cold", "summary"), ("warm", "warm_summary")):
    for w, s in data[key].items():
      print(cache, w, {k: (round(v["median"], 3) if isinstance(v, dict)
                           else round(v, 3))
                       for k, v in s.items() if not k.endswith("_runs")})
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
