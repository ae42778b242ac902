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
"""Embedding a function restored from a jax2tf SavedModel, as StableHLO.

A function that ``jax2tf.convert`` saved (and ``tf.saved_model.load``
restored) is, inside, one ``XlaCallModule`` op whose StableHLO module is
shape-polymorphic, plus variable reads and identities; its gradient, when
saved with ``experimental_custom_gradients``, is another ``XlaCallModule``.
Compiling such a function through TensorFlow (``call_tf``'s general path)
loses the polymorphism: TF compiles only for static shapes, so a JAX function
that calls it cannot be exported again with a symbolic batch.

So ``call_tf`` embeds such functions the way ``jax.export`` calls its own
serialized modules: :func:`find_embeddable_module` recognizes one, rebuilds a
``jax.export.Exported`` from the op (argument shapes from the module, symbolic
names recovered from its dimension variables, result shapes by shape
refinement, the saved VJP as its gradient), and :func:`call_embedded` calls it
with the model's variables as constants. The composition of JAX functions and
jax2tf SavedModels is then closed under saving, cycle after cycle.

Everything else (any other op in the function, ``call_tf_graph=True``,
``ordered=True``, an ``output_shape_dtype``) takes ``call_tf``'s general path.

See https://github.com/jax-ml/jax/issues/11753.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import logging
from typing import Any
import weakref

import jax
from jax import lax
from jax import numpy as jnp
from jax import tree_util
from jax._src import core
from jax._src import tree_util as tree_util_internal
from jax._src.export import _export
from jax._src.export import shape_poly
from jax._src.interpreters import mlir
from jax._src.lib import _jax
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import func as func_dialect
from jax._src.lib.mlir.dialects import hlo
from jax.experimental.jax2tf import call_tf_batching
from jax.experimental.jax2tf import call_tf_compile
from jax.experimental.jax2tf import call_tf_shapes
from jax.experimental.jax2tf import jax2tf as jax2tf_internal
import numpy as np
import tensorflow as tf

logger = logging.getLogger(__name__)


class NotEmbeddableError(Exception):
  """The TF function is not (only) a call of one XlaCallModule op."""


# Ops seen through on the way from the outputs to the XlaCallModule.
_ALLOWED_OPS = frozenset({
    "Placeholder", "Identity", "IdentityN", "EnsureShape", "NoOp",
    "ReadVariableOp", "Const", "XlaCallModule", "PartitionedCall",
    "StatefulPartitionedCall", "PreventGradient"})


@dataclasses.dataclass(frozen=True)
class _Source:
  """Where a value comes from.

  ``kind`` is "arg" (``index``: the flat argument), "resource" or "var"
  (``payload``: the ``tf.Variable``), "tensor" (``payload``: a captured
  tensor), "const" (``payload``: an ndarray) or "module" (``payload``: the
  XlaCallModule op, ``index``: its result).
  """
  kind: str
  payload: Any = None
  index: int = 0


def _function_graph(graph: Any, name: str) -> Any:
  g = graph
  while g is not None:
    f = g._get_function(name)  # pylint: disable=protected-access
    if f is not None:
      return f.graph
    g = getattr(g, "outer_graph", None)
  raise NotEmbeddableError(f"cannot find the graph of function {name}")


class _GraphWalker:
  """Follows values through calls, identities and variable reads."""

  def __init__(self):
    self.modules: dict[int, tuple[Any, tuple[_Source, ...]]] = {}
    self.prevents_gradient = False
    self.gradient_op_types: dict[int, bytes] = {}
    self._checked: set[int] = set()

  def check_graph(self, graph: Any) -> None:
    if id(graph) in self._checked:
      return
    self._checked.add(id(graph))
    other = sorted({op.type for op in graph.get_operations()} - _ALLOWED_OPS)
    if other:
      raise NotEmbeddableError(f"the function also has ops {other}")
    for op in graph.get_operations():
      if op.type != "IdentityN":
        continue
      try:
        gradient_type = op.get_attr("_gradient_op_type")
      except ValueError:
        continue
      for i in op.inputs:
        if i.op.type == "XlaCallModule":
          self.gradient_op_types[id(i.op)] = gradient_type

  def resolve(self, t: Any, env: dict[Any, _Source]) -> _Source:
    """Where the value of tensor ``t`` comes from."""
    if t.ref() in env:
      return env[t.ref()]
    op = t.op
    op_type = op.type
    if op_type == "Placeholder":
      raise NotEmbeddableError(f"unbound placeholder {t.name}")
    if op_type in ("Identity", "EnsureShape"):
      return self.resolve(op.inputs[0], env)
    if op_type == "PreventGradient":
      self.prevents_gradient = True
      return self.resolve(op.inputs[0], env)
    if op_type == "IdentityN":
      return self.resolve(op.inputs[t.value_index], env)
    if op_type == "ReadVariableOp":
      src = self.resolve(op.inputs[0], env)
      if src.kind != "resource":
        raise NotEmbeddableError(f"a variable read of {src.kind}")
      return _Source("var", src.payload)
    if op_type == "Const":
      return _Source("const", tf.make_ndarray(op.get_attr("value")))
    if op_type in ("PartitionedCall", "StatefulPartitionedCall"):
      graph = _function_graph(op.graph, op.get_attr("f").name)
      self.check_graph(graph)
      inner_env = {p.ref(): self.resolve(a, env)
                   for p, a in zip(graph.inputs, op.inputs)}
      return self.resolve(graph.outputs[t.value_index], inner_env)
    if op_type == "XlaCallModule":
      operands = tuple(self.resolve(i, env) for i in op.inputs)
      seen = self.modules.get(id(op))
      if seen is not None and seen[1] != operands:
        raise NotEmbeddableError("a module reached with different operands")
      self.modules[id(op)] = (op, operands)
      return _Source("module", op, t.value_index)
    raise NotEmbeddableError(f"op {op_type}")


def _registered_gradient(op_type: bytes) -> Any:
  """The restored gradient function the SavedModel loader registered."""
  from tensorflow.python.framework import ops as tf_ops  # pylint: disable=g-import-not-at-top
  try:
    gradient = tf_ops._gradient_registry.lookup(op_type.decode())  # pylint: disable=protected-access
  except LookupError:
    return None
  for cell in getattr(gradient, "__closure__", None) or ():
    value = cell.cell_contents
    if hasattr(value, "graph") and hasattr(value, "captured_inputs"):
      return value
  return None  # a Python custom gradient, not one restored from disk


def _module_attrs(op: Any) -> dict[str, Any]:
  attrs = {}
  for name in ("module", "version", "platforms", "Tin", "Tout",
               "function_list", "has_token_input_output", "disabled_checks",
               "dim_args_spec"):
    try:
      attrs[name] = op.get_attr(name)
    except ValueError:
      attrs[name] = None
  return attrs


def _owner(v: ir.Value) -> Any:
  owner = v.owner
  return getattr(owner, "operation", owner)


def _input_shape_specs(module_bytes: bytes, nr_platform_args: int
                       ) -> tuple[list[str], bool]:
  """Shape specs (such as "b, 4") of the module's arguments.

  Dynamic dimensions are named after the module's dimension variables: the
  ``jax.global_constant`` arguments of its wrapped main, computed as
  ``get_dimension_size(arg, dim)``, and the dimensions its shape assertions
  compare with them.
  """
  with mlir.make_ir_context() as context:
    module = _jax.mlir.deserialize_portable_artifact(module_bytes, context)
    uses_poly = _module_uses_shape_polymorphism(module)
    symtab = ir.SymbolTable(module.operation)
    main = symtab["main"]
    names: dict[tuple[int, int], str] = {}

    def peel(v: ir.Value) -> ir.Value:
      while not isinstance(v.owner, ir.Block):
        o = _owner(v)
        if o.name not in ("stablehlo.convert", "stablehlo.reshape"):
          break
        v = o.operands[0]
      return v

    def dimension_of(v: ir.Value) -> tuple[int, int] | None:
      v = peel(v)
      if isinstance(v.owner, ir.Block):
        return None
      o = _owner(v)
      if o.name != "stablehlo.get_dimension_size":
        return None
      src = o.operands[0]
      if not isinstance(src.owner, ir.Block):
        return None
      return (ir.BlockArgument(src).arg_number - nr_platform_args,
              ir.IntegerAttr(o.attributes["dimension"]).value)

    def key(v: ir.Value) -> str:
      v = peel(v)
      return (f"arg{ir.BlockArgument(v).arg_number}"
              if isinstance(v.owner, ir.Block) else v.get_name())

    ops = [o.operation for o in main.regions[0].blocks[0].operations]
    variable_of: dict[str, str] = {}
    for op in ops:
      if op.name != "func.call":
        continue
      callee = symtab[ir.FlatSymbolRefAttr(op.attributes["callee"]).value]
      for i, a in enumerate(callee.arg_attrs):
        a = ir.DictAttr(a)
        if "jax.global_constant" not in a:
          continue
        name = ir.StringAttr(a["jax.global_constant"]).value
        variable_of[key(op.operands[i])] = name
        if (d := dimension_of(op.operands[i])) is not None:
          names.setdefault(d, name)
    for op in ops:
      if (op.name != "stablehlo.compare"
          or "EQ" not in str(op.attributes["comparison_direction"])):
        continue
      a, b = op.operands
      for x, y in ((a, b), (b, a)):
        if (d := dimension_of(x)) is not None and key(y) in variable_of:
          names.setdefault(d, variable_of[key(y)])
    specs = []
    for k, t in enumerate(main.type.inputs[nr_platform_args:]):
      t = ir.RankedTensorType(t)
      specs.append(", ".join(
          names.get((k, d), f"_d{k}_{d}") if t.is_dynamic_dim(d)
          else str(t.get_dim_size(d)) for d in range(t.rank)))
  return specs, uses_poly


def _refined_result_shapes(module_bytes: bytes, nr_platform_args: int,
                           in_shapes: Sequence[tuple[int, ...]]
                           ) -> list[tuple[int, ...]]:
  """Result shapes of a shape-polymorphic module for static input shapes."""
  with mlir.make_ir_context() as context, ir.Location.unknown(context):
    module = _jax.mlir.deserialize_portable_artifact(module_bytes, context)
    symtab = ir.SymbolTable(module.operation)
    original = symtab["main"]
    ir.SymbolTable.set_symbol_name(original, "_call_tf_original_main")
    ir.SymbolTable.set_visibility(original, "private")
    original_type = original.type
    inputs = list(original_type.inputs[:nr_platform_args])
    for t, s in zip(original_type.inputs[nr_platform_args:], in_shapes):
      inputs.append(ir.RankedTensorType.get(
          s, ir.RankedTensorType(t).element_type))
    with ir.InsertionPoint.at_block_begin(module.body):
      main = func_dialect.FuncOp("main", (inputs, original_type.results))
    main.attributes["sym_visibility"] = ir.StringAttr.get("public")
    entry = main.add_entry_block()
    with ir.InsertionPoint(entry):
      args = [a if a.type == t else hlo.convert(t, a)
              for a, t in zip(entry.arguments, original_type.inputs)]
      call = func_dialect.CallOp(
          original_type.results,
          ir.FlatSymbolRefAttr.get("_call_tf_original_main"), args)
      func_dialect.ReturnOp(call.results)
    refined = _jax.mlir.refine_polymorphic_shapes(
        mlir.module_to_bytecode(module), enable_shape_assertions=True,
        validate_static_shapes=False,
        enable_shardy=jax.config.jax_use_shardy_partitioner)
    refined_main = ir.SymbolTable(ir.Module.parse(refined).operation)["main"]
    try:
      return list(call_tf_shapes.static_result_shapes(refined_main))
    except ValueError as e:
      raise NotEmbeddableError(f"after shape refinement, {e}")


_EXPORTED = call_tf_compile.LruCache("call_tf: embedded jax2tf modules", 64)


def _check_convention(attrs: dict[str, Any]) -> None:
  if attrs["function_list"]:
    raise NotEmbeddableError("the module calls TF functions (call_tf_graph)")
  if attrs["has_token_input_output"] or attrs["dim_args_spec"]:
    raise NotEmbeddableError("the module uses an old calling convention")


def _jax_dtypes(tf_dtypes: Sequence[Any]) -> list[Any]:
  return [jax2tf_internal._to_jax_dtype(tf.as_dtype(t))  # pylint: disable=protected-access
          for t in tf_dtypes]


def _module_uses_shape_polymorphism(module: ir.Module) -> bool:
  attrs = module.operation.attributes
  return ("jax.uses_shape_polymorphism" in attrs and ir.BoolAttr(
      attrs["jax.uses_shape_polymorphism"]).value)


def _uses_shape_polymorphism(module_bytes: bytes) -> bool:
  with mlir.make_ir_context() as context:
    return _module_uses_shape_polymorphism(
        _jax.mlir.deserialize_portable_artifact(module_bytes, context))


def _exported(attrs: dict[str, Any], fun_name: str,
              in_avals: tuple[core.ShapedArray, ...],
              out_avals: tuple[core.ShapedArray, ...], platforms: tuple[str, ...],
              uses_poly: bool, get_vjp: Callable[..., Any] | None
              ) -> _export.Exported:
  return _export.Exported(
      fun_name=fun_name,
      in_tree=tree_util_internal.tracing_registry.flatten(
          (tuple(range(len(in_avals))), {}))[1],
      in_avals=in_avals,
      out_tree=tree_util.tree_structure(tuple(range(len(out_avals)))),
      out_avals=out_avals,
      _has_named_shardings=True,
      _in_named_shardings=(None,) * len(in_avals),
      _out_named_shardings=(None,) * len(out_avals),
      in_shardings_hlo=(None,) * len(in_avals),
      out_shardings_hlo=(None,) * len(out_avals),
      nr_devices=1,
      platforms=platforms,
      ordered_effects=(),
      unordered_effects=(),
      disabled_safety_checks=tuple(
          _export.DisabledSafetyCheck(c.decode())
          for c in (attrs["disabled_checks"] or ())),
      mlir_module_serialized=attrs["module"],
      calling_convention_version=attrs["version"],
      module_kept_var_idx=tuple(range(len(in_avals))),
      uses_global_constants=uses_poly,
      _get_vjp=get_vjp)


def exported_from_module_op(op: Any, fun_name: str,
                            vjp_op: Any | None = None) -> _export.Exported:
  """A ``jax.export.Exported`` for an XlaCallModule op.

  Args:
    op: the XlaCallModule op.
    fun_name: the name the embedded function gets.
    vjp_op: the XlaCallModule op of its saved VJP, if any. By jax2tf's
      convention it takes the primal operands and the output cotangents and
      returns the operand cotangents, so its shapes are the primal's: they are
      not inferred again (the cotangents' sizes, such as ``2*b``, could not be
      named from the VJP module alone).

  Returns:
    The Exported; with ``vjp()`` if ``vjp_op`` is given.

  Raises:
    NotEmbeddableError: the op cannot be embedded.
  """
  attrs = _module_attrs(op)
  key = attrs["module"] + (vjp_op.get_attr("module") if vjp_op else b"")
  found = _EXPORTED.get(key)
  if found is not None:
    return found
  _check_convention(attrs)
  module_bytes = attrs["module"]
  platforms = (tuple(p.decode().lower() for p in attrs["platforms"])
               or (jax.default_backend(),))
  nr_platform_args = 1 if len(platforms) > 1 else 0
  specs, uses_poly = _input_shape_specs(module_bytes, nr_platform_args)
  scope = shape_poly.SymbolicScope()
  in_avals = tuple(
      core.ShapedArray(jax.export.symbolic_shape(spec, scope=scope), dt)
      for spec, dt in zip(specs, _jax_dtypes(attrs["Tin"])))
  try:
    out_shapes = call_tf_shapes.fit_symbolic_output_shapes(
        in_avals, lambda shapes: _refined_result_shapes(
            module_bytes, nr_platform_args, shapes))
  except ValueError as e:
    raise NotEmbeddableError(str(e))
  out_avals = tuple(core.ShapedArray(s, dt) for s, dt in
                    zip(out_shapes, _jax_dtypes(attrs["Tout"])))
  get_vjp = None
  if vjp_op is not None:
    vjp_attrs = _module_attrs(vjp_op)
    _check_convention(vjp_attrs)
    vjp_in, vjp_out = (_jax_dtypes(vjp_attrs["Tin"]),
                       _jax_dtypes(vjp_attrs["Tout"]))
    if (len(vjp_in) != len(in_avals) + len(out_avals)
        or len(vjp_out) != len(in_avals)):
      raise NotEmbeddableError("the saved gradient has an unexpected signature")
    vjp = _exported(
        vjp_attrs, fun_name + "_vjp",
        tuple(a.update(dtype=dt) for a, dt in zip(in_avals + out_avals,
                                                  vjp_in)),
        tuple(a.update(dtype=dt) for a, dt in zip(in_avals, vjp_out)),
        platforms, _uses_shape_polymorphism(vjp_attrs["module"]), None)
    get_vjp = lambda _: vjp
  exported = _exported(attrs, fun_name, in_avals, out_avals, platforms,
                       uses_poly, get_vjp)
  _EXPORTED.put(key, exported)
  return exported


@dataclasses.dataclass(frozen=True)
class EmbeddedModule:
  """A TF function that is one XlaCallModule, ready to embed.

  Attributes:
    exported: the module, as a ``jax.export.Exported``.
    operands: for each module operand, where its value comes from.
    outputs: for each flat output of the TF function, the module result.
    out_tree: the pytree of the TF function's outputs.
  """
  exported: _export.Exported
  operands: tuple[_Source, ...]
  outputs: tuple[int, ...]
  out_tree: tree_util.PyTreeDef


_FOUND: weakref.WeakKeyDictionary[Any, dict[Any, EmbeddedModule | None]] = (
    weakref.WeakKeyDictionary())


def is_candidate(callable_tf: Any) -> bool:
  """Whether ``callable_tf`` may be a restored jax2tf function.

  Only ``tf.function``s and concrete functions (which is what
  ``tf.saved_model.load`` restores) are inspected; a Python function is
  never embedded, so its own code always runs.
  """
  return (hasattr(callable_tf, "get_concrete_function")
          or hasattr(callable_tf, "structured_outputs"))


def find_embeddable_module(callable_tf: Callable,
                           args_treedef: tree_util.PyTreeDef,
                           args_flat_sig_tf: Sequence[tf.TensorSpec]
                           ) -> EmbeddedModule | None:
  """The embeddable module of ``callable_tf``, or None.

  Args:
    callable_tf: the TF function given to ``call_tf``.
    args_treedef: the pytree of its arguments.
    args_flat_sig_tf: the flat argument specs (None for symbolic sizes).

  Returns:
    An :class:`EmbeddedModule` if the function is (wrappers around) a single
    XlaCallModule with its weights, else None: call_tf then uses its general
    path.
  """
  try:
    cache = _FOUND.setdefault(callable_tf, {})
  except TypeError:  # not weakly referenceable
    cache = {}
  key = (args_treedef, tuple(args_flat_sig_tf))
  if key in cache:
    return cache[key]
  found = None
  try:
    def flat_fun(*args_flat):
      return callable_tf(*args_treedef.unflatten(args_flat))
    with jax2tf_internal.inside_call_tf():
      concrete_fn = tf.function(flat_fun, autograph=False
                                ).get_concrete_function(*args_flat_sig_tf)
    walker = _GraphWalker()
    walker.check_graph(concrete_fn.graph)
    graph = concrete_fn.graph
    internal = list(graph.internal_captures)
    env = {p.ref(): _Source("arg", None, i) for i, p in enumerate(
        graph.inputs[:len(graph.inputs) - len(internal)])}
    for ic, obj in zip(internal,
                       call_tf_compile.captured_objects(concrete_fn)):
      env[ic.ref()] = (_Source("resource", obj) if isinstance(obj, tf.Variable)
                       else _Source("tensor", obj))
    outs = list(graph.outputs)
    if len(tree_util.tree_leaves(concrete_fn.structured_outputs)) != len(outs):
      raise NotEmbeddableError("outputs that are not tensors")
    sources = [walker.resolve(t, env) for t in outs]
    if len(walker.modules) != 1 or any(s.kind != "module" for s in sources):
      raise NotEmbeddableError(
          f"{len(walker.modules)} XlaCallModule ops reach the outputs")
    (op, operands), = walker.modules.values()
    vjp_op = None
    if not walker.prevents_gradient and id(op) in walker.gradient_op_types:
      gradient = _registered_gradient(walker.gradient_op_types[id(op)])
      if gradient is not None:
        vjp_ops = [o for o in gradient.graph.get_operations()
                   if o.type == "XlaCallModule"]
        if len(vjp_ops) == 1:
          vjp_op = vjp_ops[0]
    name = "".join(c if c.isalnum() else "_"
                   for c in getattr(callable_tf, "__name__", "tf_function"))
    found = EmbeddedModule(
        exported=exported_from_module_op(op, f"call_tf_{name}", vjp_op),
        operands=operands, outputs=tuple(s.index for s in sources),
        out_tree=tree_util.tree_structure(tree_util.tree_map(
            lambda _: 0, concrete_fn.structured_outputs)))
  except NotEmbeddableError as e:
    logger.debug("call_tf: the general path for %s: %s", callable_tf, e)
  except Exception as e:  # pylint: disable=broad-except
    # Embedding is an optimization of the general path, never a new failure.
    logger.warning(
        "call_tf could not embed %s as StableHLO (%s: %s); it takes the "
        "general path, which compiles it with TensorFlow for static shapes "
        "only.", getattr(callable_tf, "__name__", callable_tf),
        type(e).__name__, e)
  cache[key] = found
  return found


def _batched_call(fun: Callable, nr_batchable: int, vmap_method: str | None,
                  out_ranks: Sequence[int]) -> Callable:
  """``fun`` with a ``custom_vmap`` rule implementing ``vmap_method``.

  Only the first ``nr_batchable`` arguments may be batched (the call's
  arguments; the others are the model's weights, constants). ``out_ranks``
  are the ranks of ``fun``'s results, to check the one-call methods' results.
  """
  @jax.custom_batching.custom_vmap
  def f(*args):
    return tuple(fun(*args))

  @f.def_vmap
  def rule(axis_size, in_batched, *args):
    if any(in_batched[nr_batchable:]):
      raise NotImplementedError(
          "call_tf of a jax2tf-saved function: only its arguments can be "
          "batched by jax.vmap.")
    batchable = list(args[:nr_batchable])
    weights = list(args[nr_batchable:])
    batched = list(in_batched[:nr_batchable])
    slow_ok = vmap_method is None and bool(
        jax.config.jax_call_tf_slow_vmap)
    if vmap_method == "sequential" or slow_ok:
      unbatched = [a for a, b in zip(batchable, batched) if not b]

      def one(elems):
        it_b, it_u = iter(elems), iter(unbatched)
        merged = [next(it_b) if b else next(it_u) for b in batched]
        return f(*merged, *weights)

      outs = lax.map(one, [a for a, b in zip(batchable, batched) if b])
      return tuple(outs), (True,) * len(outs)
    if vmap_method in (None, "vectorized"):
      raise call_tf_batching.opaque_module_error(vmap_method)
    if vmap_method == "batch_polymorphic":
      merged = []
      for a, b in zip(batchable, batched):
        if not b:
          a = jnp.broadcast_to(a, (axis_size, *a.shape))
        if a.ndim < 2:
          raise ValueError(
              "jax.vmap of call_tf with vmap_method='batch_polymorphic' "
              "merges the batch into axis 0 of every argument, but an "
              f"argument has shape {a.shape[1:]}.")
        merged.append(a.reshape((axis_size * a.shape[1], *a.shape[2:])))
      outs = f(*merged, *weights)
      return tuple(o.reshape((axis_size, o.shape[0] // axis_size,
                              *o.shape[1:])) for o in outs), (
                                  (True,) * len(outs))
    size = axis_size if vmap_method == "broadcast_all" else 1
    expanded = [a if b else jnp.broadcast_to(a, (size, *a.shape))
                for a, b in zip(batchable, batched)]
    outs = f(*expanded, *weights)
    for i, (o, rank) in enumerate(zip(outs, out_ranks)):
      if o.ndim != rank + 1 or o.shape[0] not in (1, axis_size):
        raise ValueError(
            f"jax.vmap of call_tf (vmap_method={vmap_method!r}) of a function "
            f"saved by jax2tf: result {i} has shape {o.shape}, expected the "
            f"batch ({axis_size}) at axis 0 of a result of rank {rank}. With "
            "this vmap_method the saved function must take a leading batch "
            "axis; use 'batch_polymorphic' or 'sequential'.")
    return tuple(jnp.broadcast_to(o, (axis_size, *o.shape[1:]))
                 for o in outs), (True,) * len(outs)

  return f


def call_embedded(embedded: EmbeddedModule, args_flat: Sequence[Any],
                  vmap_method: str | None) -> Any:
  """Calls an embedded module on JAX values.

  Args:
    embedded: from :func:`find_embeddable_module`.
    args_flat: the flat arguments of the call.
    vmap_method: how ``jax.vmap`` batches the call (as for ``call_tf``).

  Returns:
    The results, in the pytree of the TF function's outputs.
  """
  exported = embedded.exported
  operands = embedded.operands
  constant_sources = [s for s in operands if s.kind != "arg"]
  values = iter(call_tf_compile.read_captured_values(
      [s.payload for s in constant_sources if s.kind in ("var", "tensor")]))
  weights = [np.asarray(s.payload) if s.kind == "const" else next(values)
             for s in constant_sources]
  arg_indices = [s.index for s in operands if s.kind == "arg"]
  nr_args = len(arg_indices)

  def module_operands(args, weights):
    it_a, it_w = iter(args), iter(weights)
    return [next(it_a) if s.kind == "arg" else next(it_w) for s in operands]

  primal = _batched_call(
      lambda *a: exported.call(*module_operands(a[:nr_args], a[nr_args:])),
      nr_args, vmap_method, [len(a.shape) for a in exported.out_avals])

  def vjp_fun(*a):
    args = a[:nr_args]
    cts = a[nr_args:nr_args + len(exported.out_avals)]
    weights = a[nr_args + len(exported.out_avals):]
    cts_all = exported.vjp().call(*module_operands(args, weights), *cts)
    return [ct for ct, s in zip(cts_all, operands) if s.kind == "arg"]

  vjp = _batched_call(vjp_fun, nr_args + len(exported.out_avals),
                      call_tf_batching.vjp_vmap_method(vmap_method),
                      [len(a.shape) for a, s in zip(exported.in_avals, operands)
                       if s.kind == "arg"])

  @jax.custom_vjp
  def call(*args):
    return tuple(primal(*args, *weights))

  def call_fwd(*args):
    return call(*args), args

  def call_bwd(args, cts):
    if not exported.has_vjp():
      raise ValueError(
          f"call_tf cannot differentiate {exported.fun_name}: the SavedModel "
          "was saved without its gradient. Save it with "
          "tf.saved_model.SaveOptions(experimental_custom_gradients=True) "
          "(and jax2tf.convert(..., with_gradient=True), the default).")
    return tuple(vjp(*args, *cts, *weights))

  call.defvjp(call_fwd, call_bwd)
  results = call(*[args_flat[i] for i in arg_indices])
  return embedded.out_tree.unflatten([results[i] for i in embedded.outputs])


def _arg_spec(a: Any) -> tf.TensorSpec:
  dtype = jax.dtypes.canonicalize_dtype(
      a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype)
  return tf.TensorSpec(
      [d if core.is_constant_dim(d) else None for d in np.shape(a)],
      jax2tf_internal._to_tf_dtype(dtype))  # pylint: disable=protected-access


def embedding_or(callable_tf: Callable, general: Callable,
                 vmap_method: str | None) -> Callable:
  """``call_tf``'s callable: embeds ``callable_tf`` if it can, else ``general``.

  Args:
    callable_tf: the TF function given to ``call_tf``.
    general: ``call_tf``'s general path (the ``call_tf_p`` primitive).
    vmap_method: the ``vmap_method`` given to ``call_tf``.

  Returns:
    A function of JAX arguments that, for each argument signature, embeds the
    function's module when :func:`find_embeddable_module` finds one.
  """
  def call(*args_jax):
    args_flat, args_treedef = tree_util.tree_flatten(args_jax)
    embedded = find_embeddable_module(
        callable_tf, args_treedef, tuple(map(_arg_spec, args_flat)))
    if embedded is None:
      return general(*args_jax)
    return call_embedded(embedded, args_flat, vmap_method)
  return call
