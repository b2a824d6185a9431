"""Schedules: data that says how to rewrite a kernel's loop nests, applied by functions over loop IR.

A :class:`Schedule` is a list of primitives naming loops by their induction variable's name (the
lowering names them: ``i0``, ``r0``, ``i``/``j``/``k``, ...). It prints as text and parses back
(``split(i, 4); reorder(i_o, j_o, i_i, j_i); parallel(i_o)``) so an autotuner can store and search
schedules. Primitives:

- ``split(l, f)``: ``l`` becomes ``l_o`` (step ``f * step``) around ``l_i``, which runs
  ``[l_o, min(l_o + f * step, upper))`` with the old body; the remainder needs no guard.
- ``reorder(a, b, ...)``: permute a perfectly nested band of loops (only pure ops between them).
- ``fuse(a, b)``: two directly nested loops (``b``'s bounds not depending on ``a``) become one loop
  ``a_b`` over the product of their trip counts, each iteration recovering both induction variables; the
  usual way to give ``parallel`` more iterations than one loop has.
- ``cache(l, buffer)``: copy the part of ``buffer`` that loop ``l`` reads into a ``local`` buffer just
  before ``l`` and read it from there (a tile of a matrix into a faster, contiguous buffer). Every read of
  ``buffer`` inside ``l`` must index each dim by a value defined outside ``l`` or by the induction variable
  of a loop inside ``l`` (``l`` included) whose bounds are defined outside ``l``; ``l`` must not write it.
- ``parallel(l)``, ``vectorize(l[, f])``, ``unroll(l[, f])``: set the loop's kind; parallel and
  vectorize loops must write every buffer from outside the loop at an index depending on the loop.

Buffers are named as the kernel's arguments (``in0``, ``out0``) or by their name hints.
"""

from __future__ import annotations

import itertools
import re
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from ..errors import ScheduleError
from ..ir.builder import InsertionPoint
from ..ir.core import Block, Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.builtin import func_body, func_name
from ..ir.types import DYN, BufferType, FloatType, IntegerType, ScalarType, index
from ..targets import Target, host_target


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


@dataclass(frozen=True)
class Fuse:
    """Collapse ``outer`` and the loop ``inner`` directly inside it into one loop ``outer_inner``."""

    outer: str
    inner: str

    def __str__(self) -> str:
        return f"fuse({self.outer}, {self.inner})"


@dataclass(frozen=True)
class Cache:
    """Read the part of ``buffer`` that ``loop`` reads from a local copy made just before ``loop``."""

    loop: str
    buffer: str

    def __str__(self) -> str:
        return f"cache({self.loop}, {self.buffer})"


Primitive = Split | Reorder | Annotate | Fuse | Cache


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
        if name == "fuse" and len(args) == 2:
            return Fuse(args[0], args[1])
        if name == "cache" and len(args) == 2:
            return Cache(args[0], args[1])
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


def fuse(kernel: Operation, outer_name: str, inner_name: str) -> None:
    """Apply ``fuse(outer, inner)`` to ``kernel`` in place (see the module docstring)."""
    outer, inner = find_loop(kernel, outer_name), find_loop(kernel, inner_name)
    if inner.parent_op is not outer:
        raise ScheduleError(f"loop '{inner_name}' is not directly inside loop '{outer_name}'")
    body = outer.regions[0].block
    for op in body.ops:
        if op is not inner and op.name != "loop.yield" and not op.has_trait("pure"):
            raise ScheduleError(f"loop '{outer_name}' holds '{op.name}' besides loop '{inner_name}'")
    if any(_defined_inside(v, outer) for v in inner.operands):
        raise ScheduleError(f"the bounds of loop '{inner_name}' depend on loop '{outer_name}'")
    with InsertionPoint.before_op(outer):
        trips = [_trip_count(op) for op in (outer, inner)]
        total = loop.mul(trips[0], trips[1])
        fused = loop.build_for(loop.const(value=0, dtype=index), total, loop.const(value=1, dtype=index))
    fused_body = fused.regions[0].block
    iv = fused_body.args[0]
    iv.name_hint = f"{outer_name}_{inner_name}"
    assert outer.parent is not None
    outer.parent.insert_before(outer, fused)
    with InsertionPoint(fused_body, before=fused_body.terminator):
        positions = [loop.div(iv, trips[1]), loop.rem(iv, trips[1])]
        for op, position in zip((outer, inner), positions):
            lower, _, step = op.operands
            _iv(op).replace_all_uses_with(loop.add(lower, loop.mul(position, step)))
    for op in [o for o in body.ops if o is not inner and o.name != "loop.yield"]:
        body.remove(op)
        fused_body.insert_before(fused_body.terminator, op)  # type: ignore[arg-type]
    inner_body = inner.regions[0].block
    for op in [o for o in inner_body.ops if o.name != "loop.yield"]:
        inner_body.remove(op)
        fused_body.insert_before(fused_body.terminator, op)  # type: ignore[arg-type]
    outer.erase()


