"""An llvmlite IR builder that folds integer constants while emitting.

Kernels compute most of their index arithmetic from constants once loops are unrolled (``row * 64 + 16``
for every lane group of a register tile), and llvmlite's builder writes every such operation out as an
instruction: the GPT-2 attention kernel was 40,000 lines of LLVM IR, more than half of them ``add`` and
``mul`` of constants. Each one costs Python time to build and print and LLVM time to parse and fold.
:class:`FoldingBuilder` computes them instead: integer operations whose operands are all constants return
a constant, identities (``x + 0``, ``x * 1``, ``x & -1``, ``select`` on a constant condition) return the
operand, and comparisons of constants return an ``i1`` constant. Everything else is built as before, so
the code LLVM compiles is the code it would have folded itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir

__all__ = ["FoldingBuilder", "int_constant"]


def int_constant(v: ir.Value) -> int | None:
    """The value of a scalar integer constant as a signed Python int (``i1 true`` is -1); None for anything
    else (vectors, floats, undef, non-constants)."""
    if not isinstance(v, ir.Constant) or not isinstance(v.type, ir.IntType):
        return None
    value = v.constant
    if not isinstance(value, int):  # bool is an int
        return None
    return _signed(int(value), v.type.width)


def _signed(value: int, width: int) -> int:
    """``value`` wrapped to a two's complement integer of ``width`` bits."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def _unsigned(value: int, width: int) -> int:
    return value & ((1 << width) - 1)


def _constant(t: ir.IntType, value: int) -> ir.Constant:
    """``value`` wrapped to ``t``; i1 as 0 or 1, as llvmlite holds it."""
    return ir.Constant(t, _unsigned(value, 1) if t.width == 1 else _signed(value, t.width))


