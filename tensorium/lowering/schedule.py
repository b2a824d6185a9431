"""Schedules: data that says how to rewrite a kernel's loop nests, applied by functions over loop IR.

A :class:`Schedule` is a list of primitives naming loops by their induction variable's name (the
lowering names them: ``i0``, ``r0``, ``i``/``j``/``k``, ...). It prints as text and parses back
(``split(i, 4); reorder(i_o, j_o, i_i, j_i); parallel(i_o)``) so an autotuner can store and search
schedules. Primitives:

- ``split(l, f)``: ``l`` becomes ``l_o`` (step ``f * step``) around ``l_i``, which runs
  ``[l_o, min(l_o + f * step, upper))`` with the old body; the remainder needs no guard.
- ``reorder(a, b, ...)``: permute a perfectly nested band of loops (only pure ops between them).
- ``parallel(l)``, ``vectorize(l[, f])``, ``unroll(l[, f])``: set the loop's kind; parallel and
  vectorize loops must write every buffer from outside the loop at an index depending on the loop.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from ..errors import ScheduleError
from ..ir.builder import InsertionPoint
from ..ir.core import Block, Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.builtin import func_body, func_name
from ..ir.types import index


@dataclass(frozen=True)
class Split:
    """Split ``loop`` into an outer loop stepping ``factor`` iterations and an inner one over them."""

    loop: str
    factor: int

    def __str__(self) -> str:
        return f"split({self.loop}, {self.factor})"


@dataclass(frozen=True)
class Reorder:
    """Permute a perfect nest of loops into the order given (outermost first)."""

    loops: tuple[str, ...]

    def __str__(self) -> str:
        return f"reorder({', '.join(self.loops)})"


@dataclass(frozen=True)
class Annotate:
    """Set the kind of ``loop``: ``parallel``, ``vectorize`` or ``unroll`` (``factor`` for the last two)."""

    kind: str
    loop: str
    factor: int | None = None

    def __str__(self) -> str:
        return f"{self.kind}({self.loop}{'' if self.factor is None else f', {self.factor}'})"


Primitive = Split | Reorder | Annotate


@dataclass(frozen=True)
class Schedule:
    """An ordered list of primitives; ``str`` gives its text, :meth:`parse` reads it back."""

    steps: tuple[Primitive, ...] = ()

    def __str__(self) -> str:
        return "; ".join(map(str, self.steps))

    @staticmethod
    def parse(text: str) -> Schedule:
        """The schedule written as ``name(args); ...``; ScheduleError on bad text."""
        steps: list[Primitive] = []
        for part in filter(None, (p.strip() for p in text.split(";"))):
            m = _PRIMITIVE.fullmatch(part)
            if m is None:
                raise ScheduleError(f"bad schedule primitive '{part}' (expected like 'split(i, 4)')")
            name, args = m.group(1), [a.strip() for a in m.group(2).split(",")]
            steps.append(_primitive(name, args, part))
        return Schedule(tuple(steps))


_PRIMITIVE = re.compile(r"([a-z]+)\((.*)\)")
_ANNOTATIONS = ("parallel", "vectorize", "unroll")


def _primitive(name: str, args: list[str], text: str) -> Primitive:
    try:
        if name == "split" and len(args) == 2:
            return Split(args[0], int(args[1]))
        if name == "reorder" and len(args) >= 2:
            return Reorder(tuple(args))
        if name in _ANNOTATIONS and len(args) in (1, 2) and (name != "parallel" or len(args) == 1):
            return Annotate(name, args[0], int(args[1]) if len(args) == 2 else None)
    except ValueError:
        pass
    raise ScheduleError(f"bad schedule primitive '{text}'")


def loops_of(kernel: Operation) -> list[Operation]:
    """The ``loop.for`` ops of a kernel, in pre-order."""
    return [op for op in kernel.walk() if op.name == "loop.for"]


def loop_name(op: Operation) -> str:
    """The name of a loop: its induction variable's name hint."""
    return op.regions[0].block.args[0].name_hint or ""


def find_loop(kernel: Operation, name: str) -> Operation:
    """The one loop of ``kernel`` named ``name``; ScheduleError listing the loops when there is none or several."""
    found = [op for op in loops_of(kernel) if loop_name(op) == name]
    if len(found) != 1:
        known = ", ".join(loop_name(op) for op in loops_of(kernel))
        what = "no loop" if not found else f"{len(found)} loops"
        raise ScheduleError(f"@{func_name(kernel)} has {what} named '{name}' (loops: {known})")
    return found[0]


def _iv(op: Operation) -> Value:
    return op.regions[0].block.args[0]


