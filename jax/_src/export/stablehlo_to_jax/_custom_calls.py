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
"""A custom call of a module as itself: its values are the call's, exactly.

``jax.export`` writes the linear algebra of ``lax.linalg`` as custom calls
of the platform's libraries (LAPACK's ``lapack_spotrf_ffi`` on the CPU),
with results that are more than the ``lax`` operation's (info codes, the
untouched triangle of the operand, pivots as LAPACK numbers them). No
``lax`` operation computes those results in every case (a failed
factorization's partial results and info code). :data:`call_p` is the call
itself: its lowering writes the same custom call again, so that its values
are the call's bit for bit, in every case;

* its batching rule writes the call on the batched operands, for targets
  whose kernels treat leading dimensions as a batch (the call JAX writes
  for ``jax.vmap`` of the ``lax`` operation): the batch is the most major
  dimension of every operand and result, the call's layouts extended so;
* its derivative is the ``lax`` operation's, given by the target's rule as
  a function of the call's operands, its results and the operands'
  tangents (:class:`Tangents`): computed from the call's own results, so
  that a decomposition's tangents belong to the very factors it returned
  (an eigenvector's sign is the call's).

A call is described by a :class:`Call`: its target, its attributes as text
(parsed again when it is lowered), its results' types, and how many batch
dimensions were added.

A GPU library's call whose routine is LAPACK's (cuSOLVER's ``potrf`` is
LAPACK's: the same operands, results, info codes and untouched triangle)
is a :class:`Call` of the LAPACK routine with the GPU call as its
:class:`Native` form: on the CPU the call is LAPACK's, on the GPU
platform of its library the module's own call (its results converted to
LAPACK's order where they differ), and on any other platform lowering it
raises :class:`NotImplementedError`, naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import enum
import functools
import re
from typing import Any

import jax
from jax._src import core
from jax._src.export.stablehlo_to_jax import _primitive
from jax._src.export.stablehlo_to_jax import compat
from jax._src.interpreters import ad
from jax._src.interpreters import batching
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax.typing import ArrayLike
import numpy as np

# ``tangents(call, operands, results, operand_tangents)`` -> one tangent per
# result (None where the result has none: integers; NO_DERIVATIVE where the
# lax operation that wrote the call has none); operand tangents are arrays
# (zeros where JAX's are symbolic).
Tangents = Callable[["Call", Sequence[jax.Array], Sequence[jax.Array],
                     Sequence[jax.Array]], Sequence[jax.Array | None]]

# ``transpose(call, cotangents, operands)`` -> one cotangent per operand
# (None where it has none): the transpose of a call linear in the operands
# that are ``ad.UndefinedPrimal`` (the others are known values); a result's
# cotangent is None where it is zero.
Transpose = Callable[["Call", Sequence[Any], Sequence[Any]],
                     Sequence[jax.Array | None]]


class NativeForm(enum.Enum):
  """How a GPU library's call's results differ from LAPACK's (see
  :class:`Native`)."""
  # They are LAPACK's.
  LAPACK = "as LAPACK's"
  # An SVD of the transpose: results 2 and 3 are LAPACK's 3 and 2.
  VECTORS_SWAPPED = "vectors swapped"
  # An SVD whose result 3 is ``V``, LAPACK's the adjoint ``V^H``.
  V = "v"
  # An SVD without vectors: results 2 and 3 are placeholders the module
  # does not read, of other shapes than LAPACK's, zeros.
  NO_VECTORS = "no vectors"
  # An older call the interpreter computes on the CPU only.
  CPU_ONLY = "cpu only"


@dataclasses.dataclass(frozen=True)
class Native:
  """A GPU library's call that a :class:`Call` of LAPACK's routine stands
  for: on its platform, the call itself is written.

  Attributes:
    target: the module's ``call_target_name``.
    attributes: its attributes as MLIR prints them.
    platform: the platform its library runs on (``"cuda"``, ``"rocm"``).
    results: its results' shapes and dtypes, unbatched.
    form: how its results differ from LAPACK's.
  """
  target: str
  attributes: tuple[tuple[str, str], ...]
  platform: str
  results: tuple[tuple[tuple[int, ...], np.dtype], ...]
  form: NativeForm = NativeForm.LAPACK


@dataclasses.dataclass(frozen=True)
class Call:
  """A custom call, as the module writes it, and its batch.

  Attributes:
    target: its ``call_target_name``.
    attributes: its attributes as MLIR prints them, ``((name, text), ...)``.
    results: each result's shape and dtype, unbatched.
    batch: the sizes of the batch dimensions added before every operand's
      and result's (the most major ones).
    tangents: the derivative of the ``lax`` operation that wrote the call,
      or None where JAX has none.
    no_derivative: why it has none, for the error (with ``tangents`` None).
    batchable: whether the target's kernel treats leading dimensions as a
      batch.
    leading: how many leading operands the call itself does not take: the
      values its derivative is taken with respect to (a fused call: the
      matrix whose factors the call combines).
    transpose: for a call linear in some operands (a solve, in its
      right-hand side), the transpose of the linear map, or None.
    live: for each result, whether the module uses it: a result whose
      derivative the target's rule does not know (:data:`NO_DERIVATIVE`)
      refuses a derivative if it is used, and has none if not.
    native: the GPU library's call this call of a LAPACK routine stands
      for, written instead on its platform; None for a call written as
      itself everywhere.
  """
  target: str
  attributes: tuple[tuple[str, str], ...]
  results: tuple[tuple[tuple[int, ...], np.dtype], ...]
  batch: tuple[int, ...] = ()
  tangents: Tangents | None = None
  no_derivative: str = ""
  batchable: bool = True
  leading: int = 0
  live: tuple[bool, ...] = ()
  transpose: Transpose | None = None
  native: Native | None = None

  @property
  def name(self) -> str:
    """The call as the module names it, for messages."""
    if self.native is None:
      return repr(self.target)
    return f"{self.native.target!r} (as LAPACK's {self.target!r})"

  def attribute(self, name: str) -> str | None:
    return dict(self.attributes).get(name)

  def batched(self, size: int) -> Call:
    return dataclasses.replace(self, batch=(size, *self.batch))

  @property
  def out_avals(self) -> list[core.ShapedArray]:
    return [core.ShapedArray((*self.batch, *shape), dtype)
            for shape, dtype in self.results]


class _NoDerivative:
  """A result's tangent where JAX has no derivative of it."""

  def __repr__(self) -> str:
    return "NO_DERIVATIVE"


