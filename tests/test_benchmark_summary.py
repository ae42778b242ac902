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
"""The READMEs' benchmark summary is what the committed results generate.

`python3 -m benchmarks.report --summary` writes the table into README.md
and benchmarks/README.md from benchmarks/results/results.json; a figure
edited by hand, or results committed without regenerating, fails here.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys

import pytest


@pytest.fixture(scope="module")
def report(root):
  spec = importlib.util.spec_from_file_location(
      "benchmarks_report", root / "benchmarks" / "report.py")
  module = importlib.util.module_from_spec(spec)
  sys.modules[spec.name] = module  # dataclasses look their module up
  spec.loader.exec_module(module)
  yield module
  del sys.modules[spec.name]


def _block(text: str, report) -> str:
  begin = text.index(report.SUMMARY_BEGIN)
  end = text.index(report.SUMMARY_END) + len(report.SUMMARY_END)
  return text[begin:end]


@pytest.mark.parametrize("name", ["README.md", "benchmarks/README.md"])
def test_summary_is_generated_from_the_results(root, report, name):
  data = json.loads(
      (root / "benchmarks" / "results" / "results.json").read_text())
  results = dict(report.SUMMARY_FILES)[name]
  text = (root / name).read_text()
  assert _block(text, report) == report.summary_table(data, results), (
      f"{name}'s benchmark summary differs from what "
      "benchmarks/results/results.json gives: run `python3 -m "
      "benchmarks.report --summary`")
  assert (root / pathlib.Path(name).parent / results / "results.json"
          ).exists(), f"{name} links to a results file that is not there"


def _record(workload, method, n, samples):
  return {"workload": workload, "method": method, "mode": "jit", "n": n,
          "steady": sorted(samples)[len(samples) // 2], "samples": samples,
          "max_rel_err": 0.0}


def test_summary_ratios_are_to_the_faster_reference(report):
  """Paired by round, to the faster of native and tf2jax; first call too."""
  records = []
  for n, (native, tf2jax, fork) in {100: (2., 1., 1.5),
                                    1000: (10., 20., 11.)}.items():
    for method, t in (("native", native), ("tf2jax", tf2jax),
                      ("vectorized", fork)):
      records.append(_record("mlp", method, n, [t, t, t]))
  env = {"date": "2026-01-01 00:00", "machine": "m", "backend": "cpu",
         "jax": "j", "jaxlib": "l", "tensorflow": "t", "tf2jax": "x",
         "python": "p"}
  data = {"environment": env, "sizes": [1, 100, 1000],
          "workloads": [{"name": "mlp", "title": "", "tol": 1e-4}],
          "methods": [{"name": m, "title": ""}
                      for m in ("native", "tf2jax", "vectorized")],
          "records": records,
          "first_call": {"n": 100, "repeats": 3, "summary": {"mlp128": {
              "native": {"median": 0.2, "min": 0.1},
              "tf2jax": {"median": 0.1, "min": 0.1},
              "fork": {"median": 0.3, "min": 0.2}}}}}
  table = report.summary_table(data, "results")
  mlp = next(line for line in table.splitlines() if "an MLP" in line)
  # N=100: 1.5 / min(2, 1) = 1.50; N=1000: 11 / min(10, 20) = 1.10.
  assert "| 1.10-1.50x |" in mlp, mlp
  # 0.3 s against tf2jax's 0.1 s, the faster.
  assert "3.00x (300 ms vs tf2jax 100 ms)" in mlp, mlp
  energy = next(line for line in table.splitlines() if "`energy`" in line
                or "molecular energy" in line)
  assert energy.count("not measured") == 2, energy


def _timed(t):
  return {"median": t, "min": t}


def _first_call_results(**first_call):
  """A results.json with only first calls (``first_call``'s entries)."""
  env = {"date": "2026-01-01 00:00", "machine": "m", "backend": "cpu",
         "jax": "j", "jaxlib": "l", "tensorflow": "t", "tf2jax": "x",
         "python": "p"}
  return {"environment": env, "sizes": [1, 100], "workloads": [],
          "methods": [], "records": [],
          "first_call": {"n": 100, **first_call}}


def test_summary_first_calls_of_each_transformation(report):
  """A row's first calls, each labeled; the paired ratio; a wrong result."""
  data = _first_call_results(repeats=3, summary={
      "energy": {"native": _timed(0.2), "fork": _timed(0.4)},
      "lj8_vmap": {"native": _timed(0.2), "tf2jax": _timed(0.3),
                   "fork": _timed(0.25), "ratio": 1.1},
      "lj8_hessian": {"native": _timed(0.5),
                      "fork": {**_timed(0.4), "wrong": True}}})
  lines = report.summary_table(data, "results").splitlines()
  energy = next(line for line in lines if "molecular energy" in line)
  # Without a paired ratio, the ratio of the medians; with one, that one.
  assert ("| 2.00x (400 ms vs native 200 ms); `vmap`, LJ, 8 atoms: 1.10x "
          "(250 ms vs native 200 ms) |") in energy, energy
  hessian = next(line for line in lines if "`vmap(hessian)` of" in line)
  assert hessian.endswith("| `hessian`, LJ, 8 atoms: **wrong result** |"), (
      hessian)
  jacfwd = next(line for line in lines if "`vmap(jacfwd)` of" in line)
  assert jacfwd.endswith("| not measured |"), jacfwd


def test_summary_first_calls_with_caches_warm(report):
  """Where the run measured it, the cache-warm first call follows."""
  data = _first_call_results(
      repeats=5,
      summary={"lj8_jacfwd": {"native": _timed(0.4), "fork": _timed(0.44),
                              "ratio": 1.1}},
      warm_summary={"lj8_jacfwd": {"native": _timed(0.1),
                                   "fork": _timed(0.13), "ratio": 1.3}})
  table = report.summary_table(data, "results")
  jacfwd = next(line for line in table.splitlines()
                if "`vmap(jacfwd)` of" in line)
  assert jacfwd.endswith(
      "| `jacfwd`, LJ, 8 atoms: 1.10x (440 ms vs native 400 ms), caches "
      "warm 1.30x (130 ms vs native 100 ms) |"), jacfwd
  assert "\"caches warm\", with JAX's persistent" in table
