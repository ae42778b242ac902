"""call_tf on an accelerator, against native JAX on the same device.

Run where JAX sees the accelerator (a TPU, a GPU) with the fork's wheel and
the TensorFlow that installs beside JAX there (``tensorflow-cpu``)::

    python3 benchmarks/accelerator.py --out DIR

Each section runs in a process of its own (one program at a time may hold a
TPU chip; an abort ends only its section), within what is left of
``--budget``, and writes ``DIR/<section>.json`` as it goes (a section cut
short keeps what it measured, marked ``partial``); then ``DIR/accelerator.md``
has the tables (``python3 -m benchmarks.accelerator --report DIR`` writes
them again). The committed run is ``benchmarks/results/accelerator/``.

Sections:

* ``correctness``: the value, ``vmap``, ``jacrev``, ``jacfwd``, ``hessian``
  and per-example gradients of TF functions through ``call_tf``, eager and
  under ``jit``, the plain call and ``vmap_method="sequential"`` included,
  and of the round trip ``call_tf(jax2tf.convert(f))`` with ``convert``'s
  defaults (a module serialized for the device's platform alone),
  against the same functions written in ``jnp`` on the same device, at
  every ``jax_default_matmul_precision``; and each one's error against a
  float64 reference computed on the host, next to native JAX's.
* ``steady``: time per call of ``jit(vmap(f))``, ``jit(vmap(jacrev(f)))``,
  ``jit(vmap(jacfwd(f)))`` and ``jit(vmap(hessian(f)))`` at N = 100, 10^3,
  10^4: native JAX, ``call_tf`` (the default) and
  ``vmap_method="sequential"``, interleaved by round.
* ``first``: the first call of a new ``jax.jit`` function (trace, compile,
  run), native against ``call_tf``, median of 3, in one warm process.
* ``opmatrix``: the op matrix's families that matter most there (linear
  algebra, convolutions, control flow, Keras layers) with every
  transformation, ``jax_default_matmul_precision="highest"``, against
  TensorFlow-only references (``tests/calltf/op_matrix_report.py``).
* ``conformance``: the StableHLO interpreter's conformance cases
  (``tests/stablehlo/conformance.py``) against the accelerator's XLA, for
  the element types ``--conformance-types`` names.
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
import signal
import statistics
import subprocess
import sys
import time
import traceback
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
SECTIONS = ("env", "correctness", "steady", "first", "opmatrix",
            "conformance")
SIZES = (100, 1000, 10000)
PRECISIONS = (None, "bfloat16", "tensorfloat32", "float32")
# The op matrix's groups run on the accelerator.
OPMATRIX_GROUPS = ("linalg", "conv", "control flow", "keras")
CONFORMANCE_TYPES = ("f32", "bf16", "f16", "i32", "i8", "ui8", "i1", "c64")


# ------------------------------------------------------------ the functions


def _functions() -> dict[str, tuple[Callable, Callable, tuple[int, ...], bool]]:
  """name -> (TF function, jnp function, example shape, scalar result)."""
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from jax import lax  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from benchmarks import workloads as w  # pylint: disable=g-import-not-at-top

  rng = np.random.default_rng(7)
  kernel = (rng.standard_normal((3, 3, 2, 4)) / 3).astype(np.float32)

  def conv_tf(x):  # (8, 8, 2) -> R: a convolution, relu, a weighted sum
    y = tf.nn.conv2d(x[None], kernel, 1, "SAME")[0]
    return tf.reduce_sum(tf.nn.softplus(y) * tf.cos(y))

  def conv_jnp(x):
    y = lax.conv_general_dilated(x[None], jnp.asarray(kernel, x.dtype), (1, 1),
                                 "SAME",
                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))[0]
    return jnp.sum(jnp.logaddexp(y, 0.) * jnp.cos(y))

  return {
      "mlp": (w.mlp_tf, w.mlp_jnp, (w.MLP_IN,), True),
      "energy": (w.energy_tf, w.energy_jnp, (w.N_ATOMS, 3), False),
      "lj8": (w.lj_tf, w.lj_jnp, (w.LJ8_ATOMS, 3), True),
      "conv": (conv_tf, conv_jnp, (8, 8, 2), True),
  }


def _inputs(name: str, shape: tuple[int, ...], n: int | None, seed: int = 0):
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  full = shape if n is None else (n, *shape)
  if name in ("energy", "lj8"):
    atoms = shape[0]
    side = int(np.ceil(atoms ** (1 / 3) - 1e-9))
    grid = np.array([[i, j, k] for i in range(side) for j in range(side)
                     for k in range(side)][:atoms], np.float32)
    x = 1.2 * grid + 0.1 * rng.standard_normal(full)
    return x.astype(np.float32)
  return rng.standard_normal(full).astype(np.float32)


def _transformed(kind: str, f: Callable, scalar: bool) -> Callable:
  """One of the rows' transformations of a function of one example."""
  import jax  # pylint: disable=g-import-not-at-top
  grad = jax.grad if scalar else jax.jacrev
  return {
      "value": f,
      "vmap": jax.vmap(f),
      "jacrev": jax.jacrev(f),
      "jacfwd": jax.jacfwd(f),
      "hessian": jax.hessian(f),
      "vmap(grad)": jax.vmap(grad(f)),
      "vmap(jacrev)": jax.vmap(jax.jacrev(f)),
      "vmap(jacfwd)": jax.vmap(jax.jacfwd(f)),
      "vmap(hessian)": jax.vmap(jax.hessian(f)),
  }[kind]


