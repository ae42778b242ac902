# Copyright 2026 The JAX Authors.
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
"""Tests for the option jax_call_tf_vectorizer."""

import os
import subprocess
import sys

from absl.testing import absltest
import jax
from jax._src import config
from jax._src import test_util as jtu

jax.config.parse_flags_with_absl()

# It changes global configuration: not to be run in parallel threads (older
# JAX runs no test in threads and has no such mark).
_thread_unsafe_test_class = getattr(jtu, "thread_unsafe_test_class",
                                    lambda: lambda cls: cls)


@_thread_unsafe_test_class()
class CallTfVectorizerConfigTest(jtu.JaxTestCase):

  def test_default(self):
    self.assertEqual(jax.config.jax_call_tf_vectorizer, "stablehlo")

  def test_update(self):
    jax.config.update("jax_call_tf_vectorizer", "pfor")
    self.addCleanup(jax.config.update, "jax_call_tf_vectorizer", "stablehlo")
    self.assertEqual(config.call_tf_vectorizer.value, "pfor")

  def test_context_manager(self):
    with config.call_tf_vectorizer("pfor"):
      self.assertEqual(jax.config.jax_call_tf_vectorizer, "pfor")
    self.assertEqual(jax.config.jax_call_tf_vectorizer, "stablehlo")

  def test_values_are_checked(self):
    with self.assertRaisesRegex(ValueError, "new enum value must be in"):
      jax.config.update("jax_call_tf_vectorizer", "loop")
    self.assertEqual(jax.config.jax_call_tf_vectorizer, "stablehlo")

  def test_environment_variable_and_absl_flag(self):
    # A fresh process reads the option from either; the test's own
    # environment variable, if any, is left out.
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("JAX_CALL_TF_VECTORIZER", None)
    read = ("import jax; jax.config.parse_flags_with_absl(); "
            "print(jax.config.jax_call_tf_vectorizer)")
    for extra_env, argv in [({"JAX_CALL_TF_VECTORIZER": "pfor"}, []),
                            ({}, ["--jax_call_tf_vectorizer=pfor"])]:
      with self.subTest(env=extra_env, argv=argv):
        proc = subprocess.run([sys.executable, "-c", read, *argv],
                              env=env | extra_env, capture_output=True,
                              text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        self.assertEqual(proc.stdout.split()[-1], "pfor")

  def test_option_is_in_the_jit_key(self):
    f = jax.jit(lambda x: x + 1.)
    f(1.)
    with config.call_tf_vectorizer("pfor"):
      f(1.)
    f(1.)
    # One compiled function per setting: none reused under the other.
    self.assertEqual(f._cache_size(), 2)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
