"""The run-time support of compiled kernels: the thread pool behind parallel loops and its size.

A kernel calls ``tensorium_parallel_for(threads, body, ctx, trips)`` for each outermost parallel
loop, which splits the iterations ``[0, trips)`` into one contiguous chunk per thread and runs the
outlined ``body(ctx, start, end)`` on each. The symbol is bound when kernels are loaded, so object code
does not depend on which implementation runs it:

- ``openmp`` (the default where the GNU OpenMP runtime, libgomp, loads): a few lines of LLVM IR built
  here that run a worker on each thread of a ``GOMP_parallel`` team; the workers claim chunks of
  iterations from an atomic counter (:data:`CHUNKS_PER_THREAD` per thread), and idle team threads spin
  briefly before they sleep (:data:`SPIN_COUNT`), so a parallel loop costs microseconds;
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
from ...targets import TargetError, default_threads
from .common import I32, I64, PTR
from .emitter import PARALLEL_FOR
from .machine import host_target_machine

RUNTIME_ENV = "TENSORIUM_PARALLEL_RUNTIME"

RUNTIME_FAILED = -1
"""The status a kernel returns when the runtime itself failed (see ``failures``)."""

BODY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
PARALLEL_FOR_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def thread_count() -> int:
    """The number of threads for parallel loops (:func:`tensorium.targets.default_threads`); a bad
    ``TENSORIUM_NUM_THREADS`` is an InterpreterError here, where kernels are about to run."""
    try:
        return default_threads()
    except TargetError as e:
        raise InterpreterError(str(e)) from None


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


CHUNKS_PER_THREAD = 4
"""The OpenMP runtime cuts a loop into this many chunks per thread, claimed one at a time, so a thread the
OS preempts (a shared machine) or one with slower iterations delays the others by one chunk at most."""

SPIN_COUNT = "10000"
"""libgomp's ``GOMP_SPINCOUNT`` unless the user sets it or ``OMP_WAIT_POLICY``: idle team threads spin this
many times (tens of microseconds, enough for back-to-back kernels) before they sleep. libgomp's default
(300000, milliseconds) made every kernel 6x slower when another process held a core, since a spinning
thread keeps the core a working one needs."""


def openmp_runtime_ir(triple: str) -> str:
    """``tensorium_parallel_for`` on libgomp: ``GOMP_parallel`` runs a worker on each thread of the team, which
    claims chunks of iterations from an atomic counter until none is left; the first nonzero status of a
    chunk is returned."""
    module = ir.Module("tensorium_runtime")
    module.triple = triple
    task = ir.LiteralStructType([PTR, PTR, I64, I32, I64, I64])  # body, ctx, trips, status, next, grain
    body_type = ir.FunctionType(I32, [PTR, I64, I64])
    gomp_parallel = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I32, I32]), "GOMP_parallel")

    worker = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), "tensorium_omp_worker")
    worker.linkage = "internal"
    b = ir.IRBuilder(worker.append_basic_block("entry"))
    (data,) = worker.args
    field = [b.gep(data, [I32(0), I32(n)], inbounds=True, source_etype=task) for n in range(6)]
    trips, grain = b.load(field[2], typ=I64), b.load(field[5], typ=I64)
    body = b.load(field[0], typ=body_type.as_pointer())  # a typed pointer value tells the call its signature
    ctx = b.load(field[1], typ=PTR)
    claim, run, failed, done = (worker.append_basic_block(n) for n in ("claim", "run", "failed", "done"))
    b.branch(claim)
    b.position_at_end(claim)
    start = b.atomic_rmw("add", field[4], grain, "monotonic")
    b.cbranch(b.icmp_signed("<", start, trips), run, done)
    b.position_at_end(run)
    end = b.add(start, grain)
    end = b.select(b.icmp_signed("<", end, trips), end, trips)
    status = b.call(body, [ctx, start, end])
    b.cbranch(b.icmp_signed("!=", status, I32(0)), failed, claim)
    b.position_at_end(failed)
    b.cmpxchg(field[3], I32(0), status, "monotonic", "monotonic")
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()

    entry = ir.Function(module, ir.FunctionType(I32, [I64, PTR, PTR, I64]), PARALLEL_FOR + "_openmp")
    b = ir.IRBuilder(entry.append_basic_block("entry"))
    threads, body_ptr, ctx_ptr, trips = entry.args
    data = b.alloca(task)
    field = [b.gep(data, [I32(0), I32(n)], inbounds=True) for n in range(6)]
    fewer = b.select(b.icmp_signed("<", trips, threads), trips, threads)
    team = b.select(b.icmp_signed("<", fewer, I64(1)), I64(1), fewer)
    chunks = b.mul(team, I64(CHUNKS_PER_THREAD))
    grain = b.sdiv(b.add(trips, b.sub(chunks, I64(1))), chunks)
    grain = b.select(b.icmp_signed("<", grain, I64(1)), I64(1), grain)
    for n, value in enumerate([body_ptr, ctx_ptr, trips, I32(0), I64(0), grain]):
        b.store(value, field[n])
    b.call(gomp_parallel, [worker, data, b.trunc(team, I32), I32(0)])
    b.ret(b.load(field[3], typ=I32))
    return str(module)


_OPENMP_ENGINE: llvm.ExecutionEngine | None = None
_BOUND: str | None = None


def _openmp_address() -> int | None:
    """The address of the libgomp ``tensorium_parallel_for``, compiled once; None when libgomp does not load."""
    global _OPENMP_ENGINE
    if _OPENMP_ENGINE is None:
        path = ctypes.util.find_library("gomp")
        if "OMP_WAIT_POLICY" not in os.environ:
            os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)  # read once, when libgomp loads
        try:
            if path is None:
                return None
            llvm.load_library_permanently(path)
        except RuntimeError:
            return None
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
    for name in ("c", "m", "gcc_s"):  # gcc_s: f16 conversions (__truncsfhf2, ...) on CPUs without F16C
        path = ctypes.util.find_library(name)
        if path is not None:
            llvm.load_library_permanently(path)
    address = _openmp_address() if wanted == "openmp" else None
    _BOUND = "openmp" if address is not None else "python"
    if address is None:
        address = ctypes.cast(_CALLBACK, ctypes.c_void_p).value
    assert address is not None
    llvm.add_symbol(PARALLEL_FOR, address)
