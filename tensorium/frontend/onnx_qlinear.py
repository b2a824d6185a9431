"""ONNX's integer-arithmetic ops: QLinearMatMul, QLinearConv and ConvInteger.

Inputs shifted by their zero points are multiplied exactly in i32, or convolved in f64 (exact for
these integer sums; graph convolutions are float ops); the QLinear ops
then requantize: scale by ``x_scale * w_scale / y_scale`` in f64 (as the reference does), round half
to even, add the output zero point and saturate to the output type. (QuantizeLinear,
DequantizeLinear and the k-bit weight ops live in :mod:`.onnx_quant`.)
"""

from __future__ import annotations

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import IntegerType, f64, i32
from .onnx_context import ConversionError, Node
from .onnx_nn import convolution
from .onnx_ops import Results, cast, converts, element, rank


def _shifted(v: Value, zero: Value | None, per_channel_axis: int | None = None) -> Value:
    """``v - zero`` in i32 (a 1-D zero point along ``per_channel_axis`` of ``v``)."""
    out = cast(v, i32)
    if zero is None:
        return out
    z = cast(zero, i32)
    if per_channel_axis is not None and rank(z) == 1 and rank(v) > 1:
        z = graph.reshape(z, shape=tuple(-1 if i == per_channel_axis else 1 for i in range(rank(v))))
    return graph.sub(out, z)  # type: ignore[no-any-return]


def _requantize(n: Node, acc: Value, scale: Value, y_scale: Value, y_zero: Value | None, to: object) -> Value:
    """Round ``acc * scale / y_scale + y_zero`` half to even and saturate to integer type ``to``."""
    if not isinstance(to, IntegerType):
        raise ConversionError(f"{n.op_type} needs an integer output type, got {to}")
    factor = cast(graph.div(scale, y_scale), f64)
    y = graph.mul(cast(acc, f64), factor)
    if y_zero is not None:
        y = graph.add(y, cast(y_zero, f64))
    info = np.iinfo(f"{'' if to.signed else 'u'}int{to.width}")
    y = graph.clamp(graph.round(y), min=float(info.min), max=float(info.max))
    return cast(y, to)


def _channel_scale(v: Value, like_rank: int) -> Value:
    """A per-output-channel scale shaped to broadcast over N x C x ... (a scalar stays one)."""
    if rank(v) != 1:
        return v
    return graph.reshape(v, shape=(1, -1) + (1,) * (like_rank - 2))  # type: ignore[no-any-return]


@converts("QLinearMatMul")
def _qlinear_matmul(n: Node) -> Results:
    a, a_scale, a_zero = n.input(0), n.input(1), n.optional(2)
    b, b_scale, b_zero = n.input(3), n.input(4), n.optional(5)
    y_scale, y_zero = n.input(6), n.optional(7)
    acc = graph.matmul(_shifted(a, a_zero), _shifted(b, b_zero))
    to = element(y_zero) if y_zero is not None else element(a)
    return _requantize(
        n, acc, graph.mul(cast(a_scale, element(y_scale)), cast(b_scale, element(y_scale))), y_scale, y_zero, to
    )


@converts("QLinearConv")
def _qlinear_conv(n: Node) -> Results:
    x, x_scale, x_zero = n.input(0), n.input(1), n.optional(2)
    w, w_scale, w_zero = n.input(3), n.input(4), n.optional(5)
    y_scale, y_zero = n.input(6), n.optional(7)
    bias = cast(n.input(8), f64) if n.has(8) else None
    acc = _integer_convolution(n, x, x_zero, w, w_zero, bias)
    scale = graph.mul(cast(x_scale, element(y_scale)), _channel_scale(cast(w_scale, element(y_scale)), rank(acc)))
    to = element(y_zero) if y_zero is not None else element(x)
    return _requantize(n, acc, scale, y_scale, y_zero, to)


def _integer_convolution(
    n: Node, x: Value, x_zero: Value | None, w: Value, w_zero: Value | None, bias: Value | None
) -> Value:
    return convolution(n, cast(_shifted(x, x_zero), f64), cast(_shifted(w, w_zero, 0), f64), bias)


@converts("ConvInteger")
def _conv_integer(n: Node) -> Results:
    return cast(_integer_convolution(n, n.input(0), n.optional(2), n.input(1), n.optional(3), None), i32)