def _batched(kind: str) -> bool:
  return kind.startswith("vmap")


def _block(x):
  import jax  # pylint: disable=g-import-not-at-top
  return jax.block_until_ready(x)


def _rel_err(a, b) -> float:
  import numpy as np  # pylint: disable=g-import-not-at-top
  a = np.asarray(a, np.float64)
  b = np.asarray(b, np.float64)
  scale = max(float(np.max(np.abs(b))) if b.size else 0., 1e-30)
  return float(np.max(np.abs(a - b))) / scale if a.size else 0.


# ----------------------------------------------------------------- sections


def section_env() -> dict[str, Any]:
  import jax  # pylint: disable=g-import-not-at-top
  import jaxlib  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import platform
  out: dict[str, Any] = {
      "jax": jax.__version__, "jax_file": jax.__file__,
      "jaxlib": jaxlib.__version__, "numpy": np.__version__,
      "python": platform.python_version(), "machine": platform.machine(),
      "backend": jax.default_backend(),
      "devices": [str(d) for d in jax.devices()],
      "device_kind": jax.devices()[0].device_kind,
      "cpus": os.cpu_count(),
      "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
  }
  try:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    out["tensorflow"] = tf.__version__
    out["tf_devices"] = [d.device_type for d in
                         tf.config.list_physical_devices()]
  except Exception as e:  # pylint: disable=broad-except
    out["tensorflow"] = f"not importable: {type(e).__name__}: {e}"
  return out


# The functions with dots or convolutions.
_WITH_DOTS = ("mlp", "conv")
_CORRECTNESS_KINDS = ("value", "vmap", "jacrev", "jacfwd", "hessian",
                      "vmap(grad)")


def _fork(method: str, tf_fn: Callable, jnp_fn: Callable) -> Callable:
  """The function through call_tf: the TF function (the default method or
  ``"sequential"``), or the round trip ``call_tf(jax2tf.convert(f))`` of
  the jnp function, serialized as ``convert``'s defaults say (for the
  device's platform alone)."""
  from jax.experimental import jax2tf  # pylint: disable=g-import-not-at-top
  if method == "round trip":
    return jax2tf.call_tf(jax2tf.convert(jnp_fn))
  return jax2tf.call_tf(tf_fn, vmap_method=None if method == "default"
                        else "sequential")


