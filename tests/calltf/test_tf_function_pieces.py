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
"""The pieces of ``tf_function``, each alone: fitting symbolic output shapes
(``shapes._affine_fit``), and making a ``call_tf_graph`` function runnable by
TF (``graph_call._frozen``, ``graph_call._function_from_graph_def``).

Their composition is tested through ``call_tf`` in
test_vmap_function_kinds.py and test_call_tf_graph.py.
"""

from __future__ import annotations

import gc

from jax import export
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib.tf_function import captures
from jax.experimental.jax2tf.call_tf_lib.tf_function import empty
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph_call
from jax.experimental.jax2tf.call_tf_lib.tf_function import shapes
import numpy as np
import pytest
import tensorflow as tf

# pylint: disable=protected-access


def test_affine_fit_gives_symbolic_and_constant_dimensions():
  b, = export.symbolic_shape("b")
  # Output shapes (2*b + 1, 4) at b = 7, 8, 19 and 517.
  out = lambda v: [(2 * v + 1, 4)]
  fit = shapes._affine_fit(["b"], [b], ([7], out(7)), [out(8)],
                           [([19], out(19)), ([517], out(517))])
  assert fit == ((2 * b + 1, 4),)
  assert isinstance(fit[0][1], int)


def test_affine_fit_refuses_a_dimension_a_check_point_contradicts():
  b, = export.symbolic_shape("b")
  out = lambda v: [(v,)]
  with pytest.raises(ValueError, match=r"dimension 0 of result 0 is not an "
                     r"affine function of the dimension variables b \(sizes "
                     r"tried: \[7\], \[\[19\], \[517\]\]\)"):
    shapes._affine_fit(["b"], [b], ([7], out(7)), [out(8)],
                       [([19], out(19)), ([517], [(1000,)])])


def test_a_frozen_function_holds_its_variables_values():
  v = tf.Variable(3.)
  fn = tf.function(lambda x: x * v, autograph=False).get_concrete_function(
      tf.TensorSpec((), tf.float32))
  frozen, graph_def = graph_call._frozen(fn, has_variables=True)
  assert not [t for t in frozen.captured_inputs if t.dtype == tf.resource]
  assert graph_def.node
  v.assign(5.)  # the frozen value stays
  assert float(frozen(tf.constant(2.))[0]) == 6.


def test_a_function_that_assigns_its_variables_is_not_frozen():
  v = tf.Variable(3.)

  def assigns(x):
    v.assign_add(x)
    return v.read_value()

  fn = tf.function(assigns, autograph=False).get_concrete_function(
      tf.TensorSpec((), tf.float32))
  with pytest.raises(ValueError) as e:
    graph_call._frozen(fn, has_variables=True)
  assert str(e.value) == str(errors.freeze_variables_error(e.value.__cause__))


def test_a_function_is_made_again_from_its_graph_def():
  fn = tf.function(lambda x: tf.sin(x) * 2., autograph=False
                   ).get_concrete_function(tf.TensorSpec((), tf.float32))
  frozen, graph_def = graph_call._frozen(fn, has_variables=False)
  again = graph_call._function_from_graph_def(graph_def, frozen)
  assert again.inputs[0].shape == ()  # the import lost it; it is set again
  np.testing.assert_allclose(again(tf.constant(0.5))[0], 2. * np.sin(0.5),
                             rtol=1e-6)


def _eigenvalues(x):
  return tf.raw_ops.SelfAdjointEigV2(input=x, compute_v=False)


def test_empty_eager_results_take_the_graph_shape():
  # TF's eager kernel gives the vectors it does not compute a scalar; its
  # graph, shape (0,).
  x = np.eye(3, dtype=np.float32)
  e, v = (np.asarray(t) for t in _eigenvalues(x))
  assert v.shape == ()
  fn = tf.function(_eigenvalues, autograph=False)
  sig = (tf.TensorSpec([3, 3], tf.float32),)
  got = empty.eager_results([e, v], fn, sig, None)
  assert got[0] is e and got[1].shape == (0,)
  # Results of more than one element are not looked at; nor vectorized
  # calls, whose loop body already shapes them.
  assert empty.eager_results([e, e], fn, sig, None)[1] is e
  assert empty.eager_results([e, v], fn, sig, object())[1] is v


