"""One foreign call for a whole launch plan: a native loop that calls a list of kernels.

A ctypes call costs about a microsecond of Python (argument conversion, the GIL given up and taken back), more
than the kernels of a small model's decode step take; a plan of a hundred kernels paid that a hundred times
per run. :func:`program_runner` gives a native function ``run(threads, program, calls)`` that reads a
*program*, an int64 array of ``calls`` records ``[kernel address, n, argument 1, ..., argument n]``, and calls
each kernel as ``kernel(threads, argument 1, ..., argument n)``, in order, until one returns a nonzero status.

Kernel arguments are pointers and i64 sizes, which the C calling conventions of x86-64 and AArch64 pass
alike, so every argument travels as an i64. The runner is compiled once per set of argument counts (a
switch over the counts, up to the next multiple of 8 above the plan's largest) and kept for the process.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Collection
from typing import Any

from llvmlite import binding as llvm
from llvmlite import ir

from .common import I32, I64
from .machine import host_target_machine

__all__ = ["RUNNER_TYPE", "decode_failure", "program_runner", "runner_ir"]

RUNNER_NAME = "tensorium_run_program"
RUNNER_TYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)
"""``(threads, program address, number of calls) -> 0, or (failed call + 1) << 32 | its status``."""

_ENGINES: dict[tuple[int, ...], tuple[llvm.ExecutionEngine, object]] = {}
_LOCK = threading.Lock()


def runner_ir(counts: Collection[int], triple: str) -> str:
    """The LLVM IR of the runner for kernels taking ``counts`` arguments after the thread count."""
    module = ir.Module("tensorium_launcher")
    module.triple = triple
    fn = ir.Function(module, ir.FunctionType(I64, [I64, I64.as_pointer(), I64]), RUNNER_NAME)
    threads, program, calls = fn.args
    entry, loop, body, next_, failed, done = (
        fn.append_basic_block(n) for n in ("entry", "loop", "body", "next", "failed", "done")
    )
    b = ir.IRBuilder(entry)
    b.branch(loop)

    b.position_at_end(loop)
    call = b.phi(I64, "call")
    pc = b.phi(I64, "pc")
    call.add_incoming(I64(0), entry)
    pc.add_incoming(I64(0), entry)
    b.cbranch(b.icmp_signed("<", call, calls), body, done)

    b.position_at_end(body)
    address = b.load(b.gep(program, [pc]), typ=I64)
    count = b.load(b.gep(program, [b.add(pc, I64(1))]), typ=I64)
    status_of = fn.append_basic_block("status")
    switch = b.switch(count, failed)  # a count no case has cannot come from a program the host built
    statuses = []
    for n in sorted(set(counts)):
        case = fn.append_basic_block(f"args{n}")
        switch.add_case(I64(n), case)
        b.position_at_end(case)
        args = [b.load(b.gep(program, [b.add(pc, I64(2 + k))]), typ=I64) for k in range(n)]
        kernel = b.inttoptr(address, ir.FunctionType(I32, [I64] * (n + 1)).as_pointer())
        statuses.append((b.call(kernel, [threads, *args]), case))
        b.branch(status_of)

    b.position_at_end(status_of)
    status = b.phi(I32, "status")
    for value, block in statuses:
        status.add_incoming(value, block)
    b.cbranch(b.icmp_signed("!=", status, I32(0)), failed, next_)

    b.position_at_end(next_)
    call.add_incoming(b.add(call, I64(1)), next_)
    pc.add_incoming(b.add(pc, b.add(count, I64(2))), next_)
    b.branch(loop)

    b.position_at_end(failed)
    code = b.phi(I32, "code")
    code.add_incoming(status, status_of)
    code.add_incoming(I32(-1), body)
    b.ret(b.or_(b.shl(b.add(call, I64(1)), I64(32)), b.zext(code, I64)))

    b.position_at_end(done)
    b.ret(I64(0))
    return str(module)


def program_runner(most: int) -> Any:
    """The runner (:data:`RUNNER_TYPE`) for kernels taking at most ``most`` arguments after the thread count,
    compiled on first use for this machine and kept for the process (one per multiple of 8 arguments)."""
    key = tuple(range(-(-most // 8) * 8 + 1))
    with _LOCK:
        held = _ENGINES.get(key)
        if held is None:
            machine = host_target_machine()
            module = llvm.parse_assembly(runner_ir(key, machine.triple))
            module.verify()
            engine = llvm.create_mcjit_compiler(module, machine)
            engine.finalize_object()
            held = _ENGINES[key] = (engine, RUNNER_TYPE(engine.get_function_address(RUNNER_NAME)))
    return held[1]


def decode_failure(code: int) -> tuple[int, int]:
    """The failed call's index and its (signed 32-bit) status from a nonzero runner result."""
    status = code & 0xFFFFFFFF
    return (code >> 32) - 1, status - (1 << 32) if status >= 1 << 31 else status
