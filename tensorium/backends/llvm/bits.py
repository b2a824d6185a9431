"""The loop dialect's integer bit ops in LLVM IR: shifts, and ``dot_u8i8`` as the target's dot-product instruction.

``dot_u8i8`` on a vector of 32-bit lanes becomes the first form of :data:`DOT_FORMS` that the target's
features and the vector's width allow: ``vpdpbusd`` (AVX-512 VNNI on 512-bit vectors; AVX-VNNI, or AVX-512
VNNI with VL, on 256 and 128 bits), else, when the op is ``narrow`` (its pairs of products fit i16),
``vpmaddubsw`` + ``vpmaddwd`` + ``vpaddd`` (AVX-512 BW, AVX2, SSSE3); anything else (a scalar, a target
without these instructions, a wide op on AVX2) is the portable form: bytes widened to i32, multiplied, and
summed by fours, which any LLVM target compiles. ``bit_fields`` on a vector is ``vpmultishiftqb`` and a byte
mask where the target has AVX-512 VBMI (and VL below 512 bits), else shifts, masks and ors. ``lookup_bytes`` on
16 lanes with a table that is the same in every lane is one 64-byte load and ``vpermb`` (AVX-512 VBMI); elsewhere
four byte loads per lane.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from llvmlite import ir

from ...ir.core import Operation
from ...ir.types import IntegerType
from .common import I8, I32, I64

I16 = ir.IntType(16)


@dataclass(frozen=True)
class DotForm:
    """One instruction sequence for ``dot_u8i8`` on vectors of ``bits`` bits: ``dot`` is an intrinsic taking
    (acc, u8 bytes, i8 bytes), or ``pairs`` + ``widen`` the two-step multiply-add (u8 x i8 pairs to i16, then
    i16 pairs times 1 to i32) that is exact only for ``narrow`` ops."""

    bits: int
    needs: tuple[frozenset[str], ...]
    """Feature sets, any one of which suffices."""
    dot: str = ""
    pairs: str = ""
    widen: str = ""

    @property
    def narrow_only(self) -> bool:
        """Whether the form saturates (``vpmaddubsw``), so it serves only ``narrow`` ops."""
        return not self.dot

    def available(self, features: frozenset[str], bits: int, narrow: bool) -> bool:
        """Whether this form computes the op exactly for vectors of ``bits`` bits on a target with ``features``."""
        return bits == self.bits and (narrow or not self.narrow_only) and any(need <= features for need in self.needs)


_VNNI_VL = (frozenset({"avxvnni"}), frozenset({"avx512vnni", "avx512vl"}))
DOT_FORMS = (
    DotForm(512, (frozenset({"avx512vnni"}),), dot="llvm.x86.avx512.vpdpbusd.512"),
    DotForm(256, _VNNI_VL, dot="llvm.x86.avx512.vpdpbusd.256"),
    DotForm(128, _VNNI_VL, dot="llvm.x86.avx512.vpdpbusd.128"),
    DotForm(
        512, (frozenset({"avx512bw"}),), pairs="llvm.x86.avx512.pmaddubs.w.512", widen="llvm.x86.avx512.pmaddw.d.512"
    ),
    DotForm(256, (frozenset({"avx2"}),), pairs="llvm.x86.avx2.pmadd.ub.sw", widen="llvm.x86.avx2.pmadd.wd"),
    DotForm(128, (frozenset({"ssse3"}),), pairs="llvm.x86.ssse3.pmadd.ub.sw.128", widen="llvm.x86.sse2.pmadd.wd"),
)
"""The target instructions for ``dot_u8i8``, in order of preference."""


def dot_form(features: frozenset[str], bits: int, narrow: bool) -> DotForm | None:
    """The first of :data:`DOT_FORMS` that computes a ``dot_u8i8`` on ``bits``-bit vectors exactly on a target
    with ``features``; None where only the portable form does."""
    return next((f for f in DOT_FORMS if f.available(features, bits, narrow)), None)


def pairs_form(features: frozenset[str], bits: int) -> DotForm | None:
    """The two-step form of :data:`DOT_FORMS` (``vpmaddubsw``, ``vpmaddwd``) for ``bits``-bit vectors on a target
    with ``features``, even where it has VNNI; None where it has neither."""
    return next((f for f in DOT_FORMS if f.pairs and f.available(features, bits, True)), None)


MULTISHIFTS = {
    512: ("llvm.x86.avx512.pmultishift.qb.512", frozenset({"avx512vbmi"})),
    256: ("llvm.x86.avx512.pmultishift.qb.256", frozenset({"avx512vbmi", "avx512vl"})),
    128: ("llvm.x86.avx512.pmultishift.qb.128", frozenset({"avx512vbmi", "avx512vl"})),
}
"""``vpmultishiftqb`` per vector width: its intrinsic and the features it needs."""


def multishift_intrinsic(features: frozenset[str], bits: int) -> str | None:
    """The ``vpmultishiftqb`` intrinsic for ``bits``-bit vectors on a target with ``features``, else None."""
    name, needs = MULTISHIFTS.get(bits, ("", frozenset({"-"})))
    return name if needs <= features else None


def _splat(t: ir.Type, value: int) -> ir.Constant:
    return ir.Constant(t, [value] * t.count) if isinstance(t, ir.VectorType) else ir.Constant(t, value)


class BitsEmitter:
    """The LLVM emitter's integer bit ops (a mixin). The scalar methods work on vectors too, which is how the
    vectorizer emits them; ``features`` are the target CPU's (empty: the portable forms only)."""

    OPS: ClassVar[dict[str, str]] = {
        "loop.shl": "emit_shift",
        "loop.shr": "emit_shift",
        "loop.dot_u8i8": "emit_dot_u8i8",
        "loop.dot_u8i8_halves": "emit_dot_u8i8_halves",
        "loop.sum_halves": "emit_sum_halves",
        "loop.lookup_bytes": "emit_lookup_bytes",
        "loop.bit_fields": "emit_bit_fields",
    }
    builder: ir.IRBuilder
    features: frozenset[str] = frozenset()

    def emit_shift(self, op: Operation) -> ir.Value:
        """``shl`` / ``shr`` (logical or arithmetic by the type's sign), amounts outside ``[0, width)`` guarded."""
        x, amount = self.operands(op)  # type: ignore[attr-defined]
        t = op.results[0].type
        assert isinstance(t, IntegerType)
        bl = self.builder
        if op.name == "loop.shl":
            shifted, fill = bl.shl(x, amount), _splat(x.type, 0)
        elif t.signed:
            shifted = bl.ashr(x, amount)
            fill = bl.ashr(x, _splat(x.type, t.width - 1))
        else:
            shifted, fill = bl.lshr(x, amount), _splat(x.type, 0)
        inside = bl.icmp_unsigned("<", amount, _splat(x.type, t.width))
        return bl.select(inside, shifted, fill)

    def emit_dot_u8i8(self, op: Operation) -> ir.Value:
        """``acc + sum of u8 x i8 byte products`` per 32-bit lane, as the target's instruction where it has one."""
        acc, lhs, rhs = self.operands(op)  # type: ignore[attr-defined]
        lanes = acc.type.count if isinstance(acc.type, ir.VectorType) else 0
        form = dot_form(self.features, 32 * lanes, bool(op.attr("narrow", False))) if lanes else None
        if form is None:
            return self._portable_dot(acc, lhs, rhs, lanes)
        bl = self.builder
        words = ir.VectorType(I32, lanes)
        if form.dot:
            dot = self.intrinsic(form.dot, words, [words] * 3)  # type: ignore[attr-defined]
            return bl.call(dot, [acc, lhs, rhs])
        byte_vector, half_vector = ir.VectorType(I8, 4 * lanes), ir.VectorType(I16, 2 * lanes)
        pairs = self.intrinsic(form.pairs, half_vector, [byte_vector, byte_vector])  # type: ignore[attr-defined]
        halves = bl.call(pairs, [bl.bitcast(lhs, byte_vector), bl.bitcast(rhs, byte_vector)])
        widen = self.intrinsic(form.widen, words, [half_vector, half_vector])  # type: ignore[attr-defined]
        return bl.add(acc, bl.call(widen, [halves, _splat(half_vector, 1)]))

    def emit_dot_u8i8_halves(self, op: Operation) -> ir.Value:
        """Each 16-bit half of ``acc`` plus its two byte products: ``vpmaddubsw`` and ``vpaddw`` where the target
        has the pairs form (AVX2, AVX-512 BW, SSSE3), else bytes widened to i16, multiplied and added in pairs."""
        acc, lhs, rhs = self.operands(op)  # type: ignore[attr-defined]
        bl = self.builder
        lanes = acc.type.count if isinstance(acc.type, ir.VectorType) else 0
        count = max(lanes, 1)
        halves = ir.VectorType(I16, 2 * count)
        byte_vector = ir.VectorType(I8, 4 * count)
        form = pairs_form(self.features, 32 * lanes) if lanes else None
        lhs, rhs = bl.bitcast(lhs, byte_vector), bl.bitcast(rhs, byte_vector)
        if form is not None:
            pairs = self.intrinsic(form.pairs, halves, [byte_vector, byte_vector])  # type: ignore[attr-defined]
            summed = bl.call(pairs, [lhs, rhs])
        else:
            wide = ir.VectorType(I16, 4 * count)
            products = bl.mul(bl.zext(lhs, wide), bl.sext(rhs, wide))
            even = ir.Constant(ir.VectorType(I32, 2 * count), [2 * i for i in range(2 * count)])
            odd = ir.Constant(ir.VectorType(I32, 2 * count), [2 * i + 1 for i in range(2 * count)])
            undefined = ir.Constant(wide, ir.Undefined)
            summed = bl.add(bl.shuffle_vector(products, undefined, even), bl.shuffle_vector(products, undefined, odd))
        return bl.bitcast(bl.add(bl.bitcast(acc, halves), summed), acc.type)

    def emit_sum_halves(self, op: Operation) -> ir.Value:
        """The two signed halves of each word added: ``vpmaddwd`` by ones where the target has it, else shifts."""
        (x,) = self.operands(op)  # type: ignore[attr-defined]
        bl = self.builder
        lanes = x.type.count if isinstance(x.type, ir.VectorType) else 0
        form = pairs_form(self.features, 32 * lanes) if lanes else None
        if form is not None:
            half_vector = ir.VectorType(I16, 2 * lanes)
            widen = self.intrinsic(form.widen, x.type, [half_vector, half_vector])  # type: ignore[attr-defined]
            return bl.call(widen, [bl.bitcast(x, half_vector), _splat(half_vector, 1)])
        low = bl.ashr(bl.shl(x, _splat(x.type, 16)), _splat(x.type, 16))
        return bl.add(low, bl.ashr(x, _splat(x.type, 16)))

    def emit_bit_fields(self, op: Operation) -> ir.Value:
        """Four ``width``-bit fields of each 32-bit word into its bytes: one ``vpmultishiftqb`` (each byte an
        8-bit window at any bit offset of its 64-bit lane: ``offset`` in a lane's low word, ``32 + offset`` in its
        high word) and a byte mask where :func:`multishift_intrinsic` names one, else a shift and mask per field."""
        (word,) = self.operands(op)  # type: ignore[attr-defined]
        offsets = [int(o) for o in op.attr("offsets")]
        width = int(op.attr("width"))
        bl = self.builder
        lanes = word.type.count if isinstance(word.type, ir.VectorType) else 0
        name = multishift_intrinsic(self.features, 32 * lanes) if lanes else None
        if name is not None:
            byte_vector = ir.VectorType(I8, 4 * lanes)
            control = ir.Constant(byte_vector, [32 * (n % 2) + offsets[b] for n in range(lanes) for b in range(4)])
            shift = self.intrinsic(name, byte_vector, [byte_vector, byte_vector])  # type: ignore[attr-defined]
            fields = bl.call(shift, [control, bl.bitcast(word, byte_vector)])
            masked = bl.and_(fields, ir.Constant(byte_vector, [(1 << width) - 1] * (4 * lanes)))
            return bl.bitcast(masked, word.type)
        out: ir.Value | None = None
        for byte, offset in enumerate(offsets):
            piece = bl.lshr(word, _splat(word.type, offset)) if offset else word
            piece = bl.and_(piece, _splat(word.type, (1 << width) - 1))
            piece = bl.shl(piece, _splat(word.type, 8 * byte)) if byte else piece
            out = piece if out is None else bl.or_(out, piece)
        assert out is not None
        return out

    def emit_lookup_bytes(self, op: Operation) -> ir.Value:
        """One lane's lookup: the four index bytes (low 6 bits each) as byte offsets from the table's first word."""
        bl = self.builder
        index = self.operands(op)[0]  # type: ignore[attr-defined]
        ref = self.buffer(op.operands[1])  # type: ignore[attr-defined]
        start = self.address(ref, self.values(op.operands[2:]))  # type: ignore[attr-defined]
        out: ir.Value = ir.Constant(I32, 0)
        for byte in range(4):
            offset = bl.zext(bl.and_(bl.lshr(index, ir.Constant(I32, 8 * byte)), ir.Constant(I32, 63)), I64)
            if not start.type.is_opaque:
                start = bl.bitcast(start, I8.as_pointer())
            value = bl.zext(bl.load(bl.gep(start, [offset], source_etype=I8), typ=I8), I32)
            out = bl.or_(out, bl.shl(value, ir.Constant(I32, 8 * byte)) if byte else value)
        return out

    def vector_lookup_bytes(self, op: Operation) -> ir.Value:
        """``lookup_bytes`` in a vector loop: ``vpermb`` of the 64-byte table when it is the same in all of 16 lanes
        and the target has AVX-512 VBMI, else lane by lane."""
        varying = self.plan.varying  # type: ignore[attr-defined]
        lanes = self.lanes  # type: ignore[attr-defined]
        if lanes != 16 or "avx512vbmi" not in self.features or any(id(v) in varying for v in op.operands[1:]):
            return self.by_lanes(op)  # type: ignore[attr-defined, no-any-return]
        bl = self.builder
        ref = self.buffer(op.operands[1])  # type: ignore[attr-defined]
        address = self.vector_address(ref, list(op.operands[2:]))  # type: ignore[attr-defined]
        words = ir.VectorType(I32, lanes)
        table = bl.bitcast(bl.load(address, typ=words, align=4), ir.VectorType(I8, 64))
        index = bl.bitcast(self.as_vector(op.operands[0]), ir.VectorType(I8, 64))  # type: ignore[attr-defined]
        permute = self.intrinsic("llvm.x86.avx512.permvar.qi.512", table.type, [table.type, table.type])  # type: ignore[attr-defined]
        return bl.bitcast(bl.call(permute, [table, index]), words)

    def _portable_dot(self, acc: ir.Value, lhs: ir.Value, rhs: ir.Value, lanes: int) -> ir.Value:
        """Bytes widened to i32 and multiplied, the four products of each lane summed (``lanes`` 0: a scalar)."""
        bl = self.builder
        count = max(lanes, 1)
        words = ir.VectorType(I32, count)
        if not lanes:
            lhs, rhs, acc = (bl.bitcast(v, words) for v in (lhs, rhs, acc))
        wide = ir.VectorType(I32, 4 * count)
        bytes_ = ir.VectorType(I8, 4 * count)
        products = bl.mul(bl.zext(bl.bitcast(lhs, bytes_), wide), bl.sext(bl.bitcast(rhs, bytes_), wide))
        total = acc
        for byte in range(4):
            mask = ir.Constant(ir.VectorType(I32, count), [4 * lane + byte for lane in range(count)])
            total = bl.add(total, bl.shuffle_vector(products, ir.Constant(wide, ir.Undefined), mask))
        return total if lanes else bl.bitcast(total, I32)
