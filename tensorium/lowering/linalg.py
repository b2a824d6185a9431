"""Lowering matmul.

f32 matmuls get the blocked GEMM of :class:`GemmTiling`: the result is cut into ``mr x nr`` tiles, each
accumulated in a local tile over the whole contraction with one fused multiply-add per element and step,
the ``nr`` columns on vector lanes and the ``mr`` rows unrolled, so that the tile lives in vector
registers (the register-blocked micro-kernel); B is read in ``nr``-column panels, packed into a
contiguous, zero-padded copy when it is transposed; the (batch, panel) pairs (or (batch, row tile) pairs,
when there are few panels) run in parallel.

Other element types use the simple nest: loops over batch dims and the result's rows ``i`` and columns
``j``, a local accumulator and the contraction loop ``k`` inside. Batch dims broadcast as in the graph
op. f16 and bf16 accumulate in f32 (as the reference computes); integers accumulate in their own type,
which wraps exactly as the reference's result does.

:func:`emit_matmul` is the reusable part: fused kernels call it with an ``epilogue`` that turns each
accumulated element into the value stored (bias, activation, residual add, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.types import DYN, BufferType, f32, i1
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

Epilogue = Callable[[Value, list[Value]], Value]
"""Turns an accumulated element (in the accumulation type) and its result indices into the value stored."""


@dataclass(frozen=True)
class GemmTiling:
    """How the blocked GEMM cuts the work: data for the autotuner, not a code path.

    ``mr`` rows x ``nr`` columns per register tile (``nr`` a multiple of the vector width: 6 x 64 keeps
    24 of the 32 AVX-512 registers accumulating); ``pack_b``: copy B into contiguous panels even when it is
    not transposed (a transposed B is always packed, since its columns are strided; row-major panels are
    read well by the prefetchers, and measured on this machine packing them never paid, up to 1024^3);
    ``parallel_panels``: run column panels in parallel when there are at least this many, else row tiles.
    """

    mr: int = 6
    nr: int = 64
    pack_b: bool = False
    parallel_panels: int = 4


DEFAULT_TILING = GemmTiling()


def emit_matmul(
    k: Kernel,
    a: Value,
    b: Value,
    out: Value,
    transpose_a: bool = False,
    transpose_b: bool = False,
    epilogue: Epilogue | None = None,
    prefix: str = "",
) -> None:
    """Build loops computing ``out = epilogue(a @ b)`` into the buffer ``out`` of kernel ``k``.

    ``a``, ``b`` and ``out`` are buffers of ``k`` (arguments or allocations) shaped as the graph op's
    operands and result. Without an epilogue the accumulated value is converted to ``out``'s element type.
    Outside f32 the loops are named ``i``, ``j``, ``k`` (and ``b0``, ... over batch dims) after ``prefix``,
    which keeps names unique (as schedules need) in a kernel of several products.
    """
    shape = shape_of(out)
    if all(element_of(v) == f32 for v in (a, b, out)) and shape[-1] == 1 and not transpose_a:
        emit_matvec(k, a, b, out, transpose_b, epilogue)
        return
    if all(element_of(v) == f32 for v in (a, b, out)):
        emit_blocked_matmul(k, a, b, out, transpose_a, transpose_b, epilogue, DEFAULT_TILING)
        return
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
    """The register-blocked f32 GEMM (see the module docstring), over the batch dims of ``out``.

    One parallel loop runs over every (batch, panel or row tile) pair, so batched products of small
    matrices (attention heads) keep every thread busy. With ``prepacked``, ``b`` already holds the panels
    ``[P, K, nr]`` (graph.matmul_packed).
    """
    shape = shape_of(out)
    a_rank, b_rank = len(shape_of(a)), 2 if prepacked else len(shape_of(b))
    if prepacked:
        width = shape_of(b)[-1]
        assert isinstance(width, int)
        tiling = GemmTiling(tiling.mr, width, tiling.pack_b, tiling.parallel_panels)
    sizes = k.sizes(out)
    rows, cols = sizes[-2], sizes[-1]
    depth = k.size(a, a_rank - 2 if transpose_a else a_rank - 1)
    mr, nr = tiling.mr, tiling.nr
    panels = _ceil_div(k, cols, nr)
    tiles = _ceil_div(k, rows, mr)
    last_row = loop.sub(rows, k.index(1))
    cols_static = shape[-1]
    by_panels = not (isinstance(cols_static, int) and -(-cols_static // nr) < tiling.parallel_panels)
    zero = k.const(0.0, f32)
    b_batch_sizes = [] if prepacked else k.sizes(b)[: b_rank - 2]
    packed = b if prepacked else None
    if not prepacked and (transpose_b or tiling.pack_b):
        packed = _pack_b(k, b, b_batch_sizes, transpose_b, cols, depth, panels, nr)

    def tile(batch_ivs: list[Value], panel: Value | None, jb: Value, ib: Value, width: Value) -> None:
        """One ``mr x width`` tile of the result (``width`` is ``nr`` but in the last, partial panel)."""
        a_batch = k.broadcast_indices(a, a_rank - 2, shape[:-2], batch_ivs)
        b_batch = [] if prepacked else k.broadcast_indices(b, b_rank - 2, shape[:-2], batch_ivs)
        j0, i0 = loop.mul(jb, k.index(nr)), loop.mul(ib, k.index(mr))
        acc = loop.alloc(type=BufferType((mr, nr), f32, "local"))
        with loop.for_(k.index(0), k.index(mr), k.index(1), kind="unroll", name="ii") as ii:
            with loop.for_(k.index(0), k.index(nr), k.index(1), kind="vectorize", factor=nr, name="jj") as jj:
                loop.store(zero, acc, [ii, jj])
        # Past the last column the packed panel holds zeros; unpacked, only ``width`` columns are read.
        read = k.index(nr) if packed is not None else width
        with loop.for_(k.index(0), depth, k.index(1), name="k") as kk:
            with loop.for_(k.index(0), k.index(mr), k.index(1), kind="unroll", name="ii") as ii:
                row = loop.min(loop.add(i0, ii), last_row)
                lhs = loop.load(a, a_batch + ([kk, row] if transpose_a else [row, kk]))
                with loop.for_(k.index(0), read, k.index(1), kind="vectorize", factor=nr, name="jj") as jj:
                    if packed is not None:
                        assert panel is not None
                        rhs = loop.load(packed, [panel, kk, jj])
                    else:
                        rhs = loop.load(b, b_batch + [kk, loop.add(j0, jj)])
                    loop.store(loop.fma(lhs, rhs, loop.load(acc, [ii, jj])), acc, [ii, jj])
        with loop.for_(k.index(0), k.index(mr), k.index(1), kind="unroll", name="ii") as ii:
            i = loop.add(i0, ii)
            with loop.if_(loop.cmp(i, rows, predicate="lt")):
                with loop.for_(k.index(0), width, k.index(1), kind="vectorize", factor=nr, name="jj") as jj:
                    indices = [*batch_ivs, i, loop.add(j0, jj)]
                    value = loop.load(acc, [ii, jj])
                    if epilogue is not None:
                        value = epilogue(value, indices)
                    loop.store(convert(value, f32), out, indices)

    def tiles_of(batch_ivs: list[Value], jb: Value, ib: Value) -> None:
        # Two copies of the tile: with a constant width (the tile stays in registers) and the last panel's.
        panel = None
        if packed is not None:
            b_batch = [] if prepacked else k.broadcast_indices(b, b_rank - 2, shape[:-2], batch_ivs)
            panel = loop.add(loop.mul(linearize(b_batch, b_batch_sizes, k.index(0)), panels), jb)
        left = loop.sub(cols, loop.mul(jb, k.index(nr)))
        with loop.if_(loop.cmp(left, k.index(nr), predicate="ge")):
            tile(batch_ivs, panel, jb, ib, k.index(nr))
        with loop.if_(loop.cmp(left, k.index(nr), predicate="lt")):
            tile(batch_ivs, panel, jb, ib, left)

    outer, inner = ((panels, "jb"), (tiles, "ib")) if by_panels else ((tiles, "ib"), (panels, "jb"))
    batches = _product(k, sizes[:-2])
    with k.prologue():
        work = loop.mul(batches, outer[0])
    with loop.for_(k.index(0), work, k.index(1), kind="parallel", name="t") as t:
        o = loop.rem(t, outer[0])
        batch_ivs = delinearize(loop.div(t, outer[0]), sizes[:-2])
        with loop.for_(k.index(0), inner[0], k.index(1), name=inner[1]) as n:
            tiles_of(batch_ivs, o, n) if by_panels else tiles_of(batch_ivs, n, o)


VECTOR, UNROLL = 16, 4
"""The matrix-vector product's lanes and independent accumulators (4 x 16 f32: 4 AVX-512 registers)."""