def _divided_by_len(x):
  return x / len(x)


def _python_condition(x):
  if tf.reduce_sum(x) > 0:
    return x * 2.
  return x


def _python_loop(x):
  total = tf.zeros([])
  for r in x:
    total += r
  return x * total


@pytest.mark.parametrize("f", [_divided_by_len, _python_condition,
                               _python_loop])
def test_a_symbolic_tensor_used_as_a_python_value_is_refused_saying_why(f):
  # call_tf traces without autograph (as upstream): TF's own TypeError
  # named neither call_tf nor what to do.
  import jax  # pylint: disable=g-import-not-at-top
  from jax.experimental import jax2tf  # pylint: disable=g-import-not-at-top
  x = np.arange(4, dtype=np.float32)
  with pytest.raises(errors.CallTfTraceError,
                     match="call_tf traces.*autograph off.*tf.function"):
    jax.jit(jax2tf.call_tf(f))(x)
  # Wrapped in tf.function, autograph converts it.
  assert jax.jit(jax2tf.call_tf(tf.function(f)))(x).shape == (4,)


def test_a_function_capturing_variables_is_warned_about_once(caplog):
  """Upstream's warning, once per function, counting what it captures
  (not every captured input's text at every lowering)."""
  import jax  # pylint: disable=g-import-not-at-top
  from jax.experimental import jax2tf  # pylint: disable=g-import-not-at-top
  variables = [tf.Variable(np.full((2,), float(i), np.float32))
               for i in range(7)]
  f = tf.function(lambda x: x + tf.add_n(variables), autograph=False)
  x = np.ones((2,), np.float32)
  with caplog.at_level("WARNING", logger="jax.experimental.jax2tf.call_tf"):
    for _ in range(2):
      np.testing.assert_allclose(
          jax.jit(lambda x: jax2tf.call_tf(f)(x) * 1.)(x), 22.)
  warnings = [r.getMessage() for r in caplog.records
              if "works best with a TensorFlow function" in r.getMessage()]
  assert len(warnings) == 1, warnings
  assert "captures 7 variables and 0 tensors" in warnings[0]
  assert warnings[0].endswith(", ...")


def test_captured_values_are_read_as_numpy_reads_them():
  """A plain variable is read by its ReadVariableOp alone; the values, their
  dtypes, and a read kept across an assignment are np.asarray's."""
  plain = tf.Variable(np.arange(6, dtype=np.float64).reshape(2, 3))
  ints = tf.Variable([1, 2], dtype=tf.int32)

  class Sub(type(plain)):  # a subclass (as a distributed variable is)
    pass
  sub = Sub(np.float32(3.))
  tensor = tf.constant([True, False])
  assert compat.is_plain_resource_variable(plain)
  assert not compat.is_plain_resource_variable(sub)
  assert not compat.is_plain_resource_variable(tensor)
  values = [plain, ints, sub, tensor]
  got = captures.read_captured_values(values)
  for g, v in zip(got, values, strict=True):
    assert isinstance(g, np.ndarray)
    assert g.dtype == np.asarray(v).dtype
    np.testing.assert_array_equal(g, np.asarray(v))
  # A plain variable's read is a read-only view of the read's buffer, which
  # stays the value read through updates of every kind (TF copies the
  # variable's buffer first while a read holds it), its tensor gone.
  assert not got[0].flags.writeable and not got[0].flags.owndata
  with pytest.raises(ValueError, match="read-only"):
    got[0][0, 0] = 7.
  gc.collect()
  plain.assign_add(tf.ones((2, 3), tf.float64))
  plain[0, 1].assign(9.)
  plain.scatter_nd_update([[1, 2]], [-1.])  # TF's copy-on-read mode after it
  kept = captures.read_captured_values([plain])[0]
  plain.assign(tf.zeros((2, 3), tf.float64))
  _ = [tf.ones((2, 3), tf.float64) * 5. for _ in range(8)]  # reuse memory
  np.testing.assert_array_equal(got[0], np.arange(6.).reshape(2, 3))
  np.testing.assert_array_equal(kept, [[1., 9., 3.], [4., 5., -1.]])
  np.testing.assert_array_equal(captures.read_captured_values([plain])[0],
                                np.zeros((2, 3)))
