"""Corpus sharing between fuzzing workers through a folder, as AFL's ``-M``/``-S`` instances sync.

Every worker owns ``ROOT/worker-k/``: each seed that joins its corpus is written there as a case file
(``000001.mlir``, ``000002.mlir``, ...; written to a temporary name and renamed, so a reader never sees
half a file). Every few seconds a worker reads the files of the other workers that it has not read yet
and runs them as its own executions: those that reach code new *to it* join its corpus (and are not
published again), so a program one worker found interesting is mutated by all of them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import TensoriumError
from .oracle import FuzzCase
from .reduce import format_case, read_case

SUFFIX = ".mlir"


class CorpusSync:
    """Worker ``worker``'s view of the shared folder ``root``: :meth:`publish` its seeds, :meth:`poll` the
    others'."""

    def __init__(self, root: Path, worker: int):
        self.root = root
        self.worker = worker
        self.own = root / f"worker-{worker}"
        self.own.mkdir(parents=True, exist_ok=True)
        self.published = 0
        self._read: set[Path] = set()

    def publish(self, case: FuzzCase, note: str = "") -> Path:
        """Write ``case`` for the other workers; returns its file."""
        self.published += 1
        path = self.own / f"{self.published:06d}{SUFFIX}"
        handle, temporary = tempfile.mkstemp(dir=self.own, prefix=".writing-")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(format_case(case, note=note or f"shared by worker {self.worker}"))
        os.replace(temporary, path)
        return path

    def poll(self) -> list[FuzzCase]:
        """The cases the other workers published since the last poll, oldest first per worker (a file
        that cannot be read as a case is skipped, once)."""
        found: list[FuzzCase] = []
        for folder in sorted(self.root.glob("worker-*")):
            if folder == self.own or not folder.is_dir():
                continue
            for path in sorted(folder.glob(f"*{SUFFIX}")):
                if path in self._read:
                    continue
                self._read.add(path)
                try:
                    found.append(read_case(path))
                except (OSError, TensoriumError):
                    continue
        return found
