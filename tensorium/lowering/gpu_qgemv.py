"""The ``gpu_qgemv`` kernel family: k-bit matrix-vector products (k = 1..8) on GPUs, weights packed for a warp.

``quant.matmul_packed`` with its weight in the ``interleaved`` layout of 32 lanes (what ``pack-quant-gpu`` packs
for CUDA targets: ``[panels, K / 32, k, 32]`` u32 words, the 32 rows of a panel side by side) maps one panel to
one block and one weight row to one lane of a warp: the warp's 32 loads of word ``i`` of a block of 32 codes are
32 adjacent words (one coalesced 128-byte transaction), and every lane reads the same activation (a broadcast).
``warps`` warps split the contraction's blocks between them and add their results through shared memory:

    for p in [0, panels) gpu_block 0:
      partial = shared[warps - 1, rows, 32]
      for t in [0, 32 warps) gpu_thread 0:
        lane = t % 32, w = t / 32, n = 32 p + lane; acc[m] = 0
        for kb in [w, K / 32, warps):
          words = packed[p, kb, 0..k, lane]                  (k loads, each coalesced across the warp)
          c_j = (words >> (j k mod 32)) & (2^k - 1) as f32   (a code straddling two words takes bits of both)
          for each activation row m: d = sum_j c_j x[m, 32 kb + j], e = sum_j x[m, 32 kb + j]
            acc[m] += scale[g, n] (d - zero[g, n] e)         (g = kb's group: zero points fold into e)
        warps > 0 write acc to partial; barrier; warp 0 adds them and writes out[m, n] for n < cols

The codes are unsigned (pack-quant stores signed ones shifted, with shifted zero points), so one form serves
every k. Products with at most :data:`MAX_ROWS` activation rows (decode and small batches), f32 activations,
static shapes and 32 lanes take this family; more rows, or rows known only at run time, take :mod:`.gpu_qgemm`'s
tiled GEMM (which registers the family that chooses between the two); others keep the ``qgemv`` family, bound to
the grid.
"""

from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.quant import layouts
from ..ir.types import BufferType, IntegerType, TensorType, f32
from ..targets import Target
from ..targets.cuda import WARP
from .gpu_gemv import add_warp_partials
from .kernel import LOWERINGS, Kernel, delinearize
from .quant import param_index
from .space import Config, Knob, Space

BLOCK = 32
"""Codes per block of the interleaved layout: 32 k-bit codes are k 32-bit words."""
MAX_ROWS = 8
"""The most activation rows the family takes: each thread keeps one accumulator per row."""
WARPS = (1, 2, 4, 8, 16)
U32 = IntegerType(32, False)


def packed_product_rows(op: Operation) -> tuple[int | None, int] | None:
    """(activation rows, contraction length) of a GPU-packed ``quant.matmul_packed`` (32 lanes) with f32
    activations and output whose last dims are static, or None for any other op; the rows are None when some
    leading dim of the activations is known only at run time."""
    if op.name != "quant.matmul_packed" or int(op.attr("lanes")) != WARP:
        return None
    x, out = op.operands[0].type, op.results[0].type
    if not all(isinstance(t, TensorType) and isinstance(t.shape[-1], int) and t.element == f32 for t in (x, out)):
        return None
    assert isinstance(x, TensorType)
    rows: int | None = 1
    for d in x.shape[:-1]:
        rows = rows * d if isinstance(d, int) and rows is not None else None
    depth = x.shape[-1]
    assert isinstance(depth, int)
    return rows, depth


