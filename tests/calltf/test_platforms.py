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
"""call_tf for every platform, on a machine with a CPU and tensorflow-cpu.

tf2xla compiles for the CPU only here, as beside ``jax[tpu]``; the
function's CPU module, as JAX operations, carries a call to the TPU, to a
GPU and to multi-platform ``jax.export`` artifacts
(``call_tf_lib.stablehlo.platforms``). What a TPU alone shows (results on
the chip, speed) is ``benchmarks/accelerator.py``'s.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from jax.experimental.jax2tf import call_tf
from jax.experimental.jax2tf.call_tf_lib import errors

from . import op_matrix_cases as cases
from . import platform_export

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _families(every: bool) -> list[str]:
  """The families exported: the first of each op matrix group.

  Every family (not heavy) in the full run (``--full-run``, passed by
  ``python build/fork.py test --full``).
  """
  fams = [f for f in cases.FAMILIES if not f.heavy]
  if every:
    return [f.name for f in fams]
  first: dict[str, str] = {}
  for f in fams:
    first.setdefault(f.group, f.name)
  # Families of ops tf2xla lowers to custom calls, and control flow.
  return sorted({*first.values(), "eigh", "qr", "svd_vectors", "while_loop",
                 "scan", "top_k", "conv2d"}
                & {f.name for f in fams})


# Families whose CPU module holds an op the interpreter has no rule for:
# the TPU and the GPU refuse them by name (CallTfPlatformError), the CPU
# computes them with tf2xla's module.
PLATFORM_GAPS = {
    "eigh": "tf2xla lowers SelfAdjointEigV2 to XLA's Eigh custom call",
}

# Families that are a jax2tf.convert function serialized for this
# machine's platform alone (convert's default): call_tf takes that module,
# as jax.export calls it, and refuses every other platform with
# Exported.call's message (tests/calltf/test_round_trip.py exports modules
# serialized for the TPU and CUDA for those platforms).
SERIALIZED_FOR_THE_CPU = {"round_trip"}


def _run_worker(families: list[str]) -> tuple[list[dict], int, str]:
  proc = subprocess.run(
      [sys.executable, "-m", "tests.calltf.platform_export", *families],
      cwd=ROOT, capture_output=True, text=True, check=False, timeout=3000,
      env={**os.environ, "PYTHONPATH": os.pathsep.join(
          [str(ROOT), os.environ.get("PYTHONPATH", "")])})
  records = [json.loads(line) for line in proc.stdout.splitlines()
             if line.startswith("{")]
  return records, proc.returncode, proc.stderr[-3000:]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
  if "family" in metafunc.fixturenames:
    metafunc.parametrize(
        "family", _families(metafunc.config.getoption("--full-run")))


@pytest.fixture(scope="module")
def exported(full_run):
  return _run_worker(_families(full_run))


def test_the_export_process_exits_cleanly(exported):
  # A process that exported call_tf for CUDA with tensorflow-cpu died at
  # exit (status 139) when tf2xla was asked for the GPU.
  records, status, stderr = exported
  assert status == 0, f"the worker ended with status {status}: {stderr}"
  assert records


def test_every_transformation_lowers_for_every_platform(exported, family):
  records, _, stderr = exported
  mine = [r for r in records if r["family"] == family]
  assert mine, f"no record of {family}: {stderr}"
  problems = []
  for r in mine:
    if r["outcome"] == "skip":
      continue
    if r["outcome"] != "done":
      problems.append(f"{r.get('transform')}: {r}")
      continue
    where = f"{family} {r['transform']}"
    for platforms in platform_export.PLATFORMS:
      key = ",".join(platforms)
      if r[key] != "ok":
        if "cpu" in r:
          continue  # refused on the CPU too: refused everywhere
        if (family in PLATFORM_GAPS
            and r.get(key + ":type") == "CallTfPlatformError"):
          assert "has ops without a JAX rule" in r[key], r[key]
          continue
        if family in SERIALIZED_FOR_THE_CPU:
          assert re.search(r"was exported for platforms '\('cpu',\)' but "
                           r"it is used on '\(.*\)'", r[key]), r[key]
          continue
        problems.append(f"{where} for {key}: {r[key]}")
        continue
      if r.get(key + ":foreign"):
        problems.append(f"{where} for {key} holds custom calls of another "
                        f"platform: {r[key + ':foreign']}")
      if key + ":diff" in r:
        if not r[key + ":shapes"] or r[key + ":diff"] > 1e-6:
          problems.append(f"{where}: the {key} artifact on the CPU differs "
                          f"from jax.jit: {r[key + ':diff']}")
    if family in SERIALIZED_FOR_THE_CPU and any(
        r[",".join(p)] == "ok" for p in platform_export.PLATFORMS):
      problems.append(f"{where}: a module serialized for the CPU alone was "
                      "lowered for another platform")
    if family in PLATFORM_GAPS and all(
        r[",".join(p)] == "ok" for p in platform_export.PLATFORMS):
      problems.append(f"{where}: a platform gap no more: remove "
                      f"{family!r} from PLATFORM_GAPS")
  assert not problems, "\n".join(problems)


def test_foreign_targets_are_found():
  text = ('%0 = stablehlo.custom_call @lapack_sgetrf_ffi(%a)\n'
          '%1 = stablehlo.custom_call @cusolver_getrf_ffi(%a)\n'
          '%2 = stablehlo.custom_call @Eigh(%a)\n'
          '%3 = stablehlo.custom_call @Sharding(%a)\n')
  assert platform_export.foreign_targets(text, ("tpu",)) == [
      "cusolver_getrf_ffi", "lapack_sgetrf_ffi"]
  assert platform_export.foreign_targets(text, ("cpu",)) == [
      "Eigh", "cusolver_getrf_ffi"]
  assert platform_export.foreign_targets(text, ("cpu", "cuda", "tpu")) == []


def _mlp(x):
  w = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
  return tf.reduce_sum(tf.tanh(tf.matmul(x, w)), axis=-1)


def _dot_precisions(module_text: str) -> list[str]:
  found = []
  for line in module_text.splitlines():
    if "stablehlo.dot_general" in line:
      m = re.search(r"precision = \[([^\]]*)\]", line)
      found.append(m.group(1) if m else "none")
  return found


@pytest.mark.parametrize("precision,expected", [
    (None, {"none", "DEFAULT, DEFAULT"}),
    ("highest", {"HIGHEST, HIGHEST"}),
    ("bfloat16", {"DEFAULT, DEFAULT", "none"}),
    ("float32", {"HIGHEST, HIGHEST"}),
])
@pytest.mark.parametrize("transform", ["value", "vmap", "jacrev"])
def test_default_precision_follows_jax(precision, expected, transform):
  # A TF function that leaves its dots at their default precision follows
  # jax_default_matmul_precision on the TPU, as the same function in jnp.
  f = call_tf(_mlp)
  g = {"value": f, "vmap": jax.vmap(f),
       "jacrev": jax.jacrev(lambda x: f(x).sum())}[transform]
  x = np.ones((2, 4) if transform != "vmap" else (3, 2, 4), np.float32)
  with jax.default_matmul_precision(precision):
    text = jax.export.export(jax.jit(g), platforms=("tpu",))(x).mlir_module()
    native = jax.export.export(
        jax.jit(lambda x: jnp.tanh(x @ jnp.ones((4, 3))).sum(-1)),
        platforms=("tpu",))(np.ones((2, 4), np.float32)).mlir_module()
  found = set(_dot_precisions(text))
  assert found and found <= expected, found
  # What the same function in jnp gets at the same setting.
  assert found == set(_dot_precisions(native))


def test_explicit_precision_is_kept():
  # Without TensorFloat-32, TF asks XLA for its dots' highest precision:
  # kept whatever JAX's setting.
  tf.config.experimental.enable_tensor_float_32_execution(False)
  try:
    f = call_tf(lambda x: _mlp(x) * 1.)
    with jax.default_matmul_precision("bfloat16"):
      text = jax.export.export(jax.jit(f), platforms=("tpu",))(
          np.ones((2, 4), np.float32)).mlir_module()
  finally:
    tf.config.experimental.enable_tensor_float_32_execution(True)
  assert set(_dot_precisions(text)) == {"HIGHEST, HIGHEST"}


def test_cpu_keeps_tf2xla_module():
  # On the CPU the plain call embeds tf2xla's module, as upstream does.
  text = jax.jit(call_tf(_mlp)).lower(np.ones((2, 4), np.float32)).as_text()
  assert "call_tf_" in text


def test_refusal_names_platform_and_op():
  def eig(x):
    e, v = tf.linalg.eigh(x + tf.transpose(x))
    return tf.reduce_sum(v * v * e)
  x = np.eye(3, dtype=np.float32)
  with pytest.raises(errors.CallTfPlatformError,
                     match=r"'tpu'.*stablehlo\.custom_call @Eigh"):
    jax.export.export(jax.jit(call_tf(eig)), platforms=("tpu",))(x)
  # The CPU computes it.
  np.testing.assert_allclose(jax.jit(call_tf(eig))(x), 6., rtol=1e-5)


def test_ordered_refused_on_every_platform():
  f = call_tf(lambda x: tf.sin(x), ordered=True)
  for platforms in (("cpu",), ("tpu",)):
    with pytest.raises(NotImplementedError, match="ordered=True"):
      jax.export.export(jax.jit(f), platforms=platforms)(np.ones(3))


_RUN_WITHOUT_TF = textwrap.dedent("""
    import sys
    sys.modules["tensorflow"] = None  # importing TensorFlow fails here
    import jax, numpy as np
    from jax import export
    data = open(sys.argv[1], "rb").read()
    exp = export.deserialize(bytearray(data))
    x = np.load(sys.argv[2])
    out = jax.tree_util.tree_leaves(exp.call(x))
    np.savez(sys.argv[3], *[np.asarray(o) for o in out])
    assert "tensorflow" not in sys.modules or sys.modules["tensorflow"] is None
