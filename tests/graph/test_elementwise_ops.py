"""Elementwise ops: values against numpy/scipy, broadcasting (size-1, empty, symbolic), dtype rules
(i1 comparisons, integer division and modulo, wrapping casts, bf16 rounding) and exact diagnostics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy.special import erf

import tensorium as tm
from tensorium.backends.interp import round_to_bf16, run
from tensorium.errors import VerifyError
from tensorium.ir import (
    DYN,
    IntegerType,
    OpDef,
    ScalarType,
    Sym,
    TensorType,
    Type,
    bf16,
    f16,
    f32,
    f64,
    graph,
    i1,
    i8,
    i32,
    i64,
    index,
    parse_module,
    u8,
)
from tensorium.ir.types import storage_dtype
from tensorium.testing import build_module, op_error, result_type, run_op

i3 = IntegerType(3)
u5 = IntegerType(5, False)
RNG = np.random.default_rng(0)


def t(*shape: int | Sym, element: ScalarType = f32) -> TensorType:
    return TensorType(shape, element)


X = np.array([-3.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.5, 7.0], np.float32)
POS = np.array([1e-3, 0.25, 0.5, 1.0, 2.0, 9.0, 1e4], np.float32)
SQRT_2_OVER_PI = np.sqrt(2 / np.pi)

UNARY_FLOAT: list[tuple[OpDef, Callable[[np.ndarray], np.ndarray], np.ndarray]] = [
    (graph.neg, np.negative, X),
    (graph.abs, np.abs, X),
    (graph.exp, np.exp, X),
    (graph.log, np.log, POS),
    (graph.sqrt, np.sqrt, POS),
    (graph.rsqrt, lambda x: 1 / np.sqrt(x), POS),
    (graph.sin, np.sin, X),
    (graph.cos, np.cos, X),
    (graph.tanh, np.tanh, X),
    (graph.sigmoid, lambda x: 1 / (1 + np.exp(-x)), X),
    (graph.erf, erf, X),
    (graph.relu, lambda x: np.maximum(x, 0), X),
    (graph.gelu, lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))), X),
    (graph.silu, lambda x: x / (1 + np.exp(-x)), X),
    (graph.floor, np.floor, X),
    (graph.ceil, np.ceil, X),
    (graph.round, np.round, X),
    (graph.sign, np.sign, X),
    (graph.reciprocal, lambda x: 1 / x, POS),
]


@pytest.mark.parametrize(("op", "fn", "x"), UNARY_FLOAT, ids=[op.short_name for op, _, _ in UNARY_FLOAT])
@pytest.mark.parametrize(("dtype", "rtol"), [("float32", 2e-6), ("float64", 1e-12), ("float16", 2e-3)])
def test_unary_float_ops_match_numpy(
    op: OpDef, fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray, dtype: str, rtol: float
) -> None:
    data = x.astype(dtype).reshape(-1, 1)
    got = run_op(op, data)
    expected = fn(data.astype(np.float64))
    assert got.dtype == np.dtype(dtype) and got.shape == data.shape
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=rtol, atol=rtol)


def test_gelu_tanh_approximation() -> None:
    got = run_op(graph.gelu, X.astype(np.float64), approximate="tanh")
    x = X.astype(np.float64)
    expected = 0.5 * x * (1 + np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    exact = run_op(graph.gelu, X.astype(np.float64))
    assert 0 < np.max(np.abs(got - exact)) < 1e-3


def test_unary_special_values() -> None:
    special = np.array([0.0, -1.0, np.inf, -np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(run_op(graph.log, special), [-np.inf, np.nan, np.inf, np.nan, np.nan])
    np.testing.assert_array_equal(run_op(graph.sqrt, special), [0.0, np.nan, np.inf, np.nan, np.nan])
    np.testing.assert_array_equal(run_op(graph.rsqrt, special), [np.inf, np.nan, 0.0, np.nan, np.nan])
    np.testing.assert_array_equal(run_op(graph.reciprocal, special), [np.inf, -1.0, 0.0, -0.0, np.nan])
    np.testing.assert_array_equal(run_op(graph.exp, special), [1.0, np.exp(np.float32(-1)), np.inf, 0.0, np.nan])
    extreme = np.array([-1000.0, -100.0, 100.0, 1000.0], np.float32)
    np.testing.assert_array_equal(run_op(graph.sigmoid, extreme), [0.0, np.float32(3.7200760e-44), 1.0, 1.0])
    np.testing.assert_array_equal(run_op(graph.silu, extreme[[0, 2, 3]]), [-0.0, 100.0, 1000.0])
    np.testing.assert_array_equal(run_op(graph.exp, np.array([12.0], np.float16)), [np.inf])


def test_round_is_half_to_even_and_sign_keeps_zero() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999], np.float32)
    np.testing.assert_array_equal(run_op(graph.round, x), [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 2.0])
    np.testing.assert_array_equal(run_op(graph.floor, x), [0.0, 1.0, 2.0, -1.0, -2.0, -3.0, 2.0])
    np.testing.assert_array_equal(run_op(graph.ceil, x), [1.0, 2.0, 3.0, -0.0, -1.0, -2.0, 3.0])
    got = run_op(graph.sign, np.array([-3.0, -0.0, 0.0, 5.0, np.nan], np.float32))
    np.testing.assert_array_equal(got, [-1.0, 0.0, 0.0, 1.0, np.nan])


def test_unary_integer_ops() -> None:
    x = np.array([-128, -3, 0, 5, 127], np.int8)
    np.testing.assert_array_equal(run_op(graph.neg, x), [-128, 3, 0, -5, -127])
    np.testing.assert_array_equal(run_op(graph.abs, x), [-128, 3, 0, 5, 127])
    np.testing.assert_array_equal(run_op(graph.relu, x), [0, 0, 0, 5, 127])
    np.testing.assert_array_equal(run_op(graph.sign, x), [-1, -1, 0, 1, 1])
    np.testing.assert_array_equal(run_op(graph.not_, x), [127, 2, -1, -6, -128])
    np.testing.assert_array_equal(run_op(graph.not_, np.array([True, False])), [False, True])
    np.testing.assert_array_equal(run_op(graph.not_, np.array([0, 5, 255], np.uint8)), [255, 250, 0])


def test_odd_width_integers_wrap() -> None:
    x = np.array([-4, -1, 0, 3], np.int8)
    np.testing.assert_array_equal(run_op(graph.neg, x, elements=[i3]), [-4, 1, 0, -3])
    np.testing.assert_array_equal(run_op(graph.not_, x, elements=[i3]), [3, 0, -1, -4])
    np.testing.assert_array_equal(run_op(graph.add, x, np.int8(3) + x * 0, elements=[i3, i3]), [-1, 2, 3, -2])
    u = np.array([0, 5, 31], np.uint8)
    np.testing.assert_array_equal(run_op(graph.not_, u, elements=[u5]), [31, 26, 0])
    np.testing.assert_array_equal(run_op(graph.mul, u, u, elements=[u5, u5]), [0, 25, 1])
    np.testing.assert_array_equal(run_op(graph.sub, u, u + 1, elements=[u5, u5]), [31, 31, 31])


BROADCASTS = [
    ((2, 3), (3,), (2, 3)),
    ((3, 1), (1, 4), (3, 4)),
    ((2, 1, 3), (4, 1), (2, 4, 3)),
    ((), (2, 2), (2, 2)),
    ((1,), (1,), (1,)),
    ((0, 3), (1, 3), (0, 3)),
    ((1,), (0,), (0,)),
    ((2, 0), (2, 1), (2, 0)),
]

BINARY_FLOAT: list[tuple[OpDef, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = [
    (graph.add, np.add),
    (graph.sub, np.subtract),
    (graph.mul, np.multiply),
    (graph.div, np.divide),
    (graph.max, np.maximum),
    (graph.min, np.minimum),
    (graph.mod, np.mod),
    (graph.pow, np.power),
]


@pytest.mark.parametrize(("op", "fn"), BINARY_FLOAT, ids=[op.short_name for op, _ in BINARY_FLOAT])
@pytest.mark.parametrize(("sa", "sb", "expected"), BROADCASTS, ids=[f"{a}-{b}" for a, b, _ in BROADCASTS])
def test_binary_float_ops_broadcast_like_numpy(
    op: OpDef, fn: Callable[..., np.ndarray], sa: tuple[int, ...], sb: tuple[int, ...], expected: tuple[int, ...]
) -> None:
    a = RNG.uniform(0.5, 3, sa).astype(np.float32)
    b = RNG.uniform(-2, 2, sb).astype(np.float32)
    got = run_op(op, a, b)
    assert got.shape == expected and got.dtype == np.float32
    np.testing.assert_allclose(got, fn(a, b), rtol=1e-6)
    assert result_type(op, t(*sa), t(*sb)) == t(*expected)


def test_float_division_and_modulo_edges() -> None:
    a = np.array([1.0, -1.0, 0.0, 7.0, -7.0, 7.0, -7.0], np.float32)
    b = np.array([0.0, 0.0, 0.0, 3.0, 3.0, -3.0, -3.0], np.float32)
    np.testing.assert_array_equal(
        run_op(graph.div, a, b), np.array([np.inf, -np.inf, np.nan, 7 / 3, -7 / 3, -7 / 3, 7 / 3], np.float32)
    )
    np.testing.assert_array_equal(run_op(graph.mod, a, b), [np.nan, np.nan, np.nan, 1.0, 2.0, -2.0, -1.0])
    np.testing.assert_array_equal(
        run_op(graph.pow, np.array([2.0, -8.0, 0.0, 4.0], np.float32), np.array([-1.0, 1 / 3, -1.0, 0.5], np.float32)),
        [0.5, np.nan, np.inf, 2.0],
    )


def test_max_and_min_propagate_nan() -> None:
    a = np.array([np.nan, 1.0, -0.0], np.float32)
    b = np.array([1.0, np.nan, 0.0], np.float32)
    np.testing.assert_array_equal(run_op(graph.max, a, b), [np.nan, np.nan, 0.0])
    np.testing.assert_array_equal(run_op(graph.min, a, b), [np.nan, np.nan, -0.0])


def test_integer_division_truncates_and_modulo_takes_divisor_sign() -> None:
    a = np.array([7, -7, 7, -7, 6, 5, 0], np.int32)
    b = np.array([2, 2, -2, -2, 3, 0, 0], np.int32)
    np.testing.assert_array_equal(run_op(graph.div, a, b), [3, -3, -3, 3, 2, 0, 0])
    m = np.array([3, 3, -3, -3, 3, 0, 0], np.int32)
    np.testing.assert_array_equal(run_op(graph.mod, a, m), [1, 2, -2, -1, 0, 0, 0])
    np.testing.assert_array_equal(run_op(graph.div, np.array([200, 7], np.uint8), np.array([3, 0], np.uint8)), [66, 0])
    np.testing.assert_array_equal(run_op(graph.div, np.array([-128], np.int8), np.array([-1], np.int8)), [-128])
    np.testing.assert_array_equal(
        run_op(graph.div, np.array([-4], np.int8), np.array([-1], np.int8), elements=[i3, i3]), [-4]
    )


def test_integer_division_is_exact_for_wide_values() -> None:
    a = np.array([2**62 + 1, -(2**53) - 1], np.int64)
    b = np.array([1, 1], np.int64)
    np.testing.assert_array_equal(run_op(graph.div, a, b), a)


def test_integer_power() -> None:
    a = np.array([3, 2, 0, 5, -2], np.int32)
    b = np.array([4, 0, 0, 1, 3], np.int32)
    np.testing.assert_array_equal(run_op(graph.pow, a, b), [81, 1, 1, 5, -8])
    np.testing.assert_array_equal(run_op(graph.pow, np.array([3], np.int8), np.array([5], np.int8)), [-13])
    got = run_op(graph.pow, np.array([2, 7, -3], np.int32), np.array([-1, -2, -1], np.int32))
    np.testing.assert_array_equal(got, [0, 0, 0])


def test_integer_power_of_one_with_negative_exponent() -> None:
    got = run_op(graph.pow, np.array([1, -1, -1], np.int32), np.array([-3, -1, -2], np.int32))
    np.testing.assert_array_equal(got, [1, -1, 1])
    lowest = np.iinfo(np.int32).min  # abs() of it overflows; once made numpy raise
    got = run_op(graph.pow, np.array([1, -1, 2], np.int32), np.array([lowest] * 3, np.int32))
    np.testing.assert_array_equal(got, [1, 1, 0])


COMPARISONS: list[tuple[OpDef, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = [
    (graph.eq, np.equal),
    (graph.ne, np.not_equal),
    (graph.lt, np.less),
    (graph.le, np.less_equal),
    (graph.gt, np.greater),
    (graph.ge, np.greater_equal),
]


@pytest.mark.parametrize(("op", "fn"), COMPARISONS, ids=[op.short_name for op, _ in COMPARISONS])
def test_comparisons_give_i1(op: OpDef, fn: Callable[..., np.ndarray]) -> None:
    a = np.array([[1.0, np.nan, -0.0, 2.0]], np.float32)
    b = np.array([[1.0], [np.nan], [0.0], [3.0]], np.float32)
    got = run_op(op, a, b)
    assert got.dtype == np.bool_ and got.shape == (4, 4)
    np.testing.assert_array_equal(got, fn(a, b))
    ints = np.array([-2, 0, 3], np.int8)
    np.testing.assert_array_equal(run_op(op, ints, ints[::-1].copy()), fn(ints, ints[::-1]))
    bools = np.array([False, True])
    np.testing.assert_array_equal(run_op(op, bools, bools[::-1].copy()), fn(bools, bools[::-1]))
    assert result_type(op, t(Sym("n"), 1), t(3)) == t(Sym("n"), 3, element=i1)
    assert result_type(op, t(2, element=u5), t(2, element=u5)) == t(2, element=i1)


LOGICAL: list[tuple[OpDef, Callable[..., np.ndarray], Callable[..., np.ndarray]]] = [
    (graph.and_, np.logical_and, np.bitwise_and),
    (graph.or_, np.logical_or, np.bitwise_or),
    (graph.xor, np.logical_xor, np.bitwise_xor),
]


@pytest.mark.parametrize(("op", "logical", "bitwise"), LOGICAL, ids=[op.short_name for op, _, _ in LOGICAL])
def test_logical_ops_on_i1_and_bitwise_on_integers(
    op: OpDef, logical: Callable[..., np.ndarray], bitwise: Callable[..., np.ndarray]
) -> None:
    p = np.array([[True], [False]])
    q = np.array([True, False])
    got = run_op(op, p, q)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, logical(p, q))
    a = np.array([12, -1, 0, 85], np.int8)
    b = np.array([10, 7, -1, 51], np.int8)
    np.testing.assert_array_equal(run_op(op, a, b), bitwise(a, b))
    u = np.array([0b10110, 0b01111], np.uint8)
    np.testing.assert_array_equal(run_op(op, u, u[::-1].copy(), elements=[u5, u5]), bitwise(u, u[::-1]))


def test_bf16_results_round_to_bf16() -> None:
    a = np.array([1.0, 1.0, 3.0], np.float32)
    b = np.array([2**-8, 3 * 2**-8, 2**-7], np.float32)
    got = run_op(graph.add, a, b, elements=[bf16, bf16])
    np.testing.assert_array_equal(got, [1.0, 1.015625, 3.0])
    assert got.dtype == np.float32
    x = np.array([0.1, 1 / 3, 100.7], np.float32)
    np.testing.assert_array_equal(run_op(graph.neg, x, elements=[bf16]), -round_to_bf16(x))


@pytest.mark.parametrize(
    ("sa", "sb", "expected"),
    [
        ((Sym("n"), 3), (3,), (Sym("n"), 3)),
        ((Sym("n"),), (Sym("n"),), (Sym("n"),)),
        ((Sym("n"),), (Sym("m"),), (DYN,)),
        ((DYN,), (DYN,), (DYN,)),
        ((Sym("n"),), (1,), (Sym("n"),)),
        ((1,), (DYN,), (DYN,)),
        ((4,), (DYN,), (4,)),
        ((Sym("b"), 1, 8), (Sym("s"), 1), (Sym("b"), Sym("s"), 8)),
        ((0,), (Sym("n"),), (0,)),
    ],
)
def test_symbolic_broadcast_inference(sa: tuple, sb: tuple, expected: tuple) -> None:
    assert result_type(graph.add, t(*sa), t(*sb)) == t(*expected)
    assert result_type(graph.where, t(*sa, element=i1), t(*sb), t(*sb)) == t(*expected)
    assert result_type(graph.exp, t(*sa)) == t(*sa)


def test_where_selects_with_broadcasting() -> None:
    cond = np.array([[True], [False]])
    a = np.array([1, 2, 3], np.int32)
    b = np.array(9, np.int32)
    got = run_op(graph.where, cond, a, b)
    np.testing.assert_array_equal(got, [[1, 2, 3], [9, 9, 9]])
    assert got.dtype == np.int32
    empty = run_op(graph.where, np.zeros((0, 1), bool), np.ones((1, 2), np.float32), np.zeros(2, np.float32))
    assert empty.shape == (0, 2)
    nan = run_op(graph.where, np.array([True, False]), np.array([np.nan, np.nan], np.float32), np.zeros(2, np.float32))
    np.testing.assert_array_equal(nan, [np.nan, 0.0])


@pytest.mark.parametrize(
    ("x", "source", "target", "expected"),
    [
        ([2.7, -2.7, 0.5, -0.5, 127.9, -128.9], f32, i8, [2, -2, 0, 0, 127, -128]),
        ([np.nan, np.inf, -np.inf], f32, i32, [0, -1, 0]),
        ([5.0, -5.0, 3.9, -4.9, 8.0], f32, i3, [-3, 3, 3, -4, 0]),
        ([-1.0, 40.0, 31.9, 32.0], f32, u5, [31, 8, 31, 0]),
        ([200, 127, 128], u8, i8, [-56, 127, -128]),
        ([-1, 300], i32, u8, [255, 44]),
        ([2**40 + 5, -1], i64, i32, [5, -1]),
        ([7, -7, 4, -5], i8, i3, [-1, 1, -4, 3]),
        ([3, 31, 16], u5, i3, [3, -1, 0]),
        ([True, False], i1, f32, [1.0, 0.0]),
        ([True, False], i1, i8, [1, 0]),
        ([0.0, -0.0, np.nan, 0.1, -3.0], f32, i1, [False, False, True, True, True]),
        ([0, 2, -1], i32, i1, [False, True, True]),
        ([3.5, -2.5], f16, index, [3, -2]),
        ([1.00390625, 1.01171875, 3.14159, 1e30], f32, bf16, [1.0, 1.015625, 3.140625, 1.0002555517425873e30]),
        ([257, 259, 1000001], i32, bf16, [256.0, 260.0, 999424.0]),
        ([0.1, 65520.0, 1e-8], f32, f16, [np.float16(0.1), np.inf, 0.0]),
        ([0.1, -2.5], f64, f32, [np.float32(0.1), -2.5]),
        ([65504.0, 3.0], f16, f64, [65504.0, 3.0]),
    ],
)
def test_cast(x: list, source: ScalarType, target: ScalarType, expected: list) -> None:
    data = np.array(x, dtype=storage_dtype(source))
    got = run_op(graph.cast, data, elements=[source], dtype=target)
    assert got.dtype == storage_dtype(target)
    np.testing.assert_array_equal(got, np.array(expected, dtype=storage_dtype(target)))


def test_cast_keeps_symbolic_shapes() -> None:
    assert result_type(graph.cast, t(Sym("n"), DYN, 0), dtype=i3) == t(Sym("n"), DYN, 0, element=i3)
    assert result_type(graph.cast, t(element=i1), dtype=bf16) == t(element=bf16)


def test_clamp() -> None:
    x = np.array([-5.0, -1.0, 0.5, 2.0, np.nan], np.float32)
    np.testing.assert_array_equal(run_op(graph.clamp, x, min=-1.5, max=1.0), [-1.5, -1.0, 0.5, 1.0, np.nan])
    np.testing.assert_array_equal(run_op(graph.clamp, x, min=0), [0.0, 0.0, 0.5, 2.0, np.nan])
    np.testing.assert_array_equal(run_op(graph.clamp, x, max=0.0), [-5.0, -1.0, 0.0, 0.0, np.nan])
    np.testing.assert_array_equal(run_op(graph.clamp, x), x)
    ints = np.arange(-4, 5, dtype=np.int32)
    np.testing.assert_array_equal(run_op(graph.clamp, ints, min=-2.5, max=2.5), [-2, -2, -2, -1, 0, 1, 2, 2, 2])
    np.testing.assert_array_equal(run_op(graph.clamp, np.array([0, 5, 200], np.uint8), min=-3, max=100), [0, 5, 100])
    assert run_op(graph.clamp, ints, min=2, max=2).tolist() == [2] * 9


def test_constant() -> None:
    value = np.array([[1.5, -2.0], [0.0, 3.0]], np.float32)
    module = build_module([], lambda: graph.constant(value=value))
    np.testing.assert_array_equal(run(module, [])[0], value)
    bools = build_module([], lambda: graph.constant(value=tm.ir.DenseAttr.of(np.array([True, False]))))
    assert run(bools, [])[0].tolist() == [True, False]


@pytest.mark.parametrize(
    ("op", "types", "attrs", "message"),
    [
        (graph.add, (t(4), t(4, element=i32)), {}, "operands must have one element type, got f32, i32"),
        (graph.add, (t(4), t(3)), {}, "shapes [4] and [3] do not broadcast"),
        (graph.mul, (t(2, 3), t(3, 2)), {}, "shapes [2, 3] and [3, 2] do not broadcast"),
        (graph.add, (t(4, element=i1), t(4, element=i1)), {}, "operand element type must be a number (not i1), got i1"),
        (graph.neg, (t(4, element=i1),), {}, "operand element type must be a number (not i1), got i1"),
        (graph.exp, (t(4, element=i32),), {}, "operand element type must be a float, got i32"),
        (graph.erf, (t(4, element=index),), {}, "operand element type must be a float, got index"),
        (graph.gelu, (t(4, element=u8),), {}, "operand element type must be a float, got u8"),
        (graph.not_, (t(4),), {}, "operand element type must be an integer or i1, got f32"),
        (
            graph.xor,
            (t(4, element=bf16), t(4, element=bf16)),
            {},
            "operand element type must be an integer or i1, got bf16",
        ),
        (graph.eq, (t(4, element=i8), t(4, element=u8)), {}, "operands must have one element type, got i8, u8"),
        (graph.relu, (f32,), {}, "operand #0 must be a tensor, got f32"),
        (graph.add, (t(4),), {}, "expected 2 operands, got 1"),
        (graph.where, (t(4), t(4), t(4)), {}, "condition element type must be i1, got f32"),
        (
            graph.where,
            (t(4, element=i1), t(4), t(4, element=i32)),
            {},
            "the two branches must have one element type, got f32, i32",
        ),
        (graph.where, (t(4, element=i1), t(3), t(4)), {}, "shapes [4] and [3] and [4] do not broadcast"),
        (graph.clamp, (t(4),), {"min": 3, "max": 1}, "clamp min 3.0 is greater than max 1.0"),
        (graph.clamp, (t(4, element=i1),), {"min": 0}, "operand element type must be a number (not i1), got i1"),
        (graph.clamp, (t(4),), {"min": "low"}, "attribute 'min': expected a float, got 'low'"),
        (graph.cast, (t(4),), {}, "requires attribute 'dtype' (an element type)"),
        (graph.cast, (t(4),), {"dtype": "f16"}, "attribute 'dtype': expected an element type, got 'f16'"),
        (
            graph.gelu,
            (t(4),),
            {"approximate": "fast"},
            "attribute 'approximate': expected one of \"none\", \"tanh\", got 'fast'",
        ),
        (graph.relu, (t(4),), {"alpha": 0.1}, "unknown attribute 'alpha'"),
    ],
)
def test_invalid_uses_give_exact_messages(
    op: OpDef, types: tuple[Type, ...], attrs: dict[str, Any], message: str
) -> None:
    assert op_error(op, *types, **attrs) == message


def test_verifier_reports_the_location_of_a_bad_op() -> None:
    text = """\