def split(kernel: Operation, name: str, factor: int) -> None:
    """Apply ``split(name, factor)`` to ``kernel`` in place."""
    if factor < 1:
        raise ScheduleError(f"split factor must be at least 1, got {factor}")
    inner = find_loop(kernel, name)
    lower, upper, step = inner.operands
    step_def = step.defining_op()
    with _right_after(step):
        if step_def is not None and step_def.name == "loop.const":
            stride = loop.const(value=int(step_def.attr("value")) * factor, dtype=index)
        else:
            stride = loop.mul(step, loop.const(value=factor, dtype=index))
    with InsertionPoint.before_op(inner) as ip:
        outer = ip.insert(
            loop.build_for(lower, upper, stride, kind=inner.attr("kind"), factor=inner.attr("factor"), name=f"{name}_o")
        )
    block = outer.regions[0].block
    assert inner.parent is not None
    inner.parent.remove(inner)
    with InsertionPoint(block, before=block.terminator):
        end = loop.min(loop.add(_iv(outer), stride), upper)
    block.insert_before(block.ops[-1], inner)
    inner.set_operands([_iv(outer), end, step])
    inner.attributes.pop("factor", None)
    inner.attributes["kind"] = "serial"
    _iv(inner).name_hint = f"{name}_i"


def _right_after(value: Value) -> InsertionPoint:
    """The insertion point just after the definition of ``value`` (so what is built there is visible wherever it is)."""
    op = value.defining_op()
    if op is not None:
        return InsertionPoint.after_op(op)
    block = value.owner
    assert isinstance(block, Block)
    return InsertionPoint(block, block.ops[0] if block.ops else None)


def _band(loops: list[Operation]) -> list[Operation]:
    """``loops`` ordered outermost first; ScheduleError unless each is directly inside the previous."""
    ordered = sorted(loops, key=_depth)
    for outer, inner in itertools.pairwise(ordered):
        if inner.parent_op is not outer:
            raise ScheduleError(f"loops '{loop_name(outer)}' and '{loop_name(inner)}' are not directly nested")
    return ordered


def _depth(op: Operation) -> int:
    depth = 0
    parent = op.parent_op
    while parent is not None:
        depth += 1
        parent = parent.parent_op
    return depth


def reorder(kernel: Operation, names: tuple[str, ...]) -> None:
    """Apply ``reorder(*names)``: the band of nested loops takes the given order, bodies unchanged."""
    wanted = [find_loop(kernel, n) for n in names]
    band = _band(wanted)
    position = {id(_iv(op)): band.index(op) for op in band}
    new_position = {id(_iv(op)): p for p, op in enumerate(wanted)}
    pure_or_nested = [band[p + 1] for p in range(len(band) - 1)]
    for p, op in enumerate(band[:-1]):
        for inner in op.regions[0].block.ops:
            if inner is pure_or_nested[p] or inner.name == "loop.yield":
                continue
            if not inner.has_trait("pure"):
                raise ScheduleError(
                    f"loop '{loop_name(op)}' holds '{inner.name}' besides its inner loop; not a perfect nest"
                )
            _check_uses(inner.operands, p, new_position, names)
    for p, op in enumerate(wanted):
        for v in op.operands:
            defined_in = _defining_band_position(v, band, position)
            if defined_in is not None and defined_in >= p:
                raise ScheduleError(f"the bounds of '{loop_name(op)}' depend on a loop that would move inside it")
            if id(v) in new_position and new_position[id(v)] >= p:
                raise ScheduleError(f"the bounds of '{loop_name(op)}' depend on a loop that would move inside it")
    moved = {id(_iv(op)): _iv(slot) for op, slot in zip(wanted, band)}
    headers = [(list(op.operands), dict(op.attributes), _iv(op).name_hint, list(_iv(op).uses)) for op in wanted]
    for slot, (operands, attrs, hint, _) in zip(band, headers):
        slot.set_operands([moved.get(id(v), v) for v in operands])
        slot.attributes = attrs
        _iv(slot).name_hint = hint
    for slot, (_, _, _, uses) in zip(band, headers):
        for use in uses:
            if not any(use.owner is b for b in band):
                use.owner.set_operand(use.index, _iv(slot))


def _check_uses(values: tuple[Value, ...], p: int, new_position: dict[int, int], names: tuple[str, ...]) -> None:
    for v in values:
        if id(v) in new_position and new_position[id(v)] > p:
            raise ScheduleError(f"reorder({', '.join(names)}) would use an induction variable outside its loop")


def _defining_band_position(v: Value, band: list[Operation], position: dict[int, int]) -> int | None:
    """The band position whose body defines ``v`` directly, or None when it is defined outside the band."""
    op = v.defining_op()
    if op is None:
        return None
    for p, loop_op in enumerate(band):
        if op.parent is loop_op.regions[0].block:
            return p
    return None


