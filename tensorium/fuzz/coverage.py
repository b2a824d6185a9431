"""Coverage of Tensorium's own Python code, measured in the process that runs a pipeline.

The fuzzer keeps an input when it makes the compiler execute something new. "Something" is an *edge*:
a pair of consecutive lines executed in one function (line ``a`` then line ``b``), which tells the two
sides of a branch apart where plain line coverage does not, as branch coverage in coverage.py and AFL's
edge counters do. The tracer is a ``sys.settrace`` hook that ignores frames outside the measured
package, so numpy, llvmlite and the fuzzer's own code cost one dictionary lookup per call, and samples
the calls of functions that have stopped showing new edges (``SATURATED_AFTER``). Only the thread that
calls :meth:`CoverageTracer.start` is traced.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

SATURATED_AFTER = 256
SATURATED_SAMPLING = 16
"""A function whose last ``SATURATED_AFTER`` traced calls showed no new edge is traced on one call in
``SATURATED_SAMPLING`` only: hot functions (the verifier, the printer, the parser) stop costing a trace
callback per line once they have nothing new to show, and a new edge puts them back on every call."""

Edge = tuple[CodeType, int, int]
"""(function, line before, line after); the line before a function's first line is minus its def line."""

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
EXCLUDED = ("fuzz",)
"""Sub-packages whose code does not count: the fuzzer must not reward itself for running its own code."""


class CoverageTracer:
    """Collects the edges executed in a package's files while started; use as a context manager.

    ``total`` holds every edge seen so far; :meth:`commit` adds the edges of the latest run (since the last
    commit) to it and says how many were new, which tells whether a run reached code no earlier run did.
    """

    def __init__(self, root: Path = PACKAGE_ROOT, excluded: Iterable[str] = EXCLUDED):
        self.root = str(root) + os.sep
        self.excluded = tuple(str(root / name) + os.sep for name in excluded)
        self.total: set[Edge] = set()
        self._current: set[Edge] = set()
        self._wanted: dict[CodeType, bool] = {}
        self._calls: dict[CodeType, list[int]] = {}
        """Per function: [calls traced so far, the call count when it last showed a new edge]."""
        self._previous: Any = None
        self._running = False

    # tracing -------------------------------------------------------------------------------------
    def _want(self, code: CodeType) -> bool:
        name = code.co_filename
        wanted = name.startswith(self.root) and not name.startswith(self.excluded)
        self._wanted[code] = wanted
        return wanted

    def _on_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        code = frame.f_code
        wanted = self._wanted.get(code)
        if wanted is None:
            wanted = self._want(code)
        if not wanted:
            return None
        calls = self._calls.get(code)
        if calls is None:
            calls = self._calls[code] = [0, 0]
        calls[0] += 1
        if calls[0] - calls[1] > SATURATED_AFTER and calls[0] % SATURATED_SAMPLING:
            return None
        edges = self._current
        last = -code.co_firstlineno

        def on_line(frame: FrameType, event: str, arg: Any) -> Any:
            nonlocal last
            if event == "line":
                line = frame.f_lineno
                edges.add((code, last, line))
                last = line
            return on_line

        return on_line

    def start(self) -> None:
        """Trace this thread from now on (the trace function set before is restored by :meth:`stop`)."""
        if self._running:
            return
        self._previous = sys.gettrace()
        sys.settrace(self._on_call)
        self._running = True

    def stop(self) -> None:
        """Stop tracing."""
        if self._running:
            sys.settrace(self._previous)
            self._running = False

    def __enter__(self) -> CoverageTracer:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # results -------------------------------------------------------------------------------------
    def commit(self) -> int:
        """Add the edges executed since the last commit to ``total``; returns how many of them are new."""
        new = self._current - self.total
        self.total |= new
        self._current.clear()
        for code, _, _ in new:
            calls = self._calls[code]
            calls[1] = calls[0]
        return len(new)

    def lines(self) -> set[tuple[str, int]]:
        """Every (file, line) executed so far."""
        return {(code.co_filename, line) for code, _, line in self.total}

    def line_percent(self) -> float:
        """Executed lines as a percentage of the executable lines of the measured package."""
        return line_percent(self.lines(), Path(self.root), self.excluded)

    def portable_edges(self) -> set[tuple[str, int, str, int, int]]:
        """``total`` with each function named by (file, first line, name): comparable across processes."""
        return {(code.co_filename, code.co_firstlineno, code.co_name, a, b) for code, a, b in self.total}


def line_percent(
    lines: set[tuple[str, int]], root: Path = PACKAGE_ROOT, excluded: tuple[str, ...] | None = None
) -> float:
    """``lines`` (file, line) as a percentage of the executable lines of the package at ``root``."""
    skip = excluded if excluded is not None else tuple(str(root / name) + os.sep for name in EXCLUDED)
    total = executable_lines(root, skip)
    return 100.0 * len(lines & total) / len(total) if total else 0.0


_EXECUTABLE: dict[tuple[str, tuple[str, ...]], set[tuple[str, int]]] = {}


def executable_lines(root: Path, excluded: tuple[str, ...] = ()) -> set[tuple[str, int]]:
    """Every (file, line) in a function body of the package at ``root`` (compiled, not imported)."""
    key = (str(root), excluded)
    if key not in _EXECUTABLE:
        found: set[tuple[str, int]] = set()
        for path in sorted(root.rglob("*.py")):
            name = str(path)
            if name.startswith(excluded):
                continue
            code = compile(path.read_text(encoding="utf-8"), name, "exec", dont_inherit=True)
            found.update((name, line) for line in _code_lines(code))
        _EXECUTABLE[key] = found
    return _EXECUTABLE[key]


def _code_lines(code: CodeType) -> Iterator[int]:
    """Lines of the functions in ``code`` (module and class bodies run at import, never under the fuzzer)."""
    if code.co_flags & inspect.CO_OPTIMIZED:
        for _, _, line in code.co_lines():
            if line is not None and line > 0 and line != code.co_firstlineno:
                yield line
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _code_lines(const)
