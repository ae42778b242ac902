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
"""Repeated groups of ops run as one ``jax.jit`` call each (``_outline``).

Hand-written modules whose groups are what tf2xla writes of a TF op it
expands (a GELU's ``Erfc``: dozens of ops named after one TF node). Each
program is checked against XLA's run of the module and against the same
program with no group outlined, bit for bit, eagerly, under ``jit``,
``vmap``, ``grad`` and ``hessian``; and its jaxpr for which groups became
calls. No TensorFlow.
"""

from __future__ import annotations

import re

import jax
from jax import lax
from jax._src import config
from jax._src.export import stablehlo_to_jax as s2j
from jax._src.export.stablehlo_to_jax import _outline
import numpy as np
import pytest

from ..export.util import assert_close
from .xla import xla_function

_T = "tensor<3xf32>"


def _group(name: str, x: str, loc: str, *, n: int = 20, c: float = 0.5,
           ty: str = _T) -> tuple[list[str], str]:
  """`n` elementwise ops of `x` named after the TF node `loc` (with a
  constant of its own and a broadcast of it, as tf2xla writes), and the
  name of its last value."""
  lines = [f'%{name}_c = stablehlo.constant dense<{c}> : tensor<f32> '
           f'loc("{loc}")',
           f'%{name}_b = stablehlo.broadcast_in_dim %{name}_c, dims = [] : '
           f'(tensor<f32>) -> {ty} loc("{loc}")']
  prev = x
  for i in range(n):
    op = ("sine", "multiply", "add", "tanh")[i % 4]
    rhs = f", %{name}_b" if op in ("multiply", "add") else ""
    lines.append(f'%{name}_{i} = stablehlo.{op} %{prev}{rhs} : {ty} '
                 f'loc("{loc}")')
    prev = f"{name}_{i}"
  return lines, prev


def _module(groups: list[tuple[list[str], str]], args: str, returns: list[str],
            extra: tuple[str, ...] = (), ty: str = _T) -> str:
  body = [line for lines, _ in groups for line in lines] + list(extra)
  return ("module {\n  func.func @main(" + args + ") -> ("
          + ", ".join([ty] * len(returns)) + ") {\n    "
          + "\n    ".join(body) + "\n    return "
          + ", ".join(f"%{r}" for r in returns) + " : "
          + ", ".join([ty] * len(returns)) + "\n  }\n}\n")


def _calls(prog: s2j.Program) -> list:
  """The ``jax.jit`` function each call of the program's body calls."""
  return [step.calls for step, _ in _call_steps(prog)]


def _call_steps(prog: s2j.Program) -> list:
  """``(step, results)`` of each call of the program's body."""
  main = prog._main  # pylint: disable=protected-access
  return [(step, results) for step, _, results in main.steps
          if hasattr(step, "calls")]


def _lowered_ops(fun, *args) -> list[str]:
  """The StableHLO ops of `fun`'s lowering under ``jax.jit``, sorted."""
  text = jax.jit(fun).lower(*args).as_text()
  return sorted(re.findall(r"= (stablehlo\.\w+|func\.call)", text))


def _inline(text: str, monkeypatch: pytest.MonkeyPatch) -> s2j.Program:
  """The program of `text` with no group outlined."""
  with monkeypatch.context() as m:
    m.setattr(_outline, "MIN_STEPS", 10**9)
    return s2j.parse(text)


def _assert_bits(actual, expected):
  """The same arrays, bit for bit (signed zeros and NaNs' payloads too)."""
  a_leaves, a_tree = jax.tree.flatten(actual)
  e_leaves, e_tree = jax.tree.flatten(expected)
  assert a_tree == e_tree, (a_tree, e_tree)
  for a, e in zip(a_leaves, e_leaves):
    a, e = np.asarray(a), np.asarray(e)
    assert (a.shape, a.dtype) == (e.shape, e.dtype), (a, e)
    width = np.dtype(f"uint{8 * a.dtype.itemsize}")
    np.testing.assert_array_equal(a.view(width), e.view(width))


