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
"""The JAX and TF internals call_tf_lib relies on, on the installed release.

`compat.check()` lists every internal the package reads; on each release the
suite runs against, all must be there. Where one disappears at run time, the
functions that read it raise a clear error instead of hanging or guessing.
"""

from __future__ import annotations

import pytest
import tensorflow as tf

from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import tf_overrides


def test_every_internal_call_tf_lib_reads_is_there():
  assert compat.check() == []
  assert tf_overrides.check() == []  # tests/calltf/test_tf_overrides.py


def test_a_graph_lock_tf_no_longer_exposes_is_an_error_not_a_hang():
  graph = tf.Graph()
  assert compat.graph_locked_for_mutation(graph) is False
  del graph._group_lock  # pylint: disable=protected-access
  with pytest.raises(compat.InternalsChangedError,
                     match="_group_member_counts.*cannot tell whether"):
    compat.graph_locked_for_mutation(graph)


def test_a_session_without_its_closed_flag_is_an_error():
  with tf.compat.v1.Session(graph=tf.Graph()) as sess:
    assert compat.session_is_open(sess)
    del sess._closed  # pylint: disable=protected-access
    with pytest.raises(compat.InternalsChangedError, match="Session._closed"):
      compat.session_is_open(sess)
    sess._closed = False  # pylint: disable=protected-access


def test_no_registered_gradient_is_none_and_a_python_one_is_not_restored():
  assert compat.restored_gradient_function("NoSuchGradientOpType") is None

  @tf.RegisterGradient("CallTfCompatTestGradient")
  def _(op, grad):  # a Python gradient closes over no concrete function
    del op
    return grad

  assert compat.restored_gradient_function("CallTfCompatTestGradient") is None


def test_exported_fields_are_checked():
  with pytest.raises(compat.InternalsChangedError, match="jax.export.Exported"):
    compat.make_exported(in_avals=(), out_avals=())


def test_a_function_with_a_keyword_argument_compiles_as_traced():
  # call_tf's flat callables take check_output_avals; TF's own
  # experimental_get_compiler_ir cannot bind it (upstream's lowering failed
  # with "'bool' object has no attribute 'shape'" once patch 0003 added it).
  fn = tf.function(lambda *xs, check_output_avals=True: [2. * x for x in xs],
                   autograph=False, jit_compile=True)
  spec = tf.TensorSpec((3,), tf.float32)
  with pytest.raises((AttributeError, TypeError, ValueError)):
    fn.experimental_get_compiler_ir(spec)(stage="hlo_serialized",
                                          platform_name="CPU")
  hlo = compat.hlo_of_concrete_function(fn, fn.get_concrete_function(spec),
                                        [spec], "CPU")
  assert isinstance(hlo, bytes) and hlo
  # Without arguments TF's own getter binds the keyword's traced value.
  fn0 = tf.function(lambda *xs, check_output_avals=True: [tf.constant(1.)],
                    autograph=False, jit_compile=True)
  assert compat.hlo_of_concrete_function(fn0, fn0.get_concrete_function(),
                                         [], "CPU")


def test_a_missing_internal_is_named_once_by_its_group(monkeypatch):
  monkeypatch.delattr(compat.mlir, "ir_constant")
  monkeypatch.delattr(compat.util, "merge_lists")
  assert compat.check() == ["jax._src.interpreters.mlir.ir_constant",
                            "jax._src.util.partition_list and merge_lists"]


def test_a_missing_tf_internal_is_named(monkeypatch):
  from tensorflow.python.framework import func_graph  # pylint: disable=g-import-not-at-top
  monkeypatch.delattr(func_graph.FuncGraph, "watch_variable")
  assert compat._tf_graph_missing() == [  # pylint: disable=protected-access
      "tensorflow FuncGraph.watch_variable"]
