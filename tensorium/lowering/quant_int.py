"""The ``int`` path of the ``qgemv`` kernel: 8-bit activations and integer dot products (``loop.dot_u8i8``).

Once per call the activations are quantized per block of 32 along K (:func:`quantize_activations`): the
block's scale is ``d = amax / 127`` (``amax`` its largest magnitude), each element becomes
``xq = round_half_even(x * (127 / amax))`` in [-127, 127] (0 where ``amax <= 2**-100``), as llama.cpp's Q8
blocks.
The kernel then computes, per weight row ``n`` and activation row ``m``, exactly in integers per block
``b``: ``idot_b = sum_{j in b} q[n, j] xq[m, j]`` (the codes ``q`` are unsigned, below ``2**k``), and in f32
one multiply-add per block, ``dot_g = sum_{b in g} d_b idot_b``, and per group ``g`` of the weight,
``out += scale_g (dot_g - zero_g xs_g)`` with ``xs_g = sum_{b in g} d_b sum_{j in b} xq_j`` precomputed per
call: the zero points folded through activation block sums. :func:`integer_reference` is that computation
in numpy, the oracle of the tests; against the float matmul the results differ by the activations' rounding
(at most ``d / 2`` per element).

Decoding: a block of a weight row is ``k`` words of a bit stream (the ``interleaved`` layout). For each
32-bit lane ``dot_u8i8`` wants four codes in the four bytes of a word; :func:`decode_plan` finds, per k, how
to cut the k words into such byte words with few shifts, masks and ors (for k = 4: ``w & 0x0F0F0F0F`` and
``(w >> 4) & 0x0F0F0F0F``), and the activations are stored once per call in the matching order, so the
order of the codes costs nothing at run time. Where the target cuts bit fields out of words in one instruction
(``loop.bit_fields``: AVX-512 VBMI's ``vpmultishiftqb``), :func:`field_plan` takes codes ``4t .. 4t + 3`` into
byte word ``t`` instead: they span ``4k <= 32`` bits, so one ``bit_fields`` and its byte mask of one word, or
of a funnel shift of two words when they straddle a word boundary (:func:`int_plan` takes the plan of fewer
operations: the fields for k = 3, 5, 6, 7 on such targets, the shifts and masks otherwise).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..ir.core import Value
from ..ir.dialects import loop
from ..ir.dialects.quant import layouts
from ..ir.types import DYN, BufferType, f32, i32
from ..targets import Target
from .kernel import Kernel, delinearize, shape_of
from .linalg import multiply_add
from .quant import BLOCK, IN_FLIGHT, U32, BlockStep, QgemvPath, lane_loop, register_path

ROUNDER = 12582912.0
"""1.5 * 2**23: adding it to an f32 of magnitude below 2**22 rounds it to an integer, half to even, which is
then the low bits of the sum's bit pattern (the pattern of ROUNDER itself ends in 22 zero bits)."""
ROUNDER_BITS = 0x4B400000
TINY = 2.0**-100
"""A block whose largest magnitude is at most this is quantized to zeros (``127 / amax`` would overflow f32)."""
WORD_MASK = 0xFFFFFFFF


@dataclass(frozen=True)
class Part:
    """``(word >> shift) & mask`` of one of a block's k words (a negative ``shift`` shifts left)."""

    word: int
    shift: int
    mask: int

    def needs_mask(self) -> bool:
        """Whether the shifted word has bits outside ``mask`` (a shift alone may leave only the wanted ones)."""
        kept = WORD_MASK >> self.shift if self.shift > 0 else (WORD_MASK << -self.shift) & WORD_MASK
        return self.mask != kept


@dataclass(frozen=True)
class ByteWord:
    """Four codes of a block as the four bytes of a word: the OR of ``parts``; ``codes[b]`` is the index in the
    block of the code in byte ``b`` (-1: the byte is 0)."""

    parts: tuple[Part, ...]
    codes: tuple[int, int, int, int]

    def ops(self) -> int:
        """Vector operations to build the word: shifts, masks (where bits outside them survive), ors."""
        return len(self.parts) - 1 + sum((p.shift != 0) + p.needs_mask() for p in self.parts)


def _placements(j: int, bits: int, byte: int, layout: str = "interleaved") -> list[Part]:
    """The parts that put code ``j`` of a block into byte ``byte``: one per piece of the code in ``layout``
    (:func:`~tensorium.ir.dialects.quant.layouts.block_pieces`)."""
    return [
        Part(p.word, p.shift - (8 * byte + p.low), ((1 << p.width) - 1) << (8 * byte + p.low))
        for p in layouts.block_pieces(bits, layout)[j]
    ]


