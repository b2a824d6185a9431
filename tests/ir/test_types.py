"""Types: construction and validation, printing and parsing, hashing, and the numpy storage dtype."""

from __future__ import annotations

import numpy as np
import pytest

from tensorium.errors import ParseError
from tensorium.ir import parse_type_text
from tensorium.ir.types import (
    DYN,
    FloatType,
    FunctionType,
    IndexType,
    IntegerType,
    QuantizedType,
    Sym,
    TensorType,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i64,
    index,
    is_bool,
    is_float,
    is_int,
    parse_scalar_type,
    scalar_type_of,
    storage_dtype,
    tensor_type_of,
    u8,
)

SCALARS = [
    ("f16", f16, np.float16),
    ("bf16", bf16, np.float32),
    ("f32", f32, np.float32),
    ("f64", f64, np.float64),
    ("i1", i1, np.bool_),
    ("i2", IntegerType(2), np.int8),
    ("i3", IntegerType(3), np.int8),
    ("i8", i8, np.int8),
    ("i9", IntegerType(9), np.int16),
    ("i16", IntegerType(16), np.int16),
    ("i17", IntegerType(17), np.int32),
    ("i32", IntegerType(32), np.int32),
    ("i33", IntegerType(33), np.int64),
    ("i64", i64, np.int64),
    ("u1", IntegerType(1, False), np.bool_),
    ("u4", IntegerType(4, False), np.uint8),
    ("u5", IntegerType(5, False), np.uint8),
    ("u8", u8, np.uint8),
    ("u12", IntegerType(12, False), np.uint16),
    ("u32", IntegerType(32, False), np.uint32),
    ("u48", IntegerType(48, False), np.uint64),
    ("u64", IntegerType(64, False), np.uint64),
    ("index", index, np.int64),
]


@pytest.mark.parametrize(("text", "t", "dtype"), SCALARS, ids=[s[0] for s in SCALARS])
def test_scalar_types_print_parse_and_store(text: str, t: object, dtype: type) -> None:
    assert str(t) == text
    assert parse_scalar_type(text) == t
    assert parse_type_text(text) == t
    assert storage_dtype(t) == np.dtype(dtype)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("t", "lo", "hi"),
    [
        (i1, 0, 1),
        (IntegerType(1, False), 0, 1),
        (IntegerType(3), -4, 3),
        (IntegerType(5, False), 0, 31),
        (i8, -128, 127),
        (u8, 0, 255),
        (i64, -(2**63), 2**63 - 1),
        (IntegerType(64, False), 0, 2**64 - 1),
    ],
)
def test_integer_ranges(t: IntegerType, lo: int, hi: int) -> None:
    assert (t.min_value, t.max_value) == (lo, hi)


def test_integer_properties() -> None:
    assert i1.is_bool and IntegerType(1, False).is_bool and not i8.is_bool
    assert IntegerType(7).width == 7 and not IntegerType(7, False).signed
    assert f16.width == bf16.width == 16 and f32.width == 32 and f64.width == 64
    assert is_float(bf16) and not is_float(i8)
    assert is_int(i8) and is_int(index) and is_int(i1) and not is_int(f32)
    assert is_bool(i1) and not is_bool(i8) and not is_bool(f32)


def test_types_are_values() -> None:
    a = TensorType((2, Sym("n"), DYN), f32)
    b = TensorType([2, Sym("n"), Sym()], FloatType("f32"))  # type: ignore[arg-type]
    assert a == b and hash(a) == hash(b) and isinstance(b.shape, tuple)
    assert len({a, b, TensorType((2, Sym("m"), DYN), f32)}) == 2
    assert IntegerType(8) == i8 and IntegerType(8, False) != i8 and i1 != IntegerType(1, False)
    assert IndexType() == index and hash(IndexType()) == hash(index)
    assert Sym() == DYN and Sym("n") != DYN
    q = QuantizedType(4, False, f32)
    assert {q: 1}[QuantizedType(4, False, FloatType("f32"))] == 1
    assert FunctionType((a,), ()) == FunctionType((b,), ())
    with pytest.raises(AttributeError):
        a.element = f64  # type: ignore[misc]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: FloatType("f8"), "unknown float type 'f8' \\(expected one of f16, bf16, f32, f64\\)"),
        (lambda: IntegerType(0), "integer width must be in 1..64, got 0"),
        (lambda: IntegerType(65, False), "integer width must be in 1..64, got 65"),
        (lambda: Sym("1n"), "bad symbolic dimension name '1n'"),
        (lambda: Sym(""), "bad symbolic dimension name ''"),
        (lambda: TensorType((2, -1), f32), "negative dimension -1 in tensor shape"),
        (lambda: TensorType((2, 1.5), f32), "bad dimension 1.5 in tensor shape"),  # type: ignore[arg-type]
        (lambda: TensorType((True,), f32), "bad dimension True in tensor shape"),
        (lambda: TensorType((2, "n"), f32), "bad dimension 'n' in tensor shape"),  # type: ignore[arg-type]
        (lambda: TensorType((2,), TensorType((2,), f32)), "bad tensor element type"),  # type: ignore[arg-type]
        (lambda: QuantizedType(0, True, f32), "quantized storage must be 1..8 bits, got 0"),
        (lambda: QuantizedType(9, True, f32), "quantized storage must be 1..8 bits, got 9"),
        (lambda: QuantizedType(4, True, f32, axis=0), "per_tensor quantization takes no axis or group size"),
        (lambda: QuantizedType(4, True, f32, "per_channel"), "per_channel quantization needs an axis and no group"),
        (
            lambda: QuantizedType(4, True, f32, "per_channel", 0, 32),
            "per_channel quantization needs an axis and no group size",
        ),
        (lambda: QuantizedType(4, True, f32, "per_group", 1), "per_group quantization needs an axis and a group size"),
        (lambda: QuantizedType(4, True, f32, "per_group", 1, 0), "needs an axis and a group size >= 1"),
        (lambda: QuantizedType(4, True, f32, "per_row"), "unknown quantization granularity 'per_row'"),  # type: ignore[arg-type]
    ],
)
def test_bad_constructions_raise(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]


