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
"""Runs the op matrix (op families x transformations of call_tf) and reports.

Every case is one transformation of `call_tf(f)` for one op family `f`
(`op_matrix_cases.py`), compared with a TensorFlow-only reference: a Python
loop of TF calls for `vmap`, `tf.GradientTape` for `grad`, `tape.jacobian`
(without pfor) for `jacrev`/`jacfwd`, nested tapes for `hessian`, and the
tape's Jacobian times the tangent for `jvp`. Where TF's own tape raises
(an op without a registered gradient), the reference is central finite
differences of the next lower TF reference, with a looser tolerance.

Each case ends as one of:

- `ok`: the result matches the reference;
- `refused`: the call raised; the case is then run again with
  `vmap_method="sequential"`, and a refusal that runs there is a `gap`;
- `WRONG`: a result that differs from the reference;
- `crash`: the process died (or hung past the timeout) in the case;
- `skip`: the family cannot run here (a package missing), with the reason.

Cases run in worker subprocesses (up to two at a time by default), each
running a batch of whole families (heavy ones first) and the next worker
taking the next batch, so that both stay busy; a worker that dies is
restarted after the case it died in, which is recorded as a crash. So an
abort is recorded, not fatal.

Regenerate `docs/op-matrix.md` with the test environment's Python:

  $VENV/bin/python tests/calltf/op_matrix_report.py --markdown docs/op-matrix.md

or run `tests/calltf/test_op_matrix.py` with `JAX_FORK_OP_MATRIX_REPORT` set
to the path of the Markdown file to write.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import pathlib
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from typing import Any, Callable, Iterable, Sequence

HERE = pathlib.Path(__file__).resolve().parent
if str(HERE) not in sys.path:
  sys.path.insert(0, str(HERE))

import op_matrix_cases as cases  # noqa: E402

_START = "@@op-matrix-start "
_RESULT = "@@op-matrix-result "
OUTCOMES = ("ok", "gap", "refused", "error", "WRONG", "crash", "skip")
# Finite differences: step and the tolerance of a reference made with them.
_FD_STEP = 1e-2
_FD_TOL = 3e-2
# Seconds one case may take before it counts as a hang (a crash). The
# slowest cases (the Hessians of a Keras recurrent layer or of an ODE
# solve) take about 150 s on a loaded 2-core machine.
DEFAULT_TIMEOUT = float(os.environ.get("JAX_FORK_OP_MATRIX_TIMEOUT", 900))
# A forward case refused where nothing should stop the engine.
ENGINE_MAY = "**the engine may differentiate it**"
# Ops of every graph, not worth naming in an error.
_PLUMBING_OPS = frozenset({
    "Placeholder", "Identity", "Const", "NoOp", "ReadVariableOp",
    "StatefulPartitionedCall", "PartitionedCall", "Reshape", "Pack", "Mul",
    "AddV2", "Sum", "Cast", "Shape", "StridedSlice", "ExpandDims", "Squeeze",
    "Sub", "Neg", "Fill", "ConcatV2"})


def full() -> bool:
  """Whether every case runs (the default, and CI's).

  `JAX_FORK_OP_MATRIX_QUICK=1` runs the first-order columns only
  (`cases.DEFAULT_TRANSFORMS`) and no heavy case (`Family.heavy`): a
  quicker local run.
  """
  return os.environ.get("JAX_FORK_OP_MATRIX_QUICK", "") in ("", "0")


def default_workers() -> int:
  return int(os.environ.get("JAX_FORK_OP_MATRIX_WORKERS",
                            min(2, os.cpu_count() or 1)))


# ------------------------------------------------------------ the worker


def _first_line(e: BaseException, limit: int = 300) -> str:
  text = str(e).strip().splitlines()
  line = text[0] if text else ""
  return line[:limit]


# Results: one tensor, or tuples, lists and dicts of them, nested. Tuples
# and lists are one structure (TF's while_loop gives a tuple eagerly and a
# list in a graph): both are made tuples. Dicts keep their keys, in the
# sorted order in which JAX and tf.nest flatten them.


def _leaves(tree: Any) -> list[Any]:
  if isinstance(tree, dict):
    return [leaf for k in sorted(tree) for leaf in _leaves(tree[k])]
  if isinstance(tree, (tuple, list)):
    return [leaf for t in tree for leaf in _leaves(t)]
  return [tree]


def _rebuild(like: Any, leaves: Sequence[Any]) -> Any:
  it = iter(leaves)

  def build(t):
    if isinstance(t, dict):
      return {k: build(t[k]) for k in sorted(t)}
    if isinstance(t, (tuple, list)):
      return tuple(build(x) for x in t)
    return next(it)
  return build(like)


def _tree_map(fn: Callable[..., Any], *trees: Any) -> Any:
  return _rebuild(trees[0], [fn(*xs) for xs in zip(*map(_leaves, trees))])


def _tree_map_deep(fn: Callable[[Any], Any], tree: Any) -> Any:
  """`fn` of every array of nested tuples, lists (made tuples) and dicts."""
  if isinstance(tree, dict):
    return {k: _tree_map_deep(fn, tree[k]) for k in sorted(tree)}
  if isinstance(tree, (tuple, list)):
    return tuple(_tree_map_deep(fn, t) for t in tree)
  return fn(tree)


def _graph_result_shapes(fn: Callable[[Any], Any], x: Any
                         ) -> list[tuple[int, ...]]:
  """The shapes of `fn`'s results at `x` as TF's graph has them (traced as
  `tf.function` traces, autograph on), each unknown size the eager call's."""
  import tensorflow as tf
  concrete = tf.function(fn).get_concrete_function(
      tf.TensorSpec(x.shape, tf.float32))
  eager = _leaves(fn(tf.constant(x)))
  return [tuple(d if d is not None else e.shape[i]
                for i, d in enumerate(t.shape.as_list()))
          for t, e in zip(tf.nest.flatten(concrete.structured_outputs),
                          eager)]


class _Family:
  """A built family in a worker: its function, inputs and references."""

  def __init__(self, family: cases.Family):
    import numpy as np
    import tensorflow as tf
    self.family = family
    built = family.build()
    self.fn = built.fn
    self.x = built.x
    rng = np.random.default_rng(1)
    noise = lambda n: (0.1 * rng.standard_normal((n, *self.x.shape))).astype(
        np.float32)
    self.xs = (built.xs if built.xs is not None
               else self.x[None] + noise(cases.BATCH))
    self.xs2 = (built.xs2 if built.xs2 is not None
                else self.x[None] + noise(cases.HESSIAN_BATCH))
    self.t = rng.standard_normal(self.x.shape).astype(np.float32)
    self.kinks = (built.kinks if built.kinks is not None
                  else cases.kinks(self.x))
    # The jitted Jacobians of the default method, kept for `agreement`.
    self._jitted: dict[str, Callable[[Any], Any]] = {}
    y = self.fn(tf.constant(self.x))
    # One weight per result (a tuple of results: a tuple of weights). The
    # shapes are those TF's graph gives: an eager kernel may return another
    # shape for an empty result than its own shape function says.
    shapes = self.shapes = _graph_result_shapes(self.fn, self.x)
    w_rng = np.random.default_rng(2)
    self.w = _rebuild(y, [w_rng.standard_normal(s).astype(np.float32)
                          for s in shapes])
    self._refs: dict[Any, Any] = {}
    self._op_types: set[str] | None = None
    self._audit: dict[str, str | None] | None = None

  # TF-only references. `xla` runs them compiled by XLA.

  def _tf(self, name: str, xla: bool) -> Callable[[Any], Any]:
    import numpy as np
    import tensorflow as tf
    fn = self.fn
    ws = [tf.constant(w) for w in _leaves(self.w)]
    zero = tf.UnconnectedGradients.ZERO

    def value(x):
      return fn(x)

    def weighted(x):
      return tf.add_n([tf.reduce_sum(y * w)
                       for y, w in zip(_leaves(fn(x)), ws)])

    def grad(x):
      if self.family.forward_reference:
        return tf.add_n([tf.tensordot(w, j, len(w.shape))
                         for w, j in zip(ws, _leaves(forward_jac(x)))])
      with tf.GradientTape() as tape:
        tape.watch(x)
        s = weighted(x)
      return tape.gradient(s, x, unconnected_gradients=zero)

    def jac(x):
      if self.family.forward_reference:
        return forward_jac(x)
      with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
      return _rebuild(y, [
          tape.jacobian(leaf, x, unconnected_gradients=zero,
                        experimental_use_pfor=False)
          for leaf in _leaves(y)])

    def forward_jac(x):
      # One ForwardAccumulator per input element: d fn / d x[i].
      n = int(np.prod(x.shape))
      columns = []
      for i in range(n):
        with tf.autodiff.ForwardAccumulator(
            x, tf.reshape(tf.one_hot(i, n, dtype=x.dtype), x.shape)) as acc:
          y = fn(x)
        columns.append([acc.jvp(leaf, unconnected_gradients=zero)
                        for leaf in _leaves(y)])
      return _rebuild(y, [
          tf.reshape(tf.stack([c[k] for c in columns], -1),
                     tf.concat([tf.shape(leaf), tf.shape(x)], 0))
          for k, leaf in enumerate(_leaves(y))])

    def hess(x):
      with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
          inner.watch(x)
          s = weighted(x)
        g = inner.gradient(s, x, unconnected_gradients=zero)
      return outer.jacobian(g, x, unconnected_gradients=zero,
                            experimental_use_pfor=False)

    f = {"value": value, "grad": grad, "jac": jac, "hess": hess}[name]
    if xla:
      f = tf.function(f, jit_compile=True, autograph=False)
    shapes = self.shapes

    def run(x):
      out = _tree_map(lambda t: t.numpy(), f(tf.constant(x)))
      if name in ("value", "jac"):
        # An empty result (and its Jacobian) as TF's graph shapes it: an
        # eager kernel may give another shape to what holds no value
        # (SelfAdjointEigV2's vectors without compute_v, a scalar).
        tail = x.shape if name == "jac" else ()
        out = _rebuild(out, [np.zeros(s + tail, a.dtype) if 0 in s else a
                             for a, s in zip(_leaves(out), shapes)])
      return out
    return run

  def _fd(self, f: Callable[[Any], Any], x: Any) -> Any:
    """Central differences of `f` at `x`: shape f(x).shape + x.shape."""
    import numpy as np
    flat = x.reshape(-1)
    if not flat.size:  # no element to perturb: an empty Jacobian
      return _tree_map(lambda a: np.zeros(np.shape(a) + x.shape), f(x))
    columns = []
    for i in range(flat.size):
      e = np.zeros_like(flat)
      e[i] = _FD_STEP
      columns.append(_tree_map(
          lambda a, b: (np.asarray(a, np.float64) - np.asarray(b, np.float64))
          / (2 * _FD_STEP), f((flat + e).reshape(x.shape)),
          f((flat - e).reshape(x.shape))))
    like = f(x)
    return _rebuild(like, [
        np.stack([_leaves(c)[k] for c in columns], -1).reshape(
            np.shape(leaf) + x.shape) for k, leaf in enumerate(_leaves(like))])

  def reference(self, name: str, x: Any, xla: bool) -> tuple[Any, str]:
    """TF's `name` ("value", "grad", "jac", "hess") at `x`, and its source.

    Where TF's tape raises, finite differences of the next lower reference.
    """
    key = (name, x.tobytes(), xla)
    if key in self._refs:
      return self._refs[key]
    source = "tf (XLA)" if xla else "tf"
    try:
      if name == "hess" and self.family.hessian_by_differences:
        raise LookupError("TF's tapes find no second derivative through "
                          "a gradient kernel TF does not differentiate")
      result = self._tf(name, xla)(x)
    except Exception as e:  # noqa: BLE001 (any TF error: use another way)
      if name == "value":
        raise
      lower = {"grad": "value", "jac": "value", "hess": "grad"}[name]
      if name == "grad":
        f = lambda z: sum(float((a * w).sum()) for a, w in zip(
            _leaves(self.reference("value", z, xla)[0]), _leaves(self.w)))
      else:
        f = lambda z: self.reference(lower, z, xla)[0]
      result = self._fd(f, x)
      source = (f"finite differences (TF's {name} raised "
                f"{type(e).__name__}: {_first_line(e, 120)})")
    self._refs[key] = (result, source)
    return result, source

  def expected(self, transform: str, xla: bool) -> tuple[Any, str]:
    import numpy as np

    def stack(name, xs):
      pairs = [self.reference(name, xi, xla) for xi in xs]
      return _tree_map(lambda *a: np.stack(a), *[p[0] for p in pairs]), (
          pairs[0][1])

    if transform in ("value", "jit"):
      return self.reference("value", self.x, xla)
    if transform in ("jit(vmap)", "vmap"):
      return stack("value", self.xs)
    if transform == "jit(vmap(grad))":
      return stack("grad", self.xs)
    if transform in ("jit(jacrev)", "jit(jacfwd)", "jacrev", "jacfwd"):
      return self.reference("jac", self.x, xla)
    if transform in ("jit(hessian)", "hessian"):
      return self.reference("hess", self.x, xla)
    if transform == "jit(vmap(hessian))":
      return stack("hess", self.xs2)
    if transform == "jvp":
      jac, source = self.reference("jac", self.x, xla)
      value, _ = self.reference("value", self.x, xla)
      return (value, _tree_map(lambda j: np.tensordot(j, self.t, self.x.ndim),
                               jac)), source
    raise ValueError(f"unknown transformation {transform!r}")

  def run(self, transform: str, vmap_method: str | None) -> Any:
    """The transformation of `call_tf(fn, vmap_method=...)`, as NumPy."""
    import jax
    from jax.experimental import jax2tf
    import jax.numpy as jnp
    import numpy as np
    g = jax2tf.call_tf(self.fn, vmap_method=vmap_method)
    w = self.w
    s = lambda x: sum(jnp.sum(y * wi)
                      for y, wi in zip(_leaves(g(x)), _leaves(w)))
    run = {
        "value": lambda: g(self.x),
        "jit": lambda: jax.jit(g)(self.x),
        "jit(vmap)": lambda: jax.jit(jax.vmap(g))(self.xs),
        "vmap": lambda: jax.vmap(g)(self.xs),
        "jit(vmap(grad))": lambda: jax.jit(jax.vmap(jax.grad(s)))(self.xs),
        "jit(jacrev)": lambda: jax.jit(jax.jacrev(g))(self.x),
        "jacrev": lambda: jax.jacrev(g)(self.x),
        "jit(jacfwd)": lambda: jax.jit(jax.jacfwd(g))(self.x),
        "jacfwd": lambda: jax.jacfwd(g)(self.x),
        "jit(hessian)": lambda: jax.jit(jax.hessian(s))(self.x),
        "hessian": lambda: jax.hessian(s)(self.x),
        "jit(vmap(hessian))": lambda: jax.jit(
            jax.vmap(jax.hessian(s)))(self.xs2),
        "jvp": lambda: jax.jvp(g, (self.x,), (self.t,)),
    }[transform]
    if transform in ("jit(jacrev)", "jit(jacfwd)") and vmap_method is None:
      jacobian = jax.jacrev if transform == "jit(jacrev)" else jax.jacfwd
      jitted = jax.jit(jacobian(g))
      result = _tree_map_deep(np.asarray, jitted(self.x))
      self._jitted[transform] = jitted  # (where it ran: not if refused)
      return result
    return _tree_map_deep(np.asarray, run())

  def agreement(self) -> dict[str, Any] | None:
    """Whether `jit(jacfwd)` and `jit(jacrev)` agree at the kink point.

    One Jacobian per function: both modes come from one derivative
    (TF's gradients, or JAX's of the module), also where ties, kinks and
    zeros make conventions differ (`cases.kinks`). Runs the compiled
    functions of the two cases (they ran in this process); None where
    either did not run here, or was refused.
    """
    import numpy as np
    fwd, rev = (self._jitted.get(t) for t in ("jit(jacfwd)", "jit(jacrev)"))
    if fwd is None or rev is None:
      return None
    try:
      a, b = (_tree_map_deep(np.asarray, f(self.kinks)) for f in (fwd, rev))
    except Exception as e:  # noqa: BLE001 (recorded: a failure to agree)
      return {"ok": False, "why": f"raised at the kinks: "
              f"{type(e).__name__}: {_first_line(e)}"}
    ok, why, err = compare(a, b, self.family.tol)
    return {"ok": ok, "why": why, "error_rel": err}

  def audit(self) -> dict[str, str | None]:
    """Where call_tf's engine (the function's module, transformed by JAX)
    is not used for this family, and why (call_tf's own reasons, as its
    debug log gives them): `eager` and `jit` for vmap (None: the engine),
    `derivatives` under jit (None: JAX's derivatives of the module)."""
    if self._audit is None:
      self._audit = _engine_audit(self.fn, self.x)
    return self._audit

  def op_types(self) -> set[str]:
    """The op types of the function's graph (calls followed)."""
    if self._op_types is None:
      import tensorflow as tf
      concrete = tf.function(self.fn).get_concrete_function(
          tf.TensorSpec(self.x.shape, tf.float32))
      gdef = concrete.graph.as_graph_def()
      types = {n.op for n in gdef.node} | {
          n.op for f in gdef.library.function for n in f.node_def}
      self._op_types = types - _PLUMBING_OPS
    return self._op_types


def is_clear_refusal(e: BaseException, named_ops: Sequence[str]) -> bool:
  """Whether an error is a clear refusal: it is call_tf's and names the op.

  call_tf's own messages (`call_tf_lib.errors`, and upstream's "Error
  compiling TensorFlow function" with TF's message naming the op) name
  `call_tf`; a refusal names an op of the function, or is one of call_tf's
  own errors about something that is not an op (a second derivative of an
  embedded module). Any other exception (a `TypeError` from inside JAX or
  TF, an `InvalidArgumentError` of TF's executor, a verifier error of a
  lowering) is a Python error, not a refusal.
  """
  message = str(e)
  if "call_tf" not in message:
    return False
  own = (type(e).__module__.endswith("call_tf_lib.errors")
         or message.lstrip().startswith(("call_tf", "jax.vmap of call_tf",
                                         "Forward-mode differentiation")))
  return bool(named_ops) or own


def compare(actual: Any, expected: Any, tol: float) -> tuple[bool, str, float]:
  """(match, why not, relative error) of two arrays or tuples of arrays.

  The error is max |actual - expected| / max(max |expected|, 1e-4): a zero
  where the reference is not gives 1.
  """
  import numpy as np
  if isinstance(expected, dict):
    if not isinstance(actual, dict) or sorted(actual) != sorted(expected):
      return False, f"structure {type(actual).__name__} differs", float("inf")
    return compare(tuple(actual[k] for k in sorted(actual)),
                   tuple(expected[k] for k in sorted(expected)), tol)
  if isinstance(expected, tuple):
    if not isinstance(actual, tuple) or len(actual) != len(expected):
      return False, f"structure {type(actual).__name__} differs", float("inf")
    worst = (True, "", 0.)
    for a, e in zip(actual, expected):
      r = compare(a, e, tol)
      if not r[0] or r[2] > worst[2]:
        worst = r
      if not r[0]:
        return r
    return worst
  a = np.asarray(actual, np.float64)
  e = np.asarray(expected, np.float64)
  if a.shape != e.shape:
    return False, f"shape {a.shape}, reference {e.shape}", float("inf")
  finite = np.isfinite(e)
  if not np.array_equal(np.isfinite(a), finite):
    bad = int(np.sum(np.isfinite(a) != finite))
    return False, f"{bad} non-finite entries differ (NaN/inf)", float("inf")
  if not finite.any():
    return True, "", 0.
  scale = max(float(np.max(np.abs(e[finite]))), 1e-4)
  err = float(np.max(np.abs(a[finite] - e[finite]))) / scale
  if err > tol:
    return False, f"relative error {err:.3g} > tolerance {tol:g}", err
  return True, "", err


def _attempt(fam: _Family, transform: str, method: str | None) -> dict:
  """One run of one case: its outcome, error and comparison."""
  family = fam.family
  second = transform in cases.SECOND_ORDER
  tol = family.tol2 if second else family.tol
  try:
    actual = fam.run(transform, method)
  except Exception as e:  # noqa: BLE001 (any error is a refusal to record)
    message = str(e)
    named = sorted({t for t in fam.op_types() if t in message}
                   | set(re.findall(r"\bop '(\w+)'", message)))
    return {"outcome": "refused", "error_type": type(e).__name__,
            "error": _first_line(e), "names_op": named,
            "clear": is_clear_refusal(e, named)}
  refs = [fam.expected(transform, xla=False)]
  if family.xla_reference and transform.startswith("jit"):
    refs.append(fam.expected(transform, xla=True))
  results = []
  for expected, source in refs:
    this_tol = max(tol, _FD_TOL) if source.startswith("finite") else tol
    ok, why, err = compare(actual, expected, this_tol)
    results.append((ok, why, err, source))
    if ok:
      break
  ok, why, err, source = results[-1] if not any(r[0] for r in results) else (
      next(r for r in results if r[0]))
  record = {"outcome": "ok" if ok else "WRONG", "error_rel": err,
            "reference": source}
  if not ok:
    record["mismatch"] = "; ".join(f"{r[3]}: {r[1]}" for r in results)
  return record


def _engine_audit(fn: Callable[[Any], Any], x: Any) -> dict[str, str | None]:
  """call_tf's reasons for not using the engine on `fn` at `x` (see
  `_Family.audit`), read from call_tf's own decisions."""
  import logging
  import tensorflow as tf
  from jax.experimental.jax2tf.call_tf_lib.stablehlo import exactness
  from jax.experimental.jax2tf.call_tf_lib.stablehlo import path
  from jax.experimental.jax2tf.call_tf_lib.tf_function import captures

  def traced(*args):
    res = fn(*args)
    captures.keep_constants_constant()  # as call_tf's trace does
    return res
  f = tf.function(traced, autograph=False, jit_compile=True)
  sig = (tf.TensorSpec(x.shape, tf.float32),)
  audit: dict[str, str | None] = {}
  for key, staged in (("eager", False), ("jit", True)):
    try:
      audit[key] = path.why_not(f, sig, staged=staged)
    except Exception as e:  # noqa: BLE001 (the trace itself failed)
      audit[key] = f"{type(e).__name__}: {_first_line(e)}"
  audit["derivatives"] = None
  if audit["jit"] is None:
    messages: list[str] = []

    class Keep(logging.Handler):
      def emit(self, record):
        messages.append(record.getMessage())
    logger = logging.getLogger("jax.experimental.jax2tf.call_tf_lib.stablehlo")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
      if exactness._module_to_differentiate(f, sig, staged=True) is None:  # noqa: SLF001
        audit["derivatives"] = next(
            (m.split("gradients: ", 1)[-1] for m in messages
             if "TensorFlow's gradients" in m), "TF's gradients")
    finally:
      logger.removeHandler(handler)
      logger.setLevel(level)
  return audit


def run_case(fams: dict[str, _Family], cid: str) -> dict:
  """Runs one case in this process; the record the report keeps."""
  name, transform = cid.split(":", 1)
  family = cases.FAMILY_BY_NAME[name]
  record: dict[str, Any] = {"case": cid, "family": name,
                            "transform": transform}
  if transform in family.skip:
    record.update(outcome="skip", reason=family.skip[transform])
    return record
  if (transform in family.heavy or transform not in cases.DEFAULT_TRANSFORMS
      ) and not full():
    record.update(outcome="skip", reason="JAX_FORK_OP_MATRIX_QUICK=1 "
                  "runs the first-order columns only, without the heavy "
                  "cases")
    return record
  if family.requires:
    try:
      __import__(family.requires)
    except Exception as e:  # noqa: BLE001 (an import that fails: skip)
      record.update(outcome="skip",
                    reason=f"{family.requires} does not import: "
                           f"{type(e).__name__}: {_first_line(e)}")
      return record
  start = time.perf_counter()
  try:
    if name not in fams:
      fams[name] = _Family(family)
    fam = fams[name]
  except Exception as e:  # noqa: BLE001 (the family cannot be made here)
    record.update(outcome="skip", reason=f"the family does not build: "
                  f"{type(e).__name__}: {_first_line(e)}")
    return record
  try:
    record.update(_attempt(fam, transform, None))
    if transform == "jit(jacfwd)":
      record["agreement"] = fam.agreement()
    unclear = record["outcome"] == "refused" and not record["clear"]
    if record["outcome"] == "refused":
      seq = _attempt(fam, transform, "sequential")
      record["sequential"] = seq
      if seq["outcome"] == "ok":
        record["outcome"] = "gap"
      elif seq["outcome"] == "WRONG":
        record["outcome"] = "WRONG"
        record["mismatch"] = ("with vmap_method='sequential' (the defaults "
                              "refuse): " + seq["mismatch"])
    if unclear and record["outcome"] != "WRONG":
      record["outcome"] = "error"  # worse than a gap: no refusal at all
  except Exception as e:  # noqa: BLE001 (the reference itself failed)
    record.update(outcome="skip",
                  reason="no TF reference: " + "".join(
                      traceback.format_exception_only(type(e), e)).strip()[:300])
  if transform == cases.TRANSFORMS[0] and name in fams:
    try:
      record["engine"] = fams[name].audit()
    except Exception as e:  # noqa: BLE001 (the audit is a report's extra)
      record["engine"] = {"eager": f"audit failed: {_first_line(e)}"}
  record["seconds"] = round(time.perf_counter() - start, 2)
  return record


def worker(case_ids: Sequence[str]) -> None:
  """Runs cases in this process, one JSON line each on stdout."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  os.environ.setdefault("KERAS_BACKEND", "tensorflow")
  out = sys.stdout
  sys.stdout = sys.stderr  # TF's and the function's prints stay off the pipe
  fams: dict[str, _Family] = {}
  for cid in case_ids:
    out.write(_START + cid + "\n")
    out.flush()
    record = run_case(fams, cid)
    out.write(_RESULT + json.dumps(record) + "\n")
    out.flush()


# ------------------------------------------------------------ the driver


def _stderr_tail(path: pathlib.Path, lines: int = 12) -> str:
  text = path.read_text(errors="replace").splitlines()
  return "\n".join(text[-lines:])


def _run_chunk(case_ids: list[str], python: str, timeout: float,
               results: dict[str, dict], log: Callable[[str], None]) -> None:
  """Runs `case_ids` in worker processes, restarting after a crash."""
  remaining = list(case_ids)
  while remaining:
    with tempfile.NamedTemporaryFile("w+", suffix=".stderr",
                                     delete=False) as err_file:
      err_path = pathlib.Path(err_file.name)
    # JAX on the CPU, unless JAX_FORK_OP_MATRIX_PLATFORMS names other
    # platforms (benchmarks/accelerator.py: "" for the accelerator).
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               KERAS_BACKEND="tensorflow",
               JAX_PLATFORMS=os.environ.get("JAX_FORK_OP_MATRIX_PLATFORMS",
                                            "cpu"))
    with open(err_path, "w") as stderr:
      proc = subprocess.Popen(
          [python, str(pathlib.Path(__file__).resolve()), "--worker",
           *remaining], stdout=subprocess.PIPE, stderr=stderr, text=True,
          env=env)
    lines: queue.Queue = queue.Queue()

    def read(stream=proc.stdout):
      for line in stream:
        lines.put(line)
      lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    current = None
    started = time.monotonic()
    died = None
    while True:
      try:
        line = lines.get(timeout=max(1., timeout - (time.monotonic()
                                                     - started)))
      except queue.Empty:
        proc.kill()
        died = f"no result within {timeout:.0f} s (killed)"
        break
      if line is None:
        break
      if line.startswith(_START):
        current = line[len(_START):].strip()
        started = time.monotonic()
      elif line.startswith(_RESULT):
        record = json.loads(line[len(_RESULT):])
        results[record["case"]] = record
        remaining.remove(record["case"])
        log(f"{record['case']}: {record['outcome']}"
            f" ({record.get('seconds', 0)} s)")
        current = None
    proc.wait()
    ran = [cid for cid in case_ids if cid in results and cid not in remaining
           and "exit_status" not in results[cid]]
    if proc.returncode and current is None and not remaining:
      # Every case gave its result, and then the process died (at exit):
      # a process that used call_tf must end cleanly.
      for cid in ran:
        results[cid]["exit_status"] = proc.returncode
      log(f"the worker exited with status {proc.returncode} after its "
          "last case")
    if current is not None:
      cause = died or f"the process exited with status {proc.returncode}"
      name, transform = current.split(":", 1)
      results[current] = {"case": current, "family": name,
                          "transform": transform, "outcome": "crash",
                          "error": cause, "stderr": _stderr_tail(err_path)}
      log(f"{current}: crash ({cause})")
      remaining.remove(current)
    elif remaining:
      # Died between cases (at import, say): every remaining case crashed.
      cause = died or f"the worker exited with status {proc.returncode}"
      for cid in remaining:
        name, transform = cid.split(":", 1)
        results[cid] = {"case": cid, "family": name, "transform": transform,
                        "outcome": "crash", "error": cause,
                        "stderr": _stderr_tail(err_path)}
      remaining = []
    err_path.unlink(missing_ok=True)


# A worker process runs families until it has run about this many cases,
# then the next one starts: both workers stay busy to the end (families take
# from a second to minutes), and no process grows for the whole run. Each
# start costs an import of TensorFlow and JAX (5-7 s here): the default
# run's 1,361 cases are 4 heavy batches and 8 of these, not 15.
BATCH_CASES = 160


def _batches(case_ids: list[str]) -> list[list[str]]:
  """The cases by family, cut into worker batches: each heavy family alone,
  first, then the others, largest first, about BATCH_CASES cases a batch."""
  by_family: dict[str, list[str]] = collections.OrderedDict()
  for cid in case_ids:
    by_family.setdefault(cid.split(":", 1)[0], []).append(cid)

  def weight(fam_ids: list[str]) -> tuple[int, int]:
    family = cases.FAMILY_BY_NAME.get(fam_ids[0].split(":", 1)[0])
    heavy = family is not None and any(
        cid.split(":", 1)[1] in family.heavy for cid in fam_ids)
    return (1 if heavy else 0, len(fam_ids))

  batches: list[list[str]] = []
  last_heavy = False
  for fam_ids in sorted(by_family.values(), key=weight, reverse=True):
    heavy = bool(weight(fam_ids)[0])
    if (heavy or last_heavy or not batches
        or len(batches[-1]) >= BATCH_CASES):
      batches.append([])  # a heavy family is a batch of its own
    batches[-1].extend(fam_ids)
    last_heavy = heavy
  return batches


def run_matrix(case_ids: Iterable[str] | None = None, *,
               python: str | None = None, workers: int | None = None,
               timeout: float = DEFAULT_TIMEOUT,
               log: Callable[[str], None] = lambda s: None
               ) -> dict[str, dict]:
  """Runs the cases (all by default) in worker processes; case -> record.

  Args:
    case_ids: "family:transform" strings.
    python: the interpreter of the workers (this one by default).
    workers: processes in parallel, each taking the next batch of
      families (:data:`BATCH_CASES`) when it is done; a family stays in one
      process, so that its references are computed once.
    timeout: seconds one case may take before it counts as a crash.
    log: called with one line per finished case.
  """
  case_ids = list(case_ids if case_ids is not None else cases.all_case_ids())
  workers = max(1, workers or default_workers())
  pending = collections.deque(_batches(case_ids))
  lock = threading.Lock()
  results: dict[str, dict] = {}

  def work() -> None:
    while True:
      with lock:
        if not pending:
          return
        batch = pending.popleft()
      _run_chunk(batch, python or sys.executable, timeout, results, log)

  threads = [threading.Thread(target=work)
             for _ in range(min(workers, len(pending)))]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join()
  return {cid: results[cid] for cid in case_ids}


# ------------------------------------------------------------ the report


def counts(results: dict[str, dict]) -> dict[str, int]:
  c = collections.Counter(r["outcome"] for r in results.values())
  return {o: c.get(o, 0) for o in OUTCOMES}


def _cell(record: dict | None) -> str:
  if record is None:
    return ""
  return {"ok": "ok", "gap": "gap", "refused": "refused",
          "error": "**error**", "WRONG": "**WRONG**",
          "crash": "**crash**", "skip": "skip"}[record["outcome"]]


def _escape(text: str) -> str:
  return text.replace("|", "\\|").replace("\n", " ")


def _by_reason(entries: dict[str, str]) -> list[str]:
  """One Markdown item per reason, with the cases it explains."""
  by_reason: dict[str, list[str]] = {}
  for key, why in entries.items():
    by_reason.setdefault(why, []).append(key)
  items = ["- " + ", ".join(f"`{k}`" for k in keys) + f": {_escape(why)}"
           for why, keys in by_reason.items()]
  return items or ["- none"]


def _known_refusal(refusals: dict[str, str], cid: str) -> str | None:
  return refusals.get(cid, refusals.get(cid.split(":", 1)[0]))


def _full_run_lines(results: dict[str, dict],
                    full_run: dict[str, str]) -> list[str]:
  """The report's lines of the cases left to the full run, by reason: each
  case named with its seconds, or for a whole column, counted."""
  by_reason: dict[str, list[str]] = {}
  for cid, why in full_run.items():
    by_reason.setdefault(why, []).append(cid)
  lines = []
  for why, ids in by_reason.items():
    took = [results.get(c, {}).get("seconds") for c in ids]
    if len(ids) > 12:
      columns = sorted({c.split(":", 1)[1] for c in ids})
      what = (f"`{'`, `'.join(columns)}` of {len(ids)} families "
              f"({sum(t or 0 for t in took):.0f} s in all)")
    else:
      what = ", ".join(f"`{c}`" + (f" ({t:.0f} s)" if t is not None else "")
                       for c, t in zip(ids, took))
    lines.append(f"- {what}: {_escape(why)}")
  return lines or ["- none"]


def markdown(results: dict[str, dict], environment: dict[str, str],
             seconds: float, known: dict[str, str] | None = None,
             gaps: dict[str, str] | None = None,
             refusals: dict[str, str] | None = None,
             full_run: dict[str, str] | None = None) -> str:
  """The report: a family x transformation table, then every non-ok case.

  Args:
    results: case -> record.
    environment: versions, for the header.
    seconds: the run's wall time.
    known: known bugs, case -> the bug (cells marked `(x)`).
    gaps: known gaps, case -> why they stay.
    refusals: known refusals, family or case -> why.
    full_run: the cases the test suite leaves to its full run, case -> why.
  """
  known = known or {}
  gaps = gaps or {}
  refusals = refusals or {}
  full_run = full_run or {}
  c = counts(results)
  out = [
      "# The op matrix: TensorFlow op families x transformations of call_tf",
      "",
      "Generated from a real run of every case by",
      "`tests/calltf/op_matrix_report.py`; do not edit by hand.",
      "`tests/calltf/test_op_matrix.py` runs the same cases and fails on",
      "any WRONG or crash: in CI (`python3 build/fork.py test`) all but",
      "those left to the full run (`python3 build/fork.py test --full`,",
      "listed under \"Left to the full run\"). Regenerate with the test",
      "environment's Python (`--json run.json` keeps every record;",
      "`--previous run.json --cases FAMILY` reruns one family into it):",
      "",
      "```sh",
      "$VENV/bin/python tests/calltf/op_matrix_report.py "
      "--markdown docs/op-matrix.md",
      "```",
      "",
      "or run the test with `--full-run` and",
      "`JAX_FORK_OP_MATRIX_REPORT=docs/op-matrix.md`.",
      "",
      "Each family is a small TensorFlow function of one float32 tensor",
      "(`tests/calltf/op_matrix_cases.py`), returning a tensor, or tuples,",
      "lists and dicts of them (a list and a tuple compared as one, dict",
      "keys as they are); each cell is one transformation of `call_tf(f)`",
      "with the",
      "default `vmap_method` (`value` and `jit`: the call itself, eagerly",
      "and under `jax.jit`), compared with a TensorFlow-only reference: the",
      "eager TF call for values (a result of size 0 shaped as TF's graph",
      "shapes it), a Python loop of TF calls for `vmap`,",
      "`tf.GradientTape` for `grad`, `tape.jacobian` (without pfor) for",
      "`jacrev`/`jacfwd`, nested tapes for `hessian`, the tape's Jacobian",
      "times the tangent for `jvp`; eagerly, or under `jax.jit` where the",
      "column says so. Families marked `forward_reference` take their first",
      "derivatives from `tf.autodiff.ForwardAccumulator` instead (3-D max",
      "pooling at exact ties, where TF's eager gradient gives the whole",
      "gradient to every tied element and its tangent goes to the first).",
      "Where XLA compiles the function, each eager column must have its",
      "`jit` column's outcome (`EAGER_AND_JIT_DIFFER` lists the families",
      "where it need not). Where TF's own tape raises, the reference is",
      "central finite differences of the next lower TF reference (the",
      "details say so). `grad` and `hessian` differentiate",
      "`sum(w * f(x))` for a fixed random `w`. Stateless random ops are",
      "compared with TF compiled by XLA as well as TF eager, since XLA draws",
      "other numbers.",
      "",
      "- **ok**: matches the reference;",
      "- **gap**: raises with the defaults, runs right with",
      "  `vmap_method=\"sequential\"` (every such case should run vectorized);",
      "- **refused**: raises a clear refusal (call_tf's, naming the op), with",
      "  `sequential` too;",
      "- **error**: raises a Python error that is not a clear refusal (it",
      "  does not name `call_tf` and the op: a `TypeError` from inside JAX",
      "  or TF, an error of TF's executor, a verifier error);",
      "- **WRONG**: returns a number that differs from the reference;",
      "- **crash**: the process died or hung in the case;",
      "- **skip**: cannot run here (the reason is below).",
      "",
      "Cells marked `(x)` are known bugs the tests expect to fail today",
      "(`KNOWN_BUGS` in `tests/calltf/op_matrix_cases.py`); why each gap",
      "stays and why each refusal cannot be helped is under \"Known gaps and",
      "refusals\" (`KNOWN_GAPS`, `KNOWN_REFUSALS`); the test fails on any",
      "other gap.",
      "",
      "Environment: " + ", ".join(f"{k} {v}" for k, v in environment.items())
      + f"; {seconds:.0f} s of wall time.",
      "",
      "| outcome | cases |",
      "|---|---|",
  ]
  out += [f"| {o} | {c[o]} |" for o in OUTCOMES]
  out += ["", "| family | " + " | ".join(f"`{t}`" for t in cases.TRANSFORMS)
          + " |", "|---" * (len(cases.TRANSFORMS) + 1) + "|"]
  for family in cases.FAMILIES:
    row = []
    for t in cases.TRANSFORMS:
      cid = cases.case_id(family.name, t)
      cell = _cell(results.get(cid))
      if cid in known and cell:
        cell += " (x)"
      row.append(cell)
    if any(row):
      out.append(f"| `{family.name}` | " + " | ".join(row) + " |")
  missing = [cid for cid in cases.all_case_ids() if cid not in results]
  if missing:
    out += ["", "Not in this run (blank cells): "
            + ", ".join(f"`{cid}`" for cid in missing) + "."]
  out += ["", "## Families", "", "| family | group | function |", "|---|---|---|"]
  out += [f"| `{f.name}` | {f.group} | {_escape(f.description)} |"
          for f in cases.FAMILIES]
  out += ["", "## Where the engine is not used", ""]
  out += [line for line in audit_markdown(results).splitlines()
          if not line.startswith("<!-- engine-audit")]
  out += ["", *forward_markdown(results)]
  out += ["", "## Known gaps and refusals", "",
          "Gaps that stay (they run with `vmap_method=\"sequential\"`):", ""]
  out += _by_reason(gaps)
  out += ["", "Refusals (they fail with every `vmap_method`):", ""]
  out += _by_reason(refusals)
  out += ["", "Known bugs (cells `(x)`):", ""]
  out += _by_reason(known)
  out += ["", "## Left to the full run", "",
          "`Family.full_run` and `FULL_RUN_COLUMNS`: cases that cost most",
          "and prove least, which the test suite runs only in the full run",
          "(pytest `--full-run`, `python3 build/fork.py test --full`); their",
          "seconds in this run:", ""]
  out += _full_run_lines(results, full_run)
  out += ["", "## Every case that is not ok", ""]
  for cid, r in results.items():
    if r["outcome"] == "ok":
      continue
    line = f"- `{cid}`: **{r['outcome']}**"
    if cid in known:
      line += " (known bug)"
    elif cid in gaps and r["outcome"] == "gap":
      line += " (known gap)"
    elif r["outcome"] in ("refused", "gap") and r.get(
        "clear") is False:
      line += " (**not a clear refusal**)"
    elif r["outcome"] == "refused" and _known_refusal(refusals, cid):
      line += " (known refusal)"
    elif r["outcome"] == "gap":
      line += " (**a gap not known**)"
    if r["outcome"] == "skip":
      line += f": {_escape(r['reason'])}"
    elif r["outcome"] == "WRONG":
      line += f": {_escape(r['mismatch'])}"
    elif r["outcome"] == "crash":
      line += f": {_escape(r['error'])}; stderr ends `" + _escape(
          r.get("stderr", "").splitlines()[-1] if r.get("stderr") else "") + "`"
    else:
      named = r.get("names_op") or []
      line += (f": `{r['error_type']}: {_escape(r['error'])}`"
               + (f" (names {', '.join(named)})" if named
                  else " (names no op of the function)"))
      seq = r.get("sequential", {})
      if seq.get("outcome") == "refused":
        line += (f"; sequential: refused, `{seq['error_type']}: "
                 f"{_escape(seq['error'])}`")
      elif seq:
        line += f"; sequential: {seq['outcome']}"
        if seq.get("mismatch"):
          line += f" ({_escape(seq['mismatch'])})"
    out.append(line)
  return "\n".join(out) + "\n"


# The columns of forward mode (and of second derivatives, forward over
# reverse), and whether each is eager.
FORWARD_COLUMNS = {"jit(jacfwd)": False, "jacfwd": True, "jit(hessian)": False,
                   "hessian": True, "jit(vmap(hessian))": False, "jvp": True}
# What the forward columns refused before issue 57, by `forward_class`:
# the run of 2026-12-06 (docs/op-matrix.md then), and the two families of
# issue 57 run on that code (their jit(jacfwd), jit(hessian) and
# jit(vmap(hessian)), refused: TF's derivatives, which the policy then
# chose for softplus's selects and silu's custom gradient, do not compile).
FORWARD_REFUSALS_BEFORE = {
    "the function does not compile with XLA": 61,
    "no module for the engine": 15,
    "the derivative policy keeps TF's derivatives": 8 + 6,
    "eagerly, TF's kernels compute the function": 1,
    ENGINE_MAY: 0,
}


def forward_class(results: dict[str, dict], cid: str) -> str:
  """Why a forward-mode case is refused: the class of its reason, from
  the family's `jit` case and its engine audit (call_tf's own reasons)."""
  family, transform = cid.split(":", 1)
  jit = results.get(cases.case_id(family, "jit"), {})
  audit = results.get(cases.case_id(family, cases.TRANSFORMS[0]), {}).get(
      "engine") or {}
  if jit.get("outcome") != "ok":
    return "the function does not compile with XLA"
  if audit.get("jit"):
    return "no module for the engine"
  if FORWARD_COLUMNS.get(transform) and audit.get("eager"):
    return "eagerly, TF's kernels compute the function"
  if audit.get("derivatives"):
    return "the derivative policy keeps TF's derivatives"
  return ENGINE_MAY


def forward_markdown(results: dict[str, dict]) -> list[str]:
  """The report's section on forward mode: where jit(jacfwd) and
  jit(jacrev) agree, and why each forward case is refused."""
  agree = {f.name: results.get(cases.case_id(f.name, "jit(jacfwd)"), {}).get(
      "agreement") for f in cases.FAMILIES}
  compared = {k: v for k, v in agree.items() if v is not None}
  differ = [f"`{k}` ({_escape(v['why'])})" for k, v in compared.items()
            if not v["ok"]]
  refused = {cid: forward_class(results, cid) for cid, r in results.items()
             if cid.split(":", 1)[1] in FORWARD_COLUMNS
             and r["outcome"] in ("refused", "gap")}
  now = collections.Counter(refused.values())
  rows = [f"| {why} | {FORWARD_REFUSALS_BEFORE.get(why, 0)} | {now.get(why, 0)}"
          " |" for why in FORWARD_REFUSALS_BEFORE]
  by_class: dict[str, list[str]] = {}
  for cid, why in refused.items():
    by_class.setdefault(why, []).append(f"`{cid}`")
  return [
      "## Forward and reverse mode", "",
      "`jit(jacfwd)` and `jit(jacrev)` give one Jacobian: compared at each "
      "family's point with zeros and ties (`op_matrix_cases.kinks`: every "
      "third element 0, pairs tied), where conventions at kinks would "
      f"show, in {len(compared)} families (the other "
      f"{len(agree) - len(compared)} refuse one of the two, or did not run "
      "them): "
      + (f"{len(differ)} differ: " + ", ".join(differ) if differ
         else "all agree") + ".", "",
      "The forward columns (`jit(jacfwd)`, `jacfwd`, `jit(hessian)`, "
      "`hessian`, `jit(vmap(hessian))`, `jvp`) refused or gapped, by why "
      "(from the family's `jit` case and call_tf's engine audit); before "
      "issue 57 (the run of 2026-12-06, and its two families on that code) "
      "and now. None may be refused where the engine may differentiate the "
      "function (`test_op_matrix.py` checks it):", "",
      "| why | before | now |", "|---|---|---|", *rows, "",
      *[f"- {why}: " + ", ".join(ids) for why, ids in by_class.items()]]


AUDIT_BEGIN = ("<!-- engine-audit:begin (generated from the op matrix by "
               "`tests/calltf/op_matrix_report.py --vmap-audit`; do not "
               "edit) -->")
AUDIT_END = "<!-- engine-audit:end -->"


_OP_RE = re.compile(r"op '(\w+)'")
_NO_KERNEL_RE = re.compile(r"No registered '(\w+)' OpKernel")
_CONSTANT_RE = re.compile(r"with op (\w+) must be")


def _short_reason(reason: str) -> str:
  """call_tf's reason, as the audit's cell gives it: the op types and what
  decided, without node names or TF's generated function names (which
  change from run to run)."""
  def ops(pattern):
    return ", ".join(dict.fromkeys(pattern.findall(reason)))
  if reason.startswith("eagerly, TensorFlow's kernels run it: its "):
    why = reason.split(") ", 1)[-1]
    return f"TF's eager kernels: XLA's {ops(_OP_RE)} differs ({why})"
  if reason.startswith("XLA cannot compile it"):
    if "No registered" in reason:
      return ("pfor and TF's kernels: XLA cannot compile it (no XLA kernel "
              f"for {ops(_NO_KERNEL_RE)})")
    if "compile-time constant" in reason:
      return ("pfor and TF's kernels: XLA cannot compile it (an input of "
              f"{ops(_CONSTANT_RE)} must be a compile-time constant)")
    return ("pfor and TF's kernels: XLA cannot compile it (call_tf refuses "
            f"{ops(_OP_RE)})")
  if reason.startswith("the TF gradient of "):
    return (f"TF's gradients: TF's gradient of {ops(_OP_RE)} differs from "
            "the derivative of its lowering")
  if reason.startswith("an op of its module branches or kinks"):
    return ("TF's gradients: the module branches or kinks where JAX's "
            "derivative may not be TF's gradient")
  if reason.startswith("its StableHLO module has ops without a JAX rule"):
    return "pfor: " + reason
  if reason.startswith("it has side effects"):
    return "refused: " + reason + " (never vectorized)"
  if reason.startswith("CallTfTraceError"):
    return ("refused: call_tf's trace (autograph off) cannot run it (a "
            "symbolic tensor used as a Python value)")
  return reason


def audit_markdown(results: dict[str, dict]) -> str:
  """The engine audit: every family whose transformations call_tf does not
  give the engine (eager vmap, jit(vmap), derivatives under jit), and why,
  from the records' `engine` audits."""
  rows = []
  for family in cases.FAMILIES:
    record = results.get(cases.case_id(family.name, cases.TRANSFORMS[0]))
    audit = (record or {}).get("engine")
    if not audit or not any(audit.values()):
      continue
    cells = [_escape(_short_reason(audit[k])) if audit.get(k)
             else "the engine" for k in ("eager", "jit", "derivatives")]
    if audit.get("jit") and not audit.get("derivatives"):
      cells[2] = "TF's derivatives (no module under `jit`)"
    rows.append(f"| `{family.name}` | " + " | ".join(cells) + " |")
  audited = sum(1 for r in results.values() if r.get("engine"))
  return "\n".join([
      AUDIT_BEGIN, "",
      f"Of the op matrix's {audited} families, these {len(rows)} do not "
      "take the engine (the function's StableHLO module, batched and "
      "differentiated by JAX) everywhere; every other one does, eagerly "
      "and under `jit`. Each cell is call_tf's own reason (its debug log's).",
      "",
      "| family | eager `vmap` | `jit(vmap)` | derivatives under `jit` |",
      "|---|---|---|---|", *rows, "", AUDIT_END])


