"""Every api test gets its own on-disk cache folder and an empty in-memory cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tensorium.runtime import cache


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TENSORIUM_CACHE_DIR", str(folder))
    cache.clear_memory()
    yield folder
    cache.clear_memory()
