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
"""stablehlo_to_jax.with_stack_room: long work on a frame-stack chunk of its
own, so that a loop deep in a trace does not map and unmap a chunk per call.

The effect is counted, not timed: each call whose frame starts a new chunk
touches fresh memory, a page fault of the thread (``RUSAGE_THREAD``)."""

from __future__ import annotations

import sys
import types

from jax._src.export import stablehlo_to_jax as s2j
import pytest

resource = pytest.importorskip("resource")

CALLS = 2000
# A frame of PAD_SLOTS (stack slots, plus a few of CPython's own) per level
# of padding, and a leaf whose frame is larger than that step: at some
# padding depth of each 16 KiB chunk, the leaf does not fit in what is left
# of the chunk and starts a new one.
PAD_SLOTS = 64
LEAF_SLOTS = 1000


def _with_slots(fn: types.FunctionType, slots: int) -> types.FunctionType:
  return types.FunctionType(fn.__code__.replace(co_stacksize=slots),
                            fn.__globals__, fn.__name__)


def _leaf() -> None:
  return None


def _pad(depth: int, work):
  return _pad_big(depth - 1, work) if depth else work()


_leaf_big = _with_slots(_leaf, LEAF_SLOTS)
_pad_big = _with_slots(_pad, PAD_SLOTS)


def _loop() -> int:
  before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
  for _ in range(CALLS):
    _leaf_big()
  return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before


def _worst_faults(in_room: bool) -> int:
  """The most page faults of CALLS leaf calls over two chunks' worth of
  padding depths."""
  work = (lambda: s2j.with_stack_room(_loop)) if in_room else _loop
  depths = range(2 * 16 * 1024 // 8 // PAD_SLOTS + 1)
  return max(_pad_big(depth, work) for depth in depths)


def test_a_loop_at_a_chunk_boundary_stops_faulting_in_a_room():
  if not hasattr(resource, "RUSAGE_THREAD"):
    pytest.skip("this platform does not count a thread's page faults")
  plain = _worst_faults(in_room=False)
  if plain < CALLS // 2:
    pytest.skip(f"this Python ({sys.version.split()[0]}) keeps a freed "
                f"stack chunk, or this kernel does not count page faults "
                f"({plain} faults in {CALLS} calls at the worst depth)")
  # Plainly, the worst depth faults on (nearly) every call; in a room, no
  # depth does beyond a few first touches of the chunk.
  assert s2j.with_stack_room(lambda: 1) == 1
  roomy = _worst_faults(in_room=True)
  assert roomy < CALLS // 20, (plain, roomy)


def test_with_stack_room_passes_arguments_results_and_errors():
  assert s2j.with_stack_room(lambda a, b=0: (a, b), 1, b=2) == (1, 2)
  assert s2j.with_stack_room(divmod, 7, 2) == (3, 1)
  with pytest.raises(ZeroDivisionError):
    s2j.with_stack_room(divmod, 1, 0)
  # A room within a room is a plain call, and an error leaves none behind.
  assert s2j.with_stack_room(s2j.with_stack_room, sum, [1, 2]) == 3
  assert s2j.with_stack_room(lambda: s2j.with_stack_room(
      lambda: sys._getframe().f_back.f_code.co_name)) == "with_room"
  assert s2j.with_stack_room(lambda: sys._getframe().f_back.f_code.co_name
                             ) == "_call"
