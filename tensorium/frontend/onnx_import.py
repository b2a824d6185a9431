"""The ONNX frontend: translate an ONNX model into a graph-dialect module.

``import_onnx`` checks the model, turns initializers into ``graph.constant`` ops, gives each graph
input a tensor type (``dim_param`` dims become named symbolic dims, missing dims ``?``) and converts
nodes in order through the converter table of :mod:`tensorium.frontend.onnx_ops`. A node whose
inputs are all known at import time is folded to constants, so shape computations (Shape, Gather,
Concat feeding a Reshape) vanish. Every node that cannot be translated is collected and reported
at once in an :class:`UnsupportedOpsError`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from ..errors import TensoriumError
from ..ir.attributes import DenseAttr
from ..ir.builder import InsertionPoint
from ..ir.core import Block, Operation, Value
from ..ir.dialects.builtin import func_body, make_func, make_module, set_results
from ..ir.evaluate import evaluate_op
from ..ir.types import DYN, Dim, Sym, TensorType
from ..ir.verifier import verify
from . import (  # noqa: F401  (register their converters)
    onnx_control,
    onnx_geometry,
    onnx_llm,
    onnx_nn,
    onnx_pool,
    onnx_qlinear,
    onnx_quant,
    onnx_resize,
    onnx_rnn,
    onnx_signal,
    onnx_tensor_ops,
    onnx_training,
)
from .common import ImportedGraph, Unsupported, UnsupportedOpsError
from .onnx_context import ConversionError, FailedInput, Node, constant_value, scalar_type, tensor_type, to_storage
from .onnx_functions import function_converter
from .onnx_ops import CONVERTERS

__all__ = ["OnnxError", "OnnxUnsupportedError", "import_onnx", "load_model"]

_DEFAULT_DOMAINS = ("", "ai.onnx")
_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


class OnnxError(TensoriumError):
    """An ONNX model that cannot be read or is invalid."""


class OnnxUnsupportedError(UnsupportedOpsError):
    """Unsupported ONNX nodes; ``constant_inputs`` names the graph inputs whose values, given as
    ``constant_inputs=`` to :func:`import_onnx`, would settle every "must be a constant" failure
    (empty when some failure has another cause)."""

    def __init__(self, items: list[Unsupported], constant_inputs: list[str]):
        super().__init__("onnx", items)
        self.constant_inputs = constant_inputs


def load_model(model: onnx.ModelProto | str | os.PathLike[str]) -> onnx.ModelProto:
    """Read (when given a path) and check an ONNX model; OnnxError when it is missing or invalid."""
    if not isinstance(model, onnx.ModelProto):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise OnnxError(f"ONNX model file '{path}' does not exist")
        try:
            model = onnx.load(path)
        except Exception as e:  # protobuf raises its own DecodeError, which is no TensoriumError
            raise OnnxError(f"cannot read ONNX model '{path}': {e}") from None
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "invalid model"
        raise OnnxError(f"invalid ONNX model: {first}") from None
    return model


def import_onnx(
    model: onnx.ModelProto | str | os.PathLike[str],
    *,
    input_shapes: Mapping[str, Sequence[int | str | None]] | None = None,
    constant_inputs: Mapping[str, np.ndarray] | None = None,
) -> ImportedGraph:
    """Translate an ONNX model (a ModelProto or a path) into a module whose @main takes the graph inputs.

    ``input_shapes`` overrides the declared shape of inputs by name: an int is a static dim, a
    string a named symbolic dim, None an unknown one. ``constant_inputs`` freezes graph inputs to
    the given values, as if they were initializers (for shape or axes inputs that must be known).
    """
    proto = load_model(model)
    return Importer(proto, dict(input_shapes or {}), dict(constant_inputs or {})).run()


def _sym(name: str) -> Sym:
    cleaned = _NOT_IDENT.sub("_", name)
    if not cleaned or cleaned[0].isdigit():
        cleaned = "d_" + cleaned
    return Sym(cleaned)


def _dim(d: int | str | None) -> Dim:
    if isinstance(d, int) and d >= 0:
        return d
    if isinstance(d, str) and d:
        return _sym(d)
    return DYN


def _ident(name: str, index: int) -> str:
    cleaned = _NOT_IDENT.sub("_", name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"arg{index}"


class Importer:
    """The state of one import: graph values and folded constants by ONNX name, and the failures."""

    def __init__(
        self,
        model: onnx.ModelProto,
        input_shapes: dict[str, Sequence[int | str | None]],
        constant_inputs: dict[str, np.ndarray],
    ):
        self.model = model
        self.input_shapes = input_shapes
        self.constant_inputs = constant_inputs
        self.deps: dict[str, frozenset[str]] = {}
        self.needed: set[str] = set()
        self.other_failures = 0
        self.last_needs: str | None = None
        self.node_deps: list[frozenset[str]] = []  # what the nodes being converted depend on, innermost last
        self.opset = next((o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS), 1)
        self.opsets = {("" if o.domain in _DEFAULT_DOMAINS else o.domain): o.version for o in model.opset_import}
        self.values: dict[str, Value] = {}
        self.consts: dict[str, np.ndarray] = {}
        self.consts_element: dict[str, Any] = {}
        self.failed: set[str] = set()
        self.unsupported: list[Unsupported] = []
        self.block = Block()

    # values --------------------------------------------------------------------------------
    def value(self, name: str) -> Value:
        """The graph value of ONNX value ``name``; constants are materialized on first use."""
        found = self.values.get(name)
        if found is not None:
            return found
        if name in self.consts:
            arr = self.consts[name]
            attr = DenseAttr(arr, TensorType(arr.shape, self.consts_element[name]))
            op = Operation("graph.constant", [], [attr.type], {"value": attr})
            InsertionPoint(self.block).insert(op)
            self.values[name] = op.result
            return op.result
        if name in self.failed:
            raise FailedInput(f"value '{name}' failed to convert")
        raise ConversionError(f"value '{name}' is not defined")

    def add_const(self, name: str, array: np.ndarray, element: Any) -> None:
        self.consts[name] = array
        self.consts_element[name] = element

    def subgraph(self, body: onnx.GraphProto, inputs: Sequence[Value]) -> list[Value]:
        """Convert sub-graph ``body`` (an If branch, a Loop or Scan body) inline, its inputs bound to
        ``inputs``; returns its outputs. Names it defines are forgotten afterwards, so a loop body
        converts once per iteration; names of the enclosing graphs stay visible to it."""
        saved = (dict(self.values), dict(self.consts), dict(self.consts_element), dict(self.deps), set(self.failed))
        failures, others = len(self.unsupported), self.other_failures
        failure: ConversionError | None = None
        try:
            for info, given in zip(body.input, inputs):
                self.deps[info.name] = self.node_deps[-1]
                known = constant_value(given)
                if known is None:
                    self.values[info.name] = given
                else:
                    self.values.pop(info.name, None)
                    self.add_const(info.name, known, tensor_type(given).element)
            for init in body.initializer:
                element = scalar_type(init.data_type)
                self.add_const(init.name, to_storage(numpy_helper.to_array(init), element), element)
            for proto in body.node:
                self._convert(proto)
            if len(self.unsupported) == failures:
                return [self.value(o.name) for o in body.output]
            inner = self.unsupported[failures]
            del self.unsupported[failures:]
            # settled by constant inputs when every inner failure was: keep what the cause depends on
            settled = self.other_failures == others and self.last_needs is not None
            needs = self.last_needs if settled else None
            needs_deps = self.deps.get(needs, frozenset()) if needs else frozenset()
            self.other_failures = others
            failure = ConversionError(f"in its sub-graph: {inner}", needs=needs)
        finally:
            self.values, self.consts, self.consts_element, self.deps, self.failed = saved
        if needs:
            self.deps[needs] = needs_deps
        raise failure

    # the model -----------------------------------------------------------------------------
    def _input_type(self, info: onnx.ValueInfoProto) -> TensorType:
        kind = info.type
        if kind.HasField("optional_type"):  # an optional tensor is given as that tensor
            kind = kind.optional_type.elem_type
        if not kind.HasField("tensor_type"):
            raise OnnxError(f"graph input '{info.name}' is not a tensor")
        tt = kind.tensor_type
        try:
            element = scalar_type(tt.elem_type)
        except ConversionError as e:
            raise OnnxError(f"graph input '{info.name}': {e}") from None
        if info.name in self.input_shapes:
            return TensorType(tuple(_dim(d) for d in self.input_shapes[info.name]), element)
        if not tt.HasField("shape"):
            raise OnnxError(f"graph input '{info.name}' has no shape: give it with input_shapes=")
        dims: list[Dim] = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                dims.append(_dim(int(d.dim_value)))
            else:
                dims.append(_dim(d.dim_param if d.HasField("dim_param") else None))
        return TensorType(tuple(dims), element)

    def run(self) -> ImportedGraph:
        g = self.model.graph
        for init in g.initializer:
            try:
                element = scalar_type(init.data_type)
                self.add_const(init.name, to_storage(numpy_helper.to_array(init), element), element)
            except ConversionError as e:
                self.unsupported.append(Unsupported("initializer", init.name, reason=str(e)))
                self.failed.add(init.name)
        names = {i.name for i in g.input}
        unknown = sorted((set(self.input_shapes) | set(self.constant_inputs)) - names)
        if unknown:
            raise OnnxError(f"no graph input named '{unknown[0]}'")
        for info in g.input:
            if info.name in self.constant_inputs:
                element = self._input_type(info).element
                self.add_const(info.name, to_storage(self.constant_inputs[info.name], element), element)
        inputs = [i for i in g.input if i.name not in self.consts and i.name not in self.failed]
        self.deps.update((i.name, frozenset([i.name])) for i in inputs)
        types = [self._input_type(i) for i in inputs]
        func = make_func("main", types, arg_names=[_ident(i.name, k) for k, i in enumerate(inputs)])
        self.block = func_body(func)
        for info, arg in zip(inputs, self.block.args):
            self.values[info.name] = arg
        for proto in g.node:
            self._convert(proto)
        if self.unsupported:
            constant_inputs = sorted(self.needed) if not self.other_failures else []
            raise OnnxUnsupportedError(self.unsupported, constant_inputs)
        outputs = [self.value(o.name) for o in g.output]
        set_results(func, outputs)
        module = make_module([func])
        verify(module)
        return ImportedGraph(
            module=module,
            input_names=[i.name for i in inputs],
            output_names=[o.name for o in g.output],
            metadata={"framework": "onnx", "opset": self.opset, "producer": self.model.producer_name},
        )

    # nodes ---------------------------------------------------------------------------------
    def _convert(self, proto: onnx.NodeProto) -> None:
        label = proto.name or (proto.output[0] if proto.output else proto.op_type)
        deps = frozenset().union(*(self.deps.get(name, frozenset()) for name in proto.input))
        self.deps.update((name, deps) for name in proto.output)
        domain = proto.domain if proto.domain not in _DEFAULT_DOMAINS else ""
        converter = CONVERTERS.get(f"{domain}.{proto.op_type}" if domain else proto.op_type)
        if converter is None:
            converter = function_converter(proto, self.opsets)
        if converter is None:
            kind = f"{domain}.{proto.op_type}" if domain else proto.op_type
            self.unsupported.append(Unsupported(kind, label, reason="no converter for this op type"))
            self.other_failures += 1
            self.failed.update(proto.output)
            return
        if any(name in self.failed for name in proto.input):
            self.failed.update(proto.output)
            return
        start = len(self.block.ops)
        try:
            self.node_deps.append(deps)
            try:
                with InsertionPoint(self.block):
                    results = converter(Node(proto, self, self.opset))
            finally:
                self.node_deps.pop()
            outs = [results] if isinstance(results, Value) else list(results)
            if len(outs) < len(proto.output):
                outs += [None] * (len(proto.output) - len(outs))
            for name, value in zip(proto.output, outs):
                if not name:
                    continue
                if value is None:
                    raise ConversionError(f"output '{name}' is not supported")
                self.values[name] = value
        except (ConversionError, TensoriumError, ValueError) as e:
            for op in reversed(self.block.ops[start:]):
                self._erase(op)
            if isinstance(e, FailedInput):  # the failure that caused it is listed already
                self.failed.update(proto.output)
                return
            needs = e.needs if isinstance(e, ConversionError) else None
            if needs is not None and self.deps.get(needs):
                self.needed.update(self.deps[needs])
                self.last_needs = needs
            else:
                self.other_failures += 1
            self.unsupported.append(Unsupported(proto.op_type, label, reason=str(e).splitlines()[0]))
            self.failed.update(proto.output)
            return
        self._fold(proto, start)

    def _erase(self, op: Operation) -> None:
        for name, v in list(self.values.items()):
            if v.defining_op() is op:
                del self.values[name]
        op.erase()

    def _fold(self, proto: onnx.NodeProto, start: int) -> None:
        """Record the node's outputs as constants when they are computable now, replacing its ops."""
        outs = [n for n in proto.output if n]
        new_ops = self.block.ops[start:]
        producers = [self.values[n].defining_op() for n in outs]
        if all(op is not None and op.name == "graph.constant" for op in producers):
            for n, op in zip(outs, producers):
                assert op is not None
                self.add_const(n, self._known(op.result), tensor_type(op.result).element)
            return
        given = [n for n in proto.input if n]
        if not all(n in self.consts for n in given) or any(op.name.startswith("quant.") for op in new_ops):
            return  # quantized constants stay quantized: folding would expand them to floats
        env: dict[int, np.ndarray] = {}
        try:
            for op in new_ops:
                args = [env[id(v)] if id(v) in env else self._known(v) for v in op.operands]
                for r, arr in zip(op.results, evaluate_op(op, args)):
                    env[id(r)] = arr
            arrays: list[np.ndarray | None] = [env.get(id(self.values[n])) for n in outs]
        except (TensoriumError, KeyError):
            return
        if any(arr is None for arr in arrays) or not all(tensor_type(self.values[n]).is_static for n in outs):
            return
        for n, folded in zip(outs, arrays):
            assert folded is not None
            self.add_const(n, folded, tensor_type(self.values[n]).element)
        for op in reversed(new_ops):
            if all(not r.has_uses for r in op.results):
                self._erase(op)
        for n in outs:
            self.values.pop(n, None)

    @staticmethod
    def _known(value: Value) -> np.ndarray:
        found = constant_value(value)
        if found is None:
            raise KeyError(id(value))
        return found