def _trip_count(op: Operation) -> Value:
    """``ceil((upper - lower) / step)`` of a loop, built at the current insertion point."""
    lower, upper, step = op.operands
    one = loop.const(value=1, dtype=index)
    return loop.div(loop.add(loop.sub(upper, lower), loop.sub(step, one)), step)  # type: ignore[no-any-return]


def _defined_inside(value: Value, op: Operation) -> bool:
    """True when ``value`` is defined in one of ``op``'s regions, at any depth."""
    owner = value.defining_op()
    block = value.owner if owner is None else owner.parent
    while isinstance(block, Block):
        parent = block.parent.parent if block.parent is not None else None
        if parent is op:
            return True
        if parent is None:
            return False
        block = parent.parent
    return False


def cache(kernel: Operation, loop_name_: str, buffer_name: str) -> None:
    """Apply ``cache(l, buffer)`` to ``kernel`` in place (see the module docstring)."""
    target = find_loop(kernel, loop_name_)
    buffer = _find_buffer(kernel, buffer_name)
    loads = [op for op in target.walk() if op.name == "loop.load" and op.operands[0] is buffer]
    if any(op.name == "loop.store" and op.operands[1] is buffer for op in target.walk()):
        raise ScheduleError(f"loop '{loop_name_}' writes '{buffer_name}', so it cannot be cached")
    if not loads:
        raise ScheduleError(f"loop '{loop_name_}' does not read '{buffer_name}'")
    ranges: list[tuple[Value, Value] | None] = []
    for axis in range(len(loads[0].operands) - 1):
        kinds = {_index_range(op.operands[1 + axis], target) for op in loads}
        if len(kinds) != 1 or "varying" in kinds:
            raise ScheduleError(
                f"cache({loop_name_}, {buffer_name}): dim {axis} is not read at one value from outside the loop "
                "or along one loop's range in every read"
            )
        (kind,) = kinds
        ranges.append(None if kind == "fixed" else kind)  # type: ignore[arg-type]
    if all(r is None for r in ranges):
        raise ScheduleError(f"cache({loop_name_}, {buffer_name}): every read is of one element; nothing to tile")
    element = buffer.type.element  # type: ignore[attr-defined]
    with InsertionPoint.before_op(target):
        extents = [loop.sub(hi, lo) for lo, hi in (r for r in ranges if r is not None)]
        shape = tuple(_static(e) for e in extents)
        dynamic = [e for e, d in zip(extents, shape) if d == DYN]
        local = loop.alloc(*dynamic, type=BufferType(shape, element, "local"))
        with ExitStack() as stack:
            ivs: list[Value] = []
            for n, extent in enumerate(extents):
                zero, one = loop.const(value=0, dtype=index), loop.const(value=1, dtype=index)
                ivs.append(stack.enter_context(loop.for_(zero, extent, one, name=f"{loop_name_}_c{n}")))
            source, it = [], iter(zip(ivs, (r for r in ranges if r is not None)))
            for axis, r in enumerate(ranges):
                if r is None:
                    source.append(loads[0].operands[1 + axis])
                else:
                    local_iv, (lo, _) = next(it)
                    source.append(loop.add(local_iv, lo))
            loop.store(loop.load(buffer, source), local, ivs)
    for op in loads:
        with InsertionPoint.before_op(op):
            indices = [loop.sub(op.operands[1 + a], r[0]) for a, r in enumerate(ranges) if r is not None]
            value = loop.load(local, indices)
        op.results[0].replace_all_uses_with(value)
        op.erase()


def _static(value: Value) -> Any:
    """The constant an index value folds to (for ``c - c'`` of two constants), else DYN."""
    op = value.defining_op()
    if op is not None and op.name == "loop.sub":
        a, b = (x.defining_op() for x in op.operands)
        if a is not None and b is not None and a.name == b.name == "loop.const":
            return int(a.attr("value")) - int(b.attr("value"))
    return DYN


