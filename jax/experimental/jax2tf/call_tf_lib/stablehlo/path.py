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
"""``call_tf``'s StableHLO path: a TF function as JAX primitives.

Under ``jax.jit``, ``call_tf`` lowers a TF function with TensorFlow's own XLA
lowering (tf2xla) into a StableHLO module. :func:`lookup` gives that module
expressed as JAX primitives, one ``lax`` operation per StableHLO op
(``jax._src.export.stablehlo_to_jax``, with TF's derivatives at ties,
:mod:`.tf_derivatives`), so that JAX's own rules transform it:

* ``jax.vmap`` batches it (:mod:`..batching.rule`), nested ``vmap``
  included, instead of TensorFlow's vectorizer (pfor). Batching the module
  is exact for any pure function.
* ``jax.jvp``/``jax.vjp`` differentiate it (:mod:`..autodiff.jvp`), but only
  where that gives TensorFlow's gradients (:mod:`.exactness`).

The path is taken for ``vmap_method`` None and ``"vectorized"`` when the
option ``jax_call_tf_vectorizer`` is ``"stablehlo"`` (the default), eagerly
and under a staging trace (``jax.jit``), for a pure function
(:mod:`..tf_function.effects`) without ``call_tf_graph``, that XLA compiles
and whose every op has a rule; eagerly, only where XLA computes what
TensorFlow's kernels do (:mod:`..tf_function.xla_fidelity`). Anything else
keeps pfor and TF's gradients; each such fallback is logged at
debug level with its reason (the ops without a rule, the error of the
compilation). ``vmap_method="pfor"`` and ``jax_call_tf_vectorizer="pfor"``
choose pfor and TF's gradients always.

Captured variables: the module's trailing parameters are the concrete
function's captured inputs, which the call reads, as the lowering does
(:mod:`..tf_function.captures`), every time the call is traced: a variable
assigned between two traces is seen by the second.

See https://github.com/jax-ml/jax/issues/11753.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import functools
import json
import logging
import sys
from typing import TYPE_CHECKING

import jax
from jax._src import config
from jax._src import core
from jax._src import dtypes
from jax._src.export import stablehlo_to_jax
from jax._src.export.transforms import function as module_function
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib.stablehlo import tf_derivatives
from jax.experimental.jax2tf.call_tf_lib.stablehlo import transposable as transposable_lib
from jax.experimental.jax2tf.call_tf_lib.tf_function import captures
from jax.experimental.jax2tf.call_tf_lib.tf_function import compile as compile_lib
from jax.experimental.jax2tf.call_tf_lib.tf_function import effects
from jax.experimental.jax2tf.call_tf_lib.tf_function import graph as graph_lib
from jax.experimental.jax2tf.call_tf_lib.tf_function import persistent_cache
from jax.experimental.jax2tf.call_tf_lib.tf_function import xla_fidelity
from jax.experimental.jax2tf.call_tf_lib import vmap_methods
from jax import numpy as jnp
import numpy as np
import tensorflow as tf

if TYPE_CHECKING:
  from jax import export as jax_export

logger = logging.getLogger(__name__)


def vectorizer(vmap_method: vmap_methods.VmapMethod | None) -> str:
  """What vectorizes (and differentiates) a call with ``vmap_method``.

  Returns:
    ``"pfor"`` for ``vmap_method="pfor"``, or for None and ``"vectorized"``
    with the option ``jax_call_tf_vectorizer="pfor"``; else
    ``"stablehlo"``, which :func:`lookup` may still refuse.
  """
  if vmap_method == vmap_methods.PFOR:
    return vmap_methods.PFOR
  return str(config.call_tf_vectorizer.value)


def may_use(vmap_method: vmap_methods.VmapMethod | None, call_tf_graph: bool,
            ordered: bool = False) -> bool:
  """Whether a call may take the StableHLO path, eagerly or staged.

  Args:
    vmap_method: the call's ``vmap_method``.
    call_tf_graph: the call's ``call_tf_graph`` (TF runs such a function).
    ordered: the call's ``ordered`` (its calls are ordered effects).

  Returns:
    True for ``vmap_method`` None or ``"vectorized"`` with the option at
    ``"stablehlo"``, without ``call_tf_graph`` or ``ordered``. Whether the
    function's module is used is then :func:`lookup`'s answer.
  """
  return (vmap_method in vmap_methods.FOLLOW_VECTORIZER_OPTION
          and not call_tf_graph and not ordered
          and vectorizer(vmap_method) == vmap_methods.STABLEHLO)


@dataclasses.dataclass(frozen=True)
class Refusal:
  """Why a function's module is not used (logged at debug level).

  Attributes:
    reason: what the log says, completing "... not its StableHLO module: ".
  """
  reason: str


@dataclasses.dataclass(frozen=True, eq=False)
class Interpreted:
  """A TF function's StableHLO module as JAX primitives, with call_tf's policy.

  The module as a JAX function is a
  :class:`jax._src.export.transforms.function.ModuleFunction` (the one
  owner of that: refinement, platforms, derivative rules, caches); this
  adds what is TensorFlow's: the captured values the module takes after
  the function's arguments, read at every call, and the derivative
  policy's answers.

  Attributes:
    fun: the module (tf2xla's, for the CPU, which JAX lowers for every
      platform), with TF's derivatives at ties (:mod:`.tf_derivatives`).
    program: the interpreted module
      (:class:`jax._src.export.stablehlo_to_jax.Program`); its parameters
      are the function's arguments, then its captured inputs.
    captured: the captured variables and tensors, read on every call.
    name: the TF function's name, for messages.
    takes_tf_derivatives: whether JAX's derivative of the program is TF's
      gradient of every op that branches or kinks in it
      (:meth:`.tf_derivatives.TfDerivatives.takes_tf_derivatives`).
    surely_transposable: whether the module's ops alone say that JAX
      transposes its derivative (:mod:`.transposable`).
    transposable_key: where the persistent cache keeps
      :attr:`transposable` (None: nowhere).
  """
  fun: module_function.ModuleFunction
  program: stablehlo_to_jax.Program
  captured: tuple[tf.Variable | tf.Tensor, ...]
  name: str
  takes_tf_derivatives: bool = False
  surely_transposable: bool = False
  transposable_key: persistent_cache.Key | None = None

  # The answer of :attr:`transposable`, per ``jax_enable_x64`` mode: JAX
  # transposes a module with 64-bit values inside in one mode, not always
  # in the other.
  _transposable: dict[bool, bool] = dataclasses.field(
      default_factory=dict, init=False, repr=False)

  @property
  def transposable(self) -> bool:
    """Whether JAX can transpose the program's derivative (reverse mode).

    Not through a ``while`` loop or a reduction with a region of its own
    (``reduce``, ``reduce_window``: ``cumprod``, ``cumulative_logsumexp``)
    that tangents flow through: JAX differentiates those forward only; nor,
    without ``jax_enable_x64``, through some ops of 64-bit values inside
    the module. Decided from the module's ops where they are all of the
    kinds JAX transposes (:attr:`surely_transposable`) and 64-bit values
    are 64-bit; else by JAX itself, on shapes: ``jax.vjp`` of the program,
    traced (or as a process decided it before, from the persistent cache),
    once per ``jax_enable_x64`` mode.
    """
    x64 = bool(config.enable_x64.value)
    if x64 not in self._transposable:
      self._transposable[x64] = self._decided_transposable(x64)
    return self._transposable[x64]

  def _decided_transposable(self, x64: bool) -> bool:
    """:attr:`transposable` in the ``jax_enable_x64`` mode ``x64``."""
    if self.surely_transposable and (x64 or not self.program.uses_64_bits):
      return True
    key = self.transposable_key
    if key is not None:
      key = persistent_cache.Key(key.kind, f"{key.text}\nx64 {x64}")
    return persistent_cache.get_or_make(
        key, lambda: b"1" if self._jax_transposes() else b"0") == b"1"

  def _jax_transposes(self) -> bool:
    """:attr:`transposable`, decided by JAX now."""
    in_avals = self.program.in_avals
    nr_args = len(in_avals) - len(self.captured)
    # The captured values as the calls pass them (64-bit ones as words).
    narrowed = [stablehlo_to_jax.narrow_64_bit(np.zeros(a.shape, a.dtype))
                for a in in_avals[nr_args:]]
    wide = tuple(w for _, w in narrowed)
    avals = ([jax.ShapeDtypeStruct(a.shape, a.dtype)
              for a in in_avals[:nr_args]]
             + [jax.ShapeDtypeStruct(v.shape, v.dtype) for v, _ in narrowed])
    # The jax.jit function itself: this probe must not take the replay
    # meant for the first trace of a call (ModuleFunction.jitted).
    fun = self._function(None, wide).fun

    def pullback(*args):
      outs, vjp = jax.vjp(lambda *a: tuple(fun(*a)), *args)
      cts = tuple(
          jnp.zeros(o.shape, o.dtype)
          if dtypes.issubdtype(o.dtype, np.inexact)
          else np.zeros(o.shape, dtypes.float0) for o in outs)
      return vjp(cts)
    try:
      jax.eval_shape(pullback, *avals)
    except Exception:  # pylint: disable=broad-except
      # (JAX's own error: "Reverse-mode differentiation does not work for
      # lax.while_loop", a reduce it cannot transpose.)
      return False
    return True

  def captured_values(self) -> list[np.ndarray]:
    """The current values of the captured inputs (read as the lowering does)."""
    return captures.read_captured_values(self.captured)

  def _function(self, is_batched: tuple[bool, ...] | None,
                wide: tuple[np.dtype | None, ...]
                ) -> module_function.Replayed:
    """The program as one ``jax.jit`` function of (arguments, captured),
    per pattern of batched arguments and of captured values narrowed to
    32-bit words (:meth:`ModuleFunction.jitted`)."""
    return self.fun.jitted(self.program, is_batched, wide)

  def _captured(self) -> tuple[list[np.ndarray],
                               tuple[np.dtype | None, ...]]:
    """The captured values, 64-bit ones as 32-bit words, and their dtypes."""
    pairs = [stablehlo_to_jax.narrow_64_bit(v)
             for v in self.captured_values()]
    return [v for v, _ in pairs], tuple(w for _, w in pairs)

  def __call__(self, *args: jax.Array) -> list[jax.Array]:
    """The function on JAX values (tracers included): its flat results."""
    captured, wide = self._captured()
    return list(self._function(None, wide)(*args, *captured))

  def vmapped(self, args: Sequence[jax.Array], is_batched: Sequence[bool],
              out_avals: Sequence[core.ShapedArray]) -> list[jax.Array]:
    """The function on a batch: ``jax.vmap`` of the program.

    Args:
      args: the arguments; batched ones carry the batch at axis 0.
      is_batched: which arguments are batched.
      out_avals: the batched results' avals; results are converted to their
        dtypes (as the lowering canonicalizes them).

    Returns:
      The batched results, batch at axis 0.
    """
    captured, wide = self._captured()
    fun = self._function(tuple(is_batched), wide)
    outs = fun(*args, *captured)
    return [fit_result(o, a) for o, a in zip(outs, out_avals)]


def fit_result(result: jax.Array, aval: core.ShapedArray) -> jax.Array:
  """A result of the module as the call's aval has it.

  Converted to the aval's dtype (as the lowering canonicalizes it); and
  where the aval holds no value (a size-0 dimension) but the module's
  result has another shape, an empty array of the aval's shape: tf2xla's
  ``SelfAdjointEigV2`` without ``compute_v`` returns all the vectors, TF's
  graph none (see :mod:`..tf_function.empty`).
  """
  if (core.is_constant_shape(aval.shape) and 0 in aval.shape
      and tuple(result.shape) != tuple(aval.shape)):
    return jnp.zeros(aval.shape, aval.dtype)
  return stablehlo_to_jax.with_dtype(result, aval.dtype)


def _parse(module: _Module, sig: tuple[tf.TensorSpec, ...],
           function_flat_tf: tf.types.experimental.GenericFunction
           ) -> tuple[module_function.ModuleFunction,
                      stablehlo_to_jax.Program] | Refusal:
  """tf2xla's module as a JAX function, read (or why not, for the log).

  Its dots and convolutions at DEFAULT precision (TF's, unless
  TensorFloat-32 is off) follow ``jax_default_matmul_precision``, as the
  same function in ``jnp`` does (a module JAX exported keeps its own
  precisions, as when XLA runs it); its derivatives at ties are TF's, and
  its values a ``StopGradient`` of the graph stops are stopped.
  """
  stops = graph_lib.scanned(function_flat_tf, sig,
                            tf_derivatives.stopped_inputs)
  calls = graph_lib.scanned(function_flat_tf, sig, tf_derivatives.call_sites)
  fun = module_function.ModuleFunction(
      module.copy, _name(function_flat_tf),
      derivatives=tf_derivatives.TfDerivatives(module.op_types, stops,
                                               calls),
      follow_default_precision=True)
  program = fun.program(tuple(tuple(s.shape.as_list()) for s in sig))
  if not isinstance(program, stablehlo_to_jax.Program):
    return Refusal(str(program))
  if program.unsupported:
    return Refusal("its StableHLO module has ops without a JAX rule: "
                   f"{list(program.unsupported)}")
  return fun, program


@dataclasses.dataclass(frozen=True)
class _Module:
  """What the interpreter reads of a TF function's module.

  Attributes:
    op_types: tf2xla's metadata: the TF op type of each location.
    copy: the module, read.
  """
  op_types: dict[str, str]
  copy: stablehlo_to_jax.ModuleCopy


# A TF function's module, read: what is kept on disk, the module as a JAX
# function, and its program for the call's argument shapes.
_Found = tuple[_Module, module_function.ModuleFunction,
               stablehlo_to_jax.Program]


def _converted(function_flat_tf: tf.types.experimental.GenericFunction,
               sig: tuple[tf.TensorSpec, ...], platform: str
               ) -> _Found | Refusal:
  """tf2xla's module of the function, read and interpreted."""
  try:
    hlo = compile_lib.compile_to_hlo(function_flat_tf, sig, platform)
  except Exception as e:  # pylint: disable=broad-except
    return Refusal(
        f"XLA cannot compile it ({type(e).__name__}: "
        f"{str(e).strip().splitlines()[0] if str(e).strip() else ''})")
  try:
    copy = stablehlo_to_jax.read(compat.hlo_to_stablehlo(hlo))
  except Exception as e:  # pylint: disable=broad-except
    return Refusal(
        f"the interpreter failed on its module ({type(e).__name__}: {e})")
  # tf2xla's metadata: the TF op type of each location (TF's derivatives
  # at ties, see .tf_derivatives).
  module = _Module(compat.hlo_op_types(hlo), copy)
  found = _parse(module, sig, function_flat_tf)
  return found if isinstance(found, Refusal) else (module, *found)


