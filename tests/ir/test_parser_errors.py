"""Malformed IR text: every mistake gives one ParseError or VerifyError with file:line:column and the rule."""

from __future__ import annotations

import pickle

import pytest

import tensorium as tm
from tensorium.errors import ParseError, TensoriumError, VerifyError

GOOD = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""


def body(*lines: str, args: str = "%x: tensor<4xf32>", results: str = "tensor<4xf32>") -> str:
    """A function around ``lines`` (each indented two spaces); its first op is on line 2."""
    inner = "".join(f"  {line}\n" for line in lines)
    return f"func.func @main({args}) -> {results} {{\n{inner}}}\n"


RELU = "(tensor<4xf32>) -> tensor<4xf32>"
RET = "func.return %0 : tensor<4xf32>"
QUANT_FORMS = "expected !quant<u4:f32, per_tensor | per_channel(axis=A) | per_group(axis=A, size=G)>"


def taking(arg_type: str) -> str:
    """A function of one argument of ``arg_type`` (written from 1:21 on) that returns nothing."""
    return body("func.return", args=f"%x: {arg_type}", results="()")


def constant(data: str, type_text: str) -> str:
    """A function whose first op is a graph.constant of ``dense<data> : type_text`` (data from 2:38 on)."""
    return body(f"%0 = graph.constant {{value = dense<{data}> : {type_text}}} : () -> {type_text}", RET)


# (case id, argument type, column, what stands where dims and an element type should)
BAD_TENSOR_TYPES: list[tuple[str, str, int, str]] = [
    ("unknown-element-type", "tensor<4xfoo>", 30, "'foo'"),
    ("negative-dimension", "tensor<4x-1xf32>", 30, "'-1'"),
    ("bad-dimension-name", "tensor<[1n]xf32>", 28, "'[1n]'"),
    ("empty-dimension-name", "tensor<[]xf32>", 28, "'[]'"),
    ("missing-element-type", "tensor<4x>", 30, "'' (missing element type)"),
    ("spaces-in-tensor-type", "tensor<4 x f32>", 28, "'4 '"),
]

# (case id, dense data, constant type, column, message)
BAD_CONSTANTS: list[tuple[str, str, str, int, str]] = [
    (
        "dense-shape-mismatch",
        "[1.0, 2.0]",
        "tensor<4xf32>",
        38,
        "constant data of shape [2] does not match tensor<4xf32>",
    ),
    (
        "dense-extra-nesting",
        "[[1.0, 2.0, 3.0, 4.0]]",
        "tensor<4xf32>",
        38,
        "constant data of shape [1, 4] does not match tensor<4xf32>",
    ),
    (
        "dense-one-element-list-for-many",
        "[1.0]",
        "tensor<4xf32>",
        38,
        "constant data of shape [1] does not match tensor<4xf32>",
    ),
    (
        "dense-symbolic-type",
        "1.0",
        "tensor<?xf32>",
        45,
        "a dense constant needs a static tensor type, got tensor<?xf32>",
    ),
    ("dense-float-in-int", "[1, 1.5]", "tensor<2xi8>", 42, "float value 1.5 in a constant of element type i8"),
    ("dense-bool-in-float", "true", "tensor<4xf32>", 38, "boolean value in a constant of element type f32"),
    ("dense-int-out-of-range", "300", "tensor<2xi8>", 38, "value 300 is out of range for i8 (-128..127)"),
    ("dense-odd-width-out-of-range", "[3, -5]", "tensor<2xi3>", 42, "value -5 is out of range for i3 (-4..3)"),
    ("dense-negative-unsigned", "-1", "tensor<2xu5>", 38, "value -1 is out of range for u5 (0..31)"),
    ("dense-bool-out-of-range", "2", "tensor<2xi1>", 38, "value 2 is out of range for i1 (0..1)"),
    ("hex-too-short", '"0x0000"', "tensor<2xf32>", 38, "hex constant has 2 bytes, tensor<2xf32> needs 8"),
    ("hex-odd-length", '"0x000"', "tensor<2xf32>", 38, "hex constant data has an odd number of digits"),
    ("hex-bad-digit", '"0x00G0000000000000"', "tensor<2xf32>", 38, "hex constant data has a non-hex character"),
    ("hex-no-prefix", '"abcd"', "tensor<2xi8>", 38, "hex constant data must start with 0x"),
    ("hex-out-of-range", '"0x0107"', "tensor<2xi3>", 38, "value 7 is out of range for i3 (-4..3)"),
    ("hex-bool-out-of-range", '"0x0102"', "tensor<2xi1>", 38, "value 2 is out of range for i1 (0..1)"),
]