NO_DERIVATIVE = _NoDerivative()


def apply(call: Call, *operands: ArrayLike) -> list[jax.Array]:
  """The custom call `call` of `operands`: its results."""
  return call_p.bind(*operands, call=call)


def _abstract_eval(*operands, call: Call):
  del operands
  return call.out_avals


_LAYOUT = re.compile(r"dense<(\[[^\]]*\]|\d*)>\s*:\s*tensor<\d*xindex>")


def _batched_layouts_text(text: str, added: int) -> str:
  """``operand_layouts``/``result_layouts`` with `added` batch dimensions,
  each the most major (``[0, 1]`` becomes ``[1, 2, 0]`` for one)."""
  def extend(match: re.Match[str]) -> str:
    body = match.group(1)
    if body.startswith("["):
      dims = [int(d) for d in body[1:-1].split(",") if d.strip()]
    else:
      dims = [int(body)] if body else []
    new = [d + added for d in dims] + list(range(added - 1, -1, -1))
    return f"dense<{new}> : tensor<{len(new)}xindex>"
  return _LAYOUT.sub(extend, text)


_NUM_BATCH_DIMS = re.compile(r'num_batch_dims = "(\d+)"')
_NUM_BATCH_DIMS_ONLY = re.compile(r'\{\s*num_batch_dims = "\d+"\s*\}')


def _batched_attributes(call: Call) -> dict[str, str]:
  """The call's attributes for its batched operands."""
  added = len(call.batch)
  out = {}
  for name, text in call.attributes:
    if added and name in ("operand_layouts", "result_layouts"):
      text = _batched_layouts_text(text, added)
    elif added and name == "mhlo.frontend_attributes":
      text = _NUM_BATCH_DIMS.sub(
          lambda m: f'num_batch_dims = "{int(m.group(1)) + added}"', text)
    elif added and name == "sdy.sharding_rule":
      continue  # (a rule for the unbatched ranks; one device needs none)
    out[name] = text
  return out


