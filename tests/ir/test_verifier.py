"""The verifier: structural rules, declaration-driven checks, and messages naming op, place and rule."""

from __future__ import annotations

import pytest

import tensorium as tm
from tensorium.errors import VerifyError
from tensorium.ir import InsertionPoint, Operation, TensorType, f32, func_body, graph, make_func, make_module
from tensorium.ir.dialects.builtin import make_return, set_results

T = TensorType((4,), f32)


def _parse_error(text: str) -> str:
    with pytest.raises(VerifyError) as info:
        tm.parse_module(text, "v.mlir")
    return str(info.value)


def test_use_before_definition_is_rejected() -> None:
    func = make_func("main", [T])
    block = func_body(func)
    with InsertionPoint(block):
        a = graph.neg(block.args[0])
        b = graph.neg(a)
    block.remove(a.owner)
    block.append(a.owner)
    set_results(func, [b])
    with pytest.raises(
        VerifyError, match=r"'graph\.neg' op operand #0 \(result of 'graph\.neg'\) is not defined before"
    ):
        tm.verify(make_module([func]))


def test_value_from_another_function_is_not_visible() -> None:
    f = make_func("f", [T])
    g = make_func("g", [T])
    with InsertionPoint(func_body(g)):
        y = graph.neg(func_body(f).args[0])
    set_results(f, list(func_body(f).args))
    set_results(g, [y])
    with pytest.raises(VerifyError, match="operand #0 \\(block argument of type tensor<4xf32>\\) is not defined"):
        tm.verify(make_module([f, g]))


def test_return_must_match_signature() -> None:
    message = _parse_error(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xi32> {\n  func.return %x : tensor<4xf32>\n}\n"
    )
    assert message.startswith("v.mlir:1:1: error: 'func.func' op returns (tensor<4xf32>) but the signature says")


def test_function_must_end_with_return() -> None:
    func = make_func("main", [T])
    with pytest.raises(VerifyError, match=r"'func\.func' op body must end with 'func\.return'"):
        tm.verify(make_module([func]))


def test_terminator_must_be_last() -> None:
    func = make_func("main", [T])
    block = func_body(func)
    block.append(make_return(list(block.args)))
    with InsertionPoint(block):
        graph.neg(block.args[0])
    with pytest.raises(VerifyError, match=r"'func\.return' op must be the last op of its block"):
        tm.verify(make_module([func]))


def test_duplicate_function_names() -> None:
    fs = []
    for _ in range(2):
        f = make_func("same", [T])
        set_results(f, list(func_body(f).args))
        fs.append(f)
    with pytest.raises(VerifyError, match="defines function @same twice"):
        tm.verify(make_module(fs))


def test_unregistered_op() -> None:
    func = make_func("main", [T])
    block = func_body(func)
    bogus = Operation("graph.bogus", [block.args[0]], [T])
    block.append(bogus)
    set_results(func, [bogus.result])
    with pytest.raises(VerifyError, match=r"'graph\.bogus' op is not a registered operation"):
        tm.verify(make_module([func]))


def test_result_type_must_match_inference_and_message_shows_source() -> None:
    message = _parse_error(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = graph.exp %x : (tensor<4xf32>) -> tensor<4xf64>\n"
        "  func.return %x : tensor<4xf32>\n}\n"
    )
    assert message == (
        "v.mlir:2:8: error: 'graph.exp' op result #0 has type tensor<4xf64>, but the operands give tensor<4xf32>\n"
        "    %0 = graph.exp %x : (tensor<4xf32>) -> tensor<4xf64>\n"
        "         ^"
    )


def test_missing_required_attribute_and_wrong_kind() -> None:
    assert "'graph.cast' op requires attribute 'dtype' (an element type)" in _parse_error(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = graph.cast %x : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  func.return %0 : tensor<4xf32>\n}\n"
    )
    assert "'graph.matmul' op attribute 'transpose_b': expected a boolean, got 1" in _parse_error(
        "func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {\n"
        "  %0 = graph.matmul %x, %x {transpose_b = 1} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>\n"
        "  func.return %0 : tensor<4x4xf32>\n}\n"
    )


def test_symbolic_dims_are_compatible_with_static_results() -> None:
    text = (
        "func.func @main(%x: tensor<[n]x4xf32>, %y: tensor<?x4xf32>) -> tensor<[n]x4xf32> {\n"
        "  %0 = graph.add %x, %y : (tensor<[n]x4xf32>, tensor<?x4xf32>) -> tensor<[n]x4xf32>\n"
        "  func.return %0 : tensor<[n]x4xf32>\n}\n"
    )
    tm.parse_module(text)
    bad = text.replace("-> tensor<[n]x4xf32>\n  func", "-> tensor<[m]x4xf32>\n  func").replace(
        "return %0 : tensor<[n]", "return %0 : tensor<[m]"
    )
    assert "returns (tensor<[m]x4xf32>) but the signature says" in _parse_error(bad)
