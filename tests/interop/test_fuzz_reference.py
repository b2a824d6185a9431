"""IREE as a second reference in the fuzzer's differential oracle (``tensorium fuzz --reference iree``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("iree.runtime", reason="the mlir extra (iree-base-compiler, iree-base-runtime) is not installed")

from tensorium.fuzz.generator import generate_module
from tensorium.fuzz.oracle import FuzzCase, check
from tensorium.fuzz.reduce import format_case, parse_case
from tensorium.ir.parser import parse_module
from tensorium.ir.printer import print_module

MLP = (Path(__file__).parents[2] / "examples" / "mlp.mlir").read_text()


def test_iree_agrees_with_the_interpreter_on_generated_programs() -> None:
    checked = 0
    for seed in range(6):
        case = FuzzCase(print_module(generate_module(seed, num_ops=6)), "canonicalize", seed, ("interp",), 3, ("iree",))
        verdict = check(case)
        assert verdict.failure is None, verdict.failure
        checked += verdict.status == "ok"
    assert checked >= 3


def test_a_disagreeing_reference_is_a_reference_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    import tensorium.interop.iree as iree

    monkeypatch.setattr(iree, "run_text", lambda text, inputs: [np.zeros((4, 8), np.float32) + 1e3])
    verdict = check(FuzzCase(MLP, "cse", 0, ("interp",), 3, ("iree",)))
    assert verdict.failure is not None and verdict.failure.kind == "reference"
    assert verdict.failure.stage == "iree" and "linalg.matmul" in verdict.failure.detail
    assert check(FuzzCase(MLP, "cse", 0, ("interp",), 3)).status == "ok"  # without the reference: not asked


def test_case_files_keep_their_references() -> None:
    case = FuzzCase(MLP, "cse", 2, ("interp",), 3, ("iree",))
    text = format_case(case)
    assert "// references: iree" in text
    assert parse_case(text).references == ("iree",)


def test_fuzz_command_with_the_iree_reference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tensorium.cli import main

    status = main(
        ["fuzz", "--time", "30", "--max-execs", "4", "--seed", "1", "--no-coverage", "--backends", "interp"]
        + ["--reference", "iree", "--num-ops", "5", "--quiet", "--out", str(tmp_path)]
    )
    assert status == 0, capsys.readouterr().out


BOOL_MAX = """module {
  func.func @main(%x: tensor<3x4xf32>) -> (tensor<3xi1>, tensor<4xi1>) {
    %0 = graph.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %1 = graph.lt %x, %0 : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xi1>
    %2 = graph.reduce_max %1 {axes = [1]} : (tensor<3x4xi1>) -> tensor<3xi1>
    %3 = graph.reduce_min %1 {axes = [0]} : (tensor<3x4xi1>) -> tensor<4xi1>
    func.return %2, %3 : tensor<3xi1>, tensor<4xi1>
  }
}"""


def test_bool_max_and_min_use_the_unsigned_ops() -> None:
    """Regression (found by ``--reference iree``, seed 200): ``maxsi`` on i1 takes true for -1 and picks false."""
    from tensorium.interop.export import export_text

    text = export_text(parse_module(BOOL_MAX))
    assert "arith.maxui" in text and "arith.minui" in text and "arith.maxsi" not in text
    assert check(FuzzCase(BOOL_MAX, "canonicalize", 3, ("interp",), 3, ("iree",))).status == "ok"


def test_flush_to_zero_in_iree_is_not_a_reference_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """IREE's CPU code flushes subnormals to zero, so a subnormal times an infinity is NaN there and an
    infinity in the interpreter (found by ``tensorium fuzz --reference iree`` with special values, seed 1).
    A result that the flushed program explains passes; one it does not is still a reference failure."""
    import tensorium.fuzz.oracle as oracle
    import tensorium.interop.iree as iree

    program = """module {
  func.func @main(%x: tensor<2x2xf32>) -> tensor<2x1xf32> {
    %w = graph.constant {value = dense<[[1.0], [inf]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
    %0 = graph.matmul %x, %w : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    func.return %0 : tensor<2x1xf32>
  }
}"""
    x = np.array([[0.5, 1e-45], [0.25, 2.0]], np.float32)
    monkeypatch.setattr(oracle, "case_inputs", lambda module, seed, specials=False: [x])
    case = FuzzCase(program, "cse", 0, ("interp",), 3, ("iree",))
    flushed = x * [[1, 0], [1, 1]]
    real = iree.run_text
    monkeypatch.setattr(iree, "run_text", lambda text, inputs: real(text, [flushed.astype(np.float32)]))
    assert check(case).failure is None
    monkeypatch.setattr(iree, "run_text", lambda text, inputs: [np.array([[np.nan], [5.0]], np.float32)])
    verdict = check(case)
    assert verdict.failure is not None and verdict.failure.kind == "reference"


OUT_OF_RANGE_CAST = """module {
  func.func @main(%x: tensor<7xf32>) -> tensor<7xf32> {
    %0 = graph.cast %x {dtype = i33} : (tensor<7xf32>) -> tensor<7xi33>
    %1 = graph.cast %0 {dtype = f32} : (tensor<7xi33>) -> tensor<7xf32>
    func.return %1 : tensor<7xf32>
  }
}"""


def test_iree_does_not_judge_casts_of_floats_to_integers() -> None:
    """Seed 909086626's special inputs hold -3.4e38, which Tensorium casts to i33 by its own rule while upstream
    MLIR's fptosi makes poison (IREE returned INT64_MIN): no reference failure (reduced from the fuzz command's
    seed 1 below)."""
    case = FuzzCase(OUT_OF_RANGE_CAST, "", 909086626, ("interp",), 3, ("iree",), specials=True)
    verdict = check(case)
    assert verdict.failure is None, verdict.failure


def test_a_result_iree_cannot_hand_to_numpy_is_an_iree_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """IREE's runtime cannot map some element types to numpy; that is IREE's limit (IreeError, which the oracle
    skips), never a crash of the fuzzer."""
    import iree.runtime as rt

    from tensorium.interop.iree import IreeError, compile_text, run_vmfb

    class Unmappable:
        def to_host(self) -> np.ndarray:
            raise ValueError("Unsupported VM Buffer -> numpy dtype mapping")

    vmfb = compile_text("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %x : tensor<2xf32>\n}")
    context_type = rt.SystemContext

    class Context(context_type):  # type: ignore[misc, valid-type]
        """IREE's context, whose @main returns a result the runtime cannot map to numpy."""

        @property
        def modules(self) -> object:
            return SimpleNamespace(module={"main": lambda *args: [Unmappable()]})

    monkeypatch.setattr(rt, "SystemContext", Context)
    with pytest.raises(IreeError, match="result #0 of @main"):
        run_vmfb(vmfb, [np.zeros(2, np.float32)])
