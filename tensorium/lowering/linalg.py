"""Lowering matmul: the ``gemm`` kernel family, a search space of register-blocked GEMMs per target.

f32 products (``graph.matmul`` and ``graph.matmul_packed``) are built at a point of the ``gemm`` space
(:func:`gemm_space`), whose knobs are

- ``mr`` x ``nv``: the register tile, ``mr`` rows by ``nv`` vectors of ``target.lanes()`` columns
  (``nr = nv * lanes``); each tile is accumulated over the contraction with one fused multiply-add per
  element and step, the ``nr`` columns on vector lanes and the ``mr`` rows unrolled, so that it lives in
  vector registers (the micro-kernel). For ``graph.matmul_packed`` the constant's panel width fixes ``nr``;
- ``kc``: the contraction is cut into blocks of ``kc`` steps (0: one block); the tile is then stored after
  each block and read back before the next, so a B panel of ``kc x nr`` stays in cache;
- ``pack_b``: how B is read. ``none``: in place (row-major B only); ``panel``: as BLAS does, each
  ``kc x nr`` panel is copied once into a small contiguous buffer of the thread, zero past the last
  column, and every row tile runs over it; ``global``: all of B is packed first into one buffer, in
  parallel. A transposed B (strided columns) is always packed;
- ``split``: what runs in parallel: the (batch, column panel) pairs or the (batch, row tile) pairs;
- ``algo`` (only when the result has one column): the blocked GEMM or the matrix-vector product, whose
  knob ``unroll`` is its number of vector accumulators per row, ``rows`` the rows of A that share each load of
  the vector, and ``align`` the bytes its rows are peeled to (the vector loop starts where A's loads are
  aligned; 0: no peel). The knobs of the algorithm not chosen stay
  at their first value, so that every point is a different kernel.

Every point computes the same product (up to the order of the f32 sums). The default point is a rule over
the target (:func:`gemm_defaults`): ``nv = registers / 8`` vectors (fewer for narrow results, half for a
run-time column count, whose full and last panels each get a copy of the tile) and the
most rows with ``mr * nv + nv + 1`` registers (the tile, one row of B, one broadcast of A), at most 6:
6 x 64 on 32 AVX-512 registers, 6 x 16 on the 16 registers of AVX2; ``kc`` keeps the B panel in half
the L2 cache. ``pack-weights`` packs constant weights with the same rule's ``nr``. The matrix-vector
product peels to the vector's bytes when a vector is a whole cache line (AVX-512) and runs the most rows (of 1,
2, 4) with 8 accumulators in all that fit the registers: 4 rows x 2 vectors on AVX-512 and AVX2 (measured on
4096 x 4096: 1.36 -> 1.04 ms on AVX-512, 1.11 -> 1.04 ms on AVX2, numpy 1.04-1.07 ms).

Edges: the last row tile is shifted up to end at the last row (its rows overlapping the tile before are
computed again but not stored), so A's rows are one pointer plus constant offsets; a result with fewer
rows than the tile clamps them instead. The last, narrower column panel goes through a small edge buffer
on its way from and to the result, so that its tile too stays in registers. With ``kc`` blocks the kernel
reads its result back, so a fused epilogue then runs as a second nest (see ``fused.py``).

Other element types use the simple nest, which has no knobs: loops over batch dims and the result's rows
``i`` and columns ``j``, a local accumulator and the contraction loop ``k`` inside. Batch dims broadcast as
in the graph op. f16 and bf16 accumulate in f32 (as the reference computes); integers accumulate in their
own type, which wraps exactly as the reference's result does.

:func:`emit_matmul` is the reusable part: fused kernels call it with an ``epilogue`` that turns each
accumulated element into the value stored (bias, activation, residual add, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.types import DYN, BufferType, Dim, TensorType, f32, i1
from ..targets import Target
from .kernel import (
    Kernel,
    compute_type,
    convert,
    delinearize,
    element_of,
    linearize,
    lowering,
    lowering_error,
    shape_of,
)
from .reduce import accumulate
from .space import Config, Family, Knob, Setting, Space, register_family

Epilogue = Callable[[Value, list[Value]], Value]
"""Turns an accumulated element (in the accumulation type) and its result indices into the value stored."""

ALGORITHMS = ("blocked", "matvec")
PACKINGS = ("none", "panel", "global")
SPLITS = ("panels", "rows")
NV_VALUES = (1, 2, 3, 4)
KC_VALUES = (0, 64, 128, 256, 512)
UNROLL_VALUES = (1, 2, 4, 8)
ROW_BLOCKS = (1, 2, 4)
MATVEC_KNOBS = ("unroll", "align", "rows")
MATVEC_CHAINS = 8
"""Independent accumulators a matrix-vector step needs in all (FMA latency x pipes on current x86 cores)."""
"""The knobs of the matrix-vector algorithm alone (pinned to their first value with the blocked one)."""
CACHE_LINE = 64
MAX_DEFAULT_MR = 6
"""The default rule's most rows per tile: more rows buy little once B's loads are amortized over 6."""
PARALLEL_PANELS = 4
"""The default rule runs column panels in parallel when there are at least this many, else row tiles."""


# --- the space -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GemmShape:
    """What the gemm family's space and default rule read of a product: its sizes (None when symbolic),
    whether B is transposed, the panel width of a pre-packed B, and whether it is a matrix-vector product."""

    m: int | None
    n: int | None
    k: int | None
    transpose_b: bool = False
    packed_width: int | None = None
    matvec: bool = False

    @staticmethod
    def of(
        a: Sequence[Dim], b: Sequence[Dim], out: Sequence[Dim], transpose_a: bool, transpose_b: bool, packed: bool
    ) -> GemmShape:
        """The shape of a product of operands shaped ``a`` and ``b`` (``b`` as panels when ``packed``)."""

        def size(d: Dim) -> int | None:
            return d if isinstance(d, int) else None

        width = size(b[-1]) if packed else None
        matvec = not packed and not transpose_a and out[-1] == 1
        contraction = a[-2] if transpose_a else a[-1]
        return GemmShape(size(out[-2]), size(out[-1]), size(contraction), transpose_b, width, matvec)


def _gemm_shape(op: Operation) -> GemmShape | None:
    """The GemmShape of an f32 ``graph.matmul`` or ``graph.matmul_packed``; None for other element types."""
    types = [v.type for v in (*op.operands, *op.results)]
    if not all(isinstance(t, TensorType) and t.element == f32 for t in types):
        return None
    a, b, out = (t.shape for t in types if isinstance(t, TensorType))
    packed = op.name == "graph.matmul_packed"
    return GemmShape.of(a, b, out, bool(op.attr("transpose_a", False)), bool(op.attr("transpose_b", False)), packed)


def _registers(target: Target) -> int:
    """Vector registers the rule plans for (16 where the target does not say, as on SSE and AVX2)."""
    return target.vector_registers or 16


def _default_nv(shape: GemmShape, target: Target) -> int:
    lanes = target.lanes()
    if shape.packed_width is not None:
        return -(-shape.packed_width // lanes)
    nv = max(1, _registers(target) // 8)
    if shape.n is None:  # a run-time column count: two copies of the tile (full and last panel), so half as wide
        return max(1, nv // 2)
    return max(1, min(nv, -(-shape.n // lanes)))


def _default_kc(shape: GemmShape, target: Target, nr: int) -> int:
    """0 when the whole ``K x nr`` panel fits in half the L2 cache, else the most steps (a multiple of 64)
    that do: the panel is read once per row tile, and L1 cannot hold a useful one (6 x 64 x 4 B per step)."""
    budget = max(target.l2 // 2, 64 * 1024) // (4 * nr)
    if shape.k is not None and shape.k <= budget:
        return 0
    return max(64, budget // 64 * 64)


def gemm_defaults(shape: GemmShape, target: Target) -> dict[str, Setting]:
    """The default rule: the point of the gemm space ``target`` gets for a product of ``shape``."""
    if shape.matvec:
        rows, unroll = _matvec_block(target)
        return {
            "algo": "matvec",
            **_first_values(shape, target),
            "unroll": unroll,
            "align": _default_align(target),
            "rows": rows,
        }
    nv = _default_nv(shape, target)
    nr = nv * target.lanes()
    mr = max(1, min(MAX_DEFAULT_MR, (_registers(target) - nv - 1) // nv))
    panels = None if shape.n is None else -(-shape.n // nr)
    split = "panels" if panels is None or panels >= PARALLEL_PANELS else "rows"
    values: dict[str, Setting] = {"mr": mr, "nv": nv, "kc": _default_kc(shape, target, nr)}
    if shape.packed_width is None:
        values["pack_b"] = _default_packing(shape, mr, nr, split)
    values["split"] = split
    return values


def _matvec_block(target: Target) -> tuple[int, int]:
    """The matrix-vector rule's rows and accumulators per row: the most rows (each a stream for the prefetchers,
    sharing the vector's loads) with at least :data:`MATVEC_CHAINS` accumulators in all, that fit the registers
    with one load per row and the vector (4 x 2 on AVX-512 and AVX2: 13 registers)."""
    for rows in sorted(ROW_BLOCKS, reverse=True):
        unroll = next((u for u in UNROLL_VALUES if rows * u >= MATVEC_CHAINS), UNROLL_VALUES[-1])
        if rows * unroll + rows + 1 <= _registers(target):
            return rows, unroll
    return 1, MATVEC_CHAINS


def _default_align(target: Target) -> int:
    """The matrix-vector rule's peel: to a vector's bytes when a vector is a whole cache line (64 bytes), where
    every misaligned load straddles two lines; none for narrower vectors, where half do and it measured even."""
    vector_bytes = target.lanes() * 4
    return vector_bytes if vector_bytes >= CACHE_LINE else 0


def _default_packing(shape: GemmShape, mr: int, nr: int, split: str) -> str:
    """B is read in place only when that is cheaper and as fast: few row tiles share each panel (or row tiles
    run in parallel, so each would pack its own), B is not transposed, and every panel is full (the last,
    narrower panel read in place has a run-time width, which costs the tile its registers)."""
    full_panels = shape.n is not None and shape.n % nr == 0
    few_rows = shape.m is not None and shape.m <= 2 * mr
    if not shape.transpose_b and full_panels and (few_rows or split == "rows"):
        return "none"
    return "global" if split == "rows" else "panel"


def _knobs(shape: GemmShape, target: Target) -> list[Knob]:
    """The knobs of the gemm space for ``shape`` on ``target`` (their first values pin the unused ones)."""
    mrs = tuple(range(1, 9)) + ((10, 12, 14) if _registers(target) >= 32 else ())
    nvs = (_default_nv(shape, target),) if shape.packed_width is not None else NV_VALUES
    default_kc = _default_kc(shape, target, _default_nv(shape, target) * target.lanes())
    kcs = tuple(sorted({*KC_VALUES, default_kc}))
    knobs = [
        Knob("mr", mrs, "rows of the register tile"),
        Knob("nv", nvs, f"vectors of {target.lanes()} f32 lanes per tile row"),
        Knob("kc", kcs, "contraction steps per cache block (0: one block)"),
    ]
    if shape.packed_width is None:
        packings = PACKINGS[1:] if shape.transpose_b else PACKINGS
        knobs.append(Knob("pack_b", packings, "read B in place, pack each panel, or pack all of B first"))
    knobs.append(Knob("split", SPLITS, "run column panels or row tiles in parallel"))
    if shape.matvec:
        knobs.insert(0, Knob("algo", ALGORITHMS, "blocked GEMM or matrix-vector product"))
        knobs.append(Knob("unroll", UNROLL_VALUES, "vector accumulators of the matrix-vector product"))
        aligns = tuple(sorted({0, target.lanes() * 4, CACHE_LINE}))
        knobs.append(Knob("align", aligns, "peel each row until A's vector loads are aligned to this many bytes"))
        knobs.append(Knob("rows", ROW_BLOCKS, "rows of A per step of the matrix-vector product (one load of x each)"))
    return knobs


def _first_values(shape: GemmShape, target: Target) -> dict[str, Setting]:
    """Each knob's first value but ``algo``'s: what the knobs of the algorithm not chosen are pinned to."""
    return {k.name: k.values[0] for k in _knobs(shape, target) if k.name != "algo"}


def _pinned(first: Mapping[str, Setting]) -> Callable[[Mapping[str, Setting]], bool]:
    """``valid`` of a space with both algorithms: the knobs of the one not chosen keep their first value."""

    def valid(values: Mapping[str, Setting]) -> bool:
        matvec = values["algo"] == "matvec"
        return all(values[name] == value for name, value in first.items() if (name in MATVEC_KNOBS) != matvec)

    return valid


def space_of(shape: GemmShape, target: Target) -> Space:
    """The gemm space of a product of ``shape`` on ``target``."""
    valid = _pinned(_first_values(shape, target)) if shape.matvec else None
    return Space("gemm", tuple(_knobs(shape, target)), valid)


def gemm_space(op: Operation, target: Target) -> Space | None:
    """The gemm family's space for ``op`` (f32 only: other element types get the simple nest)."""
    shape = _gemm_shape(op)
    return None if shape is None else space_of(shape, target)