def _check_same(prog: s2j.Program, inline: s2j.Program, *args: np.ndarray):
  """`prog` and `inline` agree bit for bit, eagerly (where a group runs
  its steps one by one) and under ``jax.jit`` (the way ``call_tf`` and
  ``Exported.call`` run a program, eagerly too) and each transformation
  in it, and lower to the same ops. Returns the value."""
  assert not prog.unsupported, prog.reasons
  expected = jax.jit(prog)(*args)
  _assert_bits(jax.jit(inline)(*args), expected)
  _assert_bits(prog(*args), inline(*args))
  stacked = [np.stack([a, a[::-1] * 0.5, a + 1.]) for a in args]
  empty = [a[:0] for a in stacked]
  for xs in (stacked, empty):
    _assert_bits(jax.jit(jax.vmap(prog))(*xs),
                 jax.jit(jax.vmap(inline))(*xs))
  # What JAX lowers is what the ops make one by one.
  assert _lowered_ops(prog, *args) == _lowered_ops(inline, *args)
  assert _lowered_ops(jax.vmap(prog), *stacked) == _lowered_ops(
      jax.vmap(inline), *stacked)

  def total(p):
    return lambda *a: sum(r.sum() for r in p(*a))
  n = tuple(range(len(args)))
  for transform, xs in ((lambda f: jax.grad(f, n), args),
                        (lambda f: jax.vmap(jax.grad(f, n)), stacked),
                        (jax.hessian, args[:1])):
    def fixed(p):
      return lambda *a: total(p)(*a, *args[len(a):])
    _assert_bits(jax.jit(transform(fixed(prog)))(*xs),
                 jax.jit(transform(fixed(inline)))(*xs))
  return expected


_X = np.array([0.3, -1.7, 2.5], np.float32)
_Y = np.array([-0.0, 4.0, -0.25], np.float32)


def test_a_repeated_group_is_one_function_called_at_each_site(monkeypatch):
  # Two GELUs' Erfc nodes of the same ops, on different values: one
  # function, called twice, whose jaxpr JAX keeps (the same object at both
  # calls); a third group of other constants is a function of its own.
  g1 = _group("e1", "x", "block_1/Gelu/Erfc")
  g2 = _group("e2", "y", "block_2/Gelu/Erfc")
  g3 = _group("e3", "e1_19", "block_3/Gelu/Erfc", c=0.25)
  g4 = _group("e4", "e2_19", "block_4/Gelu/Erfc", c=0.25)
  text = _module([g1, g2, g3, g4], f"%x: {_T}, %y: {_T}",
                 ["e3_19", "e4_19", "e1_19"])
  prog = s2j.parse(text)
  calls = _calls(prog)
  assert len(calls) == 4, calls
  assert calls[0] is calls[1] and calls[2] is calls[3], calls
  assert calls[0] is not calls[2]
  expected = _check_same(prog, _inline(text, monkeypatch), _X, _Y)
  assert_close(expected, xla_function(text, prog)(_X, _Y), 1e-6)


def test_a_group_met_once_or_too_short_stays_inline():
  once = _module([_group("e1", "x", "Gelu/Erfc")], f"%x: {_T}", ["e1_19"])
  prog = s2j.parse(once)
  assert not _calls(prog)
  n = _outline.MIN_STEPS - 3  # (with its constant and broadcast, too few)
  short = _module([_group("e1", "x", "a/Erfc", n=n),
                   _group("e2", "y", "b/Erfc", n=n)],
                  f"%x: {_T}, %y: {_T}", [f"e1_{n - 1}", f"e2_{n - 1}"])
  prog = s2j.parse(short)
  assert not _calls(prog)
  assert_close(prog(_X, _Y), xla_function(short, prog)(_X, _Y), 1e-6)


def test_values_read_after_a_group_are_its_results(monkeypatch):
  # An inner value of each group is read after it, and each group's
  # broadcast constant too (computed again after the call, as a constant).
  g1 = _group("e1", "x", "a/Erfc")
  g2 = _group("e2", "y", "b/Erfc")
  extra = (f"%s1 = stablehlo.add %e1_5, %e1_b : {_T}",
           f"%s2 = stablehlo.multiply %e2_5, %e2_b : {_T}",
           f"%s3 = stablehlo.subtract %s1, %s2 : {_T}")
  text = _module([g1, g2], f"%x: {_T}, %y: {_T}", ["s3", "e1_19", "e2_19"],
                 extra)
  prog = s2j.parse(text)
  calls = _call_steps(prog)
  assert len(calls) == 2 and calls[0][0].calls is calls[1][0].calls
  assert [len(results) for _, results in calls] == [2, 2]  # (e_5, e_19)
  expected = _check_same(prog, _inline(text, monkeypatch), _X, _Y)
  assert_close(expected, xla_function(text, prog)(_X, _Y), 1e-6)


