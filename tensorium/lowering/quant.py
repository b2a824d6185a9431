"""Lowering the quant dialect's packed k-bit matmul: the ``qgemv`` kernel family.

``quant.matmul_packed`` (weights in the ``interleaved`` layout: ``lanes`` rows side by side, 32 k-bit codes
of a row per ``k`` words) lowers to a matrix-vector kernel for any k in 1..8 whose weights stay packed until
they are in registers: per block of 32 codes it loads ``k`` vectors of words (one word per row, ``lanes``
rows per vector), and for each code ``j`` of the block masks its bits in place (``word & (mask << s)``,
``s = j k mod 32``), converts that to float (exact: it has at most k significant bits) and multiplies it by
the activation pre-scaled by ``2**-s``, so that no shift is needed; a code that straddles two words adds
its high part times ``2**32``. Zero points are folded through per-group activation sums, as llama.cpp does:
``sum_j s (q_j - z) x_j = s (sum_j q_j x_j - z sum_j x_j)``, one multiply-add per group and row.

Knobs (:func:`qgemv_space`): ``mr``, the rows of activations each decoded weight vector feeds (1 for the
batch-1 decode GEMV; more amortize the unpacking over a small batch), and ``chains``, the independent
accumulators per row that the 32 codes of a block take turns on (one chain would make every block wait on 32
dependent multiply-adds). The default rule: ``mr = 1`` for one row, else up to 4; ``chains = 8 / mr`` (at
least 1), enough multiply-adds in flight to cover their latency on two FMA pipes.
"""

from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.types import DYN, BufferType, IntegerType, f32
from ..targets import Target
from .kernel import Kernel, delinearize, element_of, lowering, lowering_error, shape_of
from .linalg import multiply_add, vector_columns
from .space import Config, Family, Knob, Space, register_family

BLOCK = 32
"""Codes per block: 32 k-bit codes are exactly k 32-bit words."""
MR_VALUES = (1, 2, 4, 8)
CHAIN_VALUES = (1, 2, 4, 8)
IN_FLIGHT = 8
"""Independent multiply-adds the default rule keeps in flight per lane vector (latency 4 x 2 FMA pipes)."""
U32 = IntegerType(32, False)


def _rows(op: Operation) -> int | None:
    """The static number of activation rows (the product of the input's leading dims), else None."""
    shape = op.operands[0].type.shape  # type: ignore[attr-defined]
    total = 1
    for d in shape[:-1]:
        if not isinstance(d, int):
            return None
        total *= d
    return total


def qgemv_space(op: Operation, target: Target) -> Space:
    """The ``qgemv`` points for ``op``: ``mr`` in 1, 2, 4, 8 (at most the rows, when they are known) and
    ``chains`` in 1, 2, 4, 8."""
    rows = _rows(op)
    values = tuple(v for v in MR_VALUES if rows is None or v <= max(rows, 1))
    return Space(
        "qgemv",
        (
            Knob("mr", values, "activation rows per decoded weight vector"),
            Knob("chains", CHAIN_VALUES, "independent accumulators per row within a block"),
        ),
    )


