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
"""What each vmap_method does, the jax_call_tf_slow_vmap option, the errors."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap

import jax
from jax._src import config
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import ALL_METHODS
from .util import assert_close
from .util import check_eager_and_jit
from .util import randn

call_tf = jax2tf.call_tf

X = randn(5, 4, 3)
SHAPE = jax.ShapeDtypeStruct((4, 3), np.float32)
ROUND_TRIP = jax2tf.convert(jnp.sin)


def _counting(method, shapes):
  """A call_tf whose TF function records the shape of each eager call."""
  def record(x):
    shapes.append(x.shape)
    return x * 2.
  # stateful=False: declared pure, so that the one-call methods may make
  # one call (they refuse a function with side effects).
  return call_tf(lambda x: tf.numpy_function(record, [x], tf.float32,
                                             stateful=False),
                 vmap_method=method,
                 output_shape_dtype=jax.ShapeDtypeStruct((4, 3), np.float32))


@pytest.mark.parametrize("method,calls", [
    ("sequential", [(4, 3)] * 5),
    ("expand_dims", [(5, 4, 3)]),
    ("broadcast_all", [(5, 4, 3)]),
    ("batch_polymorphic", [(20, 3)]),
])
def test_what_the_tf_function_receives(method, calls):
  shapes = []
  out = jax.vmap(_counting(method, shapes))(X)
  assert_close(out, X * 2.)
  assert shapes == calls


def test_expand_dims_and_broadcast_all_with_an_unbatched_argument():
  seen = {}

  def f_tf(x, y):
    seen[len(seen)] = (tuple(x.shape), tuple(y.shape))
    return x + y

  y = randn(4, 3)
  for method, y_shape in (("expand_dims", (1, 4, 3)),
                          ("broadcast_all", (5, 4, 3))):
    seen.clear()
    out = jax.vmap(call_tf(f_tf, vmap_method=method),
                   in_axes=(0, None))(X, y)
    assert_close(out, X + y)
    # (The first call traces the unbatched function for its output shape.)
    assert ((5, 4, 3), y_shape) in seen.values(), seen


def test_batch_polymorphic_merges_the_batch_into_axis_zero():
  """A function with independent rows: the vmap axis joins its batch."""
  w = randn(3, 2)
  rows = call_tf(lambda x: tf.matmul(x, w), vmap_method="batch_polymorphic")
  check_eager_and_jit(jax.vmap(rows), jax.vmap(lambda x: x @ w), X)
  check_eager_and_jit(jax.jacrev(lambda x: rows(x).sum(0)),
                      jax.jacrev(lambda x: (x @ w).sum(0)), X[0])


def test_the_method_reaches_the_vjp_call():
  """jacrev is vmap of the VJP; its call_tf must use the same method."""
  shapes = []
  f = _counting("sequential", shapes)
  jax.jacrev(lambda x: f(x).sum(1))(X[0])
  # One forward call, then the VJP's call_tf once per cotangent (4 of them);
  # had the VJP lost the method, pfor would have failed on numpy_function.
  assert shapes == [(4, 3)] * 5
  # With "pfor" the round trip's VJP is vectorized by pfor too and fails;
  # with "vectorized", JAX batches its module, and it is right.
  g = call_tf(ROUND_TRIP, vmap_method="pfor")
  with pytest.raises(call_tf_errors.CallTfVectorizationError):
    jax.jacrev(g)(X[0])
  assert_close(jax.jacrev(call_tf(ROUND_TRIP, vmap_method="vectorized"))(
      X[0]), jax.jacrev(jnp.sin)(X[0]))
  assert_close(jax.jacrev(call_tf(ROUND_TRIP, vmap_method="sequential"))(
      X[0]), jax.jacrev(jnp.sin)(X[0]))


def test_unknown_method_fails_at_call_tf_time():
  with pytest.raises(ValueError) as e:
    call_tf(tf.sin, vmap_method="loop")
  msg = str(e.value)
  assert "vmap_method='loop'" in msg
  for m in ALL_METHODS:
    assert repr(m) in msg


def test_one_call_method_on_a_function_that_ignores_the_batch():
  with pytest.raises(ValueError) as e:
    jax.vmap(call_tf(lambda x: tf.reduce_sum(x, 0),
                     vmap_method="expand_dims"))(X)
  assert "expected [5, 3]" in str(e.value)
  assert "vmap_method=None or 'sequential'" in str(e.value)


def test_batch_polymorphic_rejects_scalars():
  with pytest.raises(ValueError, match="result 0 is a scalar"):
    jax.vmap(call_tf(tf.reduce_sum, vmap_method="batch_polymorphic"))(X)
  with pytest.raises(ValueError, match="argument 1 is a scalar"):
    jax.vmap(call_tf(lambda x, s: x * s, vmap_method="batch_polymorphic"),
             in_axes=(0, None))(X, np.float32(2.))


@pytest.mark.parametrize("method", ALL_METHODS, ids=str)
def test_output_shape_dtype_is_batched(method):
  f = call_tf(tf.sin, vmap_method=method, output_shape_dtype=SHAPE)
  check_eager_and_jit(jax.vmap(f), jax.vmap(jnp.sin), X)


def test_ordered_sequential_keeps_batch_order():
  order = []

  def record(x):
    order.append(float(x[0, 0]))
    return x

  f = call_tf(lambda x: tf.numpy_function(record, [x], tf.float32),
              ordered=True, vmap_method="sequential", output_shape_dtype=SHAPE)
  jax.vmap(f)(X)
  assert order == [float(v) for v in X[:, 0, 0]]


@pytest.mark.parametrize("method", [None, "vectorized", "expand_dims",
                                    "broadcast_all", "batch_polymorphic"],
                         ids=str)
def test_ordered_with_a_one_call_method_fails_clearly(method):
  with pytest.raises(NotImplementedError) as e:
    jax.vmap(call_tf(tf.sin, ordered=True, vmap_method=method))(X)
  assert "ordered=True" in str(e.value)
  assert "vmap_method='sequential'" in str(e.value)


def test_ordered_default_method_with_the_option_runs_in_order():
  order = []

  def record(x):
    order.append(float(x[0, 0]))
    return x

  with config.call_tf_slow_vmap(True):
    jax.vmap(call_tf(lambda x: tf.numpy_function(record, [x], tf.float32),
                     ordered=True, output_shape_dtype=SHAPE))(X)
  assert order == [float(v) for v in X[:, 0, 0]]


def test_option_by_config_update():
  # With pfor chosen, which cannot vectorize the round trip.
  f = jax.vmap(call_tf(ROUND_TRIP))
  with config.call_tf_vectorizer("pfor"):
    try:
      jax.config.update("jax_call_tf_slow_vmap", True)
      check_eager_and_jit(f, jax.vmap(jnp.sin), X)
    finally:
      jax.config.update("jax_call_tf_slow_vmap", False)
    with pytest.raises(call_tf_errors.CallTfVectorizationError):
      f(X)


def test_cached_jit_retraces_when_the_option_changes():
  # With pfor chosen: by default, under jit, the round trip's StableHLO is
  # batched by JAX and needs no fallback.
  jitted = jax.jit(jax.vmap(call_tf(ROUND_TRIP)))
  with config.call_tf_vectorizer("pfor"):
    with config.call_tf_slow_vmap(True):
      assert_close(jitted(X), np.sin(X))
    with pytest.raises(call_tf_errors.CallTfVectorizationError):
      jitted(X)  # the trace made under the option is not reused
    with config.call_tf_slow_vmap(True):
      assert_close(jitted(X), np.sin(X))


_SCRIPT = textwrap.dedent("""
    import numpy as np
    import jax, jax.numpy as jnp
    from jax.experimental import jax2tf
    def main(argv=()):
      x = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
      f = jax.vmap(jax2tf.call_tf(jax2tf.convert(jnp.sin)))
      try:
        print("ok", np.allclose(jax.jit(f)(x), np.sin(x)))
      except ValueError as e:
        print("error", type(e).__name__)