# (case id, text, expected first line of the message)
CASES: list[tuple[str, str, str]] = [
    # truncated files
    (
        "truncated-in-signature",
        "func.func @main(",
        "1:17: error: unexpected end of input, expected one of ')', a value (%name)",
    ),
    ("truncated-after-func", "func.func", "1:10: error: unexpected end of input, expected a symbol (@name)"),
    (
        "truncated-in-type",
        "func.func @main(%x: tensor<4xf32",
        "1:21: error: type 'tensor<4xf32' is missing its closing '>'",
    ),
    (
        "truncated-after-arrow",
        GOOD.split("->")[0] + "-> tensor<4xf32> {\n  %0 = graph.relu %x : (tensor<4xf32>) ->",
        "2:42: error: unexpected end of input, expected one of '(', a type",
    ),
    (
        "truncated-in-operand-types",
        "func.func @main(%x: tensor<4xf32>) {\n  %0 = graph.relu %x : (tensor<4xf32>",
        "2:38: error: unexpected end of input, expected one of ',', ')'",
    ),
    (
        "truncated-before-closing-brace",
        GOOD.rstrip().removesuffix("}").rstrip(),
        "3:33: error: unexpected end of input, expected one of a string, 'module', an op name (dialect.op), '}', "
        "a value (%name), 'func.func', 'func.return'",
    ),
    # names
    (
        "unknown-op",
        body("%0 = graph.relux %x : " + RELU, RET),
        "2:8: error: unknown operation 'graph.relux' (did you mean 'graph.relu'?)",
    ),
    (
        "unknown-op-generic",
        body('%0 = "xyzzy.plugh"(%x) : ' + RELU, RET),
        "2:8: error: unknown operation 'xyzzy.plugh'",
    ),
    (
        "builtin-op-in-generic-form",
        body('"func.return"(%x) : (tensor<4xf32>) -> ()'),
        "2:3: error: 'func.return' has its own syntax and no generic form",
    ),
    ("undefined-value", body("func.return %y : tensor<4xf32>"), "2:15: error: use of undefined value '%y'"),
    ("undefined-result-index", body("func.return %x#3 : tensor<4xf32>"), "2:15: error: use of undefined value '%x#3'"),
    (
        "redefined-value",
        body("%x = graph.relu %x : " + RELU, "func.return %x : tensor<4xf32>"),
        "2:3: error: redefinition of value '%x'",
    ),
    (
        "redefined-argument",
        body("func.return %x : tensor<4xf32>", args="%x: tensor<4xf32>, %x: tensor<4xf32>"),
        "1:36: error: redefinition of value '%x'",
    ),
    (
        "define-with-hash",
        body("%0#1 = graph.relu %x : " + RELU, RET),
        "2:3: error: cannot define '%0#1': '#' only selects a result of a multi-result op",
    ),
    # types
    ("unknown-scalar-type", body("func.return %x : tensor<4xf32>", args="%x: f33"), "1:21: error: unknown type 'f33'"),
    ("integer-too-wide", taking("i65"), "1:21: error: unknown type 'i65'"),
    ("integer-zero-width", taking("u0"), "1:21: error: unknown type 'u0'"),
    *[
        (
            case,
            taking(arg_type),
            f"1:{column}: error: bad tensor type '{arg_type}': expected dimensions like 4x?x[n]x and an element "
            f"type, got {got}",
        )
        for case, arg_type, column, got in BAD_TENSOR_TYPES
    ],
    (
        "tensor-of-tensor",
        taking("tensor<4xtensor<4xf32>>"),
        "1:30: error: tensor element must be a scalar type, got 'tensor<4xf32>'",
    ),
    (
        "quantized-too-many-bits",
        taking("tensor<4x!quant<u9:f32, per_tensor>>"),
        "1:30: error: bad quantized type '!quant<u9:f32, per_tensor>': quantized storage must be 1..8 bits, got 9",
    ),
    (
        "quantized-bad-layout",
        taking("!quant<u4:f32, per_foo>"),
        "1:21: error: bad quantized type '!quant<u4:f32, per_foo>': " + QUANT_FORMS,
    ),
    (
        "quantized-zero-group",
        taking("!quant<i4:bf16, per_group(axis=0, size=0)>"),
        "1:21: error: bad quantized type '!quant<i4:bf16, per_group(axis=0, size=0)>': per_group quantization "
        "needs an axis and a group size >= 1",
    ),
    (
        "quantized-unterminated",
        taking("!quant<u4:f32, per_tensor"),
        "1:21: error: bad quantized type '!quant<u4:f32, per_tensor) ->': " + QUANT_FORMS,
    ),
    (
        "quantized-unclosed-paren",
        taking("!quant<i8:f32, per_channel(axis=0>"),
        "1:21: error: bad quantized type '!quant<i8:f32, per_channel(axis=0>': " + QUANT_FORMS,
    ),
    (
        "quantized-at-end-of-line",
        "func.func @main(%x: !quant<i8:f32, per_tensor\n",
        "1:21: error: type '!quant<i8:f32, per_tensor' is missing its closing '>'",
    ),
    (
        "tensor-closed-by-parenthesis",
        taking("tensor<4xf32)"),
        "1:21: error: type 'tensor<4xf32' is missing its closing '>'",
    ),
    (
        "bare-word-attribute",
        "func.func @main() attributes {a = foo} {\n  func.return\n}\n",
        "1:35: error: unexpected 'foo', expected one of 'dense', a string, 'false', a number, 'inf', '[', 'nan', "
        "a type, 'true'",
    ),
    (
        "unclosed-type-attribute",
        "func.func @main() attributes {a = tensor<4xf32} {\n  func.return\n}\n",
        "1:35: error: type 'tensor<4xf32' is missing its closing '>'",
    ),
    # operand and result lists
    (
        "operand-type-mismatch",
        body("%0 = graph.relu %x : (tensor<4xf64>) -> tensor<4xf32>", RET),
        "2:19: error: operand #0 %x has type tensor<4xf32>, but the signature says tensor<4xf64>",
    ),
    (
        "operand-type-count",
        body("%0 = graph.add %x, %x : " + RELU, RET),
        "2:27: error: 2 operands but 1 operand types",
    ),
    (
        "too-many-results-named",
        body("%0, %1 = graph.relu %x : " + RELU, RET),
        "2:3: error: 'graph.relu' has 1 result in its type signature, but 2 are named",
    ),
    (
        "too-few-results-named",
        body("%0 = graph.relu %x : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)", RET),
        "2:3: error: 'graph.relu' has 2 results in its type signature, but 1 is named",
    ),
    (
        "result-not-named",
        body("graph.relu %x : " + RELU, "func.return %x : tensor<4xf32>"),
        "2:3: error: 'graph.relu' has 1 result in its type signature, but 0 are named",
    ),
    (
        "wrong-result-count-for-op",
        body(
            "%0:2 = graph.relu %x : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)",
            "func.return %0#0 : tensor<4xf32>",
        ),
        "2:10: error: 'graph.relu' op has 2 results, expected 1",
    ),
    (
        "wrong-operand-count",
        body("%0 = graph.relu %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>", RET),
        "2:8: error: 'graph.relu' op expected 1 operand, got 2",
    ),
    (
        "wrong-result-type",
        body(
            "%0 = graph.relu %x : (tensor<4xf32>) -> tensor<5xf32>",
            "func.return %0 : tensor<5xf32>",
            results="tensor<5xf32>",
        ),
        "2:8: error: 'graph.relu' op result #0 has type tensor<5xf32>, but the operands give tensor<4xf32>",
    ),
    # attributes
    (
        "int-for-string-choice",
        body("%0 = graph.gelu %x {approximate = 1} : " + RELU, RET),
        "2:8: error: 'graph.gelu' op attribute 'approximate': expected one of \"none\", \"tanh\", got 1",
    ),
    (
        "string-not-a-choice",
        body('%0 = graph.gelu %x {approximate = "fast"} : ' + RELU, RET),
        '2:8: error: \'graph.gelu\' op attribute \'approximate\': expected one of "none", "tanh", got "fast"',
    ),
    (
        "string-for-float",
        body('%0 = graph.clamp %x {min = "a"} : ' + RELU, RET),
        "2:8: error: 'graph.clamp' op attribute 'min': expected a float, got \"a\"",
    ),
    (
        "list-for-float",
        body("%0 = graph.clamp %x {max = [1.0]} : " + RELU, RET),
        "2:8: error: 'graph.clamp' op attribute 'max': expected a float, got [1.0]",
    ),
    (
        "int-for-bool",
        body(
            "%0 = graph.matmul %x, %x {transpose_a = 1} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>",
            RET,
        ),
        "2:8: error: 'graph.matmul' op attribute 'transpose_a': expected a boolean, got 1",
    ),
    (
        "tensor-type-for-element-type",
        body("%0 = graph.cast %x {dtype = tensor<4xf32>} : " + RELU, RET),
        "2:8: error: 'graph.cast' op attribute 'dtype': expected an element type, got tensor<4xf32>",
    ),
    (
        "float-for-dense",
        body("%0 = graph.constant {value = 1.0} : () -> tensor<4xf32>", RET),
        "2:8: error: 'graph.constant' op attribute 'value': expected a dense tensor constant, got 1.0",
    ),
    (
        "unknown-attribute",
        body('%0 = graph.gelu %x {approx = "tanh"} : ' + RELU, RET),
        "2:8: error: 'graph.gelu' op has unknown attribute 'approx' (did you mean 'approximate'?)",
    ),
    (
        "missing-required-attribute",
        body("%0 = graph.cast %x : " + RELU, RET),
        "2:8: error: 'graph.cast' op requires attribute 'dtype' (an element type)",
    ),
    (
        "duplicate-attribute-key",
        body('%0 = graph.gelu %x {approximate = "tanh", approximate = "none"} : ' + RELU, RET),
        "2:45: error: attribute 'approximate' is given twice",
    ),
    (
        "bad-string-escape",
        body('%0 = graph.gelu %x {approximate = "ta\\qnh"} : ' + RELU, RET),
        "2:40: error: bad string literal: Invalid \\escape",
    ),
    (
        "unterminated-string",
        body('%0 = graph.gelu %x {approximate = "tanh} : ' + RELU, RET),
        "2:37: error: unterminated string (a string ends with '\"' on the same line)",
    ),
    (
        "function-attribute-sets-signature",
        'func.func @main() attributes {sym_name = "other"} {\n  func.return\n}\n',
        "1:1: error: attribute 'sym_name' of a function is set by its signature",
    ),
    # dense constants
    *[
        (case, constant(data, type_text), f"2:{column}: error: {message}")
        for case, data, type_text, column, message in BAD_CONSTANTS
    ],
    (
        "dense-ragged",
        body(
            "%0 = graph.constant {value = dense<[[1.0, 2.0], [3.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>",
            "func.return %x : tensor<4xf32>",
        ),
        "2:38: error: constant data rows have different lengths",
    ),
    (
        "dense-scalar-type",
        body("%0 = graph.constant {value = dense<1.0> : f32} : () -> tensor<4xf32>", RET),
        "2:45: error: a dense constant needs a static tensor type, got f32",
    ),
    # structure
    (
        "stray-character",
        GOOD + "$\n",
        "5:1: error: unexpected character '$', expected one of ',', a string, 'module', "
        "an op name (dialect.op), '}', ')', a value (%name)",
    ),
    (
        "top-level-op",
        "%0 = graph.constant {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>\n",
        "1:6: error: expected 'module' or 'func.func' at the top level, found 'graph.constant'",
    ),
    ("two-modules", "module {\n}\nmodule {\n}\n", "1:1: error: a module must be the only op at the top level"),
    ("module-after-function", GOOD + "module {\n}\n", "5:1: error: a module must be the only op at the top level"),
    (
        "module-with-op",
        "module {\n  %0 = graph.constant {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>\n}\n",
        "1:1: error: 'builtin.module' op may only contain functions, found 'graph.constant'",
    ),
    ("duplicate-function", GOOD + GOOD, "1:1: error: 'builtin.module' op defines function @main twice"),
    ("results-on-func", "%0 = " + GOOD, "1:1: error: 'func.func' has no results"),
    (
        "func-without-return",
        body("%0 = graph.relu %x : " + RELU),
        "1:1: error: 'func.func' op body must end with 'func.return'",
    ),
    (
        "return-type-mismatch",
        body("func.return %x : tensor<4xf32>", results="tensor<4xf64>"),
        "1:1: error: 'func.func' op returns (tensor<4xf32>) but the signature says (tensor<4xf32>) -> (tensor<4xf64>)",
    ),
    (
        "return-count-mismatch",
        body("func.return", results="tensor<4xf32>"),
        "1:1: error: 'func.func' op returns () but the signature says (tensor<4xf32>) -> (tensor<4xf32>)",
    ),
    (
        "return-operand-type",
        body("func.return %x : tensor<4xf64>"),
        "2:15: error: operand #0 %x has type tensor<4xf32>, but the signature says tensor<4xf64>",
    ),
    (
        "return-not-last",
        body("func.return %x : tensor<4xf32>", "%0 = graph.relu %x : " + RELU),
        "2:3: error: 'func.return' op must be the last op of its block",
    ),
    (
        "block-label-on-function",
        "func.func @main() {\n^bb0():\n  func.return\n}\n",
        "2:1: error: a function body takes no block label; arguments go in the signature",
    ),
    (
        "op-rule-broken",
        body(
            "%0 = graph.add %x, %y : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>",
            RET,
            args="%x: tensor<4xf32>, %y: tensor<3xf32>",
        ),
        "2:8: error: 'graph.add' op shapes [4] and [3] do not broadcast",
    ),
]


