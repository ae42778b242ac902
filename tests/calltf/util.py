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
"""Helpers for tests of call_tf: compare against the same function in jnp."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import contextlib  # noqa: E402
import functools  # noqa: E402
import logging  # noqa: E402
from typing import Any, Callable, Iterator  # noqa: E402

import jax  # noqa: E402

# (Shared with the tests that need no TensorFlow.)
from ..export.util import assert_close  # noqa: E402,F401
from ..export.util import randn  # noqa: E402,F401

METHODS = (None, "vectorized", "sequential")
ALL_METHODS = (None, "vectorized", "sequential", "expand_dims",
               "broadcast_all", "batch_polymorphic")


def check_eager_and_jit(f: Callable, f_ref: Callable, *args: Any,
                        tol: float = 1e-5, jit: bool = True) -> None:
  """`f(*args)` matches `f_ref(*args)` eagerly and under jax.jit."""
  expected = f_ref(*args)
  assert_close(f(*args), expected, tol)
  if jit:
    assert_close(jax.jit(f)(*args), expected, tol)


def count_calls(monkeypatch: Any, found: Any, obj: Any, attr: str,
                kind: str) -> None:
  """Counts, in `found[kind]`, the calls of `obj.attr` while a test runs."""
  original = getattr(obj, attr)

  @functools.wraps(original)
  def counted(*args, **kwargs):
    found[kind] += 1
    return original(*args, **kwargs)
  monkeypatch.setattr(obj, attr, counted)


@contextlib.contextmanager
def compiles() -> Iterator[list[str]]:
  """The names of the programs JAX compiles meanwhile, from its log.

  Use inside ``jax.log_compiles()``, which makes JAX log them.
  """
  names: list[str] = []

  class Handler(logging.Handler):
    def emit(self, record):
      message = record.getMessage()
      if message.startswith("Compiling "):
        names.append(message.split()[1])
  handler = Handler(logging.DEBUG)
  jax_logger = logging.getLogger("jax")
  jax_logger.addHandler(handler)
  try:
    yield names
  finally:
    jax_logger.removeHandler(handler)