@functools.cache
def decode_plan(bits: int) -> tuple[ByteWord, ...]:
    """How to cut a block's ``bits`` words into byte words: greedily, the shifts of one word that bring the most
    codes to byte boundaries at once, packed into byte words first fit; then the rest one code at a time into
    the free bytes (a word with a free byte at the end holds 0 there)."""
    whole: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for j in range(BLOCK):
        word, shift = divmod(j * bits, 32)
        if shift + bits <= 32:
            for byte in range(4):
                whole.setdefault((word, shift - 8 * byte), []).append((j, byte))
    left = set(range(BLOCK))
    extracts: list[list[tuple[int, int]]] = []
    while True:
        best = max(
            (([(j, b) for j, b in members if j in left], key) for key, members in whole.items()),
            key=lambda found: (len(found[0]), found[1][1] == 0, -found[1][0], -abs(found[1][1])),
        )
        if len(best[0]) < 2:
            break
        extracts.append(best[0])
        left -= {j for j, _ in best[0]}
    words: list[list[int]] = []
    for members in sorted(extracts, key=len, reverse=True):
        slot = next((w for w in words if all(w[b] < 0 for _, b in members)), None)
        if slot is None:
            slot = [-1] * 4
            words.append(slot)
        for j, b in members:
            slot[b] = j
    for j in sorted(left):
        slot = next((w for w in words if -1 in w), None)
        if slot is None:
            slot = [-1] * 4
            words.append(slot)
        slot[slot.index(-1)] = j
    return tuple(_byte_word(codes, bits) for codes in words)


@dataclass(frozen=True)
class FieldWord:
    """Codes ``4t .. 4t + 3`` of a block as a byte word: ``loop.bit_fields`` of a window of 32 bits that starts
    ``shift`` bits into block word ``word`` (a funnel shift of ``word`` and the next one when the codes reach
    past it), at ``offsets`` in the window."""

    word: int
    shift: int
    offsets: tuple[int, int, int, int]
    codes: tuple[int, int, int, int]

    def straddles(self) -> bool:
        """Whether the four codes reach into the next word (a funnel shift first)."""
        return self.shift > 0

    def ops(self, bits: int, funnel: int) -> int:
        """Vector operations: the ``bit_fields`` (a multishift and a mask), and ``funnel`` for a funnel shift."""
        return 2 + (funnel if self.straddles() else 0)


