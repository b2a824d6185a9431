"""The coverage tracers: edges of the measured package only, new edges counted once, tracing restored,
each tracer this Python can run (the ``monitoring`` one on 3.12+, ``ctracer`` with coverage.py)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

import tensorium as tm
from tensorium.fuzz.coverage import PACKAGE_ROOT, TRACERS, available_tracers, executable_lines, make_tracer

KINDS = [
    pytest.param(kind, marks=pytest.mark.skipif(kind not in available_tracers(), reason=f"no {kind} tracer here"))
    for kind in TRACERS
]

BRANCHY = """
def pick(flag):
    if flag:
        value = 1
    else:
        value = 2
    return value
"""


def _load(tmp_path: Path) -> ModuleType:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "branchy.py").write_text(BRANCHY)
    spec = importlib.util.spec_from_file_location("branchy_under_test", package / "branchy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kind", KINDS)
def test_each_side_of_a_branch_is_new_coverage_once(tmp_path: Path, kind: str) -> None:
    module = _load(tmp_path)
    tracer = make_tracer(kind, root=tmp_path / "pkg", excluded=())
    with tracer:
        module.pick(True)
    first = tracer.commit()
    with tracer:
        module.pick(True)
    assert first > 0 and tracer.commit() == 0
    with tracer:
        module.pick(False)
    assert tracer.commit() > 0
    lines = {line for _, line in tracer.lines()}
    assert lines == {3, 4, 6, 7}
    assert {line for _, line in executable_lines(tmp_path / "pkg")} == {3, 4, 6, 7}
    assert tracer.line_percent() == 100.0


@pytest.mark.parametrize("kind", KINDS)
def test_only_the_package_is_measured_and_the_fuzzer_itself_is_not(kind: str) -> None:
    tracer = make_tracer(kind)
    with tracer:
        tm.print_module(tm.parse_module("module {\n}\n"))
    assert tracer.commit() > 0
    files = {name for name, _ in tracer.lines()}
    assert files and all(f.startswith(str(PACKAGE_ROOT)) for f in files)
    assert not any("/fuzz/" in f for f in files)
    assert 0.0 < tracer.line_percent() < 100.0


@pytest.mark.parametrize("kind", ["ctracer", "settrace"])
def test_the_previous_trace_function_is_restored(kind: str) -> None:
    if kind not in available_tracers():
        pytest.skip(f"no {kind} tracer here")
    before = sys.gettrace()
    tracer = make_tracer(kind)
    tracer.start()
    tracer.start()
    assert sys.gettrace() is not None
    tracer.stop()
    tracer.stop()
    assert sys.gettrace() is before


def test_the_cheapest_available_tracer_is_the_default_and_unknown_names_are_refused() -> None:
    assert make_tracer().kind == available_tracers()[0]
    assert "settrace" in available_tracers()
    with pytest.raises(ValueError, match="unknown coverage tracer 'dtrace'"):
        make_tracer("dtrace")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="sys.monitoring exists from Python 3.12 on")
def test_the_monitoring_tracer_says_it_needs_python_3_12() -> None:
    with pytest.raises(ImportError, match=r"3\.12"):
        make_tracer("monitoring")


def test_the_fuzz_command_takes_a_tracer_and_refuses_one_this_python_lacks(capsys: pytest.CaptureFixture[str]) -> None:
    from tensorium.cli import main

    argv = ["fuzz", "--time", "60", "--max-execs", "2", "--backends", "interp", "--quiet", "--tracer", "settrace"]
    assert main(argv) == 0
    assert "2 executions" in capsys.readouterr().out
    missing = [kind for kind in TRACERS if kind not in available_tracers()]
    if missing:
        assert main([*argv[:-1], missing[0]]) == 1
        err = capsys.readouterr().err
        assert f"--tracer {missing[0]} cannot run on this Python" in err and "Traceback" not in err


class _FakeMonitoring:
    """The part of Python 3.12's ``sys.monitoring`` the monitoring tracer uses, recording what it is told."""

    DISABLE = object()

    class events:
        PY_START, LINE, BRANCH = 1, 2, 4

    def __init__(self) -> None:
        self.tools: dict[int, str] = {0: "a debugger"}
        self.callbacks: dict[int, Callable[..., object]] = {}
        self.local: dict[object, int] = {}
        self.enabled = 0
        self.restarts = 0

    def get_tool(self, tool: int) -> str | None:
        return self.tools.get(tool)

    def use_tool_id(self, tool: int, name: str) -> None:
        self.tools[tool] = name

    def register_callback(self, tool: int, event: int, callback: Callable[..., object]) -> None:
        self.callbacks[event] = callback

    def set_events(self, tool: int, events: int) -> None:
        self.enabled = events

    def set_local_events(self, tool: int, code: object, events: int) -> None:
        self.local[code] = events

    def restart_events(self) -> None:
        self.restarts += 1


