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
"""The StableHLO interpreter on hand-written modules: corners of op semantics.

Each module is run by XLA directly (tests/stablehlo/xla.py) and by the
interpreter (``Program.__call__``: lax operations), eagerly and under jit,
and the results compared; for some, ``jax.vmap`` too. No TensorFlow.
"""

from __future__ import annotations

import functools

import jax
from jax._src import config
from jax._src import core
from jax._src.export import stablehlo_to_jax as s2j
from jax._src.export.stablehlo_to_jax import _interpret
from jax._src.export.stablehlo_to_jax import _ir
import numpy as np
import pytest

from ..export.util import assert_close
from .xla import xla_function

_rng = np.random.default_rng(0)


def _f(*shape, dtype=np.float32):
  """A maker of random arrays of `shape`."""
  return lambda: np.asarray(_rng.standard_normal(shape), dtype)


# Hand-written modules: corners of op semantics that TF rarely emits.

def _module(body: str) -> str:
  return "module {\n" + body + "\n}\n"


def _check_module(text: str, *args, tol: float = 0.):
  prog = s2j.parse(text)
  assert not prog.unsupported, prog.reasons
  expected = xla_function(text, prog)(*args)
  assert_close(jax.jit(prog)(*args), expected, tol)
  assert_close(prog(*args), expected, tol)
  return prog, expected


_SPECIAL = np.array([-0., 0., np.nan, -np.nan, 1., -np.inf, np.inf, -1., 0.,
                     -0.], np.float32)


def test_total_order_compares():
  ops = "\n".join(
      f"    %{d.lower()} = stablehlo.compare {d}, %x, %y, TOTALORDER : "
      "(tensor<10xf32>, tensor<10xf32>) -> tensor<10xi1>"
      for d in ("EQ", "NE", "LT", "LE", "GT", "GE"))
  text = _module(f"""
  func.func @main(%x: tensor<10xf32>, %y: tensor<10xf32>) -> (tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>) {{
{ops}
    return %eq, %ne, %lt, %le, %gt, %ge : tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>
  }}""")
  _check_module(text, _SPECIAL, _SPECIAL[::-1].copy())


@pytest.mark.parametrize("direction,swapped", [("LT", False), ("GT", False),
                                               ("LT", True), ("GT", True)])
def test_sort_total_order_with_signed_zeros_and_nans(direction, swapped):
  args = "%a0, %a1" if not swapped else "%a1, %a0"
  text = _module(f"""
  func.func @main(%x: tensor<10xf32>) -> (tensor<10xf32>, tensor<10xi32>) {{
    %i = stablehlo.iota dim = 0 : tensor<10xi32>
    %s:2 = "stablehlo.sort"(%x, %i) <{{dimension = 0 : i64, is_stable = true}}> ({{
    ^bb0(%a0: tensor<f32>, %a1: tensor<f32>, %b0: tensor<i32>, %b1: tensor<i32>):
      %c = stablehlo.compare {direction}, {args}, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }}) : (tensor<10xf32>, tensor<10xi32>) -> (tensor<10xf32>, tensor<10xi32>)
    return %s#0, %s#1 : tensor<10xf32>, tensor<10xi32>
  }}""")
  prog, expected = _check_module(text, _SPECIAL)
  # Bit for bit: -0 before +0, -NaN first, NaN last (ascending).
  got = np.asarray(jax.jit(prog)(_SPECIAL)[0])
  np.testing.assert_array_equal(got.view(np.int32),
                                np.asarray(expected[0]).view(np.int32))


def _unstable_sort_module(returns: str) -> str:
  """An unstable sort of keys with two payloads; `returns` what main returns."""
  return _module(f"""
  func.func @main(%k: tensor<40xf32>, %y: tensor<40xf32>) -> (tensor<40xf32>, tensor<40xf32>, tensor<40xi32>) {{
    %i = stablehlo.iota dim = 0 : tensor<40xi32>
    %s:3 = "stablehlo.sort"(%k, %y, %i) <{{dimension = 0 : i64, is_stable = false}}> ({{
    ^bb0(%a0: tensor<f32>, %a1: tensor<f32>, %b0: tensor<f32>, %b1: tensor<f32>, %c0: tensor<i32>, %c1: tensor<i32>):
      %c = stablehlo.compare GT, %a0, %a1, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }}) : (tensor<40xf32>, tensor<40xf32>, tensor<40xi32>) -> (tensor<40xf32>, tensor<40xf32>, tensor<40xi32>)
    return {returns} : tensor<40xf32>, tensor<40xf32>, tensor<40xi32>
  }}""")


def _ties(n: int = 40) -> np.ndarray:
  """Keys with many ties (and signed zeros): std::sort's order shows."""
  k = np.arange(n) % 3
  return np.where(k == 0, np.float32(-0.), k).astype(np.float32)


def test_unstable_sort_whose_payloads_are_used_keeps_xlas_order_of_ties():
  # The order of ties is XLA's own (XLA:CPU sorts with std::sort, which
  # keeps no order of ties of more than 16 elements): the sort runs as
  # itself, with its own comparator, and JAX's transformations keep that
  # order: each batch element as the op alone, tangents along the primal's
  # permutation.
  text = _unstable_sort_module("%s#0, %s#1, %s#2")
  keys, y = _ties(), np.arange(40, dtype=np.float32)
  prog, expected = _check_module(text, keys, y)
  perm = np.asarray(expected[2])
  assert not (perm == np.argsort(-keys, kind="stable")).all()  # order shows
  xla = xla_function(text, prog)
  batch = np.stack([keys, keys[::-1], np.zeros(40, np.float32), -keys])
  assert_close(jax.jit(jax.vmap(prog, in_axes=(0, None)))(batch, y),
               [np.stack(o) for o in zip(*[xla(k, y) for k in batch])], 0.)
  # Forward mode: the payload's tangent moves as the payload does.
  t = np.linspace(-1., 1., 40).astype(np.float32)
  _, tangents = jax.jit(lambda k, y, t: jax.jvp(prog, (k, y), (
      jax.numpy.zeros_like(k), t)))(keys, y, t)
  assert_close(tangents[1], xla(keys, t)[1], 0.)
  # Reverse mode (JAX transposes the gather of the JVP), batched too.
  w = np.cos(np.arange(40)).astype(np.float32)
  grad = jax.jit(jax.vmap(jax.grad(lambda k, y: (prog(k, y)[1] * w).sum(),
                                   argnums=(0, 1)), in_axes=(0, None)))
  gk, gy = grad(batch, y)
  assert_close(gk, np.zeros_like(batch), 0.)
  for row, k in zip(np.asarray(gy), batch):
    expected_gy = np.zeros(40, np.float32)
    expected_gy[np.asarray(xla(k, y)[2])] = w
    np.testing.assert_array_equal(row, expected_gy)


