"""ONNX op converters: one small function per op type, dispatched through ``CONVERTERS``.

Each converter takes a :class:`~tensorium.frontend.onnx_context.Node` and returns the graph values
of the node's outputs, composing existing graph ops; it raises ConversionError for what the graph
dialect cannot express (a run-time value where a constant is required, an unsupported mode).
Attribute and input conventions of opsets 1..21 are told apart by what the node carries (an
``axes`` attribute before opset 13/18, an ``axes`` input after).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.opdef import OpDef
from ..ir.shapes import broadcast_shapes, normalize_axes, normalize_axis
from ..ir.types import Dim, IntegerType, ScalarType, i64, storage_dtype
from . import data_dependent
from .onnx_context import ConversionError, Converter, Node, scalar_type, tensor_type

CONVERTERS: dict[str, Converter] = {}

Results = Value | Sequence[Value | None]


def converts(*op_types: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of ``op_types``."""

    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            CONVERTERS[op_type] = fn
        return fn

    return register


# helpers ---------------------------------------------------------------------------------------
def shape(v: Value) -> tuple[Dim, ...]:
    return tensor_type(v).shape


def element(v: Value) -> ScalarType:
    return tensor_type(v).element


def rank(v: Value) -> int:
    return tensor_type(v).rank


def cast(v: Value, to: ScalarType) -> Value:
    """``v`` converted to element type ``to`` (unchanged when it already has it)."""
    return v if element(v) == to else graph.cast(v, dtype=to)


def static_dims(v: Value, what: str) -> tuple[int, ...]:
    """The static shape of ``v``; ConversionError naming ``what`` when a dim is symbolic."""
    t = tensor_type(v)
    if not t.is_static:
        raise ConversionError(f"{what} needs a static shape, got {t}")
    return t.static_shape


def spatial_rank(n: Node, v: Value) -> int:
    """The number of spatial dims of an N x C x ... input; only 1-D and 2-D are supported."""
    k = rank(v) - 2
    if k not in (1, 2):
        raise ConversionError(f"only 1-D and 2-D {n.op_type} is supported, got {k}-D")
    return k


def take(v: Value, axis: int, index: int) -> Value:
    """Entry ``index`` of ``v`` along ``axis``, that axis dropped."""
    picked = graph.slice(v, starts=(index,), ends=(index + 1,), axes=(axis,))
    return graph.squeeze(picked, axes=(axis,))  # type: ignore[no-any-return]


def keep_axes(v: Value, axes: Sequence[int]) -> tuple[int, ...]:
    return normalize_axes(axes, rank(v))


# elementwise -----------------------------------------------------------------------------------
_UNARY: dict[str, str] = {
    "Abs": "abs",
    "Neg": "neg",
    "Exp": "exp",
    "Log": "log",
    "Sqrt": "sqrt",
    "Reciprocal": "reciprocal",
    "Sigmoid": "sigmoid",
    "Tanh": "tanh",
    "Sin": "sin",
    "Cos": "cos",
    "Ceil": "ceil",
    "Floor": "floor",
    "Round": "round",
    "Sign": "sign",
    "Erf": "erf",
    "Relu": "relu",
    "Not": "not",
    "BitwiseNot": "not",
}

_BINARY: dict[str, str] = {
    "Add": "add",
    "Sub": "sub",
    "Mul": "mul",
    "Div": "div",
    "Pow": "pow",
    "Equal": "eq",
    "Greater": "gt",
    "Less": "lt",
    "GreaterOrEqual": "ge",
    "LessOrEqual": "le",
    "And": "and",
    "Or": "or",
    "Xor": "xor",
    "BitwiseAnd": "and",
    "BitwiseOr": "or",
    "BitwiseXor": "xor",
}


def _unary(opdef: OpDef) -> Converter:
    def convert(n: Node) -> Results:
        return opdef(n.input(0))  # type: ignore[no-any-return]

    return convert


def _binary(opdef: OpDef) -> Converter:
    def convert(n: Node) -> Results:
        lhs = n.input(0)
        return opdef(lhs, cast(n.input(1), element(lhs)))  # type: ignore[no-any-return]

    return convert


for _name, _op in _UNARY.items():
    CONVERTERS[_name] = _unary(getattr(graph, _op))
