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
"""Fault finding: the inputs, states and uses where a wrong answer hides.

Dtypes, batch sizes 0, 1 and many, pytrees of arguments and results, TF
functions with side effects, threads sharing one `call_tf`, Python state the
TF function reads changed between calls, and complex functions. Every result
is compared with stock upstream JAX where upstream runs (the same probes run
under upstream's own wheel of the release, in a subprocess), and with a
TensorFlow-only reference (a loop of TF calls, `tf.GradientTape`) or the same
function in `jnp` where it does not (`vmap`, forward mode).
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import json
import os
import pathlib
import subprocess
import sys
import threading
import time
import zipfile

import jax
from jax.experimental import jax2tf
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import ALL_METHODS
from .util import assert_close

call_tf = jax2tf.call_tf
ONE_CALL_METHODS = ("expand_dims", "broadcast_all", "batch_polymorphic")


def _tf_loop(f, xs):
  """A Python loop of eager TF calls over axis 0, stacked: vmap's reference."""
  rows = [f(tf.constant(x)) for x in xs]
  return jax.tree.map(lambda *r: np.stack([np.asarray(v) for v in r]), *rows)


def _tf_grad(f, x):
  """tf.GradientTape's gradient of sum(f(x)): grad's reference."""
  x = tf.constant(x)
  with tf.GradientTape() as tape:
    tape.watch(x)
    s = tf.reduce_sum(f(x))
  return tape.gradient(s, x).numpy()


# ---------------------------------------------------------------- dtypes

# dtype -> tolerance; float16 and bfloat16 carry 3 and 2 decimal digits.
_DTYPES = {"float32": 1e-6, "float16": 2e-3, "bfloat16": 2e-2, "int32": 0,
           "uint8": 0, "bool": 0, "complex64": 1e-6}


def _dtype(name):
  return jnp.bfloat16 if name == "bfloat16" else np.dtype(name)


def _elementwise(x):
  if x.dtype == tf.bool:
    return tf.logical_not(x)
  return x * 2 + 1


def _inputs(name, n=4):
  base = np.arange(n * 3).reshape(n, 3)
  if name == "bool":
    return base % 3 == 0
  if name == "uint8":
    return base.astype(np.uint8)
  if name == "complex64":
    return (base / 4. + 1j * base[::-1] / 3.).astype(np.complex64)
  return (base / 4. - 1.).astype(_dtype(name))


