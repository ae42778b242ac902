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
"""The model composer's cycle: SavedModels in, SavedModels out, polymorphic.

Load a SavedModel exported from JAX with a polymorphic batch, call it from a
larger JAX function (directly and under vmap), export that with a polymorphic
batch, save it with gradients, reload, run, differentiate, and go again.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import jax
from jax import export
from jax._src import config
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
from jax.experimental.jax2tf.call_tf_lib.embed import restored as call_tf_restored
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from ..export import cycle as export_cycle
from .util import assert_close
from .util import check_eager_and_jit

call_tf = jax2tf.call_tf
rng = np.random.default_rng(0)
PARAMS = (rng.normal(size=(4, 8)).astype(np.float32) / 2,
          rng.normal(size=(8,)).astype(np.float32),
          rng.normal(size=(8, 4)).astype(np.float32) / 2)
TOL = 2e-4


def mlp(params, x):
  w1, b1, w2 = params
  return jnp.tanh(x @ w1 + b1) @ w2


def save(fun_tf, path: pathlib.Path, variables=(), with_gradient=True):
  """Saves `fun_tf` with input signature (None, 4); returns it reloaded."""
  module = tf.Module()
  module.vars = list(variables)
  module.f = tf.function(fun_tf, autograph=False, input_signature=[
      tf.TensorSpec((None, 4), tf.float32)])
  tf.saved_model.save(module, str(path), options=tf.saved_model.SaveOptions(
      experimental_custom_gradients=with_gradient))
  return tf.saved_model.load(str(path))


def grad_sum_sq(f):
  return jax.grad(lambda x: jnp.sum(f(x) ** 2))


@pytest.fixture(scope="module")
def level0(tmp_path_factory):
  """A JAX model exported by jax2tf with a polymorphic batch, reloaded."""
  path = tmp_path_factory.mktemp("models") / "level0"
  variables = [tf.Variable(p) for p in PARAMS]
  f_tf = jax2tf.convert(mlp, polymorphic_shapes=[None, "(b, 4)"])
  return save(lambda x: f_tf(variables, x), path, variables)


def test_jit_of_a_restored_function_needs_no_output_shape_dtype(tmp_path):
  """A plain TF SavedModel: TF reports (None, 3); call_tf infers (b, 3)."""
  w = rng.normal(size=(4, 3)).astype(np.float32)
  variable = tf.Variable(w)

  def f(x):
    y = tf.tanh(x @ variable)
    return y, tf.concat([y, 2. * y], axis=0)

  restored = save(f, tmp_path / "plain", [variable])

  def f_ref(x):
    y = jnp.tanh(x @ w)
    return y, jnp.concatenate([y, 2. * y], axis=0)

  f_jax = call_tf(restored.f)
  for batch in (1, 2, 5):
    x = rng.normal(size=(batch, 4)).astype(np.float32)
    assert_close(jax.jit(f_jax)(x), f_ref(x), tol=TOL)
    assert_close(jax.jit(jax.grad(lambda x: jnp.sum(f_jax(x)[1])))(x),
                 jax.grad(lambda x: jnp.sum(f_ref(x)[1]))(x), tol=TOL)
  # Symbolic output shapes are inferred where the call can run at a symbolic
  # batch (call_tf_graph=True, under jax2tf.convert); without call_tf_graph
  # such a call could never compile, and upstream's error stays.
  symbolic = jax.eval_shape(
      call_tf(restored.f, call_tf_graph=True),
      jax.ShapeDtypeStruct(export.symbolic_shape("b, 4"), np.float32))
  assert [str(s.shape) for s in symbolic] == ["(b, 3)", "(2*b, 3)"]
  with pytest.raises(ValueError, match="output has dynamic shape"):
    jax.eval_shape(f_jax, jax.ShapeDtypeStruct(
        export.symbolic_shape("b, 4"), np.float32))


@pytest.mark.parametrize("f,op,why", [
    (lambda x: tf.boolean_mask(x, x > 0), "Where",
     "bounded but unknown.*output_shape_dtype cannot"),
    (lambda x: tf.range(tf.reduce_sum(tf.cast(x > 0, tf.int32))), "Range",
     "XLA cannot compile the function.*compile-time constant")])
def test_data_dependent_shapes_say_where_output_shape_dtype_helps(f, op, why):
  with pytest.raises(ValueError) as e:
    jax.jit(call_tf(f))(np.array([1., -1., 2.], np.float32))
  # Upstream's message first; then the op, why, and that output_shape_dtype
  # helps only eagerly, for a size the same for every input.
  message = str(e.value)
  assert message.startswith(
      "call_tf cannot call functions whose output has dynamic shape.")
  assert f"op '{op}'" in message
  assert re.search(why, message), message
  assert "Eagerly (without jax.jit), output_shape_dtype helps" in message


def test_restored_jax2tf_function_is_embedded(level0):
  found = call_tf_restored.find_embeddable_module(
      level0.f, jax.tree_util.tree_structure((0,)),
      (tf.TensorSpec((None, 4), tf.float32),))
  assert found is not None
  kinds = [s.kind for s in found.operands]
  kind = call_tf_restored.SourceKind
  assert sorted(kinds) == [kind.ARG, kind.VAR, kind.VAR, kind.VAR]  # x, weights
  assert str(found.exported.in_avals[kinds.index(kind.ARG)].shape) == "(b, 4)"
  assert str(found.exported.out_avals[0].shape) == "(b, 4)"
  assert found.exported.has_vjp()
  # A Python function around it takes the general path (its code runs).
  assert not call_tf_restored.is_candidate(lambda x: level0.f(x))


@pytest.mark.parametrize("batch", [1, 3])
def test_embedded_call_eager_jit_grad(level0, batch):
  f = call_tf(level0.f)
  x = rng.normal(size=(batch, 4)).astype(np.float32)
  check_eager_and_jit(f, lambda x: mlp(PARAMS, x), x, tol=TOL)
  check_eager_and_jit(grad_sum_sq(f), grad_sum_sq(lambda x: mlp(PARAMS, x)),
                      x, tol=TOL)


def test_embedded_vmap_methods(level0):
  ref = jax.vmap(lambda x: mlp(PARAMS, x))
  xs = rng.normal(size=(2, 3, 4)).astype(np.float32)
  for method in ("batch_polymorphic", "sequential"):
    check_eager_and_jit(jax.vmap(call_tf(level0.f, vmap_method=method)),
                        ref, xs, tol=TOL)
  # jacrev of the model rides on batch_polymorphic (vmap of the saved VJP).
  x = xs[0]
  check_eager_and_jit(
      jax.jacrev(call_tf(level0.f, vmap_method="batch_polymorphic")),
      jax.jacrev(lambda x: mlp(PARAMS, x)), x, tol=TOL)
  # The default method: JAX batches the saved module, eagerly as under
  # jit, and jacrev is vmap of the saved VJP's module.
  check_eager_and_jit(jax.vmap(call_tf(level0.f)), ref, xs, tol=TOL)
  check_eager_and_jit(jax.jacrev(call_tf(level0.f)),
                      jax.jacrev(lambda x: mlp(PARAMS, x)), x, tol=TOL)
  # With pfor chosen, nothing can vectorize the saved module: the error
  # says what to do.
  with config.call_tf_vectorizer("pfor"):
    with pytest.raises(call_tf_errors.CallTfVectorizationError) as e:
      jax.vmap(call_tf(level0.f))(xs)
    assert "vmap_method='batch_polymorphic'" in str(e.value)
    assert "jax_call_tf_slow_vmap" in str(e.value)
    with config.call_tf_slow_vmap(True):
      check_eager_and_jit(jax.vmap(call_tf(level0.f)), ref, xs, tol=TOL)


def test_embedded_call_exports_with_a_symbolic_batch(level0):
  def g(x):
    return jnp.cos(call_tf(level0.f)(x))

  exported = export.export(jax.jit(g))(
      jax.ShapeDtypeStruct(export.symbolic_shape("b, 4"), np.float32))
  reloaded = export.deserialize(exported.serialize(vjp_order=1))
  assert str(reloaded.in_avals[0].shape) == "(b, 4)"
  for batch in (1, 5):
    x = rng.normal(size=(batch, 4)).astype(np.float32)
    assert_close(reloaded.call(x), jnp.cos(mlp(PARAMS, x)), tol=TOL)
    assert_close(jax.grad(lambda x: jnp.sum(reloaded.call(x)))(x),
                 jax.grad(lambda x: jnp.sum(jnp.cos(mlp(PARAMS, x))))(x),
                 tol=TOL)


def test_saved_without_gradient_says_how_to_save(tmp_path):
  variables = [tf.Variable(p) for p in PARAMS]
  f_tf = jax2tf.convert(mlp, polymorphic_shapes=[None, "(b, 4)"])
  restored = save(lambda x: f_tf(variables, x), tmp_path / "nograd",
                  variables, with_gradient=False)
  x = np.ones((2, 4), np.float32)
  f = call_tf(restored.f)
  assert_close(f(x), mlp(PARAMS, x), tol=TOL)
  with pytest.raises(ValueError) as e:
    jax.grad(lambda x: jnp.sum(f(x)))(x)
  assert "was saved without its gradient" in str(e.value)
  assert "experimental_custom_gradients=True" in str(e.value)


def test_composition_cycle_twice_deep(level0, tmp_path):
  """Each cycle: call the previous model directly and under vmap, check
  values and gradients against JAX at two batch sizes, export with a
  polymorphic batch, save with gradients, reload, check again."""
  restored = level0
  ref = lambda x: mlp(PARAMS, x)  # noqa: E731
  for cycle in (1, 2):
    f = call_tf(restored.f)
    f_rows = call_tf(restored.f, vmap_method="batch_polymorphic")

    def g(x, f=f, f_rows=f_rows):
      return (jnp.sin(f(x))
              + 0.5 * jax.vmap(lambda row: f_rows(row[None] * 2.)[0])(x))

    def g_ref(x, ref=ref):
      return jnp.sin(ref(x)) + 0.5 * ref(2. * x)

    for batch in (1, 3):
      x = rng.normal(size=(batch, 4)).astype(np.float32)
      assert_close(jax.jit(g)(x), g_ref(x), tol=TOL)
      assert_close(jax.jit(grad_sum_sq(g))(x), grad_sum_sq(g_ref)(x), tol=TOL)

    restored = save(jax2tf.convert(g, polymorphic_shapes=["(b, 4)"]),
                    tmp_path / f"cycle{cycle}")
    for batch in (1, 3):
      x = rng.normal(size=(batch, 4)).astype(np.float32)
      xt = tf.constant(x)
      with tf.GradientTape() as tape:
        tape.watch(xt)
        y = restored.f(xt)
        loss = tf.reduce_sum(y ** 2)
      assert_close(y.numpy(), g_ref(x), tol=TOL)
      assert_close(tape.gradient(loss, xt).numpy(), grad_sum_sq(g_ref)(x),
                   tol=TOL)
      # And from JAX again, the next cycle's input.
      assert_close(jax.jit(grad_sum_sq(call_tf(restored.f)))(x),
                   grad_sum_sq(g_ref)(x), tol=TOL)
    # The saved model holds only StableHLO (no TF function call-backs).
    concrete = restored.f.get_concrete_function(
        tf.TensorSpec((None, 4), tf.float32))
    modules = [n for f in concrete.graph.as_graph_def().library.function
               for n in f.node_def if n.op == "XlaCallModule"]
    assert modules and all(not n.attr["function_list"].list.func
                           for n in modules)
    ref = g_ref


def test_tf1_graph_mode_loads_and_embeds_a_jax2tf_model(tmp_path):
  """In graph mode the weights are read through the session, after restore
  and after an assignment."""
  path = tmp_path / "level0"
  variables = [tf.Variable(p) for p in PARAMS]
  f_tf = jax2tf.convert(mlp, polymorphic_shapes=[None, "(b, 4)"])
  save(lambda x: f_tf(variables, x), path, variables)
  code = textwrap.dedent(f"""
      import numpy as np, tensorflow as tf
      tf.compat.v1.disable_eager_execution()
      import jax, jax.numpy as jnp
      from jax.experimental import jax2tf
      X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
      g = tf.Graph()
      with g.as_default(), tf.compat.v1.Session(graph=g) as sess:
        r = tf.saved_model.load({str(path)!r})
        sess.run(tf.compat.v1.global_variables_initializer())  # restores
        x = tf.compat.v1.placeholder(tf.float32, (None, 4))
        conv = lambda: jax2tf.convert(
            lambda x: jnp.sin(jax2tf.call_tf(r.f)(x)),
            polymorphic_shapes=["(b, 4)"])(x)
        print(sess.run(conv(), {{x: X}}).ravel().tolist())
        sess.run(r.vars[0].assign(r.vars[0] * 2.))
        print(sess.run(conv(), {{x: X}}).ravel().tolist())
  """)
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                        text=True, env=dict(os.environ,
                                            TF_CPP_MIN_LOG_LEVEL="3"))
  assert proc.returncode == 0, proc.stderr[-4000:]
  lines = proc.stdout.strip().splitlines()
  x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
  first = np.array(eval(lines[0]), np.float32).reshape(3, 4)  # pylint: disable=eval-used
  second = np.array(eval(lines[1]), np.float32).reshape(3, 4)  # pylint: disable=eval-used
  assert_close(first, jnp.sin(mlp(PARAMS, x)), tol=TOL)
  doubled = (PARAMS[0] * 2., PARAMS[1], PARAMS[2])
  assert_close(second, jnp.sin(mlp(doubled, x)), tol=TOL)


def test_embedded_model_whose_output_is_not_the_batch(tmp_path):
  """An output of 2*b rows: the saved gradient's cotangent is (2*b, 4)."""
  def stack(x):
    return jnp.concatenate([x, 2. * x])

  restored = save(jax2tf.convert(stack, polymorphic_shapes=["(b, 4)"]),
                  tmp_path / "stack")
  f = call_tf(restored.f)
  assert call_tf_restored.find_embeddable_module(
      restored.f, jax.tree_util.tree_structure((0,)),
      (tf.TensorSpec((None, 4), tf.float32),)) is not None
  x = rng.normal(size=(3, 4)).astype(np.float32)
  check_eager_and_jit(f, stack, x, tol=TOL)
  check_eager_and_jit(grad_sum_sq(f), grad_sum_sq(stack), x, tol=TOL)
  exported = export.export(jax.jit(f))(
      jax.ShapeDtypeStruct(export.symbolic_shape("b, 4"), np.float32))
  assert str(exported.out_avals[0].shape) == "(2*b, 4)"
  assert_close(exported.call(x[:2]), stack(x[:2]), tol=TOL)


