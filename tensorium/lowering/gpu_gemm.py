"""The ``gpu_gemm`` kernel family: matmul on GPU targets with shared-memory tiles and register tiles.

A block computes a ``bm x bn`` tile of C with ``(bm / tm) * (bn / tn)`` threads, each accumulating a
``tm x tn`` register tile. The contraction runs in steps of ``bk``: the block's threads copy an
``bm x bk`` tile of A and a ``bk x bn`` tile of B into shared memory together (each thread a strided
share, zeros past the edges), meet at a barrier, multiply out of shared memory into their registers
(each A and B element read once per register tile), and meet again before the next step overwrites
the tiles. Blocks run along grid x (column tiles), y (row tiles) and z (the batch).

    for z in [0, batch) gpu_block 2, y in [0, ceil(M / bm)) gpu_block 1, x in [0, ceil(N / bn)) gpu_block 0:
      As = shared[bm, bk]; Bs = shared[bk, bn]
      for t in [0, threads) gpu_thread 0:
        acc = local[tm, tn] = 0
        for k0 in [0, K, bk):
          copy A[z, y*bm.., k0..] -> As and B[z, k0.., x*bn..] -> Bs; barrier
          for kk in [0, bk): a = As[ty*tm + i, kk] (i < tm); acc[i, j] += a[i] * Bs[kk, tx*tn + j]
          barrier
        C[z, y*bm + ty*tm + i, x*bn + tx*tn + j] = acc[i, j] where inside C

f32 products with static shapes (B may be transposed, batch dims equal or B two-dimensional); others, and
fused groups, keep the ``gemm`` family, which the GPU schedule binds to the grid. The knobs (``bm``, ``bn``,
``bk``, ``tm``, ``tn``) are the family's search space, limited by the target's shared memory and threads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.loop.warp import MMA_SHAPE
from ..ir.types import BufferType, ScalarType, TensorType, f16, f32, i1, index
from ..targets import Target
from ..targets.cuda import ARCHS, WARP
from .gpu_gemv import gemv_rows, gpu_gemv_default, gpu_gemv_space, lower_gpu_gemv
from .kernel import LOWERINGS, Kernel, register_target_lowering
from .space import Config, Family, Knob, Setting, Space, register_target_family

TILES = (16, 32, 64, 128)
STEPS = (8, 16, 32)
REGISTER_TILES = (1, 2, 4, 8)
MMA_M, MMA_N, MMA_K = MMA_SHAPE
MMA_ARCH = 75
"""The first architecture with ``mma.sync`` on f16 (Turing: m16n8k8, which the emitter pairs; m16n8k16 from sm_80)."""


@dataclass(frozen=True)
class GpuGemmShape:
    """A product the family builds: ``batch`` products of ``m x k`` by ``k x n`` (B given as ``n x k`` when
    ``transpose_b``; ``batched_b`` when B has the batch dims too)."""

    batch: int
    m: int
    n: int
    k: int
    transpose_b: bool
    batched_b: bool
    element: ScalarType = f32

    @property
    def gemv_rows(self) -> int | None:
        """The rows of A when :mod:`.gpu_gemv` builds this product (at most 8, one 2-D B), else None."""
        return gemv_rows(self.batch, self.m, self.transpose_b, self.batched_b, self.element)

    @staticmethod
    def of(op: Operation, element: ScalarType = f32) -> GpuGemmShape | None:
        """The shape of ``graph.matmul`` op ``op`` on ``element`` operands, or None when this family does not build
        it (f16 products only on CUDA targets: :func:`gemm_shape`)."""
        if op.name != "graph.matmul" or op.attr("transpose_a", False):
            return None
        types = [v.type for v in (*op.operands, *op.results)]
        if not all(isinstance(t, TensorType) and t.element == element and t.is_static for t in types):
            return None
        a, b, _ = (t.static_shape for t in types if isinstance(t, TensorType))
        if len(a) < 2 or len(b) < 2 or (len(b) > 2 and b[:-2] != a[:-2]):
            return None
        transpose_b = bool(op.attr("transpose_b", False))
        n = b[-2] if transpose_b else b[-1]
        batch = 1
        for d in a[:-2]:
            batch *= d
        return GpuGemmShape(batch, a[-2], n, a[-1], transpose_b, len(b) > 2, element)


def gemm_shape(op: Operation, target: Target) -> GpuGemmShape | None:
    """The shape of an f32 product, or of an f16 one where the target has ``mma.sync`` (sm_75 on: every CUDA target)."""
    shape = GpuGemmShape.of(op)
    if shape is None and target.kind == "cuda" and _arch_number(target) >= MMA_ARCH:
        shape = GpuGemmShape.of(op, f16)
    return shape


def _arch_number(target: Target) -> int:
    digits = target.cpu.removeprefix("sm_").rstrip("a")
    return int(digits) if digits.isdigit() else 0


def _warps(values: Mapping[str, Setting]) -> tuple[int, int]:
    """Warps along the rows and columns of a block tile with ``mma``: each a ``16 tm x 8 tn`` tile of C."""
    bm, bn, tm, tn = (int(values[n]) for n in ("bm", "bn", "tm", "tn"))
    return bm // (MMA_M * tm), bn // (MMA_N * tn)


def _threads(values: Mapping[str, Setting]) -> int:
    if values.get("mma", False):
        rows, cols = _warps(values)
        return WARP * rows * cols
    return (int(values["bm"]) // int(values["tm"])) * (int(values["bn"]) // int(values["tn"]))


def _mma_fits(values: Mapping[str, Setting]) -> bool:
    """Whether the block tile splits into whole warp tiles of whole ``mma`` tiles, ``bk`` into steps of 16."""
    bm, bn, bk, tm, tn = (int(values[n]) for n in ("bm", "bn", "bk", "tm", "tn"))
    return bk % MMA_K == 0 and bm % (MMA_M * tm) == 0 and bn % (MMA_N * tn) == 0


def gpu_gemm_space(op: Operation, target: Target) -> Space | None:
    """The family's space for ``op`` on ``target``: tiles whose threads fill whole warps within the block limit
    and whose shared tiles fit the target's shared memory."""
    shape = gemm_shape(op, target)
    if shape is None:
        return None
    if target.kind == "cuda" and shape.gemv_rows is not None:
        return gpu_gemv_space(op, target, shape.k)
    space = tile_space("gpu_gemm", target, mma=shape.element == f16)
    if target.kind != "cuda":
        return space
    async_arch = _arch_number(target) >= ASYNC_ARCH
    proven = vector_loads_proven(shape) and (shape.element == f32 or async_arch)
    vector = Knob("vector", (True, False) if proven else (False,), "tiles copied by groups of 16 bytes")
    copies = (True, False) if proven and async_arch else (False,)
    asynchronous = Knob("async_copy", copies, "vector tile copies by cp.async (sm_80 on), with two stages")
    unroll = Knob("unroll", (True, False), "the bk steps of a shared tile unrolled (the f32-tile kernel)")
    inner = space.valid

    def valid(values: Mapping[str, Setting]) -> bool:
        if values.get("async_copy", False) and not (values.get("vector", False) and int(values["stages"]) == 2):
            return False
        if shape.element == f16 and values.get("vector", False) and not _f16_groups(values):
            return False
        if values.get("unroll", False) and values.get("mma", False):
            return False  # the mma kernel's steps are unrolled already
        return inner is None or inner(values)

    return Space(space.family, (*space.knobs, vector, asynchronous, unroll), valid)


