"""fold: constant folding through the reference interpreter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import InterpreterError, PassError
from ..ir.attributes import DenseAttr
from ..ir.core import Block, Operation
from ..ir.evaluate import evaluate_op
from ..ir.rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from ..ir.types import TensorType
from .base import Pass, register_pass


@register_pass
@dataclass(frozen=True)
class Fold(Pass):
    """Replace each pure op whose operands are all constants by constants of its results.

    Ops are evaluated with the reference interpreter, so a folded program computes exactly what the
    interpreter would. Results with more than ``max_elements`` elements (or symbolic shapes) are left
    alone so that large tensors are not materialized; ops the interpreter rejects are left to fail at
    run time. Constants left unused are erased and equal constants in a block are merged into the first.
    """

    name: ClassVar[str] = "fold"
    max_elements: int = 1 << 20

    def __post_init__(self) -> None:
        if self.max_elements < 0:
            raise PassError(f"max-elements must be at least 0, got {self.max_elements}")

    def run(self, module: Operation) -> None:
        limit = self.max_elements

        def fold_constant_operands(op: Operation, rewriter: PatternRewriter) -> bool:
            return _fold(op, rewriter, limit)

        apply_patterns_greedily(module, [RewritePattern("fold_constant_operands", (), fold_constant_operands)])
        rewriter = PatternRewriter()
        for op in module.walk():
            for region in op.regions:
                for block in region.blocks:
                    _merge_constants(block, rewriter)


def _fold(op: Operation, rewriter: PatternRewriter, max_elements: int) -> bool:
    opdef = op.opdef
    if opdef is None or opdef.reference is None or not opdef.has_trait("pure") or opdef.has_trait("constant"):
        return False
    if op.regions or not op.results:
        return False
    producers = [v.defining_op() for v in op.operands]
    constants = [p for p in producers if p is not None and p.name == "graph.constant"]
    if len(constants) != len(producers):
        return False
    types = [r.type for r in op.results]
    for t in types:
        if not isinstance(t, TensorType) or not t.is_static or (t.num_elements or 0) > max_elements:
            return False
    args = []
    for c in constants:
        value = c.attributes["value"]
        assert isinstance(value, DenseAttr)
        args.append(value.array)
    try:
        arrays = evaluate_op(op, args)
    except InterpreterError:
        return False
    if any(a.shape != t.static_shape for a, t in zip(arrays, types) if isinstance(t, TensorType)):
        return False
    values = []
    for array, t in zip(arrays, types):
        assert isinstance(t, TensorType)
        values.append(rewriter.create_before(op, "graph.constant", [], {"value": DenseAttr(array, t)}).result)
    rewriter.replace_op(op, values)
    return True


def _merge_constants(block: Block, rewriter: PatternRewriter) -> None:
    """Make later constants of ``block`` equal to an earlier one use that one instead."""
    first: dict[DenseAttr, Operation] = {}
    for op in list(block.ops):
        if op.name != "graph.constant":
            continue
        value = op.attributes["value"]
        assert isinstance(value, DenseAttr)
        kept = first.setdefault(value, op)
        if kept is not op:
            rewriter.replace_op(op, kept.results)
