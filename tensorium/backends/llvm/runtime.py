"""The run-time support of compiled kernels: the thread pool behind parallel loops and its size.

A kernel calls ``tensorium_parallel_for(threads, body, ctx, trips)`` for each outermost parallel
loop, which splits the iterations ``[0, trips)`` into one contiguous chunk per thread and runs the
outlined ``body(ctx, start, end)`` on each. The symbol is bound when kernels are loaded, so object code
does not depend on which implementation runs it:

- ``openmp`` (the default where the GNU OpenMP runtime, libgomp, loads): a few lines of LLVM IR built
  here that hand the chunks to ``GOMP_parallel``, whose threads wait for work by spinning briefly, so a
  parallel loop costs microseconds;
- ``python`` (the fallback): a ctypes callback into a Python thread pool; ctypes releases the GIL around
  each chunk, so the chunks run at once, but each parallel loop costs tens of microseconds of GIL
  hand-offs.

``TENSORIUM_PARALLEL_RUNTIME=python`` picks the fallback.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from llvmlite import binding as llvm
from llvmlite import ir

from ...errors import InterpreterError
from .common import I32, I64, PTR
from .emitter import PARALLEL_FOR

RUNTIME_ENV = "TENSORIUM_PARALLEL_RUNTIME"

NUM_THREADS_ENV = "TENSORIUM_NUM_THREADS"
RUNTIME_FAILED = -1
"""The status a kernel returns when the runtime itself failed (see ``failures``)."""

BODY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
PARALLEL_FOR_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def thread_count() -> int:
    """The number of threads for parallel loops: ``TENSORIUM_NUM_THREADS`` when set, else the cores."""
    text = os.environ.get(NUM_THREADS_ENV, "").strip()
    if not text:
        return os.cpu_count() or 1
    if not text.isdigit() or int(text) < 1:
        raise InterpreterError(f"{NUM_THREADS_ENV} must be a positive integer, got '{text}'")
    return int(text)


class ThreadPool:
    """Worker threads shared by every compiled kernel, grown on demand to the largest count asked for."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        self._size = 0
        self._lock = threading.Lock()
        self.failures: list[BaseException] = []

    def _workers(self, count: int) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None or self._size < count:
                # A smaller pool still in use finishes its chunks; its idle threads exit once it is collected.
                self._executor = ThreadPoolExecutor(count, thread_name_prefix="tensorium")
                self._size = count
            return self._executor

    def parallel_for(self, threads: int, body_address: int, ctx: int, trips: int) -> int:
        """Run ``body`` over ``[0, trips)`` in ``threads`` chunks; the first nonzero status, else 0."""
        body = BODY(body_address)
        chunks = max(1, min(threads, trips))
        bounds = [trips * k // chunks for k in range(chunks + 1)]
        others = []
        if chunks > 1:
            workers = self._workers(chunks - 1)
            others = [workers.submit(body, ctx, bounds[k], bounds[k + 1]) for k in range(1, chunks)]
        statuses = [body(ctx, bounds[0], bounds[1]), *(f.result() for f in others)]
        return next((s for s in statuses if s), 0)


POOL = ThreadPool()


def _parallel_for(threads: int, body: int, ctx: int, trips: int) -> int:
    try:
        return POOL.parallel_for(threads, body, ctx, trips)
    except Exception as e:  # a ctypes callback must not raise: report through the kernel's status
        POOL.failures.append(e)
        return RUNTIME_FAILED


_CALLBACK = PARALLEL_FOR_TYPE(_parallel_for)


def openmp_runtime_ir(triple: str) -> str:
    """``tensorium_parallel_for`` on libgomp: ``GOMP_parallel`` runs a worker on each thread of the team,
    which takes its chunk by ``omp_get_thread_num``; the first nonzero status of a chunk is returned."""
    module = ir.Module("tensorium_runtime")
    module.triple = triple
    task = ir.LiteralStructType([PTR, PTR, I64, I32])  # body, ctx, trips, status
    body_type = ir.FunctionType(I32, [PTR, I64, I64])
    team_size = ir.Function(module, ir.FunctionType(I32, []), "omp_get_num_threads")
    member = ir.Function(module, ir.FunctionType(I32, []), "omp_get_thread_num")
    gomp_parallel = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I32, I32]), "GOMP_parallel")

    worker = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), "tensorium_omp_worker")
    worker.linkage = "internal"
    b = ir.IRBuilder(worker.append_basic_block("entry"))
    (data,) = worker.args
    field = [b.gep(data, [I32(0), I32(n)], inbounds=True, source_etype=task) for n in range(4)]
    trips = b.load(field[2], typ=I64)
    threads, rank = b.sext(b.call(team_size, []), I64), b.sext(b.call(member, []), I64)
    start = b.sdiv(b.mul(trips, rank), threads)
    end = b.sdiv(b.mul(trips, b.add(rank, I64(1))), threads)
    body = b.load(field[0], typ=body_type.as_pointer())  # a typed pointer value tells the call its signature
    status = b.call(body, [b.load(field[1], typ=PTR), start, end])
    failed = b.function.append_basic_block("failed")
    done = b.function.append_basic_block("done")
    b.cbranch(b.icmp_signed("!=", status, I32(0)), failed, done)
    b.position_at_end(failed)
    b.cmpxchg(field[3], I32(0), status, "monotonic", "monotonic")
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()

    entry = ir.Function(module, ir.FunctionType(I32, [I64, PTR, PTR, I64]), PARALLEL_FOR + "_openmp")
    b = ir.IRBuilder(entry.append_basic_block("entry"))
    threads, body, ctx, trips = entry.args
    data = b.alloca(task)
    field = [b.gep(data, [I32(0), I32(n)], inbounds=True) for n in range(4)]
    for n, value in enumerate([body, ctx, trips, I32(0)]):
        b.store(value, field[n])
    fewer = b.select(b.icmp_signed("<", trips, threads), trips, threads)
    team = b.trunc(b.select(b.icmp_signed("<", fewer, I64(1)), I64(1), fewer), I32)
    b.call(gomp_parallel, [worker, data, team, I32(0)])
    b.ret(b.load(field[3], typ=I32))
    return str(module)