def test_groups_of_other_shapes_are_functions_of_their_own(monkeypatch):
  t4 = "tensor<4xf32>"
  text = ("module {\n  func.func @main(%x: tensor<3xf32>, %y: tensor<3xf32>, "
          f"%z: {t4}, %w: {t4}) -> (tensor<3xf32>, tensor<3xf32>, {t4}, "
          f"{t4}) {{\n    ")
  body = []
  for name, arg, ty in (("a", "x", _T), ("b", "y", _T), ("c", "z", t4),
                        ("d", "w", t4)):
    body += _group(name, arg, f"{name}/Erfc", ty=ty)[0]
  text += ("\n    ".join(body) + "\n    return %a_19, %b_19, %c_19, %d_19 : "
           f"tensor<3xf32>, tensor<3xf32>, {t4}, {t4}\n  }}\n}}\n")
  z = np.array([1., -2., 0.5, 3.], np.float32)
  prog = s2j.parse(text)
  calls = _calls(prog)
  assert len(calls) == 4
  assert calls[0] is calls[1] and calls[2] is calls[3]
  assert calls[0] is not calls[2]
  _check_same(prog, _inline(text, monkeypatch), _X, _Y, z, -z)


def test_a_group_of_a_constant_input_stays_inline():
  # A rule may fold a constant operand into its step: a group reading one
  # is not shared (the constant may differ at the other site).
  k = "%k = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>"
  text = _module([([k], "k"), _group("e1", "k", "a/Erfc"),
                  _group("e2", "x", "b/Erfc")], f"%x: {_T}",
                 ["e1_19", "e2_19"])
  prog = s2j.parse(text)
  assert not _calls(prog)
  assert_close(prog(_X), xla_function(text, prog)(_X), 1e-6)


def test_a_module_with_64_bit_values_is_not_outlined():
  t = "tensor<3xf64>"
  text = _module([_group("e1", "x", "a/Erfc", ty=t),
                  _group("e2", "y", "b/Erfc", ty=t)], f"%x: {t}, %y: {t}",
                 ["e1_19", "e2_19"], ty=t)
  text = text.replace("tensor<f32>", "tensor<f64>")
  with config.enable_x64(True):
    x, y = _X.astype(np.float64), _Y.astype(np.float64)
    prog = s2j.parse(text)
    assert not _calls(prog)
    assert_close(prog(x, y), xla_function(text, prog)(x, y), 1e-12)


@pytest.mark.parametrize("says", [True, False])
def test_a_callers_step_reads_an_inner_value_of_a_group_by_id(says,
                                                              monkeypatch):
  # A caller's rule (TF's derivatives) may read a value by its id: one it
  # says it reads is a result of the group's call; one it does not is
  # computed again where it is read (the same value; its derivative sums
  # the two uses' cotangents in another order).
  g1 = _group("e1", "x", "a/Erfc")
  g2 = _group("e2", "y", "b/Erfc")
  extra = (f'%n1 = stablehlo.negate %e1_19 : {_T} loc("a/Final")',
           f'%n2 = stablehlo.negate %e2_19 : {_T} loc("b/Final")')
  text = _module([g1, g2], f"%x: {_T}, %y: {_T}", ["n1", "n2"], extra)

  class ReadsAnInnerValue:
    def rule(self, op, compiler, step):
      del step
      if op.name != "stablehlo.negate":
        return None
      inner = next(v for v, d in compiler.defining.items()
                   if d.location == op.location.replace("Final", "Erfc")
                   and d.name == "stablehlo.sine")  # (the group's first)
      # (The op's value, -x; a derivative of its own, through the inner
      # value.)
      def step(env, x):
        return [-x + (env[inner] - lax.stop_gradient(env[inner]))]
      return s2j.reading(step, [inner]) if says else step

  prog = s2j.parse(text, derivatives=ReadsAnInnerValue())
  calls = _call_steps(prog)
  assert [len(results) for _, results in calls] == [2, 2] if says else [1, 1]
  plain = xla_function(text, prog)(_X, _Y)  # (the module's: negations)
  assert_close(prog(_X, _Y), plain, 1e-6)
  with monkeypatch.context() as m:
    m.setattr(_outline, "MIN_STEPS", 10**9)
    inline = s2j.parse(text, derivatives=ReadsAnInnerValue())
  if says:
    _check_same(prog, inline, _X, _Y)
  else:
    assert_close(jax.jit(prog)(_X, _Y), jax.jit(inline)(_X, _Y), 0.)
    grad = lambda p: jax.jit(jax.grad(lambda x, y: p(x, y)[0].sum()))
    assert_close(grad(prog)(_X, _Y), grad(inline)(_X, _Y), 1e-6)


