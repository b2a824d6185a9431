"""Insertion points: where op builders put the ops they create.

    with InsertionPoint(block):
        y = graph.relu(graph.add(x, b))

Outside any ``with`` block, builders return detached ops' results.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from .core import Block, Operation, Value


class _Stack(threading.local):
    """The active insertion points, one stack per thread (builders on two threads never see each other's)."""

    def __init__(self) -> None:
        self.points: list[InsertionPoint] = []


_STACK = _Stack()


class InsertionPoint:
    """Insert at the end of ``block``, or before ``before`` when given."""

    def __init__(self, block: Block, before: Operation | None = None):
        self.block = block
        self.before = before

    @staticmethod
    def before_op(op: Operation) -> InsertionPoint:
        assert op.parent is not None, "op is not in a block"
        return InsertionPoint(op.parent, op)

    @staticmethod
    def after_op(op: Operation) -> InsertionPoint:
        assert op.parent is not None, "op is not in a block"
        block = op.parent
        index = block.index_of(op) + 1
        return InsertionPoint(block, block.ops[index] if index < len(block.ops) else None)

    def insert(self, op: Operation) -> Operation:
        if self.before is None:
            return self.block.append(op)
        return self.block.insert_before(self.before, op)

    def __enter__(self) -> InsertionPoint:
        _STACK.points.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _STACK.points.pop()


def current_insertion_point() -> InsertionPoint | None:
    """The innermost active insertion point, or None."""
    return _STACK.points[-1] if _STACK.points else None


def flatten_values(items: Sequence[Any]) -> list[Value]:
    """Operands as given to a builder: values, ops with one result, or lists of them."""
    out: list[Value] = []
    for item in items:
        if isinstance(item, (list, tuple)):
            out.extend(flatten_values(item))
        elif isinstance(item, Operation):
            out.append(item.result)
        elif isinstance(item, Value):
            out.append(item)
        else:
            raise TypeError(f"expected a Value as operand, got {type(item).__name__}")
    return out
