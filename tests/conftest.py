"""Test-session setup: compiled models and kernels are cached in a folder of the session, never the user's."""

from __future__ import annotations

import os
import tempfile

import pytest

from tensorium.targets import parse_target


def pytest_configure(config: pytest.Config) -> None:
    if "TENSORIUM_CACHE_DIR" not in os.environ:
        os.environ["TENSORIUM_CACHE_DIR"] = tempfile.mkdtemp(prefix="tensorium-test-cache-")


@pytest.fixture(scope="session")
def gpu() -> None:
    """Skip unless wgpu-py and a WebGPU adapter (Mesa's lavapipe on a CPU machine) are here."""
    pytest.importorskip("wgpu", reason="wgpu-py is not installed (pip install 'tensorium[webgpu]')")
    from tensorium.backends.webgpu.device import WebGPUUnavailable, device_for

    try:
        device_for(parse_target("webgpu"))
    except WebGPUUnavailable as e:
        pytest.skip(f"no WebGPU adapter: {e} (install mesa-vulkan-drivers)")
