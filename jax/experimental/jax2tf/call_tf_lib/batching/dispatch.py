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
"""The ``vmap_method`` semantics of ``call_tf``: one dispatcher for all paths.

``call_tf(f, vmap_method=...)`` chooses how ``jax.vmap`` batches a call:

* ``None`` (default): the function is vectorized: one call for the whole
  batch. Eagerly and under ``jax.jit``, JAX's own batching rules batch the
  TF function's StableHLO module, interpreted as JAX primitives
  (:mod:`.stablehlo.path`), wherever XLA compiles the function and every op
  of the module has a rule; otherwise TensorFlow's ``tf.vectorized_map``
  (pfor) vectorizes it (the option
  ``jax_call_tf_vectorizer="pfor"`` makes pfor the only vectorizer). Where it
  cannot be vectorized, the call runs sequentially if the
  ``jax_call_tf_slow_vmap`` option is on, and otherwise raises
  :class:`~.errors.CallTfVectorizationError`, which names the op, the option
  and the other methods.
* ``"vectorized"``: as ``None``, but never falls back.
* ``"pfor"``: as ``"vectorized"``, with TensorFlow's pfor as the only
  vectorizer and TensorFlow's gradients as the only derivatives, whatever
  ``jax_call_tf_vectorizer`` says (call_tf's only vectorizer before the
  StableHLO path).
* ``"sequential"``: one call per batch element; under a staging trace a
  ``lax.map`` loop inside one program (its size does not grow with the
  batch), eagerly a Python loop of eager calls (no XLA needed).
* ``"expand_dims"``: one call; batched arguments carry the batch at axis 0,
  unbatched ones get a size-1 axis 0.
* ``"broadcast_all"``: one call; every argument is broadcast to the batch at
  axis 0.
* ``"batch_polymorphic"``: one call; the batch is merged into axis 0 of every
  argument (unbatched ones are broadcast first) and split out of every
  result. For functions whose arguments and results share a leading batch
  axis with independent rows, such as SavedModels exported with a polymorphic
  batch dimension.

The names follow ``jax.pure_callback``'s ``vmap_method`` where the meaning is
the same. :func:`batch` implements them for any :class:`Callee`, the way
``jax._src.ffi.ffi_batching_rule`` serves its primitives: a callee says how to
make one call; :func:`batch` owns the axis moves, the validation, the option,
the choice between a loop and one call, and the errors. ``call_tf`` has two
callees: the ``call_tf_p`` primitive (:mod:`.batching.rule`) and functions restored
from jax2tf SavedModels, embedded as StableHLO (:mod:`.embed`).

See https://github.com/jax-ml/jax/issues/11753.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
from typing import Any, Protocol

import jax
from jax._src import config
from jax._src import core
from jax._src import dtypes
from jax._src import util
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib import vmap_methods
from jax import lax
from jax import numpy as jnp
from jax.typing import ArrayLike
import numpy as np

def check_vmap_method(vmap_method: object) -> None:
  """Raises ``ValueError`` unless ``vmap_method`` is a known method.

  Args:
    vmap_method: the value given to ``call_tf(..., vmap_method=...)``.
  """
  if vmap_method not in vmap_methods.ALL:
    raise errors.vmap_method_error(vmap_method, vmap_methods.ALL)


def vjp_vmap_method(vmap_method: vmap_methods.VmapMethod | None
                    ) -> vmap_methods.VmapMethod | None:
  """The ``vmap_method`` of the call that computes the VJP.

  ``jax.jacrev`` is ``vmap`` of the VJP, whose call takes the primal
  arguments (unbatched there) and the output cotangents (batched). With
  ``"expand_dims"`` the function would compute a size-1 primal output that
  does not match the batched cotangents, so the VJP broadcasts instead.

  Args:
    vmap_method: the method of the forward call.

  Returns:
    The method for the VJP's call.
  """
  return (vmap_methods.BROADCAST_ALL if vmap_method == vmap_methods.EXPAND_DIMS
          else vmap_method)


def slow_vmap_enabled() -> bool:
  """The ``jax_call_tf_slow_vmap`` option, as the current trace sees it."""
  return bool(config.call_tf_slow_vmap.value)


def falls_back(vmap_method: vmap_methods.VmapMethod | None) -> bool:
  """Whether a call that cannot be vectorized runs sequentially instead.

  Only the default method does, with the ``jax_call_tf_slow_vmap`` option
  on; otherwise a failure to vectorize is an error, whenever it shows.
  """
  return vmap_method is None and slow_vmap_enabled()


class Unvectorizable(Exception):
  """Raised by :meth:`Callee.call_vectorized` when it cannot vectorize.

  The dispatcher then falls back to one call per element if the option
  allows it, and raises ``error`` otherwise.
  """

  def __init__(self, error: Exception):
    super().__init__(str(error))
    self.error = error


class Callee(Protocol):
  """One way ``call_tf`` makes a call, as the dispatcher needs it.

  """

  def symbolic_batch_refusal(self, vmap_method: vmap_methods.VmapMethod | None
                             ) -> tuple[bool, str | None]:
    """Whether one call can take a symbolic batch size (shape polymorphism).

    Returns:
      ``(True, None)`` if it can; else ``(False, reason)``, the reason
      (None if there is nothing more to say than that XLA needs static
      shapes). Only the sequential method can then.
    """

  def out_avals(self, in_avals: Sequence[core.ShapedArray]
                ) -> list[core.ShapedArray]:
    """The result avals of one unbatched call."""

  def call(self, args: Sequence[Any]) -> list[Any]:
    """One unbatched call."""

  def call_batched(self, args: Sequence[Any], is_batched: Sequence[bool],
                   vmap_method: vmap_methods.VmapMethod,
                   out_avals: Sequence[core.ShapedArray]) -> list[Any]:
    """One call on arguments that all carry a leading batch axis.

    Args:
      args: the arguments, arranged by the one-call ``vmap_method``.
      is_batched: which arguments were batched before the method arranged
        them (the others have a broadcast or size-1 leading axis).
      vmap_method: one of :data:`.vmap_methods.ONE_CALL`.
      out_avals: the results the call must return.
    """

  def side_effect_error(self, vmap_method: vmap_methods.VmapMethod | None
                        ) -> Exception | None:
    """The error for a batch made with ``vmap_method``, if it has effects.

    A call with side effects is made once per batch element (the
    sequential method) or refused: every other method makes fewer calls
    than the batch has elements. None for a call without side effects.
    """

  def call_vectorized(self, args: Sequence[Any], is_batched: Sequence[bool],
                      vmap_method: vmap_methods.VmapMethod | None,
                      out_avals: Sequence[core.ShapedArray]) -> list[Any]:
    """One vectorized call; batched arguments carry the batch at axis 0.

    Raises:
      Unvectorizable: the function cannot be vectorized, and
        :func:`falls_back` says that it matters now. Otherwise a callee may
        leave the vectorizing until the call is lowered or run, and raise
        :class:`~.errors.CallTfVectorizationError` then.
    """


def batch(callee: Callee, axis_size: core.DimSize, args: Sequence[Any],
          dims: Sequence[int | None], *,
          vmap_method: vmap_methods.VmapMethod | None,
          ordered: bool = False) -> tuple[list[Any], list[int | None]]:
  """Batches one call along the vmap axis, as ``vmap_method`` says.

  Args:
    callee: how to make calls.
    axis_size: the size of the vmap axis (symbolic under shape polymorphism).
    args: the flat arguments; batched ones at ``dims[i]``.
    dims: each argument's batch dimension, or None.
    vmap_method: see the module docstring.
    ordered: whether the calls must keep their order (``ordered=True``).

  Returns:
    The batched results and their batch dimensions (all 0; all None if no
    argument is batched).
  """
  check_vmap_method(vmap_method)
  if all(d is None for d in dims):
    outs = callee.call(args)
    return list(outs), [None] * len(outs)
  slow_ok = falls_back(vmap_method)
  if ordered and vmap_method != vmap_methods.SEQUENTIAL and not slow_ok:
    raise errors.ordered_error(vmap_method)
  b = _Batch.make(callee, axis_size, args, dims, vmap_method)
  if (vmap_method == vmap_methods.SEQUENTIAL or (ordered and slow_ok)
      or _falls_back_now(b, slow_ok)):
    outs = b.sequential()
  elif vmap_method in vmap_methods.VECTORIZING:
    outs = _vectorized(b, slow_ok)
  elif vmap_method == vmap_methods.BATCH_POLYMORPHIC:
    outs = _batch_polymorphic(b)
  else:
    outs = _expanded(b)
  return outs, [0] * len(outs)


@dataclasses.dataclass(frozen=True, eq=False)
class _Batch:
  """One call to batch, with every batched argument's batch at axis 0.

  Attributes:
    callee: how to make calls.
    axis_size: the size of the vmap axis (symbolic under shape polymorphism).
    args: the flat arguments; batched ones at axis 0.
    is_batched: which arguments are batched.
    unbatched_in_avals: the avals of one batch element's arguments.
    out_avals: the avals of one batch element's results.
    vmap_method: see the module docstring.
  """
  callee: Callee
  axis_size: core.DimSize
  args: list[Any]
  is_batched: list[bool]
  unbatched_in_avals: list[core.ShapedArray]
  out_avals: list[core.ShapedArray]
  vmap_method: vmap_methods.VmapMethod | None

  @classmethod
  def make(cls, callee: Callee, axis_size: core.DimSize, args: Sequence[Any],
           dims: Sequence[int | None],
           vmap_method: vmap_methods.VmapMethod | None) -> _Batch:
    """Moves each batch to axis 0, and asks ``callee`` for the result avals.

    Args:
      callee: how to make calls.
      axis_size: the size of the vmap axis.
      args: the flat arguments; batched ones at ``dims[i]``.
      dims: each argument's batch dimension, or None (not all None).
      vmap_method: see the module docstring.

    Returns:
      The call to batch.
    """
    is_batched = [d is not None for d in dims]
    args = [jnp.moveaxis(a, d, 0) if d not in (None, 0) else a
            for a, d in zip(args, dims)]
    in_avals = [compat.typeof(a) for a in args]
    unbatched_in_avals = [a.update(shape=a.shape[1:]) if b else a
                          for a, b in zip(in_avals, is_batched)]
    out_avals = callee.out_avals(unbatched_in_avals)
    return cls(callee, axis_size, args, is_batched, unbatched_in_avals,
               out_avals, vmap_method)

  def batched_out_avals(self) -> list[core.ShapedArray]:
    """The result avals with the batch at axis 0."""
    return [a.update(shape=(self.axis_size, *a.shape))
            for a in self.out_avals]

  def sequential(self) -> list[Any]:
    """The results of one unbatched call per batch element."""
    return _sequential(self.callee, self.args, self.is_batched,
                       self.axis_size, self.out_avals)


def _falls_back_now(b: _Batch, slow_ok: bool) -> bool:
  """Whether a method other than the sequential one must loop instead.

  Every other method makes fewer calls than the batch has elements (a
  batch of one too: the result must not depend on the batch size), so a
  call with side effects is refused; and one call may not take a symbolic
  batch size.

  Args:
    b: the call to batch.
    slow_ok: whether a refused call falls back to a loop (:func:`falls_back`).

  Returns:
    True if the call is refused and falls back; False if it is not refused.

  Raises:
    Exception: the refusal, if the call does not fall back.
  """
  if (side_effect := b.callee.side_effect_error(b.vmap_method)) is not None:
    if slow_ok:
      return True
    raise side_effect
  if not core.is_constant_dim(b.axis_size):
    can, reason = b.callee.symbolic_batch_refusal(b.vmap_method)
    if not can:
      if slow_ok:
        return True
      raise errors.symbolic_batch_error(b.axis_size, b.vmap_method, reason)
  return False


def _vectorized(b: _Batch, slow_ok: bool) -> list[Any]:
  """The results of a vectorizing method: one vectorized call.

  Args:
    b: the call to batch (``b.vmap_method`` one of
      :data:`.vmap_methods.VECTORIZING`).
    slow_ok: whether an unvectorizable call falls back to a loop.

  Returns:
    The batched results, batch at axis 0.

  Raises:
    Exception: the callee's error, if it cannot vectorize and ``slow_ok`` is
      False.
  """
  constant = core.is_constant_dim(b.axis_size)
  if constant and b.axis_size == 0:
    # A batch of none needs no call (and a pure function's results are
    # known: empty arrays of the results' shapes).
    return [jnp.zeros((0, *a.shape), a.dtype) for a in b.out_avals]
  if constant and b.axis_size == 1:
    # A batch of one needs no vectorizing (jax.jacrev of a scalar function
    # vmaps its VJP over one cotangent): one unbatched call.
    outs = b.callee.call([a[0] if batched else a
                          for a, batched in zip(b.args, b.is_batched)])
    return [o[None] for o in outs]
  batched_out_avals = b.batched_out_avals()
  try:
    outs = b.callee.call_vectorized(b.args, b.is_batched, b.vmap_method,
                                    batched_out_avals)
  except Unvectorizable as u:
    if slow_ok:
      return b.sequential()
    raise u.error from u.__cause__
  return _checked(outs, batched_out_avals, b.vmap_method)


def _batch_polymorphic(b: _Batch) -> list[Any]:
  """The results of ``"batch_polymorphic"``: the batch merged into axis 0.

  Args:
    b: the call to batch.

  Returns:
    The batched results, batch at axis 0 (split out of their axis 0).

  Raises:
    ValueError: an argument or result is a scalar (it has no axis 0).
  """
  for kind, avals in (("argument", b.unbatched_in_avals),
                      ("result", b.out_avals)):
    for i, a in enumerate(avals):
      if not a.shape:
        raise errors.scalar_error(kind, i, a.str_short())
  axis_size = b.axis_size
  merged = [
      jnp.reshape(a if batched
                  else jnp.broadcast_to(a, (axis_size, *a.shape)),
                  (axis_size * u.shape[0], *u.shape[1:]))
      for a, batched, u in zip(b.args, b.is_batched, b.unbatched_in_avals)]
  merged_out_avals = [a.update(shape=(axis_size * a.shape[0], *a.shape[1:]))
                      for a in b.out_avals]
  outs = _checked(b.callee.call_batched(merged, b.is_batched, b.vmap_method,
                                        merged_out_avals),
                  merged_out_avals, b.vmap_method)
  return [jnp.reshape(o, (axis_size, *a.shape))
          for o, a in zip(outs, b.out_avals)]


def _expanded(b: _Batch) -> list[Any]:
  """The results of ``"expand_dims"`` or ``"broadcast_all"``: one call.

  Args:
    b: the call to batch.

  Returns:
    The batched results, batch at axis 0. With ``"expand_dims"`` unbatched
    arguments get a size-1 axis 0; with ``"broadcast_all"`` they are
    broadcast to the batch.
  """
  size = b.axis_size if b.vmap_method == vmap_methods.BROADCAST_ALL else 1
  expanded = [a if batched else jnp.broadcast_to(a, (size, *a.shape))
              for a, batched in zip(b.args, b.is_batched)]
  batched_out_avals = b.batched_out_avals()
  outs = b.callee.call_batched(expanded, b.is_batched, b.vmap_method,
                               batched_out_avals)
  return _checked(outs, batched_out_avals, b.vmap_method)


def check_results(vmap_method: vmap_methods.VmapMethod | None,
                  shapes: Sequence[Sequence[Any] | None],
                  expected: Sequence[Sequence[Any]]) -> list[bool]:
  """The one check of a batched call's results against their shapes.

  Every path checks here what a batched call returned, JAX arrays
  (:func:`batch`) and TF tensors while the batched TF function is traced
  (:mod:`.rule`) alike. With ``"expand_dims"``, a size-1 axis of a result
  broadcasts to the expected size, as NumPy broadcasting would: ``x * 2`` of
  an unbatched (size-1) argument works.

  Args:
    vmap_method: the method that made the call.
    shapes: each result's shape; None for an unknown rank, None for an
      unknown size (TF's static shapes).
    expected: each result's expected shape; None for a size only known when
      the call runs (symbolic under TF).

  Returns:
    For each result, whether it must be broadcast to its expected shape.

  Raises:
    ValueError: a result count or shape that the method cannot give.
  """
  if len(shapes) != len(expected):
    raise errors.result_count_error(vmap_method, len(shapes), len(expected))
  return [_check_result_shape(vmap_method, i, s, e)
          for i, (s, e) in enumerate(zip(shapes, expected))]


def _check_result_shape(vmap_method: vmap_methods.VmapMethod | None,
                        index: int,
                        shape: Sequence[Any] | None,
                        expected: Sequence[Any]) -> bool:
  if shape is None:
    return False  # known only when the call runs, where TF checks it
  shape, expected = tuple(shape), tuple(expected)

  def is_one(d: core.DimSize | None) -> bool:
    return d is not None and core.definitely_equal(d, 1)

  def same(d: core.DimSize | None, e: core.DimSize | None) -> bool:
    return d is None or e is None or core.definitely_equal(d, e)

  if len(shape) == len(expected):
    if (vmap_method == vmap_methods.EXPAND_DIMS
        and any(is_one(d) and not is_one(e) for d, e in zip(shape, expected))
        and all(same(d, e) or is_one(d) for d, e in zip(shape, expected))):
      return True
    if all(same(d, e) for d, e in zip(shape, expected)):
      return False
  raise errors.result_shape_error(vmap_method, index, shape, expected)


def _checked(outs: Sequence[Any], expected: Sequence[core.ShapedArray],
             vmap_method: vmap_methods.VmapMethod | None) -> list[Any]:
  """The results of one batched call, checked and broadcast as they must be."""
  outs = list(outs)
  broadcast = check_results(vmap_method,
                            [compat.typeof(o).shape for o in outs],
                            [e.shape for e in expected])
  return [jnp.broadcast_to(o, e.shape) if b else o
          for o, e, b in zip(outs, expected, broadcast)]


def _sequential(callee: Callee, args: Sequence[Any],
                is_batched: Sequence[bool], axis_size: core.DimSize,
                out_avals: Sequence[core.ShapedArray]) -> list[Any]:
  """One unbatched call per batch element; batched args have it at axis 0."""
  unbatched, batched = util.partition_list(list(is_batched), list(args))

  def one(elems: Sequence[Any]) -> list[Any]:
    return list(callee.call(util.merge_lists(list(is_batched), unbatched,
                                             list(elems))))

  # Under a staging trace, or for a symbolic batch size: a loop inside the
  # program, whose size does not grow with the batch. (The arguments being
  # tracers does not tell: under nested eager vmap they are BatchTracers.)
  if core.unsafe_am_i_under_a_jit() or not core.is_constant_dim(axis_size):
    return list(lax.map(one, batched))
  # Eagerly: a Python loop of eager calls, in batch order; lax.map would
  # stage the loop out and need XLA to compile the function. Rows of host
  # arrays are views; indexing a device array is one dispatch per row.
  batched = [np.asarray(b) if _on_host(b) else b for b in batched]
  per_element = [one([b[i] for b in batched]) for i in range(axis_size)]
  if not per_element:
    return [jnp.zeros((0, *a.shape), a.dtype) for a in out_avals]
  return [_stacked(outs) for outs in zip(*per_element)]


# The most operands one eager concatenate of traced results takes: JAX
# compiles one program per operand count and shape, whose size (and compile
# time) grows with the count.
_STACK_CHUNK = 64


def _stacked(outs: Sequence[jax.Array]) -> jax.Array:
  """``jnp.stack(outs)``, made in time and memory linear in ``len(outs)``.

  ``jnp.stack`` of n eager arrays compiles a concatenate of n operands, anew
  for every n, in time that grows faster than n, and keeps it. Concrete
  results (eager calls return arrays on a device) are copied into one host
  buffer and put on their device once; results that are tracers of an outer
  transformation (eager nested ``vmap``) are concatenated in chunks of at
  most :data:`_STACK_CHUNK`, so only a few small programs are compiled.

  Args:
    outs: one result of every element's call, all of one shape and dtype.

  Returns:
    The results stacked along a new leading axis.
  """
  first = outs[0]
  if all(_is_concrete(o) for o in outs):
    buffer = np.empty((len(outs), *np.shape(first)), np.asarray(first).dtype)
    for i, o in enumerate(outs):
      buffer[i] = np.asarray(o)
    if isinstance(first, jax.Array) and first.committed:
      return jax.device_put(buffer, first.sharding)
    return jax.device_put(buffer)  # uncommitted, on the default device
  parts = [jnp.stack(outs[i:i + _STACK_CHUNK])
           for i in range(0, len(outs), _STACK_CHUNK)]
  while len(parts) > 1:
    parts = [jnp.concatenate(parts[i:i + _STACK_CHUNK])
             for i in range(0, len(parts), _STACK_CHUNK)]
  return parts[0]


def _on_host(x: ArrayLike) -> bool:
  """Whether NumPy can view ``x`` without copying it from a device.

  Only for arrays not committed to a device: rows of a committed one stay
  device arrays, so that the calls run where the user put them.
  """
  return _is_concrete(x) and (
      not isinstance(x, jax.Array)
      or (not x.committed
          and all(d.platform == "cpu" for d in x.sharding.device_set)))


def _is_concrete(x: ArrayLike) -> bool:
  """Whether ``x`` is an array whose values NumPy can hold (not a tracer)."""
  if isinstance(x, core.Tracer):
    return False
  if isinstance(x, jax.Array):
    return (x.is_fully_addressable and len(x.sharding.device_set) == 1
            and not dtypes.issubdtype(x.dtype, dtypes.extended))
  return isinstance(x, (np.ndarray, np.generic))