def gemm_default(op: Operation, target: Target, space: Space) -> Config:
    """The family's default point for ``op`` (see :func:`gemm_defaults`)."""
    shape = _gemm_shape(op)
    assert shape is not None
    return default_point(shape, target)


def default_point(shape: GemmShape, target: Target) -> Config:
    """The default rule's point as a config."""
    return Config("gemm", tuple(gemm_defaults(shape, target).items()))


register_family(Family("gemm", ("graph.matmul", "graph.matmul_packed"), gemm_space, gemm_default))


def panel_width(op: Operation, target: Target) -> int | None:
    """The ``nr`` of the default point of an f32 ``graph.matmul`` on ``target``: the width ``pack-weights``
    packs its constant B into; None for other element types."""
    shape = _gemm_shape(op)
    if shape is None:
        return None
    return _default_nv(shape, target) * target.lanes()


@dataclass(frozen=True)
class GemmTiling:
    """A point of the gemm space as the blocked kernel reads it (``nr`` in columns, see the module docstring)."""

    mr: int
    nr: int
    kc: int = 0
    pack_b: str = "none"
    split: str = "panels"

    @staticmethod
    def of(config: Config, target: Target) -> GemmTiling:
        """The tiling of a gemm config for ``target``."""
        values = config.as_dict()
        pack_b = values.get("pack_b", "none")
        assert isinstance(pack_b, str)
        nr = config.int("nv") * target.lanes()
        return GemmTiling(config.int("mr"), nr, config.int("kc"), pack_b, str(values["split"]))


