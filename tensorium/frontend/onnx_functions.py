"""ONNX ops without a converter that the standard defines as functions: converted through their body.

Many recent ops (LinearAttention, FlexAttention and others) come with a function body in their
schema, some of them built for the node at hand (a context-dependent function, which needs the
input types). When the converter table has no entry for a node, the importer asks for that body and
converts it as a sub-graph (:meth:`~tensorium.frontend.onnx_import.Importer.subgraph`) bound to the
node's inputs, with attribute references replaced by the node's attributes.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx
from onnx import AttributeProto, FunctionProto, GraphProto, NodeProto, TypeProto, helper

from ..ir.core import Value
from ..ir.types import Sym, TensorType
from .onnx_context import ONNX_TO_SCALAR, ConversionError, Converter, Node

_ELEMENT_TYPES = {scalar: code for code, scalar in ONNX_TO_SCALAR.items()}


def function_converter(proto: NodeProto, opsets: dict[str, int]) -> Converter | None:
    """A converter that converts ``proto`` through its schema's function body, or None if it has none."""
    domain = proto.domain if proto.domain not in ("", "ai.onnx") else ""
    try:
        schema = onnx.defs.get_schema(proto.op_type, opsets.get(domain, 1), domain)
    except onnx.defs.SchemaError:
        return None
    # the schema's function accessors are missing from onnx's type stubs
    if not (schema.has_function or schema.has_context_dependent_function):  # type: ignore[attr-defined]
        return None

    def convert(n: Node) -> Sequence[Value]:
        present = [i for i in range(len(proto.input)) if proto.input[i]]
        values = [n.input(i) for i in present]
        if schema.has_function:  # type: ignore[attr-defined]
            body = schema.function_body
        else:
            types = [_type_proto(v).SerializeToString() for v in values]
            try:
                data = schema.get_context_dependent_function(proto.SerializeToString(), types)  # type: ignore[attr-defined]
            except Exception as e:  # onnx raises its own errors for a function it cannot build
                raise ConversionError(f"its function body cannot be built: {e}") from None
            body = FunctionProto.FromString(data)
        graph = _as_graph(body, proto, present)
        return n.importer.subgraph(graph, values)

    return convert


def _type_proto(v: Value) -> TypeProto:
    t = v.type
    if not isinstance(t, TensorType) or t.element not in _ELEMENT_TYPES:
        raise ConversionError(f"no ONNX type for {t}")
    dims = [d if isinstance(d, int) else (d.name if isinstance(d, Sym) else None) for d in t.shape]
    return helper.make_tensor_type_proto(_ELEMENT_TYPES[t.element], dims)


def _as_graph(body: FunctionProto, node: NodeProto, present: Sequence[int]) -> GraphProto:
    """The function body as a graph whose inputs are the node's given inputs, attributes filled in."""
    given = {a.name: a for a in node.attribute}
    defaults = {a.name: a for a in body.attribute_proto}
    outputs = [body.output[i] for i in range(min(len(node.output), len(body.output)))]
    return helper.make_graph(
        [_substitute(inner, given, defaults) for inner in body.node],
        f"{node.op_type}_body",
        [helper.make_empty_tensor_value_info(body.input[i]) for i in present if i < len(body.input)],
        [helper.make_empty_tensor_value_info(name) for name in outputs],
    )


def _substitute(inner: NodeProto, given: dict[str, AttributeProto], defaults: dict[str, AttributeProto]) -> NodeProto:
    """``inner`` with each attribute reference replaced by the caller's attribute (or its default)."""
    out = NodeProto()
    out.CopyFrom(inner)
    out.ClearField("attribute")
    for attr in inner.attribute:
        if attr.ref_attr_name:
            source = given.get(attr.ref_attr_name) or defaults.get(attr.ref_attr_name)
            if source is None:
                continue
            resolved = AttributeProto()
            resolved.CopyFrom(source)
            resolved.name = attr.name
            out.attribute.append(resolved)
            continue
        copied = AttributeProto()
        copied.CopyFrom(attr)
        if attr.type == AttributeProto.GRAPH:
            nodes = [_substitute(n, given, defaults) for n in attr.g.node]
            copied.g.ClearField("node")
            copied.g.node.extend(nodes)
        out.attribute.append(copied)
    return out
