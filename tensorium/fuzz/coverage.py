"""Coverage of Tensorium's own Python code, measured in the process that runs a pipeline.

The fuzzer keeps an input when it makes the compiler execute something new. "Something" is an *edge*,
``(file, a, b)``: control passed from line ``a`` to line ``b`` of one file, which tells the two sides of a
branch apart where plain line coverage does not, as branch coverage in coverage.py and AFL's edge
counters do. Files outside the measured package (numpy, llvmlite) and the fuzzer's own code do not count.

Three tracers record edges, the cheapest one the interpreter offers chosen by :func:`make_tracer`:

- ``monitoring`` (Python 3.12+): ``sys.monitoring`` line and branch events. Each event location reports
  once and is then disabled, so code that has shown everything it has costs nothing afterwards. Edges are
  the branches taken (from the branch's line to the line it went to) and ``(file, 0, line)`` for each line.
- ``ctracer``: coverage.py's tracer written in C (the ``fuzz`` extra), recording line pairs (arcs) within a
  function, the entry into a function as ``(-def line, first line)`` and the return as ``(line, -def line)``.
- ``settrace``: the same pairs in pure Python through ``sys.settrace``, used when neither is there; it
  costs a Python call per line and per call of any function, and samples the calls of functions that have
  stopped showing new edges (``SATURATED_AFTER``).

The ``settrace`` and ``ctracer`` tracers see only the thread that calls :meth:`CoverageTracer.start`, between
start and stop; ``monitoring`` is process-wide (the CPU backend's compile threads count too) and keeps
recording between runs (see :class:`MonitoringTracer`).
"""

from __future__ import annotations

import bisect
import hashlib
import inspect
import json
import os
import sys
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from ..paths import cache_dir

SATURATED_AFTER = 256
SATURATED_SAMPLING = 16
"""(``settrace`` only) A function whose last ``SATURATED_AFTER`` traced calls showed no new edge is traced on
one call in ``SATURATED_SAMPLING`` only: hot functions (the verifier, the printer, the parser) stop costing a
trace callback per line once they have nothing new to show, and a new edge puts them back on every call."""

Edge = tuple[str, int, int]
"""(file, line before, line after); see the module docstring for what each tracer records."""

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
EXCLUDED = ("fuzz",)
"""Sub-packages whose code does not count: the fuzzer must not reward itself for running its own code."""


class CoverageTracer(ABC):
    """Collects the edges executed in a package's files while started; use as a context manager.

    ``total`` holds every edge seen so far; :meth:`commit` adds the edges of the latest run (since the last
    commit) to it and says how many were new, which tells whether a run reached code no earlier run did.
    Subclasses say how edges are recorded (:meth:`_begin`, :meth:`_end`, :meth:`_take`).
    """

    kind = ""
    """The name :func:`make_tracer` knows this tracer by."""

    def __init__(self, root: Path = PACKAGE_ROOT, excluded: Iterable[str] = EXCLUDED):
        self.root = str(root) + os.sep
        self.excluded = tuple(str(root / name) + os.sep for name in excluded)
        self.total: set[Edge] = set()
        self._running = False

    def wants(self, filename: str) -> bool:
        """True for a file of the measured package outside the excluded sub-packages."""
        return filename.startswith(self.root) and not filename.startswith(self.excluded)

    @property
    def running(self) -> bool:
        """Whether the tracer is started (between :meth:`start` and :meth:`stop`)."""
        return self._running

    def start(self) -> None:
        """Trace from now on (a tracer that was already running stays as it is)."""
        if not self._running:
            self._begin()
            self._running = True

    def stop(self) -> None:
        """Stop tracing; whatever trace function was set before :meth:`start` is set again."""
        if self._running:
            self._end()
            self._running = False

    def __enter__(self) -> CoverageTracer:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def commit(self) -> int:
        """Add the edges executed since the last commit to ``total``; returns how many of them are new."""
        new = self._take() - self.total
        self.total |= new
        return len(new)

    def lines(self) -> set[tuple[str, int]]:
        """Every (file, line) executed so far."""
        return {(name, line) for name, _, line in self.total if line > 0}

    def line_percent(self) -> float:
        """Executed lines as a percentage of the executable lines of the measured package."""
        return line_percent(self.lines(), Path(self.root), self.excluded)

    def portable_edges(self) -> set[Edge]:
        """``total``, comparable across processes that run the same checkout."""
        return set(self.total)

    # what subclasses provide ---------------------------------------------------------------------
    @abstractmethod
    def _begin(self) -> None:
        """Start recording."""

    @abstractmethod
    def _end(self) -> None:
        """Stop recording and set the trace function there was before."""

    @abstractmethod
    def _take(self) -> set[Edge]:
        """The edges recorded since the last call, which forgets them."""


