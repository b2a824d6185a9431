"""The quant dialect: its type syntax (owned by the dialect, through the parser's hook), each op against numpy
on odd shapes, the verifier's checks, and the text round trip."""

from __future__ import annotations

import numpy as np
import pytest

import tensorium.ir as tir
from tensorium.errors import ParseError, TensoriumError
from tensorium.ir.dialects import quant
from tensorium.ir.dialects.quant import layouts
from tensorium.ir.types import QuantizedType, TensorType, f32, i32, type_syntax
from tensorium.testing import build_module, op_error, run_op

U4G = QuantizedType(4, False, f32, "per_group", 1, 8)


def test_the_dialect_owns_its_type_syntax() -> None:
    syntax = type_syntax("quant")
    assert syntax is not None and syntax.parse("!quant<i3:f32, per_channel(axis=0)>") == QuantizedType(
        3, True, f32, "per_channel", 0
    )
    for t in (U4G, QuantizedType(1, True, f32), QuantizedType(7, False, f32, "per_channel", -1)):
        assert tir.parse_type_text(str(t)) == t


def test_unknown_dialect_type_is_named() -> None:
    with pytest.raises(ParseError, match=r"no dialect registers '!foo<...>' types"):
        tir.parse_type_text("!foo<x>")


@pytest.mark.parametrize("bits", range(1, 9))
@pytest.mark.parametrize("signed", [False, True])
def test_quantize_dequantize_per_group_odd_shape(bits: int, signed: bool) -> None:
    rng = np.random.default_rng(bits)
    q = QuantizedType(bits, signed, f32, "per_group", 1, 8)
    x = rng.standard_normal((3, 24)).astype(np.float32)
    scale = (rng.random((3, 3)) + 0.1).astype(np.float32)
    zero = np.full((3, 3), 0.0 if signed else float(1 << (bits - 1)), np.float32)
    codes = run_op(quant.quantize, x, scale, zero, type=q)
    lo, hi = q.code_range
    s, z = np.repeat(scale, 8, axis=1), np.repeat(zero, 8, axis=1)
    np.testing.assert_array_equal(codes, np.clip(np.rint(x / s + z), lo, hi))
    back = run_op(quant.dequantize, codes, scale, zero, elements=[q, f32, f32])
    np.testing.assert_allclose(back, (codes - z) * s, rtol=1e-6)


def test_per_tensor_and_per_channel_scales() -> None:
    x = np.array([[0.5, -1.0, 2.0], [1.0, 1.5, -0.25]], np.float32)
    per_tensor = run_op(quant.quantize, x, np.array(0.5, np.float32), type=QuantizedType(8, True, f32))
    np.testing.assert_array_equal(per_tensor, [[1, -2, 4], [2, 3, 0]])
    per_row = QuantizedType(8, True, f32, "per_channel", 0)
    codes = run_op(quant.quantize, x, np.array([[0.5], [0.25]], np.float32), type=per_row)
    np.testing.assert_array_equal(codes, [[1, -2, 4], [4, 6, -1]])


