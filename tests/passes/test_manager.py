"""The PassManager: running pipelines, verify-each naming the pass that broke the IR, timing and IR dumps."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import pytest

import tensorium as tm
from tensorium.errors import PassError, VerifyError
from tensorium.ir.core import Operation
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.types import TensorType
from tensorium.passes import Pass, PassManager, base

SOURCE = """module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %zero = graph.constant {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %0 = graph.add %x, %zero : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.exp %0 : (tensor<2xf32>) -> tensor<2xf32>
    %2 = graph.exp %x : (tensor<2xf32>) -> tensor<2xf32>
    %3 = graph.mul %1, %2 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %3 : tensor<2xf32>
  }
}
"""

AFTER_CANONICALIZE = """module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.exp %x : (tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.exp %x : (tensor<2xf32>) -> tensor<2xf32>
    %2 = graph.mul %0, %1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %2 : tensor<2xf32>
  }
}
"""

AFTER_CSE = """module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.exp %x : (tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.mul %0, %0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %1 : tensor<2xf32>
  }
}
"""


@dataclass(frozen=True)
class BreakTypes(Pass):
    """Test pass that gives the first graph op of each function a wrong result type."""

    name: ClassVar[str] = "test-break-types"

    def run(self, module: Operation) -> None:
        for func in functions(module):
            op = func_body(func).ops[0]
            op.results[0].type = TensorType((3,), op.results[0].type.element)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Fail(Pass):
    """Test pass that always fails."""

    name: ClassVar[str] = "test-fail"

    def run(self, module: Operation) -> None:
        raise PassError("nothing works")


@pytest.fixture(autouse=True, scope="module")
def _test_passes() -> Iterator[None]:
    """Register this file's test passes while its tests run (so no other test, the fuzzer's included, sees them)."""
    with pytest.MonkeyPatch.context() as patch:
        for cls in (BreakTypes, Fail):
            patch.setitem(base._PASSES, cls.name, cls)
        yield


def test_run_applies_passes_in_order_in_place() -> None:
    module = tm.parse_module(SOURCE)
    pm = PassManager.parse("canonicalize,cse")
    assert str(pm.pipeline) == "canonicalize,cse"
    pm.run(module)
    assert tm.print_module(module) == AFTER_CSE


def test_print_ir_after_all_writes_each_dump_to_the_stream() -> None:
    module = tm.parse_module(SOURCE)
    stream = io.StringIO()
    PassManager.parse("canonicalize,cse", print_ir_after_all=True, ir_stream=stream).run(module)
    assert stream.getvalue() == (
        "// -----// IR Dump After canonicalize //----- //\n"
        + AFTER_CANONICALIZE
        + "\n// -----// IR Dump After cse //----- //\n"
        + AFTER_CSE
        + "\n"
    )


def test_print_ir_after_all_names_options_and_defaults_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    module = tm.parse_module(SOURCE)
    PassManager.parse("fold{max-elements=0}", print_ir_after_all=True).run(module)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("// -----// IR Dump After fold{max-elements=0} //----- //\nmodule {\n")


def test_timing_report_has_one_row_per_pass_then_verify_and_total() -> None:
    module = tm.parse_module(SOURCE)
    pm = PassManager.parse("canonicalize,cse,canonicalize", timing=True, verify_each=True)
    pm.run(module)
    lines = pm.timing_report().splitlines()
    assert lines[0].split() == ["pass", "wall", "(ms)", "%"]
    rows = [line.split() for line in lines[1:]]
    assert [r[0] for r in rows] == ["canonicalize", "cse", "canonicalize", "(verify)", "total"]
    times = [float(r[1]) for r in rows]
    shares = [float(r[2]) for r in rows]
    assert all(t >= 0 for t in times)
    assert times[-1] == pytest.approx(sum(times[:-1]), abs=0.01)
    assert shares[-1] == 100.0
    assert sum(shares[:-1]) == pytest.approx(100.0, abs=0.3)
    assert len({len(line) for line in lines}) == 1, "columns are aligned"


def test_timing_report_needs_timing() -> None:
    pm = PassManager.parse("cse")
    pm.run(tm.parse_module(SOURCE))
    with pytest.raises(ValueError, match=r"timing_report\(\) needs a PassManager created with timing=True"):
        pm.timing_report()


def test_verify_each_names_the_pass_that_broke_the_ir() -> None:
    module = tm.parse_module(SOURCE)
    pm = PassManager.parse("canonicalize,test-break-types,cse", verify_each=True)
    with pytest.raises(VerifyError) as info:
        pm.run(module)
    assert str(info.value) == (
        "<input>:5:10: error: 'graph.exp' op result #0 has type tensor<3xf32>, but the operands give tensor<2xf32>\n"
        "note: the IR is invalid after pass 'test-break-types':\n"
        "  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        ">   %0 = graph.exp %x : (tensor<2xf32>) -> tensor<3xf32>\n"
        "    %1 = graph.exp %x : (tensor<2xf32>) -> tensor<2xf32>\n"
        "    %2 = graph.mul %0, %1 : (tensor<3xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
        "    func.return %2 : tensor<2xf32>"
    )
    assert info.value.op_name == "graph.exp"


def test_without_verify_each_a_broken_pass_goes_unnoticed() -> None:
    module = tm.parse_module(SOURCE)
    PassManager.parse("test-break-types").run(module)
    with pytest.raises(VerifyError, match="result #0 has type tensor<3xf32>"):
        tm.verify(module)


def test_verify_each_checks_the_input_first() -> None:
    module = tm.parse_module(SOURCE)
    BreakTypes().run(module)
    with pytest.raises(VerifyError, match="note: the IR is invalid before the first pass:"):
        PassManager.parse("cse", verify_each=True).run(module)


def test_a_failing_pass_is_named() -> None:
    with pytest.raises(PassError, match=r"^pass 'test-fail' failed: nothing works$"):
        PassManager.parse("cse,test-fail").run(tm.parse_module(SOURCE))


def test_parse_errors_come_from_the_pipeline_text() -> None:
    with pytest.raises(PassError, match=r"unknown pass 'cse2' \(did you mean 'cse'\?\)"):
        PassManager.parse("cse2")


def test_the_dump_after_a_breaking_pass_comes_before_the_verify_error() -> None:
    stream = io.StringIO()
    pm = PassManager.parse("test-break-types", verify_each=True, print_ir_after_all=True, ir_stream=stream)
    with pytest.raises(VerifyError):
        pm.run(tm.parse_module(SOURCE))
    dump = stream.getvalue()
    assert dump.startswith("// -----// IR Dump After test-break-types //----- //\n")
    assert "-> tensor<3xf32>" in dump