class SettraceTracer(CoverageTracer):
    """Line pairs through a ``sys.settrace`` hook written in Python, which ignores frames outside the
    measured package (one dictionary lookup per call) and samples saturated functions."""

    kind = "settrace"

    def __init__(self, root: Path = PACKAGE_ROOT, excluded: Iterable[str] = EXCLUDED):
        super().__init__(root, excluded)
        self._current: dict[CodeType, set[tuple[int, int]]] = {}
        """Per function, the (line before, line after) pairs of the current run."""
        self._wanted: dict[CodeType, bool] = {}
        self._calls: dict[CodeType, list[int]] = {}
        """Per function: [calls traced so far, the call count when it last showed a new edge]."""
        self._previous: Any = None

    def _on_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        code = frame.f_code
        wanted = self._wanted.get(code)
        if wanted is None:
            wanted = self._wanted[code] = self.wants(code.co_filename)
        if not wanted:
            return None
        calls = self._calls.get(code)
        if calls is None:
            calls = self._calls[code] = [0, 0]
        calls[0] += 1
        if calls[0] - calls[1] > SATURATED_AFTER and calls[0] % SATURATED_SAMPLING:
            return None
        pairs = self._current.get(code)
        if pairs is None:
            pairs = self._current[code] = set()
        last = -code.co_firstlineno

        def on_line(frame: FrameType, event: str, arg: Any) -> Any:
            nonlocal last
            if event == "line":
                line = frame.f_lineno
                pairs.add((last, line))
                last = line
            return on_line

        return on_line

    def _begin(self) -> None:
        self._previous = sys.gettrace()
        sys.settrace(self._on_call)

    def _end(self) -> None:
        sys.settrace(self._previous)

    def _take(self) -> set[Edge]:
        taken, self._current = self._current, {}
        return {(code.co_filename, a, b) for code, pairs in taken.items() for a, b in pairs}

    def commit(self) -> int:
        """As :meth:`CoverageTracer.commit`; a function with a new edge is traced on every call again."""
        current = self._current
        new = self._take() - self.total
        self.total |= new
        for code, pairs in current.items():
            if any((code.co_filename, a, b) in new for a, b in pairs):
                calls = self._calls[code]
                calls[1] = calls[0]
        return len(new)


class CTracerCoverage(CoverageTracer):
    """Line pairs recorded by coverage.py's C tracer (``coverage.tracer.CTracer``), driven directly: the
    per-line work happens in C, and a frame outside the package costs a C-level check of a cached
    disposition. Raises ImportError where coverage.py or its C extension is missing, or where its tracer
    does not take the settings this class gives it (another major version)."""

    kind = "ctracer"

    def __init__(self, root: Path = PACKAGE_ROOT, excluded: Iterable[str] = EXCLUDED):
        from coverage.tracer import CFileDisposition, CTracer

        super().__init__(root, excluded)
        self._disposition = CFileDisposition
        self._tracer_class = CTracer
        self._data: dict[str, set[Any]] = {}
        """What the C tracer fills: per file, the arcs packed into integers (see :func:`_unpack`)."""
        self._known: dict[str, set[Any]] = {}
        """Per file, the packed arcs committed so far (:meth:`commit`)."""
        self._cache: dict[str, Any] = {}
        self._tracer: Any = None
        self._previous: Any = None
        try:
            self._new_tracer()
        except (AttributeError, TypeError) as e:
            raise ImportError(f"coverage.py's C tracer has another interface than expected: {e}") from e

    def _should_trace(self, filename: str, frame: FrameType | None) -> Any:
        disposition = self._disposition()
        disposition.original_filename = disposition.canonical_filename = filename
        disposition.source_filename = filename
        disposition.trace = self.wants(filename)
        disposition.reason = ""
        disposition.file_tracer = None
        disposition.has_dynamic_filename = False
        return disposition

    def _new_tracer(self) -> Any:
        """A C tracer set up as coverage.py's collector sets one up, recording arcs into ``_data``."""
        tracer: Any = self._tracer_class()
        tracer.data = self._data
        tracer.trace_arcs = True
        tracer.should_trace = self._should_trace
        tracer.should_trace_cache = self._cache
        tracer.lock_data = tracer.unlock_data = tracer.warn = _nothing
        for optional, value in OPTIONAL_CTRACER_SETTINGS.items():
            if hasattr(tracer, optional):  # as the collector does: not every version has all of them
                setattr(tracer, optional, value() if callable(value) else value)
        return tracer

    def _begin(self) -> None:
        self._previous = sys.gettrace()
        self._tracer = self._new_tracer()
        self._tracer.start()

    def _end(self) -> None:
        self._tracer.stop()
        self._tracer = None
        sys.settrace(self._previous)

    def _take(self) -> set[Edge]:
        taken = {(name, *_unpack(arc)) for name, arcs in self._data.items() for arc in arcs}
        for arcs in self._data.values():
            arcs.clear()  # in place: the C tracer keeps references to these sets
        return taken  # type: ignore[return-value]

    def commit(self) -> int:
        """As :meth:`CoverageTracer.commit`, unpacking only the arcs this tracer has not committed before: a
        run repeats thousands of known arcs, and a set difference of packed integers is far cheaper than
        turning each into an edge first."""
        new = 0
        for name, arcs in self._data.items():
            if not arcs:
                continue
            known = self._known.setdefault(name, set())
            fresh = arcs - known
            arcs.clear()  # in place: the C tracer keeps references to these sets
            if not fresh:
                continue
            known |= fresh
            for arc in fresh:
                edge = (name, *_unpack(arc))
                if edge not in self.total:
                    self.total.add(edge)  # type: ignore[arg-type]
                    new += 1
        return new