def _name(function_flat_tf: tf.types.experimental.GenericFunction) -> str:
  return getattr(function_flat_tf, "__name__", "function")


def module_cache_key(concrete: tf.types.experimental.ConcreteFunction,
                     sig: Sequence[tf.TensorSpec], platform: str, *,
                     kind: str = "module") -> persistent_cache.Key | None:
  """The persistent cache's key of a trace's interpreted module.

  Args:
    concrete: the trace.
    sig: its argument specs.
    platform: "CPU", "GPU" or "TPU".
    kind: "module" (what :class:`_Module` holds), or "transposable" (what
      the program computes decides it: every module of the interpreter's).
  """
  code = [persistent_cache.source_digest(
      sys.modules[__name__], compat, compile_lib, tf_derivatives, captures,
      effects, graph_lib, xla_fidelity, transposable_lib),
          stablehlo_to_jax.source_digest(everything=kind != "module")]
  return persistent_cache.conversion_key(kind, concrete, sig, platform,
                                         code)


def _dumps(module: _Module) -> bytes:
  types = json.dumps(module.op_types, sort_keys=True).encode()
  return (len(types).to_bytes(4, "big") + types
          + stablehlo_to_jax.dumps(module.copy))


def _loads(data: bytes) -> _Module | None:
  """The module :func:`_dumps` wrote, or None (a foreign entry)."""
  size = int.from_bytes(data[:4], "big")
  try:
    op_types = json.loads(data[4:4 + size])
    copy = stablehlo_to_jax.loads(data[4 + size:])
  except (ValueError, RecursionError):  # UnreadableCopy too
    return None
  if not (isinstance(op_types, dict) and all(
      isinstance(k, str) and isinstance(v, str)
      for k, v in op_types.items())):
    return None
  return _Module(op_types, copy)