ASYNC_ARCH = 80
"""The first architecture with ``cp.async`` (Ampere)."""


def _f16_groups(values: Mapping[str, Setting]) -> bool:
    """Whether ``vector`` may hold for an f16 product at ``values``: its groups of eight are the ``mma`` kernel's,
    copied by ``cp.async`` (the NVPTX emitter loads f16 element by element otherwise: it widens each to compute)."""
    return bool(values.get("mma", False)) and bool(values.get("async_copy", False))


VECTOR = 4
"""Elements per vector load of the ``vector`` knob: four f32, 16 bytes (``ld.global.v4.f32``)."""
HALF_VECTOR = 8
"""Elements per 16-byte group of the f16 tiles of ``mma`` (the ``vector`` knob on f16 products)."""


def vector_loads_proven(shape: GpuGemmShape) -> bool:
    """Whether every group of 16 bytes the tile copies would load together is 16-byte aligned (given buffers that
    start so): operands whose rows (K for A, N for B, K for a transposed B) are multiples of a group (4 f32 or 8
    f16) long, so that a group starting at a multiple of its size never crosses a row or an edge of the matrix.
    f16 groups serve the ``mma`` kernel only, which copies a transposed B element by element."""
    width = VECTOR if shape.element == f32 else HALF_VECTOR
    rows_b = shape.k if shape.transpose_b else shape.n
    return shape.element in (f32, f16) and shape.k % width == 0 and rows_b % width == 0


MMA_PAD = 8
"""f16 elements past the end of each row of the ``mma`` kernel's shared tiles: rows then start 16 bytes apart
modulo 128, so that the eight row addresses of one ``ldmatrix`` phase fall in distinct banks."""


def shared_bytes(values: Mapping[str, Setting]) -> int:
    """Shared memory of a tiled GEMM at ``values``: ``stages`` A and B tiles, f32, or f16 rows padded with ``mma``."""
    bm, bn, bk, stages = (int(values[n]) for n in ("bm", "bn", "bk", "stages"))
    if values.get("mma", False):
        return 2 * (bm * (bk + MMA_PAD) + bk * (bn + MMA_PAD)) * stages
    return 4 * bk * (bm + bn) * stages


def tile_space(
    family: str, target: Target, mma: bool = False, steps: tuple[int, ...] = STEPS, columns: tuple[int, ...] = TILES
) -> Space:
    """The tile knobs of :func:`emit_tiled_gemm` as the space of kernel family ``family`` on ``target``; with
    ``mma`` (f16 products), the ``mma`` knob too; ``steps`` and ``columns`` the legal ``bk`` and ``bn``."""
    arch = ARCHS.get(target.cpu)
    most_threads = arch.max_threads if arch is not None else 1024
    shared = target.l1d or 48 * 1024

    def valid(values: Mapping[str, Setting]) -> bool:
        if values.get("mma", False) and not _mma_fits(values):
            return False
        threads = _threads(values)
        return threads % WARP == 0 and 0 < threads <= most_threads and shared_bytes(values) <= shared

    knobs: tuple[Knob, ...] = (
        Knob("bm", TILES, "rows of C per block"),
        Knob("bn", columns, "columns of C per block"),
        Knob("bk", steps, "contraction steps per shared-memory tile"),
        Knob("tm", REGISTER_TILES, "rows of each thread's register tile"),
        Knob("tn", REGISTER_TILES, "columns of each thread's register tile"),
        Knob("stages", (1, 2), "shared-memory tile stages (2: the next step's copy overlaps this one's multiply)"),
    )
    if mma:
        knobs = (*knobs, Knob("mma", (True, False), "f16 tiles through mma.sync (each warp 16 tm x 8 tn of C)"))
    return Space(family, knobs, valid)


