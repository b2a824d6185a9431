"""Lowering the ops whose results have a size known only at run time (``graph.compress``).

The host allocates such a result at its bound (the mask's length), so the kernel reads that length from
the mask and writes the kept rows from the top; it stores how many it kept in the size result, which the
host reads to bind the run-time dim (see :class:`~tensorium.lowering.plan.RuntimeDim`).
"""

from __future__ import annotations

from ..ir.core import Operation
from ..ir.dialects import loop
from ..ir.types import BufferType, index
from .kernel import Kernel, convert, element_of, lowering


@lowering("graph.compress")
def lower_compress(op: Operation, k: Kernel) -> None:
    """A serial walk over the mask with a local count: each kept row of every data operand is copied to
    row ``count`` of its result; the count is stored last."""
    mask, *data = k.inputs
    *results, size = k.outputs
    count = loop.alloc(type=BufferType((), index, "local"))
    loop.store(k.index(0), count)
    with k.loops([k.size(mask, 0)], ["r0"]) as (i,):
        with loop.if_(loop.load(mask, [i])):
            row = loop.load(count)
            for n, (source, result) in enumerate(zip(data, results)):
                inner = k.sizes(source)[1:]
                with k.loops(inner, [f"d{n}_i{a + 1}" for a in range(len(inner))]) as ivs:
                    loop.store(loop.load(source, [i, *ivs]), result, [row, *ivs])
            loop.store(loop.add(row, k.index(1)), count)
    loop.store(convert(loop.load(count), element_of(size)), size, [])
