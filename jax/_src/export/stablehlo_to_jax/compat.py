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
"""Every JAX internal the StableHLO interpreter uses that moves.

The interpreter (:mod:`jax._src.export.stablehlo_to_jax`) and its callers
(the transformations of ``Exported.call``, :mod:`jax._src.export.transforms`,
whose questions to ``jax.export`` are asked in
:mod:`jax._src.export.transforms.exported`) call these functions instead of
the internals, so that what differs between
JAX releases lives here, found by feature detection, never by version
numbers. :func:`check` verifies that each internal is still there, with the
shape this module expects; the test suite runs it against every supported
release, so that a rename fails a test instead of a user's program.

Nothing here imports TensorFlow or ``jax.experimental``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import contextlib
import inspect
from typing import Any

from jax._src import config
from jax._src import core
from jax._src.interpreters import ad
from jax._src.interpreters import batching
from jax._src.interpreters import mlir
from jax._src.interpreters import partial_eval as pe
from jax._src.lib.mlir import ir
from jax._src import util
from jax.typing import ArrayLike


class InternalsChangedError(RuntimeError):
  """A JAX internal that the interpreter relies on has changed."""


def internals_changed(what: str, consequence: str) -> InternalsChangedError:
  """The error for an internal, `what`, that moved: `consequence` fails."""
  import jax  # pylint: disable=g-import-not-at-top
  return InternalsChangedError(
      f"The StableHLO interpreter of jax.export relies on {what}, which this "
      f"installation (jax {jax.__version__}) does not have in the form it "
      f"expects; {consequence}. Install the jaxlib release this jax was "
      "verified with, and report this at "
      "https://github.com/jax-ml/jax/issues/28327.")


def typeof(x: Any) -> core.AbstractValue:
  """The abstract value of ``x`` (``core.typeof``)."""
  fn = getattr(core, "typeof", None) or core.get_aval
  return fn(x)


def register_cache(cache: Any, name: str) -> None:
  """Registers a ``functools.lru_cache`` so that ``jax.clear_caches()`` clears it.

  With ``util.register_cache`` where the release has it; else ``clear_caches``
  calls every function in ``util.cache_clearing_funs`` (a weak set).
  """
  register = getattr(util, "register_cache", None)
  if register is not None:
    register(cache, name)
    return
  funs = getattr(util, "cache_clearing_funs", None)
  if funs is None:
    raise internals_changed(
        "jax._src.util.register_cache (or cache_clearing_funs)",
        "its caches could not be cleared by jax.clear_caches()")
  _CLEARERS.append(cache.cache_clear)  # the weak set needs a strong reference
  funs.add(_CLEARERS[-1])


_CLEARERS: list[Callable[[], None]] = []


def register_batching_rule(prim: core.Primitive, rule: Callable[..., Any]
                           ) -> None:
  """Registers ``rule(axis_data, args, dims, **params)`` for ``prim``."""
  batching.fancy_primitive_batchers[prim] = rule


def mlir_extension() -> Any:
  """jaxlib's MLIR extension (``deserialize_portable_artifact`` and more)."""
  from jax._src import lib  # pylint: disable=g-import-not-at-top
  jax_ext = getattr(lib, "_jax", None)
  if jax_ext is not None and hasattr(jax_ext, "mlir"):
    return jax_ext.mlir
  return lib.xla_client._xla.mlir  # pylint: disable=protected-access


def isa(x: ir.Attribute | ir.Type, cls: type) -> bool:
  """Whether an MLIR attribute or type is of `cls` (old and new bindings)."""
  if isinstance(x, cls):
    return True
  check = getattr(cls, "isinstance", None)
  return bool(check is not None and check(x))


def deserialize_module(data: bytes, context: ir.Context) -> ir.Module:
  """A serialized (portable artifact) StableHLO module, in ``context``.

  Some jaxlibs return the module's text, others the module.
  """
  with context:
    module = mlir_extension().deserialize_portable_artifact(data)
  if isinstance(module, (str, bytes)):
    return ir.Module.parse(module, context=context)
  return module


def refine_polymorphic_shapes(module: ir.Module) -> ir.Module:
  """``mlir.refine_polymorphic_shapes``: static shapes for static inputs."""
  return mlir.refine_polymorphic_shapes(module)


def _takes_module_context(fn: Callable[..., Any]) -> bool:
  params = list(inspect.signature(fn).parameters)
  return bool(params) and params[0] == "ctx"


def aval_to_ir_type(module_context: Any, aval: core.AbstractValue) -> ir.Type:
  """``mlir.aval_to_ir_type``, with the module context where it takes one."""
  if _takes_module_context(mlir.aval_to_ir_type):
    return mlir.aval_to_ir_type(module_context, aval)
  return mlir.aval_to_ir_type(aval)


def shape_tensor(module_context: Any, sizes: Sequence[Any]) -> ir.Value:
  """``mlir.shape_tensor``, with the module context where it takes one."""
  if _takes_module_context(mlir.shape_tensor):
    return mlir.shape_tensor(module_context, sizes)
  return mlir.shape_tensor(sizes)


