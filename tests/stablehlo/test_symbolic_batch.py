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
"""Symbolic batch sizes through everything the engine writes itself.

``jax.export`` of ``jax.jit(jax.vmap(...))`` with a symbolic batch size
``c``, serialized, deserialized and called with batches of 1 and 3 (and of
0: refused by ``jax.export``'s own check that ``c >= 1``, as a native
export is), and nested (``vmap`` of ``vmap``, two symbolic sizes):

* every real exported program of :mod:`tests.export.families`, through
  ``Exported.call``, against ``jax.vmap`` of the original function;
* a module for each rule that writes an op itself (``_as_op``, ``_sort``,
  ``_rng``, ``_barrier``, ``_chlo``, ``_annotations``,
  ``_shape_operands``) and for the bitcast between types of different
  widths (composed: JAX's own lowering of it cannot be refined under a
  symbolic batch), against a loop of the module, and under static
  batches of 0 and 1;
* every module of JAX's back-compat test data that one device runs here
  (:mod:`.backcompat`), against the engine's static batch of it (the one
  whose bitcasts change widths with batches of 1 and 3 and nested, against
  a loop of it and its recorded results).

The default run takes a representative of each path (the full run,
``--full-run``, every program and module).

Their custom calls declare what JAX's own lowering declares under a
symbolic batch (each result's shape an operand): checked call by call
against JAX's own for the CPU, CUDA and ROCm in
``tests/stablehlo/test_gpu_calls.py``. No TensorFlow.
"""

from __future__ import annotations

import jax
from jax import export
from jax._src import config
from jax._src.export import stablehlo_to_jax as s2j
from jax._src.export.transforms import exported as exported_api
import ml_dtypes
import numpy as np
import pytest

from . import backcompat
from ..export.families import FAMILIES
from ..export.util import assert_close

pytestmark = [
    pytest.mark.skipif(bool(exported_api.pieces_missing()),
                       reason="this jax's jax.export lacks "
                       f"{exported_api.pieces_missing()}"),
    pytest.mark.skipif(not jax.__version__.startswith("0.12"),
                       reason="older releases' jax writes older LAPACK "
                       "targets, refused by name")]

# jax.export's own refusal of a batch of 0 for a symbolic size.
_AT_LEAST_ONE = "Expected value >= 1 for dimension variable 'c'"


def _roundtrip(fun, *specs):
  return export.deserialize(export.export(jax.jit(fun))(*specs).serialize())


def _specs(args, batch):
  return [jax.ShapeDtypeStruct((*batch, *np.shape(a)), np.asarray(a).dtype)
          for a in args]



# --------------------------------------------------------------------------
# The real exported programs, through Exported.call.
# --------------------------------------------------------------------------

# The default run's: LAPACK calls of one, two and several results (every
# call writes its shapes by one function) and a sort; the full run all.
_DEFAULT_FAMILIES = ("cholesky", "svd", "qr", "sort")


@pytest.mark.parametrize("family", [
    pytest.param(f, marks=() if f in _DEFAULT_FAMILIES
                 else pytest.mark.full_run) for f in FAMILIES])
def test_exported_programs_under_a_symbolic_batch(family):
  fam = FAMILIES[family]
  rng = np.random.default_rng(0)
  c, d = export.symbolic_shape("c, d")
  with config.enable_x64(True):
    x = fam.make(rng)
    ex = _roundtrip(fam.fun, x)
    once = _roundtrip(jax.vmap(ex.call), *_specs([x], (c,)))
    for n in (3, 1):
      xs = np.stack([fam.make(rng) for _ in range(n)])
      assert_close(once.call(xs), jax.jit(jax.vmap(fam.fun))(xs), tol=1e-9)
    with pytest.raises(ValueError, match=_AT_LEAST_ONE):
      once.call(np.zeros((0, *x.shape)))
    twice = _roundtrip(jax.vmap(jax.vmap(ex.call)), *_specs([x], (c, d)))
    xs = np.stack([fam.make(rng) for _ in range(6)]).reshape(3, 2, *x.shape)
    assert_close(twice.call(xs), jax.jit(jax.vmap(jax.vmap(fam.fun)))(xs),
                 tol=1e-9)