def section_correctness(save: Callable[[dict[str, Any]], None],
                        functions: Sequence[str] | None = None
                        ) -> dict[str, Any]:
  """Every transformation against jnp on the same device, per precision."""
  import jax  # pylint: disable=g-import-not-at-top
  from jax._src import config  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  cpu = jax.devices("cpu")[0]
  rows = []
  for name, (tf_fn, jnp_fn, shape, scalar) in _functions().items():
    if functions is not None and name not in functions:
      continue
    x1 = _inputs(name, shape, None)
    xs = _inputs(name, shape, 4, seed=1)
    for kind in _CORRECTNESS_KINDS:
      x = xs if _batched(kind) else x1
      # The reference: the jnp function in float64 on the host.
      with jax.default_device(cpu), config.enable_x64(True):
        ref = np.asarray(_transformed(kind, jnp_fn, scalar)(
            np.asarray(x, np.float64)))
      for method in ("default", "sequential", "round trip"):
        if method == "sequential" and not _batched(kind):
          continue
        # Every setting where the function has dots or convolutions, which
        # the setting governs; the default and float32 elsewhere (and for
        # the round trip, whose module JAX wrote at the default).
        precisions = (PRECISIONS if name in _WITH_DOTS and method == "default"
                      else (None, "float32"))
        for precision in precisions:
          for mode in ("jit", "eager"):
            row = {"function": name, "transform": kind, "method": method,
                   "precision": precision or "default", "mode": mode}
            try:
              with jax.default_matmul_precision(precision):
                fork = _fork(method, tf_fn, jnp_fn)
                g = _transformed(kind, fork, scalar)
                h = _transformed(kind, jnp_fn, scalar)
                if mode == "jit":
                  g, h = jax.jit(g), jax.jit(h)
                xd = jax.device_put(x)
                got = _block(g(xd))
                want = _block(h(xd))
              row["platform"] = sorted(
                  {d.platform for d in got.devices()})[0]
              row["err_vs_native"] = _rel_err(got, want)
              row["err_vs_f64"] = _rel_err(got, ref)
              row["native_err_vs_f64"] = _rel_err(want, ref)
              row["identical"] = bool(np.array_equal(np.asarray(got),
                                                     np.asarray(want)))
            except Exception as e:  # pylint: disable=broad-except
              row["error"] = f"{type(e).__name__}: {str(e)[:400]}"
            rows.append(row)
            print(json.dumps(row), flush=True)
        save({"rows": rows})
  return {"rows": rows}


def _time_call(fn: Callable, x, min_reps: int = 3,
               budget_s: float = 0.6) -> dict[str, float]:
  """First call (trace, compile, run) and the median of repeated calls."""
  start = time.perf_counter()
  _block(fn(x))
  first = time.perf_counter() - start
  times = []
  while len(times) < min_reps or (sum(times) < budget_s and len(times) < 50):
    start = time.perf_counter()
    _block(fn(x))
    times.append(time.perf_counter() - start)
  return {"first_s": first, "median_s": statistics.median(times),
          "reps": len(times)}


_STEADY = (("mlp", "vmap"), ("mlp", "vmap(grad)"), ("energy", "vmap"),
           ("energy", "vmap(jacrev)"), ("energy", "vmap(jacfwd)"),
           ("energy", "vmap(hessian)"), ("lj8", "vmap(hessian)"))


def section_steady(save: Callable[[dict[str, Any]], None],
                   sizes: Sequence[int] = SIZES) -> dict[str, Any]:
  """Time per call under jit: native, call_tf, vmap_method="sequential"."""
  import jax  # pylint: disable=g-import-not-at-top
  from jax.experimental.jax2tf import call_tf  # pylint: disable=g-import-not-at-top
  fns = _functions()
  rows = []
  for name, kind in _STEADY:
    tf_fn, jnp_fn, shape, scalar = fns[name]
    for n in sizes:
      x = jax.device_put(_inputs(name, shape, n))
      row: dict[str, Any] = {"function": name, "transform": kind, "n": n}
      for method, f in (("native", jnp_fn), ("call_tf", call_tf(tf_fn)),
                        ("sequential",
                         call_tf(tf_fn, vmap_method="sequential"))):
        try:
          row[method] = _time_call(jax.jit(_transformed(kind, f, scalar)), x)
        except Exception as e:  # pylint: disable=broad-except
          row[method] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
      print(json.dumps(row), flush=True)
      rows.append(row)
      save({"rows": rows})
  return {"rows": rows}


