"""pack-weights: constant right operands of f32 matmuls packed at compile time into the GEMM's panel layout.

``graph.matmul(x, W)`` with ``W`` a 2-D f32 constant (transposed or not) becomes
``graph.matmul_packed(x, P)`` with ``P = pack_panels(W, width)``: ``W`` cut into ``width``-column panels,
each stored contiguously row after row and zero-padded, which is the order the CPU's register-blocked
micro-kernel reads. Packing then costs nothing at run time (it would cost a read and a write of the
whole weight per call otherwise). The old constant is dropped when nothing else uses it.

The width is the ``nr`` the gemm family's default rule gives that product on the pass's ``target`` (64 on
AVX-512, 16 on AVX2, narrower for narrow weights), so the kernel built later reads its own tile's panels. A
weight of one column is left alone: its product is the matrix-vector kernel, which reads it in place.
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
from ..lowering.linalg import panel_width
from ..targets import Target, TargetError, parse_target
from .base import Pass, register_pass


@register_pass
@dataclass(frozen=True)
class PackWeights(Pass):
    """Pack constant f32 matmul weights into column panels (see the module docstring) as wide as the GEMM's
    default tile for ``target`` (``nr`` of :func:`~tensorium.lowering.linalg.gemm_defaults`, which is
    narrower for narrow weights), or ``width`` columns when given (then at most the columns rounded up to
    the target's vector lanes)."""

    name: ClassVar[str] = "pack-weights"
    width: int = 0
    """Panel width in columns; 0: the target's default GEMM tile."""
    target: str = ""
    """The machine packed for (``cpu:x86-64-v3``; empty: this one)."""

    def __post_init__(self) -> None:
        if self.width < 0:
            raise PassError(f"width must be 0 (the target's GEMM tile) or more, got {self.width}")

    def machine(self) -> Target:
        """The CPU target the panels are packed for; PassError for a bad or non-CPU target."""
        return packing_target(self.name, self.target)

    def run(self, module: Operation) -> None:
        target, width = self.machine(), self.width

        def pack(op: Operation, rewriter: PatternRewriter) -> bool:
            return _pack(op, rewriter, target, width)

        apply_patterns_greedily(module, [RewritePattern("pack_constant_weight", ("graph.matmul",), pack)])


def packing_target(pass_name: str, target: str) -> Target:
    """The CPU target a packing pass named ``pass_name`` packs for (``target`` text; empty: this machine);
    PassError for a bad or non-CPU target."""
    try:
        parsed = parse_target(target or "cpu")
    except TargetError as e:
        raise PassError(f"{pass_name}: {e}") from None
    if parsed.kind != "cpu":
        raise PassError(f"{pass_name} packs for a CPU target, not '{parsed}'")
    return parsed


def _width(op: Operation, target: Target, width: int, cols: int) -> int | None:
    """The panel width for ``op``'s weight of ``cols`` columns; None when the default kernel does not read
    panels (one column: the matrix-vector product reads it as it is)."""
    if cols == 1 and not op.attr("transpose_a", False):
        return None
    if not width:
        return panel_width(op, target)
    lanes = target.lanes()
    return min(width, -(-cols // lanes) * lanes)


def _pack(op: Operation, rewriter: PatternRewriter, target: Target, width: int) -> bool:
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
    cols = int(weight.shape[1])
    panel = _width(op, target, width, cols)
    if panel is None:
        return False
    panels = pack_panels(weight, panel)
    packed = rewriter.create_before(
        op, "graph.constant", [], {"value": DenseAttr.adopt(panels, TensorType(panels.shape, f32))}
    ).result
    attrs = {"cols": cols, "transpose_a": bool(op.attr("transpose_a", False))}
    rewriter.replace_op_with_new(op, "graph.matmul_packed", [lhs, packed], attrs)
    if not producer.results[0].uses:
        rewriter.erase_op(producer)
    return True
