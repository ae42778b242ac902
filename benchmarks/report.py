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
"""The report: Markdown tables, the targets, and log-log PNG plots.

Works from the ``results.json`` data alone, so a report can be redrawn
without measuring again (``python3 -m benchmarks.report benchmarks/results``)
and two runs compared (``python3 -m benchmarks.report --compare
benchmarks/results/before benchmarks/results``).
"""

from __future__ import annotations

from collections.abc import Sequence
import json
import pathlib
import sys
from typing import Any

README_BEGIN = "<!-- measured:begin (written by benchmarks/run.py) -->"
README_END = "<!-- measured:end -->"

# Plot styles: the reference and the vectorized path stand out.
_STYLE = {
    "native": dict(color="black", lw=2.2, marker="o"),
    "vectorized": dict(color="tab:blue", lw=1.6, marker="s", ls="--"),
    "vectorized_pure": dict(color="tab:blue", lw=2.2, marker="s"),
    "sequential": dict(color="tab:orange", marker="v"),
    "expand_dims": dict(color="tab:olive", marker="^"),
    "broadcast_all": dict(color="tab:cyan", marker="<"),
    "batch_polymorphic": dict(color="tab:purple", marker=">"),
    "loop": dict(color="tab:red", marker="x"),
    "loop_of_jitted": dict(color="tab:red", marker="+", ls=":"),
    "tf": dict(color="tab:green", marker="D"),
    "tf2jax": dict(color="tab:brown", marker="*"),
    "fwdacc": dict(color="tab:pink", marker="P", ls="-."),
}
# The steady-state target at N >= 100 (issues 9 and 12: "stays where it is").
STEADY_LIMIT = 1.1
# Issue 11: forward mode within this factor of min(native, tf2jax).
FORWARD_LIMIT = 1.5
# Issue 12: eager vmap of a reused call_tf object within this factor of native.
EAGER_LIMIT = 3.0
# Issue 12: RSS growth over the eager calls after warm-up, MB.
MEMORY_LIMIT_MB = 10.0
VECTORIZED = ("vectorized_pure", "vectorized")
HAND_LOOPS = ("loop_of_jitted", "loop")


class Results:
  """Indexed access to the records of one run."""

  def __init__(self, data: dict[str, Any]):
    self.data = data
    self.env = data["environment"]
    self.sizes: list[int] = data["sizes"]
    self.workloads = data["workloads"]
    self.methods = data["methods"]
    self.by_key = {(r["workload"], r["method"], r["mode"], r["n"]): r
                   for r in data["records"]}


  def workload(self, w: str) -> dict[str, Any]:
    return next(x for x in self.workloads if x["name"] == w)

  def is_forward(self, w: str) -> bool:
    """Issue 11's workloads (forward mode, and jacrev next to it)."""
    x = self.workload(w)
    return bool(x.get("family")) and x.get("derivative") not in (
        None, "jacrev") or (x.get("family") == "lj27")

  def wrong(self, w: str, m: str, mode: str, n: int) -> bool:
    """Whether the result disagreed with the eager, unbatched reference."""
    r = self.rec(w, m, mode, n)
    tol = self.workload(w).get("tol", 1e-4)
    return bool(r and r.get("max_rel_err") is not None
                and r["max_rel_err"] > tol)

  def ratio(self, w: str, m: str, mode: str, n: int,
            refs: Sequence[str] = ("native",)) -> float | None:
    """Steady time of ``m`` over that of the fastest of ``refs``: paired.

    The ratio to each reference is paired by round (:func:`paired_ratio`);
    the ratio to the fastest reference is the largest of them (a minimum
    taken per round would favour whichever reference was luckier). Wrong
    results of a reference are left out.
    """
    r = self.rec(w, m, mode, n)
    qs = [paired_ratio(r, [self.rec(w, x, mode, n)]) for x in refs
          if self.rec(w, x, mode, n) and not self.wrong(w, x, mode, n)]
    qs = [q for q in qs if q is not None]
    return max(qs) if qs else None

  def rec(self, w: str, m: str, mode: str, n: int) -> dict[str, Any] | None:
    return self.by_key.get((w, m, mode, n))

  def get(self, w: str, m: str, mode: str, n: int,
          field: str = "steady") -> float | None:
    r = self.rec(w, m, mode, n)
    return None if r is None else r.get(field)

  def methods_of(self, w: str, mode: str) -> list[str]:
    names = [m["name"] for m in self.methods]
    return [m for m in names
            if any(self.rec(w, m, mode, n) is not None for n in self.sizes)]

  def extrapolated(self, w: str, m: str, mode: str, n: int) -> float | None:
    """Linear in N from the largest measured N below ``n``."""
    below = [k for k in self.sizes
             if k < n and self.get(w, m, mode, k) is not None]
    if not below:
      return None
    k = max(below)
    return self.get(w, m, mode, k) * n / k


