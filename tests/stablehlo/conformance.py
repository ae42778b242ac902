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
"""The conformance run: each case of :mod:`.spec_cases` by the engine and XLA.

For each case (one op, one element type, one variant): the engine reads the
single-op module (:func:`stablehlo_to_jax.parse`); if it refuses, the
refusal and its reason are the outcome. Otherwise the case is computed by
the engine under ``jax.jit`` and by XLA compiling the module unchanged
(:mod:`.xla`), and compared bit for bit (a NaN matches any NaN: XLA does
not promise NaN payloads or signs; a subnormal of a float of 16 bits or
fewer matches the zero of its sign: XLA:CPU flushes them on some
instruction sets, :func:`compare`), or to the case's tolerance where the
specification leaves the rounding to the implementation and the engine
computes by another algorithm (factorizations, FFTs); then ``jax.vmap`` of
the engine's program against a loop of it, and, where the case names its
``lax`` equivalent, ``jax.jvp`` of the program against JAX's derivative of
that.

Many cases are run as one program: the cases of one element type become
private functions of one module whose ``main`` calls them all, compiled
once by XLA and once by the engine (a case that fails there is rerun
alone). Everything runs with ``jax_enable_x64``, so that 64-bit types are
themselves.

XLA aborts the process on some types (the float6 types, some bitcasts), so
the run is a worker process (``python -m tests.stablehlo.conformance``)
printing one JSON line per outcome; :func:`run` starts it, and if it dies,
finds the cases that kill it by halving, each a failure (``abort``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
from collections.abc import Callable, Iterator, Mapping, Sequence
import contextlib
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import time
import zlib

import ml_dtypes
import numpy as np

from . import spec_cases
from . import spec_types as st

ROOT = pathlib.Path(__file__).resolve().parents[2]

# An outcome's status.
EXACT, CLOSE, REFUSED = "exact", "close", "refused"
WRONG, ERROR, ABORT = "wrong", "error", "abort"
PASSING = (EXACT, CLOSE, REFUSED)
NO_OPERANDS = "no operands"  # (nothing for jax.vmap to batch)
NOT_DIFFERENTIABLE = "none"  # (JAX differentiates no lax equivalent)


@dataclasses.dataclass
class Outcome:
  """What the run found for a case.

  Attributes:
    name: the case's name (``op[type][variant]``).
    status: ``exact`` (XLA's bits), ``close`` (within the case's
      tolerance), ``refused`` (with `reason`), ``wrong``, ``error`` (a
      Python exception that is not a refusal), ``abort`` (the process
      died).
    reason: a refusal's reason, or what went wrong.
    batched: ``jax.vmap`` against a loop: ``exact``, ``close``, ``wrong:
      ...``, ``error: ...``, or "" (not run: refused or failed).
    differentiated: ``jax.jvp`` against JAX's derivative of the ``lax``
      equivalent, likewise ("" where the case has none).
  """
  name: str
  op: str
  ty: str
  variant: str
  status: str
  reason: str = ""
  batched: str = ""
  differentiated: str = ""

  def failures(self) -> list[str]:
    """What is wrong with the outcome (empty if nothing)."""
    out = []
    if self.status not in PASSING:
      out.append(f"{self.status}: {self.reason}")
    for what, check in (("vmap", self.batched),
                        ("jvp", self.differentiated)):
      if check and check not in (EXACT, CLOSE, NO_OPERANDS) and \
          not check.startswith(NOT_DIFFERENTIABLE + ":"):
        out.append(f"{what} {check}")
    return out


def _outcome(case: spec_cases.Case, status: str, reason: str = "",
             **kw) -> Outcome:
  return Outcome(case.name, case.op, case.ty, case.variant, status,
                 reason[:600], **kw)


# Comparing results.

def _parts(x: np.ndarray) -> np.ndarray:
  """Real and imaginary parts (an axis of 2) of complex values, else x."""
  if np.iscomplexobj(x):
    return np.stack([x.real, x.imag], -1)
  return x


def _bits(x: np.ndarray) -> np.ndarray:
  return np.ascontiguousarray(x).view(f"u{x.dtype.itemsize}")


# The types whose subnormals XLA:CPU may flush to zero on some instruction
# sets and not on others: the floats of 16 bits or fewer, which it computes
# through conversions to and from wider floats. Measured: with AVX512_BF16
# it flushes a bf16 subnormal in a batched pad, with AVX2 it keeps it.
# docs/stablehlo.md, "Conformance to the specification".
_FLUSHED_BY_SOME_CPUS = frozenset(
    st.DTYPES[t] for t in st.FLOAT if st.DTYPES[t].itemsize <= 2)


def _zero_of_sign(x: np.ndarray) -> np.ndarray:
  """The zero of each element's sign, in x's type (+0 in a type without
  -0: the FNUZ floats)."""
  return np.copysign(0., x.astype(np.float64)).astype(x.dtype)


def _flushed(g: np.ndarray, w: np.ndarray) -> np.ndarray:
  """Where one of `g` and `w` (of one type) is a subnormal that some CPU's
  XLA flushes (`_FLUSHED_BY_SOME_CPUS`) and the other is the zero of its
  sign; nowhere in other types."""
  if g.dtype not in _FLUSHED_BY_SOME_CPUS:
    return np.zeros(g.shape, bool)
  tiny = float(ml_dtypes.finfo(g.dtype).smallest_normal)

  def subnormal(x):
    a = np.abs(x.astype(np.float64))
    return (a > 0) & (a < tiny)
  return ((subnormal(g) & (_bits(w) == _bits(_zero_of_sign(g))))
          | (subnormal(w) & (_bits(g) == _bits(_zero_of_sign(w)))))


def compare(got: np.ndarray, want: np.ndarray, tol: float) -> str:
  """``exact``, ``close`` or ``wrong: ...``.

  Exact is bit for bit, with two rules for what XLA does not promise: a
  NaN matches any NaN (XLA promises no payload or sign), and in a float
  type of 16 bits or fewer a subnormal matches the zero of its sign and no
  other value (XLA:CPU flushes such subnormals on some instruction sets and
  not on others: the same program gives either on different CPUs). Where
  `tol` is not 0, inexact values within it are ``close``, and so are exact
  ones: the class says what the comparison holds, which does not depend on
  the CPU.
  """
  got, want = np.asarray(got), np.asarray(want)
  if got.dtype.itemsize == 0 and got.dtype == want.dtype:
    return EXACT  # (float0: integer results have no tangents)
  if got.shape != want.shape or got.dtype != want.dtype:
    return (f"wrong: {got.dtype}{list(got.shape)} where XLA gives "
            f"{want.dtype}{list(want.shape)}")
  g, w = _parts(got), _parts(want)
  same = _bits(g) == _bits(w)
  inexact = g.dtype.kind not in "biu" and g.dtype != np.bool_
  if inexact:
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    same |= np.isnan(g64) & np.isnan(w64)
    same |= _flushed(g, w)
  if same.all():
    return CLOSE if tol and inexact else EXACT
  if tol and inexact:
    close = np.isclose(g64, w64, rtol=tol, atol=tol, equal_nan=True)
    if close.all():
      return CLOSE
    same = close
  where = np.argwhere(~same)[:3].tolist()
  return (f"wrong: {int((~same).sum())} of {same.size} elements differ, "
          f"first at {where}: {g[tuple(where[0])]!r} where XLA gives "
          f"{w[tuple(where[0])]!r}")


# Modules of many cases.

def combined_module(cases: Sequence[spec_cases.Case],
                    reference: bool = False) -> str:
  """One module whose ``main`` calls each case's function (`reference`:
  each case's reference function, where it has one, for XLA)."""
  funcs, params, calls, results, types = [], [], [], [], []
  n = 0
  for k, case in enumerate(cases):
    func = case.reference if reference and case.reference else case
    funcs.append(func.func(f"case{k}", private=True).replace(
        "@DECOMPOSITION", f"@decomposition{k}"))
    funcs.append(case.extra_funcs.replace("@DECOMPOSITION",
                                          f"@decomposition{k}"))
    names = [f"%x{n + i}" for i in range(len(case.arg_types))]
    params += [f"{v}: {t}" for v, t in zip(names, case.arg_types)]
    n += len(names)
    out = f"%c{k}"
    m = len(case.result_types)
    arity = f":{m}" if m > 1 else ""
    calls.append(f"    {out}{arity} = func.call @case{k}({', '.join(names)})"
                 f" : ({', '.join(case.arg_types)}) -> "
                 f"({', '.join(case.result_types)})")
    results += [out] if m == 1 else [f"{out}#{i}" for i in range(m)]
    types += case.result_types
  main = (f"  func.func @main({', '.join(params)}) -> ({', '.join(types)}) "
          "{\n" + "\n".join(calls) + f"\n    return {', '.join(results)} : "
          f"{', '.join(types)}\n  }}\n")
  return "module {\n" + main + "".join(funcs) + "}\n"


