"""IREE, a real MLIR compiler, as a second reference: compile exported MLIR for the CPU (``llvm-cpu``)
and run it with ``iree-base-runtime`` (both in the ``mlir`` extra)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import TensoriumError
from .bindings import INSTALL_HINT, MlirBindingsError

FLAGS = ("--iree-llvmcpu-target-cpu=generic", "--iree-input-demote-f64-to-f32=false")
"""IREE compiler flags: code for any x86-64 CPU, and f64 kept as f64 (IREE demotes it to f32 by default)."""


class IreeError(TensoriumError):
    """IREE failed to compile or to run an exported module; the message carries IREE's own diagnostics."""


def available() -> bool:
    """Whether the IREE compiler and runtime packages are installed."""
    try:
        import iree.compiler
        import iree.runtime  # noqa: F401
    except ImportError:
        return False
    return True


def compile_text(text: str) -> bytes:
    """The IREE VM flatbuffer of upstream-MLIR ``text``, built for a generic x86-64 CPU (``llvm-cpu``)."""
    try:
        from iree.compiler import CompilerToolError, compile_str
    except ImportError as e:
        raise MlirBindingsError(f"the IREE compiler is missing ({e}); {INSTALL_HINT}") from None
    try:
        return bytes(compile_str(text, target_backends=["llvm-cpu"], extra_args=list(FLAGS)))
    except CompilerToolError as e:
        raise IreeError(f"IREE cannot compile the module: {_first_lines(str(e))}") from None


def run_text(text: str, inputs: Sequence[np.ndarray], func: str = "main") -> list[np.ndarray]:
    """Compile ``text`` with IREE and run its ``@func`` on ``inputs``; the results as numpy arrays."""
    return run_vmfb(compile_text(text), inputs, func)


def run_vmfb(vmfb: bytes, inputs: Sequence[np.ndarray], func: str = "main") -> list[np.ndarray]:
    """Run ``@func`` of a compiled IREE module on the CPU (``local-task``)."""
    try:
        import iree.runtime as rt
    except ImportError as e:
        raise MlirBindingsError(f"the IREE runtime is missing ({e}); {INSTALL_HINT}") from None
    context = rt.SystemContext(config=rt.Config("local-task"))
    context.add_vm_module(rt.VmModule.copy_buffer(context.instance, vmfb))
    try:
        results: Any = context.modules.module[func](*[np.array(x, order="C") for x in inputs])
    except (RuntimeError, ValueError) as e:
        raise IreeError(f"IREE failed to run @{func}: {_first_lines(str(e))}") from None
    if not isinstance(results, (list, tuple)):
        results = [results]
    arrays = []
    for n, r in enumerate(results):
        try:
            arrays.append(np.asarray(r.to_host() if hasattr(r, "to_host") else r))
        except ValueError as e:  # an element type IREE's runtime cannot hand to numpy (its i1 buffers, say)
            raise IreeError(f"IREE cannot return result #{n} of @{func} as a numpy array: {e}") from None
    return arrays


def _first_lines(text: str, count: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[:count])
