"""Scalar ops of the loop dialect in LLVM IR, with the interpreter's exact semantics.

Integer division and remainder by zero give 0 and the overflowing ``MIN / -1`` wraps (LLVM's sdiv
would trap); float max/min propagate NaN as numpy does; casts from floats to integers truncate and
saturate to the i64 range (``llvm.fptosi.sat``) before wrapping to the width. f16 and bf16 values are
computed in float and rounded after each op. ``tanh`` is an expression computed in double (no libm call),
accurate to about 1e-14 relative; ``erf`` is one too, to float precision, for f32, f16 and bf16, and the C
library's ``erf`` for f64.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar

import numpy as np
from llvmlite import ir

from ...ir.core import Operation
from ...ir.storage import coerce
from ...ir.types import FloatType, IntegerType, ScalarType, Type
from ..emitter import KernelEmitter
from .common import F16, F32, F64, I1, I32, I64, is_signed, memory_type, register_type

_FLOAT_ARITH = {"loop.add": "fadd", "loop.sub": "fsub", "loop.mul": "fmul", "loop.div": "fdiv", "loop.rem": "frem"}
_INT_ARITH = {"loop.add": "add", "loop.sub": "sub", "loop.mul": "mul", "loop.and": "and_", "loop.or": "or_"}
_INT_ARITH["loop.xor"] = "xor"
_MATH = {"loop.exp": "exp", "loop.log": "log", "loop.sqrt": "sqrt", "loop.sin": "sin", "loop.cos": "cos"}
_MATH |= {"loop.floor": "floor", "loop.asin": "asin", "loop.acos": "acos", "loop.atan": "atan"}
_PREDICATES = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

# erfc(z) for z >= 0 with relative error below 1.2e-7 (Numerical Recipes, erfcc): t * exp(-z*z + p(t)).
_ERFC = [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587]
_ERFC += [-0.82215223, 0.17087277]


def _erf_series(terms: int) -> list[float]:
    """Coefficients of erf(x) / x as a polynomial in x*x (the Taylor series), lowest first."""
    scale = 2 / math.sqrt(math.pi)
    return [scale * (-1) ** k / (math.factorial(k) * (2 * k + 1)) for k in range(terms)]


class ScalarEmitter(KernelEmitter):
    """Emits the scalar ops of a loop-level kernel into ``self.builder``; the base of the LLVM emitter.

    ``OPS`` maps op names to method names; each method takes the op and returns its LLVM result (or None).
    An emitter of LLVM IR for another target (NVPTX) subclasses the LLVM emitter and overrides single
    methods or the helpers ``intrinsic`` and ``round``.
    """

    OPS: ClassVar[dict[str, str]] = {
        **KernelEmitter.OPS,
        "loop.const": "emit_const",
        **dict.fromkeys(["loop.add", "loop.sub", "loop.mul", "loop.and", "loop.or", "loop.xor"], "emit_arith"),
        "loop.div": "emit_div",
        "loop.rem": "emit_rem",
        "loop.max": "emit_minmax",
        "loop.min": "emit_minmax",
        "loop.pow": "emit_pow",
        "loop.neg": "emit_neg",
        "loop.abs": "emit_abs",
        **dict.fromkeys(_MATH, "emit_math"),
        "loop.rsqrt": "emit_rsqrt",
        "loop.tanh": "emit_tanh",
        "loop.erf": "emit_erf",
        "loop.fma": "emit_fma",
        "loop.cmp": "emit_cmp",
        "loop.select": "emit_select",
        "loop.cast": "emit_cast",
        "loop.bitcast": "emit_bitcast",
    }

    def __init__(self, module: ir.Module) -> None:
        super().__init__()
        self.module = module
        self.builder = ir.IRBuilder()

    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        """The declaration of function ``name`` (an LLVM intrinsic or runtime symbol), declared once."""
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        return ir.Function(self.module, ir.FunctionType(ret, args), name=name)

    def call_math(self, name: str, *args: ir.Value) -> ir.Value:
        """``llvm.<name>`` on float or double arguments."""
        t = args[0].type
        element = t.element if isinstance(t, ir.VectorType) else t
        suffix = "f64" if element == F64 else "f32"
        if isinstance(t, ir.VectorType):
            suffix = f"v{t.count}{suffix}"
        return self.builder.call(self.intrinsic(f"llvm.{name}.{suffix}", t, [t] * len(args)), list(args))

    def round(self, v: ir.Value, t: Type) -> ir.Value:
        """``v`` (computed in float) rounded to the precision of f16 or bf16; other types unchanged."""
        b = self.builder
        if t == FloatType("f16"):
            return b.fpext(b.fptrunc(v, F16), F32)
        if t != FloatType("bf16"):
            return v
        bits = b.bitcast(v, I32)
        odd = b.and_(b.lshr(bits, I32(16)), I32(1))
        rounded = b.and_(b.add(bits, b.add(odd, I32(0x7FFF))), I32(0xFFFF0000))
        return b.select(b.fcmp_unordered("uno", v, v), v, b.bitcast(rounded, F32))

    def constant(self, value: float | int | bool, t: ScalarType) -> ir.Constant:
        """An LLVM constant of ``t`` holding ``value`` as the interpreter holds it (rounded or wrapped)."""
        held = coerce(np.asarray(value), t).item()
        lt = register_type(t)
        if isinstance(t, FloatType):
            return ir.Constant(lt, float(held))
        bits = lt.width
        wrapped = int(held) & ((1 << bits) - 1)
        return ir.Constant(lt, wrapped - (1 << bits) if bits > 1 and wrapped >> (bits - 1) else wrapped)

    def scalar_type(self, op: Operation) -> ScalarType:
        """The IR type of the last operand of ``op`` (the operand type of every scalar op)."""
        t = op.operands[-1].type
        assert isinstance(t, ScalarType)
        return t

    def emit_const(self, op: Operation) -> ir.Value:
        """The constant, rounded or wrapped to its type."""
        t = op.results[0].type
        assert isinstance(t, ScalarType)
        return self.constant(op.attr("value"), t)

    def emit_arith(self, op: Operation) -> ir.Value:
        """add, sub, mul (wrapping for integers) and the bitwise and/or/xor."""
        a, b = self.operands(op)
        t = self.scalar_type(op)
        if isinstance(t, FloatType):
            return self.round(getattr(self.builder, _FLOAT_ARITH[op.name])(a, b), t)
        return getattr(self.builder, _INT_ARITH[op.name])(a, b)  # type: ignore[no-any-return]

    def _guarded_divisor(self, b: ir.Value, signed: bool) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(b == 0, b == -1 for signed types, b replaced by 1 in those cases) for trap-free division."""
        bl = self.builder
        zero = bl.icmp_unsigned("==", b, ir.Constant(b.type, 0))
        minus_one = bl.icmp_signed("==", b, ir.Constant(b.type, -1)) if signed else I1(0)
        safe = bl.select(bl.or_(zero, minus_one), ir.Constant(b.type, 1), b)
        return zero, minus_one, safe

    def emit_div(self, op: Operation) -> ir.Value:
        """Division; integers truncate, give 0 for a zero divisor and wrap MIN / -1."""
        a, b = self.operands(op)
        t = self.scalar_type(op)
        bl = self.builder
        if isinstance(t, FloatType):
            return self.round(bl.fdiv(a, b), t)
        zero, minus_one, safe = self._guarded_divisor(b, is_signed(t))
        q = bl.sdiv(a, safe) if is_signed(t) else bl.udiv(a, safe)
        q = bl.select(minus_one, bl.neg(a), q)
        return bl.select(zero, ir.Constant(a.type, 0), q)

    def emit_rem(self, op: Operation) -> ir.Value:
        """The truncated remainder (``frem``, ``srem``, ``urem``); 0 for an integer zero divisor."""
        a, b = self.operands(op)
        t = self.scalar_type(op)
        if isinstance(t, FloatType):
            return self.round(self.builder.frem(a, b), t)
        _, _, safe = self._guarded_divisor(b, is_signed(t))
        return self.builder.srem(a, safe) if is_signed(t) else self.builder.urem(a, safe)

    def emit_minmax(self, op: Operation) -> ir.Value:
        """max / min; a NaN operand gives NaN."""
        a, b = self.operands(op)
        t = self.scalar_type(op)
        bl = self.builder
        predicate = ">" if op.name == "loop.max" else "<"
        if isinstance(t, FloatType):
            keep = bl.or_(bl.fcmp_ordered(predicate, a, b), bl.fcmp_unordered("uno", a, a))
        elif is_signed(t):
            keep = bl.icmp_signed(predicate, a, b)
        else:
            keep = bl.icmp_unsigned(predicate, a, b)
        return bl.select(keep, a, b)

    def emit_pow(self, op: Operation) -> ir.Value:
        """``llvm.pow`` for floats, the squaring helper for integers."""
        a, b = self.operands(op)
        t = self.scalar_type(op)
        if isinstance(t, FloatType):
            return self.round(self.call_math("pow", a, b), t)
        return self.builder.call(self._integer_pow(a.type, is_signed(t)), [a, b])

    def _integer_pow(self, lt: ir.IntType, signed: bool) -> ir.Function:
        """A helper function computing a ** b by squaring (wrapping); negative b gives 0 unless a is +-1."""
        name = f"tensorium.ipow.{'i' if signed else 'u'}{lt.width}"
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        fn = ir.Function(self.module, ir.FunctionType(lt, [lt, lt]), name=name)
        fn.linkage = "internal"
        a, b = fn.args
        entry, negative, loop, done = (fn.append_basic_block(n) for n in ("entry", "negative", "loop", "done"))
        bl = ir.IRBuilder(entry)
        one, zero = ir.Constant(lt, 1), ir.Constant(lt, 0)
        bl.cbranch(bl.icmp_signed("<", b, zero) if signed else I1(0), negative, loop)
        bl.position_at_end(negative)
        odd = bl.trunc(b, I1)
        minus_one_power = bl.select(odd, ir.Constant(lt, -1), one)
        is_minus_one = bl.icmp_signed("==", a, ir.Constant(lt, -1))
        bl.ret(bl.select(bl.icmp_signed("==", a, one), one, bl.select(is_minus_one, minus_one_power, zero)))
        # The loop runs at least once, so b == 0 keeps result 1.
        bl.position_at_end(loop)
        result, base, exponent = bl.phi(lt), bl.phi(lt), bl.phi(lt)
        step = bl.select(bl.trunc(exponent, I1), bl.mul(result, base), result)
        rest = bl.lshr(exponent, one)
        for phi, start, nxt in ((result, one, step), (base, a, bl.mul(base, base)), (exponent, b, rest)):
            phi.add_incoming(start, entry)
            phi.add_incoming(nxt, loop)
        bl.cbranch(bl.icmp_unsigned("==", rest, zero), done, loop)
        bl.position_at_end(done)
        bl.ret(step)
        return fn

    def emit_neg(self, op: Operation) -> ir.Value:
        """-x (integers wrap)."""
        (a,) = self.operands(op)
        return self.builder.fneg(a) if isinstance(self.scalar_type(op), FloatType) else self.builder.neg(a)

    def emit_abs(self, op: Operation) -> ir.Value:
        """|x|; the most negative integer stays itself, as in numpy."""
        (a,) = self.operands(op)
        t = self.scalar_type(op)
        if isinstance(t, FloatType):
            return self.call_math("fabs", a)
        if not is_signed(t):
            return a
        bl = self.builder
        return bl.select(bl.icmp_signed("<", a, ir.Constant(a.type, 0)), bl.neg(a), a)

    def emit_math(self, op: Operation) -> ir.Value:
        """exp, log, sqrt, sin, cos, floor, asin, acos, atan through their LLVM intrinsics."""
        (a,) = self.operands(op)
        return self.round(self.call_math(_MATH[op.name], a), self.scalar_type(op))

    def emit_rsqrt(self, op: Operation) -> ir.Value:
        """1 / sqrt(x)."""
        (a,) = self.operands(op)
        t = self.scalar_type(op)
        # numpy rounds the f16 square root before dividing; bf16 is computed in float32 throughout.
        root = self.call_math("sqrt", a)
        root = self.round(root, t) if t == FloatType("f16") else root
        return self.round(self.builder.fdiv(ir.Constant(a.type, 1.0), root), t)

    def emit_fma(self, op: Operation) -> ir.Value:
        """a * b + c, fused for floats (``llvm.fma``)."""
        a, b, c = self.operands(op)
        t = self.scalar_type(op)
        if isinstance(t, FloatType):
            return self.round(self.call_math("fma", a, b, c), t)
        return self.builder.add(self.builder.mul(a, b), c)

    def _in_double(self, op: Operation, fn: Callable[[ir.Value], ir.Value]) -> ir.Value:
        """``fn`` applied to the operand of ``op`` widened to double, narrowed back to the op's type."""
        (a,) = self.operands(op)
        bl = self.builder
        wide = a if a.type == F64 else bl.fpext(a, F64)
        out = fn(wide)
        return self.round(out if a.type == F64 else bl.fptrunc(out, a.type), self.scalar_type(op))

    def polynomial(self, x: ir.Value, coefficients: list[float] | tuple[float, ...]) -> ir.Value:
        """sum(c[k] * x**k) by Horner's rule."""
        bl = self.builder
        acc: ir.Value = ir.Constant(x.type, coefficients[-1])
        for c in reversed(coefficients[:-1]):
            acc = bl.fadd(bl.fmul(acc, x), ir.Constant(x.type, c))
        return acc

    def emit_tanh(self, op: Operation) -> ir.Value:
        """tanh, computed in double by ``tanh``."""
        return self._in_double(op, self.tanh)

    def tanh(self, x: ir.Value) -> ir.Value:
        """tanh of a double: a series near 0, else sign(x) * (1 - 2 / (exp(2|x|) + 1)) (1e-14 relative)."""
        bl = self.builder
        ax = self.call_math("fabs", x)
        x2 = bl.fmul(x, x)
        small = bl.fmul(x, self.polynomial(x2, [1.0, -1 / 3, 2 / 15]))
        e = self.call_math("exp", bl.fmul(ax, F64(2.0)))
        large = bl.fsub(F64(1.0), bl.fdiv(F64(2.0), bl.fadd(e, F64(1.0))))
        return bl.select(bl.fcmp_ordered("<", ax, F64(0.01)), small, self.call_math("copysign", large, x))

    def emit_erf(self, op: Operation) -> ir.Value:
        """erf: for f64, the C library's ``erf`` (the interpreter's, correctly rounded to within an ulp; the
        expression below is off by up to 3e-7 relative in 1 - |erf| beyond 2.5, which 1 + erf(x) exposes);
        for the narrower types, computed in double by ``erf``."""
        if self.scalar_type(op) == FloatType("f64"):
            (a,) = self.operands(op)
            return self.builder.call(self.intrinsic("erf", F64, [F64]), [a])
        return self._in_double(op, self.erf)

    def erf(self, x: ir.Value) -> ir.Value:
        """erf of a double, to float precision: its Taylor series below 0.5, else 1 - erfc (relative error of
        erfc < 1.2e-7)."""
        bl = self.builder
        ax = self.call_math("fabs", x)
        small = bl.fmul(x, self.polynomial(bl.fmul(x, x), _erf_series(12)))
        t = bl.fdiv(F64(1.0), bl.fadd(F64(1.0), bl.fmul(F64(0.5), ax)))
        exponent = bl.fsub(self.polynomial(t, _ERFC), bl.fmul(ax, ax))
        erfc = bl.fmul(t, self.call_math("exp", exponent))
        large = self.call_math("copysign", bl.fsub(F64(1.0), erfc), x)
        return bl.select(bl.fcmp_unordered("<", ax, F64(0.5)), small, large)

    def emit_cmp(self, op: Operation) -> ir.Value:
        """A comparison: ordered for floats except ``ne``, signed or unsigned for integers."""
        a, b = self.operands(op)
        t = self.scalar_type(op)
        predicate = _PREDICATES[op.attr("predicate")]
        if isinstance(t, FloatType):
            if predicate == "!=":
                return self.builder.fcmp_unordered(predicate, a, b)
            return self.builder.fcmp_ordered(predicate, a, b)
        compare = self.builder.icmp_signed if is_signed(t) else self.builder.icmp_unsigned
        return compare(predicate, a, b)

    def emit_select(self, op: Operation) -> ir.Value:
        """cond ? lhs : rhs."""
        c, a, b = self.operands(op)
        return self.builder.select(c, a, b)

    def emit_cast(self, op: Operation) -> ir.Value:
        """A conversion to ``dtype`` (see ``convert``)."""
        (a,) = self.operands(op)
        src = self.scalar_type(op)
        dst = op.results[0].type
        assert isinstance(dst, ScalarType)
        return self.convert(a, src, dst)

    def emit_bitcast(self, op: Operation) -> ir.Value:
        """The bits of a float as an integer of its width, or back; f16 (held in float) goes through half.

        Works lane-wise on vectors too (the vectorizer calls it with vector operands)."""
        (a,) = self.operands(op)
        src, dst = self.scalar_type(op), op.results[0].type
        assert isinstance(dst, ScalarType)
        bl = self.builder
        lanes = a.type.count if isinstance(a.type, ir.VectorType) else 0

        def typed(t: ir.Type) -> ir.Type:
            return ir.VectorType(t, lanes) if lanes else t

        if src == FloatType("f16"):
            a = bl.fptrunc(a, typed(F16))
        out = bl.bitcast(a, typed(memory_type(dst)))
        return bl.fpext(out, typed(F32)) if dst == FloatType("f16") else out

    def round_to_odd(self, a: ir.Value) -> ir.Value:
        """A double narrowed to float rounding to odd, so that narrowing on to half rounds only once.

        (Narrowing double to half directly needs the ``__truncdfhf2`` runtime function.)
        """
        bl = self.builder
        near = bl.fptrunc(a, F32)
        bits = bl.bitcast(near, I32)
        away = bl.fcmp_ordered(">", self.call_math("fabs", bl.fpext(near, F64)), self.call_math("fabs", a))
        odd = bl.or_(bl.select(away, bl.sub(bits, I32(1)), bits), I32(1))
        exact = bl.fcmp_unordered("ueq", bl.fpext(near, F64), a)
        return bl.select(exact, near, bl.bitcast(odd, F32))

    def convert(self, a: ir.Value, src: ScalarType, dst: ScalarType) -> ir.Value:
        """``a`` of type ``src`` converted to ``dst`` as graph.cast converts."""
        bl = self.builder
        target = register_type(dst)
        if isinstance(dst, IntegerType) and dst.is_bool:
            if isinstance(src, FloatType):
                return bl.fcmp_unordered("!=", a, ir.Constant(a.type, 0.0))
            return bl.icmp_unsigned("!=", a, ir.Constant(a.type, 0))
        if isinstance(dst, FloatType):
            if isinstance(src, FloatType):
                if dst.name == "f16":
                    return bl.fpext(bl.fptrunc(self.round_to_odd(a) if a.type == F64 else a, F16), F32)
                if a.type != target:
                    a = bl.fpext(a, target) if target == F64 else bl.fptrunc(a, target)
                return self.round(a, dst)
            value = bl.sitofp(a, target) if is_signed(src) else bl.uitofp(a, target)
            return self.round(value, dst)
        if isinstance(src, FloatType):
            a = bl.call(self.intrinsic(f"llvm.fptosi.sat.i64.{'f64' if a.type == F64 else 'f32'}", I64, [a.type]), [a])
            src = IntegerType(64)
        width, target_width = a.type.width, target.width
        if width > target_width:
            return bl.trunc(a, target)
        if width < target_width:
            return bl.sext(a, target) if is_signed(src) else bl.zext(a, target)
        return a