def _kept_or_converted(
    function_flat_tf: tf.types.experimental.GenericFunction,
    sig: tuple[tf.TensorSpec, ...], platform: str,
    key: persistent_cache.Key | None
) -> _Found | Refusal:
  """The module a process kept for the same graph, or :func:`_converted`.

  A kept module passed :func:`.compile.compile_to_hlo`'s checks when it
  was made: its key is the same graph's.
  """
  cache = persistent_cache.store() if key is not None else None
  kept = cache.get(key) if cache is not None else None
  module = _loads(kept) if kept is not None else None
  if module is not None:
    found = _parse(module, sig, function_flat_tf)
    if not isinstance(found, Refusal):
      return (module, *found)
  made = _converted(function_flat_tf, sig, platform)
  if cache is not None and not isinstance(made, Refusal):
    cache.put(key, _dumps(made[0]))
  return made


@functools.lru_cache(maxsize=256)
def _lookup(function_flat_tf: tf.types.experimental.GenericFunction,
            sig: tuple[tf.TensorSpec, ...],
            platform: str) -> Interpreted | Refusal:
  """:func:`lookup`, cached; the reason for the fallback if it refuses."""
  concrete = graph_lib.concrete_function(function_flat_tf, sig)
  found = _kept_or_converted(function_flat_tf, sig, platform,
                             module_cache_key(concrete, sig, platform))
  if isinstance(found, Refusal):
    return found
  module, fun, program = found
  captured = tuple(captures.captured_objects(concrete))
  if len(program.in_avals) != len(sig) + len(captured):
    return Refusal(
        f"its module takes {len(program.in_avals)} parameters, not "
        f"{len(sig)} arguments and {len(captured)} captured inputs")
  derivatives = fun.derivatives
  assert isinstance(derivatives, tf_derivatives.TfDerivatives)
  return Interpreted(
      fun, program, captured, _name(function_flat_tf),
      derivatives.takes_tf_derivatives(program.derivative_record),
      transposable_lib.surely_transposable(module.copy),
      module_cache_key(concrete, sig, platform, kind="transposable"),
  )


