"""Lowering shape ops as copies: one loop nest over the result (per operand for concat) that loads the
element each result position takes.

Reshape, squeeze and unsqueeze keep the row-major order, so they copy through the linear position.
"""

from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.graph.shape import VIEW_RESHAPES, is_full_range, slice_plan
from ..ir.shapes import normalize_axis
from .kernel import Kernel, delinearize, linearize, lowering, lowering_error, shape_of


def _result_nest_names(rank: int) -> list[str]:
    return [f"i{a}" for a in range(rank)]


@lowering("graph.transpose")
def lower_transpose(op: Operation, k: Kernel) -> None:
    """out[i0, ..] = x[j] with j[perm[a]] = i_a."""
    x, out = k.inputs[0], k.outputs[0]
    perm = op.opdef.attr_kwargs(op)["perm"]
    with k.loops(k.sizes(out), _result_nest_names(len(perm))) as ivs:
        source: list[Value] = [ivs[list(perm).index(axis)] for axis in range(len(perm))]
        loop.store(loop.load(x, source), out, ivs)


@lowering(*sorted(VIEW_RESHAPES))
def lower_reshape(op: Operation, k: Kernel) -> None:
    """Copy through the row-major linear position of each result element."""
    x, out = k.inputs[0], k.outputs[0]
    x_sizes = k.sizes(x)
    rank = len(shape_of(out))
    with k.loops(k.sizes(out), _result_nest_names(rank)) as ivs:
        linear = linearize(ivs, k.sizes(out), k.index(0))
        loop.store(loop.load(x, delinearize(linear, x_sizes)), out, ivs)


@lowering("graph.broadcast_to")
def lower_broadcast_to(op: Operation, k: Kernel) -> None:
    """Each result position reads the operand with numpy broadcasting."""
    x, out = k.inputs[0], k.outputs[0]
    shape = shape_of(out)
    with k.loops(k.sizes(out), _result_nest_names(len(shape))) as ivs:
        loop.store(loop.load(x, k.broadcast_indices(x, len(shape_of(x)), shape, ivs)), out, ivs)


@lowering("graph.slice")
def lower_slice(op: Operation, k: Kernel) -> None:
    """out[i] = x[start + i * step] per sliced axis; sliced symbolic dims must keep their full range."""
    x, out = k.inputs[0], k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    shape = shape_of(x)
    starts: dict[int, tuple[int, int]] = {}
    for axis, start, end, step in slice_plan(len(shape), attrs["starts"], attrs["ends"], attrs["axes"], attrs["steps"]):
        d = shape[axis]
        if isinstance(d, int):
            first, _, _ = slice(start, end, step).indices(d)
            starts[axis] = (first, step)
        elif not is_full_range(start, end, step) or step != 1:
            raise lowering_error(op, f"slicing symbolic dimension {axis} of {op.operands[0].type} needs static bounds")
    with k.loops(k.sizes(out), _result_nest_names(len(shape))) as ivs:
        source = list(ivs)
        for axis, (first, step) in starts.items():
            if (first, step) != (0, 1):
                source[axis] = loop.add(k.index(first), loop.mul(ivs[axis], k.index(step)))
        loop.store(loop.load(x, source), out, ivs)


@lowering("graph.concat")
def lower_concat(op: Operation, k: Kernel) -> None:
    """One copy nest per operand, written at the running offset along ``axis``."""
    out = k.outputs[0]
    rank = len(shape_of(out))
    axis = normalize_axis(op.opdef.attr_kwargs(op)["axis"], rank)
    offset = k.index(0)
    for n, x in enumerate(k.inputs):
        with k.loops(k.sizes(x), [f"c{n}_i{a}" for a in range(rank)]) as ivs:
            target = list(ivs)
            if n:
                target[axis] = loop.add(ivs[axis], offset)
            loop.store(loop.load(x, ivs), out, target)
        if n + 1 < len(k.inputs):
            size = k.size(x, axis)
            previous = offset
            with k.prologue():
                offset = loop.add(previous, size)
