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

from collections.abc import Callable, Hashable
import functools
import re
from typing import Any

import jax
from jax import dtypes
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib import tf_overrides
from jax import tree_util
from jax.typing import ArrayLike
import numpy as np
import tensorflow as tf

# TF's message for an op type without a registered gradient.
_NO_GRADIENT_RE = re.compile(r"gradient registry has no entry for: (\w+)")


def _cotangent_shape_dtype(arg_jax: ArrayLike | None) -> jax.ShapeDtypeStruct:
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


def vjp_call_key(vjp_args: dict[str, Any]) -> Hashable:
  """What the ``call_tf`` of the VJP is kept by, for :func:`vjp_call_args`.

  Args:
    vjp_args: what :func:`vjp_call_args` returned.

  Returns:
    A hashable key: the keyword arguments, with ``output_shape_dtype``
    flattened to its tree structure and leaves.
  """
  def flat(v: object) -> tuple[tuple[object, ...], tree_util.PyTreeDef]:
    leaves, treedef = tree_util.tree_flatten(v, is_leaf=lambda x: x is None)
    return tuple(leaves), treedef
  return tuple(sorted((k, flat(v)) for k, v in vjp_args.items()))


def tf_vjp_function(tf_vjp_fun: Callable[..., Any]) -> Callable[..., Any]:
  """The VJP's TF function, its gradients built as outside XLA and eagerly.

  ``call_tf`` traces it for XLA, where TF's gradient of ``Slice`` is an
  ``XlaDynamicUpdateSlice``, which has neither a gradient (``jax.hessian``
  differentiates the VJP) nor a pfor converter (``jax.jacrev`` vectorizes
  it); see :func:`.tf_overrides.slice_gradient_outside_xla`. And traced (under
  ``jit``, ``vmap``, ``jacrev``), it is TF's graph-mode gradient, which
  loses what a ``tf.custom_gradient``'s results owe to the tensors the
  function captures (the parameters of a TF Probability ODE solve: a zero
  Jacobian) where eager TF differentiates them; it records custom
  gradients as eager TF does, see
  :func:`.tf_overrides.custom_gradients_recorded_as_eagerly`.

  Args:
    tf_vjp_fun: ``call_tf``'s VJP, ``(args, cotangents) -> cotangents``.

  Returns:
    The same function of the same arguments; an op without a TF gradient
    is a :class:`~..errors.CallTfDerivativeError` naming it, not TF's
    ``LookupError``.
  """
  @functools.wraps(tf_vjp_fun)
  def vjp_fun(*args: Any) -> Any:
    with (tf_overrides.slice_gradient_outside_xla(),
          tf_overrides.custom_gradients_recorded_as_eagerly()):
      try:
        return tf_vjp_fun(*args)
      except LookupError as e:
        # TF's tape: "gradient registry has no entry for: InplaceAdd".
        found = _NO_GRADIENT_RE.search(str(e))
        if found is None:
          raise
        raise errors.no_tf_gradient_error(found.group(1),
                                          forward=False) from e
  return vjp_fun


def _conj(x: ArrayLike | None) -> ArrayLike | None:
  if x is None or not dtypes.issubdtype(dtypes.result_type(x),
                                        np.complexfloating):
    return x
  return jax.numpy.conj(x)


def vjp_in_jax_convention(vjp_call: Callable[[Any, Any], Any], args_jax: Any,
                          ct_res_jax: Any) -> Any:
  """``call_tf``'s VJP, in JAX's convention for complex values.

  TF's gradient of a complex function is the conjugate of JAX's VJP: for a
  holomorphic ``f``, ``tape.gradient`` with output gradient ``u`` gives
  ``u * conj(f'(z))``, where JAX's VJP gives ``u * f'(z)``. Upstream
  returned TF's, so ``jax.jacrev(..., holomorphic=True)`` gave
  ``conj(f'(z))`` while ``jax.jacfwd`` gives ``f'(z)``, and compositions of
  the two modes were wrong. In JAX's convention the VJP is
  ``conj(tf_vjp(conj(u)))``; real values are unchanged.

  Args:
    vjp_call: the ``call_tf`` of the VJP's TF function.
    args_jax: the primal arguments.
    ct_res_jax: the output cotangents.

  Returns:
    The argument cotangents, in JAX's convention.

  Raises:
    errors.CallTfDerivativeError: TensorFlow failed running the VJP's
      function (its executor's error, which names no op of ``call_tf``'s).
  """
  is_leaf = lambda x: x is None
  try:
    cts = vjp_call(args_jax, tree_util.tree_map(_conj, ct_res_jax,
                                                is_leaf=is_leaf))
  except tf.errors.OpError as e:
    # TF's executor failed running the VJP function (eagerly; under jit it
    # runs compiled): call_tf's error, naming the node.
    raise errors.derivative_failed_error(False, e) from e
  return tree_util.tree_map(_conj, cts, is_leaf=is_leaf)
