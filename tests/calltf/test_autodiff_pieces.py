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
"""The pieces of forward mode, each alone: ``autodiff.tf_jvp``'s signature
key, accumulator choices and double VJP; ``autodiff.jvp``'s lazy tangent
call and the traces a JVP rule reads (the linear map of a rule is
tests/export/test_linear.py's).

The end-to-end behaviour is test_forward_mode.py's; these pin each piece's
own contract, with fakes where a piece takes functions.
"""

from __future__ import annotations

import dataclasses

from jax.experimental.jax2tf.call_tf_lib.autodiff import jvp as jvp_lib
from jax.experimental.jax2tf.call_tf_lib.autodiff import tf_jvp
from jax.experimental.jax2tf.call_tf_lib.tf_function import traces
import numpy as np
import tensorflow as tf

# pylint: disable=protected-access


def test_signature_key_tells_shapes_dtypes_trees_and_tangents_apart():
  x = tf.zeros((2, 3))
  key = tf_jvp._signature_key((x, {"a": x}), (x, {"a": None}))
  assert key == tf_jvp._signature_key((tf.ones((2, 3)), {"a": x}),
                                      (x, {"a": None}))
  assert hash(key) == hash(tf_jvp._signature_key((x, {"a": x}),
                                                 (x, {"a": None})))
  assert key[1] == (((2, 3), tf.float32), ((2, 3), tf.float32))
  assert key[2] == (True, False)
  assert key != tf_jvp._signature_key((x, {"a": x}), (x, {"a": x}))
  assert key != tf_jvp._signature_key((x, {"b": x}), (x, {"b": None}))
  assert key != tf_jvp._signature_key((x, {"a": tf.zeros((3, 2))}),
                                      (x, {"a": None}))
  assert key != tf_jvp._signature_key(
      (x, {"a": tf.zeros((2, 3), tf.float64)}), (x, {"a": None}))


def test_signature_key_of_an_unknown_rank():
  seen = []

  @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)],
               autograph=False)
  def f(x):
    seen.append(tf_jvp._signature_key((x,), (None,)))
    return x

  f.get_concrete_function()
  assert seen[0][1] == ((None, tf.float32),)
  assert seen[0][2] == (False,)


def test_accumulator_choices_decide_once_per_signature():
  choices = tf_jvp._AccumulatorChoices()
  decided = []

  def decide(answer):
    def d():
      decided.append(answer)
      return answer
    return d

  assert choices.choose("k1", decide(True)) is True
  assert choices.choose("k1", decide(False)) is True
  assert choices.choose("k2", decide(False)) is False
  assert decided == [True, False]


def test_accumulator_choices_are_bounded():
  choices = tf_jvp._AccumulatorChoices(max_signatures=2)
  choices.choose("a", lambda: True)
  choices.choose("b", lambda: True)
  assert set(choices.exact) == {"a", "b"}
  choices.choose("c", lambda: False)
  assert choices.exact == {"c": False}
  assert tf_jvp._AccumulatorChoices().max_signatures == tf_jvp._MAX_SIGNATURES


def test_accumulator_choices_fall_back_only_from_the_accumulator():
  choices = tf_jvp._AccumulatorChoices()
  assert not choices.fall_back("unknown")
  assert "unknown" not in choices.exact
  choices.choose("vjp", lambda: False)
  assert not choices.fall_back("vjp")
  choices.choose("acc", lambda: True)
  assert choices.fall_back("acc")
  assert choices.choose("acc", lambda: True) is False
  assert not choices.fall_back("acc")


def test_tf_jvp_functions_keep_choices_of_their_own():
  f1 = tf_jvp.tf_jvp_function(tf.sin)
  f2 = tf_jvp.tf_jvp_function(tf.sin)
  assert f1 is not f2
  assert f1.__name__ == "tf_jvp_fun"
  cells = [c.cell_contents for c in f1.__closure__]
  choices = [c for c in cells if isinstance(c, tf_jvp._AccumulatorChoices)]
  assert len(choices) == 1


def _recorded(fun, args, tangents):
  watched = list(zip(args, tangents))
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(args)
    outs = fun(*args)
  return tape, outs, watched


def test_double_vjp_is_the_jvp():
  x = tf.constant([1., 2., 3.])
  y = tf.constant([0.5, -1., 2.])
  tx = tf.constant([1., 0., -1.])
  ty = tf.constant([2., 1., 0.])
  tape, outs, watched = _recorded(
      lambda a, b: [tf.sin(a) * b, tf.reduce_sum(a * a)], [x, y], [tx, ty])
  jvps = tf_jvp._double_vjp(tape, outs, watched)
  np.testing.assert_allclose(
      jvps[0], np.cos(x) * tx * y + np.sin(x) * ty, rtol=1e-6)
  np.testing.assert_allclose(jvps[1], np.sum(2 * x * tx), rtol=1e-6)


