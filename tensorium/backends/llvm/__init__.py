"""The CPU backend: loop-level kernels compiled through LLVM (llvmlite) and JIT-run on numpy arrays.

``compile_module(module).run("kernel", *arrays)``: the emitter (:class:`LLVMEmitter`) turns kernels
into LLVM IR, :mod:`.jit` optimizes and loads them, :mod:`.runtime` runs parallel loops on threads.
"""

from __future__ import annotations

from .common import CompileError
from .emitter import KernelInfo, LLVMEmitter
from .jit import CompiledKernels, compile_module, host_target_machine, runs_here, target_machine
from .runtime import NUM_THREADS_ENV, thread_count

__all__ = [
    "NUM_THREADS_ENV",
    "CompileError",
    "CompiledKernels",
    "KernelInfo",
    "LLVMEmitter",
    "compile_module",
    "host_target_machine",
    "runs_here",
    "target_machine",
    "thread_count",
]