@pytest.mark.parametrize("comparator", [
    # A FLOAT comparison (NaN compares false: no strict order).
    """%c = stablehlo.compare LT, %a0, %a1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>""",
    # Ascending by operand 1, ties broken by operand 0 descending.
    """%lt = stablehlo.compare LT, %b0, %b1, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %b0, %b1, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %gt = stablehlo.compare GT, %a0, %a1, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %t = stablehlo.and %eq, %gt : tensor<i1>
      %c = stablehlo.or %lt, %t : tensor<i1>
      stablehlo.return %c : tensor<i1>""",
])
@pytest.mark.parametrize("stable", ["true", "false"])
def test_sorts_with_any_comparator_run_as_the_op_itself(comparator, stable):
  text = _module(f"""
  func.func @main(%x: tensor<4x12xf32>, %y: tensor<4x12xf32>) -> (tensor<4x12xf32>, tensor<4x12xf32>) {{
    %s:2 = "stablehlo.sort"(%x, %y) <{{dimension = 1 : i64, is_stable = {stable}}}> ({{
    ^bb0(%a0: tensor<f32>, %a1: tensor<f32>, %b0: tensor<f32>, %b1: tensor<f32>):
      {comparator}
    }}) : (tensor<4x12xf32>, tensor<4x12xf32>) -> (tensor<4x12xf32>, tensor<4x12xf32>)
    return %s#0, %s#1 : tensor<4x12xf32>, tensor<4x12xf32>
  }}""")
  x = np.resize(_SPECIAL, (4, 12))
  y = np.resize(np.arange(5, dtype=np.float32) % 2, (4, 12))
  prog, _ = _check_module(text, x, y)
  xla = xla_function(text, prog)
  batch = np.stack([x, x[::-1], y])
  want = [np.stack(o) for o in zip(*[xla(b, y) for b in batch])]
  for axis in (0, 2):  # the batch axis before and after the sorted one
    got = jax.jit(jax.vmap(prog, in_axes=(axis, None)))(
        np.moveaxis(batch, 0, axis), y)
    for g, e in zip(got, want):  # NaN bit patterns too
      np.testing.assert_array_equal(np.asarray(g).view(np.int32),
                                    np.asarray(e).view(np.int32))


def _argsort_then_slice(keys: str) -> str:
  """An unstable sort of `keys` with an iota, both sliced: XLA's TopK form."""
  return _module(f"""
  func.func @main(%x: tensor<64xf32>) -> (tensor<8xf32>, tensor<8xi32>) {{
    {keys}
    %i = stablehlo.iota dim = 0 : tensor<64xi32>
    %s:2 = "stablehlo.sort"(%k, %i) <{{dimension = 0 : i64, is_stable = false}}> ({{
    ^bb0(%a0: tensor<f32>, %a1: tensor<f32>, %b0: tensor<i32>, %b1: tensor<i32>):
      %c = stablehlo.compare GT, %a0, %a1, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }}) : (tensor<64xf32>, tensor<64xi32>) -> (tensor<64xf32>, tensor<64xi32>)
    %v = "stablehlo.slice"(%s#0) <{{start_indices = array<i64: 0>, limit_indices = array<i64: 8>, strides = array<i64: 1>}}> : (tensor<64xf32>) -> tensor<8xf32>
    %j = "stablehlo.slice"(%s#1) <{{start_indices = array<i64: 0>, limit_indices = array<i64: 8>, strides = array<i64: 1>}}> : (tensor<64xi32>) -> tensor<8xi32>
    return %v, %j : tensor<8xf32>, tensor<8xi32>
  }}""")


@pytest.mark.parametrize("keys,reason", [
    # XLA rewrites it as TopK (ties by index), but not a JVP's sort, which
    # has one more payload: the transformed program would order ties as
    # std::sort does.
    ("%k = stablehlo.add %x, %x : tensor<64xf32>", "TopK"),
    # XLA constant-folds it, with another order of ties than at run time
    # (as a program run op by op would sort it).
    ("%k = stablehlo.constant dense<1.0> : tensor<64xf32>", "constants"),
])
def test_unstable_sorts_that_xla_sorts_otherwise_are_refused(keys, reason):
  text = _argsort_then_slice(keys)
  prog = s2j.parse(text)
  assert prog.unsupported == ("stablehlo.sort",)
  assert reason in prog.reasons["stablehlo.sort"], prog.reasons
  if reason == "TopK":  # XLA's order, which a std::sort would not give
    x = (np.arange(64) % 2).astype(np.float32)
    np.testing.assert_array_equal(xla_function(text, prog)(x)[1],
                                  np.arange(1, 16, 2))


def test_values_that_may_not_depend_on_the_arguments():
  # Through calls (a parameter is where one call's operand is) and regions
  # (a region's arguments are where its whole op is).
  funcs, _ = _ir.read_module(_module("""
  func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %c = stablehlo.constant dense<2.0> : tensor<4xf32>
    %a = call @f(%x, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b = call @f(%c, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %n = stablehlo.negate %x : tensor<4xf32>
    return %a, %b, %n : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  func.func private @f(%p: tensor<4xf32>, %q: tensor<4xf32>) -> tensor<4xf32> {
    %s = stablehlo.add %p, %q : tensor<4xf32>
    %t = stablehlo.multiply %q, %q : tensor<4xf32>
    return %s : tensor<4xf32>
  }"""))
  names = {}
  for f in funcs.values():
    for v, name in zip(f.body.args, ("p", "q") if f.name == "f" else ("x",)):
      names[name] = v
    for op in f.body.ops:
      if op.results and op.name != "func.call":
        names[f"{f.name}.{op.name.split('.')[-1]}"] = op.results[0]
  constant = _interpret.maybe_constant_values(funcs, "main")
  assert {k for k, v in names.items() if v in constant} == {
      "p", "q", "main.constant", "f.add", "f.multiply"}, names
  # f.add is constant at the second call only: the first call's result is
  # not, the second's is (call results are per call).
  calls = [op for op in funcs["main"].body.ops if op.name == "func.call"]
  assert [op.results[0] in constant for op in calls] == [False, True]


def test_a_comparator_with_64_bit_types_keeps_them_without_x64():
  # The comparator is traced when the sort is lowered, after the program
  # ran: with the module's 64-bit types too (uint32 compared as int64).
  text = _module("""
  func.func @main(%x: tensor<6xui32>, %y: tensor<6xf32>) -> (tensor<6xui32>, tensor<6xf32>) {
    %s:2 = "stablehlo.sort"(%x, %y) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%a0: tensor<ui32>, %a1: tensor<ui32>, %b0: tensor<f32>, %b1: tensor<f32>):
      %w0 = stablehlo.convert %a0 : (tensor<ui32>) -> tensor<i64>
      %w1 = stablehlo.convert %a1 : (tensor<ui32>) -> tensor<i64>
      %m = stablehlo.constant dense<3000000000> : tensor<i64>
      %r0 = stablehlo.remainder %w0, %m : tensor<i64>
      %r1 = stablehlo.remainder %w1, %m : tensor<i64>
      %c = stablehlo.compare LT, %r0, %r1, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }) : (tensor<6xui32>, tensor<6xf32>) -> (tensor<6xui32>, tensor<6xf32>)
    return %s#0, %s#1 : tensor<6xui32>, tensor<6xf32>
  }""")
  x = np.array([3, 2**31 + 5, 1, 4000000000, 2, 0], np.uint32)
  y = np.arange(6, dtype=np.float32)
  prog, expected = _check_module(text, x, y)
  # By x mod 3e9, as int64: 4e9 comes before 2^31 + 5.
  np.testing.assert_array_equal(expected[0], [0, 1, 2, 3, 4000000000,
                                              2**31 + 5])
  assert_close(jax.jit(jax.vmap(prog, in_axes=(None, 0)))(x, np.stack([y, y])),
               [np.stack([e, e]) for e in expected], 0.)