for _name, _op in _BINARY.items():
    CONVERTERS[_name] = _binary(getattr(graph, _op))


@converts("Identity", "OptionalGetElement")  # an optional that holds a tensor is that tensor
def _identity(n: Node) -> Results:
    return n.input(0)


@converts("Tan")
def _tan(n: Node) -> Results:
    x = n.input(0)
    return graph.div(graph.sin(x), graph.cos(x))


@converts("Sinh", "Cosh")
def _sinh_cosh(n: Node) -> Results:
    x = n.input(0)
    a, b = graph.exp(x), graph.exp(graph.neg(x))
    both = graph.sub(a, b) if n.op_type == "Sinh" else graph.add(a, b)
    return graph.mul(both, n.scalar(0.5, x))


@converts("Asinh", "Acosh")
def _asinh_acosh(n: Node) -> Results:
    x = n.input(0)
    one = n.scalar(1.0, x)
    sq = graph.mul(x, x)
    root = graph.sqrt(graph.add(sq, one) if n.op_type == "Asinh" else graph.sub(sq, one))
    return graph.log(graph.add(x, root))


@converts("Atanh")
def _atanh(n: Node) -> Results:
    x = n.input(0)
    one = n.scalar(1.0, x)
    ratio = graph.div(graph.add(one, x), graph.sub(one, x))
    return graph.mul(graph.log(ratio), n.scalar(0.5, x))


@converts("Asin", "Acos", "Atan")
def _inverse_trig(n: Node) -> Results:
    return getattr(graph, n.op_type.lower())(n.input(0))  # type: ignore[no-any-return]


def _softplus_of(n: Node, x: Value) -> Value:
    """max(x, 0) + log(1 + exp(-|x|)): softplus without overflow."""
    zero, one = n.scalar(0.0, x), n.scalar(1.0, x)
    tail = graph.log(graph.add(one, graph.exp(graph.neg(graph.abs(x)))))
    return graph.add(graph.max(x, zero), tail)  # type: ignore[no-any-return]


@converts("Softplus")
def _softplus(n: Node) -> Results:
    return _softplus_of(n, n.input(0))


@converts("Mish")
def _mish(n: Node) -> Results:
    x = n.input(0)
    return graph.mul(x, graph.tanh(_softplus_of(n, x)))


@converts("Softsign")
def _softsign(n: Node) -> Results:
    x = n.input(0)
    return graph.div(x, graph.add(n.scalar(1.0, x), graph.abs(x)))


@converts("Elu")
def _elu(n: Node) -> Results:
    x = n.input(0)
    alpha = n.scalar(n.attr("alpha", 1.0), x)
    neg = graph.mul(alpha, graph.sub(graph.exp(x), n.scalar(1.0, x)))
    return graph.where(graph.lt(x, n.scalar(0.0, x)), neg, x)


@converts("Selu")
def _selu(n: Node) -> Results:
    x = n.input(0)
    alpha = n.scalar(n.attr("alpha", 1.67326319217681884765625), x)
    gamma = n.scalar(n.attr("gamma", 1.05070102214813232421875), x)
    neg = graph.sub(graph.mul(alpha, graph.exp(x)), alpha)
    return graph.mul(gamma, graph.where(graph.le(x, n.scalar(0.0, x)), neg, x))


@converts("Celu")
def _celu(n: Node) -> Results:
    x = n.input(0)
    alpha = n.scalar(n.attr("alpha", 1.0), x)
    zero = n.scalar(0.0, x)
    neg = graph.mul(alpha, graph.sub(graph.exp(graph.div(x, alpha)), n.scalar(1.0, x)))
    return graph.add(graph.max(x, zero), graph.min(neg, zero))


@converts("LeakyRelu")
def _leaky_relu(n: Node) -> Results:
    x = n.input(0)
    scaled = graph.mul(x, n.scalar(n.attr("alpha", 0.01), x))
    return graph.where(graph.lt(x, n.scalar(0.0, x)), scaled, x)


@converts("PRelu")
def _prelu(n: Node) -> Results:
    x, slope = n.input(0), n.input(1)
    return graph.where(graph.lt(x, n.scalar(0.0, x)), graph.mul(x, cast(slope, element(x))), x)