def _while(body: list[str], carried: str = "%x") -> str:
  """A module whose ``while`` runs `body` three times on ``%c`` (from
  `carried`), which it returns as ``%s``."""
  ops = "\n      ".join(body)
  return f"""module {{
  func.func @main(%x: {_T}) -> {_T} {{
    %i0 = stablehlo.constant dense<0> : tensor<i32>
    %r:2 = stablehlo.while(%i = %i0, %c = {carried}) : tensor<i32>, {_T}
      cond {{
      %n = stablehlo.constant dense<3> : tensor<i32>
      %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      {ops}
      %one = stablehlo.constant dense<1> : tensor<i32>
      %i1 = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %i1, %s : tensor<i32>, {_T}
    }}
    return %r#1 : {_T}
  }}
}}
"""


def _functions_made(monkeypatch: pytest.MonkeyPatch) -> list:
  """The group functions :func:`_outline._function` makes from now on."""
  made = []
  make = _outline._function  # pylint: disable=protected-access

  def counted(*args):
    made.append(make(*args))
    return made[-1]
  monkeypatch.setattr(_outline, "_function", counted)
  return made


@pytest.mark.parametrize("reads_outside", [False, True])
def test_groups_in_a_loop_body(reads_outside, monkeypatch):
  # Two groups of the body's value: one function, called in the body. One
  # that reads a value of the enclosing function runs op by op.
  made = _functions_made(monkeypatch)
  g1 = _group("e1", "c", "a/Erfc")
  g2 = _group("e2", "x" if reads_outside else "c", "b/Erfc")
  text = _while(g1[0] + g2[0] + [f"%s = stablehlo.add %e1_19, %e2_19 : {_T}"])
  prog = s2j.parse(text)
  assert len(made) == (0 if reads_outside else 1)
  assert_close(prog(_X), xla_function(text, prog)(_X), 1e-5)
  _check_same(prog, _inline(text, monkeypatch), _X)


def test_a_scalar_a_loop_body_reads_is_a_result_of_the_call(monkeypatch):
  # Each group makes a scalar of its input and broadcasts it; the loop body
  # multiplies by the broadcast, whose scalar it is given: the scalar is a
  # result of the call, not computed again in the body.
  def group(name, x, loc):
    lines = [
        f'%{name}_s0 = stablehlo.slice %{x} [0:1] : ({_T}) -> tensor<1xf32> '
        f'loc("{loc}")',
        f'%{name}_s = stablehlo.reshape %{name}_s0 : (tensor<1xf32>) -> '
        f'tensor<f32> loc("{loc}")',
        f'%{name}_sb = stablehlo.broadcast_in_dim %{name}_s, dims = [] : '
        f'(tensor<f32>) -> {_T} loc("{loc}")']
    prev = x
    for i in range(16):
      op = ("sine", "multiply", "tanh", "add")[i % 4]
      rhs = f", %{name}_sb" if op in ("multiply", "add") else ""
      lines.append(f'%{name}_{i} = stablehlo.{op} %{prev}{rhs} : {_T} '
                   f'loc("{loc}")')
      prev = f"{name}_{i}"
    return lines
  body = ["%m = stablehlo.multiply %c, %a_sb : " + _T,
          "%s = stablehlo.multiply %m, %b_sb : " + _T]
  text = _while(body).replace(
      "    %i0 =", "    " + "\n    ".join(group("a", "x", "a/Erfc")
                                         + group("b", "x", "b/Erfc"))
      + "\n    %i0 =")
  text = text.replace("return %r#1 : " + _T, "%o = stablehlo.add %r#1, "
                      "%a_15 : " + _T + "\n    %o2 = stablehlo.add %o, "
                      "%b_15 : " + _T + "\n    return %o2 : " + _T)
  prog = s2j.parse(text)
  main = prog._main  # pylint: disable=protected-access
  calls = _call_steps(prog)
  assert len(calls) == 2
  # (the scalar and the last value)
  assert [len(results) for _, results in calls] == [2, 2]
  assert not set(main.deferred) & {v for _, results in calls for v in results}
  assert_close(prog(_X), xla_function(text, prog)(_X), 1e-5)
  _check_same(prog, _inline(text, monkeypatch), _X)