def _flat_args(cases: Sequence[spec_cases.Case]) -> list[np.ndarray]:
  return [a for c in cases for a in c.args]


def _second_example(cases: Sequence[spec_cases.Case]) -> list[np.ndarray]:
  """Other arguments of the same cases: each batched one's values rolled."""
  kept, out = _unbatched(cases), []
  for c in cases:
    out += c.second or [np.roll(a.ravel(), 1).reshape(a.shape)
                        for a in c.args]
  return [a if i in kept else b
          for i, (a, b) in enumerate(zip(_flat_args(cases), out))]


def _stacked(cases: Sequence[spec_cases.Case]
             ) -> tuple[list[int | None], list[np.ndarray]]:
  """``jax.vmap``'s ``in_axes`` and arguments: both examples stacked."""
  kept = _unbatched(cases)
  first, second = _flat_args(cases), _second_example(cases)
  args = [a if i in kept else np.stack([a, b])
          for i, (a, b) in enumerate(zip(first, second))]
  return [None if i in kept else 0 for i in range(len(args))], args


def _unbatched(cases: Sequence[spec_cases.Case]) -> set[int]:
  """The positions of the combined arguments ``jax.vmap`` keeps unbatched."""
  out, i = set(), 0
  for c in cases:
    out.update(i + k for k in c.unbatched)
    i += len(c.args)
  return out