@converts("ThresholdedRelu")
def _thresholded_relu(n: Node) -> Results:
    x = n.input(0)
    return graph.where(graph.gt(x, n.scalar(n.attr("alpha", 1.0), x)), x, n.scalar(0.0, x))


def _hard_sigmoid_of(n: Node, x: Value, alpha: float, beta: float) -> Value:
    y = graph.add(graph.mul(x, n.scalar(alpha, x)), n.scalar(beta, x))
    return graph.min(graph.max(y, n.scalar(0.0, x)), n.scalar(1.0, x))  # type: ignore[no-any-return]


@converts("HardSigmoid")
def _hard_sigmoid(n: Node) -> Results:
    return _hard_sigmoid_of(n, n.input(0), n.attr("alpha", 0.2), n.attr("beta", 0.5))


@converts("HardSwish")
def _hard_swish(n: Node) -> Results:
    x = n.input(0)
    return graph.mul(x, _hard_sigmoid_of(n, x, 1 / 6, 0.5))


@converts("Swish")
def _swish(n: Node) -> Results:
    x = n.input(0)
    return graph.mul(x, graph.sigmoid(graph.mul(x, n.scalar(n.attr("alpha", 1.0), x))))


@converts("Gelu")
def _gelu(n: Node) -> Results:
    return graph.gelu(n.input(0), approximate=n.attr("approximate", "none"))


@converts("Shrink")
def _shrink(n: Node) -> Results:
    x = n.input(0)
    lambd, bias = n.attr("lambd", 0.5), n.attr("bias", 0.0)
    low = graph.where(graph.lt(x, n.scalar(-lambd, x)), graph.add(x, n.scalar(bias, x)), n.scalar(0.0, x))
    return graph.where(graph.gt(x, n.scalar(lambd, x)), graph.sub(x, n.scalar(bias, x)), low)


@converts("IsNaN")
def _isnan(n: Node) -> Results:
    x = n.input(0)
    return graph.ne(x, x)


@converts("IsInf")
def _isinf(n: Node) -> Results:
    x = n.input(0)
    pos = graph.eq(x, n.scalar(math.inf, x))
    neg = graph.eq(x, n.scalar(-math.inf, x))
    detect_pos, detect_neg = n.attr("detect_positive", 1), n.attr("detect_negative", 1)
    if detect_pos and detect_neg:
        return graph.or_(pos, neg)
    if detect_pos:
        return pos
    if detect_neg:
        return neg
    return graph.and_(pos, neg)  # detects nothing: all false


@converts("Mod")
def _mod(n: Node) -> Results:
    x, y = n.input(0), n.input(1)
    r = graph.mod(x, y)
    if not n.attr("fmod", 0):
        return r
    zero = n.scalar(0.0, x)
    wrong_sign = graph.and_(graph.ne(r, zero), graph.ne(graph.lt(r, zero), graph.lt(x, zero)))
    return graph.where(wrong_sign, graph.sub(r, y), r)


@converts("BitShift")
def _bitshift(n: Node) -> Results:
    x, s = n.input(0), cast(n.input(1), element(n.input(0)))
    t = element(x)
    if not isinstance(t, IntegerType):
        raise ConversionError(f"BitShift needs integers, got {t}")
    zero = n.scalar(0, x)
    outside = graph.or_(graph.lt(s, zero), graph.ge(s, n.scalar(t.width, x)))
    factor = graph.pow(n.scalar(2, x), graph.clamp(s, min=0.0, max=float(t.width - 1)))
    if n.attr("direction") == "LEFT":
        return graph.where(outside, zero, graph.mul(x, factor))
    # an arithmetic right shift rounds toward minus infinity; the division truncates toward zero
    quotient = graph.div(x, factor)
    inexact = graph.and_(graph.lt(x, zero), graph.ne(graph.mul(quotient, factor), x))
    shifted = graph.where(inexact, graph.sub(quotient, n.scalar(1, x)), quotient)
    if not t.signed:
        return graph.where(outside, zero, shifted)
    # 2 ** (width - 1) wraps to a negative factor: that shift keeps only the sign, as wider ones do
    keeps_sign = graph.or_(outside, graph.eq(s, n.scalar(t.width - 1, x)))
    return graph.where(keeps_sign, graph.where(graph.lt(x, zero), n.scalar(-1, x), zero), shifted)