compat.register_cache(_lookup, "call_tf: interpreted StableHLO modules")


def _find(function_flat_tf: tf.types.experimental.GenericFunction,
          sig: tuple[tf.TensorSpec, ...],
          staged: bool, pure: bool) -> Interpreted | Refusal:
  """:func:`lookup`'s module, or the reason why there is none."""
  if not all(s.shape.is_fully_defined() for s in sig):
    return Refusal("its argument shapes are not static")
  if pure and (side_effects := effects.function_side_effect_ops(
      function_flat_tf, sig)):
    return Refusal(f"it has side effects (op {side_effects[0][0]!r})")
  if not staged and (differences := xla_fidelity.function_eager_differences(
      function_flat_tf, sig)):
    return Refusal(
        f"eagerly, TensorFlow's kernels run it: its {differences[0]}")
  return _lookup(function_flat_tf, sig, compile_lib.ENGINE_PLATFORM)


def why_not(function_flat_tf: tf.types.experimental.GenericFunction,
            sig: Sequence[tf.TensorSpec], *, staged: bool,
            pure: bool = True) -> str | None:
  """Why :func:`lookup` gives no module for the function, or None."""
  found = _find(function_flat_tf, tuple(sig), staged, pure)
  return found.reason if isinstance(found, Refusal) else None