# --------------------------------------------------------------------------
# Each rule that writes an op itself, on a module of its op.
# --------------------------------------------------------------------------

def _module(args: str, results: str, body: str) -> str:
  return (f"module {{\nfunc.func public @main({args}) -> ({results}) {{\n"
          f"{body}\n}}\n}}\n")


_rng = np.random.default_rng(1)


def _normal(shape, dtype=np.float32):
  x = _rng.standard_normal((3, 2, *shape))
  if np.issubdtype(dtype, np.complexfloating):
    x = x + 1j * _rng.standard_normal((3, 2, *shape))
  return x.astype(dtype)


# name: (module, a batch of (3, 2) of each argument)
_MODULES = {
    "_as_op: cosine, abs, maximum of complex": (_module(
        "%a: tensor<4xcomplex<f32>>, %b: tensor<4xcomplex<f32>>",
        "tensor<4xcomplex<f32>>, tensor<4xf32>, tensor<4xcomplex<f32>>", """
  %0 = stablehlo.cosine %a : tensor<4xcomplex<f32>>
  %1 = stablehlo.abs %a : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %2 = stablehlo.maximum %a, %b : tensor<4xcomplex<f32>>
  return %0, %1, %2 : tensor<4xcomplex<f32>>, tensor<4xf32>, tensor<4xcomplex<f32>>"""),
        [_normal((4,), np.complex64), _normal((4,), np.complex64)]),
    "_as_op: logistic of bfloat16, convert to booleans, chlo.erf": (_module(
        "%a: tensor<5xbf16>, %b: tensor<5xf32>",
        "tensor<5xbf16>, tensor<5xi1>, tensor<5xf32>", """
  %0 = stablehlo.logistic %a : tensor<5xbf16>
  %1 = stablehlo.convert %b : (tensor<5xf32>) -> tensor<5xi1>
  %2 = chlo.erf %b : tensor<5xf32> -> tensor<5xf32>
  return %0, %1, %2 : tensor<5xbf16>, tensor<5xi1>, tensor<5xf32>"""),
        [_normal((5,)).astype(jax.numpy.bfloat16),
         np.round(_normal((5,)))]),
    "_sort: two operands, a comparator": (_module(
        "%a: tensor<6xf32>, %b: tensor<6xi32>",
        "tensor<6xf32>, tensor<6xi32>", """
  %0:2 = "stablehlo.sort"(%a, %b) <{dimension = 0 : i64, is_stable = false}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>, %i: tensor<i32>, %j: tensor<i32>):
    %lt = stablehlo.compare GT, %x, %y, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<6xf32>, tensor<6xi32>) -> (tensor<6xf32>, tensor<6xi32>)
  return %0#0, %0#1 : tensor<6xf32>, tensor<6xi32>"""),
        [np.round(_normal((6,))),
         np.broadcast_to(np.arange(6, dtype=np.int32), (3, 2, 6)).copy()]),
    "_rng: rng_bit_generator": (_module(
        "%k: tensor<2xui64>", "tensor<2xui64>, tensor<3x4xui32>", """
  %0, %1 = stablehlo.rng_bit_generator %k, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x4xui32>)
  return %0, %1 : tensor<2xui64>, tensor<3x4xui32>"""),
        [np.arange(12, dtype=np.uint64).reshape(3, 2, 2)]),
    "_barrier: optimization_barrier": (_module(
        "%a: tensor<3xf32>, %b: tensor<2xi32>", "tensor<3xf32>, tensor<2xi32>",
        """
  %0:2 = stablehlo.optimization_barrier %a, %b : tensor<3xf32>, tensor<2xi32>
  return %0#0, %0#1 : tensor<3xf32>, tensor<2xi32>"""),
        [_normal((3,)), np.arange(12, dtype=np.int32).reshape(3, 2, 2)]),
    "_chlo: top_k": (_module(
        "%a: tensor<8xf32>", "tensor<3xf32>, tensor<3xi32>", """
  %0:2 = chlo.top_k(%a, k = 3) : tensor<8xf32> -> (tensor<3xf32>, tensor<3xi32>)
  return %0#0, %0#1 : tensor<3xf32>, tensor<3xi32>"""), [_normal((8,))]),
    "_annotations: Sharding": (_module(
        "%a: tensor<4xf32>", "tensor<4xf32>", """
  %0 = stablehlo.custom_call @Sharding(%a) {mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>"""), [_normal((4,))]),
    "_shape_operands: dynamic_broadcast_in_dim of a constant shape": (
        _module("%a: tensor<3xf32>", "tensor<2x3xf32>", """
  %s = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %0 = stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [1] : (tensor<3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>"""), [_normal((3,))]),
    "_rules: bitcast_convert between widths": (_module(
        "%a: tensor<3xf64>, %b: tensor<2x4xui8>, %c: tensor<5x2xi4>",
        "tensor<3x2xui32>, tensor<2xf32>, tensor<5xi8>", """
  %0 = stablehlo.bitcast_convert %a : (tensor<3xf64>) -> tensor<3x2xui32>
  %1 = stablehlo.bitcast_convert %b : (tensor<2x4xui8>) -> tensor<2xf32>
  %2 = stablehlo.bitcast_convert %c : (tensor<5x2xi4>) -> tensor<5xi8>
  return %0, %1, %2 : tensor<3x2xui32>, tensor<2xf32>, tensor<5xi8>"""),
        [_normal((3,), np.float64),
         _rng.integers(0, 256, (3, 2, 2, 4)).astype(np.uint8),
         _rng.integers(-8, 8, (3, 2, 5, 2)).astype(ml_dtypes.int4)]),
}