def _check_independent(op: Operation, kind: str) -> None:
    """ScheduleError when iterations of ``op`` may write the same element of a buffer from outside it.

    That is the case when a store's index does not depend on the loop (an accumulation) or is read from
    memory (a scatter, whose indices may repeat).
    """
    derived = {id(_iv(op))}
    loaded: set[int] = set()  # values computed from memory reads: a store at such an index may collide
    inside: set[int] = set()
    for nested in list(op.walk())[1:]:
        inside.update(id(r) for r in nested.results)
        if nested.name == "loop.load" or any(id(v) in loaded for v in nested.operands):
            loaded.update(id(r) for r in nested.results)
        if any(id(v) in derived for v in nested.operands):
            derived.update(id(r) for r in nested.results)
            if nested.name == "loop.for":
                derived.add(id(_iv(nested)))
        if nested.name == "loop.store":
            buffer, indices = nested.operands[1], nested.operands[2:]
            if id(buffer) in inside:
                continue
            if not any(id(i) in derived for i in indices):
                raise ScheduleError(
                    f"loop '{loop_name(op)}' cannot be {kind}: its iterations all write one element of a buffer "
                    "from outside it (an accumulation)"
                )
            if any(id(i) in loaded for i in indices):
                raise ScheduleError(
                    f"loop '{loop_name(op)}' cannot be {kind}: its iterations write a buffer from outside it "
                    "at positions read from memory (a scatter)"
                )


def annotate(kernel: Operation, kind: str, name: str, factor: int | None = None) -> None:
    """Set the kind (and factor) of loop ``name``; parallel and vectorize loops must be independent."""
    if kind not in _ANNOTATIONS:
        raise ScheduleError(f"unknown loop annotation '{kind}'")
    if factor is not None and (kind == "parallel" or factor < 1):
        raise ScheduleError(f"{kind} takes {'no factor' if kind == 'parallel' else 'a factor >= 1'}, got {factor}")
    op = find_loop(kernel, name)
    if kind != "unroll":
        _check_independent(op, {"parallel": "parallel", "vectorize": "vectorized"}[kind])
    op.attributes["kind"] = kind
    op.attributes.pop("factor", None)
    if factor is not None:
        op.attributes["factor"] = factor


def apply_schedule(kernel: Operation, schedule: Schedule) -> None:
    """Rewrite the loops of ``kernel`` (a function) by each primitive of ``schedule`` in turn."""
    for step in schedule.steps:
        if isinstance(step, Split):
            split(kernel, step.loop, step.factor)
        elif isinstance(step, Reorder):
            reorder(kernel, step.loops)
        else:
            annotate(kernel, step.kind, step.loop, step.factor)


def default_schedule(kernel: Operation, tile: int = 4, vector: int = 16) -> Schedule:
    """A reasonable schedule for a kernel built by the lowering, chosen from its loop names and nesting.

    matmul (loops ``i``, ``j``, ``k``): tile ``i`` and ``j`` by ``tile``, parallel outer rows. Otherwise,
    for each top-level nest: the outermost loop that has more than one trip parallel when its iterations
    are independent, and the innermost loop of a perfect nest vectorized (split first when it is also the
    outermost).
    """
    loops = loops_of(kernel)
    if any(op.attr("kind", "serial") == "parallel" for op in loops):
        return Schedule(())  # the lowering built it scheduled (the blocked GEMM and convolution)
    names = [loop_name(op) for op in loops]
    if {"i", "j", "k"} <= set(names):
        return Schedule(
            (Split("i", tile), Split("j", tile), Reorder(("i_o", "j_o", "i_i", "j_i")), Annotate("parallel", "i_o"))
        )
    steps: list[Primitive] = []
    for top in (op for op in func_body(kernel).ops if op.name == "loop.for"):
        chain = [top]
        while True:
            body = [o for o in chain[-1].regions[0].block.ops if o.name != "loop.yield"]
            if len(body) != 1 or body[0].name != "loop.for":
                break
            chain.append(body[0])
        perfect = not any(o.name == "loop.for" for o in list(chain[-1].walk())[1:])
        # Loops over size-1 dims (a batch of one) are skipped: parallel, they would leave threads idle.
        while len(chain) > 1 and _trips(chain[0]) == 1 and (not perfect or len(chain) > 2):
            chain = chain[1:]
        outer, inner = loop_name(chain[0]), loop_name(chain[-1])
        if chain[0].attr("kind", "serial") != "serial" or not _independent(chain[0]):
            continue
        if len(chain) == 1 and perfect:
            steps += [
                Split(outer, vector),
                Annotate("parallel", f"{outer}_o"),
                Annotate("vectorize", f"{outer}_i", vector),
            ]
            continue
        steps.append(Annotate("parallel", outer))
        if perfect and _independent(chain[-1]):
            steps.append(Annotate("vectorize", inner, vector))
    return Schedule(tuple(steps))


def _trips(op: Operation) -> int | None:
    """The trip count of a ``loop.for`` with constant bounds and step, else None."""
    values = []
    for v in op.operands:
        d = v.defining_op()
        if d is None or d.name != "loop.const" or not isinstance(d.attr("value"), int):
            return None
        values.append(int(d.attr("value")))
    lower, upper, step = values
    return len(range(lower, upper, step)) if step > 0 else None


def _independent(op: Operation) -> bool:
    try:
        _check_independent(op, "parallel")
    except ScheduleError:
        return False
    return True
