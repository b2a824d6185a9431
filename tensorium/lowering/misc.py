"""Lowering the remaining graph ops: arg reductions, cumsum, split, pad, tile, arange, triu/tril, einsum and
the inverse trigonometric functions.

Arg reductions start from the first element along the axis (so an axis empty at run time is an
out-of-bounds load, reported by the loop interpreter as the graph interpreter reports the op); cumsum
carries a local accumulator along the axis; einsum runs a loop per output letter and folds the
contracted letters' loops into an accumulator. The others are copies with computed source positions.
"""

from __future__ import annotations

import math

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.graph import rng
from ..ir.dialects.graph.linalg import parse_equation
from ..ir.shapes import normalize_axis
from ..ir.types import BufferType, FloatType, IntegerType, f64, i64
from .kernel import Kernel, compute_type, convert, element_of, linearize, lowering, shape_of
from .reduce import accumulate


def _names(rank: int, prefix: str = "i") -> list[str]:
    return [f"{prefix}{a}" for a in range(rank)]


@lowering("graph.argmax", "graph.argmin")
def lower_arg_reduction(op: Operation, k: Kernel) -> None:
    """Per kept position, scan the axis keeping the best value and its i64 index; a NaN wins, and ties keep
    the first index (the last with ``select_last_index``)."""
    x, out = k.inputs[0], k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    rank = len(shape_of(x))
    axis = normalize_axis(attrs["axis"], rank)
    t = element_of(x)
    kept = [a for a in range(rank) if a != axis]
    sizes = k.sizes(x)
    k.check_not_empty([sizes[axis]], "reduces a dimension that is empty at run time")
    with k.loops([sizes[a] for a in kept], _names(len(kept))) as outer:

        def at(j: Value) -> list[Value]:
            where = dict(zip(kept, outer))
            where[axis] = j
            return [where[a] for a in range(rank)]

        best = loop.alloc(type=BufferType((), t, "local"))
        best_index = loop.alloc(type=BufferType((), i64, "local"))
        loop.store(loop.load(x, at(k.index(0)), loc=op.loc), best)
        loop.store(k.const(0, i64), best_index)
        with k.loops([sizes[axis]], ["r0"]) as (j,):
            value, current = loop.load(x, at(j)), loop.load(best)
            with loop.if_(arg_better(op, t, value, current)):
                loop.store(value, best)
                loop.store(loop.cast(j, dtype=i64), best_index)
        where = at(k.index(0)) if attrs["keepdims"] else outer
        loop.store(loop.load(best_index), out, where)


def arg_better(op: Operation, t: object, value: Value, current: Value) -> Value:
    """Whether ``value`` replaces ``current`` as the best of an argmax / argmin scan in index order (an i1):
    greater (argmax) or less (argmin), or equal too with ``select_last_index``; a NaN replaces a number, and a
    later NaN an earlier one only with ``select_last_index``."""
    last_index = op.opdef.attr_kwargs(op)["select_last_index"]
    better = {"graph.argmax": "ge" if last_index else "gt", "graph.argmin": "le" if last_index else "lt"}[op.name]
    take = loop.cmp(value, current, predicate=better)
    if isinstance(t, FloatType):
        is_nan = loop.cmp(value, value, predicate="ne")
        if last_index:
            return loop.or_(take, is_nan)  # type: ignore[no-any-return]
        return loop.or_(take, loop.and_(is_nan, loop.cmp(current, current, predicate="eq")))  # type: ignore[no-any-return]
    return take


def _sum_type(t: IntegerType | FloatType) -> IntegerType | FloatType:
    """The type the reference sums in: at least f32 for floats, 64 bits for integers."""
    if isinstance(t, IntegerType):
        return i64 if t.signed else IntegerType(64, False)
    result = compute_type(t)
    assert isinstance(result, FloatType)
    return result


@lowering("graph.cumsum")
def lower_cumsum(op: Operation, k: Kernel) -> None:
    """Per kept position, walk the axis (backwards with ``reverse``) adding into a local accumulator, storing
    the running sum after the add (before it with ``exclusive``)."""
    x, out = k.inputs[0], k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    rank = len(shape_of(x))
    axis = normalize_axis(attrs["axis"], rank)
    t = element_of(x)
    assert isinstance(t, (IntegerType, FloatType))
    acc_t = _sum_type(t)
    kept = [a for a in range(rank) if a != axis]
    sizes = k.sizes(x)
    last = k.last(x, axis)
    with k.loops([sizes[a] for a in kept], _names(len(kept))) as outer:
        acc = loop.alloc(type=BufferType((), acc_t, "local"))
        loop.store(k.const(0, acc_t), acc)
        with k.loops([sizes[axis]], ["r0"]) as (j,):
            where = dict(zip(kept, outer))
            where[axis] = loop.sub(last, j) if attrs["reverse"] else j
            at = [where[a] for a in range(rank)]
            total = loop.add(loop.load(acc), convert(loop.load(x, at), acc_t))
            loop.store(convert(loop.load(acc) if attrs["exclusive"] else total, element_of(out)), out, at)
            loop.store(total, acc)


