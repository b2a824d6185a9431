"""Lowering ``graph.attention`` to one kernel: scores, row softmax and the product with v, in three phases.

The scores ``q @ k^T`` are the blocked GEMM (k is the transposed operand, packed into panels per batch), with
the scale, the causal triangle and the mask applied as its epilogue on the accumulator tile; a row softmax
then runs in place on them, rows in parallel; the product with v is the blocked GEMM again. The scores live
in one buffer of the kernel ([..., Sq, Sk]: 256 KiB for 4 heads of 128 x 128, in cache between phases).
This is the whole-op form a backend can schedule; an online-softmax (flash) form that never stores the
scores would pay off for long sequences and is not written yet.
"""

from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.shapes import broadcast_shapes
from ..ir.types import BufferType, IntegerType, Sym
from .kernel import Kernel, compute_type, convert, element_of, lowering, lowering_error, shape_of
from .linalg import emit_matmul
from .reduce import emit_softmax


@lowering("graph.attention")
def lower_attention(op: Operation, k: Kernel) -> None:
    """softmax(q @ k^T * scale + mask) @ v (see the module docstring)."""
    q, keys, v = k.inputs[:3]
    mask = k.inputs[3] if len(k.inputs) == 4 else None
    out = k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    element = element_of(q)
    acc_t = compute_type(element)
    q_shape, k_shape = shape_of(q), shape_of(keys)
    shape = (*broadcast_shapes(q_shape[:-2], k_shape[:-2]), q_shape[-2], k_shape[-2])
    sizes = _sizes(op, k, shape, q, keys, out)
    dynamic = [s for s, d in zip(sizes, shape) if isinstance(d, Sym)]
    with k.prologue():  # before the GEMMs' prologue values, which read its sizes
        scores = loop.alloc(*dynamic, type=BufferType(shape, element, "global"))
    # As the reference, for f16: the product rounds to the element type, then the scaled scores do.
    scale, minus_inf = convert(k.const(float(attrs["scale"]), element), acc_t), k.const(float("-inf"), acc_t)

    def rounded(value: Value) -> Value:
        return convert(convert(value, element), acc_t)

    def epilogue(value: Value, indices: list[Value]) -> Value:
        value = rounded(loop.mul(rounded(value), scale))
        i, j = indices[-2], indices[-1]
        if attrs["causal"]:
            value = loop.select(loop.cmp(j, i, predicate="le"), value, minus_inf)
        if mask is not None:
            m_shape = shape_of(mask)
            m = loop.load(mask, k.broadcast_indices(mask, len(m_shape), shape, indices))
            kind = element_of(mask)
            if isinstance(kind, IntegerType) and kind.is_bool:
                value = loop.select(m, value, minus_inf)
            else:
                value = loop.add(value, convert(m, acc_t))
        return value  # type: ignore[no-any-return]

    emit_matmul(k, q, keys, scores, transpose_b=True, epilogue=epilogue, prefix="s_")
    emit_softmax(k, scores, scores, -1, parallel=True)
    emit_matmul(k, scores, v, out, prefix="o_")


def _sizes(op: Operation, k: Kernel, shape: tuple[object, ...], *buffers: Value) -> list[Value]:
    """Index values for ``shape``: constants, or the size of a buffer dim with the same named dim."""
    out = []
    for d in shape:
        if isinstance(d, int):
            out.append(k.index(d))
            continue
        found = [(b, a) for b in buffers for a, e in enumerate(shape_of(b)) if e == d]
        if not found:
            raise lowering_error(op, f"no operand gives the size of the scores' dim {d}")
        out.append(k.size(*found[0]))
    return out
