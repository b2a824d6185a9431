"""The coverage tracer: edges of the measured package only, new edges counted once, tracing restored."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import tensorium as tm
from tensorium.fuzz.coverage import PACKAGE_ROOT, CoverageTracer, executable_lines

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


def test_each_side_of_a_branch_is_new_coverage_once(tmp_path: Path) -> None:
    module = _load(tmp_path)
    tracer = CoverageTracer(root=tmp_path / "pkg", excluded=())
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


def test_only_the_package_is_measured_and_the_fuzzer_itself_is_not() -> None:
    tracer = CoverageTracer()
    with tracer:
        tm.print_module(tm.parse_module("module {\n}\n"))
    assert tracer.commit() > 0
    files = {name for name, _ in tracer.lines()}
    assert files and all(f.startswith(str(PACKAGE_ROOT)) for f in files)
    assert not any("/fuzz/" in f for f in files)
    assert 0.0 < tracer.line_percent() < 100.0


def test_the_previous_trace_function_is_restored() -> None:
    before = sys.gettrace()
    tracer = CoverageTracer()
    tracer.start()
    tracer.start()
    assert sys.gettrace() is not None
    tracer.stop()
    tracer.stop()
    assert sys.gettrace() is before
