"""WebGPU has no 64-bit integers: i64 values are held in ``i32`` where a range proof says they fit.

Models from PyTorch carry i64 everywhere (token ids, argmax results, positions, gather indices). WGSL has
32-bit integers only, so the WebGPU backend holds every ``i64`` value and buffer element in ``i32``, and this
pass proves, kernel by kernel, that doing so changes no result: every i64 value a kernel computes lies in the
32-bit range. It is an interval analysis over the loop IR:

- i64 elements of the kernels' buffers are in the 32-bit range by induction: the host checks the model's i64
  inputs when it uploads them (an error naming the input and the value otherwise), the compiler checks i64
  constants, and every i64 value a kernel stores is one this pass proved;
- ``index`` values are in the 32-bit range (:func:`~tensorium.lowering.webgpu_limits.check_index_width`), loop
  induction variables in their bounds, constants exact; a named dim of a buffer at most what keeps the buffer
  within the binding size (:func:`dim_bound`, which the runtimes check at each run);
- arithmetic, casts, selects, minima and maxima follow interval arithmetic; bitwise ops of 32-bit values stay
  32-bit values; a cast from a float, or from ``u32``/``u64``, is the target type's whole range;
- where that proof fails, a kernel may be proven under a *guard* that it checks at run time
  (:func:`guard_i64`): a cast from a float that no interval bounds (a logarithm's: T5's relative-position
  buckets) is checked to lie in ``[-2**b, 2**b)``, for the largest ``b`` of :data:`GUARD_BITS` under which
  the rest of the proof holds; failing that, i64 sums, differences and products whose intervals leave 32 bits
  (of two inputs, say) are also checked not to overflow their i32 registers. The checks are made where a value
  computed from them has an effect (a store, a load's position, a loop's bounds), not where they arise, so a
  lane whose out-of-range cast a ``select`` discards (T5's ``log(0)`` for the near positions) passes. A failed
  check fails the run with a message, through the kernel's status buffer;
- a kernel's own ``local``/``shared`` buffers hold the union of what is stored into them (zero before the
  first store, as WGSL initializes them), found by iterating to a fixed point; a buffer whose range still
  grows after a few rounds is an accumulator bounded by the trip counts of the loops around its ``+=``, or
  else gets the whole i64 range;
- an i64 value may wrap in its i32 register where only its low 32 bits matter (add, mul, casts to 32-bit
  integers...); where more is observed (a comparison, a division, a store into a tensor of the plan) its
  interval must fit 32 bits.

An observed i64 value whose interval leaves the 32-bit range is a CompileError naming the kernel, the op, the
interval and the op that made the value: never a silent narrowing. ``u64`` is not held (it stays a CompileError
in the emitter).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import CompileError
from ..ir.builder import InsertionPoint
from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.builtin import func_body, func_name, functions
from ..ir.evaluate import op_location
from ..ir.types import (
    BufferType,
    FloatType,
    IndexType,
    IntegerType,
    ScalarType,
    TensorType,
    Type,
    f32,
    i1,
    i64,
    storage_dtype,
)
from ..targets import Target
from .plan import plan_of
from .webgpu_schedule import storage_bindings

__all__ = [
    "GUARD_BITS",
    "I32_RANGE",
    "check_int64_ranges",
    "dim_bound",
    "dims_within_binding",
    "Guard",
    "guard_i64",
    "held_in_i32",
    "storage_bytes",
    "storage_itemsize",
]

Range = tuple[int, int]

I32_RANGE: Range = (-(1 << 31), (1 << 31) - 1)
"""The values an ``i64`` may take on WebGPU, where it is held in an ``i32``."""

GUARD_BITS = (31, 30, 24, 16)
"""The bounds ``2**b`` tried, widest first, for the run-time check of a float cast to i64 (see
:func:`guard_i64`): the widest under which the kernel's proof holds is kept."""

_ROUNDS = 4
"""Fixed-point rounds over a kernel before the buffers whose ranges still grow are taken for accumulators (and
bounded by their trip counts) or widened to every i64; as many again before anything still growing is widened."""


