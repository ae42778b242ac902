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
"""Cross-platform lowering of call_tf, on a machine with a CPU only.

A worker (``python -m tests.calltf.platform_export FAMILY...``): for each
op matrix family (``op_matrix_cases``) and each transformation of
:data:`TRANSFORMS`, ``jax.export`` of ``jax.jit(T(call_tf(f)))`` for the TPU
alone, CUDA alone and the CPU, CUDA and TPU together, next to the same
function run by ``jax.jit`` on the CPU. One JSON line per case on stdout;
``test_platforms.py`` judges them and the worker's exit status (a process
that used call_tf must not die at exit).
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

PLATFORMS = (("tpu",), ("cuda",), ("cpu", "cuda", "tpu"))
# The transformations: of the function (value, vmap, sequential) or of the
# sum of its floating-point results (the derivatives).
TRANSFORMS = ("value", "vmap", "sequential", "jacrev", "jacfwd", "hessian",
              "vmap(grad)")
# Custom call targets that only XLA:CPU has (LAPACK, host callbacks), and
# those of the other platforms: none may be in a module lowered for a
# platform that lacks it.
_CPU_ONLY = re.compile(r"lapack|cpu|host_callback|xla_python")
_GPU_ONLY = re.compile(r"cu(solver|blas|sparse|da|_)|hip|gpu")
_TPU_ONLY = re.compile(r"^(Eigh|Qr|LuDecomposition|ApproxTopK|tpu)")
_TARGET = re.compile(r"custom_call @([\w.$-]+)|call_target_name = \"([^\"]+)\"")


def _targets(module_text: str) -> set[str]:
  return {a or b for a, b in _TARGET.findall(module_text)}


def foreign_targets(module_text: str, platforms: Sequence[str]) -> list[str]:
  """The custom call targets of a module that a platform of it lacks."""
  bad = []
  for t in sorted(_targets(module_text)):
    if "cpu" not in platforms and _CPU_ONLY.search(t):
      bad.append(t)
    elif "cuda" not in platforms and _GPU_ONLY.search(t):
      bad.append(t)
    elif "tpu" not in platforms and _TPU_ONLY.search(t):
      bad.append(t)
  return bad


def _transformed(transform: str, fn: Callable[[Any], Any]
                 ) -> tuple[Callable[[Any], Any], bool] | None:
  """``T(call_tf(fn))`` and whether it takes the batch, or None."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from jax.experimental.jax2tf import call_tf  # pylint: disable=g-import-not-at-top
  f = call_tf(fn)

  def total(x):
    leaves = [jnp.real(leaf) for leaf in jax.tree_util.tree_leaves(f(x))
              if jnp.issubdtype(leaf.dtype, jnp.inexact)]
    return sum(jnp.sum(leaf) for leaf in leaves)
  if transform == "value":
    return f, False
  if transform == "vmap":
    return jax.vmap(f), True
  if transform == "sequential":
    return jax.vmap(call_tf(fn, vmap_method="sequential")), True
  return {"jacrev": (jax.jacrev(total), False),
          "jacfwd": (jax.jacfwd(total), False),
          "hessian": (jax.hessian(total), False),
          "vmap(grad)": (jax.vmap(jax.grad(total)), True)}[transform]


def _error(e: BaseException) -> str:
  text = "".join(traceback.format_exception_only(type(e), e)).strip()
  return text.splitlines()[0][:1500] if text else type(e).__name__


def run_case(built: Any, family: str, transform: str) -> dict[str, Any]:
  """One family and transformation: the record test_platforms judges."""
  import jax  # pylint: disable=g-import-not-at-top
  from jax import export  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  record: dict[str, Any] = {"family": family, "transform": transform}
  fn_batched = _transformed(transform, built.fn)
  if fn_batched is None:
    record["outcome"] = "skip"
    return record
  fn, batched = fn_batched
  x = built.x
  if batched:
    x = built.xs
    if x is None:  # the op matrix's default batch
      noise = np.random.default_rng(1).standard_normal(
          (3, *np.shape(built.x)))
      x = (built.x[None] + 0.1 * noise).astype(np.asarray(built.x).dtype)
  if not np.issubdtype(np.asarray(x).dtype, np.inexact) and transform in (
      "jacrev", "jacfwd", "hessian", "vmap(grad)"):
    record["outcome"] = "skip"
    record["reason"] = "an integer argument has no derivative"
    return record
  try:
    expected = jax.jit(fn)(x)
    expected = [np.asarray(e) for e in jax.tree_util.tree_leaves(expected)]
  except Exception as e:  # pylint: disable=broad-except
    expected = None
    record["cpu"] = _error(e)
  for platforms in PLATFORMS:
    key = ",".join(platforms)
    try:
      exp = export.export(jax.jit(fn), platforms=platforms)(x)
    except Exception as e:  # pylint: disable=broad-except
      record[key] = _error(e)
      record[key + ":type"] = type(e).__name__
      continue
    record[key] = "ok"
    foreign = foreign_targets(exp.mlir_module(), platforms)
    if foreign:
      record[key + ":foreign"] = foreign
    if "cpu" in platforms and expected is not None:
      again = export.deserialize(exp.serialize())
      got = [np.asarray(g) for g in jax.tree_util.tree_leaves(again.call(x))]
      diffs = [float(np.max(np.abs(g.astype(np.float64)
                                   - e.astype(np.float64)), initial=0.)
                     / max(float(np.max(np.abs(e), initial=0.)), 1e-30))
               for g, e in zip(got, expected)]
      record[key + ":diff"] = max(diffs, default=0.)
      record[key + ":shapes"] = [list(g.shape) for g in got] == [
          list(e.shape) for e in expected]
  record["outcome"] = "done"
  return record


def main(families: Sequence[str]) -> int:
  here = os.path.dirname(os.path.abspath(__file__))
  sys.path.insert(0, os.path.dirname(os.path.dirname(here)))
  from tests.calltf import op_matrix_cases as cases  # pylint: disable=g-import-not-at-top
  for name in families:
    family = cases.FAMILY_BY_NAME[name]
    try:
      built = family.build()
    except Exception as e:  # pylint: disable=broad-except
      print(json.dumps({"family": name, "outcome": "skip",
                        "reason": f"does not build: {_error(e)}"}),
            flush=True)
      continue
    for transform in TRANSFORMS:
      try:
        record = run_case(built, name, transform)
      except Exception as e:  # pylint: disable=broad-except
        record = {"family": name, "transform": transform,
                  "outcome": "error", "reason": _error(e)}
      print(json.dumps(record), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
