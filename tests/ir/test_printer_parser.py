"""Printer and parser on hand-written modules: exact text round trips and the values they hold."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends.interp import round_to_bf16
from tensorium.ir import func_body, func_type, functions
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.core import Operation
from tensorium.ir.printer import DENSE_HEX_THRESHOLD, format_attr, format_float
from tensorium.ir.types import DYN, FloatType, IntegerType, QuantizedType, Sym, TensorType, f32, i64, index


def round_trip(text: str, verify: bool = True) -> Operation:
    """Parse ``text``, check it prints back exactly, and return the module."""
    module = tm.parse_module(text, verify=verify)
    assert tm.print_module(module) == text
    assert tm.print_module(tm.parse_module(text, verify=verify)) == text
    return module


def func_attrs(module: Operation) -> dict:
    return functions(module)[0].attributes


ATTRS = """\
module attributes {producer = "hand", version = 3} {
  func.func @main() attributes {t = true, f = false, i = -3, zero = 0, big = 123456789012345678901234567890, \
x = 1.5, nz = -0.0, tiny = 1e-30, sub = 5e-324, huge = 1.7976931348623157e+308, e16 = 1e+16, third = \
0.3333333333333333, tenth = 0.1, pinf = inf, ninf = -inf, qnan = nan, s = "tab\\tquote\\"back\\\\slash\\nnl", \
u = "caf\\u00e9", empty = "", l = [1, [2.5, "x", true], [], [[]]], ty = tensor<?x[n]x0xi3>, et = bf16, \
ix = index, q = !quant<u4:f32, per_group(axis=1, size=32)>, qt = tensor<8x!quant<i8:f16, per_channel(axis=0)>>} {
    func.return
  }
}
"""


def test_every_attribute_kind_round_trips() -> None:
    a = func_attrs(round_trip(ATTRS))
    assert a["t"] is True and a["f"] is False
    assert a["i"] == -3 and type(a["zero"]) is int and a["big"] == 123456789012345678901234567890
    assert a["x"] == 1.5 and a["tiny"] == 1e-30 and a["sub"] == 5e-324 and a["huge"] == 1.7976931348623157e308
    assert a["nz"] == 0.0 and math.copysign(1.0, a["nz"]) == -1.0
    assert a["e16"] == 1e16 and a["third"] == 1 / 3 and a["tenth"] == 0.1
    assert a["pinf"] == math.inf and a["ninf"] == -math.inf and math.isnan(a["qnan"])
    assert a["s"] == 'tab\tquote"back\\slash\nnl' and a["u"] == "café" and a["empty"] == ""
    assert a["l"] == (1, (2.5, "x", True), (), ((),))
    assert a["ty"] == TensorType((DYN, Sym("n"), 0), IntegerType(3))
    assert a["et"] == FloatType("bf16") and a["ix"] == index
    assert a["q"] == QuantizedType(4, False, f32, "per_group", 1, 32)
    assert a["qt"].element == QuantizedType(8, True, FloatType("f16"), "per_channel", 0)
    module = tm.parse_module(ATTRS)
    assert module.attributes == {"producer": "hand", "version": 3}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (1e-30, "1e-30"),
        (1e16, "1e+16"),
        (123456789.0, "123456789.0"),
        (0.1 + 0.2, "0.30000000000000004"),
        (float("inf"), "inf"),
        (float("-inf"), "-inf"),
        (float("nan"), "nan"),
    ],
)
def test_float_text_is_shortest_exact(value: float, text: str) -> None:
    assert format_float(value) == text
    assert format_attr(value) == text


def test_attribute_text_keeps_kinds_apart() -> None:
    assert [format_attr(v) for v in (True, 1, 1.0, "1", (1,), (1.0,))] == ["true", "1", "1.0", '"1"', "[1]", "[1.0]"]
    assert format_attr("é\n") == '"\\u00e9\\n"'


def _constant_module(dense_text: str) -> str:
    t = dense_text.rsplit(" : ", 1)[1]
    return (
        f"module {{\n  func.func @main() -> {t} {{\n"
        f"    %0 = graph.constant {{value = {dense_text}}} : () -> {t}\n"
        f"    func.return %0 : {t}\n  }}\n}}\n"
    )


def _constant(module: Operation) -> DenseAttr:
    value = func_body(functions(module)[0]).ops[0].attributes["value"]
    assert isinstance(value, DenseAttr)
    return value


DENSE_TEXT = [
    ("dense<1.5> : tensor<2x3xf32>", np.full((2, 3), 1.5, np.float32)),
    ("dense<-0.0> : tensor<2xf64>", np.array([-0.0, -0.0])),
    ("dense<[0.0, -0.0]> : tensor<2xf64>", np.array([0.0, -0.0])),
    ("dense<[[1.0, 2.0], [3.0, inf]]> : tensor<2x2xf16>", np.array([[1, 2], [3, np.inf]], np.float16)),
    (
        "dense<[0.0999755859375, 65504.0, -inf, nan]> : tensor<4xf16>",
        np.array([0.1, 65504, -np.inf, np.nan], np.float16),
    ),
    ("dense<[1.0, 0.1015625]> : tensor<2xbf16>", np.array([1.0, 0.1015625], np.float32)),
    ("dense<[true, false, true]> : tensor<3xi1>", np.array([True, False, True])),
    ("dense<false> : tensor<i1>", np.array(False)),
    ("dense<[-4, 3, 0]> : tensor<3xi3>", np.array([-4, 3, 0], np.int8)),
    ("dense<[31, 0, 7]> : tensor<3xu5>", np.array([31, 0, 7], np.uint8)),
    ("dense<[9223372036854775807, -9223372036854775808]> : tensor<2xi64>", np.array([2**63 - 1, -(2**63)])),
    ("dense<[[[1], [2]]]> : tensor<1x2x1xi32>", np.array([[[1], [2]]], np.int32)),
    ("dense<7> : tensor<index>", np.array(7, np.int64)),
    ('dense<"0x"> : tensor<0x3xf32>', np.zeros((0, 3), np.float32)),
]


@pytest.mark.parametrize(("text", "expected"), DENSE_TEXT, ids=[t for t, _ in DENSE_TEXT])
def test_dense_text_round_trips(text: str, expected: np.ndarray) -> None:
    value = _constant(round_trip(_constant_module(text)))
    assert value.array.dtype == expected.dtype
    np.testing.assert_array_equal(value.array, expected)
    if expected.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(value.array), np.signbit(expected))


def _wrap(attr_text: str) -> str:
    return f"func.func @f() attributes {{v = {attr_text}}} {{\n  func.return\n}}\n"


RNG = np.random.default_rng(0)
HEX_CASES = [
    ("f16", (RNG.standard_normal(70) * 100).astype(np.float16)),
    ("bf16", round_to_bf16(RNG.standard_normal((5, 20)).astype(np.float32))),
    ("f32", np.concatenate([RNG.standard_normal(65).astype(np.float32), [np.inf, -0.0, np.nan]]).astype(np.float32)),
    ("f64", RNG.standard_normal((3, 30))),
    ("i1", RNG.random(80) < 0.5),
    ("i3", RNG.integers(-4, 4, 99).astype(np.int8)),
    ("u5", RNG.integers(0, 32, (9, 9)).astype(np.uint8)),
    ("i64", RNG.integers(-(2**63), 2**63 - 1, 65, dtype=np.int64)),
]


@pytest.mark.parametrize(("element", "array"), HEX_CASES, ids=[e for e, _ in HEX_CASES])
def test_large_constants_print_as_exact_hex(element: str, array: np.ndarray) -> None:
    t = TensorType(array.shape, tm.ir.parse_type_text(element))  # type: ignore[arg-type]
    attr = DenseAttr(array, t)
    assert array.size > DENSE_HEX_THRESHOLD
    text = _constant_module(format_attr(attr))
    assert f'{{value = dense<"0x{array.astype(array.dtype.newbyteorder("<")).tobytes().hex().upper()}"> : {t}}}' in text
    parsed = _constant(round_trip(text))
    assert parsed == attr
    assert parsed.array.tobytes() == array.tobytes()


def test_small_hex_constants_are_accepted_and_print_as_lists() -> None:
    module = tm.parse_module(_wrap('dense<"0x003C00C0"> : tensor<2xf16>'))
    assert func_attrs(module)["v"].array.tolist() == [1.0, -2.0]
    assert "dense<[1.0, -2.0]> : tensor<2xf16>" in tm.print_module(module)
    ints = tm.parse_module(_wrap('dense<"0x0100000002000000"> : tensor<2xi32>'))
    assert func_attrs(ints)["v"].array.tolist() == [1, 2]


def test_splat_needs_identical_bits() -> None:
    assert DenseAttr(np.array([0.0, 0.0]), TensorType((2,), FloatType("f64"))).is_splat
    assert not DenseAttr(np.array([0.0, -0.0]), TensorType((2,), FloatType("f64"))).is_splat
    assert DenseAttr(np.array([np.nan, np.nan]), TensorType((2,), FloatType("f64"))).is_splat
    assert not DenseAttr(np.zeros((0,)), TensorType((0,), FloatType("f64"))).is_splat


def test_nans_of_any_sign_and_payload_are_one_splat() -> None:
    """The text has one ``nan``: NaNs of other bits must print as the splat their parsed copy is."""
    nans = np.array([np.nan, -np.nan, np.nan], dtype=np.float32)
    nans.view(np.uint32)[2] |= 1  # another payload
    attr = DenseAttr(nans, TensorType((3,), FloatType("f32")))
    assert attr.is_splat
    assert not DenseAttr(np.array([np.nan, 1.0]), TensorType((2,), FloatType("f64"))).is_splat
    assert not DenseAttr(np.array([1.0, np.nan]), TensorType((2,), FloatType("f64"))).is_splat


MULTI = """\
module {
  func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %r:2 = graph.relu %x : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    %0:3 = graph.neg %r#1 : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    %1 = graph.add %r#0, %0#2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %1, %0#0 : tensor<4xf32>, tensor<4xf32>
  }
}
"""


def test_multi_result_syntax() -> None:
    module = round_trip(MULTI, verify=False)
    relu, neg, add, ret = func_body(functions(module)[0]).ops
    assert len(relu.results) == 2 and len(neg.results) == 3
    assert neg.operands[0] is relu.results[1]
    assert add.operands == (relu.results[0], neg.results[2])
    assert ret.operands == (add.results[0], neg.results[0])
    listed = MULTI.replace("%r:2 =", "%a, %b =").replace("%r#1", "%b").replace("%r#0", "%a")
    assert tm.print_module(tm.parse_module(listed, verify=False)) == MULTI.replace("%r", "%a")
    mixed = tm.parse_module(
        "func.func @main(%x: tensor<4xf32>) {\n"
        "  %p, %q:2 = graph.relu %x : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)\n"
        "  %0 = graph.add %p, %q#1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
        "  func.return\n}\n",
        verify=False,
    )
    relu, add, _ = func_body(functions(mixed)[0]).ops
    assert add.operands == (relu.results[0], relu.results[2])


REGIONS = """\
module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = graph.relu %x (
      {
        %1 = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>
      },
      {
      ^bb0(%a: f32, %b: tensor<2xi8>):
        %2 = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>
        %3 = graph.abs %2 (
          {
          ^bb0(%c: f32):
            %4 = graph.add %c, %a : (f32, f32) -> f32
          }
        ) {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
      },
      {
      }
    ) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %0 : tensor<4xf32>
  }
}
"""


def test_nested_regions_round_trip_from_the_generic_form() -> None:
    generic = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "graph.relu"(%x) ({
    %1 = "graph.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  }, {
  ^bb0(%a: f32, %b: tensor<2xi8>):
    %2 = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    %3 = "graph.abs"(%2) ({
    ^bb0(%c: f32):
      %4 = graph.add %c, %a : (f32, f32) -> f32
    }) {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  }, {}) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""
    module = tm.parse_module(generic, verify=False)
    assert tm.print_module(module) == REGIONS
    round_trip(REGIONS, verify=False)
    relu = func_body(functions(module)[0]).ops[0]
    inner = relu.regions[1].block
    assert [a.type for a in inner.args] == [f32, TensorType((2,), IntegerType(8))]
    add = inner.ops[1].regions[0].block.ops[0]
    assert add.operands[1] is inner.args[0]


def test_region_values_are_not_visible_outside() -> None:
    text = REGIONS.replace("func.return %0 :", "func.return %2 :")
    with pytest.raises(tm.ParseError, match=r"<input>:20:17: error: use of undefined value '%2'"):
        tm.parse_module(text, verify=False)


COMMENTED = """\
// leading comment
func.func @main(%x: tensor<[n]x?x3xf32>, %y: tensor<3xf32>) -> tensor<[n]x?x3xf32> {  // trailing
  // a whole-line comment with symbols: %0 = graph.foo {"
  %sum = graph.add %x, %y : (tensor<[n]x?x3xf32>, tensor<3xf32>) -> tensor<[n]x?x3xf32>
  %7 = graph.relu %sum : (tensor<[n]x?x3xf32>) -> tensor<[n]x?x3xf32>
  func.return %7 : tensor<[n]x?x3xf32>
}