def test_the_comparator_sort_exports_with_symbolic_batch_sizes():
  keys, y = _ties(), np.arange(40, dtype=np.float32)
  prog = s2j.parse(_unstable_sort_module("%s#0, %s#1, %s#2"))

  def loss(k, y):
    return (jax.vmap(prog)(k, y)[1] * y).sum()
  args = [jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 40"),
                               np.float32)] * 2
  exported = jax.export.export(jax.jit(jax.grad(loss, argnums=1)))(*args)
  batch = np.stack([keys, keys[::-1], -keys])
  ys = np.stack([y, y * 2, y + 1])
  assert_close(exported.call(batch, ys), jax.jit(jax.grad(loss, argnums=1))(
      batch, ys), 0.)


def test_a_comparator_that_reads_the_enclosing_function_is_named():
  text = _module("""
  func.func @main(%x: tensor<8xf32>, %p: tensor<f32>) -> tensor<8xf32> {
    %s = "stablehlo.sort"(%x) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%a0: tensor<f32>, %a1: tensor<f32>):
      %d = stablehlo.multiply %a0, %p : tensor<f32>
      %c = stablehlo.compare LT, %d, %a1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }) : (tensor<8xf32>) -> tensor<8xf32>
    return %s : tensor<8xf32>
  }""")
  prog = s2j.parse(text)
  assert prog.unsupported == ("stablehlo.sort",)
  assert "reads 1 values the enclosing function computes at run time" in (
      prog.reasons["stablehlo.sort"])


def test_a_comparator_that_reads_constants_of_the_enclosing_function():
  # jnp.sort's comparator: its constants hoisted out of the region.
  text = _module("""
  func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
    %zero = stablehlo.constant dense<0.0> : tensor<f32>
    %s = "stablehlo.sort"(%x) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%a0: tensor<f32>, %a1: tensor<f32>):
      %e = stablehlo.compare EQ, %a0, %zero, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %d = stablehlo.select %e, %zero, %a0 : tensor<i1>, tensor<f32>
      %c = stablehlo.compare LT, %d, %a1, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }) : (tensor<8xf32>) -> tensor<8xf32>
    return %s : tensor<8xf32>
  }""")
  x = np.array([3., -0., 1., 0., -2., 5., -0., 4.], np.float32)
  prog, _ = _check_module(text, x)
  batch = np.stack([x, x[::-1]])
  assert_close(jax.jit(jax.vmap(prog))(batch)[0],
               np.stack([prog(b)[0] for b in batch]))


@pytest.mark.skipif(not hasattr(jax.lax, "AccuracyMode"),
                    reason="this JAX's lax takes no accuracy")
def test_result_accuracy_is_passed_on():
  text = _module("""
  func.func @main(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
    %y = stablehlo.cbrt %x {result_accuracy = #stablehlo.result_accuracy<atol = 1.0e-1, ulps = 0, mode = #stablehlo.result_accuracy_mode<TOLERANCE>>} : tensor<2x2xf32>
    %z = stablehlo.exponential %y {result_accuracy = #stablehlo.result_accuracy<mode = #stablehlo.result_accuracy_mode<HIGHEST>>} : tensor<2x2xf32>
    return %z : tensor<2x2xf32>
  }""")
  prog, _ = _check_module(text, np.eye(2, dtype=np.float32) + 1)
  lowered = jax.jit(prog).lower(np.eye(2, dtype=np.float32)).as_text()
  assert "TOLERANCE" in lowered and "HIGHEST" in lowered, lowered


def test_unstable_sort_whose_payloads_are_dead_needs_no_order_of_ties():
  # tf.linalg.svd(compute_uv=False) sorts the singular vectors along with
  # the values, and returns only the values: ties of the keys are bitwise
  # equal, so the sorted keys are one answer, and lax.sort gives it.
  keys = _ties()
  prog, _ = _check_module(_unstable_sort_module("%s#0, %s#0, %i"), keys,
                          np.ones(40, np.float32))
  batch = np.stack([keys, keys[::-1] * 2])
  assert_close(jax.jit(jax.vmap(prog, in_axes=(0, None)))(
      batch, np.ones(40, np.float32))[0],
               -np.sort(-batch, axis=1, kind="stable"))


def test_dead_ops_need_no_rule():
  # An op whose results reach no result of the module is not interpreted
  # (no rule needed); one that may have side effects is kept.
  body = """
  func.func @main(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {{
    %r:2 = stablehlo.custom_call @Eigh(%x) {{backend_config = "1,1,4,0.000001"{effect}}} : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>)
    %n = stablehlo.negate %r#0 : tensor<2x2xf32>
    %y = stablehlo.sine %x : tensor<2x2xf32>
    return %{out} : tensor<2x2xf32>
  }}"""
  x = np.eye(2, dtype=np.float32)
  prog, _ = _check_module(_module(body.format(effect="", out="y")), x,
                          tol=1e-6)
  for effect, out in ((", has_side_effect = true", "y"), ("", "n")):
    prog = s2j.parse(_module(body.format(effect=effect, out=out)))
    assert prog.unsupported == ("stablehlo.custom_call @Eigh",)


def test_case_index_out_of_range_runs_the_last_branch():
  text = _module("""
  func.func @main(%i: tensor<i32>, %x: tensor<3xf32>) -> tensor<3xf32> {
    %r = "stablehlo.case"(%i) ({
      stablehlo.return %x : tensor<3xf32>
    }, {
      %n = stablehlo.negate %x : tensor<3xf32>
      stablehlo.return %n : tensor<3xf32>
    }, {
      %m = stablehlo.multiply %x, %x : tensor<3xf32>
      stablehlo.return %m : tensor<3xf32>
    }) : (tensor<i32>) -> tensor<3xf32>
    return %r : tensor<3xf32>
  }""")
  x = np.array([1., -2., 3.], np.float32)
  for i in (-1, 0, 1, 2, 3, 7):
    _check_module(text, np.int32(i), x)
  prog = s2j.parse(text)
  idx = np.array([-2, 0, 1, 2, 5], np.int32)
  assert_close(jax.vmap(prog, in_axes=(0, None))(idx, x),
               [np.stack([xla_function(text, prog)(i, x)[0] for i in idx])])


def test_dynamic_slices_clamp_indices_like_xla():
  text = _module("""
  func.func @main(%x: tensor<5x4xf32>, %i: tensor<i32>, %j: tensor<i64>, %u: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<5x4xf32>) {
    %ii = stablehlo.convert %i : (tensor<i32>) -> tensor<i64>
    %s = stablehlo.dynamic_slice %x, %ii, %j, sizes = [2, 3] : (tensor<5x4xf32>, tensor<i64>, tensor<i64>) -> tensor<2x3xf32>
    %jj = stablehlo.convert %j : (tensor<i64>) -> tensor<i32>
    %d = stablehlo.dynamic_update_slice %x, %u, %i, %jj : (tensor<5x4xf32>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<5x4xf32>
    return %s, %d : tensor<2x3xf32>, tensor<5x4xf32>
  }""")
  x = np.arange(20, dtype=np.float32).reshape(5, 4)
  u = -np.ones((2, 3), np.float32)
  with config.enable_x64(True):
    for i, j in ((-3, 0), (1, -1), (4, 3), (9, 9), (2, 1)):
      _check_module(text, x, np.int32(i), np.int64(j), u)


