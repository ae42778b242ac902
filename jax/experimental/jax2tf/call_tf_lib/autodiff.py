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
"""The calls ``call_tf`` makes to differentiate a TF function.

The VJP (``tf.GradientTape``) is a second ``call_tf`` of a TF function of the
arguments and the output cotangents. :func:`vjp_call_args` gives it what the
forward call has that it needs too: ``call_tf_graph`` and, with it, the
cotangents' shapes (TF cannot infer them for a symbolic batch).

The VJP's TF function depends only on the function given to ``call_tf``, so
each ``call_tf`` object keeps the ``call_tf`` of its VJP, by
:func:`vjp_call_key`, and with it the VJP's traces and vectorized functions:
a backward pass, eager or traced, does not trace (and vectorize) the VJP
again. The rules are those of the forward call's traces
(:mod:`.traces`), and ``jax.clear_caches()`` clears both.
"""

from __future__ import annotations

from typing import Any

import jax
from jax import dtypes
from jax import tree_util
import numpy as np


def _cotangent_shape_dtype(arg_jax: Any) -> jax.ShapeDtypeStruct:
  """What the VJP's TF function returns for ``arg_jax``.

  Its cotangent for a floating or complex argument, and a float32 scalar
  (upstream's ``replace_non_float_or_none``) for anything else.
  """
  if arg_jax is not None:
    dtype = dtypes.result_type(arg_jax)
    if (dtypes.issubdtype(dtype, np.floating)
        or dtypes.issubdtype(dtype, np.complexfloating)):
      return jax.ShapeDtypeStruct(np.shape(arg_jax), dtype)
  return jax.ShapeDtypeStruct((), np.float32)


def vjp_call_args(args_jax: Any, call_tf_graph: bool) -> dict[str, Any]:
  """Keyword arguments of the ``call_tf`` that computes the VJP.

  Args:
    args_jax: the primal arguments (a pytree).
    call_tf_graph: the forward call's argument of that name.

  Returns:
    ``call_tf_graph`` and, with it, ``output_shape_dtype``: the results of
    the VJP's TF function have the arguments' shapes.
  """
  if not call_tf_graph:
    return {}
  return dict(call_tf_graph=True,
              output_shape_dtype=tree_util.tree_map(
                  _cotangent_shape_dtype, args_jax,
                  is_leaf=lambda x: x is None))


def vjp_call_key(vjp_args: dict[str, Any]) -> Any:
  """What the ``call_tf`` of the VJP is kept by, for :func:`vjp_call_args`.

  Args:
    vjp_args: what :func:`vjp_call_args` returned.

  Returns:
    A hashable key: the keyword arguments, with ``output_shape_dtype``
    flattened to its tree structure and leaves.
  """
  def flat(v: Any) -> tuple[Any, ...]:
    leaves, treedef = tree_util.tree_flatten(v, is_leaf=lambda x: x is None)
    return tuple(leaves), treedef
  return tuple(sorted((k, flat(v)) for k, v in vjp_args.items()))
