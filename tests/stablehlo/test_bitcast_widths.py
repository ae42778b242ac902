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
"""``bitcast_convert`` between element types of different widths, bit for bit.

The engine composes it of bitcasts between types of one width and integer
shifts (JAX's lowering of ``lax.bitcast_convert_type`` between widths
cannot be refined under a symbolic batch; ``test_symbolic_batch.py`` runs
it so). Here each ordered pair of widths (2, 4, 8, 16, 32 and 64 bits),
each integer and float type from and to another width, on every bit
pattern of 8 bits and fewer in every position, and on the patterns of
wider floats that float arithmetic would change (NaN payloads, signalling
NaNs, negative zero, subnormal numbers) and random words: the engine
under ``jax.jit`` against Python's integers (the narrow words of a wide
one, the first the least significant) and against XLA running the module
unchanged. The conformance run (``test_conformance.py``) holds the op to
XLA for its cases of 8 bits and more too (a NaN matching any NaN), and
``jax.vmap`` to a loop: the default run has the cases it has not (a width
of 2 or 4 bits, floats of 16 bits and more to floats), the full run
(``--full-run``) all.
"""

from __future__ import annotations

import itertools

import jax
from jax._src import config
from jax import export
from jax._src.export import stablehlo_to_jax as s2j
import numpy as np
import pytest

from . import spec_types as st
from . import xla

# The types of each width (no booleans, complex numbers or float6 types:
# refused, or no other width is a multiple of theirs).
_TYPES: dict[int, list[str]] = {}
for _t in st.INT + st.FLOAT:
  if st.BITS[_t] != 6:
    _TYPES.setdefault(st.BITS[_t], []).append(_t)

# Patterns of wider floats (f16 and bf16, f32, f64) that float arithmetic
# would change: negative zero, the smallest and largest subnormal numbers
# of each sign, signalling NaNs, NaNs with payloads of each sign.
_SPECIAL = {
    16: [0x8000, 0x0001, 0x8001, 0x03FF, 0x807F, 0x7C01, 0xFE01, 0x7FFF,
         0x7F81, 0xFFC1, 0x7D00],
    32: [0x80000000, 0x1, 0x80000001, 0x007FFFFF, 0x7F800001, 0xFFC00001,
         0x7FFFFFFF, 0x7FA00000, 0xFF800ABC],
    64: [0x8000000000000000, 0x1, 0x8000000000000001, 0x000FFFFFFFFFFFFF,
         0x7FF0000000000001, 0xFFF8000000000001, 0x7FF4000000000000,
         0xFFF00000DEADBEEF],
}
_ROWS = 64