def test_a_value_read_twice_in_a_group_and_after_it(monkeypatch):
  # The input is read by two ops of each group and again after the group:
  # values are the same bit for bit; the derivative sums that input's
  # cotangents in another order (the call's first), so its last bits may
  # differ (docs/stablehlo.md).
  t = "tensor<256xf32>"

  def group(name, x, loc):
    lines, prev = [], x
    for i in range(16):
      if i == 7:
        line = f"%{name}_{i} = stablehlo.multiply %{prev}, %{x} : {t}"
      else:
        line = (f"%{name}_{i} = stablehlo."
                f"{('sine', 'tanh', 'cosine')[i % 3]} %{prev} : {t}")
      lines.append(f'{line} loc("{loc}")')
      prev = f"{name}_{i}"
    return lines
  body = group("a", "x", "a/Erfc") + group("b", "y", "b/Erfc") + [
      f"%u = stablehlo.exponential %x : {t}",
      f"%o = stablehlo.add %u, %a_15 : {t}"]
  text = ("module {\n  func.func @main(%x: " + t + ", %y: " + t + ") -> ("
          + t + ", " + t + ") {\n    " + "\n    ".join(body)
          + f"\n    return %o, %b_15 : {t}, {t}\n  }}\n}}\n")
  prog = s2j.parse(text)
  assert len(_calls(prog)) == 2
  inline = _inline(text, monkeypatch)
  x = np.linspace(-3., 3., 256, dtype=np.float32)
  y = x[::-1].copy()
  _assert_bits(jax.jit(prog)(x, y), jax.jit(inline)(x, y))

  def grad(p):
    return jax.jit(jax.grad(lambda x, y: sum(r.sum() for r in p(x, y)),
                            (0, 1)))
  (gx, gy), (hx, hy) = grad(prog)(x, y), grad(inline)(x, y)
  _assert_bits(gy, hy)  # (y is read after its group by no op)
  assert_close(gx, hx, 1e-5)


def test_a_module_with_64_bit_values_elsewhere_is_not_outlined(monkeypatch):
  made = _functions_made(monkeypatch)
  t64 = "tensor<3xi64>"
  text = _module([_group("e1", "x", "a/Erfc"), _group("e2", "y", "b/Erfc")],
                 f"%x: {_T}, %y: {_T}", ["e1_19", "e2_19", "w2"],
                 (f"%w = stablehlo.convert %x : ({_T}) -> {t64}",
                  f"%w2 = stablehlo.convert %w : ({t64}) -> {_T}"))
  with config.enable_x64(True):
    prog = s2j.parse(text)
    assert not made
    assert_close(prog(_X, _Y), xla_function(text, prog)(_X, _Y), 1e-6)


def test_eagerly_a_group_runs_its_steps_one_by_one(monkeypatch):
  # As one compiled call, XLA would fold the group's x + 0 into x, and give
  # 1 / -0. = -inf where the op by op program gives +inf (as the
  # specification does); under jit XLA folds both alike.
  t = "tensor<2xf32>"

  def group(name, x, loc):
    lines = [f"%{name}_z = stablehlo.constant dense<0.0> : {t}",
             f"%{name}_o = stablehlo.constant dense<1.0> : {t}",
             f"%{name}_0 = stablehlo.add %{x}, %{name}_z : {t}",
             f"%{name}_1 = stablehlo.divide %{name}_o, %{name}_0 : {t}"]
    lines += [f"%{name}_{i} = stablehlo.negate %{name}_{i - 1} : {t}"
              for i in range(2, 16)]
    return [f'{line} loc("{loc}")' for line in lines], f"{name}_15"
  text = _module([group("a", "x", "a/Erfc"), group("b", "y", "b/Erfc")],
                 f"%x: {t}, %y: {t}", ["a_15", "b_15"], ty=t)
  prog = s2j.parse(text)
  assert len(_calls(prog)) == 2
  inline = _inline(text, monkeypatch)
  x = np.array([-0., 2.], np.float32)
  _assert_bits(prog(x, x), inline(x, x))
  assert np.asarray(prog(x, x)[0])[0] == np.inf
  _assert_bits(jax.jit(prog)(x, x), jax.jit(inline)(x, x))
