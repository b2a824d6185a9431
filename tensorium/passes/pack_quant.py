"""pack-quant: constant k-bit matmul weights packed at compile time for the CPU's ``qgemv`` kernel.

``quant.matmul(x, Wq, scale, zero)`` with constant operands becomes ``quant.matmul_packed`` over a block
layout with as many rows side by side as the target's f32 vectors have lanes (``interleaved``, or
``interleaved_shards`` where the target's kernel decodes that in fewer operations:
:func:`~tensorium.lowering.quant.packed_layout`), the scales and zero points panel-major,
``[panels, K / group, lanes]`` (zero past the last row): the kernel loads one vector of them per group, and a
thread working through its panels reads them in one sequential stream. Signed codes are stored unsigned,
``q + 2**(k-1)``, with the zero points shifted by as much, so the kernel has one form.
Per-tensor and per-channel weights are one group of K. Products the kernel cannot take (a group or K that is
not a multiple of 32, non-f32 activations) are left as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.core import Operation, Value
from ..ir.dialects.quant import layouts
from ..ir.dialects.quant.types import expand
from ..ir.rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from ..ir.types import IntegerType, QuantizedType, TensorType, f32
from ..lowering.quant import packed_layout
from .base import Pass, register_pass
from .pack_weights import packing_target

U32 = IntegerType(32, False)


@register_pass
@dataclass(frozen=True)
class PackQuant(Pass):
    """Pack constant k-bit matmul weights for the CPU kernel (see the module docstring)."""

    name: ClassVar[str] = "pack-quant"
    target: str = ""
    """The machine packed for (``cpu:x86-64-v3``; empty: this one); its f32 lanes are the rows per block."""

    def run(self, module: Operation) -> None:
        target = packing_target(self.name, self.target)

        def pack(op: Operation, rewriter: PatternRewriter) -> bool:
            return _pack(op, rewriter, target.lanes(), lambda bits: packed_layout(target, bits))

        apply_patterns_greedily(module, [RewritePattern("pack_quantized_weight", ("quant.matmul",), pack)])


def _constant(value: Value | None) -> np.ndarray | None:
    op = value.defining_op() if value is not None else None
    if op is None or op.name != "graph.constant":
        return None
    attr = op.attributes["value"]
    return attr.array if isinstance(attr, DenseAttr) else None


def _group(q: QuantizedType, depth: int) -> int:
    return q.group_size if q.granularity == "per_group" and q.group_size is not None else depth


def _pack(
    op: Operation, rewriter: PatternRewriter, lanes: int, layout_for: Callable[[int], str] = lambda bits: "interleaved"
) -> bool:
    """Replace ``op`` by a ``quant.matmul_packed`` of ``lanes`` rows in block layout ``layout_for(bits)``, if it can."""
    x, weight, scale, *zero = op.operands
    arrays = [_constant(v) for v in (weight, scale, *zero)]
    wtype = weight.type
    if any(a is None for a in arrays) or not isinstance(wtype, TensorType) or x.type.element != f32:  # type: ignore[attr-defined]
        return False
    if not x.type.rank or not isinstance(x.type.shape[-1], int):  # type: ignore[attr-defined]
        return False  # the packed kernels take a static K (the rows may be known at run time only)
    q = wtype.element
    assert isinstance(q, QuantizedType)
    codes, scales = arrays[0], arrays[1]
    assert codes is not None and scales is not None
    rows, depth = codes.shape
    group = _group(q, depth)
    if group % layouts.BLOCK or depth % group or (q.granularity == "per_channel" and q.axis not in (0, -2)):
        return False
    layout = layout_for(q.bits)
    shift = 1 << (q.bits - 1) if q.signed else 0
    zeros = arrays[2] if zero else np.zeros(scales.shape, np.float32)
    assert zeros is not None
    per_group = (rows, depth // group)
    full_scale = expand(scales, codes.shape)[:, ::group].reshape(per_group)
    full_zero = expand(zeros, codes.shape)[:, ::group].reshape(per_group) + shift
    packed = layouts.pack(codes.astype(np.int64) + shift, q.bits, False, layout, lanes)

    by_panel = [layouts.panel_params(params.astype(np.float32), lanes) for params in (full_scale, full_zero)]
    values = [(packed, TensorType(packed.shape, U32))] + [(a, TensorType(a.shape, f32)) for a in by_panel]
    constants = [
        rewriter.create_before(op, "graph.constant", [], {"value": DenseAttr.adopt(a, t)}).result for a, t in values
    ]
    producers = [v.defining_op() for v in (weight, scale, *zero)]
    attrs: dict[str, object] = {"bits": q.bits, "cols": int(rows), "group": group, "lanes": lanes}
    if layout != "interleaved":
        attrs["layout"] = layout
    rewriter.replace_op_with_new(op, "quant.matmul_packed", [x, *constants], attrs)
    for producer in producers:
        if producer is not None and producer.parent is not None and not producer.results[0].uses:
            rewriter.erase_op(producer)
    return True
