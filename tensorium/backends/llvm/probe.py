"""Measure what a CPU target can do at most: its f32 FMA throughput, on one thread and on several.

The benchmark harness reports each kernel's rate as a share of the machine's limit. A peer's GEMM is only a
proxy for that limit (it is capped when the peer runs an older ISA, and it reaches only what the peer's
kernel reaches); this probe measures the limit itself. It JIT-compiles, for the Target's vector width, a
loop of independent vector FMA chains (enough chains to cover the FMA latency on every pipe, few enough to
stay in registers), runs it on ``threads`` threads at once (ctypes releases the GIL), and counts 2 FLOPs
per lane per FMA. The clock probe times a chain of dependent integer adds (one per cycle on every x86
core), which gives the cycles behind a time and so FLOP per cycle.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llvmlite import binding as llvm

from ...targets import Target
from .machine import target_machine

__all__ = ["PeakProbe", "measure_clock_ghz", "measure_fma_peak"]

_CHAINS_MIN = 8
"""Independent FMA chains at least (4-cycle latency x 2 pipes on current x86 cores)."""


@dataclass(frozen=True)
class PeakProbe:
    """The result of :func:`measure_fma_peak`."""

    gflops: float
    threads: int
    lanes: int
    chains: int

    def describe(self) -> str:
        """One line saying how the number was measured."""
        return (
            f"measured: {self.chains} independent {self.lanes}-lane f32 FMA chains per thread on {self.threads} "
            "thread(s), best of several runs"
        )


def _fma_kernel_ir(lanes: int, chains: int, triple: str) -> str:
    vec = f"<{lanes} x float>"
    lines = [
        f'target triple = "{triple}"',
        f"declare {vec} @llvm.fma.v{lanes}f32({vec}, {vec}, {vec})",
        "define void @fma_loop(i64 %n, float* %io) {",
        "entry:",
        "  %x = load float, float* %io",
        f"  %xi = insertelement {vec} undef, float %x, i32 0",
        f"  %m = shufflevector {vec} %xi, {vec} undef, <{lanes} x i32> zeroinitializer",
        # distinct starting values, so that no two chains compute the same thing (and none is merged)
        *(f"  %init{c} = fadd {vec} %m, <{', '.join([f'float {c}.0'] * lanes)}>" for c in range(chains)),
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [0, %entry], [%next, %loop]",
    ]
    for c in range(chains):
        lines.append(f"  %a{c} = phi {vec} [%init{c}, %entry], [%b{c}, %loop]")
    for c in range(chains):
        lines.append(f"  %b{c} = call {vec} @llvm.fma.v{lanes}f32({vec} %a{c}, {vec} %m, {vec} %m)")
    lines += [
        "  %next = add i64 %i, 1",
        "  %more = icmp slt i64 %next, %n",
        "  br i1 %more, label %loop, label %done",
        "done:",
    ]
    total = "b0"
    for c in range(1, chains):
        lines.append(f"  %s{c} = fadd {vec} %{total}, %b{c}")
        total = f"s{c}"
    lines += [
        f"  %r = extractelement {vec} %{total}, i32 0",
        "  store float %r, float* %io",
        "  ret void",
        "}",
    ]
    return "\n".join(lines)


class _Compiled:
    """A JIT-compiled probe function and the engine that owns its code."""

    def __init__(self, target: Target, text: str, name: str, signature: type) -> None:
        module = llvm.parse_assembly(text)
        module.verify()
        self.engine = llvm.create_mcjit_compiler(module, target_machine(target))
        self.engine.finalize_object()
        self.function = signature(self.engine.get_function_address(name))


def _run_threads(calls: Sequence[Callable[[], object]]) -> float:
    """Seconds for one thread per call, started together, to finish all of them."""
    barrier = threading.Barrier(len(calls) + 1)

    def work(call: Callable[[], object]) -> None:
        barrier.wait()
        call()

    workers = [threading.Thread(target=work, args=(call,)) for call in calls]
    for w in workers:
        w.start()
    barrier.wait()
    start = time.perf_counter()
    for w in workers:
        w.join()
    return time.perf_counter() - start


def measure_fma_peak(target: Target, threads: int = 1, seconds: float = 0.01, repeats: int = 10) -> PeakProbe:
    """The f32 FMA throughput of ``target`` (which must run here) on ``threads`` threads, in GFLOP/s: the best of
    ``repeats`` runs of about ``seconds`` each (short runs, so that on a busy machine some run undisturbed)."""
    lanes = target.lanes()
    registers = target.vector_registers or 16
    chains = max(_CHAINS_MIN, min(2 * _CHAINS_MIN, registers - 4))
    compiled = _Compiled(
        target,
        _fma_kernel_ir(lanes, chains, target.triple),
        "fma_loop",
        ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(ctypes.c_float)),
    )
    buffers = [(ctypes.c_float * 1)(1.0) for _ in range(threads)]
    iterations = 1_000
    while True:  # calibrate on one thread: about ``seconds`` per call
        start = time.perf_counter()
        compiled.function(iterations, buffers[0])
        if time.perf_counter() - start >= seconds / 4 or iterations > 1 << 40:
            break
        iterations *= 4
    calls = [functools.partial(compiled.function, iterations, b) for b in buffers]
    best = min(_run_threads(calls) for _ in range(repeats))
    flops = 2.0 * lanes * chains * iterations * threads
    return PeakProbe(flops / best / 1e9, threads, lanes, chains)


_ADD = '"addq $2, $0", "=r,0,r"'
"""x86 inline assembly adding its second operand to its first (tied) one."""


def measure_clock_ghz(target: Target, repeats: int = 15) -> float:
    """The core clock in GHz while busy: a chain of dependent 64-bit adds runs at one add per cycle (the best of
    ``repeats`` runs of a few milliseconds)."""
    text = "\n".join(
        [
            f'target triple = "{target.triple}"',
            "define i64 @add_chain(i64 %n, i64 %x) {",
            "entry:",
            "  br label %loop",
            "loop:",
            "  %i = phi i64 [0, %entry], [%i1, %loop]",
            "  %v = phi i64 [%x, %entry], [%v8, %loop]",
            # opaque to LLVM, so the chain is not folded into one multiply
            *(f"  %v{j + 1} = call i64 asm sideeffect {_ADD}(i64 %v{j or ''}, i64 %i)" for j in range(8)),
            "  %i1 = add i64 %i, 1",
            "  %more = icmp slt i64 %i1, %n",
            "  br i1 %more, label %loop, label %done",
            "done:",
            "  ret i64 %v8",
            "}",
        ]
    )
    llvm.initialize_native_asmparser()  # the inline assembly is parsed for the host
    compiled = _Compiled(target, text, "add_chain", ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64))
    iterations = 2_000_000
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        compiled.function(iterations, 1)
        best = min(best, time.perf_counter() - start)
    return 8.0 * iterations / best / 1e9