# --- emitting ---------------------------------------------------------------------------------------
def emit_matmul(
    k: Kernel,
    a: Value,
    b: Value,
    out: Value,
    transpose_a: bool = False,
    transpose_b: bool = False,
    epilogue: Epilogue | None = None,
    prefix: str = "",
    config: Config | None = None,
) -> None:
    """Build loops computing ``out = epilogue(a @ b)`` into the buffer ``out`` of kernel ``k``.

    ``a``, ``b`` and ``out`` are buffers of ``k`` (arguments or allocations) shaped as the graph op's
    operands and result. f32 products are built at ``config``, a point of their gemm space (default: the
    target's rule for this shape). Without an epilogue the accumulated value is converted to ``out``'s
    element type. Outside f32 the loops are named ``i``, ``j``, ``k`` (and ``b0``, ... over batch dims)
    after ``prefix``, which keeps names unique (as schedules need) in a kernel of several products.
    """
    if all(element_of(v) == f32 for v in (a, b, out)):
        if config is None:
            shape = GemmShape.of(shape_of(a), shape_of(b), shape_of(out), transpose_a, transpose_b, False)
            config = default_point(shape, k.target)
        if config.as_dict().get("algo") == "matvec":
            values = config.as_dict()  # configs recorded before align and rows existed lack them
            align, rows = int(values.get("align", 0)), int(values.get("rows", 1))
            emit_matvec(k, a, b, out, transpose_b, epilogue, config.int("unroll"), align, rows)
        else:
            tiling = GemmTiling.of(config, k.target)
            emit_blocked_matmul(k, a, b, out, transpose_a, transpose_b, epilogue, tiling)
        return
    _emit_simple_matmul(k, a, b, out, transpose_a, transpose_b, epilogue, prefix)


