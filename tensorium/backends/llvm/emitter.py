"""Loop-level kernels to an LLVM IR module (llvmlite.ir): the emitter of the CPU backend.

Each ``func.func`` kernel becomes ``i32 @tensorium.kernel.<name>(i64 threads, <args>)``: a buffer
argument is a pointer followed by one i64 size per symbolic dimension, a scalar argument is a float,
a double (f64) or an i64 (integers and index, truncated to their width). The result is 0, or ``k``
when run-time check ``k`` failed (``LLVMEmitter.errors[k - 1]`` says which). ``loop.for`` becomes a
basic-block loop (``vectorize`` and ``unroll`` kinds carry ``llvm.loop`` hints); an outermost
``parallel`` loop is outlined into ``i32 (ptr ctx, i64 start, i64 end)`` over iteration numbers and
handed to the ``tensorium_parallel_for`` runtime function, which runs chunks on a thread pool.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar

from llvmlite import ir

from ...errors import CompileError
from ...ir.core import Block, Operation, Value
from ...ir.dialects.builtin import func_body, func_name, functions
from ...ir.dialects.loop import GPU_KINDS
from ...ir.evaluate import op_location
from ...ir.shapes import normalize_axis
from ...ir.types import BufferType, FloatType, IntegerType, ScalarType, Sym, Type, storage_dtype
from ...lowering.decompose import DECOMPOSABLE
from ...lowering.inplace import inplace_pairs
from ..emitter import op_error
from .bits import BitsEmitter
from .common import (
    F16,
    F32,
    I32,
    I64,
    PTR,
    BufferRef,
    is_signed,
    memory_type,
    register_type,
)
from .folding import FoldingBuilder, int_constant
from .scalars import ScalarEmitter
from .vectorize import VectorEmitter, vector_plan

PARALLEL_FOR = "tensorium_parallel_for"
"""The runtime entry point: ``i32 (i64 threads, ptr body, ptr ctx, i64 trips)``."""

MAX_UNROLL = 64
"""``unroll`` loops with constant bounds and at most this many iterations are unrolled while emitting."""
MAX_STACK_BYTES = 1 << 16
"""Static allocations up to this size live on the stack; larger and dynamic ones are malloc'ed."""


@dataclass(frozen=True)
class KernelInfo:
    """What a caller needs to know about one compiled kernel: its symbol and argument types."""

    name: str
    symbol: str
    arg_types: tuple[Type, ...]
    arg_names: tuple[str | None, ...]
    written: frozenset[int]
    """Indices of the buffer arguments the kernel stores into."""
    ops: tuple[str, ...] = ()
    """The graph ops the kernel computes (its function's ``source_ops`` attribute; one, or a fused group)."""
    inplace: frozenset[tuple[int, int]] = frozenset()
    """Argument index pairs (input, output) that may share memory (:func:`tensorium.lowering.inplace_pairs`)."""


def kernel_info(func: Operation, symbol: str) -> KernelInfo:
    """The :class:`KernelInfo` of kernel ``func`` compiled as ``symbol``."""
    block = func_body(func)
    written = {
        i for op in func.walk() if op.name == "loop.store" for i, arg in enumerate(block.args) if op.operands[1] is arg
    }
    return KernelInfo(
        func_name(func),
        symbol,
        tuple(a.type for a in block.args),
        tuple(a.name_hint for a in block.args),
        frozenset(written),
        tuple(str(n) for n in func.attributes.get("source_ops", ())),  # type: ignore[union-attr]
        inplace_pairs(func),
    )


def kernel_symbol(name: str) -> str:
    """The LLVM symbol of kernel ``@name``."""
    return f"tensorium.kernel.{name}"


def captured_values(op: Operation) -> list[Value]:
    """The values that ops nested in ``op`` use but that are defined outside it, in first-use order."""
    nested = list(op.walk())[1:]
    inside: set[int] = set()
    for inner in [op, *nested]:
        inside.update(id(r) for r in inner.results)
        for region in inner.regions:
            for block in region.blocks:
                inside.update(id(a) for a in block.args)
    seen: dict[int, Value] = {}
    for inner in nested:
        for v in inner.operands:
            if id(v) not in inside:
                seen.setdefault(id(v), v)
    return list(seen.values())


