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
"""``call_tf`` on every platform JAX lowers for.

TensorFlow's XLA lowering (tf2xla) compiles a function for the platforms
the installed TensorFlow has: the CPU alone for ``tensorflow-cpu``, the
TensorFlow that installs beside ``jax[tpu]`` and ``jax[cuda12]``. Asked
for another platform it fails (upstream's ``Error compiling TensorFlow
function`` on a TPU) or, asked for the GPU, returns a module and leaves the
process to die at exit. So a call is carried to the other platforms by the
function's CPU module expressed as JAX operations (:mod:`.path`), which JAX
lowers for whatever platform a computation targets, several at once in a
multi-platform ``jax.export``:

* :func:`lower`: the lowering of a ``call_tf_p`` for a platform other than
  the CPU (``jax.jit`` on a TPU or a GPU, ``vmap_method="sequential"``'s
  loop, cross-platform ``jax.export``). On the CPU, tf2xla's own module is
  embedded, as upstream does (the same XLA:CPU computes both).
* :func:`eager_on_device`: an eager call whose arguments live on such a
  platform runs there, as the same compiled program, when XLA compiles the
  function; TensorFlow runs it on the host otherwise.

A dot or a convolution whose precision the TF function leaves at its
default follows ``jax_default_matmul_precision``, as the same function in
``jnp`` does (:func:`.path._parse`).

See https://github.com/jax-ml/jax/issues/11753.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
from jax._src import core
from jax._src import dtypes
from jax._src.interpreters import mlir
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib.stablehlo import path
from jax.experimental.jax2tf.call_tf_lib.tf_function import compile as compile_lib
import tensorflow as tf

def lower(ctx: mlir.LoweringRuleContext, args_op: Sequence[Any], *,
          platform: str,
          function_flat_tf: tf.types.experimental.GenericFunction,
          args_flat_sig_tf: Sequence[tf.TensorSpec], ordered: bool
          ) -> Sequence[Any] | None:
  """A ``call_tf_p`` lowered through its CPU module, or None.

  Args:
    ctx: the lowering rule's context.
    args_op: the call's operands.
    platform: JAX's name of the platform lowered for ("cpu", "cuda",
      "rocm", "tpu").
    function_flat_tf: the call's ``tf.function``.
    args_flat_sig_tf: its argument specs.
    ordered: the call's ``ordered``.

  Returns:
    The results, or None where tf2xla's own module for the platform is to
    be embedded: on the CPU, and where the installed TensorFlow compiles for
    the platform but the interpreter refuses the function.

  Raises:
    errors.CallTfPlatformError: TensorFlow does not compile for the
      platform and the interpreter refuses the function (naming why).
    NotImplementedError: ``ordered=True`` (without ``call_tf_graph``),
      which no platform lowers (the lowering's own error, raised here
      before anything is compiled).
  """
  tf_platform = compile_lib.tf_platform(platform)
  if tf_platform == compile_lib.ENGINE_PLATFORM:
    return None
  if ordered:
    raise errors.ordered_under_jit_error()
  sig = tuple(args_flat_sig_tf)
  purpose = f"the call lowered for {platform}"
  interpreted = path.lookup(function_flat_tf, sig, purpose=purpose,
                            staged=True, pure=False)
  if interpreted is None:
    if compile_lib.tf_compiles_for(tf_platform):
      return None
    raise errors.platform_error(
        platform,
        path.why_not(function_flat_tf, sig, staged=True, pure=False) or "")
  out_avals = ctx.avals_out

  def run(*args):
    return [path.fit_result(r, a)
            for r, a in zip(interpreted(*args), out_avals)]
  return mlir.lower_fun(run, multiple_results=True)(ctx, *args_op)


def _device_platform(arg: Any) -> str | None:
  """The platform of a committed array's devices, or None (NumPy, a tracer)."""
  if not isinstance(arg, jax.Array) or isinstance(arg, core.Tracer):
    return None
  try:
    devices = arg.devices()
  except Exception:  # pylint: disable=broad-except
    return None
  platforms = {d.platform for d in devices}
  return platforms.pop() if len(platforms) == 1 else None


def eager_on_device(args: Sequence[Any], *,
                    function_flat_tf: tf.types.experimental.GenericFunction,
                    args_flat_sig_tf: Sequence[tf.TensorSpec],
                    out_avals: Sequence[core.ShapedArray] | None
                    ) -> list[jax.Array] | None:
  """An eager call on arrays of a platform TensorFlow lacks, run there.

  Args:
    args: the call's arguments (JAX arrays, NumPy values).
    function_flat_tf: the call's ``tf.function``.
    args_flat_sig_tf: its argument specs.
    out_avals: the call's result avals, where known (results are fitted
      to them as the lowering fits them).

  Returns:
    The results, computed by the function's module as one compiled program
    on the arguments' devices; or None, for TensorFlow to run the function
    on the host: arguments on the CPU (or NumPy values), a platform
    TensorFlow compiles for, or a function the interpreter refuses (not
    pure, not compiled by XLA, an op without a rule: TF's kernels on the
    host are then the answer, as upstream's eager call gives).
  """
  platforms = {p for p in map(_device_platform, args) if p is not None}
  if len(platforms) != 1:
    return None
  platform = platforms.pop()
  try:
    tf_platform = compile_lib.tf_platform(platform)
  except ValueError:
    return None
  if (tf_platform == compile_lib.ENGINE_PLATFORM
      or compile_lib.tf_compiles_for(tf_platform)):
    return None
  interpreted = path.lookup(function_flat_tf, tuple(args_flat_sig_tf),
                            purpose=f"an eager call on {platform}",
                            staged=True)
  if interpreted is None:
    return None
  results = interpreted(*args)
  if out_avals is None:
    # Canonical dtypes, as the eager call converts TF's results.
    out_avals = [core.ShapedArray(r.shape, dtypes.canonicalize_dtype(r.dtype))
                 for r in results]
  return [path.fit_result(r, a) for r, a in zip(results, out_avals)]
