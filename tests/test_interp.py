"""The interpreter's contract: inputs, symbolic-dim binding, result coercion and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends.interp import coerce, round_to_bf16, run, wrap_integers
from tensorium.errors import InterpreterError, SymbolError
from tensorium.ir import IntegerType, bf16

ADD = """
func.func @main(%x: tensor<[n]x3xf32>, %y: tensor<[n]x3xf32>) -> tensor<[n]x3xf32> {
  %0 = graph.add %x, %y : (tensor<[n]x3xf32>, tensor<[n]x3xf32>) -> tensor<[n]x3xf32>
  func.return %0 : tensor<[n]x3xf32>
}
"""


def test_inputs_by_position_and_by_name() -> None:
    m = tm.parse_module(ADD)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(run(m, [x, x])[0], 2 * x)
    np.testing.assert_array_equal(run(m, {"y": x, "x": 3 * x})[0], 4 * x)


def test_named_dims_bind_consistently() -> None:
    m = tm.parse_module(ADD)
    with pytest.raises(InterpreterError, match=r"dimension \[n\] is 3 here but 2 elsewhere \(axis 0\)"):
        run(m, [np.zeros((2, 3), np.float32), np.zeros((3, 3), np.float32)])


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ([np.zeros((2, 3), np.float32)], "@main takes 2 inputs, got 1"),
        (
            [np.zeros((2, 3), np.float64)] * 2,
            "input #0 'x': expected dtype float32 for tensor<\\[n\\]x3xf32>, got float64",
        ),
        (
            [np.zeros((2, 4), np.float32)] * 2,
            "input #0 'x': expected shape tensor<\\[n\\]x3xf32>, got \\[2, 4\\] \\(axis 1\\)",
        ),
        ([np.zeros(3, np.float32)] * 2, "input #0 'x': expected rank 2"),
        ({"x": np.zeros((1, 3), np.float32)}, "missing input 'y'"),
        ({"x": 1, "y": 2, "z": 3}, "has no input named 'z'"),
    ],
)
def test_bad_inputs_give_clear_errors(inputs: object, message: str) -> None:
    with pytest.raises(InterpreterError, match=message):
        run(tm.parse_module(ADD), inputs)  # type: ignore[arg-type]


def test_function_selection() -> None:
    text = ADD.replace("@main", "@first") + ADD.replace("@main", "@second")
    m = tm.parse_module(text)
    with pytest.raises(SymbolError, match=r"no @main and several functions \(@first, @second\): name one"):
        run(m, [])
    with pytest.raises(SymbolError, match="no function @third; the module has @first, @second"):
        run(m, [], func="third")
    x = np.ones((1, 3), np.float32)
    np.testing.assert_array_equal(run(m, [x, x], func="second")[0], 2 * x)


def test_narrow_integers_wrap() -> None:
    assert wrap_integers(np.array([3, 4, -5, 7, 8], np.int8), IntegerType(3)).tolist() == [3, -4, 3, -1, 0]
    assert wrap_integers(np.array([31, 32, 33], np.uint8), IntegerType(5, False)).tolist() == [31, 0, 1]
    wide = np.array([5, -5, 2**62, -(2**62) - 1], np.int64)  # 63-bit types once overflowed while wrapping
    assert wrap_integers(wide, IntegerType(63)).tolist() == [5, -5, -(2**62), 2**62 - 1]
    assert wrap_integers(np.array([2**63 + 3], np.uint64), IntegerType(63, False)).tolist() == [3]
    text = """
func.func @main(%x: tensor<4xi3>) -> tensor<4xi3> {
  %0 = graph.add %x, %x : (tensor<4xi3>, tensor<4xi3>) -> tensor<4xi3>
  func.return %0 : tensor<4xi3>
}
"""
    out = run(tm.parse_module(text), [np.array([1, 2, 3, -4], np.int8)])[0]
    assert out.tolist() == [2, -4, -2, 0]


def test_bf16_rounds_to_nearest_even() -> None:
    x = np.array([1.0, 1.00390625, 1.01171875, np.inf, np.nan, -3.3], np.float32)
    got = round_to_bf16(x)
    assert got[0] == 1.0 and got[1] == 1.0  # halfway rounds to even
    assert got[2] == np.float32(1.015625)
    assert np.isinf(got[3]) and np.isnan(got[4])
    assert got[5] == np.float32(-3.296875)
    assert coerce(np.array([1.00390625], np.float64), bf16).dtype == np.float32
    assert round_to_bf16(np.float32(1.5)).shape == ()  # rank 0 once came back as rank 1


def test_outputs_are_writable_even_for_constants() -> None:
    text = """
func.func @main() -> tensor<2xf32> {
  %0 = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
"""
    (out,) = run(tm.parse_module(text), [])
    out[0] = 5.0
    assert run(tm.parse_module(text), [])[0].tolist() == [1.0, 2.0]
