"""Lowering reductions, softmax and normalizations: outer loops over kept dims, a local accumulator inside.

Each kept position owns a rank-0 ``local`` accumulator allocated inside the outer loops, so the outer
loops stay independent (parallelizable) and the inner ones carry the accumulation. Accumulators follow
the references: f16 and bf16 accumulate in f32, integers in 64 bits (then wrap to the result type).
Max and min, which have no identity, start from the first reduced element.
f32 reductions whose innermost reduced dim is the fastest one run on partial accumulators (a vector loop
over blocks of the dim, then a combination of the partials and the tail): a reassociated order, as
numpy's pairwise sums and every BLAS use. Passes that write the result are vectorized likewise.

How many partials is a point of a search space (:mod:`tensorium.lowering.space`): the families
``reduce``, ``softmax`` and ``norm`` (layer, RMS and batch norms) have the knobs ``vector`` (partials and
vector loops on or off) and ``unroll`` (vector registers per step), so a step covers the target's lanes
of the compute type times ``unroll``. The default rule (vectors on, one register) reproduces one AVX-512
register of 16 f32 partials, and gives 8 on AVX2 and 4 on SSE.
Loop names: ``i0, i1, ...`` for kept dims, ``r0, r1, ...`` for reduced dims; softmax and the norms run
several passes over the reduced dims, named by pass (``max_r0``, ``sum_r0``, ``out_r0``, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from ..ir.core import Block, Operation, Value
from ..ir.dialects import loop
from ..ir.shapes import normalize_axes, normalize_axis
from ..ir.types import BufferType, IntegerType, ScalarType, TensorType, f32, i64
from ..targets import Target
from .kernel import Kernel, compute_type, convert, element_of, lowering, shape_of
from .schedule import element_bits
from .space import Config, Family, Knob, Setting, Space, register_family

Combine = Callable[[Value, Value], Value]

UNROLLS = (1, 2, 4)
"""Vector registers of partials (or of results) per step of a vectorized pass."""

VECTOR = Knob("vector", (True, False), "fold the fastest dim on vector lanes of partial accumulators")
UNROLL = Knob("unroll", UNROLLS, "vector registers per step: partials = the target's lanes x unroll")


def _one_unroll_without_vectors(values: Mapping[str, Setting]) -> bool:
    """Scalar loops have no registers to unroll over: one point for them, not one per ``unroll``."""
    return bool(values["vector"]) or values["unroll"] == UNROLLS[0]


def vector_space(family: str) -> Space:
    """The ``vector`` x ``unroll`` space of a reduction-like kernel of ``family``."""
    return Space(family, (VECTOR, UNROLL), _one_unroll_without_vectors)


def default_vector_config(op: Operation, target: Target, space: Space) -> Config:
    """Vectors on, one register of partials per step (16 f32 on AVX-512, 8 on AVX2): what the kernels did
    before they had knobs; ``unroll`` only for the knobs the space has (batch norm has no ``vector``)."""
    chosen: dict[str, Setting] = {"vector": True, "unroll": 1}
    return Config(space.family, tuple((knob.name, chosen[knob.name]) for knob in space.knobs))


def vector_width(k: Kernel, family: str, t: ScalarType) -> int:
    """Elements per step of the vector loops of a ``family`` kernel computing in ``t``: the target's lanes
    times the config's ``unroll`` (the default rule's when the kernel has no ``family`` config); 0 when the
    config turns vectors off. Narrower types count as f32, the type their arithmetic widens to."""
    if not k.knob(family, "vector", True):
        return 0
    return k.target.lanes(max(32, element_bits(t))) * int(k.knob(family, "unroll", 1))


def _accumulator_type(name: str, t: ScalarType) -> ScalarType:
    if name in ("graph.reduce_max", "graph.reduce_min"):
        return t
    if isinstance(t, IntegerType):
        return i64 if t.signed else IntegerType(64, False)
    return compute_type(t)


_REDUCTIONS = ("sum", "mean", "prod", "max", "min")


def _identity(name: str) -> int:
    return 1 if name == "graph.reduce_prod" else 0


def _combine(name: str, t: ScalarType) -> Combine:
    is_bool = isinstance(t, IntegerType) and t.is_bool
    table: dict[str, Combine] = {
        "graph.reduce_sum": loop.add,
        "graph.reduce_mean": loop.add,
        "graph.reduce_prod": loop.mul,
        "graph.reduce_max": loop.or_ if is_bool else loop.max,
        "graph.reduce_min": loop.and_ if is_bool else loop.min,
    }
    return table[name]


def accumulate(
    k: Kernel,
    t: ScalarType,
    init: Value,
    bounds: Sequence[Value],
    names: Sequence[str],
    term: Callable[[list[Value]], Value],
    combine: Combine,
    lanes: int = 0,
) -> Value:
    """Fold ``term(ivs)`` over the nest ``bounds`` into a new local accumulator from ``init``; its final value.

    With ``lanes`` (f32 only) the innermost bound is folded on that many partial accumulators, each
    starting from ``init``, so ``init`` must be an identity of ``combine`` or absorbed by it (max of a
    first element); every caller's is.
    """
    (value,) = accumulate_together(k, t, [init], bounds, names, lambda ivs: [term(ivs)], [combine], lanes)
    return value


def accumulate_together(
    k: Kernel,
    t: ScalarType,
    inits: Sequence[Value],
    bounds: Sequence[Value],
    names: Sequence[str],
    terms: Callable[[list[Value]], Sequence[Value]],
    combines: Sequence[Combine],
    lanes: int = 0,
) -> list[Value]:
    """:func:`accumulate` of several terms in one pass over the nest: ``terms(ivs)`` gives one value per
    accumulator, each folded by its ``combines`` entry from its ``inits`` entry; their final values."""
    accs = [loop.alloc(type=BufferType((), t, "local")) for _ in inits]
    for acc, init in zip(accs, inits):
        loop.store(init, acc)

    def fold(targets: Sequence[Value], indices: list[Value], values: Sequence[Value]) -> None:
        for target, combine, value in zip(targets, combines, values):
            loop.store(combine(loop.load(target, indices), value), target, indices)

    if lanes > 1 and t == f32 and bounds:
        *outer_bounds, last = bounds
        partials = [loop.alloc(type=BufferType((lanes,), t, "local")) for _ in inits]
        base = names[-1]
        with loop.for_(
            k.index(0), k.index(lanes), k.index(1), kind="vectorize", factor=lanes, name=f"{base}_init"
        ) as lane:
            for partial, init in zip(partials, inits):
                loop.store(init, partial, [lane])
        with k.prologue():
            blocked = loop.mul(loop.div(last, k.index(lanes)), k.index(lanes))
        with k.loops(outer_bounds, names[:-1]) as ivs:
            with loop.for_(k.index(0), blocked, k.index(lanes), name=f"{base}_b") as block:
                with loop.for_(
                    k.index(0), k.index(lanes), k.index(1), kind="vectorize", factor=lanes, name=f"{base}_v"
                ) as lane:
                    fold(partials, [lane], terms([*ivs, loop.add(block, lane)]))
            with loop.for_(blocked, last, k.index(1), name=f"{base}_t") as tail:
                fold(accs, [], terms([*ivs, tail]))
        # The lanes combine as a tree (lanes / 2 pairs, then half of those...): log2(lanes) dependent steps
        # instead of lanes, which for short rows (attention's 128 keys: 8 vectors) was a third of the time.
        for partial, combine in zip(partials, combines):
            width = lanes // 2
            while width >= 1 and lanes & (lanes - 1) == 0:
                for n in range(width):
                    pair = [loop.load(partial, [k.index(n)]), loop.load(partial, [k.index(n + width)])]
                    loop.store(combine(*pair), partial, [k.index(n)])
                width //= 2
        count = 1 if lanes & (lanes - 1) == 0 else lanes
        with loop.for_(k.index(0), k.index(count), k.index(1), kind="unroll", name=f"{base}_lanes") as lane:
            fold(accs, [], [loop.load(partial, [lane]) for partial in partials])
        return [loop.load(acc) for acc in accs]
    with k.loops(bounds, names) as ivs:
        fold(accs, [], terms(ivs))
    return [loop.load(acc) for acc in accs]


@contextmanager
def vector_loop(k: Kernel, bound: Value, name: str, lanes: int) -> Iterator[Value]:
    """``for name in [0, bound)``, vectorized by ``lanes`` when it is more than 1; yields the induction variable."""
    kind, factor = ("vectorize", lanes) if lanes > 1 else ("serial", None)
    with loop.for_(k.index(0), bound, k.index(1), kind=kind, factor=factor, name=name) as iv:
        yield iv


def _copy(k: Kernel) -> None:
    src, dst = k.inputs[0], k.outputs[0]
    with k.loops(k.sizes(dst), [f"i{a}" for a in range(len(shape_of(dst)))]) as ivs:
        loop.store(loop.load(src, ivs), dst, ivs)


@lowering("graph.reduce_sum", "graph.reduce_mean", "graph.reduce_prod", "graph.reduce_max", "graph.reduce_min")
def lower_reduction(op: Operation, k: Kernel) -> None:
    """Reduce over ``axes`` (keepdims or not) with a local accumulator per kept position."""
    x, out = k.inputs[0], k.outputs[0]
    rank = len(shape_of(x))
    attrs = op.opdef.attr_kwargs(op)
    axes = normalize_axes(attrs["axes"], rank)
    if not axes:
        _copy(k)
        return
    keepdims = attrs["keepdims"]
    t = element_of(x)
    acc_t = _accumulator_type(op.name, t)
    kept = [a for a in range(rank) if a not in axes]
    sizes = k.sizes(x)
    with k.loops([sizes[a] for a in kept], [f"i{n}" for n in range(len(kept))]) as outer:
        position = dict(zip(kept, outer))

        def term(inner: list[Value]) -> Value:
            position.update(zip(axes, inner))
            return convert(loop.load(x, [position[a] for a in range(rank)]), acc_t)

        if op.name in ("graph.reduce_max", "graph.reduce_min"):
            # No identity: start from the first reduced element, after checking that a reduced dim of a
            # run-time size is not empty (an error, as the graph op's).
            k.check_not_empty([sizes[a] for a in axes], "reduces a dimension that is empty at run time")
            position.update((a, k.index(0)) for a in axes)
            init = loop.load(x, [position[a] for a in range(rank)], loc=op.loc)
        else:
            init = k.const(_identity(op.name), acc_t)
        total = accumulate(
            k,
            acc_t,
            init,
            [sizes[a] for a in axes],
            [f"r{n}" for n in range(len(axes))],
            term,
            _combine(op.name, acc_t),
            vector_width(k, "reduce", acc_t) if axes[-1] == rank - 1 else 0,
        )
        if op.name == "graph.reduce_mean":
            count = k.product([sizes[a] for a in axes])
            total = loop.div(total, convert(count, acc_t))
        where = [outer[kept.index(a)] if a in kept else k.index(0) for a in range(rank)] if keepdims else outer
        loop.store(convert(total, element_of(out)), out, where)


def _outer_inner(k: Kernel, x: Value, first: int) -> tuple[list[Value], list[Value]]:
    """The sizes of dims before ``first`` and from ``first`` on."""
    sizes = k.sizes(x)
    return sizes[:first], sizes[first:]


@lowering("graph.softmax", "graph.log_softmax")
def lower_softmax(op: Operation, k: Kernel) -> None:
    """Three passes along ``axis``: the maximum, the sum of exp(x - max), then the result, in at least f32."""
    axis = op.opdef.attr_kwargs(op)["axis"]
    emit_softmax(k, k.inputs[0], k.outputs[0], axis, log=op.name == "graph.log_softmax")


def emit_softmax(k: Kernel, x: Value, out: Value, axis: int, log: bool = False, parallel: bool = False) -> None:
    """(log) softmax of buffer ``x`` along ``axis`` into ``out``, which may be ``x`` itself: a pass for the maximum,
    one for the sum of the exps (which stores each exp into ``out`` when ``out`` has the compute type: a row's
    elements are in cache for the last pass), and one dividing by the sum (or computing ``x - max - log(sum)``).
    ``parallel`` runs the first loop with more than one trip
    over the kept dims in parallel (the lowerings leave that to the default schedule)."""
    rank = len(shape_of(x))
    axis = normalize_axis(axis, rank)
    t = element_of(x)
    acc_t = compute_type(t)
    sizes = k.sizes(x)
    kept = [a for a in range(rank) if a != axis]
    shape = shape_of(x)
    with k.loops([sizes[a] for a in kept], [f"i{n}" for n in range(len(kept))]) as outer:
        if parallel:
            moving = [iv for a, iv in zip(kept, outer) if shape[a] != 1]
            if moving:
                block = moving[0].owner
                assert isinstance(block, Block) and block.parent is not None and block.parent.parent is not None
                block.parent.parent.attributes["kind"] = "parallel"

        def at(j: Value) -> list[Value]:
            position = dict(zip(kept, outer))
            position[axis] = j
            return [position[a] for a in range(rank)]

        def shifted(ivs: list[Value], top: Value) -> Value:
            return loop.sub(convert(loop.load(x, at(ivs[0])), acc_t), top)  # type: ignore[no-any-return]

        def element(ivs: list[Value]) -> Value:
            return convert(loop.load(x, at(ivs[0])), acc_t)

        lanes = vector_width(k, "softmax", acc_t) if axis == rank - 1 else 0
        top = accumulate(k, acc_t, k.const(float("-inf"), acc_t), [sizes[axis]], ["max_r0"], element, loop.max, lanes)
        # Softmax into an output of the compute type keeps each exp in the output, which the last pass divides
        # (one exp per element instead of two); log-softmax and narrower outputs compute the exp again there.
        keep = not log and element_of(out) == acc_t

        def exp(ivs: list[Value]) -> Value:
            value = loop.exp(shifted(ivs, top))
            if keep:
                loop.store(value, out, at(ivs[0]))
            return value  # type: ignore[no-any-return]

        total = accumulate(k, acc_t, k.const(0.0, acc_t), [sizes[axis]], ["sum_r0"], exp, loop.add, lanes)
        reciprocal = loop.div(k.const(1.0, acc_t), total) if keep else total
        with vector_loop(k, sizes[axis], "out_r0", lanes) as j:
            if keep:  # times the reciprocal of the sum, computed once per row (a division per element was slow)
                y = loop.mul(loop.load(out, at(j)), reciprocal)
            else:
                s = shifted([j], top)
                y = loop.sub(s, loop.log(total)) if log else loop.div(loop.exp(s), total)
            loop.store(convert(y, element_of(out)), out, at(j))


@lowering("graph.layer_norm", "graph.rms_norm")
def lower_norm(op: Operation, k: Kernel) -> None:
    """Normalize over dims ``axis..rank-1``: a mean pass (layer_norm), a pass summing the residuals around it and
    their squares (which correct the mean's rounding and give the variance; rms_norm: the mean square), then
    scale and shift."""
    grouped = op.opdef.group_operands(k.inputs)
    x, weight = grouped[0], grouped[1]
    bias = grouped[2] if op.name == "graph.layer_norm" else None
    out = k.outputs[0]
    rank = len(shape_of(x))
    attrs = op.opdef.attr_kwargs(op)
    first = normalize_axis(attrs["axis"], rank)
    acc_t = compute_type(element_of(x))
    outer_sizes, inner_sizes = _outer_inner(k, x, first)
    count = convert(k.product(inner_sizes), acc_t)
    zero = k.const(0.0, acc_t)
    inner = len(inner_sizes)
    lanes = vector_width(k, "norm", acc_t)
    with k.loops(outer_sizes, [f"i{n}" for n in range(first)]) as outer:

        def load(ivs: list[Value]) -> Value:
            return convert(loop.load(x, outer + ivs), acc_t)

        var_names = [f"var_r{n}" for n in range(inner)]
        if op.name == "graph.layer_norm":
            rough = loop.div(
                accumulate(k, acc_t, zero, inner_sizes, [f"mean_r{n}" for n in range(inner)], load, loop.add, lanes),
                count,
            )

            def residuals(ivs: list[Value]) -> list[Value]:
                d = loop.sub(load(ivs), rough)
                return [d, loop.mul(d, d)]

            # One pass sums the residuals around the first mean and their squares: the first corrects the mean's
            # rounding (a row of equal values has its value as mean exactly, and normalizes to 0, whatever order
            # the sum took), and the variance is the mean square less the correction's square (kept >= 0).
            fix, squares = accumulate_together(
                k, acc_t, [zero, zero], inner_sizes, var_names, residuals, [loop.add, loop.add], lanes
            )
            shift = loop.div(fix, count)
            mean = loop.add(rough, shift)
            var = loop.sub(loop.div(squares, count), loop.mul(shift, shift))
            var = loop.select(loop.cmp(var, zero, predicate="lt"), zero, var)
        else:
            mean = zero

            def square(ivs: list[Value]) -> Value:
                x = load(ivs)
                return loop.mul(x, x)  # type: ignore[no-any-return]

            var = loop.div(accumulate(k, acc_t, zero, inner_sizes, var_names, square, loop.add, lanes), count)
        scale = loop.sqrt(loop.add(var, k.const(attrs["eps"], acc_t)))
        with k.loops(inner_sizes[:-1], [f"out_r{n}" for n in range(inner - 1)]) as ivs_outer:
            with vector_loop(k, inner_sizes[-1], f"out_r{inner - 1}", lanes) as last:
                ivs = [*ivs_outer, last]
                y = loop.div(loop.sub(load(ivs), mean), scale)
                if weight is not None:
                    y = loop.mul(y, convert(loop.load(weight, ivs), acc_t))
                if bias is not None:
                    y = loop.add(y, convert(loop.load(bias, ivs), acc_t))
                loop.store(convert(y, element_of(out)), out, outer + ivs)


def _rank(value: Value) -> int:
    t = value.type
    assert isinstance(t, TensorType)
    return len(t.shape)


def _reduce_space(op: Operation, target: Target) -> Space | None:
    """Knobs for f32 accumulations along the fastest dim; other reductions are plain nests."""
    rank = _rank(op.operands[0])
    axes = normalize_axes(op.opdef.attr_kwargs(op)["axes"], rank)
    t = op.operands[0].type
    assert isinstance(t, TensorType)
    if not axes or axes[-1] != rank - 1 or _accumulator_type(op.name, t.element) != f32:
        return None
    return vector_space("reduce")


def _softmax_space(op: Operation, target: Target) -> Space | None:
    """Knobs for a softmax along the fastest dim (its passes are vector loops)."""
    rank = _rank(op.operands[0])
    return vector_space("softmax") if normalize_axis(op.opdef.attr_kwargs(op)["axis"], rank) == rank - 1 else None


def _norm_space(op: Operation, target: Target) -> Space:
    """Layer and RMS norms reduce over trailing dims (``vector`` x ``unroll``); batch norm is one elementwise
    nest, always on vectors, whose width in registers is ``unroll``."""
    if op.name == "graph.batch_norm":
        return Space("norm", (UNROLL,))
    return vector_space("norm")


register_family(Family("reduce", tuple(f"graph.reduce_{r}" for r in _REDUCTIONS), _reduce_space, default_vector_config))
register_family(Family("softmax", ("graph.softmax", "graph.log_softmax"), _softmax_space, default_vector_config))
register_family(
    Family("norm", ("graph.layer_norm", "graph.rms_norm", "graph.batch_norm"), _norm_space, default_vector_config)
)