def _emit_simple_matmul(
    k: Kernel,
    a: Value,
    b: Value,
    out: Value,
    transpose_a: bool,
    transpose_b: bool,
    epilogue: Epilogue | None,
    prefix: str,
) -> None:
    """The simple nest (any element type): batch, rows, columns, and an accumulator over the contraction."""
    shape = shape_of(out)
    batch = len(shape) - 2
    acc_t = compute_type(element_of(out))
    sizes = k.sizes(out)
    a_rank, b_rank = len(shape_of(a)), len(shape_of(b))
    contraction = k.size(a, a_rank - 2 if transpose_a else a_rank - 1)
    names = [f"{prefix}b{n}" for n in range(batch)] + [f"{prefix}i", f"{prefix}j"]
    with k.loops(sizes, names) as ivs:
        i, j = ivs[-2], ivs[-1]
        a_batch = k.broadcast_indices(a, a_rank - 2, shape[:-2], ivs[:-2])
        b_batch = k.broadcast_indices(b, b_rank - 2, shape[:-2], ivs[:-2])

        def product(inner: list[Value]) -> Value:
            (kk,) = inner
            lhs = loop.load(a, a_batch + ([kk, i] if transpose_a else [i, kk]))
            rhs = loop.load(b, b_batch + ([j, kk] if transpose_b else [kk, j]))
            return loop.mul(convert(lhs, acc_t), convert(rhs, acc_t))  # type: ignore[no-any-return]

        total = accumulate(k, acc_t, k.const(0, acc_t), [contraction], [f"{prefix}k"], product, loop.add)
        value = epilogue(total, list(ivs)) if epilogue is not None else total
        loop.store(convert(value, element_of(out)), out, ivs)


def emit_blocked_matmul(
    k: Kernel,
    a: Value,
    b: Value,
    out: Value,
    transpose_a: bool,
    transpose_b: bool,
    epilogue: Epilogue | None,
    tiling: GemmTiling,
    prepacked: bool = False,
) -> None:
    """The register-blocked f32 GEMM at ``tiling`` (see the module docstring), over the batch dims of ``out``.

    One parallel loop runs over every (batch, panel or row tile) pair, so batched products of small
    matrices (attention heads) keep every thread busy. With ``prepacked``, ``b`` already holds the panels
    ``[P, K, nr]`` (graph.matmul_packed) and ``nr`` is their width.
    """
    _BlockedGemm(k, a, b, out, transpose_a, transpose_b, epilogue, tiling, prepacked).emit()


