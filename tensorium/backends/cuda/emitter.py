"""Loop-level kernels to LLVM IR for ``nvptx64-nvidia-cuda``: the emitter of the CUDA backend.

A subclass of the CPU's :class:`~tensorium.backends.llvm.emitter.LLVMEmitter` that overrides what a GPU
does differently; the scalar ops, loads, stores, packed loads and serial loops are the CPU's own code.

- Each ``func.func`` kernel becomes ``void @<name>(<args>)`` with the ``ptx_kernel`` calling convention:
  a buffer argument is a pointer in address space 1 (global) followed by one i64 size per symbolic
  dimension, a scalar argument is a float, a double (f64) or an i64 (integers and index).
- ``gpu_block`` and ``gpu_thread`` loops become the block and thread ids of their axis (``ctaid`` and
  ``tid`` through the ``llvm.nvvm.read.ptx.sreg.*`` intrinsics), scaled by the step and offset by the
  lower bound. Their trip counts must be constants: they are the launch's grid and block sizes
  (:class:`Launch`); a loop shorter than the launch along its axis guards its body.
- ``loop.shuffle`` is ``shfl.sync`` over the full warp (``llvm.nvvm.shfl.sync.*``); ``loop.mma`` is
  ``mma.sync.aligned.m16n8k16`` (inline PTX; two m16n8k8 on sm_75), its fragments loaded lane by lane.
- ``loop.barrier`` is ``llvm.nvvm.barrier0`` (``bar.sync 0``); ``shared`` buffers are module globals in
  address space 3; ``local`` buffers are stack slots (registers after LLVM's SROA).
- ``parallel`` loops run serially in each thread: a GPU kernel's parallelism is its grid (the GPU schedules
  of :mod:`tensorium.lowering.gpu_schedule` bind loops to it). A ``vectorize`` loop of exactly ``factor``
  iterations whose body only moves elements (loads, stores, index arithmetic) becomes vector loads and stores
  (``ld.global.v4.f32``, ``st.shared.v4.f32``) aligned to what :func:`known_multiple` proves of lane 0's
  offset (global buffers start 16-byte aligned: the executable makes sure of it); other ``vectorize`` loops
  run serially.
- A failed run-time check (a non-positive step) traps.

Code outside the ``gpu_thread`` loops runs in every thread, as on any GPU; the GPU schedules keep every
store inside them. Addresses are GEPs on typed pointers, never integer casts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from llvmlite import ir

from ...errors import CompileError
from ...ir.core import Block, Operation, Value
from ...ir.dialects.builtin import func_body, func_name
from ...ir.dialects.loop.warp import WARP
from ...ir.types import BufferType, FloatType, storage_dtype
from ...lowering.space import Config
from ..emitter import op_error
from ..llvm.common import F16, F32, F64, I32, I64, BufferRef, memory_type, register_type
from ..llvm.emitter import LLVMEmitter, kernel_info

ASYNC_ARCH = 80
"""The first architecture with ``cp.async`` (Ampere)."""
GLOBAL, SHARED = 1, 3
"""NVPTX address spaces of global and shared memory."""
GLOBAL_PTR = ir.PointerType(addrspace=GLOBAL)
AXES = "xyz"
_SREG = {"gpu_block": "ctaid", "gpu_thread": "tid"}
_TRIGONOMETRY = frozenset({"loop.sin", "loop.cos", "loop.asin", "loop.acos", "loop.atan"})
"""Float math NVPTX has no instruction for: f32 (and narrower) is decomposed before emission, f64 is refused."""


@dataclass(frozen=True)
class Launch:
    """How a kernel is launched: blocks per grid axis, threads per block axis (x, y, z) and static shared bytes."""

    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    shared_bytes: int = 0

    def to_json(self) -> dict[str, object]:
        """The launch as JSON-able data."""
        return {"grid": list(self.grid), "block": list(self.block), "shared_bytes": self.shared_bytes}

    @staticmethod
    def from_json(data: dict[str, object]) -> Launch:
        """The launch :meth:`to_json` wrote."""
        grid, block = data["grid"], data["block"]
        assert isinstance(grid, list) and isinstance(block, list)
        return Launch(tuple(grid), tuple(block), int(data["shared_bytes"]))  # type: ignore[arg-type,call-overload]


def constant_trips(op: Operation) -> int | None:
    """The trip count of a ``loop.for`` whose bounds and step are ``loop.const`` ops, else None."""
    values = []
    for v in op.operands:
        d = v.defining_op()
        if d is None or d.name != "loop.const":
            return None
        values.append(int(d.attr("value")))
    lower, upper, step = values
    return len(range(lower, upper, step)) if step > 0 else None


def launch_sizes(func: Operation) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The grid and block sizes of kernel ``func``: per axis, the largest trip count of its gpu loops.

    CompileError naming the loop when a gpu loop's trip count is not a constant.
    """
    sizes = {"gpu_block": [1, 1, 1], "gpu_thread": [1, 1, 1]}
    for op in func.walk():
        kind = op.attr("kind") if op.name == "loop.for" else None
        if kind not in _SREG:
            continue
        trips = constant_trips(op)
        if trips is None:
            raise op_error(op, f'of kind "{kind}" needs constant bounds: its trip count is the launch\'s size')
        axis = int(op.attr("axis"))
        sizes[kind][axis] = max(sizes[kind][axis], trips)
    grid, block = sizes["gpu_block"], sizes["gpu_thread"]
    return (grid[0], grid[1], grid[2]), (block[0], block[1], block[2])