@lowering("graph.split")
def lower_split(op: Operation, k: Kernel) -> None:
    """One copy nest per result (``s<n>_i*``), reading at the result's offset along ``axis``."""
    x = k.inputs[0]
    attrs = op.opdef.attr_kwargs(op)
    rank = len(shape_of(x))
    axis = normalize_axis(attrs["axis"], rank)
    offset = 0
    for n, (out, size) in enumerate(zip(k.outputs, attrs["sizes"])):
        with k.loops(k.sizes(out), _names(rank, f"s{n}_i")) as ivs:
            source = list(ivs)
            if offset:
                source[axis] = loop.add(ivs[axis], k.index(offset))
            loop.store(loop.load(x, source), out, ivs)
        offset += size


@lowering("graph.pad")
def lower_pad(op: Operation, k: Kernel) -> None:
    """Each result position reads x at ``i - begin`` per axis (negative pads crop): ``constant`` stores the value
    outside the cropped input, ``reflect`` mirrors without the edge, ``edge`` clamps."""
    x, out = k.inputs[0], k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    pads, mode = attrs["pads"], attrs["mode"]
    rank = len(shape_of(x))
    t = element_of(x)
    with k.loops(k.sizes(out), _names(rank)) as ivs:
        source: list[Value] = []
        inside: list[Value] = []
        for a, iv in enumerate(ivs):
            begin, end = pads[a], pads[a + rank]
            if begin == end == 0:
                source.append(iv)
                continue
            crop = -min(begin, 0)
            stop = k.size(x, a) if end >= 0 else loop.add(k.size(x, a), k.index(end))
            j = loop.sub(iv, k.index(begin)) if begin else iv
            if mode == "constant":
                inside += [loop.cmp(j, k.index(crop), predicate="ge"), loop.cmp(j, stop, predicate="lt")]
            elif mode == "edge":
                j = loop.max(loop.min(j, loop.sub(stop, k.index(1))), k.index(crop))
            else:
                low = k.index(crop)
                j = loop.select(loop.cmp(j, low, predicate="lt"), loop.sub(loop.add(low, low), j), j)
                mirror = loop.sub(loop.sub(loop.add(stop, stop), k.index(2)), j)
                j = loop.select(loop.cmp(j, stop, predicate="ge"), mirror, j)
            source.append(j)
        if not inside:
            loop.store(loop.load(x, source), out, ivs)
        else:
            cond = inside[0]
            for c in inside[1:]:
                cond = loop.and_(cond, c)
            loop.store(k.const(attrs["value"] if isinstance(t, FloatType) else int(attrs["value"]), t), out, ivs)
            with loop.if_(cond):
                loop.store(loop.load(x, source), out, ivs)


@lowering("graph.tile")
def lower_tile(op: Operation, k: Kernel) -> None:
    """out[i..] = x[i % size..] on the repeated axes."""
    x, out = k.inputs[0], k.outputs[0]
    repeats = op.opdef.attr_kwargs(op)["repeats"]
    with k.loops(k.sizes(out), _names(len(repeats))) as ivs:
        source = [iv if r == 1 else loop.rem(iv, k.size(x, a)) for a, (iv, r) in enumerate(zip(ivs, repeats))]
        loop.store(loop.load(x, source), out, ivs)


@lowering("graph.arange")
def lower_arange(op: Operation, k: Kernel) -> None:
    """out[i] = start + step * i, computed in f64 (as the reference) and cast to the element type; with integral
    start and step (always so for integer elements), in i64, which gives the same values (f64 is exact on these
    integers, and both casts round the same integer) and what targets without f64 (WebGPU) can run."""
    out = k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    start, step = float(attrs["start"]), float(attrs["step"])
    element = element_of(out)
    integral = all(v.is_integer() and abs(v) < 1 << 31 for v in (start, step))
    t = i64 if integral and not (isinstance(element, IntegerType) and element.is_bool) else f64
    first, stride = (int(start), int(step)) if t == i64 else (start, step)
    with k.loops(k.sizes(out), ["i0"]) as (i,):
        value = loop.add(k.const(first, t), loop.mul(k.const(stride, t), convert(i, t)))
        loop.store(convert(value, element), out, [i])


@lowering("graph.triu", "graph.tril")
def lower_triangle(op: Operation, k: Kernel) -> None:
    """Keep x where column - row >= k (triu) or <= k (tril) on the last two dims, else 0."""
    x, out = k.inputs[0], k.outputs[0]
    diagonal = op.opdef.attr_kwargs(op)["k"]
    rank = len(shape_of(x))
    t = element_of(x)
    with k.loops(k.sizes(out), _names(rank)) as ivs:
        row, column = ivs[-2], ivs[-1]
        shifted = loop.add(row, k.index(diagonal)) if diagonal else row
        keep = loop.cmp(column, shifted, predicate="ge" if op.name == "graph.triu" else "le")
        zero = k.const(False if isinstance(t, IntegerType) and t.is_bool else 0, t)
        loop.store(loop.select(keep, loop.load(x, ivs), zero), out, ivs)