func.func @second(%0: tensor<i64>) -> tensor<i64> {
  func.return %0 : tensor<i64>
}
"""

WRAPPED = """\
module {
  func.func @main(%x: tensor<[n]x?x3xf32>, %y: tensor<3xf32>) -> tensor<[n]x?x3xf32> {
    %sum = graph.add %x, %y : (tensor<[n]x?x3xf32>, tensor<3xf32>) -> tensor<[n]x?x3xf32>
    %0 = graph.relu %sum : (tensor<[n]x?x3xf32>) -> tensor<[n]x?x3xf32>
    func.return %0 : tensor<[n]x?x3xf32>
  }
  func.func @second(%arg0: tensor<i64>) -> tensor<i64> {
    func.return %arg0 : tensor<i64>
  }
}
"""


def test_comments_and_bare_functions_are_wrapped_in_a_module() -> None:
    module = tm.parse_module(COMMENTED)
    assert module.name == "builtin.module"
    assert tm.print_module(module) == WRAPPED
    round_trip(WRAPPED)
    main = functions(module)[0]
    assert func_body(main).args[0].type == TensorType((Sym("n"), DYN, 3), f32)
    assert func_type(functions(module)[1]).inputs == (TensorType((), i64),)


def test_names_are_kept_and_numbers_renumbered() -> None:
    text = """\