@pytest.mark.parametrize(("text", "expected"), [pytest.param(t, e, id=i) for i, t, e in CASES])
def test_malformed_input_gives_exact_message(text: str, expected: str) -> None:
    with pytest.raises(TensoriumError) as info:
        tm.parse_module(text, "bad.mlir")
    assert isinstance(info.value, (ParseError, VerifyError))
    assert str(info.value).splitlines()[0] == "bad.mlir:" + expected


def test_message_shows_the_line_and_a_caret() -> None:
    with pytest.raises(ParseError) as info:
        tm.parse_module(body("%0 = graph.relux %x : " + RELU, RET), "m.mlir")
    assert str(info.value) == (
        "m.mlir:2:8: error: unknown operation 'graph.relux' (did you mean 'graph.relu'?)\n"
        "    %0 = graph.relux %x : (tensor<4xf32>) -> tensor<4xf32>\n"
        "         ^"
    )
    assert info.value.loc == tm.Location(2, 8, "m.mlir")
    assert info.value.message == "unknown operation 'graph.relux' (did you mean 'graph.relu'?)"


def test_verify_error_shows_the_line_and_a_caret() -> None:
    with pytest.raises(VerifyError) as info:
        tm.parse_module(body("%0 = graph.cast %x : " + RELU, RET), "m.mlir")
    assert str(info.value).splitlines()[1:] == [
        "    %0 = graph.cast %x : (tensor<4xf32>) -> tensor<4xf32>",
        "         ^",
    ]
    assert info.value.op_name == "graph.cast"