def _einsum_type(t: IntegerType | FloatType) -> IntegerType | FloatType:
    """Accumulate floats in at least f32 and integers in 64 bits (the result wraps the same); i1 stays."""
    if isinstance(t, IntegerType) and t.is_bool:
        return t
    return _sum_type(t)


@lowering("graph.einsum")
def lower_einsum(op: Operation, k: Kernel) -> None:
    """A loop per output letter (``o_<letter>``); inside, an accumulator folds the product of the operands
    over a loop per contracted letter (``r_<letter>``; sum and product are or and and for i1)."""
    out = k.outputs[0]
    subscripts, output = parse_equation(op.opdef.attr_kwargs(op)["equation"], len(k.inputs))
    sizes: dict[str, Value] = {}
    for sub, buffer in zip(subscripts, k.inputs):
        for axis, letter in enumerate(sub):
            sizes.setdefault(letter, k.size(buffer, axis))
    contracted = [letter for letter in sizes if letter not in output]
    t = element_of(out)
    assert isinstance(t, (IntegerType, FloatType))
    acc_t = _einsum_type(t)
    is_bool = isinstance(t, IntegerType) and t.is_bool
    times, plus = (loop.and_, loop.or_) if is_bool else (loop.mul, loop.add)
    with k.loops([sizes[c] for c in output], [f"o_{c}" for c in output]) as ivs:
        letters = dict(zip(output, ivs))

        def term(inner: list[Value]) -> Value:
            letters.update(zip(contracted, inner))
            factors = [convert(loop.load(b, [letters[c] for c in sub]), acc_t) for sub, b in zip(subscripts, k.inputs)]
            product = factors[0]
            for f in factors[1:]:
                product = times(product, f)
            return product

        total = accumulate(
            k,
            acc_t,
            k.const(False if is_bool else 0, acc_t),
            [sizes[c] for c in contracted],
            [f"r_{c}" for c in contracted],
            term,
            plus,
        )
        loop.store(convert(total, t), out, ivs)


@lowering("graph.random")
def lower_random(op: Operation, k: Kernel) -> None:
    """The counter-based generator of tensorium/ir/dialects/graph/rng.py, element by element in i64 (every
    intermediate stays below 2**48), then Box-Muller in f64 for normal draws. With a ``key`` operand the
    seed is mixed with its two words once, before the loops."""
    out = k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    normal = attrs["distribution"] == "normal"
    seed: Value = k.const(attrs["seed"], i64)
    if k.inputs:
        for word in range(2):
            seed = _mix(k, seed, loop.load(k.inputs[0], [k.index(word)]))
    rank = len(shape_of(out))
    with k.loops(k.sizes(out), _names(rank)) as ivs:
        flat = convert(linearize(ivs, k.sizes(out), k.index(0)), i64) if rank else k.const(0, i64)
        first = _uniform(k, seed, 0, flat)
        if normal:
            radius = loop.sqrt(loop.mul(k.const(-2.0, f64), loop.log(first)))
            angle = loop.mul(k.const(2.0 * math.pi, f64), _uniform(k, seed, 1, flat))
            first = loop.mul(radius, loop.cos(angle))
        loop.store(convert(first, element_of(out)), out, ivs)


def _mix(k: Kernel, seed: Value, word: Value) -> Value:
    """rng.mix: the word added to the seed (both reduced mod 2**31 - 1), a Lehmer step, the xor shift."""
    modulus = k.const(rng.MODULUS, i64)
    scaled = loop.mul(loop.rem(convert(word, i64), modulus), k.const(rng.KEY_SCALE, i64))
    x = loop.rem(loop.add(loop.add(loop.rem(seed, modulus), scaled), k.const(1, i64)), modulus)
    x = loop.rem(loop.mul(x, k.const(rng.MULTIPLIER, i64)), modulus)
    return loop.xor(x, loop.div(x, k.const(rng.SHIFT, i64)))


def _uniform(k: Kernel, seed: Value, stream: int, index: Value) -> Value:
    """(hash(seed, stream, index) + 0.5) / (2**31 - 1) in f64 (``seed`` an i64 value)."""
    modulus = k.const(rng.MODULUS, i64)
    offset = rng.start_offset(0, stream)
    start = loop.add(loop.mul(loop.rem(seed, modulus), k.const(rng.SEED_SCALE, i64)), k.const(offset, i64))
    x = loop.rem(loop.add(loop.mul(index, k.const(rng.INDEX_SCALE, i64)), start), modulus)
    for _ in range(rng.ROUNDS):
        x = loop.rem(loop.mul(x, k.const(rng.MULTIPLIER, i64)), modulus)
        x = loop.xor(x, loop.div(x, k.const(rng.SHIFT, i64)))
    return loop.div(loop.add(convert(x, f64), k.const(0.5, f64)), k.const(float(rng.MODULUS), f64))
