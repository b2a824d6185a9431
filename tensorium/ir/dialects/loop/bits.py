"""Integer bit ops of the loop dialect: shifts and the four-byte dot product of integer dot-product kernels.

``shl`` and ``shr`` shift integers of 8, 16, 32 or 64 bits (``shr`` is logical for unsigned types and
arithmetic for signed ones); a shift amount outside ``[0, width)`` gives 0 (``shl``, unsigned ``shr``) or the
sign (signed ``shr``), so every amount has one result. ``dot_u8i8`` is the widening multiply-accumulate of
bytes that x86's ``vpdpbusd`` (AVX-512 VNNI, AVX-VNNI) computes per 32-bit lane and ``vpmaddubsw`` +
``vpmaddwd`` compute on AVX2: ``acc + sum_b u8(lhs byte b) * i8(rhs byte b)`` over the four bytes of two
32-bit words, exactly, the i32 sum wrapping. Its ``narrow`` attribute is a promise of the producer (as LLVM's
``nsw``): each pair of adjacent products (bytes 0 and 1, 2 and 3) sums within the i16 range, which lets a
backend use AVX2's saturating ``vpmaddubsw``; a result where the promise is broken is undefined.
``dot_u8i8_halves`` keeps the sums in the two 16-bit halves of each word (each half adds its two products,
wrapping within the half: AVX2's ``vpmaddubsw`` + ``vpaddw``), so that a run of them costs one widening
(``sum_halves``, ``vpmaddwd`` by ones) instead of one per dot; exact where each half's true total fits i16.
``lookup_bytes`` is a byte table lookup, what AVX-512 VBMI's ``vpermb`` computes per 32-bit lane: each byte
of an index word (its low 6 bits) selects one of the 64 bytes of a table of 16 words read from a buffer.
``bit_fields`` cuts four bit fields of one width out of a 32-bit word into its four bytes (byte ``b`` is
``(word >> offsets[b]) & (2**width - 1)``): what AVX-512 VBMI's ``vpmultishiftqb`` and a byte mask compute per
lane, the unpacking of odd-width codes.
"""

from __future__ import annotations

import numpy as np

from ...attributes import BoolAttr, IntAttr, IntsAttr
from ...opdef import InferError, OpDef, define
from ...types import IntegerType, Type, i32
from .common import check_indices, expect_buffer, expect_scalar, same_scalar

SHIFT_WIDTHS = (8, 16, 32, 64)


def _shift_infer(lhs: Type, rhs: Type) -> Type:
    t = same_scalar([lhs, rhs], "intbool")
    if not isinstance(t, IntegerType) or t.width not in SHIFT_WIDTHS:
        raise InferError(f"shifts take integers of {', '.join(map(str, SHIFT_WIDTHS))} bits, got {t}")
    return t