@converts("Max", "Min", "Sum", "Mean")
def _variadic(n: Node) -> Results:
    op = {"Max": graph.max, "Min": graph.min, "Sum": graph.add, "Mean": graph.add}[n.op_type]
    values = n.inputs()
    out = values[0]
    for v in values[1:]:
        out = op(out, v)
    if n.op_type == "Mean":
        out = graph.div(out, n.scalar(len(values), out))
    return out


@converts("Where")
def _where(n: Node) -> Results:
    return graph.where(n.input(0), n.input(1), n.input(2))


@converts("Clip")
def _clip(n: Node) -> Results:
    x = n.input(0)
    low = n.optional(1) if "min" not in n.attrs else n.scalar(n.attr("min"), x)
    high = n.optional(2) if "max" not in n.attrs else n.scalar(n.attr("max"), x)
    if low is not None:
        x = graph.max(x, low)
    if high is not None:
        x = graph.min(x, high)
    return x


@converts("Cast")
def _cast(n: Node) -> Results:
    return cast(n.input(0), scalar_type(n.attr("to")))


@converts("CastLike")
def _cast_like(n: Node) -> Results:
    return cast(n.input(0), element(n.input(1)))


@converts("Dropout")
def _dropout(n: Node) -> Results:
    x = n.input(0)
    training = n.has(2) and bool(n.const(2).reshape(()))
    ratio = float(n.const(1).reshape(())) if n.has(1) else n.attr("ratio", 0.5)
    if training and ratio != 0.0:
        raise ConversionError("training-mode dropout is random and not supported")
    if n.num_outputs < 2 or not n.proto.output[1]:
        return x
    return x, n.constant(np.ones(static_dims(x, "the Dropout mask"), dtype=bool))


# constants and shapes ----------------------------------------------------------------------------
@converts("Constant")
def _constant(n: Node) -> Results:
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in n.attrs:
            value = n.attr(key)
            if key == "value":
                proto = n.attrs["value"]
                return n.constant(np.asarray(value), scalar_type(proto.data_type))
            dtype = np.float32 if "float" in key else np.int64
            return n.constant(np.asarray(value, dtype=dtype))
    raise ConversionError(f"only tensor and numeric constants are supported, got {sorted(n.attrs)}")


@converts("ConstantOfShape")
def _constant_of_shape(n: Node) -> Results:
    dims = n.ints(0)
    if "value" not in n.attrs:
        return n.constant(np.zeros(dims, dtype=np.float32))
    proto = n.attrs["value"]
    fill = np.asarray(n.attr("value")).reshape(-1)[0]
    return n.constant(np.full(dims, fill, dtype=fill.dtype), scalar_type(proto.data_type))


@converts("Shape")
def _shape(n: Node) -> Results:
    dims = static_dims(n.input(0), "Shape")
    r = len(dims)
    start, end = n.attr("start", 0), n.attr("end", r)
    start = min(max(start + r if start < 0 else start, 0), r)
    end = min(max(end + r if end < 0 else end, 0), r)
    return n.constant(np.asarray(dims[start:end], dtype=np.int64))


@converts("Size")
def _size(n: Node) -> Results:
    return n.constant(np.asarray(math.prod(static_dims(n.input(0), "Size")), dtype=np.int64))


@converts("Range")
def _range(n: Node) -> Results:
    start, limit, delta = (n.const(i).reshape(()) for i in range(3))
    values = np.arange(start.item(), limit.item(), delta.item())
    return n.constant(values.astype(start.dtype), element(n.input(0)))


@converts("EyeLike")
def _eye_like(n: Node) -> Results:
    x = n.input(0)
    rows, cols = static_dims(x, "EyeLike")
    to = scalar_type(n.attr("dtype")) if "dtype" in n.attrs else element(x)
    return n.constant(np.eye(rows, cols, k=n.attr("k", 0)), to)


def runtime_dim(n: Node, what: str) -> str:
    """A name for the run-time size of the node's first output (unique in the graph, as ONNX names are)."""
    return f"{what}_" + re.sub(r"[^A-Za-z0-9_]", "_", n.proto.output[0])


