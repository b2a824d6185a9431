"""fuse: group ops into ``graph.fused`` ops, each computed as one kernel.

The plan is made on the dataflow graph of each function's top-level ops (a networkx DiGraph of groups).
Every op starts in a group of its own; in program order, an op's group takes in the group that produces
one of its operands when the rules below hold, and the two groups are contracted in the graph:

- the operand is the producer group's only result and every op reading it is in the consumer's group, so
  nothing outside needs it (a value read several times, as GPT-2's tanh GELU reads its input, joins once all
  its readers have been grouped: the planning sweeps the ops again until nothing merges);
- the union holds at most one *anchor* (an op that is not elementwise: matmul, conv, a reduction, a norm,
  softmax, a transpose, ...); the others are elementwise ops and reshapes that only add or drop size-1
  dims;
- no recomputation blow-up: the operand is not broadcast by the op that reads it (an elementwise value
  is computed once per element of the result), and elementwise producers are taken into an anchor only
  when the anchor reads each input element a few times (reductions, norms, softmax, transposes; never a
  matmul or convolution, which read each element once per output tile and have their own schedule);
- no cycle: no other path leads from the producer group to the op's group (networkx ``has_path``);
- at most ``max-ops`` ops per group, and no anonymous (``?``) dims, which a kernel could not size;
- every elementwise op of the union broadcasts its operands along dims known to be equal or 1 (a named dim
  against a static one may be either, which only the op's own kernel tells apart at run time).

So a matmul or convolution takes its epilogue (bias, activation, residual add, scale, cast: *vertical*
fusion into the producer), a softmax or layer norm takes the elementwise ops that feed it, and
elementwise chains become one loop nest. ``epilogues=false`` and ``producers=false`` turn the two kinds
of anchor fusion off; ``max-ops=1`` turns fusion off.

Before planning, elementwise ops move above the reshapes that feed them (``sink-reshapes``): torch.export
writes a linear layer on ``[batch, seq, d]`` as a reshape to ``[batch * seq, d]``, a 2-D matmul and a reshape
back, so ``gelu(reshape(matmul(x, w)))`` would keep the GELU out of the GEMM's epilogue. A reshape keeps the
elements in order, so ``f(reshape(x), y)`` is ``reshape(f(x, y'))`` where ``y'`` is ``y`` reshaped to ``x``'s
shape (a view), or ``y`` itself when it broadcasts over trailing dims that the two shapes share (a bias);
``reshape(reshape(x))`` becomes one reshape, or ``x`` when the shapes are equal. A reshape read by several ops
moves out of the way only when all of them move above it (the tanh GELU reads its input four times). Ops move only
towards fewer dims, so a second run finds nothing to move back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import networkx as nx

from ..errors import PassError
from ..ir.builder import InsertionPoint
from ..ir.core import Block, Operation, Region, Value
from ..ir.dialects.builtin import func_body, functions
from ..ir.dialects.graph.fusion import fused, yield_
from ..ir.dialects.graph.shape import is_unit_reshape, static_reshape_attrs, view_offset
from ..ir.rewrite import PatternRewriter
from ..ir.shapes import dims_equal
from ..ir.types import Sym, TensorType
from .base import Pass, register_pass

READS_FEW_TIMES = {
    "graph.softmax",
    "graph.log_softmax",
    "graph.layer_norm",
    "graph.rms_norm",
    "graph.batch_norm",
    "graph.reduce_sum",
    "graph.reduce_mean",
    "graph.reduce_max",
    "graph.reduce_min",
    "graph.reduce_prod",
    "graph.transpose",
}
"""Anchors that read each element of an input a small, fixed number of times, so elementwise producers
can be recomputed at their loads."""

UNFUSABLE = {"graph.constant", "graph.fused", "graph.split"}
"""Ops that never join a group: constants are kernel inputs, groups do not nest, several results."""


def _fusable(op: Operation) -> bool:
    """Ops that may join a group: not UNFUSABLE, one result, and not a view of their operand's memory other
    than a unit reshape (a reshape or contiguous slice costs nothing as a view; grouped, it would be copied)."""
    if op.name in UNFUSABLE or len(op.results) != 1 or not _sizable(op.result.type):
        return False
    return is_unit_reshape(op) or view_offset(op) is None


def is_elementwise(op: Operation) -> bool:
    """True for ops computed element by element in a fused kernel: elementwise ops and unit reshapes."""
    return op.has_trait("elementwise") or is_unit_reshape(op)


def _known_broadcasts(op: Operation) -> bool:
    """Whether every operand of ``op`` (if elementwise) meets its result along dims known when compiling to be
    equal, or 1: what a fused kernel computes. A named dim against a static one (``[s]`` against 2, which may
    be 1 and broadcast, or 2) is left to the op's own kernel, which tells the two apart at run time."""
    if not op.has_trait("elementwise"):
        return True
    out = op.results[0].type.shape  # type: ignore[attr-defined]
    for value in op.operands:
        own = value.type.shape  # type: ignore[attr-defined]
        offset = len(out) - len(own)
        if any(d != 1 and not dims_equal(d, out[a + offset]) for a, d in enumerate(own)):
            return False
    return True