@pytest.mark.parametrize("method", [None, "sequential", "broadcast_all"])
@pytest.mark.parametrize("dtype", list(_DTYPES))
def test_vmap_keeps_dtype_and_values(dtype, method):
  xs = _inputs(dtype)
  g = call_tf(_elementwise, vmap_method=method)
  expected = _tf_loop(_elementwise, xs)
  for run in (jax.vmap(g), jax.jit(jax.vmap(g))):
    assert_close(run(xs), expected, _DTYPES[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_per_example_gradients_in_low_precision(dtype):
  def f(x):
    return tf.sin(x) * x
  xs = _inputs(dtype)
  g = call_tf(f)
  got = jax.jit(jax.vmap(jax.grad(lambda x: jnp.sum(g(x)))))(xs)
  expected = np.stack([_tf_grad(f, x) for x in xs])
  assert_close(got, expected, 10 * _DTYPES[dtype])


# ----------------------------------------------------------- batch sizes


def _rowwise(x):
  return tf.sin(x) * x + 1.


@pytest.mark.parametrize("method", ALL_METHODS)
@pytest.mark.parametrize("n", [0, 1, 7])
def test_batch_sizes_zero_one_and_many(n, method):
  xs = np.linspace(-1., 1., n * 3, dtype=np.float32).reshape(n, 3)
  g = call_tf(_rowwise, vmap_method=method)
  expected = (_tf_loop(_rowwise, xs) if n else np.zeros((0, 3), np.float32))
  assert_close(jax.jit(jax.vmap(g))(xs), expected)
  assert_close(jax.vmap(g)(xs), expected)


@pytest.mark.parametrize("n", [0, 1, 7])
def test_per_example_gradients_at_batch_sizes_zero_one_and_many(n):
  xs = np.linspace(-1., 1., n * 3, dtype=np.float32).reshape(n, 3)
  g = call_tf(_rowwise)
  got = jax.jit(jax.vmap(jax.grad(lambda x: jnp.sum(g(x)))))(xs)
  expected = (np.stack([_tf_grad(_rowwise, x) for x in xs]) if n
              else np.zeros((0, 3), np.float32))
  assert_close(got, expected)


# --------------------------------------------------------------- pytrees


def _tree_fn(d):
  """A pytree in, a pytree out: {"a": (3,), "b": ((3,), (2, 2))}."""
  a, (b0, b1) = d["a"], d["b"]
  return {"u": a * b0 + tf.reduce_sum(b1),
          "v": (tf.reduce_sum(b1 * b1, 0), tf.sin(a))}


def _tree_arg(seed, batch=None):
  rng = np.random.default_rng(seed)
  lead = () if batch is None else (batch,)
  r = lambda *s: rng.standard_normal(lead + s).astype(np.float32)
  return {"a": r(3), "b": (r(3), r(2, 2))}


@pytest.mark.parametrize("method", [None, "sequential"])
def test_pytrees_with_mixed_axes(method):
  g = call_tf(_tree_fn, vmap_method=method)
  batched = _tree_arg(0, batch=4)
  fixed_b1 = _tree_arg(1)["b"][1]
  batched["b"] = (batched["b"][0], fixed_b1)
  in_axes = ({"a": 0, "b": (0, None)},)
  expected = _tf_loop(
      lambda a_b0: _tree_fn({"a": a_b0[0], "b": (a_b0[1], fixed_b1)}),
      np.stack([batched["a"], batched["b"][0]], 1))
  for run in (jax.vmap(g, in_axes=in_axes),
              jax.jit(jax.vmap(g, in_axes=in_axes))):
    assert_close(run(batched), expected, 1e-5)
  # Results out at axis 1, for every leaf.
  got = jax.jit(jax.vmap(g, in_axes=in_axes, out_axes=1))(batched)
  assert_close(got, jax.tree.map(lambda e: np.moveaxis(e, 0, 1), expected),
               1e-5)


@pytest.mark.parametrize("method", [None, "sequential"])
def test_pytree_jacobians(method):
  g = call_tf(_tree_fn, vmap_method=method)
  d = _tree_arg(2)
  jac = jax.jit(jax.jacrev(g))(d)
  # The TF reference, leaf by leaf: tape.jacobian of each result leaf.
  leaves, treedef = jax.tree.flatten(d)
  tf_leaves = [tf.constant(l) for l in leaves]
  with tf.GradientTape(persistent=True) as tape:
    for l in tf_leaves:
      tape.watch(l)
    out = _tree_fn(jax.tree.unflatten(treedef, tf_leaves))
  expected = jax.tree.map(
      lambda y: jax.tree.unflatten(treedef, [
          tape.jacobian(y, l, experimental_use_pfor=False,
                        unconnected_gradients=tf.UnconnectedGradients.ZERO
                        ).numpy()
          for l in tf_leaves]), out)
  assert_close(jac, expected, 1e-5)
  assert_close(jax.jit(jax.jacfwd(g))(d), expected, 1e-5)


# ----------------------------------------------------------- side effects


def _counting():
  count = tf.Variable(0.)

  def f(x):
    count.assign_add(1.)
    return x * 2.
  return count, f


@pytest.mark.parametrize("method,jit", [
    pytest.param(m, jit, id=f"{m}-{'jit' if jit else 'eager'}")
    for m in ALL_METHODS for jit in (False, True)])
def test_a_side_effect_runs_once_per_element_or_refuses(method, jit):
  """A variable write under vmap: once per element, or an error; never one."""
  for n in (1, 2, 4):
    count, f = _counting()
    run = jax.vmap(call_tf(f, vmap_method=method))
    if jit:
      run = jax.jit(run)
    xs = np.ones((n, 3), np.float32)
    try:
      out = run(xs)
    except Exception:  # noqa: BLE001 (a refusal is a right answer)
      assert count.numpy() == 0., "refused after writing the variable"
      continue
    assert_close(out, xs * 2.)
    assert count.numpy() == n, (
        f"vmap_method={method!r}: {count.numpy()} writes for a batch of {n}")


# --------------------------------------------------------------- threads


@contextlib.contextmanager
def _thread_switches_in(function_name: str) -> Iterator[list[int]]:
  """Threads started meanwhile yield the GIL at each line of `function_name`.

  Python may switch threads at any of those lines anyway; yielding at every
  one makes the interleavings that expose a race there likely, not rare.

  Args:
    function_name: the name of the function's code object.

  Yields:
    A list with an entry per call of the function seen, so that a test can
    check that it hooked something.
  """
  seen = []

  def on_line(frame, event, arg):
    del frame, arg
    if event == "line":
      time.sleep(0)
    return on_line

  def on_call(frame, event, arg):
    del event, arg
    if frame.f_code.co_name != function_name:
      return None
    seen.append(threading.get_ident())
    return on_line

  threading.settrace(on_call)
  try:
    yield seen
  finally:
    threading.settrace(None)


def test_threads_share_one_call_tf():
  """8 threads call one call_tf object, jitted, eager and under vmap."""
  def f(x):
    return tf.tanh(x) * tf.reduce_sum(x)
  g = call_tf(f)
  runs = {"jit": jax.jit(g), "eager": g, "jit(vmap)": jax.jit(jax.vmap(g)),
          "vmap": jax.vmap(g)}
  base = np.linspace(-1., 1., 12, dtype=np.float32).reshape(4, 3)
  for name, run in runs.items():  # the first call of each, outside threads
    run(base if "vmap" in name else base[0])
  errors, results = [], {}

  def work(k):
    try:
      for i in range(6):
        for name, run in runs.items():
          xs = base + 0.01 * (10 * k + i)
          arg = xs if "vmap" in name else xs[0]
          results[(k, i, name)] = (arg, np.asarray(run(arg)))
    except Exception as e:  # noqa: BLE001 (reported below)
      errors.append(repr(e))

  with _thread_switches_in("callable_flat_tf"):
    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
      t.start()
    for t in threads:
      t.join()
  assert not errors, errors
  assert len(results) == 8 * 6 * len(runs)
  for (_, _, name), (arg, got) in results.items():
    expected = (_tf_loop(f, arg) if "vmap" in name
                else f(tf.constant(arg)).numpy())
    assert_close(got, expected, 1e-5)


@pytest.mark.parametrize("vmap_method", [None, "sequential"])
def test_threads_share_the_kept_trace(vmap_method):
  """8 threads make eager calls that run the kept trace's flat callable.

  The trace cache keeps one flat callable of `f` per graph, for every
  `call_tf` of `f`; eager `vmap` of a batch of one and eager "sequential"
  call it (not a callable of their own), from every thread at once. It
  returned another thread's results while it kept the results of a call in
  its closure (1 call in 80 to 240; with threads switching inside it, every
  run of this test).
  """
  def f(x):
    return tf.tanh(x) * tf.reduce_sum(x)
  run = jax.vmap(call_tf(f, vmap_method=vmap_method))
  n = 1 if vmap_method is None else 3
  base = np.linspace(-1., 1., 3 * n, dtype=np.float32).reshape(n, 3)
  run(base)  # the first call, which traces, outside threads
  errors, results = [], {}

  def work(k):
    try:
      for i in range(10):
        xs = base + 0.01 * (10 * k + i)
        results[(k, i)] = (xs, np.asarray(run(xs)))
    except Exception as e:  # noqa: BLE001 (reported below)
      errors.append(repr(e))

  # upstream's name of call_tf's flat callable, which the trace cache keeps
  with _thread_switches_in("callable_flat_tf") as seen:
    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
      t.start()
    for t in threads:
      t.join()
  assert not errors, errors
  assert len(results) == 8 * 10
  assert len(seen) >= len(results), "the threads did not call the callable"
  wrong = [key for key, (xs, got) in results.items()
           if not np.allclose(got, _tf_loop(f, xs), rtol=1e-5, atol=1e-5)]
  assert not wrong, f"{len(wrong)} of {len(results)} results wrong: {wrong}"


# -------------------------------------------------- Python state of the TF


def _stateful_python():
  state = {"k": 1.}
  return state, call_tf(lambda a: tf.reduce_sum(a * state["k"]))


X3 = np.array([1., 2., 3.], np.float32)


def test_python_state_value_and_gradient_see_one_state():
  state, g = _stateful_python()
  jax.jit(g)(X3)
  state["k"] = 2.
  value, grad = jax.jit(jax.value_and_grad(g))(X3)
  k_value, k_grad = float(value) / float(X3.sum()), float(grad[0])
  assert k_value == k_grad, (k_value, k_grad)
  assert k_value in (1., 2.)


def test_python_state_primal_and_tangent_see_one_state():
  state, g = _stateful_python()
  jax.jit(g)(X3)
  state["k"] = 2.
  primal, tangent = jax.jit(lambda x, t: jax.jvp(g, (x,), (t,)))(
      X3, np.ones(3, np.float32))
  assert float(primal) / 6. == float(tangent) / 3., (primal, tangent)


def test_python_state_every_path_sees_one_state():
  """After a change of state, each way to call sees the same `k`."""
  state, g = _stateful_python()
  g(X3)
  jax.jit(g)(X3)
  jax.vmap(g)(np.stack([X3, X3]))
  state["k"] = 2.
  xs = np.stack([X3, 2 * X3])
  seen = {
      "eager": float(g(X3)) / 6.,
      # (jax.jit(g) again would be JAX's cached trace of g, made before the
      # change, by JAX's own rule, for stock upstream too.)
      "new jit": float(jax.jit(lambda a: g(a))(X3)) / 6.,
      "eager vmap": float(jax.vmap(g)(xs)[1]) / 12.,
      "jit(vmap)": float(jax.jit(jax.vmap(g))(xs)[1]) / 12.,
      "grad": float(jax.grad(g)(X3)[0]),
      "jit(grad)": float(jax.jit(jax.grad(g))(X3)[0]),
      "jvp": float(jax.jvp(g, (X3,), (X3,))[1]) / 6.,
  }
  assert len(set(seen.values())) == 1, seen


# --------------------------------------------------------------- complex

Z = np.array(0.3 + 1.1j, np.complex64)


def _square_tf(v):
  return v * v


@pytest.mark.parametrize("mode", [
    "jacrev", "jacfwd"])
def test_holomorphic_jacobians_follow_jax_convention(mode):
  transform = getattr(jax, mode)
  expected = transform(lambda v: v * v, holomorphic=True)(Z)  # 2z
  got = jax.jit(transform(call_tf(_square_tf), holomorphic=True))(Z)
  assert_close(got, expected)


def test_holomorphic_jacrev_and_jacfwd_agree():
  g = call_tf(_square_tf)
  zs = np.array([0.3 + 1.1j, -2. + .5j], np.complex64)
  rev = jax.jit(jax.jacrev(g, holomorphic=True))(zs)
  fwd = jax.jit(jax.jacfwd(g, holomorphic=True))(zs)
  assert_close(rev, fwd)
  assert_close(rev, jax.jacrev(lambda v: v * v, holomorphic=True)(zs))


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_real_function_of_complex_input_follows_jax_convention(mode):
  def f_tf(v):
    return tf.math.real(v * tf.math.conj(v) + v * v)

  def f_jnp(v):
    return jnp.real(v * jnp.conj(v) + v * v)
  g = call_tf(f_tf)
  if mode == "grad":
    assert_close(jax.jit(jax.grad(g))(Z), jax.grad(f_jnp)(Z))
  else:
    t = np.array(0.5 - 2j, np.complex64)
    assert_close(jax.jvp(g, (Z,), (t,)), jax.jvp(f_jnp, (Z,), (t,)))


# ------------------------------------------------- against stock upstream

# Probes that stock upstream runs (no vmap, no forward mode): each records
# the result under jit or grad and a TF-only reference. The same file runs
# under the fork's jax and under upstream's own wheel.
_PROBES = r'''
import json, sys, threading
import numpy as np
import jax
import jax.numpy as jnp
import ml_dtypes
import tensorflow as tf
from jax.experimental import jax2tf
call_tf = jax2tf.call_tf

def data(v):
  a = np.asarray(v)
  if np.iscomplexobj(a):
    return [a.real.astype(np.float64).ravel().tolist(),
            a.imag.astype(np.float64).ravel().tolist()]
  return a.astype(np.float64).ravel().tolist()

def as_json(v):
  leaves, tree = jax.tree.flatten(v)
  return {"tree": str(tree).replace("PyTreeDef", ""),
          "leaves": [{"dtype": str(np.asarray(l).dtype),
                      "shape": list(np.shape(l)), "data": data(l)}
                     for l in leaves]}

results = {}
prefix = ""
def probe(name, run, ref):
  name = prefix + name
  entry = {}
  for key, fn in (("value", run), ("ref", ref)):
    try:
      entry[key] = as_json(fn())
    except Exception as e:
      lines = str(e).strip().splitlines()
      entry[key + "_error"] = type(e).__name__ + ": " + (lines[0][:300] if lines else "")
  results[name] = entry

def tf_grad(f, args):
  args = jax.tree.map(tf.constant, args)
  with tf.GradientTape() as tape:
    tape.watch(args)
    s = tf.add_n([tf.reduce_sum(tf.math.real(l)) for l in jax.tree.leaves(f(args))])
  return jax.tree.map(np.asarray, tape.gradient(s, args))

def jax_grad(g, args):
  return jax.jit(jax.grad(lambda a: sum(jnp.sum(jnp.real(l)) for l in jax.tree.leaves(g(a)))))(args)

def numeric(x):
  return tf.logical_not(x) if x.dtype == tf.bool else x * 2 + 1

def probes(x64):
  dtypes = (["float64", "int64", "complex128"] if x64 else
            ["float32", "float16", "bfloat16", "int32", "uint8", "bool", "complex64"])
  for name in dtypes:
    dt = ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)
    base = np.arange(6).reshape(2, 3)
    x = (base % 3 == 0 if name == "bool" else
         (base / 4. + 0.5j * base).astype(dt) if name.startswith("complex") else
         base.astype(dt) if "int" in name else (base / 4. - 1.).astype(dt))
    probe(f"dtype {name}: jit", lambda: jax.jit(call_tf(numeric))(x),
          lambda: numeric(tf.constant(x)))
    if "float" in name:
      sinx = lambda v: tf.sin(v) * v
      probe(f"dtype {name}: jit(grad)", lambda: jax_grad(call_tf(sinx), x),
            lambda: tf_grad(sinx, x))

  ft = np.float64 if x64 else np.float32
  def tree_fn(d):
    a, (b0, b1) = d["a"], d["b"]
    return {"u": a * b0 + tf.reduce_sum(b1), "v": (tf.reduce_sum(b1 * b1, 0), tf.sin(a))}
  rng = np.random.default_rng(0)
  tree = {"a": rng.standard_normal(3).astype(ft),
          "b": (rng.standard_normal(3).astype(ft), rng.standard_normal((2, 2)).astype(ft))}
  probe("pytree: jit", lambda: jax.jit(call_tf(tree_fn))(tree),
        lambda: tree_fn(jax.tree.map(tf.constant, tree)))
  probe("pytree: jit(grad)", lambda: jax_grad(call_tf(tree_fn), tree),
        lambda: tf_grad(tree_fn, tree))
  probe("pytree: value_and_grad", lambda: jax.value_and_grad(
            lambda a: jnp.sum(call_tf(tree_fn)(a)["u"]))(tree),
        lambda: (np.sum(tree_fn(jax.tree.map(tf.constant, tree))["u"]),
                 tf_grad(lambda a: tree_fn(a)["u"], tree)))

  empty = np.zeros((0, 3), ft)
  probe("zero size: jit", lambda: jax.jit(call_tf(lambda v: v * 2.))(empty),
        lambda: empty * 2.)
  probe("zero size: jit(grad)", lambda: jax_grad(call_tf(lambda v: tf.sin(v)), empty),
        lambda: np.cos(empty))

  @tf.custom_gradient
  def custom(v):
    return v * v, lambda dy: dy * 10.
  xs = np.array([1., 2., 3.], ft)
  probe("custom gradient: jit(grad)", lambda: jax_grad(call_tf(custom), xs),
        lambda: tf_grad(custom, xs))
  probe("stop_gradient: jit(grad)",
        lambda: jax_grad(call_tf(lambda v: v * tf.stop_gradient(v)), xs),
        lambda: tf_grad(lambda v: v * tf.stop_gradient(v), xs))

  def writes():
    count = tf.Variable(0.)
    def f(v):
      count.assign_add(1.)
      return v * 2.
    return count, f
  def counted(run):
    count, f = writes()
    out = run(call_tf(f))
    return np.asarray(out), count.numpy()
  def counted_ref():
    count, f = writes()
    return np.asarray(f(tf.constant(xs))), count.numpy()
  probe("variable write: eager", lambda: counted(lambda g: g(xs)), counted_ref)
  probe("variable write: jit", lambda: counted(lambda g: jax.jit(g)(xs)), counted_ref)
  def twice(g):
    j = jax.jit(g)
    j(xs)
    return j(xs)
  probe("variable write: jit twice", lambda: counted(twice),
        lambda: (counted_ref()[0], np.float32(2.)))

  def threaded():
    g = jax.jit(call_tf(lambda v: tf.tanh(v) * tf.reduce_sum(v)))
    g(xs)
    out = {}
    def work(k):
      for i in range(10):
        out[(k, i)] = np.asarray(g(xs + k + i / 10.))
    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    return np.stack([out[(k, i)] for k in range(8) for i in range(10)])
  def threaded_ref():
    f = lambda v: tf.tanh(v) * tf.reduce_sum(v)
    return np.stack([f(tf.constant(xs + k + i / 10.)).numpy()
                     for k in range(8) for i in range(10)])
  probe("threads: jit", threaded, threaded_ref)


probes(False)
jax.config.update("jax_enable_x64", True)
prefix = "x64 "
probes(True)
print("@@probes " + json.dumps(results))
'''


def _run_probes(*envs: dict[str, str]) -> list[dict]:
  """The probes' results under each environment, run side by side."""
  procs = [subprocess.Popen([sys.executable, "-c", _PROBES],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env) for env in envs]
  results = []
  for proc in procs:
    out, err = proc.communicate(timeout=900)
    lines = [l for l in out.splitlines() if l.startswith("@@probes ")]
    assert proc.returncode == 0 and lines, (
        f"the probes died (exit {proc.returncode}):\n{err[-3000:]}")
    results.append(json.loads(lines[-1][len("@@probes "):]))
  return results


def _probe_env(**extra: str) -> dict[str, str]:
  return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", JAX_PLATFORMS="cpu",
              **extra)


@pytest.fixture(scope="module")
def stock_jax(release) -> pathlib.Path:
  """Upstream's own jax of the release, unpacked (pure Python).

  Put first on PYTHONPATH, it shadows the fork's jax in the test venv, whose
  jaxlib and TensorFlow it shares.
  """
  from forklib import ForkError  # noqa: PLC0415 (the tool, on sys.path)
  from forklib.testing import envs  # noqa: PLC0415
  try:
    wheel = envs.stock_wheel(release)
  except ForkError as e:
    pytest.skip(f"upstream's wheel is not available: {e}")
  dest = wheel.parent / (wheel.name[:-len(".whl")] + "-unpacked")
  if not (dest / "jax" / "__init__.py").exists():
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    with zipfile.ZipFile(wheel) as zf:
      zf.extractall(tmp)
    os.replace(tmp, dest)
  check = subprocess.run(
      [sys.executable, "-c", "import jax; print(jax.__version__, jax.__file__)"],
      capture_output=True, text=True, env=_probe_env(PYTHONPATH=str(dest)))
  version, path = check.stdout.split()
  assert version == release.version and path.startswith(str(dest)), (
      check.stdout, check.stderr)
  return dest


@pytest.fixture(scope="module")
def probes(stock_jax):
  """(the fork's, stock upstream's) results of the probes."""
  return _run_probes(_probe_env(), _probe_env(PYTHONPATH=str(stock_jax)))


def _close(a: dict, b: dict, tol: float = 2e-2) -> str:
  """"" if the two recorded results agree (tree, dtypes, shapes, values)."""
  if a["tree"] != b["tree"]:
    return f"tree {a['tree']} vs {b['tree']}"
  for la, lb in zip(a["leaves"], b["leaves"]):
    if la["shape"] != lb["shape"]:
      return f"shape {la['shape']} vs {lb['shape']}"
    da, db = np.asarray(la["data"]), np.asarray(lb["data"])
    if da.shape != db.shape or not np.allclose(da, db, rtol=tol, atol=tol):
      return f"values {la['data']} vs {lb['data']}"
  return ""


def test_probes_match_stock_upstream_and_tf(probes):
  """Where stock upstream runs, the fork gives its answer; always TF's."""
  fork, stock = probes
  assert set(fork) == set(stock)
  problems = []
  for name in fork:
    f, s = fork[name], stock[name]
    assert "ref" in f, (name, f)
    if "value" not in f:
      if "value" in s:
        problems.append(f"{name}: stock runs, the fork raises "
                        f"{f['value_error']}")
      continue
    why = _close(f["value"], f["ref"])
    if why:
      problems.append(f"{name}: the fork differs from TF: {why}")
    if "value" in s:
      why = _close(f["value"], s["value"], 1e-6)
      if why:
        problems.append(f"{name}: the fork differs from stock: {why}")
      # Dtypes too: the fork returns what upstream returns.
      dtypes = lambda r: [l["dtype"] for l in r["leaves"]]
      if dtypes(f["value"]) != dtypes(s["value"]):
        problems.append(f"{name}: dtypes {dtypes(f['value'])} vs stock "
                        f"{dtypes(s['value'])}")
  assert not problems, "\n".join(problems)
  ran = [n for n in stock if "value" in stock[n]]
  assert len(ran) >= len(stock) // 2, (
      f"stock upstream ran only {ran}: the comparison would prove little")
