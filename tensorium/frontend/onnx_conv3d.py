"""3-D convolutions as sums of 2-D ones: one ``graph.conv2d`` (or ``conv_transpose2d``) per depth tap.

The depth axis folds into the batch: for each tap ``j`` of the kernel's depth, the input planes that
tap reads (a strided slice of the padded depth) are convolved with the weights' plane ``j`` by the
2-D op, and the taps' results add up. The transposed convolution scatters each tap's planes to
depth ``i * stride + j * dilation`` (zeros interleaved, then shifted) before adding, and crops the
pads at the end.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from .onnx_context import Node
from .onnx_ops import element, static_dims, take


def _unfold(v: Value, batch: int, depth: int) -> Value:
    """(batch * depth) x C x H x W back to batch x C x depth x H x W."""
    _, c, h, w = static_dims(v, "Conv")
    return graph.transpose(graph.reshape(v, shape=(batch, depth, c, h, w)), perm=(0, 2, 1, 3, 4))  # type: ignore[no-any-return]


def _with_bias(y: Value, bias: Value | None) -> Value:
    return y if bias is None else graph.add(y, graph.reshape(bias, shape=(1, -1, 1, 1, 1)))  # type: ignore[no-any-return]


def conv3d_by_planes(
    n: Node, x: Value, w: Value, bias: Value | None, depth: tuple[int, int, int, int], **plane: Any
) -> Value:
    """N x C x D x H x W convolution; ``depth`` is (stride, dilation, pad before, pad after) of D and
    ``plane`` the conv2d attributes of H and W (strides, padding, dilations, groups)."""
    stride, dilation, before, after = depth
    batch, channels, size, h, wd = static_dims(x, "Conv")
    taps = static_dims(w, "Conv")[2]
    if before or after:
        x = graph.pad(x, pads=(0, 0, before, 0, 0, 0, 0, after, 0, 0))
    out = (size + before + after - (taps - 1) * dilation - 1) // stride + 1
    total: Value | None = None
    for j in range(taps):
        start = j * dilation
        part = graph.slice(x, starts=(start,), ends=(start + (out - 1) * stride + 1,), axes=(2,), steps=(stride,))
        folded = graph.reshape(graph.transpose(part, perm=(0, 2, 1, 3, 4)), shape=(batch * out, channels, h, wd))
        y = graph.conv2d(folded, take(w, 2, j), **plane)
        total = y if total is None else graph.add(total, y)
    assert total is not None
    return _with_bias(_unfold(total, batch, out), bias)


def conv_transpose3d_by_planes(
    n: Node, x: Value, w: Value, bias: Value | None, depth: tuple[int, int, int, int, int], **plane: Any
) -> Value:
    """N x C x D x H x W transposed convolution; ``depth`` is (stride, dilation, pad before, pad after,
    output padding) of D and ``plane`` the conv_transpose2d attributes of H and W."""
    stride, dilation, before, after, extra = depth
    batch, channels, size, h, wd = static_dims(x, "ConvTranspose")
    taps = static_dims(w, "ConvTranspose")[2]
    folded = graph.reshape(graph.transpose(x, perm=(0, 2, 1, 3, 4)), shape=(batch * size, channels, h, wd))
    spread = (size - 1) * stride + 1
    full = spread + (taps - 1) * dilation + extra
    total: Value | None = None
    for j in range(taps):
        y = graph.conv_transpose2d(folded, take(w, 2, j), **plane)
        _, o, h2, w2 = static_dims(y, "ConvTranspose")
        y = graph.reshape(y, shape=(batch, size, o, h2, w2))
        if stride > 1:  # planes i land at depth i * stride: interleave stride - 1 planes of zeros
            zeros = n.constant(np.zeros((batch, size, stride - 1, o, h2, w2)), element(y))
            y = graph.concat([graph.unsqueeze(y, axes=(2,)), zeros], axis=2)
            y = graph.slice(
                graph.reshape(y, shape=(batch, size * stride, o, h2, w2)), starts=(0,), ends=(spread,), axes=(1,)
            )
        shift = j * dilation
        y = graph.pad(y, pads=(0, shift, 0, 0, 0, 0, full - spread - shift, 0, 0, 0))
        total = y if total is None else graph.add(total, y)
    assert total is not None
    cropped = graph.slice(total, starts=(before,), ends=(full - after,), axes=(1,))
    return _with_bias(graph.transpose(cropped, perm=(0, 2, 1, 3, 4)), bias)
