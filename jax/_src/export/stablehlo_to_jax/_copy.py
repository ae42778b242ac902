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
"""A module read once, kept as bytes, and compiled again without MLIR.

:func:`read` copies a StableHLO module into the interpreter's Python objects
(:mod:`._ir`); :func:`dumps` and :func:`loads` turn that copy into bytes and
back, so that a caller can keep it (a persistent cache) and a later process
compile it (``parse``) without reading the module again: no MLIR context, no
walk of the module. :func:`loads` rebuilds only the interpreter's own types
and NumPy arrays; anything else in the bytes (a foreign or tampered entry)
raises :class:`UnreadableCopy`. :func:`source_digest` says which code made
a copy (a keeper of copies keys them by it).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import pathlib
import pickle

from jax._src.export.stablehlo_to_jax import _ir
import numpy as np

# The classes a copy is made of, and the NumPy functions that rebuild arrays
# and dtypes (their module moved in NumPy 2).
_IR_CLASSES = frozenset({"TensorType", "TupleType", "TokenType", "Op",
                         "Block", "Func"})
_NUMPY = frozenset({
    ("numpy", "dtype"), ("numpy", "ndarray"),
    *((f"numpy.{core}.{m}", f) for core in ("core", "_core")
      for m in ("numeric", "multiarray")
      for f in ("_frombuffer", "_reconstruct", "scalar"))})
_BUILTINS = frozenset({"complex", "frozenset", "set", "slice"})


class UnreadableCopy(ValueError):
  """Bytes that are not a module copy made by :func:`dumps`."""


@dataclasses.dataclass(frozen=True, eq=False)
class ModuleCopy:
  """A StableHLO module as the interpreter's Python objects.

  Attributes:
    funcs: the module's functions by name (:class:`._ir.Func`).
    main: the name of the entry function.
    with_text: whether each op keeps its assembly (for error messages).
  """
  funcs: dict[str, _ir.Func]
  main: str
  with_text: bool


def read(module: str | bytes, *, with_text: bool = False) -> ModuleCopy:
  """Reads a StableHLO module (text or bytecode) into a :class:`ModuleCopy`.

  Raises:
    ValueError: the module has a construct the reader does not handle.
  """
  try:
    funcs, main = _ir.read_module(module, with_text=with_text)
  except _ir.UnreadableModule as e:
    raise ValueError(f"Cannot read the StableHLO module: {e}.") from e
  return ModuleCopy(funcs, main, with_text)


def dumps(copy: ModuleCopy) -> bytes:
  """The copy as bytes that :func:`loads` reads back."""
  return pickle.dumps((copy.funcs, copy.main, copy.with_text),
                      protocol=pickle.HIGHEST_PROTOCOL)


class _Unpickler(pickle.Unpickler):
  """Rebuilds the interpreter's types and NumPy values only."""

  def find_class(self, module: str, name: str) -> type:
    if ((module == _ir.__name__ and name in _IR_CLASSES)
        or (module, name) in _NUMPY
        or (module == "builtins" and name in _BUILTINS)):
      return super().find_class(module, name)
    if module.split(".")[0] == "ml_dtypes":
      found = super().find_class(module, name)
      if isinstance(found, type) and issubclass(found, np.generic):
        return found  # a scalar type of ml_dtypes' (bfloat16, float8s)
    raise UnreadableCopy(f"a module copy holds no {module}.{name}")


def loads(data: bytes) -> ModuleCopy:
  """The copy :func:`dumps` made.

  Raises:
    UnreadableCopy: ``data`` is not such a copy.
  """
  try:
    funcs, main, with_text = _Unpickler(io.BytesIO(data)).load()
  except UnreadableCopy:
    raise
  except Exception as e:  # pylint: disable=broad-except
    raise UnreadableCopy(f"not a module copy ({type(e).__name__}: {e})"
                         ) from e
  if not (isinstance(funcs, dict) and isinstance(main, str) and main in funcs
          and all(isinstance(f, _ir.Func) for f in funcs.values())):
    raise UnreadableCopy("not a module copy: no functions and entry")
  return ModuleCopy(funcs, main, bool(with_text))


@functools.cache
def source_digest(*, everything: bool = False) -> str:
  """A digest of the interpreter's source, once per process.

  Args:
    everything: False: the reader's (what a copy holds: :func:`read`,
      :func:`dumps`); True: every module of the interpreter's (what a
      program compiled from a copy computes).

  Returns:
    The SHA-256 hex digest of the source files.
  """
  here = pathlib.Path(__file__).parent
  files = (sorted(here.glob("*.py")) if everything
           else [here / "_ir.py", here / "_copy.py"])
  digest = hashlib.sha256()
  for path in files:
    try:
      digest.update(path.read_bytes())
    except OSError:
      digest.update(b"?")
    digest.update(path.name.encode())
  return digest.hexdigest()