@converts("NonZero")
def _nonzero(n: Node) -> Results:
    if n.is_const(0):
        return n.constant(np.array(np.nonzero(n.const(0)), dtype=np.int64))
    x = n.input(0)
    if rank(x) == 0:
        raise ConversionError("NonZero of a scalar is not supported")
    return graph.transpose(data_dependent.nonzero(x, runtime_dim(n, "nonzero")), perm=(1, 0))


@converts("Reshape")
def _reshape(n: Node) -> Results:
    target = n.ints(1) if n.has(1) else tuple(n.attr("shape"))
    return graph.reshape(n.input(0), shape=target, allowzero=bool(n.attr("allowzero", 0)))


@converts("Flatten")
def _flatten(n: Node) -> Results:
    x = n.input(0)
    axis = n.attr("axis", 1)
    axis = axis + rank(x) if axis < 0 else axis
    lead = shape(x)[:axis]
    if not all(isinstance(d, int) for d in lead):
        raise ConversionError(f"Flatten needs static dims before axis {axis}, got {tensor_type(x)}")
    return graph.reshape(x, shape=(math.prod(lead), -1))  # type: ignore[arg-type]


@converts("Transpose")
def _transpose(n: Node) -> Results:
    x = n.input(0)
    perm = n.attr("perm", tuple(reversed(range(rank(x)))))
    return graph.transpose(x, perm=tuple(perm))


@converts("Squeeze")
def _squeeze(n: Node) -> Results:
    x = n.input(0)
    axes = n.axes()
    if axes is None:
        axes = tuple(i for i, d in enumerate(shape(x)) if d == 1)
    return graph.squeeze(x, axes=axes)


@converts("Unsqueeze")
def _unsqueeze(n: Node) -> Results:
    axes = n.axes()
    if axes is None:
        raise ConversionError("Unsqueeze needs axes")
    return graph.unsqueeze(n.input(0), axes=axes)


@converts("Concat")
def _concat(n: Node) -> Results:
    return graph.concat(n.inputs(), axis=n.attr("axis"))