def _loop(program, batch, dims):
  """The program of each element of a batch of `dims` dimensions."""
  n = np.shape(batch[0])[:dims]
  one = jax.jit(lambda *a: program(*a))
  rows = [one(*[np.asarray(b)[i] for b in batch]) for i in np.ndindex(*n)]
  return [np.stack([np.asarray(r[k]) for r in rows]).reshape(
      *n, *np.shape(rows[0][k])) for k in range(len(rows[0]))]


@pytest.mark.parametrize("name", list(_MODULES))
def test_rules_that_write_their_op_under_every_batch(name):
  text, batch = _MODULES[name]
  c, d = export.symbolic_shape("c, d")
  with config.enable_x64(True):
    program = s2j.parse(text)
    assert not program.unsupported, program.reasons
    run = lambda *a: program(*a)  # noqa: E731
    once = _roundtrip(jax.vmap(run), *_specs([b[0, 0] for b in batch], (c,)))
    got = once.call(*[b[:, 0] for b in batch])
    assert_close(list(got), _loop(program, [b[:, 0] for b in batch], 1), 0.)
    twice = _roundtrip(jax.vmap(jax.vmap(run)),
                       *_specs([b[0, 0] for b in batch], (c, d)))
    assert_close(list(twice.call(*batch)), _loop(program, batch, 2), 0.)
    # (A batch of 0; of 1, symbolic, the programs above have.)
    assert_close(list(jax.jit(jax.vmap(run))(*[b[:0, 0] for b in batch])),
                 [np.asarray(o)[:0] for o in got], 0.)


# --------------------------------------------------------------------------
# JAX's back-compat modules.
# --------------------------------------------------------------------------

def _runs_here(e: backcompat.Entry) -> bool:
  return e.platform in backcompat.RUN_HERE or e.file in backcompat.RUN_HERE


