"""A real model's first call: the same Keras model natively and via call_tf.

The anchor of the first-call target: one Keras 3 model with the same
weights, built twice, once with Keras's JAX backend (native: the model
called inside ``jax.jit``) and once with its TensorFlow backend (through
``call_tf``). For ``f(x) = sum(log_softmax(model(x[None]))[0] * arange(10))``
of one example, the first call of ``jax.jit(jax.vmap(f))`` and of
``jax.jit(jax.vmap(jax.grad(f)))`` on a batch, each in a fresh process:

* cold: a new JAX compilation cache directory (and so a new ``call_tf``
  cache beside it);
* warm: a second process with the same directory, as a script run again;
* steady state: the median time of a call, after the first, in the cold
  process (at least 10 calls and half a second, at most 200 calls);
* each timed first call (and floor) starts with ``gc.collect()``, whatever
  the method: when a full collection falls is the process's history, not
  the call's; the full collections a call makes are measured
  (``gc_full_s``);
* TensorFlow's floor, in a process of its own: a fresh
  ``tf.function(model, jit_compile=True)`` traced for one example and
  lowered by tf2xla (what a Python function pays in every process), and the
  trace alone (what it pays with caches warm).

The targets (issue 54): cold first call at most native's times 1.10 plus
TensorFlow's floor; warm at most native's warm times 1.10 plus TensorFlow's
trace; steady state within 1.05x. Every call_tf result is checked against
native's (the same weights, so the same numbers to float tolerance).

Models: ``resnet50`` (64x64x3, 10 classes), ``mobilenetv2`` (alpha 0.5,
64x64x3, 10 classes), ``vit`` (4 transformer blocks, 16 tokens x 48).

Run from the repository root in a venv with the fork's wheel, jaxlib,
tensorflow-cpu and Keras 3 (the test venv has them)::

  python -m benchmarks.keras_models --out DIR [--models vit,mobilenetv2]
      [--transforms vmap,vmap_grad] [--batch 4] [--repeats 1]

``DIR/keras_models.json`` has every measurement, ``DIR/keras_models.md``
the table (``--report DIR`` writes it again). ``--merge DIR... --out DIR``
makes runs one, a model and transformation measured in several of them
one row of all their processes (the lent accelerator takes a row or two
a call). The committed runs are in
``benchmarks/results/keras_models/`` (this CPU) and
``benchmarks/results/accelerator/`` (the TPU).
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
from collections.abc import Iterator, Sequence
import contextlib
import gc
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ("resnet50", "mobilenetv2", "vit")
TRANSFORMS = ("vmap", "vmap_grad")
SHAPES = {"resnet50": (64, 64, 3), "mobilenetv2": (64, 64, 3),
          "vit": (16, 48)}
CLASSES = 10
# Steady state: calls after the first until both the count and the time
# are reached, or the cap (a call of half a millisecond moves by a tenth
# from one call to the next: 10 of them do not make a median; 200 of them,
# 0.1 s, end at the cap).
STEADY_CALLS, STEADY_SECONDS, STEADY_MAX_CALLS = 10, 0.5, 200
# The targets' factors (issue 54).
COLD_FACTOR = WARM_FACTOR = 1.10
STEADY_FACTOR = 1.05


# ---------------------------------------------------------------- the model


def build(name: str) -> Any:
  """The model ``name``, the same architecture under either backend."""
  import keras  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(0)
  if name == "mobilenetv2":
    return keras.applications.MobileNetV2(
        input_shape=SHAPES[name], alpha=0.5, weights=None, classes=CLASSES)
  if name == "resnet50":
    return keras.applications.ResNet50(
        input_shape=SHAPES[name], weights=None, classes=CLASSES)
  if name == "vit":
    inp = keras.Input(SHAPES[name])
    h = inp
    for _ in range(4):
      a = keras.layers.LayerNormalization()(h)
      a = keras.layers.MultiHeadAttention(num_heads=4, key_dim=12)(a, a)
      h = h + a
      b = keras.layers.LayerNormalization()(h)
      b = keras.layers.Dense(96, activation="gelu")(b)
      h = h + keras.layers.Dense(SHAPES[name][1])(b)
    h = keras.layers.GlobalAveragePooling1D()(h)
    return keras.Model(inp, keras.layers.Dense(CLASSES)(h))
  raise ValueError(f"unknown model {name!r}; one of {MODELS}")


def model_function(name: str, weights: str, method: str) -> Any:
  """The model with the saved weights as a JAX function of a batch: through
  ``call_tf`` of its ``tf.function`` (``method`` "call_tf", the
  TensorFlow backend), or called directly (Keras's JAX backend)."""
  model = build(name)
  model.load_weights(weights)
  if method == "call_tf":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from jax.experimental.jax2tf import call_tf  # pylint: disable=g-import-not-at-top
    return call_tf(tf.function(lambda x: model(x, training=False),
                               autograph=False))
  return lambda x: model(x, training=False)


def _inputs(name: str, batch: int) -> Any:
  import numpy as np  # pylint: disable=g-import-not-at-top
  return np.random.default_rng(1).standard_normal(
      (batch, *SHAPES[name])).astype(np.float32)


def _weights(out: pathlib.Path, name: str) -> pathlib.Path:
  return out / "weights" / f"{name}.weights.h5"


# ------------------------------------------------------------- the workers


class _Collections:
  """Seconds in full collections of Python's collector, while entered."""

  def __init__(self):
    self.full_s = 0.
    self._t0 = 0.

  def _callback(self, phase: str, info: dict[str, int]) -> None:
    if info["generation"] != 2:
      return
    if phase == "start":
      self._t0 = time.perf_counter()
    else:
      self.full_s += time.perf_counter() - self._t0


@contextlib.contextmanager
def _collector_reset() -> Iterator[_Collections]:
  """A timed first call, its collector schedule reset first.

  A full (oldest generation) collection of a process that imported
  TensorFlow and built a Keras model takes a tenth of a second or more on
  a 2-core CPU, and when it falls is the process's history, not the
  call's: MobileNetV2's TF-backend process started its first call 2 young
  collections away from one (and paid 0.12-0.13 s inside it), the
  JAX-backend one 7 away. ``gc.collect()`` before each timed first call
  (and floor), for every method, leaves each call its own collections;
  the full ones it still makes are measured (``gc_full_s``).
  """
  gc.collect()
  seen = _Collections()
  gc.callbacks.append(seen._callback)  # pylint: disable=protected-access
  try:
    yield seen
  finally:
    gc.callbacks.remove(seen._callback)  # pylint: disable=protected-access


def _worker_prepare(args: argparse.Namespace) -> dict[str, Any]:
  """Builds the model (TensorFlow backend) and saves its weights."""
  model = build(args.model)
  path = pathlib.Path(args.weights)
  path.parent.mkdir(parents=True, exist_ok=True)
  model.save_weights(str(path))
  return {"params": int(model.count_params())}


def _worker_floor(args: argparse.Namespace) -> dict[str, Any]:
  """TensorFlow's floor: a fresh trace of the model, and tf2xla of it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  model = build(args.model)
  model.load_weights(args.weights)
  spec = tf.TensorSpec((1, *SHAPES[args.model]), tf.float32)
  with _collector_reset() as collections:
    t0 = time.perf_counter()
    fn = tf.function(lambda x: model(x, training=False), autograph=False,
                     jit_compile=True)
    fn.get_concrete_function(spec)
    t1 = time.perf_counter()
    fn.experimental_get_compiler_ir(spec)(stage="hlo_serialized",
                                          platform_name="CPU")
    t2 = time.perf_counter()
  return {"tf_trace_s": t1 - t0, "tf2xla_s": t2 - t1, "floor_s": t2 - t0,
          "gc_full_s": collections.full_s}


def _transformed(kind: str, model_fn: Any) -> Any:
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top

  def f(x):
    logits = model_fn(x[None])
    return jnp.sum(jax.nn.log_softmax(logits)[0]
                   * jnp.arange(CLASSES, dtype=logits.dtype))
  return jax.vmap(f) if kind == "vmap" else jax.vmap(jax.grad(f))


def _worker_call(args: argparse.Namespace) -> dict[str, Any]:
  """The first call, then the steady state, of one method."""
  import jax  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  jax.config.update("jax_compilation_cache_dir", args.cache)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
  jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
  model_fn = model_function(args.model, args.weights, args.method)
  x = jax.device_put(_inputs(args.model, args.batch))
  jax.block_until_ready(jax.jit(lambda v: v + 1)(x))  # JAX's backend, warm
  fn = jax.jit(_transformed(args.transform, model_fn))
  with _xla_parts() as parts, _collector_reset() as collections:
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(x))
    first = time.perf_counter() - t0
  times = []
  while len(times) < STEADY_MAX_CALLS and (
      len(times) < STEADY_CALLS or sum(times) < STEADY_SECONDS):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(x))
    times.append(time.perf_counter() - t0)
  np.save(args.result, np.asarray(out))
  return {"first_s": first, "steady_s": statistics.median(times),
          "gc_full_s": collections.full_s,
          **parts,
          "device": str(jax.devices()[0].device_kind),
          "backend": jax.default_backend()}


class _Timed:
  """Wall time spent in some functions (exclusive of nested calls of them)."""

  def __init__(self):
    self.seconds = 0.
    self.calls = 0  # outermost calls
    self._depth = 0
    self._wrapped: list[tuple[Any, str, Any]] = []

  def wrap(self, owner: Any, name: str) -> None:
    original = getattr(owner, name)

    def timed(*a, **kw):
      self._depth += 1
      t0 = time.perf_counter()
      try:
        return original(*a, **kw)
      finally:
        self._depth -= 1
        if not self._depth:
          self.seconds += time.perf_counter() - t0
          self.calls += 1
    setattr(owner, name, timed)
    self._wrapped.append((owner, name, original))

  def unwrap(self) -> None:
    """Puts back what :meth:`wrap` replaced."""
    while self._wrapped:
      owner, name, original = self._wrapped.pop()
      setattr(owner, name, original)


@contextlib.contextmanager
def _xla_parts() -> Iterator[dict[str, Any]]:
  """Times the JAX stages of what runs inside: lowering, the whole of
  getting an executable (``xla``: the cache's key, read, XLA's compile
  and the cache's write), and of it XLA's compile, the cache's read and
  its write. Yields a dict that on exit has ``<stage>_s`` and
  ``<stage>_calls`` of each; a stage this JAX release names otherwise is
  not timed and not in it."""
  from jax._src import compiler  # pylint: disable=g-import-not-at-top
  from jax._src.interpreters import mlir  # pylint: disable=g-import-not-at-top
  timers = {}
  for key, owner, name in (
      ("lower", mlir, "lower_jaxpr_to_module"),
      ("xla", compiler, "compile_or_get_cached"),
      ("xla_compile", compiler, "backend_compile_and_load"),
      ("cache_read", compiler, "_cache_read"),
      ("cache_write", compiler, "_cache_write")):
    if callable(getattr(owner, name, None)):
      timers[key] = _Timed()
      timers[key].wrap(owner, name)
  parts: dict[str, Any] = {}
  try:
    yield parts
  finally:
    for key, t in timers.items():
      t.unwrap()
      parts[f"{key}_s"], parts[f"{key}_calls"] = t.seconds, t.calls


def _worker_phases(args: argparse.Namespace) -> dict[str, Any]:
  """call_tf's cold first call in parts: JAX's trace (TensorFlow's trace
  and tf2xla, the interpreter's reading of the module and its ops run
  under JAX's trace, the rest of JAX), lowering, XLA compile."""
  import jax  # pylint: disable=g-import-not-at-top
  from jax._src.export import stablehlo_to_jax  # pylint: disable=g-import-not-at-top
  from jax.experimental.jax2tf.call_tf_lib.tf_function import compile as compile_lib  # pylint: disable=g-import-not-at-top
  from benchmarks import timing  # pylint: disable=g-import-not-at-top
  interpreter, tf2xla = _Timed(), _Timed()
  for name in ("read", "parse"):
    interpreter.wrap(stablehlo_to_jax, name)
  interpreter.wrap(stablehlo_to_jax.Program, "__call__")
  tf2xla.wrap(compile_lib, "compile_to_hlo")
  model_fn = model_function(args.model, args.weights, "call_tf")
  x = jax.device_put(_inputs(args.model, args.batch))
  jax.block_until_ready(jax.jit(lambda v: v + 1)(x))
  with _collector_reset() as collections:
    parts = timing.compile_breakdown(
        lambda: jax.jit(_transformed(args.transform, model_fn)), x)
  return {"trace_s": parts.trace, "lower_s": parts.lower,
          "compile_s": parts.compile, "interpreter_s": interpreter.seconds,
          "tf2xla_s": tf2xla.seconds, "gc_full_s": collections.full_s}


def _worker_per_op(args: argparse.Namespace) -> dict[str, Any]:
  """The interpreter's cost per op against JAX's own: the module's ops run
  under a trace (plain, ``vmap``, ``vjp``) by the interpreter, and by JAX
  replaying the jaxpr they make (``core.jaxpr_as_fun``), best of 3."""
  import jax  # pylint: disable=g-import-not-at-top
  from jax._src import core  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from jax.experimental.jax2tf.call_tf_lib.stablehlo import path  # pylint: disable=g-import-not-at-top
  model = build(args.model)
  model.load_weights(args.weights)
  fn = tf.function(lambda x: model(x, training=False), autograph=False,
                   jit_compile=True)
  spec = (tf.TensorSpec((1, *SHAPES[args.model]), tf.float32),)
  program = path.lookup(fn, spec, purpose="benchmark", staged=True).program
  avals = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in program.in_avals]
  closed = jax.make_jaxpr(lambda *a: tuple(program(*a)))(*avals)
  replay = core.jaxpr_as_fun(closed)
  batched = [jax.ShapeDtypeStruct((args.batch, *avals[0].shape),
                                  avals[0].dtype), *avals[1:]]
  kinds = {
      "plain": (lambda f: f, avals),
      "vmap": (lambda f: jax.vmap(f, in_axes=[0] + [None] * (len(avals) - 1)),
               batched),
      "vjp": (lambda f: lambda *a: jax.vjp(f, *a)[1](f(*a)), avals)}
  out: dict[str, Any] = {"ops": len(closed.jaxpr.eqns)}
  for kind, (transform, in_avals) in kinds.items():
    for who, run in (("interpreter", lambda *a: tuple(program(*a))),
                     ("jax", lambda *a: tuple(replay(*a)))):
      best = float("inf")
      for _ in range(3):
        f = (lambda run: lambda *a: run(*a))(run)  # a new function: no cache
        t0 = time.process_time()
        jax.make_jaxpr(transform(f))(*in_avals)
        best = min(best, time.process_time() - t0)
      out[f"{kind}_{who}_s"] = best
  return out


def _worker_env(args: argparse.Namespace) -> dict[str, Any]:
  """The machine's facts, in a worker: a process that touches the device
  holds it (a TPU chip: one process at a time), and the workers need it."""
  del args
  import platform  # pylint: disable=g-import-not-at-top
  import jax  # pylint: disable=g-import-not-at-top
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return {"jax": jax.__version__, "tensorflow": tf.__version__,
          "keras": keras.__version__, "python": platform.python_version(),
          "backend": jax.default_backend(),
          "device": jax.devices()[0].device_kind, "cpus": os.cpu_count(),
          "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


_WORKERS = {"env": _worker_env, "prepare": _worker_prepare,
            "floor": _worker_floor,
            "call": _worker_call, "phases": _worker_phases,
            "per_op": _worker_per_op}


def _run_worker(kind: str, backend: str, extra: Sequence[str],
                timeout: float, module: str = "benchmarks.keras_models"
                ) -> dict[str, Any]:
  """One worker of ``module`` in a fresh process; its JSON, or the error."""
  env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
             PYTHONPATH=os.pathsep.join([str(ROOT),
                                         os.environ.get("PYTHONPATH", "")]))
  with tempfile.NamedTemporaryFile(suffix=".json") as res:
    cmd = [sys.executable, "-m", module, "--worker", kind,
           "--worker-out", res.name, *extra]
    try:
      proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                            timeout=timeout, check=False, cwd=ROOT)
    except subprocess.TimeoutExpired:
      return {"error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
      return {"error": f"exit {proc.returncode}: {proc.stderr[-1500:]}"}
    return json.loads(pathlib.Path(res.name).read_text())


# ------------------------------------------------------------ the driver


def _median(samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
  """One measurement from several processes' own: each number the median
  of theirs (the first process's other fields), with the samples kept. A
  number some samples lack (merged runs: a field recorded since) is the
  median of those that have it.

  A process that failed is left out; if every one failed, the first's
  error is the measurement.
  """
  ok = [s for s in samples if "error" not in s]
  if not ok:
    return samples[0]
  out = {k: v for s in reversed(ok) for k, v in s.items()}
  for k, v in out.items():
    if isinstance(v, (int, float)) and not isinstance(v, bool):
      out[k] = statistics.median(s[k] for s in ok if k in s)
  out["samples"] = ok
  return out


def _measure(out: pathlib.Path, model: str, transform: str, batch: int,
             timeout: float, repeats: int = 1) -> dict[str, Any]:
  """Every measurement of one model and transformation.

  The first calls (and TF's floor) are measured ``repeats`` times, each in
  a fresh process and with fresh caches, the methods taking turns, and
  the median of each is the measurement: on a small shared machine one
  process's first call moves by 20-40% from one run to the next.
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  weights = str(_weights(out, model))
  common = ["--model", model, "--transform", transform, "--batch",
            str(batch), "--weights", weights]
  row: dict[str, Any] = {"model": model, "transform": transform,
                         "batch": batch, "repeats": repeats}
  samples: dict[str, list[dict[str, Any]]] = {}
  results: dict[str, Any] = {}
  for _ in range(repeats):
    samples.setdefault("floor", []).append(
        _run_worker("floor", "tensorflow", common, timeout))
    with tempfile.TemporaryDirectory() as tmp:
      for method, backend in (("native", "jax"), ("call_tf", "tensorflow")):
        cache = os.path.join(tmp, f"cache-{method}")
        result = os.path.join(tmp, f"{method}.npy")
        for run in ("cold", "warm"):
          samples.setdefault(f"{method}_{run}", []).append(_run_worker(
              "call", backend, [*common, "--method", method, "--cache",
                                cache, "--result", result], timeout))
        if os.path.exists(result):
          results[method] = np.load(result)
  row.update({k: _median(v) for k, v in samples.items()})
  row["call_tf_phases"] = _run_worker(
      "phases", "tensorflow", [*common, "--method", "call_tf"], timeout)
  if transform == TRANSFORMS[0]:
    row["per_op"] = _run_worker("per_op", "tensorflow", common, timeout)
  native, fork = results.get("native"), results.get("call_tf")
  if native is not None and fork is not None:
    scale = max(float(np.max(np.abs(native))), 1e-30)
    row["max_rel_diff"] = float(np.max(np.abs(fork - native))) / scale
  return row


def _verdicts(row: dict[str, Any]) -> dict[str, Any]:
  """The ratios and whether each target is met (None where not measured)."""
  def get(key: str, field: str) -> float | None:
    return row.get(key, {}).get(field)
  floor = get("floor", "floor_s")
  trace = get("floor", "tf_trace_s")
  v: dict[str, Any] = {}
  for run, extra, factor in (("cold", floor, COLD_FACTOR),
                             ("warm", trace, WARM_FACTOR)):
    n, c = get(f"native_{run}", "first_s"), get(f"call_tf_{run}", "first_s")
    if n and c and extra is not None:
      v[f"{run}_ratio"] = c / n
      v[f"{run}_bound_s"] = factor * n + extra
      v[f"{run}_met"] = c <= factor * n + extra
  n, c = get("native_cold", "steady_s"), get("call_tf_cold", "steady_s")
  if n and c:
    v["steady_ratio"] = c / n
    v["steady_met"] = c / n <= STEADY_FACTOR
  return v


def _repeats_note(data: dict[str, Any]) -> str:
  """What the first calls and floors are: one process's, or medians."""
  n = {row.get("repeats", 1) for row in data.get("rows", [])}
  if n == {1} or not n:
    return " Each number is one process's."
  return (" Each first call and floor is the median of "
          + " or ".join(str(k) for k in sorted(n)) + " processes (the "
          "methods taking turns, fresh caches each time; every sample is "
          "in the JSON).")


def _transformation(transform: str) -> str:
  """``vmap_grad`` as the table writes it, ``jit(vmap(grad))``."""
  return f"jit({transform.replace('_', '(')}{')' if '_' in transform else ''})"


def _collector_note(data: dict[str, Any]) -> str:
  """What the runs did with Python's collector.

  Its schedule is reset before each timed call; the note names the full
  collections the calls still made (in how many of a measurement's
  processes, the longest), and the rows measured before the reset (a
  merged run: their measurements lack ``gc_full_s``).
  """
  rows = data.get("rows", [])
  made, before = [], []
  for row in rows:
    runs = {k: r for k, r in row.items() if isinstance(r, dict)
            and ("first_s" in r or "floor_s" in r or "trace_s" in r)}
    if runs and not any("gc_full_s" in r for r in runs.values()):
      before.append(f"{row['model']} `{_transformation(row['transform'])}`")
    for k, r in runs.items():
      seconds = [s.get("gc_full_s", 0.) for s in r.get("samples", [r])]
      if max(seconds, default=0.) >= 0.005:
        made.append(f"{row['model']} `{_transformation(row['transform'])}` "
                    f"{k} (in {sum(x >= 0.005 for x in seconds)} of "
                    f"{len(seconds)} processes, up to {max(seconds):.2f} s)")
  if len(before) == len(rows):
    return ""
  which = ("Every" if not before else "Except in the rows of "
           + ", ".join(before) + " (measured before the reset), every")
  return (f" {which} timed first call and floor starts with `gc.collect()`, "
          "whatever the method: a full collection of a process that "
          "imported TensorFlow and built a Keras model takes a tenth of a "
          "second or more, and falls where the process's history puts it. "
          "Full collections the calls made themselves: "
          + ("; ".join(made) if made else "none") + ".")


def _s(x: float | None) -> str:
  return "-" if x is None else f"{x:.2f} s"


_STAGES = ("xla_compile_s", "cache_read_s", "cache_write_s")


def _median_of(samples: Sequence[dict[str, Any]], keys: Sequence[str],
               f: Any) -> float | None:
  """The median of ``f`` over the samples that have every one of ``keys``
  (None if none has)."""
  have = [s for s in samples if all(k in s for k in keys)]
  return statistics.median(f(s) for s in have) if have else None


def _parts_table(data: dict[str, Any]) -> list[str]:
  """The first calls above in parts, both methods: what JAX's stages after
  the trace took in the timed call itself (``_xla_parts``), and the rest.
  Each number is the median over the processes that timed what it needs
  ("-" where none did); empty for a run measured before any did."""
  rows = [(row, method) for row in data.get("rows", [])
          for method in ("native", "call_tf")
          if "xla_s" in row.get(f"{method}_cold", {})]
  if not rows:
    return []
  lines = ["", "The first calls above in parts, timed in the same call "
           "(medians of the processes that timed them, which in a merged "
           "run can be fewer than above): lowering; XLA's compile; the "
           "persistent cache's write (cold) or read (warm); the rest of "
           "getting the executable (the cache's key above all); and the "
           "rest of the call, which is JAX's trace (through call_tf: TF's "
           "trace, tf2xla and the interpreter too), dispatch and the run.",
           "", "| model | transformation | method | cold | of it: the rest "
           "| lowering | XLA compile | cache write | cache key, other | warm "
           "| of it: the rest | lowering | cache read | cache key, other |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
  for row, method in rows:
    cells = []
    for run, own in (("cold", ("xla_compile_s", "cache_write_s")),
                     ("warm", ("cache_read_s",))):
      samples = row.get(f"{method}_{run}", {})
      samples = samples.get("samples", [samples])
      base = ("first_s", "lower_s", "xla_s")
      cells += [
          _s(_median_of(samples, base, lambda s: s["first_s"])),
          _s(_median_of(samples, base,
                        lambda s: s["first_s"] - s["lower_s"] - s["xla_s"])),
          _s(_median_of(samples, base, lambda s: s["lower_s"])),
          *(_s(_median_of(samples, (k,), lambda s, k=k: s[k])) for k in own),
          _s(_median_of(samples, ("xla_s", *_STAGES),
                        lambda s: s["xla_s"] - sum(s[k] for k in _STAGES)))]
    lines.append(f"| {row['model']} | `{_transformation(row['transform'])}` "
                 f"| {method} | " + " | ".join(cells) + " |")
  return lines


def markdown(data: dict[str, Any]) -> str:
  """The table of a run."""
  env = data.get("env", {})
  lines = ["# A real model's first call: native Keras (JAX) and call_tf "
           "(Keras on TensorFlow)", "",
           f"Device: {env.get('device', '?')} (backend "
           f"`{env.get('backend', '?')}`); jax {env.get('jax', '?')}, "
           f"TensorFlow {env.get('tensorflow', '?')}, Keras "
           f"{env.get('keras', '?')}, Python {env.get('python', '?')}, "
           f"{env.get('cpus', '?')} CPUs; {env.get('date', '?')}. Generated "
           "by `python -m benchmarks.keras_models --report DIR`.", "",
           *([env["note"], ""] if env.get("note") else []),
           "Each first call is a fresh process (cold: new caches; warm: a "
           "second process with the first's JAX compilation cache, and "
           "call_tf's beside it). TF's floor: a fresh `tf.function(model, "
           "jit_compile=True)` traced for one example, plus tf2xla (warm: "
           "the trace alone). Targets: cold <= 1.10 x native + floor, warm "
           "<= 1.10 x native warm + TF trace, steady state <= 1.05x."
           + _repeats_note(data) + _collector_note(data), "",
           "| model | transformation | batch | native cold | call_tf cold "
           "| TF floor | target | met | native warm | call_tf warm | TF "
           "trace | target | met | steady call_tf / native | results agree "
           "|", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
           "---|"]
  for row in data.get("rows", []):
    v = _verdicts(row)
    g = lambda k, f: row.get(k, {}).get(f)  # noqa: E731
    met = lambda k: "-" if k not in v else ("yes" if v[k] else "**no**")  # noqa: E731
    agree = row.get("max_rel_diff")
    lines.append(
        f"| {row['model']} | `{_transformation(row['transform'])}` | "
        f"{row['batch']} | "
        f"{_s(g('native_cold', 'first_s'))} | "
        f"{_s(g('call_tf_cold', 'first_s'))} "
        f"({v.get('cold_ratio', 0):.2f}x) | {_s(g('floor', 'floor_s'))} | "
        f"{_s(v.get('cold_bound_s'))} | {met('cold_met')} | "
        f"{_s(g('native_warm', 'first_s'))} | "
        f"{_s(g('call_tf_warm', 'first_s'))} ({v.get('warm_ratio', 0):.2f}x)"
        f" | {_s(g('floor', 'tf_trace_s'))} | {_s(v.get('warm_bound_s'))} | "
        f"{met('warm_met')} | "
        + (f"{v['steady_ratio']:.2f}x" if "steady_ratio" in v else "-")
        + " | " + ("-" if agree is None else f"{agree:.1e}") + " |")
  parts = _parts_table(data)
  lines += parts
  lines += ["", "call_tf's cold first call in parts (a process of its own: "
            "`jax.jit(...).trace`, `.lower()`, `.compile()`). The "
            "interpreter's share: reading the module (`read`, `parse`) and "
            "running its ops under JAX's trace (`Program.__call__`, JAX's "
            "own tracing of the `lax` ops included), part of the trace; "
            "TF's lowering (tf2xla) is too. The parts are without JAX's "
            "persistent compilation cache, which the first calls above "
            "have: a cold first call also writes the cache's entry, with "
            "the weights in it (constants of the program, natively as "
            "through call_tf)"
            + ("; the table above has its time." if parts else "."), "",
            "| model | transformation | trace | of it: tf2xla | of it: the "
            "interpreter | lowering | XLA compile | interpreter < compile |",
            "|---|---|---|---|---|---|---|---|"]
  for row in data.get("rows", []):
    p = row.get("call_tf_phases", {})
    below = ("-" if "interpreter_s" not in p or "compile_s" not in p else
             "yes" if p["interpreter_s"] < p["compile_s"] else "**no**")
    lines.append(f"| {row['model']} | {row['transform']} | "
                 f"{_s(p.get('trace_s'))} | {_s(p.get('tf2xla_s'))} | "
                 f"{_s(p.get('interpreter_s'))} | {_s(p.get('lower_s'))} | "
                 f"{_s(p.get('compile_s'))} | {below} |")
  per_op = [(row["model"], row["per_op"]) for row in data.get("rows", [])
            if row.get("per_op") and "error" not in row["per_op"]]
  if per_op:
    lines += ["", "The interpreter's cost per op: its run of the module's ops "
              "under a trace, over JAX's own replay of the jaxpr they make "
              "(CPU time, best of 3; 1.00x: JAX's own per-op cost):", "",
              "| model | plain | `vmap` | `vjp` |", "|---|---|---|---|"]
    for model, p in per_op:
      cells = [f"{p[f'{k}_interpreter_s'] / p[f'{k}_jax_s']:.2f}x "
               f"({p[f'{k}_interpreter_s'] * 1e3:.0f} ms vs "
               f"{p[f'{k}_jax_s'] * 1e3:.0f} ms)"
               for k in ("plain", "vmap", "vjp")]
      lines.append(f"| {model} | " + " | ".join(cells) + " |")
  errors = [(row["model"], row["transform"], k, r["error"])
            for row in data.get("rows", []) for k, r in row.items()
            if isinstance(r, dict) and "error" in r]
  if errors:
    lines += ["", "Errors:", ""] + [
        f"- {m} {t} {k}: {e.splitlines()[-1][:300]}" for m, t, k, e in errors]
  return "\n".join(lines) + "\n"


_SAMPLED = ("floor", "native_cold", "native_warm", "call_tf_cold",
            "call_tf_warm")


def merge(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
  """Runs of one model and transformation as one row: every sampled
  measurement the median of all their processes, the rest the first
  row's (the newest run, by convention) and the largest difference
  between the methods' results of any.

  Raises:
    ValueError: the rows are of different models, transformations or
      batches.
  """
  first = rows[0]
  key = lambda r: (r["model"], r["transform"], r["batch"])  # noqa: E731
  if others := [key(r) for r in rows if key(r) != key(first)]:
    raise ValueError(f"merge takes runs of {key(first)} alone, not {others}")
  out = dict(first)
  for k in _SAMPLED:
    samples = [s for r in rows if k in r
               for s in r[k].get("samples", [r[k]])]
    if samples:
      out[k] = _median(samples)
  out["repeats"] = sum(r.get("repeats", 1) for r in rows)
  diffs = [r["max_rel_diff"] for r in rows if "max_rel_diff" in r]
  if diffs:
    out["max_rel_diff"] = max(diffs)
  return out


def check_selection(p: argparse.ArgumentParser, models: str,
                    transforms: str) -> None:
  """Exits through ``p.error`` where a comma-separated ``--models`` or
  ``--transforms`` names one this benchmark does not have."""
  for given, known in ((models, MODELS), (transforms, TRANSFORMS)):
    if unknown := [n for n in given.split(",") if n not in known]:
      p.error(f"unknown {', '.join(map(repr, unknown))}; one of {known}")


def main(argv: Sequence[str] | None = None) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--out", type=pathlib.Path)
  p.add_argument("--report", type=pathlib.Path)
  p.add_argument("--models", default=",".join(MODELS))
  p.add_argument("--transforms", default=",".join(TRANSFORMS))
  p.add_argument("--batch", type=int, default=4)
  p.add_argument("--timeout", type=float, default=1800.)
  p.add_argument("--repeats", type=int, default=1,
                 help="fresh processes per first call and floor (median)")
  p.add_argument("--merge", type=pathlib.Path, nargs="+", metavar="DIR",
                 help="runs to merge into --out, the newest first: the rows "
                 "of a model and transformation as one (medians of all "
                 "their processes)")
  # A worker's own arguments.
  p.add_argument("--worker", choices=sorted(_WORKERS))
  p.add_argument("--worker-out")
  for name in ("model", "transform", "weights", "method", "cache", "result"):
    p.add_argument(f"--{name}")
  args = p.parse_args(argv)
  if args.worker:
    args.batch = int(args.batch)
    pathlib.Path(args.worker_out).write_text(json.dumps(
        _WORKERS[args.worker](args)))
    return 0
  if args.merge:
    if args.out is None:
      p.error("--merge DIR... writes --out DIR")
    runs = [json.loads((d / "keras_models.json").read_text())
            for d in args.merge]
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in runs:
      for row in run.get("rows", []):
        rows.setdefault((row["model"], row["transform"]), []).append(row)
    def order(k: tuple[str, str]) -> tuple[int, int]:
      return (MODELS.index(k[0]) if k[0] in MODELS else len(MODELS),
              TRANSFORMS.index(k[1]) if k[1] in TRANSFORMS else 0)
    try:
      data = {"env": runs[0]["env"],
              "merged": [run.get("env", {}) for run in runs],
              "rows": [merge(rows[k]) for k in sorted(rows, key=order)]}
    except ValueError as e:
      p.error(str(e))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "keras_models.json").write_text(json.dumps(data, indent=1))
    args.report = args.out
  if args.report:
    data = json.loads((args.report / "keras_models.json").read_text())
    (args.report / "keras_models.md").write_text(markdown(data))
    return 0
  if args.out is None:
    p.error("--out DIR (or --report DIR) is required")
  check_selection(p, args.models, args.transforms)
  args.out.mkdir(parents=True, exist_ok=True)
  data: dict[str, Any] = {"env": _run_worker("env", "tensorflow", [],
                                             args.timeout), "rows": []}
  failed = False  # a model not prepared: the exit status says so
  for model in args.models.split(","):
    if not _weights(args.out, model).exists():
      prepared = _run_worker("prepare", "tensorflow", [
          "--model", model, "--weights", str(_weights(args.out, model))],
                             args.timeout)
      if "error" in prepared:
        print(f"{model}: {prepared['error']}", file=sys.stderr)
        failed = True
        continue
    for transform in args.transforms.split(","):
      row = _measure(args.out, model, transform, args.batch, args.timeout,
                     args.repeats)
      data["rows"].append(row)
      print(json.dumps(row), flush=True)
      (args.out / "keras_models.json").write_text(json.dumps(data, indent=1))
      (args.out / "keras_models.md").write_text(markdown(data))
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
