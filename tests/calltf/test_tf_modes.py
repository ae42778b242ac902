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
"""call_tf in every TensorFlow execution mode, and the TensorFlow version gate.

TF1 graph mode (`tf.compat.v1.disable_eager_execution()`) is process-wide, so
those tests run in a subprocess of the test environment's Python.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
from jax.experimental import jax2tf
from jax.experimental.jax2tf.call_tf_lib.tf_function import version as call_tf_version
from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from .util import assert_close

INIT = np.ones((3,), np.float32)
NEW = np.array([2., 3., 4.], np.float32)
X = np.array([0.5, 1., 1.5], np.float32)


def f_jax_ref(x):
  return jnp.sin(x * NEW) + 1.


def _run(code: str) -> list[str]:
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                        env=env, capture_output=True, text=True, timeout=600)
  assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
  return proc.stdout.strip().splitlines()


_GRAPH_PRELUDE = """
    import numpy as np
    import tensorflow as tf
    import jax, jax.numpy as jnp
    from jax.experimental import jax2tf
    tf.compat.v1.disable_eager_execution()
    INIT = np.ones((3,), np.float32)
    NEW = np.array([2., 3., 4.], np.float32)
    X = np.array([0.5, 1., 1.5], np.float32)
    g = tf.Graph()
    with g.as_default():
      v = tf.Variable(INIT, name="v")
      assign = v.assign(NEW)
      x = tf.compat.v1.placeholder(tf.float32, (3,))
      f_jax = lambda x: jnp.sin(jax2tf.call_tf(lambda t: t * v)(x)) + 1.