_FIRST = (("mlp", "vmap", 100), ("energy", "vmap", 100),
          ("energy", "vmap(jacrev)", 100), ("lj8", "jacrev", None),
          ("lj8", "jacfwd", None), ("lj8", "hessian", None),
          ("lj8", "vmap(hessian)", 100))


def section_first(save: Callable[[dict[str, Any]], None],
                  repeats: int = 3) -> dict[str, Any]:
  """The first call of new jit functions, native and call_tf, interleaved."""
  import jax  # pylint: disable=g-import-not-at-top
  from jax.experimental.jax2tf import call_tf  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  fns = _functions()
  # Warm the process: imports, the backend, TF's and the interpreter's own
  # first use, with functions the rows do not use.
  warm = call_tf(lambda x: tf.sin(x) * 2.)
  _block(jax.jit(jax.vmap(jax.grad(lambda x: warm(x).sum())))(
      jax.numpy.ones((3, 5))))
  rows = []
  for name, kind, n in _FIRST:
    tf_fn, jnp_fn, shape, scalar = fns[name]
    x = jax.device_put(_inputs(name, shape, n))
    times: dict[str, list[float]] = {"native": [], "call_tf": []}
    for _ in range(repeats):
      for method in times:
        # A new function each time: new traces, new compilations (TF's
        # too), as a new script's first call.
        if method == "native":
          f = lambda v, g=jnp_fn: g(v)
        else:
          f = call_tf(lambda v, g=tf_fn: g(v))
        fn = jax.jit(_transformed(kind, f, scalar))
        start = time.perf_counter()
        _block(fn(x))
        times[method].append(time.perf_counter() - start)
    row = {"function": name, "transform": kind, "n": n,
           **{m: statistics.median(t) for m, t in times.items()},
           "samples": times}
    row["ratio"] = row["call_tf"] / row["native"]
    print(json.dumps(row), flush=True)
    rows.append(row)
    save({"rows": rows})
  return {"rows": rows}


def section_opmatrix(save: Callable[[dict[str, Any]], None],
                     timeout: float, families: Sequence[str] | None = None
                     ) -> dict[str, Any]:
  """The op matrix's families of OPMATRIX_GROUPS, on the accelerator.

  Its first-order columns under ``jit`` and ``jvp`` (the matrix's quick
  run), a few families per worker process, saved after each.
  """
  sys.path.insert(0, str(ROOT))
  from tests.calltf import op_matrix_cases as cases  # pylint: disable=g-import-not-at-top
  from tests.calltf import op_matrix_report as report  # pylint: disable=g-import-not-at-top
  names = [f.name for f in cases.FAMILIES
           if (f.name in families if families is not None
               else f.group in OPMATRIX_GROUPS and not f.requires)]
  os.environ["JAX_FORK_OP_MATRIX_PLATFORMS"] = ""  # the default backend
  os.environ["JAX_FORK_OP_MATRIX_QUICK"] = "1"
  os.environ["JAX_DEFAULT_MATMUL_PRECISION"] = "highest"
  start = time.perf_counter()
  results: dict[str, dict] = {}
  for i in range(0, len(names), 7):
    chunk = set(names[i:i + 7])
    ids = [c for c in cases.all_case_ids() if c.split(":")[0] in chunk]
    results.update(report.run_matrix(ids, workers=1, timeout=timeout,
                                     log=lambda s: print(s, flush=True)))
    save({"seconds": time.perf_counter() - start,
          "counts": report.counts(results), "results": results})
  return {"seconds": time.perf_counter() - start,
          "counts": report.counts(results), "results": results}


