"""``Exported.call`` batched three ways, at sizes where work dominates launch.

For the design proposal's speed tables: the steady-state time of one
``jax.jit`` call over a whole batch of N examples of

* **native**: the function written in ``jnp``, transformed by JAX;
* **interpreter**: ``Exported.call`` of its deserialized artifact
  (``vjp_order=2``), batched by the StableHLO interpreter (this package's
  batching rule of ``call_exported_p``), forward mode from the serialized
  VJPs;
* **loop rule**: the same ``Exported.call``, batched by the rule of the pull
  request for jax-ml/jax#28327 (a ``lax.map`` of calls, one per element),
  registered in place of the interpreter's for the run. Only what that rule
  makes computable is measured: ``vmap``, ``vmap(grad)`` and the Hessian as
  ``jacrev(jacrev)``; forward mode (``jacfwd``) has no loop column, as
  ``Exported.call`` has no forward mode without the interpreter.

Every transformation is the same expression for all three (the Hessian is
``jacrev(jacrev(f))`` for each), and every result is checked against
native's, all at ``jax_default_matmul_precision="highest"`` (``--precision``).
The three are timed in turn, round after round, so that a change of the
machine's load falls on all three. Median of ``--repeats`` calls, after a warm-up call that
compiles; times in milliseconds.

It also measures the question of derivatives the proposal raises: where a
function's ``custom_jvp`` rule or ``stop_gradient`` was inlined into the
module, JAX's derivative of the interpreted module differs from JAX's
derivative of the function, and forward mode from the serialized VJP
(what the implementation does) does not.

Run from the repository root with a Python that has this repository's JAX
installed (the dev venv, or the wheel on a TPU machine)::

  python benchmarks/exported_call.py --out benchmarks/results/exported_call
  python benchmarks/exported_call.py --quick --out /some/dir   # a smoke run

It writes ``<out>/<platform>.json`` (``cpu.json``, ``tpu.json``); the
proposal's tables are rendered from those files by
``build/forklib/upstreaming/jep_numbers.py``.
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
import datetime
import json
import os
import pathlib
import platform as platform_lib
import statistics
import subprocess
import time
from typing import Any, Callable

import numpy as np

import jax
from jax import export
from jax import lax
import jax.numpy as jnp
from jax._src import util
from jax._src.export import _export
from jax._src.interpreters import batching

SCHEMA = 1

# workload -> transformation -> batch sizes, by platform kind. The sizes
# are where a call's work dominates its launch on the platform.
SIZES: dict[str, dict[str, dict[str, list[int]]]] = {
    "accelerator": {
        "mlp": {"vmap": [10_000, 100_000], "vmap_grad": [10_000, 100_000]},
        # Second derivatives at N = 10^4 would hold 96 x 32 x 32 x 3 floats
        # per example at once (12 GB): 3,000 fits a 16 GB chip.
        "lj32": {"vmap": [10_000, 100_000], "vmap_grad": [10_000, 100_000],
                 "vmap_jacfwd": [1_000, 3_000],
                 "vmap_hessian": [1_000, 3_000]},
        "matrix": {"vmap": [1_000, 10_000], "vmap_grad": [1_000, 10_000]},
    },
    "cpu": {
        "mlp": {"vmap": [10_000, 100_000], "vmap_grad": [10_000]},
        "lj32": {"vmap": [10_000], "vmap_grad": [10_000],
                 "vmap_jacfwd": [1_000], "vmap_hessian": [1_000]},
        "matrix": {"vmap": [1_000], "vmap_grad": [1_000]},
    },
    "quick": {
        "mlp": {"vmap": [100], "vmap_grad": [100]},
        "lj32": {"vmap": [100], "vmap_grad": [100], "vmap_jacfwd": [10],
                 "vmap_hessian": [10]},
        "matrix": {"vmap": [10], "vmap_grad": [10]},
    },
}

LABELS = {
    "mlp": "MLP R^256->R (1,024 tanh units)",
    "lj32": "Lennard-Jones energy, 32 atoms, R^96->R",
    "matrix": "matrix layer R^(128x128)->R",
}
TRANSFORMS = {
    "vmap": "`vmap`",
    "vmap_grad": "`vmap(grad)`",
    "vmap_jacfwd": "`vmap(jacfwd)`",
    "vmap_hessian": "`vmap(jacrev(jacrev))`",
}


def _workloads() -> dict[str, tuple[Callable[..., Any], tuple[int, ...]]]:
  """name -> (a function of one example, the example's shape)."""
  rng = np.random.default_rng(0)
  w1 = jnp.asarray(rng.normal(size=(256, 1024)) / 16., jnp.float32)
  b1 = jnp.asarray(rng.normal(size=(1024,)) / 10., jnp.float32)
  w2 = jnp.asarray(rng.normal(size=(1024,)) / 32., jnp.float32)
  wa = jnp.asarray(rng.normal(size=(128, 128)) / 12., jnp.float32)
  wb = jnp.asarray(rng.normal(size=(128, 128)) / 12., jnp.float32)

  def mlp(x):
    return jnp.tanh(x @ w1 + b1) @ w2

  def lj32(x):
    pos = x.reshape(32, 3)
    d = pos[:, None, :] - pos[None, :, :]
    r2 = jnp.sum(d * d, axis=-1) + jnp.eye(32, dtype=x.dtype)
    inv6 = (1. / r2) ** 3
    pair = 4. * (inv6 * inv6 - inv6) * (1. - jnp.eye(32, dtype=x.dtype))
    return 0.5 * jnp.sum(pair)

  def matrix(x):
    return jnp.sum(jnp.tanh(x @ wa) @ wb) / 128.

  return {"mlp": (mlp, (256,)), "lj32": (lj32, (96,)),
          "matrix": (matrix, (128, 128))}


def _examples(name: str, shape: tuple[int, ...], n: int) -> np.ndarray:
  rng = np.random.default_rng(1)
  if name == "lj32":
    # Atoms on a jittered grid of spacing 1.2: no two too close.
    grid = np.stack(np.meshgrid(*[np.arange(4)] * 3), -1).reshape(-1, 3)[:32]
    pos = 1.2 * grid[None] + 0.05 * rng.normal(size=(n, 32, 3))
    return pos.reshape(n, 96).astype(np.float32)
  return rng.normal(size=(n, *shape)).astype(np.float32)


def _transformed(transform: str, f: Callable[..., Any]) -> Callable[..., Any]:
  """The batched transformation of `f`, the same for every method."""
  if transform == "vmap":
    return jax.vmap(f)
  if transform == "vmap_grad":
    return jax.vmap(jax.grad(f))
  if transform == "vmap_jacfwd":
    return jax.vmap(jax.jacfwd(f))
  if transform == "vmap_hessian":
    return jax.vmap(jax.jacrev(jax.jacrev(f)))
  raise ValueError(transform)


def loop_rule(args, dims, *, exported):
  """The batching rule of the pull request for jax-ml/jax#28327: a
  ``lax.map`` of calls of the artifact, one per batch element."""
  is_batched = [d is not None for d in dims]
  args = [a if d is None else batching.moveaxis(a, d, 0)
          for a, d in zip(args, dims)]
  unbatched_args, batched_args = util.partition_list(is_batched, args)

  def call_one(batched_one):
    merged = util.merge_lists(is_batched, unbatched_args, batched_one)
    return _export.call_exported_p.bind(*merged, exported=exported)

  results = lax.map(call_one, batched_args)
  return results, (0,) * len(results)


def _max_rel_err(ref: Any, out: Any) -> float:
  ref, out = np.asarray(ref, np.float64), np.asarray(out, np.float64)
  scale = max(float(np.max(np.abs(ref))), 1e-30)
  return float(np.max(np.abs(ref - out))) / scale if ref.size else 0.


def _compiled(row: dict[str, Any], method: str, fun: Callable[..., Any],
              xs: Any) -> tuple[Callable[..., Any] | None, Any]:
  """`jax.jit(fun)`, compiled and called once, and its result; None and
  the error recorded in `row` if it fails (out of memory, say), so that the
  other methods and rows are still measured."""
  jitted = jax.jit(fun)
  try:
    return jitted, jax.block_until_ready(jitted(xs))
  except Exception as e:  # pylint: disable=broad-except
    row[f"{method}_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    return None, None


def measure_row(name: str, transform: str, n: int, repeats: int,
                artifacts: dict[str, export.Exported]) -> dict[str, Any]:
  """One row: native, interpreter and loop rule, each checked against
  native, timed in turn round after round (a change of the machine's load
  falls on all three)."""
  f, shape = _workloads()[name]
  xs = jax.device_put(_examples(name, shape, n))
  call = artifacts[name].call
  row = {"workload": name, "label": LABELS[name], "transform": transform,
         "n": n, "native_ms": None, "interpreter_ms": None,
         "interpreter_rel_err": None, "loop_ms": None, "loop_rel_err": None,
         "loop_note": ""}
  funs = {}
  funs["native"], ref = _compiled(row, "native", _transformed(transform, f),
                                  xs)
  funs["interpreter"], out = _compiled(
      row, "interpreter", _transformed(transform, call), xs)
  if out is not None and ref is not None:
    row["interpreter_rel_err"] = _max_rel_err(ref, out)
  if transform == "vmap_jacfwd":
    row["loop_note"] = "no forward mode without the interpreter"
  else:
    # The loop rule is registered while the loop's program is traced (JAX's
    # caches cleared first: a batched trace cached for the interpreter would
    # be reused); the compiled program keeps it. Its program must hold the
    # loop.
    rules = batching.fancy_primitive_batchers
    saved = rules[_export.call_exported_p]
    jax.clear_caches()
    batching.primitive_batchers[_export.call_exported_p] = loop_rule
    try:
      loop = _transformed(transform, call)
      funs["loop"], out = _compiled(row, "loop", loop, xs)
      if funs["loop"] is not None and "stablehlo.while" not in jax.jit(
          loop).lower(xs).as_text():
        row["loop_error"] = "the loop rule's program has no loop"
        funs["loop"] = None
    finally:
      rules[_export.call_exported_p] = saved
    if out is not None and ref is not None:
      row["loop_rel_err"] = _max_rel_err(ref, out)
  del out
  times: dict[str, list[float]] = {m: [] for m, fn in funs.items() if fn}
  for method in times:  # compiled again if the caches were cleared
    jax.block_until_ready(funs[method](xs))
  for _ in range(repeats):
    for method in times:
      start = time.perf_counter()
      jax.block_until_ready(funs[method](xs))
      times[method].append((time.perf_counter() - start) * 1e3)
  for method, ts in times.items():
    row[f"{method}_ms"] = statistics.median(ts)
  return row


def _module_function(exp: export.Exported, avals: list[Any]) -> Any:
  """The implementation's function of an artifact's module as JAX
  operations (a callable of the call's flat arguments), or why there is
  none."""
  from jax._src import core  # pylint: disable=g-import-not-at-top
  avals = [core.ShapedArray(a.shape, a.dtype) for a in avals]
  try:
    from jax._src.export.transforms import function  # pylint: disable=g-import-not-at-top
  except ImportError:  # the implementation before its ModuleFunction
    from jax._src.export.transforms import interpret  # pylint: disable=g-import-not-at-top
    found = interpret.module_function(exp, avals, purpose="benchmark")
    return found if isinstance(found, str) else found.fun
  return function.exported_call(exp, avals, purpose="benchmark")


def derivatives() -> list[dict[str, Any]]:
  """Where a custom derivative was inlined into the module: JAX's
  derivative of the function, JAX's derivative of the interpreted module,
  and forward mode from the serialized VJP (the implementation's)."""
  cases = [
      ("`jax.nn.relu(x)`", jax.nn.relu, 0.),
      ("`jnp.sin(x) * lax.stop_gradient(x)`",
       lambda x: jnp.sin(x) * lax.stop_gradient(x), 1.),
  ]
  rows = []
  for label, f, x in cases:
    x = np.float32(x)
    exp = export.deserialize(export.export(jax.jit(f))(x).serialize(
        vjp_order=1))
    module = _module_function(exp, [jax.ShapeDtypeStruct((), np.float32)])
    if isinstance(module, str):
      raise RuntimeError(f"the interpreter refused {label}: {module}")
    _, d_function = jax.jvp(f, (x,), (np.float32(1.),))
    _, d_module = jax.jvp(lambda y: module(y)[0], (x,), (np.float32(1.),))
    _, d_call = jax.jvp(exp.call, (x,), (np.float32(1.),))
    rows.append({"function": label, "x": float(x),
                 "function_derivative": float(d_function),
                 "module_derivative": float(d_module),
                 "call_derivative": float(d_call)})
  return rows


def _derivatives_or_error() -> dict[str, Any]:
  """The `derivatives` rows, or the error that stopped them (recorded, so
  that the rows measured before are kept)."""
  try:
    return {"derivatives": derivatives()}
  except Exception as e:  # pylint: disable=broad-except
    return {"derivatives": [],
            "derivatives_error": f"{type(e).__name__}: {str(e)[:300]}"}


def _commit() -> str | None:
  """The commit of this repository's tree, if it is a git checkout."""
  try:
    out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                         text=True, cwd=pathlib.Path(__file__).parent,
                         check=True).stdout.strip()
  except (OSError, subprocess.CalledProcessError):
    return None
  return out or None


def _load() -> list[float]:
  try:
    return list(os.getloadavg())
  except OSError:
    return []


def run(out_dir: pathlib.Path, sizes_kind: str | None, repeats: int,
        only: list[str] | None) -> pathlib.Path:
  """Measures every row, writes `<out_dir>/<platform>.json`."""
  device = jax.devices()[0]
  kind = sizes_kind or ("cpu" if device.platform == "cpu" else "accelerator")
  artifacts = {}
  for name, (f, shape) in _workloads().items():
    exp = export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, np.float32))
    artifacts[name] = export.deserialize(exp.serialize(vjp_order=2))
  load_before = _load()
  started = datetime.datetime.now(datetime.timezone.utc)
  rows = []
  for name, transforms in SIZES[kind].items():
    for transform, ns in transforms.items():
      if only and f"{name}:{transform}" not in only and name not in only:
        continue
      for n in ns:
        row = measure_row(name, transform, n, repeats, artifacts)
        rows.append(row)
        print(json.dumps(row), flush=True)
  result = {
      "schema": SCHEMA, "platform": device.platform,
      "device": getattr(device, "device_kind", device.platform),
      "device_count": jax.device_count(), "sizes": kind,
      "jax": jax.__version__, "jaxlib": jax.lib.__version__,
      "commit": _commit(),
      "python": platform_lib.python_version(), "host": platform_lib.node(),
      "cpus": os.cpu_count(), "load_before": load_before,
      "load_after": _load(), "started": started.isoformat(timespec="seconds"),
      "repeats": repeats,
      "precision": jax.config.jax_default_matmul_precision,
      "rows": rows, **_derivatives_or_error(),
  }
  out_dir.mkdir(parents=True, exist_ok=True)
  path = out_dir / f"{device.platform}.json"
  path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
  return path


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--out", type=pathlib.Path, required=True,
                      help="the folder to write <platform>.json into")
  parser.add_argument("--quick", action="store_true",
                      help="small sizes: a smoke run, not for the tables")
  parser.add_argument("--sizes", choices=sorted(SIZES),
                      help="the sizes to run (default: by platform)")
  parser.add_argument("--repeats", type=int, default=7)
  parser.add_argument("--only", nargs="*",
                      help="workloads or workload:transform to run")
  parser.add_argument("--precision", default="highest",
                      help="jax_default_matmul_precision for every method "
                      "(a TPU's default, one bfloat16 pass, makes the loop's "
                      "and the batched program's rounding differ)")
  args = parser.parse_args()
  jax.config.update("jax_default_matmul_precision", args.precision)
  path = run(args.out, "quick" if args.quick else args.sizes, args.repeats,
             args.only)
  print(f"wrote {path}")


if __name__ == "__main__":
  main()
