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
"""The installed patched jax: its version and the jax_call_tf_slow_vmap flag."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest


def _run(code: str, *args: str, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess:
  full_env = {k: v for k, v in os.environ.items()
              if k != "JAX_CALL_TF_SLOW_VMAP"}
  full_env.update(env or {})
  return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                        env=full_env, capture_output=True, text=True)


def test_the_installed_wheel_is_imported(root):
  here = pathlib.Path(jax.__file__).resolve()
  assert "site-packages" in here.parts
  assert root not in here.parents


def test_version_label_and_upstream_tuple(release):
  assert jax.__version__ == release.label
  assert jax.__version_info__ == tuple(int(p) for p in
                                       release.version.split("."))
  assert jax.version._version == release.version


def test_flag_defaults_to_false():
  proc = _run("import jax; print(jax.config.jax_call_tf_slow_vmap)")
  assert proc.stdout.strip() == "False", proc.stderr


@pytest.mark.parametrize("value,expected", [("1", "True"), ("true", "True"),
                                            ("0", "False")])
def test_flag_from_environment(value, expected):
  proc = _run("import jax; print(jax.config.jax_call_tf_slow_vmap)",
              env={"JAX_CALL_TF_SLOW_VMAP": value})
  assert proc.stdout.strip() == expected, proc.stderr


def test_bad_environment_value_is_a_clear_error():
  proc = _run("import jax", env={"JAX_CALL_TF_SLOW_VMAP": "maybe"})
  assert proc.returncode != 0
  assert "invalid truth value 'maybe'" in proc.stderr
  assert "JAX_CALL_TF_SLOW_VMAP" in proc.stderr


def test_flag_from_absl_command_line():
  code = """
      import sys
      from absl import app
      import jax
      jax.config.config_with_absl()
      def main(argv):
        print(jax.config.jax_call_tf_slow_vmap)
      app.run(main)
  """
  proc = _run(code, "--jax_call_tf_slow_vmap")
  assert proc.stdout.strip() == "True", proc.stderr
  proc = _run(code, "--nojax_call_tf_slow_vmap")
  assert proc.stdout.strip() == "False", proc.stderr


def test_flag_by_config_update_and_context_manager():
  from jax._src import config
  assert jax.config.jax_call_tf_slow_vmap is False
  try:
    jax.config.update("jax_call_tf_slow_vmap", True)
    assert jax.config.jax_call_tf_slow_vmap is True
    with config.call_tf_slow_vmap(False):
      assert jax.config.jax_call_tf_slow_vmap is False
    assert jax.config.jax_call_tf_slow_vmap is True
  finally:
    jax.config.update("jax_call_tf_slow_vmap", False)
  with config.call_tf_slow_vmap(True):
    assert jax.config.jax_call_tf_slow_vmap is True
  assert jax.config.jax_call_tf_slow_vmap is False
  assert "jax_call_tf_slow_vmap" in config.call_tf_slow_vmap.__doc__


def test_cached_jit_retraces_when_the_flag_changes():
  from jax._src import config
  traces = []

  @jax.jit
  def f(x):
    traces.append(jax.config.jax_call_tf_slow_vmap)
    return x + (1. if jax.config.jax_call_tf_slow_vmap else 0.)

  x = jnp.zeros(())
  assert float(f(x)) == 0.
  with config.call_tf_slow_vmap(True):
    assert float(f(x)) == 1.
    assert float(f(x)) == 1.
  assert float(f(x)) == 0.
  assert traces == [False, True]