def paired_ratio(rec: dict[str, Any] | None,
                 refs: Sequence[dict[str, Any]]) -> float | None:
  """The median, over sampling rounds, of ``rec``'s time over the refs'.

  The samples of all methods are taken round-robin, so sample ``i`` of every
  method was taken in the same round, seconds apart. The machine is shared
  and its speed drifts (here by 2-4x within minutes); the ratio within a
  round cancels the drift, and the median over rounds discards the rounds
  one method was unlucky in. Without samples: the ratio of the medians.
  """
  if not rec or not refs or rec.get("steady") is None:
    return None
  if any(r.get("steady") is None for r in refs):
    return None
  samples = [rec.get("samples") or []] + [r.get("samples") or [] for r in refs]
  rounds = min(len(s) for s in samples)
  if rounds == 0:
    return rec["steady"] / min(r["steady"] for r in refs)
  import statistics  # pylint: disable=g-import-not-at-top
  return statistics.median(
      samples[0][i] / min(s[i] for s in samples[1:]) for i in range(rounds))


def _ratio_text(q: float | None) -> str:
  if q is None:
    return ""
  return f" ({q:.2f}x)" if q < 10 else f" ({q:.0f}x)"


def fmt_time(t: float | None) -> str:
  """Seconds, in the unit that reads best."""
  if t is None:
    return "—"
  if t < 1e-3:
    return f"{t * 1e6:.0f} µs" if t >= 1e-5 else f"{t * 1e6:.1f} µs"
  if t < 1:
    return f"{t * 1e3:.1f} ms" if t < 0.1 else f"{t * 1e3:.0f} ms"
  return f"{t:.1f} s"


def _ratio(t: float | None, ref: float | None) -> str:
  if t is None or not ref:
    return ""
  return f" ({t / ref:.2f}x)" if t / ref < 10 else f" ({t / ref:.0f}x)"


def _cell(res: Results, w: str, m: str, mode: str, n: int, field: str,
          ref_method: str = "native") -> str:
  r = res.rec(w, m, mode, n)
  if r is None:
    return ""
  if r.get("error"):
    return "fails"
  t = r.get(field)
  if t is None:
    est = res.extrapolated(w, m, mode, n) if field == "steady" else None
    return f"*≈{fmt_time(est)}*" if est is not None else "*skipped*"
  mark = " **wrong**" if res.wrong(w, m, mode, n) else ""
  if m == ref_method:
    return fmt_time(t) + mark
  if field == "steady":
    # Paired by sampling round (see paired_ratio).
    return fmt_time(t) + _ratio_text(res.ratio(w, m, mode, n,
                                               (ref_method,))) + mark
  ref = res.get(w, ref_method, "jit", n, field)
  return fmt_time(t) + _ratio(t, ref) + mark


def table(res: Results, w: str, mode: str, field: str) -> str:
  """One Markdown table: methods x batch sizes."""
  head = "| method | " + " | ".join(f"N={n}" for n in res.sizes) + " |"
  sep = "|---|" + "---:|" * len(res.sizes)
  rows = [head, sep]
  for m in res.methods_of(w, mode):
    cells = [_cell(res, w, m, mode, n, field) for n in res.sizes]
    rows.append(f"| {m} | " + " | ".join(cells) + " |")
  return "\n".join(rows)


def _worst(res: Results, w: str, m: str, refs: Sequence[str],
           sizes: Sequence[int]) -> tuple[float | None, int | None]:
  """The largest paired ratio of ``m`` to the fastest of ``refs`` (jit)."""
  worst, at = None, None
  for n in sizes:
    q = res.ratio(w, m, "jit", n, refs)
    if q is None:
      continue
    if worst is None or q > worst:
      worst, at = q, n
  return worst, at