def inline_calls(module: ir.Module) -> None:
  """Inlines the module's function calls into their callers, in place (the
  MLIR inliner alone: no canonicalization, which could change values)."""
  from jax._src.lib.mlir import passmanager  # pylint: disable=g-import-not-at-top
  # (In the module's own context: refinement may have made it in another.)
  passmanager.PassManager.parse(
      "builtin.module(inline{default-pipeline=})",
      context=module.context).run(module.operation)


def bind_equation(eqn: core.JaxprEqn, invals: Sequence[object]
                  ) -> list[object]:
  """The results of a jaxpr's equation `eqn` bound on `invals` (as
  ``core.eval_jaxpr`` binds it: ``get_bind_params`` gives the parameters,
  and before JAX 0.7 the sub-functions too)."""
  params = eqn.primitive.get_bind_params(eqn.params)
  subfuns: Sequence[object] = ()
  if isinstance(params, tuple):
    subfuns, params = params
  outs = eqn.primitive.bind(*subfuns, *invals, **params)
  return list(outs) if eqn.primitive.multiple_results else [outs]


def initialize_lapack() -> None:
  """Loads jaxlib's LAPACK kernels, which its ``lapack_*`` custom calls run
  (as JAX's own lowerings do before writing one)."""
  from jax._src.lib import lapack  # pylint: disable=g-import-not-at-top
  lapack._lapack.initialize()  # pylint: disable=protected-access


def threefry2x32_p() -> core.Primitive:
  """JAX's ``threefry2x32`` primitive (in ``jax._src.random`` in newer
  releases, as 0.12; ``jax._src.prng`` in older ones, as 0.9)."""
  try:
    from jax._src.random import threefry2x32  # pylint: disable=g-import-not-at-top
    return threefry2x32.threefry2x32_p
  except ImportError:
    from jax._src import prng  # pylint: disable=g-import-not-at-top
    return prng.threefry2x32_p


def keeping_64_bit_types() -> contextlib.AbstractContextManager[object] | None:
  """A context in which lax keeps 64-bit types; None if this JAX has none.

  With ``jax_enable_x64`` any context does; without it, the option
  ``jax_explicit_x64_dtypes="allow"`` (where this JAX has it).
  """
  if config.enable_x64.value:
    return contextlib.nullcontext()
  explicit = getattr(config, "explicit_x64_dtypes", None)
  return None if explicit is None else explicit("allow")


def zero_tangent(x: ArrayLike) -> ad.Zero:
  """A symbolic zero tangent for the primal value `x`."""
  from_primal = getattr(ad.Zero, "from_primal_value", None)
  if from_primal is not None:
    return from_primal(x)
  return ad.Zero(typeof(x).to_tangent_aval())


def under_a_staging_trace() -> bool:
  """Whether values are traced for a jaxpr (``jax.jit``'s,
  ``jax.make_jaxpr``'s), under transformations or not; False eagerly and
  under transformations applied eagerly."""
  return core.unsafe_am_i_under_a_jit()


def transforms_a_staging_trace() -> bool:
  """Whether the current trace transforms (JVP, batching, partial
  evaluation) for a trace that stages out a jaxpr (``jax.jit``'s,
  ``jax.make_jaxpr``'s): ``jax.jit(jax.vmap(jax.grad(f)))`` inside ``f``.
  False eagerly, under transformations applied eagerly, and in a staging
  trace itself (``jax.jit(f)``)."""
  return (not isinstance(core.trace_ctx.trace, pe.DynamicJaxprTrace)
          and core.unsafe_am_i_under_a_jit())


def check() -> list[str]:
  """What this module relies on and cannot find; empty if all is there."""
  missing = []

  def need(ok: bool, what: str) -> None:
    if not ok:
      missing.append(what)

  need(hasattr(core, "typeof") or hasattr(core, "get_aval"),
       "jax._src.core.typeof or get_aval")
  need(hasattr(getattr(core, "trace_ctx", None), "trace"),
       "jax._src.core.trace_ctx.trace")
  need(callable(getattr(core, "unsafe_am_i_under_a_jit", None)),
       "jax._src.core.unsafe_am_i_under_a_jit")
  need(hasattr(util, "register_cache")
       or hasattr(util, "cache_clearing_funs"),
       "jax._src.util.register_cache or cache_clearing_funs")
  need(isinstance(getattr(batching, "fancy_primitive_batchers", None), dict),
       "jax._src.interpreters.batching.fancy_primitive_batchers")
  axis_data = getattr(batching, "AxisData", None)
  need(axis_data is not None and "size" in getattr(
      axis_data, "__dataclass_fields__", getattr(axis_data, "_fields", ())),
       "jax._src.interpreters.batching.AxisData.size")
  for name in ("aval_to_ir_type", "shape_tensor", "refine_polymorphic_shapes",
               "make_ir_context", "module_to_bytecode", "ir_constant",
               "lower_fun", "register_lowering"):
    need(hasattr(mlir, name), f"jax._src.interpreters.mlir.{name}")
  need(hasattr(mlir_extension(), "deserialize_portable_artifact"),
       "jaxlib's mlir.deserialize_portable_artifact")
  from jax._src.lib import lapack  # pylint: disable=g-import-not-at-top
  need(callable(getattr(getattr(lapack, "_lapack", None), "initialize",
                        None)), "jaxlib's lapack._lapack.initialize")
  return missing