def _sizable(t: object) -> bool:
    return isinstance(t, TensorType) and all(not isinstance(d, Sym) or d.name is not None for d in t.shape)


def _elements(t: object) -> tuple[object, ...]:
    """The dims of a tensor type other than 1 (equal for types that hold the same elements in order)."""
    assert isinstance(t, TensorType)
    return tuple(d for d in t.shape if d != 1)


@dataclass
class Group:
    """Ops computed as one kernel: ``ops`` in program order, its output ``ops[-1]``'s result."""

    ops: list[Operation]
    anchor: Operation | None = field(default=None)

    @property
    def output(self) -> Value:
        return self.ops[-1].results[0]


@register_pass
@dataclass(frozen=True)
class Fuse(Pass):
    """Group ops into ``graph.fused`` ops (see the module docstring)."""

    name: ClassVar[str] = "fuse"
    max_ops: int = 32
    epilogues: bool = True
    producers: bool = True
    sink_reshapes: bool = True

    def __post_init__(self) -> None:
        if self.max_ops < 1:
            raise PassError(f"max-ops must be at least 1, got {self.max_ops}")

    def run(self, module: Operation) -> None:
        for func in functions(module):
            block = func_body(func)
            if self.sink_reshapes and self.max_ops > 1 and self.epilogues:
                _sink_reshapes(block)
            for group in self.plan(block):
                if len(group.ops) > 1 and not all(is_unit_reshape(op) for op in group.ops):
                    _outline(group)

    def plan(self, block: Block) -> list[Group]:
        """The groups of ``block``'s ops (every fusable op in exactly one), in program order of their outputs."""
        ops = [op for op in block.ops if not op.has_trait("terminator")]
        position = {id(op): n for n, op in enumerate(ops)}
        group_of: dict[int, int] = {}
        groups: dict[int, Group] = {}
        graph: nx.DiGraph = nx.DiGraph()
        for n, op in enumerate(ops):
            group_of[id(op)] = n
            groups[n] = Group([op], None if is_elementwise(op) else op)
            graph.add_node(n)
            for v in op.operands:
                producer = v.defining_op()
                if producer is not None and id(producer) in group_of:
                    graph.add_edge(group_of[id(producer)], n)
        # A value read by several ops of one chain (x in 0.5 * x * (1 + tanh(x + x**3))) may join only once its
        # readers are all in the group, which can come after its last reader was visited: sweep again until
        # nothing merges.
        changed = True
        while changed:
            changed = False
            for op in ops:
                if not _fusable(op):
                    continue
                for v in dict.fromkeys(op.operands):
                    producer = v.defining_op()
                    if producer is None or id(producer) not in group_of:
                        continue
                    mine, theirs = group_of[id(op)], group_of[id(producer)]
                    if mine == theirs or not self._may_merge(op, v, groups[theirs], groups[mine], graph, theirs, mine):
                        continue
                    anchor = groups[theirs].anchor or groups[mine].anchor
                    merged = Group(groups[theirs].ops + groups[mine].ops, anchor)
                    merged.ops.sort(key=lambda o: position[id(o)])
                    groups[mine] = merged
                    for member in groups.pop(theirs).ops:
                        group_of[id(member)] = mine
                    nx.contracted_nodes(graph, mine, theirs, self_loops=False, copy=False)
                    changed = True
        return sorted(groups.values(), key=lambda g: position[id(g.ops[-1])])

    def _may_merge(
        self, op: Operation, value: Value, producer: Group, consumer: Group, graph: nx.DiGraph, theirs: int, mine: int
    ) -> bool:
        """Whether ``consumer`` (holding ``op``) may take in ``producer`` (whose output ``op`` reads as ``value``)."""
        if not _fusable(producer.ops[-1]) or value is not producer.output:
            return False
        readers = [use.owner for use in value.uses]
        members = {id(o) for o in consumer.ops}
        if not readers or any(id(r) not in members for r in readers) or not _sizable(value.type):
            return False  # every reader of the value must be in the consumer's group
        if len(producer.ops) + len(consumer.ops) > self.max_ops:
            return False
        if not all(_known_broadcasts(o) for o in (*producer.ops, *consumer.ops)):
            return False
        if producer.anchor is not None and consumer.anchor is not None:
            return False
        if producer.anchor is not None:  # the readers are an epilogue of the producer's anchor
            if not self.epilogues or any(
                not is_elementwise(r) or _elements(value.type) != _elements(r.result.type) for r in readers
            ):
                return False
        elif consumer.anchor is op:  # elementwise producers recomputed at the anchor's loads of its data
            if not self.producers or op.name not in READS_FEW_TIMES or op.operands[0] is not value or len(readers) != 1:
                return False
        elif any(_elements(value.type) != _elements(r.result.type) for r in readers):  # no broadcast
            return False
        others = [s for s in graph.successors(theirs) if s != mine]
        return not any(nx.has_path(graph, s, mine) for s in others)