def qgemv_default(op: Operation, target: Target, space: Space) -> Config:
    """``mr = 1`` for one activation row (decode), else 4 (or the most the space allows); ``chains = 8 / mr``."""
    rows = _rows(op)
    legal = [int(v) for v in space.knobs[0].values]
    mr = 1 if rows == 1 else max(v for v in legal if v <= 4)
    return Config("qgemv", (("mr", mr), ("chains", max(1, IN_FLIGHT // mr))))


register_family(Family("qgemv", ("quant.matmul_packed",), qgemv_space, qgemv_default))


@lowering("quant.matmul_packed")
def lower_matmul_packed(op: Operation, k: Kernel) -> None:
    """``out[m, n] = sum_g scale[g, n] (sum_{kk in g} q[n, kk] x[m, kk] - zero[g, n] sum_{kk in g} x[m, kk])``."""
    x, packed, scale, zero = k.inputs
    if element_of(x) != f32:
        raise lowering_error(op, "the packed k-bit kernel takes f32 activations")
    attrs = op.opdef.attr_kwargs(op)
    bits, group, lanes = int(attrs["bits"]), int(attrs["group"]), int(attrs["lanes"])
    mr = int(k.knob("qgemv", "mr", 1))
    chains = int(k.knob("qgemv", "chains", IN_FLIGHT))
    out = k.outputs[0]
    lead = k.sizes(x)[:-1]
    rows = k.product(lead)
    depth = int(shape_of(x)[-1])  # type: ignore[arg-type]
    groups = depth // group
    scaled, sums = _prepare(k, x, lead, rows, depth, bits, group)
    panels = k.size(packed, 0)
    cols = int(attrs["cols"])
    last_row = loop.sub(rows, k.index(1)) if mr > 1 else None
    with loop.for_(k.index(0), panels, k.index(1), kind="parallel", name="nb") as nb:
        n0 = loop.mul(nb, k.index(lanes))
        with loop.for_(k.index(0), _ceil(k, rows, mr), k.index(1), name="mb") as mb:
            first = loop.mul(mb, k.index(mr))
            ms = [first] + [loop.min(loop.add(first, k.index(r)), last_row) for r in range(1, mr)]
            acc = _zeros(k, mr, lanes, "acc")
            with loop.for_(k.index(0), k.index(groups), k.index(1), name="g") as g:
                partial = _zeros(k, mr * chains, lanes, "p")
                start = loop.mul(g, k.index(group // BLOCK))
                with loop.for_(start, loop.add(start, k.index(group // BLOCK)), k.index(1), name="kb") as kb:
                    _block(k, packed, scaled, partial, nb, kb, ms, bits, lanes, chains)
                with _lanes(k, lanes) as lane:
                    n = loop.add(n0, lane)
                    s, z = loop.load(scale, [g, n]), loop.load(zero, [g, n])
                    for r, m in enumerate(ms):
                        dot = loop.load(partial, [k.index(r * chains), lane])
                        for c in range(1, chains):
                            dot = loop.add(dot, loop.load(partial, [k.index(r * chains + c), lane]))
                        corrected = multiply_add(k, loop.neg(z), loop.load(sums, [m, g]), dot)
                        loop.store(
                            multiply_add(k, s, corrected, loop.load(acc, [k.index(r), lane])), acc, [k.index(r), lane]
                        )
            width = loop.min(k.index(lanes), loop.sub(k.index(cols), n0))
            for r, m in enumerate(ms):
                with vector_columns(k, width, lanes, f"o{r}") as lane:
                    value = loop.load(acc, [k.index(r), lane])
                    loop.store(value, out, [*delinearize(m, lead), loop.add(n0, lane)])


def _ceil(k: Kernel, size: Value, by: int) -> Value:
    with k.prologue():
        return loop.div(loop.add(size, k.index(by - 1)), k.index(by))  # type: ignore[no-any-return]


def _lanes(k: Kernel, lanes: int):  # type: ignore[no-untyped-def]
    return loop.for_(k.index(0), k.index(lanes), k.index(1), kind="vectorize", factor=lanes, name="l")


def _zeros(k: Kernel, mr: int, lanes: int, name: str) -> Value:
    """A local [mr, lanes] f32 accumulator set to zero."""
    acc = loop.alloc(type=BufferType((mr, lanes), f32, "local"))
    with _lanes(k, lanes) as lane:
        for r in range(mr):
            loop.store(k.const(0.0, f32), acc, [k.index(r), lane])
    return acc  # type: ignore[no-any-return]


def _prepare(
    k: Kernel, x: Value, lead: list[Value], rows: Value, depth: int, bits: int, group: int
) -> tuple[Value, Value]:
    """Once per call: the activations pre-scaled by ``2**-s`` for the bit offset ``s`` of their code in its
    word, [rows, K], and their sums per group, [rows, K / group]."""
    scaled = loop.alloc(rows, type=BufferType((DYN, depth), f32, "global"))
    sums = loop.alloc(rows, type=BufferType((DYN, depth // group), f32, "global"))
    with loop.for_(k.index(0), rows, k.index(1), kind="parallel", name="pm") as m:
        at = delinearize(m, lead)
        with loop.for_(k.index(0), k.index(depth // group), k.index(1), name="pg") as g:
            total = loop.alloc(type=BufferType((), f32, "local"))
            loop.store(k.const(0.0, f32), total)
            start = loop.mul(g, k.index(group))
            with loop.for_(k.index(0), k.index(group // BLOCK), k.index(1), name="pb") as b:
                base = loop.add(start, loop.mul(b, k.index(BLOCK)))
                for j in range(BLOCK):
                    kk = loop.add(base, k.index(j))
                    value = loop.load(x, [*at, kk])
                    loop.store(loop.add(loop.load(total), value), total)
                    loop.store(loop.mul(value, k.const(2.0 ** -((j * bits) % 32), f32)), scaled, [m, kk])
            loop.store(loop.load(total), sums, [m, g])
    return scaled, sums


def _block(
    k: Kernel,
    packed: Value,
    scaled: Value,
    partial: Value,
    nb: Value,
    kb: Value,
    ms: list[Value],
    bits: int,
    lanes: int,
    chains: int,
) -> None:
    """``partial[r chains + j % chains, lane] += q[row, 32 kb + j] * x[m_r, 32 kb + j]`` for the ``lanes`` rows of
    panel ``nb``."""
    base = loop.mul(kb, k.index(BLOCK))
    xs = [[loop.load(scaled, [m, loop.add(base, k.index(j))]) for j in range(BLOCK)] for m in ms]
    with _lanes(k, lanes) as lane:
        words = [loop.load(packed, [nb, kb, k.index(w), lane]) for w in range(bits)]
        slots = len(ms) * chains
        sums = [loop.load(partial, [k.index(i), lane]) for i in range(slots)]
        for j in range(BLOCK):
            code = _code(k, words, j, bits)
            for r in range(len(ms)):
                i = r * chains + j % chains
                sums[i] = multiply_add(k, code, xs[r][j], sums[i])
        for i, total in enumerate(sums):
            loop.store(total, partial, [k.index(i), lane])


def _code(k: Kernel, words: list[Value], j: int, bits: int) -> Value:
    """Code ``j`` of a block times ``2**s`` (``s`` its bit offset in its word), as f32, without shifting."""
    offset = j * bits
    word, shift = divmod(offset, 32)
    mask = (1 << bits) - 1
    low = loop.cast(loop.and_(words[word], k.const((mask << shift) & 0xFFFFFFFF, U32)), dtype=f32)
    if shift + bits <= 32:
        return low  # type: ignore[no-any-return]
    high = loop.cast(loop.and_(words[word + 1], k.const(mask >> (32 - shift), U32)), dtype=f32)
    return multiply_add(k, high, k.const(2.0**32, f32), low)