def _write(ctx, operands, target_call: Call, avals,
           unbatched: Sequence[int] = ()) -> list[ir.Value]:
  """The custom call `target_call` of `operands`; the results `unbatched`
  keep their unbatched layout (placeholders a kernel does not write)."""
  texts = _batched_attributes(target_call)
  if unbatched and "result_layouts" in texts:
    old = [m.group(0) for m in _LAYOUT.finditer(
        dict(target_call.attributes)["result_layouts"])]
    new = [m.group(0) for m in _LAYOUT.finditer(texts["result_layouts"])]
    texts["result_layouts"] = "[" + ", ".join(
        old[i] if i in unbatched else t for i, t in enumerate(new)) + "]"
  operands = list(operands)
  if not all(core.is_constant_shape(a.shape) for a in avals):
    operands += _shape_operands(ctx, texts, len(operands), avals)
  attributes = {name: ir.Attribute.parse(text)
                for name, text in texts.items()}
  results = [compat.aval_to_ir_type(ctx.module_context, a) for a in avals]
  op = ir.Operation.create("stablehlo.custom_call", results=results,
                           operands=operands, attributes=attributes)
  return list(op.results)


def _shape_operands(ctx, texts: dict[str, str], nr_operands: int,
                    avals: Sequence[core.ShapedArray]) -> list[ir.Value]:
  """For results of symbolic shapes (a symbolic batch), what JAX's own
  lowering of a call writes (``jax.ffi``'s): each result's shape as one
  more operand, ``indices_of_shape_operands`` naming them, so that shape
  refinement gives the results the shapes it gives their operands.
  `texts` (the attributes) gets the index and the operands' layouts, and
  loses the batch's ``num_batch_dims``, as JAX's has none there."""
  shapes = [compat.shape_tensor(
      ctx.module_context, mlir.eval_dynamic_shape_as_ivals(ctx, a.shape))
            for a in avals]
  if _NUM_BATCH_DIMS_ONLY.fullmatch(texts.get("mhlo.frontend_attributes",
                                               "")):
    del texts["mhlo.frontend_attributes"]
  indices = list(range(nr_operands, nr_operands + len(shapes)))
  texts["indices_of_shape_operands"] = (
      f"dense<{indices}> : tensor<{len(indices)}xi64>")
  if "operand_layouts" in texts:
    layouts = [m.group(0) for m in _LAYOUT.finditer(texts["operand_layouts"])]
    layouts += ["dense<0> : tensor<1xindex>"] * len(shapes)
    texts["operand_layouts"] = "[" + ", ".join(layouts) + "]"
  return shapes


def _lower(ctx, *operands, call: Call):
  if call.target.startswith("lapack_"):
    compat.initialize_lapack()
  return _write(ctx, operands[call.leading:], call, ctx.avals_out)


def _lower_off_cpu(ctx, *operands, call: Call, platform: str):
  """On a platform other than the CPU: a GPU library's call on its own
  platform, as itself; a LAPACK routine that stands for one elsewhere
  refused (the CPU's calls written as themselves, as on the CPU)."""
  native = call.native
  if native is None:
    return _lower(ctx, *operands, call=call)
  if native.form is NativeForm.CPU_ONLY:
    raise NotImplementedError(
        f"The custom call {native.target!r} on {platform}: the interpreter "
        f"computes this older call on the CPU only (as LAPACK's "
        f"{call.target!r})")
  if native.platform != platform:
    raise NotImplementedError(
        f"The custom call {native.target!r} on {platform}: it is a "
        f"{native.platform} library's call, which the interpreter computes "
        f"on the CPU (as LAPACK's {call.target!r}) and on {native.platform} "
        "(as itself), not on other platforms")
  as_native = dataclasses.replace(call, target=native.target,
                                  attributes=native.attributes)
  # (An SVD without vectors has scalar placeholders, which JAX's lowering
  # does not batch.)
  unbatched = [i for i in (2, 3) if native.form is NativeForm.NO_VECTORS
               and not native.results[i][0]]
  avals = [core.ShapedArray(
      (*([] if i in unbatched else call.batch), *shape), dtype)
           for i, (shape, dtype) in enumerate(native.results)]
  results = _write(ctx, operands[call.leading:], as_native, avals, unbatched)
  if native.form is NativeForm.VECTORS_SWAPPED:
    results[2], results[3] = results[3], results[2]
  elif native.form is NativeForm.V:
    results[3] = _adjoint(results[3], avals[3])
  elif native.form is NativeForm.NO_VECTORS:  # (placeholders the kernel leaves)
    for i in (2, 3):
      results[i] = mlir.full_like_aval(ctx, 0, ctx.avals_out[i])
  elif native.form is not NativeForm.LAPACK:
    raise AssertionError(native.form)
  return results