def qgemv_split(op: Operation) -> tuple[int, int] | None:
    """(activation rows, blocks of 32 along the contraction) of a product this family builds (static rows), or
    None."""
    found = packed_product_rows(op)
    if found is None or found[0] is None or not 1 <= found[0] <= MAX_ROWS:
        return None
    return found[0], -(-found[1] // BLOCK)


def gpu_qgemv_space(op: Operation, target: Target) -> Space | None:
    """The warps that split the contraction (at most one per block of 32 codes)."""
    split = qgemv_split(op)
    if split is None:
        return None
    values = tuple(w for w in WARPS if w <= max(1, split[1]))
    return Space("gpu_qgemv", (Knob("warps", values, "warps per panel of 32 rows, splitting the contraction"),))


def gpu_qgemv_default(op: Operation, target: Target, space: Space) -> Config:
    """Eight warps (a panel's loads spread over 256 threads) where each gets at least two blocks, else fewer."""
    split = qgemv_split(op)
    assert split is not None
    legal = [int(v) for v in space.knobs[0].values]
    warps = max([w for w in legal if w <= 8 and 2 * w <= split[1]] or [1])
    return Config("gpu_qgemv", (("warps", warps),))


def lower_gpu_qgemv(op: Operation, k: Kernel) -> None:
    """The kernel of the module docstring at ``k``'s config; the CPU-shaped ``qgemv`` for other families."""
    split = qgemv_split(op)
    if k.config is None or k.config.family != "gpu_qgemv" or split is None:
        LOWERINGS[op.name](op, k)
        return
    rows, blocks = split
    warps = k.config.int("warps")
    bits, group, cols = (int(op.attr(n)) for n in ("bits", "group", "cols"))
    layout = str(op.attr("layout", "interleaved"))
    x, packed, scale, zero = k.inputs
    (out,) = k.outputs
    x_shape, out_shape = x.type.static_shape, out.type.static_shape  # type: ignore[attr-defined]
    panels = packed.type.static_shape[0]  # type: ignore[attr-defined]
    i = k.index
    lead = [i(d) for d in x_shape[:-1]]
    out_lead = [i(d) for d in out_shape[:-1]]
    with loop.for_(0, panels, kind="gpu_block", axis=0, name="p") as p:
        partial = loop.alloc(type=BufferType((warps - 1, rows, WARP), f32, "shared")) if warps > 1 else None
        with loop.for_(0, WARP * warps, kind="gpu_thread", axis=0, name="t") as t:
            lane, w = loop.rem(t, i(WARP)), loop.div(t, i(WARP))
            n = loop.add(loop.mul(p, i(WARP)), lane)
            acc = loop.alloc(type=BufferType((rows,), f32, "local"))
            for m in range(rows):
                loop.store(k.const(0.0, f32), acc, i(m))
            at = [delinearize(i(m), lead) if lead else [] for m in range(rows)]
            with loop.for_(w, blocks, warps, name="kb") as kb:
                words = [loop.load(packed, p, kb, i(word), lane) for word in range(bits)]
                codes = [code_of(k, words, j, bits, layout) for j in range(BLOCK)]
                g = loop.div(kb, i(group // BLOCK))
                where = param_index(k, scale, g, p, lane, WARP)
                s, z = loop.load(scale, where), loop.load(zero, where)
                base = loop.mul(kb, i(BLOCK))
                for m in range(rows):
                    dot, total = k.const(0.0, f32), k.const(0.0, f32)
                    for j, code in enumerate(codes):
                        value = loop.load(x, *at[m], loop.add(base, i(j)))
                        dot, total = loop.fma(code, value, dot), loop.add(total, value)
                    corrected = loop.fma(loop.neg(z), total, dot)
                    loop.store(loop.fma(s, corrected, loop.load(acc, i(m))), acc, i(m))
            inside = loop.cmp(n, i(cols), predicate="lt")
            if partial is None:
                with loop.if_(inside):
                    for m in range(rows):
                        loop.store(loop.load(acc, i(m)), out, *delinearize(i(m), out_lead), n)
                return

            def write(m: int, total: Value) -> None:
                loop.store(total, out, *delinearize(i(m), out_lead), n)

            add_warp_partials(k, acc, partial, w, lane, rows, inside, write)


def code_of(k: Kernel, words: list[Value], j: int, bits: int, layout: str = "interleaved") -> Value:
    """Code ``j`` of a block of 32 ``bits``-bit codes held in ``words`` in block layout ``layout``, as f32: the OR of
    its pieces (:func:`~tensorium.ir.dialects.quant.layouts.block_pieces`), each shifted into place and masked."""
    code: Value | None = None
    for piece in layouts.block_pieces(bits, layout)[j]:
        value = loop.shr(words[piece.word], k.const(piece.shift, U32)) if piece.shift else words[piece.word]
        value = loop.and_(value, k.const((1 << piece.width) - 1, U32))
        value = loop.shl(value, k.const(piece.low, U32)) if piece.low else value
        code = value if code is None else loop.or_(code, value)
    assert code is not None
    return loop.cast(code, dtype=f32)  # type: ignore[no-any-return]
