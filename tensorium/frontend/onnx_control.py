"""ONNX control flow (If, Loop, Scan) inlined at import: branches chosen or selected, loops unrolled.

The graph dialect has no control-flow ops, so a sub-graph converts inline (the importer's
``subgraph``): an If with a condition known at import takes its branch, one with a run-time
condition computes both branches and selects with ``graph.where`` (their outputs must have the
same types); a Loop unrolls while its trip count and condition are known at import (each
iteration's counter is a constant, so its body folds like any other constant computation), and a
Scan unrolls over the static length of its scanned axis (opset 8's batched Scan once per batch
entry). A condition or trip count that is a graph input asks the caller for its value (the ONNX
backend then imports once per value).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.shapes import normalize_axis
from ..ir.types import i1, i64
from .onnx_context import ConversionError, Node, constant_value
from .onnx_ops import Results, converts, rank, static_dims, take

MAX_UNROLLED_ITERATIONS = 4096


@converts("If")
def _if(n: Node) -> Results:
    cond = n.input(0)
    known = constant_value(cond)
    then_branch, else_branch = n.attrs["then_branch"], n.attrs["else_branch"]
    if known is not None:
        return n.importer.subgraph(then_branch if bool(known.reshape(-1)[0]) else else_branch, [])
    then_out, else_out = n.importer.subgraph(then_branch, []), n.importer.subgraph(else_branch, [])
    if [v.type for v in then_out] != [v.type for v in else_out]:
        raise ConversionError(
            f"If with a run-time condition needs branches of the same types, got "
            f"{[str(v.type) for v in then_out]} and {[str(v.type) for v in else_out]}",
            needs=n.proto.input[0],
        )
    flag = graph.reshape(cond, shape=()) if rank(cond) else cond
    return [graph.where(flag, a, b) for a, b in zip(then_out, else_out)]


def _stack(n: Node, items: list[Value], axis: int = 0) -> Value:
    if not items:
        raise ConversionError(f"{n.op_type} with zero iterations and scan outputs is not supported")
    axis = normalize_axis(axis, rank(items[0]) + 1)
    return graph.concat([graph.unsqueeze(v, axes=(axis,)) for v in items], axis=axis)  # type: ignore[no-any-return]


@converts("Loop")
def _loop(n: Node) -> Results:
    body = n.attrs["body"]
    trips = n.ints(0)[0] if n.has(0) else None
    cond = n.const(1).reshape(-1)[0] if n.has(1) else True
    if trips is None and not n.has(1):
        raise ConversionError("a Loop with neither a trip count nor a condition never ends")
    carried = [n.input(i) for i in range(2, len(n.proto.input))]
    scans: list[list[Value]] = []
    i = 0
    while bool(cond) and (trips is None or i < trips):
        if i >= MAX_UNROLLED_ITERATIONS:
            raise ConversionError(f"Loop runs past {MAX_UNROLLED_ITERATIONS} iterations; only shorter loops unroll")
        counter = n.constant(np.asarray(i, dtype=np.int64), i64)
        outs = n.importer.subgraph(body, [counter, n.constant(np.asarray(True), i1), *carried])
        known = constant_value(outs[0])
        if known is None:
            raise ConversionError("the Loop condition must be known at import (it is computed at run time)")
        cond = known.reshape(-1)[0]
        carried = outs[1 : 1 + len(carried)]
        for k, v in enumerate(outs[1 + len(carried) :]):
            if len(scans) <= k:
                scans.append([])
            scans[k].append(v)
        i += 1
    if len(body.output) > 1 + len(carried) and not scans:
        raise ConversionError("a Loop that runs zero times with scan outputs is not supported")
    return [*carried, *(_stack(n, s) for s in scans)]


def _scan_steps(
    n: Node, states: list[Value], inputs: list[Value], in_axes: Sequence[int], in_reverse: Sequence[int]
) -> tuple[list[Value], list[list[Value]]]:
    """Run the body once per step of the scanned axes: the final states and each scan output's items."""
    body = n.attrs["body"]
    lengths = {static_dims(v, "Scan")[a] for v, a in zip(inputs, in_axes)}
    if len(lengths) != 1:
        raise ConversionError(f"Scan inputs of different lengths {sorted(lengths)}")
    steps = lengths.pop()
    outputs: list[list[Value]] = [[] for _ in range(len(body.output) - len(states))]
    for t in range(steps):
        slices = [take(v, a, steps - 1 - t if rev else t) for v, a, rev in zip(inputs, in_axes, in_reverse)]
        outs = n.importer.subgraph(body, [*states, *slices])
        states = outs[: len(states)]
        for k, v in enumerate(outs[len(states) :]):
            outputs[k].append(v)
    return states, outputs


@converts("Scan")
def _scan(n: Node) -> Results:
    if n.opset < 9:
        return _scan_batched(n)
    scanned = int(n.attr("num_scan_inputs"))
    values = [n.input(i) for i in range(len(n.proto.input))]
    states, inputs = values[: len(values) - scanned], values[len(values) - scanned :]
    in_axes = [normalize_axis(a, rank(v)) for a, v in zip(n.attr("scan_input_axes", (0,) * scanned), inputs)]
    states, outputs = _scan_steps(n, states, inputs, in_axes, n.attr("scan_input_directions", (0,) * scanned))
    out_axes: Sequence[int] = n.attr("scan_output_axes", (0,) * len(outputs))
    out_reverse = n.attr("scan_output_directions", (0,) * len(outputs))
    stacked = [
        _stack(n, items[::-1] if rev else items, axis) for items, axis, rev in zip(outputs, out_axes, out_reverse)
    ]
    return [*states, *stacked]


def _scan_batched(n: Node) -> Results:
    """Scan of opset 8: every input has a leading batch axis (scanned along axis 1), one scan per entry."""
    if n.has(0):
        raise ConversionError("Scan-8 with sequence_lens is not supported (only full-length sequences)")
    scanned = int(n.attr("num_scan_inputs"))
    values = [n.input(i) for i in range(1, len(n.proto.input))]
    batch = static_dims(values[0], "Scan")[0]
    per_entry = []
    for b in range(batch):
        entry = [take(v, 0, b) for v in values]
        states, inputs = entry[: len(entry) - scanned], entry[len(entry) - scanned :]
        states, outputs = _scan_steps(n, states, inputs, (0,) * scanned, n.attr("directions", (0,) * scanned))
        per_entry.append([*states, *(_stack(n, items) for items in outputs)])
    return [_stack(n, [entry[k] for entry in per_entry]) for k in range(len(per_entry[0]))]


__all__ = ["MAX_UNROLLED_ITERATIONS"]
