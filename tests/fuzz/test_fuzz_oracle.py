"""The oracles: each kind of failure is detected, documented errors and invalid programs are not failures."""

from __future__ import annotations

import numpy as np

import tensorium as tm
from tensorium.backends.interp import run as run_interp
from tensorium.fuzz.oracle import FuzzCase, check, compare, computed_precision
from tensorium.ir.types import TensorType, bf16, f16, f32, f64, i32

from .conftest import SIMPLE


def case(pipeline: str, module: str = SIMPLE, backends: tuple[str, ...] = ("interp",)) -> FuzzCase:
    return FuzzCase(module, pipeline, seed=3, backends=backends)  # type: ignore[arg-type]


def test_a_sound_pipeline_passes_every_oracle_on_both_backends() -> None:
    verdict = check(case("canonicalize,cse,fold,fuse", backends=("interp", "cpu")))
    assert verdict.status == "ok", verdict


def test_a_pass_that_computes_something_else_is_a_mismatch(drop_adds: str) -> None:
    verdict = check(case(f"cse,{drop_adds}"))
    assert verdict.status == "failure" and verdict.failure is not None
    assert verdict.failure.kind == "mismatch" and verdict.failure.stage == "interp"
    assert "elements differ" in verdict.failure.summary


def test_an_undocumented_exception_is_a_crash_located_in_the_pass(crash_on_tanh: str) -> None:
    verdict = check(case(crash_on_tanh))
    assert verdict.failure is not None
    assert verdict.failure.kind == "crash"
    assert verdict.failure.stage == f"pass '{crash_on_tanh}'"
    assert verdict.failure.summary == "IndexError: list index out of range"
    assert "Traceback" in verdict.failure.detail
    assert verdict.failure.signature.startswith(f"crash:pass '{crash_on_tanh}'")


def test_ir_broken_by_a_pass_is_a_verifier_failure(retype_tanh: str) -> None:
    verdict = check(case(f"canonicalize,{retype_tanh},cse"))
    assert verdict.failure is not None
    assert verdict.failure.kind == "verifier"
    assert verdict.failure.stage == f"pass '{retype_tanh}'"


def test_a_pass_whose_output_changes_from_run_to_run_is_nondeterministic(stamp: str) -> None:
    verdict = check(case(stamp))
    assert verdict.failure is not None and verdict.failure.kind == "nondeterminism"
    assert check(case(stamp), determinism=False).status == "ok"


def test_a_documented_error_of_a_pass_is_a_refusal_not_a_failure() -> None:
    verdict = check(case("lower-to-loops,lower-to-loops"))
    assert verdict.status == "refused"
    assert "already lowered" in verdict.reason


def test_a_lowered_module_is_checked_on_the_loop_interpreter() -> None:
    assert check(case("canonicalize,lower-to-loops{schedule=true}")).status == "ok"


def test_programs_without_a_finite_result_are_invalid() -> None:
    text = SIMPLE.replace("graph.tanh", "graph.log")
    verdict = check(case("cse", module=text))
    assert verdict.status == "invalid" and "not all finite" in verdict.reason
    assert check(case("cse", module=text), allow_nonfinite=True).status == "ok"


def test_unparsable_input_is_invalid() -> None:
    assert check(case("cse", module="module {")).status == "invalid"


def test_compare_allows_reassociation_but_not_real_differences() -> None:
    t = TensorType((3,), f32)
    want = np.array([1.0, -2.0, 1e-7], np.float32)
    assert compare([want], [want + np.float32(2e-6)], [t]) is None
    problem = compare([want], [want + np.float32(1e-3)], [t])
    assert problem is not None and problem.startswith("output 0 (tensor<3xf32>): 3 of 3 elements differ")
    nan = np.array([np.nan, np.inf], np.float32)
    assert compare([nan], [nan.copy()], [TensorType((2,), f32)]) is None
    assert compare([nan], [np.array([np.nan, -np.inf], np.float32)], [TensorType((2,), f32)]) is not None
    ints = np.array([1, 2], np.int32)
    assert compare([ints], [ints + 1], [TensorType((2,), i32)]) is not None
    assert "shape" in str(compare([ints], [ints[:1]], [TensorType((2,), i32)]))
    assert compare([ints], [], [TensorType((2,), i32)]) == "0 outputs, expected 1"


MIXED = """
module {
  func.func @main(%x: tensor<4xf32>, %y: tensor<4xf64>) -> tensor<4xf64> {
    %0 = graph.tanh %x : (tensor<4xf32>) -> tensor<4xf32>
    %1 = graph.cast %0 {dtype = f64} : (tensor<4xf32>) -> tensor<4xf64>
    %2 = graph.add %1, %y : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
    func.return %2 : tensor<4xf64>
  }
}
"""


def test_outputs_compare_at_the_least_precise_float_the_program_computes_in() -> None:
    assert computed_precision(tm.parse_module(MIXED)) == f32
    assert computed_precision(tm.parse_module(MIXED.replace("f32", "f64"))) == f64
    assert computed_precision(tm.parse_module(MIXED.replace("f32", "f16"))) == f16
    assert computed_precision(tm.parse_module(SIMPLE.replace("f32", "bf16"))) == bf16
    t = TensorType((1,), f64)
    want = np.array([0.25])
    off_by_f32_rounding = want * (1 + 2e-7)
    assert compare([want], [off_by_f32_rounding], [t]) is not None
    assert compare([want], [off_by_f32_rounding], [t], precision=f32) is None
    assert compare([want], [want * (1 + 1e-3)], [t], precision=f32) is not None


def test_ir_that_does_not_read_back_is_a_roundtrip_failure(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tensorium.fuzz import oracle

    real = oracle.print_module
    monkeypatch.setattr(oracle, "print_module", lambda m: real(m).replace("graph.tanh", "graph.tahn"))
    verdict = check(case("cse"))
    assert verdict.failure is not None
    assert (verdict.failure.kind, verdict.failure.stage) == ("roundtrip", "parse")
    assert "graph.tahn" in verdict.failure.summary


def test_elements_on_a_discontinuity_are_ill_conditioned_and_forgiven() -> None:
    from tensorium.fuzz.oracle import ill_conditioned
    from tensorium.ir.parser import parse_module

    module = parse_module(
        """
module {
  func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
    %c = graph.constant {value = dense<4.0> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.mul %x, %c : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    %1 = graph.floor %0 : (tensor<3xf32>) -> tensor<3xf32>
    func.return %1 : tensor<3xf32>
  }
}
"""
    )
    x = np.array([0.3, 0.25, -0.5], np.float32)  # 0.25 * 4 and -0.5 * 4 sit on integers
    (want,) = run_interp(module, [x])
    (mask,) = ill_conditioned(module, [x], [want], trials=8)
    assert mask.tolist() == [False, True, True]
    flipped = want - np.array([0.0, 1.0, 0.0], np.float32)
    t = TensorType((3,), f32)
    assert compare([want], [flipped], [t]) is not None
    assert compare([want], [flipped], [t], forgiven=[mask]) is None
    assert compare([want], [want + np.float32(1.0)], [t], forgiven=[mask]) is not None
