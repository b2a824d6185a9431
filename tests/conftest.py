"""Test-session setup: compiled models and kernels are cached in a folder of the session, never the user's."""

from __future__ import annotations

import os
import tempfile

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if "TENSORIUM_CACHE_DIR" not in os.environ:
        os.environ["TENSORIUM_CACHE_DIR"] = tempfile.mkdtemp(prefix="tensorium-test-cache-")
