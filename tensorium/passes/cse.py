"""cse: common subexpression elimination of pure ops."""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

from ..ir.attributes import Attr, DenseAttr
from ..ir.core import Block, Operation
from ..ir.rewrite import PatternRewriter
from ..ir.types import Type
from .base import Pass, register_pass


@register_pass
@dataclass(frozen=True)
class CSE(Pass):
    """Replace a pure op by an earlier, equivalent one that dominates it.

    Two ops are equivalent when they have the same name, the same operands (in any order for
    commutative ops), equal attributes (NaN equals NaN, 1 differs from 1.0) and the same result
    types. An op in a nested region may reuse one from an enclosing block, never the other way;
    functions and modules start afresh. Ops with regions are kept as they are.
    """

    name: ClassVar[str] = "cse"

    def run(self, module: Operation) -> None:
        rewriter = PatternRewriter()
        for region in module.regions:
            for block in region.blocks:
                _cse_block(block, ChainMap(), rewriter)


def _cse_block(block: Block, known: ChainMap[Hashable, Operation], rewriter: PatternRewriter) -> None:
    for op in list(block.ops):
        for region in op.regions:
            for inner in region.blocks:
                scope: ChainMap[Hashable, Operation] = (
                    ChainMap() if op.has_trait("isolated_from_above") else known.new_child()
                )
                _cse_block(inner, scope, rewriter)
        key = _key(op)
        if key is None:
            continue
        found = known.get(key)
        if found is None:
            known[key] = op
        else:
            rewriter.replace_op(op, found.results)


def _key(op: Operation) -> Hashable | None:
    """What makes ``op`` equivalent to another, or None when it may not be merged."""
    opdef = op.opdef
    if opdef is None or not opdef.has_trait("pure") or op.regions or not op.results:
        return None
    operands = [id(v) for v in op.operands]
    if opdef.has_trait("commutative"):
        operands.sort()
    attrs = tuple(sorted((k, _attr_key(v)) for k, v in op.attributes.items()))
    return (op.name, tuple(operands), attrs, tuple(op.result_types))


def _attr_key(value: Attr) -> Hashable:
    """A hashable key equal for two attribute values exactly when ``attr_equal`` holds."""
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    if isinstance(value, tuple):
        return ("tuple", tuple(_attr_key(v) for v in value))
    if isinstance(value, (bool, int, float, str, Type, DenseAttr)) or value is None:
        return (type(value).__name__, value)
    raise TypeError(f"cannot compare attribute value {value!r}")
