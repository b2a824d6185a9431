"""Explicit vectorization of ``vectorize`` loops: the body is emitted once for ``W`` consecutive iterations.

A ``loop.for`` of kind ``vectorize`` with factor ``W`` and step 1 becomes a main loop that runs the body on
LLVM vectors of ``W`` lanes while ``W`` iterations remain, then the ordinary scalar loop for the rest (which
LLVM is told not to vectorize or unroll again: :meth:`VectorEmitter.remainder_hints`). Every
value of the body is one of

- *uniform*: it does not depend on the loop; emitted once as a scalar;
- *affine*: an index ``base + stride * lane`` (the induction variable, sums and constant multiples of it);
  kept as its scalar ``base`` (the value in lane 0), so ``a[i, j + 1]`` is a plain vector load;
- *varying*: anything else computed from the loop; an LLVM vector.

Loads and stores whose only varying index is affine with stride 1 in the last dimension become vector
loads and stores; others are done lane by lane, as are ops without a vector form (integer division, tanh,
erf, f16/bf16 rounding, ...), so every loop body with straight-line code can be vectorized. The body is
vectorized only when that keeps the loop's sequential meaning (see :func:`vector_plan`); otherwise the
emitter keeps the scalar loop. The IR stays target-neutral: ``vectorize`` says the iterations may run in
lanes, and this file is how the CPU backend does that.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

from llvmlite import ir

from ...ir.core import Block, Operation, Value
from ...ir.types import FloatType, IndexType, IntegerType, ScalarType
from .common import F16, I64, BufferRef, memory_type, register_type
from .folding import int_constant
from .vector_math import VECTOR_MATH

_AFFINE_OPS = ("loop.add", "loop.sub", "loop.mul")
_VECTOR_OPS = {
    "loop.add",
    "loop.sub",
    "loop.mul",
    "loop.and",
    "loop.or",
    "loop.xor",
    "loop.max",
    "loop.min",
    "loop.neg",
    "loop.select",
    "loop.cmp",
    "loop.const",
    "loop.bitcast",
    "loop.shl",
    "loop.shr",
    "loop.dot_u8i8",
    "loop.dot_u8i8_halves",
    "loop.sum_halves",
    "loop.bit_fields",
}
_FLOAT_ONLY = {"loop.div", "loop.fma", "loop.exp", "loop.log", "loop.sqrt", "loop.sin", "loop.cos", "loop.floor"}
_FLOAT_ONLY |= {"loop.abs"}
_NO_REGIONS_ALLOWED = ("loop.alloc", "loop.barrier")


@dataclass
class VectorPlan:
    """What the analysis of a vectorizable loop body found: which values vary and how."""

    varying: set[int]
    """ids of values that depend on the induction variable."""
    strides: dict[int, int]
    """ids of affine index values -> their stride per iteration (the induction variable has 1)."""


def _lane_friendly(t: object) -> bool:
    """Whether values of IR type ``t`` can live in LLVM vectors as they are (no per-op rounding)."""
    if isinstance(t, FloatType):
        return t.name in ("f32", "f64")
    return isinstance(t, (IntegerType, IndexType))


def _const_value(v: Value) -> int | None:
    op = v.defining_op()
    if op is not None and op.name == "loop.const" and isinstance(op.attr("value"), int):
        return int(op.attr("value"))
    return None


def vector_plan(body: Block) -> VectorPlan | None:
    """The plan for vectorizing the loop whose body is ``body``, or None when it must stay scalar.

    The body must be straight-line code (no nested loops, conditionals or allocations). Vector lanes run
    iterations together, so each store must write a different element per iteration (exactly one varying
    index, affine with a non-zero stride), no buffer may be stored at two different index lists, and a
    buffer that is stored may only be loaded at the very indices it is stored at (read-modify-write).
    """
    iv = body.args[0]
    varying: set[int] = {id(iv)}
    strides: dict[int, int] = {id(iv): 1}
    stores: dict[int, tuple[int, ...]] = {}
    ops = [op for op in body.ops if op.name != "loop.yield"]
    for op in ops:
        if op.regions or op.name in _NO_REGIONS_ALLOWED:
            return None
        if not any(id(v) in varying for v in op.operands):
            continue
        varying.update(id(r) for r in op.results)
        if op.name in _AFFINE_OPS and isinstance(op.results[0].type, IndexType):
            a, b = op.operands
            sa, sb = (
                strides.get(id(a), 0 if id(a) not in varying else None),
                strides.get(id(b), 0 if id(b) not in varying else None),
            )
            if sa is None or sb is None:
                continue
            if op.name == "loop.add":
                strides[id(op.results[0])] = sa + sb
            elif op.name == "loop.sub":
                strides[id(op.results[0])] = sa - sb
            else:
                ca, cb = _const_value(a), _const_value(b)
                if cb is not None and id(b) not in varying:
                    strides[id(op.results[0])] = sa * cb
                elif ca is not None and id(a) not in varying:
                    strides[id(op.results[0])] = sb * ca
    for op in ops:
        if op.name != "loop.store":
            continue
        buffer, indices = op.operands[1], op.operands[2:]
        moving = [i for i in indices if id(i) in varying]
        if len(moving) != 1 or strides.get(id(moving[0]), 0) == 0:
            return None
        key = tuple(id(i) for i in indices)
        if stores.setdefault(id(buffer), key) != key:
            return None
    for op in ops:
        if op.name in ("loop.load", "loop.load_packed") and id(op.operands[0]) in stores:
            if tuple(id(i) for i in op.operands[1:]) != stores[id(op.operands[0])]:
                return None
    return VectorPlan(varying, strides)


@functools.lru_cache(maxsize=4096)
def splat_constant(scalar_type: ir.Type, value: object, spelled: str, lanes: int) -> ir.Constant:
    """The ``lanes``-vector constant of ``value``, shared by every use: llvmlite formats a constant's elements
    again for each new object, which was a fifth of the emitter's Python time on vectorized kernels.
    ``spelled`` (its ``repr``) is part of the key so that ``-0.0`` and ``0.0``, equal as floats, stay apart."""
    return ir.Constant(ir.VectorType(scalar_type, lanes), [value] * lanes)


@functools.lru_cache(maxsize=256)
def lane_steps(stride: int, lanes: int) -> ir.Constant:
    """The i64 vector ``<0, stride, 2 * stride, ...>`` of an affine index's lanes, shared by every use."""
    return ir.Constant(ir.VectorType(I64, lanes), [stride * lane for lane in range(lanes)])