class _BlockedGemm:
    """The loops of one blocked GEMM: parallel (batch, panel or row tile) pairs, contraction blocks,
    panel packing and the register tile."""

    def __init__(
        self,
        k: Kernel,
        a: Value,
        b: Value,
        out: Value,
        transpose_a: bool,
        transpose_b: bool,
        epilogue: Epilogue | None,
        tiling: GemmTiling,
        prepacked: bool,
    ):
        self.k, self.a, self.b, self.out, self.epilogue = k, a, b, out, epilogue
        self.transpose_a, self.transpose_b = transpose_a, transpose_b
        self.shape = shape_of(out)
        self.a_rank = len(shape_of(a))
        self.b_rank = 2 if prepacked else len(shape_of(b))
        width = shape_of(b)[-1]
        self.mr = tiling.mr
        self.nr = width if prepacked and isinstance(width, int) else tiling.nr
        self.kc = tiling.kc
        self.by_panels = tiling.split == "panels"
        # A transposed B has strided columns: it is always packed (per panel unless asked for all at once).
        packing = "prepacked" if prepacked else tiling.pack_b
        self.packing = "panel" if transpose_b and packing == "none" else packing
        sizes = k.sizes(out)
        self.sizes, self.rows, self.cols = sizes, sizes[-2], sizes[-1]
        self.depth = k.size(a, self.a_rank - 2 if transpose_a else self.a_rank - 1)
        self.panels = _ceil_div(k, self.cols, self.nr)
        self.tiles = _ceil_div(k, self.rows, self.mr)
        self.b_batch_sizes = [] if prepacked else k.sizes(b)[: self.b_rank - 2]
        with k.prologue():
            self.last_row = loop.sub(self.rows, k.index(1))
            self.last_col = loop.sub(self.cols, k.index(1))
        self.packed: Value | None = b if prepacked else None
        if self.packing == "global":
            self.packed = _pack_b(k, b, self.b_batch_sizes, transpose_b, self.cols, self.depth, self.panels, self.nr)

    def emit(self) -> None:
        """The parallel loop over (batch, outer) pairs and the serial loop over the other tiles inside."""
        k = self.k
        outer = self.panels if self.by_panels else self.tiles
        batches = _product(k, self.sizes[:-2])
        with k.prologue():
            work = loop.mul(batches, outer)
        with loop.for_(k.index(0), work, k.index(1), kind="parallel", name="t") as t:
            o = loop.rem(t, outer)
            batch_ivs = delinearize(loop.div(t, outer), self.sizes[:-2])
            buffer = self._panel_buffer()
            if self.by_panels:
                self._blocks(batch_ivs, o, None, buffer)
            else:
                with loop.for_(k.index(0), self.panels, k.index(1), name="jb") as jb:
                    self._blocks(batch_ivs, jb, o, buffer)

    def _panel_buffer(self) -> Value | None:
        """The thread's buffer for one packed ``kc x nr`` panel (``K x nr`` without blocking), or None."""
        if self.packing != "panel":
            return None
        if self.kc:
            return loop.alloc(type=BufferType((self.kc, self.nr), f32, "local"))  # type: ignore[no-any-return]
        depth = shape_of(self.a)[self.a_rank - 2 if self.transpose_a else self.a_rank - 1]
        if isinstance(depth, int):
            return loop.alloc(type=BufferType((depth, self.nr), f32, "local"))  # type: ignore[no-any-return]
        return loop.alloc(self.depth, type=BufferType((DYN, self.nr), f32, "global"))  # type: ignore[no-any-return]

    def _blocks(self, batch_ivs: list[Value], jb: Value, ib: Value | None, buffer: Value | None) -> None:
        """Panel ``jb`` block by block of the contraction: pack it when asked, then row tile ``ib`` (or all)."""
        k = self.k
        if not self.kc:
            self._block(batch_ivs, jb, ib, _Block(k.index(0), self.depth, buffer))
            return
        with loop.for_(k.index(0), self.depth, k.index(self.kc), name="kb") as k0:
            length = loop.min(k.index(self.kc), loop.sub(self.depth, k0))
            first = loop.cmp(k0, k.index(0), predicate="eq")
            last = loop.cmp(loop.add(k0, length), self.depth, predicate="ge")
            self._block(batch_ivs, jb, ib, _Block(k0, length, buffer, first, last))

    def _block(self, batch_ivs: list[Value], jb: Value, ib: Value | None, block: _Block) -> None:
        """One contraction block of panel ``jb``: pack it when asked, then row tile ``ib`` (or every one)."""
        k = self.k
        if block.buffer is not None:
            self._pack_panel(batch_ivs, jb, block.buffer, block.k0, block.length)
        if ib is not None:
            self._tiles(batch_ivs, jb, ib, block)
            return
        with loop.for_(k.index(0), self.tiles, k.index(1), name="ib") as i:
            self._tiles(batch_ivs, jb, i, block)

    def _b_batch(self, batch_ivs: list[Value]) -> list[Value]:
        if self.packing == "prepacked":
            return []
        return self.k.broadcast_indices(self.b, self.b_rank - 2, self.shape[:-2], batch_ivs)

    def _pack_panel(self, batch_ivs: list[Value], jb: Value, buffer: Value, k0: Value, length: Value) -> None:
        """``buffer[kl, jj] = B[k0 + kl, jb * nr + jj]``, zero past the last column."""
        k = self.k
        b_batch = self._b_batch(batch_ivs)
        j0 = loop.mul(jb, k.index(self.nr))
        full = loop.cmp(loop.sub(self.cols, j0), k.index(self.nr), predicate="ge")
        for clamp in (False, True):
            with loop.if_(loop.cmp(full, k.const(clamp, i1), predicate="ne")):
                with loop.for_(k.index(0), length, k.index(1), name="pk") as kl:
                    kk = loop.add(k0, kl)
                    with vector_columns(k, k.index(self.nr), self.nr, "pj") as jj:
                        j = loop.add(j0, jj)
                        column = loop.min(j, self.last_col) if clamp else j
                        value = loop.load(self.b, b_batch + ([column, kk] if self.transpose_b else [kk, column]))
                        if clamp:
                            value = loop.select(loop.cmp(j, self.cols, predicate="lt"), value, k.const(0.0, f32))
                        loop.store(value, buffer, [kl, jj])

    def _tiles(self, batch_ivs: list[Value], jb: Value, ib: Value, block: _Block) -> None:
        """Row tile ``ib`` of panel ``jb`` in up to four copies, one per case: a full or the last (narrower)
        panel, by a constant width so that the tile stays in registers; and rows inside the result, the last
        tile shifted up to end at the last row (so that A's rows are one pointer and constant offsets), or
        clamped when the result has fewer rows than the tile. Copies the static sizes rule out are not built."""
        k, nr, mr = self.k, self.nr, self.mr
        cols, rows = self.shape[-1], self.shape[-2]
        i0, j0 = loop.mul(ib, k.index(mr)), loop.mul(jb, k.index(nr))
        left = loop.sub(self.cols, j0)
        widths = [(nr, "ge"), (left, "lt")]
        if isinstance(cols, int):
            widths = widths[:1] if cols % self.nr == 0 else widths[1:] if cols < self.nr else widths
        # A run-time row count gets both copies: the clamped tile alone (right for every count) cost 15-25% on
        # the GEMMs of MiniLM with dynamic shapes on 2 threads (a pointer per row instead of one and offsets).
        shifts = [(True, "ge"), (False, "lt")]
        if isinstance(rows, int):
            shifts = shifts[:1] if rows >= mr else shifts[1:]
        for shifted, rows_test in shifts:
            with loop.if_(loop.cmp(self.rows, k.index(mr), predicate=rows_test)):
                start = loop.min(i0, loop.sub(self.rows, k.index(mr))) if shifted else i0
                for width, width_test in widths:
                    with loop.if_(loop.cmp(left, k.index(nr), predicate=width_test)):
                        w = k.index(width) if isinstance(width, int) else width
                        full = isinstance(width, int)
                        self._tile(_Tile(batch_ivs, jb, i0, j0, start, w, not shifted, full), block)

    def _rhs(self, at: _Tile, buffer: Value | None) -> Callable[[Value, Value, Value], Value]:
        """The B element of the tile's panel at block step ``kl`` (contraction index ``kk``) and column ``jj``."""
        if buffer is not None:
            return lambda kl, kk, jj: loop.load(buffer, [kl, jj])  # type: ignore[no-any-return]
        b_batch = self._b_batch(at.batch_ivs)
        if self.packed is not None:
            panel = loop.add(loop.mul(linearize(b_batch, self.b_batch_sizes, self.k.index(0)), self.panels), at.jb)
            packed = self.packed
            return lambda kl, kk, jj: loop.load(packed, [panel, kk, jj])  # type: ignore[no-any-return]
        return lambda kl, kk, jj: loop.load(self.b, b_batch + [kk, loop.add(at.j0, jj)])  # type: ignore[no-any-return]

    def _row(self, at: _Tile, ii: Value) -> Value:
        """Row ``ii`` of the tile in the result (clamped to the last row when the tile is taller)."""
        row = loop.add(at.start, ii)
        return loop.min(row, self.last_row) if at.clamp else row  # type: ignore[no-any-return]

    def _tile(self, at: _Tile, block: _Block) -> None:
        """One ``mr x width`` tile over one contraction block: the micro-kernel."""
        k, mr, nr = self.k, self.mr, self.nr
        a_batch = k.broadcast_indices(self.a, self.a_rank - 2, self.shape[:-2], at.batch_ivs)
        acc = loop.alloc(type=BufferType((mr, nr), f32, "local"))
        self._start(acc, at, block.first)
        rhs = self._rhs(at, block.buffer)
        # Past the last column a packed panel holds zeros; read in place, only ``width`` columns are.
        read = at.width if self.packing == "none" else k.index(nr)
        with loop.for_(k.index(0), block.length, k.index(1), name="k") as kl:
            kk = kl if block.first is None else loop.add(block.k0, kl)
            with loop.for_(k.index(0), k.index(mr), k.index(1), kind="unroll", name="ii") as ii:
                row = self._row(at, ii)
                lhs = loop.load(self.a, a_batch + ([kk, row] if self.transpose_a else [row, kk]))
                with vector_columns(k, read, nr, "jj") as jj:
                    loop.store(multiply_add(k, lhs, rhs(kl, kk, jj), loop.load(acc, [ii, jj])), acc, [ii, jj])
        self._finish(acc, at, block.last)

    def _start(self, acc: Value, at: _Tile, first: Value | None) -> None:
        """Zero the tile, then (after the first contraction block) read back what earlier blocks stored."""
        k, nr = self.k, self.nr
        with loop.for_(k.index(0), k.index(self.mr), k.index(1), kind="unroll", name="ii") as ii:
            with vector_columns(k, k.index(nr), nr, "jj") as jj:
                loop.store(k.const(0.0, f32), acc, [ii, jj])
        if first is None:
            return
        with loop.if_(loop.cmp(first, k.const(False, i1), predicate="eq")):
            into = acc if at.full else self._edge()
            with loop.for_(k.index(0), k.index(self.mr), k.index(1), kind="unroll", name="ii") as ii:
                row = self._row(at, ii)
                with vector_columns(k, at.width, nr, "jj") as jj:
                    loop.store(loop.load(self.out, [*at.batch_ivs, row, loop.add(at.j0, jj)]), into, [ii, jj])
            if not at.full:
                self._copy_tile(into, acc)

    def _finish(self, acc: Value, at: _Tile, last: Value | None) -> None:
        """Store the tile's rows inside the result: through the epilogue after the last block, as they are before."""
        if last is None:
            self._store(acc, at, self.epilogue)
            return
        k = self.k
        with loop.if_(loop.cmp(last, k.const(True, i1), predicate="eq")):
            self._store(acc, at, self.epilogue)
        with loop.if_(loop.cmp(last, k.const(False, i1), predicate="eq")):
            self._store(acc, at, None)

    def _edge(self) -> Value:
        """A zeroed ``mr x nr`` buffer that a narrower tile goes through on its way from or to the result.

        The accumulator tile stays in registers only while every access to it has constant indices (after
        unrolling); a loop over the last panel's run-time width would put it in memory for the whole
        contraction, so that loop reads and writes this buffer instead."""
        k = self.k
        edge = loop.alloc(type=BufferType((self.mr, self.nr), f32, "local"))
        with loop.for_(k.index(0), k.index(self.mr), k.index(1), kind="unroll", name="ii") as ii:
            with vector_columns(k, k.index(self.nr), self.nr, "jj") as jj:
                loop.store(k.const(0.0, f32), edge, [ii, jj])
        return edge  # type: ignore[no-any-return]

    def _copy_tile(self, source: Value, target: Value) -> None:
        """``target[:, :] = source[:, :]`` over the whole ``mr x nr`` tile (constant indices)."""
        k = self.k
        with loop.for_(k.index(0), k.index(self.mr), k.index(1), kind="unroll", name="ii") as ii:
            with vector_columns(k, k.index(self.nr), self.nr, "jj") as jj:
                loop.store(loop.load(source, [ii, jj]), target, [ii, jj])

    def _store(self, acc: Value, at: _Tile, epilogue: Epilogue | None) -> None:
        """Store the rows this tile owns: below ``i0`` a shifted tile overlaps the one before, which stores them."""
        k, nr = self.k, self.nr
        # The edge tiles (clamped rows, the narrower last panel) run their epilogue in a loop over the rows, from
        # the edge buffer: one copy of its code rather than mr. An epilogue such as GELU is most of a GEMM's LLVM
        # code, and of its compile time (a dynamic GPT-2's FFN GEMM, a shifted and a clamped copy: 0.73 -> 0.45 s
        # of LLVM); the full, shifted tiles that do nearly all the work keep it unrolled.
        rows_loop = (epilogue is not None or k.store_epilogue) and (at.clamp or not at.full)
        if not at.full or rows_loop:
            edge = self._edge()
            self._copy_tile(acc, edge)
            acc = edge
        kind = "serial" if rows_loop else "unroll"
        with loop.for_(k.index(0), k.index(self.mr), k.index(1), kind=kind, name="ii") as ii:
            i = loop.add(at.start, ii)
            owned = loop.cmp(i, self.rows, predicate="lt") if at.clamp else loop.cmp(i, at.i0, predicate="ge")
            with loop.if_(owned):
                with vector_columns(k, at.width, nr, "jj") as jj:
                    indices = [*at.batch_ivs, i, loop.add(at.j0, jj)]
                    value = loop.load(acc, [ii, jj])
                    if epilogue is not None:
                        value = epilogue(value, indices)
                    loop.store(convert(value, f32), self.out, indices)


