"""What the LLVM emitter's parts share: LLVM types of IR scalars, buffer values."""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ...errors import CompileError
from ...ir.types import BufferType, FloatType, IndexType, IntegerType, ScalarType, storage_dtype

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()


def register_type(t: ScalarType) -> ir.Type:
    """The LLVM type that holds values of ``t`` while computing.

    f16 and bf16 are computed in float and rounded after every op (as numpy computes them); integers
    keep their exact width, so odd widths wrap by themselves; ``index`` is i64.
    """
    if isinstance(t, FloatType):
        return F64 if t.name == "f64" else F32
    if isinstance(t, IntegerType):
        return ir.IntType(t.width)
    if isinstance(t, IndexType):
        return I64
    raise CompileError(f"the LLVM backend has no scalar type for {t}")


def memory_type(t: ScalarType) -> ir.Type:
    """The LLVM type of one element of a buffer of ``t``, laid out as the numpy storage dtype."""
    if isinstance(t, FloatType):
        return {"f16": F16, "bf16": F32, "f32": F32, "f64": F64}[t.name]
    return ir.IntType(storage_dtype(t).itemsize * 8)


def is_signed(t: ScalarType) -> bool:
    """Whether integer ops on ``t`` are signed (index and signed integers; i1 is unsigned like numpy's bool)."""
    return isinstance(t, IndexType) or (isinstance(t, IntegerType) and t.signed and not t.is_bool)


@dataclass
class BufferRef:
    """A buffer while emitting: its base pointer and one i64 size per dimension (constants when static)."""

    type: BufferType
    ptr: ir.Value
    sizes: list[ir.Value]
