"""The ``gpu_qgemm`` kernel family: k-bit matrix products (k = 1..8) of many activation rows on GPUs (prefill).

``quant.matmul_packed`` over the ``interleaved`` layout of 32 lanes (what ``pack-quant-gpu`` makes of a constant
k-bit ``quant.matmul``: ``[panels, K / 32, k, 32]`` u32 words, scales and zero points ``[K / group, panels * 32]``)
with more than :data:`~.gpu_qgemv.MAX_ROWS` activation rows runs as the tiled GEMM of :mod:`.gpu_gemm` (shared
memory and register tiles, double buffering, optionally ``mma.sync``), whose B tiles are the weight's, unpacked
and dequantized by the block's threads as they are copied into shared memory: the float weight exists only one
``bk x bn`` tile at a time, in shared memory, never in global memory.

    C[m, n] = sum_q x[m, q] W[n, q],   W[n, q] = (code[n, q] - zero[g, n]) scale[g, n],  g = q / group
    for each step k0 of bk (a multiple of 32) and each block tile's column n0:
      for (kb, nn) in [0, bk / 32) x [0, bn), every threads-th from thread t:      (nn fastest: adjacent lanes)
        n = n0 + nn, b = k0 / 32 + kb                                              (a block of 32 codes)
        words = packed[n / 32, b, 0..k, n % 32]       (k loads: a warp's 32 are adjacent words, coalesced)
        s, z = scale[g, n], zero[g, n]                (0 past the matrix: the tile's padding is zero)
        Bs[32 kb + j, nn] = ((words >> j k) & (2^k - 1) - z) s    for j in [0, 32)  (codes straddling two words
                                                                                 take bits of both)

Each element of a weight tile is decoded once per block and used by the block's ``bm`` rows, so the unpacking
costs ``1 / bm`` of the multiply-adds. Activation rows known only at run time (prefill with a symbolic sequence
length) keep the grid's size fixed when compiling: ``row_blocks`` blocks along grid y, each looping over row tiles
``y``, ``y + row_blocks``, ... of the run-time ``ceil(M / bm)``, the rows past M of the last one guarded (their A
elements read as zeros, their C elements not written).

The codes are unsigned (``pack-quant`` stores signed ones shifted, with shifted zero points), so one form serves
every k, signed or not. With ``mma=true`` the tiles hold f16 (the activations rounded to f16, the dequantized
weights too) and each warp multiplies through ``loop.mma`` with f32 accumulators; with ``mma=false`` (the default)
every product is f32, as the graph interpreter computes it.

This module also registers, for ``quant.matmul_packed`` on CUDA targets, the one family that chooses between
this kernel and :mod:`.gpu_qgemv`'s by the number of activation rows (this one for rows known only at run time).
"""

from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.types import f16, f32
from ..targets import Target
from ..targets.cuda import WARP
from .gpu_gemm import DEFAULT_TILES, TILES, TiledOperands, TileWrite, emit_mma_gemm, emit_tiled_gemm, tile_space
from .gpu_qgemv import (
    BLOCK,
    MAX_ROWS,
    code_of,
    gpu_qgemv_default,
    gpu_qgemv_space,
    lower_gpu_qgemv,
    packed_product_rows,
    qgemv_split,
)
from .kernel import LOWERINGS, Kernel, delinearize, register_target_lowering
from .quant import param_index
from .space import Config, Family, Knob, Setting, Space, register_target_family

STEPS = (32, 64)
"""Legal ``bk``: whole blocks of 32 codes per contraction step."""
LARGE_TILES: dict[str, Setting] = {"bm": 128, "bn": 128, "bk": 32, "tm": 8, "tn": 8}
ROW_BLOCKS = (1, 2, 4, 8, 16, 32, 64)
"""Legal ``row_blocks`` (blocks along grid y) for activation rows known only at run time."""
NOMINAL_ROWS = 512
"""The row count the default tiles assume when the rows are known only at run time (a prompt's length)."""
FILL_BLOCKS = 264
"""The blocks the default ``row_blocks`` aims for at least: two per SM of the largest GPUs (132 on an H100)."""


def qgemm_split(op: Operation) -> tuple[int | None, int, int] | None:
    """(activation rows M, weight rows N, contraction K) of a product this family builds, or None: a
    ``quant.matmul_packed`` of 32 lanes, f32 activations and output whose last dims are static, more than
    :data:`~.gpu_qgemv.MAX_ROWS` rows (fewer are :mod:`.gpu_qgemv`'s) or rows known only at run time (M None)."""
    found = packed_product_rows(op)
    if found is None or (found[0] is not None and found[0] <= MAX_ROWS):
        return None
    return found[0], int(op.attr("cols")), found[1]


def gpu_qgemm_space(op: Operation, target: Target) -> Space | None:
    """The tile knobs of the tiled GEMM with ``bk`` in :data:`STEPS`, and ``mma`` (f16 tiles through mma.sync);
    for rows known only at run time, ``row_blocks`` too (the grid's blocks along y)."""
    split = qgemm_split(op)
    if split is None:
        return None
    space = tile_space("gpu_qgemm", target, mma=True, steps=STEPS, columns=TILES)
    if split[0] is not None:
        return space
    rows = Knob("row_blocks", ROW_BLOCKS, "blocks along grid y, each looping over row tiles of the run-time rows")
    return Space(space.family, (*space.knobs, rows), space.valid)


