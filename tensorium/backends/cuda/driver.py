"""The few CUDA driver API calls the CUDA executable makes (through cuda-bindings, the ``cuda`` extra).

Every call goes through :func:`call`, which turns a failing status (or a missing driver library, or a
missing cuda-bindings) into one :class:`CudaUnavailable` error saying what failed, so that running without a
GPU gives one clear message; importing this module needs neither the bindings nor a driver.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import TensoriumError

EXTRA_HINT = "pip install 'tensorium[cuda]'"
COMPILING_WORKS = (
    "; compiling needs none: CompiledModel.save() or `tensorium compile -t cuda` keeps the PTX (and cubin)"
)


class CudaUnavailable(TensoriumError):
    """Running CUDA code needs an NVIDIA GPU, its driver and cuda-bindings; one of them is missing here."""


def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError:
        raise CudaUnavailable(
            f"running CUDA code needs cuda-bindings ({EXTRA_HINT}) and an NVIDIA GPU{COMPILING_WORKS}"
        ) from None
    return driver


def call(name: str, *args: Any) -> Any:
    """``cuda.bindings.driver.<name>(*args)``: its results after the status, or CudaUnavailable naming the call."""
    driver = _driver()
    try:
        status, *results = getattr(driver, name)(*args)
    except RuntimeError as e:  # the bindings raise when libcuda cannot be loaded at all
        raise CudaUnavailable(
            f"running CUDA code needs an NVIDIA GPU and its driver: {name} failed ({e}){COMPILING_WORKS}"
        ) from None
    if status != driver.CUresult.CUDA_SUCCESS:
        _, text = driver.cuGetErrorName(status)
        what = text.decode() if isinstance(text, bytes) else str(status)
        raise CudaUnavailable(
            f"running CUDA code needs an NVIDIA GPU and its driver: {name} failed with {what}{COMPILING_WORKS}"
        )
    if not results:
        return None
    return results[0] if len(results) == 1 else tuple(results)


class Device:
    """GPU 0 with a context of its own, the PTX module loaded, and device memory helpers."""

    def __init__(self, ptx: str, kernels: Sequence[str]) -> None:
        call("cuInit", 0)
        self.device = call("cuDeviceGet", 0)
        self.context = call("cuDevicePrimaryCtxRetain", self.device)
        call("cuCtxSetCurrent", self.context)
        self.module = call("cuModuleLoadData", ptx.encode() + b"\0")
        self.functions = {name: call("cuModuleGetFunction", self.module, name.encode()) for name in kernels}
        self.stream = call("cuStreamCreate", 0)

    def alloc(self, nbytes: int) -> int:
        """Device memory of ``nbytes`` (at least one byte); its address."""
        return int(call("cuMemAlloc", max(1, nbytes)))

    def free(self, pointer: int) -> None:
        call("cuMemFree", pointer)

    def upload(self, pointer: int, array: np.ndarray) -> None:
        if array.nbytes:
            call("cuMemcpyHtoDAsync", pointer, np.ascontiguousarray(array).ctypes.data, array.nbytes, self.stream)

    def download(self, array: np.ndarray, pointer: int) -> None:
        if array.nbytes:
            call("cuMemcpyDtoHAsync", array.ctypes.data, pointer, array.nbytes, self.stream)

    def copy(self, destination: int, source: int, nbytes: int) -> None:
        """Copy ``nbytes`` between two device addresses on the stream."""
        if nbytes:
            call("cuMemcpyDtoDAsync", destination, source, nbytes, self.stream)

    def launch(self, name: str, grid: Sequence[int], block: Sequence[int], args: Sequence[ctypes._SimpleCData]) -> None:
        """Launch kernel ``name`` on the stream; ``args`` are its parameters as ctypes values, in order."""
        pointers = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.addressof(a) for a in args])
        call("cuLaunchKernel", self.functions[name], *grid, *block, 0, self.stream, ctypes.addressof(pointers), 0)

    def synchronize(self) -> None:
        call("cuStreamSynchronize", self.stream)

    def elapsed(self, work: Callable[[], None]) -> float:
        """Seconds the GPU spent on what ``work`` enqueues on the stream (between two CUDA events)."""
        start, end = call("cuEventCreate", 0), call("cuEventCreate", 0)
        call("cuEventRecord", start, self.stream)
        work()
        call("cuEventRecord", end, self.stream)
        call("cuEventSynchronize", end)
        milliseconds = call("cuEventElapsedTime", start, end)
        call("cuEventDestroy", start)
        call("cuEventDestroy", end)
        return float(milliseconds) / 1000
