"""The cast-chain pattern's rule: which casts are lossless, checked against the interpreter's casts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tensorium.backends.interp import coerce, evaluate_op
from tensorium.ir import graph
from tensorium.ir.core import Block
from tensorium.ir.dialects.graph.canonical import is_lossless_cast
from tensorium.ir.types import (
    FloatType,
    IntegerType,
    ScalarType,
    TensorType,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
    index,
    u8,
)

TYPES: list[ScalarType] = [i1, i8, u8, i16, IntegerType(12), IntegerType(25), i32, i64, index, f16, bf16, f32, f64]


@pytest.mark.parametrize(
    ("source", "target", "lossless"),
    [
        (i1, i8, True),
        (i1, f16, True),
        (i8, i16, True),
        (u8, i16, True),
        (u8, u8, True),
        (i8, u8, False),
        (u8, i8, False),
        (i16, i8, False),
        (i32, i64, True),
        (i64, index, True),
        (i8, i1, False),
        (IntegerType(12), f16, True),
        (IntegerType(13), f16, False),
        (IntegerType(11, False), f16, True),
        (IntegerType(12, False), f16, False),
        (i8, bf16, True),
        (IntegerType(9), bf16, True),
        (IntegerType(10), bf16, False),
        (IntegerType(25), f32, True),
        (IntegerType(26), f32, False),
        (IntegerType(54), f64, True),
        (IntegerType(53, False), f64, True),
        (IntegerType(54, False), f64, False),
        (i16, bf16, False),
        (i32, f32, False),
        (i32, f64, True),
        (i64, f64, False),
        (f16, f32, True),
        (bf16, f32, True),
        (f32, f64, True),
        (f16, bf16, False),
        (bf16, f16, False),
        (f64, f32, False),
        (f32, i64, False),
    ],
)
def test_lossless_casts(source: ScalarType, target: ScalarType, lossless: bool) -> None:
    assert is_lossless_cast(source, target) is lossless


def _samples(t: ScalarType) -> np.ndarray:
    """Edge values of element type ``t``, held as the interpreter holds them."""
    if isinstance(t, FloatType):
        raw = [0.0, -0.0, 0.1, 1.5, -2.5, 255.7, -128.9, 65504.0, 1e6 + 0.5, -3e9, 1e30, np.inf, -np.inf, np.nan]
        return coerce(np.array(raw, dtype=np.float64), t)
    bits = 64 if not isinstance(t, IntegerType) else t.width
    signed = not isinstance(t, IntegerType) or t.signed
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if isinstance(t, IntegerType) and t.is_bool:
        return np.array([False, True])
    raw = sorted({lo, lo + 1, -1 if signed else 2, 0, 1, 7, 100, hi - 1, hi})
    return coerce(np.array(raw, dtype=object).astype(np.int64 if hi < 2**63 else np.uint64), t)


def _cast(values: np.ndarray, source: ScalarType, target: ScalarType) -> np.ndarray:
    block = Block([TensorType((len(values),), source)])
    op = graph.cast(block.args[0], dtype=target).owner
    (out,) = evaluate_op(op, [values])
    return out


def test_skipping_a_lossless_middle_cast_keeps_every_value() -> None:
    checked = 0
    for source, middle, target in itertools.product(TYPES, repeat=3):
        if not is_lossless_cast(source, middle):
            continue
        values = _samples(source)
        direct = _cast(values, source, target)
        chained = _cast(_cast(values, source, middle), middle, target)
        np.testing.assert_array_equal(chained, direct, err_msg=f"{source} -> {middle} -> {target}")
        checked += 1
    assert checked > 300