@pytest.mark.parametrize(
    ("text", "t"),
    [
        ("!quant<u4:f32, per_tensor>", QuantizedType(4, False, f32)),
        ("!quant<i8:bf16, per_channel(axis=0)>", QuantizedType(8, True, bf16, "per_channel", 0)),
        ("!quant<u4:f16, per_group(axis=1, size=128)>", QuantizedType(4, False, f16, "per_group", 1, 128)),
        ("!quant<i1:f64, per_channel(axis=-1)>", QuantizedType(1, True, f64, "per_channel", -1)),
    ],
)
def test_quantized_types(text: str, t: QuantizedType) -> None:
    assert str(t) == text
    assert parse_type_text(text) == t
    assert parse_type_text(text.replace(", ", ",")) == t
    assert t.storage == IntegerType(t.bits, t.signed)
    # codes live in one byte, and a 1-bit signed code (-1 or 0) is no boolean
    assert storage_dtype(t) == np.dtype(np.int8 if t.signed else np.uint8)
    tensor = TensorType((3, 256), t)
    assert str(tensor) == f"tensor<3x256x{text}>"
    assert parse_type_text(str(tensor)) == tensor


@pytest.mark.parametrize(
    ("text", "shape", "element"),
    [
        ("tensor<f32>", (), f32),
        ("tensor<4xf32>", (4,), f32),
        ("tensor<0x3xi8>", (0, 3), i8),
        ("tensor<1x1x1xbf16>", (1, 1, 1), bf16),
        ("tensor<?xf16>", (DYN,), f16),
        ("tensor<[batch]x?x16xu5>", (Sym("batch"), DYN, 16), IntegerType(5, False)),
        ("tensor<[n]x[n]xi1>", (Sym("n"), Sym("n")), i1),
        ("tensor<[_a1]xindex>", (Sym("_a1"),), index),
    ],
)
def test_tensor_types(text: str, shape: tuple, element: object) -> None:
    t = TensorType(shape, element)  # type: ignore[arg-type]
    assert str(t) == text
    assert parse_type_text(text) == t
    assert t.rank == len(shape)
    assert t.with_shape((2,)) == TensorType((2,), t.element)
    assert t.with_element(f64).shape == t.shape


def test_static_and_symbolic_shapes() -> None:
    static = TensorType((2, 0, 3), f32)
    assert static.is_static and static.static_shape == (2, 0, 3) and static.num_elements == 0
    assert TensorType((), f32).num_elements == 1 and TensorType((4, 5), f32).num_elements == 20
    symbolic = TensorType((2, Sym("n")), f32)
    assert not symbolic.is_static and symbolic.num_elements is None
    with pytest.raises(ValueError, match=r"tensor<2x\[n\]xf32> has symbolic dimensions"):
        _ = symbolic.static_shape


def test_function_type_text() -> None:
    t = FunctionType((TensorType((2,), f32), i8), (TensorType((), i1),))
    assert str(t) == "(tensor<2xf32>, i8) -> (tensor<i1>)"
    assert str(FunctionType((), ())) == "() -> ()"


def test_numpy_dtype_mapping() -> None:
    assert scalar_type_of(np.dtype(np.bool_)) == i1
    assert scalar_type_of(np.dtype(np.float16)) == f16
    assert scalar_type_of(np.dtype(np.uint16)) == IntegerType(16, False)
    assert scalar_type_of(np.dtype(np.int64)) == i64
    with pytest.raises(ValueError, match="numpy dtype complex64 has no Tensorium type"):
        scalar_type_of(np.dtype(np.complex64))
    assert tensor_type_of(np.zeros((2, 0), np.int32)) == TensorType((2, 0), IntegerType(32))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("f8", "unknown type 'f8'"),
        ("i65", "unknown type 'i65'"),
        ("u0", "unknown type 'u0'"),
        ("tensor", "unknown type 'tensor'"),
        ("tensor<2xf32", "type 'tensor<2xf32' is missing its closing '>'"),
        ("tensor<2x-3xf32>", "bad tensor type 'tensor<2x-3xf32>'"),
        ("tensor<2x[]xf32>", "bad tensor type 'tensor<2x\\[\\]xf32>'"),
        ("tensor<2x>", "got '' \\(missing element type\\)"),
        ("tensor<2xtensor<2xf32>>", "tensor element must be a scalar type, got 'tensor<2xf32>'"),
        ("!quant<u4:f32>", "bad quantized type '!quant<u4:f32>'"),
        ("!quant<f32:u4, per_tensor>", "bad quantized type"),
        ("!quant<u4:f32, per_group(axis=0, size=0)>", "per_group quantization needs an axis and a group size >= 1"),
    ],
)
def test_parse_type_text_rejects(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_type_text(text)


def test_parse_type_text_strips_spaces() -> None:
    assert parse_type_text("  tensor<2xf32>\n") == TensorType((2,), f32)