_BATCH_NORM = """
  func.func @main(%x: tensor<2x2x2xf32>, %scale: tensor<2xf32>, %offset: tensor<2xf32>, %mean: tensor<2xf32>, %variance: tensor<2xf32>, %dy: tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %i = "stablehlo.batch_norm_inference"(%x, %scale, %offset, %mean, %variance) <{epsilon = 0.0 : f32, feature_index = 2 : i64}> : (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2x2xf32>
    %o, %m, %v = "stablehlo.batch_norm_training"(%x, %scale, %offset) <{epsilon = 0.0 : f32, feature_index = 2 : i64}> : (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>)
    %gx, %gs, %go = "stablehlo.batch_norm_grad"(%x, %scale, %mean, %variance, %dy) <{epsilon = 0.0 : f32, feature_index = 2 : i64}> : (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>)
    return %i, %o, %m, %v, %gx, %gs, %go : tensor<2x2x2xf32>, tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>
  }"""


def test_batch_norm_ops_as_the_spec_defines_them():
  # The StableHLO spec's examples of the three ops, then other values, run
  # by XLA and batched against a loop of XLA runs.
  text = _module(_BATCH_NORM)
  x = np.array([[[1., 2.], [3., 4.]], [[3., 4.], [1., 2.]]], np.float32)
  ones = np.ones(2, np.float32)
  args = (x, ones, ones, np.array([2., 3.], np.float32), ones,
          np.full((2, 2, 2), .1, np.float32))
  prog, got = _check_module(text, *args, tol=1e-6)
  inference, output, mean, variance, gx, gscale, goffset = got
  f32 = lambda v: np.array(v, np.float32)
  assert_close(inference, f32([[[0., 0.], [2., 2.]], [[2., 2.], [0., 0.]]]),
               1e-6)
  assert_close(output, inference, 1e-6)
  assert_close([mean, variance], [f32([2., 3.]), f32([1., 1.])], 1e-6)
  assert_close([gx, gscale, goffset],
               [f32(np.zeros((2, 2, 2))), f32([0., 0.]), f32([.4, .4])],
               1e-6)
  rng = np.random.default_rng(4)
  batch = [rng.standard_normal((3, *np.shape(a))).astype(np.float32)
           for a in args]
  batch[4] = np.abs(batch[4]) + .5  # variances
  run = xla_function(text, prog)
  assert_close(jax.jit(jax.vmap(prog))(*batch),
               [np.stack(r) for r in zip(*[run(*a) for a in zip(*batch)])],
               1e-5)


_GATHER = """
  func.func @main(%x: tensor<5x3xf32>, %i: tensor<1x4xi32>) -> tensor<4x3xf32> {
    %g = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 0>, indices_are_sorted = false, slice_sizes = array<i64: 1, 3>}> : (tensor<5x3xf32>, tensor<1x4xi32>) -> tensor<4x3xf32>
    return %g : tensor<4x3xf32>
  }"""


def test_gather_index_vector_dim_first_and_out_of_bounds_clamped():
  text = _module(_GATHER)
  x = np.arange(15, dtype=np.float32).reshape(5, 3)
  i = np.array([[0, 4, -2, 9]], np.int32)
  prog, _ = _check_module(text, x, i)
  # Out-of-bounds rows are clamped, in both directions of AD too.
  g = jax.grad(lambda x: (prog(x, i)[0] * np.arange(1, 13, dtype=np.float32)
                          .reshape(4, 3)).sum())(x)
  expected = np.zeros((5, 3), np.float32)
  for k, r in enumerate([0, 4, 0, 4]):
    expected[r] += np.arange(1, 13, dtype=np.float32).reshape(4, 3)[k]
  assert_close(g, expected)


def test_scatter_drops_out_of_bounds_updates():
  text = _module("""
  func.func @main(%x: tensor<5xf32>, %i: tensor<4x1xi32>, %u: tensor<4xf32>) -> tensor<5xf32> {
    %s = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<5xf32>, tensor<4x1xi32>, tensor<4xf32>) -> tensor<5xf32>
    return %s : tensor<5xf32>
  }""")
  x = np.zeros(5, np.float32)
  i = np.array([[1], [-1], [7], [1]], np.int32)
  u = np.array([1., 2., 3., 4.], np.float32)
  prog, expected = _check_module(text, x, i, u)
  assert_close(expected, [np.array([0., 5., 0., 0., 0.], np.float32)])
  # The dropped updates get no cotangent.
  assert_close(jax.grad(lambda u: prog(x, i, u)[0].sum())(u),
               np.array([1., 0., 0., 1.], np.float32))


def test_convolution_window_reversal_and_dilations():
  text = _module("""
  func.func @main(%x: tensor<1x2x7xf32>, %w: tensor<3x2x3xf32>) -> tensor<1x3x6xf32> {
    %c = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {stride = [2], pad = [[2, 1]], lhs_dilate = [2], rhs_dilate = [2], reverse = [true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x7xf32>, tensor<3x2x3xf32>) -> tensor<1x3x6xf32>
    return %c : tensor<1x3x6xf32>
  }""")
  _check_module(text, _f(1, 2, 7)(), _f(3, 2, 3)(), tol=1e-5)


def test_constants_of_every_kind():
  text = _module("""
  func.func @main() -> (tensor<2xcomplex<f32>>, tensor<3xcomplex<f64>>, tensor<2xbf16>, tensor<2x2xf32>, tensor<3xi1>, tensor<0x3xf32>, tensor<2xf32>, tensor<3xui8>) {
    %a = stablehlo.constant dense<[(1.0, 2.0), (3.0, -4.0)]> : tensor<2xcomplex<f32>>
    %b = stablehlo.constant dense<(1.5, -2.5)> : tensor<3xcomplex<f64>>
    %c = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xbf16>
    %d = stablehlo.constant dense<7.0> : tensor<2x2xf32>
    %e = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
    %f = stablehlo.constant dense<> : tensor<0x3xf32>
    %g = stablehlo.constant dense<[0x7FC00000, 0xFF800000]> : tensor<2xf32>
    %h = stablehlo.constant dense<[1, 255, 3]> : tensor<3xui8>
    return %a, %b, %c, %d, %e, %f, %g, %h : tensor<2xcomplex<f32>>, tensor<3xcomplex<f64>>, tensor<2xbf16>, tensor<2x2xf32>, tensor<3xi1>, tensor<0x3xf32>, tensor<2xf32>, tensor<3xui8>
  }""")
  with config.enable_x64(True):
    _, expected = _check_module(text)
  assert_close(expected[1], np.full(3, 1.5 - 2.5j))