def _static_shape(value: Value) -> tuple[int, ...] | None:
    t = value.type
    return t.static_shape if isinstance(t, TensorType) and t.is_static else None


def _sunk_operands(op: Operation) -> list[Value | tuple[int, ...]] | None:
    """The operands of elementwise ``op`` computed on the shape of ``x`` for a ``reshape(x)`` among them: ``x``
    itself (for each reshape of that shape), a shape to reshape an operand of ``op``'s shape to, or an operand
    broadcasting over trailing dims both shapes share; None when ``op`` reads no such reshape or an operand
    fits no case. The reshape has one use, or only users that move above it too (GELU reads its input four
    times). Static shapes only."""
    outer = _elementwise_shape(op)
    if outer is None:
        return None
    reshapes = [p for p in (v.defining_op() for v in op.operands) if p is not None and p.name == "graph.reshape"]
    # a reshape whose result op broadcasts (to more dims or over a dim of 1) is not the op's shape: not sunk
    candidates = [p for p in reshapes if not is_unit_reshape(p) and _static_shape(p.result) == outer]
    for p in candidates:
        inner = _static_shape(p.operands[0])
        if inner is None or len(inner) >= len(outer):
            # only towards fewer dims (torch.export's [b, s, d] <- [b * s, d]): an op that moved could otherwise
            # move back through the reshape it left on another operand, and the pass would never settle
            continue
        out = _operands_on(op, inner, outer)
        if out is None:
            return None
        users = {id(use.owner): use.owner for use in p.result.uses}
        if len(p.result.uses) == 1 or all(
            _elementwise_shape(u) == outer and _operands_on(u, inner, outer) is not None for u in users.values()
        ):
            return out
    return None


