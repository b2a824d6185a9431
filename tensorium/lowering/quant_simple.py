"""Simple loop nests for the quant dialect's unpacked ops: dequantize, matmul and embedding lookups.

They read k-bit codes one per byte (how a ``!quant`` tensor is held) and dequantize each element as it is
used: ``(q - zero) * scale`` with the scale and zero point of its channel or group. ``quant.matmul`` reaches
them only when pack-quant could not pack its weight for the ``qgemv`` kernel (quant.py), for instance a
run-time weight or a group that is not a multiple of 32.
"""

from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.types import BufferType, QuantizedType, TensorType, f32
from .indexing import position
from .kernel import Kernel, lowering, lowering_error
from .linalg import multiply_add


def _quant(value: Value) -> QuantizedType:
    t = value.type
    assert isinstance(t, TensorType) and isinstance(t.element, QuantizedType)
    return t.element


def param_indices(k: Kernel, q: QuantizedType, rank: int, ivs: list[Value]) -> list[Value]:
    """The indices into the scales (and zero points) of the element of a ``q`` tensor at ``ivs``."""
    if q.granularity == "per_tensor":
        return []
    assert q.axis is not None
    axis = q.axis % rank
    if q.granularity == "per_channel":
        return [ivs[a] if a == axis else k.index(0) for a in range(rank)]
    assert q.group_size is not None
    return [loop.div(ivs[a], k.index(q.group_size)) if a == axis else ivs[a] for a in range(rank)]


def dequantized(k: Kernel, codes: Value, scale: Value, zero: Value | None, q: QuantizedType, ivs: list[Value]) -> Value:
    """``(q - zero) * scale`` of the code at ``ivs``, as f32."""
    at = param_indices(k, q, len(ivs), ivs)
    value = loop.cast(loop.load(codes, ivs), dtype=f32)
    if zero is not None:
        value = loop.sub(value, loop.load(zero, at))
    return loop.mul(value, loop.load(scale, at))  # type: ignore[no-any-return]


def _check_f32(op: Operation, q: QuantizedType) -> None:
    if q.expressed != f32:
        raise lowering_error(op, f"the CPU lowering dequantizes to f32 only, not {q.expressed}")


@lowering("quant.dequantize")
def lower_dequantize(op: Operation, k: Kernel) -> None:
    """``out[i] = (q[i] - zero) * scale`` elementwise."""
    codes, scale, *zero = k.inputs
    q = _quant(op.operands[0])
    _check_f32(op, q)
    out = k.outputs[0]
    sizes = k.sizes(out)
    with k.loops(sizes, [f"d{a}" for a in range(len(sizes))]) as ivs:
        loop.store(dequantized(k, codes, scale, zero[0] if zero else None, q, ivs), out, ivs)


@lowering("quant.matmul")
def lower_matmul(op: Operation, k: Kernel) -> None:
    """``out[..., n] = sum_kk x[..., kk] * (q[n, kk] - zero) * scale``, rows of the weight in parallel."""
    x, codes, scale, *zero = k.inputs
    q = _quant(op.operands[1])
    _check_f32(op, q)
    out = k.outputs[0]
    sizes = k.sizes(out)
    depth = k.size(x, len(sizes) - 1)
    with loop.for_(k.index(0), sizes[-1], k.index(1), kind="parallel", name="n") as n:
        with k.loops(sizes[:-1], [f"m{a}" for a in range(len(sizes) - 1)]) as lead:
            acc = loop.alloc(type=BufferType((), f32, "local"))
            loop.store(k.const(0.0, f32), acc)
            with loop.for_(k.index(0), depth, k.index(1), name="kk") as kk:
                w = dequantized(k, codes, scale, zero[0] if zero else None, q, [n, kk])
                loop.store(multiply_add(k, loop.load(x, [*lead, kk]), w, loop.load(acc)), acc)
            loop.store(loop.load(acc), out, [*lead, n])


@lowering("quant.embedding")
def lower_embedding(op: Operation, k: Kernel) -> None:
    """``out[i..., d] = (q[idx[i...], d] - zero) * scale``; an index out of range fails the kernel (see
    :func:`~.indexing.position`), and is clamped to the table where the target leaves checks out (WebGPU)."""
    codes, indices, scale, *zero = k.inputs
    q = _quant(op.operands[0])
    _check_f32(op, q)
    out = k.outputs[0]
    sizes = k.sizes(out)
    last = k.last(codes, 0)
    with k.loops(sizes, [f"d{a}" for a in range(len(sizes))]) as ivs:
        row = position(k, loop.load(indices, ivs[:-1]), k.size(codes, 0), negative=False)
        row = loop.min(loop.max(row, k.index(0)), last)
        loop.store(dequantized(k, codes, scale, zero[0] if zero else None, q, [row, ivs[-1]]), out, ivs)
