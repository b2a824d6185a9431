"""ONNX quantization ops: QuantizeLinear, DequantizeLinear (QDQ), MatMulInteger and com.microsoft MatMulNBits.

A DequantizeLinear of constant 1..8-bit integers with constant scales becomes ``quant.dequantize`` of a
constant of a ``!quant<...>`` type (per tensor, per axis, or blocked along an axis: per group), so that a
QDQ weight feeding a MatMul becomes ``quant.matmul`` (the quant dialect's canonicalization) and stays k-bit;
any other DequantizeLinear or QuantizeLinear is elementwise graph math. MatMulNBits (onnxruntime's k-bit
weight matmul: B packed LSB first in bytes, one block of ``block_size`` codes per blob, scales and optional
zero points per block) becomes ``quant.matmul`` with per-group scales and float zero points.
"""

from __future__ import annotations

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph, quant
from ..ir.types import FloatType, IntegerType, QuantizedType, f32, i32
from .onnx_context import ConversionError, Node, scalar_type
from .onnx_ops import Results, cast, converts, element, rank


def _broadcast_param(n: Node, v: Value, like: Value, axis: int) -> Value:
    """A 1-D per-axis parameter reshaped to broadcast along ``axis`` of ``like`` (scalars as they are)."""
    if rank(v) != 1 or rank(like) <= 1:
        return v
    shape = [1] * rank(like)
    shape[axis % rank(like)] = -1
    return graph.reshape(v, shape=tuple(shape))  # type: ignore[no-any-return]


def _quant_type(n: Node, x: np.ndarray, scale: np.ndarray, element_type: IntegerType) -> QuantizedType | None:
    """The quantized type of constant DequantizeLinear input ``x``, or None when it has no quant type."""
    expressed = FloatType("f32")
    if element_type.width > 8 or element_type.is_bool or scale.dtype != np.float32:
        return None
    axis = int(n.attr("axis", 1)) % max(x.ndim, 1)
    block = int(n.attr("block_size", 0))
    if scale.size == 1 and block == 0:
        return QuantizedType(element_type.width, element_type.signed, expressed)
    if block:
        return QuantizedType(element_type.width, element_type.signed, expressed, "per_group", axis, block)
    return QuantizedType(element_type.width, element_type.signed, expressed, "per_channel", axis)


def _param_array(array: np.ndarray, q: QuantizedType, rank_: int) -> np.ndarray:
    """An ONNX scale or zero point in the layout ``q``'s scales take (per channel: same rank, 1 elsewhere)."""
    array = np.asarray(array, np.float32)
    if q.granularity == "per_tensor":
        return array.reshape(())
    if q.granularity == "per_channel":
        shape = [1] * rank_
        shape[q.axis or 0] = -1
        return array.reshape(shape)
    return array


@converts("DequantizeLinear")
def _dequantize_linear(n: Node) -> Value:
    x, scale = n.input(0), n.input(1)
    zero = n.optional(2)
    x_type = element(x)
    if n.is_const(0) and n.is_const(1) and (zero is None or n.is_const(2)) and isinstance(x_type, IntegerType):
        codes, scales = n.const(0), n.const(1)
        q = _quant_type(n, codes, scales, x_type)
        if q is not None and codes.ndim >= 1:
            params = [_param_array(scales, q, codes.ndim)]
            if zero is not None:
                params.append(_param_array(n.const(2), q, codes.ndim))
            weight = n.constant(codes.astype(np.int8 if q.signed else np.uint8), q)
            return quant.dequantize(weight, *(n.constant(p) for p in params))  # type: ignore[no-any-return]
    if int(n.attr("block_size", 0)):
        raise ConversionError("blocked DequantizeLinear of a run-time input is not supported")
    axis = int(n.attr("axis", 1))
    out = element(scale)
    values = cast(x, out)
    if zero is not None:
        values = graph.sub(values, _broadcast_param(n, cast(zero, out), x, axis))
    return graph.mul(values, _broadcast_param(n, scale, x, axis))  # type: ignore[no-any-return]


@converts("QuantizeLinear")
def _quantize_linear(n: Node) -> Value:
    x, scale = n.input(0), n.input(1)
    zero = n.optional(2)
    if int(n.attr("block_size", 0)):
        raise ConversionError("blocked QuantizeLinear is not supported")
    to = element(zero) if zero is not None else IntegerType(8, False)
    if n.attr("output_dtype", 0):
        to = scalar_type(int(n.attr("output_dtype")))
    if not isinstance(to, IntegerType) or to.is_bool:
        raise ConversionError(f"QuantizeLinear to {to} is not supported (integer outputs only)")
    axis = int(n.attr("axis", 1))
    work = element(scale) if element(scale) == element(x) else f32
    levels = graph.round(graph.div(cast(x, work), _broadcast_param(n, cast(scale, work), x, axis)))
    if zero is not None:
        levels = graph.add(levels, _broadcast_param(n, cast(zero, work), x, axis))
    low, high = n.scalar(to.min_value, levels), n.scalar(to.max_value, levels)
    return cast(graph.min(graph.max(levels, low), high), to)


