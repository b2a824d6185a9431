"""The ``lut`` path of the ``qgemv`` kernel for 1 to 3 bits: table lookups instead of decoding (T-MAC style).

The activations are quantized per block of 32 exactly as the ``int`` path does (:mod:`.quant_int`: ``d = amax /
127``, ``xq`` in [-127, 127]), so this path computes the same integer dot per block and row, ``idot_b = sum_j
q[n, j] xq[m, j]``, and the same float sums after it: :func:`~.quant_int.integer_reference` is its oracle too.
Only how ``idot_b`` is formed differs. A block of a weight row is ``k`` words of a bit stream (the
``interleaved`` layout), bit ``p`` of the block belonging to code ``p // k`` with weight ``2**(p % k)``. So each
nibble of the stream (bits ``p .. p + 3``, ``p`` a multiple of 4) adds ``T[nibble]`` to ``idot_b``, with
``T[i] = sum_{t < 4} bit_t(i) 2**((p + t) % k) xq[(p + t) // k]``: a table of 16 entries that depends only on
the activations, built once per call and shared by every weight row. That holds for every k, with no layout
of its own; at k = 1 a nibble is four codes, at k = 2 two, at k = 3 a code and a part.

Once per call (:meth:`LutPath.prepare`), per activation row and weight word of a block, the 16-entry tables
of its eight nibbles are stored as the 64-byte tables that ``loop.lookup_bytes`` (``vpermb`` on AVX-512 VBMI)
reads: entry ``i`` of the nibble in byte ``b`` of the word at byte ``4 i + b``, the even nibbles (bits
``8 b .. 8 b + 3``) in one table and the odd ones in another, and each entry, at most ``11 * 127`` in
magnitude, split into its low byte (unsigned) and its high byte (signed), one table each: four tables of 16
words per weight word. In the kernel (:meth:`LutPath.block`), per weight word ``w`` and 16 weight rows,
``((w << 2) & 0x3C3C3C3C) | 0x03020100`` is the index word of the even nibbles (``4 nibble + byte`` in each
byte) and ``((w >> 2) & 0x3C3C3C3C) | 0x03020100`` of the odd ones; four lookups give the entries' bytes, and
``dot_u8i8`` sums them (the low bytes against ones, ones against the high bytes), so per weight word and row it
takes 4 lookups and 4 dot products where the ``int`` path takes 8 dot products and a decode per block of 32
codes: fewer instructions at k = 1 and 3 (whose decode is long), about as many at k = 2. Measured, it is faster
at k = 1 only (:data:`DEFAULT_WIDTHS`).
"""

from __future__ import annotations

import functools

from ..ir.core import Value
from ..ir.dialects import loop
from ..ir.dialects.quant import layouts
from ..ir.types import DYN, BufferType, f32, i32
from ..targets import Target
from .kernel import Kernel, delinearize, shape_of
from .linalg import multiply_add
from .quant import BLOCK, U32, BlockStep, QgemvPath, lane_loop, register_path
from .quant_int import ROUNDER, ROUNDER_BITS, load_block, quantize_by_group

MAX_BITS = 3
"""The widest codes the path takes (a nibble's table entry must fit 16 bits: at most 11 * 127 at k = 3)."""
DEFAULT_WIDTHS = (1,)
"""The widths at which the default rule may choose the path: where it measured faster than the ``int`` path at
both groups 128 and 32 (4096 x 4096 decode, Emerald Rapids, 2 threads: time over the ``int`` path's 0.50 to 0.59
at group 128 in three runs, 0.75 at group 32). At k = 3 it was 0.96 to 0.99 at group 128 but 1.14 at group 32, at
k = 2 0.93 to 1.34 and 1.16 (docs/quantization.md), so there it stays a point of the space, not a default."""
TABLE_WORDS = 16
TABLES = 4
"""Per weight word: the low and high bytes of the even nibbles' entries, then of the odd nibbles'."""
ONES = 0x01010101
BYTE_SLOTS = 0x03020100
NIBBLE_INDEX = 0x3C3C3C3C