def section_conformance(save: Callable[[dict[str, Any]], None],
                        types: Sequence[str]) -> dict[str, Any]:
  """The conformance cases of ``types`` against the accelerator's XLA."""
  sys.path.insert(0, str(ROOT))
  import dataclasses  # pylint: disable=g-import-not-at-top
  from tests.stablehlo import conformance  # pylint: disable=g-import-not-at-top
  from tests.stablehlo import spec_cases  # pylint: disable=g-import-not-at-top
  start = time.perf_counter()
  outcomes: dict[str, Any] = {}
  counts: dict[str, int] = {}
  done: list[str] = []
  for ty in types:  # a type at a time, saved after each
    names = [c.name for c in spec_cases.cases(None, [ty])]
    for o in conformance.run(names, workers=1).values():
      outcomes[o.name] = dataclasses.asdict(o)
      counts[o.status] = counts.get(o.status, 0) + 1
    done.append(ty)
    save({"seconds": time.perf_counter() - start, "types": done,
          "counts": counts, "outcomes": list(outcomes.values())})
  return {"seconds": time.perf_counter() - start, "types": done,
          "counts": counts, "outcomes": list(outcomes.values())}


# ------------------------------------------------------------------- driver


def _run_section(name: str, args: argparse.Namespace,
                 save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
  if name == "env":
    return section_env()
  if name == "correctness":
    return section_correctness(save, args.functions)
  if name == "steady":
    return section_steady(save, args.sizes)
  if name == "first":
    return section_first(save)
  if name == "opmatrix":
    return section_opmatrix(save, args.case_timeout, args.families)
  if name == "conformance":
    return section_conformance(save, args.conformance_types)
  raise ValueError(f"unknown section {name!r}; known: {SECTIONS}")


def _child(name: str, args: argparse.Namespace) -> int:
  """A section in this process: its JSON into ``args.out``, as it goes."""
  path = pathlib.Path(args.out) / f"{name}.json"

  def save(data: dict[str, Any], status: str = "partial") -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"section": name, "status": status, **data},
                              indent=1) + "\n")
    tmp.replace(path)
  try:
    save(_run_section(name, args, save), "ok")
    return 0
  except Exception:  # pylint: disable=broad-except
    previous = json.loads(path.read_text()) if path.exists() else {}
    previous.pop("status", None)
    previous.pop("section", None)
    save({**previous, "error": traceback.format_exc()[-3000:]}, "error")
    return 1


def _orchestrate(args: argparse.Namespace) -> int:
  """Each section in a process of its own, within its time."""
  out = pathlib.Path(args.out)
  out.mkdir(parents=True, exist_ok=True)
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join(
      p for p in [env.get("PYTHONPATH", ""), str(ROOT)] if p)
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  env.setdefault("PYTHONUNBUFFERED", "1")
  deadline = time.monotonic() + args.budget
  for name in args.sections:
    left = deadline - time.monotonic()
    if left < 20:
      print(f"[accelerator] {name}: skipped, the budget is spent", flush=True)
      continue
    start = time.monotonic()
    print(f"[accelerator] {name} (at most {left:.0f} s)", flush=True)
    cmd = [sys.executable, "-m", "benchmarks.accelerator", "--child", name,
           "--out", str(out), "--sizes", *map(str, args.sizes),
           "--case-timeout", str(args.case_timeout),
           "--conformance-types", *args.conformance_types,
           *(["--functions", *args.functions] if args.functions else []),
           *(["--families", *args.families] if args.families else [])]
    # A session of its own: at the end of its time, the section's workers
    # (op matrix, conformance) go with it and free the device.
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True)
    try:
      status = proc.wait(timeout=left)
    except subprocess.TimeoutExpired:
      os.killpg(proc.pid, signal.SIGKILL)
      proc.wait()
      status = "timeout"
    print(f"[accelerator] {name}: {status} in "
          f"{time.monotonic() - start:.0f} s", flush=True)
    if not (out / f"{name}.json").exists():
      (out / f"{name}.json").write_text(json.dumps(
          {"section": name, "status": f"ended: {status}"}) + "\n")
  write_report(out)
  return 0


