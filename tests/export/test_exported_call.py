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
"""jax.export artifacts under vmap and autodiff (patch 0020), no TensorFlow.

A deserialized `Exported` is called under each transformation and compared
with the same transformation of the original JAX function: `vmap` through
the StableHLO interpreter, reverse mode through the serialized VJP, forward
mode through its transpose; a derivative that was not serialized is refused
with a message that says why. Then the composer's cycle with jax.export.
These tests run with TensorFlow installed and in a venv without it (`test`'s
run "jax.export, no TensorFlow"); neither TensorFlow nor jax2tf is ever
imported by them (checked).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
from jax import export
from jax._src import config
from jax._src.export.transforms import exported as exported_api
import jax.numpy as jnp
import numpy as np
import pytest

from .cycle import P0
from .cycle import check_model
from .cycle import larger
from .cycle import mlp
from .cycle import roundtrip
from .util import assert_close
from .util import randn

pytestmark = pytest.mark.skipif(
    bool(exported_api.pieces_missing()),
    reason="this jax's jax.export lacks what the rules need: "
    f"{exported_api.pieces_missing()}")

W = randn(4, 5)


def f(x, w):
  """The issue's small f(x, w) -> R^2."""
  return jnp.stack([jnp.sum(jnp.tanh(x @ w)), jnp.sum(jnp.sin(x) * x)])


def scalar(g):
  return lambda x, w: jnp.sum(jnp.sin(g(x, w)))


# Each transformation of the Done-means list, of a function of (x, w).
TRANSFORMS = {
    "vmap": lambda g: jax.vmap(g, in_axes=(0, None)),
    "jit(vmap)": lambda g: jax.jit(jax.vmap(g, in_axes=(0, None))),
    "jit(jacrev)": lambda g: jax.jit(jax.jacrev(g, argnums=(0, 1))),
    "jit(jacfwd)": lambda g: jax.jit(jax.jacfwd(g, argnums=(0, 1))),
    "jit(hessian)": lambda g: jax.jit(jax.hessian(scalar(g))),
    "jit(vmap(grad))": lambda g: jax.jit(
        jax.vmap(jax.grad(scalar(g), argnums=(0, 1)), in_axes=(0, None))),
}
BATCHED = ("vmap", "jit(vmap)", "jit(vmap(grad))")

