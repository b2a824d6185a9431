"""dce: dead code elimination of pure ops."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.core import Block, Operation
from ..ir.rewrite import PatternRewriter, is_trivially_dead
from .base import Pass, register_pass


@register_pass
@dataclass(frozen=True)
class DCE(Pass):
    """Erase pure ops whose results are unused, users before producers, until none is left."""

    name: ClassVar[str] = "dce"

    def run(self, module: Operation) -> None:
        rewriter = PatternRewriter()
        while True:
            rewriter.changed = False
            for region in module.regions:
                for block in region.blocks:
                    _sweep(block, rewriter)
            if not rewriter.changed:
                return


def _sweep(block: Block, rewriter: PatternRewriter) -> None:
    """One pass over ``block`` and its nested blocks, last op first, so a chain dies in one sweep."""
    for op in reversed(list(block.ops)):
        if is_trivially_dead(op):
            rewriter.erase_op(op)
            continue
        for region in op.regions:
            for inner in region.blocks:
                _sweep(inner, rewriter)
