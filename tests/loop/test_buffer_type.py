"""The buffer type: construction rules, text form, parsing and the parser's diagnostics."""

from __future__ import annotations

import re

import pytest

import tensorium as tm
from tensorium.errors import ParseError
from tensorium.ir import parse_type_text
from tensorium.ir.types import (
    DYN,
    BufferType,
    IntegerType,
    QuantizedType,
    ShapedType,
    Sym,
    TensorType,
    bf16,
    f32,
    i1,
    index,
    u8,
)


@pytest.mark.parametrize(
    ("t", "text"),
    [
        (BufferType((4, 8), f32), "buffer<4x8xf32, global>"),
        (BufferType((DYN, Sym("n"), 0), IntegerType(3), "shared"), "buffer<?x[n]x0xi3, shared>"),
        (BufferType((), bf16, "local"), "buffer<bf16, local>"),
        (BufferType((1,), index, "local"), "buffer<1xindex, local>"),
        (BufferType((2,), i1), "buffer<2xi1, global>"),
    ],
)
def test_buffer_types_print_and_parse(t: BufferType, text: str) -> None:
    assert str(t) == text
    assert parse_type_text(text) == t
    assert parse_type_text(text.replace(", ", ",")) == t


def test_buffer_shape_properties() -> None:
    t = BufferType((4, Sym("n")), u8, "shared")
    assert isinstance(t, ShapedType) and t.rank == 2 and not t.is_static and t.num_elements is None
    s = BufferType((4, 0, 3), f32)
    assert s.is_static and s.static_shape == (4, 0, 3) and s.num_elements == 0
    assert BufferType((), f32).num_elements == 1
    assert BufferType((4,), f32) != TensorType((4,), f32) and BufferType((4,), f32) != BufferType((4,), f32, "shared")
    with pytest.raises(ValueError, match=r"buffer<4x\[n\]xu8, shared> has symbolic dimensions"):
        _ = t.static_shape


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (((-1,), f32), "negative dimension -1 in buffer shape"),
        (((True,), f32), "bad dimension True in buffer shape"),
        (((4,), "f32"), "bad buffer element type 'f32'"),
        (((4,), QuantizedType(4, False, f32)), "buffer element must be a float, integer or index type, got !quant"),
        (((4,), f32, "private"), "unknown memory space 'private' \\(expected one of global, shared, local\\)"),
    ],
)
def test_bad_buffer_types_are_rejected(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BufferType(*args)


def test_tensor_type_checks_are_unchanged() -> None:
    with pytest.raises(ValueError, match="negative dimension -2 in tensor shape"):
        TensorType((-2,), f32)
    assert TensorType((4, Sym("b")), f32).rank == 2 and TensorType((2, 3), f32).num_elements == 6


def test_buffer_types_in_signatures_and_attributes() -> None:
    text = """\
module {
  func.func @k(%a: buffer<4x[n]xf32, global>, %s: buffer<16xu8, shared>) attributes {t = buffer<f32, local>} {
    func.return
  }
}
"""
    module = tm.parse_module(text)
    assert tm.print_module(module) == text
    func = tm.ir.functions(module)[0]
    assert func.attributes["t"] == BufferType((), f32, "local")
    assert [a.type for a in tm.ir.func_body(func).args] == [
        BufferType((4, Sym("n")), f32),
        BufferType((16,), u8, "shared"),
    ]


@pytest.mark.parametrize(
    ("type_text", "message"),
    [
        (
            "buffer<4xf32>",
            "1:18: error: bad buffer type 'buffer<4xf32>': expected a memory space (global, shared, local) after the "
            "element type",
        ),
        (
            "buffer<4xf32, gpu>",
            "1:18: error: bad buffer type 'buffer<4xf32, gpu>': unknown memory space 'gpu' (expected one of global, "
            "shared, local)",
        ),
        (
            "buffer<4xfoo, local>",
            "1:27: error: bad buffer type 'buffer<4xfoo, local>': expected dimensions like 4x?x[n]x and a float, "
            "integer or index element type, got 'foo'",
        ),
        ("buffer<4xf32, global", "1:18: error: type 'buffer<4xf32, global' is missing its closing '>'"),
    ],
)
def test_bad_buffer_type_text_is_a_parse_error(type_text: str, message: str) -> None:
    text = f"func.func @k(%a: {type_text}) {{\n  func.return\n}}\n"
    with pytest.raises(ParseError, match=re.escape(message)):
        tm.parse_module(text)