def test_empty_input_is_an_empty_module() -> None:
    for text in ("", "// only a comment\n", "\n\n"):
        assert tm.print_module(tm.parse_module(text)) == "module {\n}\n"


def test_verification_can_be_skipped() -> None:
    module = tm.parse_module(body("%0 = graph.cast %x : " + RELU, RET), verify=False)
    with pytest.raises(
        VerifyError, match=r"^<input>:2:8: error: 'graph\.cast' op requires attribute 'dtype' \(an element type\)"
    ):
        tm.verify(module)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tensor<4xf32", "type 'tensor<4xf32' is missing its closing '>'"),
        ("tensor<4xq7>", "bad tensor type 'tensor<4xq7>'"),
        ("i0", "unknown type 'i0'"),
        ("!quant<u4:f32, per_channel>", "bad quantized type"),
    ],
)
def test_parse_type_text_errors(text: str, message: str) -> None:
    with pytest.raises(ParseError, match="^error: " + message.replace("[", r"\[").replace("(", r"\(")):
        tm.ir.parse_type_text(text)


def test_caret_lines_up_under_tabs() -> None:
    text = "func.func @main(%x: tensor<4xf32>) {\n\t%0 = graph.relux %x : () -> ()\n}\n"
    with pytest.raises(ParseError) as info:
        tm.parse_module(text, "t.mlir")
    assert str(info.value).splitlines()[1:] == ["  \t%0 = graph.relux %x : () -> ()", "  \t     ^"]


def test_errors_survive_pickling() -> None:
    errors: list[TensoriumError] = []
    for text in (body("%0 = graph.relux %x : " + RELU, RET), body("%0 = graph.cast %x : " + RELU, RET)):
        with pytest.raises(TensoriumError) as info:
            tm.parse_module(text, "p.mlir")
        errors.append(info.value)
    errors += [ParseError("no location"), VerifyError("no location", "graph.add")]
    for error in errors:
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error) and copy.loc == error.loc  # type: ignore[attr-defined]
