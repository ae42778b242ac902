"""The report: Markdown tables, log-log PNG plots and the README's summary.

Works from the ``results.json`` data alone (standard library only, but for
the plots), so that a report can be redrawn without measuring again::

  python3 -m benchmarks.report                 # results.md and the plots
  python3 -m benchmarks.report --summary       # the summary table, into
                                               # README.md and benchmarks/README.md
  python3 -m benchmarks.report --compare DIR_A DIR_B   # two runs' ratios
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

from collections.abc import Callable, Sequence
import dataclasses
import json
import pathlib
import sys
from typing import Any

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
VECTORIZED = ("vectorized_pure", "vectorized")


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
    """The forward-mode workloads (and the LJ energy's jacrev beside them)."""
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
  if t < 0:  # a difference: the fork faster than native
    return "-" + fmt_time(-t)
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


def forward_table(res: Results) -> str:
  """Forward mode (and jacrev) per workload and N, jit."""
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


def _eager_method_table(
    data: dict[str, Any],
    cell: Callable[[str, dict[str, dict[str, Any]]], str]) -> str:
  """A table of eager vmap at one N: a row per workload, a column per method.

  Args:
    data: the results.
    cell: the text of one cell, from the method and the workload's rows by
      method.

  Returns:
    The markdown table, or "" where the results have no eager section.
  """
  e = data.get("eager")
  if not e:
    return ""
  methods = [m["name"] for m in e["methods"]]
  rows = ["| workload | " + " | ".join(methods) + " |",
          "|---|" + "---:|" * len(methods)]
  for w in dict.fromkeys(r["workload"] for r in e["rows"]):
    by = {r["method"]: r for r in e["rows"] if r["workload"] == w}
    rows.append(f"| {w} | " + " | ".join(cell(m, by) for m in methods) + " |")
  return "\n".join(rows)


def _eager_steady_cell(m: str, by: dict[str, dict[str, Any]]) -> str:
  r = by.get(m, {})
  if r.get("error"):
    return "fails"
  if r.get("steady") is None:
    return "—"
  return fmt_time(r["steady"]) + (
      "" if m == "native" else _ratio_text(paired_ratio(r, [by.get("native")])))


def _eager_first_call_cell(m: str, by: dict[str, dict[str, Any]]) -> str:
  nat = (by.get("native") or {}).get("first_call")
  t = (by.get(m) or {}).get("first_call")
  if t is None:
    return "fails" if (by.get(m) or {}).get("error") else "—"
  return fmt_time(t) + ("" if m == "native" or not nat
                        else f" ({t / nat:.2f}x)")


def eager_table(data: dict[str, Any]) -> str:
  """Eager vmap at one N, every method, ratio to native."""
  return _eager_method_table(data, _eager_steady_cell)


def eager_first_call_table(data: dict[str, Any]) -> str:
  """Eager vmap at one N: each method's first call (trace, compile, run)."""
  return _eager_method_table(data, _eager_first_call_cell)


def first_call_table(data: dict[str, Any], summary_key: str = "summary"
                     ) -> str:
  """First call under jit in fresh processes: medians (and minima).

  ``summary_key``: ``"summary"`` (no persistent cache) or
  ``"warm_summary"`` (the persistent caches filled by an earlier process).
  """
  fc = data.get("first_call")
  if not fc or not fc.get(summary_key):
    return ""
  rows = ["| workload | native | fork | tf2jax | TF (vectorized_map) | "
          "fork - native (median of pairs) | fork / native (median of "
          "pairs) | fork / faster of native, tf2jax (median of pairs) |",
          "|---|---:|---:|---:|---:|---:|---:|---:|"]
  for w, s in fc[summary_key].items():
    cell = lambda m: (f"{fmt_time(s[m]['median'])} (min "
                      f"{fmt_time(s[m]['min'])})"
                      + (" **wrong**" if s[m].get("wrong") else "")
                      if m in s else "—")
    ratio = f"{s['ratio']:.2f}x" if "ratio" in s else "—"
    ratio_native = (f"{s['ratio_native']:.2f}x" if "ratio_native" in s
                    else "—")
    rows.append(
        f"| {w} (N={fc['n']}) | {cell('native')} | {cell('fork')} | "
        f"{cell('tf2jax')} | {cell('tf')} | {fmt_time(s.get('extra'))} | "
        f"{ratio_native} | {ratio} |")
  return "\n".join(rows)


# The fork's phases in the order of a first call (benchmarks/first_call.py
# names them; older runs named fewer).
_PHASE_ORDER = (
    "imports: modules loaded on first use",
    "build the function (tf2jax: convert)",
    "TF tracing: the unbatched function",
    "TF tracing: inside the vectorized function (pfor's loop body)",
    "TF autograph (pfor's tf.function wrappers)",
    "TF pfor conversion (PFor.convert)",
    "overlay: the traced graph's fingerprint",
    "overlay: side-effect scan of TF graphs",
    "overlay: persistent cache read",
    "TF to HLO (experimental_get_compiler_ir)",
    "jaxlib: tf2xla's HLO to StableHLO, its op metadata",
    "overlay: StableHLO module read into Python (stablehlo_to_jax.read)",
    "overlay: the interpreted program built from the module "
    "(stablehlo_to_jax.parse)",
    "overlay: persistent cache write",
    "overlay: reverse-mode probe of the program (jax.vjp, traced)",
    "TF autodiff: GradientTape.gradient",
    "TF autodiff: ForwardAccumulator.jvp",
    "JAX trace: JAX and overlay Python", "JAX lowering",
    "XLA compile (or the persistent cache's executable)", "XLA compile",
    "run")


def first_call_phases_table(data: dict[str, Any],
                            summary_key: str = "summary") -> str:
  """The fork's first call by phase (median over repeats)."""
  fc = data.get("first_call")
  if not fc or not fc.get(summary_key):
    return ""
  summary = fc[summary_key]
  ws = [w for w, s in summary.items() if "fork" in s]
  names = []
  for w in ws:
    for p in summary[w]["fork"]["phases"]:
      if p not in names:
        names.append(p)
  names = ([n for n in _PHASE_ORDER if n in names]
           + [n for n in names if n not in _PHASE_ORDER])
  rows = ["| phase | " + " | ".join(ws) + " |", "|---|" + "---:|" * len(ws)]
  totals = {w: sum(summary[w]["fork"]["phases"].values()) for w in ws}
  tf_share = {w: sum(v for k, v in summary[w]["fork"]["phases"].items()
                     if k.startswith("TF ")) for w in ws}
  for n in names:
    cells = []
    for w in ws:
      v = summary[w]["fork"]["phases"].get(n, 0.)
      cells.append(f"{fmt_time(v)}")
    rows.append(f"| {n} | " + " | ".join(cells) + " |")
  rows.append("| **TensorFlow's own (the TF rows)** | " + " | ".join(
      f"**{fmt_time(tf_share[w])}** ({100 * tf_share[w] / totals[w]:.0f}%)"
      for w in ws) + " |")
  rows.append("| sum of phases (medians) | " + " | ".join(
      fmt_time(totals[w]) for w in ws) + " |")
  native = {w: summary[w].get("native", {}).get("phases", {}) for w in ws}
  rows.append("| native JAX: trace + lower + XLA compile + run | " + " | ".join(
      fmt_time(sum(v for k, v in native[w].items() if not k.startswith(
          ("build", "imports")))) for w in ws) + " |")
  rows.append("| fork - native - TensorFlow's own (medians) | " + " | ".join(
      fmt_time(summary[w]["fork"]["median"]
               - summary[w].get("native", {}).get("median", 0.)
               - tf_share[w]) for w in ws) + " |")
  return "\n".join(rows)


def memory_table(data: dict[str, Any]) -> str:
  """RSS over eager calls, fork and native."""
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
  """Jitted calls at N=1, with and without an effect."""
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
  """Where the figures come from: the run, and any part measured later."""
  e = res.env
  line = (f"Measured {e['date']} UTC on {e['machine']} ({e['backend']}); "
          f"jax {e['jax']}, jaxlib {e['jaxlib']}, tensorflow {e['tensorflow']}"
          f", tf2jax {e['tf2jax']}, Python {e['python']}. Run time "
          f"{e.get('total_seconds', 0):.0f} s: `{e.get('command', '')}`.")
  merged = res.data.get("merged")
  if merged:
    line += (" These parts were measured again later, by the same harness, "
             "and replace the run's: " + "; ".join(
                 f"{m['part']} ({m['date']} UTC, {m['jax']}, "
                 f"`{m['command']}`: {m['why']})" for m in merged) + ".")
  errors = res.data.get("section_errors", {})
  if errors:
    line += " Sections that crashed: " + "; ".join(
        f"`{name}` (`{msg}`)" for name, msg in errors.items()) + "."
  return line


def _sections(res: Results, heading: str) -> list[str]:
  """Forward mode, eager, first call, memory, dispatch: Markdown parts."""
  parts = []
  ft = forward_table(res)
  if ft.count("\n") > 1:
    parts += [f"{heading} Forward mode under jit", "",
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
    parts += [f"{heading} Eager vmap, N={res.data['eager']['n']}",
              "", "No `jax.jit` anywhere; median time per call, ratio to "
              "native eager JAX.", "",
              "\n".join(f"- `{m['name']}`: {m['title']}"
                        for m in res.data["eager"]["methods"]), "", et, "",
              "First call of each (a new function: trace, compile and "
              "run; the process warm), ratio to native's:", "",
              eager_first_call_table(res.data), ""]
  fc = first_call_table(res.data)
  if fc:
    f = res.data["first_call"]
    load = f.get("load") or {}
    load_text = (" Load average (1, 5, 15 min) before: "
                 f"{load.get('before')}, after: {load.get('after')}."
                 if load else "")
    parts += [f"{heading} First call under jit, fresh process", "",
              f"Median of {f['repeats']} fresh processes per method, "
              "interleaved; the extra is the median of per-repeat "
              "(fork - native) differences. `lj8_*`: that transformation "
              "of an 8-atom Lennard-Jones energy (`vmap`s of N examples, "
              f"the others of one).{load_text}", "",
              "Without persistent caches (JAX's default):", "", fc, "",
              "The fork's first call by phase (exclusive times, median):", "",
              first_call_phases_table(res.data), ""]
    warm = first_call_table(res.data, "warm_summary")
    if warm:
      parts += ["With JAX's persistent compilation cache and call_tf's "
                "filled by an earlier process running the same first call "
                "(a re-run script; every compilation kept, however fast):",
                "", warm, "", "By phase:", "",
                first_call_phases_table(res.data, "warm_summary"), ""]
  mt = memory_table(res.data)
  if mt:
    parts += [f"{heading} Resident memory, eager vmap", "",
              f"Fresh process per row; N={res.data['memory']['n']}, the "
              "128-unit MLP (`mlp128`); warm-up = the first "
              f"{res.data['memory']['warmup']} calls.", "", mt, ""]
  dt = dispatch_table(res.data)
  if dt:
    parts += [f"{heading} Effects and dispatch under jit, N=1", "", dt, ""]
  return parts


def markdown(res: Results) -> str:
  """The full report."""
  parts = ["# Batched call_tf: measured results", "", _env_line(res), "",
           "Times are per call of the whole batch (median of the samples); "
           "in parentheses the ratio to native JAX (`jax.vmap` of the jnp "
           "function), paired: the median over sampling rounds of the "
           "ratio within a round (samples are taken round-robin; the shared "
           "machine's speed drifts by 2-4x within minutes, which the "
           "pairing cancels). *≈* marks a linear extrapolation of a method not "
           "measured at that N (a loop, too slow); *skipped* a method not "
           "measured.", "", "## has_side_effects: True (call_tf's default) / False", "",
           "Steady state under jit of the vectorized path.", "",
           side_effects_table(res), ""]
  parts += _sections(res, "##")
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


# The summary table of README.md and benchmarks/README.md: at most six rows,
# every figure from results.json (python3 -m benchmarks.report --summary).
SUMMARY_BEGIN = ("<!-- benchmark-summary:begin (generated from "
                 "benchmarks/results/results.json by `python3 -m "
                 "benchmarks.report --summary`; do not edit) -->")
SUMMARY_END = "<!-- benchmark-summary:end -->"
# The README files that hold the summary, and the path from each to the
# results directory.
SUMMARY_FILES = (("README.md", "benchmarks/results"),
                 ("benchmarks/README.md", "results"))


@dataclasses.dataclass(frozen=True)
class SummaryRow:
  """One row: a workload of the steady-state tables, and first calls.

  Attributes:
    label: the row's first cell.
    steady: the steady-state workload.
    first_calls: the first-call cases (``first_call.WORKLOADS``) shown, each
      with its label in the cell ("" for the row's own workload).
  """
  label: str
  steady: str
  first_calls: tuple[tuple[str, str], ...] = ()


_LJ8 = "LJ, 8 atoms"
SUMMARY_ROWS = (
    SummaryRow("`vmap`, an MLP `R^64 -> R`", "mlp", (("", "mlp128"),)),
    SummaryRow("`vmap`, a molecular energy `R^(16x3) -> R^3`", "energy",
               (("", "energy"), (f"`vmap`, {_LJ8}", "lj8_vmap"))),
    SummaryRow("`vmap(jacrev)` of the energy", "energy_jac",
               (("", "energy_jac"), (f"`jacrev`, {_LJ8}", "lj8_jacrev"))),
    SummaryRow("`vmap(jacfwd)` of the energy", "energy_jacfwd",
               ((f"`jacfwd`, {_LJ8}", "lj8_jacfwd"),)),
    SummaryRow("`vmap(hessian)` of the energy", "energy_hessian",
               ((f"`hessian`, {_LJ8}", "lj8_hessian"),
                (f"`vmap(hessian)`, {_LJ8}", "lj8_vmap_hessian"))),
    SummaryRow("`vmap` of a Keras SavedModel", "keras"),
)
_REFS = ("native", "tf2jax")


def _steady_cell(res: Results, w: str) -> str:
  """The range, over N >= 100, of the fork's ratio to the faster reference."""
  sizes = [n for n in res.sizes if n >= 100
           and res.get(w, "vectorized", "jit", n) is not None]
  if any(res.wrong(w, "vectorized", "jit", n) for n in sizes):
    return "**wrong result**"
  qs = [q for q in (res.ratio(w, "vectorized", "jit", n, _REFS)
                    for n in sizes) if q is not None]
  if not qs:
    return "not measured"
  cell = f"{min(qs):.2f}-{max(qs):.2f}x"
  if max(sizes) < max(res.sizes):
    cell += f" (N <= {max(sizes)})"
  return cell


def _first_call_entry(data: dict[str, Any], w: str,
                      summary_key: str = "summary") -> str | None:
  """The fork's first call over the faster reference's, or None.

  The ratio is the median over repeats of the ratio within a repeat where
  the run has it (``first_call.measure``'s ``ratio``), else the ratio of the
  medians; the times are the medians. ``summary_key``: ``"summary"``
  (no persistent cache) or ``"warm_summary"`` (JAX's persistent caches,
  and call_tf's, filled by an earlier process).
  """
  summary = (data.get("first_call") or {}).get(summary_key, {})
  s = summary.get(w)
  if not s or "fork" not in s:
    return None
  if s["fork"].get("wrong"):
    return "**wrong result**"
  refs = {m: s[m]["median"] for m in _REFS if m in s}
  if not refs:
    return None
  best = min(refs, key=refs.get)
  fork = s["fork"]["median"]
  ratio = s.get("ratio", fork / refs[best])
  return (f"{ratio:.2f}x ({fmt_time(fork)} vs {best} "
          f"{fmt_time(refs[best])})")


def _first_call_cell(data: dict[str, Any],
                     cases: Sequence[tuple[str, str]]) -> str:
  """The measured entries of ``cases``, each after its label.

  Each entry is the first call without persistent caches, then, where the
  run measured it, with them warm (a re-run script).
  """
  entries = []
  for label, w in cases:
    entry = _first_call_entry(data, w)
    if entry is None:
      continue
    warm = _first_call_entry(data, w, "warm_summary")
    if warm is not None:
      entry += f", caches warm {warm}"
    entries.append(f"{label}: {entry}" if label else entry)
  return "; ".join(entries) if entries else "not measured"


def _merged_into(data: dict[str, Any], part: str,
                 workload: str | None = None) -> dict[str, Any] | None:
  """The later measurement that replaced ``part`` (of ``workload``)."""
  for m in data.get("merged", []):
    if m.get("section") == part and (
        workload is None or workload in m.get("workloads", [workload])):
      return m
  return None


def summary_table(data: dict[str, Any], results: str) -> str:
  """The summary block: its table and where each figure comes from.

  Args:
    data: the contents of ``results.json``.
    results: the path to the results directory from the file that holds
      the block (a Markdown link target).
  """
  res = Results(data)
  rows = ["| call | steady state under `jit`, N = 100 to 10^4 | "
          "first `jit` call |", "|---|---|---|"]
  for r in SUMMARY_ROWS:
    rows.append(f"| {r.label} | {_steady_cell(res, r.steady)} | "
                f"{_first_call_cell(data, r.first_calls)} |")
  e = res.env
  dates = {}
  for r in SUMMARY_ROWS:
    m = _merged_into(data, "records", r.steady)
    dates.setdefault(m["date"] if m else e["date"], []).append(
        f"`{r.steady}`")
  fc = data.get("first_call") or {}
  m = _merged_into(data, "first_call")
  steady_when = "; ".join(f"{', '.join(ws)} {d} UTC"
                          for d, ws in dates.items())
  first_when = f"{m['date']} UTC" if m else f"{e['date']} UTC"
  notes = [
      "Time of the fork (`call_tf(f)` with the default options, under each "
      "row's transformation) over the faster of native JAX (the same "
      "function written in `jnp`) and tf2jax: below 1.00x the fork is "
      "faster. Steady state: "
      "time per call of the batch, paired by sampling round, its range over "
      "the batch sizes measured; first call: trace, compile and run of a "
      "new `jax.jit` function of the row's transformation in a fresh "
      f"process, N = {fc.get('n', 100)}, median of {fc.get('repeats', '?')} "
      "(of the ratios within a repeat, where measured so)"
      + (", without persistent caches and, \"caches warm\", with JAX's "
         "persistent compilation cache and call_tf's filled by an earlier "
         "process (a re-run script)" if fc.get("warm_summary") else "")
      + "; "
      f"\"{_LJ8}\": the named transformation of a Lennard-Jones energy "
      "`R^(8x3) -> R` (`jit(jacrev(f))` of one example, "
      "`jit(vmap(hessian(f)))` of N).",
      "",
      f"From [`{results}/results.json`]({results}/results.json) "
      f"([all tables]({results}/results.md)): {e['machine']}, "
      f"jax {e['jax']}, jaxlib {e['jaxlib']}, TensorFlow {e['tensorflow']}, "
      f"tf2jax {e['tf2jax']}, Python {e['python']}; steady state measured "
      f"{steady_when}, first call {first_when}. The first call's MLP "
      "(`mlp128`) has 128 hidden units, the steady state's (`mlp`) 256.",
  ]
  eager = _eager_summary(data)
  return "\n".join([SUMMARY_BEGIN, "", *rows, "", *notes, "",
                    *([*eager, ""] if eager else []), SUMMARY_END])


# The eager rows of the summary: (label, workload of the eager section).
EAGER_SUMMARY_ROWS = (
    ("`vmap`, an MLP `R^64 -> R` (128 units)", "mlp128"),
    ("`vmap`, the molecular energy", "energy"),
    ("per-example gradients (`vmap(jacrev)`), the MLP", "mlp128_grad"),
    (f"per-example forces (`vmap(jacrev)`), {_LJ8}", "lj8_grad"),
    (f"`vmap(hessian)`, {_LJ8}", "lj8_hessian"),
)
# Its columns: the eager section's methods.
_EAGER_COLUMNS = (("fork_tf_function", "`call_tf(tf.function(f))`"),
                  ("fork_reused", "`call_tf(f)`, `f` a Python function"))


def _eager_summary(data: dict[str, Any]) -> list[str]:
  """The eager table of the summary: each fork method over native eager."""
  e = data.get("eager")
  if not e:
    return []
  by = {(r["workload"], r["method"]): r for r in e["rows"]}
  head = ("| eager call, N = " + str(e["n"]) + " | "
          + " | ".join(f"steady, {t}" for _, t in _EAGER_COLUMNS)
          + " | " + " | ".join(f"first call, {t}" for _, t in _EAGER_COLUMNS)
          + " |")
  rows = [head, "|---|" + "---|" * (2 * len(_EAGER_COLUMNS))]
  for label, w in EAGER_SUMMARY_ROWS:
    nat = by.get((w, "native"))
    if not nat or nat.get("steady") is None:
      continue
    steady, first = [], []
    for m, _ in _EAGER_COLUMNS:
      r = by.get((w, m)) or {}
      if r.get("error") or r.get("steady") is None:
        steady.append("fails" if r.get("error") else "not measured")
        first.append(steady[-1])
        continue
      q = paired_ratio(r, [nat])
      steady.append(f"{q:.2f}x" if q is not None else "not measured")
      first.append(f"{r['first_call'] / nat['first_call']:.2f}x "
                   f"({fmt_time(r['first_call'])} vs native "
                   f"{fmt_time(nat['first_call'])})"
                   if r.get("first_call") and nat.get("first_call")
                   else "not measured")
    rows.append(f"| {label} | " + " | ".join(steady + first) + " |")
  return rows + [
      "", "Eagerly (no `jax.jit` anywhere): time of the fork over native "
      "eager `jax.vmap` of the `jnp` function, paired by sampling round; "
      "first call: a new function's trace, compile and run in a warm "
      "process. A plain Python `f` is traced by TensorFlow at every call "
      "(it may read Python state, as upstream's eager call reruns it); a "
      "`tf.function` is traced once per signature."]


def replace_summary(text: str, block: str, path: str) -> str:
  """``text`` with its summary block replaced by ``block``."""
  if text.count(SUMMARY_BEGIN) != 1 or text.count(SUMMARY_END) != 1:
    raise ValueError(
        f"{path} must hold the summary's markers once each ({SUMMARY_BEGIN} "
        f"... {SUMMARY_END}); put them back where the table goes.")
  head, rest = text.split(SUMMARY_BEGIN, 1)
  return head + block + rest.split(SUMMARY_END, 1)[1]


def write_summaries(data: dict[str, Any], root: pathlib.Path) -> None:
  """Writes the summary block into every file of ``SUMMARY_FILES``."""
  for name, results in SUMMARY_FILES:
    path = root / name
    path.write_text(replace_summary(path.read_text(),
                                    summary_table(data, results), name))


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
  """Redraws a report, writes the summaries, or compares two runs."""
  if argv[:1] == ["--summary"]:
    root = pathlib.Path(__file__).resolve().parent.parent
    with open(root / "benchmarks" / "results" / "results.json") as f:
      write_summaries(json.load(f), root)
    return 0
  if argv[:1] == ["--compare"]:
    base, other = (pathlib.Path(d) for d in argv[1:3])
    name = argv[4] if argv[3:4] == ["--name"] else "comparison.md"
    data = []
    for d in (base, other):
      with open(d / "results.json") as f:
        data.append(json.load(f))
    text = ("Steady state under jit: ratio to native JAX (paired by "
            "sampling round, see benchmarks/README.md); eager: median time per "
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
