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
"""The pieces of embedding a restored jax2tf function, each alone.

:mod:`.embed.restored` (recognizing the function) and
:mod:`.embed.embedding` (calling its module); their composition is tested
in ``test_savedmodel_composition.py``. Here a module is a ``jax.export``
of a JAX function, or a ``jax2tf.convert``ed ``tf.function``, never a
SavedModel.
"""

from __future__ import annotations

import types

import jax
from jax import export
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib.embed import embedding
from jax.experimental.jax2tf.call_tf_lib.embed import restored
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

Source = restored._Source  # pylint: disable=protected-access
Kind = restored.SourceKind


def _embedded(fun, x, w):
  """An embedded module of ``fun(w, x)`` (w a constant), with its VJP.

  Its results are a tuple, as those of an XlaCallModule.
  """
  exp = export.export(jax.jit(lambda w, x: (fun(w, x),)))(
      jax.ShapeDtypeStruct(w.shape, w.dtype),
      jax.ShapeDtypeStruct(export.symbolic_shape("b"), x.dtype))
  exp = export.deserialize(exp.serialize(vjp_order=1))
  return restored.EmbeddedModule(
      exported=exp,
      operands=(Source(Kind.CONST, w), Source(Kind.ARG, None, 1)),
      outputs=(0,), out_tree=jax.tree_util.tree_structure((0,)))


def test_operands_merge_call_and_select_arguments():
  ops = embedding._Operands.of(types.SimpleNamespace(operands=(
      Source(Kind.VAR), Source(Kind.ARG, None, 0), Source(Kind.CONST),
      Source(Kind.ARG, None, 1))))
  assert ops.is_arg == (False, True, False, True)
  assert ops.nr_args == 2
  assert ops.merge(["a0", "a1"], ["w0", "w1"]) == ["w0", "a0", "w1", "a1"]
  assert ops.arg_cotangents(["c0", "c1", "c2", "c3"]) == ["c1", "c3"]
  # (args, extras, weights) -> fun(*operands, *extras)
  assert ops.call(lambda *a: a, 3, "a0", "a1", "e", "w0", "w1") == (
      "w0", "a0", "w1", "a1", "e")


def test_module_weights_read_in_operand_order():
  v = tf.Variable(np.float32(2.))
  embedded = types.SimpleNamespace(operands=(
      Source(Kind.ARG, None, 0), Source(Kind.CONST, np.float32(1.)),
      Source(Kind.VAR, v), Source(Kind.TENSOR, tf.constant(3.))))
  assert [float(w) for w in embedding._module_weights(embedded)] == [1, 2, 3]
  v.assign(5.)  # read at each call
  assert float(embedding._module_weights(embedded)[1]) == 5


def test_tangents_of_cotangents_zeros_for_symbolic_zeros():
  p = [np.ones(2, np.float32), np.ones(3, np.float32), np.ones(1)]
  zero = jax.custom_derivatives.SymbolicZero(
      jax.core.ShapedArray((3,), np.float32))
  t = [None, zero, np.full(1, 7.)]
  out = embedding._tangents_of_cotangents(p, t, 1, 3)
  np.testing.assert_array_equal(out[0], np.zeros(3, np.float32))
  np.testing.assert_array_equal(out[1], [7.])


def test_full_tangents_zeros_for_none_and_argument_dtypes():
  args = [np.ones(2, np.float32), np.ones((), np.float32)]
  out = embedding._full_tangents((None, np.float64(3.)), args)
  np.testing.assert_array_equal(out[0], np.zeros(2, np.float32))
  assert out[1].dtype == np.float32 and float(out[1]) == 3


def test_embedded_call_value_vmap_and_gradient():
  def fun(w, x):
    return jnp.sin(x) * w
  w, x = np.float32(3.), np.arange(4, dtype=np.float32)
  embedded = _embedded(fun, x, w)
  f = lambda x: embedding.call_embedded(embedded, [None, x], None)[0]
  np.testing.assert_allclose(f(x), fun(w, x), rtol=1e-6)
  xs = np.stack([x, 2 * x])
  np.testing.assert_allclose(jax.vmap(f)(xs), fun(w, xs), rtol=1e-6)
  g = jax.grad(lambda x: jnp.sum(f(x)))(x)
  np.testing.assert_allclose(g, w * np.cos(x), rtol=1e-6)
  _, t = jax.jvp(f, (x,), (np.ones_like(x),))  # the saved VJP, transposed
  np.testing.assert_allclose(t, w * np.cos(x), rtol=1e-6)
  vjp_args = embedding._EmbeddedCall(embedded, None).vjp_fun(
      x, np.ones_like(x), w)
  assert len(vjp_args) == 1  # the argument's cotangent, not the weight's
  np.testing.assert_allclose(vjp_args[0], w * np.cos(x), rtol=1e-6)


