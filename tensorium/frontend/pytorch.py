"""The PyTorch frontend: torch.export and TorchDynamo graphs translated into the graph IR.

:func:`import_module` captures a model with ``torch.export``, runs the core ATen decompositions
(keeping ``scaled_dot_product_attention``, ``rms_norm`` and ``mv``, which map to graph ops directly) and
translates each ATen node through the converter table of :mod:`.pytorch_ops`.
:func:`make_dynamo_backend` makes TorchDynamo backends: TorchDynamo splits data-dependent Python control flow
at graph breaks and each subgraph runs on Tensorium (``torch.compile(backend="tensorium")`` is
:func:`tensorium.api.dynamo_backend`, which compiles each subgraph for a target; :data:`dynamo_backend` here
runs them on the interpreter).
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import TensoriumError
from ..ir.builder import InsertionPoint
from ..ir.core import Value
from ..ir.dialects.builtin import func_body, make_func, make_module, set_results
from ..ir.types import Sym, TensorType, Type, f64, i1, i64
from .common import ImportedGraph, Unsupported, UnsupportedOpsError

try:
    import torch
except ImportError as e:  # pragma: no cover - exercised only without the torch extra
    raise ImportError("the PyTorch frontend needs torch: pip install 'tensorium[torch]'") from e

from . import pytorch_ops as ops
from .export_advice import DataDependentExportError, TorchExportError
from .fx_rewrites import unflatten_linear
from .pytorch_export import decompose, export, widen_size_one
from .pytorch_unsupported import missing_reason
from .symbolic_dims import dim_sources

__all__ = [
    "DataDependentExportError",
    "InferenceOnlyError",
    "SubgraphBuilder",
    "TorchExportError",
    "dynamo_backend",
    "flatten_inputs",
    "import_module",
    "make_dynamo_backend",
    "translate_graph",
    "unflatten_outputs",
]


_KEPT_HIGH_LEVEL = ("scaled_dot_product_attention.default", "rms_norm.default", "mv.default")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def import_module(
    model: Any,
    example_args: tuple[Any, ...],
    example_kwargs: dict[str, Any] | None = None,
    *,
    params: str = "constants",
    dynamic_shapes: Any = None,
) -> ImportedGraph:
    """Translate an ``nn.Module`` (or a function of tensors) into a module whose @main runs it.

    ``params="constants"`` folds parameters and buffers in as ``graph.constant`` ops;
    ``params="inputs"`` makes them extra arguments after the user inputs, with their values in
    ``metadata["params"]`` (argument name -> numpy array). Dims that ``dynamic_shapes`` marks
    dynamic become named symbolic dims (the ``torch.export.Dim`` name where one was given).
    ``metadata["decomposed"]`` says whether torch's ATen decompositions had to run first.
    """
    if params not in ("constants", "inputs"):
        raise TensoriumError(f"params must be 'constants' or 'inputs', got {params!r}")
    module = model if isinstance(model, torch.nn.Module) else _FunctionModule(model)
    args = tuple(_to_torch(a) for a in example_args)
    kwargs = {k: _to_torch(v) for k, v in (example_kwargs or {}).items()}
    signature_of = model.forward if isinstance(model, torch.nn.Module) else model
    specs = _per_argument_specs(signature_of, args, kwargs, dynamic_shapes)
    args, kwargs = widen_size_one(args, kwargs, specs)
    if isinstance(model, torch.nn.Module) or specs is None:
        exported = _export(module, args, kwargs, dynamic_shapes)
    else:
        # The wrapper's forward takes (*args, **kwargs): specs go in the same two groups.
        positional = tuple(spec for _, _, spec in specs[: len(args)])
        named = {name: spec for name, _, spec in specs[len(args) :]}
        exported = _export(module, args, kwargs, (positional, named) if named else (positional,))
    if _converts_directly(exported):
        # The training IR's ops all have converters: skip torch's decompositions, a second full trace of
        # the model (about 1.5 s for a small transformer with symbolic shapes). Should a converter still
        # refuse one, the decomposed graph is the fallback.
        try:
            imported = _translate_exported(exported, params, _symbol_names(exported, specs))
            imported.metadata["decomposed"] = False
            return imported
        except TensoriumError:
            pass
    exported = decompose(exported, _decomposition_table())
    imported = _translate_exported(exported, params, _symbol_names(exported, specs))
    imported.metadata["decomposed"] = True
    return imported


def _decomposition_table() -> dict[Any, Any]:
    """torch.export's default decompositions, less the high-level ops Tensorium converts itself."""
    table = torch.export.default_decompositions()
    for name in _KEPT_HIGH_LEVEL:
        overload = getattr(torch.ops.aten, name.split(".")[0]).default
        if overload in table:
            table.pop(overload)
    return table


