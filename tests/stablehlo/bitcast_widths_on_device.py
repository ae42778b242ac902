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
"""The engine's bitcasts between widths on this machine's default device
(a TPU, a GPU), which CI has none of.

``python -m tests.stablehlo.bitcast_widths_on_device`` runs each case of
:mod:`.test_bitcast_widths` (every ordered pair of widths, each type from
and to another width) there: the engine's composition under ``jax.jit``
against Python's integers and XLA's own bitcast, one line per case
(``right``; ``unsupported``, where XLA's own bitcast fails there too;
``WRONG`` or ``ERROR``), then the time of the composition against the op
on arrays of 2**22 wide words (the best of 20 runs, interleaved). The
cases run in a child process, started again after the case where it dies
(an abort of the platform's compiler), which is ``ABORT`` and names the
step: XLA's own op (as ``unsupported``), or the engine's composition (ours,
as ``ERROR``). Exits 1 on any ``WRONG``, ``ERROR`` or ``ABORT`` of the
engine's.
"""

from __future__ import annotations

import subprocess
import sys
import time

import jax
from jax import lax
from jax._src import config
from jax._src.export import stablehlo_to_jax as s2j
from jax._src.export.stablehlo_to_jax import _rules
import numpy as np

from . import spec_types as st
from . import test_bitcast_widths as widths
from . import xla


def check(src: str, dst: str, rng: np.random.Generator) -> str:
  """One case's outcome."""
  x, shape, want = widths._case(src, dst, rng)  # pylint: disable=protected-access
  text = widths._module([(src, dst)], [x])  # pylint: disable=protected-access
  program = s2j.parse(text)
  print("step: XLA's own op", flush=True)
  try:
    by_xla = np.asarray(xla.xla_function(text, program)(x)[0])
  except Exception as e:  # pylint: disable=broad-except
    return f"unsupported ({type(e).__name__}: {str(e).splitlines()[0]})"
  print("step: the engine's composition", flush=True)
  try:
    got = np.asarray(jax.jit(lambda a: program(a))(x)[0])
  except Exception as e:  # pylint: disable=broad-except
    return f"ERROR {type(e).__name__}: {str(e).splitlines()[0]}"
  ints = lambda a: widths._ints(a, dst)  # noqa: E731  # pylint: disable=protected-access
  if (got.shape == shape and np.array_equal(ints(got), want)
      and np.array_equal(ints(by_xla), want)):
    return "right"
  return "WRONG"


def _best(f, x, g) -> tuple[float, float]:
  f(x).block_until_ready()
  g(x).block_until_ready()
  best_f = best_g = float("inf")
  for _ in range(20):
    t0 = time.perf_counter()
    f(x).block_until_ready()
    t1 = time.perf_counter()
    g(x).block_until_ready()
    t2 = time.perf_counter()
    best_f, best_g = min(best_f, t1 - t0), min(best_g, t2 - t1)
  return best_f, best_g


def timings() -> None:
  n = 1 << 22
  for src, dst in [("ui32", "ui64"), ("ui64", "ui32"), ("ui8", "f32"),
                   ("f32", "ui8"), ("ui8", "ui64"), ("f32", "bf16"),
                   ("i4", "i8"), ("i8", "i4")]:
    s, d = st.DTYPES[src], st.DTYPES[dst]
    k = max(st.BITS[dst] // st.BITS[src], 1)
    x = np.zeros((n, k) if k > 1 else (n,), s)
    try:
      op, composed = _best(jax.jit(lambda a, d=d: lax.bitcast_convert_type(a, d)),
                           x, jax.jit(lambda a, d=d: _rules._bitcast_to_width(a, d)))  # pylint: disable=protected-access
    except Exception as e:  # pylint: disable=broad-except
      print(f"time {src} to {dst}: {type(e).__name__}")
      continue
    print(f"time {src} to {dst}: op {op * 1e3:.3f} ms, composed "
          f"{composed * 1e3:.3f} ms ({composed / op:.2f}x)")


def _child(first: int) -> int:
  """Runs the cases from index `first` on, one line each (`main`)."""
  if first == 0:
    print("device:", jax.devices()[0], flush=True)
  rng = np.random.default_rng(59)
  with config.enable_x64(True):
    for i, (src, dst) in enumerate(widths._cases()):  # pylint: disable=protected-access
      if i < first:
        continue
      print(f"case {i}", flush=True)
      print(f"{src} to {dst}: {check(src, dst, rng)}", flush=True)
    timings()
  return 0


def main() -> int:
  # (The children hold the device, one at a time: not this process.)
  cases = widths._cases()  # pylint: disable=protected-access
  bad, first = 0, 0
  while first < len(cases):
    child = subprocess.run(
        [sys.executable, "-m", __spec__.name, "--from", str(first)],
        capture_output=True, text=True, check=False)
    index, step = first, None
    for line in child.stdout.splitlines():
      if line.startswith("case "):
        index, step = int(line.split()[1]), None
      elif line.startswith("step: "):
        step = line[len("step: "):]
      else:
        print(line, flush=True)
        bad += line.split(": ", 1)[-1].startswith(("WRONG", "ERROR"))
    if child.returncode == 0:
      break
    src, dst = cases[index]
    print(f"{src} to {dst}: ABORT in {step or 'the setup'} (exit "
          f"{child.returncode}): "
          f"{(child.stderr.strip().splitlines() or [''])[-1]}",
          flush=True)
    bad += step != "XLA's own op"
    first = index + 1
  return 1 if bad else 0


if __name__ == "__main__":
  if sys.argv[1:2] == ["--from"]:
    sys.exit(_child(int(sys.argv[2])))
  sys.exit(main())
