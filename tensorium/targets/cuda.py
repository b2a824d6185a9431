"""The NVIDIA GPU architectures the CUDA target compiles for: what each one's kernels may use.

The data behind ``cuda:sm_XX`` targets (see :mod:`tensorium.targets.target`): LLVM's NVPTX backend
writes PTX for ``sm_XX`` with the PTX ISA version given here, and ptxas (CUDA 13) assembles it; older
architectures (before Turing) are left out because current ptxas no longer accepts them.
"""

from __future__ import annotations

from dataclasses import dataclass

TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_ARCH = "sm_80"
"""The architecture of ``target="cuda"`` when no device can be asked (Ampere: what most data-centre GPUs run)."""
WARP = 32


@dataclass(frozen=True)
class Arch:
    """One GPU architecture: the PTX ISA version its code is written in and the limits of one block."""

    ptx: str
    shared_bytes: int
    """Static shared memory one block may allocate."""
    max_threads: int = 1024
    registers: int = 255
    """32-bit registers one thread may use."""


ARCHS: dict[str, Arch] = {
    "sm_75": Arch("ptx80", 48 * 1024),
    "sm_80": Arch("ptx80", 48 * 1024),
    "sm_86": Arch("ptx80", 48 * 1024),
    "sm_89": Arch("ptx80", 48 * 1024),
    "sm_90": Arch("ptx80", 48 * 1024),
    "sm_100": Arch("ptx86", 48 * 1024),
    "sm_120": Arch("ptx87", 48 * 1024),
}
"""Supported architectures by name (Turing, Ampere, Ada, Hopper, Blackwell)."""


def device_arch() -> str | None:
    """The architecture of GPU 0 as ``sm_XX`` when a CUDA driver and device answer, else None."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return None
    try:
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        err, device = driver.cuDeviceGet(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        attr = driver.CUdevice_attribute
        err, major = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
        err2, minor = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
    except Exception:  # a broken driver install raises from inside the bindings; the answer is "no device"
        return None
    if err != driver.CUresult.CUDA_SUCCESS or err2 != driver.CUresult.CUDA_SUCCESS:
        return None
    return f"sm_{major}{minor}"