def test_embedded_model_forward_mode_with_pfor_is_a_clear_error(level0):
  """With the StableHLO path off, forward mode says why; grad works."""
  with config.call_tf_vectorizer("pfor"):
    f = call_tf(level0.f)
    x = rng.normal(size=(3, 4)).astype(np.float32)
    with pytest.raises(NotImplementedError,
                       match="forward-mode derivatives.*saves only its"):
      jax.jvp(f, (x,), (np.ones_like(x),))
    with pytest.raises(NotImplementedError, match="Use reverse mode"):
      jax.jacfwd(lambda x: jnp.sum(f(x)))(x)
    assert_close(grad_sum_sq(f)(x), grad_sum_sq(lambda x: mlp(PARAMS, x))(x),
                 tol=TOL)


def test_embedded_model_forward_mode_transposes_the_saved_vjp(level0):
  """jacfwd of a restored jax2tf model: the transpose of its saved VJP; a
  second derivative is refused (jax2tf saves none)."""
  f = call_tf(level0.f)
  x = rng.normal(size=(3, 4)).astype(np.float32)
  ref = lambda x: mlp(PARAMS, x)  # noqa: E731
  t = np.ones_like(x)
  scalar = lambda g: lambda x: jnp.sum(jnp.sin(g(x)))  # noqa: E731
  for jit in (False, True):
    wrap = jax.jit if jit else (lambda g: g)
    assert_close(wrap(lambda x, t: jax.jvp(f, (x,), (t,)))(x, t),
                 jax.jvp(ref, (x,), (t,)), tol=TOL)
    assert_close(wrap(jax.jacfwd(f))(x), jax.jacfwd(ref)(x), tol=TOL)
    for second in (jax.hessian, lambda g: jax.jacfwd(jax.jacfwd(g)),
                   lambda g: jax.jacrev(jax.jacfwd(g))):
      with pytest.raises(NotImplementedError,
                         match="cannot compute a second derivative"):
        wrap(second(scalar(f)))(x)
  # jit(vmap) of it with the defaults: JAX batches its module.
  xs = rng.normal(size=(5, 3, 4)).astype(np.float32)
  assert_close(jax.jit(jax.vmap(f))(xs), jax.vmap(ref)(xs), tol=TOL)


