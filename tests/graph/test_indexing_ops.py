"""Gathers, scatters and embedding: the ONNX spec examples, numpy cross-checks, negative and
out-of-range indices, duplicate-index reductions, symbolic type inference and exact diagnostics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tensorium.errors import InterpreterError
from tensorium.ir import (
    OpDef,
    Sym,
    TensorType,
    f32,
    graph,
    i1,
    i32,
    i64,
    index,
    u8,
)
from tensorium.testing import op_error, result_type, run_op

RNG = np.random.default_rng(0)
N, K = Sym("n"), Sym("k")


def run_error(op: OpDef, *arrays: np.ndarray, **attrs: Any) -> str:
    """The InterpreterError message running ``op`` on ``arrays`` gives."""
    with pytest.raises(InterpreterError) as info:
        run_op(op, *arrays, **attrs)
    return str(info.value)


def ints(values: Any, dtype: Any = np.int64) -> np.ndarray:
    return np.array(values, dtype=dtype)


def floats(values: Any) -> np.ndarray:
    return np.array(values, dtype=np.float32)


# gather ---------------------------------------------------------------------------------------
def test_gather_onnx_examples() -> None:
    data = floats([[1.0, 1.2], [2.3, 3.4], [4.5, 5.7]])
    out = run_op(graph.gather, data, ints([[0, 1], [1, 2]]))
    np.testing.assert_array_equal(out, floats([[[1.0, 1.2], [2.3, 3.4]], [[2.3, 3.4], [4.5, 5.7]]]))
    data = floats([[1.0, 1.2, 1.9], [2.3, 3.4, 3.9], [4.5, 5.7, 5.9]])
    out = run_op(graph.gather, data, ints([[0, 2]]), axis=1)
    np.testing.assert_array_equal(out, floats([[[1.0, 1.9]], [[2.3, 3.9]], [[4.5, 5.9]]]))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64])
def test_gather_index_dtypes_and_negative_indices(dtype: Any) -> None:
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = ints([3, 0, 1, 3], dtype)
    np.testing.assert_array_equal(run_op(graph.gather, data, idx, axis=-1), data[:, [3, 0, 1, 3]])
    if np.dtype(dtype).kind == "i":
        np.testing.assert_array_equal(run_op(graph.gather, data, ints([-1, -3], dtype)), data[[2, 0]])


def test_gather_scalar_and_empty_indices() -> None:
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert run_op(graph.gather, data, ints(2), axis=1).tolist() == [2, 6, 10]
    assert run_op(graph.gather, data, ints([], np.int32)).shape == (0, 4)
    assert run_op(graph.gather, np.zeros((0, 2), np.float32), ints([1]), axis=1).shape == (0, 1)


def test_gather_out_of_range() -> None:
    data = np.zeros((3, 2), np.float32)
    assert (
        run_error(graph.gather, data, ints([0, 3]))
        == "'graph.gather' failed: index 3 is out of range for axis 0 of size 3"
    )
    assert (
        run_error(graph.gather, data, ints([-4]))
        == "'graph.gather' failed: index -4 is out of range for axis 0 of size 3"
    )


def test_gather_types() -> None:
    data = TensorType((N, 4, 6), f32)
    assert result_type(graph.gather, data, TensorType((K, 2), i32), axis=1) == TensorType((N, K, 2, 6), f32)
    assert result_type(graph.gather, data, TensorType((), index), axis=-1) == TensorType((N, 4), f32)
    assert op_error(graph.gather, data, TensorType((2,), f32)) == "indices element type must be an integer, got f32"
    assert op_error(graph.gather, data, TensorType((2,), i1)) == "indices element type must be an integer, got i1"
    assert op_error(graph.gather, data, TensorType((2,), i32), axis=3) == "axis 3 is out of range for rank 3"


# gather_elements ------------------------------------------------------------------------------
def test_gather_elements_onnx_examples() -> None:
    out = run_op(graph.gather_elements, floats([[1, 2], [3, 4]]), ints([[0, 0], [1, 0]]), axis=1)
    assert out.tolist() == [[1, 1], [4, 3]]
    data = floats([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    assert run_op(graph.gather_elements, data, ints([[1, 2, 0], [2, 0, 0]])).tolist() == [[4, 8, 3], [7, 2, 3]]
    assert run_op(graph.gather_elements, data, ints([[-1, 0]], np.int8), axis=-1).tolist() == [[3, 1]]


def test_gather_elements_matches_take_along_axis() -> None:
    data = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    for axis in (0, 1, -1):
        shape = list(data.shape)
        shape[axis] = 6
        idx = RNG.integers(0, data.shape[axis], size=shape)
        expected = np.take_along_axis(data, idx, axis=axis)
        np.testing.assert_array_equal(run_op(graph.gather_elements, data, idx, axis=axis), expected)
    assert run_op(graph.gather_elements, data, np.zeros((3, 0, 5), np.int32), axis=1).shape == (3, 0, 5)


def test_gather_elements_types_and_errors() -> None:
    data = TensorType((N, 5), f32)
    assert result_type(graph.gather_elements, data, TensorType((N, 2), i32), axis=1) == TensorType((N, 2), f32)
    assert op_error(graph.gather_elements, TensorType((2, 2), f32), TensorType((2,), i64)) == (
        "gather_elements indices must have the rank of data (2), got tensor<2xi64>"
    )
    assert op_error(graph.gather_elements, TensorType((2, 2), f32), TensorType((3, 2), i64), axis=1) == (
        "gather_elements indices dim 0 (3) is larger than the data dim (2)"
    )
    assert op_error(graph.gather_elements, data, TensorType((N, 2), f32)) == (
        "indices element type must be an integer, got f32"
    )
    message = run_error(graph.gather_elements, floats([[1, 2]]), ints([[0, 2]]), axis=1)
    assert message == "'graph.gather_elements' failed: index 2 is out of range for axis 1 of size 2"


# gather_nd ------------------------------------------------------------------------------------
D222 = np.arange(8, dtype=np.int32).reshape(2, 2, 2)


@pytest.mark.parametrize(
    ("data", "indices", "batch_dims", "expected"),
    [
        (D222[0], [[0, 0], [1, 1]], 0, [0, 3]),
        (D222[0], [[1], [0]], 0, [[2, 3], [0, 1]]),
        (D222, [[0, 1], [1, 0]], 0, [[2, 3], [4, 5]]),
        (D222, [[[0, 1]], [[1, 0]]], 0, [[[2, 3]], [[4, 5]]]),
        (D222, [[1], [0]], 1, [[2, 3], [4, 5]]),
        (D222, [[-1, -2, 1]], 0, [5]),
    ],
)
def test_gather_nd_onnx_examples(data: np.ndarray, indices: Any, batch_dims: int, expected: Any) -> None:
    assert run_op(graph.gather_nd, data, ints(indices), batch_dims=batch_dims).tolist() == expected


def test_gather_nd_matches_numpy() -> None:
    data = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    idx = np.stack([RNG.integers(0, 3, size=(2, 6)), RNG.integers(-4, 4, size=(2, 6))], axis=-1)
    np.testing.assert_array_equal(run_op(graph.gather_nd, data, idx), data[idx[..., 0], idx[..., 1]])
    batched = np.stack([RNG.integers(0, 4, size=(3, 2)), RNG.integers(0, 5, size=(3, 2))], axis=-1)
    out = run_op(graph.gather_nd, data, batched.astype(np.int32), batch_dims=1)
    expected = np.stack([data[b][batched[b, :, 0], batched[b, :, 1]] for b in range(3)])
    np.testing.assert_array_equal(out, expected)
    assert run_op(graph.gather_nd, data, np.zeros((0, 1), np.int64)).shape == (0, 4, 5)


def test_gather_nd_types_and_errors() -> None:
    assert result_type(graph.gather_nd, TensorType((N, 4, 5), f32), TensorType((K, 1), i64)) == (
        TensorType((K, 4, 5), f32)
    )
    assert result_type(
        graph.gather_nd, TensorType((N, 4, 5), f32), TensorType((N, 3, 1), i32), batch_dims=1
    ) == TensorType((N, 3, 5), f32)
    data = TensorType((2, 3), f32)
    assert op_error(graph.gather_nd, data, TensorType((4, K), i64)) == (
        "gather_nd indices need a static last dim, got tensor<4x[k]xi64>"
    )
    assert op_error(graph.gather_nd, data, TensorType((4, 3), i64)) == (
        "gather_nd index tuples have length 3, which must be in 1..2"
    )
    assert op_error(graph.gather_nd, data, TensorType((3, 1), i64), batch_dims=1) == (
        "gather_nd batch dim 0 differs: 2 != 3"
    )
    assert op_error(graph.gather_nd, data, TensorType((2, 1), i64), batch_dims=2) == (
        "gather_nd batch_dims 2 must be in 0..1 for tensor<2x3xf32> and tensor<2x1xi64>"
    )
    message = run_error(graph.gather_nd, D222, ints([[0, 2]]))
    assert message == "'graph.gather_nd' failed: index 2 is out of range for axis 1 of size 2"


# scatter_elements -----------------------------------------------------------------------------
def test_scatter_elements_onnx_examples() -> None:
    updates = floats([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]])
    out = run_op(graph.scatter_elements, np.zeros((3, 3), np.float32), ints([[1, 0, 2], [0, 2, 1]]), updates)
    np.testing.assert_array_equal(out, floats([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]]))
    data = floats([[1, 2, 3, 4, 5]])
    out = run_op(graph.scatter_elements, data, ints([[1, 3]]), floats([[1.1, 2.1]]), axis=1)
    np.testing.assert_array_equal(out, floats([[1.0, 1.1, 3.0, 2.1, 5.0]]))
    out = run_op(graph.scatter_elements, data, ints([[1, -3]], np.int16), floats([[1.1, 2.1]]), axis=-1)
    np.testing.assert_array_equal(out, floats([[1.0, 1.1, 2.1, 4.0, 5.0]]))


@pytest.mark.parametrize(
    ("reduction", "expected"),
    [("none", 2.1), ("add", 2 + 1.1 + 2.1), ("mul", 2 * 1.1 * 2.1), ("max", 2.1), ("min", 1.1)],
)
def test_scatter_elements_duplicate_indices(reduction: str, expected: float) -> None:
    data = floats([[1, 2, 3, 4, 5]])
    out = run_op(graph.scatter_elements, data, ints([[1, 1]]), floats([[1.1, 2.1]]), axis=1, reduction=reduction)
    np.testing.assert_allclose(out, floats([[1, expected, 3, 4, 5]]), rtol=1e-6)


def test_scatter_elements_matches_numpy_add_at() -> None:
    data = RNG.normal(size=(4, 5)).astype(np.float32)
    idx = RNG.integers(0, 4, size=(6, 3))
    updates = RNG.normal(size=(6, 3)).astype(np.float32)
    expected = data.copy()
    np.add.at(expected, (idx, np.arange(3)[None, :]), updates)
    out = run_op(graph.scatter_elements, data, idx, updates, reduction="add")
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_scatter_elements_types_and_errors() -> None:
    data = TensorType((N, 5), f32)
    assert result_type(graph.scatter_elements, data, TensorType((K, 2), u8), TensorType((K, 2), f32)) == data
    assert op_error(graph.scatter_elements, data, TensorType((2, 2), i32), TensorType((2, 3), f32)) == (
        "scatter_elements updates differ from indices in dim 1: 2 != 3"
    )
    assert op_error(graph.scatter_elements, data, TensorType((2, 2), i32), TensorType((2, 2), i32)) == (
        "data and updates must have one element type, got f32, i32"
    )
    flags = TensorType((3,), i1)
    assert op_error(graph.scatter_elements, flags, TensorType((1,), i32), flags, reduction="add") == (
        'data of reduction "add" element type must be a number (not i1), got i1'
    )
    out = run_op(graph.scatter_elements, np.zeros(3, np.bool_), ints([2, 0]), np.ones(2, np.bool_), reduction="max")
    assert out.tolist() == [True, False, True]


# scatter_nd -----------------------------------------------------------------------------------
def test_scatter_nd_onnx_examples() -> None:
    data = np.arange(1, 9, dtype=np.float32)
    out = run_op(graph.scatter_nd, data, ints([[4], [3], [1], [7]]), floats([9, 10, 11, 12]))
    assert out.tolist() == [1, 11, 3, 10, 9, 6, 7, 12]
    cube = np.arange(64, dtype=np.float32).reshape(4, 4, 4)
    updates = np.full((2, 4, 4), -1.0, np.float32)
    expected = cube.copy()
    expected[[0, 2]] = -1.0
    np.testing.assert_array_equal(run_op(graph.scatter_nd, cube, ints([[0], [2]]), updates), expected)


@pytest.mark.parametrize(("reduction", "expected"), [("none", [2, 0, 0]), ("add", [3, 0, 0]), ("mul", [0, 0, 0])])
def test_scatter_nd_duplicates(reduction: str, expected: list[int]) -> None:
    out = run_op(
        graph.scatter_nd, np.zeros(3, np.int32), ints([[0], [-3]]), ints([1, 2], np.int32), reduction=reduction
    )
    assert out.tolist() == expected


def test_scatter_nd_is_index_put_with_accumulate() -> None:
    data = RNG.normal(size=(3, 4)).astype(np.float32)
    rows, cols = np.array([0, 0, 2, 1]), np.array([1, 1, 3, 0])
    updates = floats([1, 2, 3, 4])
    expected = data.copy()
    np.add.at(expected, (rows, cols), updates)
    out = run_op(graph.scatter_nd, data, np.stack([rows, cols], -1), updates, reduction="add")
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert run_op(graph.scatter_nd, data, np.zeros((0, 2), np.int32), floats([])).tolist() == data.tolist()


def test_scatter_nd_types_and_errors() -> None:
    data = TensorType((N, 4), f32)
    assert result_type(graph.scatter_nd, data, TensorType((K, 1), i64), TensorType((K, 4), f32)) == data
    d = TensorType((3, 4), f32)
    assert op_error(graph.scatter_nd, d, TensorType((2, 1), i64), TensorType((2, 3), f32)) == (
        "scatter_nd updates dim 1 differs from indices[:-1] + data[1:]: 4 != 3"
    )
    assert op_error(graph.scatter_nd, d, TensorType((2, 1), i64), TensorType((2,), f32)) == (
        "scatter_nd updates must have shape indices[:-1] + data[1:] = [2, 4], got tensor<2xf32>"
    )
    assert op_error(graph.scatter_nd, d, TensorType((2, 3), i64), TensorType((2,), f32)) == (
        "scatter_nd index tuples have length 3, which must be in 1..2"
    )
    assert op_error(graph.scatter_nd, d, TensorType((2, 1), f32), TensorType((2, 4), f32)) == (
        "indices element type must be an integer, got f32"
    )
    message = run_error(graph.scatter_nd, np.zeros(8, np.float32), ints([[8]]), floats([1]))
    assert message == "'graph.scatter_nd' failed: index 8 is out of range for axis 0 of size 8"


# embedding ------------------------------------------------------------------------------------
def test_embedding() -> None:
    weight = np.arange(15, dtype=np.float32).reshape(5, 3)
    idx = ints([[0, 4], [2, 2]], np.int32)
    np.testing.assert_array_equal(run_op(graph.embedding, weight, idx), weight[idx])
    assert run_op(graph.embedding, weight, ints([], np.int64)).shape == (0, 3)
    types = (TensorType((100, 16), f32), TensorType((N, K), i64))
    assert result_type(graph.embedding, *types) == TensorType((N, K, 16), f32)
    assert op_error(graph.embedding, TensorType((2, 3, 4), f32), TensorType((2,), i32)) == (
        "embedding weight must have rank 2, got tensor<2x3x4xf32>"
    )
    assert op_error(graph.embedding, TensorType((2, 3), f32), TensorType((2,), f32)) == (
        "indices element type must be an integer, got f32"
    )
    message = run_error(graph.embedding, weight, ints([1, -1]))
    assert message == "'graph.embedding' failed: index -1 is out of range for the embedding table of size 5"
