"""The ``gpu_gemv`` kernel family: float matrix-vector products (a few rows of A) on CUDA, a lane per column.

A product of at most :data:`MAX_ROWS` rows of A by a ``K x N`` matrix B (f32 or f16, B not transposed) reads all
of B once and does two flops per element: it is bound by memory, and the tiled GEMM's ``bm``-row tiles would
compute mostly padding. A block takes 32 columns, one per lane of each of its warps; the warps split the
contraction, each reading rows ``k`` of B with its 32 lanes side by side (one coalesced 128-byte load per row for
f32), ``unroll`` rows per step so that several loads are in flight; every lane reads the same element of A (a
broadcast). The warps then add their partial sums through shared memory:

    for p in [0, ceil(N / 32)) gpu_block 0:
      partial = shared[warps - 1, rows, 32]
      for t in [0, 32 warps) gpu_thread 0:
        lane = t % 32, w = t / 32, n = 32 p + lane; acc[m] = 0
        for k0 in [w unroll, K, warps unroll):
          for u in [0, unroll) unrolled: k = k0 + u; acc[m] += A[m, k] B[k, n] where k < K and n < N
        warps > 0 write acc to partial; barrier; warp 0 adds them and writes C[m, n] for n < N

A transposed B (``N x K``, the layout of ``nn.Linear``'s weight) is read along its rows instead: a warp per column,
its lanes along the contraction (adjacent lanes adjacent elements of the row: coalesced), ``unroll`` loads of 32
elements per step; the lanes' sums meet by five ``xor`` shuffles and lane 0 writes:

    for p in [0, ceil(N / warps)) gpu_block 0:
      for t in [0, 32 warps) gpu_thread 0:
        lane = t % 32, n = min(warps p + t / 32, N - 1); acc[m] = 0
        for k0 in [lane, K, 32 unroll):
          for u in [0, unroll) unrolled: k = k0 + 32 u; acc[m] += A[m, k] B[n, k] where k < K
        acc[m] += shuffle_xor(acc[m], 16, 8, 4, 2, 1); lane 0 writes C[m, n] where warps p + t / 32 < N

Products with more rows, a batched B, or other element types keep :mod:`.gpu_gemm`'s tiled kernel.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.types import BufferType, ScalarType, f16, f32
from ..targets import Target
from ..targets.cuda import WARP
from .kernel import Kernel, delinearize, element_of
from .space import Config, Knob, Setting, Space

Write = Callable[[int, Value], None]
"""Writes the finished total of row ``m`` of C at the thread's column."""

MAX_ROWS = 8
"""The most rows of A the family takes: each thread keeps one accumulator per row."""
WARPS = (4, 8, 16, 32)
UNROLL = (1, 2, 4, 8)


def gemv_rows(batch: int, m: int, transpose_b: bool, batched_b: bool, element: ScalarType) -> int | None:
    """The rows of A (its leading dims folded: ``batch`` products of ``m`` rows) of a product this family builds,
    or None: at most :data:`MAX_ROWS`, by one 2-D B of f32 or f16 (transposed or not)."""
    if batched_b or element not in (f32, f16):
        return None
    rows = batch * m
    return rows if 1 <= rows <= MAX_ROWS else None


def gpu_gemv_space(op: Operation, target: Target, depth: int) -> Space:
    """Warps per block (splitting a contraction of ``depth``, at most one per row of B; for a transposed B, each a
    column) and loads per lane per step."""
    warps = tuple(w for w in WARPS if w <= max(WARPS[0], depth))
    return Space(
        "gpu_gemv",
        (
            Knob("warps", warps, "warps per block: splitting the contraction, or (B transposed) a column each"),
            Knob("unroll", UNROLL, "rows of B each lane loads per step (loads in flight)"),
        ),
    )


