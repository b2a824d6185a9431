"""Splitting graph ops whose kernels would bind more storage buffers than a WebGPU target allows.

A kernel binds one storage buffer per operand and result of its graph op (``max_storage_buffers_per_shader_stage``,
8 by default, is the WebGPU specification's minimum: tinygrad fails past it). Before lowering,
:func:`split_for_storage_buffers` rewrites a copy of the graph module so that each kernel fits:

- a ``graph.fused`` group over the limit is cut into consecutive groups of its ops, each passing one value
  to the next and binding at most the limit (a single op where no group of several fits);
- a ``graph.concat`` of more inputs than the limit allows becomes a tree of concats of at most
  ``limit - 1`` inputs each (concatenation is associative).

What still does not fit (an op that alone binds more, at a very low limit) is left for the limit pass
:func:`~tensorium.lowering.webgpu_limits.check_storage_buffers`, whose error names the kernel.
"""

from __future__ import annotations

from ..ir.builder import InsertionPoint
from ..ir.core import Block, Operation, Region, Value
from ..ir.dialects import graph
from ..ir.dialects.builtin import func_body, lookup_func
from ..ir.dialects.graph.fusion import fused, yield_
from ..targets import Target

__all__ = ["bindings_of", "split_for_storage_buffers"]


def bindings_of(op: Operation) -> int:
    """Storage buffers the kernel of graph op ``op`` binds: one per operand and result."""
    return len(op.operands) + len(op.results)


def split_for_storage_buffers(module: Operation, target: Target, func: str = "main") -> Operation:
    """``module`` when every op of ``@func`` fits the target's storage-buffer limit, else a rewritten copy
    (see the module docstring); the caller's module is never changed."""
    limit = target.limit("max_storage_buffers_per_shader_stage")
    main = lookup_func(module, func)
    if main is None or all(bindings_of(op) <= limit for op in func_body(main).ops):
        return module
    module = module.clone()
    main = lookup_func(module, func)
    assert main is not None
    for op in list(func_body(main).ops):
        if bindings_of(op) <= limit:
            continue
        if op.name == "graph.fused":
            _split_fused(op, limit)
        elif op.name == "graph.concat" and limit >= 3:
            _split_concat(op, limit - 1)
    return module


def _split_fused(op: Operation, limit: int) -> None:
    """Replace fused group ``op`` by consecutive groups of its ops (single ops where a group would not fit),
    each binding at most ``limit`` buffers and passing one value on."""
    body = op.regions[0].block
    terminator = body.terminator
    assert terminator is not None
    ops = [inner for inner in body.ops if inner is not terminator]
    mapping: dict[Value, Value] = dict(zip(body.args, op.operands))
    start = 0
    with InsertionPoint.before_op(op) as point:
        while start < len(ops):
            end = start
            for stop in range(start + 1, len(ops)):
                segment = ops[start : stop + 1]
                if len(_inputs(segment)) + 1 > limit:
                    break
                if _closed(segment, terminator):
                    end = stop
            segment = ops[start : end + 1]
            point.insert(_outlined(segment, mapping) if len(segment) > 1 else segment[0].clone(mapping))
            start = end + 1
    for result, value in zip(op.results, terminator.operands):
        result.replace_all_uses_with(mapping.get(value, value))
    op.erase()


def _inputs(segment: list[Operation]) -> list[Value]:
    """The values ``segment`` uses that it does not make, in first-use order."""
    made = {id(r) for o in segment for r in o.results}
    found: list[Value] = []
    for o in segment:
        found += [v for v in o.operands if id(v) not in made and v not in found]
    return found


def _closed(segment: list[Operation], terminator: Operation) -> bool:
    """Whether only the last op's result of ``segment`` is used after it (so one fused op can stand for it)."""
    members = {id(o) for o in segment}
    for o in segment[:-1]:
        for r in o.results:
            if any(id(use.owner) not in members or use.owner is terminator for use in r.uses):
                return False
    return True


def _outlined(segment: list[Operation], mapping: dict[Value, Value]) -> Operation:
    """A new ``graph.fused`` op computing ``segment`` (operands through ``mapping``, which learns its result)."""
    inputs = _inputs(segment)
    block = Block([v.type for v in inputs], [v.name_hint for v in inputs])
    inner: dict[Value, Value] = dict(zip(inputs, block.args))
    for o in segment:
        block.append(o.clone(inner))
    output = segment[-1].results[0]
    with InsertionPoint(block):
        yield_(inner[output])
    group = fused.build([mapping.get(v, v) for v in inputs], result_types=[output.type], loc=segment[-1].loc)
    group.add_region(Region([block]))
    mapping[output] = group.results[0]
    return group


def _split_concat(op: Operation, width: int) -> None:
    """Replace ``op`` (a concat of more than ``width`` inputs) by a tree of concats of at most ``width``."""
    axis = op.attr("axis")
    values = list(op.operands)
    with InsertionPoint.before_op(op) as point:
        while len(values) > width:
            joined = []
            for start in range(0, len(values), width):
                chunk = values[start : start + width]
                if len(chunk) == 1:
                    joined.append(chunk[0])
                    continue
                part = graph.concat.build(chunk, {"axis": axis}, loc=op.loc)
                point.insert(part)
                joined.append(part.results[0])
            values = joined
        last = graph.concat.build(values, {"axis": axis}, loc=op.loc)
        point.insert(last)
    last.results[0].name_hint = op.results[0].name_hint
    op.results[0].replace_all_uses_with(last.results[0])
    op.erase()