func.func @main(%x: tensor<4xf32>, %y: tensor<4xi32>) -> tensor<4xf32> {
  %0 = graph.add %x, %y : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""
    with pytest.raises(VerifyError) as info:
        parse_module(text, "e.mlir")
    assert (
        str(info.value).splitlines()[0]
        == "e.mlir:2:8: error: 'graph.add' op operands must have one element type, got f32, i32"
    )


def test_cast_of_huge_floats_to_i64_saturates() -> None:
    x = np.array([1e30, -1e30, 2.0**63, np.nan], np.float64)
    got = run_op(graph.cast, x, dtype=tm.ir.i64)
    np.testing.assert_array_equal(got, [2**63 - 1, -(2**63), 2**63 - 1, 0])


def test_bf16_constants_are_rounded_when_created() -> None:
    from tensorium.ir.attributes import DenseAttr

    attr = DenseAttr(np.array([0.1, 1.00390625], np.float32), tm.ir.TensorType((2,), tm.ir.bf16))
    np.testing.assert_array_equal(attr.array, round_to_bf16(np.array([0.1, 1.00390625], np.float32)))


def test_u64_power_is_exact() -> None:
    got = run_op(graph.pow, np.array([2**32 - 1, 3], np.uint64), np.array([2, 3], np.uint64))
    assert got.dtype == np.uint64 and got.tolist() == [(2**32 - 1) ** 2, 27]  # once lost bits via float64
