"""Where Tensorium keeps files on disk: the one rule both the compiled-model cache and the kernel cache use."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """The on-disk cache folder (read from the environment at each call): ``$TENSORIUM_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/tensorium``, else ``~/.cache/tensorium``."""
    explicit = os.environ.get("TENSORIUM_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "tensorium"
