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
"""Long Python work deep in a trace, on a chunk of the frame stack of its own.

CPython (3.11 and later) keeps a thread's frames on a stack made of chunks
of 16 KiB, and frees a chunk as soon as the frame at its start returns
(https://github.com/python/cpython/issues/142183; its fix, backported in
March 2026 to 3.13 and 3.14, keeps one freed chunk). Code that loops deep in
a trace can call a function whose frame lands at a chunk's start again and
again, and each such call then maps and unmaps a chunk: a page fault at
least, and a system call each way. Where the loop lands depends on the depth
of the caller's stack. Measured with a Keras MobileNetV2, TensorFlow's trace
of the model took 0.30-0.46 s on a 2-core x86 host depending on that depth,
and 0.45-2.8 s on a TPU v5e host, whose system calls cost more; inside
``call_tf`` under ``jax.jit(jax.vmap(f))`` it took 1.2 s there, against 0.47
s in a process of TensorFlow alone.

:func:`with_room` calls a function on a fresh chunk with 512 KiB free after
its frame, more than a deep trace uses (a thousand frames of 30 slots,
Python's default recursion limit, take 240 KiB), so no chunk starts within
the loops it runs: the time no longer depends on the caller's depth. The
cost is one mapping of 1 MiB per outermost call (not a transparent huge
page's 2 MiB, which a first touch would zero whole), whose pages the work
touches only as deep as it goes: 5-12 us and two page faults for an empty
call, 0.02-0.08 ms for an eager ``call_tf`` (which therefore takes none).
The frame's own 512 KiB of stack slots are never touched, but a frame object
made for it (an exception passing through it, a traceback or a profiler
walking the stack) is allocated that large, untouched: once per call at
most, and ``tracemalloc`` counts it.
"""

from __future__ import annotations

from collections.abc import Callable
import threading
import types
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_T = TypeVar("_T")

# The frame that asks for the chunk has this many stack slots, of 8 bytes.
# CPython gives a frame that does not fit in its current chunk a new one of
# 16 KiB doubled until the frame and 1,000 slots more fit: a chunk of 2**17
# slots (1 MiB) for this frame, 2**16 of them free after it. The frame's
# own slots stay untouched (a frame initializes only its locals).
_FRAME_SLOTS = 1 << 16


def _call(fn: Callable[..., _T], args: tuple[object, ...],
          kwargs: dict[str, object]) -> _T:
  return fn(*args, **kwargs)


def _with_frame_slots(fn: types.FunctionType, slots: int
                      ) -> types.FunctionType:
  """`fn` (a function without closure or defaults) with a frame of at least
  `slots` stack slots, or `fn` itself where the interpreter does not take
  such a code object."""
  try:
    code = fn.__code__.replace(co_stacksize=max(slots,
                                                fn.__code__.co_stacksize))
  except (TypeError, ValueError, OverflowError):  # a stricter interpreter
    return fn
  return types.FunctionType(code, fn.__globals__, fn.__name__)


_call_on_new_chunk = _with_frame_slots(_call, _FRAME_SLOTS)
_state = threading.local()


def with_room(fn: Callable[_P, _T], /, *args: _P.args,
              **kwargs: _P.kwargs) -> _T:
  """``fn(*args, **kwargs)``, on a chunk of the frame stack of its own.

  A call within another's room is a plain call: it has the room already.

  Args:
    fn: the work, typically a trace: many calls at a steady depth.
    *args: its positional arguments.
    **kwargs: its keyword arguments.

  Returns:
    What ``fn`` returns; what it raises propagates.
  """
  if getattr(_state, "inside", False):
    return fn(*args, **kwargs)
  _state.inside = True
  try:
    return _call_on_new_chunk(fn, args, kwargs)
  finally:
    _state.inside = False