def targets(res: Results) -> list[tuple[str, str, str, str]]:
  """The issue's targets: (target, workload, measured, verdict) rows."""
  rows = []
  names = [w["name"] for w in res.workloads]
  big = [n for n in res.sizes if n >= 100]

  best_ref = lambda w: ("native", "tf2jax")
  forward = [w for w in names if res.is_forward(w)]
  names = [w for w in names if not res.is_forward(w)]

  for w in names:
    for m in VECTORIZED:
      worst, at = _worst(res, w, m, best_ref(w), big)
      if worst is None:
        continue
      rows.append((f"{m} within {STEADY_LIMIT}x of min(native, tf2jax), jit, "
                   "N >= 100", w, f"worst {worst:.2f}x (N={at})",
                   "met" if worst <= STEADY_LIMIT else "NOT met"))
  for w in forward:
    d = res.workload(w).get("derivative")
    if d not in ("jacfwd", "hessian", "jvp", "jacrev_jacfwd", "jacrev"):
      continue
    worst, at = _worst(res, w, "vectorized", best_ref(w), res.sizes)
    if worst is None:
      continue
    issue = d in ("jacfwd", "hessian")
    rows.append((f"{d} within {FORWARD_LIMIT}x of min(native, tf2jax), jit, "
                 "every N" + ("" if issue else " (reported, no target)"), w,
                 f"worst {worst:.2f}x (N={at})",
                 ("met" if worst <= FORWARD_LIMIT else "NOT met") if issue
                 else ("within" if worst <= FORWARD_LIMIT else "beyond")))
  for w in names:
    for m in VECTORIZED:
      cs = [res.get(w, m, "jit", n, "compile") for n in res.sizes
            if 10 <= n <= 10000]
      cs = [c for c in cs if c]
      if len(cs) < 2:
        continue
      spread = max(cs) / min(cs)
      rows.append((f"{m} compile time flat, N=10..10^4 (max/min <= 1.5)", w,
                   f"{fmt_time(min(cs))} .. {fmt_time(max(cs))} "
                   f"({spread:.2f}x)", "met" if spread <= 1.5 else "NOT met"))
    c10 = res.get(w, "loop", "jit", 10, "compile")
    c100 = res.get(w, "loop", "jit", 100, "compile")
    if c10 and c100:
      rows.append(("hand loop under jit: compile grows with N", w,
                   f"{fmt_time(c10)} (N=10) -> {fmt_time(c100)} (N=100)",
                   "grows" if c100 > 2 * c10 else "flat"))
  n = 1000
  if n in res.sizes:
    for w in names:
      loops = [(res.get(w, m, md, n), f"{m}/{md}") for m in HAND_LOOPS
               for md in ("jit", "eager")]
      loops = [lp for lp in loops if lp[0]]
      vec = res.get(w, "vectorized", "jit", n)
      if not loops or not vec:
        continue
      t, which = min(loops)
      rows.append(("vectorized >= 100x faster than the hand loop, N=1000", w,
                   f"{t / vec:.0f}x (vs {which}: {fmt_time(t)})",
                   "met" if t / vec >= 100 else "NOT met"))
  if "energy_jac" in names:
    for m in VECTORIZED:
      worst, at = _worst(res, "energy_jac", m, ("native",), res.sizes)
      if worst is not None:
        rows.append((f"jacrev via {m} within 1.5x of native, every N",
                     "energy_jac", f"worst {worst:.2f}x (N={at})",
                     "met" if worst <= 1.5 else "NOT met"))
  return rows