@pytest.mark.skipif(hasattr(sys, "monitoring"), reason="the real sys.monitoring is tested by the tests above")
def test_the_monitoring_tracer_on_a_stand_in_for_sys_monitoring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tensorium.fuzz import coverage

    fake = _FakeMonitoring()
    monkeypatch.setattr(sys, "monitoring", fake, raising=False)
    monkeypatch.setattr(coverage, "_MONITOR", coverage._Monitor())
    code = _load(tmp_path).pick.__code__
    tracer = make_tracer("monitoring", root=tmp_path / "pkg", excluded=())
    tracer.start()
    assert fake.tools[3] == "tensorium-fuzz" and fake.enabled == fake.events.PY_START and fake.restarts == 1
    start, line, branch = (fake.callbacks[e] for e in (1, 2, 4))
    assert start(test_the_cheapest_available_tracer_is_the_default_and_unknown_names_are_refused.__code__, 0) is (
        fake.DISABLE
    )
    assert not fake.local  # a function outside the package gets no line or branch events
    assert start(code, 0) is fake.DISABLE and fake.local[code] == fake.events.LINE | fake.events.BRANCH
    offsets = {n: first for first, _, n in reversed(list(code.co_lines()))}  # each line's first offset
    assert all(line(code, n) is fake.DISABLE for n in (code.co_firstlineno, 3, 4, 7))
    assert branch(code, offsets[3], offsets[4]) is fake.DISABLE
    tracer.stop()
    assert tracer.commit() == 4
    assert tracer.lines() == {(code.co_filename, n) for n in (3, 4, 7)}  # not the def line
    branch(code, offsets[3], offsets[6])
    line(code, 6)
    assert tracer.commit() == 2 and tracer.line_percent() == 100.0
    assert (code.co_filename, 3, 6) in tracer.total


def test_arcs_packed_by_the_c_tracer_unpack_with_their_signs() -> None:
    from tensorium.fuzz.coverage import _unpack

    assert _unpack(7 | (9 << 28)) == (7, 9)
    assert _unpack(12 | (30 << 28) | (1 << 56)) == (-12, 30)  # entering a function defined on line 12
    assert _unpack(30 | (12 << 28) | (1 << 57)) == (30, -12)  # leaving it
    assert _unpack((4, 5)) == (4, 5)  # coverage.py versions that keep the pair


@pytest.mark.skipif("ctracer" not in available_tracers(), reason="no ctracer tracer here")
def test_the_c_tracer_commits_the_edges_that_unpacking_every_arc_gives(tmp_path: Path) -> None:
    from tensorium.fuzz.coverage import _unpack

    module = _load(tmp_path)
    tracer = make_tracer("ctracer", root=tmp_path / "pkg", excluded=())
    seen: set[tuple[str, int, int]] = set()
    for flags in ([True], [True], [True, False], [False], []):
        with tracer:
            for flag in flags:
                module.pick(flag)
        data = tracer._data  # type: ignore[attr-defined]
        recorded = {(name, *_unpack(arc)) for name, arcs in data.items() for arc in arcs}
        expected = len(recorded - seen)
        seen |= recorded
        assert tracer.commit() == expected
        assert tracer.total == seen
        assert not any(data.values())  # what was committed is not counted again
    assert {line for _, line in tracer.lines()} == {3, 4, 6, 7}


def test_executable_lines_are_cached_on_disk_by_the_source_they_come_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    from tensorium.fuzz import coverage

    monkeypatch.setenv("TENSORIUM_CACHE_DIR", str(tmp_path / "cache"))
    source = BRANCHY.encode()
    assert coverage._file_lines(source, "branchy.py") == [3, 4, 6, 7]
    (stored,) = (tmp_path / "cache" / "fuzz-lines").rglob("*.json")

    def no_compiling(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled again")

    with monkeypatch.context() as patched:
        patched.setattr(builtins, "compile", no_compiling)
        assert coverage._file_lines(source, "elsewhere.py") == [3, 4, 6, 7]  # the same source, another place
    stored.write_text("[3, 4")  # a damaged entry is compiled again, and replaced
    assert coverage._file_lines(source, "branchy.py") == [3, 4, 6, 7]
    assert stored.read_text() == "[3, 4, 6, 7]"
    changed = source.replace(b"value = 2", b"value = 2\n        value += 1")
    assert coverage._file_lines(changed, "branchy.py") == [3, 4, 6, 7, 8]