def test_embedded_model_second_derivative_is_refused_not_wrong(tmp_path):
  """The saved VJP's module does not record the model's stop_gradient:
  differentiating it gave a Hessian off by ~1 here. First derivatives, in
  both modes, are the saved VJP's and exact."""
  def model(x):
    return jnp.sin(x) * jax.lax.stop_gradient(x)

  restored = save(jax2tf.convert(model, polymorphic_shapes=["(b, 4)"]),
                  tmp_path / "stop_gradient")
  f = call_tf(restored.f)
  x = np.linspace(.1, 1., 8, dtype=np.float32).reshape(2, 4)
  scalar = lambda g: lambda x: jnp.sum(g(x))  # noqa: E731
  check_eager_and_jit(jax.jacfwd(f), jax.jacfwd(model), x, tol=TOL)
  check_eager_and_jit(jax.jacrev(f), jax.jacrev(model), x, tol=TOL)
  with pytest.raises(NotImplementedError, match="lax.stop_gradient"):
    jax.hessian(scalar(f))(x)


def test_composition_cycle_with_savedmodels_and_jax_export(tmp_path):
  """jax2tf SavedModels embedded by call_tf, with no vmap_method, composed
  into a larger model, saved again with a polymorphic batch; then the same
  larger model through jax.export."""
  ref = lambda x: export_cycle.mlp(export_cycle.P0, x)  # noqa: E731
  restored = save(jax2tf.convert(ref, polymorphic_shapes=["(b, 4)"]),
                  tmp_path / "level0")
  for level in (1, 2):
    inner = jax2tf.call_tf(restored.f)
    g, g_ref = export_cycle.larger(inner), export_cycle.larger(ref)
    export_cycle.check_model(g, g_ref)
    restored = save(jax2tf.convert(g, polymorphic_shapes=["(b, 4)"]),
                    tmp_path / f"level{level}")
    ref = g_ref
  # The last SavedModel, embedded, inside a jax.export artifact.
  b, = export.symbolic_shape("b")
  exported = export_cycle.roundtrip(
      export_cycle.larger(jax2tf.call_tf(restored.f)),
      jax.ShapeDtypeStruct((b, 4), np.float32))
  export_cycle.check_model(exported.call, export_cycle.larger(ref), tol=1e-3)
