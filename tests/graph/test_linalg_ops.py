"""Contractions: batched matmul with transpose flags and broadcast batch dims, and einsum; values against
numpy, symbolic shape inference, empty dims, integer wrapping and exact diagnostics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

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
    graph,
    i1,
    i8,
    i32,
    parse_module,
)
from tensorium.ir.types import scalar_type_of
from tensorium.testing import build_module, op_error, result_type, run_op

RNG = np.random.default_rng(1)
N, M, B = Sym("n"), Sym("m"), Sym("b")


def t(*shape: int | Sym, element: ScalarType = f32) -> TensorType:
    return TensorType(shape, element)


def rand(*shape: int, dtype: type = np.float32) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-5, 6, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize(
    ("sa", "sb", "ta", "tb", "expected"),
    [
        ((2, 3), (3, 4), False, False, (2, 4)),
        ((3, 2), (3, 4), True, False, (2, 4)),
        ((2, 3), (4, 3), False, True, (2, 4)),
        ((3, 2), (4, 3), True, True, (2, 4)),
        ((5, 2, 3), (5, 3, 4), False, False, (5, 2, 4)),
        ((2, 3), (7, 3, 4), False, False, (7, 2, 4)),
        ((6, 1, 2, 3), (5, 3, 4), False, False, (6, 5, 2, 4)),
        ((1, 3, 2), (4, 4, 3), True, True, (4, 2, 4)),
        ((1, 1), (1, 1), False, False, (1, 1)),
        ((3, 0), (0, 4), False, False, (3, 4)),
        ((0, 3), (3, 4), False, False, (0, 4)),
        ((0, 2, 3), (3, 4), False, False, (0, 2, 4)),
    ],
)
def test_matmul_matches_numpy(
    sa: tuple[int, ...], sb: tuple[int, ...], ta: bool, tb: bool, expected: tuple[int, ...]
) -> None:
    a, b = rand(*sa), rand(*sb)
    got = run_op(graph.matmul, a, b, transpose_a=ta, transpose_b=tb)
    want = np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)
    assert got.shape == expected == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert result_type(graph.matmul, t(*sa), t(*sb), transpose_a=ta, transpose_b=tb) == t(*expected)


def test_matmul_hand_computed() -> None:
    a = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    b = np.array([[1, 0], [0, 1], [1, -1]], np.float32)
    np.testing.assert_array_equal(run_op(graph.matmul, a, b), [[4, -1], [10, -1]])
    np.testing.assert_array_equal(run_op(graph.matmul, a, a, transpose_b=True), [[14, 32], [32, 77]])
    np.testing.assert_array_equal(run_op(graph.matmul, a, a, transpose_a=True)[0], [17, 22, 27])
    np.testing.assert_array_equal(run_op(graph.matmul, np.zeros((2, 0)), np.zeros((0, 3))), np.zeros((2, 3)))


def test_matmul_integer_and_low_precision() -> None:
    a, b = rand(3, 4, dtype=np.int32), rand(4, 2, dtype=np.int32)
    got = run_op(graph.matmul, a, b)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a @ b)
    wraps = run_op(graph.matmul, np.full((2, 4), 20, np.int8), np.ones((4, 1), np.int8))
    np.testing.assert_array_equal(wraps, [[80], [80]])
    np.testing.assert_array_equal(
        run_op(graph.matmul, np.full((1, 4), 100, np.int8), np.ones((4, 1), np.int8)), [[-112]]
    )
    u5 = IntegerType(5, False)
    np.testing.assert_array_equal(
        run_op(graph.matmul, np.full((1, 4), 9, np.uint8), np.ones((4, 1), np.uint8), elements=[u5, u5]), [[4]]
    )
    h1, h2 = rand(2, 8, dtype=np.float16), rand(8, 3, dtype=np.float16)
    half = run_op(graph.matmul, h1, h2)
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half, (h1.astype(np.float32) @ h2.astype(np.float32)).astype(np.float16))
    x, y = round_to_bf16(rand(2, 8)), round_to_bf16(rand(8, 3))
    brain = run_op(graph.matmul, x, y, elements=[bf16, bf16])
    np.testing.assert_array_equal(brain, round_to_bf16(x @ y))


@pytest.mark.parametrize(
    ("sa", "sb", "attrs", "expected"),
    [
        ((N, 8), (8, M), {}, (N, M)),
        ((B, N, 8), (8, 16), {}, (B, N, 16)),
        ((B, 8, N), (B, M, 8), {"transpose_a": True, "transpose_b": True}, (B, N, M)),
        ((B, N, 8), (DYN, 8, 4), {}, (DYN, N, 4)),
        ((B, N, 8), (B, 8, 4), {}, (B, N, 4)),
        ((N, 8, 4), (M, 4, 2), {}, (DYN, 8, 2)),
        ((1, N, 8), (5, 8, 2), {}, (5, N, 2)),
        ((N, DYN), (DYN, M), {}, (N, M)),
        ((N, 4), (N, 3), {"transpose_a": True}, (4, 3)),
    ],
)
def test_matmul_symbolic_inference(sa: tuple, sb: tuple, attrs: dict[str, bool], expected: tuple) -> None:
    assert result_type(graph.matmul, t(*sa), t(*sb), **attrs) == t(*expected)


def test_matmul_runs_with_symbolic_shapes() -> None:
    module = build_module([t(B, N, 3), t(3, 2)], lambda a, b: graph.matmul(a, b))
    a, b = rand(2, 5, 3), rand(3, 2)
    np.testing.assert_allclose(run(module, [a, b])[0], a @ b, rtol=1e-6)


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ij->", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("->", [()]),
    ("i->i", [(0,)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),
]


@pytest.mark.parametrize(("equation", "shapes"), EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum_matches_numpy(equation: str, shapes: list[tuple[int, ...]]) -> None:
    arrays = [rand(*s, dtype=np.float64) for s in shapes]
    got = run_op(graph.einsum, *arrays, equation=equation)
    want = np.einsum(equation, *arrays)
    assert got.shape == want.shape and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12)
    ints = [rand(*s, dtype=np.int32) for s in shapes]
    np.testing.assert_array_equal(run_op(graph.einsum, *ints, equation=equation), np.einsum(equation, *ints))


def test_einsum_spaces_and_wrapping() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(run_op(graph.einsum, a, equation="i j -> j"), [3, 5, 7])
    np.testing.assert_array_equal(run_op(graph.einsum, np.full((3, 4), 100, np.int8), equation="ij->i"), [-112] * 3)


@pytest.mark.parametrize(
    ("equation", "shapes", "expected"),
    [
        ("ij,jk->ik", [(N, 4), (4, M)], (N, M)),
        ("ij,jk->ik", [(N, DYN), (5, M)], (N, M)),
        ("ij,jk->ki", [(N, DYN), (DYN, 3)], (3, N)),
        ("bij,bjk->bik", [(B, N, 8), (DYN, 8, M)], (B, N, M)),
        ("bij,bjk->bik", [(DYN, N, 8), (B, 8, M)], (B, N, M)),
        ("ii->i", [(N, N)], (N,)),
        ("ij->", [(N, M)], ()),
    ],
)
def test_einsum_symbolic_inference(equation: str, shapes: list[tuple], expected: tuple) -> None:
    assert result_type(graph.einsum, *[t(*s) for s in shapes], equation=equation) == t(*expected)


@pytest.mark.parametrize(
    ("op", "types", "attrs", "message"),
    [
        (graph.matmul, (t(4), t(4, 2)), {}, "matmul operands need rank >= 2, got ranks 1 and 2"),
        (graph.matmul, (t(2, 4), t(5, 2)), {}, "matmul contraction dimensions differ: 4 != 5"),
        (graph.matmul, (t(2, 4), t(3, 4)), {"transpose_a": True}, "matmul contraction dimensions differ: 2 != 3"),
        (graph.matmul, (t(N, 4), t(3, 5)), {"transpose_b": True}, "matmul contraction dimensions differ: 4 != 5"),
        (
            graph.matmul,
            (t(2, 3, 4), t(3, 4, 5)),
            {},
            "matmul batch dimensions: shapes [2] and [3] do not broadcast",
        ),
        (graph.matmul, (t(2, 2), t(2, 2, element=f16)), {}, "operands must have one element type, got f32, f16"),
        (
            graph.matmul,
            (t(2, 2, element=i1), t(2, 2, element=i1)),
            {},
            "operand element type must be a number (not i1), got i1",
        ),
        (graph.matmul, (t(2, 2), t(2, 2)), {"transpose_a": 1}, "attribute 'transpose_a': expected a boolean, got 1"),
        (graph.matmul, (t(2, 2), f32), {}, "operand #1 must be a tensor, got f32"),
        (graph.einsum, (t(2, 3), t(3, 4)), {"equation": "ij,jk"}, "einsum equation 'ij,jk' must look like 'ij,jk->ik'"),
        (graph.einsum, (t(2, 3),), {"equation": "i1->i"}, "einsum equation 'i1->i' must look like 'ij,jk->ik'"),
        (graph.einsum, (t(2, 3),), {"equation": "ij,jk->ik"}, "einsum equation 'ij,jk->ik' names 2 operands, got 1"),
        (graph.einsum, (t(2, 3),), {"equation": "ij->ii"}, "einsum output 'ii' repeats a letter"),
        (graph.einsum, (t(2, 3),), {"equation": "ij->k"}, "einsum output letter 'k' appears in no operand"),
        (graph.einsum, (t(2, 3),), {"equation": "ijk->i"}, "einsum subscripts 'ijk' do not match operand of rank 2"),
        (
            graph.einsum,
            (t(2, 3), t(4, 5)),
            {"equation": "ij,jk->ik"},
            "einsum dimension 'j' differs: 3 != 4",
        ),
        (graph.einsum, (t(3, 4),), {"equation": "ii->i"}, "einsum dimension 'i' differs: 3 != 4"),
        (
            graph.einsum,
            (t(2), t(2, element=i8)),
            {"equation": "i,i->"},
            "operands must have one element type, got f32, i8",
        ),
        (graph.einsum, (), {"equation": "->"}, "einsum needs at least one operand"),
        (graph.einsum, (t(2),), {}, "requires attribute 'equation' (a string)"),
    ],
)
def test_invalid_contractions_give_exact_messages(
    op: OpDef, types: tuple[Type, ...], attrs: dict[str, Any], message: str
) -> None:
    assert op_error(op, *types, **attrs) == message


def test_contraction_errors_through_the_parser() -> None:
    text = """\
func.func @main(%a: tensor<2x4xi32>, %b: tensor<5x2xi32>) -> tensor<2x2xi32> {
  %0 = graph.matmul %a, %b : (tensor<2x4xi32>, tensor<5x2xi32>) -> tensor<2x2xi32>
  func.return %0 : tensor<2x2xi32>
}
"""
    with pytest.raises(VerifyError) as info:
        parse_module(text, "mm.mlir")
    assert (
        str(info.value).splitlines()[0]
        == "mm.mlir:2:8: error: 'graph.matmul' op matmul contraction dimensions differ: 4 != 5"
    )
    fixed = text.replace("%a, %b :", "%a, %b {transpose_b = true} :").replace("tensor<5x2xi32>", "tensor<2x4xi32>")
    module = parse_module(fixed)
    a = np.arange(8, dtype=np.int32).reshape(2, 4)
    np.testing.assert_array_equal(run(module, [a, a])[0], a @ a.T)
    assert run(module, [a, a])[0].dtype == np.int32 and i32 == scalar_type_of(np.dtype(np.int32))
