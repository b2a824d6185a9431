"""Lowering the quant dialect's packed k-bit matmul: the ``qgemv`` kernel family.

``quant.matmul_packed`` (weights in the ``interleaved`` layout: ``lanes`` rows side by side, 32 k-bit codes
of a row per ``k`` words) lowers to a matrix-vector kernel for any k in 1..8 whose weights stay packed until
they are in registers: per block of 32 codes it loads ``k`` vectors of words (one word per row, ``lanes``
rows per vector), and for each code ``j`` of the block masks its bits in place (``word & (mask << s)``,
``s = j k mod 32``), converts that to float (exact: it has at most k significant bits) and multiplies it by
the activation pre-scaled by ``2**-s``, so that no shift is needed; a code that straddles two words adds
its high part times ``2**32``. Zero points are folded through per-group activation sums, as llama.cpp does:
``sum_j s (q_j - z) x_j = s (sum_j q_j x_j - z sum_j x_j)``, one multiply-add per group and row.

That is the ``float`` path; the ``int`` path (:mod:`.quant_int`) quantizes the activations to 8 bits per block
once per call and takes integer dot products instead, and the ``lut`` path (:mod:`.quant_lut`, k <= 3) forms the
same integer dots from table lookups. A path is a :class:`QgemvPath` in :data:`PATHS`: how
it prepares the activations once per call, how it adds one block of 32 codes into per-row partial sums, and
what a block costs on a target.

Knobs (:func:`qgemv_space`): ``path`` (a name in :data:`PATHS`); ``mr``, the rows of activations each decoded
weight vector feeds (1 for the batch-1 decode GEMV; more amortize the unpacking over a small batch); and
``chains``, the independent accumulators per row that a block's products take turns on (one chain would make
every block wait on 32 dependent multiply-adds). The default rule: ``mr = 1`` for one row, else up to 4; the
path whose estimated vector operations per block (:meth:`QgemvPath.cost`) are fewest on the target; its
``chains`` (:meth:`QgemvPath.default_chains`): ``8 / mr`` (at least 1) for the float path, enough multiply-adds
in flight to cover their latency on two FMA pipes; at most 2 for the int path, whose blocks are independent
integer sums (each chain costs a zeroed register and an add per block).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.quant import layouts
from ..ir.types import DYN, BufferType, IntegerType, ScalarType, f32
from ..targets import Target
from ..targets.x86 import software_prefetch_pays
from .kernel import Kernel, delinearize, element_of, lowering, lowering_error, shape_of
from .linalg import multiply_add, vector_columns
from .space import Config, Family, Knob, Space, register_family

BLOCK = 32
"""Codes per block: 32 k-bit codes are exactly k 32-bit words."""
MR_VALUES = (1, 2, 4, 8)
CHAIN_VALUES = (1, 2, 4, 8)
PREFETCH_VALUES = (0, 2048, 4096, 8192)
"""Bytes of packed weights ahead of the block in use that the kernel asks the CPU to fetch (0: none)."""
PREFETCH_DEFAULT = 4096
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


class QgemvPath:
    """How the ``qgemv`` kernel computes one block of 32 codes against the activations (a subclass per path)."""

    def supports(self, bits: int) -> bool:
        """Whether the path takes ``bits``-bit codes (a value of the ``path`` knob only where it does)."""
        return True

    def prepare(
        self, k: Kernel, x: Value, lead: list[Value], rows: Value, bits: int, group: int, layout: str
    ) -> list[Value]:
        """Once per call: buffers derived from the activations ``x`` ([rows, K] once ``lead`` is linearized) for
        weights in block layout ``layout``, the last of them ``[rows, K / group]``: what each group's zero point
        multiplies (``sum x`` over the group)."""
        raise NotImplementedError

    def slots(self, chains: int) -> int:
        """Partial sums per activation row that :meth:`block` adds into (summed at the end of each group)."""
        raise NotImplementedError

    def block(self, k: Kernel, step: BlockStep) -> None:
        """Add block ``step.kb`` of panel ``step.nb`` into ``step.partial[r slots + c][0, lane]`` for each row ``r``."""
        raise NotImplementedError

    def cost(self, target: Target, bits: int, mr: int, layout: str = "interleaved") -> float | None:
        """Estimated vector operations per block of 32 codes and ``lanes`` weight rows in block layout ``layout``;
        None where the target lacks what the path needs to be fast (it stays a legal point, never a default)."""
        raise NotImplementedError

    def default_chains(self, mr: int) -> int:
        """The default rule's ``chains`` for ``mr`` rows: :data:`IN_FLIGHT` multiply-adds in flight per lane vector."""
        return max(1, IN_FLIGHT // mr)


@dataclass(frozen=True)
class BlockStep:
    """What :meth:`QgemvPath.block` works on: the packed weight, the buffers :meth:`QgemvPath.prepare` made, the
    partial sums (one [1, lanes] buffer per row and slot: a lane loop that stores one buffer at one index list is
    what the explicit vectorizer takes), the panel ``nb``, the block ``kb``, the activation rows ``ms``, and the
    kernel's shape and block layout."""

    packed: Value
    prepared: list[Value]
    partial: list[Value]
    nb: Value
    kb: Value
    ms: list[Value]
    bits: int
    lanes: int
    chains: int
    layout: str = "interleaved"


PATHS: dict[str, QgemvPath] = {}
"""The ``path`` knob's values: each a way to compute a block (``float`` here, ``int`` in :mod:`.quant_int`, ``lut``
for 1 to 3 bits in :mod:`.quant_lut`)."""


def register_path(name: str, path: QgemvPath) -> None:
    """Make ``path`` a value of the ``qgemv`` family's ``path`` knob."""
    PATHS[name] = path


def qgemv_space(op: Operation, target: Target) -> Space:
    """The ``qgemv`` points for ``op``: ``path`` in :data:`PATHS` (those that take the op's width), ``mr`` in 1, 2,
    4, 8 (at most the rows, when they are known) and ``chains`` in 1, 2, 4, 8."""
    rows = _rows(op)
    bits = int(op.attr("bits"))
    paths = tuple(name for name, path in PATHS.items() if path.supports(bits))
    values = tuple(v for v in MR_VALUES if rows is None or v <= max(rows, 1))
    return Space(
        "qgemv",
        (
            Knob("path", paths, "float (unpack, scale, FMA), int (8-bit activations, integer dots), lut (1-3 bits)"),
            Knob("mr", values, "activation rows per decoded weight vector"),
            Knob("chains", CHAIN_VALUES, "independent accumulators per row within a block"),
            Knob("prefetch", PREFETCH_VALUES, "bytes of weights ahead to prefetch (0: leave it to the hardware)"),
        ),
    )


def qgemv_default(op: Operation, target: Target, space: Space) -> Config:
    """``mr = 1`` for one activation row (decode), else 4 (or the most the space allows); the path of least
    :meth:`QgemvPath.cost` on the target (float where no other has a cost) and its
    :meth:`QgemvPath.default_chains`; :data:`PREFETCH_DEFAULT` bytes of software prefetch unless the target's
    hardware prefetchers do better alone at this width (:func:`~tensorium.targets.x86.software_prefetch_pays`)."""
    rows = _rows(op)
    legal = [int(v) for v in space.knobs[1].values]
    mr = 1 if rows == 1 else max(v for v in legal if v <= 4)
    bits, layout = int(op.attr("bits")), str(op.attr("layout", "interleaved"))
    costs = {name: path.cost(target, bits, mr, layout) for name, path in PATHS.items() if path.supports(bits)}
    path = min((c, name) for name, c in costs.items() if c is not None)[1]
    prefetch = PREFETCH_DEFAULT if software_prefetch_pays(target.cpu, bits) else 0
    knobs = (("path", path), ("mr", mr), ("chains", PATHS[path].default_chains(mr)), ("prefetch", prefetch))
    return Config("qgemv", knobs)


register_family(Family("qgemv", ("quant.matmul_packed",), qgemv_space, qgemv_default))


def packed_layout(target: Target, bits: int) -> str:
    """The block layout (:data:`~tensorium.ir.dialects.quant.layouts.BLOCK_LAYOUTS`) that ``pack-quant`` stores
    ``bits``-bit weights in for ``target``: the one whose cheapest path costs least per block at ``mr = 1``
    (:meth:`QgemvPath.cost`), the ``interleaved`` stream on a tie. ``interleaved_shards`` wins at 3, 5, 6 and 7 bits
    on targets whose ``int`` path cuts codes out with shifts and masks (AVX2, AVX-512 without VBMI)."""
    best: dict[str, float] = {}
    for layout in layouts.BLOCK_LAYOUTS:
        costs = [path.cost(target, bits, 1, layout) for path in PATHS.values() if path.supports(bits)]
        best[layout] = min((c for c in costs if c is not None), default=float("inf"))
    return min(layouts.BLOCK_LAYOUTS, key=lambda layout: best[layout])


@lowering("quant.matmul_packed")
def lower_matmul_packed(op: Operation, k: Kernel) -> None:
    """``out[m, n] = sum_g scale[g, n] (sum_{kk in g} q[n, kk] x[m, kk] - zero[g, n] sum_{kk in g} x[m, kk])``,
    the inner sums computed by the config's path."""
    x, packed, scale, zero = k.inputs
    if element_of(x) != f32:
        raise lowering_error(op, "the packed k-bit kernel takes f32 activations")
    attrs = op.opdef.attr_kwargs(op)
    bits, group, lanes, layout = int(attrs["bits"]), int(attrs["group"]), int(attrs["lanes"]), str(attrs["layout"])
    path = PATHS[str(k.knob("qgemv", "path", "float"))]
    if not path.supports(int(attrs["bits"])):
        raise lowering_error(
            op, f"the qgemv path {k.knob('qgemv', 'path', 'float')!r} does not take {attrs['bits']}-bit codes"
        )
    mr = int(k.knob("qgemv", "mr", 1))
    chains = int(k.knob("qgemv", "chains", IN_FLIGHT))
    ahead = int(k.knob("qgemv", "prefetch", 0)) if k.target.kind == "cpu" else 0
    slots = path.slots(chains)
    out = k.outputs[0]
    lead = k.sizes(x)[:-1]
    rows = k.product(lead)
    depth = int(shape_of(x)[-1])  # type: ignore[arg-type]
    groups = depth // group
    prepared = path.prepare(k, x, lead, rows, bits, group, layout)
    sums = prepared[-1]
    panels = k.size(packed, 0)
    cols = int(attrs["cols"])
    last_row = loop.sub(rows, k.index(1)) if mr > 1 else None
    with loop.for_(k.index(0), panels, k.index(1), kind="parallel", name="nb") as nb:
        n0 = loop.mul(nb, k.index(lanes))
        with loop.for_(k.index(0), _ceil(k, rows, mr), k.index(1), name="mb") as mb:
            first = loop.mul(mb, k.index(mr))
            ms = [first] + [loop.min(loop.add(first, k.index(r)), last_row) for r in range(1, mr)]
            accs = [zeros(k, 1, lanes, f"acc{r}") for r in range(mr)]
            with loop.for_(k.index(0), k.index(groups), k.index(1), name="g") as g:
                partial = [zeros(k, 1, lanes, f"p{i}") for i in range(mr * slots)]
                if ahead:
                    prefetch_params(k, (scale, zero), g, n0, lanes)
                start = loop.mul(g, k.index(group // BLOCK))
                with loop.for_(start, loop.add(start, k.index(group // BLOCK)), k.index(1), name="kb") as kb:
                    if ahead:
                        prefetch(k, packed, nb, kb, bits, lanes, ahead)
                    path.block(k, BlockStep(packed, prepared, partial, nb, kb, ms, bits, lanes, chains, layout))
                with lane_loop(k, lanes) as lane:
                    at = param_index(k, scale, g, nb, lane, lanes)
                    s, z = loop.load(scale, at), loop.load(zero, at)
                    for r, m in enumerate(ms):
                        dot = loop.load(partial[r * slots], [k.index(0), lane])
                        for c in range(1, slots):
                            dot = loop.add(dot, loop.load(partial[r * slots + c], [k.index(0), lane]))
                        corrected = multiply_add(k, loop.neg(z), loop.load(sums, [m, g]), dot)
                        loop.store(
                            multiply_add(k, s, corrected, loop.load(accs[r], [k.index(0), lane])),
                            accs[r],
                            [k.index(0), lane],
                        )
            width = loop.min(k.index(lanes), loop.sub(k.index(cols), n0))
            for r, m in enumerate(ms):
                with vector_columns(k, width, lanes, f"o{r}") as lane:
                    value = loop.load(accs[r], [k.index(0), lane])
                    loop.store(value, out, [*delinearize(m, lead), loop.add(n0, lane)])


def param_index(k: Kernel, param: Value, g: Value, panel: Value, lane: Value, lanes: int) -> list[Value]:
    """Where ``param`` (a scale or zero-point tensor of an interleaved kernel) holds group ``g`` of row ``lane`` of
    panel ``panel``: ``[panel, g, lane]`` panel-major, ``[g, panel lanes + lane]`` group-major (the layouts of
    :mod:`tensorium.ir.dialects.quant.layouts`)."""
    if len(shape_of(param)) == 3:
        return [panel, g, lane]
    return [g, loop.add(loop.mul(panel, k.index(lanes)), lane)]


def prefetch(k: Kernel, packed: Value, nb: Value, kb: Value, bits: int, lanes: int, ahead: int) -> None:
    """Prefetch the cache lines of the packed weights about ``ahead`` bytes past block ``kb`` of panel ``nb``
    (one per 64 bytes of the block; past the panel's last block the next panel's, which follows it in memory)."""
    block_bytes = bits * lanes * 4
    blocks = k.index(max(1, -(-ahead // block_bytes)))
    for w in range(0, bits, max(1, 64 // (lanes * 4))):
        loop.prefetch(packed, nb, loop.add(kb, blocks), k.index(w), k.index(0))


def prefetch_params(k: Kernel, params: tuple[Value, ...], g: Value, n0: Value, lanes: int) -> None:
    """Prefetch group ``g``'s scales and zero points of the next panel (``lanes`` columns past ``n0``), where they
    are group-major: a row of ``params`` per group, N floats apart, so each group's line of a panel is on its own
    page, a stride that the hardware prefetchers do not follow; the next panel is usually the same thread's
    (claims are ranges), some 32 groups later. Panel-major parameters are a sequential stream and need none."""
    for param in params:
        if len(shape_of(param)) == 2:
            loop.prefetch(param, g, loop.add(n0, k.index(lanes)))


def _ceil(k: Kernel, size: Value, by: int) -> Value:
    with k.prologue():
        return loop.div(loop.add(size, k.index(by - 1)), k.index(by))  # type: ignore[no-any-return]


def lane_loop(k: Kernel, lanes: int):  # type: ignore[no-untyped-def]
    """A ``vectorize`` loop over the ``lanes`` weight rows of a panel."""
    return loop.for_(k.index(0), k.index(lanes), k.index(1), kind="vectorize", factor=lanes, name="l")


def zeros(k: Kernel, mr: int, lanes: int, name: str, dtype: ScalarType = f32) -> Value:
    """A local [mr, lanes] accumulator set to zero."""
    acc = loop.alloc(type=BufferType((mr, lanes), dtype, "local"))
    with lane_loop(k, lanes) as lane:
        for r in range(mr):
            loop.store(k.const(0.0 if dtype == f32 else 0, dtype), acc, [k.index(r), lane])
    return acc  # type: ignore[no-any-return]


class FloatPath(QgemvPath):
    """Unpack, scale, FMA: each code masked in place and converted to float, times the activation pre-scaled by
    ``2**-s`` for the bit offset ``s`` of the code's first piece in its word."""

    def prepare(
        self, k: Kernel, x: Value, lead: list[Value], rows: Value, bits: int, group: int, layout: str
    ) -> list[Value]:
        """The activations pre-scaled by ``2**-s``, [rows, K], and their sums per group, [rows, K / group]."""
        depth = int(shape_of(x)[-1])  # type: ignore[arg-type]
        pieces = layouts.block_pieces(bits, layout)
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
                        loop.store(loop.mul(value, k.const(2.0 ** -pieces[j][0].shift, f32)), scaled, [m, kk])
                loop.store(loop.load(total), sums, [m, g])
        return [scaled, sums]

    def slots(self, chains: int) -> int:
        """One partial sum per chain."""
        return chains

    def block(self, k: Kernel, step: BlockStep) -> None:
        """``partial[r chains + j % chains][0, lane] += q[row, 32 kb + j] * x[m_r, 32 kb + j]``."""
        scaled, bits, chains = step.prepared[0], step.bits, step.chains
        pieces = layouts.block_pieces(bits, step.layout)
        base = loop.mul(step.kb, k.index(BLOCK))
        xs = [[loop.load(scaled, [m, loop.add(base, k.index(j))]) for j in range(BLOCK)] for m in step.ms]
        with lane_loop(k, step.lanes) as lane:
            words = [loop.load(step.packed, [step.nb, step.kb, k.index(w), lane]) for w in range(bits)]
            slots = len(step.ms) * chains
            sums = [loop.load(step.partial[i], [k.index(0), lane]) for i in range(slots)]
            for j in range(BLOCK):
                code = _code(k, words, pieces[j])
                for r in range(len(step.ms)):
                    i = r * chains + j % chains
                    sums[i] = multiply_add(k, code, xs[r][j], sums[i])
            for i, total in enumerate(sums):
                loop.store(total, step.partial[i], [k.index(0), lane])

    def cost(self, target: Target, bits: int, mr: int, layout: str = "interleaved") -> float | None:
        """Per piece of a code (two where it straddles words or is split in shards): a mask and a conversion (and
        a multiply-add for each after the first), and per code and row a broadcast activation and a multiply-add."""
        pieces = sum(len(p) for p in layouts.block_pieces(bits, layout))
        return float(2 * pieces + (pieces - BLOCK) + BLOCK * 2 * mr)


register_path("float", FloatPath())


def _code(k: Kernel, words: list[Value], pieces: tuple[layouts.Piece, ...]) -> Value:
    """A code of a block times ``2**s`` (``s`` the shift of its first piece), as f32, without shifting: each piece
    masked in place, the first converted as it is, each further one times ``2**(s + low - shift)``."""
    first = pieces[0]
    value: Value = _masked(k, words, first)
    for piece in pieces[1:]:
        factor = k.const(2.0 ** (first.shift + piece.low - piece.shift), f32)
        value = multiply_add(k, _masked(k, words, piece), factor, value)
    return value


def _masked(k: Kernel, words: list[Value], piece: layouts.Piece) -> Value:
    """``piece``'s bits masked in place in their word, as f32 (exact: at most 8 significant bits)."""
    mask = (((1 << piece.width) - 1) << piece.shift) & 0xFFFFFFFF
    return loop.cast(loop.and_(words[piece.word], k.const(mask, U32)), dtype=f32)  # type: ignore[no-any-return]