def emit_matvec(k: Kernel, a: Value, b: Value, out: Value, transpose_b: bool, epilogue: Epilogue | None = None) -> None:
    """``out[..., i, 0] = dot(a[..., i, :], b[..., :, 0])`` for f32: rows in parallel, each a dot product on
    ``UNROLL`` vector accumulators (a reassociated sum, like every BLAS), then the tail and a lane sum."""
    shape = shape_of(out)
    batch = len(shape) - 2
    a_rank, b_rank = len(shape_of(a)), len(shape_of(b))
    sizes = k.sizes(out)
    depth = k.size(a, a_rank - 1)
    block = VECTOR * UNROLL
    with k.prologue():
        blocked = loop.mul(loop.div(depth, k.index(block)), k.index(block))
    with k.loops(sizes[:-2], [f"b{n}" for n in range(batch)]) as batch_ivs:
        a_batch = k.broadcast_indices(a, a_rank - 2, shape[:-2], batch_ivs)
        b_batch = k.broadcast_indices(b, b_rank - 2, shape[:-2], batch_ivs)

        def rhs(kk: Value) -> Value:
            return loop.load(b, b_batch + ([k.index(0), kk] if transpose_b else [kk, k.index(0)]))  # type: ignore[no-any-return]

        with loop.for_(k.index(0), sizes[-2], k.index(1), kind="parallel", name="i") as i:
            acc = loop.alloc(type=BufferType((UNROLL, VECTOR), f32, "local"))
            with loop.for_(k.index(0), k.index(UNROLL), k.index(1), kind="unroll", name="u") as u:
                with loop.for_(
                    k.index(0), k.index(VECTOR), k.index(1), kind="vectorize", factor=VECTOR, name="l"
                ) as lane:
                    loop.store(k.const(0.0, f32), acc, [u, lane])
            with loop.for_(k.index(0), blocked, k.index(block), name="kb") as kb:
                with loop.for_(k.index(0), k.index(UNROLL), k.index(1), kind="unroll", name="u") as u:
                    start = loop.add(kb, loop.mul(u, k.index(VECTOR)))
                    with loop.for_(
                        k.index(0), k.index(VECTOR), k.index(1), kind="vectorize", factor=VECTOR, name="l"
                    ) as lane:
                        kk = loop.add(start, lane)
                        term = loop.fma(loop.load(a, [*a_batch, i, kk]), rhs(kk), loop.load(acc, [u, lane]))
                        loop.store(term, acc, [u, lane])
            total = loop.alloc(type=BufferType((), f32, "local"))
            loop.store(k.const(0.0, f32), total)
            with loop.for_(k.index(0), k.index(UNROLL), k.index(1), kind="unroll", name="u") as u:
                with loop.for_(k.index(0), k.index(VECTOR), k.index(1), kind="unroll", name="l") as lane:
                    loop.store(loop.add(loop.load(total), loop.load(acc, [u, lane])), total)
            with loop.for_(blocked, depth, k.index(1), name="kt") as kk:
                loop.store(loop.fma(loop.load(a, [*a_batch, i, kk]), rhs(kk), loop.load(total)), total)
            indices = [*batch_ivs, i, k.index(0)]
            value = loop.load(total)
            if epilogue is not None:
                value = epilogue(value, indices)
            loop.store(value, out, indices)


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
                    with loop.for_(k.index(0), k.index(nr), k.index(1), kind="vectorize", factor=nr, name="pj") as jj:
                        j = loop.add(j0, jj)
                        column = loop.min(j, last_col) if clamp else j
                        value = loop.load(b, b_batch + ([column, kk] if transposed else [kk, column]))
                        if clamp:
                            value = loop.select(loop.cmp(j, cols, predicate="lt"), value, k.const(0.0, f32))
                        loop.store(value, packed, [pb, kk, jj])
    return packed


@lowering("graph.matmul_packed")
def lower_matmul_packed(op: Operation, k: Kernel) -> None:
    """The blocked GEMM reading the right operand's pre-packed panels."""
    a, packed = k.inputs
    if not all(element_of(v) == f32 for v in (a, packed)):
        raise lowering_error(op, "the CPU lowering packs only f32 weights")
    transpose_a = bool(op.attr("transpose_a", False))
    emit_blocked_matmul(k, a, packed, k.outputs[0], transpose_a, False, None, DEFAULT_TILING, prepacked=True)


@lowering("graph.matmul")
def lower_matmul(op: Operation, k: Kernel) -> None:
    """out[..., i, j] = sum over k of a[..., i, k] * b[..., k, j] (with the transpose flags)."""
    attrs = op.opdef.attr_kwargs(op)
    a, b = k.inputs
    emit_matmul(k, a, b, k.outputs[0], attrs["transpose_a"], attrs["transpose_b"])