def _bits_equal(got, want):
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype
  np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_complex_to_boolean_by_the_real_part_of_constants_and_eagerly():
  # NumPy's nonzero test counts the imaginary part; the specification (and
  # XLA) convert the real part. A constant, and an eager NumPy operand,
  # took NumPy's path.
  text = _module("""
  func.func @main(%x: tensor<4xcomplex<f32>>) -> (tensor<4xi1>, tensor<4xi1>) {
    %c = stablehlo.constant dense<[(0.0, 1.0), (1.0, 0.0), (0.0, 0x7FC00000), (-0.0, 0x7F800000)]> : tensor<4xcomplex<f32>>
    %a = stablehlo.convert %c : (tensor<4xcomplex<f32>>) -> tensor<4xi1>
    %b = stablehlo.convert %x : (tensor<4xcomplex<f32>>) -> tensor<4xi1>
    return %a, %b : tensor<4xi1>, tensor<4xi1>
  }""")
  x = np.array([0 + 1j, 1, 0 + 2j, -0. + 3j], np.complex64)
  prog, expected = _check_module(text, x)
  np.testing.assert_array_equal(expected[0], [False, True, False, False])
  np.testing.assert_array_equal(prog(x)[1], [False, True, False, False])


def test_complex_constants_keep_infinite_and_nan_parts():
  # re + 1j * im made real((0, inf)) NaN.
  text = _module("""
  func.func @main() -> (tensor<3xcomplex<f64>>, tensor<3xf64>) {
    %c = stablehlo.constant dense<[(0.0, 0x7FF0000000000000), (0x7FF8000000000000, -0.0), (1.5, 0xFFF0000000000000)]> : tensor<3xcomplex<f64>>
    %r = stablehlo.real %c : (tensor<3xcomplex<f64>>) -> tensor<3xf64>
    return %c, %r : tensor<3xcomplex<f64>>, tensor<3xf64>
  }""")
  with config.enable_x64(True):
    prog, expected = _check_module(text)
    for got, want in zip(prog(), expected):
      _bits_equal(got, want)
  np.testing.assert_array_equal(np.asarray(expected[1])[[0, 2]], [0., 1.5])


def test_float8_constants_in_decimal():
  text = _module("""
  func.func @main() -> (tensor<4xf8E4M3FN>, tensor<3xf8E4M3FNUZ>, tensor<3xf4E2M1FN>) {
    %a = stablehlo.constant dense<[1.5, -0.0, 448.0, 0x7F]> : tensor<4xf8E4M3FN>
    %b = stablehlo.constant dense<[0.0078125, -240.0, 0x80]> : tensor<3xf8E4M3FNUZ>
    %c = stablehlo.constant dense<[6.0, -0.5, 1.0]> : tensor<3xf4E2M1FN>
    return %a, %b, %c : tensor<4xf8E4M3FN>, tensor<3xf8E4M3FNUZ>, tensor<3xf4E2M1FN>
  }""")
  prog, expected = _check_module(text)
  for got, want in zip(prog(), expected):
    _bits_equal(got, want)


def test_tuples_calls_and_captured_values_in_regions():
  text = _module("""
  func.func private @square_pair(%a: tensor<3xf32>, %b: tensor<i32>) -> tuple<tensor<3xf32>, tensor<i32>> {
    %m = stablehlo.multiply %a, %a : tensor<3xf32>
    %t = stablehlo.tuple %m, %b : tuple<tensor<3xf32>, tensor<i32>>
    return %t : tuple<tensor<3xf32>, tensor<i32>>
  }
  func.func @main(%x: tensor<3xf32>, %s: tensor<f32>) -> (tensor<3xf32>, tensor<i32>) {
    %zero = stablehlo.constant dense<0> : tensor<i32>
    %w:2 = stablehlo.while(%i = %zero, %y = %x) : tensor<i32>, tensor<3xf32>
     cond {
      %n = stablehlo.constant dense<3> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<3xf32>
      %y1 = stablehlo.add %y, %sb : tensor<3xf32>
      stablehlo.return %i1, %y1 : tensor<i32>, tensor<3xf32>
    }
    %t = func.call @square_pair(%w#1, %w#0) : (tensor<3xf32>, tensor<i32>) -> tuple<tensor<3xf32>, tensor<i32>>
    %e0 = stablehlo.get_tuple_element %t[0] : (tuple<tensor<3xf32>, tensor<i32>>) -> tensor<3xf32>
    %e1 = stablehlo.get_tuple_element %t[1] : (tuple<tensor<3xf32>, tensor<i32>>) -> tensor<i32>
    return %e0, %e1 : tensor<3xf32>, tensor<i32>
  }""")
  x, s = np.array([1., 2., 3.], np.float32), np.float32(.5)
  prog, expected = _check_module(text, x, s, tol=1e-6)
  assert_close(expected, [(x + 1.5) ** 2, np.int32(3)], 1e-6)
  # Forward mode through the loop, w.r.t. the value the body captures.
  _, t = jax.jvp(lambda s: prog(x, s)[0], (s,), (np.float32(1.),))
  assert_close(t, 2 * 3 * (x + 1.5), 1e-5)


def _counted_loop(cond: str, init: str = "0", step: str = "1",
                  ity: str = "i32", update: str = "add %i, %s") -> str:
  """A loop of `y = y * 1.5 + x` whose condition is `cond` of (%i, %n, %y).

  %i starts at `init` and steps by `step` (`update` of %i and %s, the
  step: an add, or a subtract counting down); %n is 5, passed on unchanged.
  """
  return _module(f"""
  func.func private @cond(%i: tensor<{ity}>, %n: tensor<{ity}>, %y: tensor<3xf32>) -> tensor<i1> {{
    {cond}
  }}
  func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<{ity}>) {{
    %i0 = stablehlo.constant dense<{init}> : tensor<{ity}>
    %n0 = stablehlo.constant dense<5> : tensor<{ity}>
    %w:3 = stablehlo.while(%i = %i0, %n = %n0, %y = %x) : tensor<{ity}>, tensor<{ity}>, tensor<3xf32>
     cond {{
      %c = func.call @cond(%i, %n, %y) : (tensor<{ity}>, tensor<{ity}>, tensor<3xf32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }} do {{
      %s = stablehlo.constant dense<{step}> : tensor<{ity}>
      %i1 = stablehlo.{update} : tensor<{ity}>
      %i2 = stablehlo.reshape %i1 : (tensor<{ity}>) -> tensor<{ity}>
      %k = stablehlo.constant dense<1.5> : tensor<3xf32>
      %m = stablehlo.multiply %y, %k : tensor<3xf32>
      %y1 = stablehlo.add %m, %x : tensor<3xf32>
      stablehlo.return %i2, %n, %y1 : tensor<{ity}>, tensor<{ity}>, tensor<3xf32>
    }}
    return %w#2, %w#0 : tensor<3xf32>, tensor<{ity}>
  }}""")


def _compare(direction: str, lhs: str, rhs: str, ctype: str = "SIGNED",
             ity: str = "i32") -> str:
  return (f"%r = stablehlo.compare {direction}, {lhs}, {rhs}, {ctype} : "
          f"(tensor<{ity}>, tensor<{ity}>) -> tensor<i1>\n    "
          "return %r : tensor<i1>")


_THREE = "%t = stablehlo.constant dense<3> : tensor<i32>\n    "


_DOWN = "subtract %i, %s"


