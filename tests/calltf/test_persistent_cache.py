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
"""call_tf's persistent cache of conversions (issue 43).

A re-run script finds tf2xla's HLO and the interpreter's copy of the module
in the cache directory beside JAX's compilation cache: a hit does no tf2xla
work and reads no module; a miss, a corrupted, truncated or foreign entry
converts again and rewrites the entry; entries written by processes at
once stay whole; the size stays within its bound; and a captured value
changed between processes is read anew (values are never in an entry).
Processes are real ones where the point is a new process.
"""

from __future__ import annotations

import collections
import json
import multiprocessing
import os
import pathlib
import pickle
import subprocess
import sys
import textwrap

import jax
from jax._src import compilation_cache
from jax._src import config
from jax._src.export import stablehlo_to_jax
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib.stablehlo import path
from jax.experimental.jax2tf.call_tf_lib.stablehlo import transposable
from jax.experimental.jax2tf.call_tf_lib.tf_function import compile as compile_lib
from jax.experimental.jax2tf.call_tf_lib.tf_function import persistent_cache
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close
from .util import count_calls
from .util import randn

call_tf = jax2tf.call_tf
W = randn(3, 4)
X = randn(5, 3)


def _f(x):
  return tf.reduce_sum(tf.tanh(tf.linalg.matvec(tf.constant(W.T), x)))


def _f_jnp(x):
  return jnp.sum(jnp.tanh(x @ W))


@pytest.fixture
def cache_dir(tmp_path):
  """JAX's compilation cache directory (and so call_tf's), emptied caches."""
  jax.clear_caches()
  with config.compilation_cache_dir(str(tmp_path)):
    yield tmp_path / persistent_cache.SUBDIRECTORY
  jax.clear_caches()
  compilation_cache.reset_cache()


@pytest.fixture
def counts(monkeypatch):
  """Counts tf2xla's conversions and the interpreter's module readings."""
  found = collections.Counter()
  count_calls(monkeypatch, found, compile_lib, "_compile_eager", "tf2xla")
  count_calls(monkeypatch, found, stablehlo_to_jax, "read", "module_read")
  return found


def _entries(directory: pathlib.Path) -> dict[str, pathlib.Path]:
  return {p.name.split("-")[0]: p for p in directory.glob("*.entry")}


def test_a_hit_converts_nothing_and_reads_no_module(cache_dir, counts):
  g = jax.jit(jax.vmap(jax.grad(call_tf(_f))))
  expected = jax.vmap(jax.grad(_f_jnp))(X)
  assert_close(g(X), expected, tol=1e-5)
  assert counts == {"tf2xla": 1, "module_read": 1}
  assert set(_entries(cache_dir)) == {"hlo", "module"}
  jax.clear_caches()  # as a new process: no cache in memory
  counts.clear()
  assert_close(jax.jit(jax.vmap(jax.grad(call_tf(_f))))(X), expected,
               tol=1e-5)
  assert counts == {}


def test_without_a_cache_directory_nothing_is_kept(tmp_path, counts):
  jax.clear_caches()
  assert persistent_cache.store() is None
  jax.jit(jax.vmap(call_tf(_f)))(X)
  with config.compilation_cache_dir(str(tmp_path)):
    with persistent_cache.max_size(0):
      assert persistent_cache.store() is None
    with config.enable_compilation_cache(False):
      assert persistent_cache.store() is None
  assert not list(tmp_path.rglob("*.entry"))


@pytest.mark.parametrize("damage", ["truncated", "flipped", "garbage",
                                    "foreign", "empty"])