def _split(outs: Sequence[object], cases: Sequence[spec_cases.Case]
           ) -> list[list[np.ndarray]]:
  """The combined results, case by case."""
  out, i = [], 0
  for c in cases:
    m = len(c.result_types)
    out.append([np.asarray(o) for o in outs[i:i + m]])
    i += m
  return out


def _as_type(x: object, aval: object) -> np.ndarray:
  """`x`'s bits as `aval`'s type (of the same width)."""
  x = np.asarray(x)
  dtype = np.dtype(aval.dtype)
  if x.dtype == dtype or x.dtype.itemsize != dtype.itemsize:
    return x
  return x.view(dtype)


def _error(e: BaseException) -> str:
  return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


# The worker: cases run in this process.

class _Runner:
  """Runs cases in this process, emitting an outcome for each."""

  def __init__(self, emit: Callable[[Outcome], None]):
    import jax  # pylint: disable=g-import-not-at-top
    from jax._src.export import stablehlo_to_jax as s2j  # pylint: disable=g-import-not-at-top
    from . import xla  # pylint: disable=g-import-not-at-top
    self.jax, self.s2j, self.xla = jax, s2j, xla
    self.emit = emit
    self._programs: dict[str, object] = {}
    self._jitted: dict[object, Callable] = {}

  def parse(self, case: spec_cases.Case) -> object:
    """The case's program, or its outcome if the engine refuses it."""
    s2j = self.s2j
    try:
      prog = s2j.parse(case.module())
    except s2j.UnsupportedOps as e:
      return self._refused(case, str(e))
    except ValueError as e:
      if str(e).startswith("Cannot read the StableHLO module"):
        return self._refused(case, str(e))
      return _outcome(case, ERROR, _error(e))
    except Exception as e:  # pylint: disable=broad-except
      return _outcome(case, ERROR, _error(e))
    if prog.unsupported:
      return self._refused(case, "; ".join(f"{k}: {v}" for k, v in
                                           prog.reasons.items()))
    if case.refused:
      return _outcome(case, WRONG, "computed, where the engine must refuse "
                      f"it ({case.refused})")
    return prog

  @staticmethod
  def _refused(case: spec_cases.Case, reason: str) -> Outcome:
    if case.refused and case.refused not in reason:
      return _outcome(case, ERROR, f"refused without naming "
                      f"{case.refused}: {reason}")
    return _outcome(case, REFUSED, reason)

  def group(self, cases: Sequence[spec_cases.Case]) -> None:
    """Runs the cases of one element type: parsed alone, computed together."""
    progs = {}
    for case in cases:
      prog = self.parse(case)
      if isinstance(prog, Outcome):
        self.emit(prog)
      else:
        progs[case.name] = prog
    computable = [c for c in cases if c.name in progs]
    for part in ([c for c in computable if not c.apart],
                 [c for c in computable if c.apart]):
      if part:
        self._group(part)

  def _group(self, computable: Sequence[spec_cases.Case]) -> None:
    print("GROUP " + json.dumps([c.name for c in computable]), flush=True)
    values, batched = self._values(computable)
    ok = [c for c in computable if values[c.name][0] in (EXACT, CLOSE)]
    differentiated = self._differentiated([c for c in ok if c.lax_fn])
    for case in computable:
      status, reason = values[case.name]
      computed = status in (EXACT, CLOSE)
      self.emit(_outcome(case, status, reason,
                         batched=batched.get(case.name, "" if case.args
                                             else NO_OPERANDS)
                         if computed else "",
                         differentiated=differentiated.get(case.name, "")))

  def program(self, cases: Sequence[spec_cases.Case]) -> object:
    """The engine's program of the cases' combined module (parsed once)."""
    text = combined_module(cases)
    if text not in self._programs:
      self._programs[text] = self.s2j.parse(text)
    return self._programs[text]

  def jitted(self, cases: Sequence[spec_cases.Case]) -> Callable:
    """``jax.jit`` of :meth:`program` (one function: compiled once)."""
    prog = self.program(cases)
    if prog not in self._jitted:
      self._jitted[prog] = self.jax.jit(prog)
    return self._jitted[prog]

  def _together(self, cases: Sequence[spec_cases.Case],
                run: Callable[[Sequence[spec_cases.Case]], list[list[object]]],
                probe: Callable[[Sequence[spec_cases.Case]], object] | None
                = None) -> dict[str, list[object] | str]:
    """`run` of the cases at once: each case's results, or its error.

    Where that raises, a case whose `probe` (a trace, which compiles
    nothing) raises gets that error; the others run together, halved where
    a run raises. (Probed only then: a run that succeeds traced each case
    as its probe would have, so no probe of it could have raised; probing
    every case first traced each twice.)"""
    try:
      return dict(zip([c.name for c in cases], run(cases)))
    except Exception as e:  # pylint: disable=broad-except
      failed = _error(e)
    out: dict[str, list[object] | str] = {}
    if probe is not None:
      for case in cases:
        try:
          probe([case])
        except Exception as e:  # pylint: disable=broad-except
          out[case.name] = _error(e)
    rest = [c for c in cases if c.name not in out]
    if len(rest) == len(cases) == 1:
      return {rest[0].name: failed}
    # (Where no probe raised, the run of them all would raise again.)
    parts = ([rest[:len(rest) // 2], rest[len(rest) // 2:]]
             if len(rest) == len(cases) else [rest])
    for part in parts:
      if part:
        out.update(self._halved(part, run))
    return out

  def _halved(self, cases, run) -> dict[str, list[object] | str]:
    try:
      return dict(zip([c.name for c in cases], run(cases)))
    except Exception as e:  # pylint: disable=broad-except
      if len(cases) == 1:
        return {cases[0].name: _error(e)}
    half = len(cases) // 2
    return {**self._halved(cases[:half], run),
            **self._halved(cases[half:], run)}

  def _run(self, cases: Sequence[spec_cases.Case]
           ) -> dict[str, list[np.ndarray] | str]:
    """One compiled program of the cases: for each, XLA's results of the
    first example, the engine's of both, and the engine's under ``jax.vmap``
    of the two (the cases with arguments): ``[xla1, engine1, None,
    engine2, vmapped]``, each a list of results, or the case's error."""
    jax, xla = self.jax, self.xla

    def run(cs):
      text = combined_module(cs, reference=True)
      prog, reference = self.program(cs), xla.xla_function(text,
                                                             self.program(cs))
      bs = [c for c in cs if c.args]
      vprog = jax.vmap(self.program(bs), in_axes=_stacked(bs)[0]) if bs \
          else (lambda *a: [])
      # One program: where the engine's computation is XLA's module's, XLA
      # merges the two (the same computation gives the same bits), and
      # compiles the rest once. Cases marked `apart` are compiled apart.
      a1, a2 = _flat_args(cs), _second_example(cs)
      if any(c.apart for c in cs):
        # XLA:CPU's executable of a rng_bit_generator of a type other than
        # unsigned says its result is of the unsigned type (JAX believes it
        # from the second call on): its bits, as the module's type.
        ref1 = [_as_type(o, a) for o, a in zip(reference(*a1),
                                               prog.out_avals)]
        engine1, engine2, vmapped = jax.jit(lambda a1, a2, ab: [
            prog(*a1), prog(*a2), vprog(*ab)])(a1, a2, _stacked(bs)[1])
        outs = [ref1, engine1, None, engine2, vmapped]
      else:
        outs = jax.jit(lambda a1, a2, ab: [
            reference(*a1), prog(*a1), None, prog(*a2), vprog(*ab)])(
                a1, a2, _stacked(bs)[1])
      parts = [_split(o, cs) if o is not None else [None] * len(cs)
               for o in outs[:4]]
      vparts = dict(zip([c.name for c in bs], _split(outs[4], bs)))
      return [[*[p[k] for p in parts], vparts.get(c.name)]
              for k, c in enumerate(cs)]

    def probe(cs):
      jax.eval_shape(self.program(cs), *_flat_args(cs))
      bs = [c for c in cs if c.args]
      if bs:
        a, s_ = _stacked(bs)
        jax.eval_shape(jax.vmap(self.program(bs), in_axes=a), *s_)

    return self._together(cases, run, probe)

  def _values(self, cases: Sequence[spec_cases.Case]
              ) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """The values' and the batching's outcomes of each case."""
    runs = self._run(cases)
    values, batched = {}, {}
    for case in cases:
      r = runs[case.name]
      if isinstance(r, str):
        values[case.name] = (ERROR, r)
        continue
      xla1, engine1, _, engine2, vmapped = r
      checks = [compare(a, b, case.tol) for a, b in zip(engine1, xla1)]
      bad = [c for c in checks if c not in (EXACT, CLOSE)]
      values[case.name] = ((WRONG, bad[0]) if bad else
                           (CLOSE if CLOSE in checks else EXACT, ""))
      if vmapped is not None:
        loop = [np.stack([a, b]) for a, b in zip(engine1, engine2)]
        checks = [compare(a, b, case.batch_tol) for a, b in
                  zip(vmapped, loop)]
        bad = [c for c in checks if c not in (EXACT, CLOSE)]
        batched[case.name] = bad[0] if bad else (CLOSE if CLOSE in checks
                                                 else EXACT)
    return values, batched

  def _differentiated(self, cases: Sequence[spec_cases.Case]
                      ) -> dict[str, str]:
    """``jax.jvp`` of the program against that of the lax equivalent."""
    jax = self.jax

    def tangents(cs):
      out = []
      for c in cs:
        rng = np.random.default_rng(zlib.crc32(c.name.encode()))
        out += [_tangent(a, rng, jax.dtypes.float0)
                for i, a in enumerate(c.args) if i not in c.unbatched]
      return out

    def primals(cs):
      return [a for c in cs for i, a in enumerate(c.args)
              if i not in c.unbatched]

    def of_varying(fn, cs):
      """`fn` of the arguments that vary (the others held, with no
      tangent: JAX differentiates no reduction's initial value)."""
      fixed = _unbatched(cs)
      args = _flat_args(cs)

      def f(*varying):
        it = iter(varying)
        return fn(*[args[i] if i in fixed else next(it)
                    for i in range(len(args))])
      return f

    def reference(cs):
      def fn(*args):
        outs, i = [], 0
        for c in cs:
          outs += list(c.lax_fn(*args[i:i + len(c.args)]))
          i += len(c.args)
        return outs
      return fn

    def both(cs):
      prog, ref = (of_varying(f, cs) for f in (self.program(cs),
                                               reference(cs)))
      return lambda p, t: [jax.jvp(prog, p, t)[1], jax.jvp(ref, p, t)[1]]

    def run(cs):
      got, want = jax.jit(both(cs))(primals(cs), tangents(cs))
      return list(zip(_split(got, cs), _split(want, cs)))

    def probe(cs):
      jax.eval_shape(both(cs), primals(cs), tangents(cs))

    def jax_cannot(name):
      """Whether JAX's derivative of the lax equivalent fails too."""
      cs = [c for c in cases if c.name == name]
      ref = of_varying(reference(cs), cs)
      try:
        jax.eval_shape(lambda p, t: jax.jvp(ref, p, t), primals(cs),
                       tangents(cs))
      except Exception:  # pylint: disable=broad-except
        return True
      return False

    out = {}
    for name, r in self._together(cases, run, probe).items():
      if isinstance(r, str):
        out[name] = (f"{NOT_DIFFERENTIABLE}: JAX's derivative of the lax "
                     f"equivalent fails too: {r}" if jax_cannot(name)
                     else f"error: {r}")
        continue
      tol = 1e-12 if "64" in name.split("[")[1] else 1e-6
      checks = [compare(a, b, tol) for a, b in zip(*r)]
      bad = [c for c in checks if c not in (EXACT, CLOSE)]
      out[name] = bad[0] if bad else (CLOSE if CLOSE in checks else EXACT)
    return out


def _tangent(a: np.ndarray, rng: np.random.Generator,
             float0: np.dtype) -> np.ndarray:
  """A random tangent of `a` (float0 zeros for integers and booleans)."""
  if a.dtype.kind in "biu" or a.dtype == np.bool_:
    return np.zeros(a.shape, float0)
  t = rng.standard_normal(a.shape)
  if np.iscomplexobj(a):
    t = t + 1j * rng.standard_normal(a.shape)
  return t.astype(a.dtype)


def _groups(cases: Sequence[spec_cases.Case], size: int = 1000
            ) -> Iterator[list[spec_cases.Case]]:
  """The cases by element type, in runs of at most `size`."""
  by_type: dict[str, list[spec_cases.Case]] = {}
  for c in cases:
    by_type.setdefault(c.ty, []).append(c)
  for group in by_type.values():
    for i in range(0, len(group), size):
      yield group[i:i + size]


def work(names: Sequence[str], one_by_one: bool = False) -> None:
  """The worker: runs the named cases, printing an outcome line for each
  (`one_by_one`: each case its own program)."""
  from jax._src import config  # pylint: disable=g-import-not-at-top
  wanted = set(names)
  cases = [c for c in spec_cases.cases() if c.name in wanted]
  emit = lambda o: print("OUTCOME " + json.dumps(dataclasses.asdict(o)),
                         flush=True)
  runner = _Runner(emit)
  with config.enable_x64(True):
    for group in _groups(cases, 1 if one_by_one else 1000):
      runner.group(group)
  print("DONE", flush=True)


# The parent: workers in subprocesses; the cases that kill one, found.

def _worker(names: Sequence[str], one_by_one: bool = False,
            environ: Mapping[str, str] | None = None
            ) -> tuple[dict[str, Outcome], list[str], int, str]:
  """Runs a worker on `names` (in `environ`, by default this process's
  environment): its outcomes, the names of the group it was computing when
  it ended, its exit status, and the end of its stderr."""
  environ = os.environ if environ is None else environ
  env = {**environ, "PYTHONPATH": os.pathsep.join(
      [str(ROOT), environ.get("PYTHONPATH", "")])}
  proc = subprocess.run(
      [sys.executable, "-m", "tests.stablehlo.conformance", "--worker"]
      + ["--one-by-one"] * one_by_one,
      input=json.dumps(list(names)), capture_output=True, text=True,
      cwd=ROOT, env=env, check=False)
  outcomes, group = {}, []
  for line in proc.stdout.splitlines():
    if line.startswith("OUTCOME "):
      o = Outcome(**json.loads(line[len("OUTCOME "):]))
      outcomes[o.name] = o
    elif line.startswith("GROUP "):
      group = json.loads(line[len("GROUP "):])
  if "DONE" not in proc.stdout.splitlines() and proc.returncode == 0:
    proc.returncode = -1
  return outcomes, [n for n in group if n not in outcomes], \
      proc.returncode, proc.stderr[-2000:]


def _aborted(name: str, status: int, stderr: str) -> Outcome:
  op, ty, variant = _parse_name(name)
  last = [ln for ln in stderr.splitlines() if ln.strip()][-3:]
  return Outcome(name, op, ty, variant, ABORT,
                 f"the process ended with status {status}: "
                 + " | ".join(last)[:500])


def _parse_name(name: str) -> tuple[str, str, str]:
  op, rest = name.split("[", 1)
  parts = rest[:-1].split("][")
  return op, parts[0], parts[1] if len(parts) > 1 else ""


def _isolate(names: Sequence[str], out: dict[str, Outcome],
             environ: Mapping[str, str] | None = None) -> None:
  """Runs `names` in workers; where one dies, reruns the group it was
  computing case by case, until each case that kills a worker is alone (an
  ``abort``), and the others go on in a new worker."""
  outcomes, group, status, stderr = _worker(names, environ=environ)
  out.update(outcomes)
  rest = [n for n in names if n not in outcomes]
  suspects = group or rest[:1]
  others = [n for n in rest if n not in suspects]
  while suspects:
    outcomes, group, status, stderr = _worker(suspects, one_by_one=True,
                                              environ=environ)
    out.update(outcomes)
    left = [n for n in suspects if n not in outcomes]
    if left:
      dead = group[0] if group else left[0]
      out[dead] = _aborted(dead, status, stderr)
      left.remove(dead)
    suspects = left
  if others:
    _isolate(others, out, environ)


def run(names: Sequence[str] | None = None, workers: int | None = None,
        environ: Mapping[str, str] | None = None) -> dict[str, Outcome]:
  """The outcome of each case (all of them by default), by name.

  The cases run in `workers` processes at once (by default as many as
  there are CPUs, at most 2; ``$STABLEHLO_CONFORMANCE_WORKERS``), each
  given whole element types, in the environment `environ` (by default this
  process's: ``XLA_FLAGS`` there is XLA's).
  """
  if names is None:
    names = [c.name for c in spec_cases.cases()]
  if workers is None:
    workers = int(os.environ.get("STABLEHLO_CONFORMANCE_WORKERS",
                                 min(2, os.cpu_count() or 1)))
  types = list(dict.fromkeys(_parse_name(n)[1] for n in names))
  shares = [[n for n in names if types.index(_parse_name(n)[1]) % workers
             == k] for k in range(workers)]
  out: dict[str, Outcome] = {}
  with concurrent.futures.ThreadPoolExecutor(workers) as pool:
    for f in [pool.submit(_isolate, share, out, environ) for share in shares
              if share]:
      f.result()
  return {n: out[n] for n in names}


# Instruction sets: what XLA:CPU computes may depend on the one it compiles
# for (`_FLUSHED_BY_SOME_CPUS`); the outcomes must not.

_MAX_ISA = "--xla_cpu_max_isa"


def cpu_flags() -> frozenset[str]:
  """The CPU's feature flags (``avx2``, ``avx512f``...): Linux's
  ``/proc/cpuinfo``; none where it cannot be read."""
  try:
    text = pathlib.Path("/proc/cpuinfo").read_text(encoding="utf-8")
  except OSError:
    return frozenset()
  for line in text.splitlines():
    if line.startswith("flags"):
      return frozenset(line.split(":", 1)[1].split())
  return frozenset()


def another_instruction_set(environ: Mapping[str, str],
                            flags: frozenset[str]
                            ) -> tuple[dict[str, str], str] | None:
  """An environment in which XLA:CPU compiles for another instruction set
  than in `environ`, and what it is.

  Where `environ`'s ``XLA_FLAGS`` limits the instruction set
  (``--xla_cpu_max_isa``), the same without the limit (the CPU's widest),
  unless the limit is AVX2 or wider on a CPU without AVX-512 (`flags`),
  where that is the same one; else, on a CPU with AVX-512, with
  ``--xla_cpu_max_isa=AVX2``; else None (nothing wider than AVX2 to
  compare with).
  """
  words = environ.get("XLA_FLAGS", "").split()
  limits = [w for w in words if w.split("=", 1)[0] == _MAX_ISA]
  if limits and "avx512f" not in flags and all(
      w.split("=", 1)[-1].upper().startswith("AVX") for w in limits):
    return None
  if limits:
    rest = [w for w in words if w not in limits]
    return ({**environ, "XLA_FLAGS": " ".join(rest)},
            f"without {' '.join(limits)}: the CPU's widest instruction set")
  if "avx512f" not in flags:
    return None
  limit = f"{_MAX_ISA}=AVX2"
  return ({**environ, "XLA_FLAGS": " ".join([*words, limit])},
          f"XLA_FLAGS={limit}")


def _summary(outcomes: dict[str, Outcome]) -> str:
  counts: dict[str, int] = {}
  for o in outcomes.values():
    counts[o.status] = counts.get(o.status, 0) + 1
  failing = [f"{o.name}: {'; '.join(o.failures())}"
             for o in outcomes.values() if o.failures()]
  return "\n".join([json.dumps(counts), *failing])


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--worker", action="store_true",
                      help="run the case names read from stdin (JSON)")
  parser.add_argument("--one-by-one", action="store_true",
                      help="(a worker) each case in a program of its own")
  parser.add_argument("--ops", help="comma-separated ops (default: all)")
  parser.add_argument("--types", help="comma-separated types (default: all)")
  parser.add_argument("--json", help="write the outcomes to this file")
  args = parser.parse_args(argv)
  if args.worker:
    work(json.load(sys.stdin), args.one_by_one)
    return
  cases = spec_cases.cases(args.ops and args.ops.split(","),
                           args.types and args.types.split(","))
  start = time.perf_counter()
  outcomes = run([c.name for c in cases])
  print(_summary(outcomes))
  print(f"{len(outcomes)} cases in {time.perf_counter() - start:.1f} s")
  if args.json:
    pathlib.Path(args.json).write_text(json.dumps(
        [dataclasses.asdict(o) for o in outcomes.values()], indent=0))


if __name__ == "__main__":
  with contextlib.suppress(BrokenPipeError):
    main()
