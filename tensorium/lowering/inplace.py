"""Which outputs of a kernel may be written into the memory of one of its inputs (in place).

Output ``o`` may share input ``i``'s memory when the kernel reads ``i`` only right before it writes the same
element of ``o``: every load of ``i`` sits in the block of the kernel's one store into ``o``, before it,
with the very same index values; the kernel never reads ``o``; and the induction variable of every loop
around the store flows into its indices, so no two iterations write one element. Then each element of
``i`` is read once, just before the store that overwrites it (parallel iterations and vector lanes touch
disjoint indices). Elementwise kernels and fused epilogues
(a residual add loads the residual at the output's indices) qualify; a matmul reading its operand across
a whole row does not. The memory plan uses this to let an output take the slot of an input that dies at
that step.
"""

from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.dialects.builtin import func_body


def inplace_pairs(kernel: Operation) -> frozenset[tuple[int, int]]:
    """Pairs ``(input argument index, output argument index)`` of a kernel function that may share memory.

    Arguments are the function's buffer arguments by position; the caller decides which are outputs
    (all pairs of distinct arguments of one type are checked here).
    """
    args = func_body(kernel).args
    loads: dict[int, list[Operation]] = {}
    stores: dict[int, list[Operation]] = {}
    position = {id(a): n for n, a in enumerate(args)}
    for op in kernel.walk():
        if op.name == "loop.load" and id(op.operands[0]) in position:
            loads.setdefault(position[id(op.operands[0])], []).append(op)
        elif op.name == "loop.store" and id(op.operands[1]) in position:
            stores.setdefault(position[id(op.operands[1])], []).append(op)
    pairs = set()
    for out, written in stores.items():
        if len(written) != 1 or out in loads or not _each_loop_moves(written[0]):
            continue
        (store,) = written
        for source, reads in loads.items():
            if source != out and args[source].type == args[out].type and source not in stores:
                if all(_reads_before(load, store) for load in reads):
                    pairs.add((source, out))
    return frozenset(pairs)


def _reads_before(load: Operation, store: Operation) -> bool:
    """True when ``load`` precedes ``store`` in the same block and reads the indices ``store`` writes."""
    block = store.parent
    if block is None or load.parent is not block:
        return False
    if not _same(load.operands[1:], store.operands[2:]):
        return False
    return block.index_of(load) < block.index_of(store)


def _each_loop_moves(store: Operation) -> bool:
    """True when the induction variable of every loop around ``store`` reaches one of its indices."""
    reached: set[int] = set()
    pending = list(store.operands[2:])
    while pending:
        v = pending.pop()
        if id(v) in reached:
            continue
        reached.add(id(v))
        op = v.defining_op()
        if op is not None:
            pending.extend(op.operands)
    loop = store.parent_op
    while loop is not None and loop.name != "func.func":
        if loop.name == "loop.for" and id(loop.regions[0].block.args[0]) not in reached:
            return False
        loop = loop.parent_op
    return True


def _same(a: tuple[Value, ...], b: tuple[Value, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))