@dataclass
class _Block:
    """One block of the contraction: steps ``[k0, k0 + length)``, the packed panel's buffer (or None), and
    whether it is the first and the last block (None without blocking: the one block is both)."""

    k0: Value
    length: Value
    buffer: Value | None
    first: Value | None = None
    last: Value | None = None


@dataclass(frozen=True)
class _Tile:
    """Where one register tile is: batch position, panel ``jb``, first row ``i0`` and column ``j0`` it owns,
    the row it starts at (``i0``, or earlier for the last tile shifted up), its width, whether its rows
    are clamped to the last row and whether it is a full panel's."""

    batch_ivs: list[Value]
    jb: Value
    i0: Value
    j0: Value
    start: Value
    width: Value
    clamp: bool
    full: bool
    """Whether ``width`` is the constant ``nr``."""


def emit_matvec(
    k: Kernel,
    a: Value,
    b: Value,
    out: Value,
    transpose_b: bool,
    epilogue: Epilogue | None = None,
    unroll: int = 4,
    align: int = 0,
    rows: int = 1,
) -> None:
    """``out[..., i, 0] = dot(a[..., i, :], b[..., :, 0])`` for f32: blocks of ``rows`` rows in parallel (each
    load of ``b`` serves them all, and each row is a stream of its own for the prefetchers), each row a dot
    product on ``unroll`` vector accumulators of the target's lanes (a reassociated sum, like every BLAS), then
    the head and tail elements and a lane sum; the rows past the last whole block one at a time. With ``align``
    (bytes), a block's vector loop starts at the first element of its first row whose address is a multiple of
    ``align`` (the elements before it are the head), so that no vector load of that row straddles two cache
    lines (nor of the others, when a row's bytes are a multiple of ``align``)."""
    shape = shape_of(out)
    batch = len(shape) - 2
    a_rank, b_rank = len(shape_of(a)), len(shape_of(b))
    sizes = k.sizes(out)
    depth = k.size(a, a_rank - 1)
    lanes = k.target.lanes()
    block = lanes * unroll
    zero = k.index(0)
    with k.prologue():
        whole = loop.mul(loop.div(sizes[-2], k.index(rows)), k.index(rows))
    with k.loops(sizes[:-2], [f"b{n}" for n in range(batch)]) as batch_ivs:
        a_batch = k.broadcast_indices(a, a_rank - 2, shape[:-2], batch_ivs)
        b_batch = k.broadcast_indices(b, b_rank - 2, shape[:-2], batch_ivs)

        def rhs(kk: Value) -> Value:
            return loop.load(b, b_batch + ([k.index(0), kk] if transpose_b else [kk, k.index(0)]))  # type: ignore[no-any-return]

        def row_block(first: Value, count: int) -> None:
            """The dot products of rows ``first .. first + count``."""
            if align:
                head = loop.min(loop.align_offset(a, *a_batch, first, zero, bytes=align), depth)
                blocked = loop.mul(loop.div(loop.sub(depth, head), k.index(block)), k.index(block))
                end = loop.add(head, blocked)
            else:
                head, end = zero, loop.mul(loop.div(depth, k.index(block)), k.index(block))
                blocked = end
            acc = loop.alloc(type=BufferType((count, unroll, lanes), f32, "local"))
            with loop.for_(k.index(0), k.index(count), k.index(1), kind="unroll", name="r") as r:
                with loop.for_(k.index(0), k.index(unroll), k.index(1), kind="unroll", name="u") as u:
                    with loop.for_(
                        k.index(0), k.index(lanes), k.index(1), kind="vectorize", factor=lanes, name="l"
                    ) as lane:
                        loop.store(k.const(0.0, f32), acc, [r, u, lane])
            with loop.for_(k.index(0), blocked, k.index(block), name="kb") as kb:
                with loop.for_(k.index(0), k.index(unroll), k.index(1), kind="unroll", name="u") as u:
                    start = loop.add(loop.add(head, kb), loop.mul(u, k.index(lanes)))
                    with loop.for_(k.index(0), k.index(count), k.index(1), kind="unroll", name="r") as r:
                        row = loop.add(first, r)
                        with loop.for_(
                            k.index(0), k.index(lanes), k.index(1), kind="vectorize", factor=lanes, name="l"
                        ) as lane:
                            kk = loop.add(start, lane)
                            previous = loop.load(acc, [r, u, lane])
                            loop.store(
                                multiply_add(k, loop.load(a, [*a_batch, row, kk]), rhs(kk), previous), acc, [r, u, lane]
                            )
            with loop.for_(k.index(0), k.index(count), k.index(1), kind="unroll", name="r") as r:
                row = loop.add(first, r)
                total = loop.alloc(type=BufferType((), f32, "local"))
                loop.store(k.const(0.0, f32), total)
                with loop.for_(k.index(0), k.index(unroll), k.index(1), kind="unroll", name="u") as u:
                    with loop.for_(k.index(0), k.index(lanes), k.index(1), kind="unroll", name="l") as lane:
                        loop.store(loop.add(loop.load(total), loop.load(acc, [r, u, lane])), total)
                edges = [(zero, head, "kh"), (end, depth, "kt")] if align else [(end, depth, "kt")]
                for lower, upper, name in edges:
                    with loop.for_(lower, upper, k.index(1), name=name) as kk:
                        term = multiply_add(k, loop.load(a, [*a_batch, row, kk]), rhs(kk), loop.load(total))
                        loop.store(term, total)
                indices = [*batch_ivs, row, k.index(0)]
                value = loop.load(total)
                if epilogue is not None:
                    value = epilogue(value, indices)
                loop.store(value, out, indices)

        with loop.for_(k.index(0), whole, k.index(rows), kind="parallel", name="i") as i:
            row_block(i, rows)
        if rows > 1:
            with loop.for_(whole, sizes[-2], k.index(1), name="it") as i:
                row_block(i, 1)