# What each vjp_order gives: None is a result equal to the original's, a
# string the start of the refusal's message.
NO_VJP = "No VJP is available for the exported function 'f'"
NO_FORWARD = "jax.jvp of the exported function 'f'"
NO_SECOND = "jax.jvp of the serialized VJP of an exported function"
EXPECTED = {
    0: {"vmap": None, "jit(vmap)": None, "jit(jacrev)": NO_VJP,
        "jit(jacfwd)": NO_FORWARD, "jit(hessian)": NO_VJP,
        "jit(vmap(grad))": NO_VJP},
    1: {"vmap": None, "jit(vmap)": None, "jit(jacrev)": None,
        "jit(jacfwd)": None, "jit(hessian)": NO_SECOND,
        "jit(vmap(grad))": None},
    2: dict.fromkeys(TRANSFORMS),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("vjp_order", [0, 1, 2])
def test_transformation_of_the_artifact_is_that_of_the_function(
    vjp_order, transform, dtype):
  with config.enable_x64(dtype == "float64"):
    w = W.astype(dtype)
    x = randn(3, 4).astype(dtype)
    ex = roundtrip(f, x, w, vjp_order=vjp_order)
    fun = TRANSFORMS[transform]
    tol = 1e-5 if dtype == "float32" else 1e-12
    expected = EXPECTED[vjp_order][transform]
    sizes = (0, 1, 4) if transform in BATCHED else (None,)
    for size in sizes:
      arg = x if size is None else randn(size, 3, 4).astype(dtype)
      if expected is None:
        assert_close(fun(ex.call)(arg, w), fun(f)(arg, w), tol=tol)
      else:
        with pytest.raises(ValueError) as e:
          fun(ex.call)(arg, w)
        assert str(e.value).startswith(expected), str(e.value)
        assert "serialize(vjp_order=k)" in str(e.value)


def test_refusals_say_why():
  ex = roundtrip(f, randn(3, 4), W, vjp_order=0)
  with pytest.raises(ValueError) as e:
    jax.jacfwd(ex.call)(randn(3, 4), W)
  assert "does not record the function's jax.custom_jvp and" in str(e.value)
  assert "lax.stop_gradient" in str(e.value)


@pytest.mark.parametrize("in_axes,out_axes", [
    ((1, None), 0), ((None, 0), 1), ((0, 0), 0), ((2, 1), 1)])
def test_vmap_any_axes(in_axes, out_axes):
  ex = roundtrip(f, randn(3, 4), W)
  x = randn(3, 4, 6) if in_axes[0] == 2 else randn(6, 3, 4)
  if in_axes[0] == 1:
    x = randn(3, 6, 4)
  elif in_axes[0] is None:
    x = randn(3, 4)
  w = randn(4, 6, 5) if in_axes[1] == 1 else (
      randn(6, 4, 5) if in_axes[1] == 0 else W)
  for g in (lambda h: jax.vmap(h, in_axes, out_axes),
            lambda h: jax.jit(jax.vmap(h, in_axes, out_axes))):
    assert_close(g(ex.call)(x, w), g(f)(x, w))


def test_nested_vmap_and_pytrees():
  def g(params, x, *, scale):
    h = jnp.tanh(x @ params["w"] + params["b"])
    return {"mean": jnp.mean(h, axis=-1) * scale, "h": (h, h.sum())}

  params = {"w": W, "b": randn(5)}
  x = randn(3, 4)
  ex = roundtrip(g, params, x, scale=2.)
  xs = randn(2, 6, 3, 4)
  bs = randn(2, 5)

  def nested(h):
    inner = jax.vmap(lambda p, x: h(p, x, scale=2.), in_axes=(None, 0))
    return jax.vmap(lambda b, xs: inner({"w": W, "b": b}, xs))

  assert_close(nested(ex.call)(bs, xs), nested(g)(bs, xs))
  assert_close(jax.jit(nested(ex.call))(bs, xs), nested(g)(bs, xs))


def test_unused_and_integer_arguments():
  """The module keeps only the arguments it uses; integer arguments and
  results carry float0 cotangents through the VJP."""
  def g(x, n, unused):
    return jnp.sin(x) * n, n * 2

  x, n, u = randn(3), np.int32(3), randn(7)
  ex = roundtrip(g, x, n, u)
  assert ex.module_kept_var_idx == (0, 1)
  xs, ns = randn(5, 3), np.arange(5, dtype=np.int32)
  for wrap in (lambda h: h, jax.jit):
    assert_close(wrap(jax.vmap(ex.call, (0, 0, None)))(xs, ns, u),
                 jax.vmap(g, (0, 0, None))(xs, ns, u))
    grad = lambda h: jax.vmap(jax.grad(lambda x, n: jnp.sum(h(x, n, u)[0])),
                              (0, 0))  # noqa: E731
    assert_close(wrap(grad(ex.call))(xs, ns), grad(g)(xs, ns))
    assert_close(wrap(jax.jacfwd(lambda x: ex.call(x, n, u)[0]))(x),
                 jax.jacfwd(lambda x: g(x, n, u)[0])(x))


def test_symbolic_artifact_under_vmap():
  """An artifact exported with a symbolic batch b: the vmap axis composes
  with b (here b=7), eagerly and under jit, and under a symbolic vmap axis
  when exported again."""
  def g(x, w):
    return jnp.tanh(x @ w) - jnp.mean(x @ w, axis=0)

  b, c = export.symbolic_shape("b, c")
  ex = roundtrip(g, jax.ShapeDtypeStruct((b, 4), np.float32), W)
  assert str(ex.in_avals[0].shape) == "(b, 4)"
  xs = randn(5, 7, 4)
  for wrap in (lambda h: h, jax.jit):
    for axis in (0, 1):
      x = np.moveaxis(xs, 0, axis)
      assert_close(wrap(jax.vmap(ex.call, (axis, None)))(x, W),
                   jax.vmap(g, (axis, None))(x, W), tol=1e-6)
    assert_close(wrap(jax.jacfwd(ex.call))(xs[0], W),
                 jax.jacfwd(g)(xs[0], W), tol=1e-6)
    per_example = lambda h: jax.vmap(jax.grad(  # noqa: E731
        lambda x, w: jnp.sum(h(x, w) ** 2), argnums=1), (0, None))
    assert_close(wrap(per_example(ex.call))(xs, W), per_example(g)(xs, W),
                 tol=1e-5)
  again = export.export(jax.jit(jax.vmap(ex.call, (0, None))))(
      jax.ShapeDtypeStruct((c, 7, 4), np.float32), W)
  assert str(again.in_avals[0].shape) == "(c, 7, 4)"
  for size in (1, 5):
    assert_close(again.call(xs[:size], W), jax.vmap(g, (0, None))(xs[:size], W),
                 tol=1e-6)


def test_symbolic_argument_shapes_under_vmap_are_refused():
  b, c = export.symbolic_shape("b, c")
  ex = roundtrip(f, jax.ShapeDtypeStruct((b, 4), np.float32), W)
  with pytest.raises(NotImplementedError) as e:
    export.export(jax.jit(jax.vmap(ex.call, (0, None))))(
        jax.ShapeDtypeStruct((3, c, 4), np.float32), W)
  assert "jax.vmap of the exported function 'f'" in str(e.value)
  assert "symbolic shapes (float32[c,4]" in str(e.value)
  assert "jax.lax.map" in str(e.value)


def test_op_without_a_rule_is_named():
  def g(x):  # (XLA's stateful random numbers, stablehlo.rng: no rule)
    return x + jax.lax.rng_uniform(np.float32(0), np.float32(1), (3,))

  ex = roundtrip(g, randn(3))
  with pytest.raises(NotImplementedError) as e:
    jax.vmap(ex.call)(randn(2, 3))
  assert "has ops that the interpreter has no exact JAX rule for" in str(
      e.value)
  assert "stablehlo.rng" in str(e.value)


def test_platforms():
  """Another platform's module is refused as upstream refuses the call; the
  right index of a multi-platform module is used."""
  x = randn(3, 4)
  tpu_only = roundtrip(f, x, W, export_kwargs=dict(platforms=("tpu",)))
  with pytest.raises(ValueError, match="was exported for platforms"):
    tpu_only.call(x, W)
  with pytest.raises(ValueError, match="was exported for platforms"):
    jax.vmap(tpu_only.call, (0, None))(randn(2, 3, 4), W)
  unchecked = roundtrip(f, x, W, export_kwargs=dict(
      platforms=("tpu",),
      disabled_checks=[export.DisabledSafetyCheck.platform()]))
  xs = randn(2, 3, 4)
  assert_close(jax.vmap(unchecked.call, (0, None))(xs, W),
               jax.vmap(f, (0, None))(xs, W))

  def by_platform(x):
    return jax.lax.platform_dependent(x, tpu=lambda x: x * 3.,
                                      default=lambda x: x * 2.)

  both = roundtrip(by_platform, x,
                   export_kwargs=dict(platforms=("tpu", "cpu")))
  assert_close(jax.vmap(both.call)(xs), xs * 2.)


def test_custom_vjp_is_honoured_in_both_modes():
  """Forward mode is the transpose of the serialized VJP: the custom VJP's.
  (JAX itself refuses forward mode of a custom_vjp function.)"""
  @jax.custom_vjp
  def scaled(x):
    return jnp.sin(x)

  scaled.defvjp(lambda x: (jnp.sin(x), x),
                lambda x, ct: (0.5 * ct * jnp.cos(x),))

  def g(x):
    return scaled(x) * x

  x = randn(4)
  ex = roundtrip(g, x)
  assert_close(jax.jit(jax.jacrev(ex.call))(x), jax.jacrev(g)(x))
  assert_close(jax.jit(jax.jacfwd(ex.call))(x), jax.jacrev(g)(x))
  with pytest.raises(TypeError, match="can't apply forward-mode"):
    jax.jacfwd(g)(x)


def test_custom_vjp_that_is_not_linear_is_refused():
  """A custom bwd nonlinear in its cotangent has no transpose: refused."""
  @jax.custom_vjp
  def clipped(x):
    return jnp.sin(x)

  clipped.defvjp(lambda x: (jnp.sin(x), x),
                 lambda x, ct: (jnp.clip(ct * jnp.cos(x), -.1, .1),))
  ex = roundtrip(clipped, randn(4))
  with pytest.raises(NotImplementedError, match="cannot transpose its module"):
    jax.jacfwd(ex.call)(randn(4))


def test_custom_jvp_is_honoured_in_both_modes():
  @jax.custom_jvp
  def g(x):
    return jnp.sin(x)

  g.defjvp(lambda p, t: (jnp.sin(p[0]), 3. * t[0] * jnp.cos(p[0])))
  x = randn(4)
  ex = roundtrip(g, x)
  assert_close(jax.jit(jax.jacfwd(ex.call))(x), jax.jacfwd(g)(x))
  assert_close(jax.jit(jax.jacrev(ex.call))(x), jax.jacrev(g)(x))


def test_stop_gradient_second_derivatives():
  """The module of sin(x) * stop_gradient(x) computes sin(x) * x: its JAX
  derivative would be wrong; the serialized VJPs are right, to their order."""
  def g(x):
    return jnp.sin(x) * jax.lax.stop_gradient(x) + x ** 3

  x = randn(3)
  second = {"hessian": lambda h: jax.hessian(lambda x: jnp.sum(h(x))),
            "jacrev(jacrev)": lambda h: jax.jacrev(jax.jacrev(h)),
            "jacfwd(jacfwd)": lambda h: jax.jacfwd(jax.jacfwd(h)),
            "jacrev(jacfwd)": lambda h: jax.jacrev(jax.jacfwd(h))}
  # What vjp_order each needs: hessian is jacfwd of the VJP (the second VJP
  # transposed); a derivative of forward mode needs the third.
  needs = {"hessian": 2, "jacrev(jacrev)": 2, "jacfwd(jacfwd)": 3,
           "jacrev(jacfwd)": 3}
  for vjp_order in (1, 2, 3):
    ex = roundtrip(g, x, vjp_order=vjp_order)
    for name, t in second.items():
      if vjp_order >= needs[name]:
        assert_close(jax.jit(t(ex.call))(x), t(g)(x), tol=1e-5)
      else:
        with pytest.raises(ValueError, match="stop_gradient"):
          jax.jit(t(ex.call))(x)


def test_no_tensorflow_is_imported_and_jax2tf_never():
  """jax.export's transformations import neither TensorFlow nor jax2tf,
  where TensorFlow is installed too; the same numbers as with it."""
  code = textwrap.dedent("""
      import sys
      import jax, jax.numpy as jnp, numpy as np
      from jax import export
      ex = export.deserialize(export.export(jax.jit(jnp.sin))(
          np.ones(3, np.float32)).serialize(vjp_order=2))
      x = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
      outs = [jax.vmap(ex.call)(x), jax.jit(jax.vmap(ex.call))(x),
              jax.jacfwd(ex.call)(x[0]), jax.jacrev(ex.call)(x[0]),
              jax.hessian(lambda v: jnp.sum(ex.call(v)))(x[0])]
      refs = [jnp.sin(x), jnp.sin(x), jnp.diag(jnp.cos(x[0])),
              jnp.diag(jnp.cos(x[0])), jnp.diag(-jnp.sin(x[0]))]
      print(all(np.allclose(o, r, atol=1e-6) for o, r in zip(outs, refs)))
      print(sorted(m for m in sys.modules
                   if m.split(".")[0] == "tensorflow"
                   or m.startswith("jax.experimental.jax2tf")))
  """)
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                        text=True, check=False,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert proc.stdout.strip().splitlines() == ["True", "[]"]


# --------------------------------------------------------------------------
# The composer's cycle, with no vmap_method.
# --------------------------------------------------------------------------

def test_composition_cycle_with_jax_export():
  """JAX model, export (symbolic batch), reload inside a larger model, vmap
  and grad through it, export again with a symbolic batch, reload, twice."""
  b, = export.symbolic_shape("b")
  spec = jax.ShapeDtypeStruct((b, 4), np.float32)
  ref = lambda x: mlp(P0, x)  # noqa: E731
  exported = roundtrip(ref, spec)
  inner = exported.call
  for _ in range(2):
    g, g_ref = larger(inner), larger(ref)
    check_model(g, g_ref)
    exported = roundtrip(g, spec)
    assert str(exported.in_avals[0].shape) == "(b, 4)"
    check_model(exported.call, g_ref)
    inner, ref = exported.call, g_ref


def test_the_transposed_vjp_is_the_jvp_of_a_linear_map():
  # (Module-level piece of transpose_of_vjp.) For f(x, n) = (A x, n) the VJP
  # is ct -> (A^T ct, None); its transpose at a tangent t is A t.
  from jax._src.export.transforms import rules  # pylint: disable=g-import-not-at-top
  a = np.arange(6., dtype=np.float32).reshape(2, 3)
  x = np.ones(3, np.float32)
  n = np.int32(4)
  vjp_fun = lambda args, cts: [jnp.asarray(a).T @ cts[0], None]
  t = np.array([1., -2., 0.5], np.float32)
  out, = rules._transposed_vjp(  # pylint: disable=protected-access
      vjp_fun, (x, n), (t,), [jax.ShapeDtypeStruct((2,), np.float32)],
      has_tangent=[True, False], float_args=[True, False],
      transpose_error=RuntimeError)
  np.testing.assert_allclose(out, a @ t)


def test_the_transposed_vjp_names_jax_error_with_the_callers():
  from jax._src.export.transforms import rules  # pylint: disable=g-import-not-at-top
  # Not linear in the cotangent: JAX cannot transpose it.
  vjp_fun = lambda args, cts: [jnp.sin(cts[0])]

  class CannotTranspose(Exception):
    pass

  with pytest.raises(CannotTranspose):
    rules._transposed_vjp(  # pylint: disable=protected-access
        vjp_fun, (np.ones(2, np.float32),), (np.ones(2, np.float32),),
        [jax.ShapeDtypeStruct((2,), np.float32)], has_tangent=[True],
        float_args=[True], transpose_error=lambda e: CannotTranspose(str(e)))