def _converts_directly(exported: Any) -> bool:
    """Whether every op of the exported (training IR) graph has a converter and none mutates its inputs,
    so the graph can be translated without running torch's decompositions first."""
    for node in exported.graph.nodes:
        if node.op != "call_function" or not _needs_converter(node):
            continue
        target = node.target
        if not isinstance(target, torch._ops.OpOverload) or ops.lookup_converter(target) is None:
            return False
        if target._schema.is_mutable and ops.target_name(target) not in _PURE_IN_PLACE:
            return False
    return True


# In-place ops whose result is their input's value unchanged (``detach_`` only drops autograd history).
_PURE_IN_PLACE = frozenset({"aten.detach_.default"})


def unflatten_outputs(imported: ImportedGraph, flat: Sequence[Any]) -> Any:
    """Rebuild the model's output structure (tuples, dicts, model-output classes) from flat results; results
    torch gives as Python numbers (``x.item()``, sizes) come back as numbers."""
    numbers = set(imported.metadata.get("number_outputs") or ())
    flat = [v.item() if i in numbers and hasattr(v, "item") else v for i, v in enumerate(flat)]
    if imported.output_tree is None:
        return list(flat)
    return torch.utils._pytree.tree_unflatten(list(flat), imported.output_tree)


def flatten_inputs(imported: ImportedGraph, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> list[Any]:
    """The tensor leaves of ``(args, kwargs)`` in the order of @main's user inputs."""
    spec = imported.metadata.get("in_spec")
    leaves = torch.fx._pytree.tree_flatten_spec((tuple(args), dict(kwargs or {})), spec) if spec else list(args)
    positions = imported.metadata.get("user_input_positions", range(len(leaves)))
    return [leaves[i] for i in positions]


# export ----------------------------------------------------------------------------------------
class _FunctionModule(torch.nn.Module):
    """Wraps a plain function so torch.export can capture it."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _to_torch(x: Any) -> Any:
    return torch.from_numpy(np.asarray(x, order="C")) if isinstance(x, np.ndarray) else x


def _export(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], dynamic_shapes: Any) -> Any:
    return export(module, args, kwargs, dynamic_shapes)


def _per_argument_specs(fn: Any, args: tuple, kwargs: dict, dynamic_shapes: Any) -> list[tuple[str, Any, Any]] | None:
    """(name, value, spec) per bound argument, in signature order, from ``dynamic_shapes`` given as a
    tuple by position or a dict by parameter name."""
    if dynamic_shapes is None:
        return None
    try:
        bound = list(inspect.signature(fn).bind(*args, **kwargs).arguments.items())
    except (TypeError, ValueError):
        return None
    if isinstance(dynamic_shapes, dict):
        specs = [dynamic_shapes.get(name) for name, _ in bound]
    else:
        specs = list(dynamic_shapes) + [None] * (len(bound) - len(dynamic_shapes))
    return [(name, value, spec) for (name, value), spec in zip(bound, specs)]


def _symbol_names(exported: Any, specs: list[tuple[str, Any, Any]] | None) -> dict[str, str]:
    """Map torch's shape symbols (``s0``) to the names of the ``torch.export.Dim`` the user gave."""
    if specs is None:
        return {}
    values = [value for _, value, _ in specs]
    user_inputs = [
        node
        for node, spec in zip(_placeholders(exported), exported.graph_signature.input_specs)
        if spec.kind == torch.export.graph_signature.InputKind.USER_INPUT
    ]
    if len(user_inputs) != len(values) or not all(isinstance(v, torch.Tensor) for v in values):
        return {}
    names: dict[str, str] = {}
    for node, (_, _, spec) in zip(user_inputs, specs):
        per_axis = spec.items() if isinstance(spec, dict) else enumerate(spec or ())
        for axis, dim in per_axis:
            size = node.meta["val"].shape[axis]
            if isinstance(dim, torch.export.Dim) and isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
                names[str(size.node.expr)] = dim.__name__
    return names


def _placeholders(exported: Any) -> list[Any]:
    return [n for n in exported.graph.nodes if n.op == "placeholder"]


def _translate_exported(exported: Any, params: str, sym_names: dict[str, str]) -> ImportedGraph:
    kinds = torch.export.graph_signature.InputKind
    cx = ops.Context(sym_names)
    user: list[tuple[Any, Type]] = []
    lifted: list[tuple[Any, np.ndarray, str]] = []
    constants: dict[Any, np.ndarray] = {}
    fixed: dict[Any, Any] = {}
    positions: list[int] = []
    tokens: dict[Any, Any] = {}
    for node, spec in zip(_placeholders(exported), exported.graph_signature.input_specs):
        if spec.kind == kinds.USER_INPUT:
            val = node.meta.get("val")
            if isinstance(val, torch.Tensor):
                positions.append(len(user) + len(fixed))
                user.append((node, _value_type(cx, val)))
            else:
                fixed[node] = val
            continue
        if spec.kind == kinds.TOKEN:
            tokens[node] = ops.EFFECT_TOKEN  # threaded through error checks (ops.with_effects)
            continue
        if spec.kind not in (kinds.PARAMETER, kinds.BUFFER, kinds.CONSTANT_TENSOR):
            raise TorchExportError(f"input '{node.name}' of kind {spec.kind.name} is not supported")
        tensor = exported.state_dict.get(spec.target)
        if tensor is None:
            tensor = exported.constants[spec.target]
        array = _to_numpy(tensor)
        if params == "inputs" and spec.kind != kinds.CONSTANT_TENSOR:
            lifted.append((node, array, spec.target))
        else:
            constants[node] = array
    arg_nodes = [n for n, _ in user] + [n for n, _, _ in lifted]
    arg_types = [t for _, t in user] + [_value_type(cx, n.meta["val"]) for n, _, _ in lifted]
    func = make_func("main", arg_types, arg_names=[n.name for n in arg_nodes])
    cx.main = func
    env: dict[Any, Any] = dict(zip(arg_nodes, func_body(func).args))
    cx.dim_sources = dim_sources(func_body(func).args)
    if sym_names or any(isinstance(d, Sym) for t in arg_types if isinstance(t, TensorType) for d in t.shape):
        unflatten_linear(exported.graph)
    env.update(fixed)
    env.update(tokens)
    with InsertionPoint(func_body(func)):
        for node, array in constants.items():
            env[node] = cx.const(array, ops.ir_element(node.meta["val"].dtype))
        outputs = translate_graph(exported.graph, env, cx)
    user_outputs = [
        (out, spec)
        for out, spec in zip(outputs, exported.graph_signature.output_specs)
        if spec.kind == torch.export.graph_signature.OutputKind.USER_OUTPUT
    ]
    set_results(func, [v for v, _ in user_outputs])
    user_kind = torch.export.graph_signature.OutputKind.USER_OUTPUT
    returned = [
        arg
        for arg, spec in zip(exported.graph.output_node().args[0], exported.graph_signature.output_specs)
        if spec.kind == user_kind
    ]
    number_types = (bool, int, float, torch.SymBool, torch.SymInt, torch.SymFloat)
    numbers = [i for i, arg in enumerate(returned) if isinstance(_node_value(arg), number_types)]
    out_spec = exported.call_spec.out_spec
    input_names = [n.name for n in arg_nodes]
    metadata = {
        "framework": "torch",
        "torch_version": torch.__version__,
        "params": {n.name: a for n, a, _ in lifted},
        "param_targets": {n.name: target for n, _, target in lifted},
        "param_mode": params,
        "in_spec": exported.call_spec.in_spec,
        "user_input_positions": positions,
        "output_tree_json": _tree_json(out_spec),
        "number_outputs": numbers,
        "dim_ranges": _dim_ranges(exported, sym_names),
    }
    ops.bind_generator(cx, input_names, metadata)
    return ImportedGraph(
        module=make_module([func]),
        input_names=input_names,
        output_names=[spec.arg.name for _, spec in user_outputs],
        output_tree=out_spec,
        metadata=metadata,
    )


def _dim_ranges(exported: Any, sym_names: dict[str, str]) -> dict[str, tuple[int, int | None]]:
    """The sizes torch.export proved the graph for, by symbolic dim name: ``(least, most)``, None for no
    upper bound. Only real limits are kept: a least size above 2 (torch's own floor, from specializing sizes
    0 and 1, which :func:`~.pytorch_export.widen_size_one` works around) or a finite most size."""
    ranges: dict[str, tuple[int, int | None]] = {}
    for symbol, bounds in getattr(exported, "range_constraints", {}).items():
        name = sym_names.get(str(symbol), str(symbol))
        least, most = _finite(bounds.lower) or 0, _finite(bounds.upper)
        if most is not None and most >= 2**62:
            most = None
        if least > 2 or most is not None:
            ranges[name] = (least, most)
    return ranges


def _finite(bound: Any) -> int | None:
    """A range bound of torch's as an int; None for an infinite one (``int(int_oo)`` fails inside sympy)."""
    import sympy

    return int(bound) if isinstance(bound, (int, sympy.Integer)) else None


def _node_value(arg: Any) -> Any:
    """An FX output argument's example value (the argument itself when it is a constant)."""
    if isinstance(arg, torch.fx.Node):
        return arg.meta.get("val", arg.meta.get("example_value"))
    return arg


def _tree_json(spec: Any) -> str | None:
    """The output pytree spec as JSON (None for structures torch cannot serialize)."""
    try:
        return str(torch.utils._pytree.treespec_dumps(spec))
    except Exception:
        return None


def _to_numpy(tensor: Any) -> np.ndarray:
    t = tensor.detach().cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return np.asarray(t.numpy(), order="C")


def _value_type(cx: ops.Context, val: Any) -> TensorType:
    try:
        element = ops.ir_element(val.dtype)
    except ops.ConversionError as e:
        raise TorchExportError(str(e)) from None
    return TensorType(tuple(cx.dim(s) for s in val.shape), element)


# translation -----------------------------------------------------------------------------------
class _Poisoned:
    """Stands for the value of a node that could not be converted, so later nodes are skipped."""


_POISON = _Poisoned()


def translate_graph(fx_graph: Any, env: dict[Any, Any], cx: ops.Context) -> list[Value]:
    """Convert every node of ``fx_graph`` at the current insertion point; returns the output values.

    ``env`` maps placeholder nodes to values. Raises UnsupportedOpsError listing every node
    without a converter, or whose converter rejected its arguments, with its source line.
    """
    missing = [
        _unsupported(node, missing_reason(ops.target_name(node.target)))
        for node in fx_graph.nodes
        if node.op == "call_function" and _needs_converter(node) and ops.lookup_converter(node.target) is None
    ]
    if missing:
        raise UnsupportedOpsError("torch", missing)
    problems: list[Unsupported] = []
    outputs: list[Any] = []
    for node in fx_graph.nodes:
        if node.op == "placeholder":
            if node not in env:
                raise TorchExportError(f"graph input '{node.name}' has no value")
        elif node.op == "get_attr":
            attr = getattr(fx_graph.owning_module, node.target)
            env[node] = cx.const(_to_numpy(attr), ops.ir_element(attr.dtype))
        elif node.op == "call_function":
            env[node] = _convert_node(node, env, cx, problems)
        elif node.op == "output":
            outputs = list(torch.fx.node.map_arg(node.args[0], lambda n: env[n]))
        else:
            problems.append(_unsupported(node, f"FX '{node.op}' nodes are not supported"))
    if problems:
        raise UnsupportedOpsError("torch", problems)
    outputs = [_number_output(cx, v) for v in outputs]  # at the caller's insertion point
    bad = [v for v in outputs if not isinstance(v, Value) and v is not ops.EFFECT_TOKEN]
    if bad:
        raise UnsupportedOpsError("torch", [Unsupported("output", "output", None, f"non-tensor output {bad[0]!r}")])
    return outputs


def _number_output(cx: ops.Context, value: Any) -> Any:
    """A Python number the graph returns (``torch.broadcast_shapes``' sizes) as a 0-d constant (int64, float64
    or bool); :func:`unflatten_outputs` gives it back as a number."""
    if isinstance(value, bool):
        return cx.const(value, i1)
    if isinstance(value, int):
        return cx.const(value, i64)
    if isinstance(value, float):
        return cx.const(value, f64)
    return value


def _needs_converter(node: Any) -> bool:
    name = ops.target_name(node.target)
    return name not in ops.IGNORED and name != "operator.getitem" and not _is_shape_arithmetic(node)


def _is_shape_arithmetic(node: Any) -> bool:
    """Nodes computing sizes (sym_size, SymInt arithmetic) rather than tensors."""
    if ops.target_name(node.target).startswith("aten.sym_"):
        return True
    val = node.meta.get("val", node.meta.get("example_value"))
    scalar = isinstance(val, (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool))
    return scalar and not isinstance(node.target, torch._ops.OpOverload)


def _convert_node(node: Any, env: dict[Any, Any], cx: ops.Context, problems: list[Unsupported]) -> Any:
    name = ops.target_name(node.target)
    if name in ops.IGNORED:
        return None
    if _is_shape_arithmetic(node):
        cx.node = node
        val = node.meta.get("val", node.meta.get("example_value"))
        return cx.dim(val) if isinstance(val, (int, torch.SymInt)) else val
    args = torch.fx.node.map_arg(node.args, lambda n: env[n])
    kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
    if _contains_poison(args) or _contains_poison(kwargs):
        return _POISON
    if name == "operator.getitem":
        item = args[0][args[1]]
        if item is None:
            problems.append(_unsupported(node, "uses a secondary result the frontend does not compute"))
            return _POISON
        return item
    converter = ops.lookup_converter(node.target)
    assert converter is not None
    cx.node = node
    try:
        return converter(cx, *args, **kwargs)
    except ops.ConversionError as e:
        problems.append(_unsupported(node, str(e)))
    except TensoriumError as e:
        problems.append(_unsupported(node, f"invalid graph op: {e}"))
    return _POISON


def _contains_poison(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_contains_poison(v) for v in value)
    if isinstance(value, dict):
        return any(_contains_poison(v) for v in value.values())
    return value is _POISON


def _unsupported(node: Any, reason: str) -> Unsupported:
    return Unsupported(ops.target_name(node.target), node.name, _source_line(node), reason)


def _source_line(node: Any) -> str | None:
    """``file:line in function: code`` of the innermost frame of the node's stack trace."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    # The wrapper of plain functions is not the user's code: torch records only forward frames.
    frames = [f for f in _FRAME.findall(trace) if not f[0].startswith(_PACKAGE_DIR)]
    if not frames:
        return None
    file, line, function, code = frames[-1]
    return f"{file}:{line} in {function}: {code.strip()}"


# TorchDynamo backend -----------------------------------------------------------------------------
SubgraphBuilder = Callable[[ImportedGraph], Callable[[list[np.ndarray]], Sequence[np.ndarray]]]
"""Turns one translated Dynamo subgraph into a function from its input arrays to its output arrays."""


class InferenceOnlyError(TensoriumError):
    """Gradients were asked of a graph Tensorium compiled: it compiles inference only."""


def make_dynamo_backend(build: SubgraphBuilder) -> Callable[..., Any]:
    """A TorchDynamo backend that runs each subgraph through ``build``.

    Each subgraph is traced to ATen (core decompositions) for the shapes, dtypes and integer inputs of a
    call, translated and handed to ``build`` (the API layer compiles it for a target); a new signature
    traces again. Outputs of a call that could need gradients carry a backward that raises
    :class:`InferenceOnlyError`.
    """

    def backend(gm: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        compiled: dict[tuple[Any, ...], Callable[[list[np.ndarray]], Sequence[np.ndarray]]] = {}

        def run(*args: Any) -> Any:
            key = tuple(
                (tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else (type(a).__name__, a) for a in args
            )
            if key not in compiled:
                compiled[key] = build(_import_subgraph(gm, args))
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
                return _InferenceOnly.apply(compiled[key], *tensors)
            return _run_arrays(compiled[key], tensors)

        return run

    return backend


def _run_arrays(fn: Callable[[list[np.ndarray]], Sequence[np.ndarray]], tensors: Sequence[Any]) -> tuple[Any, ...]:
    results = fn([_to_numpy(t) for t in tensors])
    return tuple(torch.from_numpy(np.asarray(r, order="C")) for r in results)


class _InferenceOnly(torch.autograd.Function):
    """Runs a compiled subgraph; its backward says that Tensorium compiles inference."""

    @staticmethod
    def forward(ctx: Any, fn: Any, *tensors: Any) -> Any:
        return _run_arrays(fn, tensors)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise InferenceOnlyError(
            "Tensorium compiles inference: gradients through a torch.compile(backend='tensorium') graph are not "
            "supported; train with another backend (or eager) and compile the trained model under torch.no_grad()"
        )


def _interpret(imported: ImportedGraph) -> Callable[[list[np.ndarray]], Sequence[np.ndarray]]:
    from ..backends import interp
    from ..passes import PassManager

    PassManager.parse("canonicalize,cse,fold,dce").run(imported.module)
    key = imported.metadata.get("generator")
    if key is None:
        return lambda arrays: interp.run(imported.module, arrays)
    state = imported.metadata["params"][key]

    def run(arrays: list[np.ndarray]) -> Sequence[np.ndarray]:
        outs = interp.run(imported.module, [*arrays, state.copy()])
        state[1] += 1  # the next call draws fresh numbers
        return outs

    return run


dynamo_backend = make_dynamo_backend(_interpret)
"""The Dynamo backend on the reference interpreter (``torch.compile(backend="tensorium")`` compiles for the CPU:
:func:`tensorium.api.dynamo_backend`)."""


def _import_subgraph(gm: Any, args: Sequence[Any]) -> ImportedGraph:
    """Trace ``gm`` on ``args`` to core ATen and translate it into a module (canonicalized and folded)."""
    from torch._decomp import core_aten_decompositions
    from torch.fx.experimental.proxy_tensor import make_fx

    table = dict(core_aten_decompositions())
    for name in _KEPT_HIGH_LEVEL:
        table.pop(getattr(torch.ops.aten, name.split(".")[0]).default, None)
    with torch.no_grad():
        traced = make_fx(gm, decomposition_table=table, tracing_mode="real")(*args)
    cx = ops.Context()
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    tensors = [(n, a) for n, a in zip(placeholders, args) if isinstance(a, torch.Tensor)]
    func = make_func(
        "main",
        [TensorType(tuple(a.shape), ops.ir_element(a.dtype)) for _, a in tensors],
        arg_names=[f"arg{i}" for i in range(len(tensors))],
    )
    cx.main = func
    env: dict[Any, Any] = {n: v for (n, _), v in zip(tensors, func_body(func).args)}
    env.update({n: a for n, a in zip(placeholders, args) if not isinstance(a, torch.Tensor)})
    with InsertionPoint(func_body(func)):
        outputs = translate_graph(traced.graph, env, cx)
    set_results(func, outputs)
    input_names = [f"arg{i}" for i in range(len(tensors))]
    metadata: dict[str, Any] = {"framework": "torch", "torch_version": torch.__version__, "capture": "dynamo"}
    ops.bind_generator(cx, input_names, metadata)
    return ImportedGraph(
        module=make_module([func]),
        input_names=input_names,
        output_names=[f"out{i}" for i in range(len(outputs))],
        metadata=metadata,
    )