_OPENMP_ENGINE: llvm.ExecutionEngine | None = None
_BOUND: str | None = None


def _openmp_address() -> int | None:
    """The address of the libgomp ``tensorium_parallel_for``, compiled once; None when libgomp does not load."""
    global _OPENMP_ENGINE
    if _OPENMP_ENGINE is None:
        path = ctypes.util.find_library("gomp")
        try:
            if path is None:
                return None
            llvm.load_library_permanently(path)
        except RuntimeError:
            return None
        from .jit import host_target_machine

        machine = host_target_machine()
        module = llvm.parse_assembly(openmp_runtime_ir(machine.triple))
        module.verify()
        engine = llvm.create_mcjit_compiler(module, machine)
        engine.finalize_object()
        _OPENMP_ENGINE = engine
    return int(_OPENMP_ENGINE.get_function_address(PARALLEL_FOR + "_openmp"))


def parallel_runtime() -> str:
    """Which implementation kernels compiled or loaded now call: ``openmp`` or ``python``."""
    register_runtime()
    assert _BOUND is not None
    return _BOUND


def register_runtime() -> None:
    """Make the runtime's symbols and the C library (malloc, and the libm calls LLVM emits) visible to JIT code.

    ``tensorium_parallel_for`` is bound to the implementation ``TENSORIUM_PARALLEL_RUNTIME`` asks for
    (``openmp`` by default, ``python`` when libgomp is missing); engines finalized later use that one.
    """
    global _BOUND
    wanted = os.environ.get(RUNTIME_ENV, "openmp").strip() or "openmp"
    if wanted not in ("openmp", "python"):
        raise InterpreterError(f"{RUNTIME_ENV} must be 'openmp' or 'python', got '{wanted}'")
    if _BOUND is not None and wanted == _BOUND:
        return
    for name in ("c", "m"):
        path = ctypes.util.find_library(name)
        if path is not None:
            llvm.load_library_permanently(path)
    address = _openmp_address() if wanted == "openmp" else None
    _BOUND = "openmp" if address is not None else "python"
    if address is None:
        address = ctypes.cast(_CALLBACK, ctypes.c_void_p).value
    assert address is not None
    llvm.add_symbol(PARALLEL_FOR, address)
