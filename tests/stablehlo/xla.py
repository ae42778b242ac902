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
"""XLA running a StableHLO module as it is: the reference of the interpreter.

A primitive whose lowering is a call of the module (merged into the
enclosing program), so that ``jax.jit`` of it is XLA compiling the module
unchanged.
"""

from __future__ import annotations

from typing import Callable

import jax
from jax._src import core
from jax._src.export import stablehlo_to_jax as s2j
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import func as func_dialect


_xla_module_p = core.Primitive("test_xla_module")
_xla_module_p.multiple_results = True


@_xla_module_p.def_abstract_eval
def _xla_module_abstract_eval(*args, module, out_avals):
  del args, module
  return list(out_avals)


def _xla_module_lowering(ctx, *args, module, out_avals):
  del out_avals
  sub = ir.Module.parse(module)
  main = ir.SymbolTable(sub.operation)["main"]
  name = mlir.merge_mlir_modules(ctx.module_context.module, "xla_module", sub,
                                 dst_symtab=ctx.module_context.symbol_table)
  call = func_dialect.CallOp(main.type.results, ir.FlatSymbolRefAttr.get(name),
                             list(args))
  return list(call.results)


mlir.register_lowering(_xla_module_p, _xla_module_lowering)


def xla_function(module: str | bytes, prog: s2j.Program) -> Callable:
  """The module run by XLA, unchanged (jitted)."""
  out_avals = tuple(prog.out_avals)
  return jax.jit(lambda *a: _xla_module_p.bind(
      *a, module=module, out_avals=out_avals))
