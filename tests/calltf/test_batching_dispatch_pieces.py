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
"""The pieces of the dispatcher (``batching.dispatch.batch``), one by one.

A pure JAX callee stands for ``call_tf``'s: ``f(x, y) = [x + y]`` on
arguments of shape (2, 3), recording which of its methods were called.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
from typing import Any

import jax
from jax._src import core
from jax.experimental.jax2tf.call_tf_lib import errors as call_tf_errors
from jax.experimental.jax2tf.call_tf_lib import vmap_methods
from jax.experimental.jax2tf.call_tf_lib.batching import dispatch
import jax.numpy as jnp
import numpy as np
import pytest

# pylint: disable=protected-access

B = 4
X = np.arange(B * 2 * 3, dtype=np.float32).reshape(B, 2, 3)
Y = np.linspace(0., 1., 6, dtype=np.float32).reshape(2, 3)


class _AddCallee:
  """``[x + y]``, as a :class:`dispatch.Callee`."""

  def __init__(self, side_effect: Exception | None = None,
               unvectorizable: Exception | None = None):
    self.side_effect = side_effect
    self.unvectorizable = unvectorizable
    self.calls: list[tuple[str, list[tuple[int, ...]]]] = []

  def _record(self, kind: str, args: Sequence[Any]) -> None:
    self.calls.append((kind, [tuple(np.shape(a)) for a in args]))

  def symbolic_batch_refusal(self, vmap_method: Any
                             ) -> tuple[bool, str | None]:
    del vmap_method
    return False, "static shapes only"

  def out_avals(self, in_avals: Sequence[core.ShapedArray]
                ) -> list[core.ShapedArray]:
    self.calls.append(("out_avals", [a.shape for a in in_avals]))
    return [in_avals[0]]

  def call(self, args: Sequence[Any]) -> list[Any]:
    self._record("call", args)
    return [args[0] + args[1]]

  def call_batched(self, args: Sequence[Any], is_batched: Sequence[bool],
                   vmap_method: Any, out_avals: Any) -> list[Any]:
    del is_batched, vmap_method, out_avals
    self._record("call_batched", args)
    return [args[0] + args[1]]

  def side_effect_error(self, vmap_method: Any) -> Exception | None:
    del vmap_method
    return self.side_effect

  def call_vectorized(self, args: Sequence[Any], is_batched: Sequence[bool],
                      vmap_method: Any, out_avals: Any) -> list[Any]:
    del is_batched, vmap_method, out_avals
    self._record("call_vectorized", args)
    if self.unvectorizable is not None:
      raise dispatch.Unvectorizable(self.unvectorizable)
    return [args[0] + args[1]]


def _batch(callee: _AddCallee, vmap_method: Any, axis_size: Any = B,
           x: Any = X) -> dispatch._Batch:
  return dispatch._Batch.make(callee, axis_size, [x, Y], [0, None],
                              vmap_method)


def test_make_moves_the_batch_to_axis_zero_and_asks_for_the_out_avals():
  callee = _AddCallee()
  b = dispatch._Batch.make(callee, B, [np.moveaxis(X, 0, 1), Y], [1, None],
                           None)
  np.testing.assert_array_equal(b.args[0], X)
  assert b.is_batched == [True, False]
  assert [a.shape for a in b.unbatched_in_avals] == [(2, 3), (2, 3)]
  assert callee.calls == [("out_avals", [(2, 3), (2, 3)])]
  assert [a.shape for a in b.batched_out_avals()] == [(B, 2, 3)]
  np.testing.assert_allclose(b.sequential()[0], X + Y)
  assert [k for k, _ in callee.calls].count("call") == B


def test_falls_back_now_only_for_a_refusal_and_if_allowed():
  assert not dispatch._falls_back_now(_batch(_AddCallee(), None), False)
  effect = ValueError("has side effects")
  b = _batch(_AddCallee(side_effect=effect), None)
  assert dispatch._falls_back_now(b, True)
  with pytest.raises(ValueError, match="has side effects"):
    dispatch._falls_back_now(b, False)


def test_falls_back_now_for_a_symbolic_batch_the_callee_refuses():
  b = dataclasses.replace(_batch(_AddCallee(), None),
                          axis_size=jax.export.symbolic_shape("b")[0])
  assert dispatch._falls_back_now(b, True)
  with pytest.raises(call_tf_errors.CallTfVectorizationError,
                     match="static shapes only"):
    dispatch._falls_back_now(b, False)


def test_vectorized_batch_of_none_makes_no_call():
  callee = _AddCallee()
  outs = dispatch._vectorized(_batch(callee, None, 0, X[:0]), False)
  assert [o.shape for o in outs] == [(0, 2, 3)]
  assert [k for k, _ in callee.calls] == ["out_avals"]


def test_vectorized_batch_of_one_makes_one_unbatched_call():
  callee = _AddCallee()
  outs = dispatch._vectorized(_batch(callee, None, 1, X[:1]), False)
  np.testing.assert_allclose(outs[0], X[:1] + Y)
  assert callee.calls[1:] == [("call", [(2, 3), (2, 3)])]


def test_vectorized_makes_one_call_and_checks_it():
  callee = _AddCallee()
  outs = dispatch._vectorized(_batch(callee, None), False)
  np.testing.assert_allclose(outs[0], X + Y)
  assert callee.calls[1:] == [("call_vectorized", [(B, 2, 3), (2, 3)])]


def test_vectorized_falls_back_or_raises_the_callees_error():
  error = ValueError("pfor says no")
  callee = _AddCallee(unvectorizable=error)
  outs = dispatch._vectorized(_batch(callee, None), True)
  np.testing.assert_allclose(outs[0], X + Y)
  assert [k for k, _ in callee.calls].count("call") == B
  with pytest.raises(ValueError, match="pfor says no"):
    dispatch._vectorized(_batch(_AddCallee(unvectorizable=error), None),
                         False)


def test_batch_polymorphic_merges_the_batch_into_axis_zero():
  callee = _AddCallee()
  outs = dispatch._batch_polymorphic(
      _batch(callee, vmap_methods.BATCH_POLYMORPHIC))
  np.testing.assert_allclose(outs[0], X + Y)
  assert callee.calls[1:] == [("call_batched", [(B * 2, 3), (B * 2, 3)])]


def test_batch_polymorphic_refuses_a_scalar_argument():
  b = dispatch._Batch.make(_AddCallee(), B, [X[:, 0, 0], np.float32(1.)],
                           [0, None], vmap_methods.BATCH_POLYMORPHIC)
  with pytest.raises(ValueError, match="argument"):
    dispatch._batch_polymorphic(b)


@pytest.mark.parametrize("vmap_method,y_shape", [
    (vmap_methods.EXPAND_DIMS, (1, 2, 3)),
    (vmap_methods.BROADCAST_ALL, (B, 2, 3))])
def test_expanded_gives_unbatched_arguments_a_leading_axis(vmap_method,
                                                           y_shape):
  callee = _AddCallee()
  outs = dispatch._expanded(_batch(callee, vmap_method))
  np.testing.assert_allclose(outs[0], X + Y)
  assert outs[0].shape == (B, 2, 3)
  assert callee.calls[1:] == [("call_batched", [(B, 2, 3), y_shape])]


def test_batch_chooses_the_piece_of_its_method():
  for vmap_method, kind in [(None, "call_vectorized"),
                            (vmap_methods.SEQUENTIAL, "call"),
                            (vmap_methods.EXPAND_DIMS, "call_batched")]:
    callee = _AddCallee()
    outs, dims = dispatch.batch(callee, B, [X, Y], [0, None],
                                vmap_method=vmap_method)
    np.testing.assert_allclose(outs[0], X + Y)
    assert dims == [0]
    assert callee.calls[1][0] == kind
  outs, dims = dispatch.batch(_AddCallee(), B, [X[0], Y], [None, None],
                              vmap_method=None)
  np.testing.assert_allclose(outs[0], jnp.asarray(X[0] + Y))
  assert dims == [None]
