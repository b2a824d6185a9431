"""The CPU backend: loop-level kernels compiled through LLVM (llvmlite) and JIT-run on numpy arrays.

``compile_module(module).run("kernel", *arrays)``: the emitter (:class:`LLVMEmitter`) turns kernels
into LLVM IR, :mod:`.jit` optimizes and loads them (each kernel's optimized code kept by
:mod:`.kernel_cache`, keyed by its content and the target), :mod:`.runtime` runs parallel loops on threads.
"""

from __future__ import annotations

from ...targets.target import NUM_THREADS_ENV
from .common import CompileError
from .emitter import KernelInfo, LLVMEmitter
from .jit import CompiledKernels, compile_module, host_target_machine, target_machine
from .kernel_cache import clear_kernel_cache, default_kernel_cache
from .runtime import thread_count

__all__ = [
    "NUM_THREADS_ENV",
    "CompileError",
    "CompiledKernels",
    "KernelInfo",
    "LLVMEmitter",
    "clear_kernel_cache",
    "compile_module",
    "default_kernel_cache",
    "host_target_machine",
    "target_machine",
    "thread_count",
]
