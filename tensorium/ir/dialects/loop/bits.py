"""Integer bit ops of the loop dialect: shifts and the four-byte dot product of integer dot-product kernels.

``shl`` and ``shr`` shift integers of 8, 16, 32 or 64 bits (``shr`` is logical for unsigned types and
arithmetic for signed ones); a shift amount outside ``[0, width)`` gives 0 (``shl``, unsigned ``shr``) or the
sign (signed ``shr``), so every amount has one result. ``dot_u8i8`` is the widening multiply-accumulate of
bytes that x86's ``vpdpbusd`` (AVX-512 VNNI, AVX-VNNI) computes per 32-bit lane and ``vpmaddubsw`` +
``vpmaddwd`` compute on AVX2: ``acc + sum_b u8(lhs byte b) * i8(rhs byte b)`` over the four bytes of two
32-bit words, exactly, the i32 sum wrapping. Its ``narrow`` attribute is a promise of the producer (as LLVM's
``nsw``): each pair of adjacent products (bytes 0 and 1, 2 and 3) sums within the i16 range, which lets a
backend use AVX2's saturating ``vpmaddubsw``; a result where the promise is broken is undefined.
"""

from __future__ import annotations

import numpy as np

from ...attributes import BoolAttr
from ...opdef import InferError, OpDef, define
from ...types import IntegerType, Type, i32
from .common import expect_scalar, same_scalar

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
