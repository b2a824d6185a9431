"""The kernel cache: each kernel's optimized LLVM bitcode, keyed by its content and the target.

Identical kernels (the same emitted LLVM IR up to the kernel's name) are optimized once across models and
processes. The key is the sha256 of the kernel's LLVM IR with its symbol replaced by
:data:`PLACEHOLDER` (:func:`normalize`), the target's :meth:`~tensorium.targets.Target.key`, the
optimization level, the compiler's own pipeline version (``salt``), the llvmlite and LLVM versions and
the Tensorium version (:func:`kernel_key`).

The object code linked from a list of kernels is kept too (:func:`object_key`, ``<key>.o``), so compiling
the same model again (its model cache off, or in another process) skips code generation as well.

Entries live in memory (the :data:`MEMORY_ENTRIES` most recently used) and on disk as
``<root>/kernels/<key>.bc`` and ``<key>.o``, where ``<root>`` is the compile cache's folder (``$TENSORIUM_CACHE_DIR``,
else ``$XDG_CACHE_HOME/tensorium``, else ``~/.cache/tensorium``). A file holds :data:`MAGIC`, the
sha256 of the code and the code; it is written to a temporary file and renamed into place, so
readers never see half an entry. A corrupt or unreadable entry is deleted with one warning naming the
file and rebuilt; a missing or read-only folder only turns the disk layer off (one warning per folder).

``TENSORIUM_KERNEL_CACHE=0`` (or ``off``, ``false``, ``no``) turns the cache off, ``compile_module(...,
kernel_cache=False)`` too; :func:`clear_kernel_cache` empties it. :attr:`KernelCache.stats` counts hits and
misses, for tests and benchmarks.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import llvmlite
from llvmlite import binding as llvm

from ...paths import cache_dir
from ...targets import Target

__all__ = [
    "KERNEL",
    "KERNEL_CACHE_ENV",
    "MAGIC",
    "MEMORY_ENTRIES",
    "OBJECT",
    "PLACEHOLDER",
    "KernelCache",
    "KernelCacheStats",
    "cache_root",
    "clear_kernel_cache",
    "default_kernel_cache",
    "kernel_cache_enabled",
    "kernel_key",
    "normalize",
    "object_key",
]

KERNEL_CACHE_ENV = "TENSORIUM_KERNEL_CACHE"
"""Set to ``0``, ``off``, ``false`` or ``no`` to compile every kernel afresh (read at each compilation)."""

MEMORY_ENTRIES = 1024
"""How many kernels the in-memory layer keeps (least recently used ones are dropped first)."""

MAGIC = b"tensorium-kernel-bitcode 1\n"
"""The first bytes of a disk entry; the sha256 of the bitcode (32 bytes) follows, then the bitcode."""

PLACEHOLDER = "tensorium.cached_kernel"
"""The symbol a kernel's own name is replaced by in cached code (its outlined functions keep their
suffixes: ``tensorium.cached_kernel.parallel.1``); renamed back to the kernel's symbol when linked."""

FORMAT = 1
"""Bumped when what an entry holds changes meaning."""

KERNEL = ".bc"
"""The suffix of a kernel's entry: its optimized bitcode."""

OBJECT = ".o"
"""The suffix of a linked module's entry: the object code of a list of kernels (:func:`object_key`)."""


def cache_root() -> Path:
    """The compile cache's root folder (:func:`tensorium.paths.cache_dir`); kernels live in its ``kernels/``."""
    return cache_dir()