@pytest.mark.parametrize("bits", range(1, 9))
def test_matmul_against_numpy(bits: int) -> None:
    rng = np.random.default_rng(10 + bits)
    q = QuantizedType(bits, False, f32, "per_group", 1, 8)
    x = rng.standard_normal((2, 3, 24)).astype(np.float32)
    w = rng.integers(0, 1 << bits, (5, 24)).astype(np.uint8)
    scale = rng.random((5, 3)).astype(np.float32)
    zero = rng.random((5, 3)).astype(np.float32) * (1 << bits)
    out = run_op(quant.matmul, x, w, scale, zero, elements=[f32, q, f32, f32])
    weight = (w - np.repeat(zero, 8, axis=1)) * np.repeat(scale, 8, axis=1)
    np.testing.assert_allclose(out, x @ weight.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bits", [1, 3, 5, 8])
def test_matmul_packed_is_matmul_of_the_unpacked_weight(bits: int) -> None:
    rng = np.random.default_rng(bits)
    rows, depth, lanes, group = 7, 64, 4, 32
    codes = rng.integers(0, 1 << bits, (rows, depth))
    packed = layouts.pack(codes, bits, False, "interleaved", lanes)
    scale = rng.random((depth // group, 8)).astype(np.float32)
    zero = rng.random((depth // group, 8)).astype(np.float32)
    x = rng.standard_normal((3, depth)).astype(np.float32)
    attrs = {"bits": bits, "cols": rows, "group": group, "lanes": lanes}
    out = run_op(quant.matmul_packed, x, packed, scale, zero, **attrs)  # type: ignore[arg-type]
    weight = (codes - np.repeat(zero[:, :rows].T, group, axis=1)) * np.repeat(scale[:, :rows].T, group, axis=1)
    np.testing.assert_allclose(out, x @ weight.T, rtol=1e-5, atol=1e-5)
    by_panel = [layouts.panel_params(p[:, :rows].T, lanes) for p in (scale, zero)]
    assert by_panel[0].shape == (2, depth // group, lanes)
    out = run_op(quant.matmul_packed, x, packed, *by_panel, **attrs)  # type: ignore[arg-type]
    np.testing.assert_allclose(out, x @ weight.T, rtol=1e-5, atol=1e-5)


def test_embedding() -> None:
    q = QuantizedType(3, True, f32, "per_channel", 0)
    table = np.array([[-4, 3, 0], [1, 2, -1], [3, 3, 3]], np.int8)
    scale = np.array([[0.5], [2.0], [1.0]], np.float32)
    idx = np.array([[2, 0], [1, 1]], np.int32)
    out = run_op(quant.embedding, table, idx, scale, elements=[q, i32, f32])
    np.testing.assert_allclose(out, (table * scale)[idx])


def _qt(shape: tuple[int, ...], q: QuantizedType = U4G) -> TensorType:
    return TensorType(shape, q)


@pytest.mark.parametrize(
    ("op", "types", "attrs", "message"),
    [
        (
            quant.quantize,
            [TensorType((4, 16), f32), TensorType((4, 3), f32)],
            {"type": U4G},
            "scale of quantize must have shape 4x2",
        ),
        (
            quant.quantize,
            [TensorType((4, 12), f32), TensorType((4, 1), f32)],
            {"type": U4G},
            "group size 8 does not divide dimension 1 of size 12",
        ),
        (
            quant.quantize,
            [TensorType((4, 16), f32), TensorType((4, 2), f32)],
            {"type": f32},
            "attribute 'type' must be a !quant<...> type",
        ),
        (
            quant.dequantize,
            [TensorType((4, 16), f32), TensorType((4, 2), f32)],
            {},
            "input must be a tensor of a !quant<...> type",
        ),
        (
            quant.matmul,
            [TensorType((2, 8), f32), _qt((3, 16)), TensorType((3, 2), f32)],
            {},
            "contraction dimensions differ",
        ),
        (
            quant.matmul,
            [TensorType((2, 16), f32), _qt((3, 16)), TensorType((3, 2), f32), TensorType((3,), f32)],
            {},
            "zero point of the weight must have shape 3x2",
        ),
        (
            quant.matmul_packed,
            [
                TensorType((1, 64), f32),
                TensorType((1, 2, 4, 4), tir.IntegerType(32, False)),
                TensorType((2, 4), f32),
                TensorType((2, 4), f32),
            ],
            {"bits": 4, "cols": 3, "group": 16, "lanes": 4},
            "a group that is a multiple of 32",
        ),
        (
            quant.matmul_packed,
            [
                TensorType((1, 64), f32),
                TensorType((1, 2, 4, 4), tir.IntegerType(32, False)),
                TensorType((1, 2, 4), f32),
                TensorType((2, 4), f32),
            ],
            {"bits": 4, "cols": 3, "group": 32, "lanes": 4},
            "zero must be tensor<2x4xf32> (groups x padded rows) or tensor<1x2x4xf32> (panels x groups x lanes), as",
        ),
        (
            quant.matmul_packed,
            [
                TensorType((1, 64), f32),
                TensorType((1, 2, 4, 4), tir.IntegerType(32, False)),
                TensorType((2, 2, 4), f32),
                TensorType((2, 2, 4), f32),
            ],
            {"bits": 4, "cols": 3, "group": 32, "lanes": 4},
            "scale must be tensor<2x4xf32>",
        ),
        (
            quant.embedding,
            [_qt((3, 16)), TensorType((2,), f32), TensorType((3, 2), f32)],
            {},
            "indices must be integers",
        ),
    ],
)
def test_verifier_names_the_problem(
    op: object, types: list[TensorType], attrs: dict[str, object], message: str
) -> None:
    assert message in op_error(op, *types, **attrs)  # type: ignore[arg-type]


def test_round_trip_and_parse_errors() -> None:
    module = build_module(
        [TensorType((2, 16), f32), _qt((3, 16)), TensorType((3, 2), f32)], lambda x, w, s: quant.matmul(x, w, s)
    )
    text = tir.print_module(module)
    assert (
        "quant.matmul %x0, %x1, %x2 : (tensor<2x16xf32>, tensor<3x16x!quant<u4:f32, per_group(axis=1, size=8)>>" in text
    )
    with pytest.raises(TensoriumError, match="bad quantized type '!quant<u4:f32, per_row>'"):
        tir.parse_module(text.replace("per_group(axis=1, size=8)", "per_row"))