def _elementwise_shape(op: Operation) -> tuple[int, ...] | None:
    """The static result shape of a single-result elementwise op, else None."""
    return _static_shape(op.result) if len(op.results) == 1 and op.has_trait("elementwise") else None


def _operands_on(op: Operation, inner: tuple[int, ...], outer: tuple[int, ...]) -> list[Value | tuple[int, ...]] | None:
    """The operands of elementwise ``op`` (of shape ``outer``) recomputed on shape ``inner`` (see
    :func:`_sunk_operands`), or None when one fits no case."""
    out: list[Value | tuple[int, ...]] = []
    for v in op.operands:
        producer, shape = v.defining_op(), _static_shape(v)
        if shape is None:
            return None
        source = producer.operands[0] if producer is not None and producer.name == "graph.reshape" else None
        if source is not None and shape == outer and _static_shape(source) == inner:
            out.append(source)
        elif shape == outer:
            out.append(inner)
        elif len(shape) <= min(len(inner), len(outer)) and (not shape or inner[-len(shape) :] == outer[-len(shape) :]):
            out.append(v)
        else:
            return None
    return out


def _sink_reshapes(block: Block) -> None:
    """Move elementwise ops above the reshapes that feed them (see the module docstring), in program order so
    that chains move up together; then fold the reshapes of reshapes this leaves."""
    rewriter = PatternRewriter()
    for op in list(block.ops):
        operands = _sunk_operands(op)
        if operands is None:
            continue
        values = []
        for v, new in zip(op.operands, operands):
            if isinstance(new, tuple):
                new = rewriter.create_before(op, "graph.reshape", [v], static_reshape_attrs(new)).result
            values.append(new)
        inner = rewriter.create_before(op, op.name, values, dict(op.attributes))
        shape = _static_shape(op.result)
        assert shape is not None  # _sunk_operands takes static shapes only
        outer = rewriter.create_before(op, "graph.reshape", [inner.result], static_reshape_attrs(shape))
        producers = [v.defining_op() for v in op.operands]
        rewriter.replace_op(op, outer.results)
        for old in producers:
            if old is not None and old.parent is not None and old.name == "graph.reshape" and not old.result.uses:
                rewriter.erase_op(old)
    for op in list(block.ops):
        producer = op.operands[0].defining_op() if op.name == "graph.reshape" and op.parent is not None else None
        if producer is None or producer.name != "graph.reshape":
            continue
        source = producer.operands[0]
        if source.type == op.result.type:
            rewriter.replace_all_uses_with(op.result, source)
            rewriter.erase_op(op)
        else:
            # A 0 in the shape copied a dim of the middle value, not of the source: the shape is restated as
            # the (static) result's, or the two reshapes stay.
            shape = _static_shape(op.result)
            if shape is not None:
                rewriter.set_attr(op, "shape", list(shape))
            elif 0 in op.attr("shape", ()):
                continue
            op.set_operand(0, source)
        if not producer.result.uses:
            rewriter.erase_op(producer)


def _outline(group: Group) -> None:
    """Replace the ops of ``group`` by one ``graph.fused`` op holding copies of them."""
    members = {id(op) for op in group.ops}
    inputs: list[Value] = []
    for op in group.ops:
        for v in op.operands:
            producer = v.defining_op()
            if (producer is None or id(producer) not in members) and v not in inputs:
                inputs.append(v)
    output = group.output
    last = group.ops[-1]
    body = Block([v.type for v in inputs], [v.name_hint for v in inputs])
    mapping: dict[Value, Value] = dict(zip(inputs, body.args))
    for op in group.ops:
        body.append(op.clone(mapping))
    with InsertionPoint(body):
        yield_(mapping[output])
    op = fused.build(inputs, result_types=[output.type], loc=last.loc)
    op.add_region(Region([body]))
    op.results[0].name_hint = output.name_hint
    rewriter = PatternRewriter()
    rewriter.insert_before(last, op)
    output.replace_all_uses_with(op.results[0])
    for member in reversed(group.ops):
        rewriter.erase_op(member)