def kernel_cache_enabled() -> bool:
    """False when ``TENSORIUM_KERNEL_CACHE`` turns the kernel cache off."""
    return os.environ.get(KERNEL_CACHE_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def normalize(llvm_ir: str, symbol: str) -> str:
    """``llvm_ir`` (one kernel's module as llvmlite prints it) with the kernel's ``symbol`` replaced by
    :data:`PLACEHOLDER` and its module name line dropped, so that a kernel's text does not depend on its
    name in the model."""
    lines = llvm_ir.split("\n", 1)
    body = lines[1] if len(lines) > 1 and lines[0].startswith("; ModuleID") else llvm_ir
    return body.replace(f'@"{symbol}"', f'@"{PLACEHOLDER}"').replace(f'@"{symbol}.', f'@"{PLACEHOLDER}.')


def kernel_key(normalized_ir: str, target: Target, opt_level: int, salt: str = "") -> str:
    """The hex sha256 naming one kernel's optimized code: its :func:`normalize`-d LLVM IR, the target's key,
    the optimization level, ``salt`` (the compiler's description of its pipeline) and the versions of
    Tensorium, llvmlite and LLVM."""
    from ...version import __version__

    header = json.dumps(
        {
            "format": FORMAT,
            "tensorium": __version__,
            "llvmlite": llvmlite.__version__,
            "llvm": list(llvm.llvm_version_info),
            "target": target.key(),
            "opt_level": opt_level,
            "salt": salt,
        },
        sort_keys=True,
    )
    return hashlib.sha256((header + "\n" + normalized_ir).encode("utf-8")).hexdigest()


def object_key(parts: list[tuple[str, str, int]], triple: str, data_layout: str) -> str:
    """The hex sha256 naming the object code of kernels linked in order: ``parts`` lists each kernel's
    symbol, :func:`kernel_key` (which covers the target, the optimization level and the versions) and the
    number of run-time checks before it."""
    header = json.dumps({"format": FORMAT, "triple": triple, "data_layout": data_layout, "kernels": parts})
    return hashlib.sha256(header.encode("utf-8")).hexdigest()


@dataclass
class KernelCacheStats:
    """What a kernel cache did: hits in memory and on disk, misses, disk writes and corrupt entries dropped."""

    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    stores: int = 0
    corrupt: int = 0
    object_hits: int = 0
    """Linked object code found (the same kernels linked in the same order before: no code generation)."""
    object_misses: int = 0

    @property
    def hits(self) -> int:
        """Hits in either layer."""
        return self.memory_hits + self.disk_hits


class KernelCache:
    """Optimized kernel code by key, in memory and in a folder (``directory``; default: ``<root>/kernels``
    under :func:`cache_root`, read at each access). The memory layer mirrors the folder: its entries are
    named by their file, so a new folder (a new ``TENSORIUM_CACHE_DIR``) starts empty. Thread-safe: kernels
    are optimized on a thread pool."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, memory_entries: int = MEMORY_ENTRIES) -> None:
        self._directory = Path(directory) if directory is not None else None
        self.memory_entries = memory_entries
        self.stats = KernelCacheStats()
        self._memory: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self._unwritable: set[Path] = set()

    @property
    def directory(self) -> Path:
        """The folder of the disk layer."""
        return self._directory if self._directory is not None else cache_root() / "kernels"

    def path(self, key: str, suffix: str = KERNEL) -> Path:
        """The disk entry of ``key`` (``suffix``: :data:`KERNEL` for a kernel's bitcode, :data:`OBJECT` for the
        object code linked from several)."""
        return self.directory / f"{key}{suffix}"

    def lookup(self, key: str, suffix: str = KERNEL, disk: bool = True) -> bytes | None:
        """The code stored under ``key`` (memory first, then disk), or None (a miss, counted)."""
        kernel = suffix == KERNEL
        path = self.path(key, suffix)
        with self._lock:
            found = self._memory.get(str(path))
            if found is not None:
                self._memory.move_to_end(str(path))
                if kernel:
                    self.stats.memory_hits += 1
                else:
                    self.stats.object_hits += 1
                return found
        code = self._read(path) if disk else None
        with self._lock:
            if code is None:
                if kernel:
                    self.stats.misses += 1
                else:
                    self.stats.object_misses += 1
                return None
            if kernel:
                self.stats.disk_hits += 1
            else:
                self.stats.object_hits += 1
            self._remember(str(path), code)
        return code

    def store(self, key: str, code: bytes, suffix: str = KERNEL, disk: bool = True) -> None:
        """Keep ``code`` under ``key`` in memory and, with ``disk``, in the folder (failures never raise)."""
        path = self.path(key, suffix)
        with self._lock:
            self._remember(str(path), code)
        if disk and self._write(path, code) and suffix == KERNEL:
            with self._lock:
                self.stats.stores += 1

    def clear(self, disk: bool = True) -> None:
        """Forget every entry in memory and, with ``disk``, delete the folder's entries (errors ignored)."""
        with self._lock:
            self._memory.clear()
        if not disk:
            return
        try:
            entries = [*self.directory.glob(f"*{KERNEL}"), *self.directory.glob(f"*{OBJECT}")]
        except OSError:
            return
        for entry in entries:
            try:
                entry.unlink()
            except OSError:
                pass

    def reset_stats(self) -> None:
        """Start counting hits and misses from zero."""
        with self._lock:
            self.stats = KernelCacheStats()

    def _remember(self, key: str, code: bytes) -> None:
        self._memory[key] = code
        self._memory.move_to_end(key)
        while len(self._memory) > self.memory_entries:
            self._memory.popitem(last=False)

    def _read(self, path: Path) -> bytes | None:
        """The bitcode in ``path``; None when there is none, or (with a warning, the file deleted) when the
        entry is corrupt or cannot be read."""
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            self._corrupt(path, f"unreadable: {e}")
            return None
        digest, code = data[len(MAGIC) : len(MAGIC) + 32], data[len(MAGIC) + 32 :]
        if not data.startswith(MAGIC):
            self._corrupt(path, "not a kernel cache entry")
            return None
        if hashlib.sha256(code).digest() != digest:
            self._corrupt(path, "its checksum does not match")
            return None
        return code

    def _corrupt(self, path: Path, why: str) -> None:
        with self._lock:
            self.stats.corrupt += 1
        warnings.warn(f"tensorium: ignoring corrupt kernel cache entry {path} ({why}); rebuilding it", stacklevel=4)
        try:
            path.unlink()
        except OSError:
            pass

    def _write(self, path: Path, code: bytes) -> bool:
        """Write an entry atomically (a temporary file renamed into place); False when the folder cannot be
        written (warned about once per folder)."""
        folder = path.parent
        if folder in self._unwritable:
            return False
        temp = None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".bc", dir=folder)
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + hashlib.sha256(code).digest() + code)
            os.replace(temp, path)
            return True
        except OSError as e:
            if temp is not None:
                try:
                    os.unlink(temp)
                except OSError:
                    pass
            with self._lock:
                first = folder not in self._unwritable
                self._unwritable.add(folder)
            if first:
                warnings.warn(
                    f"tensorium: cannot write the kernel cache in {folder} ({e}); kernels are compiled without it",
                    stacklevel=4,
                )
            return False


_DEFAULT = KernelCache()


def default_kernel_cache() -> KernelCache:
    """The process's kernel cache, the one :func:`~tensorium.backends.llvm.compile_module` uses by default."""
    return _DEFAULT


def clear_kernel_cache(disk: bool = True) -> None:
    """Empty the process's kernel cache: memory, and with ``disk`` the entries of its current folder."""
    _DEFAULT.clear(disk)
