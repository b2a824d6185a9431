"""ONNX's language-model building blocks: RotaryEmbedding, SwiGLU, CausalConvWithState, TensorScatter.

Each is a short composition of graph ops: rotary embeddings rotate pairs of channels (halves, or
even/odd ones when interleaved) by cached angles picked by position; the causal convolution is a
depthwise convolution over the past state followed by the input; TensorScatter writes a block of
new cache entries at per-batch offsets (wrapping around in circular mode).
"""

from __future__ import annotations

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.shapes import normalize_axis
from ..ir.types import i64
from .onnx_context import ConversionError, Node
from .onnx_ops import Results, cast, converts, element, rank, static_dims


def _halves(x: Value, width: int, interleaved: bool) -> tuple[Value, Value]:
    if interleaved:
        first = graph.slice(x, starts=(0,), ends=(width,), axes=(-1,), steps=(2,))
        second = graph.slice(x, starts=(1,), ends=(width,), axes=(-1,), steps=(2,))
        return first, second
    half = width // 2
    return graph.slice(x, starts=(0,), ends=(half,), axes=(-1,)), graph.slice(
        x, starts=(half,), ends=(width,), axes=(-1,)
    )


@converts("RotaryEmbedding")
def _rotary_embedding(n: Node) -> Results:
    x, cos, sin = n.input(0), n.input(1), n.input(2)
    original = static_dims(x, "RotaryEmbedding")
    if len(original) == 4:
        x = graph.transpose(x, perm=(0, 2, 1, 3))  # B x S x heads x D
    elif len(original) == 3:
        heads = n.attr("num_heads")
        if not heads:
            raise ConversionError("RotaryEmbedding of a 3-D input needs num_heads")
        x = graph.reshape(x, shape=(original[0], original[1], heads, -1))
    else:
        raise ConversionError(f"RotaryEmbedding needs a 3-D or 4-D input, got {len(original)}-D")
    head = static_dims(x, "RotaryEmbedding")[3]
    width = n.attr("rotary_embedding_dim", 0) or head
    if n.has(3):
        positions = cast(n.input(3), i64)
        cos, sin = graph.gather(cos, positions, axis=0), graph.gather(sin, positions, axis=0)
    cos, sin = graph.unsqueeze(cos, axes=(2,)), graph.unsqueeze(sin, axes=(2,))
    interleaved = bool(n.attr("interleaved", 0))
    rotated = graph.slice(x, starts=(0,), ends=(width,), axes=(-1,)) if width < head else x
    x1, x2 = _halves(rotated, width, interleaved)
    real = graph.sub(graph.mul(cos, x1), graph.mul(sin, x2))
    imag = graph.add(graph.mul(sin, x1), graph.mul(cos, x2))
    if interleaved:
        pairs = graph.concat([graph.unsqueeze(real, axes=(-1,)), graph.unsqueeze(imag, axes=(-1,))], axis=-1)
        out = graph.reshape(pairs, shape=(0, 0, 0, width))
    else:
        out = graph.concat([real, imag], axis=-1)
    if width < head:
        out = graph.concat([out, graph.slice(x, starts=(width,), ends=(head,), axes=(-1,))], axis=-1)
    if len(original) == 4:
        return graph.transpose(out, perm=(0, 2, 1, 3))
    return graph.reshape(out, shape=original)


@converts("SwiGLU")
def _swiglu(n: Node) -> Results:
    a, b = n.input(0), n.input(1)
    alpha = n.attr("alpha", 1.0)
    return graph.mul(graph.mul(a, graph.sigmoid(graph.mul(a, n.scalar(alpha, a)))), b)


@converts("CausalConvWithState")
def _causal_conv_with_state(n: Node) -> Results:
    x, w = n.input(0), n.input(1)
    batch, channels, _ = static_dims(x, "CausalConvWithState")
    k = static_dims(w, "CausalConvWithState")[2]
    past = n.optional(3)
    if past is None:
        past = n.constant(np.zeros((batch, channels, k - 1)), element(x))
    padded = graph.concat([past, x], axis=2) if k > 1 else x
    lifted = graph.conv2d(
        graph.unsqueeze(padded, axes=(2,)),
        graph.unsqueeze(w, axes=(2,)),
        *([] if n.optional(2) is None else [n.input(2)]),
        groups=channels,
    )
    out = graph.squeeze(lifted, axes=(2,))
    if n.attr("activation", "none") in ("silu", "swish"):
        out = graph.mul(out, graph.sigmoid(out))
    length = static_dims(padded, "CausalConvWithState")[2]
    state = graph.slice(padded, starts=(length - (k - 1),), ends=(length,), axes=(2,))
    return out, state


@converts("TensorScatter")
def _tensor_scatter(n: Node) -> Results:
    cache, update = n.input(0), n.input(1)
    r = rank(cache)
    axis = normalize_axis(n.attr("axis", -2), r)
    dims, steps = static_dims(cache, "TensorScatter"), static_dims(update, "TensorScatter")
    where = cast(n.input(2), i64) if n.has(2) else n.constant(np.zeros(dims[0], np.int64))
    offsets = graph.reshape(where, shape=(-1,) + (1,) * (r - 1))
    along = np.arange(steps[axis], dtype=np.int64).reshape([-1 if i == axis else 1 for i in range(r)])
    index = graph.add(n.constant(along), offsets)
    if n.attr("mode", "linear") == "circular":
        index = graph.mod(index, n.scalar(dims[axis], index))
    return graph.scatter_elements(cache, graph.broadcast_to(index, shape=steps), update, axis=axis)
