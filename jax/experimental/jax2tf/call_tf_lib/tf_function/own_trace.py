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
"""A ``tf.function``'s own trace as the trace of ``call_tf``'s flat function.

``call_tf`` calls TensorFlow through a flat function of its own
(``callable_flat_tf``: flat arguments in, a flat list of checked results
out) and traces it as a ``tf.function`` for ``jax.jit``, ``jax.vmap`` and
the derivatives. For a live ``tf.function`` that trace is a second one: the
flat function calls the user's function, whose own trace TensorFlow made
first, and captures each of its variables again (0.15-0.2 s of a Keras
MobileNetV2's first call).

Where the flat function would add nothing, its trace is the user's own
(:class:`FlatTrace`): arrays in, in the order ``call_tf`` flattens them
(the function takes them as they are); tensors out, one or a list or tuple
of them, each of a dtype JAX has; no declared ``output_shape_dtype`` to
check them against; no ``call_tf_graph``; only variables (resources)
captured (the flat function makes captured eager tensors constants, see
``captures.keep_constants_constant``); and a trace for exactly the call's
argument shapes. Anything else traces the flat function as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jax._src import tree_util
from jax.experimental.jax2tf import jax2tf as jax2tf_internal
import tensorflow as tf

# call_tf's flat callable, and the getter of the result tree it records.
FlatCallable = Callable[..., Sequence[tf.Tensor]]
TreedefGetter = Callable[[], tree_util.PyTreeDef | None]


class FlatTrace:
  """A traced ``tf.function``, seen as ``call_tf``'s flat function's trace.

  Its results are a flat list, as the flat function's are: the structured
  attributes of a ``ConcreteFunction`` (``structured_outputs``,
  ``output_shapes``, ``output_dtypes``, a call's results) are flat here,
  and ``outputs`` is the function's results only; everything else is the
  trace's own.

  TensorFlow appends intermediates to a trace's ``outputs`` (its graph's,
  in place) when a ``tf.GradientTape`` differentiates a call of it; from
  then on (:meth:`unchanged` is False) the trace is no longer the
  function's results alone, and the flat function's trace is used instead
  (:class:`OwnTraceFunction`).

  Attributes:
    concrete: the ``tf.function``'s ``ConcreteFunction``.
  """

  def __init__(self, concrete: tf.types.experimental.ConcreteFunction):
    self.concrete = concrete
    self._size = (len(concrete.outputs), len(concrete.captured_inputs))

  def unchanged(self) -> bool:
    """Whether the trace's outputs and captures are still as they were."""
    return self._size == (len(self.concrete.outputs),
                          len(self.concrete.captured_inputs))

  def __getattr__(self, name: str) -> object:
    if name in ("concrete", "_size") or name.startswith("__"):
      raise AttributeError(name)  # (a copy made without __init__)
    return getattr(self.concrete, name)

  @property
  def outputs(self) -> list[tf.Tensor]:
    return list(self.concrete.outputs[:self._size[0]])

  @property
  def structured_outputs(self) -> list[tf.Tensor]:
    return self.outputs

  @property
  def output_shapes(self) -> list[tf.TensorShape]:
    return [t.shape for t in self.outputs]

  @property
  def output_dtypes(self) -> list[tf.dtypes.DType]:
    return [t.dtype for t in self.outputs]

  def __call__(self, *args: tf.Tensor) -> list[tf.Tensor]:
    return tf.nest.flatten(self.concrete(*args))


