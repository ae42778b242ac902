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
"""The TF traces of one ``call_tf`` object, kept across its calls.

Each call of ``call_tf(f)`` builds a flat callable of ``f`` and a
``tf.function`` of it. :class:`TraceCache` keeps the first ones built for
each argument structure and signature, so that later calls reuse them, and
with them every cache keyed on them: TensorFlow's traces (concrete
functions), ``call_tf``'s concrete-function cache, the compiled HLO, and the
vectorized functions of ``jax.vmap``.

The rules are ``tf.function``'s: ``f`` is traced once per argument
signature (structure, shapes, dtypes, and the declared
``output_shape_dtype``); Python state that ``f`` reads while it is traced is
read then, not on later calls. Eagerly (no ``jax.jit``, no ``jax.vmap``),
``call_tf`` still runs ``f`` as Python on every call. ``jax.clear_caches()``
empties every cache, so that the next call traces again.

:func:`mark_vectorized` records the vectorized ``tf.function``s that
``jax.vmap`` makes: their avals are known and they are pure, so abstract
evaluation need not trace them, and a vectorization waits until a lowering
or an eager call needs it (see :mod:`.vmap_tf`).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable, Sequence
import dataclasses
import threading
from typing import Any
import weakref

from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf import jax2tf as jax2tf_internal

# Signatures kept per call_tf object; beyond it the least recent is dropped.
MAX_SIGNATURES = 64

_ALL: weakref.WeakSet[TraceCache] = weakref.WeakSet()


def concrete_function(function_flat_tf: Any, specs: Sequence[Any]) -> Any:
  """The concrete function of ``function_flat_tf`` for ``specs``.

  Traced inside ``call_tf`` (``jax2tf`` functions called from it then know
  it), and cached by TensorFlow: the same as upstream's
  ``_get_concrete_function_tf``.

  Args:
    function_flat_tf: the ``tf.function`` of a call (a ``call_tf_p`` param).
    specs: the argument specs (``args_flat_sig_tf``).

  Returns:
    The ``ConcreteFunction``, traced on first use.
  """
  with jax2tf_internal.inside_call_tf():
    return function_flat_tf.get_concrete_function(*specs)


@dataclasses.dataclass(frozen=True)
class Vectorized:
  """What a vectorized ``function_flat_tf`` of ``jax.vmap`` was made from.

  Attributes:
    function_flat_tf: the unbatched ``tf.function`` (a ``call_tf_p`` param).
    sig: its argument specs.
    vmap_method: the method that vectorized it (None, "vectorized" or "pfor").
  """
  function_flat_tf: Any
  sig: tuple[Any, ...]
  vmap_method: str | None


# Keyed weakly: an entry lives as long as the vectorized function, which the
# batching rule's cache holds (and jax.clear_caches() releases).
_VECTORIZED: weakref.WeakKeyDictionary[Any, Vectorized] = (
    weakref.WeakKeyDictionary())


def mark_vectorized(function_flat_tf: Any, made_from: Vectorized) -> None:
  """Records that ``function_flat_tf`` is ``made_from`` vectorized.

  Only for functions whose results are the unbatched function's, batched
  (known avals), and whose unbatched function has no side effects.
  """
  _VECTORIZED[function_flat_tf] = made_from


def vectorized_from(function_flat_tf: Any) -> Vectorized | None:
  """What ``function_flat_tf`` vectorizes, or None if it is not vectorized."""
  try:
    return _VECTORIZED.get(function_flat_tf)
  except TypeError:  # not weakly referenceable: not one of ours
    return None


class TraceCache:
  """The flat callables of one ``call_tf`` object, by argument signature.

  Also what else one ``call_tf`` object keeps by signature: the ``call_tf``
  of its VJP (see :func:`.autodiff.vjp_call_key`).
  """

  def __init__(self):
    self._entries: collections.OrderedDict[Hashable, Any] = (
        collections.OrderedDict())
    self._lock = threading.Lock()
    _ALL.add(self)

  def reuse(self, key: Hashable, callable_flat_tf: Callable[..., Any],
            function_flat_tf: Any, res_treedef: Callable[[], Any]
            ) -> tuple[Callable[..., Any], Any, Callable[[], Any]]:
    """The callable, ``tf.function`` and result treedef getter for ``key``.

    Args:
      key: the argument signature (hashable).
      callable_flat_tf: the flat callable this call made.
      function_flat_tf: its ``tf.function``.
      res_treedef: returns the result treedef that ``callable_flat_tf``
        records when it runs.

    Returns:
      The triple given by the first call with ``key``: this call's own if it
      is the first.
    """
    return self.get(key, lambda: (callable_flat_tf, function_flat_tf,
                                  res_treedef))

  def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
    """The value kept for ``key``; ``make()``'s, kept, if there is none.

    Args:
      key: the argument signature; if it is not hashable, nothing is kept.
      make: builds the value.

    Returns:
      The value the first call with ``key`` made.
    """
    try:
      hash(key)
    except TypeError:
      return make()
    with self._lock:
      found = self._entries.get(key)
      if found is None:
        found = self._entries[key] = make()
        while len(self._entries) > MAX_SIGNATURES:
          self._entries.popitem(last=False)
      else:
        self._entries.move_to_end(key)
      return found

  def clear(self) -> None:
    with self._lock:
      self._entries.clear()

  def __len__(self) -> int:
    return len(self._entries)


class _AllTraceCaches:
  """What ``jax.clear_caches()`` sees: every :class:`TraceCache`."""

  def cache_clear(self) -> None:
    for cache in list(_ALL):
      cache.clear()

  def cache_info(self) -> tuple[int, int]:
    caches = list(_ALL)
    return len(caches), sum(len(c) for c in caches)

  def cache_keys(self) -> list[Any]:
    return []


_CLEARER = _AllTraceCaches()
compat.register_cache(_CLEARER, "call_tf: TF traces of call_tf objects")