def test_a_damaged_entry_is_ignored_and_rewritten(cache_dir, counts, damage):
  expected = jax.vmap(_f_jnp)(X)
  jax.jit(jax.vmap(call_tf(_f)))(X)
  entries = _entries(cache_dir)
  whole = {kind: p.read_bytes() for kind, p in entries.items()}
  for kind, p in entries.items():
    data = whole[kind]
    if damage == "truncated":
      p.write_bytes(data[:-7])
    elif damage == "flipped":
      p.write_bytes(data[:-5] + bytes([data[-5] ^ 1]) + data[-4:])
    elif damage == "garbage":
      p.write_bytes(os.urandom(len(data)))
    elif damage == "foreign":  # another key's whole entry under this name
      p.write_bytes(whole["hlo" if kind == "module" else "module"])
    else:
      p.write_bytes(b"")
  jax.clear_caches()
  counts.clear()
  assert_close(jax.jit(jax.vmap(call_tf(_f)))(X), expected, tol=1e-5)
  assert counts == {"tf2xla": 1, "module_read": 1}
  # Rewritten whole: the next process hits.
  jax.clear_caches()
  counts.clear()
  assert_close(jax.jit(jax.vmap(call_tf(_f)))(X), expected, tol=1e-5)
  assert counts == {}


def test_an_entry_that_unpickles_anything_else_is_not_trusted(cache_dir,
                                                              counts):
  jax.jit(jax.vmap(call_tf(_f)))(X)
  data = _entries(cache_dir)["module"].read_bytes()
  start = len(persistent_cache._MAGIC)  # pylint: disable=protected-access
  size = int.from_bytes(data[start:start + 4], "big")
  key_text = json.loads(data[start + 4:start + 4 + size])["key"]
  # A payload a tampering writer made: a pickle that would call a function.
  evil = pickle.dumps((os.getcwd, ()))  # harmless callable, still refused
  types_ = b"{}"
  payload = len(types_).to_bytes(4, "big") + types_ + evil
  persistent_cache.Store(cache_dir, -1).put(
      persistent_cache.Key("module", key_text), payload)
  jax.clear_caches()
  counts.clear()
  jax.jit(jax.vmap(call_tf(_f)))(X)
  # The module read again (from the HLO entry, intact): the entry refused.
  assert counts == {"module_read": 1}


def test_the_size_bound_evicts_the_least_recently_used(tmp_path):
  store = persistent_cache.Store(tmp_path, 3000)
  keys = [persistent_cache.Key("hlo", f"key {i}") for i in range(5)]
  for k in keys[:3]:
    store.put(k, b"x" * 800)
  os.utime(tmp_path / keys[0].file_name, (1, 1))
  os.utime(tmp_path / keys[1].file_name, (2, 2))
  os.utime(tmp_path / keys[2].file_name, (3, 3))
  assert store.get(keys[0]) == b"x" * 800  # used now: kept longest
  store.put(keys[3], b"y" * 800)
  assert store.get(keys[1]) is None  # the least recently used, evicted
  assert store.get(keys[0]) is not None and store.get(keys[3]) is not None
  sizes = sum(p.stat().st_size for p in tmp_path.glob("*.entry"))
  assert sizes <= 3000
  store.put(keys[4], b"z" * 4000)  # larger than the bound: not kept
  assert store.get(keys[4]) is None


def _writer(directory: str, worker: int, rounds: int) -> list[str]:
  """Puts and gets entries, some shared with other workers; the problems."""
  store = persistent_cache.Store(pathlib.Path(directory), 40_000)
  problems = []
  for r in range(rounds):
    for i in range(8):
      key = persistent_cache.Key("hlo", f"shared {i}")
      payload = (f"{i}".encode() * 1000)
      store.put(key, payload)
      got = store.get(key)
      if got is not None and got != payload:
        problems.append(f"worker {worker} round {r}: a partial entry {i}")
      own = persistent_cache.Key("module", f"worker {worker} {r} {i}")
      store.put(own, payload + b"!")
      got = store.get(own)
      if got is not None and got != payload + b"!":
        problems.append(f"worker {worker} round {r}: a wrong entry")
  return problems


def test_concurrent_writers_leave_only_whole_entries(tmp_path):
  ctx = multiprocessing.get_context("spawn")
  with ctx.Pool(4) as pool:
    problems = pool.starmap(_writer, [(str(tmp_path), w, 6) for w in range(4)])
  assert [p for ps in problems for p in ps] == []
  assert not list(tmp_path.glob(".tmp-*"))
  store = persistent_cache.Store(tmp_path, 40_000)
  for i in range(8):
    got = store.get(persistent_cache.Key("hlo", f"shared {i}"))
    assert got in (None, f"{i}".encode() * 1000)
  assert sum(p.stat().st_size for p in tmp_path.glob("*.entry")) <= 40_000