class OwnTraceFunction:
  """``call_tf``'s flat ``tf.function``, traced as the user's function.

  For the call's own argument specs, :meth:`get_concrete_function` is the
  user's trace (:class:`FlatTrace`) while TensorFlow has not changed it;
  for any other (a batched variant's, eagerly), and for everything else,
  the flat ``tf.function`` itself.

  Attributes:
    flat: the flat ``tf.function`` (``call_tf``'s ``function_flat_tf``).
    trace: the user's trace, flat.
    specs: the argument specs it was traced for.
  """

  def __init__(self, flat: tf.types.experimental.GenericFunction,
               trace: FlatTrace, specs: Sequence[tf.TensorSpec]):
    self.flat = flat
    self.trace = trace
    self.specs = tuple(specs)

  def __getattr__(self, name: str) -> object:
    if name in ("flat", "trace", "specs") or name.startswith("__"):
      raise AttributeError(name)  # (a copy made without __init__)
    return getattr(self.flat, name)

  def __call__(self, *args: tf.Tensor, **kwargs: object) -> object:
    return self.flat(*args, **kwargs)

  def get_concrete_function(
      self, *specs: tf.TensorSpec, **kwargs: object
  ) -> FlatTrace | tf.types.experimental.ConcreteFunction:
    if not kwargs and tuple(specs) == self.specs and self.trace.unchanged():
      return self.trace
    return self.flat.get_concrete_function(*specs, **kwargs)


def results_treedef(concrete: tf.types.experimental.ConcreteFunction,
                    specs: Sequence[tf.TensorSpec]
                    ) -> tree_util.PyTreeDef | None:
  """The tree of the flat function's results, if the trace can stand in.

  Args:
    concrete: the user's ``tf.function`` traced for ``specs``.
    specs: the call's argument specs.

  Returns:
    The tree the flat function would record for its results (one tensor,
    or a list or tuple of tensors), or None where the flat function adds
    something (the module's doc): results of another kind or dtype, or a
    captured value that is not a variable; or where the trace is not for
    exactly ``specs`` (an ``input_signature`` of unknown sizes: the flat
    function's trace has the call's).
  """
  traced = tf.nest.flatten(concrete.structured_input_signature)
  if len(traced) != len(specs) or not all(
      isinstance(t, tf.TensorSpec) and t.dtype == s.dtype
      and t.shape.rank is not None and s.shape.rank is not None
      and t.shape.as_list() == s.shape.as_list()
      for t, s in zip(traced, specs)):
    return None  # (an unknown rank too)
  outputs = concrete.structured_outputs
  leaves = ([outputs] if isinstance(outputs, tf.Tensor) else
            list(outputs) if type(outputs) in (list, tuple) else None)
  if (not leaves or not all(isinstance(t, tf.Tensor) for t in leaves)
      or len(concrete.outputs) != len(leaves)):  # (a tape's intermediates)
    return None
  try:
    for t in leaves:
      jax2tf_internal._to_jax_dtype(t.dtype)  # pylint: disable=protected-access
  except Exception:  # pylint: disable=broad-except
    return None  # the flat function's check says what is wrong
  if any(c.dtype != tf.resource for c in concrete.captured_inputs):
    return None  # (variables and other resources are read as they are)
  return tree_util.tree_structure(outputs)


def stand_in(triple: tuple[FlatCallable,
                           tf.types.experimental.GenericFunction,
                           TreedefGetter],
             concrete: tf.types.experimental.ConcreteFunction,
             specs: Sequence[tf.TensorSpec], *, flat_args: bool,
             checks_results: bool
             ) -> tuple[FlatCallable, tf.types.experimental.GenericFunction
                        | OwnTraceFunction, TreedefGetter]:
  """``call_tf``'s triple, its trace the user's where it can stand in.

  Args:
    triple: the call's flat callable, its ``tf.function``, and the getter
      of the result tree the callable records when it runs.
    concrete: the user's ``tf.function`` traced for ``specs``.
    specs: the call's argument specs.
    flat_args: whether the call passes its arguments as they are flat.
    checks_results: whether the flat function does more than flatten
      (declared ``output_shape_dtype``, or ``call_tf_graph``).

  Returns:
    ``triple``, or one whose ``tf.function`` is an
    :class:`OwnTraceFunction` and whose tree is the trace's.
  """
  try:
    treedef = (results_treedef(concrete, specs)
               if flat_args and not checks_results else None)
  except Exception:  # pylint: disable=broad-except
    treedef = None  # a trace this cannot read: the flat function's, as before
  if treedef is None:
    return triple
  callable_flat_tf, function_flat_tf, _ = triple
  return (callable_flat_tf,
          OwnTraceFunction(function_flat_tf, FlatTrace(concrete), specs),
          lambda: treedef)
