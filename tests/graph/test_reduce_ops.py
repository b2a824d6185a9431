"""Reductions, argmax/argmin and cumsum: values against numpy and hand-computed cases, type
inference with symbolic dims, empty dims, and exact diagnostics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tensorium.backends.interp import run
from tensorium.errors import InterpreterError, VerifyError
from tensorium.ir import (
    OpDef,
    Sym,
    TensorType,
    f16,
    f32,
    graph,
    i1,
    i32,
    i64,
    parse_module,
)
from tensorium.ir.types import DYN
from tensorium.testing import build_module, op_error, result_type, run_op

RNG = np.random.default_rng(0)


REDUCTIONS = [
    (graph.reduce_sum, np.sum),
    (graph.reduce_mean, np.mean),
    (graph.reduce_max, np.max),
    (graph.reduce_min, np.min),
    (graph.reduce_prod, np.prod),
]


@pytest.mark.parametrize(("op", "fn"), REDUCTIONS, ids=lambda v: getattr(v, "name", ""))
@pytest.mark.parametrize("axes", [(1,), (-1,), (0, 2), (-3, -1), (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(op: OpDef, fn: Any, axes: tuple[int, ...], keepdims: bool) -> None:
    x = RNG.uniform(0.5, 1.5, size=(2, 3, 4)).astype(np.float32)
    out = run_op(op, x, axes=axes, keepdims=keepdims)
    expected = fn(x.astype(np.float64), axis=axes, keepdims=keepdims)
    assert out.dtype == np.float32 and out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_empty_axes_is_identity() -> None:
    x = np.array([[1.5, -2.0], [3.0, 4.0]], np.float32)
    for op, _ in REDUCTIONS:
        np.testing.assert_array_equal(run_op(op, x, axes=[], keepdims=True), x)
    assert result_type(graph.reduce_sum, TensorType((Sym("n"), 2), f32), axes=[]) == TensorType((Sym("n"), 2), f32)


def test_size_one_and_rank_one() -> None:
    x = np.array([[7.0, -1.0, 2.0]], np.float32)
    np.testing.assert_array_equal(run_op(graph.reduce_max, x, axes=[0]), [7.0, -1.0, 2.0])
    assert run_op(graph.reduce_sum, x[0], axes=[0]).tolist() == 8.0
    assert run_op(graph.reduce_sum, x[0], axes=[0]).shape == ()
    assert run_op(graph.reduce_prod, x[0], axes=[-1], keepdims=True).tolist() == [-14.0]


def test_empty_dimensions_have_identities() -> None:
    x = np.zeros((2, 0, 3), np.float32)
    np.testing.assert_array_equal(run_op(graph.reduce_sum, x, axes=[1]), np.zeros((2, 3)))
    np.testing.assert_array_equal(run_op(graph.reduce_prod, x, axes=[1]), np.ones((2, 3)))
    mean = run_op(graph.reduce_mean, x, axes=[1], keepdims=True)
    assert mean.shape == (2, 1, 3) and np.isnan(mean).all()
    assert run_op(graph.reduce_mean, np.zeros((0, 2), np.int32), axes=[0]).tolist() == [0, 0]
    # Reducing a non-empty axis of an empty tensor is fine for max too.
    assert run_op(graph.reduce_max, x, axes=[2]).shape == (2, 0)
    assert run_op(graph.reduce_sum, x, axes=[0]).shape == (0, 3)


@pytest.mark.parametrize(("op", "what"), [(graph.reduce_max, "max"), (graph.reduce_min, "min")])
def test_max_min_of_empty_dimension(op: OpDef, what: str) -> None:
    t = TensorType((2, 0, 3), f32)
    assert op_error(op, t, axes=[-2]) == f"{what} of an empty dimension (axis 1 has size 0) has no value"
    module = build_module([TensorType((Sym("n"), 3), f32)], lambda x: op(x, axes=[0]))
    with pytest.raises(InterpreterError) as info:
        run(module, [np.zeros((0, 3), np.float32)])
    assert str(info.value) == f"'{op.name}' failed: {what} of an empty dimension (axis 0 has size 0) has no value"


def test_integer_reductions() -> None:
    x = np.array([[-7, 2], [3, 4]], np.int32)
    assert run_op(graph.reduce_mean, x, axes=[1]).tolist() == [-2, 3]  # -2.5 and 3.5 truncate toward zero
    assert run_op(graph.reduce_sum, x, axes=[0, 1]).tolist() == 2
    assert run_op(graph.reduce_prod, x, axes=[0]).tolist() == [-21, 8]
    assert run_op(graph.reduce_max, x, axes=[0]).tolist() == [3, 4]
    assert run_op(graph.reduce_sum, np.array([100, 100], np.int8), axes=[0]).tolist() == -56  # wraps like i8
    assert run_op(graph.reduce_sum, np.array([200, 100], np.uint8), axes=[0]).tolist() == 44


def test_bool_max_min_are_any_all() -> None:
    x = np.array([[True, False], [False, False]])
    assert run_op(graph.reduce_max, x, axes=[1]).tolist() == [True, False]
    assert run_op(graph.reduce_min, x, axes=[0]).tolist() == [False, False]
    assert op_error(graph.reduce_sum, TensorType((2,), i1), axes=[0]) == (
        "operand element type must be a number (not i1), got i1"
    )


def test_nan_propagates_through_max() -> None:
    x = np.array([[1.0, np.nan], [2.0, 3.0]], np.float32)
    out = run_op(graph.reduce_max, x, axes=[1])
    assert np.isnan(out[0]) and out[1] == 3.0


def test_f16_sums_accumulate_in_f32() -> None:
    x = np.full(3000, 1.0, np.float16)
    out = run_op(graph.cumsum, x, axis=0)
    assert out.dtype == np.float16 and out[-1] == 3000.0  # an f16 accumulator sticks at 2048
    assert run_op(graph.reduce_sum, x, axes=[0]).tolist() == 3000.0
    assert run_op(graph.reduce_mean, np.full(10000, 0.1, np.float16), axes=[0]) == np.float16(0.1)


def test_reduction_types_keep_symbolic_dims() -> None:
    t = TensorType((Sym("n"), DYN, 4), f32)
    assert result_type(graph.reduce_sum, t, axes=[-1], keepdims=True) == TensorType((Sym("n"), DYN, 1), f32)
    assert result_type(graph.reduce_mean, t, axes=[0]) == TensorType((DYN, 4), f32)
    assert result_type(graph.reduce_max, t, axes=[1, 0]) == TensorType((4,), f32)


def test_reduction_axis_errors() -> None:
    t = TensorType((2, 3, 4), f32)
    assert op_error(graph.reduce_sum, t, axes=[1, -2]) == "axes [1, -2] repeat an axis"
    assert op_error(graph.reduce_mean, t, axes=[3]).endswith(" 3 is out of range for rank 3")
    assert op_error(graph.argmax, t, axis=-4) == "axis -4 is out of range for rank 3"
    assert op_error(graph.cumsum, t, axis=5) == "axis 5 is out of range for rank 3"


def test_missing_axes_attribute_is_reported_with_location() -> None:
    text = (
        "func.func @main(%x: tensor<2xf32>) -> tensor<f32> {\n"
        "  %0 = graph.reduce_sum %x : (tensor<2xf32>) -> tensor<f32>\n"
        "  func.return %0 : tensor<f32>\n"
        "}\n"
    )
    with pytest.raises(VerifyError, match=r"'graph\.reduce_sum' op requires attribute 'axes' \(a list of integers\)"):
        parse_module(text)


def test_argmax_argmin_ties_and_last_index() -> None:
    x = np.array([[1, 3, 3], [2, 2, 0]], np.int32)
    assert run_op(graph.argmax, x, axis=1).tolist() == [1, 0]
    assert run_op(graph.argmax, x, axis=-1, select_last_index=True).tolist() == [2, 1]
    assert run_op(graph.argmin, x, axis=1).tolist() == [0, 2]
    assert run_op(graph.argmin, x, axis=0, select_last_index=True).tolist() == [0, 1, 1]
    out = run_op(graph.argmax, x, axis=0, keepdims=True)
    assert out.dtype == np.int64 and out.tolist() == [[1, 0, 0]]
    assert run_op(graph.argmax, np.array([1.0, np.nan, 3.0], np.float32), axis=0).tolist() == 1


def test_argmax_matches_numpy_and_infers_i64() -> None:
    x = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    for axis in (0, 1, -1):
        np.testing.assert_array_equal(run_op(graph.argmax, x, axis=axis), np.argmax(x, axis=axis))
        np.testing.assert_array_equal(run_op(graph.argmin, x, axis=axis), np.argmin(x, axis=axis))
    t = TensorType((Sym("b"), 7, DYN), f16)
    assert result_type(graph.argmax, t, axis=1) == TensorType((Sym("b"), DYN), i64)
    assert result_type(graph.argmin, t, axis=-1, keepdims=True) == TensorType((Sym("b"), 7, 1), i64)
    assert op_error(graph.argmin, TensorType((0, 3), f32), axis=0) == (
        "argmin of an empty dimension (axis 0 has size 0) has no value"
    )
    assert run_op(graph.argmax, np.zeros((0, 3), np.float32), axis=1).shape == (0,)


@pytest.mark.parametrize(
    ("exclusive", "reverse", "expected"),
    [
        (False, False, [1, 3, 6, 10]),
        (True, False, [0, 1, 3, 6]),
        (False, True, [10, 9, 7, 4]),
        (True, True, [9, 7, 4, 0]),
    ],
)
def test_cumsum_modes(exclusive: bool, reverse: bool, expected: list[int]) -> None:
    x = np.array([1, 2, 3, 4], np.int32)
    assert run_op(graph.cumsum, x, axis=0, exclusive=exclusive, reverse=reverse).tolist() == expected


def test_cumsum_axes_and_empty() -> None:
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_allclose(run_op(graph.cumsum, x, axis=-1), np.cumsum(x, axis=1), rtol=1e-6)
    np.testing.assert_allclose(run_op(graph.cumsum, x, axis=0, exclusive=True)[1:], np.cumsum(x, axis=0)[:-1])
    assert run_op(graph.cumsum, np.zeros((2, 0), np.float32), axis=1, exclusive=True).shape == (2, 0)
    t = TensorType((Sym("n"), 3), i32)
    assert result_type(graph.cumsum, t, axis=0) == t
    assert op_error(graph.cumsum, TensorType((3,), i1), axis=0) == (
        "operand element type must be a number (not i1), got i1"
    )
