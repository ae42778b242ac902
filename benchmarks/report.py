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
}
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
  ref = res.get(w, ref_method, "jit" if field != "steady" else mode, n, field)
  return fmt_time(t) + ("" if m == ref_method else _ratio(t, ref))


def table(res: Results, w: str, mode: str, field: str) -> str:
  """One Markdown table: methods x batch sizes."""
  head = "| method | " + " | ".join(f"N={n}" for n in res.sizes) + " |"
  sep = "|---|" + "---:|" * len(res.sizes)
  rows = [head, sep]
  for m in res.methods_of(w, mode):
    cells = [_cell(res, w, m, mode, n, field) for n in res.sizes]
    rows.append(f"| {m} | " + " | ".join(cells) + " |")
  return "\n".join(rows)


def _worst(res: Results, w: str, m: str, ref_fn, sizes: Sequence[int]
           ) -> tuple[float | None, int | None]:
  worst, at = None, None
  for n in sizes:
    t, ref = res.get(w, m, "jit", n), ref_fn(n)
    if t is None or not ref:
      continue
    if worst is None or t / ref > worst:
      worst, at = t / ref, n
  return worst, at


def targets(res: Results) -> list[tuple[str, str, str, str]]:
  """The issue's targets: (target, workload, measured, verdict) rows."""
  rows = []
  names = [w["name"] for w in res.workloads]
  big = [n for n in res.sizes if n >= 100]

  def best_ref(w):
    def ref(n):
      ts = [res.get(w, m, "jit", n) for m in ("native", "tf2jax")]
      ts = [t for t in ts if t]
      return min(ts) if ts else None
    return ref

  for w in names:
    for m in VECTORIZED:
      worst, at = _worst(res, w, m, best_ref(w), big)
      if worst is None:
        continue
      rows.append((f"{m} within 1.2x of min(native, tf2jax), jit, N >= 100",
                   w, f"worst {worst:.2f}x (N={at})",
                   "met" if worst <= 1.2 else "NOT met"))
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
      worst, at = _worst(res, "energy_jac", m,
                         lambda n: res.get("energy_jac", "native", "jit", n),
                         res.sizes)
      if worst is not None:
        rows.append((f"jacrev via {m} within 1.5x of native, every N",
                     "energy_jac", f"worst {worst:.2f}x (N={at})",
                     "met" if worst <= 1.5 else "NOT met"))
  return rows


def side_effects_table(res: Results) -> str:
  """Steady jit time with has_side_effects=True (default) against False."""
  head = ("| workload | " + " | ".join(f"N={n}" for n in res.sizes) + " |")
  rows = [head, "|---|" + "---:|" * len(res.sizes)]
  for w in (w["name"] for w in res.workloads):
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
  rows += [f"| {t} | {w} | {m} | {v} |" for t, w, m, v in targets(res)]
  return "\n".join(rows)


def markdown(res: Results) -> str:
  """The full report."""
  parts = ["# Batched call_tf: measured results", "", _env_line(res), "",
           "Times are per call of the whole batch; in parentheses the ratio "
           "to native JAX (`jax.vmap` of the jnp function) measured in the "
           "same run. *≈* marks a linear extrapolation of a method not "
           "measured at that N (a loop, too slow); *skipped* a method not "
           "measured.", "", "## Targets", "", targets_table(res), "",
           "## has_side_effects: True (call_tf's default) / False", "",
           "Steady state under jit of the vectorized path.", "",
           side_effects_table(res), ""]
  if res.sizes:
    n = max(res.sizes)
    parts += [f"## Where the first jit call goes (N={n})", "",
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
    parts += [f"**{name}** ({w['title']}):", "",
              table(res, name, "jit", "steady"), "",
              f"![{name}]({rel}/{name}.png)", ""]
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
            cells.append(f"{ra / na:.2f}x → {rb / nb:.2f}x")
          else:
            cells.append(f"{fmt_time(ra)} → {fmt_time(rb)}")
        if any(cells):
          rows.append(f"| {w} | {m} | {mode} | " + " | ".join(cells) + " |")
  return "\n".join(rows)


def main(argv: list[str]) -> int:
  """Redraws a report, or compares two runs: ``--compare BASE OTHER``."""
  if argv[:1] == ["--compare"]:
    base, other = (pathlib.Path(d) for d in argv[1:3])
    data = []
    for d in (base, other):
      with open(d / "results.json") as f:
        data.append(json.load(f))
    text = ("Steady state under jit: ratio to native JAX; eager: time per "
            f"call. `{base}` ({data[0]['environment']['date']}) → "
            f"`{other}` ({data[1]['environment']['date']}).\n\n"
            + comparison(*data) + "\n")
    (other / "comparison.md").write_text(text)
    print(text)
    return 0
  out = pathlib.Path(argv[0] if argv else "benchmarks/results")
  with open(out / "results.json") as f:
    write(json.load(f), out)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
