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
import textwrap

from absl.testing import absltest
import jax
from jax._src import config
from jax._src import test_util as jtu

jax.config.parse_flags_with_absl()

# Prints the option as a fresh process sees it.
_READ_OPTION = textwrap.dedent("""
    import jax
    jax.config.parse_flags_with_absl()
    print(jax.config.jax_call_tf_vectorizer)
""")


def _option_in_subprocess(env: dict[str, str], argv: list[str]) -> str:
  """The option's value in a new Python process.

  Args:
    env: environment variables to set, beside the test's own (without the
      option's variable).
    argv: command-line arguments, as absl flags.

  Returns:
    What the process printed: the option's value.
  """
  env = {k: v for k, v in os.environ.items() if k != "JAX_CALL_TF_VECTORIZER"} | {
      "JAX_PLATFORMS": "cpu"} | env
  proc = subprocess.run(
      [sys.executable, "-c", _READ_OPTION, *argv],
      capture_output=True, text=True, timeout=300, env=env)
  if proc.returncode:
    raise AssertionError(proc.stderr[-2000:])
  return proc.stdout.strip().splitlines()[-1]


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

  def test_environment_variable(self):
    self.assertEqual(_option_in_subprocess(
        {"JAX_CALL_TF_VECTORIZER": "pfor"}, []),
        "pfor")

  def test_absl_flag(self):
    self.assertEqual(_option_in_subprocess(
        {}, ["--jax_call_tf_vectorizer=pfor"]),
        "pfor")

  def test_option_is_in_the_jit_key(self):
    traced = []

    @jax.jit
    def f(x):
      traced.append(config.call_tf_vectorizer.value)
      return x + 1.

    f(1.)
    with config.call_tf_vectorizer("pfor"):
      f(1.)
    f(1.)
    # A cached trace is never reused under the other setting.
    self.assertEqual(traced, ["stablehlo", "pfor"])


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