def held_in_i32(t: Type) -> bool:
    """Whether WebGPU holds values of scalar type ``t`` (``i64``) in ``i32``."""
    return isinstance(t, IntegerType) and t.signed and t.width == 64


def storage_itemsize(element: ScalarType) -> int:
    """Bytes per element in WebGPU storage: ``i1`` (as ``u32``) and ``i64`` (as ``i32``) take 4, the others
    their own size."""
    if isinstance(element, IntegerType) and (element.is_bool or held_in_i32(element)):
        return 4
    return storage_dtype(element).itemsize


def storage_bytes(t: BufferType | TensorType) -> int:
    """Bytes of a static buffer or tensor in WebGPU storage (see :func:`storage_itemsize`)."""
    return (t.num_elements or 0) * storage_itemsize(t.element)


def dim_bound(t: BufferType | TensorType, binding: int) -> int:
    """The largest a named dim of ``t`` may be: the size at which ``t``, its other dims 1, fills the binding
    size (``binding`` bytes), below 2**31. The runtimes check it at each run (:func:`dims_within_binding`)."""
    fixed = math.prod(d for d in t.shape if isinstance(d, int))
    if fixed == 0:
        return I32_RANGE[1]
    return min(I32_RANGE[1], binding // (storage_itemsize(t.element) * fixed))


def dims_within_binding(t: TensorType, shape: Sequence[int], binding: int) -> str | None:
    """What is wrong with ``shape``, the run-time shape of ``t``, if a named dim of it is over :func:`dim_bound`
    (which the i64 range proof assumed); None when none is."""
    bound = dim_bound(t, binding)
    for axis, (d, size) in enumerate(zip(t.shape, shape)):
        if not isinstance(d, int) and size > bound:
            return f"dim {d.name} = {size} (axis {axis}) is over {bound}, the most that fits the binding size {binding}"
    return None


def _type_range(t: Type) -> Range | None:
    """Every value of integer type ``t`` (``index`` as the 32-bit indices WebGPU uses); None for the others."""
    if isinstance(t, IndexType):
        return I32_RANGE
    if isinstance(t, IntegerType):
        if t.is_bool:
            return (0, 1)
        if t.signed:
            return (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1)
        return (0, (1 << t.width) - 1)
    return None


def _hull(ranges: Iterable[Range]) -> Range:
    lows, highs = zip(*ranges)
    return (min(lows), max(highs))


def _products(a: Range, b: Range) -> Range:
    return _hull([(x * y, x * y) for x in a for y in b])


def _quotients(a: Range, b: Range) -> Range:
    """Truncated ``a / b`` (0 for a zero divisor, as the loop dialect)."""
    divisors = [d for d in (b[0], b[1], -1, 1) if b[0] <= d <= b[1] and d != 0]
    if not divisors:
        return (0, 0)
    values = [abs(x) // abs(d) * (1 if (x < 0) == (d < 0) else -1) for x in a for d in divisors]
    return _hull([(v, v) for v in [*values, 0]])


def _remainders(a: Range, b: Range) -> Range:
    """Truncated ``a % b`` (the sign of ``a``; 0 for a zero divisor)."""
    bound = max(abs(b[0]), abs(b[1])) - 1
    if bound < 0:
        return (0, 0)
    return (max(a[0], -bound) if a[0] < 0 else 0, min(a[1], bound) if a[1] > 0 else 0)


def _shifted(a: Range, amounts: Range, left: bool) -> Range | None:
    if amounts[0] < 0 or amounts[1] > 31:
        return None  # amounts outside [0, 32): the emitter's 32-bit meaning is not i64's
    if left:
        return _hull([(x << s, x << s) for x in a for s in amounts])
    return _hull([(x >> s, x >> s) for x in a for s in amounts])


def _bitwise(name: str, a: Range, b: Range) -> Range:
    """``and``/``or``/``xor`` of two intervals (of i32-range values, whose results are i32-range values)."""
    if a[0] >= 0 and b[0] >= 0:
        top = (1 << max(a[1].bit_length(), b[1].bit_length())) - 1
        return (0, min(a[1], b[1]) if name == "loop.and" else top)
    if name == "loop.and" and (a[0] >= 0 or b[0] >= 0):
        return (0, a[1] if a[0] >= 0 else b[1])
    width = max(abs(v).bit_length() for v in (*a, *b))
    return (-(1 << width), (1 << width) - 1)


_WRAPPING = frozenset({"loop.add", "loop.sub", "loop.mul", "loop.neg", "loop.fma", "loop.and", "loop.or", "loop.xor"})
"""Ops whose low 32 result bits depend only on their operands' low 32 bits: an i64 operand of theirs may wrap in
its i32 register without changing them."""


def _observes(op: Operation, position: int) -> bool:
    """Whether ``op`` depends on more than the low 32 bits of its i64 operand at ``position`` (a comparison, a
    division, a conversion to a float or an index, a store into a buffer of the plan...): there its i32 register
    must hold the true value."""
    if op.name in _WRAPPING or op.name == "loop.shuffle":
        return False
    if op.name == "loop.select":
        return position == 0
    if op.name == "loop.shl":
        return position == 1
    if op.name == "loop.store":
        return position == 0 and op.operands[1].defining_op() is None
    if op.name == "loop.cast":
        result = op.results[0].type
        wraps = isinstance(result, IntegerType) and not result.is_bool and (result.width <= 32 or held_in_i32(result))
        return not wraps
    return True


def _is_load(value: Value, buffer: int) -> bool:
    producer = value.defining_op()
    return producer is not None and producer.name == "loop.load" and id(producer.operands[0]) == buffer


def _reads(value: Value, buffers: set[int]) -> bool:
    """Whether ``value`` is computed from a load of one of ``buffers`` (by value id)."""
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        producer = v.defining_op()
        if producer is None or id(producer) in seen:
            continue
        seen.add(id(producer))
        if producer.name == "loop.load" and id(producer.operands[0]) in buffers:
            return True
        stack.extend(producer.operands)
    return False


def _fits(r: Range | None) -> bool:
    return r is not None and I32_RANGE[0] <= r[0] and r[1] <= I32_RANGE[1]


class _KernelRanges:
    """The interval of every integer value of one kernel (see the module docstring)."""

    def __init__(self, kernel: Operation, args: dict[int, Range], binding: int, guard: Guard | None = None) -> None:
        self.kernel = kernel
        self.guard = guard
        """What is checked at run time (:func:`guard_i64`); None: nothing (a float cast to i64 is any i64)."""
        self.overflowing: set[int] = set()
        """The ops (by id) whose overflow ``guard`` checks: i64 arithmetic whose interval leaves 32 bits."""
        self.binding = binding
        """The binding size: a named dim of a buffer is at most what keeps it within (checked at each run)."""
        self.args = args
        """The interval of the i64 elements of each argument buffer (by value id) the launch binds."""
        self.written: dict[int, Range] = {}
        """The hull of what the kernel stores into each argument buffer, by value id."""
        self.values: dict[int, Range] = {}
        self.stored: dict[int, Range] = {}
        """Per ``loop.alloc``'d buffer (by value id), the hull of zero and of what is stored into it."""
        self.widened: set[int] = set()
        self.bounded: set[int] = set()
        """Accumulators whose range :meth:`_accumulation` bounded by their trip counts (no longer joined)."""
        self.allocs = {id(op.results[0]): op for op in kernel.walk() if op.name == "loop.alloc"}

    def run(self) -> None:
        """Iterate the kernel to the fixed point (accumulators bounded by their trip counts, other growing
        buffers widened to every i64), then check every i64 value."""
        for round_number in range(3 * _ROUNDS):
            before = dict(self.stored)
            self._walk(check=False)
            if self.stored == before:
                break
            growing = {b for b, r in self.stored.items() if before.get(b) != r}
            if round_number == _ROUNDS - 1:
                for b in growing:
                    bound = self._accumulation(b, growing)
                    if bound is None:
                        self.widened.add(b)
                    else:
                        self.stored[b] = bound
                        self.bounded.add(b)
            elif round_number >= 2 * _ROUNDS - 1:
                self.widened |= growing  # still growing: a widened buffer holds any i64, which is a fixed point
        else:
            self.widened |= set(self.stored) - self.bounded
            self._walk(check=False)
        self._walk(check=True)

    def _accumulation(self, buffer: int, growing: set[int]) -> Range | None:
        """The range of a ``local`` buffer whose stores are ``load(buffer) + x`` (an accumulator: ``x`` not read
        from a growing buffer) or values not read from one (its initial value): the initial values' hull
        widened by ``x``'s range times the number of times the store can run (the trip counts of the loops
        around it inside the buffer's scope). None for any other pattern, or loops of unknown trip count."""
        alloc = self.allocs[buffer]
        low = high = 0
        for op in self.kernel.walk():
            if op.name != "loop.store" or id(op.operands[1]) != buffer:
                continue
            value = op.operands[0]
            step = value.defining_op()
            loads = [o for o in step.operands if _reads(o, {buffer})] if step is not None else []
            if step is not None and step.name == "loop.add" and len(loads) == 1 and _is_load(loads[0], buffer):
                (increment,) = [o for o in step.operands if o is not loads[0]] or [loads[0]]
                runs = self._executions(op, alloc)
                r = self.range_of(increment)
                if runs is None or r is None or _reads(increment, growing):
                    return None
                low, high = low + runs * min(0, r[0]), high + runs * max(0, r[1])
            elif not _reads(value, growing):
                r = self.range_of(value)
                if r is None:
                    return None
                low, high = min(low, r[0]), max(high, r[1])
            else:
                return None
        return (low, high)

    def _executions(self, op: Operation, alloc: Operation) -> int | None:
        """How many times ``op`` can run per run of ``alloc``'s block: the product of the trip counts of the
        loops around it up to that block (None where a bound is unknown)."""
        runs = 1
        scope = alloc.parent_op
        parent = op.parent_op
        while parent is not None and parent is not scope:
            if parent.name == "loop.for":
                lower, upper, step = (self.range_of(v) for v in parent.operands[:3])
                if lower is None or upper is None or step is None or step[0] < 1:
                    return None
                runs *= max(0, -(-(upper[1] - lower[0]) // step[0]))
            parent = parent.parent_op
        return runs if parent is scope else None

    def range_of(self, value: Value) -> Range | None:
        """The interval of an integer ``value`` (its type's whole range when nothing narrower is known)."""
        known = self.values.get(id(value))
        return known if known is not None else _type_range(value.type)

    def _walk(self, check: bool) -> None:
        self.values, self.written = {}, {}
        for op in self.kernel.walk():
            if op is self.kernel:
                continue
            if check:
                for position, operand in enumerate(op.operands):
                    if held_in_i32(operand.type) and _observes(op, position):
                        self._check(op, operand)
            if op.name == "loop.for":
                lower, upper = (self.range_of(v) for v in op.operands[:2])
                if lower is not None and upper is not None:
                    high = max(lower[0], upper[1] - 1)
                    self.values[id(op.regions[0].block.args[0])] = (lower[0], high)
                continue
            if op.name == "loop.store":
                self._store(op)
                continue
            if not op.results:
                continue
            result = op.results[0]
            r = self._transfer(op)
            t = _type_range(result.type)
            if r is None or (t is not None and not (t[0] <= r[0] and r[1] <= t[1])):
                r = t  # unknown, or a wrapping op leaving its type's range: anything of the type
            if self.guard is not None and self.guard.overflow and _may_overflow(op) and held_in_i32(result.type):
                if not _fits(r):
                    self.overflowing.add(id(op))
                    r = I32_RANGE  # checked at run time not to overflow its i32 register
            if isinstance(result.type, IndexType) and r is not None:
                r = (max(r[0], I32_RANGE[0]), min(r[1], I32_RANGE[1]))  # indices never wrap (check_index_width)
            if r is not None:
                self.values[id(result)] = r

    def _check(self, op: Operation, value: Value) -> None:
        """CompileError unless ``value``, an i64 operand whose true value ``op`` observes, fits 32 bits."""
        r = self.range_of(value)
        if _fits(r):
            return
        assert r is not None
        producer = value.defining_op()
        origin = f" (from '{producer.name}')" if producer is not None else ""
        if producer is not None and producer.name == "loop.load" and id(producer.operands[0]) in self.allocs:
            origin = " (from 'loop.load' of a buffer whose values grow with every iteration: an accumulation)"
        elif producer is not None and producer.name == "loop.cast":
            origin = f" (from 'loop.cast' of {producer.operands[0].type})"
        interval = "of any size" if r == _type_range(value.type) else f"in [{r[0]}, {r[1]}]"
        raise CompileError(
            f"{op_location(op)}kernel @{func_name(self.kernel)}: '{op.name}' uses i64 values {interval}{origin}, "
            "beyond the 32-bit range WebGPU holds i64 in (WGSL has no 64-bit integers); compute it in i32, or on "
            "the CPU target"
        )

    def _store(self, op: Operation) -> None:
        value, buffer = op.operands[0], op.operands[1]
        if not held_in_i32(value.type):
            return
        r = self.range_of(value)
        if r is None or id(buffer) in self.widened:
            r = _type_range(value.type)
        assert r is not None
        producer = buffer.defining_op()
        if producer is None:
            self.written[id(buffer)] = _hull([self.written.get(id(buffer), r), r])
        elif producer.name == "loop.alloc" and id(buffer) not in self.bounded:
            self.stored[id(buffer)] = _hull([self.stored.get(id(buffer), (0, 0)), r])

    def _load(self, op: Operation) -> Range | None:
        buffer = op.operands[0]
        t = op.results[0].type
        if not held_in_i32(t):
            return _type_range(t)
        producer = buffer.defining_op()
        if producer is None:
            return self.args.get(id(buffer), I32_RANGE)  # checked on upload, or stored by a proven kernel
        if id(buffer) in self.widened:
            return _type_range(t)
        return self.stored.get(id(buffer), (0, 0))

    def _transfer(self, op: Operation) -> Range | None:
        """The interval of ``op``'s result from its operands' (None: not known narrower than its type)."""
        name = op.name
        result_type = op.results[0].type
        if name == "loop.const":
            value = op.attr("value")
            if isinstance(value, bool) or isinstance(value, int):
                return (int(value), int(value))
            return None
        if name == "loop.load":
            return self._load(op)
        if name == "loop.dim":
            t = op.operands[0].type
            return (0, dim_bound(t, self.binding) if isinstance(t, BufferType) else I32_RANGE[1])
        if _type_range(result_type) is None:
            return None  # floats
        ranges = [self.range_of(v) for v in op.operands]
        if name == "loop.cast":
            source = op.operands[0].type
            if isinstance(source, FloatType):
                return self.guard.cast_range if self.guard is not None else None
            if ranges[0] is None:
                return None
            return ranges[0]
        if name == "loop.select":
            a, b = ranges[1], ranges[2]
            return None if a is None or b is None else _hull([a, b])
        if any(r is None for r in ranges):
            return None
        known: list[Range] = [r for r in ranges if r is not None]
        if name == "loop.add":
            return (known[0][0] + known[1][0], known[0][1] + known[1][1])
        if name == "loop.sub":
            return (known[0][0] - known[1][1], known[0][1] - known[1][0])
        if name == "loop.mul":
            return _products(known[0], known[1])
        if name == "loop.fma":
            p = _products(known[0], known[1])
            return (p[0] + known[2][0], p[1] + known[2][1])
        if name == "loop.neg":
            return (-known[0][1], -known[0][0])
        if name == "loop.abs":
            low, high = known[0]
            return (0 if low <= 0 <= high else min(abs(low), abs(high)), max(abs(low), abs(high)))
        if name in ("loop.max", "loop.min"):
            pick = max if name == "loop.max" else min
            return (pick(known[0][0], known[1][0]), pick(known[0][1], known[1][1]))
        if name == "loop.div":
            return _quotients(known[0], known[1])
        if name == "loop.rem":
            return _remainders(known[0], known[1])
        if name in ("loop.and", "loop.or", "loop.xor"):
            return _bitwise(name, known[0], known[1])
        if name in ("loop.shl", "loop.shr"):
            return _shifted(known[0], known[1], name == "loop.shl")
        if name == "loop.shuffle":
            return known[0]
        return None


def check_int64_ranges(lowered: Operation, target: Target) -> None:
    """CompileError naming the first i64 constant or value of a kernel of ``lowered`` that may leave the 32-bit
    range WebGPU holds i64 in (see the module docstring) on ``target`` (whose binding size bounds named dims).

    The kernels are analysed in the launch plan's order, each i64 buffer carrying the interval of what the
    kernels before stored into it (argmax's indices, say), the model's inputs the whole 32-bit range."""
    binding = target.limit("max_storage_buffer_binding_size")
    plan = plan_of(lowered)
    buffers: dict[int, Range] = {}
    for number, constant in plan.constants:
        if held_in_i32(plan.buffers[number].element) and constant.array.size:
            low, high = int(constant.array.min()), int(constant.array.max())
            if not _fits((low, high)):
                raise CompileError(
                    f"constant tensor #{number} ({plan.buffers[number]}) holds {low if low < I32_RANGE[0] else high}, "
                    f"outside the 32-bit range WebGPU holds i64 in [{I32_RANGE[0]}, {I32_RANGE[1]}]"
                )
            buffers[number] = (low, high)
    views = {view.buffer: view.source for view in plan.views}
    kernels = {func_name(kernel): kernel for kernel in functions(lowered)}
    guards: dict[str, Guard] = {}
    storage_bindings_limit = target.limit("max_storage_buffers_per_shader_stage")
    for step in plan.steps:
        kernel = kernels[step.kernel]
        if not any(held_in_i32(t) for t in _integer_types(kernel)):
            continue
        bound = (*step.inputs, *step.outputs)
        for b in bound:
            if b in views and views[b] in buffers:
                buffers[b] = buffers[views[b]]
        args = func_body(kernel).args
        known = {id(a): buffers[b] for a, b in zip(args, bound) if b in buffers}
        analysis = _prove(kernel, known, binding, guards, storage_bindings_limit)
        for arg, b in zip(args, bound):
            if id(arg) in analysis.written:
                buffers[b] = _hull([buffers.get(b, analysis.written[id(arg)]), analysis.written[id(arg)]])


@dataclass(frozen=True)
class Guard:
    """How a kernel's i64 values that no interval bounds are checked at run time (:func:`guard_i64`)."""

    bits: int
    """Floats cast to i64 are checked to lie within ``[-2**bits, 2**bits)``."""
    overflow: bool = False
    """i64 ``add``, ``sub``, ``mul``, ``neg`` and ``div`` whose intervals leave 32 bits are checked not to overflow
    their i32 registers."""

    @property
    def cast_range(self) -> Range:
        return (-(1 << self.bits), (1 << self.bits) - 1)


_OVERFLOWING = frozenset({"loop.add", "loop.sub", "loop.mul", "loop.neg", "loop.div"})
"""The i64 ops a :class:`Guard` with ``overflow`` checks for 32-bit overflow at run time (and casts from ``u32``:
:func:`_may_overflow`)."""


def _may_overflow(op: Operation) -> bool:
    """Whether a :class:`Guard` with ``overflow`` checks ``op``: an op of :data:`_OVERFLOWING`, or a cast from
    ``u32`` (whose values from 2**31 on wrap negative in the i32 register)."""
    if op.name in _OVERFLOWING:
        return True
    source = op.operands[0].type if op.name == "loop.cast" and op.operands else None
    return isinstance(source, IntegerType) and not source.signed and source.width == 32


def _prove(
    kernel: Operation, args: dict[int, Range], binding: int, guards: dict[str, Guard], storage_limit: int
) -> _KernelRanges:
    """The ranges of ``kernel``'s values, proven. Where the proof fails, the proof under the first :class:`Guard`
    that makes it hold: the kernel's float casts to i64 checked within each bound of :data:`GUARD_BITS` in turn,
    then also its i64 arithmetic checked for overflow; the kernel is rewritten so (:func:`guard_i64`) and its
    guard recorded in ``guards`` (by kernel name: a kernel launched again is proven under the same guard).
    CompileError (the unguarded proof's) when none holds, or when the kernel has no storage binding to spare
    for the status buffer its checks need."""
    name = func_name(kernel)
    analysis = _KernelRanges(kernel, args, binding, guards.get(name))
    try:
        analysis.run()
        return analysis
    except CompileError as unproven:
        if name in guards:
            raise
        casts = [op for op in kernel.walk() if _is_float_cast(op)]
        attempts = [Guard(bits) for bits in GUARD_BITS if casts] + [Guard(GUARD_BITS[0], overflow=True)]
        for guard in attempts:
            analysis = _KernelRanges(kernel, args, binding, guard)
            try:
                analysis.run()
            except CompileError:
                continue
            if storage_bindings(kernel) >= storage_limit:
                raise CompileError(
                    f"{unproven}; a run-time check ({_check_message(guard, casts, analysis.overflowing)}) would "
                    f"prove it, but the kernel binds {storage_bindings(kernel)} storage buffers, none to spare for "
                    "the check's status buffer"
                ) from None
            guard_i64(kernel, guard, analysis.overflowing)
            guards[name] = guard
            return analysis
        raise


def _is_float_cast(op: Operation) -> bool:
    return op.name == "loop.cast" and isinstance(op.operands[0].type, FloatType) and held_in_i32(op.results[0].type)


def _check_message(guard: Guard, casts: Sequence[Operation], overflowing: set[int]) -> str:
    problems = []
    if casts:
        problems.append(f"a float converted to i64 is outside [-2**{guard.bits}, 2**{guard.bits})")
    if overflowing:
        problems.append("an i64 sum, difference, product, quotient or u32 conversion overflows 32 bits")
    return " or ".join(problems)


_EFFECTS = frozenset(
    {"loop.load", "loop.load_packed", "loop.lookup_bytes", "loop.shuffle", "loop.alloc", "loop.mma", "loop.prefetch"}
)
"""Ops with a result that read memory or other lanes: a flagged operand of theirs is checked (as at every op
without a result or with regions); through the others, pure computations, the flags flow."""


def guard_i64(kernel: Operation, guard: Guard, overflowing: set[int]) -> None:
    """Check at run time what the kernel's proof under ``guard`` assumed, where it matters. Each float cast to
    i64 gets a flag (``-2**bits <= x < 2**bits``, false for NaN), and each op of ``overflowing`` (by id) one
    that its i32 register did not overflow (from the signs of operands and result; for a product, that dividing
    it by one operand gives the other); a value computed from flagged values gets the conjunction of their
    flags (a ``select`` the flag of the operand it picks; a cast that only wraps an i64 to 32 or fewer bits
    none, its low bits being right either way), and each op with an effect (a store, a load, a loop, an
    ``if``, a shuffle...) whose operand is flagged a ``loop.check`` of its flag first. So a lane whose
    out-of-range cast a ``select`` discards passes (T5's ``log(0)`` bucket), and a kernel that stores, indexes
    or branches on a wrong value fails the run instead (its status buffer, read by the runtimes)."""
    casts = [op for op in kernel.walk() if _is_float_cast(op)]
    message = (
        f"{_check_message(guard, casts, overflowing)}, beyond what the kernel's i64 values were proven with to fit "
        "the 32 bits WebGPU holds i64 in"
    )
    flags: dict[int, Value] = {}
    for op in list(kernel.walk()):
        if op is kernel or op.parent is None:
            continue
        with InsertionPoint.before_op(op):
            flagged = [flags.get(id(v)) for v in op.operands]
            if op.name == "loop.select" and any(f is not None for f in flagged):
                true = loop.const(value=True, dtype=i1)
                condition, a, b = flagged
                picked = loop.select(op.operands[0], a if a is not None else true, b if b is not None else true)
                flags[id(op.results[0])] = picked if condition is None else loop.and_(condition, picked)
                continue
            pure = op.name not in _EFFECTS and len(op.results) == 1 and not op.regions
            if pure:
                result = op.results[0]
                wrapped = [
                    held_in_i32(v.type) and not held_in_i32(result.type) and not _observes(op, position)
                    for position, v in enumerate(op.operands)
                ]  # an i64 cast to 32 or fewer bits: its low bits are right either way
                flagged = [f for f, w in zip(flagged, wrapped) if not w]
            if _is_float_cast(op):  # its own flag, beside any its float operand inherited
                flagged.append(_cast_flag(op.operands[0], guard.bits))
            present = [f for f in flagged if f is not None]
            if not pure and present:
                loop.check(_conjunction(present), message=message, loc=op.loc)
                continue
        checked = pure and id(op) in overflowing
        if checked or (pure and present):
            with InsertionPoint.after_op(op):  # one insertion point: the flags follow the op in order
                flags[id(op.results[0])] = _conjunction([*present, *([_overflow_flag(op)] if checked else [])])


def _cast_flag(x: Value, bits: int) -> Value:
    """``-2**bits <= x < 2**bits`` for a float ``x`` (false for NaN), compared in f32 (where ``2**bits`` is exact;
    f16's top is 65504)."""
    if x.type != f32:
        x = loop.cast(x, dtype=f32)
    limit = float(1 << bits)
    low = loop.cmp(x, loop.const(value=-limit, dtype=f32), predicate="ge")
    return loop.and_(low, loop.cmp(x, loop.const(value=limit, dtype=f32), predicate="lt"))  # type: ignore[no-any-return]


def _overflow_flag(op: Operation) -> Value:
    """Whether the i64 ``add``/``sub``/``mul``/``neg``/``div`` ``op``, computed in an i32 register, did not overflow it
    (true where i64 is not held in i32: the interpreters' plain runs)."""
    r = op.results[0]
    zero = loop.const(value=0, dtype=i64)
    if op.name == "loop.neg":
        return loop.cmp(op.operands[0], loop.const(value=I32_RANGE[0], dtype=i64), predicate="ne")  # type: ignore[no-any-return]
    if op.name == "loop.cast":  # from u32: below 2**31, where the i32 register holds it as it is
        x = op.operands[0]
        return loop.cmp(x, loop.const(value=1 << 31, dtype=x.type), predicate="lt")  # type: ignore[no-any-return]
    a, b = op.operands
    if op.name == "loop.div":  # only -2**31 / -1 leaves i32 (WGSL gives -2**31 back)
        lowest = loop.cmp(a, loop.const(value=I32_RANGE[0], dtype=i64), predicate="eq")
        minus_one = loop.cmp(b, loop.const(value=-1, dtype=i64), predicate="eq")
        return loop.xor(loop.and_(lowest, minus_one), loop.const(value=True, dtype=i1))  # type: ignore[no-any-return]
    if op.name == "loop.mul":
        exact = loop.cmp(loop.div(r, a), b, predicate="eq")
        minus_one = loop.cmp(a, loop.const(value=-1, dtype=i64), predicate="eq")
        lowest = loop.cmp(b, loop.const(value=I32_RANGE[0], dtype=i64), predicate="eq")
        wraps = loop.and_(minus_one, lowest)  # -1 * -2**31: the quotient is -2**31 again
        no_wrap = loop.xor(wraps, loop.const(value=True, dtype=i1))
        return loop.or_(loop.cmp(a, zero, predicate="eq"), loop.and_(exact, no_wrap))  # type: ignore[no-any-return]
    if op.name == "loop.add":
        signs = loop.and_(loop.xor(a, r), loop.xor(b, r))  # negative when a and b agree in sign and r does not
    else:
        signs = loop.and_(loop.xor(a, b), loop.xor(a, r))  # negative when a and b differ and r is b's sign
    return loop.cmp(signs, zero, predicate="ge")  # type: ignore[no-any-return]


def _conjunction(flags: list[Value]) -> Value:
    result = flags[0]
    for flag in flags[1:]:
        result = loop.and_(result, flag)
    return result


def _integer_types(kernel: Operation) -> Iterable[Type]:
    for op in kernel.walk():
        for result in op.results:
            yield result.type.element if isinstance(result.type, BufferType) else result.type
    for arg in func_body(kernel).args:
        yield arg.type.element if isinstance(arg.type, BufferType) else arg.type
