"""The WebGPU device the Python runtime runs on: wgpu-py's adapter (Vulkan, e.g. Mesa's lavapipe on a CPU).

One device per process and target, asked for the Target's limits and features; an adapter that lacks
one is a :class:`WebGPUUnavailable` error naming it.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from ...errors import TensoriumError
from ...targets import Target
from ...targets.webgpu import DEFAULT_LIMITS


class WebGPUUnavailable(TensoriumError):
    """No WebGPU here (wgpu-py missing, no adapter), or an adapter without a limit or feature the target needs."""


def wgpu_module() -> Any:
    """The ``wgpu`` package; WebGPUUnavailable when it is not installed."""
    try:
        import wgpu
    except ImportError:
        raise WebGPUUnavailable(
            "the WebGPU runtime needs wgpu-py: pip install 'tensorium[webgpu]' (and a Vulkan driver such as "
            "Debian's mesa-vulkan-drivers)"
        ) from None
    return wgpu


@functools.cache
def _adapter() -> Any:
    wgpu = wgpu_module()
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # silences the Vulkan loader's complaint on headless machines
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as e:  # wgpu raises its own errors when no Vulkan, Metal or D3D12 driver answers
        raise WebGPUUnavailable(f"no WebGPU adapter: {e}") from None
    if adapter is None:
        raise WebGPUUnavailable("no WebGPU adapter (install a Vulkan driver, e.g. Debian's mesa-vulkan-drivers)")
    return adapter


def adapter_description() -> str:
    """The adapter as one line (``llvmpipe (LLVM 15.0.6, 256 bits), Vulkan``)."""
    info = _adapter().info
    return f"{info.get('device', '?')}, {info.get('backend_type', '?')}"


@functools.cache
def device_for(target: Target) -> Any:
    """A device with ``target``'s limits and features; WebGPUUnavailable naming what the adapter lacks."""
    adapter = _adapter()
    required: dict[str, int] = {}
    for name, value in target.limits:
        key = name.replace("_", "-")
        offered = adapter.limits.get(key)
        if offered is None:
            continue
        better = offered >= value if name.startswith("max") else offered <= value
        if not better:
            raise WebGPUUnavailable(
                f"the WebGPU adapter offers {name} = {offered}, but target '{target}' needs {value}"
            )
        if value > DEFAULT_LIMITS.get(name, value):
            required[key] = value  # lower limits are the compiler's own business; a device has at least the defaults
    missing = [f for f in target.features if f not in adapter.features]
    if missing:
        raise WebGPUUnavailable(f"the WebGPU adapter lacks the feature {missing[0]} that target '{target}' needs")
    return adapter.request_device_sync(required_features=list(target.features), required_limits=required)