def _load(out: pathlib.Path) -> dict[str, Any]:
  data = {}
  for name in SECTIONS:
    path = out / f"{name}.json"
    if path.exists():
      data[name] = json.loads(path.read_text())
  return data


def _ms(seconds: float | None) -> str:
  if seconds is None:
    return "-"
  return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def markdown(data: dict[str, Any]) -> str:
  """The tables of a run."""
  lines = ["# call_tf on an accelerator", ""]
  env = data.get("env", {})
  lines += [f"Device: {env.get('device_kind', '?')} "
            f"({', '.join(env.get('devices', [])[:1])}), backend "
            f"`{env.get('backend', '?')}`; jax {env.get('jax', '?')}, jaxlib "
            f"{env.get('jaxlib', '?')}, TensorFlow "
            f"{env.get('tensorflow', '?')} (devices "
            f"{', '.join(env.get('tf_devices', []))}), Python "
            f"{env.get('python', '?')}, {env.get('cpus', '?')} CPUs; "
            f"{env.get('date', '?')}. Generated by "
            "`python3 -m benchmarks.accelerator --report DIR`.", ""]
  corr = data.get("correctness", {})
  if corr.get("rows"):
    rows = corr["rows"]
    errors = [r for r in rows if "error" in r]
    lines += ["## Right on the device", "",
              f"{len(rows)} checks, {len(errors)} errors. Each cell: the "
              "largest relative error of `call_tf` against the same "
              "function in `jnp` on the same device at the same "
              "`jax_default_matmul_precision` (`=` bit-identical), then "
              "`call_tf`'s and native JAX's errors against a float64 "
              "reference on the host. Eager and `jit` alike; "
              "`sequential` is `vmap_method=\"sequential\"`.", ""]
    measured = [r for r in rows if "error" not in r]
    worse = [r for r in measured
             if r["err_vs_f64"] > 2 * r["native_err_vs_f64"] + 1e-6]
    lines += [f"`call_tf` is as accurate as native JAX (its error against "
              "float64 at most twice native's, plus 1e-6) in "
              f"{len(measured) - len(worse)} of {len(measured)} checks"
              + (": not in " + ", ".join(
                  f"{r['function']} {r['transform']} {r['method']} "
                  f"{r['mode']} {r['precision']}" for r in worse)
                 if worse else "") + ".", ""]
    precisions = [p or "default" for p in PRECISIONS]
    lines += ["| function | transformation | method | mode | "
              + " | ".join(precisions) + " |",
              "|---|---|---|---|" + "---|" * len(precisions)]
    keyed: dict[tuple, dict[str, dict]] = {}
    for r in rows:
      key = (r["function"], r["transform"], r["method"], r["mode"])
      keyed.setdefault(key, {})[r["precision"]] = r
    for key, by_p in keyed.items():
      cells = []
      for p in precisions:
        r = by_p.get(p)
        if r is None:
          cells.append("-")
        elif "error" in r:
          cells.append("error: " + r["error"][:80].replace("|", "/"))
        else:
          cells.append(("=" if r["identical"] else
                        f"{r['err_vs_native']:.1e}")
                       + f"; {r['err_vs_f64']:.1e} vs "
                       f"{r['native_err_vs_f64']:.1e}")
      lines.append("| " + " | ".join(key) + " | " + " | ".join(cells) + " |")
    lines.append("")
  steady = data.get("steady", {})
  if steady.get("rows"):
    lines += ["## Steady state under `jit`", "",
              "Median time per call (batch of N), and `call_tf` over native "
              "JAX and `vmap_method=\"sequential\"` over `call_tf`.", "",
              "| function | transformation | N | native | call_tf | "
              "sequential | call_tf / native | sequential / call_tf |",
              "|---|---|---|---|---|---|---|---|"]
    for r in steady["rows"]:
      t = {m: r.get(m, {}).get("median_s") for m in
           ("native", "call_tf", "sequential")}
      ratio = (f"{t['call_tf'] / t['native']:.2f}x"
               if t["call_tf"] and t["native"] else "-")
      seq = (f"{t['sequential'] / t['call_tf']:.1f}x"
             if t["sequential"] and t["call_tf"] else "-")
      errs = [f"{m}: {r[m]['error'][:60]}" for m in
              ("native", "call_tf", "sequential")
              if "error" in r.get(m, {})]
      lines.append(f"| {r['function']} | {r['transform']} | {r['n']} | "
                   f"{_ms(t['native'])} | {_ms(t['call_tf'])} | "
                   f"{_ms(t['sequential'])} | {ratio} | {seq} |"
                   + (" " + "; ".join(errs) if errs else ""))
    lines.append("")
  first = data.get("first", {})
  if first.get("rows"):
    lines += ["## First call under `jit`", "",
              "A new `jax.jit` function's trace, compilation and run, in a "
              "warm process (median of 3, interleaved).", "",
              "| function | transformation | N | native | call_tf | ratio |",
              "|---|---|---|---|---|---|"]
    for r in first["rows"]:
      lines.append(f"| {r['function']} | {r['transform']} | "
                   f"{r['n'] or 1} | {_ms(r['native'])} | "
                   f"{_ms(r['call_tf'])} | {r['ratio']:.2f}x |")
    lines.append("")
  opm = data.get("opmatrix", {})
  if opm.get("results"):
    lines += ["## The op matrix's families on the device", "",
              f"{json.dumps(opm['counts'])} in {opm['seconds']:.0f} s "
              "(`jax_default_matmul_precision=\"highest\"`, TF-only "
              "references on the host).", ""]
    bad = [(cid, r) for cid, r in opm["results"].items()
           if r.get("outcome") not in ("ok", "skip", "refused")]
    for cid, r in bad:
      lines.append(f"- `{cid}`: {r.get('outcome')}: "
                   f"{(r.get('mismatch') or r.get('reason') or '')[:200]}")
    lines.append("")
  conf = data.get("conformance", {})
  if conf.get("outcomes"):
    lines += ["## The interpreter's conformance cases against this XLA", "",
              f"Types {', '.join(conf['types'])}: "
              f"{json.dumps(conf['counts'])} in {conf['seconds']:.0f} s.", ""]
    for o in conf["outcomes"]:
      if o["status"] not in ("exact", "close", "refused"):
        lines.append(f"- `{o['name']}`: {o['status']}: {o['reason'][:200]}")
    lines.append("")
  for name in SECTIONS:
    status = data.get(name, {}).get("status")
    if status not in (None, "ok"):
      lines.append(f"Section `{name}`: {status}.")
  return "\n".join(lines).rstrip() + "\n"