def test_double_vjp_respects_a_custom_gradient():
  @tf.custom_gradient
  def three_times(x):
    return tf.identity(x), lambda dy: 3. * dy

  x = tf.constant([1., 2.])
  tape, outs, watched = _recorded(lambda a: [three_times(a)], [x],
                                  [tf.ones(2)])
  np.testing.assert_allclose(tf_jvp._double_vjp(tape, outs, watched)[0],
                             [3., 3.])


def test_double_vjp_of_a_complex_output():
  x = tf.constant([1. + 2.j, -0.5 + 0.25j], tf.complex64)
  t = tf.constant([0.5 - 1.j, 2. + 0.j], tf.complex64)
  tape, outs, watched = _recorded(lambda a: [a * a], [x], [t])
  np.testing.assert_allclose(tf_jvp._double_vjp(tape, outs, watched)[0],
                             2 * x.numpy() * t.numpy(), rtol=1e-6)


def test_double_vjp_gives_none_for_an_unconnected_output():
  x = tf.constant([1., 2.])
  tape, outs, watched = _recorded(lambda a: [a * 2., tf.ones(3)], [x],
                                  [tf.ones(2)])
  jvps = tf_jvp._double_vjp(tape, outs, watched)
  np.testing.assert_allclose(jvps[0], [2., 2.])
  assert jvps[1] is None


def test_tangent_call_is_made_once_on_first_use():
  made = []

  def fake_call_tf(fun, *, vmap_method, call_tf_graph):
    made.append((fun, vmap_method, call_tf_graph))
    return lambda args, tangents: ("tangents of", args, tangents)

  tangent_call = jvp_lib._TangentCall(fake_call_tf, tf.sin,
                                      vmap_method=None, call_tf_graph=True)
  assert not made
  assert tangent_call(1, 2) == ("tangents of", 1, 2)
  assert tangent_call(3, None) == ("tangents of", 3, None)
  assert len(made) == 1
  fun, vmap_method, call_tf_graph = made[0]
  assert fun.__name__ == "tf_jvp_fun"
  assert vmap_method is None
  assert call_tf_graph


@dataclasses.dataclass
class _FakeDifferentiable:
  reverse: bool


class _Probe:
  """Records the traces probed; answers with ``answers`` in turn."""

  def __init__(self, *answers):
    self.answers = list(answers)
    self.probed = []

  def __call__(self, traced_by, flat_primals, primals_tree):
    self.probed.append((traced_by, flat_primals, primals_tree))
    return self.answers.pop(0)


def _rule_traces(probe, *, late, may_use=True):
  return jvp_lib._RuleTraces(traces.CallTraces(), late=late,
                             may_use_stablehlo=may_use, probe=probe)


def test_rule_traces_of_a_call_on_time_are_its_own():
  for answer in (None, _FakeDifferentiable(False), _FakeDifferentiable(True)):
    probe = _Probe(answer)
    rule = _rule_traces(probe, late=False)
    assert rule.differentiable([1.], "tree") is answer
    assert rule.current is rule.call
    assert probe.probed == [(rule.call, [1.], "tree")]


def test_rule_traces_without_the_stablehlo_path_do_not_probe():
  probe = _Probe()
  rule = _rule_traces(probe, late=False, may_use=False)
  assert rule.differentiable([1.], "tree") is None
  assert rule.current is rule.call and not probe.probed
  rule = _rule_traces(probe, late=True, may_use=False)
  assert rule.differentiable([1.], "tree") is None
  assert rule.current is not rule.call and not probe.probed


def test_rule_traces_of_a_late_call_trace_again_for_tf_derivatives():
  probe = _Probe(None)
  rule = _rule_traces(probe, late=True)
  assert rule.differentiable([1.], "tree") is None
  assert isinstance(rule.current, traces.CallTraces)
  assert rule.current is not rule.call
  assert [p[0] for p in probe.probed] == [rule.call]

  again = _FakeDifferentiable(False)
  probe = _Probe(_FakeDifferentiable(False), again)
  rule = _rule_traces(probe, late=True)
  assert rule.differentiable([1.], "tree") is again
  assert [p[0] for p in probe.probed] == [rule.call, rule.current]
  assert rule.current is not rule.call


def test_rule_traces_of_a_late_call_jax_transposes_are_its_own():
  answer = _FakeDifferentiable(True)
  probe = _Probe(answer)
  rule = _rule_traces(probe, late=True)
  assert rule.differentiable([1.], "tree") is answer
  assert rule.current is rule.call


def test_the_caching_device_a_failed_trace_sets_is_restored():
  scope = tf.compat.v1.get_variable_scope()
  before = scope.caching_device
  try:
    with tf_jvp._caching_device_kept():
      with tf.Graph().as_default():  # as tf.map_fn does, then fails
        scope.set_caching_device(lambda op: op.device)
      raise ValueError("the trace failed")
  except ValueError:
    pass
  assert scope.caching_device is before