@pytest.mark.parametrize("cond,init,step,ity,trips,update", [(*c, _DOWN) for c in [
    # Counters counting down (tf.while_loop(lambda i, y: i > 0, ...) with
    # i - 1).
    ("%z = stablehlo.constant dense<0> : tensor<i32>\n    "
     + _compare("GT", "%i", "%z"), "3", "1", "i32", 3),
    ("%z = stablehlo.constant dense<-4> : tensor<i64>\n    "
     + _compare("GE", "%i", "%z", ity="i64"), "7", "3", "i64", 4),
]] + [(*c, "add %i, %s") for c in [
    (_THREE + _compare("LT", "%i", "%t"), "0", "1", "i32", 3),
    (_compare("LT", "%i", "%n"), "0", "1", "i32", 5),  # a carried bound
    (_compare("GT", "%n", "%i"), "-3", "2", "i32", 4),
    (_compare("LE", "%i", "%n"), "7", "1", "i32", 0),
    (_compare("NE", "%i", "%n", ity="i64"), "11", "-2", "i64", 3),
    # Two counters (tf.map_fn's): both must hold.
    ("%t = stablehlo.constant dense<2> : tensor<i32>\n    "
     "%a = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>)"
     " -> tensor<i1>\n    %b = stablehlo.compare LT, %t, %n, SIGNED : "
     "(tensor<i32>, tensor<i32>) -> tensor<i1>\n    %r = stablehlo.and %a,"
     " %b : tensor<i1>\n    return %r : tensor<i1>", "0", "1", "i32", 5),
    # Wrapping around like XLA's integers: 126, 127, -128 (stops).
    ("%z = stablehlo.constant dense<0> : tensor<i8>\n    "
     + _compare("GT", "%i", "%z", ity="i8"), "126", "1", "i8", 2),
]])
def test_loops_with_a_fixed_trip_count_run_as_scans(cond, init, step, ity,
                                                    trips, update):
  text = _counted_loop(cond, init, step, ity, update)
  x = np.array([.5, -1., 2.], np.float32)
  with config.enable_x64(True):
    prog, expected = _check_module(text, x, tol=1e-6)
    jaxpr = jax.make_jaxpr(prog)(x)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns
            if e.primitive.name in ("scan", "while")] == ["scan"]
    assert next(e for e in jaxpr.jaxpr.eqns
                if e.primitive.name == "scan").params["length"] == trips
    y = x
    for _ in range(trips):
      y = y * np.float32(1.5) + x
    assert_close(expected[0], y, 1e-6)
    # Reverse mode: d/dx of sum(y) = sum of 1.5^k, k <= trips.
    grad = jax.jit(jax.grad(lambda x: prog(x)[0].sum()))(x)
    assert_close(grad, np.full(3, sum(1.5 ** k for k in range(trips + 1)),
                               np.float32), 1e-6)


@pytest.mark.parametrize("cond", [
    # It reads the data.
    "%r0 = stablehlo.constant dense<true> : tensor<i1>\n    "
    "%s = stablehlo.reduce(%y init: %z) applies stablehlo.add across "
    "dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>\n    "
    "%r = stablehlo.compare LT, %s, %z : (tensor<f32>, tensor<f32>) -> "
    "tensor<i1>\n    return %r : tensor<i1>",
    # An op the evaluator does not know.
    "%one = stablehlo.constant dense<1> : tensor<i32>\n    "
    "%s = stablehlo.shift_left %i, %one : tensor<i32>\n    "
    + _compare("LT", "%s", "%n"),
])
def test_loops_whose_trip_count_may_depend_on_data_stay_while_loops(cond):
  cond = "%z = stablehlo.constant dense<10.0> : tensor<f32>\n    " + cond
  text = _counted_loop(cond)
  x = np.array([.5, 1., 2.], np.float32)
  prog, _ = _check_module(text, x, tol=1e-5)
  assert "while" in [e.primitive.name
                     for e in jax.make_jaxpr(prog)(x).jaxpr.eqns]


def test_a_value_the_body_subtracts_from_a_constant_is_no_counter():
  # i = 1 - i alternates 0 and 1 (not a counter): a condition on it is not
  # known now, and the loop stays a while_loop (it ends on the data).
  text = _counted_loop(
      "%one = stablehlo.constant dense<1> : tensor<i32>\n    "
      "%a = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, "
      "tensor<i32>) -> tensor<i1>\n    %z = stablehlo.constant "
      "dense<10.0> : tensor<f32>\n    %s = stablehlo.reduce(%y init: %z) "
      "applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, "
      "tensor<f32>) -> tensor<f32>\n    %b = stablehlo.compare LT, %s, %z "
      ": (tensor<f32>, tensor<f32>) -> tensor<i1>\n    %r = stablehlo.and "
      "%a, %b : tensor<i1>\n    return %r : tensor<i1>",
      update="subtract %s, %i")
  x = np.array([.5, 1., 2.], np.float32)
  prog, _ = _check_module(text, x, tol=1e-5)
  assert "while" in [e.primitive.name
                     for e in jax.make_jaxpr(prog)(x).jaxpr.eqns]


def test_general_reduce_and_reduce_window_regions():
  text = _module("""
  func.func @main(%x: tensor<4x6xf32>) -> (tensor<4xf32>, tensor<4x3xf32>) {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %r = stablehlo.reduce(%x init: %z) across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
     reducer(%a: tensor<f32>, %b: tensor<f32>) {
      %aa = stablehlo.abs %a : tensor<f32>
      %bb = stablehlo.abs %b : tensor<f32>
      %m = stablehlo.maximum %aa, %bb : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }
    %one = stablehlo.constant dense<1.0> : tensor<f32>
    %w = "stablehlo.reduce_window"(%x, %one) <{window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 1, 2>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.multiply %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x3xf32>
    return %r, %w : tensor<4xf32>, tensor<4x3xf32>
  }""")
  x = _f(4, 6)()
  prog, expected = _check_module(text, x, tol=1e-6)
  assert_close(jax.jit(jax.vmap(prog))(np.stack([x, 2 * x])),
               [np.stack([e, 2 * e]) for e in [expected[0]]] +
               [np.stack([expected[1], 4 * expected[1]])], 1e-5)


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_identity_converts_keep_a_sum_transposable(ty):
  # tf2xla wraps every reduction's operand, initial value and result in a
  # convert to the same type; a sum must stay a sum (reduce_sum), which JAX
  # transposes, not a general reduce of a traced zero, which it cannot.
  # Also of 64-bit types (with jax_enable_x64, the constant stays NumPy's).
  text = _module("""
  func.func @main(%x: tensor<4x6xTY>) -> (tensor<4xTY>, tensor<4x6xTY>) {
    %c = stablehlo.convert %x : tensor<4x6xTY>
    %z = stablehlo.constant dense<0.0> : tensor<TY>
    %zc = stablehlo.convert %z : tensor<TY>
    %r = stablehlo.reduce(%c init: %zc) applies stablehlo.add across dimensions = [1] : (tensor<4x6xTY>, tensor<TY>) -> tensor<4xTY>
    %rc = stablehlo.convert %r : tensor<4xTY>
    %s = stablehlo.convert %x : (tensor<4x6xTY>) -> tensor<4x6xf16>
    %t = stablehlo.convert %s : (tensor<4x6xf16>) -> tensor<4x6xTY>
    return %rc, %t : tensor<4xTY>, tensor<4x6xTY>
  }""".replace("TY", ty))
  dtype = {"f32": np.float32, "f64": np.float64}[ty]
  with config.enable_x64(ty == "f64"):
    x = _f(4, 6, dtype=dtype)()
    prog, _ = _check_module(text, x, tol=1e-6)
    jaxpr = jax.make_jaxpr(lambda a: prog(a)[0])(x)
    names = {e.primitive.name for e in jaxpr.eqns}
    assert "reduce_sum" in names and "reduce" not in names, jaxpr
    w = np.arange(4, dtype=dtype)
    assert_close(jax.grad(lambda a: (prog(a)[0] * w).sum())(x),
                 np.broadcast_to(w[:, None], (4, 6)))
    # Converts to another type stay: f32 -> f16 -> f32 rounds.
    assert_close(prog(x)[1], x.astype(np.float16).astype(dtype))


