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
from dataclasses import dataclass
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


def _overflows(a: int, b: int, width: int) -> bool:
    """Whether a signed division or remainder is undefined in LLVM: by zero, or ``MIN / -1``."""
    return b == 0 or (b == -1 and a == -(1 << (width - 1)))


@dataclass(frozen=True)
class _Rule:
    """How one binary integer operation folds: ``compute(a, b, width)`` on signed constants (None where LLVM
    leaves the result undefined), and the constant that makes it return its other operand on either side."""

    compute: Callable[[int, int, int], int | None]
    right_identity: int | None = None
    left_identity: int | None = None


_RULES = {
    "add": _Rule(lambda a, b, w: a + b, 0, 0),
    "sub": _Rule(lambda a, b, w: a - b, 0),
    "mul": _Rule(lambda a, b, w: a * b, 1, 1),
    "and_": _Rule(lambda a, b, w: a & b, -1, -1),
    "or_": _Rule(lambda a, b, w: a | b, 0, 0),
    "xor": _Rule(lambda a, b, w: a ^ b, 0, 0),
    "sdiv": _Rule(lambda a, b, w: None if _overflows(a, b, w) else _trunc_div(a, b)),
    "srem": _Rule(lambda a, b, w: None if _overflows(a, b, w) else a - b * _trunc_div(a, b)),
    "udiv": _Rule(lambda a, b, w: None if b == 0 else _unsigned(a, w) // _unsigned(b, w)),
    "urem": _Rule(lambda a, b, w: None if b == 0 else _unsigned(a, w) % _unsigned(b, w)),
}
"""The binary operations :class:`FoldingBuilder` folds, by the name of their ``ir.IRBuilder`` method."""


def _folding(op: str) -> Callable[..., ir.Value]:
    """The ``ir.IRBuilder`` method ``op`` with its constants folded by ``_RULES[op]``."""
    rule = _RULES[op]
    build = getattr(ir.IRBuilder, op)

    def method(self: ir.IRBuilder, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        if not flags:
            a, b = int_constant(lhs), int_constant(rhs)
            if a is not None and b is not None and lhs.type == rhs.type:
                value = rule.compute(a, b, lhs.type.width)
                if value is not None:
                    return _constant(lhs.type, value)
            if b is not None and b == rule.right_identity:
                return lhs
            if a is not None and a == rule.left_identity:
                return rhs
        return build(self, lhs, rhs, name, flags)  # type: ignore[no-any-return]

    method.__name__ = op
    method.__doc__ = f"``ir.IRBuilder.{op}``, folded for constant operands and identities."
    return method


class FoldingBuilder(ir.IRBuilder):
    """``ir.IRBuilder`` whose integer arithmetic, comparisons and selects fold constants (see the module
    docstring). Results may be ``ir.Constant`` or one of the operands rather than new instructions."""

    add = _folding("add")
    sub = _folding("sub")
    mul = _folding("mul")
    and_ = _folding("and_")
    or_ = _folding("or_")
    xor = _folding("xor")
    sdiv = _folding("sdiv")
    srem = _folding("srem")
    udiv = _folding("udiv")
    urem = _folding("urem")

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