def write_audit(path: pathlib.Path, results: dict[str, dict]) -> None:
  """Replaces the audit between its markers in `path` (docs/vmap.md)."""
  text = path.read_text()
  start, end = text.index(AUDIT_BEGIN), text.index(AUDIT_END) + len(AUDIT_END)
  path.write_text(text[:start] + audit_markdown(results) + text[end:])


def environment() -> dict[str, str]:
  """Versions of what the matrix ran on (imports them in this process)."""
  env = {}
  for name in ("jax", "jaxlib", "tensorflow", "tensorflow_probability",
               "keras"):
    try:
      env[name] = __import__(name).__version__
    except Exception:  # noqa: BLE001 (not installed: not listed)
      pass
  env["date"] = datetime.datetime.now(datetime.timezone.utc).strftime(
      "%Y-%m-%d")
  return env


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
  parser.add_argument("--markdown", type=pathlib.Path,
                      help="write the report here (docs/op-matrix.md)")
  parser.add_argument("--vmap-audit", type=pathlib.Path,
                      help="rewrite the engine audit between its markers "
                           "in this file (docs/vmap.md)")
  parser.add_argument("--json", type=pathlib.Path,
                      help="write every case's record here")
  parser.add_argument("--previous", type=pathlib.Path,
                      help="a --json file of an earlier run: its records are "
                           "kept for the cases not run now")
  parser.add_argument("--cases", nargs="*",
                      help="family or family:transform names (default all, "
                           "or none with --previous: only write the report)")
  parser.add_argument("--workers", type=int, default=None)
  parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                      help="seconds one case may take (then it is a crash)")
  args = parser.parse_args(argv)
  if args.worker is not None:
    worker(args.worker)
    return 0
  os.environ.pop("JAX_FORK_OP_MATRIX_QUICK", None)  # the report: every case
  results: dict[str, dict] = {}
  seconds = 0.
  if args.previous:
    previous = json.loads(args.previous.read_text())
    results, seconds = previous["results"], previous["seconds"]
  ids = cases.all_case_ids()
  if args.cases or not args.previous:
    if args.cases:
      ids = [i for i in ids
             if i in args.cases or i.split(":")[0] in args.cases]
    start = time.perf_counter()
    results.update(run_matrix(ids, workers=args.workers, timeout=args.timeout,
                              log=lambda s: print(s, flush=True)))
    seconds += time.perf_counter() - start
  results = {cid: results[cid] for cid in cases.all_case_ids()
             if cid in results}
  print(json.dumps(counts(results)))
  if args.json:
    args.json.write_text(json.dumps({"seconds": seconds, "results": results},
                                    indent=1) + "\n")
  if args.vmap_audit:
    write_audit(args.vmap_audit, results)
  if args.markdown:
    args.markdown.write_text(markdown(results, environment(), seconds,
                                      cases.KNOWN_BUGS, cases.KNOWN_GAPS,
                                      cases.KNOWN_REFUSALS,
                                      cases.full_run_case_ids()))
  return 0


if __name__ == "__main__":
  sys.exit(main())