class LutPath(QgemvPath):
    """Nibbles of the packed words index tables of partial sums of 8-bit activations (module docstring)."""

    def supports(self, bits: int) -> bool:
        """Only 1 to 3 bits: wider codes take more lookups per code than the ``int`` path's decode costs."""
        return bits <= MAX_BITS

    def prepare(
        self, k: Kernel, x: Value, lead: list[Value], rows: Value, bits: int, group: int, layout: str
    ) -> list[Value]:
        """The four byte tables per weight word ([rows, K / 32, k, 16] each, i32 words), the block scales
        ([rows, K / 32]) and the zero-point sums ``xs`` per group ([rows, K / group])."""
        blocks = int(shape_of(x)[-1]) // BLOCK  # type: ignore[arg-type]
        tables = [loop.alloc(rows, type=BufferType((DYN, blocks, bits, TABLE_WORDS), i32, "global")) for _ in range(4)]
        xd = loop.alloc(rows, type=BufferType((DYN, blocks), f32, "global"))

        def quantize_block(m: Value, b: Value) -> Value:
            codes, d, block_sum = _quantize_block(k, x, delinearize(m, lead), b)
            loop.store(d, xd, [m, b])
            for w in range(bits):
                _store_tables(k, tables, codes, m, b, w, bit_owners(bits, layout))
            return block_sum

        xs = quantize_by_group(k, x, rows, group, quantize_block)
        return [*tables, xd, xs]

    def slots(self, chains: int) -> int:
        """One float sum per row: the chains are integer sums, added exactly within each block."""
        return 1

    def block(self, k: Kernel, step: BlockStep) -> None:
        """``partial[r][0, lane] += d[m_r, kb] * (low + 256 high)``, ``low`` and ``high`` the dot products of the
        looked-up bytes of every nibble of the block's words (module docstring)."""
        tables, xd = step.prepared[:TABLES], step.prepared[TABLES]
        ds = [loop.load(xd, [m, step.kb]) for m in step.ms]
        ones, slots, nibbles = k.const(ONES, U32), k.const(BYTE_SLOTS, U32), k.const(NIBBLE_INDEX, U32)
        two = k.const(2, U32)
        with lane_loop(k, step.lanes) as lane:
            words = [loop.load(step.packed, [step.nb, step.kb, k.index(w), lane]) for w in range(step.bits)]
            sums: list[dict[tuple[int, int], Value]] = [{} for _ in step.ms]
            turn = 0
            for w, word in enumerate(words):
                even = loop.or_(loop.and_(loop.shl(word, two), nibbles), slots)
                odd = loop.or_(loop.and_(loop.shr(word, two), nibbles), slots)
                for half, index in enumerate((even, odd)):
                    chain = turn % max(1, step.chains // 2)
                    turn += 1
                    for r, m in enumerate(step.ms):
                        at = [m, step.kb, k.index(w), k.index(0)]
                        low = loop.lookup_bytes(index, tables[2 * half], *at)
                        high = loop.lookup_bytes(index, tables[2 * half + 1], *at)
                        for part, (lhs, rhs) in enumerate(((low, ones), (ones, high))):
                            key = (part, chain)
                            acc = sums[r].get(key, k.const(0, i32))
                            sums[r][key] = loop.dot_u8i8(acc, lhs, rhs, narrow=True)
            for r in range(len(step.ms)):
                parts: list[Value | None] = [None, None]
                for (part, _), value in sums[r].items():
                    held = parts[part]
                    parts[part] = value if held is None else loop.add(held, value)
                low, high = parts
                assert low is not None and high is not None
                total = loop.add(low, loop.shl(high, k.const(8, i32)))
                at, into = [k.index(0), lane], step.partial[r]
                loop.store(multiply_add(k, ds[r], loop.cast(total, dtype=f32), loop.load(into, at)), into, at)

    def cost(self, target: Target, bits: int, mr: int, layout: str = "interleaved") -> float | None:
        """Per weight word: 5 operations for the two index words, and per row 4 table loads, 4 lookups and 4 dot
        products; per row a conversion and a multiply-add. None (never the default) for widths outside
        :data:`DEFAULT_WIDTHS`, for vectors other than 16 lanes of 32 bits, or without AVX-512 VBMI (``vpermb``)
        and a byte dot product: there the lookups run lane by lane."""
        if bits not in DEFAULT_WIDTHS or target.lanes() != 16 or "avx512vbmi" not in target.features:
            return None
        if not target.dot_product:
            return None
        return float(bits * (5 + 12 * mr) + 2 * mr)


def _quantize_block(k: Kernel, x: Value, at: list[Value], b: Value) -> tuple[list[Value], Value, Value]:
    """Block ``b`` of the activation row at ``at`` quantized as the ``int`` path does: its 32 codes (i32), its
    scale ``d`` and ``d * sum xq``."""
    values, inverse, d = load_block(k, x, at, b)
    rounder, pattern = k.const(ROUNDER, f32), k.const(ROUNDER_BITS, i32)
    codes = [loop.sub(loop.bitcast(loop.add(loop.mul(v, inverse), rounder), dtype=i32), pattern) for v in values]
    isum = codes[0]
    for c in codes[1:]:
        isum = loop.add(isum, c)
    return codes, d, loop.mul(d, loop.cast(isum, dtype=f32))


def _store_tables(
    k: Kernel, tables: list[Value], codes: list[Value], m: Value, b: Value, w: int, owners: tuple[tuple[int, int], ...]
) -> None:
    """The four byte tables of word ``w`` of block ``b``: lane ``i`` (a nibble value) builds word ``i`` of each,
    whose byte ``c`` is entry ``i`` of the nibble in byte ``c`` of the weight word."""
    coefficients = [
        [[_coefficient(k, codes, owners[32 * w + 8 * c + 4 * half + t]) for t in range(4)] for c in range(4)]
        for half in range(2)
    ]
    with loop.for_(k.index(0), k.index(TABLE_WORDS), k.index(1), kind="vectorize", factor=TABLE_WORDS, name="ti") as i:
        entry = loop.cast(i, dtype=i32)
        one = k.const(1, i32)
        selects = [loop.neg(loop.and_(loop.shr(entry, k.const(t, i32)), one)) for t in range(4)]
        for half in range(2):
            low: Value | None = None
            high: Value | None = None
            for c in range(4):
                value = loop.and_(selects[0], coefficients[half][c][0])
                for t in range(1, 4):
                    value = loop.add(value, loop.and_(selects[t], coefficients[half][c][t]))
                byte_low = loop.shl(loop.and_(value, k.const(0xFF, i32)), k.const(8 * c, i32))
                byte_high = loop.shl(
                    loop.and_(loop.shr(value, k.const(8, i32)), k.const(0xFF, i32)), k.const(8 * c, i32)
                )
                low = byte_low if low is None else loop.or_(low, byte_low)
                high = byte_high if high is None else loop.or_(high, byte_high)
            assert low is not None and high is not None
            for table, value in ((tables[2 * half], low), (tables[2 * half + 1], high)):
                loop.store(value, table, [m, b, k.index(w), i])


@functools.cache
def bit_owners(bits: int, layout: str) -> tuple[tuple[int, int], ...]:
    """Per bit ``p`` of a block's words in block layout ``layout``: the code it belongs to and its place value
    (``(p // k, p % k)`` for the ``interleaved`` stream), from
    :func:`~tensorium.ir.dialects.quant.layouts.block_pieces`."""
    owners = [(0, 0)] * (BLOCK * bits)
    for j, pieces in enumerate(layouts.block_pieces(bits, layout)):
        for piece in pieces:
            for t in range(piece.width):
                owners[32 * piece.word + piece.shift + t] = (j, piece.low + t)
    return tuple(owners)


def _coefficient(k: Kernel, codes: list[Value], owner: tuple[int, int]) -> Value:
    """What a bit of a block's words adds when set: ``2**place xq[code]`` for its ``owner`` (code, place)."""
    code, shift = owner
    return loop.shl(codes[code], k.const(shift, i32)) if shift else codes[code]


register_path("lut", LutPath())