def _trunc_div(a: int, b: int) -> int:
    """C's division (toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_SIGNED: dict[str, Callable[[int, int], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


class FoldingBuilder(ir.IRBuilder):
    """``ir.IRBuilder`` whose integer arithmetic, comparisons and selects fold constants (see the module
    docstring). Results may be ``ir.Constant`` or one of the operands rather than new instructions."""

    def _fold(self, lhs: ir.Value, rhs: ir.Value, compute: Callable[[int, int], int | None]) -> ir.Value | None:
        a, b = int_constant(lhs), int_constant(rhs)
        if a is None or b is None or lhs.type != rhs.type:
            return None
        value = compute(a, b)
        return None if value is None else _constant(lhs.type, value)

    def add(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        """``lhs + rhs``."""
        if not flags:
            folded = self._fold(lhs, rhs, lambda a, b: a + b)
            if folded is not None:
                return folded
            if int_constant(rhs) == 0:
                return lhs
            if int_constant(lhs) == 0:
                return rhs
        return super().add(lhs, rhs, name, flags)

    def sub(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        """``lhs - rhs``."""
        if not flags:
            folded = self._fold(lhs, rhs, lambda a, b: a - b)
            if folded is not None:
                return folded
            if int_constant(rhs) == 0:
                return lhs
        return super().sub(lhs, rhs, name, flags)

    def mul(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        """``lhs * rhs``."""
        if not flags:
            folded = self._fold(lhs, rhs, lambda a, b: a * b)
            if folded is not None:
                return folded
            if int_constant(rhs) == 1:
                return lhs
            if int_constant(lhs) == 1:
                return rhs
        return super().mul(lhs, rhs, name, flags)

    def and_(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        """``lhs & rhs``."""
        folded = self._fold(lhs, rhs, lambda a, b: a & b)
        if folded is not None:
            return folded
        if int_constant(rhs) == -1:
            return lhs
        if int_constant(lhs) == -1:
            return rhs
        return super().and_(lhs, rhs, name, flags)

    def or_(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        """``lhs | rhs``."""
        folded = self._fold(lhs, rhs, lambda a, b: a | b)
        if folded is not None:
            return folded
        if int_constant(rhs) == 0:
            return lhs
        if int_constant(lhs) == 0:
            return rhs
        return super().or_(lhs, rhs, name, flags)

    def xor(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        """``lhs ^ rhs``."""
        folded = self._fold(lhs, rhs, lambda a, b: a ^ b)
        return folded if folded is not None else super().xor(lhs, rhs, name, flags)

    def sdiv(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        """Signed division; folded only where LLVM's is defined (no zero divisor, no ``MIN / -1``)."""
        width = lhs.type.width if isinstance(lhs.type, ir.IntType) else 0

        def compute(a: int, b: int) -> int | None:
            return None if b == 0 or (b == -1 and a == -(1 << (width - 1))) else _trunc_div(a, b)

        folded = self._fold(lhs, rhs, compute)
        return folded if folded is not None else super().sdiv(lhs, rhs, name, flags)

    def srem(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        """Signed remainder (the sign of ``lhs``); folded where LLVM's is defined."""
        width = lhs.type.width if isinstance(lhs.type, ir.IntType) else 0

        def compute(a: int, b: int) -> int | None:
            return None if b == 0 or (b == -1 and a == -(1 << (width - 1))) else a - b * _trunc_div(a, b)

        folded = self._fold(lhs, rhs, compute)
        return folded if folded is not None else super().srem(lhs, rhs, name, flags)

    def udiv(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        """Unsigned division; folded for a nonzero constant divisor."""
        width = lhs.type.width if isinstance(lhs.type, ir.IntType) else 0

        def compute(a: int, b: int) -> int | None:
            return None if b == 0 else _unsigned(a, width) // _unsigned(b, width)

        folded = self._fold(lhs, rhs, compute)
        return folded if folded is not None else super().udiv(lhs, rhs, name, flags)

    def urem(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        """Unsigned remainder; folded for a nonzero constant divisor."""
        width = lhs.type.width if isinstance(lhs.type, ir.IntType) else 0

        def compute(a: int, b: int) -> int | None:
            return None if b == 0 else _unsigned(a, width) % _unsigned(b, width)

        folded = self._fold(lhs, rhs, compute)
        return folded if folded is not None else super().urem(lhs, rhs, name, flags)

    def icmp_signed(self, cmpop: str, lhs: ir.Value, rhs: ir.Value, name: str = "") -> ir.Value:
        """A signed comparison; an ``i1`` constant for two constants."""
        a, b = int_constant(lhs), int_constant(rhs)
        if a is not None and b is not None and lhs.type == rhs.type:
            return _constant(ir.IntType(1), int(_SIGNED[cmpop](a, b)))
        return super().icmp_signed(cmpop, lhs, rhs, name)

    def icmp_unsigned(self, cmpop: str, lhs: ir.Value, rhs: ir.Value, name: str = "") -> ir.Value:
        """An unsigned comparison; an ``i1`` constant for two constants."""
        a, b = int_constant(lhs), int_constant(rhs)
        if a is not None and b is not None and lhs.type == rhs.type:
            width = lhs.type.width
            return _constant(ir.IntType(1), int(_SIGNED[cmpop](_unsigned(a, width), _unsigned(b, width))))
        return super().icmp_unsigned(cmpop, lhs, rhs, name)

    def select(self, cond: ir.Value, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        """``cond ? lhs : rhs``; the chosen operand for a constant ``cond``."""
        if not flags and cond.type == ir.IntType(1):
            chosen = int_constant(cond)
            if chosen is not None:
                return lhs if chosen else rhs
        return super().select(cond, lhs, rhs, name, flags)

    def trunc(self, value: ir.Value, typ: ir.Type, name: str = "") -> ir.Value:
        """Truncation of an integer; a constant of ``typ`` for a constant."""
        a = int_constant(value)
        if a is not None and isinstance(typ, ir.IntType):
            return _constant(typ, a)
        return super().trunc(value, typ, name)

    def zext(self, value: ir.Value, typ: ir.Type, name: str = "") -> ir.Value:
        """Zero extension; a constant of ``typ`` for a constant."""
        a = int_constant(value)
        if a is not None and isinstance(typ, ir.IntType):
            return _constant(typ, _unsigned(a, value.type.width))
        return super().zext(value, typ, name)

    def sext(self, value: ir.Value, typ: ir.Type, name: str = "") -> ir.Value:
        """Sign extension; a constant of ``typ`` for a constant."""
        a = int_constant(value)
        if a is not None and isinstance(typ, ir.IntType):
            return _constant(typ, a)
        return super().sext(value, typ, name)