DEFAULT_TILES: tuple[tuple[int, dict[str, Setting]], ...] = (
    (32 * 32, {"bm": 16, "bn": 16, "bk": 8, "tm": 2, "tn": 2}),
    (256 * 256, {"bm": 32, "bn": 32, "bk": 16, "tm": 2, "tn": 2}),
    (1024 * 1024, {"bm": 64, "bn": 64, "bk": 16, "tm": 4, "tn": 4}),
)
"""The default rule by the size of C (up to so many elements): small tiles for small products, so that
blocks are not mostly idle threads; larger register tiles as C grows (more reuse of each shared element)."""
LARGE_TILES: dict[str, Setting] = {"bm": 128, "bn": 128, "bk": 8, "tm": 8, "tn": 8}
CUDA_LARGE_TILES: dict[str, Setting] = {"bm": 64, "bn": 64, "bk": 16, "tm": 4, "tn": 4}
"""The f32 tiles beyond :data:`DEFAULT_TILES` on CUDA: on an H100 at 4096^3 with ``cp.async`` copies, 64 x 64 tiles
took 4.00 ms, :data:`LARGE_TILES` 4.86 ms, 128 x 128 with ``bk=16`` 4.60 ms (``benchmarks/gpu_cuda.py --sweep``)."""


MMA_TILES: tuple[tuple[int, dict[str, Setting]], ...] = (
    (64 * 64, {"bm": 32, "bn": 32, "bk": 16, "tm": 1, "tn": 2}),
    (512 * 512, {"bm": 64, "bn": 64, "bk": 32, "tm": 2, "tn": 4}),
)
"""The default ``mma`` tiles by the size of C: four warps of 16 x 16 for small products, of 32 x 32 for middling
ones, then :data:`LARGE_MMA_TILES`."""
LARGE_MMA_TILES: dict[str, Setting] = {"bm": 128, "bn": 128, "bk": 32, "tm": 4, "tn": 4}
"""Eight warps of 64 x 32 (16 mma tiles, 64 accumulators a thread)."""


def gpu_gemm_default(op: Operation, target: Target, space: Space) -> Config:
    """The point :data:`DEFAULT_TILES` gives for the size of C (:data:`LARGE_TILES` beyond them, or on CUDA
    :data:`CUDA_LARGE_TILES`); f16 products through ``mma`` with :data:`MMA_TILES`. On CUDA, tiles are copied by
    16-byte groups where :func:`vector_loads_proven`, through ``cp.async`` from sm_80 on when there are two stages
    (measured on an H100 at 4096^3: f16 3.60 -> 0.555 ms, f32 5.38 -> 4.86 ms at the same tiles)."""
    shape = gemm_shape(op, target)
    assert shape is not None
    if space.family == "gpu_gemv":
        return gpu_gemv_default(shape.k, shape.transpose_b)
    if shape.element != f16:
        large = CUDA_LARGE_TILES if target.kind == "cuda" else LARGE_TILES
        config = tile_default("gpu_gemm", shape.m, shape.n, shape.k, large)
    else:
        size = shape.m * shape.n
        values = next((tiles for most, tiles in MMA_TILES if size <= most), LARGE_MMA_TILES)
        stages = 2 if shape.k > int(values["bk"]) else 1
        config = Config("gpu_gemm", (*values.items(), ("stages", stages), ("mma", True)))
    if target.kind != "cuda":
        return config
    proven = vector_loads_proven(shape)
    copies = proven and _arch_number(target) >= ASYNC_ARCH and config.int("stages") == 2
    vector = copies if shape.element == f16 else proven  # f16 groups are cp.async's only
    # unroll stays off until measured on a GPU (the H100 numbers above are without it)
    return Config(config.family, (*config.values, ("vector", vector), ("async_copy", copies), ("unroll", False)))


def tile_default(family: str, m: int, n: int, k: int, large: dict[str, Setting] = LARGE_TILES) -> Config:
    """The tiles :data:`DEFAULT_TILES` gives for an ``m x n`` C (``large`` beyond them; two stages when ``k`` takes
    several steps)."""
    size = m * n
    values = next((tiles for most, tiles in DEFAULT_TILES if size <= most), large)
    return Config(family, (*values.items(), ("stages", 2 if k > int(values["bk"]) else 1)))


Operand = Callable[[Value, Value, Value], Value]
"""An element of a GEMM operand (or a predicate) at (batch ``z``, row, column) of its matrix."""
Store = Callable[[Value, Value, Value, Value], None]
"""Writes the finished element ``value`` of C at (batch ``z``, row, column), all inside C."""
TileWrite = Callable[[Value, Value, Value], None]
"""Writes ``value`` (f32) at (row, column) of the shared tile being filled, cast to the tile's element type."""
TileCopy = Callable[[Value, int, Value, Value, tuple[int, int], TileWrite], None]
"""Fills a ``bk x bn`` tile of B itself: called with (thread ``t``, threads, the tile's first contraction index
``k0``, its first column ``col0``, ``(bk, bn)``, the writer); it must write every element of the tile (zeros past
the edges). The k-bit GEMM of :mod:`.gpu_qgemm` unpacks and dequantizes its weight tiles through it."""


RunTimeGrid = Callable[[Value, int], AbstractContextManager[Value]]
"""Enters the loops of a grid of so many blocks (an index value) of so many threads, sized at run time, and yields
the block's number (WebGPU's :func:`~tensorium.lowering.webgpu_schedule.run_time_workgroups`)."""


