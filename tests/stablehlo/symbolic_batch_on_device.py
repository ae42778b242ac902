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
"""The symbolic-batch round trip of the real programs on this machine's
default device (a TPU, a GPU), which CI has none of.

``python -m tests.stablehlo.symbolic_batch_on_device`` exports each
program of :mod:`tests.export.families` for the default platform (and for
it and the CPU), then ``jax.export`` of ``jax.jit(jax.vmap(exp.call))``
and of ``vmap`` of ``vmap`` with symbolic batch sizes, deserializes and
calls them (batches of 1 and 3; 0, which ``jax.export`` refuses for a
symbolic size), against ``jax.vmap`` of the original function there; and
checks that a wrong dtype is refused under ``vmap`` as by the call. Prints
one line per program: ``right``, ``refused`` (by name: the message's first
line) or ``WRONG``/``ERROR``; exits 1 on any of the last two.
"""

from __future__ import annotations

import sys

import jax
from jax import export
import numpy as np

from ..export.families import FAMILIES


def _close(got, want, tol: float) -> bool:
  return all(np.allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)
             for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)))


def _roundtrip(fun, *specs, **kwargs):
  return export.deserialize(
      export.export(jax.jit(fun), **kwargs)(*specs).serialize())


def check(name: str, platforms: tuple[str, ...], tol: float = 1e-4) -> str:
  """One program's outcome (float32)."""
  fam = FAMILIES[name]
  rng = np.random.default_rng(0)
  x = fam.make(rng).astype(np.float32)
  c, d = export.symbolic_shape("c, d")
  try:
    ex = _roundtrip(fam.fun, x, platforms=platforms)
    once = _roundtrip(jax.vmap(ex.call),
                      jax.ShapeDtypeStruct((c, *x.shape), x.dtype))
    twice = _roundtrip(jax.vmap(jax.vmap(ex.call)),
                       jax.ShapeDtypeStruct((c, d, *x.shape), x.dtype))
    for n in (1, 3):
      xs = np.stack([fam.make(rng) for _ in range(n)]).astype(np.float32)
      if not _close(once.call(xs), jax.vmap(fam.fun)(xs), tol):
        return f"WRONG at a batch of {n}"
    xs = xs.reshape(3, 1, *x.shape)
    if not _close(twice.call(xs), jax.vmap(jax.vmap(fam.fun))(xs), tol):
      return "WRONG nested"
    try:
      once.call(np.zeros((0, *x.shape), np.float32))
      return "ERROR: a batch of 0 for a symbolic size was not refused"
    except ValueError:
      pass
    try:
      jax.vmap(ex.call)(np.zeros((2, *x.shape), np.int32))
      return "ERROR: vmap accepted a wrong dtype"
    except ValueError:
      pass
  except NotImplementedError as e:
    return "refused: " + str(e).splitlines()[0][:300]
  except Exception as e:  # pylint: disable=broad-except
    return f"ERROR: {type(e).__name__}: {str(e).splitlines()[0][:300]}"
  return "right"


def main() -> int:
  platform = jax.export.default_export_platform()
  bad = 0
  for platforms in ((platform,), (platform, "cpu"))[:1 + (platform != "cpu")]:
    for name in FAMILIES:
      outcome = check(name, platforms)
      bad += outcome.startswith(("WRONG", "ERROR"))
      print(f"{'+'.join(platforms)}\t{name}\t{outcome}", flush=True)
  return 1 if bad else 0


if __name__ == "__main__":
  sys.exit(main())