def _is_one(v: ir.Value) -> bool:
    return isinstance(v, ir.Constant) and v.constant == 1


class LLVMEmitter(ScalarEmitter, VectorEmitter, BitsEmitter):
    """Turns a module of loop-level kernels into one LLVM module; emitter state lives on the instance.

    A :class:`~tensorium.backends.emitter.KernelEmitter`: ``OPS`` maps op names to method names and
    ``LOOP_KINDS`` loop kinds to methods; an NVPTX emitter subclasses this and overrides what differs
    (its loop kinds, barriers, address spaces, kernel ABI).
    """

    NAME: ClassVar[str] = "LLVM"
    NATIVE: ClassVar[frozenset[str]] = DECOMPOSABLE - {"loop.exp", "loop.log", "loop.tanh", "loop.erf"}
    """Integer division and bf16 rounding are native (the same code); the f32 decompositions of exp, log, tanh
    and erf run as fast as this emitter's own vector polynomials and faster than everything else it has
    (docs/cpu_backend.md has the numbers); its own remain for f64 and modules compiled without decompose."""
    LOOP_KINDS: ClassVar[dict[str, str]] = {
        "serial": "emit_serial",
        "unroll": "emit_unroll",
        "vectorize": "emit_vectorize",
        "parallel": "emit_parallel_for",
    }
    OPS: ClassVar[dict[str, str]] = {
        **ScalarEmitter.OPS,
        **BitsEmitter.OPS,
        "loop.if": "emit_if",
        "loop.alloc": "emit_alloc",
        "loop.dim": "emit_dim",
        "loop.load": "emit_load",
        "loop.store": "emit_store",
        "loop.load_packed": "emit_load_packed",
        "loop.barrier": "emit_barrier",
        "loop.align_offset": "emit_align_offset",
        "loop.prefetch": "emit_prefetch",
        "loop.check": "emit_check",
    }

    BUFFER_POINTER: ClassVar[ir.Type] = PTR
    """The LLVM type of a buffer argument."""

    def __init__(self, triple: str = "", data_layout: str = "", features: frozenset[str] = frozenset()) -> None:
        module = ir.Module(name="tensorium")
        module.triple = triple
        module.data_layout = data_layout
        super().__init__(module)
        self.triple, self.data_layout = triple, data_layout
        self.features = features
        self.kernels: dict[str, KernelInfo] = {}
        self.errors: list[str] = []
        self.allocas = ir.IRBuilder()
        self.frees: list[list[ir.Value]] = []
        self.threads: ir.Value = I64(1)
        self.parallel_depth = 0

    def output(self) -> ir.Module:
        """The LLVM module of the kernels emitted so far."""
        return self.module

    def emit_modules(self, module: Operation) -> list[ir.Module]:
        """Emit each function of ``module`` as a kernel in an LLVM module of its own (the run-time check
        messages stay numbered across all of them), so that they can be optimized in parallel.

        The largest kernels (by loop-IR ops) come first: their optimization is the longest, so it starts while
        the small ones are still being emitted (a symbolic-shape attention kernel alone can take half of a model's
        LLVM time, and emitted last it would leave the other cores idle at the end)."""
        funcs = list(functions(module))
        made: dict[int, ir.Module] = {}
        for i in sorted(range(len(funcs)), key=lambda i: -sum(1 for _ in funcs[i].walk())):
            self.module = ir.Module(name=f"tensorium.{func_name(funcs[i])}")
            self.module.triple, self.module.data_layout = self.triple, self.data_layout
            self.emit_function(funcs[i])
            made[i] = self.module
        # Kernels and modules are listed in the module's order again, whatever order they were emitted in.
        ordered = {name: self.kernels.pop(name) for name in map(func_name, funcs) if name in self.kernels}
        self.kernels.update(ordered)
        return [made[i] for i in range(len(funcs))]

    def emit_function(self, func: Operation) -> None:
        """Emit one kernel (see the module docstring for its signature)."""
        name = func_name(func)
        block = func_body(func)
        symbol = kernel_symbol(name)
        fn = ir.Function(self.module, ir.FunctionType(I32, [I64, *self.kernel_parameters(func)]), name=symbol)
        with self.function(fn):
            args = iter(fn.args)
            self.threads = next(args)
            self.bind_arguments(block, args)
            self.emit_block(block)
        self.kernels[name] = kernel_info(func, symbol)

    def kernel_parameters(self, func: Operation) -> list[ir.Type]:
        """The LLVM parameters of kernel ``func``'s arguments: a buffer is a ``BUFFER_POINTER`` then one i64 per
        symbolic dim, a scalar its ``abi_type``; CompileError for a kernel that returns values or takes others."""
        name, block = func_name(func), func_body(func)
        term = block.terminator
        if term is not None and term.operands:
            raise op_error(term, f"in @{name} returns values; kernels write their results into buffers")
        params: list[ir.Type] = []
        for i, arg in enumerate(block.args):
            t = arg.type
            if isinstance(t, BufferType):
                register_type(t.element)
                params += [self.BUFFER_POINTER] + [I64] * sum(isinstance(d, Sym) for d in t.shape)
            elif isinstance(t, ScalarType):
                params.append(self.abi_type(t))
            else:
                label = f"@{name} argument #{i}" + (f" '{arg.name_hint}'" if arg.name_hint else "")
                raise CompileError(f"{label} has type {t}; kernels take buffers and scalars")
        return params

    def bind_arguments(self, block: Block, args: Iterator[ir.Value]) -> None:
        """Bind the kernel's arguments to the LLVM parameters ``args`` (in :meth:`kernel_parameters`' order)."""
        for arg in block.args:
            t = arg.type
            if isinstance(t, BufferType):
                ptr = next(args)
                sizes = [I64(d) if isinstance(d, int) else next(args) for d in t.shape]
                self.env[id(arg)] = BufferRef(t, ptr, sizes)
            else:
                assert isinstance(t, ScalarType)
                self.env[id(arg)] = self.from_abi(next(args), t)

    def abi_type(self, t: ScalarType) -> ir.Type:
        """How a scalar argument is passed: f64 as double, other floats as float, integers as i64."""
        return register_type(t) if isinstance(t, FloatType) else I64

    def from_abi(self, v: ir.Value, t: ScalarType) -> ir.Value:
        """A scalar argument as a register value of ``t``."""
        lt = register_type(t)
        return self.builder.trunc(v, lt) if isinstance(lt, ir.IntType) and lt.width < 64 else v

    @contextmanager
    def function(self, fn: ir.Function) -> Iterator[None]:
        """Emit into ``fn``: an entry block for allocas, then the body, which returns 0 at its end."""
        saved = (self.builder, self.allocas, self.frees, self.env)
        entry, start = fn.append_basic_block("entry"), fn.append_basic_block("start")
        self.allocas, self.builder = ir.IRBuilder(entry), FoldingBuilder(start)
        self.frees, self.env = [], dict(self.env)
        yield
        self.return_normally()
        self.allocas.branch(start)
        self.builder, self.allocas, self.frees, self.env = saved

    def return_normally(self) -> None:
        """End the function being emitted: kernels and outlined bodies return status 0."""
        self.builder.ret(I32(0))

    def emit_block(self, block: Block) -> None:
        """Emit the ops of ``block`` but its terminator, then free what it malloc'ed."""
        self.frees.append([])
        super().emit_block(block)
        for ptr in reversed(self.frees.pop()):
            self.builder.call(self.intrinsic("free", ir.VoidType(), [PTR]), [ptr])

    def check(self, op: Operation, failed: ir.Value, message: str, named: bool = True) -> None:
        """Return error code k from the current function when the i1 ``failed`` holds at run time (no code and
        no error code for a check that folded to false); the error is ``message`` at ``op``'s location, after
        ``op``'s name when ``named``."""
        if int_constant(failed) == 0:
            return
        self.errors.append(f"{op_location(op)}'{op.name}' {message}" if named else f"{op_location(op)}{message}")
        self.return_if(failed, I32(len(self.errors)))

    def return_if(self, cond: ir.Value, status: ir.Value) -> None:
        """Return ``status`` from the current function when the i1 ``cond`` holds (nothing when it is the
        constant false: a check that folded away)."""
        if int_constant(cond) == 0:
            return
        fn = self.builder.function
        fail, ok = fn.append_basic_block("fail"), fn.append_basic_block("ok")
        self.builder.cbranch(cond, fail, ok)
        self.builder.position_at_end(fail)
        self.builder.ret(status)
        self.builder.position_at_end(ok)

    def buffer(self, v: Value) -> BufferRef:
        """The pointer and sizes emitted for the buffer ``v``."""
        ref = self.env[id(v)]
        assert isinstance(ref, BufferRef), v
        return ref

    def unsupported_kind(self, op: Operation, kind: str) -> CompileError:
        """GPU loops need a GPU target."""
        if kind in GPU_KINDS:
            kinds = ", ".join(self.LOOP_KINDS)
            return op_error(op, f'of kind "{kind}" needs a GPU target; the CPU backend runs {kinds} loops')
        return super().unsupported_kind(op, kind)

    def bounds(self, op: Operation) -> tuple[ir.Value, ir.Value, ir.Value]:
        """The lower bound, upper bound and step of a ``loop.for``, after a run-time check that the step is positive."""
        lower, upper, step = self.operands(op)
        self.check(op, self.builder.icmp_signed("<=", step, I64(0)), "step must be positive")
        return lower, upper, step

    def emit_serial(self, op: Operation) -> None:
        """A serial loop (also what the other kinds fall back to), with its ``llvm.loop`` hints."""
        lower, upper, step = self.bounds(op)
        self.emit_loop(op.regions[0].block, lower, upper, step, self.loop_hints(op))

    def emit_unroll(self, op: Operation) -> None:
        """Unrolled while emitting when short and constant, else a loop with unroll hints."""
        lower, upper, step = self.bounds(op)
        if not self.unrolled(op, lower, upper, step):
            self.emit_loop(op.regions[0].block, lower, upper, step, self.loop_hints(op))

    def emit_vectorize(self, op: Operation) -> None:
        """Explicit vector lanes when the body allows (see vectorize.py), else a loop with vectorize hints."""
        lower, upper, step = self.bounds(op)
        if (op.attr("factor") or 0) > 1 and _is_one(step) and self.vectorized(op):
            self.emit_vector_loop(op.regions[0].block, lower, upper, int(op.attr("factor")), self.plan)
        else:
            self.emit_loop(op.regions[0].block, lower, upper, step, self.loop_hints(op))

    def emit_parallel_for(self, op: Operation) -> None:
        """The outermost parallel loop is outlined and run on threads; nested ones are serial in each chunk."""
        lower, upper, step = self.bounds(op)
        if self.parallel_depth == 0:
            self.emit_parallel(op, lower, upper, step)
        else:
            self.emit_loop(op.regions[0].block, lower, upper, step, None)

    def unrolled(self, op: Operation, lower: ir.Value, upper: ir.Value, step: ir.Value) -> bool:
        """Emit the body once per iteration when the bounds are constants and the loop is short; else False."""
        if not all(isinstance(v, ir.Constant) for v in (lower, upper, step)):
            return False
        first, end, stride = (int(v.constant) for v in (lower, upper, step))
        trips = range(first, end, stride)
        factor = op.attr("factor")
        if len(trips) > MAX_UNROLL or (factor and factor < len(trips)):
            return False
        body = op.regions[0].block
        for i in trips:
            self.env[id(body.args[0])] = I64(i)
            self.emit_block(body)
        return True

    def vectorized(self, op: Operation) -> bool:
        """Whether the body of vectorize loop ``op`` can run in vector lanes (then ``self.plan`` holds how)."""
        plan = vector_plan(op.regions[0].block)
        if plan is None:
            return False
        self.plan = plan
        return True

    def emit_loop(
        self, body: Block, lower: ir.Value, upper: ir.Value, step: ir.Value, hints: ir.MDValue | None
    ) -> None:
        """``for (i = lower; i < upper; i += step) body`` as header, body and exit blocks."""
        bl = self.builder
        fn, before = bl.function, bl.block
        header, inner, done = (fn.append_basic_block(n) for n in ("loop", "body", "done"))
        bl.branch(header)
        bl.position_at_end(header)
        iv = bl.phi(I64)
        iv.add_incoming(lower, before)
        bl.cbranch(bl.icmp_signed("<", iv, upper), inner, done)
        bl.position_at_end(inner)
        self.env[id(body.args[0])] = iv
        self.emit_block(body)
        iv.add_incoming(bl.add(iv, step), bl.block)
        latch = bl.branch(header)
        if hints is not None:
            latch.set_metadata("llvm.loop", hints)
        bl.position_at_end(done)

    def loop_hints(self, op: Operation) -> ir.MDValue | None:
        """The ``llvm.loop`` metadata of a vectorize or unroll loop (a self-referencing loop id)."""
        kind, factor = op.attr("kind", "serial"), op.attr("factor")
        if kind == "vectorize":
            # A width alone enables vectorization without forcing it: forced vectorization that LLVM
            # cannot perform prints "loop not vectorized" warnings on the user's stderr.
            if not factor:
                return None
            return self.loop_metadata([("llvm.loop.vectorize.width", I32(factor))])
        if kind == "unroll":
            return self.loop_metadata(
                [("llvm.loop.unroll.count", I32(factor))] if factor else [("llvm.loop.unroll.full", None)]
            )
        return None

    def loop_metadata(self, hints: list[tuple[str, ir.Constant | None]]) -> ir.MDValue:
        """A self-referencing ``llvm.loop`` id carrying ``hints`` (name, optional value) for a loop's latch."""
        nodes = [
            self.module.add_metadata([ir.MetaDataString(self.module, name), *([value] if value is not None else [])])
            for name, value in hints
        ]
        loop_id = ir.values.MDValue(self.module, nodes, name=str(len(self.module.metadata)))
        loop_id.operands = (loop_id, *nodes)
        return loop_id

    def emit_parallel(self, op: Operation, lower: ir.Value, upper: ir.Value, step: ir.Value) -> None:
        """Outline the loop body over iteration numbers [start, end) and run it through the runtime."""
        bl = self.builder
        captured = captured_values(op)
        reps: list[object] = [lower, step, *(self.env[id(v)] for v in captured)]
        fields = [f for rep in reps for f in self.fields(rep)]
        ctx_type = ir.LiteralStructType([f.type for f in fields])
        ctx = self.allocas.alloca(ctx_type)
        for k, f in enumerate(fields):
            bl.store(f, bl.gep(ctx, [I32(0), I32(k)]))
        outer = bl.function
        body = ir.Function(
            self.module,
            ir.FunctionType(I32, [PTR, I64, I64]),
            name=self.module.get_unique_name(f"{outer.name}.parallel"),
        )
        body.linkage = "internal"
        # Called directly when one thread runs it and through the pool otherwise: without noinline LLVM inlines
        # the direct call and optimizes and compiles the body twice (30-40% of a small kernel's compile time).
        body.attributes.add("noinline")
        with self.function(body):
            arg, start, end = body.args
            ib = self.builder
            slots = [ib.gep(arg, [I32(0), I32(k)], source_etype=ctx_type) for k in range(len(fields))]
            loaded = iter([ib.load(slot, typ=f.type) for slot, f in zip(slots, fields)])
            first, stride, *inner = [self.unfields(rep, loaded) for rep in reps]
            assert isinstance(first, ir.Value) and isinstance(stride, ir.Value)
            for v, rep in zip(captured, inner):
                self.env[id(v)] = rep
            self.parallel_depth += 1
            begin, stop = (ib.add(first, ib.mul(t, stride)) for t in (start, end))
            self.emit_loop(op.regions[0].block, begin, stop, stride, None)
            self.parallel_depth -= 1
        span = bl.sub(upper, lower)
        trips = bl.select(
            bl.icmp_signed(">", span, I64(0)), bl.add(bl.sdiv(bl.sub(span, I64(1)), step), I64(1)), I64(0)
        )
        # One thread (or one iteration) runs the body in place: no trip through the thread pool.
        alone = bl.or_(bl.icmp_signed("<=", self.threads, I64(1)), bl.icmp_signed("<=", trips, I64(1)))
        fn = bl.function
        inline, pooled, joined = (fn.append_basic_block(n) for n in ("inline", "pooled", "joined"))
        bl.cbranch(alone, inline, pooled)
        bl.position_at_end(inline)
        direct = bl.call(body, [ctx, I64(0), trips])
        bl.branch(joined)
        bl.position_at_end(pooled)
        runtime = self.intrinsic(PARALLEL_FOR, I32, [I64, PTR, PTR, I64])
        through_pool = bl.call(runtime, [self.threads, body, ctx, trips])
        bl.branch(joined)
        bl.position_at_end(joined)
        status = bl.phi(I32)
        status.add_incoming(direct, inline)
        status.add_incoming(through_pool, pooled)
        self.return_if(bl.icmp_signed("!=", status, I32(0)), status)

    def fields(self, rep: object) -> list[ir.Value]:
        """The run-time values of a scalar or buffer that an outlined body needs (constants are not passed)."""
        if isinstance(rep, BufferRef):
            return [rep.ptr, *(s for s in rep.sizes if not isinstance(s, ir.Constant))]
        assert isinstance(rep, ir.Value)
        return [] if isinstance(rep, ir.Constant) else [rep]

    def unfields(self, rep: object, loaded: Iterator[ir.Value]) -> object:
        """``rep`` rebuilt from the values ``fields`` passed, taken in order from ``loaded``."""
        if isinstance(rep, BufferRef):
            ptr = next(loaded)
            return BufferRef(rep.type, ptr, [s if isinstance(s, ir.Constant) else next(loaded) for s in rep.sizes])
        return rep if isinstance(rep, ir.Constant) else next(loaded)

    def emit_if(self, op: Operation) -> None:
        """The body behind a conditional branch."""
        (cond,) = self.operands(op)
        known = int_constant(cond)
        if known is not None:  # a condition that folded: the body or nothing, without a branch
            if known:
                self.emit_block(op.regions[0].block)
            return
        bl = self.builder
        then, after = bl.function.append_basic_block("then"), bl.function.append_basic_block("endif")
        bl.cbranch(cond, then, after)
        bl.position_at_end(then)
        self.emit_block(op.regions[0].block)
        bl.branch(after)
        bl.position_at_end(after)

    def emit_barrier(self, op: Operation) -> None:
        """Barriers need GPU workgroups: always a CompileError here."""
        raise op_error(op, "needs a GPU target; the CPU backend has no workgroups")

    def emit_alloc(self, op: Operation) -> BufferRef:
        """A stack slot for small static buffers, else ``malloc`` freed at the end of the block."""
        t = op.attr("type")
        assert isinstance(t, BufferType)
        given = iter(self.operands(op))
        sizes = [I64(d) if isinstance(d, int) else next(given) for d in t.shape]
        element = memory_type(t.element)
        width = storage_dtype(t.element).itemsize
        count = 1
        if t.is_static:
            for d in t.static_shape:
                count *= d
            if count * width <= MAX_STACK_BYTES:
                return BufferRef(t, self.allocas.alloca(element, size=I64(count)), sizes)
        bl = self.builder
        total: ir.Value = I64(width)
        for s in sizes:
            total = bl.mul(total, s)
        self.check(op, bl.icmp_signed("<", total, I64(0)), "was given a negative size")
        ptr = bl.call(self.intrinsic("malloc", PTR, [I64]), [bl.add(total, I64(1))])
        self.check(op, bl.icmp_unsigned("==", ptr, ir.Constant(PTR, None)), "could not allocate memory")
        self.frees[-1].append(ptr)
        return BufferRef(t, ptr, sizes)

    def emit_dim(self, op: Operation) -> ir.Value:
        """The size of one dimension."""
        ref = self.buffer(op.operands[0])
        return ref.sizes[normalize_axis(op.attr("axis"), ref.type.rank)]

    def address(self, ref: BufferRef, indices: list[ir.Value]) -> ir.Value:
        """The address of element ``indices`` of a row-major buffer."""
        bl = self.builder
        offset: ir.Value = indices[0] if indices else I64(0)
        for size, i in zip(ref.sizes[1:], indices[1:]):
            offset = bl.add(bl.mul(offset, size), i)
        return bl.gep(ref.ptr, [offset], inbounds=True, source_etype=memory_type(ref.type.element))

    def emit_load(self, op: Operation) -> ir.Value:
        """One element, as a register value."""
        ref = self.buffer(op.operands[0])
        element = ref.type.element
        raw = self.builder.load(self.address(ref, self.values(op.operands[1:])), typ=memory_type(element))
        return self.from_memory(raw, element)

    def emit_check(self, op: Operation) -> None:
        """A ``loop.check``: the kernel returns the check's status when its condition is false."""
        self.check(op, self.builder.not_(self.value(op.operands[0])), str(op.attr("message")), named=False)

    def emit_prefetch(self, op: Operation) -> None:
        """``llvm.prefetch`` (read, keep in every cache level) of the element's address, computed without
        ``inbounds``: the indices may point past the buffer, and a prefetch never faults. Left out for GPUs
        (NVPTX), whose caches this hint does not fit."""
        if "nvptx" in self.triple:
            return
        ref = self.buffer(op.operands[0])
        bl = self.builder
        indices = self.values(op.operands[1:])
        offset: ir.Value = indices[0] if indices else I64(0)
        for size, i in zip(ref.sizes[1:], indices[1:]):
            offset = bl.add(bl.mul(offset, size), i)
        address = bl.gep(ref.ptr, [offset], source_etype=memory_type(ref.type.element))
        prefetch = self.intrinsic("llvm.prefetch.p0", ir.VoidType(), [address.type, I32, I32, I32])
        bl.call(prefetch, [address, I32(0), I32(3), I32(1)])

    def emit_align_offset(self, op: Operation) -> ir.Value:
        """Elements from an element's address to the next multiple of ``bytes`` (from the address's low bits)."""
        bl = self.builder
        ref = self.buffer(op.operands[0])
        size = storage_dtype(ref.type.element).itemsize
        align = int(op.attr("bytes"))
        address = bl.ptrtoint(self.address(ref, self.values(op.operands[1:])), I64)
        ahead = bl.and_(bl.sub(I64(align), bl.and_(address, I64(align - 1))), I64(align - 1))
        whole = bl.icmp_unsigned("==", bl.and_(address, I64(size - 1)), I64(0))
        return bl.select(whole, bl.lshr(ahead, I64(size.bit_length() - 1)), I64(0))

    def emit_store(self, op: Operation) -> None:
        """Write one element in the storage layout."""
        ref = self.buffer(op.operands[1])
        value = self.value(op.operands[0])
        self.builder.store(self.to_memory(value, ref.type.element), self.address(ref, self.values(op.operands[2:])))

    def from_memory(self, raw: ir.Value, t: ScalarType) -> ir.Value:
        """A loaded element as a register value: i1 is `byte != 0`, odd widths truncate, bf16 rounds."""
        bl = self.builder
        if isinstance(t, IntegerType) and t.is_bool:
            return bl.icmp_unsigned("!=", raw, ir.Constant(raw.type, 0))
        lt = register_type(t)
        if raw.type == F16:
            return bl.fpext(raw, F32)
        if isinstance(lt, ir.IntType) and lt.width < raw.type.width:
            return bl.trunc(raw, lt)
        return self.round(raw, t)

    def to_memory(self, v: ir.Value, t: ScalarType) -> ir.Value:
        """A register value as stored: extended to the storage width, f16 narrowed to half."""
        bl = self.builder
        mt = memory_type(t)
        if mt == F16:
            return bl.fptrunc(v, F16)
        if isinstance(mt, ir.IntType) and v.type.width < mt.width:
            return bl.sext(v, mt) if is_signed(t) else bl.zext(v, mt)
        return v

    def emit_load_packed(self, op: Operation) -> ir.Value:
        """One packed k-bit element, sign- or zero-extended to i32."""
        ref = self.buffer(op.operands[0])
        bits, signed = int(op.attr("bits")), bool(op.attr("signed", False))
        word = memory_type(ref.type.element)
        per_word = I64(word.width // bits)
        *outer, element = self.values(op.operands[1:])
        bl = self.builder
        raw = bl.load(self.address(ref, [*outer, bl.udiv(element, per_word)]), typ=word)
        wide = bl.zext(raw, I32) if word.width < 32 else raw
        shift = bl.trunc(bl.mul(bl.urem(element, per_word), I64(bits)), I32)
        value = bl.and_(bl.lshr(wide, shift), I32((1 << bits) - 1))
        if signed:
            value = bl.ashr(bl.shl(value, I32(32 - bits)), I32(32 - bits))
        return value
