"""Fixtures of the WebGPU tests: a device through wgpu-py (skipped, saying why, where there is none)."""

from __future__ import annotations

import pytest

from tensorium.targets import parse_target


@pytest.fixture(scope="session")
def gpu() -> None:
    """Skip unless wgpu-py and a WebGPU adapter (Mesa's lavapipe on a CPU machine) are here."""
    pytest.importorskip("wgpu", reason="wgpu-py is not installed (pip install 'tensorium[webgpu]')")
    from tensorium.backends.webgpu.device import WebGPUUnavailable, device_for

    try:
        device_for(parse_target("webgpu"))
    except WebGPUUnavailable as e:
        pytest.skip(f"no WebGPU adapter: {e} (install mesa-vulkan-drivers)")