def lookup(function_flat_tf: tf.types.experimental.GenericFunction,
           sig: Sequence[tf.TensorSpec], *,
           purpose: str, staged: bool, pure: bool = True
           ) -> Interpreted | None:
  """The TF function's StableHLO module as JAX primitives, or None.

  Args:
    function_flat_tf: the call's ``tf.function`` (a ``call_tf_p`` param).
    sig: its argument specs (static shapes).
    purpose: what the module is for ("jax.vmap", "differentiation"), for
      the debug log.
    staged: whether the call is under a staging trace (``jax.jit``), where
      XLA compiles the function anyway; eagerly, a function that XLA
      computes otherwise than TensorFlow's kernels
      (:func:`.xla_fidelity.eager_differences`) keeps TensorFlow's path.
    pure: whether to refuse a function with side effects (which
      vectorizing or differentiating would run once for many calls); a
      call that is neither, lowered for a platform TensorFlow lacks
      (:mod:`.platforms`), takes the module of such a function too, as
      TensorFlow's own lowering would.

  Returns:
    The interpreted module; None if the function has side effects (where
    ``pure``), XLA cannot compile it, an op of its module has no rule, or
    (eagerly) XLA computes it otherwise than TensorFlow. Each None is logged
    at debug level with its reason.
  """
  found = _find(function_flat_tf, tuple(sig), staged, pure)
  if isinstance(found, Refusal):
    logger.debug("call_tf: %s of %s uses TensorFlow's path (pfor, TF "
                 "gradients), not its StableHLO module: %s", purpose,
                 getattr(function_flat_tf, "__name__", function_flat_tf),
                 found.reason)
    return None
  logger.debug("call_tf: %s of %s uses its StableHLO module, as JAX "
               "primitives", purpose, found.name)
  return found