def _words(bits: int, n: int, rng: np.random.Generator) -> list[int]:
  """`n` words of `bits` bits: every pattern (up to 8 bits), or the
  special ones and random ones."""
  if bits <= 8:
    every = list(range(2 ** bits))
    return (every * (n // len(every) + 1))[:max(n, len(every))]
  rand = rng.integers(0, 2 ** bits - 1, size=n, dtype=np.uint64,
                      endpoint=True)
  return _SPECIAL[bits] + [int(v) for v in rand]


def _unsigned(bits: int) -> np.dtype:
  return st.DTYPES[f"ui{bits}"]


def _array(words: list, ty: str) -> np.ndarray:
  """Python integers as the bits of `ty`."""
  bits = st.BITS[ty]
  u = np.array(words, np.uint64).astype(_unsigned(bits))
  return u.view(st.DTYPES[ty])


def _ints(x: np.ndarray, ty: str) -> np.ndarray:
  """The bits of each element of `x`, of type `ty`, as unsigned integers."""
  return np.asarray(x).view(_unsigned(st.BITS[ty])).astype(np.uint64)


def _cases() -> list[tuple[str, str]]:
  """Each ordered pair of widths, and each type from and to another
  width, at least once (the types of a width taken in turn)."""
  turn = {bits: itertools.cycle(types) for bits, types in _TYPES.items()}
  widths = sorted(_TYPES)
  cases = [(next(turn[a]), next(turn[b]))
           for a, b in itertools.permutations(widths, 2)]
  # (And floats to floats, NaN payloads in the words and in the result.)
  cases += [("f32", "f64"), ("f64", "f32"), ("f16", "f64"), ("f64", "bf16")]
  for i, t in enumerate(t for types in _TYPES.values() for t in types):
    others = [w for w in widths if w != st.BITS[t]]
    other = others[i % len(others)]
    if t not in {src for src, _ in cases}:
      cases.append((t, next(turn[other])))
    if t not in {dst for _, dst in cases}:
      cases.append((next(turn[other]), t))
  return cases


def _case(src: str, dst: str, rng: np.random.Generator
          ) -> tuple[np.ndarray, tuple[int, ...], np.ndarray]:
  """An operand, the result's shape and its bits (Python's integers)."""
  ns, nd = st.BITS[src], st.BITS[dst]
  if ns < nd:
    k = nd // ns
    column = _words(ns, _ROWS, rng)
    # (Every pattern in every position: each column the words rolled.)
    rows = [[column[(i + 7 * j) % len(column)] for j in range(k)]
            for i in range(len(column))]
    want = [sum(w << (ns * j) for j, w in enumerate(r)) for r in rows]
    return _array(rows, src), (len(rows),), np.array(want, np.uint64)
  k = ns // nd
  words = _words(ns, _ROWS, rng)
  want = [(w >> (nd * j)) & ((1 << nd) - 1) for w in words for j in range(k)]
  return (_array(words, src), (len(words), k),
          np.array(want, np.uint64).reshape(len(words), k))


def _module(cases, operands) -> str:
  args, results, body, rets = [], [], [], []
  for i, ((src, dst), x) in enumerate(zip(cases, operands)):
    ns, nd = st.BITS[src], st.BITS[dst]
    shape = x.shape[:-1] if ns < nd else (*x.shape, ns // nd)
    t_in, t_out = st.tensor(x.shape, src), st.tensor(shape, dst)
    args.append(f"%a{i}: {t_in}")
    results.append(t_out)
    body.append(f"  %r{i} = stablehlo.bitcast_convert %a{i} : ({t_in}) -> "
                f"{t_out}")
    rets.append(f"%r{i}")
  return (f"module {{\nfunc.func public @main({', '.join(args)}) -> "
          f"({', '.join(results)}) {{\n" + "\n".join(body) +
          f"\n  return {', '.join(rets)} : {', '.join(results)}\n}}\n}}\n")


def _not_in_the_conformance_run(case: tuple[str, str]) -> bool:
  """Its widths (one of 2 or 4 bits), or a NaN payload of 16 bits or more
  in both types (the conformance run matches a NaN with any NaN)."""
  src, dst = case
  return (min(st.BITS[src], st.BITS[dst]) < 8
          or {src, dst} <= {"bf16", "f16", "f32", "f64"})


@pytest.mark.parametrize("which", [
    "not in the conformance run", pytest.param("all", marks=pytest.mark.full_run)])
def test_bitcasts_between_widths_are_xlas_bit_for_bit(which):
  rng = np.random.default_rng(59)
  cases = _cases()
  if which != "all":
    cases = [c for c in cases if _not_in_the_conformance_run(c)]
  made = [_case(s, d, rng) for s, d in cases]
  operands = [m[0] for m in made]
  text = _module(cases, operands)
  with config.enable_x64(True):
    program = s2j.parse(text)
    assert not program.unsupported, program.reasons
    got = jax.jit(lambda *a: program(*a))(*operands)
    by_xla = xla.xla_function(text, program)(*operands)
  wrong = []
  for (src, dst), (_, shape, want), g, x in zip(cases, made, got, by_xla):
    g, x = np.asarray(g), np.asarray(x)
    ok = (g.dtype == st.DTYPES[dst] and g.shape == shape
          and np.array_equal(_ints(g, dst), want)
          and np.array_equal(_ints(x, dst), want))
    if not ok:
      wrong.append(f"{src} to {dst}")
  assert not wrong, wrong


def test_the_cases_have_every_pair_of_widths_and_every_type():
  cases = _cases()
  assert {(st.BITS[a], st.BITS[b]) for a, b in cases} == {
      (a, b) for a in _TYPES for b in _TYPES if a != b}
  assert {a for a, _ in cases} == {b for _, b in cases} == {
      t for types in _TYPES.values() for t in types}
  assert 20 < len([c for c in cases if _not_in_the_conformance_run(c)]) < 30


def test_bitcasts_of_booleans_to_another_type_are_refused_by_name():
  # (An i1 is 1 bit wide; lax bitcasts no booleans. To an i8 it raised
  # lax's TypeError at the call.)
  for t_in, t_out in [("tensor<2x8xi1>", "tensor<2xi8>"),
                      ("tensor<2xui8>", "tensor<2x8xi1>"),
                      ("tensor<2x4xi1>", "tensor<2xi4>"),
                      ("tensor<2x16xi1>", "tensor<2xf16>")]:
    program = s2j.parse(
        f"module {{\nfunc.func public @main(%a: {t_in}) -> ({t_out}) {{\n"
        f"  %0 = stablehlo.bitcast_convert %a : ({t_in}) -> {t_out}\n"
        f"  return %0 : {t_out}\n}}\n}}\n")
    assert "bitcast of booleans to another width" in program.reasons[
        "stablehlo.bitcast_convert"], (t_in, t_out)


@pytest.mark.parametrize("t_in,t_out", [("tensor<3x4xui2>", "tensor<3xi8>"),
                                        ("tensor<3xi64>", "tensor<3x32xi2>")])
def test_bitcasts_of_two_bit_types_between_widths_are_refused_on_the_tpu(
    t_in, t_out):
  """XLA's TPU compiler aborted the process on them (its own bitcast of ui2
  to i8; the composition of ui2 to i32 and i2 to i64): refused by name
  when lowered for the TPU; the CPU's and GPUs' lowerings compose them."""
  text = (f"module {{\nfunc.func public @main(%a: {t_in}) -> ({t_out}) {{\n"
          f"  %0 = stablehlo.bitcast_convert %a : ({t_in}) -> {t_out}\n"
          f"  return %0 : {t_out}\n}}\n}}\n")
  program = s2j.parse(text)
  shape = tuple(int(d) for d in t_in[7:-1].split("x")[:-1])
  arg = jax.ShapeDtypeStruct(shape, st.DTYPES[t_in[7:-1].split("x")[-1]])
  fun = jax.jit(jax.vmap(lambda a: program(a)[0]))
  batched = jax.ShapeDtypeStruct((2, *arg.shape), arg.dtype)
  with config.enable_x64(True):
    with pytest.raises(NotImplementedError,
                       match=r"stablehlo.bitcast_convert of .* on the TPU"):
      export.export(fun, platforms=("tpu",))(batched)
    for platform in ("cpu", "cuda"):
      export.export(fun, platforms=(platform,))(batched)