@converts("DynamicQuantizeLinear")
def _dynamic_quantize_linear(n: Node) -> Results:
    """uint8 codes of x with a scale and zero point from its range (widened to include 0), as ONNX defines."""
    x = n.input(0)
    if element(x) != f32:
        raise ConversionError(f"DynamicQuantizeLinear of {element(x)} is not supported (f32)")
    axes = tuple(range(rank(x)))
    zero = n.constant(np.array(0.0, np.float32))
    low = graph.min(graph.reduce_min(x, axes=axes), zero)
    high = graph.max(graph.reduce_max(x, axes=axes), zero)
    scale = graph.div(graph.sub(high, low), n.constant(np.array(255.0, np.float32)))
    top = n.constant(np.array(255.0, np.float32))
    point = graph.min(graph.max(graph.round(graph.sub(zero, graph.div(low, scale))), zero), top)
    codes = graph.min(graph.max(graph.add(graph.round(graph.div(x, scale)), point), zero), top)
    u8 = IntegerType(8, False)
    return [cast(codes, u8), scale, cast(point, u8)]


@converts("MatMulInteger")
def _matmul_integer(n: Node) -> Value:
    a, b = cast(n.input(0), i32), cast(n.input(1), i32)
    a_zero, b_zero = n.optional(2), n.optional(3)
    if a_zero is not None:
        a = graph.sub(a, _broadcast_param(n, cast(a_zero, i32), a, 0) if rank(a_zero) == 1 else cast(a_zero, i32))
    if b_zero is not None:
        b = graph.sub(b, cast(b_zero, i32))
    return graph.matmul(a, b)  # type: ignore[no-any-return]


def unpack_bytes(blob: np.ndarray, bits: int, count: int) -> np.ndarray:
    """``count`` codes of ``bits`` bits per row of uint8 ``blob``, packed least significant bit first."""
    stream = np.unpackbits(np.asarray(blob, np.uint8), axis=-1, bitorder="little")[..., : count * bits]
    planes = stream.reshape(*blob.shape[:-1], count, bits).astype(np.uint32) << np.arange(bits, dtype=np.uint32)
    return planes.sum(axis=-1).astype(np.uint32)


@converts("com.microsoft.MatMulNBits")
def _matmul_nbits(n: Node) -> Value:
    a = n.input(0)
    bits, block = int(n.attr("bits", 4)), int(n.attr("block_size"))
    cols, depth = int(n.attr("N")), int(n.attr("K"))
    if not 1 <= bits <= 8:
        raise ConversionError(f"MatMulNBits with bits={bits} is not supported (1..8)")
    if n.has(4):
        raise ConversionError("MatMulNBits with g_idx (activation order) is not supported")
    blocks = -(-depth // block)
    packed = n.const(1).reshape(cols, blocks, -1)
    codes = unpack_bytes(packed, bits, block).reshape(cols, blocks * block)[:, :depth]
    scale = n.const(2).astype(np.float32).reshape(cols, blocks)
    if n.has(3):
        zero_points = n.const(3)
        if zero_points.dtype == np.uint8:
            zero = unpack_bytes(zero_points.reshape(cols, -1), bits, blocks).astype(np.float32)
        else:
            zero = zero_points.astype(np.float32).reshape(cols, blocks)
    else:
        zero = np.full((cols, blocks), float(1 << (bits - 1)), np.float32)
    if element(a) != f32:
        raise ConversionError(f"MatMulNBits with {element(a)} activations is not supported (f32)")
    if depth % block:
        # the last block is partial: a group must divide K, so this weight is imported in float
        floats = (codes - np.repeat(zero, block, axis=1)[:, :depth]) * np.repeat(scale, block, axis=1)[:, :depth]
        out = graph.matmul(a, n.constant(floats.astype(np.float32)), transpose_b=True)
    else:
        q = QuantizedType(bits, False, f32, "per_group", 1, block)
        weight = n.constant(codes.astype(np.uint8), q)
        out = quant.matmul(a, weight, n.constant(scale), n.constant(zero))
    bias = n.optional(5)
    return graph.add(out, bias) if bias is not None else out  # type: ignore[no-any-return]