@dataclass(frozen=True)
class TiledOperands:
    """What a GEMM-shaped kernel multiplies: ``batch`` products of ``m x k`` by ``k x n``, their elements read
    through ``a`` and ``b`` (only where ``a_valid`` holds, zero elsewhere: the padding of an implicit GEMM), and C
    written through ``store``. The convolution family of :mod:`.gpu_conv` builds its kernel from it."""

    batch: int | Value
    m: int | Value
    """A's rows: a number, or an index value known only at run time (then see :attr:`row_blocks`)."""
    n: int | Value
    k: int | Value
    """The batch, columns and contraction: numbers, or index values known only at run time (with
    :attr:`run_time_grid` only, and not for :func:`emit_mma_gemm`)."""
    a: Operand
    b: Operand
    store: Store
    a_valid: Operand | None = None
    b_tile: TileCopy | None = None
    """When given, how B's tiles are filled (``b`` is not read)."""
    vector_a: bool = False
    """Whether A's tiles are copied by groups of :data:`VECTOR` elements along its rows (f32 tiles only; the
    lowering has proven them 16-byte aligned: :func:`vector_loads_proven`)."""
    vector_b: int | None = None
    """The axis of B's tile (0: the contraction, 1: the columns) along which its groups of :data:`VECTOR`
    elements are adjacent in memory, when B's tiles are copied by vector loads; None: one element at a time."""
    async_copy: bool = False
    """Whether the vector tile copies are written for ``cp.async``: a group inside the matrix is only copied and
    one outside only zeroed (never both: a plain store and an asynchronous copy to one address are unordered), and
    the NVPTX emitter makes each copy of 16 aligned bytes one ``cp.async``, waited for before every barrier."""
    row_blocks: int = 1
    """Blocks along grid y when :attr:`m` is known only at run time (the grid's size is fixed when compiling): block
    ``y`` computes row tiles ``y``, ``y + row_blocks``, ... of the run-time ``ceil(m / bm)``, the last one's rows past
    ``m`` guarded like the edges of a static C."""
    run_time_grid: RunTimeGrid | None = None
    """When given, the grid is sized at run time, one block per tile of C: ``run_time_grid(blocks, threads)`` enters
    the ``gpu_block`` loops of ``blocks`` blocks of ``threads`` threads (an index value) and yields the block's
    number (the kernel guards numbers past ``blocks``); the batch, M, N and K may all be run-time values."""


def lower_gpu_gemm(op: Operation, k: Kernel) -> None:
    """The kernel of the module docstring at ``k``'s config; the generic GEMM for other families."""
    shape = GpuGemmShape.of(op) or GpuGemmShape.of(op, f16)
    if k.config is not None and k.config.family == "gpu_gemv" and shape is not None:
        assert shape.gemv_rows is not None
        lower_gpu_gemv(k, shape.gemv_rows, shape.k, shape.n, shape.transpose_b)
        return
    if k.config is None or k.config.family != "gpu_gemm" or shape is None:
        LOWERINGS["graph.matmul"](op, k)
        return
    a, b = k.inputs
    (c,) = k.outputs
    mma = bool(k.config.as_dict().get("mma", False))
    widen = shape.element != f32 and not mma  # the f32 tiles of the kernel without mma

    def store(z: Value, row: Value, col: Value, value: Value) -> None:
        loop.store(value if shape.element == f32 else loop.cast(value, dtype=shape.element), c, *_batch(c, z), row, col)

    def a_at(z: Value, r: Value, q: Value) -> Value:
        value = _a_at(a, z, r, q)
        return loop.cast(value, dtype=f32) if widen else value  # type: ignore[no-any-return]

    def b_at(z: Value, q: Value, col: Value) -> Value:
        value = _b_at(b, z, shape, q, col)
        return loop.cast(value, dtype=f32) if widen else value  # type: ignore[no-any-return]

    vector = bool(k.config.as_dict().get("vector", False)) and vector_loads_proven(shape)
    vector = vector and (shape.element == f32 or _f16_groups(k.config.as_dict()))
    # a transposed B's groups of 4 run along the contraction: the tile's rows
    along_b = (0 if shape.transpose_b else 1) if vector else None
    asynchronous = vector and bool(k.config.as_dict().get("async_copy", False))
    operands = TiledOperands(
        shape.batch,
        shape.m,
        shape.n,
        shape.k,
        a_at,
        b_at,
        store,
        vector_a=vector,
        vector_b=along_b,
        async_copy=asynchronous,
    )
    if mma:
        emit_mma_gemm(k, k.config, operands)
    else:
        emit_tiled_gemm(k, k.config, operands)


