"""Which executable class each target kind compiles to: the one place the runtime names a backend.

A target kind without an entry (``interp``) runs the graph module in the reference interpreter. A new
target (CUDA, WebGPU) adds its executable class here; the class implements
:class:`~tensorium.runtime.executable.Executable` and :class:`~tensorium.runtime.executable.ExecutableKind`.
Backends are imported when an executable of their kind is first built or loaded, so ``import tensorium``
does not load LLVM.
"""

from __future__ import annotations

from .executable import ExecutableKind

__all__ = ["executable_kind"]


def executable_kind(kind: str) -> ExecutableKind | None:
    """The executable class of target kind ``kind``, or None when that kind runs in the interpreter."""
    if kind == "cpu":
        from ..backends.cpu import CpuExecutable

        return CpuExecutable
    if kind == "webgpu":
        from ..backends.webgpu import WebGPUExecutable

        return WebGPUExecutable
    if kind == "cuda":
        from ..backends.cuda.executable import CudaExecutable

        return CudaExecutable
    return None
