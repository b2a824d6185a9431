"""Lowering matmul: loops over batch dims and the result's rows ``i`` and columns ``j``, a local accumulator,
and the contraction loop ``k`` inside.

Batch dims broadcast as in the graph op. f16 and bf16 accumulate in f32 (as the reference computes);
integers accumulate in their own type, which wraps exactly as the reference's result does.
"""

from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from .kernel import Kernel, compute_type, convert, element_of, lowering, shape_of
from .reduce import accumulate


@lowering("graph.matmul")
def lower_matmul(op: Operation, k: Kernel) -> None:
    """out[..., i, j] = sum over k of a[..., i, k] * b[..., k, j] (with the transpose flags)."""
    a, b = k.inputs
    out = k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    shape = shape_of(out)
    batch = len(shape) - 2
    acc_t = compute_type(element_of(out))
    sizes = k.sizes(out)
    a_rank, b_rank = len(shape_of(a)), len(shape_of(b))
    contraction = k.size(a, a_rank - 2 if attrs["transpose_a"] else a_rank - 1)
    names = [f"b{n}" for n in range(batch)] + ["i", "j"]
    with k.loops(sizes, names) as ivs:
        i, j = ivs[-2], ivs[-1]
        a_batch = k.broadcast_indices(a, a_rank - 2, shape[:-2], ivs[:-2])
        b_batch = k.broadcast_indices(b, b_rank - 2, shape[:-2], ivs[:-2])

        def product(inner: list[Value]) -> Value:
            (kk,) = inner
            lhs = loop.load(a, a_batch + ([kk, i] if attrs["transpose_a"] else [i, kk]))
            rhs = loop.load(b, b_batch + ([j, kk] if attrs["transpose_b"] else [kk, j]))
            return loop.mul(convert(lhs, acc_t), convert(rhs, acc_t))  # type: ignore[no-any-return]

        total = accumulate(k, acc_t, k.const(0, acc_t), [contraction], ["k"], product, loop.add)
        loop.store(convert(total, element_of(out)), out, ivs)