def _shift(left: bool):  # type: ignore[no-untyped-def]
    def reference(x: np.ndarray, amount: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        width = x.dtype.itemsize * 8
        amount = np.asarray(amount).astype(np.int64)
        inside = (amount >= 0) & (amount < width)
        by = np.where(inside, amount, 0).astype(x.dtype)
        if left:
            return np.where(inside, np.left_shift(x, by), 0).astype(x.dtype)
        fill = np.where(x < 0, -1, 0) if x.dtype.kind == "i" else np.zeros_like(x)
        return np.where(inside, np.right_shift(x, by), fill).astype(x.dtype)

    return reference


def _shift_op(name: str, doc: str) -> OpDef:
    return define(
        f"loop.{name}",
        operands=("lhs", "rhs"),
        infer=_shift_infer,
        reference=_shift(name == "shl"),
        traits=("pure",),
        doc=doc,
    )


shl = _shift_op("shl", "lhs << rhs (wrapping); an amount outside [0, width) gives 0.")
shr = _shift_op(
    "shr",
    "lhs >> rhs, logical for unsigned and arithmetic for signed integers; an amount outside [0, width) gives 0 "
    "(unsigned) or the sign (signed).",
)


def _dot_infer(acc: Type, lhs: Type, rhs: Type, *, narrow: bool) -> Type:
    if acc != i32:
        raise InferError(f"the accumulator must be i32, got {acc}")
    for what, t in (("lhs", lhs), ("rhs", rhs)):
        word = expect_scalar(t, "intbool", what)
        if not isinstance(word, IntegerType) or word.width != 32:
            raise InferError(f"{what} must be a 32-bit integer word of four bytes, got {t}")
    return i32


def byte_dot(acc: np.ndarray, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``acc + sum_b u8(lhs byte b) * i8(rhs byte b)`` for 32-bit words (numpy arrays), wrapping to i32."""
    total = np.asarray(acc).astype(np.int64)
    a, b = np.asarray(lhs).astype(np.uint32), np.asarray(rhs).astype(np.uint32)
    for byte in range(4):
        ua = ((a >> (8 * byte)) & 0xFF).astype(np.int64)
        sb = ((b >> (8 * byte)) & 0xFF).astype(np.int64)
        total = total + ua * np.where(sb >= 128, sb - 256, sb)
    return total.astype(np.int32)


dot_u8i8 = define(
    "loop.dot_u8i8",
    operands=("acc", "lhs", "rhs"),
    attrs={"narrow": BoolAttr(False)},
    infer=_dot_infer,
    reference=lambda acc, lhs, rhs, *, narrow: byte_dot(acc, lhs, rhs),
    traits=("pure",),
    doc="acc + the dot product of the four unsigned bytes of `lhs` with the four signed bytes of `rhs` (32-bit "
    "words; the i32 sum wraps); `narrow` promises that each adjacent pair of products sums within i16.",
)


def _halves_infer(acc: Type, lhs: Type, rhs: Type) -> Type:
    return _dot_infer(acc, lhs, rhs, narrow=True)


def _wrap16(x: np.ndarray) -> np.ndarray:
    return ((x + 0x8000) & 0xFFFF) - 0x8000


def byte_dot_halves(acc: np.ndarray, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Per 32-bit word, each 16-bit half ``h`` plus ``u8(lhs byte 2h) i8(rhs byte 2h) + u8(lhs byte 2h+1)
    i8(rhs byte 2h+1)``, wrapping within the half (numpy arrays)."""
    a, b = np.asarray(lhs).astype(np.uint32), np.asarray(rhs).astype(np.uint32)
    word = np.asarray(acc).astype(np.int64) & 0xFFFFFFFF
    halves = []
    for half in range(2):
        total = (word >> (16 * half)) & 0xFFFF
        for byte in (2 * half, 2 * half + 1):
            ua = ((a >> (8 * byte)) & 0xFF).astype(np.int64)
            sb = ((b >> (8 * byte)) & 0xFF).astype(np.int64)
            total = total + ua * np.where(sb >= 128, sb - 256, sb)
        halves.append(total & 0xFFFF)
    return (halves[0] | (halves[1] << 16)).astype(np.uint32).astype(np.int32)


def sum_halves_reference(x: np.ndarray) -> np.ndarray:
    """The two signed 16-bit halves of each 32-bit word, added as i32."""
    word = np.asarray(x).astype(np.int64) & 0xFFFFFFFF
    return (_wrap16(word & 0xFFFF) + _wrap16(word >> 16)).astype(np.int32)


dot_u8i8_halves = define(
    "loop.dot_u8i8_halves",
    operands=("acc", "lhs", "rhs"),
    infer=_halves_infer,
    reference=lambda acc, lhs, rhs: byte_dot_halves(acc, lhs, rhs),
    traits=("pure",),
    doc="`dot_u8i8` kept in two 16-bit halves: each half of `acc` plus the two products of its bytes (u8 of "
    "`lhs` times i8 of `rhs`), wrapping within the half; each pair of products must sum within i16 (what AVX2's "
    "`vpmaddubsw` + `vpaddw` compute). `sum_halves` ends a run of them.",
)


def _sum_halves_infer(x: Type) -> Type:
    if x != i32:
        raise InferError(f"sum_halves takes an i32 word of two 16-bit halves, got {x}")
    return i32


sum_halves = define(
    "loop.sum_halves",
    operands=("input",),
    infer=_sum_halves_infer,
    reference=sum_halves_reference,
    traits=("pure",),
    doc="The two signed 16-bit halves of an i32 word added as i32 (`vpmaddwd` by ones).",
)


LOOKUP_WORDS = 16
"""The words of a ``lookup_bytes`` table: 64 bytes, indexed by the low 6 bits of each index byte."""


def _lookup_infer(index: Type, table: Type, indices: list[Type]) -> Type:
    word = expect_scalar(index, "intbool", "index")
    if not isinstance(word, IntegerType) or word.width != 32:
        raise InferError(f"the index must be a 32-bit integer word of four bytes, got {index}")
    b = expect_buffer(table, "operand #1")
    if not (isinstance(b.element, IntegerType) and b.element.width == 32):
        raise InferError(f"the table must be a buffer of 32-bit integer words, got {b}")
    check_indices(b, indices)
    return word


def _lookup_reference(index: np.ndarray, table: np.ndarray, indices: list[np.ndarray]) -> np.ndarray:
    *outer, last = (int(i) for i in indices)
    if not 0 <= last <= table.shape[-1] - LOOKUP_WORDS or any(not 0 <= i < n for i, n in zip(outer, table.shape)):
        raise IndexError(f"a {LOOKUP_WORDS}-word table at {[*outer, last]} is out of bounds of a buffer {table.shape}")
    row: tuple[int | slice, ...] = (*outer, slice(last, last + LOOKUP_WORDS))
    words = np.ascontiguousarray(table[row]).astype("<u4")
    table_bytes = words.view(np.uint8)
    word = int(np.asarray(index).astype(np.uint32))
    out = 0
    for byte in range(4):
        out |= int(table_bytes[(word >> (8 * byte)) & 63]) << (8 * byte)
    return np.asarray(out, np.uint32).astype(np.asarray(index).dtype)


lookup_bytes = define(
    "loop.lookup_bytes",
    operands=("index", "table", "*indices"),
    infer=_lookup_infer,
    reference=_lookup_reference,
    doc="Byte b of the result is byte (index byte b & 63) of the 64-byte table of 16 little-endian 32-bit words "
    "at `indices` and the 15 words after them along the last dimension (all in bounds): vpermb per lane.",
)


FIELDS = 4
"""The fields of a ``bit_fields`` result: one per byte of a 32-bit word."""


def _fields_infer(word: Type, *, offsets: tuple[int, ...], width: int) -> Type:
    t = expect_scalar(word, "intbool", "word")
    if not isinstance(t, IntegerType) or t.width != 32:
        raise InferError(f"the word must be a 32-bit integer, got {word}")
    if not 1 <= width <= 8:
        raise InferError(f"the field width must be 1 to 8 bits, got {width}")
    bad = [o for o in offsets if not 0 <= o <= 32 - width]
    if bad:
        raise InferError(f"field offsets must lie in [0, {32 - width}] for {width}-bit fields of a word, got {bad}")
    return t


def bit_fields_of(word: np.ndarray, offsets: tuple[int, ...], width: int) -> np.ndarray:
    """Byte ``b`` of each result word is ``(word >> offsets[b]) & (2**width - 1)`` (numpy, 32-bit words)."""
    w = np.asarray(word).astype(np.uint32)
    mask = np.uint32((1 << width) - 1)
    out = np.zeros_like(w)
    for byte, offset in enumerate(offsets):
        out |= ((w >> np.uint32(offset)) & mask) << np.uint32(8 * byte)
    return out.astype(np.asarray(word).dtype)


bit_fields = define(
    "loop.bit_fields",
    operands=("word",),
    attrs={"offsets": IntsAttr(length=FIELDS), "width": IntAttr()},
    infer=_fields_infer,
    reference=lambda word, *, offsets, width: bit_fields_of(word, tuple(offsets), int(width)),
    traits=("pure",),
    doc="Byte b of the result is `(word >> offsets[b]) & (2**width - 1)` for a 32-bit word, width 1..8 and each "
    "offset + width <= 32: vpmultishiftqb + a byte mask per lane (AVX-512 VBMI), shifts and masks elsewhere.",
)
