"""IREE as a second reference in the fuzzer's differential oracle (``tensorium fuzz --reference iree``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("iree.runtime", reason="the mlir extra (iree-base-compiler, iree-base-runtime) is not installed")

from tensorium.fuzz.generator import generate_module
from tensorium.fuzz.oracle import FuzzCase, check
from tensorium.fuzz.reduce import format_case, parse_case
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