@contextmanager
def vector_columns(k: Kernel, count: Value, nr: int, name: str) -> Iterator[Value]:
    """``for jj in [0, count)`` (``count <= nr``) as ``ceil(nr / lanes)`` unrolled loops vectorized by the
    target's lanes: each is one vector register, where a single loop of ``nr`` lanes would leave LLVM to split
    an odd-sized vector (48 lanes become scalar shuffles)."""
    lanes = min(k.target.lanes(), nr)
    vectors = -(-nr // lanes)
    exact = isinstance(loop.const_value(count), int) and loop.const_value(count) == vectors * lanes
    with loop.for_(k.index(0), k.index(vectors), k.index(1), kind="unroll", name=f"{name}v") as v:
        base = loop.mul(v, k.index(lanes))
        upper = k.index(lanes) if exact else loop.min(k.index(lanes), loop.sub(count, base))
        with loop.for_(k.index(0), upper, k.index(1), kind="vectorize", factor=lanes, name=name) as lane:
            yield loop.add(base, lane)


def multiply_add(k: Kernel, x: Value, y: Value, acc: Value) -> Value:
    """``x * y + acc``: one fused multiply-add where the target has the instruction, else a product and a sum
    (``llvm.fma`` without FMA hardware is a call to ``fmaf`` per element); f32 sums of products are
    reassociated by every GEMM anyway, so the extra rounding changes nothing a test may rely on."""
    if k.target.fma or k.target.kind != "cpu":
        return loop.fma(x, y, acc)  # type: ignore[no-any-return]
    return loop.add(loop.mul(x, y), acc)  # type: ignore[no-any-return]


def _ceil_div(k: Kernel, size: Value, by: int) -> Value:
    """``ceil(size / by)`` for index values, in the prologue."""
    with k.prologue():
        return loop.div(loop.add(size, k.index(by - 1)), k.index(by))  # type: ignore[no-any-return]


def _product(k: Kernel, sizes: list[Value]) -> Value:
    """The product of index values (1 for none), in the prologue."""
    total = k.index(1)
    for size in sizes:
        with k.prologue():
            total = loop.mul(total, size)
    return total


def _pack_b(
    k: Kernel, b: Value, batch_sizes: list[Value], transposed: bool, cols: Value, depth: Value, panels: Value, nr: int
) -> Value:
    """B copied into ``nr``-column panels, zero past the last column: ``packed[q * P + jb, kk, jj] =
    B[q][kk, jb * nr + jj]`` for each of B's own batch positions ``q``, all panels in one parallel loop."""
    with k.prologue():
        count = loop.mul(_product(k, batch_sizes), panels)
    packed = loop.alloc(count, depth, type=BufferType((DYN, DYN, nr), f32, "global"))
    last_col = loop.sub(cols, k.index(1))
    with loop.for_(k.index(0), count, k.index(1), kind="parallel", name="pb") as pb:
        jb = loop.rem(pb, panels)
        b_batch = delinearize(loop.div(pb, panels), batch_sizes)
        j0 = loop.mul(jb, k.index(nr))
        full = loop.cmp(loop.sub(cols, j0), k.index(nr), predicate="ge")
        for clamp in (False, True):
            # Full panels copy rows (vector loads when B is not transposed); the last one pads with zeros.
            with loop.if_(loop.cmp(full, k.const(clamp, i1), predicate="ne")):
                with loop.for_(k.index(0), depth, k.index(1), name="pk") as kk:
                    with vector_columns(k, k.index(nr), nr, "pj") as jj:
                        j = loop.add(j0, jj)
                        column = loop.min(j, last_col) if clamp else j
                        value = loop.load(b, b_batch + ([column, kk] if transposed else [kk, column]))
                        if clamp:
                            value = loop.select(loop.cmp(j, cols, predicate="lt"), value, k.const(0.0, f32))
                        loop.store(value, packed, [pb, kk, jj])
    return packed


def _gemm_config(k: Kernel) -> Config | None:
    """The kernel's config when it is a gemm point (a fused group anchored on this product has one)."""
    return k.config if k.config is not None and k.config.family == "gemm" else None


@lowering("graph.matmul_packed")
def lower_matmul_packed(op: Operation, k: Kernel) -> None:
    """The blocked GEMM reading the right operand's pre-packed panels."""
    a, packed = k.inputs
    if not all(element_of(v) == f32 for v in (a, packed)):
        raise lowering_error(op, "the CPU lowering packs only f32 weights")
    transpose_a = bool(op.attr("transpose_a", False))
    shape = _gemm_shape(op)
    assert shape is not None
    config = _gemm_config(k) or default_point(shape, k.target)
    tiling = GemmTiling.of(config, k.target)
    emit_blocked_matmul(k, a, packed, k.outputs[0], transpose_a, False, None, tiling, prepacked=True)


@lowering("graph.matmul")
def lower_matmul(op: Operation, k: Kernel) -> None:
    """out[..., i, j] = sum over k of a[..., i, k] * b[..., k, j] (with the transpose flags)."""
    attrs = op.opdef.attr_kwargs(op)
    a, b = k.inputs
    emit_matmul(k, a, b, k.outputs[0], attrs["transpose_a"], attrs["transpose_b"], config=_gemm_config(k))
