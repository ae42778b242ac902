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
"""The TensorFlow versions ``call_tf`` can use, and the StableHLO it reads.

``call_tf`` compiles TF functions with
``experimental_get_compiler_ir(...)(platform_name=...)``, which TensorFlow
added in 2.16: :func:`check_tensorflow_version` says so at first use,
naming the version found, the one needed and the range this jax build was
verified with. :func:`readable_by_tensorflow` gives ``XlaCallModule`` a
module at a StableHLO version the installed TensorFlow reads.
"""

from __future__ import annotations

import functools
import re

from jax._src.interpreters import mlir
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import errors
import tensorflow as tf

MIN_TENSORFLOW = (2, 16)


def _verified_tensorflow_range() -> str | None:
  """The TF range this jax build was verified with (its `tensorflow` extra)."""
  try:
    from importlib import metadata  # pylint: disable=g-import-not-at-top
    requires = metadata.requires("jax") or []
  except Exception:  # pylint: disable=broad-except
    return None
  for req in requires:
    if 'extra == "tensorflow"' in req and req.startswith("tensorflow"):
      return req.split(";", 1)[0].strip()
  return None


@functools.cache
def check_tensorflow_version(version: str | None = None) -> None:
  """Raises unless TensorFlow ``version`` (default: the installed) is new enough.

  Args:
    version: a TensorFlow version string such as "2.21.0"; by default
      ``tf.__version__``.

  Raises:
    CallTfTensorFlowVersionError: naming the version found and the one needed.
  """
  version = version or tf.__version__
  m = re.match(r"(\d+)\.(\d+)", version)
  if m is None or (int(m.group(1)), int(m.group(2))) >= MIN_TENSORFLOW:
    return
  raise errors.tensorflow_version_error(version, MIN_TENSORFLOW,
                                       _verified_tensorflow_range())


def readable_by_tensorflow(module_bytes: bytes) -> bytes:
  """A serialized module that TensorFlow's ``XlaCallModule`` can read.

  ``jax.export`` serializes at the StableHLO version of four weeks ago, which
  can be newer than TensorFlow reads (StableHLO 1.18 against TensorFlow
  2.21's 1.13.7: every ``custom_call`` becomes ``vhlo.custom_call_v2``). A
  module TF cannot read is serialized again at TF's own version (or jax's,
  if older); one it reads is returned unchanged.

  Args:
    module_bytes: a portable artifact, as ``Exported.mlir_module_serialized``.

  Returns:
    The same module, serialized at a version TF reads where needed.

  Raises:
    ValueError: the module uses a StableHLO feature newer than TF's version,
      so it cannot be serialized at that version.
  """
  tf_version = compat.tensorflow_stablehlo_version()
  if tf_version is None or compat.tensorflow_reads(module_bytes) is not False:
    return module_bytes
  jax_version = compat.stablehlo_version_jax_serializes()
  target = compat.smaller_stablehlo_version(jax_version, tf_version)
  with mlir.make_ir_context() as context:
    module = compat.deserialize_module(module_bytes, context)
    try:
      return compat.serialize_module(module, target)
    except Exception as e:  # pylint: disable=broad-except
      # jaxlib's error type differs between releases.
      raise errors.stablehlo_version_error(tf_version, jax_version, e) from e
