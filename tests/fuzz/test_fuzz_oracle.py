"""The oracles: each kind of failure is detected, documented errors and invalid programs are not failures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends.interp import run as run_interp
from tensorium.fuzz.oracle import FuzzCase, check, compare, computed_precision, ill_conditioned
from tensorium.fuzz.reduce import read_case
from tensorium.ir import InsertionPoint
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.core import Operation
from tensorium.ir.dialects import graph
from tensorium.ir.types import TensorType, bf16, f16, f32, f64, i32

from .conftest import SIMPLE, _register


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


def test_programs_without_a_finite_result_are_judged_like_any_other(drop_adds: str) -> None:
    text = SIMPLE.replace("graph.tanh", "graph.log")
    assert check(case("cse", module=text, backends=("interp", "cpu"))).status == "ok"
    verdict = check(case(drop_adds, module=text))
    assert verdict.failure is not None and verdict.failure.kind == "mismatch"


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


def test_outputs_judged_at_a_looser_precision_are_moved_by_its_rounding_errors() -> None:
    """Elements of a cast that sit within bf16's tolerance of an integer boundary are ill-conditioned where the outputs
    are judged at bf16's tolerance (a kernel that rounds its activations to 8 bits), not at f32's."""
    module = tm.parse_module(
        """
module {
  func.func @main(%x: tensor<3xf32>) -> tensor<3xi32> {
    %0 = graph.cast %x {dtype = i32} : (tensor<3xf32>) -> tensor<3xi32>
    func.return %0 : tensor<3xi32>
  }
}
"""
    )
    x = np.array([3.998, 7.5, 2.0004], np.float32)  # within 0.1% of an integer, mid-way, within 0.02%
    (want,) = run_interp(module, [x])
    (f32_mask,) = ill_conditioned(module, [x], [want], trials=8)
    (bf16_mask,) = ill_conditioned(module, [x], [want], trials=8, looser=bf16)
    assert f32_mask.tolist() == [False, False, False]
    assert bf16_mask.tolist() == [True, False, True]


def test_casts_of_the_int_paths_outputs_near_integers_are_invalid_not_failures() -> None:
    """The campaign case (tests/fuzz/oracle_cases/int_path_then_cast.mlir): a k-bit GEMM on the int path, cast to u6."""
    path = Path(__file__).parent / "oracle_cases" / "int_path_then_cast.mlir"
    verdict = check(read_case(path))
    assert verdict.status == "invalid" and "ill-conditioned" in verdict.reason


def test_f16_truncations_an_ulp_from_integers_after_folding_are_invalid_not_failures() -> None:
    """A campaign case (tests/fuzz/oracle_cases/fold_batch_norm_f16_then_cast.mlir): fold-batch-norm then a cast of
    f16 values to i64; the first round of ill-conditioning draws missed some of the flips, later rounds find them."""
    path = Path(__file__).parent / "oracle_cases" / "fold_batch_norm_f16_then_cast.mlir"
    verdict = check(read_case(path))
    assert verdict.status == "invalid" and "ill-conditioned" in verdict.reason


# --- IEEE 754: what may differ, and nothing else -------------------------------------------------------------
T4 = TensorType((4,), f32)


def test_nan_matches_nan_of_any_payload_and_nothing_else() -> None:
    quiet = np.array([np.nan] * 4, np.float32)
    other_payload = quiet.view(np.uint32) | np.uint32(0x1234)
    assert compare([quiet], [other_payload.view(np.float32)], [T4]) is None
    assert compare([quiet], [np.array([np.nan, np.nan, np.nan, 0.0], np.float32)], [T4]) is not None
    assert compare([np.zeros(4, np.float32)], [quiet], [T4]) is not None


def test_infinities_must_match_in_sign() -> None:
    want = np.array([np.inf, -np.inf, 1.0, 2.0], np.float32)
    assert compare([want], [want.copy()], [T4]) is None
    assert compare([want], [np.array([np.inf, np.inf, 1.0, 2.0], np.float32)], [T4]) is not None
    assert compare([want], [np.array([-3e38, -np.inf, 1.0, 2.0], np.float32)], [T4]) is not None


def test_signed_zeros_must_match_except_where_ieee_leaves_the_sign_open() -> None:
    want = np.array([0.0, -0.0, 1.0, 0.0], np.float32)
    flipped = np.array([-0.0, 0.0, 1.0, 0.0], np.float32)
    problem = compare([want], [flipped], [T4])
    assert problem is not None and "got -0.0, expected 0.0" in problem
    free = np.array([True, True, False, False])
    assert compare([want], [flipped], [T4], sign_free=[free]) is None
    assert compare([want], [flipped], [T4], sign_free=[np.array([True, False, False, False])]) is not None
    inf = np.array([np.inf, 1.0, 1.0, 1.0], np.float32)
    assert compare([inf], [-inf], [T4], sign_free=[np.ones(4, bool)]) is not None, "only the sign of inf and 0"
    assert compare([inf], [inf * np.array([-1, 1, 1, 1], np.float32)], [T4], sign_free=[free]) is None


def test_one_huge_element_does_not_widen_the_tolerance_of_the_others() -> None:
    want = np.array([3e38, 1.0, 0.5, 0.0], np.float32)
    assert compare([want], [want + np.array([0, 0.01, 0, 0], np.float32)], [T4]) is not None
    assert compare([want], [want + np.array([0, 1e-6, 0, 0], np.float32)], [T4]) is None


def _module(body: str, args: str = "%x: tensor<4xf32>, %y: tensor<4xf32>", result: str = "tensor<4xf32>") -> str:
    return f"module {{\n  func.func @main({args}) -> {result} {{\n{body}\n  }}\n}}\n"


def test_sign_free_finds_sums_and_extrema_of_zeros_and_what_inherits_their_sign() -> None:
    from tensorium.fuzz.ieee import sign_free

    x = np.array([-0.0, -0.0, 1.0, -1.0], np.float32)
    y = np.array([0.0, -0.0, -1.0, 0.0], np.float32)
    cases = {
        "add": ([True, True, False, False], "graph.add %x, %y"),
        "max": ([True, True, False, False], "graph.max %x, %y"),
        "mul": ([False, False, False, False], "graph.mul %x, %y"),
        "sub": ([True, True, False, False], "graph.sub %x, %y"),
    }
    for name, (want, expr) in cases.items():
        text = _module(
            f"    %0 = {expr} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n    func.return %0 : tensor<4xf32>"
        )
        (mask,) = sign_free(tm.parse_module(text), [x, y])
        assert mask.tolist() == want, name
    chain = _module(
        "    %0 = graph.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
        "    %1 = graph.neg %0 : (tensor<4xf32>) -> tensor<4xf32>\n"
        "    %2 = graph.reciprocal %1 : (tensor<4xf32>) -> tensor<4xf32>\n"
        "    %3 = graph.add %2, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
        "    %4 = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>\n"
        "    %5 = graph.slice %1 {starts = [3], ends = [-5], steps = [-1]} : (tensor<4xf32>) -> tensor<4xf32>\n"
        "    func.return %1, %2, %3, %4, %5 : "
        "tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>",
        result="(tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)",
    )
    negated, inverse, shifted, plain, reversed_ = sign_free(tm.parse_module(chain), [x, y])
    assert negated.tolist() == [True, True, False, False]
    assert inverse.tolist() == [True, True, False, False], "1 / (+-0) is +-inf"
    assert shifted.tolist() == [True, True, False, False], "inf + y is still the free inf"
    assert not plain.any(), "-x of an input has a sign IEEE fixes"
    assert reversed_.tolist() == [False, False, True, True], "the mask moves with the elements"
    summed = _module(
        "    %0 = graph.reduce_sum %x {axes = [0], keepdims = true} : (tensor<4xf32>) -> tensor<1xf32>\n"
        "    func.return %0 : tensor<1xf32>",
        result="tensor<1xf32>",
    )
    (mask,) = sign_free(tm.parse_module(summed), [np.zeros(4, np.float32), y])
    assert mask.tolist() == [True], "the order of a reduction's sum is the backend's"


NEG = _module(
    "    %0 = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>\n"
    "    %1 = graph.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
    "    func.return %0, %1 : tensor<4xf32>, tensor<4xf32>",
    result="(tensor<4xf32>, tensor<4xf32>)",
)


def _neg_as_zero_minus(module: Operation) -> None:
    """The bug: ``-x`` rewritten to ``0 - x``, which is +0 where -x is -0."""
    for op in list(module.walk()):
        if op.name == "graph.neg":
            with InsertionPoint.before_op(op):
                zero = graph.constant(value=DenseAttr(np.zeros((), np.float32), TensorType((), f32)))
                op.results[0].replace_all_uses_with(graph.sub(zero, op.operands[0]))
            op.erase()


def _add_zero_dropped(module: Operation) -> None:
    """``x + y`` rewritten to ``x`` where y is all zeros here: wrong only in the sign of a sum of zeros."""
    for op in list(module.walk()):
        if op.name == "graph.add":
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()


def test_a_pass_that_changes_the_sign_of_a_zero_is_caught_unless_ieee_allows_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tensorium.fuzz import oracle

    inputs = [np.array([0.0, -0.0, 1.0, 2.0], np.float32), np.zeros(4, np.float32)]
    monkeypatch.setattr(oracle, "case_inputs", lambda module, seed, specials=False: inputs)
    neg_as_zero_minus = _register(monkeypatch, "test-neg-as-zero-minus", _neg_as_zero_minus)
    add_zero_dropped = _register(monkeypatch, "test-add-zero-dropped", _add_zero_dropped)
    caught = check(FuzzCase(NEG, neg_as_zero_minus, backends=("interp",)))
    assert caught.failure is not None and caught.failure.kind == "mismatch", caught
    assert "got 0.0, expected -0.0" in caught.failure.summary
    assert check(FuzzCase(NEG, add_zero_dropped, backends=("interp",))).status == "ok", "-0 + +0 is either zero"


def test_special_inputs_are_judged_and_kept_in_case_files(drop_adds: str) -> None:
    from tensorium.fuzz.reduce import format_case, parse_case

    special = FuzzCase(SIMPLE, "cse", seed=3, backends=("interp", "cpu"), specials=True)
    assert check(special).status == "ok"
    broken = check(FuzzCase(SIMPLE, drop_adds, seed=3, backends=("interp",), specials=True))
    assert broken.failure is not None and broken.failure.kind == "mismatch"
    assert "// specials: yes" in format_case(special)
    assert parse_case(format_case(special)).specials
    assert not parse_case(format_case(FuzzCase(SIMPLE, "cse"))).specials


def test_an_infinity_may_meet_a_special_sized_value_of_its_sign_only() -> None:
    want = np.array([np.inf, -np.inf, 1.0, 2.0], np.float32)
    assert compare([want], [np.array([3e37, -2e31, 1.0, 2.0], np.float32)], [T4]) is None, "overflow is rounding"
    assert compare([want], [np.array([-3e37, -np.inf, 1.0, 2.0], np.float32)], [T4]) is not None
    assert compare([want], [np.array([1e6, -np.inf, 1.0, 2.0], np.float32)], [T4]) is not None
    assert compare([np.array([3e37], np.float32)], [np.array([np.inf], np.float32)], [TensorType((1,), f32)]) is None
    half = TensorType((1,), f16)
    assert compare([np.array([np.inf], np.float16)], [np.array([4e4], np.float16)], [half]) is None
    assert compare([np.array([np.inf], np.float16)], [np.array([1e3], np.float16)], [half]) is not None


def test_huge_constants_that_cancel_in_a_sum_are_ill_conditioned() -> None:

    module = tm.parse_module(
        _module(
            "    %c = graph.constant {value = dense<[3.0e38, -3.0e38, 0.0, 0.0]> : tensor<4xf32>}"
            " : () -> tensor<4xf32>\n"
            "    %0 = graph.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
            "    %1 = graph.reduce_sum %0 {axes = [0], keepdims = true} : (tensor<4xf32>) -> tensor<1xf32>\n"
            "    %2 = graph.reduce_sum %x {axes = [0], keepdims = true} : (tensor<4xf32>) -> tensor<1xf32>\n"
            "    func.return %1, %2 : tensor<1xf32>, tensor<1xf32>",
            args="%x: tensor<4xf32>",
            result="(tensor<1xf32>, tensor<1xf32>)",
        )
    )
    x = np.full(4, 0.5, np.float32)
    expected = run_interp(module, [x])
    cancelled, plain = ill_conditioned(module, [x], expected)
    assert cancelled.all(), "the sum of +-3e38 and small terms depends on the order: not a bug of any pass"
    assert not plain.any()


def test_sums_that_overflow_from_special_values_depend_on_their_order_and_nothing_else_does() -> None:
    from tensorium.fuzz.ieee import freedoms

    module = tm.parse_module(
        _module(
            "    %0 = graph.reduce_sum %x {axes = [1]} : (tensor<2x3xf32>) -> tensor<2xf32>\n"
            "    %1 = graph.mul %0, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
            "    %2 = graph.reduce_max %x {axes = [1]} : (tensor<2x3xf32>) -> tensor<2xf32>\n"
            "    func.return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>",
            args="%x: tensor<2x3xf32>, %y: tensor<2xf32>",
            result="(tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)",
        )
    )
    big = np.float32(3e38)
    x = np.array([[big, big, -big], [1.0, 2.0, 3.0]], np.float32)  # inf, or 3e38 summed in another order
    y = np.array([0.0, 2.0], np.float32)
    summed, scaled, largest = freedoms(module, [x, y]).order_dependent
    assert summed.tolist() == [True, False] and scaled.tolist() == [True, False]
    assert not largest.any(), "a maximum does not depend on an order"
    with np.errstate(all="ignore"):
        expected = run_interp(module, [x, y])
    t2 = TensorType((2,), f32)
    other_order = [np.array([big, 6.0], np.float32), np.array([0.0, 12.0], np.float32), expected[2]]
    assert compare(expected, other_order, [t2] * 3, forgiven=[summed, scaled, largest]) is None
    wrong = [expected[0], expected[1], np.array([big, 2.0], np.float32)]
    assert compare(expected, wrong, [t2] * 3, forgiven=[summed, scaled, largest]) is not None


def test_only_terms_with_huge_finite_factors_make_a_sum_order_dependent_but_in_a_factored_einsum() -> None:
    from tensorium.fuzz.ieee import freedoms

    mm = tm.parse_module(
        _module(
            "    %0 = graph.matmul %x, %y : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>\n"
            '    %1 = graph.einsum %x, %y {equation = "ab,bc->ac"}'
            " : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>\n"
            "    func.return %0, %1 : tensor<2x2xf32>, tensor<2x2xf32>",
            args="%x: tensor<2x2xf32>, %y: tensor<2x2xf32>",
            result="(tensor<2x2xf32>, tensor<2x2xf32>)",
        )
    )
    ones = np.ones((2, 2), np.float32)
    huge = np.array([[3e38, 1.0], [1.0, 1.0]], np.float32)
    product, _ = freedoms(mm, [huge, ones]).order_dependent
    assert product.tolist() == [[True, True], [False, False]], "row 0 sums a huge term, row 1 does not"
    infinite = np.array([[np.inf, 1.0], [1.0, 1.0]], np.float32)
    product, factored = freedoms(mm, [infinite, ones]).order_dependent
    assert not product.any(), "inf plus finite terms is inf in every order"
    assert factored.tolist() == [[True, True], [False, False]], "an einsum may factor: inf * 0 or not"