def test_an_unwritable_directory_warns_once_and_the_call_works(
    tmp_path, caplog):
  blocked = tmp_path / "file"
  blocked.write_text("not a directory")
  jax.clear_caches()
  with config.compilation_cache_dir(str(blocked)):
    with caplog.at_level("WARNING"):
      for _ in range(2):
        jax.clear_caches()
        assert_close(jax.jit(jax.vmap(call_tf(_f)))(X), jax.vmap(_f_jnp)(X),
                     tol=1e-5)
  warnings = [r for r in caplog.records
              if "could not write its persistent cache" in r.getMessage()]
  assert len(warnings) == 1
  jax.clear_caches()
  compilation_cache.reset_cache()


def test_keys_differ_where_the_conversion_may(monkeypatch):
  spec = tf.TensorSpec((3,), tf.float32)
  v3 = tf.Variable(np.ones(3, np.float32))
  v4 = tf.Variable(np.ones(4, np.float32))

  def key(f, specs=(spec,), platform="CPU"):
    fn = tf.function(f, autograph=False, jit_compile=True)
    concrete = fn.get_concrete_function(*specs)
    return persistent_cache.conversion_key("hlo", concrete, specs, platform,
                                           [])
  base = key(lambda x: x * 2.)
  assert base == key(lambda x: x * 2.)  # another trace of the same graph
  assert base != key(lambda x: x * 3.)
  assert base != key(lambda x: x * 2., (tf.TensorSpec((4,), tf.float32),))
  assert base != key(lambda x: x * 2., (tf.TensorSpec((3,), tf.float64),))
  assert base != key(lambda x: x * 2., platform="GPU")
  # Captured values: their dtype and shape are in the key, not their value.
  with_v3 = key(lambda x: x * v3[0])
  assert with_v3 != key(lambda x: x * v4[0])
  v3.assign(np.full(3, 5., np.float32))
  assert with_v3 == key(lambda x: x * v3[0])
  # A small ragged constant: TF makes graph constants of its parts, so its
  # values are in the graph's digest and the key is made.
  ragged = tf.ragged.constant([[1.], [2., 3.]])
  assert key(lambda x: x * tf.reduce_sum(ragged)) is not None
  # TF's settings that change its lowering.
  monkeypatch.setattr(compat, "op_determinism_enabled", lambda: True)
  assert key(lambda x: x * 2.) != base
  monkeypatch.undo()
  monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=2")
  assert key(lambda x: x * 2.) != base