OPTIONAL_CTRACER_SETTINGS: dict[str, Any] = {
    "concur_id_func": None,
    "file_tracers": dict,
    "check_include": None,
    "should_start_context": None,
    "switch_context": None,
    "disable_plugin": None,
}
"""Settings of coverage.py's C tracer that some of its versions lack (a callable value makes a fresh one)."""


def _unpack(packed: int | tuple[int, int]) -> tuple[int, int]:
    """An arc as the C tracer packs it: two 28-bit line numbers, and their signs in bits 56 and 57 (versions
    of coverage.py that do not pack arcs record the pair itself)."""
    if isinstance(packed, tuple):
        return packed
    a, b = packed & 0xFFFFFFF, (packed >> 28) & 0xFFFFFFF
    return (-a if packed & (1 << 56) else a), (-b if packed & (1 << 57) else b)


def _nothing(*args: Any) -> None:
    return None


class MonitoringTracer(CoverageTracer):
    """Lines and branches through ``sys.monitoring`` (Python 3.12+). Every event location reports once and
    is then disabled, so saturated code runs at full speed. A disabled event cannot be enabled again on
    its own (only all of them at once), so once started this tracer keeps recording until another one
    starts: what runs between :meth:`stop` and the next :meth:`start` (the fuzzer printing or mutating the
    next case's program) counts for the next commit. Raises ImportError on older Pythons, or when every
    tool id is taken."""

    kind = "monitoring"

    def __init__(self, root: Path = PACKAGE_ROOT, excluded: Iterable[str] = EXCLUDED):
        if not hasattr(sys, "monitoring"):
            raise ImportError("sys.monitoring needs Python 3.12 or newer")
        super().__init__(root, excluded)
        self._current: set[Edge] = set()
        self._lines: dict[CodeType, tuple[list[int], list[int]]] = {}
        self._attached = False

    def _begin(self) -> None:
        if not self._attached:
            _MONITOR.attach(self)
            self._attached = True

    def _end(self) -> None:
        """Nothing: see the class docstring."""

    def _take(self) -> set[Edge]:
        taken, self._current = self._current, set()
        return taken

    def on_line(self, code: CodeType, line: int) -> None:
        """Record that ``line`` of ``code`` ran (a function's def line is not part of its body)."""
        if line != code.co_firstlineno:
            self._current.add((code.co_filename, 0, line))

    def on_branch(self, code: CodeType, source: int, destination: int) -> None:
        """Record a branch from bytecode offset ``source`` to ``destination`` of ``code``, as lines."""
        self._current.add((code.co_filename, self._line_at(code, source), self._line_at(code, destination)))

    def _line_at(self, code: CodeType, offset: int) -> int:
        table = self._lines.get(code)
        if table is None:
            spans = [(start, line or 0) for start, _, line in code.co_lines()]
            table = self._lines[code] = ([s for s, _ in spans], [n for _, n in spans])
        starts, lines = table
        return lines[max(0, bisect.bisect_right(starts, offset) - 1)] if starts else 0