@contextmanager
def _block_grid(
    k: Kernel, operands: TiledOperands, bm: int, bn: int, threads: int
) -> Iterator[tuple[Value, Value, Value]]:
    """The grid of a tiled GEMM: one block per ``bm`` x ``bn`` tile of C (x along N, y along M; ``row_blocks``
    along y for a run-time M) and per batch (z); yields the block ids (z, y, x). With a :attr:`run_time_grid`, the
    tiles of C are numbered along N, then M, then the batch, and the blocks past their number do nothing."""
    if operands.run_time_grid is not None:
        columns, rows = _ceil_div(k, operands.n, bn), _ceil_div(k, operands.m, bm)
        batch = operands.batch if isinstance(operands.batch, Value) else k.index(operands.batch)
        blocks = k.product([batch, rows, columns])
        with operands.run_time_grid(blocks, threads) as number, loop.if_(loop.cmp(number, blocks, predicate="lt")):
            rest = loop.div(number, columns)
            yield loop.div(rest, rows), loop.rem(rest, rows), loop.rem(number, columns)
        return
    assert isinstance(operands.batch, int) and isinstance(operands.n, int)
    row_tiles = operands.row_blocks if isinstance(operands.m, Value) else -(-operands.m // bm)
    with (
        loop.for_(0, operands.batch, kind="gpu_block", axis=2, name="z") as z,
        loop.for_(0, row_tiles, kind="gpu_block", axis=1, name="y") as y,
        loop.for_(0, -(-operands.n // bn), kind="gpu_block", axis=0, name="x") as x,
    ):
        yield z, y, x


def _ceil_div(k: Kernel, size: int | Value, tile: int) -> Value:
    """``ceil(size / tile)`` as an index value (in the prologue)."""
    if not isinstance(size, Value):
        return k.index(-(-size // tile))
    with k.prologue():
        return loop.div(loop.add(size, k.index(tile - 1)), k.index(tile))  # type: ignore[no-any-return]


@contextmanager
def _row_tiles(k: Kernel, operands: TiledOperands, y: Value, bm: int, row0: Value | None) -> Iterator[Value]:
    """The first row of each row tile of C block ``y`` computes: ``row0`` (``y * bm``) for a static M or a
    run-time grid; otherwise, for a run-time M, a loop over row tiles ``y``, ``y + row_blocks``, ... of the
    run-time ``ceil(M / bm)`` (every thread of the block takes the same trips, so the barriers inside stay
    uniform)."""
    if row0 is not None:
        yield row0
        return
    assert isinstance(operands.m, Value)
    i = k.index
    tiles = loop.div(loop.add(operands.m, i(bm - 1)), i(bm))
    with loop.for_(y, tiles, operands.row_blocks, name="yt") as tile:
        yield loop.mul(tile, i(bm))


def emit_tiled_gemm(k: Kernel, config: Config, operands: TiledOperands) -> None:
    """The shared-memory and register tiles of the module docstring for ``operands`` at ``config`` (the knobs
    ``bm``, ``bn``, ``bk``, ``tm``, ``tn``, ``stages``)."""
    bm, bn, bk, tm, tn = (config.int(n) for n in ("bm", "bn", "bk", "tm", "tn"))
    threads = _threads(config.as_dict())
    across = bn // tn
    zero = k.const(0.0, f32)
    i = k.index
    steps = _ceil_div(k, operands.k, bk) if isinstance(operands.k, Value) else -(-operands.k // bk)
    stages = config.int("stages")
    # Where the tiles divide the product, every element a tile copies or C's tile stores is inside it.
    rows_exact = _divides(operands.m, bm)
    depth_exact, cols_exact = _divides(operands.k, bk), _divides(operands.n, bn)
    a_whole = rows_exact and depth_exact and operands.a_valid is None
    b_whole = depth_exact and cols_exact
    with _block_grid(k, operands, bm, bn, threads) as (z, y, x):
        tile_a = loop.alloc(type=BufferType((stages, bm, bk), f32, "shared"))
        tile_b = loop.alloc(type=BufferType((stages, bk, bn), f32, "shared"))
        row_loop = isinstance(operands.m, Value) and operands.run_time_grid is None
        static_row0 = None if row_loop else loop.mul(y, i(bm))
        col0 = loop.mul(x, i(bn))
        with loop.for_(0, threads, kind="gpu_thread", axis=0, name="t") as t:
            ty, tx = loop.div(t, i(across)), loop.rem(t, i(across))
            acc = loop.alloc(type=BufferType((tm, tn), f32, "local"))
            regs = loop.alloc(type=BufferType((tm,), f32, "local"))
            with _row_tiles(k, operands, y, bm, static_row0) as row0:
                with loop.for_(0, tm, kind="unroll", name="zi") as zi, loop.for_(0, tn, kind="unroll", name="zj") as zj:
                    loop.store(zero, acc, zi, zj)

                # Rows of A past M and columns of B past N only reach C's rows and columns past its edges, which
                # are never stored: they are read clamped to the last row or column (in bounds, no guard) where
                # the copy is element by element. The contraction's edge must read zeros.
                last_row = None if rows_exact or operands.vector_a else _last(k, operands.m)
                last_col = None if cols_exact or operands.vector_b is not None else _last(k, operands.n)

                def a_row(r: Value) -> Value:
                    row = loop.add(row0, r)
                    return row if last_row is None else loop.min(row, last_row)  # type: ignore[no-any-return]

                def b_col(q: Value) -> Value:
                    col = loop.add(col0, q)
                    return col if last_col is None else loop.min(col, last_col)  # type: ignore[no-any-return]

                def a_inside(r: Value, q: Value) -> Value:
                    if last_row is None:
                        inside = _inside(k, r, operands.m, q, operands.k)
                    else:
                        inside = _within(k, q, operands.k)
                    return inside if operands.a_valid is None else loop.and_(inside, operands.a_valid(z, r, q))

                def b_inside(r: Value, q: Value) -> Value:
                    return (
                        _within(k, r, operands.k) if last_col is not None else _inside(k, r, operands.k, q, operands.n)
                    )

                a_guarded = not (a_whole or (last_row is not None and depth_exact and operands.a_valid is None))
                b_guarded = not (b_whole or (last_col is not None and depth_exact))

                def copy(step: Value, slot: Value) -> None:
                    """Copy the A and B tiles of contraction step ``step`` into stage ``slot`` of the shared tiles."""
                    k0 = loop.mul(step, i(bk))
                    _copy_tile(
                        k,
                        t,
                        threads,
                        tile_a,
                        slot,
                        (bm, bk),
                        lambda r, q: operands.a(z, a_row(r), loop.add(k0, q)),
                        (lambda r, q: a_inside(a_row(r), loop.add(k0, q))) if a_guarded else None,
                        1 if operands.vector_a else None,
                        operands.async_copy,
                    )
                    if operands.b_tile is not None:
                        operands.b_tile(
                            t, threads, k0, col0, (bk, bn), lambda r, q, v: loop.store(v, tile_b, slot, r, q)
                        )
                        return
                    _copy_tile(
                        k,
                        t,
                        threads,
                        tile_b,
                        slot,
                        (bk, bn),
                        lambda r, q: operands.b(z, loop.add(k0, r), b_col(q)),
                        (lambda r, q: b_inside(loop.add(k0, r), b_col(q))) if b_guarded else None,
                        operands.vector_b,
                        operands.async_copy,
                    )

                def multiply(slot: Value) -> None:
                    """Accumulate the product of stage ``slot``'s tiles into the thread's register tile."""
                    kind = "unroll" if config.as_dict().get("unroll", False) else "serial"
                    with loop.for_(0, bk, kind=kind, name="kk") as kk:
                        with loop.for_(0, tm, kind="unroll", name="ri") as ri:
                            loop.store(loop.load(tile_a, slot, loop.add(loop.mul(ty, i(tm)), ri), kk), regs, ri)
                        with loop.for_(0, tn, kind="unroll", name="rj") as rj:
                            value_b = loop.load(tile_b, slot, kk, loop.add(loop.mul(tx, i(tn)), rj))
                            with loop.for_(0, tm, kind="unroll", name="ai") as ai:
                                loop.store(loop.fma(loop.load(regs, ai), value_b, loop.load(acc, ai, rj)), acc, ai, rj)

                _step_through_k(k, steps, stages, copy, multiply)
                with loop.for_(0, tm, kind="unroll", name="wi") as wi, loop.for_(0, tn, kind="unroll", name="wj") as wj:
                    row = loop.add(row0, loop.add(loop.mul(ty, i(tm)), wi))
                    col = loop.add(col0, loop.add(loop.mul(tx, i(tn)), wj))
                    if rows_exact and cols_exact:
                        operands.store(z, row, col, loop.load(acc, wi, wj))
                    else:
                        with loop.if_(_inside(k, row, operands.m, col, operands.n)):
                            operands.store(z, row, col, loop.load(acc, wi, wj))


def _divides(size: int | Value, tile: int) -> bool:
    """Whether ``size`` is known to be a multiple of ``tile`` (a run-time size is not)."""
    return not isinstance(size, Value) and size % tile == 0


def _step_through_k(
    k: Kernel,
    steps: int | Value,
    stages: int,
    copy: Callable[[Value, Value], None],
    multiply: Callable[[Value], None],
) -> None:
    """The contraction's steps: ``copy(step, slot)`` puts a step's tiles into shared stage ``slot`` and
    ``multiply(slot)`` accumulates them. With one stage, copy, barrier, multiply, barrier; with two (double
    buffering), the next step's tiles are copied into the other stage while this one's are multiplied, one
    barrier per step (the other stage was last read before the previous one)."""
    i = k.index
    if stages == 1:
        with loop.for_(0, steps, name="step") as step:
            copy(step, i(0))
            loop.barrier()
            multiply(i(0))
            loop.barrier()
        return
    copy(i(0), i(0))
    loop.barrier()
    with loop.for_(0, steps, name="step") as step:
        slot = loop.rem(step, i(2))
        following = loop.add(step, i(1))
        with loop.if_(loop.cmp(following, steps if isinstance(steps, Value) else i(steps), predicate="lt")):
            copy(following, loop.sub(i(1), slot))
        multiply(slot)
        loop.barrier()


def emit_mma_gemm(k: Kernel, config: Config, operands: TiledOperands) -> None:
    """The tiled GEMM on f16 tiles through ``loop.mma`` (``mma.sync`` m16n8k16, f32 accumulators): the block's
    warps copy the A and B tiles into shared memory as :func:`emit_tiled_gemm` does (f16, ``stages`` of them),
    and each warp multiplies its ``16 tm x 8 tn`` part of the block tile, ``tm tn`` mma tiles per 16 steps of
    the contraction; lane ``l`` ends holding C[l / 4 + 8 (e / 2), 2 (l % 4) + e % 2] of each mma tile."""
    bm, bn, bk, tm, tn = (config.int(n) for n in ("bm", "bn", "bk", "tm", "tn"))
    threads = _threads(config.as_dict())
    _, across = _warps(config.as_dict())
    i = k.index
    assert isinstance(operands.k, int) and operands.run_time_grid is None, "mma tiles take a static N and K"
    steps = -(-operands.k // bk)
    stages = config.int("stages")
    with _block_grid(k, operands, bm, bn, threads) as (z, y, x):
        tile_a = loop.alloc(type=BufferType((stages * bm, bk + MMA_PAD), f16, "shared"))
        tile_b = loop.alloc(type=BufferType((stages * bk, bn + MMA_PAD), f16, "shared"))
        static_row0 = None if isinstance(operands.m, Value) else loop.mul(y, i(bm))
        col0 = loop.mul(x, i(bn))
        with loop.for_(0, threads, kind="gpu_thread", axis=0, name="t") as t:
            warp, lane = loop.div(t, i(WARP)), loop.rem(t, i(WARP))
            warp_row = loop.mul(loop.div(warp, i(across)), i(MMA_M * tm))
            warp_col = loop.mul(loop.rem(warp, i(across)), i(MMA_N * tn))
            accs = [[loop.alloc(type=BufferType((4,), f32, "local")) for _ in range(tn)] for _ in range(tm)]
            with _row_tiles(k, operands, y, bm, static_row0) as row0:
                for row_of_accs in accs:
                    for acc in row_of_accs:
                        for e in range(4):
                            loop.store(k.const(0.0, f32), acc, i(e))

                def copy(step: Value, slot: Value) -> None:
                    """Copy the A and B tiles of contraction step ``step`` into stage ``slot`` of the shared tiles."""
                    k0 = loop.mul(step, i(bk))
                    if operands.vector_a:
                        _copy_groups(
                            t,
                            threads,
                            tile_a,
                            loop.mul(slot, i(bm)),
                            (bm, bk),
                            lambda r, q: operands.a(z, loop.add(row0, r), loop.add(k0, q)),
                            lambda r, q: _inside(k, loop.add(row0, r), operands.m, loop.add(k0, q), operands.k),
                            operands.async_copy,
                        )
                    else:
                        with loop.for_(t, bm * bk, threads, name="ea") as e:
                            r, q = loop.div(e, i(bk)), loop.rem(e, i(bk))
                            at = (loop.add(loop.mul(slot, i(bm)), r), q)
                            loop.store(k.const(0.0, f16), tile_a, *at)
                            row, col = loop.add(row0, r), loop.add(k0, q)
                            with loop.if_(_inside(k, row, operands.m, col, operands.k)):
                                loop.store(operands.a(z, row, col), tile_a, *at)
                    if operands.b_tile is None and operands.vector_b == 1:
                        _copy_groups(
                            t,
                            threads,
                            tile_b,
                            loop.mul(slot, i(bk)),
                            (bk, bn),
                            lambda r, q: operands.b(z, loop.add(k0, r), loop.add(col0, q)),
                            lambda r, q: _inside(k, loop.add(k0, r), operands.k, loop.add(col0, q), operands.n),
                            operands.async_copy,
                        )
                        return
                    if operands.b_tile is not None:

                        def write(r: Value, q: Value, value: Value) -> None:
                            loop.store(loop.cast(value, dtype=f16), tile_b, loop.add(loop.mul(slot, i(bk)), r), q)

                        operands.b_tile(t, threads, k0, col0, (bk, bn), write)
                        return
                    with loop.for_(t, bk * bn, threads, name="eb") as e:
                        r, q = loop.div(e, i(bn)), loop.rem(e, i(bn))
                        at = (loop.add(loop.mul(slot, i(bk)), r), q)
                        loop.store(k.const(0.0, f16), tile_b, *at)
                        row, col = loop.add(k0, r), loop.add(col0, q)
                        with loop.if_(_inside(k, row, operands.k, col, operands.n)):
                            loop.store(operands.b(z, row, col), tile_b, *at)

                def multiply(slot: Value) -> None:
                    """Each warp's ``tm x tn`` mma tiles for the ``bk / 16`` steps of stage ``slot``."""
                    a_base, b_base = loop.mul(slot, i(bm)), loop.mul(slot, i(bk))
                    a_rows = [loop.add(a_base, loop.add(warp_row, i(MMA_M * ti))) for ti in range(tm)]
                    b_cols = [loop.add(warp_col, i(MMA_N * tj)) for tj in range(tn)]
                    for kk in range(0, bk, MMA_K):
                        b_row = loop.add(b_base, i(kk))  # one position per tile: the emitter loads each fragment once
                        for ti in range(tm):
                            for tj in range(tn):
                                loop.mma(accs[ti][tj], tile_a, a_rows[ti], i(kk), tile_b, b_row, b_cols[tj])

                _step_through_k(k, steps, stages, copy, multiply)
                group, pair = loop.div(lane, i(4)), loop.mul(loop.rem(lane, i(4)), i(2))
                for ti in range(tm):
                    for tj in range(tn):
                        for e in range(4):
                            row = loop.add(row0, loop.add(warp_row, loop.add(group, i(MMA_M * ti + 8 * (e // 2)))))
                            col = loop.add(col0, loop.add(warp_col, loop.add(pair, i(MMA_N * tj + e % 2))))
                            with loop.if_(_inside(k, row, operands.m, col, operands.n)):
                                operands.store(z, row, col, loop.load(accs[ti][tj], i(e)))


def _copy_groups(
    t: Value,
    threads: int,
    tile: Value,
    first_row: Value,
    dims: tuple[int, int],
    source: Callable[[Value, Value], Value],
    inside: Callable[[Value, Value], Value],
    asynchronous: bool,
) -> None:
    """The f16 copy of :func:`emit_mma_gemm`'s ``vector`` knob: each of ``threads`` threads copies every
    ``threads``-th group of :data:`HALF_VECTOR` elements (16 bytes) along the rows of a ``dims`` tile into the 2-D
    shared ``tile`` from its row ``first_row`` on (the stage's), each group a ``vectorize`` loop that the NVPTX
    emitter makes one vector load, or one ``cp.async`` with ``asynchronous``: copied where ``inside`` holds of its
    first element (the lowering proved the group inside or outside as a whole), zeroed elsewhere, never both when
    asynchronous (as :func:`_copy_tile`)."""
    rows, cols = dims
    groups = cols // HALF_VECTOR
    zero = loop.const(value=0.0, dtype=f16)
    with loop.for_(t, rows * groups, threads, name="e") as e:
        r = loop.div(e, loop.const(value=groups, dtype=index))
        q = loop.mul(loop.rem(e, loop.const(value=groups, dtype=index)), loop.const(value=HALF_VECTOR, dtype=index))
        row = loop.add(first_row, r)
        inside_now = inside(r, q)
        if asynchronous:
            with loop.if_(inside_now):
                with loop.for_(0, HALF_VECTOR, kind="vectorize", factor=HALF_VECTOR, name="v") as v:
                    loop.store(source(r, loop.add(q, v)), tile, row, loop.add(q, v))
            with loop.if_(loop.xor(inside_now, loop.const(value=True, dtype=i1))):
                with loop.for_(0, HALF_VECTOR, kind="vectorize", factor=HALF_VECTOR, name="v") as v:
                    loop.store(zero, tile, row, loop.add(q, v))
            return
        with loop.for_(0, HALF_VECTOR, kind="vectorize", factor=HALF_VECTOR, name="v") as v:
            loop.store(zero, tile, row, loop.add(q, v))
        with loop.if_(inside_now):
            with loop.for_(0, HALF_VECTOR, kind="vectorize", factor=HALF_VECTOR, name="v") as v:
                loop.store(source(r, loop.add(q, v)), tile, row, loop.add(q, v))


def _copy_tile(
    k: Kernel,
    t: Value,
    threads: int,
    tile: Value,
    slot: Value,
    dims: tuple[int, int],
    source: Callable[[Value, Value], Value],
    inside: Callable[[Value, Value], Value] | None,
    along: int | None = None,
    asynchronous: bool = False,
) -> None:
    """Each of ``threads`` threads copies every ``threads``-th element of stage ``slot`` of ``tile`` from
    ``source(r, q)``, zero where ``inside(r, q)`` does not hold (None: the whole tile is inside). With ``along``
    (0: rows, 1: columns), every ``threads``-th group of :data:`VECTOR` elements adjacent along that axis of the
    tile (and in memory), each group a ``vectorize`` loop of 4 that the NVPTX emitter makes one vector load: the
    group is inside or outside the matrix as a whole, as its first element (the caller has proven it:
    :func:`vector_loads_proven`)."""
    rows, cols = dims
    if along is not None:
        groups = (rows // VECTOR, cols) if along == 0 else (rows, cols // VECTOR)
        with loop.for_(t, groups[0] * groups[1], threads, name="e") as e:
            r, q = loop.div(e, k.index(groups[1])), loop.rem(e, k.index(groups[1]))
            if along == 0:
                r = loop.mul(r, k.index(VECTOR))
            else:
                q = loop.mul(q, k.index(VECTOR))

            def at(lane: Value) -> tuple[Value, Value]:
                return (loop.add(r, lane), q) if along == 0 else (r, loop.add(q, lane))

            if inside is None:
                with loop.for_(0, VECTOR, kind="vectorize", factor=VECTOR, name="v") as v:
                    loop.store(source(*at(v)), tile, slot, *at(v))
                return
            if asynchronous:  # copied or zeroed, never both (see TiledOperands.async_copy)
                inside_now = inside(r, q)
                with loop.if_(inside_now):
                    with loop.for_(0, VECTOR, kind="vectorize", factor=VECTOR, name="v") as v:
                        loop.store(source(*at(v)), tile, slot, *at(v))
                with loop.if_(loop.xor(inside_now, loop.const(value=True, dtype=i1))):
                    with loop.for_(0, VECTOR, kind="vectorize", factor=VECTOR, name="v") as v:
                        loop.store(k.const(0.0, f32), tile, slot, *at(v))
                return
            with loop.for_(0, VECTOR, kind="vectorize", factor=VECTOR, name="v") as v:
                loop.store(k.const(0.0, f32), tile, slot, *at(v))
            with loop.if_(inside(r, q)):
                with loop.for_(0, VECTOR, kind="vectorize", factor=VECTOR, name="v") as v:
                    loop.store(source(*at(v)), tile, slot, *at(v))
        return
    with loop.for_(t, rows * cols, threads, name="e") as e:
        r, q = loop.div(e, k.index(cols)), loop.rem(e, k.index(cols))
        if inside is None:
            loop.store(source(r, q), tile, slot, r, q)
            return
        loop.store(k.const(0.0, f32), tile, slot, r, q)
        with loop.if_(inside(r, q)):
            loop.store(source(r, q), tile, slot, r, q)


def _inside(k: Kernel, row: Value, rows: int | Value, col: Value, cols: int | Value) -> Value:
    """Whether (``row``, ``col``) lies inside a ``rows x cols`` matrix (each a number or a run-time value)."""
    return loop.and_(_within(k, row, rows), _within(k, col, cols))  # type: ignore[no-any-return]


def _within(k: Kernel, position: Value, size: int | Value) -> Value:
    """Whether ``position`` lies before ``size`` (a number or a run-time value)."""
    bound = size if isinstance(size, Value) else k.index(size)
    return loop.cmp(position, bound, predicate="lt")  # type: ignore[no-any-return]


def _last(k: Kernel, size: int | Value) -> Value:
    """``size - 1`` as an index value (in the prologue)."""
    if not isinstance(size, Value):
        return k.index(size - 1)
    with k.prologue():
        return loop.sub(size, k.index(1))  # type: ignore[no-any-return]


def _batch(buffer: Value, z: Value) -> list[Value]:
    """The indices of batch number ``z`` into ``buffer``'s leading dims (row-major)."""
    t = buffer.type
    assert isinstance(t, BufferType)
    lead = t.static_shape[:-2]
    indices: list[Value] = []
    rest = z
    for axis in range(len(lead) - 1, -1, -1):
        size = loop.const(value=lead[axis], dtype=index)
        indices.insert(0, loop.rem(rest, size))
        rest = loop.div(rest, size)
    return indices


def _a_at(a: Value, z: Value, row: Value, col: Value) -> Value:
    return loop.load(a, *_batch(a, z), row, col)  # type: ignore[no-any-return]


def _b_at(b: Value, z: Value, shape: GpuGemmShape, kk: Value, col: Value) -> Value:
    lead = _batch(b, z) if shape.batched_b else []
    indices = [col, kk] if shape.transpose_b else [kk, col]
    return loop.load(b, *lead, *indices)  # type: ignore[no-any-return]


register_target_family("cuda", Family("gpu_gemm", ("graph.matmul",), gpu_gemm_space, gpu_gemm_default, epilogues=True))
register_target_lowering("cuda", "graph.matmul", lower_gpu_gemm)
