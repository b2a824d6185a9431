"""pack-weights: constant right operands of f32 matmuls packed at compile time into the GEMM's panel layout.

``graph.matmul(x, W)`` with ``W`` a 2-D f32 constant (transposed or not) becomes
``graph.matmul_packed(x, P)`` with ``P = pack_panels(W, width)``: ``W`` cut into ``width``-column panels,
each stored contiguously row after row and zero-padded, which is the order the CPU's register-blocked
micro-kernel reads. Packing then costs nothing at run time (it would cost a read and a write of the
whole weight per call otherwise). The old constant is dropped when nothing else uses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import PassError
from ..ir.attributes import DenseAttr
from ..ir.core import Operation
from ..ir.dialects.graph.linalg import pack_panels
from ..ir.rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from ..ir.types import TensorType, f32
from .base import Pass, register_pass

LANES = 16
"""f32 lanes of the host's widest vectors (AVX-512); a panel narrower than this would waste the vector width."""


@register_pass
@dataclass(frozen=True)
class PackWeights(Pass):
    """Pack constant f32 matmul weights into ``width``-column panels (see the module docstring); a weight
    with fewer columns gets one panel as wide as its columns rounded up to the 16 lanes of a vector."""

    name: ClassVar[str] = "pack-weights"
    width: int = 64
    target: str = ""
    """The machine packed for (``cpu:x86-64-v3``; empty: this one)."""

    def __post_init__(self) -> None:
        if self.width < 1:
            raise PassError(f"width must be at least 1, got {self.width}")

    def run(self, module: Operation) -> None:
        width = self.width

        def pack(op: Operation, rewriter: PatternRewriter) -> bool:
            return _pack(op, rewriter, width)

        apply_patterns_greedily(module, [RewritePattern("pack_constant_weight", ("graph.matmul",), pack)])


def _pack(op: Operation, rewriter: PatternRewriter, width: int) -> bool:
    lhs, rhs = op.operands
    producer = rhs.defining_op()
    t = rhs.type
    if producer is None or producer.name != "graph.constant" or not isinstance(t, TensorType):
        return False
    if t.rank != 2 or t.element != f32 or not t.is_static or op.result.type.element != f32:  # type: ignore[attr-defined]
        return False
    value = producer.attributes["value"]
    assert isinstance(value, DenseAttr)
    weight = value.array.T if op.attr("transpose_b", False) else value.array
    panels = pack_panels(weight, min(width, -(-int(weight.shape[1]) // LANES) * LANES))
    packed = rewriter.create_before(
        op, "graph.constant", [], {"value": DenseAttr(panels, TensorType(panels.shape, f32))}
    ).result
    cols = int(weight.shape[1])
    attrs = {"cols": cols, "transpose_a": bool(op.attr("transpose_a", False))}
    rewriter.replace_op_with_new(op, "graph.matmul_packed", [lhs, packed], attrs)
    if not producer.results[0].uses:
        rewriter.erase_op(producer)
    return True
