"""Tensorium's version, in a module of its own so that any layer can read it without importing the package root."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

__version__ = "0.1.0"


def source_digest(root: Path) -> str:
    """A digest of the Python files under ``root``: their relative paths, sizes and modification times."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


@functools.cache
def build_id() -> str:
    """The version and the :func:`source_digest` of the package, read once per process: what the cache of
    compiled artifacts is keyed by, so that a changed compiler (an edited source checkout, or a reinstall
    under the same version) never reuses an old entry."""
    return f"{__version__}+{source_digest(Path(__file__).resolve().parent)}"