def test_function_name_is_an_identifier():
  assert restored._function_name(lambda x: x) == "_lambda_"
  assert restored._function_name(object()) == "tf_function"


def test_cache_kept_per_function_while_it_lives():
  f = tf.function(lambda x: x)
  assert restored._cache_of(f) is restored._cache_of(f)
  unreferenceable = object()  # not weakly referenceable: no cache
  assert restored._cache_of(unreferenceable) is not restored._cache_of(
      unreferenceable)


def test_input_sources_arguments_then_captures():
  v = tf.Variable(np.ones(2, np.float32))
  f = tf.function(lambda x, y: x + y + v, autograph=False)
  concrete = f.get_concrete_function(tf.TensorSpec((2,), tf.float32),
                                     tf.TensorSpec((2,), tf.float32))
  env = restored._input_sources(concrete)
  sources = [env[p.ref()] for p in concrete.graph.inputs]
  assert [(s.kind, s.index) for s in sources[:2]] == [(Kind.ARG, 0),
                                                      (Kind.ARG, 1)]
  assert [s.kind for s in sources[2:]] == [Kind.RESOURCE]
  assert sources[2].payload is v


def test_saved_vjp_op_none_without_a_saved_gradient():
  walker = restored._GraphWalker()
  op = object()
  assert restored._saved_vjp_op(walker, op) is None
  walker.gradient_op_types[id(op)] = b"unknown_gradient_function"
  walker.gradient_disabled = "no gradient"
  assert restored._saved_vjp_op(walker, op) is None


def _spec(shape=(None, 3)):
  return (tf.TensorSpec(shape, tf.float32),)


def test_embeddable_module_of_a_converted_function():
  w = tf.Variable(np.ones(3, np.float32))
  f_tf = jax2tf.convert(lambda w, x: jnp.sin(x) * w,
                        polymorphic_shapes=[None, "(b, 3)"])
  f = tf.function(lambda x: f_tf(w, x), autograph=False)
  found = restored._embeddable_module(
      f, jax.tree_util.tree_structure((0,)), _spec())
  assert sorted(s.kind for s in found.operands) == [Kind.ARG, Kind.VAR]
  assert found.outputs == (0,)
  assert found.gradient_disabled is None
  assert found.exported.fun_name == "call_tf__lambda_"


def test_a_tf_function_of_arrays_is_traced_without_a_wrapper():
  v = tf.Variable(np.ones(3, np.float32))
  f = tf.function(lambda x, y: x * v + y, autograph=False)
  specs = _spec() * 2
  concrete, _ = restored._concrete_function(
      f, jax.tree_util.tree_structure((0, 0)), specs)
  # Its own trace: no wrapper that captures the variable again.
  assert concrete is f.get_concrete_function(*specs)
  assert not any(op.type in ("PartitionedCall", "StatefulPartitionedCall")
                 for op in concrete.graph.get_operations())
  # Arguments in a pytree, or another callable (a Python function, a
  # concrete or restored function): a wrapper of flat ones, which calls it.
  tree = jax.tree_util.tree_structure(({"a": 0}, 0))
  wrapped, _ = restored._concrete_function(
      lambda d, y: f(d["a"], y), tree, specs)
  assert any(op.type in ("PartitionedCall", "StatefulPartitionedCall")
             for op in wrapped.graph.get_operations())
  flat = jax.tree_util.tree_structure((0, 0))
  assert restored._takes_flat(f, flat)
  assert not restored._takes_flat(f, tree)
  assert not restored._takes_flat(lambda x, y: f(x, y), flat)
  assert not restored._takes_flat(concrete, flat)


def test_embeddable_module_refuses_other_ops():
  f = tf.function(lambda x: tf.sin(x), autograph=False)
  with pytest.raises(restored.NotEmbeddableError, match="also has ops"):
    restored._embeddable_module(
        f, jax.tree_util.tree_structure((0,)), _spec())
  assert restored.find_embeddable_module(
      f, jax.tree_util.tree_structure((0,)), _spec()) is None
