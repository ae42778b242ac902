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
"""Where call_tf changes TensorFlow's behaviour: TF without each, and with.

Each test shows what TensorFlow does left alone (the reason the override
exists), what it does while the override lasts, and that TF's own behaviour
is back afterwards, after an error too.
"""

from __future__ import annotations

import pytest
import tensorflow as tf

from jax.experimental.jax2tf.call_tf_lib import tf_overrides


def test_every_internal_the_overrides_read_is_there():
  assert tf_overrides.check() == []


def _op_types_of_slice_gradient(override: bool) -> set[str]:
  """The ops of `tf.slice`'s gradient traced for XLA, with or without it."""

  @tf.function(jit_compile=True, autograph=False)
  def grad(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = tf.reduce_sum(tf.slice(x, [1], [3]) ** 2)
    if override:
      with tf_overrides.slice_gradient_outside_xla():
        return tape.gradient(y, x)
    return tape.gradient(y, x)

  graph = grad.get_concrete_function(tf.TensorSpec((4,), tf.float32)).graph
  return {op.type for op in graph.get_operations()}


def test_slice_gradient_under_xla_is_an_op_without_gradient_or_converter():
  without = _op_types_of_slice_gradient(override=False)
  assert "XlaDynamicUpdateSlice" in without
  with_it = _op_types_of_slice_gradient(override=True)
  assert "XlaDynamicUpdateSlice" not in with_it and "Pad" in with_it
  # TF's own gradient is back afterwards.
  assert "XlaDynamicUpdateSlice" in _op_types_of_slice_gradient(
      override=False)


def _in_xla_context() -> list[bool]:
  """Whether the graph being built is marked XLA: without, with, after."""
  seen = []

  @tf.function(jit_compile=True, autograph=False)
  def f(x):
    graph = tf.compat.v1.get_default_graph()

    def marked() -> bool:
      context = graph._get_control_flow_context()  # pylint: disable=protected-access
      return context is not None and context.IsXLAContext()

    seen.append(marked())
    with tf_overrides.outside_xla_context():
      seen.append(marked())
    seen.append(marked())
    return x

  f.get_concrete_function(tf.TensorSpec((), tf.float32))
  return seen


def test_outside_xla_context_hides_the_mark_and_restores_it():
  assert _in_xla_context() == [True, False, True]


def test_outside_xla_context_restores_the_mark_after_an_error():
  seen = []

  @tf.function(jit_compile=True, autograph=False)
  def f(x):
    graph = tf.compat.v1.get_default_graph()
    with pytest.raises(ValueError, match="inside"):
      with tf_overrides.outside_xla_context():
        raise ValueError("inside")
    context = graph._get_control_flow_context()  # pylint: disable=protected-access
    seen.append(context is not None and context.IsXLAContext())
    return x

  f.get_concrete_function(tf.TensorSpec((), tf.float32))
  assert seen == [True]


def _graph_gradient_of_captured_dependence(override: bool
                                           ) -> tf.Tensor | None:
  """`gradient_through_captured_tensor` at 3, traced as a `tf.function`."""

  def traced():
    return tf.function(tf_overrides.gradient_through_captured_tensor,
                       autograph=False).get_concrete_function(
                           tf.TensorSpec((), tf.float32))

  if override:
    with tf_overrides.custom_gradients_recorded_as_eagerly():
      return traced()(tf.constant(3.))
  return traced()(tf.constant(3.))


def test_graph_mode_custom_gradient_loses_a_captured_dependence():
  # Eager TF: the dependence through the captured tensor, d(2x)/dx = 2.
  assert float(tf_overrides.gradient_through_captured_tensor(
      tf.constant(3.))) == 2.
  # Graph-mode TF alone: no gradient at all (None), which call_tf's VJP
  # would make a zero derivative.
  assert _graph_gradient_of_captured_dependence(override=False) is None
  # With the override: eager TF's answer.
  assert float(_graph_gradient_of_captured_dependence(override=True)) == 2.
  assert tf_overrides.custom_gradients_take_effect()


def test_deprecation_checks_are_off_inside_and_back_after_an_error():
  from tensorflow.python.util import deprecation  # pylint: disable=g-import-not-at-top
  before = deprecation._PRINT_DEPRECATION_WARNINGS  # pylint: disable=protected-access
  with pytest.raises(RuntimeError):
    with tf_overrides.tf_deprecation_checks_off():
      assert deprecation._PRINT_DEPRECATION_WARNINGS is False  # pylint: disable=protected-access
      raise RuntimeError
  assert deprecation._PRINT_DEPRECATION_WARNINGS is before  # pylint: disable=protected-access