def gpu_qgemm_default(op: Operation, target: Target, space: Space) -> Config:
    """:mod:`.gpu_gemm`'s tiles by the size of C with ``bk = 32`` (:data:`LARGE_TILES` beyond them; rows known
    only at run time count as :data:`NOMINAL_ROWS`), two stages where K takes several steps and they fit shared
    memory, f32 products (``mma=false``); for run-time rows, the fewest ``row_blocks`` that make the grid at least
    :data:`FILL_BLOCKS` blocks."""
    split = qgemm_split(op)
    assert split is not None
    rows, cols, depth = split
    tiles = next((t for most, t in DEFAULT_TILES if (rows or NOMINAL_ROWS) * cols <= most), LARGE_TILES)
    values: dict[str, Setting] = {**tiles, "bk": 32, "mma": False}
    if rows is None:
        columns = -(-cols // int(tiles["bn"]))
        values["row_blocks"] = next((b for b in ROW_BLOCKS if columns * b >= FILL_BLOCKS), ROW_BLOCKS[-1])
    for stages in (2, 1) if depth > 32 else (1,):
        candidate = {**values, "stages": stages}
        if space.valid is None or space.valid(candidate):
            values = candidate
            break
    return Config("gpu_qgemm", tuple((k.name, values[k.name]) for k in space.knobs))


def lower_gpu_qgemm(op: Operation, k: Kernel) -> None:
    """The kernel of the module docstring at ``k``'s config (``gpu_qgemv``'s for its configs; the CPU-shaped
    ``qgemv`` for other families)."""
    split = qgemm_split(op)
    if k.config is not None and k.config.family == "gpu_qgemv":
        lower_gpu_qgemv(op, k)
        return
    if k.config is None or k.config.family != "gpu_qgemm" or split is None:
        LOWERINGS[op.name](op, k)
        return
    static_rows, cols, depth = split
    bits, group = int(op.attr("bits")), int(op.attr("group"))
    layout = str(op.attr("layout", "interleaved"))
    x, packed, scale, zero = k.inputs
    (out,) = k.outputs
    panels, blocks = packed.type.static_shape[:2]  # type: ignore[attr-defined]
    mma = bool(k.config.as_dict().get("mma", False))
    i = k.index
    lead = k.sizes(x)[:-1]
    out_lead = k.sizes(out)[:-1]
    rows: int | Value = static_rows if static_rows is not None else k.product(lead)

    def a_at(z: Value, r: Value, q: Value) -> Value:
        value = loop.load(x, *delinearize(r, lead), q)
        return loop.cast(value, dtype=f16) if mma else value  # type: ignore[no-any-return]

    def store(z: Value, r: Value, c: Value, value: Value) -> None:
        loop.store(value, out, *delinearize(r, out_lead), c)

    def b_tile(t: Value, threads: int, k0: Value, col0: Value, dims: tuple[int, int], write: TileWrite) -> None:
        """Unpack and dequantize the weight's ``bk x bn`` tile at (``k0``, ``col0``) through ``write``."""
        bk, bn = dims
        with loop.for_(t, (bk // BLOCK) * bn, threads, name="eq") as e:
            kb, nn = loop.div(e, i(bn)), loop.rem(e, i(bn))
            n, block = loop.add(col0, nn), loop.add(loop.div(k0, i(BLOCK)), kb)
            inside = loop.and_(
                loop.cmp(n, i(panels * WARP), predicate="lt"), loop.cmp(block, i(blocks), predicate="lt")
            )
            n = loop.select(inside, n, i(0))  # past the matrix: read in bounds, scale the codes by 0
            block = loop.select(inside, block, i(0))
            panel, lane = loop.div(n, i(WARP)), loop.rem(n, i(WARP))
            words = [loop.load(packed, panel, block, i(word), lane) for word in range(bits)]
            g = loop.div(block, i(group // BLOCK))
            at = param_index(k, scale, g, panel, lane, WARP)
            s = loop.select(inside, loop.load(scale, at), k.const(0.0, f32))
            zp = loop.load(zero, at)
            row0 = loop.mul(kb, i(BLOCK))
            for j in range(BLOCK):
                value = loop.mul(loop.sub(code_of(k, words, j, bits, layout), zp), s)
                write(loop.add(row0, i(j)), nn, value)

    row_blocks = int(k.config.as_dict().get("row_blocks", 1))
    operands = TiledOperands(1, rows, cols, depth, a_at, _no_b, store, b_tile=b_tile, row_blocks=row_blocks)
    (emit_mma_gemm if mma else emit_tiled_gemm)(k, k.config, operands)


def _no_b(z: Value, q: Value, col: Value) -> Value:
    raise AssertionError("the k-bit GEMM fills its B tiles through b_tile")


def _space(op: Operation, target: Target) -> Space | None:
    """``gpu_qgemv``'s space for at most 8 activation rows, ``gpu_qgemm``'s for more."""
    return gpu_qgemv_space(op, target) if qgemv_split(op) is not None else gpu_qgemm_space(op, target)


def _default(op: Operation, target: Target, space: Space) -> Config:
    return (gpu_qgemv_default if space.family == "gpu_qgemv" else gpu_qgemm_default)(op, target, space)


register_target_family("cuda", Family("gpu_qgemm", ("quant.matmul_packed",), _space, _default))
register_target_lowering("cuda", "quant.matmul_packed", lower_gpu_qgemm)
