"""The run-time support of compiled kernels: the thread pool behind parallel loops and its size.

A kernel calls ``tensorium_parallel_for(threads, body, ctx, trips)`` for each outermost parallel
loop. The call comes back into Python (through a ctypes callback), which splits the iterations
``[0, trips)`` into one contiguous chunk per thread and calls the outlined ``body(ctx, start, end)``
on the pool's threads; ctypes releases the GIL around each call, so the chunks run at once.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from llvmlite import binding as llvm

from ...errors import InterpreterError
from .emitter import PARALLEL_FOR

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


def register_runtime() -> None:
    """Make the runtime's symbols and the C library (malloc, and the libm calls LLVM emits) visible to JIT code."""
    for name in ("c", "m"):
        path = ctypes.util.find_library(name)
        if path is not None:
            llvm.load_library_permanently(path)
    address = ctypes.cast(_CALLBACK, ctypes.c_void_p).value
    assert address is not None
    llvm.add_symbol(PARALLEL_FOR, address)