@converts("Split")
def _split(n: Node) -> Results:
    x = n.input(0)
    axis = normalize_axis(n.attr("axis", 0), rank(x))
    sizes = n.axes("split", 1)
    if sizes is None:
        dim = shape(x)[axis]
        if not isinstance(dim, int):
            raise ConversionError("Split without sizes needs a static dim along the axis")
        parts = n.attr("num_outputs", n.num_outputs)
        chunk = -(-dim // parts)
        sizes = tuple(min(chunk, dim - i * chunk) for i in range(parts))
    out = graph.split(x, axis=axis, sizes=sizes)
    return [out] if isinstance(out, Value) else out


@converts("Slice")
def _slice(n: Node) -> Results:
    x = n.input(0)
    if "starts" in n.attrs:
        starts, ends = n.attr("starts"), n.attr("ends")
        axes = n.attr("axes", tuple(range(len(starts))))
        steps = (1,) * len(starts)
    else:
        starts, ends = n.ints(1), n.ints(2)
        axes = n.ints(3) if n.has(3) else tuple(range(len(starts)))
        steps = n.ints(4) if n.has(4) else (1,) * len(starts)
    return graph.slice(x, starts=tuple(starts), ends=tuple(ends), axes=tuple(axes), steps=tuple(steps))


@converts("Expand")
def _expand(n: Node) -> Results:
    x = n.input(0)
    target = broadcast_shapes(shape(x), n.ints(1))
    return graph.broadcast_to(x, shape=tuple(d if isinstance(d, int) else -1 for d in target))


@converts("Tile")
def _tile(n: Node) -> Results:
    return graph.tile(n.input(0), repeats=n.ints(1))


@converts("Pad")
def _pad(n: Node) -> Results:
    x = n.input(0)
    pads = n.ints(1) if n.has(1) else tuple(n.attr("pads"))
    value = float(n.const(2).reshape(-1)[0]) if n.has(2) else float(n.attr("value", 0.0))
    if n.has(3):
        axes = keep_axes(x, n.ints(3))
        full = [0] * (2 * rank(x))
        for i, a in enumerate(axes):
            full[a], full[a + rank(x)] = pads[i], pads[i + len(axes)]
        pads = tuple(full)
    mode = n.attr("mode", "constant")
    if mode == "wrap":
        return _wrap_pad(x, pads)
    if mode not in ("constant", "reflect", "edge"):
        raise ConversionError(f"pad mode '{mode}' is not supported")
    return graph.pad(x, pads=pads, mode=mode, value=value)


def _wrap_pad(x: Value, pads: Sequence[int]) -> Value:
    """Pad each axis with the elements from its other end (negative pads crop)."""
    r = rank(x)
    for axis in range(r):
        before, after = pads[axis], pads[axis + r]
        size = static_dims(x, "Pad")[axis]
        if before < 0 or after < 0:
            x = graph.slice(x, starts=(max(-before, 0),), ends=(size - max(-after, 0),), axes=(axis,))
            size -= max(-before, 0) + max(-after, 0)
            before, after = max(before, 0), max(after, 0)
        if before > size or after > size:
            raise ConversionError(f"wrap padding of {max(before, after)} is wider than the axis ({size})")
        parts = [graph.slice(x, starts=(size - before,), ends=(size,), axes=(axis,))] if before else []
        parts.append(x)
        if after:
            parts.append(graph.slice(x, starts=(0,), ends=(after,), axes=(axis,)))
        if len(parts) > 1:
            x = graph.concat(parts, axis=axis)
    return x


@converts("Trilu")
def _trilu(n: Node) -> Results:
    k = int(n.const(1).reshape(())) if n.has(1) else 0
    return (graph.triu if n.attr("upper", 1) else graph.tril)(n.input(0), k=k)


@converts("CumSum")
def _cumsum(n: Node) -> Results:
    axis = int(n.const(1).reshape(()))
    return graph.cumsum(
        n.input(0), axis=axis, exclusive=bool(n.attr("exclusive", 0)), reverse=bool(n.attr("reverse", 0))
    )


@converts("DepthToSpace")
def _depth_to_space(n: Node) -> Results:
    x = n.input(0)
    b, c, h, w = static_dims(x, "DepthToSpace")
    bs = n.attr("blocksize")
    if n.attr("mode", "DCR") == "DCR":
        y = graph.reshape(x, shape=(b, bs, bs, c // bs**2, h, w))
        y = graph.transpose(y, perm=(0, 3, 4, 1, 5, 2))
    else:
        y = graph.reshape(x, shape=(b, c // bs**2, bs, bs, h, w))
        y = graph.transpose(y, perm=(0, 1, 4, 2, 5, 3))
    return graph.reshape(y, shape=(b, c // bs**2, h * bs, w * bs))


@converts("SpaceToDepth")
def _space_to_depth(n: Node) -> Results:
    x = n.input(0)
    b, c, h, w = static_dims(x, "SpaceToDepth")
    bs = n.attr("blocksize")
    y = graph.reshape(x, shape=(b, c, h // bs, bs, w // bs, bs))
    y = graph.transpose(y, perm=(0, 3, 5, 1, 2, 4) if n.attr("mode", "DCR") == "DCR" else (0, 1, 3, 5, 2, 4))
    return graph.reshape(y, shape=(b, c * bs * bs, h // bs, w // bs))


# indexing --------------------------------------------------------------------------------------
@converts("Gather")
def _gather(n: Node) -> Results:
    return graph.gather(n.input(0), n.input(1), axis=n.attr("axis", 0))


@converts("GatherElements")
def _gather_elements(n: Node) -> Results:
    return graph.gather_elements(n.input(0), n.input(1), axis=n.attr("axis", 0))


@converts("GatherND")
def _gather_nd(n: Node) -> Results:
    return graph.gather_nd(n.input(0), n.input(1), batch_dims=n.attr("batch_dims", 0))


@converts("ScatterElements", "Scatter")
def _scatter_elements(n: Node) -> Results:
    return graph.scatter_elements(
        n.input(0), n.input(1), n.input(2), axis=n.attr("axis", 0), reduction=n.attr("reduction", "none")
    )


@converts("ScatterND")
def _scatter_nd(n: Node) -> Results:
    return graph.scatter_nd(n.input(0), n.input(1), n.input(2), reduction=n.attr("reduction", "none"))


@converts("Compress")
def _compress(n: Node) -> Results:
    x = n.input(0)
    picked = n.constant(np.nonzero(n.const(1).astype(bool))[0].astype(np.int64))
    if "axis" not in n.attrs:
        return graph.gather(graph.reshape(x, shape=(-1,)), picked)
    return graph.gather(x, picked, axis=n.attr("axis"))


@converts("OneHot")
def _one_hot(n: Node) -> Results:
    indices, values = cast(n.input(0), i64), n.input(2)
    depth = int(n.const(1).reshape(-1)[0])
    axis = normalize_axis(n.attr("axis", -1), rank(indices) + 1)
    depth_c = n.constant(np.asarray(depth, dtype=np.int64))
    indices = graph.where(graph.lt(indices, n.scalar(0, indices)), graph.add(indices, depth_c), indices)
    positions = np.arange(depth, dtype=np.int64).reshape((depth,) + (1,) * (rank(indices) - axis))
    hot = graph.eq(graph.unsqueeze(indices, axes=(axis,)), n.constant(positions))
    off = graph.slice(values, starts=(0,), ends=(1,), axes=(0,))
    on = graph.slice(values, starts=(1,), ends=(2,), axes=(0,))
    return graph.where(hot, graph.reshape(on, shape=()), graph.reshape(off, shape=()))


# reductions ------------------------------------------------------------------------------------
def _reduce_axes(n: Node, x: Value) -> tuple[int, ...] | None:
    """The reduced axes, all of them when none are given, None for a no-op (noop_with_empty_axes)."""
    axes = n.axes()
    if not axes:
        return None if n.attr("noop_with_empty_axes", 0) else tuple(range(rank(x)))
    return keep_axes(x, axes)


@converts(
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
)
def _reduce(n: Node) -> Results:
    x = n.input(0)
    axes = _reduce_axes(n, x)
    keep = bool(n.attr("keepdims", 1))
    kind = n.op_type[len("Reduce") :]
    if axes is None:
        return x
    if kind in ("Max", "Min", "LogSumExp") and any(shape(x)[a] == 0 for a in axes):
        return _empty_reduction(n, x, axes, keep, kind == "Min")
    if kind == "LogSumExp":
        top = graph.reduce_max(x, axes=axes, keepdims=True)
        total = graph.log(graph.reduce_sum(graph.exp(graph.sub(x, top)), axes=axes, keepdims=True))
        out = graph.add(total, top)
        return out if keep else graph.squeeze(out, axes=axes)
    if kind == "L1":
        x = graph.abs(x)
    elif kind in ("L2", "SumSquare"):
        x = graph.mul(x, x)
    direct = {"Max": graph.reduce_max, "Min": graph.reduce_min, "Mean": graph.reduce_mean, "Prod": graph.reduce_prod}
    out = direct.get(kind, graph.reduce_sum)(x, axes=axes, keepdims=keep)
    if kind == "L2":
        return graph.sqrt(out)
    if kind == "LogSum":
        return graph.log(out)
    return out


def _empty_reduction(n: Node, x: Value, axes: Sequence[int], keep: bool, smallest: bool) -> Value:
    """A max or min over an empty axis: the identity of the reduction (-inf or the type's lowest, ...)."""
    dims = static_dims(x, n.op_type)
    out = (
        [1 if a in axes else d for a, d in enumerate(dims)]
        if keep
        else [d for a, d in enumerate(dims) if a not in axes]
    )
    dtype = storage_dtype(element(x))
    if dtype == np.bool_:
        fill: object = smallest
    elif np.issubdtype(dtype, np.floating):
        fill = np.inf if smallest else -np.inf
    else:
        fill = np.iinfo(dtype).max if smallest else np.iinfo(dtype).min
    return n.constant(np.full(out, fill, dtype=dtype), element(x))


@converts("ArgMax", "ArgMin")
def _arg(n: Node) -> Results:
    op = graph.argmax if n.op_type == "ArgMax" else graph.argmin
    return op(
        n.input(0),
        axis=n.attr("axis", 0),
        keepdims=bool(n.attr("keepdims", 1)),
        select_last_index=bool(n.attr("select_last_index", 0)),
    )


def _flattened(n: Node, x: Value, fn: Callable[[Value, int], Value]) -> Value:
    """Apply ``fn`` along ``axis``, or for opsets before 13 over x flattened to 2-D at ``axis``."""
    if n.opset >= 13:
        return fn(x, n.attr("axis", -1))
    dims = static_dims(x, n.op_type)
    axis = normalize_axis(n.attr("axis", 1), len(dims))
    flat = graph.reshape(x, shape=(math.prod(dims[:axis]), -1))
    return graph.reshape(fn(flat, 1), shape=dims)  # type: ignore[no-any-return]


@converts("Softmax")
def _softmax(n: Node) -> Results:
    return _flattened(n, n.input(0), lambda x, axis: graph.softmax(x, axis=axis))


@converts("LogSoftmax")
def _log_softmax(n: Node) -> Results:
    return _flattened(n, n.input(0), lambda x, axis: graph.log_softmax(x, axis=axis))


def _hardmax_along(n: Node, x: Value, axis: int) -> Value:
    axis = normalize_axis(axis, rank(x))
    dim = shape(x)[axis]
    if not isinstance(dim, int):
        raise ConversionError("Hardmax needs a static dim along its axis")
    best = graph.argmax(x, axis=axis, keepdims=True)
    positions = n.constant(np.arange(dim, dtype=np.int64).reshape((dim,) + (1,) * (rank(x) - axis - 1)))
    return cast(graph.eq(best, positions), element(x))


@converts("Hardmax")
def _hardmax(n: Node) -> Results:
    return _flattened(n, n.input(0), lambda x, axis: _hardmax_along(n, x, axis))


# linear algebra ------------------------------------------------------------------------------
@converts("MatMul")
def _matmul(n: Node) -> Results:
    a, b = n.input(0), n.input(1)
    squeeze: list[int] = []
    if rank(a) == 1:
        a = graph.unsqueeze(a, axes=(0,))
        squeeze.append(-2)
    if rank(b) == 1:
        b = graph.unsqueeze(b, axes=(1,))
        squeeze.append(-1)
    out = graph.matmul(a, b)
    return graph.squeeze(out, axes=tuple(squeeze)) if squeeze else out


@converts("Gemm")
def _gemm(n: Node) -> Results:
    a, b = n.input(0), n.input(1)
    out = graph.matmul(a, b, transpose_a=bool(n.attr("transA", 0)), transpose_b=bool(n.attr("transB", 0)))
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    if alpha != 1.0:
        out = graph.mul(out, n.scalar(alpha, out))
    c = n.optional(2)
    if c is not None:
        out = graph.add(out, c if beta == 1.0 else graph.mul(c, n.scalar(beta, c)))
    return out


@converts("Einsum")
def _einsum(n: Node) -> Results:
    values = n.inputs()
    return graph.einsum(values, equation=explicit_equation(n.attr("equation"), [rank(v) for v in values]))


def explicit_equation(equation: str, ranks: Sequence[int]) -> str:
    """``equation`` with each '...' spelled out as letters and the output written when implicit
    (the letters used once, in alphabetical order, after the ellipsis dims)."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in equation]
    widths = [r - (len(t) - 3) if "..." in t else 0 for t, r in zip(terms, ranks)]
    ellipsis = "".join(free[: max(widths, default=0)])
    # an operand with fewer ellipsis dims broadcasts against the trailing ones
    terms = [t.replace("...", ellipsis[len(ellipsis) - w :] if w else "") for t, w in zip(terms, widths)]
    if arrow:
        out = rhs.replace("...", ellipsis)
    else:
        letters = "".join(t for t in terms)
        out = ellipsis + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ellipsis))
    return ",".join(terms) + "->" + out


# optional values -----------------------------------------------------------------------------------
@converts("OptionalHasElement")
def _optional_has_element(n: Node) -> Results:
    return n.constant(np.asarray(n.has(0)))


# ai.onnx.ml ------------------------------------------------------------------------------------------
@converts("ai.onnx.ml.Binarizer")
def _binarizer(n: Node) -> Results:
    x = n.input(0)
    return cast(graph.gt(x, n.scalar(n.attr("threshold", 0.0), x)), element(x))


@converts("ai.onnx.ml.ArrayFeatureExtractor")
def _array_feature_extractor(n: Node) -> Results:
    x, index = n.input(0), graph.reshape(cast(n.input(1), i64), shape=(-1,))
    picked = graph.gather(x, index, axis=rank(x) - 1)
    return graph.unsqueeze(picked, axes=(0,)) if rank(x) == 1 else picked
