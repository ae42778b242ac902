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
"""Submodules that load on first use: each package's ``__getattr__``.

The lowest layer of the package: the package itself and each subpackage
set ``__getattr__ = _lazy.lazy_submodules(__name__)``, so that
``call_tf_lib.batching.dispatch`` imports ``batching.dispatch`` when it is
first read, and importing one module loads only what it imports.
"""

from collections.abc import Callable
import importlib
import types


def lazy_submodules(package: str) -> Callable[[str], types.ModuleType]:
  """A module ``__getattr__`` that imports ``package``'s submodules on use.

  Args:
    package: the package's ``__name__``.

  Returns:
    The ``__getattr__`` to set in the package's ``__init__``.
  """
  def getattr_(name: str) -> types.ModuleType:
    if name.startswith("_"):
      raise AttributeError(name)
    try:
      return importlib.import_module(f"{package}.{name}")
    except ModuleNotFoundError as e:
      if e.name != f"{package}.{name}":
        raise
      raise AttributeError(f"module {package!r} has no submodule {name!r}"
                           ) from None
  return getattr_