class _Monitor:
    """The process's one ``sys.monitoring`` tool, shared by :class:`MonitoringTracer` objects: it enables
    line and branch events on the functions of the latest attached tracer's package as they start."""

    PREFERRED_TOOLS = (3, 4, 2, 1, 0, 5)
    """Tool ids to take, the unassigned ones first (1 is coverage.py's, 0 a debugger's, 5 an optimizer's)."""

    def __init__(self) -> None:
        self.tool: int | None = None
        self.tracer: MonitoringTracer | None = None

    def attach(self, tracer: MonitoringTracer) -> None:
        """Record for ``tracer`` from now on; every event location reports again once."""
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        events = monitoring.events
        if self.tool is None:
            free = [t for t in self.PREFERRED_TOOLS if monitoring.get_tool(t) is None]
            if not free:
                raise ImportError("every sys.monitoring tool id is taken")
            self.tool = free[0]
            monitoring.use_tool_id(self.tool, "tensorium-fuzz")
            monitoring.register_callback(self.tool, events.PY_START, self._on_start)
            monitoring.register_callback(self.tool, events.LINE, self._on_line)
            for event in _branch_events():
                monitoring.register_callback(self.tool, event, self._on_branch)
        self.tracer = tracer
        monitoring.restart_events()
        monitoring.set_events(self.tool, events.PY_START)

    def _on_start(self, code: CodeType, offset: int) -> Any:
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        tracer = self.tracer
        if tracer is not None and tracer.wants(code.co_filename):
            mask = monitoring.events.LINE
            for event in _branch_events():
                mask |= event
            monitoring.set_local_events(self.tool, code, mask)
        return monitoring.DISABLE

    def _on_line(self, code: CodeType, line: int) -> Any:
        if self.tracer is not None and self.tracer.wants(code.co_filename):  # another tracer's package may differ
            self.tracer.on_line(code, line)
        return sys.monitoring.DISABLE  # type: ignore[attr-defined]

    def _on_branch(self, code: CodeType, source: int, destination: int) -> Any:
        if self.tracer is not None and self.tracer.wants(code.co_filename):
            self.tracer.on_branch(code, source, destination)
        return sys.monitoring.DISABLE  # type: ignore[attr-defined]


def _branch_events() -> list[int]:
    """BRANCH_LEFT and BRANCH_RIGHT where Python has them (3.14+), else BRANCH."""
    events = sys.monitoring.events  # type: ignore[attr-defined]
    if hasattr(events, "BRANCH_LEFT"):
        return [events.BRANCH_LEFT, events.BRANCH_RIGHT]
    return [events.BRANCH]


_MONITOR = _Monitor()

TRACERS: dict[str, Callable[..., CoverageTracer]] = {
    "monitoring": MonitoringTracer,
    "ctracer": CTracerCoverage,
    "settrace": SettraceTracer,
}
"""Every tracer by name, cheapest first: :func:`make_tracer` takes the first that this Python can run."""


def make_tracer(
    kind: str | None = None, root: Path = PACKAGE_ROOT, excluded: Iterable[str] = EXCLUDED
) -> CoverageTracer:
    """The tracer named ``kind``, or (None) the cheapest one available here; ValueError for an unknown name,
    ImportError when the named one cannot run on this Python."""
    if kind is not None:
        if kind not in TRACERS:
            raise ValueError(f"unknown coverage tracer '{kind}'; choose from {', '.join(TRACERS)}")
        return TRACERS[kind](root, tuple(excluded))
    for make in TRACERS.values():
        try:
            return make(root, tuple(excluded))
        except ImportError:
            continue
    raise AssertionError("the settrace tracer always runs")


def available_tracers() -> list[str]:
    """The names of the tracers this Python can run, cheapest first."""
    found = []
    for name, make in TRACERS.items():
        try:
            make()
        except ImportError:
            continue
        found.append(name)
    return found


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
            found.update((name, line) for line in _file_lines(path.read_bytes(), name))
        _EXECUTABLE[key] = found
    return _EXECUTABLE[key]


def _file_lines(source: bytes, name: str) -> list[int]:
    """The executable lines of one file's ``source``, through an on-disk cache keyed by the source's hash:
    compiling the whole package costs about a CPU second, which every fuzzing process paid for its report."""
    folder = cache_dir() / "fuzz-lines" / sys.implementation.cache_tag
    cached = folder / f"{hashlib.sha1(source).hexdigest()}.json"
    try:
        return list(json.loads(cached.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        pass
    code = compile(source, name, "exec", dont_inherit=True)
    lines = sorted(set(_code_lines(code)))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".writing-")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(lines, file)
        os.replace(temporary, cached)  # whole or not at all, for a process reading it at the same time
    except OSError:
        pass  # a read-only cache folder: compile again next time
    return lines


def _code_lines(code: CodeType) -> Iterator[int]:
    """Lines of the functions in ``code`` (module and class bodies run at import, never under the fuzzer)."""
    if code.co_flags & inspect.CO_OPTIMIZED:
        for _, _, line in code.co_lines():
            if line is not None and line > 0 and line != code.co_firstlineno:
                yield line
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _code_lines(const)