def _adjoint(x: ir.Value, aval: core.ShapedArray) -> ir.Value:
  """The conjugate transpose of the matrices `x` (of type `aval`)."""
  from jax._src.lib.mlir.dialects import hlo  # pylint: disable=g-import-not-at-top
  nb = aval.ndim - 2
  x = hlo.transpose(x, mlir.dense_int_array((*range(nb), nb + 1, nb)))
  if np.issubdtype(aval.dtype, np.complexfloating):
    x = hlo.complex(hlo.real(x), hlo.negate(hlo.imag(x)))
  return x


def _batch(args, dims, *, call: Call):
  if not call.batchable:
    raise NotImplementedError(
        f"jax.vmap of the custom call {call.name}: its kernel does not "
        "take a batch")
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
  moved = [batching.bdim_at_front(a, d, size) for a, d in zip(args, dims)]
  return call_p.bind(*moved, call=call.batched(size)), [0] * len(
      call.results)


def _instantiate(primal: jax.Array, tangent: jax.Array | ad.Zero
                 ) -> jax.Array:
  if type(tangent) is ad.Zero:  # pylint: disable=unidiomatic-typecheck
    return jax.numpy.zeros(primal.shape, primal.dtype)
  return tangent


def _jvp(primals, tangents, *, call: Call):
  results = call_p.bind(*primals, call=call)
  if all(type(t) is ad.Zero for t in tangents):  # pylint: disable=unidiomatic-typecheck
    return results, [compat.zero_tangent(r) for r in results]
  if call.tangents is None:
    raise NotImplementedError(
        f"Differentiation of the custom call {call.name}: "
        f"{call.no_derivative or 'JAX has no derivative of it'}.")
  operand_tangents = [_instantiate(p, t) for p, t in zip(primals, tangents)]
  out = call.tangents(call, primals, results, operand_tangents)
  return results, [_tangent(call, i, r, t)
                   for i, (r, t) in enumerate(zip(results, out))]


def _tangent(call: Call, i: int, result: jax.Array,
             tangent: jax.Array | _NoDerivative | None
             ) -> jax.Array | ad.Zero:
  if tangent is None:
    return compat.zero_tangent(result)
  if tangent is NO_DERIVATIVE:
    if not call.live or call.live[i]:
      raise NotImplementedError(
          f"Differentiation of result {i} of the custom call "
          f"{call.name}: {call.no_derivative or 'JAX has no derivative of it'}.")
    return compat.zero_tangent(result)  # (the module does not use it)
  return tangent


def _transpose(cts, *operands, call: Call):
  if call.transpose is None:
    raise NotImplementedError(
        f"Transposing the custom call {call.name}: it is not linear in "
        "its operands")
  cts = [None if type(ct) is ad.Zero else ct for ct in cts]  # pylint: disable=unidiomatic-typecheck
  if all(ct is None for ct in cts):
    return [None] * len(operands)
  return list(call.transpose(call, cts, operands))


call_p = _primitive.op_primitive(
    "stablehlo_custom_call", abstract_eval=_abstract_eval, lower=_lower,
    batch=_batch, jvp=_jvp, transpose=_transpose, multiple_results=True,
    platform_lowerings={
        platform: functools.partial(_lower_off_cpu, platform=platform)
        for platform in ("cuda", "rocm", "tpu")})