func.func @main(%arg0: tensor<2xf32>, %5: tensor<2xf32>) -> tensor<2xf32> {
  %9 = graph.add %arg0, %5 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %x.y$z = graph.neg %9 : (tensor<2xf32>) -> tensor<2xf32>
  %3 = graph.neg %x.y$z : (tensor<2xf32>) -> tensor<2xf32>
  func.return %3 : tensor<2xf32>
}
"""
    printed = tm.print_module(tm.parse_module(text))
    assert printed.splitlines()[1:6] == [
        "  func.func @main(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>) -> tensor<2xf32> {",
        "    %0 = graph.add %arg0, %arg1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
        "    %x.y$z = graph.neg %0 : (tensor<2xf32>) -> tensor<2xf32>",
        "    %1 = graph.neg %x.y$z : (tensor<2xf32>) -> tensor<2xf32>",
        "    func.return %1 : tensor<2xf32>",
    ]


def test_default_attributes_are_filled_in_and_left_out() -> None:
    text = """\
module {
  func.func @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x2xf32> {
    %0 = graph.matmul %x, %y {transpose_b = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
    func.return %0 : tensor<2x2xf32>
  }
}
"""
    module = round_trip(text)
    matmul = func_body(functions(module)[0]).ops[0]
    assert matmul.attributes == {"transpose_b": True, "transpose_a": False}
    explicit = text.replace("{transpose_b = true}", "{transpose_a = false, transpose_b = true}")
    assert tm.print_module(tm.parse_module(explicit)) == text


def test_generic_form_equals_custom_form() -> None:
    custom = """\
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xi1> {
    %0 = graph.gelu %x {approximate = "tanh"} : (tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.lt %0, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    func.return %1 : tensor<2xi1>
  }
}
"""
    generic = custom.replace('graph.gelu %x {approximate = "tanh"}', '"graph.gelu"(%x) {approximate = "tanh"}')
    generic = generic.replace("graph.lt %0, %x", '"graph.lt"(%0, %x)')
    assert generic != custom
    assert tm.print_module(tm.parse_module(generic)) == custom


def test_print_op_of_a_single_op_and_empty_module() -> None:
    module = tm.parse_module(WRAPPED)
    add = func_body(functions(module)[0]).ops[0]
    assert (
        tm.ir.print_op(add) == "%sum = graph.add %x, %y : (tensor<[n]x?x3xf32>, tensor<3xf32>) -> tensor<[n]x?x3xf32>\n"
    )
    assert str(add) == tm.ir.print_op(add)
    round_trip("module {\n}\n")
    round_trip("module attributes {a = [1, 2]} {\n}\n")


def test_clone_copies_nested_regions_and_shares_attributes() -> None:
    module = tm.parse_module(REGIONS, verify=False)
    copy = module.clone()
    assert tm.print_module(copy) == REGIONS
    original_ops, copied_ops = list(module.walk()), list(copy.walk())
    assert len(original_ops) == len(copied_ops)
    assert all(a is not b and a.attributes == b.attributes for a, b in zip(original_ops, copied_ops))
    inner = func_body(functions(copy)[0]).ops[0].regions[1].block
    add = inner.ops[1].regions[0].block.ops[0]
    assert add.operands[1] is inner.args[0]  # uses inside the copy point at the copy's own values
    assert not func_body(functions(module)[0]).args[0].uses == []  # the original keeps its uses
    func_body(functions(copy)[0]).ops[0].attributes["extra"] = 1
    assert "extra" not in func_body(functions(module)[0]).ops[0].attributes


def test_fingerprints_hash_large_constants_instead_of_printing_them() -> None:
    def module_of(weight: np.ndarray) -> Operation:
        return tm.trace(lambda x: x @ weight, np.ones((2, weight.shape[0]), np.float32)).module

    weight = np.arange(4096, dtype=np.float32).reshape(64, 64)
    text = tm.ir.printer.fingerprint(module_of(weight))
    assert '"sha256:' in text and "0x" not in text and len(text) < 2000
    assert tm.ir.printer.fingerprint(module_of(weight.copy())) == text
    changed = weight.copy()
    changed[5, 7] = -1
    assert tm.ir.printer.fingerprint(module_of(changed)) != text
    small = np.ones((2, 2), np.float32) * np.arange(2, dtype=np.float32)
    assert "dense<[[0.0, 1.0], [0.0, 1.0]]>" in tm.ir.printer.fingerprint(module_of(small))


LOCATED = """// func.func in a comment, and func.return
module {
  func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.relu %a : (tensor<2xf32>) -> tensor<2xf32>
    func.return %0 : tensor<2xf32>
  }
  func.func
      @g(%b: buffer<4xf32, global>) {
    func.return
  }
}
"""


@pytest.mark.parametrize("comment", [True, False])
def test_the_fast_parse_locates_every_op_as_the_parse_with_positions_does(comment: bool) -> None:
    from tensorium.ir.parser import _build, _Source

    text = LOCATED if comment else LOCATED.split("\n", 1)[1]
    full = _build(_Source(text, "m.mlir"), positions=True)
    places = [(op.name, op.loc) for op in full.walk()]
    first = 2 if comment else 1
    assert ("func.func", tm.Location(first + 5, 3, "m.mlir")) in places  # the keyword, not the symbol below it
    assert ("func.return", tm.Location(first + 7, 5, "m.mlir")) in places  # a bare return: no token of its own
    parsed = tm.parse_module(text, filename="m.mlir", verify=False)
    assert [(op.name, op.loc) for op in parsed.walk()] == places
    if comment:  # the keywords in the comment are places where no op starts: the full parser takes over
        with pytest.raises(Exception, match="a keyword spelled where no op starts"):
            _build(_Source(text, "m.mlir"), positions=False)
    else:
        fast = _build(_Source(text, "m.mlir"), positions=False)
        assert [(op.name, op.loc) for op in fast.walk()] == places