def write_report(out: pathlib.Path) -> None:
  (out / "accelerator.md").write_text(markdown(_load(out)))


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"
                                           / "accelerator"))
  parser.add_argument("--sections", nargs="*", default=list(SECTIONS),
                      choices=SECTIONS)
  parser.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
  parser.add_argument("--budget", type=float, default=540.,
                      help="seconds for all sections together")
  parser.add_argument("--case-timeout", type=float, default=300.)
  parser.add_argument("--conformance-types", nargs="*",
                      default=list(CONFORMANCE_TYPES))
  parser.add_argument("--functions", nargs="*", default=None,
                      help="the correctness section's functions (default "
                           "all)")
  parser.add_argument("--families", nargs="*", default=None,
                      help="the op matrix's families (default: those of "
                           f"the groups {', '.join(OPMATRIX_GROUPS)})")
  parser.add_argument("--child", choices=SECTIONS, help=argparse.SUPPRESS)
  parser.add_argument("--report", metavar="DIR",
                      help="only write DIR's accelerator.md again")
  args = parser.parse_args(argv)
  if args.report:
    write_report(pathlib.Path(args.report))
    return 0
  if args.child:
    return _child(args.child, args)
  return _orchestrate(args)


if __name__ == "__main__":
  sys.path.insert(0, str(ROOT))
  sys.exit(main())