""")


def _run(code: str, *args: str, env: dict[str, str] | None = None) -> str:
  full_env = {k: v for k, v in os.environ.items()
              if k != "JAX_CALL_TF_SLOW_VMAP"}
  # pfor (the option jax_call_tf_vectorizer, by its environment variable):
  # the round trip then needs the slow fallback.
  full_env.update(env or {}, TF_CPP_MIN_LOG_LEVEL="3",
                  JAX_CALL_TF_VECTORIZER="pfor")
  proc = subprocess.run([sys.executable, "-c", code, *args],
                        env=full_env, capture_output=True, text=True)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return proc.stdout.strip().splitlines()[-1]


def test_option_by_environment_variable():
  script = _SCRIPT + "main()\n"
  assert _run(script, env={"JAX_CALL_TF_SLOW_VMAP": "1"}) == "ok True"
  assert _run(script) == "error CallTfVectorizationError"


def test_option_by_absl_flag():
  script = _SCRIPT + textwrap.dedent("""
      from absl import app
      jax.config.config_with_absl()
      app.run(main)
  """)
  assert _run(script, "--jax_call_tf_slow_vmap") == "ok True"
  assert _run(script) == "error CallTfVectorizationError"


def test_sequential_program_size_does_not_grow_with_the_batch():
  f = jax.jit(jax.vmap(call_tf(lambda x: tf.sin(x) * 2.,
                               vmap_method="sequential")))
  sizes = {b: len(f.lower(randn(b, 4, 3)).as_text()) for b in (2, 64, 2048)}
  # Only the printed batch sizes differ; no per-element unrolling.
  assert max(sizes.values()) - min(sizes.values()) < 200, sizes


@pytest.mark.parametrize("method", ALL_METHODS, ids=str)
@pytest.mark.parametrize("has_side_effects", [True, False])
def test_has_side_effects_survives_batching(method, has_side_effects):
  """With call_tf_graph, TF runs the function at run time: the effect stays."""
  f = call_tf(tf.sin, vmap_method=method, has_side_effects=has_side_effects,
              call_tf_graph=True)
  names = [str(e) for e in jax.make_jaxpr(jax.vmap(f))(X).effects]
  assert ("CallTfEffect" in names) == has_side_effects, names


@pytest.mark.parametrize("method", ALL_METHODS, ids=str)
def test_calls_compiled_into_the_program_are_not_effectful(method):
  """Inlined as HLO, the call is pure: no effect, so JAX's fast dispatch path
  applies, and an unused call is removed."""
  f = call_tf(tf.sin, vmap_method=method)  # has_side_effects=True by default
  assert not jax.make_jaxpr(jax.vmap(f))(X).effects
  lowered = jax.jit(lambda x: (jax.vmap(f)(x), x)[1]).lower(X).as_text()
  assert "call_tf" not in lowered


def test_concurrent_traces_leave_tensorflow_as_they_found_it():
  """The rule swaps pfor converters and pfor's ``def_function`` (autograph
  off), turns TF's deprecation checks off and filters TF's log, while it
  traces."""
  import threading  # pylint: disable=g-import-not-at-top
  from tensorflow.python.ops.parallel_for import control_flow_ops  # pylint: disable=g-import-not-at-top
  from tensorflow.python.ops.parallel_for import pfor as pfor_lib  # pylint: disable=g-import-not-at-top
  from tensorflow.python.util import deprecation  # pylint: disable=g-import-not-at-top
  swapped = ("MatMul", "PartitionedCall", "StatefulPartitionedCall")
  registry = pfor_lib._pfor_converter_registry  # pylint: disable=protected-access
  originals = {op: registry[op] for op in swapped}
  warnings_on = deprecation._PRINT_DEPRECATION_WARNINGS  # pylint: disable=protected-access
  def_functions = (control_flow_ops.def_function, pfor_lib.def_function)
  logger = tf.get_logger()
  filters, handlers = list(logger.filters), list(logger.handlers)
  w = randn(3, 2)
  errors = []

  def work(seed):
    try:
      for i in range(4):
        x = randn(4 + seed + i, 3)
        f = call_tf(lambda x: tf.linalg.matvec(tf.constant(w.T), x))
        assert_close(jax.jit(jax.vmap(f))(x), x @ w, tol=1e-4)
    except Exception as e:  # pylint: disable=broad-except
      errors.append(e)

  threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert not errors, errors
  assert {op: registry[op] for op in swapped} == originals
  assert deprecation._PRINT_DEPRECATION_WARNINGS is warnings_on  # pylint: disable=protected-access
  assert control_flow_ops.def_function is def_functions[0]
  assert pfor_lib.def_function is def_functions[1]
  assert logger.filters == filters and logger.handlers == handlers


def test_jax_clear_caches_clears_the_rules_caches():
  # The module (jax.experimental.jax2tf.call_tf is also the function's name).
  call_tf_module = importlib.import_module("jax.experimental.jax2tf.call_tf")
  from jax.experimental.jax2tf.call_tf_lib.batching import rule as batching_rule  # pylint: disable=g-import-not-at-top
  from jax.experimental.jax2tf.call_tf_lib.tf_function import compile as call_tf_compile  # pylint: disable=g-import-not-at-top

  @tf.function(autograph=False)
  def g(x):
    return tf.sin(x)

  jax.jit(jax.vmap(call_tf(g)))(X)
  caches = [batching_rule._batched_tf_functions,  # pylint: disable=protected-access
            call_tf_compile._compile_eager_cached,  # pylint: disable=protected-access
            # upstream's, registered by patch 0015
            call_tf_module._get_concrete_function_tf]  # pylint: disable=protected-access
  assert all(c.cache_info().currsize for c in caches)
  jax.clear_caches()
  assert not any(c.cache_info().currsize for c in caches)


def test_a_pfor_failure_restores_what_the_rule_swapped():
  from tensorflow.python.ops.parallel_for import pfor as pfor_lib  # pylint: disable=g-import-not-at-top
  from tensorflow.python.util import deprecation  # pylint: disable=g-import-not-at-top
  swapped = ("MatMul", "PartitionedCall", "StatefulPartitionedCall")
  registry = pfor_lib._pfor_converter_registry  # pylint: disable=protected-access
  originals = {op: registry[op] for op in swapped}
  warnings_on = deprecation._PRINT_DEPRECATION_WARNINGS  # pylint: disable=protected-access
  f = call_tf(lambda x: tf.ensure_shape(
      tf.numpy_function(np.sin, [x], tf.float32, stateful=False), x.shape))
  with pytest.raises(ValueError, match="PyFunc"):
    jax.jit(jax.vmap(f))(randn(4, 3))
  assert {op: registry[op] for op in swapped} == originals
  assert deprecation._PRINT_DEPRECATION_WARNINGS is warnings_on  # pylint: disable=protected-access