_ENTRIES = [e for e in backcompat.entries() if _runs_here(e)]
_FIRST_OF_FILE = {e.file: e.name for e in reversed(_ENTRIES)}
# The default run's: the first entry of the files that no program above
# has (a GPU library's calls in each form, computed by LAPACK's; the
# lax operations of a TPU's calls; the dynamic ops; placements); the full
# run every entry.
_DEFAULT_FILES = ("cuda_svd_cusolver_gesvd", "rocm_eigh_hipsolver_syev",
                  "cuda_lu_pivots_to_permutation", "tpu_Lu", "tpu_Qr",
                  "stablehlo_dynamic_top_k",
                  "stablehlo_dynamic_approx_top_k",
                  "stablehlo_dynamic_rng_bit_generator",
                  "annotate_data_placement")
# Modules whose bitcasts change the width of their element type (ui32
# pairs to ui64 and back; JAX's own lowering of such a bitcast cannot be
# refined under a symbolic batch, the engine's composition can): batches
# of 1 and 3 and nested, of distinct keys, against a loop of the module
# and the module's recorded results.
_BITCASTS_OF_WIDTHS = {"stablehlo_dynamic_rng_bit_generator"}


def _program_and_inputs(entry: backcompat.Entry):
  program = backcompat._program(entry)  # pylint: disable=protected-access
  if program.unsupported:
    pytest.skip("refused by name (tests/stablehlo/test_backcompat.py)")
  inputs = [np.asarray(x) for x in entry.data["inputs"]]
  if not inputs:
    lifted = backcompat._lifted(entry)  # pylint: disable=protected-access
    if lifted is None:
      pytest.skip("no operands to batch")
    program, inputs = lifted
  return program, inputs


@pytest.mark.parametrize("entry", [
    pytest.param(e.name, marks=() if e.file in _DEFAULT_FILES
                 and _FIRST_OF_FILE[e.file] == e.name
                 else pytest.mark.full_run) for e in _ENTRIES])
def test_backcompat_modules_under_a_symbolic_batch(entry):
  e = next(x for x in _ENTRIES if x.name == entry)
  c, = export.symbolic_shape("c")
  with config.enable_x64(True):
    program, inputs = _program_and_inputs(e)
    run = lambda *a: program(*a)  # noqa: E731
    batch = [np.stack([backcompat._perturbed(x, k) for k in range(3)])  # pylint: disable=protected-access
             for x in inputs]
    if e.file in _BITCASTS_OF_WIDTHS:
      _against_a_loop(e, program, inputs)
      return
    again = _roundtrip(jax.vmap(run), *_specs(inputs, (c,)))
    want = jax.jit(jax.vmap(run))(*batch)
    for got_one, want_one in zip(again.call(*batch), want):
      assert backcompat._same(np.asarray(got_one), np.asarray(want_one))  # pylint: disable=protected-access


def _against_a_loop(e: backcompat.Entry, program, inputs):
  c, d = export.symbolic_shape("c, d")
  run = lambda *a: program(*a)  # noqa: E731
  # (Integers, the keys, too: each element its own bits.)
  batch = [np.stack([backcompat._perturbed(x, k) if np.issubdtype(  # pylint: disable=protected-access
      x.dtype, np.inexact) else x + x.dtype.type(k) for k in range(6)])
           for x in inputs]
  loop = _loop(program, batch, 1)  # (each element by itself)
  assert len({w.tobytes() for w in loop[0]}) == 6  # (each its own bits)
  once = _roundtrip(jax.vmap(run), *_specs(inputs, (c,)))
  for n in (1, 3):
    got = once.call(*[b[:n] for b in batch])
    assert_close(list(got), [w[:n] for w in loop], 0.)
  for got_one, want in zip(got, e.data["expected_outputs"]):
    assert backcompat._same(np.asarray(got_one)[0], want)  # pylint: disable=protected-access
  twice = _roundtrip(jax.vmap(jax.vmap(run)), *_specs(inputs, (c, d)))
  nested = [b.reshape(3, 2, *b.shape[1:]) for b in batch]
  assert_close(list(twice.call(*nested)),
               [w.reshape(3, 2, *w.shape[1:]) for w in loop], 0.)
