"""Shape ops: values against numpy and hand-computed cases, ONNX attribute conventions, type
inference with symbolic dims, text round trips and exact diagnostics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorium as tm
from tensorium.backends.interp import run
from tensorium.errors import InterpreterError, VerifyError
from tensorium.ir import (
    Sym,
    TensorType,
    Type,
    f32,
    f64,
    func_body,
    func_type,
    functions,
    graph,
    i1,
    i32,
    i64,
    make_func,
    parse_module,
)
from tensorium.ir.types import DYN, tensor_type_of
from tensorium.testing import build_module, op_error, result_type, run_op

END = 2**63 - 1
N, M = Sym("n"), Sym("m")


X234 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


# reshape --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("shape", "expected"),
    [([4, -1], (4, 6)), ([0, -1], (2, 12)), ([0, 0, 2, 2], (2, 3, 2, 2)), ([-1], (24,)), ([24, 1, 1], (24, 1, 1))],
)
def test_reshape_values(shape: list[int], expected: tuple[int, ...]) -> None:
    np.testing.assert_array_equal(run_op(graph.reshape, X234, shape=shape), X234.reshape(expected))


def test_reshape_allowzero_and_empty() -> None:
    x = np.zeros((0, 3), np.float32)
    assert run_op(graph.reshape, x, shape=[3, 0], allowzero=True).shape == (3, 0)
    assert run_op(graph.reshape, x, shape=[0, -1]).shape == (0, 3)
    assert run_op(graph.reshape, x, shape=[-1, 3]).shape == (0, 3)
    assert op_error(graph.reshape, TensorType((0, 3), f32), shape=[3, 0]) == (
        "cannot reshape tensor<0x3xf32> (0 elements) to shape [3, 0]"
    )
    assert op_error(graph.reshape, TensorType((0, 3), f32), shape=[0, -1], allowzero=True) == (
        "reshape shape [0, -1] mixes 0 and -1 with allowzero"
    )


@pytest.mark.parametrize(
    ("shape_in", "target", "expected"),
    [
        ((Sym("b"), Sym("s"), 64), [0, 0, 4, 16], (Sym("b"), Sym("s"), 4, 16)),
        ((Sym("b"), Sym("s"), 64), [0, -1], (Sym("b"), Sym("64*s"))),  # a dim expression
        ((Sym("b"), 4, 4), [0, 16], (Sym("b"), 16)),
        ((Sym("b"), 64), [-1, 8, 8], (Sym("b"), 8, 8)),
        ((Sym("b"), 4), [-1], (Sym("4*b"),)),
        ((Sym("b"), 4), [-1, 8], (DYN, 8)),  # 4*b/8: not a product of names
        ((N, 6), [0, 2, 3], (N, 2, 3)),
        ((DYN, 6), [0, 3, -1], (DYN, 3, 2)),
    ],
)
def test_reshape_symbolic(shape_in: tuple[Any, ...], target: list[int], expected: tuple[Any, ...]) -> None:
    assert result_type(graph.reshape, TensorType(shape_in, f32), shape=target) == TensorType(expected, f32)


def test_reshape_runs_with_symbolic_dims() -> None:
    module = build_module([TensorType((Sym("b"), Sym("s"), 64), f32)], lambda x: graph.reshape(x, shape=[0, -1]))
    x = np.arange(2 * 3 * 64, dtype=np.float32).reshape(2, 3, 64)
    np.testing.assert_array_equal(run(module, [x])[0], x.reshape(2, 192))


@pytest.mark.parametrize(
    ("shape_in", "target", "message"),
    [
        ((2, 3), [4, 2], "cannot reshape tensor<2x3xf32> (6 elements) to shape [4, 2]"),
        ((2, 3), [4, -1], "cannot reshape tensor<2x3xf32> (6 elements) to shape [4, -1]"),
        ((N, 6), [0, 4], "cannot reshape tensor<[n]x6xf32> to shape [0, 4]"),
        ((2, 3), [-1, -1], "reshape shape [-1, -1] has more than one -1"),
        ((2, 3), [2, -3], "reshape shape [2, -3] has a negative size -3"),
        ((6,), [0, 0, 6], "reshape shape [0, 0, 6] copies dim 1 but the input has rank 1"),
    ],
)
def test_reshape_errors(shape_in: tuple[Any, ...], target: list[int], message: str) -> None:
    assert op_error(graph.reshape, TensorType(shape_in, f32), shape=target) == message


# transpose ------------------------------------------------------------------------------------
def test_transpose() -> None:
    np.testing.assert_array_equal(run_op(graph.transpose, X234, perm=[2, 0, 1]), X234.transpose(2, 0, 1))
    assert run_op(graph.transpose, np.zeros((0, 1), np.int32), perm=[1, 0]).shape == (1, 0)
    t = TensorType((N, DYN, 3), f32)
    assert result_type(graph.transpose, t, perm=[2, 0, 1]) == TensorType((3, N, DYN), f32)
    assert op_error(graph.transpose, TensorType((2, 3), f32), perm=[0, 0]) == (
        "perm [0, 0] is not a permutation of the 2 axes of tensor<2x3xf32>"
    )
    assert op_error(graph.transpose, TensorType((2, 3), f32), perm=[1, 0, 2]) == (
        "perm [1, 0, 2] is not a permutation of the 2 axes of tensor<2x3xf32>"
    )


def test_bad_perm_in_text_names_line_and_column() -> None:
    text = (
        "func.func @main(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {\n"
        "  %0 = graph.transpose %x {perm = [1, -1]} : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
        "  func.return %0 : tensor<3x2xf32>\n"
        "}\n"
    )
    with pytest.raises(VerifyError) as info:
        parse_module(text, "t.mlir")
    assert str(info.value).splitlines()[0].startswith("t.mlir:2:")
    assert info.value.message == "perm [1, -1] is not a permutation of the 2 axes of tensor<2x3xf32>"


# broadcast_to ---------------------------------------------------------------------------------
def test_broadcast_to() -> None:
    x = np.array([[1.0], [2.0], [3.0]], np.float32)
    np.testing.assert_array_equal(run_op(graph.broadcast_to, x, shape=[2, 3, 4]), np.broadcast_to(x, (2, 3, 4)))
    np.testing.assert_array_equal(run_op(graph.broadcast_to, x, shape=[2, -1, 4]), np.broadcast_to(x, (2, 3, 4)))
    assert run_op(graph.broadcast_to, x, shape=[3, 0]).shape == (3, 0)
    assert result_type(graph.broadcast_to, TensorType((N, 1), f32), shape=[-1, 5]) == TensorType((N, 5), f32)
    assert result_type(graph.broadcast_to, TensorType((DYN, 1), i32), shape=[7, 4, 5]) == TensorType((7, 4, 5), i32)
    t = TensorType((3,), f32)
    assert op_error(graph.broadcast_to, t, shape=[4]) == (
        "cannot broadcast tensor<3xf32> to shape [4]: input dim 3 is neither 1 nor 4"
    )
    assert op_error(graph.broadcast_to, t, shape=[-1, 3]) == (
        "broadcast shape [-1, 3] has -1 at position 0, which has no input dim"
    )
    assert op_error(graph.broadcast_to, TensorType((2, 3), f32), shape=[3]) == (
        "cannot broadcast tensor<2x3xf32> to shape [3] of lower rank"
    )


# squeeze / unsqueeze --------------------------------------------------------------------------
def test_squeeze() -> None:
    x = np.arange(3, dtype=np.float32).reshape(1, 3, 1)
    np.testing.assert_array_equal(run_op(graph.squeeze, x, axes=[0, -1]), [0.0, 1.0, 2.0])
    assert run_op(graph.squeeze, x, axes=[2]).shape == (1, 3)
    assert run_op(graph.squeeze, x, axes=[]).shape == (1, 3, 1)
    assert result_type(graph.squeeze, TensorType((N, 1, DYN), f32), axes=[1, 2]) == TensorType((N,), f32)
    assert (
        op_error(graph.squeeze, TensorType((1, 3), f32), axes=[1]) == "cannot squeeze axis 1 of size 3 (it must be 1)"
    )
    module = build_module([TensorType((N, 3), f32)], lambda x: graph.squeeze(x, axes=[0]))
    assert run(module, [np.ones((1, 3), np.float32)])[0].shape == (3,)
    with pytest.raises(InterpreterError, match=r"'graph\.squeeze' failed: cannot select an axis to squeeze out"):
        run(module, [np.ones((2, 3), np.float32)])


def test_unsqueeze() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert run_op(graph.unsqueeze, x, axes=[0, -1]).shape == (1, 3, 4, 1)
    assert run_op(graph.unsqueeze, x, axes=[1]).shape == (3, 1, 4)
    assert run_op(graph.unsqueeze, x, axes=[-2, 0]).shape == (1, 3, 1, 4)
    np.testing.assert_array_equal(run_op(graph.unsqueeze, x, axes=[2]), x[:, :, None])
    assert result_type(graph.unsqueeze, TensorType((N, 4), f32), axes=[0, 2]) == TensorType((1, N, 1, 4), f32)
    assert op_error(graph.unsqueeze, TensorType((3,), f32), axes=[1, -2]) == "axes [1, -2] repeat an axis"


# slice ----------------------------------------------------------------------------------------
R10 = np.arange(10, dtype=np.int32)


@pytest.mark.parametrize(
    ("start", "end", "step", "expected"),
    [
        (2, 5, 1, [2, 3, 4]),
        (-3, END, 1, [7, 8, 9]),
        (0, 100, 1, list(range(10))),
        (-100, 3, 1, [0, 1, 2]),
        (5, 2, 1, []),
        (20, 30, 1, []),
        (8, 2, -2, [8, 6, 4]),
        (-1, -END, -1, list(range(9, -1, -1))),
        (100, -100, -3, [9, 6, 3, 0]),
        (1, END, 4, [1, 5, 9]),
        (-2, -END - 1, -1, list(range(8, -1, -1))),
    ],
)
def test_slice_onnx_edge_cases(start: int, end: int, step: int, expected: list[int]) -> None:
    out = run_op(graph.slice, R10, starts=[start], ends=[end], steps=[step])
    assert out.tolist() == expected


def test_slice_axes_and_defaults() -> None:
    np.testing.assert_array_equal(run_op(graph.slice, X234, starts=[1, 1], ends=[2, 3]), X234[1:2, 1:3])
    out = run_op(graph.slice, X234, starts=[3, 0], ends=[0, END], axes=[-1, 1], steps=[-2, 2])
    np.testing.assert_array_equal(out, X234[:, 0::2, 3:0:-2])
    np.testing.assert_array_equal(run_op(graph.slice, X234, starts=[], ends=[]), X234)
    assert run_op(graph.slice, np.zeros((0, 2), np.float32), starts=[1], ends=[5]).shape == (0, 2)


def test_slice_symbolic_dims() -> None:
    t = TensorType((N, 4), f32)
    assert result_type(graph.slice, t, starts=[0], ends=[END]) == t
    assert result_type(graph.slice, t, starts=[-1], ends=[-END], steps=[-1]) == t
    assert result_type(graph.slice, t, starts=[1, 1], ends=[END, 3]) == TensorType((DYN, 2), f32)
    assert result_type(graph.slice, t, starts=[0], ends=[5]) == TensorType((DYN, 4), f32)
    assert result_type(graph.slice, t, starts=[0], ends=[2], axes=[1]) == TensorType((N, 2), f32)


@settings(max_examples=40, deadline=None)
@given(
    size=st.integers(0, 6),
    start=st.integers(-9, 9),
    end=st.sampled_from([-END, -9, -4, -1, 0, 2, 5, 9, END]),
    step=st.sampled_from([-3, -1, 1, 2]),
)
def test_slice_infers_the_shape_it_computes(size: int, start: int, end: int, step: int) -> None:
    x = np.arange(size, dtype=np.float32)
    out = run_op(graph.slice, x, starts=[start], ends=[end], steps=[step])
    np.testing.assert_array_equal(out, x[slice(start, end, step)])


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"starts": [0, 1], "ends": [1]}, "slice starts [0, 1] and ends [1] differ in length"),
        ({"starts": [0], "ends": [1], "axes": [0, 1]}, "slice axes [0, 1] and starts [0] differ in length"),
        ({"starts": [0], "ends": [1], "steps": [1, 1]}, "slice steps [1, 1] and starts [0] differ in length"),
        ({"starts": [0], "ends": [1], "steps": [0]}, "slice steps [0] contain 0"),
        ({"starts": [0, 0], "ends": [1, 1], "axes": [1, -1]}, "axes [1, -1] repeat an axis"),
    ],
)
def test_slice_errors(attrs: dict[str, Any], message: str) -> None:
    assert op_error(graph.slice, TensorType((3, 4), f32), **attrs) == message


def test_slice_axis_out_of_range() -> None:
    assert op_error(graph.slice, TensorType((3, 4), f32), starts=[0], ends=[1], axes=[2]).endswith(
        " 2 is out of range for rank 2"
    )


# concat / split -------------------------------------------------------------------------------
def test_concat() -> None:
    a = np.ones((2, 3), np.float32)
    b = np.zeros((2, 0), np.float32)
    c = np.arange(4, dtype=np.float32).reshape(2, 2)
    module = build_module([tensor_type_of(v) for v in (a, b, c)], lambda *xs: graph.concat(list(xs), axis=-1))
    np.testing.assert_array_equal(run(module, [a, b, c])[0], np.concatenate([a, b, c], axis=1))
    assert run_op(graph.concat, a, axis=0).shape == (2, 3)


def _concat_type(types: list[Type], axis: int) -> Type:
    module = build_module(types, lambda *xs: graph.concat(list(xs), axis=axis))
    return func_type(functions(module)[0]).results[0]


def test_concat_symbolic() -> None:
    assert _concat_type([TensorType((N, 3), f32), TensorType((N, 5), f32)], 1) == TensorType((N, 8), f32)
    assert _concat_type([TensorType((N, 3), f32), TensorType((M, 3), f32)], 0) == TensorType((DYN, 3), f32)
    assert _concat_type([TensorType((N, 3), f32), TensorType((0, 3), f32)], 0) == TensorType((N, 3), f32)
    assert _concat_type([TensorType((2, DYN), f32), TensorType((DYN, 4), f32)], 0) == TensorType((DYN, 4), f32)


def test_concat_errors() -> None:
    args = func_body(make_func("f", [TensorType((2, 3), f32), TensorType((2, 4), f32), TensorType((2,), f32)])).args
    with pytest.raises(VerifyError) as info:
        graph.concat([args[0], args[1]], axis=0)
    assert info.value.message == "concat operands differ in dim 1: 3 != 4"
    with pytest.raises(VerifyError) as info:
        graph.concat([args[0], args[2]], axis=0)
    assert info.value.message == "concat operands must have one rank, got tensor<2x3xf32>, tensor<2xf32>"
    with pytest.raises(VerifyError) as info:
        graph.concat([args[0]], axis=2)
    assert info.value.message == "axis 2 is out of range for rank 2"
    with pytest.raises(VerifyError) as info:
        graph.concat([], axis=0)
    assert info.value.message == "concat needs at least one operand"


def test_split_values_and_text_form() -> None:
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    module = build_module([tensor_type_of(x)], lambda v: graph.split(v, axis=-1, sizes=[1, 0, 5]))
    text = tm.print_module(module)
    assert "%0:3 = graph.split %x0 {axis = -1, sizes = [1, 0, 5]}" in text
    assert "func.return %0#0, %0#1, %0#2 :" in text
    outs = run(module, [x])
    assert [o.shape for o in outs] == [(2, 1), (2, 0), (2, 5)]
    np.testing.assert_array_equal(outs[2], x[:, 1:])
    single = build_module([tensor_type_of(x)], lambda v: graph.split(v, axis=0, sizes=[2]))
    np.testing.assert_array_equal(run(single, [x])[0], x)


def test_split_results_used_by_index_in_text() -> None:
    text = (
        "func.func @main(%x: tensor<[n]x6xf32>) -> tensor<[n]x4xf32> {\n"
        "  %0:2 = graph.split %x {axis = 1, sizes = [2, 4]} : (tensor<[n]x6xf32>) -> "
        "(tensor<[n]x2xf32>, tensor<[n]x4xf32>)\n"
        "  %1 = graph.neg %0#1 : (tensor<[n]x4xf32>) -> tensor<[n]x4xf32>\n"
        "  func.return %1 : tensor<[n]x4xf32>\n"
        "}\n"
    )
    module = parse_module(text)
    assert tm.print_module(parse_module(tm.print_module(module))) == tm.print_module(module)
    x = np.arange(18, dtype=np.float32).reshape(3, 6)
    np.testing.assert_array_equal(run(module, [x])[0], -x[:, 2:])


def test_split_symbolic_axis_checked_at_run_time() -> None:
    module = build_module([TensorType((N,), f32)], lambda v: graph.split(v, axis=0, sizes=[1, 2]))
    assert [r.type for r in func_body(functions(module)[0]).ops[0].results] == [
        TensorType((1,), f32),
        TensorType((2,), f32),
    ]
    with pytest.raises(InterpreterError, match=r"split sizes \[1, 2\] sum to 3, but axis 0 has size 4"):
        run(module, [np.zeros(4, np.float32)])


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ([2, 2], "split sizes [2, 2] sum to 4, but axis 1 of tensor<2x5xf32> has size 5"),
        ([6, -1], "split sizes [6, -1] must not be negative"),
        ([], "split needs at least one size"),
    ],
)
def test_split_errors(sizes: list[int], message: str) -> None:
    assert op_error(graph.split, TensorType((2, 5), f32), axis=1, sizes=sizes) == message


# pad ------------------------------------------------------------------------------------------
X23 = np.arange(1, 7, dtype=np.float32).reshape(2, 3)


def test_pad_constant_and_crop() -> None:
    out = run_op(graph.pad, X23, pads=[1, 0, 0, 2], value=5.0)
    np.testing.assert_array_equal(out, np.pad(X23, [(1, 0), (0, 2)], constant_values=5.0))
    cropped = run_op(graph.pad, X23, pads=[-1, 1, 0, -1])
    np.testing.assert_array_equal(cropped, [[0.0, 4.0, 5.0]])
    ints = run_op(graph.pad, X23.astype(np.int32), pads=[0, 1, 0, 1], value=-2.0)
    assert ints.tolist() == [[-2, 1, 2, 3, -2], [-2, 4, 5, 6, -2]]
    assert run_op(graph.pad, np.zeros((0, 2), np.float32), pads=[1, 0, 0, 0]).tolist() == [[0.0, 0.0]]


@pytest.mark.parametrize("mode", ["reflect", "edge"])
def test_pad_reflect_and_edge(mode: str) -> None:
    out = run_op(graph.pad, X23, pads=[1, 2, 1, 2], mode=mode)
    np.testing.assert_array_equal(out, np.pad(X23, [(1, 1), (2, 2)], mode=mode))  # type: ignore[call-overload]


def test_pad_reflect_hand_computed() -> None:
    out = run_op(graph.pad, np.array([1, 2, 3], np.int32), pads=[2, 1], mode="reflect")
    assert out.tolist() == [3, 2, 1, 2, 3, 2]


def test_pad_symbolic() -> None:
    t = TensorType((N, 3), f32)
    assert result_type(graph.pad, t, pads=[0, 1, 0, 1]) == TensorType((N, 5), f32)
    assert result_type(graph.pad, t, pads=[1, 0, 0, 0]) == TensorType((DYN, 3), f32)


@pytest.mark.parametrize(
    ("t", "attrs", "message"),
    [
        (TensorType((2, 3), f32), {"pads": [1, 1]}, "pads [1, 1] must have 2 * rank = 4 entries"),
        (
            TensorType((2, 3), f32),
            {"pads": [0, 3, 0, 0], "mode": "reflect"},
            "reflect pads on axis 1 must be smaller than its size 3",
        ),
        (
            TensorType((2, 3), f32),
            {"pads": [-2, 0, -1, 0]},
            "pads [-2, 0, -1, 0] crop more than the 2 elements of axis 0",
        ),
        (TensorType((0, 3), f32), {"pads": [1, 0, 0, 0], "mode": "edge"}, "edge pads on axis 0 need a non-empty dim"),
        (
            TensorType((2,), i32),
            {"pads": [1, 0], "value": 0.5},
            "pad value 0.5 is not an integer, as element type i32 needs",
        ),
        (TensorType((2,), i1), {"pads": [1, 0], "value": 2.0}, "pad value 2.0 does not fit element type i1"),
        (
            TensorType((2,), f32),
            {"pads": [1, 0], "mode": "edge", "value": 1.0},
            'pad value only applies to mode "constant", not "edge"',
        ),
    ],
)
def test_pad_errors(t: TensorType, attrs: dict[str, Any], message: str) -> None:
    assert op_error(graph.pad, t, **attrs) == message


def test_pad_reflect_checked_at_run_time() -> None:
    module = build_module([TensorType((N,), f32)], lambda v: graph.pad(v, pads=[2, 0], mode="reflect"))
    with pytest.raises(InterpreterError, match=r"reflect pads \(2, 0\) do not fit axis 0 of size 2"):
        run(module, [np.zeros(2, np.float32)])


# tile -----------------------------------------------------------------------------------------
def test_tile() -> None:
    np.testing.assert_array_equal(run_op(graph.tile, X23, repeats=[2, 3]), np.tile(X23, (2, 3)))
    assert run_op(graph.tile, X23, repeats=[0, 1]).shape == (0, 3)
    assert result_type(graph.tile, TensorType((N, 3, DYN), f32), repeats=[1, 2, 0]) == TensorType((N, 6, 0), f32)
    assert result_type(graph.tile, TensorType((N,), f32), repeats=[3]) == TensorType((DYN,), f32)
    assert op_error(graph.tile, TensorType((2, 3), f32), repeats=[2]) == (
        "repeats [2] must have one entry per axis of tensor<2x3xf32>"
    )
    assert op_error(graph.tile, TensorType((2,), f32), repeats=[-1]) == "repeats [-1] must not be negative"


# arange ---------------------------------------------------------------------------------------
def _arange(**attrs: Any) -> np.ndarray:
    module = build_module([], lambda: graph.arange(**attrs))
    return run(module, [])[0]


def test_arange() -> None:
    assert _arange(start=1, limit=10, step=3, dtype=i32).tolist() == [1, 4, 7]
    assert _arange(start=5, limit=0, step=-2, dtype=i64).tolist() == [5, 3, 1]
    assert _arange(start=3, limit=1, dtype=i32).shape == (0,)
    out = _arange(limit=1, step=0.25, dtype=f32)
    assert out.dtype == np.float32 and out.tolist() == [0.0, 0.25, 0.5, 0.75]
    np.testing.assert_allclose(_arange(start=0.5, limit=2.0, step=0.1, dtype=f64), np.arange(0.5, 2.0, 0.1))
    assert _arange(limit=2.5, dtype=i32).tolist() == [0, 1, 2]


def test_arange_errors() -> None:
    def error(**attrs: Any) -> str:
        with pytest.raises(VerifyError) as info:
            graph.arange(**attrs)
        return info.value.message

    assert error(limit=3, step=0, dtype=f32) == "arange step must not be 0"
    assert error(start=0.5, limit=3, dtype=i32) == "arange start 0.5 and step 1.0 must be integers for element type i32"
    assert error(limit=3, dtype=i1) == "arange element type must be a number (not i1), got i1"
    assert error(limit=float("inf"), dtype=f32) == "arange bounds must be finite, got start 0.0, limit inf, step 1.0"


# triu / tril ----------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [0, 1, -1, 5])
def test_triu_tril(k: int) -> None:
    np.testing.assert_array_equal(run_op(graph.triu, X234, k=k), np.triu(X234, k))
    np.testing.assert_array_equal(run_op(graph.tril, X234, k=k), np.tril(X234, k))


def test_triangles_hand_computed_and_types() -> None:
    mask = run_op(graph.tril, np.ones((3, 3), np.bool_))
    assert mask.tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert run_op(graph.triu, np.ones((2, 3), np.int32), k=1).tolist() == [[0, 1, 1], [0, 0, 1]]
    t = TensorType((N, DYN, 4), f32)
    assert result_type(graph.triu, t, k=-2) == t
    assert op_error(graph.tril, TensorType((3,), f32)) == "needs rank >= 2, got tensor<3xf32>"