def gpu_gemv_default(depth: int, transpose_b: bool = False) -> Config:
    """16 warps (512 threads: enough warps per SM to keep memory busy) and four rows per step, fewer warps where
    the contraction is short; a transposed B: 8 columns per block, four loads per lane per step."""
    warps = 8 if transpose_b else 16 if depth >= 16 * 4 * 4 else 4
    values: dict[str, Setting] = {"warps": warps, "unroll": 4}
    return Config("gpu_gemv", tuple(values.items()))


def lower_gpu_gemv(k: Kernel, rows: int, depth: int, cols: int, transpose_b: bool = False) -> None:
    """The kernel of the module docstring at ``k``'s config: ``C = A B`` (``A B^T`` with ``transpose_b``) for
    ``rows`` rows of A (its leading dims folded), ``K = depth``, ``N = cols``; f16 operands are multiplied and
    summed in f32."""
    assert k.config is not None
    if transpose_b:
        _lower_transposed(k, rows, depth, cols)
        return
    warps, unroll = k.config.int("warps"), k.config.int("unroll")
    a, b, c, a_lead, c_lead, element = _operands(k)
    i = k.index

    with loop.for_(0, -(-cols // WARP), kind="gpu_block", axis=0, name="p") as p:
        partial = loop.alloc(type=BufferType((warps - 1, rows, WARP), f32, "shared")) if warps > 1 else None
        with loop.for_(0, WARP * warps, kind="gpu_thread", axis=0, name="t") as t:
            lane, w = loop.rem(t, i(WARP)), loop.div(t, i(WARP))
            n = loop.add(loop.mul(p, i(WARP)), lane)
            inside = loop.cmp(n, i(cols), predicate="lt")
            column = loop.min(n, i(cols - 1))  # lanes past N read the last column and write nothing
            acc = _zeroed(k, rows)
            at = [delinearize(i(m), a_lead) if a_lead else [] for m in range(rows)]
            with loop.for_(loop.mul(w, i(unroll)), depth, warps * unroll, name="k0") as k0:
                _accumulate(k, acc, at, a, lambda q: loop.load(b, q, column), k0, unroll, 1, warps * unroll, depth)

            def write(m: int, total: Value) -> None:
                loop.store(_narrowed(total, element), c, *delinearize(i(m), c_lead), n)

            if partial is None:
                with loop.if_(inside):
                    for m in range(rows):
                        write(m, loop.load(acc, i(m)))
                return
            add_warp_partials(k, acc, partial, w, lane, rows, inside, write)


def _lower_transposed(k: Kernel, rows: int, depth: int, cols: int) -> None:
    """The transposed-B kernel of the module docstring: a warp per column, lanes along K, shuffles to add."""
    assert k.config is not None
    warps, unroll = k.config.int("warps"), k.config.int("unroll")
    a, b, c, a_lead, c_lead, element = _operands(k)
    i = k.index

    with loop.for_(0, -(-cols // warps), kind="gpu_block", axis=0, name="p") as p:
        with loop.for_(0, WARP * warps, kind="gpu_thread", axis=0, name="t") as t:
            lane = loop.rem(t, i(WARP))
            n = loop.add(loop.mul(p, i(warps)), loop.div(t, i(WARP)))
            column = loop.min(n, i(cols - 1))  # a warp past N computes the last column again and writes nothing
            acc = _zeroed(k, rows)
            at = [delinearize(i(m), a_lead) if a_lead else [] for m in range(rows)]
            with loop.for_(lane, depth, WARP * unroll, name="k0") as k0:
                _accumulate(k, acc, at, a, lambda q: loop.load(b, column, q), k0, unroll, WARP, WARP * unroll, depth)
            totals = []
            for m in range(rows):
                total = loop.load(acc, i(m))
                for offset in (16, 8, 4, 2, 1):
                    total = loop.add(total, loop.shuffle(total, i(offset), mode="xor", width=WARP))
                totals.append(total)
            first = loop.cmp(lane, i(0), predicate="eq")
            with loop.if_(loop.and_(first, loop.cmp(n, i(cols), predicate="lt"))):
                for m, total in enumerate(totals):
                    loop.store(_narrowed(total, element), c, *delinearize(i(m), c_lead), n)


def add_warp_partials(
    k: Kernel, acc: Value, partial: Value, w: Value, lane: Value, rows: int, inside: Value, write: Write
) -> None:
    """Warps ``1..`` of a block leave their ``rows`` sums (``acc``) in shared ``partial`` at their lane, meet at a
    barrier, and warp 0 adds them to its own and writes each row's total through ``write`` where ``inside``."""
    i = k.index
    with loop.if_(loop.cmp(w, i(0), predicate="gt")):
        for m in range(rows):
            loop.store(loop.load(acc, i(m)), partial, loop.sub(w, i(1)), i(m), lane)
    loop.barrier()
    with loop.if_(loop.and_(loop.cmp(w, i(0), predicate="eq"), inside)):
        for m in range(rows):
            total = loop.load(acc, i(m))
            for other in range(partial.type.static_shape[0]):  # type: ignore[attr-defined]
                total = loop.add(total, loop.load(partial, i(other), i(m), lane))
            write(m, total)


def _operands(k: Kernel) -> tuple[Value, Value, Value, list[Value], list[Value], ScalarType]:
    """A, B, C, the index values of A's and C's leading dims (folded into rows), and C's element type."""
    a, b = k.inputs
    (c,) = k.outputs
    a_lead = [k.index(d) for d in a.type.static_shape[:-1]]  # type: ignore[attr-defined]
    c_lead = [k.index(d) for d in c.type.static_shape[:-1]]  # type: ignore[attr-defined]
    return a, b, c, a_lead, c_lead, c.type.element  # type: ignore[attr-defined]


def _accumulate(
    k: Kernel,
    acc: Value,
    at: list[list[Value]],
    a: Value,
    load_b: Callable[[Value], Value],
    k0: Value,
    unroll: int,
    stride: int,
    step: int,
    depth: int,
) -> None:
    """One step of a GEMV's contraction loop (``k0`` from its lane's or warp's start by ``step``): for ``u <
    unroll``, ``acc[m] += A[m, q] B(q)`` at ``q = k0 + u stride`` (``at[m]``: A's leading indices of row ``m``;
    ``load_b(q)``: B's element at contraction index ``q``), in f32; steps past K read its last element and add 0
    (only where K is not a multiple of ``step`` can they be)."""
    i = k.index
    element = element_of(a)
    for u in range(unroll):
        q = loop.add(k0, i(stride * u)) if u else k0
        guard = None if u == 0 or depth % step == 0 else loop.cmp(q, i(depth), predicate="lt")
        at_k = q if guard is None else loop.min(q, i(depth - 1))
        value_b = _widened(load_b(at_k), element)
        if guard is not None:
            value_b = loop.select(guard, value_b, k.const(0.0, f32))
        for m, lead in enumerate(at):
            value_a = _widened(loop.load(a, *lead, at_k), element)
            loop.store(loop.fma(value_a, value_b, loop.load(acc, i(m))), acc, i(m))


def _widened(value: Value, element: ScalarType) -> Value:
    """An operand element in f32, the type GEMVs sum in."""
    return value if element == f32 else loop.cast(value, dtype=f32)  # type: ignore[no-any-return]


def _narrowed(total: Value, element: ScalarType) -> Value:
    """An f32 sum as C's element type."""
    return total if element == f32 else loop.cast(total, dtype=element)  # type: ignore[no-any-return]


def _zeroed(k: Kernel, rows: int) -> Value:
    """A local accumulator per row of A, zeroed."""
    acc = loop.alloc(type=BufferType((rows,), f32, "local"))
    for m in range(rows):
        loop.store(k.const(0.0, f32), acc, k.index(m))
    return acc  # type: ignore[no-any-return]
