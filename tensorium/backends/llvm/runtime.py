"""The run-time support of compiled kernels: the thread pool behind parallel loops and its size.

A kernel calls ``tensorium_parallel_for(threads, body, ctx, trips)`` for each outermost parallel
loop, which runs the outlined ``body(ctx, start, end)`` over chunks of the iterations ``[0, trips)`` on
up to ``threads`` threads. The symbol is bound when kernels are loaded, so object code does not depend
on which implementation runs it (``TENSORIUM_PARALLEL_RUNTIME`` picks one):

- ``pool`` (the default on x86-64 Linux): Tensorium's own pool, a few hundred lines of LLVM IR
  (:mod:`tensorium.backends.llvm.pool`): threads claim guided chunks by compare-and-swap, the caller
  claims too and waits only for iterations some thread has claimed, never for a thread that is not
  running, so a worker the OS deschedules (another process on the core) does not stall the loop; idle
  workers spin briefly, then sleep on a futex;
- ``openmp`` (where the GNU OpenMP runtime, libgomp, loads): a worker on each thread of a
  ``GOMP_parallel`` team claims chunks of iterations from an atomic counter (:data:`CHUNKS_PER_THREAD`
  per thread); idle team threads spin briefly before they sleep (:data:`SPIN_COUNT`). The team's
  closing barrier waits for every thread, running or not;
- ``python`` (the fallback): a ctypes callback into a Python thread pool; ctypes releases the GIL around
  each chunk, so the chunks run at once, but each parallel loop costs tens of microseconds of GIL
  hand-offs.

A runtime that cannot load here falls back to the next one in that order.
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
from .pool import ENTRY as POOL_ENTRY
from .pool import FIELDS as POOL_FIELDS
from .pool import STATE as POOL_STATE
from .pool import pool_runtime_ir

RUNTIME_ENV = "TENSORIUM_PARALLEL_RUNTIME"
RUNTIMES = ("pool", "openmp", "python")
"""The implementations of ``tensorium_parallel_for``, in the order of preference."""

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
_WANTED: str | None = None


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


_POOL_ENGINE: llvm.ExecutionEngine | None = None


def _pool_address() -> int | None:
    """The address of the pool's ``tensorium_parallel_for``, compiled once; None off x86-64 Linux."""
    global _POOL_ENGINE
    if _POOL_ENGINE is None:
        machine = host_target_machine()
        if not machine.triple.startswith("x86_64") or "linux" not in machine.triple:
            return None
        module = llvm.parse_assembly(pool_runtime_ir(machine.triple))
        module.verify()
        engine = llvm.create_mcjit_compiler(module, machine)
        engine.finalize_object()
        _POOL_ENGINE = engine
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forget_pool_threads)
    return int(_POOL_ENGINE.get_function_address(POOL_ENTRY))


def _pool_words() -> ctypes.Array[ctypes.c_int64]:
    """The pool's state as a ctypes array (see :data:`tensorium.backends.llvm.pool.FIELDS`)."""
    assert _POOL_ENGINE is not None
    address = _POOL_ENGINE.get_global_value_address(POOL_STATE)
    return (ctypes.c_int64 * (POOL_FIELDS["thread_ids"] + 1)).from_address(address)


def pool_workers() -> int:
    """How many worker threads the pool has started in this process (0 before its first parallel loop)."""
    return int(_pool_words()[POOL_FIELDS["workers"]]) if _POOL_ENGINE is not None else 0


def _forget_pool_threads() -> None:
    """In a forked child: the parent's workers do not exist here, so the pool starts its own when needed."""
    words = _pool_words()
    for name in ("workers", "busy", "sleepers"):
        words[POOL_FIELDS[name]] = 0


def parallel_runtime() -> str:
    """Which implementation kernels compiled or loaded now call: ``pool``, ``openmp`` or ``python``."""
    register_runtime()
    assert _BOUND is not None
    return _BOUND


def register_runtime() -> None:
    """Make the runtime's symbols and the C library (malloc, and the libm calls LLVM emits) visible to JIT code.

    ``tensorium_parallel_for`` is bound to the implementation ``TENSORIUM_PARALLEL_RUNTIME`` asks for
    (``pool`` by default), or the next one of :data:`RUNTIMES` that loads here; engines finalized later use
    that one.
    """
    global _BOUND, _WANTED
    wanted = os.environ.get(RUNTIME_ENV, RUNTIMES[0]).strip() or RUNTIMES[0]
    if wanted not in RUNTIMES:
        raise InterpreterError(f"{RUNTIME_ENV} must be one of {', '.join(map(repr, RUNTIMES))}, got '{wanted}'")
    if _BOUND is not None and wanted == _WANTED:
        return
    for name in ("c", "m", "gcc_s"):  # gcc_s: f16 conversions (__truncsfhf2, ...) on CPUs without F16C
        path = ctypes.util.find_library(name)
        if path is not None:
            llvm.load_library_permanently(path)
    loaders = {"pool": _pool_address, "openmp": _openmp_address}
    address = None
    for name in RUNTIMES[RUNTIMES.index(wanted) :]:
        address = loaders[name]() if name in loaders else ctypes.cast(_CALLBACK, ctypes.c_void_p).value
        if address is not None:
            _BOUND, _WANTED = name, wanted
            break
    assert address is not None
    llvm.add_symbol(PARALLEL_FOR, address)