"""


def test_graph_mode_reads_the_assigned_value_through_the_session():
  out = _run(_GRAPH_PRELUDE + """
      with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        sess.run(assign)                 # a new value after initialization
        y = jax2tf.convert(f_jax)(x)
        print(list(sess.run(y, {x: X})))
        print(list(np.asarray(jax.jit(f_jax)(X))))
        gy = tf.gradients(tf.reduce_sum(y), x)[0]
        print(list(sess.run(gy, {x: X})))
        print(list(sess.run(v)))         # the variable was not re-initialized
  """)
  results = [np.array(eval(line), np.float32) for line in out]  # pylint: disable=eval-used
  assert_close(results[0], np.asarray(f_jax_ref(X)), tol=1e-6)
  assert_close(results[1], np.asarray(f_jax_ref(X)), tol=1e-6)
  assert_close(results[2], np.cos(X * NEW) * NEW, tol=1e-5)
  assert_close(results[3], NEW)


def test_graph_mode_uninitialized_variable_says_what_to_run():
  out = _run(_GRAPH_PRELUDE + """
      with tf.compat.v1.Session() as sess:
        try:
          jax2tf.convert(f_jax)(x)
          print("no error")
        except Exception as e:
          print(type(e).__name__)
          print(str(e).replace("\\n", " "))
        print(sess.run(v.is_initialized()))
  """)
  assert out[0] == "CallTfUninitializedVariablesError"
  assert "['v:0']" in out[1]
  assert "global_variables_initializer()" in out[1]
  assert "Saver().restore" in out[1]
  assert out[2] == "False"  # call_tf did not initialize it either


def test_graph_mode_restored_checkpoint_in_a_non_default_session(tmp_path):
  out = _run(_GRAPH_PRELUDE + f"""
      saver = tf.compat.v1.train.Saver([v])
      with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        sess.run(assign)
        path = saver.save(sess, {str(tmp_path / 'ckpt')!r})
      sess2 = tf.compat.v1.Session(graph=g)   # never the default session
      saver.restore(sess2, path)              # no initializer runs
      y = jax2tf.convert(f_jax)(x)
      print(list(sess2.run(y, {{x: X}})))
  """)
  assert_close(np.array(eval(out[0]), np.float32), np.asarray(f_jax_ref(X)),  # pylint: disable=eval-used
               tol=1e-6)


def test_graph_mode_without_a_session_is_a_clear_error():
  out = _run(_GRAPH_PRELUDE + """
      try:
        jax2tf.convert(f_jax)(x)
        print("no error")
      except ValueError as e:
        print(str(e).replace("\\n", " "))
  """)
  assert "no open session" in out[0]
  assert "sess.as_default()" in out[0]


def test_eager_tf_function_and_graph_mode_agree():
  v = tf.Variable(INIT)
  v.assign(NEW)

  def f_jax(x):
    return jnp.sin(jax2tf.call_tf(lambda t: t * v)(x)) + 1.

  expected = np.asarray(f_jax_ref(X))
  results = {
      "eager": f_jax(X),
      "jit": jax.jit(f_jax)(X),
      "convert": jax2tf.convert(f_jax)(X).numpy(),
      "tf.function": tf.function(jax2tf.convert(f_jax), autograph=False)(
          X).numpy(),
  }
  graph = _run(_GRAPH_PRELUDE + """
      with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        sess.run(assign)
        print(list(sess.run(jax2tf.convert(f_jax)(x), {x: X})))
  """)
  results["graph"] = np.array(eval(graph[0]), np.float32)  # pylint: disable=eval-used
  for mode, r in results.items():
    np.testing.assert_allclose(np.asarray(r), expected, rtol=1e-6,
                               err_msg=mode)


def test_graph_mode_vmap_of_call_tf():
  """The batching rule runs in graph mode too (jit of vmap, converted)."""
  out = _run(_GRAPH_PRELUDE + """
      xb = tf.compat.v1.placeholder(tf.float32, (4, 3))
      fb = jax.vmap(jax2tf.call_tf(lambda t: tf.sin(t * v)))
      with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        sess.run(assign)
        xs = np.stack([X, X * 2, X * 3, X * 4])
        print(list(sess.run(jax2tf.convert(fb)(xb), {xb: xs}).ravel()))
  """)
  xs = np.stack([X, X * 2, X * 3, X * 4])
  assert_close(np.array(eval(out[0]), np.float32).reshape(4, 3),  # pylint: disable=eval-used
               np.sin(xs * NEW), tol=1e-6)


@pytest.mark.parametrize("version", ["2.15.1", "2.13.0", "1.15.5"])
def test_old_tensorflow_is_refused_with_the_versions(version):
  call_tf_version.check_tensorflow_version.cache_clear()
  with pytest.raises(call_tf_errors.CallTfTensorFlowVersionError) as e:
    call_tf_version.check_tensorflow_version(version)
  msg = str(e.value)
  assert f"TensorFlow {version} is installed" in msg
  assert "needs TensorFlow 2.16 or newer" in msg
  assert "platform_name" in msg
  # The verified range of this build: its `tensorflow` extra.
  assert call_tf_version._verified_tensorflow_range() in msg  # pylint: disable=protected-access
  assert call_tf_version._verified_tensorflow_range().startswith("tensorflow")  # pylint: disable=protected-access


@pytest.mark.parametrize("version", ["2.16.0", "2.21.0", "2.22.0rc1",
                                     "3.0.0"])
def test_supported_tensorflow_is_accepted(version):
  call_tf_version.check_tensorflow_version(version)


def test_call_tf_checks_the_installed_version_at_first_use():
  out = _run("""
      import tensorflow as tf
      tf.__version__ = "2.15.1"          # what an old TensorFlow reports
      from jax.experimental import jax2tf
      try:
        jax2tf.call_tf(tf.sin)
        print("no error")
      except ImportError as e:
        print(type(e).__name__, "|", e)
  """)
  assert out[0].startswith("CallTfTensorFlowVersionError |")
  assert "TensorFlow 2.15.1 is installed" in out[0]


def test_the_installed_tensorflow_is_supported():
  call_tf_version.check_tensorflow_version.cache_clear()
  call_tf_version.check_tensorflow_version()
  assert_close(jax2tf.call_tf(tf.sin)(np.float32(1.)), np.sin(np.float32(1.)),
               tol=1e-6)