@functools.cache
def field_plan(bits: int) -> tuple[FieldWord, ...]:
    """Byte word ``t`` holds codes ``4t .. 4t + 3`` (bits ``4tk .. 4tk + 4k`` of the block): from word ``4tk // 32``
    at offsets ``4tk % 32 + i k`` when they fit in it, else from the 32 bits at ``4tk`` (a funnel shift of two
    words) at offsets ``i k``."""
    words = []
    for t in range(BLOCK // 4):
        word, shift = divmod(4 * t * bits, 32)
        if shift + 4 * bits <= 32:
            offsets = tuple(shift + i * bits for i in range(4))
            shift = 0
        else:
            offsets = tuple(i * bits for i in range(4))
        words.append(FieldWord(word, shift, offsets, tuple(4 * t + i for i in range(4))))  # type: ignore[arg-type]
    return tuple(words)


def has_bit_fields(target: Target) -> bool:
    """Whether ``loop.bit_fields`` is one instruction on ``target``'s vectors (AVX-512 VBMI's ``vpmultishiftqb``,
    with VL below 512 bits)."""
    features = set(target.features)
    return target.kind == "cpu" and "avx512vbmi" in features and (target.lanes() >= 16 or "avx512vl" in features)


def _decode_ops(bits: int, wide: bool, layout: str = "interleaved") -> int:
    """Vector operations of the byte-word plan of ``layout`` per block (:func:`decode_plan` or :func:`shard_plan`):
    its byte words' (one mask for a word masked in place), and per group of words masked in place by the same
    amount (``wide``: the target takes any byte) the shift of its sum and the add that merges it."""
    plan = byte_word_plan(bits, layout)
    ups = [in_place_shift(w, bits) if wide else 0 for w in plan]
    return sum(1 if up else w.ops() for w, up in zip(plan, ups)) + 2 * len({u for u in ups if u})


@functools.cache
def shard_plan(bits: int) -> tuple[ByteWord, ...]:
    """The byte words of a block in the ``interleaved_shards`` layout: word ``t`` holds codes ``4t .. 4t + 3``, one
    shift and mask per shard (the layout puts the four codes' pieces of each shard at the same shift)."""
    return tuple(_byte_word([4 * t + b for b in range(4)], bits, "interleaved_shards") for t in range(BLOCK // 4))


def byte_word_plan(bits: int, layout: str) -> tuple[ByteWord, ...]:
    """The shifts-and-masks plan of a block in ``layout``: :func:`shard_plan` or :func:`decode_plan`."""
    return shard_plan(bits) if layout == "interleaved_shards" else decode_plan(bits)


def int_plan(target: Target, bits: int, layout: str = "interleaved") -> tuple[ByteWord | FieldWord, ...]:
    """The byte words of a block on ``target``: :func:`byte_word_plan`, or for the ``interleaved`` stream
    :func:`field_plan` where the target has one-instruction bit fields and that plan takes fewer operations (a
    funnel shift is one instruction with AVX-512 VBMI2, three otherwise)."""
    if layout != "interleaved" or not has_bit_fields(target):
        return byte_word_plan(bits, layout)
    funnel = 1 if "avx512vbmi2" in target.features else 3
    fields = sum(w.ops(bits, funnel) for w in field_plan(bits))
    return field_plan(bits) if fields < _decode_ops(bits, bool(target.dot_product)) else decode_plan(bits)


def _byte_word(codes: list[int], bits: int, layout: str = "interleaved") -> ByteWord:
    """The byte word holding ``codes`` (by byte), its parts merged by (word, shift)."""
    masks: dict[tuple[int, int], int] = {}
    for byte, j in enumerate(codes):
        if j >= 0:
            for part in _placements(j, bits, byte, layout):
                masks[(part.word, part.shift)] = masks.get((part.word, part.shift), 0) | part.mask
    parts = tuple(Part(word, shift, mask) for (word, shift), mask in sorted(masks.items()))
    return ByteWord(parts, (codes[0], codes[1], codes[2], codes[3]))


def quantize_activations(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x`` ([..., K], K a multiple of 32) as int8 codes and f32 scales per block of 32 (module docstring)."""
    blocks = np.asarray(x, np.float32).reshape(*x.shape[:-1], -1, BLOCK)
    amax = np.abs(blocks).max(axis=-1)
    with np.errstate(divide="ignore", over="ignore"):
        inverse = np.where(amax > TINY, np.float32(127) / amax, np.float32(0)).astype(np.float32)
    codes = np.rint(blocks * inverse[..., None]).astype(np.int8)
    return codes.reshape(x.shape), (amax / np.float32(127)).astype(np.float32)


def integer_reference(x: np.ndarray, codes: np.ndarray, scale: np.ndarray, zero: np.ndarray, group: int) -> np.ndarray:
    """What the ``int`` path computes, in numpy: ``x`` [..., K], unsigned ``codes`` [N, K], ``scale`` and
    ``zero`` [K / group, N]; the integer dots exact, the float sums in float64 (the kernel's are f32)."""
    xq, d = quantize_activations(x)
    lead = x.shape[:-1]
    blocks = codes.shape[1] // BLOCK
    xb = xq.reshape(-1, blocks, BLOCK).astype(np.int64)
    idot = np.einsum("mbj,nbj->mnb", xb, codes.reshape(codes.shape[0], blocks, BLOCK).astype(np.int64))
    dm = d.reshape(-1, blocks).astype(np.float64)
    per_group = group // BLOCK
    dots = (dm[:, None, :] * idot).reshape(dm.shape[0], codes.shape[0], -1, per_group).sum(-1)
    sums = (dm * xb.sum(-1)).reshape(dm.shape[0], -1, per_group).sum(-1)
    out = ((dots - zero.T[None] * sums[:, None, :]) * scale.T[None]).sum(-1)
    return out.reshape(*lead, codes.shape[0])


def rounding_bound(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The most the ``int`` path's ``x @ weight.T`` ([..., K] by a float [N, K]) can differ from the float one's:
    half a quantization step ``d / 2`` per activation, times the weight's magnitude, summed (plus f32 slack)."""
    blocks = np.asarray(x, np.float64).reshape(*x.shape[:-1], -1, BLOCK)
    step = np.repeat(np.abs(blocks).max(axis=-1) / 127, BLOCK, axis=-1).reshape(x.shape)
    magnitude = np.abs(np.asarray(weight, np.float64))
    return (step / 2 + 1e-6 * np.abs(x)) @ magnitude.T + 1e-5 * (np.abs(x) @ magnitude.T)  # type: ignore[no-any-return]


class IntegerPath(QgemvPath):
    """8-bit activations per block, integer dot products of bytes, one f32 multiply-add per block and row."""

    def prepare(
        self, k: Kernel, x: Value, lead: list[Value], rows: Value, bits: int, group: int, layout: str
    ) -> list[Value]:
        """The activation codes as byte words in the order of :func:`int_plan` ([rows, K / 32 * words], i32),
        the block scales ([rows, K / 32]) and the zero-point sums ``xs`` per group ([rows, K / group])."""
        plan = int_plan(k.target, bits, layout)
        blocks = int(shape_of(x)[-1]) // BLOCK  # type: ignore[arg-type]
        xw = loop.alloc(rows, type=BufferType((DYN, blocks * len(plan)), i32, "global"))
        xd = loop.alloc(rows, type=BufferType((DYN, blocks), f32, "global"))
        xs = quantize_by_group(
            k, x, rows, group, lambda m, b: _quantize_block(k, x, delinearize(m, lead), m, b, plan, xw, xd)
        )
        return [xw, xd, xs]

    def slots(self, chains: int) -> int:
        """One float sum per row: the chains are integer sums, added exactly within each block."""
        return 1

    def default_chains(self, mr: int) -> int:
        """At most 2: a block's dots are one integer sum, independent of the other blocks' (only their float
        multiply-adds chain), so out-of-order execution overlaps blocks, and each further chain costs a zeroed
        register and an add per block (1..8 chains within 5% of each other L2-resident at k = 2..8, 2 no slower)."""
        return max(1, min(2, IN_FLIGHT // mr))

    def block(self, k: Kernel, step: BlockStep) -> None:
        """``partial[r][0, lane] += d[m_r, kb] * sum_{t} dot_u8i8(byte word t of the lane's row, activation word t)``.
        Where the target's dot product takes any unsigned byte (VNNI), a byte word whose codes sit ``s`` bits up
        in their bytes is masked in place (:func:`in_place_shift`): its dots are ``2**s`` times the codes', summed
        apart and shifted down by ``s`` (exact: every product is a multiple of ``2**s``), one shift per such
        group instead of one per byte word."""
        xw, xd = step.prepared[0], step.prepared[1]
        plan = int_plan(k.target, step.bits, step.layout)
        wide = bool(k.target.dot_product)
        ups = [in_place_shift(word, step.bits) if wide and isinstance(word, ByteWord) else 0 for word in plan]
        first = loop.mul(step.kb, k.index(len(plan)))
        xs = [[loop.load(xw, [m, loop.add(first, k.index(t))]) for t in range(len(plan))] for m in step.ms]
        ds = [loop.load(xd, [m, step.kb]) for m in step.ms]
        narrow = step.bits < 8  # codes below 128 against |xq| <= 127: each pair of products fits i16
        run = 0 if wide else halves_run(step.bits)
        with lane_loop(k, step.lanes) as lane:
            words = [loop.load(step.packed, [step.nb, step.kb, k.index(w), lane]) for w in range(step.bits)]
            chains: list[dict[tuple[int, int], Value]] = [{} for _ in step.ms]
            weights = [
                _field_word_value(k, words, word, step.bits)
                if isinstance(word, FieldWord)
                else _byte_word_value(k, words, word, up)
                for word, up in zip(plan, ups)
            ]
            runs = range(0, len(plan), run) if run > 1 else ()  # byte words summed in 16-bit halves
            for number, start in enumerate(runs):
                key = (0, number % step.chains)
                for r in range(len(step.ms)):
                    halves = k.const(0, i32)
                    for t in range(start, min(start + run, len(plan))):
                        halves = loop.dot_u8i8_halves(halves, weights[t], xs[r][t])
                    widened = loop.sum_halves(halves)
                    chains[r][key] = loop.add(chains[r][key], widened) if key in chains[r] else widened
            for t, up in enumerate(ups if not runs else ()):
                key = (up, t % step.chains if not up else 0)
                for r in range(len(step.ms)):
                    acc = chains[r].get(key, k.const(0, i32))
                    chains[r][key] = loop.dot_u8i8(acc, weights[t], xs[r][t], narrow=narrow and not up)
            for r in range(len(step.ms)):
                by_up: dict[int, Value] = {}
                for (up, _), value in chains[r].items():
                    by_up[up] = loop.add(by_up[up], value) if up in by_up else value
                total: Value | None = None
                for up, value in sorted(by_up.items()):
                    value = loop.shr(value, k.const(up, i32)) if up else value
                    total = value if total is None else loop.add(total, value)
                assert total is not None
                at, into = [k.index(0), lane], step.partial[r]
                loop.store(multiply_add(k, ds[r], loop.cast(total, dtype=f32), loop.load(into, at)), into, at)

    def cost(self, target: Target, bits: int, mr: int, layout: str = "interleaved") -> float | None:
        """The plan's shifts, masks and ors, per byte word and row a broadcast activation word and a dot product
        (three instructions without VNNI), and per row a conversion and a multiply-add; None without VNNI or AVX2
        (or AVX2 at 8 bits, whose multiply-add saturates: the portable form is slower than the float path)."""
        vnni = bool(target.dot_product)
        if not vnni and ("avx2" not in target.features or bits == 8):
            return None
        plan = int_plan(target, bits, layout)
        if isinstance(plan[0], FieldWord):
            decode = sum(w.ops(bits, 1 if "avx512vbmi2" in target.features else 3) for w in field_plan(bits))
        else:
            decode = _decode_ops(bits, vnni, layout)
        run = 0 if vnni else halves_run(bits)
        if run > 1:  # per byte word a broadcast, vpmaddubsw and vpaddw; per run vpmaddwd and an add
            return float(decode + mr * (3 * len(plan) + 2 * -(-len(plan) // run)) + 2 * mr)
        return float(decode + len(plan) * mr * (2 if vnni else 4) + 2 * mr)


HALF_RANGE = 32767
"""The largest magnitude a signed 16-bit half holds."""


def halves_run(bits: int) -> int:
    """How many byte words of ``bits``-bit codes a run of ``dot_u8i8_halves`` may add before ``sum_halves``: each
    half's total stays within i16 while the run's pairs of products, each at most ``2 (2**k - 1) 127`` in
    magnitude, sum within it (k = 3: 18, 5: 4, 6: 2, 7: 1); 0 at 8 bits (no narrow pairs)."""
    return HALF_RANGE // (2 * 127 * ((1 << bits) - 1)) if bits < 8 else 0


def quantize_by_group(
    k: Kernel, x: Value, rows: Value, group: int, quantize_block: Callable[[Value, Value], Value]
) -> Value:
    """A parallel loop over (activation row ``m``, group) pairs that quantizes each block ``b`` of 32 of the group
    with ``quantize_block(m, b)`` (which stores what its path needs and returns the block's code sum); the sums
    per group, for the zero points, come back as a new buffer ``xs`` ([rows, K / group])."""
    depth = int(shape_of(x)[-1])  # type: ignore[arg-type]
    per_group, groups = group // BLOCK, depth // group
    xs = loop.alloc(rows, type=BufferType((DYN, groups), f32, "global"))
    with k.prologue():
        tasks = loop.mul(rows, k.index(groups))
    with loop.for_(k.index(0), tasks, k.index(1), kind="parallel", name="pmg") as task:
        m, g = loop.div(task, k.index(groups)), loop.rem(task, k.index(groups))
        total = loop.alloc(type=BufferType((), f32, "local"))
        loop.store(k.const(0.0, f32), total)
        with loop.for_(k.index(0), k.index(per_group), k.index(1), name="pb") as pb:
            b = loop.add(loop.mul(g, k.index(per_group)), pb)
            loop.store(loop.add(loop.load(total), quantize_block(m, b)), total)
        loop.store(loop.load(total), xs, [m, g])
    return xs  # type: ignore[no-any-return]


def load_block(k: Kernel, x: Value, at: list[Value], b: Value) -> tuple[list[Value], Value, Value]:
    """Block ``b`` of 32 of the activation row at ``at``: its values, ``127 / amax`` (0 for an all-zero block)
    and its scale ``d = amax / 127``. The largest magnitude is the largest of the bit patterns with the sign
    cleared, which order as the floats do."""
    base = loop.mul(b, k.index(BLOCK))
    values = [loop.load(x, [*at, loop.add(base, k.index(j))]) for j in range(BLOCK)]
    magnitude = k.const(0x7FFFFFFF, i32)
    amax_bits = loop.and_(loop.bitcast(values[0], dtype=i32), magnitude)
    for v in values[1:]:
        amax_bits = loop.max(amax_bits, loop.and_(loop.bitcast(v, dtype=i32), magnitude))
    amax = loop.bitcast(amax_bits, dtype=f32)
    positive = loop.cmp(amax, k.const(TINY, f32), predicate="gt")
    inverse = loop.select(positive, loop.div(k.const(127.0, f32), amax), k.const(0.0, f32))
    d = loop.div(amax, k.const(127.0, f32))
    return values, inverse, d


def _quantize_block(
    k: Kernel,
    x: Value,
    at: list[Value],
    m: Value,
    b: Value,
    plan: tuple[ByteWord | FieldWord, ...],
    xw: Value,
    xd: Value,
) -> Value:
    """Quantize block ``b`` of activation row ``m`` (``at`` in ``x``): store its byte words and scale, give
    ``d * sum xq`` (scale from :func:`load_block`). The block sum adds the rounded patterns and takes the
    rounder's away once (exact: the i32 sum wraps, the true sum is small)."""
    values, inverse, d = load_block(k, x, at, b)
    rounder = k.const(ROUNDER, f32)
    rounded = [loop.bitcast(loop.add(loop.mul(v, inverse), rounder), dtype=i32) for v in values]
    isum = rounded[0]
    for r in rounded[1:]:
        isum = loop.add(isum, r)
    isum = loop.sub(isum, k.const((BLOCK * ROUNDER_BITS + (1 << 31)) % (1 << 32) - (1 << 31), i32))
    first = loop.mul(b, k.index(len(plan)))
    for t, word in enumerate(plan):
        packed: Value | None = None
        for byte, j in enumerate(word.codes):
            if j < 0:
                continue
            piece = rounded[j] if byte == 3 else loop.and_(rounded[j], k.const(0xFF, i32))
            piece = loop.shl(piece, k.const(8 * byte, i32)) if byte else piece
            packed = piece if packed is None else loop.or_(packed, piece)
        loop.store(packed if packed is not None else k.const(0, i32), xw, [m, loop.add(first, k.index(t))])
    loop.store(d, xd, [m, b])
    return loop.mul(d, loop.cast(isum, dtype=f32))  # type: ignore[no-any-return]


def in_place_shift(word: ByteWord, bits: int) -> int:
    """``s`` > 0 when ``word`` is one right shift by ``s`` and a mask of one block word whose codes would stay
    inside their bytes unshifted (``s + bits <= 8``): masked in place, each byte is its code times ``2**s``
    (at most 255, which only a dot product of any unsigned byte takes); else 0."""
    if len(word.parts) != 1:
        return 0
    part = word.parts[0]
    return part.shift if 0 < part.shift <= 8 - bits else 0


def _field_word_value(k: Kernel, words: list[Value], word: FieldWord, bits: int) -> Value:
    """The u32 byte word ``word`` of :func:`field_plan`: ``bit_fields`` of its block word, or of the 32 bits
    ``shift`` bits into it (``(w0 >> shift) | (w1 << (32 - shift))``, a funnel shift)."""
    window = words[word.word]
    if word.straddles():
        low = loop.shr(window, k.const(word.shift, U32))
        window = loop.or_(low, loop.shl(words[word.word + 1], k.const(32 - word.shift, U32)))
    return loop.bit_fields(window, offsets=word.offsets, width=bits)  # type: ignore[no-any-return]


def _byte_word_value(k: Kernel, words: list[Value], word: ByteWord, up: int = 0) -> Value:
    """The u32 byte word ``word`` built from a block's words (``up`` > 0: masked in place, each code times
    ``2**up``; see :func:`in_place_shift`)."""
    if up:
        part = word.parts[0]
        return loop.and_(words[part.word], k.const((part.mask << up) & WORD_MASK, U32))  # type: ignore[no-any-return]
    value: Value | None = None
    for part in word.parts:
        piece = words[part.word]
        if part.shift > 0:
            piece = loop.shr(piece, k.const(part.shift, U32))
        elif part.shift < 0:
            piece = loop.shl(piece, k.const(-part.shift, U32))
        if part.needs_mask():
            piece = loop.and_(piece, k.const(part.mask, U32))
        value = piece if value is None else loop.or_(value, piece)
    assert value is not None
    return value


register_path("int", IntegerPath())