def exported_program(exported: jax_export.Exported,
                     in_avals: Sequence[core.ShapedArray], *, purpose: str
                     ) -> Callable[..., list[jax.Array]] | None:
  """A ``jax.export.Exported``'s module as JAX primitives, for static shapes.

  For the modules :mod:`.embed` embeds (restored jax2tf functions): the
  module as ``Exported.call``'s transformations read it
  (``jax._src.export.transforms.function.exported_call``, the one
  adapter of an exported module to a JAX function), the branch of the
  platform it runs on for a module exported for several.

  Args:
    exported: the module.
    in_avals: the avals (static shapes) of its operands.
    purpose: what it is for, for the debug log.

  Returns:
    A function of the operands returning the flat results, or None if the
    module cannot be interpreted (logged at debug level, with the reason).
  """
  try:
    found = module_function.exported_call(exported, in_avals, purpose=purpose)
  except ValueError as e:  # refinement: the module's shape constraints
    found = str(e)
  if isinstance(found, str):
    logger.debug("call_tf: %s of %s cannot use its StableHLO module as JAX "
                 "primitives: %s", purpose, exported.fun_name, found)
    return None
  return found


def stablehlo_of_tf(function_flat_tf: tf.types.experimental.GenericFunction,
                    specs: Sequence[tf.TensorSpec],
                    platform: str = "CPU") -> bytes:
  """The StableHLO module of a TF function, as call_tf's lowering gets it.

  TensorFlow compiles the function with its XLA lowering (tf2xla) to HLO,
  which jaxlib converts to StableHLO.

  Args:
    function_flat_tf: a ``tf.function`` (call_tf passes its
      ``tf.function(jit_compile=True)`` of the flat function).
    specs: static ``tf.TensorSpec`` of the arguments.
    platform: "CPU", "GPU" or "TPU".

  Returns:
    The module as MLIR bytecode. Its parameters are the arguments, then one
    per value the function captures (see :func:`captured_values`).
  """
  hlo = compile_lib.compile_to_hlo(function_flat_tf, tuple(specs), platform)
  return compat.hlo_to_stablehlo(hlo)


def captured_values(function_flat_tf: tf.types.experimental.GenericFunction,
                    specs: Sequence[tf.TensorSpec]) -> list[np.ndarray]:
  """The values the module's trailing parameters take, as NumPy arrays.

  The concrete function's captured inputs (variables read, tensors), in
  order, as ``call_tf``'s lowering passes them.
  """
  concrete = graph_lib.concrete_function(function_flat_tf, tuple(specs))
  with tf.init_scope():
    return [np.asarray(v) for v in captures.read_captured_values(
        captures.captured_objects(concrete))]