def _index_range(value: Value, target: Operation) -> Any:
    """How a read inside ``target`` indexes one dim: ``"fixed"`` (defined outside ``target``), the (lower,
    upper) values of the loop whose induction variable it is (a loop inside ``target`` or ``target`` itself,
    with bounds defined outside it), or ``"varying"``."""
    if not _defined_inside(value, target) and value is not _iv(target):
        return "fixed"
    block = value.owner
    if value.defining_op() is None and isinstance(block, Block) and block.parent is not None:
        owner = block.parent.parent
        if owner is not None and owner.name == "loop.for" and (owner is target or _defined_inside(value, target)):
            lower, upper, step = owner.operands
            if not any(_defined_inside(v, target) for v in (lower, upper, step)):
                step_op = step.defining_op()
                if step_op is not None and step_op.name == "loop.const" and step_op.attr("value") == 1:
                    return (lower, upper)
    return "varying"


def _find_buffer(kernel: Operation, name: str) -> Value:
    """The kernel argument or allocated buffer named ``name``; ScheduleError listing the names otherwise."""
    candidates = list(func_body(kernel).args) + [op.results[0] for op in kernel.walk() if op.name == "loop.alloc"]
    found = [v for v in candidates if v.name_hint == name]
    if len(found) != 1:
        known = ", ".join(v.name_hint or "?" for v in candidates)
        raise ScheduleError(f"@{func_name(kernel)} has no single buffer named '{name}' (buffers: {known})")
    return found[0]


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
        elif isinstance(step, Fuse):
            fuse(kernel, step.outer, step.inner)
        elif isinstance(step, Cache):
            cache(kernel, step.loop, step.buffer)
        else:
            annotate(kernel, step.kind, step.loop, step.factor)


def default_schedule(kernel: Operation, target: Target | None = None, tile: int = 4) -> Schedule:
    """A reasonable schedule for a kernel built by the lowering for ``target`` (default: this machine),
    chosen from its loop names and nesting; a vectorized loop takes the target's lanes of the widest element
    its body loads or stores (see :func:`vector_factor`).

    matmul (one loop each named ``i``, ``j``, ``k``, rows independent): tile ``i`` and ``j`` by ``tile``,
    parallel outer rows. Otherwise, for each top-level nest: the outermost loop that has more than one trip
    parallel when its iterations are independent, and the innermost loop of a perfect nest vectorized
    (split first when it is also the outermost) unless the lowering already vectorized it.
    """
    target = target if target is not None else host_target()
    loops = loops_of(kernel)
    if any(op.attr("kind", "serial") == "parallel" for op in loops):
        return Schedule(())  # the lowering built it scheduled (the blocked GEMM and convolution)
    names = [loop_name(op) for op in loops]
    # One matmul nest whose rows are independent: a fused epilogue storing into a 1 x 1 result writes one
    # element from every row (the index of a size-1 dim is 0), and the tiles could not run in parallel.
    if all(names.count(n) == 1 for n in "ijk") and _independent(find_loop(kernel, "i")):
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
        vector = vector_factor(chain[-1], target)
        if len(chain) == 1 and perfect:
            steps += [
                Split(outer, vector),
                Annotate("parallel", f"{outer}_o"),
                Annotate("vectorize", f"{outer}_i", vector),
            ]
            continue
        steps.append(Annotate("parallel", outer))
        if perfect and chain[-1].attr("kind", "serial") == "serial" and _independent(chain[-1]):
            steps.append(Annotate("vectorize", inner, vector))
    return Schedule(tuple(steps))


def vector_factor(op: Operation, target: Target) -> int:
    """Lanes for vectorizing loop ``op`` on ``target``: a vector register of the widest element type the loop
    loads or stores (f32 when it touches no buffer). Narrower types count as f32: f16 and bf16 compute in
    f32, so a register of f32 is what one step fills."""
    widths = [32]
    for inner in op.walk():
        if inner.name in ("loop.load", "loop.store"):
            buffer = inner.operands[0 if inner.name == "loop.load" else 1].type
            if isinstance(buffer, BufferType):
                widths.append(element_bits(buffer.element))
    return target.lanes(max(widths))


def element_bits(t: ScalarType) -> int:
    """Bits of one element of type ``t`` (64 for ``index``)."""
    return t.width if isinstance(t, FloatType | IntegerType) else 64


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
