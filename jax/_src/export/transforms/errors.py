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
"""The errors of ``Exported.call`` under ``jax.vmap`` and forward mode."""

from __future__ import annotations

from collections.abc import Sequence

_NOT_DIFFERENTIATED = (
    "JAX does not differentiate the serialized StableHLO module itself: the "
    "module does not record the function's jax.custom_jvp and "
    "jax.custom_vjp rules or its lax.stop_gradient, so its derivative can "
    "differ from the function's")


def _exported(name: str) -> str:
  """How a message names an exported function (its VJPs are 'fun_vjp_jax')."""
  if name == _VJP_NAME:
    return ("the serialized VJP of an exported function (jax.export names "
            f"it {_VJP_NAME!r})")
  return f"the exported function {name!r}"


_VJP_NAME = "fun_vjp_jax"


def _which_order(name: str) -> str:
  """For a serialized VJP, that differentiating it is a higher derivative."""
  if name != _VJP_NAME:
    return ""
  return (" (differentiating a VJP is a second or higher derivative, such as "
          "jax.hessian, which is jax.jacfwd of jax.jacrev)")


def exported_batching_error(name: str, reason: str) -> NotImplementedError:
  """``jax.vmap`` of ``Exported.call``: the module cannot be batched."""
  return NotImplementedError(
      f"jax.vmap of {_exported(name)} (jax.export): JAX batches it by "
      "expressing its StableHLO module as JAX "
      "operations, which JAX's own batching rules transform, but "
      f"{reason}. Alternatives: apply jax.vmap before exporting "
      "(jax.export.export(jax.jit(jax.vmap(f)))), merge the vmap axis into "
      "a batch dimension of the exported function yourself (reshape), or "
      "loop over the batch with jax.lax.map.")


def exported_platform_error(name: str, platforms: Sequence[str],
                            used_on: Sequence[str]) -> ValueError:
  """The exported module was lowered for other platforms (jax.export's own message)."""
  return ValueError(
      f"Function '{name}' was exported for platforms '{tuple(platforms)}' "
      f"but it is used on '{tuple(used_on)}'.")


def exported_branch_error(name: str, platform: str, purpose: str,
                          reason: str) -> str:
  """A platform's branch of a module that the interpreter cannot read, for
  :mod:`.platforms` to raise where it is lowered for that platform (where
  the message says ``<lowered>``)."""
  return (f"{purpose} of {_exported(name)} (jax.export) expresses its "
          f"StableHLO module as JAX operations, but not its branch for "
          f"{platform!r}, lowered for '<lowered>': {reason}.")


def exported_no_vjp_error(name: str) -> ValueError:
  """Reverse mode of an artifact serialized without (more) VJPs."""
  return ValueError(
      f"No VJP is available for {_exported(name)}{_which_order(name)}: it "
      "was serialized without one (Exported.serialize(vjp_order=0), the "
      "default), or this is the highest-order VJP it was serialized with. "
      f"{_NOT_DIFFERENTIATED}. Serialize with a higher vjp_order: "
      "serialize(vjp_order=k) allows derivatives up to order k, in both "
      "modes (jax.grad, jax.jacrev, jax.jvp, jax.jacfwd; jax.hessian needs "
      "2).")


def exported_forward_mode_error(name: str) -> ValueError:
  """Forward mode of an artifact serialized without (more) VJPs."""
  return ValueError(
      f"jax.jvp of {_exported(name)}{_which_order(name)} (as in "
      "jax.jacfwd, jax.hessian, jax.linearize): forward mode is computed "
      "from the serialized VJP (its transpose), and this artifact has "
      "none: it was serialized with vjp_order=0 (the default), or this is "
      "the "
      f"highest-order VJP it was serialized with. {_NOT_DIFFERENTIATED}. "
      "Serialize with a higher vjp_order: serialize(vjp_order=k) allows "
      "derivatives up to order k, in both modes (jax.hessian needs 2). "
      "Where JAX cannot serialize a VJP (reverse mode of a lax.while_loop), "
      "export the forward-mode derivative itself: "
      "jax.export.export(jax.jit(lambda x, t: jax.jvp(f, (x,), (t,)))).")


def exported_forward_mode_interpret_error(name: str, reason: str
                                          ) -> NotImplementedError:
  """Forward mode of an artifact whose VJP module cannot be transposed."""
  return NotImplementedError(
      f"jax.jvp of {_exported(name)} (as in jax.jacfwd, jax.hessian): "
      "forward mode is the transpose of its serialized VJP, "
      "which JAX expresses as JAX operations, but "
      f"{reason}. Serialize it with one more vjp_order (the next VJP then "
      "gives forward mode without transposing a module), or use reverse "
      "mode (jax.grad, jax.jacrev).")


def exported_second_derivative_error(name: str, what_to_do: str
                                     ) -> ValueError:
  """A derivative of a forward-mode derivative that transposes a VJP."""
  return ValueError(
      "A derivative of the forward-mode derivative of "
      f"{_exported(name)} (such as jax.jacfwd(jax.jacfwd(f)) or "
      "jax.jacrev(jax.jacfwd(f))): forward "
      "mode is the transpose of the serialized VJP, and differentiating it "
      "again needs the next VJP, which was not serialized. "
      f"{_NOT_DIFFERENTIATED}. {what_to_do}")


EXPORTED_NEXT_ORDER = (
    "Serialize with a higher vjp_order (serialize(vjp_order=k) allows "
    "derivatives up to order k, in both modes).")