@pytest.mark.parametrize("body,name", [
    ("""%r:2 = stablehlo.custom_call @Eigh(%x) {backend_config = "1,1,4,0.000001"} : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>)
    return %r#0 : tensor<2x2xf32>""", "stablehlo.custom_call @Eigh"),
    ("""%z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = "stablehlo.select_and_scatter"(%x, %x, %z) <{window_dimensions = array<i64: 1, 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }, {
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %c : tensor<f32>
    }) : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
    return %s : tensor<2x2xf32>""", "stablehlo.select_and_scatter"),
    # (cosine of complex numbers is the op itself, _as_op, which takes no
    # accuracy.)
    ("""%c = stablehlo.complex %x, %x : tensor<2x2xcomplex<f32>>
    %y = stablehlo.cosine %c {result_accuracy = #stablehlo.result_accuracy<mode = #stablehlo.result_accuracy_mode<HIGHEST>>} : tensor<2x2xcomplex<f32>>
    %r = stablehlo.real %y : (tensor<2x2xcomplex<f32>>) -> tensor<2x2xf32>
    return %r : tensor<2x2xf32>""", "stablehlo.cosine"),
])
def test_ops_without_an_exact_rule_are_named(body, name):
  text = _module(f"""
  func.func @main(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {{
    {body}
  }}""")
  prog = s2j.parse(text)
  assert prog.unsupported == (name,)
  # The reason quotes the op's assembly (printed only for such modules).
  assert name.split()[0] in prog.reasons[name].split("(in: ", 1)[1], (
      prog.reasons)
  with pytest.raises(s2j.UnsupportedOps, match=name) as e:
    prog(np.eye(2, dtype=np.float32))
  assert e.value.ops == (name,)
  with pytest.raises(s2j.UnsupportedOps):
    jax.jit(prog)(np.eye(2, dtype=np.float32))


def test_program_api():
  text = _module("""
  func.func @main(%x: tensor<2x3xf32>, %i: tensor<i32>) -> (tensor<3x2xf32>, tensor<i32>) {
    %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    return %t, %i : tensor<3x2xf32>, tensor<i32>
  }""")
  prog = s2j.parse(text)
  assert prog.in_avals == (core.ShapedArray((2, 3), np.float32),
                           core.ShapedArray((), np.int32))
  assert prog.out_avals == (core.ShapedArray((3, 2), np.float32),
                            core.ShapedArray((), np.int32))
  assert prog.unsupported == ()
  # Hashable by identity (jax.jit caches on it).
  assert prog != s2j.parse(text) and {prog: 1}[prog] == 1
  with pytest.raises(AttributeError):
    prog.unsupported = ("x",)
  with pytest.raises(TypeError, match="takes 2 arguments"):
    prog(np.zeros((2, 3), np.float32))
  with pytest.raises(TypeError, match="shape"):
    prog(np.zeros((3, 2), np.float32), np.int32(0))
  with pytest.raises(ValueError, match="dynamic shape"):
    s2j.parse(_module("""
  func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
    return %x : tensor<?xf32>
  }"""))


@pytest.mark.parametrize("ty,dtype", [("bf16", "bfloat16"), ("f16", "float16")])
def test_sort_total_order_of_narrow_floats(ty, dtype):
  text = _module(f"""
  func.func @main(%x: tensor<10x{ty}>) -> tensor<10x{ty}> {{
    %s = "stablehlo.sort"(%x) <{{dimension = 0 : i64, is_stable = true}}> ({{
    ^bb0(%a0: tensor<{ty}>, %a1: tensor<{ty}>):
      %c = stablehlo.compare GT, %a0, %a1, TOTALORDER : (tensor<{ty}>, tensor<{ty}>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }}) : (tensor<10x{ty}>) -> tensor<10x{ty}>
    return %s : tensor<10x{ty}>
  }}""")
  x = _SPECIAL.astype(jax.numpy.dtype(dtype))
  prog, expected = _check_module(text, x)
  np.testing.assert_array_equal(
      np.asarray(jax.jit(prog)(x)[0]).view(np.int16),
      np.asarray(expected[0]).view(np.int16))


_BITS_OF_F64 = """
func.func public @main(%a: tensor<2xf64>) -> tensor<2xi64> {
  %0 = stablehlo.bitcast_convert %a : (tensor<2xf64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}
"""


def test_a_64_bit_argument_without_x64_is_refused_or_given_as_words():
  """Without jax_enable_x64 a 64-bit argument would reach the module in 32
  bits (a jax.jit argument is rounded): refused, unless given as 32-bit
  words, which keep every bit."""
  program = s2j.parse(_BITS_OF_F64)
  x = np.array([1.5, 1e300], np.float64)
  with config.enable_x64(False):
    for call in (program, jax.jit(lambda a: program(a))):
      with pytest.raises(ValueError, match="without jax_enable_x64"):
        call(x)
    words, wide = s2j.narrow_64_bit(x)
    bits = jax.jit(lambda w: program(w, wide=(wide,))[0])(words)
    # (The i64 result comes back as JAX has it without x64: its low word.)
    np.testing.assert_array_equal(np.asarray(bits),
                                  x.view(np.int64).astype(np.int32))
  with config.enable_x64(True):
    np.testing.assert_array_equal(np.asarray(program(x)[0]), x.view(np.int64))


# Scalars stay scalars: an elementwise op is given the rank-0 value that a
# broadcast_in_dim of its operand broadcasts (tf2xla's scalar constants).

_SCALARS = _module("""
  func.func @main(%x: tensor<2x3xf32>, %p: tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>) {
    %c = stablehlo.constant dense<2.0> : tensor<f32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %bz = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %bp = stablehlo.broadcast_in_dim %p, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %m = stablehlo.multiply %x, %b : tensor<2x3xf32>
    %a = stablehlo.add %bp, %m : tensor<2x3xf32>
    %h = stablehlo.maximum %a, %b : tensor<2x3xf32>
    %d = stablehlo.divide %bp, %h : tensor<2x3xf32>
    %k = stablehlo.clamp %bz, %x, %b : tensor<2x3xf32>
    %k2 = stablehlo.clamp %bp, %x, %b : tensor<2x3xf32>
    %g = stablehlo.compare GT, %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %e = stablehlo.power %k, %b : tensor<2x3xf32>
    %both = stablehlo.subtract %b, %bp : tensor<2x3xf32>
    %s = stablehlo.add %e, %both : tensor<2x3xf32>
    %q = stablehlo.compare GT, %p, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %qb = stablehlo.broadcast_in_dim %q, dims = [] : (tensor<i1>) -> tensor<2x3xi1>
    %sel = stablehlo.select %qb, %x, %a : tensor<2x3xi1>, tensor<2x3xf32>
    return %d, %k2, %s, %g, %sel : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>
  }""")