""")


@pytest.mark.parametrize("transform", platform_export.TRANSFORMS)
def test_multi_platform_artifact_runs_without_tensorflow(tmp_path, transform):
  def energy(x):
    d = x[:, None, :] - x[None, :, :]
    r2 = tf.reduce_sum(d * d, -1) + tf.eye(4)
    return tf.reduce_sum(tf.exp(-r2)) + tf.reduce_sum(tf.sin(x))
  fn, batched = platform_export._transformed(transform, energy)  # pylint: disable=protected-access
  x = np.linspace(0., 1., 12, dtype=np.float32).reshape(4, 3)
  if batched:
    x = np.stack([x, 2 * x, 3 * x])
  exp = jax.export.export(jax.jit(fn), platforms=("cpu", "cuda", "tpu"))(x)
  assert exp.platforms == ("cpu", "cuda", "tpu")
  (tmp_path / "f.bin").write_bytes(exp.serialize())
  np.save(tmp_path / "x.npy", x)
  proc = subprocess.run(
      [sys.executable, "-c", _RUN_WITHOUT_TF, str(tmp_path / "f.bin"),
       str(tmp_path / "x.npy"), str(tmp_path / "out.npz")],
      capture_output=True, text=True, check=False, timeout=600)
  assert proc.returncode == 0, proc.stderr[-3000:]
  got = np.load(tmp_path / "out.npz")
  want = jax.tree_util.tree_leaves(jax.jit(fn)(x))
  assert len(got.files) == len(want)
  for i, w in enumerate(want):
    np.testing.assert_allclose(got[f"arr_{i}"], w, rtol=1e-6, atol=1e-6)


def _nested(kind: str):
  f = call_tf(lambda x: tf.reduce_sum(tf.sin(x) * x, axis=-1))
  if kind == "vmap(vmap)":
    return jax.vmap(jax.vmap(f)), np.ones((2, 3, 4, 5), np.float32)
  if kind == "scan":
    def body(c, x):
      return c + f(x).sum(), jax.grad(lambda v: f(v).sum())(x)
    return (lambda xs: jax.lax.scan(body, 0., xs)), np.ones((3, 4, 5),
                                                           np.float32)
  mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("b",))
  spec = jax.sharding.PartitionSpec("b")
  shard_map = getattr(jax, "shard_map", None)
  if shard_map is None:  # older JAX
    from jax.experimental.shard_map import shard_map  # pylint: disable=g-import-not-at-top
  return (shard_map(jax.vmap(f), mesh=mesh, in_specs=spec, out_specs=spec),
          np.ones((4, 3, 5), np.float32))


@pytest.mark.parametrize("kind", ["vmap(vmap)", "scan", "shard_map"])
def test_nested_calls_lower_for_every_platform(kind):
  fn, x = _nested(kind)
  expected = jax.jit(fn)(x)
  for platforms in platform_export.PLATFORMS:
    exp = jax.export.export(jax.jit(fn), platforms=platforms)(x)
    assert not platform_export.foreign_targets(exp.mlir_module(), platforms)
    if "cpu" in platforms:
      got = jax.export.deserialize(exp.serialize()).call(x)
      for g, e in zip(jax.tree_util.tree_leaves(got),
                      jax.tree_util.tree_leaves(expected)):
        np.testing.assert_allclose(g, e, rtol=1e-6)