def forward_table(res: Results) -> str:
  """Issue 11: forward mode (and jacrev) per workload and N, jit."""
  rows = ["| workload | N | native | tf2jax | fork | fork / min | fwdacc | "
          "fwdacc / min |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
  names = [w["name"] for w in res.workloads]
  fwd = [w for w in names if res.is_forward(w)]
  if "energy_jac" in names and fwd:
    fwd.insert(0, "energy_jac")
  for w in fwd:
    for n in res.sizes:
      t = {m: res.get(w, m, "jit", n) for m in
           ("native", "tf2jax", "vectorized", "fwdacc")}
      if not t["vectorized"] and not t["native"]:
        continue

      def c(m):
        return (fmt_time(t[m]) + (" **wrong**" if res.wrong(w, m, "jit", n)
                                  else "")) if t[m] else "—"

      def ratio(m, n=n, w=w):
        q = res.ratio(w, m, "jit", n, ("native", "tf2jax"))
        return f"{q:.2f}x" if q else "—"
      rows.append(f"| {w} | {n} | {c('native')} | {c('tf2jax')} | "
                  f"{c('vectorized')} | {ratio('vectorized')} | {c('fwdacc')}"
                  f" | {ratio('fwdacc')} |")
  return "\n".join(rows)


def eager_table(data: dict[str, Any]) -> str:
  """Issue 12: eager vmap at one N, every method, ratio to native."""
  e = data.get("eager")
  if not e:
    return ""
  methods = [m["name"] for m in e["methods"]]
  rows = ["| workload | " + " | ".join(methods) + " |",
          "|---|" + "---:|" * len(methods)]
  for w in dict.fromkeys(r["workload"] for r in e["rows"]):
    by = {r["method"]: r for r in e["rows"] if r["workload"] == w}
    nat = by.get("native")
    cells = []
    for m in methods:
      r = by.get(m, {})
      if r.get("error"):
        cells.append("fails")
      elif r.get("steady") is None:
        cells.append("—")
      else:
        cells.append(fmt_time(r["steady"]) + (
            "" if m == "native" else _ratio_text(paired_ratio(r, [nat]))))
    rows.append(f"| {w} | " + " | ".join(cells) + " |")
  return "\n".join(rows)


def first_call_table(data: dict[str, Any]) -> str:
  """Issue 12: first call under jit in fresh processes."""
  fc = data.get("first_call")
  if not fc:
    return ""
  before = any("fork_before" in s for s in fc["summary"].values())
  rows = ["| workload | native | fork | tf2jax | TF (vectorized_map) | "
          + ("fork before (older wheel) | " if before else "")
          + "fork - native (of the minima) | issue's fork - native | "
          "target | verdict |",
          "|---|---:|---:|---:|---:|" + ("---:|" if before else "")
          + "---:|---:|---:|---|"]
  for w, s in fc["summary"].items():
    cell = lambda m: (f"{fmt_time(s[m]['median'])} (min "
                      f"{fmt_time(s[m]['min'])})" if m in s else "—")
    extra, target = _first_call_extra(s), s.get("target_extra")
    rows.append(
        f"| {w} (N={fc['n']}) | {cell('native')} | {cell('fork')} | "
        f"{cell('tf2jax')} | {cell('tf')} | "
        + (f"{cell('fork_before')} | " if before else "")
        + f"{fmt_time(extra)} (median of pairs {fmt_time(s.get('extra'))})"
        " | "
        f"{fmt_time(s.get('issue_extra'))} | <= {fmt_time(target)} | "
        + ("met" if extra is not None and target and extra <= target
           else "NOT met" if extra is not None and target else "") + " |")
  return "\n".join(rows)


def _first_call_extra(s: dict[str, Any]) -> float | None:
  """The fork's extra first-call time: min(fork) - min(native)."""
  if "fork" not in s or "native" not in s:
    return None
  return s["fork"]["min"] - s["native"]["min"]


def first_call_phases_table(data: dict[str, Any]) -> str:
  """The fork's first call by phase (median over repeats)."""
  fc = data.get("first_call")
  if not fc:
    return ""
  ws = [w for w, s in fc["summary"].items() if "fork" in s]
  names = []
  for w in ws:
    for p in fc["summary"][w]["fork"]["phases"]:
      if p not in names:
        names.append(p)
  order = ["TF tracing: the unbatched function",
           "TF tracing: inside the vectorized function (pfor's loop body)",
           "TF autograph (pfor's tf.function wrappers)",
           "TF pfor conversion (PFor.convert)",
           "TF to HLO (experimental_get_compiler_ir)",
           "overlay: side-effect scan of TF graphs",
           "JAX trace: JAX and overlay Python", "JAX lowering", "XLA compile",
           "run"]
  names = [n for n in order if n in names] + [n for n in names
                                              if n not in order]
  rows = ["| phase | " + " | ".join(ws) + " |", "|---|" + "---:|" * len(ws)]
  totals = {w: sum(fc["summary"][w]["fork"]["phases"].values()) for w in ws}
  tf_share = {w: sum(v for k, v in fc["summary"][w]["fork"]["phases"].items()
                     if k.startswith("TF ")) for w in ws}
  for n in names:
    cells = []
    for w in ws:
      v = fc["summary"][w]["fork"]["phases"].get(n, 0.)
      cells.append(f"{fmt_time(v)}")
    rows.append(f"| {n} | " + " | ".join(cells) + " |")
  rows.append("| **TensorFlow's own (the TF rows)** | " + " | ".join(
      f"**{fmt_time(tf_share[w])}** ({100 * tf_share[w] / totals[w]:.0f}%)"
      for w in ws) + " |")
  rows.append("| sum of phases (medians) | " + " | ".join(
      fmt_time(totals[w]) for w in ws) + " |")
  native = {w: fc["summary"][w].get("native", {}).get("phases", {})
            for w in ws}
  rows.append("| native JAX: trace + lower + XLA compile + run | " + " | ".join(
      fmt_time(sum(v for k, v in native[w].items() if not k.startswith(
          "build"))) for w in ws) + " |")
  return "\n".join(rows)


def memory_table(data: dict[str, Any]) -> str:
  """Issue 12: RSS over eager calls, fork and native."""
  mem = data.get("memory")
  if not mem:
    return ""
  rows = ["| scenario | impl | start | after warm-up | end (before clear) | "
          "growth after warm-up | after clear_caches + gc | after "
          "malloc_trim | TF FuncGraphs alive: end / after clear |",
          "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
  mb = lambda v: "—" if v is None else f"{v:.0f} MB"
  for r in mem["runs"]:
    s = r.get("summary") or {}
    if not s:
      rows.append(f"| {r['scenario']} | {r['impl']} | fails: "
                  f"{r.get('error', '')} |||||||")
      continue
    if "warm_mb" in s:
      warm = mb(s["warm_mb"])
      growth = f"{s['growth_after_warmup_mb']:+.1f} MB"
    else:
      warm = f"{mb(s.get('sizes 1..200'))} (1..200)"
      growth = (f"{s['sizes 1..200 again'] - s['sizes 1..200']:+.1f} MB "
                "(1..200 again); "
                f"{s['sizes 201..400'] - s['sizes 1..200 again']:+.1f} MB "
                "(201..400)")
    rows.append(f"| {r['scenario']} | {r['impl']} | {mb(s['start_mb'])} | "
                f"{warm} | {mb(s['before_clear_mb'])} | {growth} | "
                f"{mb(s['cleared_mb'])} | {mb(s['trimmed_mb'])} | "
                f"{s.get('funcgraphs_before_clear')} / "
                f"{s.get('funcgraphs_cleared')} |")
  return "\n".join(rows)


def dispatch_table(data: dict[str, Any]) -> str:
  """Issue 8: jitted calls at N=1, with and without an effect."""
  rows_in = data.get("dispatch")
  if not rows_in:
    return ""
  nat = next((r for r in rows_in if r["case"] == "native"), None)
  rows = ["| case | effects in the jaxpr | steady, jit, N=1 |",
          "|---|---|---:|"]
  for r in rows_in:
    t = ("fails: " + r["error"] if r.get("error")
         else fmt_time(r["steady"]) + (
             "" if r["case"] == "native"
             else _ratio_text(paired_ratio(r, [nat] if nat else []))))
    rows.append(f"| `{r['case']}`: {r['title']} | "
                f"{', '.join(r.get('effects') or []) or 'none'} | {t} |")
  return "\n".join(rows)


def issue_targets(data: dict[str, Any]) -> list[tuple[str, str, str, str]]:
  """Issue 12's and 8's targets (eager, first call, memory, dispatch)."""
  rows = []
  e = data.get("eager")
  if e:
    for w in dict.fromkeys(r["workload"] for r in e["rows"]):
      by = {r["method"]: r for r in e["rows"] if r["workload"] == w}
      nat = by.get("native")
      for m in ("fork_reused", "fork_tf_function"):
        q = paired_ratio(by.get(m), [nat] if nat else [])
        if q:
          rows.append((f"eager vmap, {m}, within {EAGER_LIMIT:g}x of native "
                       f"eager, N={e['n']}", w, f"{q:.2f}x "
                       f"({fmt_time(by[m]['steady'])} vs "
                       f"{fmt_time(nat['steady'])})",
                       "met" if q <= EAGER_LIMIT else "NOT met"))
  fc = data.get("first_call")
  if fc:
    for w, s in fc["summary"].items():
      extra = _first_call_extra(s)
      if extra is not None and s.get("target_extra"):
        rows.append(("first jit call, fresh process: fork - native <= half "
                     "the issue's", f"{w} (N={fc['n']})",
                     f"{fmt_time(extra)} (of the minima; median of pairs "
                     f"{fmt_time(s.get('extra'))}; issue: "
                     f"{fmt_time(s['issue_extra'])}, target <= "
                     f"{fmt_time(s['target_extra'])})",
                     "met" if extra <= s["target_extra"] else "NOT met"))
  mem = data.get("memory")
  if mem:
    for r in mem["runs"]:
      s = r.get("summary") or {}
      if r["impl"] != "fork" or not s:
        continue
      if r["scenario"] in ("one_object", "per_example_grads"):
        g = s["growth_after_warmup_mb"]
        what = ("eager calls" if r["scenario"] == "one_object"
                else "eager vmap(grad) calls")
        rows.append((f"RSS over {s['calls']} {what} of one call_tf object"
                     f", growth after warm-up < {MEMORY_LIMIT_MB:g} MB",
                     "mlp128", f"{g:+.1f} MB", "met" if g < MEMORY_LIMIT_MB
                     else "NOT met"))
      elif r["scenario"] == "many_objects":
        g = s["growth_last_half_mb"]
        rows.append((f"RSS over {s['calls']} new call_tf objects: bounded "
                     f"(growth over the last half < {MEMORY_LIMIT_MB:g} MB)",
                     "mlp128", f"{g:+.1f} MB over the last half; "
                     f"{s['end_mb'] - s['start_mb']:+.0f} MB in all",
                     "met" if g < MEMORY_LIMIT_MB else "NOT met"))
      elif r["scenario"] == "batch_sizes":
        g = s["sizes 1..200 again"] - s["sizes 1..200"]
        rows.append(("RSS over batch sizes 1..200, again: bounded "
                     f"(second pass grows < {MEMORY_LIMIT_MB:g} MB)", "mlp128",
                     f"{g:+.1f} MB", "met" if g < MEMORY_LIMIT_MB
                     else "NOT met"))
      if r["scenario"] in ("batch_sizes", "many_objects"):
        left = s.get("funcgraphs_cleared")
        rows.append(("jax.clear_caches() releases the fork's TF traces "
                     "(FuncGraphs alive after clear + gc)",
                     f"mlp128, {r['scenario']}",
                     f"{s.get('funcgraphs_before_clear')} -> {left}; RSS "
                     f"{s['before_clear_mb']:.0f} -> {s['cleared_mb']:.0f} MB "
                     f"(start {s['start_mb']:.0f}, malloc_trim "
                     f"{s['trimmed_mb']:.0f})",
                     "met" if left == 0 else "NOT met"))
  d = data.get("dispatch")
  if d:
    by = {r["case"]: r for r in d}
    nat = by.get("native")
    pure = by.get("pure", {})
    q = paired_ratio(pure, [nat]) if nat else None
    if q:
      ok = not pure.get("effects") and q <= 1.2
      rows.append(("pure TF function: no effect, jit dispatch about native "
                   "(<= 1.2x), N=1", "small",
                   f"{q:.2f}x, effects: "
                   f"{pure.get('effects') or 'none'}",
                   "met" if ok else "NOT met"))
    st = by.get("stateful", {})
    if "effects" in st:
      rows.append(("stateful TF function (tf.random.uniform) keeps its "
                   "effect", "small + random",
                   f"effects: {st.get('effects') or 'none'}"
                   + (f", {fmt_time(st['steady'])}" if st.get("steady")
                      else ""),
                   "met" if st.get("effects") else "NOT met"))
  return rows


def side_effects_table(res: Results) -> str:
  """Steady jit time with has_side_effects=True (default) against False."""
  head = ("| workload | " + " | ".join(f"N={n}" for n in res.sizes) + " |")
  rows = [head, "|---|" + "---:|" * len(res.sizes)]
  for w in (w["name"] for w in res.workloads):
    if res.is_forward(w):
      continue
    cells = []
    for n in res.sizes:
      t_eff = res.get(w, "vectorized", "jit", n)
      t_pure = res.get(w, "vectorized_pure", "jit", n)
      cells.append("" if not (t_eff and t_pure) else
                   f"{fmt_time(t_eff)} / {fmt_time(t_pure)}")
    rows.append(f"| {w} | " + " | ".join(cells) + " |")
  return "\n".join(rows)


def breakdown_table(res: Results, n: int) -> str:
  """Where the first jit call's time goes, at batch size ``n``."""
  rows = ["| workload | method | trace | lower | XLA compile | first call |",
          "|---|---|---:|---:|---:|---:|"]
  for w in (w["name"] for w in res.workloads):
    for m in ("native", "vectorized_pure", "tf2jax"):
      r = res.rec(w, m, "jit", n)
      if r is None or r.get("trace") is None:
        continue
      rows.append(f"| {w} | {m} | {fmt_time(r['trace'])} | "
                  f"{fmt_time(r['lower'])} | {fmt_time(r['xla_compile'])} | "
                  f"{fmt_time(r['first_call'])} |")
  return "\n".join(rows)


def _env_line(res: Results) -> str:
  e = res.env
  return (f"Measured {e['date']} UTC on {e['machine']} ({e['backend']}); "
          f"jax {e['jax']}, jaxlib {e['jaxlib']}, tensorflow {e['tensorflow']}"
          f", tf2jax {e['tf2jax']}, Python {e['python']}. Run time "
          f"{e.get('total_seconds', 0):.0f} s: `{e.get('command', '')}`.")


def targets_table(res: Results) -> str:
  rows = ["| target | workload | measured | verdict |", "|---|---|---|---|"]
  rows += [f"| {t} | {w} | {m} | {v} |" for t, w, m, v in
           [*targets(res), *issue_targets(res.data)]]
  rows += [f"| section `{name}` | | crashed: `{msg}` | not measured |"
           for name, msg in res.data.get("section_errors", {}).items()]
  return "\n".join(rows)


def _issue_sections(res: Results, heading: str) -> list[str]:
  """Forward mode, eager, first call, memory, dispatch: Markdown parts."""
  parts = []
  ft = forward_table(res)
  if ft.count("\n") > 1:
    parts += [f"{heading} Forward mode under jit (issue 11)", "",
              "Time per call of the batch; `fork` is `vmap` of the fork's "
              "derivative of `call_tf(f)` (its JVP rule: tangents from "
              "`tf.autodiff.ForwardAccumulator` where exact, else a double "
              "VJP); `fwdacc` the same derivative written by hand with "
              "the accumulator (see methods.py); "
              "ratios to the faster of native JAX and tf2jax, leaving out a "
              "**wrong** result (disagrees with the eager, unbatched jnp "
              "reference).", "", ft, ""]
  et = eager_table(res.data)
  if et:
    parts += [f"{heading} Eager vmap, N={res.data['eager']['n']} (issue 12)",
              "", "No `jax.jit` anywhere; median time per call, ratio to "
              "native eager JAX.", "",
              "\n".join(f"- `{m['name']}`: {m['title']}"
                        for m in res.data["eager"]["methods"]), "", et, ""]
  fc = first_call_table(res.data)
  if fc:
    f = res.data["first_call"]
    parts += [f"{heading} First call under jit, fresh process (issue 12)", "",
              f"Median of {f['repeats']} fresh processes per method, "
              "interleaved; the extra is the median of per-repeat "
              "(fork - native) differences.", "", fc, "",
              "The fork's first call by phase (exclusive times, median):", "",
              first_call_phases_table(res.data), ""]
  mt = memory_table(res.data)
  if mt:
    parts += [f"{heading} Resident memory, eager vmap (issue 12)", "",
              f"Fresh process per row; N={res.data['memory']['n']}, issue "
              "12's MLP; warm-up = the first "
              f"{res.data['memory']['warmup']} calls.", "", mt, ""]
  dt = dispatch_table(res.data)
  if dt:
    parts += [f"{heading} Effects and dispatch under jit, N=1 (issue 8)", "",
              dt, ""]
  return parts


def markdown(res: Results) -> str:
  """The full report."""
  parts = ["# Batched call_tf: measured results", "", _env_line(res), "",
           "Times are per call of the whole batch (median of the samples); "
           "in parentheses the ratio to native JAX (`jax.vmap` of the jnp "
           "function), paired: the median over sampling rounds of the "
           "ratio within a round (samples are taken round-robin; the shared "
           "machine's speed drifts by 2-4x within minutes, which the "
           "pairing cancels). Targets use the same ratios. *≈* marks a linear extrapolation of a method not "
           "measured at that N (a loop, too slow); *skipped* a method not "
           "measured.", "", "## Targets", "", targets_table(res), "",
           "## has_side_effects: True (call_tf's default) / False", "",
           "Steady state under jit of the vectorized path.", "",
           side_effects_table(res), ""]
  parts += _issue_sections(res, "##")
  if res.sizes:
    n = max(res.sizes)
    parts += [f"## Where the first jit call goes (N={n}, same process)", "",
              breakdown_table(res, n), ""]
  methods_doc = "\n".join(f"- `{m['name']}`: {m['title']}"
                          for m in res.methods)
  parts += ["## Methods", "", methods_doc, ""]
  for w in res.workloads:
    name = w["name"]
    parts += [f"## {name}: {w['title']}", "", f"![{name}]({name}.png)", "",
              "Steady state under jit (median of repeats after warm-up):", "",
              table(res, name, "jit", "steady"), "",
              "Compile time under jit (first call minus steady state):", "",
              table(res, name, "jit", "compile"), ""]
    if res.methods_of(name, "eager"):
      parts += ["Eager (no jax.jit; TensorFlow without XLA):", "",
                table(res, name, "eager", "steady"), ""]
    errors = [r for r in res.data["records"]
              if r["workload"] == name and r.get("error")]
    for r in errors:
      parts.append(f"- {r['method']}/{r['mode']} N={r['n']} failed: "
                   f"`{r['error']}`")
    if errors:
      parts.append("")
  return "\n".join(parts)


def plots(res: Results, out: pathlib.Path) -> list[pathlib.Path]:
  """One PNG per workload (steady jit, compile, eager) and a ratio plot."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  written = []
  panels = (("jit", "steady", "steady state under jit"),
            ("jit", "compile", "compile (first call - steady), jit"),
            ("eager", "steady", "eager"))
  for w in res.workloads:
    name = w["name"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    for ax, (mode, field, title) in zip(axes, panels):
      for m in res.methods_of(name, mode):
        pts = [(n, res.get(name, m, mode, n, field)) for n in res.sizes]
        pts = [(n, t) for n, t in pts if t]
        if pts:
          ax.plot(*zip(*pts), label=m, **_STYLE.get(m, {}))
      ax.set_xscale("log")
      ax.set_yscale("log")
      ax.set_xlabel("batch size N")
      ax.set_ylabel("seconds")
      ax.set_title(title)
      ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{name}: {w['title']}")
    fig.tight_layout()
    path = out / f"{name}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    written.append(path)
  fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
  for ax, m in zip(axes, VECTORIZED):
    for w in res.workloads:
      name = w["name"]
      if res.is_forward(name):
        continue
      pts = [(n, res.get(name, m, "jit", n), res.get(name, "native", "jit", n))
             for n in res.sizes]
      pts = [(n, t / r) for n, t, r in pts if t and r]
      if pts:
        ax.plot(*zip(*pts), marker="o", label=name)
    ax.axhline(1.0, color="black", lw=1)
    ax.axhline(1.2, color="gray", ls="--", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("batch size N")
    ax.set_ylabel("time / native JAX time")
    ax.set_title(f"{m}: steady state under jit, ratio to native")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
  fig.tight_layout()
  path = out / "ratio_to_native.png"
  fig.savefig(path, dpi=90)
  plt.close(fig)
  written.append(path)
  return written


def write(data: dict[str, Any], out: pathlib.Path) -> None:
  """Writes results.md and the PNGs into ``out``."""
  res = Results(data)
  (out / "results.md").write_text(markdown(res) + "\n")
  plots(res, out)


def readme_block(data: dict[str, Any], out: pathlib.Path,
                 readme: pathlib.Path) -> str:
  """The measured block of the README: targets and headline tables."""
  res = Results(data)
  rel = out.relative_to(readme.parent) if out.is_relative_to(
      readme.parent) else out
  parts = [README_BEGIN, "", _env_line(res), "", "### Targets", "",
           targets_table(res), "",
           "### Steady state under jit, ratio to native JAX", "",
           f"![ratio to native]({rel}/ratio_to_native.png)", ""]
  for w in res.workloads:
    name = w["name"]
    if res.is_forward(name):
      continue
    parts += [f"**{name}** ({w['title']}):", "",
              table(res, name, "jit", "steady"), "",
              f"![{name}]({rel}/{name}.png)", ""]
  parts += _issue_sections(res, "###")
  parts += ["### has_side_effects=True (default) / False, vectorized, jit", "",
            side_effects_table(res), ""]
  if res.sizes:
    parts += [f"### First jit call, broken down (N={max(res.sizes)})", "",
              breakdown_table(res, max(res.sizes)), ""]
  parts += [f"Compile-time and eager tables: [{rel}/results.md]"
            f"({rel}/results.md).", "", README_END]
  return "\n".join(parts)


def update_readme(data: dict[str, Any], readme: pathlib.Path,
                  out: pathlib.Path) -> None:
  """Replaces the measured block of ``readme`` (appends it if missing)."""
  text = readme.read_text() if readme.exists() else ""
  block = readme_block(data, out, readme)
  if README_BEGIN in text and README_END in text:
    head, rest = text.split(README_BEGIN, 1)
    tail = rest.split(README_END, 1)[1]
    text = head + block + tail
  else:
    text = text.rstrip("\n") + "\n\n" + block + "\n"
  readme.write_text(text)


def comparison(base: dict[str, Any], other: dict[str, Any],
               methods: Sequence[str] = ("vectorized", "vectorized_pure"),
               modes: Sequence[str] = ("jit", "eager")) -> str:
  """Markdown: ratio to native, one run against another (before/after).

  Each run's ratios use its own native measurements.
  """
  a, b = Results(base), Results(other)
  sizes = [n for n in a.sizes if n in b.sizes]
  rows = ["| workload | method | mode | " + " | ".join(
      f"N={n}" for n in sizes) + " |",
          "|---|---|---|" + "---:|" * len(sizes)]
  for w in (w["name"] for w in a.workloads):
    for m in methods:
      for mode in modes:
        cells = []
        for n in sizes:
          ra, rb = (r.get(w, m, mode, n) for r in (a, b))
          na, nb = (r.get(w, "native", mode, n) for r in (a, b))
          if not (ra and rb and na and nb):
            cells.append("")
          elif mode == "jit":
            qa, qb = (r.ratio(w, m, mode, n) for r in (a, b))
            cells.append(f"{qa:.2f}x → {qb:.2f}x")
          else:
            cells.append(f"{fmt_time(ra)} → {fmt_time(rb)}")
        if any(cells):
          rows.append(f"| {w} | {m} | {mode} | " + " | ".join(cells) + " |")
  return "\n".join(rows)


def main(argv: list[str]) -> int:
  """Redraws a report, or compares two runs: ``--compare BASE OTHER``."""
  if argv[:1] == ["--compare"]:
    base, other = (pathlib.Path(d) for d in argv[1:3])
    name = argv[4] if argv[3:4] == ["--name"] else "comparison.md"
    data = []
    for d in (base, other):
      with open(d / "results.json") as f:
        data.append(json.load(f))
    text = ("Steady state under jit: ratio to native JAX (paired by "
            "sampling round, see the README); eager: median time per "
            f"call. `{base.name}` ({data[0]['environment']['date']}) → "
            f"`{other.name}` ({data[1]['environment']['date']}).\n\n"
            + comparison(*data) + "\n")
    (other / name).write_text(text)
    print(text)
    return 0
  out = pathlib.Path(argv[0] if argv else "benchmarks/results")
  with open(out / "results.json") as f:
    write(json.load(f), out)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
