"""Every loop op prints, parses and verifies; type inference; exact diagnostics for invalid IR."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends import loop_interp
from tensorium.errors import VerifyError
from tensorium.ir import InsertionPoint, OpDef, func_body, make_func, registered_ops
from tensorium.ir.dialects import loop
from tensorium.ir.types import BufferType, IntegerType, Sym, f16, f32, i1, i32, index, u8

ARGS = (
    "%buf: buffer<4x8xf32, global>, %p: buffer<2x4xu8, global>, %x: f32, %y: f32, %z: f32, %m: i32, %k: i32, "
    "%c: i1, %i: index, %j: index"
)


def kernel(body: str, args: str = ARGS) -> str:
    """A module with one function @k of ``args`` whose body is ``body`` (indented by the caller)."""
    return f"module {{\n  func.func @k({args}) {{\n{body}    func.return\n  }}\n}}\n"


def lines(*texts: str) -> str:
    return "".join(f"    {t}\n" for t in texts)


def error_of(text: str) -> VerifyError:
    with pytest.raises(VerifyError) as info:
        tm.parse_module(text)
    return info.value


def thread_loop(*inner: str, kind: str = "gpu_thread", extra: str = ", axis = 0", var: str = "%t") -> list[str]:
    """Lines of a loop of ``kind`` (bounds %i, %j, %i; induction variable ``var``) around ``inner``."""
    return [
        "loop.for %i, %j, %i (",
        "  {",
        f"  ^bb0({var}: index):",
        *(f"    {t}" for t in inner),
        "    loop.yield : () -> ()",
        "  }",
        ")"
        + ("" if (kind, extra) == ("serial", "") else f' {{kind = "{kind}"{extra}}}')
        + " : (index, index, index) -> ()",
    ]


SCALAR = {
    "f32": ("%x", "%y", "%z"),
    "i32": ("%m", "%k", "%m"),
}
BINARY_FLOAT = ["add", "sub", "mul", "div", "rem", "max", "min", "pow"]
BINARY_INT = ["and", "or", "xor", "shl", "shr"]
UNARY_FLOAT = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sin", "cos", "floor"]
UNARY_FLOAT += ["asin", "acos", "atan"]

SNIPPETS: dict[str, list[str]] = {
    "loop.const": ["%r = loop.const {value = 1.5, dtype = f32} : () -> f32"],
    "loop.alloc": ["%r = loop.alloc %i {type = buffer<?x4xf16, shared>} : (index) -> buffer<?x4xf16, shared>"],
    "loop.dim": ["%r = loop.dim %buf {axis = 1} : (buffer<4x8xf32, global>) -> index"],
    "loop.load": ["%r = loop.load %buf, %i, %j : (buffer<4x8xf32, global>, index, index) -> f32"],
    "loop.store": ["loop.store %x, %buf, %i, %j : (f32, buffer<4x8xf32, global>, index, index) -> ()"],
    "loop.prefetch": ["loop.prefetch %buf, %i, %j : (buffer<4x8xf32, global>, index, index) -> ()"],
    "loop.load_packed": ["%r = loop.load_packed %p, %i, %j {bits = 2} : (buffer<2x4xu8, global>, index, index) -> i32"],
    "loop.align_offset": [
        "%r = loop.align_offset %buf, %i, %j {bytes = 64} : (buffer<4x8xf32, global>, index, index) -> index"
    ],
    "loop.barrier": thread_loop("loop.barrier : () -> ()"),
    "loop.shuffle": thread_loop('%r = loop.shuffle %x, %t {mode = "down", width = 16} : (f32, index) -> f32'),
    "loop.mma": [
        "%sa = loop.alloc {type = buffer<16x16xf16, shared>} : () -> buffer<16x16xf16, shared>",
        *thread_loop(
            "%acc = loop.alloc {type = buffer<4xf32, local>} : () -> buffer<4xf32, local>",
            "loop.mma %acc, %sa, %i, %j, %sa, %i, %j : (buffer<4xf32, local>, buffer<16x16xf16, shared>, index, index, "
            "buffer<16x16xf16, shared>, index, index) -> ()",
        ),
    ],
    "loop.for": thread_loop(kind="unroll", extra=", factor = 2"),
    "loop.yield": thread_loop(kind="serial", extra=""),
    "loop.if": [
        "loop.if %c (",
        "  {",
        "    %r = loop.exp %x : (f32) -> f32",
        "    loop.yield : () -> ()",
        "  }",
        ") : (i1) -> ()",
    ],
    "loop.check": ['loop.check %c {message = "index out of range"} : (i1) -> ()'],
    "loop.fma": ["%r = loop.fma %x, %y, %z : (f32, f32, f32) -> f32"],
    "loop.cmp": ['%r = loop.cmp %m, %k {predicate = "lt"} : (i32, i32) -> i1'],
    "loop.select": ["%r = loop.select %c, %x, %y : (i1, f32, f32) -> f32"],
    "loop.cast": ["%r = loop.cast %m {dtype = f32} : (i32) -> f32"],
    "loop.bitcast": ["%r = loop.bitcast %x {dtype = u32} : (f32) -> u32"],
    **{f"loop.{n}": [f"%r = loop.{n} %x, %y : (f32, f32) -> f32"] for n in BINARY_FLOAT},
    **{f"loop.{n}": [f"%r = loop.{n} %m, %k : (i32, i32) -> i32"] for n in BINARY_INT},
    "loop.dot_u8i8": ["%r = loop.dot_u8i8 %m, %k, %m {narrow = true} : (i32, i32, i32) -> i32"],
    "loop.dot_u8i8_halves": ["%r = loop.dot_u8i8_halves %m, %k, %m : (i32, i32, i32) -> i32"],
    "loop.sum_halves": ["%r = loop.sum_halves %m : (i32) -> i32"],
    "loop.bit_fields": ["%r = loop.bit_fields %m {offsets = [0, 5, 10, 27], width = 5} : (i32) -> i32"],
    "loop.lookup_bytes": [
        "%t = loop.alloc {type = buffer<2x16xi32, local>} : () -> buffer<2x16xi32, local>",
        "%r = loop.lookup_bytes %m, %t, %i, %j : (i32, buffer<2x16xi32, local>, index, index) -> i32",
    ],
    **{f"loop.{n}": [f"%r = loop.{n} %x : (f32) -> f32"] for n in UNARY_FLOAT},
}


def test_the_snippets_cover_every_loop_op() -> None:
    assert set(SNIPPETS) == {d.name for d in registered_ops("loop")}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_every_op_round_trips_and_verifies(name: str) -> None:
    text = kernel(lines(*SNIPPETS[name]))
    module = tm.parse_module(text)
    assert tm.print_module(module) == text
    tm.ir.verify(module)
    assert any(op.name == name for op in module.walk())


def test_every_op_has_a_doc_line_in_docs() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "loop.md").read_text()
    for opdef in registered_ops("loop"):
        assert opdef.doc, opdef.name
        assert f"`{opdef.name}`" in doc, opdef.name


def build(arg_types: list, fn: object) -> str:
    """Build one function of ``arg_types`` with ``fn(*args)`` and return its printed module."""
    f = make_func("k", arg_types)
    with InsertionPoint(func_body(f)):
        fn(*func_body(f).args)  # type: ignore[operator]
    tm.ir.set_results(f, [])
    module = tm.ir.make_module([f])
    tm.ir.verify(module)
    return tm.print_module(module)


@pytest.mark.parametrize(
    ("operands", "op", "attrs", "expected"),
    [
        ([f32, f32], "add", {}, f32),
        ([i32, i32], "rem", {}, i32),
        ([index, index], "mul", {}, index),
        ([u8, u8], "max", {}, u8),
        ([i1, i1], "xor", {}, i1),
        ([f16], "tanh", {}, f16),
        ([IntegerType(3)], "neg", {}, IntegerType(3)),
        ([index, index], "cmp", {"predicate": "ge"}, i1),
        ([i1, f16, f16], "select", {}, f16),
        ([index], "cast", {"dtype": f32}, f32),
        ([f32, f32, f32], "fma", {}, f32),
        ([], "const", {"value": True, "dtype": i1}, i1),
        ([BufferType((Sym("n"), 4), f32)], "dim", {"axis": -2}, index),
        ([BufferType((), f16, "local")], "load", {}, f16),
        ([BufferType((3,), u8), index], "load_packed", {"bits": 3, "signed": True}, i32),
        (
            [index, index],
            "alloc",
            {"type": BufferType((Sym("a"), Sym("a")), f32)},
            BufferType((Sym("a"), Sym("a")), f32),
        ),
    ],
)
def test_result_types_are_inferred(operands: list, op: str, attrs: dict, expected: object) -> None:
    opdef: OpDef = getattr(loop, op)
    assert opdef.infer_types(operands, opdef.complete_attrs(attrs)) == [expected]


def test_builders_make_regions_and_constants() -> None:
    def body(a: tm.ir.Value, n: tm.ir.Value) -> None:
        with loop.for_(0, n, kind="vectorize", factor=4, name="i") as i:
            flag = loop.cmp(i, n, predicate="lt")
            with loop.if_(flag):
                loop.store(loop.const(value=2.0, dtype=f32), a, i)

    text = build([BufferType((Sym("n"),), f32), index], body)
    assert text == kernel(
        lines(
            "%0 = loop.const {value = 0, dtype = index} : () -> index",
            "%1 = loop.const {value = 1, dtype = index} : () -> index",
            "loop.for %0, %arg1, %1 (",
            "  {",
            "  ^bb0(%i: index):",
            '    %2 = loop.cmp %i, %arg1 {predicate = "lt"} : (index, index) -> i1',
            "    loop.if %2 (",
            "      {",
            "        %3 = loop.const {value = 2.0, dtype = f32} : () -> f32",
            "        loop.store %3, %arg0, %i : (f32, buffer<[n]xf32, global>, index) -> ()",
            "        loop.yield : () -> ()",
            "      }",
            "    ) : (i1) -> ()",
            "    loop.yield : () -> ()",
            "  }",
            ') {kind = "vectorize", factor = 4} : (index, index, index) -> ()',
        ),
        "%arg0: buffer<[n]xf32, global>, %arg1: index",
    )


def test_builder_errors_are_verify_errors() -> None:
    f = make_func("k", [index, i32])
    n, m = func_body(f).args
    with InsertionPoint(func_body(f)):
        with pytest.raises(VerifyError, match=re.escape("'loop.for' op upper bound must be an index, got i32")):
            loop.build_for(n, m, n)
        with pytest.raises(VerifyError, match=re.escape("'loop.add' op operands must have one type, got index, i32")):
            loop.add(n, m)
        with pytest.raises(VerifyError, match=re.escape("'loop.for' op a gpu_block loop needs an axis")):
            with loop.for_(0, n, kind="gpu_block"):
                pass


ALLOC_IN_THREAD = thread_loop("%s = loop.alloc {type = buffer<4xf32, shared>} : () -> buffer<4xf32, shared>")
NESTED_AXIS = thread_loop(*thread_loop(var="%u"))


@pytest.mark.parametrize(
    ("body", "op", "message"),
    [
        (
            [
                "%h = loop.cast %x {dtype = f16} : (f32) -> f16",
                "loop.store %h, %buf, %i, %j : (f16, buffer<4x8xf32, global>, index, index) -> ()",
            ],
            "loop.store",
            "stored value has type f16, but buffer<4x8xf32, global> holds f32",
        ),
        (
            ["%r = loop.load %buf, %i : (buffer<4x8xf32, global>, index) -> f32"],
            "loop.load",
            "expected 2 indices for buffer<4x8xf32, global>, got 1",
        ),
        (
            ["loop.store %x, %buf, %i, %j, %i : (f32, buffer<4x8xf32, global>, index, index, index) -> ()"],
            "loop.store",
            "expected 2 indices for buffer<4x8xf32, global>, got 3",
        ),
        (
            ["%r = loop.load %buf, %i, %m : (buffer<4x8xf32, global>, index, i32) -> f32"],
            "loop.load",
            "index #1 must be an index, got i32",
        ),
        (["%r = loop.load %x : (f32) -> f32"], "loop.load", "operand must be a buffer, got f32"),
        (
            ["%r = loop.load %buf, %i, %j : (buffer<4x8xf32, global>, index, index) -> f16"],
            "loop.load",
            "result #0 has type f16, but the operands give f32",
        ),
        (
            ["loop.for %i, %j, %i (", "  {", "    loop.yield : () -> ()", "  }", ") : (index, index, index) -> ()"],
            "loop.for",
            "body block must take one index argument (the induction variable), got ()",
        ),
        (
            [
                "loop.for %i, %j, %i (",
                "  {",
                "  ^bb0(%t: i32):",
                "    loop.yield : () -> ()",
                "  }",
                ") : (index, index, index) -> ()",
            ],
            "loop.for",
            "body block must take one index argument (the induction variable), got (i32)",
        ),
        (
            [
                "loop.for %i, %j, %i (",
                "  {",
                "  ^bb0(%t: index):",
                "    %r = loop.exp %x : (f32) -> f32",
                "  }",
                ") : (index, index, index) -> ()",
            ],
            "loop.for",
            "body must end with 'loop.yield'",
        ),
        (
            thread_loop(kind="sequential", extra=""),
            "loop.for",
            "attribute 'kind': expected one of "
            '"serial", "parallel", "vectorize", "unroll", "gpu_block", "gpu_thread", got "sequential"',
        ),
        (
            [
                "loop.for %i, %m, %i (",
                "  {",
                "  ^bb0(%t: index):",
                "    loop.yield : () -> ()",
                "  }",
                ") : (index, i32, index) -> ()",
            ],
            "loop.for",
            "upper bound must be an index, got i32",
        ),
        (
            thread_loop(kind="parallel", extra=", factor = 4"),
            "loop.for",
            'factor applies only to unroll and vectorize loops, not "parallel"',
        ),
        (thread_loop(kind="unroll", extra=", factor = 0"), "loop.for", "factor must be at least 1, got 0"),
        (thread_loop(kind="gpu_thread", extra=""), "loop.for", "a gpu_thread loop needs an axis (0, 1 or 2)"),
        (thread_loop(kind="gpu_block", extra=", axis = 3"), "loop.for", "axis must be 0, 1 or 2, got 3"),
        (
            thread_loop(kind="serial", extra=", axis = 0"),
            "loop.for",
            'axis applies only to gpu_block and gpu_thread loops, not "serial"',
        ),
        (NESTED_AXIS, "loop.for", "gpu_thread axis 0 is already bound by an enclosing loop"),
        (
            thread_loop(*thread_loop(kind="gpu_block", extra=", axis = 1", var="%u")),
            "loop.for",
            "a gpu_block loop may not be nested in a gpu_thread loop",
        ),
        (["loop.barrier : () -> ()"], "loop.barrier", "must be inside a gpu_thread loop"),
        (
            thread_loop(*thread_loop("loop.barrier : () -> ()", kind="parallel", extra="", var="%u")),
            "loop.barrier",
            'may not be inside a "parallel" loop within its gpu_thread loop',
        ),
        (
            ALLOC_IN_THREAD,
            "loop.alloc",
            "a shared buffer belongs to a whole workgroup and may not be allocated inside a gpu_thread loop",
        ),
        (["loop.yield : () -> ()"], "loop.yield", "must end the body of a loop.for or loop.if"),
        (
            ["loop.if %m (", "  {", "    loop.yield : () -> ()", "  }", ") : (i32) -> ()"],
            "loop.if",
            "condition must be i1, got i32",
        ),
        (
            ["loop.if %c (", "  {", "  ^bb0(%t: index):", "    loop.yield : () -> ()", "  }", ") : (i1) -> ()"],
            "loop.if",
            "body block must take no arguments, got (index)",
        ),
        (
            ["%r = loop.load_packed %p, %i, %j {bits = 9} : (buffer<2x4xu8, global>, index, index) -> i32"],
            "loop.load_packed",
            "bits must be in 1..8, got 9",
        ),
        (
            ["%r = loop.load_packed %p, %i, %j {bits = 0} : (buffer<2x4xu8, global>, index, index) -> i32"],
            "loop.load_packed",
            "bits must be in 1..8, got 0",
        ),
        (
            ["%r = loop.load_packed %buf, %i, %j {bits = 4} : (buffer<4x8xf32, global>, index, index) -> i32"],
            "loop.load_packed",
            "packed words must be 8-, 16- or 32-bit integers, got f32",
        ),
        (
            [
                "%a = loop.alloc {type = buffer<u8, local>} : () -> buffer<u8, local>",
                "%r = loop.load_packed %a {bits = 4} : (buffer<u8, local>) -> i32",
            ],
            "loop.load_packed",
            "packed elements need a buffer of rank 1 or more, got buffer<u8, local>",
        ),
        (
            ["%r = loop.alloc {type = buffer<?x4xf32, global>} : () -> buffer<?x4xf32, global>"],
            "loop.alloc",
            "buffer<?x4xf32, global> has 1 symbolic dimensions, so it takes 1 sizes, got 0",
        ),
        (
            ["%r = loop.alloc %m {type = buffer<?xf32, global>} : (i32) -> buffer<?xf32, global>"],
            "loop.alloc",
            "size #0 must be an index, got i32",
        ),
        (
            ["%r = loop.alloc {type = tensor<4xf32>} : () -> tensor<4xf32>"],
            "loop.alloc",
            "type must be a buffer type, got tensor<4xf32>",
        ),
        (
            ["%r = loop.dim %buf {axis = 2} : (buffer<4x8xf32, global>) -> index"],
            "loop.dim",
            "axis 2 is out of range for rank 2",
        ),
        (
            ["%r = loop.dim %buf {axis = -3} : (buffer<4x8xf32, global>) -> index"],
            "loop.dim",
            "axis -3 is out of range for rank 2",
        ),
        (["%r = loop.add %x, %m : (f32, i32) -> f32"], "loop.add", "operands must have one type, got f32, i32"),
        (["%r = loop.add %c, %c : (i1, i1) -> i1"], "loop.add", "operands must be a number (not i1), got i1"),
        (
            ["%r = loop.add %buf, %buf : (buffer<4x8xf32, global>, buffer<4x8xf32, global>) -> f32"],
            "loop.add",
            "operand #0 must be a scalar, got buffer<4x8xf32, global>",
        ),
        (["%r = loop.exp %m : (i32) -> i32"], "loop.exp", "operand must be a float, got i32"),
        (["%r = loop.and %x, %y : (f32, f32) -> f32"], "loop.and", "operands must be an integer or i1, got f32"),
        (
            ['%r = loop.cmp %x, %y {predicate = "lt"} : (f32, f32) -> f32'],
            "loop.cmp",
            "result #0 has type f32, but the operands give i1",
        ),
        (
            ['%r = loop.cmp %x, %y {predicate = "less"} : (f32, f32) -> i1'],
            "loop.cmp",
            'attribute \'predicate\': expected one of "eq", "ne", "lt", "le", "gt", "ge", got "less"',
        ),
        (
            ["%r = loop.cmp %x, %y : (f32, f32) -> i1"],
            "loop.cmp",
            'requires attribute \'predicate\' (one of "eq", "ne", "lt", "le", "gt", "ge")',
        ),
        (["%r = loop.select %m, %x, %y : (i32, f32, f32) -> f32"], "loop.select", "condition must be i1, got i32"),
        (
            ["%r = loop.cast %x {dtype = index} : (f32) -> f32"],
            "loop.cast",
            "result #0 has type f32, but the operands give index",
        ),
        (
            ["%r = loop.const {value = 1, dtype = f32} : () -> f32"],
            "loop.const",
            "a constant of type f32 needs a float value, got 1",
        ),
        (
            ["%r = loop.const {value = 1.0, dtype = i32} : () -> i32"],
            "loop.const",
            "a constant of type i32 needs an integer value, got 1.0",
        ),
        (
            ['loop.check %x {message = "x"} : (f32) -> ()'],
            "loop.check",
            "condition must be i1, got f32",
        ),
        (
            ["%r = loop.const {value = 1, dtype = i1} : () -> i1"],
            "loop.const",
            "a constant of type i1 needs true or false, got 1",
        ),
        (
            ["%r = loop.const {value = 256, dtype = u8} : () -> u8"],
            "loop.const",
            "value 256 is out of range for u8 (0..255)",
        ),
        (
            ['%r = loop.const {value = "one", dtype = u8} : () -> u8'],
            "loop.const",
            "attribute 'value': expected a number or boolean, got \"one\"",
        ),
    ],
)
def test_invalid_ir_gives_exact_errors(body: list[str], op: str, message: str) -> None:
    error = error_of(kernel(lines(*body)))
    assert (error.op_name, error.message) == (op, message)


@pytest.mark.parametrize(("name", "fn"), [("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan)])
def test_inverse_trigonometric_ops_match_numpy_with_nan_outside_the_domain(name: str, fn: Any) -> None:
    vec = BufferType((7,), f32)
    f = make_func("k", [vec, vec])
    x, y = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, 7, name="i") as i:
            loop.store(getattr(loop, name)(loop.load(x, i)), y, i)
    tm.ir.set_results(f, [])
    data = np.array([-2.0, -1.0, -0.5, 0.0, 0.25, 1.0, 3.0], np.float32)
    out = np.zeros(7, np.float32)
    loop_interp.run(tm.ir.make_module([f]), [data, out])
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(out, fn(data), rtol=1e-6)