def _scalars_jnp(x, p):
  jnp = jax.numpy
  a = p + x * 2
  k = jnp.clip(x, 0, 2)
  return [p / jnp.maximum(a, 2), jnp.clip(x, p, 2), k ** 2 + (2 - p),
          a > 2, jnp.where(p > 2, x, a)]


def _scalar_broadcasts(closed: core.ClosedJaxpr) -> int:
  return sum(e.primitive.name == "broadcast_in_dim"
             and np.ndim(e.invars[0].aval) == 0 for e in closed.jaxpr.eqns)


def test_scalar_broadcasts_reach_elementwise_ops_as_scalars():
  x, p = _f(2, 3)(), np.float32(.75)
  prog, expected = _check_module(_SCALARS, x, p, tol=1e-6)
  assert_close(expected, _scalars_jnp(x, p), 1e-6)
  # Of the four broadcasts only %bp's runs: a clamp takes only constant
  # bounds as scalars (lax.clamp's derivative w.r.t. a rank-0 bound fails),
  # and of %both's two operands one keeps the op's shape.
  closed = jax.make_jaxpr(prog)(x, p)
  assert _scalar_broadcasts(closed) == 1, closed
  assert [v.aval.shape for v in closed.jaxpr.outvars] == [(2, 3)] * 5
  # vmap over either argument or both, and derivatives w.r.t. both (the
  # scalar's tangent is rank 0 too), against jnp.
  xs, ps = _f(4, 2, 3)(), np.asarray([.5, -1., 3., 0.], np.float32)
  for axes, args in (((0, None), (xs, p)), ((None, 0), (x, ps)),
                     ((0, 0), (xs, ps))):
    got = jax.vmap(prog, in_axes=axes)(*args)
    want = [np.stack(r) for r in zip(*[
        _scalars_jnp(*[a[i] if ax == 0 else a for a, ax in zip(args, axes)])
        for i in range(4)])]
    assert_close(got, want, 1e-6)
  for i in (0, 1, 2, 4):
    for fn in (prog, jax.jit(prog)):
      g = jax.grad(lambda x, p: fn(x, p)[i].sum(), argnums=(0, 1))(x, p)
      want = jax.grad(lambda x, p: _scalars_jnp(x, p)[i].sum(),
                      argnums=(0, 1))(x, p)
      assert_close(list(g), list(want), 1e-5)
      assert np.shape(g[1]) == ()


def test_a_broadcast_read_otherwise_is_run():
  # %b is read by an op that takes no scalar (a dot) and returned: it is
  # run; %b2 only by adds, one of which reads it twice (one operand keeps
  # the op's shape).
  text = _module("""
  func.func @main(%x: tensor<3x3xf32>, %p: tensor<f32>) -> (tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) {
    %b = stablehlo.broadcast_in_dim %p, dims = [] : (tensor<f32>) -> tensor<3x3xf32>
    %b2 = stablehlo.broadcast_in_dim %p, dims = [] : (tensor<f32>) -> tensor<3x3xf32>
    %a = stablehlo.add %x, %b : tensor<3x3xf32>
    %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %t = stablehlo.add %b2, %b2 : tensor<3x3xf32>
    return %d, %t, %b : tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>
  }""")
  x, p = _f(3, 3)(), np.float32(1.5)
  prog, expected = _check_module(text, x, p, tol=1e-5)
  full = np.full((3, 3), p, np.float32)
  assert_close(expected, [(x + p) @ full, 2 * full, full], 1e-5)
  assert _scalar_broadcasts(jax.make_jaxpr(prog)(x, p)) == 2


def test_a_broadcast_left_out_is_computed_where_a_rule_reads_it_by_id():
  # A caller's rule that reads a value by its id (TF's derivatives read an
  # activation's input so), from a region, gets the broadcast the adds no
  # longer need.
  text = _module("""
  func.func @main(%i: tensor<i32>, %x: tensor<3xf32>, %p: tensor<f32>) -> tensor<3xf32> {
    %b = stablehlo.broadcast_in_dim %p, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %r = "stablehlo.case"(%i) ({
      %a = stablehlo.add %x, %b : tensor<3xf32>
      stablehlo.return %a : tensor<3xf32>
    }, {
      %n = stablehlo.negate %x : tensor<3xf32>
      stablehlo.return %n : tensor<3xf32>
    }) : (tensor<i32>) -> tensor<3xf32>
    return %r : tensor<3xf32>
  }""")

  class ReadsTheBroadcast:
    def rule(self, op, compiler, step):
      if op.name != "stablehlo.negate":
        return None
      b, = (v for v, d in compiler.defining.items()
            if d.name == "stablehlo.broadcast_in_dim")
      return lambda env, x: [x * env[b]]

  prog = s2j.parse(text, derivatives=ReadsTheBroadcast())
  # (%b is left out of main's steps: the add reads its scalar.)
  main = prog._main  # pylint: disable=protected-access
  assert len(main.deferred) == 1 and len(main.steps) == 1, main.steps
  x, p = _f(3)(), np.float32(-2.)
  for fn in (prog, jax.jit(prog)):
    assert_close(fn(np.int32(0), x, p), [x + p], 1e-6)
    assert_close(fn(np.int32(1), x, p), [x * p], 1e-6)
  assert_close(jax.vmap(prog, in_axes=(None, None, 0))(
      np.int32(1), x, np.asarray([1., 2.], np.float32)),
               [np.stack([x, 2 * x])], 1e-6)


def test_a_callers_step_gets_its_operands_as_they_are():
  # A caller's step that copied the engine step's attributes
  # (functools.wraps) still gets the broadcast, not its scalar: its own
  # derivative may not take one (TF's ReluGrad selects between the
  # tangents).
  text = _module("""
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %b = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %m = stablehlo.maximum %x, %b : tensor<2x3xf32>
    return %m : tensor<2x3xf32>
  }""")

  @jax.custom_jvp
  def relu_max(x, y):
    return jax.lax.max(x, y)

  @relu_max.defjvp
  def _(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return relu_max(x, y), jax.lax.select(jax.lax.gt(x, y), tx, ty)

  class WrapsTheStep:
    def rule(self, op, compiler, step):
      del compiler
      if op.name != "stablehlo.maximum":
        return None

      @functools.wraps(step)
      def mine(env, x, y):
        del env
        return [relu_max(x, y)]
      return mine

  prog = s2j.parse(text, derivatives=WrapsTheStep())
  x = np.array([[1., -2., 3.], [-1., 2., -3.]], np.float32)
  assert_close(prog(x), [np.maximum(x, 0)], 0.)
  assert_close(jax.grad(lambda x: prog(x)[0].sum())(x),
               (x > 0).astype(np.float32), 0.)