def test_functions_of_the_graph_do_not_change_the_digest_across_processes():
  code = textwrap.dedent("""
    import sys
    import tensorflow as tf
    from jax.experimental.jax2tf.call_tf_lib.tf_function import traces
    for k in range(int(sys.argv[1])):  # other traces move TF's counters
      tf.function(lambda x: x + k).get_concrete_function(
          tf.TensorSpec((), tf.float32))
    @tf.function
    def a(x): return tf.sin(x)
    @tf.function
    def b(x): return tf.cos(x)
    def f(x):
      y = tf.cond(tf.reduce_sum(x) > 0, lambda: a(x), lambda: b(x))
      return tf.while_loop(lambda i, z: i < 3, lambda i, z: (i + 1, a(z)),
                           (0, y))[1]
    c = tf.function(f, autograph=False).get_concrete_function(
        tf.TensorSpec((3,), tf.float32))
    print("DIGEST", traces.graph_digest(c))
  """)
  digests = set()
  for before in (0, 7, 95):
    out = subprocess.run([sys.executable, "-c", code, str(before)],
                         capture_output=True, text=True, check=True,
                         env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    digests.add(out.stdout.split("DIGEST")[1].strip())
  assert len(digests) == 1


_PROCESS = textwrap.dedent("""
  import json, sys
  import jax
  import numpy as np
  import tensorflow as tf
  from jax.experimental import jax2tf
  from jax.experimental.jax2tf.call_tf_lib.tf_function import compile as c
  jax.config.update("jax_compilation_cache_dir", sys.argv[1])
  calls = []
  compile_eager = c._compile_eager
  c._compile_eager = lambda *a: calls.append(1) or compile_eager(*a)
  scale = float(sys.argv[2])
  v = tf.Variable(np.full((3,), scale, np.float32))
  # A tensor of more than 128 elements: TF captures it as an input (a
  # smaller one it makes a constant of the graph, so of the key).
  t = tf.constant(np.full((200,), 2 * scale, np.float32))
  def f(x):
    return tf.reduce_sum(tf.sin(x * v) + t[:3] * x)
  x = np.linspace(0., 1., 12, dtype=np.float32).reshape(4, 3)
  g = jax.jit(jax.vmap(jax.grad(jax2tf.call_tf(f))))(x)
  print("RESULT", json.dumps({"tf2xla": len(calls),
                              "grad": np.asarray(g).tolist()}))
""")


def _process(directory: pathlib.Path, scale: float) -> dict[str, object]:
  out = subprocess.run([sys.executable, "-c", _PROCESS, str(directory),
                        str(scale)], capture_output=True, text=True,
                       check=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  return json.loads(out.stdout.split("RESULT", 1)[1])


def test_captured_values_changed_between_processes_are_read_anew(tmp_path):
  x = np.linspace(0., 1., 12, dtype=np.float32).reshape(4, 3)
  first = _process(tmp_path, 1.)
  second = _process(tmp_path, 3.)  # same graph, other captured values
  assert first["tf2xla"] == 1 and second["tf2xla"] == 0  # a hit
  for got, scale in ((first, 1.), (second, 3.)):
    expected = scale * np.cos(x * scale) + 2 * scale
    assert_close(np.asarray(got["grad"], np.float32), expected, tol=1e-5)


def test_a_module_of_ops_jax_transposes_needs_no_probe():
  fn = tf.function(_f, autograph=False, jit_compile=True)
  spec = (tf.TensorSpec((3,), tf.float32),)
  copy = stablehlo_to_jax.read(path.stablehlo_of_tf(fn, spec))
  assert transposable.surely_transposable(copy)

  def loop(x):  # a trip count that depends on the data
    return tf.while_loop(lambda y: tf.reduce_sum(y) < 10.,
                         lambda y: y * 2., [x])[0]
  fn = tf.function(loop, autograph=False, jit_compile=True)
  copy = stablehlo_to_jax.read(path.stablehlo_of_tf(fn, spec))
  assert not transposable.surely_transposable(copy)
  # A CNN (convolutions, batch normalization, pooling) needs no probe.
  fn = tf.function(_cnn, autograph=False, jit_compile=True)
  copy = stablehlo_to_jax.read(path.stablehlo_of_tf(fn, spec))
  assert transposable.surely_transposable(copy)
  # A product over windows (a cumulative product) is not surely.
  fn = tf.function(tf.math.cumprod, autograph=False, jit_compile=True)
  copy = stablehlo_to_jax.read(path.stablehlo_of_tf(fn, spec))
  assert not transposable.surely_transposable(copy)


def _cnn(x):
  """A convolution (and a depthwise one), batch normalization, max and
  average pooling, on a (3,) input."""
  image = tf.reshape(tf.tile(x, [12]), (1, 6, 6, 1))
  kernel = tf.reshape(tf.range(18, dtype=tf.float32) / 18., (3, 3, 1, 2))
  y = tf.nn.conv2d(image, kernel, 1, "SAME")
  y = tf.nn.depthwise_conv2d(y, tf.ones((2, 2, 2, 1)) / 4., [1, 1, 1, 1],
                             "SAME")
  y, _, _ = tf.compat.v1.nn.fused_batch_norm(
      y, tf.ones(2), tf.zeros(2), tf.zeros(2), tf.ones(2), is_training=False)
  pooled = (tf.nn.max_pool2d(tf.nn.relu(y), 2, 2, "VALID")
            + tf.nn.avg_pool2d(y, 2, 2, "VALID"))
  return tf.reduce_sum(pooled, axis=[0, 1, 2])


_OPS = {
    "cnn": _cnn,
    "mlp": lambda x: tf.tanh(tf.linalg.matvec(tf.constant(W.T), x)),
    "relu_max_min": lambda x: tf.nn.relu(x) + tf.maximum(x, 0.5)
                              - tf.minimum(x, -0.5) + tf.abs(x),
    "reductions": lambda x: tf.stack([tf.reduce_max(x), tf.reduce_min(x),
                                      tf.reduce_prod(x), tf.reduce_sum(x)]),
    "softmax": tf.nn.softmax,
    "gather_concat_pad": lambda x: tf.pad(tf.concat(
        [tf.gather(x, [2, 0]), x[::-1]], 0), [[1, 2]]),
    "where": lambda x: tf.where(x > 0., tf.exp(x), tf.sin(x)),
    "cumsum": lambda x: tf.math.cumsum(x),
    "cumprod": lambda x: tf.math.cumprod(x),
    "sort": lambda x: tf.sort(x),
    "loop": lambda x: tf.while_loop(lambda y: tf.reduce_sum(y) < 10.,
                                    lambda y: y * 2., [x])[0],
    # 64-bit values inside a float32 function: without jax_enable_x64, JAX
    # transposes none of these.
    "f64_sum": lambda x: tf.cast(tf.reduce_sum(tf.cast(x, tf.float64) ** 2),
                                 tf.float32),
    "f64_max": lambda x: tf.cast(tf.reduce_max(tf.cast(x, tf.float64) * 2.),
                                 tf.float32),
    "f64_pad": lambda x: tf.cast(tf.pad(tf.cast(x, tf.float64) * 2., [[1, 1]]),
                                 tf.float32),
    "f64_gather": lambda x: tf.cast(
        tf.gather(tf.cast(x, tf.float64) * 2., [2, 0]), tf.float32),
}


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("name", sorted(_OPS))
def test_a_module_said_transposable_is_one_jax_transposes(name, x64):
  """Neither the reading of the ops nor the cache says yes where JAX would
  say no, in either jax_enable_x64 mode."""
  fn = tf.function(_OPS[name], autograph=False, jit_compile=True)
  spec = (tf.TensorSpec((3,), tf.float32),)
  with config.enable_x64(x64):
    interp = path.lookup(fn, spec, purpose="test", staged=True)
    if interp is None:
      pytest.skip(f"{name}: no interpreted module")
    if interp.transposable:
      assert interp._jax_transposes()  # pylint: disable=protected-access


def _sorted_squares_f64(x):
  # A sort (the ops alone do not say: JAX is asked) and a sum in float64.
  y = tf.cast(tf.sort(x), tf.float64)
  return tf.cast(tf.reduce_sum(y * y), tf.float32)


def test_the_kept_reverse_mode_answer_is_per_x64_mode(cache_dir):
  """JAX transposes the module with jax_enable_x64, not without: the
  answer kept by a run in one mode is not the other's."""
  x = np.asarray([3., 1., 2.], np.float32)
  for x64 in (True, False):
    jax.clear_caches()
    with config.enable_x64(x64):
      got = jax.jit(jax.jacrev(call_tf(_sorted_squares_f64)))(x)
    assert_close(np.asarray(got), 2 * x, tol=1e-6)
  assert len([p for p in cache_dir.rglob("*.entry")
              if p.name.startswith("transposable-")]) == 2


def test_an_entry_with_a_header_nested_too_deep_is_a_miss(tmp_path):
  store = persistent_cache.Store(tmp_path, -1)
  key = persistent_cache.Key("hlo", "a key")
  store.put(key, b"payload")
  (entry,) = tmp_path.glob("*.entry")
  header = b"[" * 100_000 + b"]" * 100_000
  entry.write_bytes(persistent_cache._MAGIC  # pylint: disable=protected-access
                    + len(header).to_bytes(4, "big") + header + b"payload")
  assert store.get(key) is None


def test_a_directory_that_fails_warns_once_whatever_the_message(caplog):
  with caplog.at_level("WARNING"):
    for name in ("tmp-a", "tmp-b"):  # mkstemp's errors name a new file
      persistent_cache._warn_once(  # pylint: disable=protected-access
          ("/a/directory/nobody/has", 13), f"cannot write {name}")
  assert len(caplog.records) == 1
