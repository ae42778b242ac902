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
"""The engine's rules: one registration per op, beside its definition, and
one dispatcher.

The rule modules are executed again against a fresh registry: the names
they register are the engine's, each once; a module with a second
registration of an op fails.
"""

from __future__ import annotations

import pathlib
import re
import sys
import types

import jax._src.export.stablehlo_to_jax as engine
from jax._src.export.stablehlo_to_jax import _interpret
from jax._src.export.stablehlo_to_jax import _ir
from jax._src.export.stablehlo_to_jax import _registry
import numpy as np
import pytest

_PACKAGE = pathlib.Path(engine.__file__).parent


def _rule_modules() -> list[pathlib.Path]:
  """The engine's modules that register rules."""
  return sorted(p for p in _PACKAGE.glob("*.py")
                if any(s in p.read_text(encoding="utf-8") for s in (
                    "@_registry.rule(", "rule = _registry.rule",
                    "_registry.RULES.platform_rule")))


def _registered_afresh(monkeypatch, extra: str = "") -> _registry.Registry:
  """The rule modules executed again, registering into a fresh registry
  (`extra` appended to the last of them)."""
  fresh = _registry.Registry()
  monkeypatch.setattr(_registry, "RULES", fresh)
  monkeypatch.setattr(_registry, "rule", fresh.register)
  paths = _rule_modules()
  for i, path in enumerate(paths):
    name = f"_registry_test_copy_{path.stem}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    monkeypatch.setitem(sys.modules, name, module)  # (for its dataclasses)
    source = path.read_text(encoding="utf-8")
    if i == len(paths) - 1:
      source += extra
    exec(compile(source, str(path), "exec"), module.__dict__)  # pylint: disable=exec-used
  return fresh


def test_each_op_is_registered_once_and_all_are_the_engines(monkeypatch):
  fresh = _registered_afresh(monkeypatch)
  assert list(fresh) == list(_registry.RULES)
  assert len(fresh) > 90
  assert {"stablehlo.add", "stablehlo.sort", "mhlo.erf",
          "stablehlo.custom_call @Qr"} <= set(fresh)


def test_a_second_registration_fails(monkeypatch):
  with pytest.raises(_registry.DoubleRegistration,
                     match="stablehlo.add is registered twice"):
    _registered_afresh(monkeypatch, extra=(
        "\n\n@_registry.rule('stablehlo.add')\n"
        "def _another_add(op, c):\n  return None\n"))


def test_a_registry_refuses_a_second_rule_for_a_name():
  registry = _registry.Registry()
  registry.add("stablehlo.abs", lambda op, c: None)
  with pytest.raises(_registry.DoubleRegistration):
    registry.register("stablehlo.negate", "stablehlo.abs")(
        lambda op, c: None)


def test_the_rule_of_the_elementwise_ops_with_more_than_lax_wins_no_merge():
  """The ops that had two rules keep the one that did more than lax."""
  for name, where in {
      "stablehlo.power": "_power_rule", "stablehlo.abs": "_abs_rule",
      "stablehlo.add": "_on_booleans", "stablehlo.maximum": "_as_op_where",
      "stablehlo.cbrt": "_not_of_complex",
      "stablehlo.logistic": "_as_op_where"}.items():
    assert where in _registry.RULES.registration(name).where, name


def _op(name: str, dynamic: bool = False, **attrs) -> _ir.Op:
  t = _ir.TensorType((3,), np.dtype(np.float32),
                     (True,) if dynamic else ())
  return _ir.Op(name, (0,), (t,), (1,), (t,), attrs, (), "")


def test_the_dispatcher_names_what_has_no_rule():
  compiler = _interpret.Compiler({}, _registry.RULES)
  with pytest.raises(_ir.NoRule, match="no rule for this op"):
    _registry.RULES.step(_op("stablehlo.no_such_op"), compiler)
  with pytest.raises(_ir.NoRule, match="custom call target 'Nope'"):
    _registry.RULES.step(_op("stablehlo.custom_call",
                             call_target_name="Nope"), compiler)
  # An op with values of a dynamic shape and no padded form.
  with pytest.raises(_ir.NoRule, match="bounded dynamic shape"):
    _registry.RULES.step(_op("stablehlo.fft", dynamic=True), compiler)
  # An op with one computes on padded values.
  assert callable(_registry.RULES.step(_op("stablehlo.negate", dynamic=True),
                                       compiler))


def test_the_engine_has_one_dispatcher():
  """The compiler asks the registry; no module keeps a table of rules."""
  for path in _PACKAGE.glob("*.py"):
    text = path.read_text(encoding="utf-8")
    assert "RULES: dict" not in text and "\nRULES = {" not in text, path.name


# Each platform's table of custom calls (_registry.PlatformCalls): the rules
# of its module are registered from it, and a call of the platform without
# a rule is refused by a message built from it.

_UNKNOWN = {"cpu": "lapack_snope_ffi", "cuda": "cusolver_nope_ffi",
            "rocm": "hipsolver_nope_ffi", "tpu": "Eigh"}


def _listed(message: str) -> set[str]:
  """The routines a "no rule" message lists (in its groups' parentheses)."""
  rules = message.split("it has rules for its calls ", 1)[1].split("; ")[0]
  return {name.strip() for group in re.findall(r"\(([^()]*)\)", rules)
          for name in group.split(",")}


def test_every_platform_has_a_table_and_every_rule_of_its_calls_is_in_it():
  assert {p.platform for p in _registry.RULES.platforms} == set(_UNKNOWN)
  assert _registry.RULES.platform_problems() == []


@pytest.mark.parametrize("platform", sorted(_UNKNOWN))
def test_a_platform_call_without_a_rule_lists_what_has_rules(platform):
  """The message lists exactly the routines of the platform's registered
  calls, which are its table's."""
  (calls,) = [p for p in _registry.RULES.platforms
              if p.platform == platform]
  compiler = _interpret.Compiler({}, _registry.RULES)
  target = _UNKNOWN[platform]
  with pytest.raises(_ir.NoRule) as error:
    _registry.RULES.step(_op("stablehlo.custom_call",
                             call_target_name=target), compiler)
  message = str(error.value)
  assert f"custom call target {target!r}: {calls.library} call" in message
  registered = {name.split(" @", 1)[1] for name in _registry.RULES
                if " @" in name and calls.holds(name.split(" @", 1)[1])}
  assert registered == set(calls.rules)
  assert _listed(message) == {calls.rules[t][1] for t in registered}
  assert all(reason in message for reason in calls.refused.values())


def test_a_rule_of_a_platform_call_outside_its_table_is_caught():
  registry = _registry.Registry()
  calls = _registry.PlatformCalls("gpu", "a GPU's", ("gpu_",),
                                  {"gpu_potrf": ("of LAPACK's", "potrf")})
  registry.add_platform(calls)
  with pytest.raises(KeyError, match="gpu_getrf: not in the gpu table"):
    registry.platform_rule(calls, "gpu_getrf")
  assert registry.platform_problems() == [
      "the gpu table lists gpu_potrf, which has no rule"]
  registry.platform_rule(calls, "gpu_potrf")(lambda op, c: None)
  registry.add("stablehlo.custom_call @gpu_getrf", lambda op, c: None)
  assert registry.platform_problems() == [
      "gpu_getrf has a rule but the gpu table does not list it"]
  message = _registry.unknown_custom_call("gpu_geqrf", registry.platforms)
  assert _listed(message) == {"potrf"}
  with pytest.raises(_registry.DoubleRegistration):
    registry.add_platform(calls)