class VectorEmitter:
    """The vector half of the LLVM emitter (a mixin): emits a planned loop body on ``W``-lane vectors.

    It relies on the scalar emitter's ``OPS``, ``env``, ``builder``, ``buffer``, ``address``,
    ``from_memory`` and ``to_memory``; scalar op methods are reused on vector operands where LLVM's
    instructions accept vectors, and run lane by lane where they do not.
    """

    builder: ir.IRBuilder
    env: dict[int, object]
    OPS: ClassVar[dict[str, str]]

    def emit_vector_loop(self, body: Block, lower: ir.Value, upper: ir.Value, width: int, plan: VectorPlan) -> None:
        """``for i in [lower, upper)`` as a vector main loop of ``width`` lanes and a scalar remainder loop.

        With constant bounds, one vector of iterations is emitted as straight-line code, and a remainder
        that is known to be empty is left out: register tiles are full of such loops, and each loop LLVM
        is given costs it time to rotate, reduce and delete again."""
        first, end = int_constant(lower), int_constant(upper)
        if first is not None and end is not None and end - first < 2 * width:
            self.lanes, self.plan = width, plan
            start = first
            if end - first >= width:
                self.env[id(body.args[0])] = I64(first)
                self.emit_block_vectorized(body)
                start += width
            if start < end:
                self.emit_loop(body, I64(start), upper, I64(1), None)  # type: ignore[attr-defined]
            return
        bl = self.builder
        fn, before = bl.function, bl.block
        header, inner, done = (fn.append_basic_block(n) for n in ("vloop", "vbody", "vdone"))
        bl.branch(header)
        bl.position_at_end(header)
        iv = bl.phi(I64)
        iv.add_incoming(lower, before)
        bl.cbranch(bl.icmp_signed("<=", bl.add(iv, I64(width)), upper), inner, done)
        bl.position_at_end(inner)
        self.lanes, self.plan = width, plan
        self.env[id(body.args[0])] = iv
        self.emit_block_vectorized(body)
        iv.add_incoming(bl.add(iv, I64(width)), bl.block)
        bl.branch(header)
        bl.position_at_end(done)
        self.emit_loop(body, iv, upper, I64(1), self.remainder_hints())  # type: ignore[attr-defined]

    def remainder_hints(self) -> ir.MDValue:
        """``llvm.loop`` metadata for the scalar remainder of a vector loop (fewer than ``W`` iterations): not
        to be vectorized or unrolled again. Left to itself, LLVM's O3 gave every remainder a vector loop and
        an epilogue of its own that never run that long: the tiny GPT-2's attention score kernel with a
        symbolic sequence has two dozen remainders, which took about 60% of its optimization and code
        generation time and doubled its object code."""
        return self.loop_metadata(  # type: ignore[attr-defined, no-any-return]
            [("llvm.loop.vectorize.enable", ir.Constant(ir.IntType(1), 0)), ("llvm.loop.unroll.disable", None)]
        )

    def emit_block_vectorized(self, block: Block) -> None:
        """Emit the (straight-line) ops of a planned vector body."""
        for op in block.ops:
            if op.name == "loop.yield":
                continue
            if not any(id(v) in self.plan.varying for v in op.operands):
                self.emit_op(op)  # type: ignore[attr-defined]
            elif op.results and id(op.results[0]) in self.plan.strides:
                self.emit_op(op)  # type: ignore[attr-defined]  # an affine index: its base, from lane 0's operands
            elif op.name == "loop.load":
                self.env[id(op.results[0])] = self.vector_load(op)
            elif op.name == "loop.store":
                self.vector_store(op)
            elif op.name == "loop.check":
                self.vector_check(op)
            elif op.name == "loop.lookup_bytes":
                self.env[id(op.results[0])] = self.vector_lookup_bytes(op)  # type: ignore[attr-defined]
            elif op.name in VECTOR_MATH and op.operands[0].type == FloatType("f32"):
                self.env[id(op.results[0])] = VECTOR_MATH[op.name](
                    self.builder,
                    self.as_vector(op.operands[0]),
                    self.call_math,  # type: ignore[attr-defined]
                )
            elif op.name == "loop.cast" and (cast := self.vector_cast(op)) is not None:
                self.env[id(op.results[0])] = cast
            elif self.has_vector_form(op):
                self.env[id(op.results[0])] = self.with_operands(op, [self.as_vector(v) for v in op.operands])
            else:
                self.env[id(op.results[0])] = self.by_lanes(op)

    # value representations -----------------------------------------------------------------------
    def vector_type(self, t: ir.Type) -> ir.VectorType:
        """The ``W``-lane vector of the scalar LLVM type ``t``."""
        return ir.VectorType(t, self.lanes)

    def splat(self, scalar: ir.Value) -> ir.Value:
        """A vector with ``scalar`` in every lane."""
        bl = self.builder
        if isinstance(scalar, ir.Constant):
            return splat_constant(scalar.type, scalar.constant, repr(scalar.constant), self.lanes)
        one = bl.insert_element(ir.Constant(self.vector_type(scalar.type), ir.Undefined), scalar, I64(0))
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), self.lanes), [0] * self.lanes)
        return bl.shuffle_vector(one, ir.Constant(self.vector_type(scalar.type), ir.Undefined), zeros)

    def as_vector(self, v: Value) -> ir.Value:
        """The vector of ``v``'s lanes: uniform values splat, affine indices expand to ``base + stride * lane``."""
        value = self.env[id(v)]
        assert isinstance(value, ir.Value)
        if id(v) not in self.plan.varying:
            return self.splat(value)
        stride = self.plan.strides.get(id(v))
        if stride is None:
            return value
        steps = lane_steps(stride, self.lanes)
        return self.builder.add(self.splat(value), steps)

    def lane(self, v: Value, lane: int) -> ir.Value:
        """The scalar value of ``v`` in ``lane``."""
        value = self.env[id(v)]
        if not isinstance(value, ir.Value) or id(v) not in self.plan.varying:
            return value  # type: ignore[return-value]  # a uniform scalar, or a buffer
        stride = self.plan.strides.get(id(v))
        if stride is not None:
            return self.builder.add(value, I64(stride * lane)) if stride * lane else value
        return self.builder.extract_element(value, I64(lane))

    # ops -----------------------------------------------------------------------------------------
    def has_vector_form(self, op: Operation) -> bool:
        """Whether the scalar method of ``op`` also works on vector operands (types without rounding)."""
        types = [v.type for v in op.operands] + [r.type for r in op.results]
        if not all(_lane_friendly(t) for t in types):
            return False
        if op.name in _VECTOR_OPS:
            return True
        if op.name in _FLOAT_ONLY:
            return all(isinstance(t, FloatType) for t in types)
        return False

    def vector_cast(self, op: Operation) -> ir.Value | None:
        """A cast to f32/f64 on a vector (float widening/narrowing, integer to float); None for other casts."""
        src, dst = op.operands[0].type, op.results[0].type
        if not (_lane_friendly(src) and _lane_friendly(dst) and isinstance(dst, FloatType)):
            return None
        if isinstance(src, IntegerType) and src.is_bool:
            return None
        bl, value = self.builder, self.as_vector(op.operands[0])
        target = self.vector_type(register_type(dst))
        if isinstance(src, FloatType):
            if src == dst:
                return value
            return bl.fpext(value, target) if dst.name == "f64" else bl.fptrunc(value, target)
        signed = isinstance(src, IndexType) or (isinstance(src, IntegerType) and src.signed)
        return bl.sitofp(value, target) if signed else bl.uitofp(value, target)

    def with_operands(self, op: Operation, operands: list[ir.Value]) -> ir.Value:
        """Run the scalar method of ``op`` with its operands bound to ``operands`` (vectors or lane scalars)."""
        saved = {id(v): self.env.get(id(v)) for v in op.operands}
        for v, value in zip(op.operands, operands):
            self.env[id(v)] = value
        try:
            result = getattr(self, self.OPS[op.name])(op)
        finally:
            for v in op.operands:
                self.env[id(v)] = saved[id(v)]
        assert isinstance(result, ir.Value)
        return result

    def by_lanes(self, op: Operation) -> ir.Value:
        """The scalar method of ``op`` run once per lane, the results gathered into a vector."""
        bl = self.builder
        results = [self.with_operands(op, [self.lane(v, n) for v in op.operands]) for n in range(self.lanes)]
        out: ir.Value = ir.Constant(self.vector_type(results[0].type), ir.Undefined)
        for n, r in enumerate(results):
            out = bl.insert_element(out, r, I64(n))
        return out

    def contiguous(self, indices: list[Value], ref: BufferRef) -> bool:
        """Whether the lanes address consecutive elements: one varying index, affine, whose stride times the
        (static) sizes of the dimensions after it is 1 (the last index with stride 1, or one before size-1 dims)."""
        moving = [d for d, i in enumerate(indices) if id(i) in self.plan.varying]
        if len(moving) != 1:
            return False
        (d,) = moving
        stride = self.plan.strides.get(id(indices[d]))
        inner = ref.type.shape[d + 1 :]
        return stride == 1 and all(size == 1 for size in inner)

    def vector_address(self, ref: BufferRef, indices: list[Value]) -> ir.Value:
        """The address of lane 0's element, as a pointer to a vector (stack slots have typed pointers)."""
        address = self.address(ref, [self.env[id(i)] for i in indices])  # type: ignore[attr-defined]
        if not address.type.is_opaque:
            address = self.builder.bitcast(address, self.vector_type(memory_type(ref.type.element)).as_pointer())
        return address

    def vector_load(self, op: Operation) -> ir.Value:
        """A vector load when the lanes read consecutive elements of a plain-typed buffer, else lane loads."""
        ref: BufferRef = self.buffer(op.operands[0])  # type: ignore[attr-defined]
        indices = list(op.operands[1:])
        t = ref.type.element
        if indices and self.contiguous(indices, ref) and (self._plain(t) or _is_bool(t)):
            element = memory_type(t)
            address = self.vector_address(ref, indices)
            raw = self.builder.load(address, typ=self.vector_type(element), align=_alignment(element))
            if _is_bool(t):  # bytes to i1 lanes, as the scalar load does: byte != 0
                return self.builder.icmp_unsigned("!=", raw, ir.Constant(raw.type, [0] * self.lanes))
            return raw
        return self.by_lanes(op)

    def vector_check(self, op: Operation) -> None:
        """A ``loop.check`` whose condition varies: the kernel fails when any lane's condition is false."""
        bl = self.builder
        lanes = bl.bitcast(self.as_vector(op.operands[0]), ir.IntType(self.lanes))
        failed = bl.icmp_unsigned("!=", lanes, ir.Constant(ir.IntType(self.lanes), (1 << self.lanes) - 1))
        self.check(op, failed, str(op.attr("message")), named=False)  # type: ignore[attr-defined]

    def vector_store(self, op: Operation) -> None:
        """A vector store to consecutive elements, else one store per lane in lane order."""
        ref: BufferRef = self.buffer(op.operands[1])  # type: ignore[attr-defined]
        value, indices = op.operands[0], list(op.operands[2:])
        t = ref.type.element
        if self.contiguous(indices, ref) and (self._plain(t) or _is_bool(t)):
            element = memory_type(t)
            address = self.vector_address(ref, indices)
            lanes = self.as_vector(value)
            if _is_bool(t):  # i1 lanes to bytes, as the scalar store does
                lanes = self.builder.zext(lanes, self.vector_type(element))
            self.builder.store(lanes, address, align=_alignment(element))
            return
        for n in range(self.lanes):
            self._store_lane(op, n)

    def _store_lane(self, op: Operation, n: int) -> None:
        """The store of lane ``n`` (its value and indices bound to that lane's scalars)."""
        saved = {id(v): self.env.get(id(v)) for v in op.operands}
        for v in op.operands:
            self.env[id(v)] = self.lane(v, n)
        try:
            self.emit_op(op)  # type: ignore[attr-defined]
        finally:
            for v in op.operands:
                self.env[id(v)] = saved[id(v)]

    @staticmethod
    def _plain(t: ScalarType) -> bool:
        """Whether elements of ``t`` are stored exactly as they are computed (no widening or rounding)."""
        return _lane_friendly(t) and memory_type(t) == register_type(t) and memory_type(t) != F16


def _is_bool(t: ScalarType) -> bool:
    """Booleans live as one byte per element in memory and as i1 in registers."""
    return isinstance(t, IntegerType) and t.is_bool


def _alignment(t: ir.Type) -> int:
    """The natural alignment in bytes of a scalar LLVM type (vector accesses only assume the element's)."""
    return {"float": 4, "double": 8, "half": 2}.get(str(t), max(1, getattr(t, "width", 8) // 8))