class NVPTXEmitter(LLVMEmitter):
    """The LLVM emitter for NVIDIA GPUs (see the module docstring); ``launches`` maps kernel names to sizes."""

    NAME: ClassVar[str] = "NVPTX"
    BUFFER_POINTER: ClassVar[ir.Type] = GLOBAL_PTR
    LOOP_KINDS: ClassVar[dict[str, str]] = {
        "serial": "emit_serial",
        "unroll": "emit_unroll",
        "vectorize": "emit_gpu_vectorize",
        "parallel": "emit_serial",
        "gpu_block": "emit_gpu_loop",
        "gpu_thread": "emit_gpu_loop",
    }
    OPS: ClassVar[dict[str, str]] = {**LLVMEmitter.OPS, "loop.shuffle": "emit_shuffle", "loop.mma": "emit_mma"}

    def __init__(self, triple: str = "", data_layout: str = "", arch: str = "") -> None:
        super().__init__(triple, data_layout)
        self.arch = arch
        self.launches: dict[str, Launch] = {}
        self.sizes: tuple[tuple[int, int, int], tuple[int, int, int]] = ((1, 1, 1), (1, 1, 1))
        self.shared_bytes = 0
        self.fragments: dict[tuple[int, ...], list[ir.Value]] = {}
        """The ``ldmatrix`` fragments loaded by the run of ``loop.mma`` ops being emitted, by buffer and tile position
        (a warp tile's A fragment serves each of its mma tiles along the columns; emptied by every other op but
        index arithmetic, so a barrier or a store to the tiles never sees a stale fragment)."""
        self.async_copies = False
        """Whether the kernel being emitted copies tiles by ``cp.async`` (its config's ``async_copy`` on sm_80+)."""

    def emit_function(self, func: Operation) -> None:
        """Emit one kernel: ``void @name(...)`` with the ``ptx_kernel`` calling convention."""
        name = func_name(func)
        params = self.kernel_parameters(func)
        self.sizes = launch_sizes(func)
        self.shared_bytes = 0
        self.async_copies = self.arch_number() >= ASYNC_ARCH and _config_says(func, "async_copy")
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), params), name=name)
        fn.calling_convention = "ptx_kernel"
        with self.function(fn):
            self.bind_arguments(func_body(func), iter(fn.args))
            self.emit_block(func_body(func))
        self.kernels[name] = kernel_info(func, name)
        self.launches[name] = Launch(self.sizes[0], self.sizes[1], self.shared_bytes)

    def return_normally(self) -> None:
        """A GPU kernel returns nothing."""
        self.builder.ret_void()

    def check(self, op: Operation, failed: ir.Value, message: str, named: bool = True) -> None:
        """Trap when the i1 ``failed`` holds at run time (a GPU kernel has no status to return)."""
        bl = self.builder
        fail, ok = bl.function.append_basic_block("fail"), bl.function.append_basic_block("ok")
        bl.cbranch(failed, fail, ok)
        bl.position_at_end(fail)
        bl.call(self.intrinsic("llvm.trap", ir.VoidType(), []), [])
        bl.unreachable()
        bl.position_at_end(ok)

    def unsupported_kind(self, op: Operation, kind: str) -> CompileError:
        """The generic error: this backend runs every kind but those it does not list."""
        return super(LLVMEmitter, self).unsupported_kind(op, kind)

    def special_register(self, kind: str, axis: int) -> ir.Value:
        """The block id (``gpu_block``) or thread id (``gpu_thread``) along ``axis``, as an i64."""
        name = f"llvm.nvvm.read.ptx.sreg.{_SREG[kind]}.{AXES[axis]}"
        return self.builder.zext(self.builder.call(self.intrinsic(name, I32, []), []), I64)

    def emit_gpu_loop(self, op: Operation) -> None:
        """A gpu loop: its induction variable is ``lower + id * step``; guarded when the launch is longer."""
        lower, _, step = self.operands(op)
        kind, axis = str(op.attr("kind")), int(op.attr("axis"))
        trips = constant_trips(op)
        assert trips is not None  # launch_sizes checked every gpu loop
        bl = self.builder
        ident = self.special_register(kind, axis)
        body = op.regions[0].block
        self.env[id(body.args[0])] = bl.add(lower, bl.mul(ident, step))
        launched = self.sizes[0 if kind == "gpu_block" else 1][axis]
        if trips == launched:
            self.emit_block(body)
            return
        warp_op = next((o for o in op.walk() if o.name in _WARP_OPS), None) if kind == "gpu_thread" else None
        if warp_op is not None:
            raise op_error(warp_op, f"needs whole warps, but its gpu_thread loop runs {trips} of {launched} threads")
        then, after = bl.function.append_basic_block("gpu.in"), bl.function.append_basic_block("gpu.out")
        bl.cbranch(bl.icmp_unsigned("<", ident, I64(trips)), then, after)
        bl.position_at_end(then)
        self.emit_block(body)
        bl.branch(after)
        bl.position_at_end(after)

    def emit_gpu_vectorize(self, op: Operation) -> None:
        """Vector loads and stores for a ``vectorize`` loop of ``factor`` iterations that only moves elements, with
        the alignment :func:`vector_alignment` proves; any other ``vectorize`` loop serially."""
        lower, upper, step = self.bounds(op)
        factor = int(op.attr("factor") or 0)
        body = op.regions[0].block
        movers = all(o.name in _MOVES or (o.has_trait("pure") and not o.regions) for o in body.ops)
        if factor > 1 and constant_trips(op) == factor and _is_constant(op.operands[2], 1) and movers:
            if self.vectorized(op):
                if self.async_copies and self.emit_async_copy(op, lower, factor):
                    return
                self.emit_vector_loop(body, lower, upper, factor, self.plan)
                return
        self.emit_loop(body, lower, upper, step, None)

    def emit_async_copy(self, op: Operation, lower: ir.Value, factor: int) -> bool:
        """``cp.async.cg.shared.global`` of 16 bytes (``llvm.nvvm.cp.async.cg.shared.global.16``) for a planned
        vector loop whose body copies 16 proven-aligned bytes (four f32, eight f16) from a global buffer to a shared
        one; False (nothing emitted) for any other body. The copy completes in the background: :meth:`emit_barrier`
        waits for it."""
        body = op.regions[0].block
        moves = [o for o in body.ops if o.name in ("loop.load", "loop.store")]
        if len(moves) != 2 or moves[0].name != "loop.load" or moves[1].operands[0] is not moves[0].results[0]:
            return False
        load, store = moves
        source, target = self.buffer(load.operands[0]), self.buffer(store.operands[1])
        sources, targets = list(load.operands[1:]), list(store.operands[2:])
        element = source.type.element
        if source.type.space != "global" or target.type.space != "shared" or target.type.element != element:
            return False
        if element not in (FloatType("f32"), FloatType("f16")) or factor * storage_dtype(element).itemsize != 16:
            return False
        if not (self.contiguous(sources, source) and self.contiguous(targets, target)):
            return False
        varying = self.plan.varying
        if vector_alignment(source.type, sources, varying) < 16 or vector_alignment(target.type, targets, varying) < 16:
            return False
        self.env[id(body.args[0])] = lower  # lane 0's indices
        for o in body.ops:
            if o.name not in ("loop.load", "loop.store", "loop.yield"):
                self.emit_op(o)
        bl = self.builder
        shared_ptr = ir.PointerType(addrspace=SHARED)
        copy = self.intrinsic("llvm.nvvm.cp.async.cg.shared.global.16", ir.VoidType(), [shared_ptr, GLOBAL_PTR])
        to = bl.bitcast(self.address(target, self.values(targets)), shared_ptr)
        bl.call(copy, [to, bl.bitcast(self.address(source, self.values(sources)), GLOBAL_PTR)])
        return True

    def vector_load(self, op: Operation) -> ir.Value:
        """A vector load of consecutive f32 (or other plain) elements aligned to what :func:`vector_alignment`
        proves (NVPTX splits a vector access into what its alignment allows); the CPU's otherwise."""
        ref = self.buffer(op.operands[0])
        indices = list(op.operands[1:])
        if not (indices and self.contiguous(indices, ref) and self._plain(ref.type.element)):
            return super().vector_load(op)
        element = memory_type(ref.type.element)
        align = vector_alignment(ref.type, indices, self.plan.varying)
        return self.builder.load(self.vector_address(ref, indices), typ=self.vector_type(element), align=align)

    def vector_address(self, ref: BufferRef, indices: list[Value]) -> ir.Value:
        """The address of lane 0's element as a pointer to a vector, in the buffer's address space."""
        address = self.address(ref, [self.env[id(i)] for i in indices])
        if address.type.is_opaque:
            return address
        vector = self.vector_type(memory_type(ref.type.element))
        return self.builder.bitcast(address, vector.as_pointer(address.type.addrspace))

    def vector_store(self, op: Operation) -> None:
        """A vector store aligned as :meth:`vector_load`; the CPU's otherwise."""
        ref = self.buffer(op.operands[1])
        value, indices = op.operands[0], list(op.operands[2:])
        if not (self.contiguous(indices, ref) and self._plain(ref.type.element)):
            super().vector_store(op)
            return
        align = vector_alignment(ref.type, indices, self.plan.varying)
        self.builder.store(self.as_vector(value), self.vector_address(ref, indices), align=align)

    def emit_barrier(self, op: Operation) -> None:
        """``bar.sync 0``: the block's threads wait for each other; shared writes become visible. In a kernel with
        asynchronous copies each thread first waits for its own (``cp.async.wait_all``)."""
        if self.async_copies:
            self.builder.call(self.intrinsic("llvm.nvvm.cp.async.wait.all", ir.VoidType(), []), [])
        self.builder.call(self.intrinsic("llvm.nvvm.barrier0", ir.VoidType(), []), [])

    def emit_shuffle(self, op: Operation) -> ir.Value:
        """``shfl.sync.<mode>`` over the full warp (``llvm.nvvm.shfl.sync.*``): f32 and i32 as they are, narrower
        values widened to i32, 64-bit ones as two 32-bit halves."""
        value, offset = self.operands(op)
        mode, width = str(op.attr("mode")), int(op.attr("width"))
        bl = self.builder
        # c: the segment mask (32 - width) in bits 8..12 and the clamp lane (0 for up, 31 otherwise) in bits 0..4
        clamp = I32(((WARP - width) << 8) | (0 if mode == "up" else WARP - 1))
        lane = bl.trunc(offset, I32)

        def shuffle(word: ir.Value) -> ir.Value:
            kind = "f32" if word.type == F32 else "i32"
            name = f"llvm.nvvm.shfl.sync.{_SHUFFLE[mode]}.{kind}"
            fn = self.intrinsic(name, word.type, [I32, word.type, I32, I32])
            return bl.call(fn, [I32(0xFFFFFFFF), word, lane, clamp])

        kind = value.type
        if kind == F32 or kind == I32:
            return shuffle(value)
        bits = kind.width if isinstance(kind, ir.IntType) else 64
        word = value if isinstance(kind, ir.IntType) else bl.bitcast(value, ir.IntType(bits))
        if bits <= 32:
            return bl.trunc(shuffle(bl.zext(word, I32)), kind)
        low = shuffle(bl.trunc(word, I32))
        high = shuffle(bl.trunc(bl.lshr(word, I64(32)), I32))
        joined = bl.or_(bl.zext(low, I64), bl.shl(bl.zext(high, I64), I64(32)))
        return joined if isinstance(kind, ir.IntType) else bl.bitcast(joined, kind)

    def emit_mma(self, op: Operation) -> None:
        """``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`` (inline PTX; two m16n8k8 on sm_75): each lane loads
        its fragments of the A and B tiles (pairs of f16 as 32-bit registers) and its four accumulators, and stores
        the four results back."""
        acc, a, ar, ac, b, br, bc = op.operands
        acc_ref, a_ref, b_ref = self.buffer(acc), self.buffer(a), self.buffer(b)
        ar_, ac_, br_, bc_ = self.values([ar, ac, br, bc])
        bl = self.builder
        lane = bl.and_(self.special_register("gpu_thread", 0), I64(WARP - 1))
        group, pair = bl.lshr(lane, I64(2)), bl.mul(bl.and_(lane, I64(3)), I64(2))

        def pair_of(ref: BufferRef, rows: list[ir.Value], cols: list[ir.Value]) -> ir.Value:
            """Two f16 elements as one 32-bit register (the first in the low half)."""
            halves = [bl.load(self.address(ref, [r, c]), typ=F16) for r, c in zip(rows, cols)]
            vector = ir.Constant(ir.VectorType(F16, 2), ir.Undefined)
            for n, half in enumerate(halves):
                vector = bl.insert_element(vector, half, I32(n))
            return bl.bitcast(vector, I32)

        def at(base: ir.Value, *offsets: ir.Value | int) -> ir.Value:
            total = base
            for o in offsets:
                total = bl.add(total, o if isinstance(o, ir.Value) else I64(o))
            return total

        if self._ldmatrix_proven(op, a_ref, b_ref):
            row_of_lane = bl.and_(lane, I64(15))
            a_regs = self._fragment(
                (a, ar, ac),
                lambda: self._ldmatrix(a_ref, at(ar_, row_of_lane), at(ac_, bl.mul(bl.lshr(lane, I64(4)), I64(8))), 4),
            )
            b_regs = self._fragment(
                (b, br, bc), lambda: self._ldmatrix(b_ref, at(br_, row_of_lane), bc_, 2, transpose=True)
            )
        else:
            a_regs = []
            for r in range(4):
                row = at(ar_, group, 8 * (r % 2))
                first = at(ac_, pair, 8 * (r // 2))
                a_regs.append(pair_of(a_ref, [row, row], [first, at(first, 1)]))
            b_regs = []
            for r in range(2):
                first = at(br_, pair, 8 * r)
                column = at(bc_, group)
                b_regs.append(pair_of(b_ref, [first, at(first, 1)], [column, column]))
        slots = [self.address(acc_ref, [I64(i)]) for i in range(4)]
        c_regs = [bl.load(slot, typ=F32) for slot in slots]
        if self.arch_number() >= 80:
            out = self._mma_asm("m16n8k16", a_regs, b_regs, c_regs)
        else:  # Turing: the same product as two m16n8k8 steps (their fragments are halves of m16n8k16's)
            half = self._mma_asm("m16n8k8", a_regs[:2], b_regs[:1], c_regs)
            out = self._mma_asm("m16n8k8", a_regs[2:], b_regs[1:], [bl.extract_value(half, i) for i in range(4)])
        for i, slot in enumerate(slots):
            bl.store(bl.extract_value(out, i), slot)

    def _mma_asm(self, shape: str, a: list[ir.Value], b: list[ir.Value], c: list[ir.Value]) -> ir.Value:
        """One inline ``mma.sync.aligned.<shape>.row.col.f32.f16.f16.f32``: a struct of the four results."""
        operands = [*a, *b, *c]
        groups, n = [], 4
        for count in (len(a), len(b), len(c)):
            groups.append("{" + ",".join(f"${n + j}" for j in range(count)) + "}")
            n += count
        asm = ir.InlineAsm(
            ir.FunctionType(ir.LiteralStructType([F32] * 4), [v.type for v in operands]),
            f"mma.sync.aligned.{shape}.row.col.f32.f16.f16.f32 {{$0,$1,$2,$3}}, {', '.join(groups)};",
            "=f,=f,=f,=f," + ",".join(["r"] * (len(a) + len(b)) + ["f"] * len(c)),
            side_effect=False,  # a pure function of its registers: LLVM may schedule the fragment loads around it
        )
        return self.builder.call(asm, operands)

    def _ldmatrix_proven(self, op: Operation, a: BufferRef, b: BufferRef) -> bool:
        """Whether the fragments of ``loop.mma`` op ``op`` may be loaded by ``ldmatrix`` (sm_75 on): both tiles
        in shared memory with rows of whole 16-byte groups and the tiles' first columns provably multiples of 8
        (every row address a lane gives is then 16-byte aligned)."""
        if self.arch_number() < 75:
            return False
        for ref in (a, b):
            shape = ref.type.static_shape if ref.type.is_static else None
            if ref.type.space != "shared" or shape is None or shape[-1] % 8 != 0:
                return False
        return all(known_multiple(v) % 8 == 0 for v in (op.operands[3], op.operands[6]))

    def _fragment(self, key: tuple[Value, ...], load: Callable[[], list[ir.Value]]) -> list[ir.Value]:
        """The fragment of the tile at loop values ``key`` (buffer, row, column), loaded once per run of mma ops
        within one LLVM block."""
        found = (id(self.builder.block), *(id(v) for v in key))
        if found not in self.fragments:
            self.fragments[found] = load()
        return self.fragments[found]

    def _ldmatrix(
        self, ref: BufferRef, row: ir.Value, col: ir.Value, count: int, transpose: bool = False
    ) -> list[ir.Value]:
        """``ldmatrix.sync.aligned.m8n8.x<count>[.trans].shared.b16``: ``count`` 8 x 8 matrices of f16 from shared
        ``ref``, lane ``l`` giving the address of row ``l % 8`` of matrix ``l / 8`` at (``row``, ``col``); each lane
        gets one 32-bit register per matrix, its pair of elements in mma's fragment order (transposed: a column
        pair, which is B's fragment of a tile stored by rows of the contraction)."""
        bl = self.builder
        address = bl.ptrtoint(self.address(ref, [row, col]), I64)
        registers = ",".join(f"${i}" for i in range(count))
        asm = ir.InlineAsm(
            ir.FunctionType(ir.LiteralStructType([I32] * count), [I64]),
            f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if transpose else ''}.shared.b16 "
            f"{{{registers}}}, [${count}];",
            ",".join(["=r"] * count) + ",l,~{memory}",
            side_effect=True,  # reads shared memory: kept in order with the tile stores and the barriers
        )
        loaded = bl.call(asm, [address])
        return [bl.extract_value(loaded, i) for i in range(count)]

    def arch_number(self) -> int:
        """The compute capability of the architecture compiled for (90 for ``sm_90``; 0 when not known)."""
        digits = self.arch.removeprefix("sm_").rstrip("a")
        return int(digits) if digits.isdigit() else 0

    def emit_alloc(self, op: Operation) -> BufferRef:
        """Shared buffers as address-space-3 globals, local ones as stack slots; sizes must be static."""
        t = op.attr("type")
        assert isinstance(t, BufferType)
        if not t.is_static:
            raise op_error(op, f"allocates {t}, of a size known only at run time; GPU kernels allocate static buffers")
        count = 1
        for d in t.static_shape:
            count *= d
        element = memory_type(t.element)
        sizes = [I64(d) for d in t.static_shape]
        if t.space != "shared":
            return BufferRef(t, self.allocas.alloca(element, size=I64(count)), sizes)
        self.shared_bytes += count * storage_dtype(t.element).itemsize
        array = ir.ArrayType(element, count)
        name = self.module.get_unique_name(f"{self.builder.function.name}.shared")
        var = ir.GlobalVariable(self.module, array, name=name, addrspace=SHARED)
        var.linkage = "internal"
        var.initializer = ir.Constant(array, ir.Undefined)
        var.align = 16
        return BufferRef(t, var.gep([I32(0), I32(0)]), sizes)

    def emit_op(self, op: Operation) -> None:
        """Float math without a GPU instruction is a CompileError naming the op; the rest as on the CPU."""
        if op.name not in _KEEP_FRAGMENTS:
            self.fragments.clear()
        unsupported = op.name in _TRIGONOMETRY or (op.name in _F64_LIBM and self._is_f64(op))
        if unsupported or (op.name in _NO_FLOAT_INSTRUCTION and self._is_float(op)):
            raise op_error(op, f"on {op.operands[0].type} is not supported by the {self.NAME} backend")
        super().emit_op(op)

    def _is_f64(self, op: Operation) -> bool:
        t = op.operands[-1].type if op.operands else None
        return isinstance(t, FloatType) and register_type(t) == F64

    def _is_float(self, op: Operation) -> bool:
        return bool(op.operands) and isinstance(op.operands[-1].type, FloatType)


def known_multiple(value: Value, lanes: set[int] | None = None) -> int:
    """A number ``value`` (an index) is always a multiple of, 0 when it is always 0: from constants, sums,
    differences, products, remainders by constants, selects and the induction variables of loops (their lower
    bound and step); 1 when nothing is known. Values in ``lanes`` (the varying values of a vector loop) are
    taken at lane 0, where the loop's own induction variable is its lower bound."""
    op = value.defining_op()
    if op is None:  # a block argument: a loop's induction variable, lower + i * step
        block = value.owner
        region = block.parent if isinstance(block, Block) else None
        owner = region.parent if region is not None else None
        if owner is None or owner.name != "loop.for":
            return 1
        lower, _, step = owner.operands
        if lanes is not None and id(value) in lanes:
            return known_multiple(lower, lanes)
        return math.gcd(known_multiple(lower, lanes), known_multiple(step, lanes))
    args = [known_multiple(v, lanes) for v in op.operands] if op.name in _MULTIPLE_OPS else []
    if op.name == "loop.const":
        value_ = op.attr("value")
        return abs(int(value_)) if isinstance(value_, int) else 1
    if op.name in ("loop.add", "loop.sub"):
        return math.gcd(*args)
    if op.name == "loop.mul":
        return args[0] * args[1]
    if op.name == "loop.rem":  # a - b floor(a / b): a multiple of both's divisor
        return math.gcd(args[0], args[1])
    if op.name == "loop.select":
        return math.gcd(args[1], args[2])
    return 1


def vector_alignment(buffer: BufferType, indices: list[Value], lanes: set[int]) -> int:
    """The bytes a vector access of ``buffer`` at ``indices`` (lane 0's) is proven aligned to: the largest power
    of two, at most 16, dividing the byte offset of lane 0's element, for a global or shared buffer (both start
    16-byte aligned) with static dims after the first; the element's own size otherwise."""
    size = storage_dtype(buffer.element).itemsize
    if buffer.space not in ("global", "shared") or not all(isinstance(d, int) for d in buffer.shape[1:]):
        return size
    multiple, stride = 0, 1
    for d in range(len(indices) - 1, -1, -1):
        multiple = math.gcd(multiple, known_multiple(indices[d], lanes) * stride)
        dim = buffer.shape[d] if d else 1
        assert isinstance(dim, int)  # checked above
        stride *= dim
    offset = multiple * size
    align = 16
    while offset % align:
        align //= 2
    return max(align, size)


def _config_says(func: Operation, knob: str) -> bool:
    """Whether kernel ``func``'s config attribute sets ``knob`` to true."""
    text = func.attributes.get("config")
    return isinstance(text, str) and Config.parse(text).as_dict().get(knob) is True


def _is_constant(value: Value, number: int) -> bool:
    op = value.defining_op()
    return op is not None and op.name == "loop.const" and op.attr("value") == number


_MOVES = frozenset({"loop.load", "loop.store", "loop.yield"})
"""The ops a vectorized element-moving loop body may hold besides pure index arithmetic."""
_MULTIPLE_OPS = frozenset({"loop.add", "loop.sub", "loop.mul", "loop.rem", "loop.select"})
_WARP_OPS = ("loop.shuffle", "loop.mma")
"""Ops the whole warp runs together (a full mask): never under a guard that leaves some threads out."""
_KEEP_FRAGMENTS = frozenset({"loop.mma", "loop.const", "loop.add", "loop.sub", "loop.mul", "loop.div", "loop.rem"})
"""Ops between two ``loop.mma`` that leave the loaded fragments valid (they touch no memory and no control flow)."""
_SHUFFLE = {"xor": "bfly", "down": "down", "up": "up", "idx": "idx"}
"""PTX's name of each ``loop.shuffle`` mode."""
_F64_LIBM = frozenset({"loop.exp", "loop.log", "loop.tanh", "loop.erf", "loop.pow", "loop.rem"})
"""f64 math that LLVM would call the C library for, which a GPU kernel cannot reach (f32 exp, log, tanh and
erf are decomposed; f32 rem goes through LLVM's NVPTX lowering)."""
_NO_FLOAT_INSTRUCTION = frozenset({"loop.pow"})
"""Float math LLVM's NVPTX backend cannot select at any width: it aborts the whole process ("Cannot select:
fpow", found by the fuzzer), so the emitter refuses it first."""
