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
"""The complex audit (`tests/export/complex_audit.py`) on every way a
function comes into JAX through TensorFlow: a TF function written by hand,
the round trip `call_tf(jax2tf.convert(f))` (its module embedded, and among
other TF ops), a SavedModel of the converted function, and TF1 graph mode.
Each gives JAX's derivatives of the same function in `jnp`, eagerly and
under `jax.jit`; and TensorFlow's tape of a converted function gives
TensorFlow's, that of the same function written in TF.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from jax.experimental import jax2tf
import numpy as np
import pytest
import tensorflow as tf

from ..export import complex_audit
from .util import assert_close

call_tf = jax2tf.call_tf
C = complex_audit.C


def _c2r_tf(z):
  return tf.reduce_sum(tf.math.real(z * z * C) + tf.math.abs(z) ** 2)


def _holo_tf(z):
  return z * z * C + tf.exp(z)


def _r2c_tf(x):
  return (tf.exp(tf.complex(tf.zeros_like(x), x)) * C
          + tf.cast(x * x, tf.complex64))


WRITTEN_IN_TF = dict(c2r=_c2r_tf, holo=_holo_tf, r2c=_r2c_tf)
KINDS = sorted(complex_audit.JNP)


def _among_other_ops(f_tf):
  """The converted function among other TF ops: call_tf's general path."""
  return lambda a: tf.identity(f_tf(a) * tf.ones((), f_tf(a).dtype))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
  """Each kind's jnp function, converted, saved with its gradient, loaded."""
  loaded = {}
  for kind in KINDS:
    arg = complex_audit.CHECKS[kind][0].arg
    module = tf.Module()
    module.f = tf.function(jax2tf.convert(complex_audit.JNP[kind]),
                           autograph=False, input_signature=[
                               tf.TensorSpec(arg.shape, arg.dtype)])
    path = str(tmp_path_factory.mktemp("complex") / kind)
    tf.saved_model.save(module, path, options=tf.saved_model.SaveOptions(
        experimental_custom_gradients=True))
    loaded[kind] = tf.saved_model.load(path)
  return loaded


@pytest.mark.parametrize("kind", KINDS)
def test_a_tf_function_gives_jaxs_derivatives(kind):
  assert complex_audit.audit(kind, call_tf(WRITTEN_IN_TF[kind])) == []


@pytest.mark.parametrize("kind", KINDS)
def test_the_round_trip_gives_jaxs_derivatives(kind):
  round_trip = call_tf(jax2tf.convert(complex_audit.JNP[kind]))
  assert complex_audit.audit(kind, round_trip) == []


@pytest.mark.parametrize("kind", KINDS)
def test_the_round_trip_among_tf_ops_gives_jaxs_derivatives(kind):
  f_tf = _among_other_ops(jax2tf.convert(complex_audit.JNP[kind]))
  assert complex_audit.audit(kind, call_tf(f_tf)) == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_savedmodel_gives_jaxs_derivatives(kind, saved):
  assert complex_audit.audit(kind, call_tf(saved[kind].f)) == []


@pytest.mark.parametrize("kind", ["c2r", "holo"])
def test_tf_tape_of_a_converted_function_is_tfs(kind):
  """jax2tf.convert's TF gradient is in TensorFlow's convention: the tape
  of the converted function equals the tape of the function written in
  TF (the conjugate of JAX's VJP)."""
  z = tf.constant(complex_audit.Z)
  u = tf.constant(complex_audit.U if kind == "holo" else np.float32(1.))
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(z)
    converted = jax2tf.convert(complex_audit.JNP[kind])(z)
    written = WRITTEN_IN_TF[kind](z)
  assert_close(tape.gradient(converted, z, output_gradients=u).numpy(),
               tape.gradient(written, z, output_gradients=u).numpy(),
               tol=complex_audit.TOL)


def test_tf1_graph_mode_gives_jaxs_derivatives():
  """In TF1 graph mode (process-wide, so in a subprocess), where TensorFlow
  runs only in a session, so call_tf only under jax.jit."""
  code = textwrap.dedent("""
      import tensorflow as tf
      tf.compat.v1.disable_eager_execution()
      from jax.experimental import jax2tf
      from tests.calltf import test_complex_conventions as t
      from tests.export import complex_audit
      failures = []
      with tf.compat.v1.Session():
        for kind in t.KINDS:
          for f_tf in (t.WRITTEN_IN_TF[kind],
                       t._among_other_ops(jax2tf.convert(
                           complex_audit.JNP[kind]))):
            failures += complex_audit.audit(kind, jax2tf.call_tf(f_tf),
                                            wraps=("jit",))
      print(repr(failures))
  """)
  root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
  proc = subprocess.run(
      [sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=600)
  assert proc.returncode == 0, proc.stderr[-4000:]
  assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout[-4000:]
