"""The loop interpreter: whole kernels against numpy, scalar semantics (equal to the graph ops'),
the packed sub-byte layout, gpu threads in lockstep at barriers, and run-time diagnostics."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import erf

import tensorium as tm
from tensorium.backends import interp
from tensorium.backends.loop_interp import run, run_kernel
from tensorium.errors import InterpreterError, SymbolError
from tensorium.ir import Value, functions, graph
from tensorium.ir.dialects import loop
from tensorium.ir.types import (
    BufferType,
    IntegerType,
    ScalarType,
    Sym,
    TensorType,
    bf16,
    f32,
    i1,
    i8,
    i32,
    index,
    storage_dtype,
    u8,
)
from tensorium.testing import build_module

KERNELS = Path(__file__).resolve().parent / "kernels"
RNG = np.random.default_rng(7)


def load_kernel(name: str, drop: str | None = None) -> tm.ir.Operation:
    """The module of ``kernels/<name>.mlir``, without lines containing ``drop`` when given."""
    text = (KERNELS / f"{name}.mlir").read_text()
    if drop is not None:
        text = "".join(line for line in text.splitlines(keepends=True) if drop not in line)
    return tm.parse_module(text)


@pytest.mark.parametrize("path", sorted(KERNELS.glob("*.mlir")), ids=lambda p: p.stem)
def test_kernels_round_trip(path: Path) -> None:
    text = path.read_text()
    assert tm.print_module(tm.parse_module(text)) == text


def test_builders_make_the_elementwise_kernel() -> None:
    n = BufferType((Sym("n"),), f32)
    f = tm.ir.make_func("add", [n, n, n], arg_names=["a", "b", "c"])
    a, b, c = tm.ir.func_body(f).args
    with tm.ir.InsertionPoint(tm.ir.func_body(f)):
        c0 = loop.const(value=0, dtype=index)
        c1 = loop.const(value=1, dtype=index)
        c0.name_hint, c1.name_hint = "c0", "c1"
        size = loop.dim(a, axis=0)
        size.name_hint = "n"
        with loop.for_(c0, size, c1, kind="parallel", name="i") as i:
            x, y = loop.load(a, i), loop.load(b, i)
            x.name_hint, y.name_hint = "x", "y"
            s = loop.add(x, y)
            s.name_hint = "s"
            loop.store(s, c, i)
    tm.ir.set_results(f, [])
    assert tm.print_module(tm.ir.make_module([f])) == (KERNELS / "elementwise_add.mlir").read_text()


@pytest.mark.parametrize("n", [0, 1, 7])
def test_elementwise_add(n: int) -> None:
    a, b = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    c = np.full(n, -1.0, np.float32)
    assert run(load_kernel("elementwise_add"), [a, b, c]) == []
    np.testing.assert_array_equal(c, a + b)


def test_tiled_matmul_with_shared_memory() -> None:
    a = RNG.standard_normal((8, 12)).astype(np.float32)
    b = RNG.standard_normal((12, 8)).astype(np.float32)
    c = np.zeros((8, 8), np.float32)
    run(load_kernel("matmul_shared"), [a, b, c])
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_matmul_without_barriers_reads_unwritten_shared_memory() -> None:
    """Threads only interleave at barriers: without them, thread (0, 0) reads tiles nobody wrote yet (NaN)."""
    a, b = np.ones((8, 12), np.float32), np.ones((12, 8), np.float32)
    c = np.zeros((8, 8), np.float32)
    run(load_kernel("matmul_shared", drop="loop.barrier"), [a, b, c])
    assert np.isnan(c[0, 0]) and np.isnan(c).any()


@pytest.mark.parametrize(("m", "n"), [(3, 5), (1, 1), (0, 4)])
def test_row_mean_reduction(m: int, n: int) -> None:
    x = RNG.standard_normal((m, n)).astype(np.float32)
    y = np.zeros(m, np.float32)
    run(load_kernel("reduce_mean"), [x, y])
    np.testing.assert_allclose(y, x.mean(axis=1) if m else y, rtol=1e-6)


def test_row_mean_of_empty_rows_is_nan() -> None:
    y = np.zeros(2, np.float32)
    run(load_kernel("reduce_mean"), [np.zeros((2, 0), np.float32), y])
    assert np.isnan(y).all()


@pytest.mark.parametrize("rows", [1, 5])
def test_packed_int4_matvec(rows: int) -> None:
    weights = RNG.integers(-8, 8, (rows, 8))
    weights[0, :2] = [-8, 7]
    scale = RNG.random(rows).astype(np.float32)
    x = RNG.standard_normal(8).astype(np.float32)
    y = np.zeros(rows, np.float32)
    run(load_kernel("matvec_int4"), [loop.pack_bits(weights, 4, u8), scale, x, y])
    np.testing.assert_allclose(y, (weights @ x.astype(np.float64)) * scale, rtol=1e-5, atol=1e-6)


# --- scalar semantics -------------------------------------------------------------------------------


def scalar(op: str, types: list[ScalarType], *values: Any, **attrs: Any) -> Any:
    """The value of ``loop.<op>`` on ``values`` of ``types``, run through a kernel."""
    opdef = getattr(loop, op)
    module = build_module(types, lambda *xs: opdef(*xs, **attrs))
    (out,) = run(module, list(values))
    return out.item()


@pytest.mark.parametrize(
    ("op", "t", "values", "expected"),
    [
        ("div", i32, (-7, 2), -3),
        ("div", i32, (7, -2), -3),
        ("div", i32, (5, 0), 0),
        ("div", f32, (1.0, 0.0), math.inf),
        ("rem", i32, (-7, 2), -1),
        ("rem", i32, (7, -2), 1),
        ("rem", i32, (5, 0), 0),
        ("rem", f32, (-7.5, 2.0), -1.5),
        ("add", i8, (127, 1), -128),
        ("add", IntegerType(3, False), (7, 1), 0),
        ("sub", index, (3, 5), -2),
        ("mul", i32, (65536, 65536), 0),
        ("max", f32, (1.0, math.nan), math.nan),
        ("min", f32, (1.0, -2.0), -2.0),
        ("pow", i32, (2, 10), 1024),
        ("pow", i32, (2, -1), 0),
        ("pow", i32, (-1, -3), -1),
        ("and", i32, (12, 10), 8),
        ("or", i32, (12, 10), 14),
        ("xor", i1, (True, True), False),
        ("neg", i8, (-128,), -128),
        ("abs", f32, (-2.5,), 2.5),
        ("floor", f32, (-2.5,), -3.0),
        ("sqrt", f32, (-1.0,), math.nan),
        ("rsqrt", f32, (0.0,), math.inf),
        ("fma", f32, (2.0, 3.0, 1.0), 7.0),
        ("fma", i8, (16, 16, 1), 1),
        ("select", f32, (True, 1.0, 2.0), 1.0),
    ],
)
def test_scalar_semantics(op: str, t: ScalarType, values: tuple, expected: float) -> None:
    types = [i1, t, t] if op == "select" else [t] * len(values)
    got = scalar(op, types, *values)
    assert (math.isnan(got) and math.isnan(expected)) or got == expected


@pytest.mark.parametrize(
    ("predicate", "lhs", "rhs", "expected"),
    [("lt", 1.0, math.nan, False), ("ne", 1.0, math.nan, True), ("le", 3.0, 3.0, True), ("gt", -0.0, 0.0, False)],
)
def test_cmp(predicate: str, lhs: float, rhs: float, expected: bool) -> None:
    assert scalar("cmp", [f32, f32], lhs, rhs, predicate=predicate) is expected


@pytest.mark.parametrize(
    ("source", "value", "target", "expected"),
    [(f32, -3.7, i32, -3), (f32, math.nan, i32, 0), (i32, 300, u8, 44), (index, 5, f32, 5.0), (f32, 0.5, i1, True)],
)
def test_cast(source: ScalarType, value: float, target: ScalarType, expected: float) -> None:
    assert scalar("cast", [source], value, dtype=target) == expected


def test_constants_take_their_type() -> None:
    assert scalar("const", [], value=1.00390625, dtype=bf16) == 1.0
    assert scalar("const", [], value=7, dtype=IntegerType(3, False)) == 7
    assert scalar("const", [], value=-4, dtype=IntegerType(3)) == -4


UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sin", "cos", "floor"]
BINARY = ["add", "sub", "mul", "div", "max", "min", "pow"]


def elementwise(op: str, arity: int, t: ScalarType, n: int, **attrs: Any) -> tm.ir.Operation:
    """A kernel applying ``loop.<op>`` to ``arity`` buffers of ``n`` elements, writing the last buffer."""
    opdef = getattr(loop, op)
    result = opdef.infer_types([t] * arity, opdef.complete_attrs(attrs))[0]
    types = [BufferType((n,), t)] * arity + [BufferType((n,), result)]

    def body(*buffers: Value) -> list[Value]:
        with loop.for_(0, n, name="i") as i:
            loop.store(opdef(*(loop.load(b, i) for b in buffers[:-1]), **attrs), buffers[-1], i)
        return []

    return build_module(types, body)


def same_as_graph(op: str, inputs: list[np.ndarray], t: ScalarType, **attrs: Any) -> None:
    n = inputs[0].size
    kernel = elementwise(op, len(inputs), t, n, **attrs)
    out_type = tm.ir.func_body(functions(kernel)[0]).args[-1].type
    assert isinstance(out_type, BufferType)
    out = np.zeros(n, storage_dtype(out_type.element))
    run(kernel, [*inputs, out])
    graph_module = build_module([TensorType((n,), t)] * len(inputs), lambda *xs: getattr(graph, op)(*xs, **attrs))
    np.testing.assert_array_equal(out, interp.run(graph_module, inputs)[0])


SPECIAL = np.array([0.0, -0.0, 1.5, -2.25, 0.5, np.inf, -np.inf, np.nan, 3.0, -1.0], np.float32)
INTS = np.array([0, 1, -1, 7, -7, 2**31 - 1, -(2**31), 3, 2, -2], np.int32)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("op", UNARY)
def test_unary_ops_equal_the_graph_ops(op: str) -> None:
    same_as_graph(op, [SPECIAL], f32)


@pytest.mark.parametrize("op", BINARY)
def test_binary_ops_equal_the_graph_ops(op: str) -> None:
    same_as_graph(op, [SPECIAL, SPECIAL[::-1].copy()], f32)
    ints = INTS[INTS != -(2**31)] if op == "pow" else INTS
    same_as_graph(op, [ints, ints[::-1].copy()], i32)


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise_ops_equal_the_graph_ops(op: str) -> None:
    same_as_graph(op, [INTS, INTS[::-1].copy()], i32)
    same_as_graph(op, [INTS > 0, INTS < 2], i1)


@pytest.mark.parametrize("target", [i32, u8, i1, index])
def test_casts_equal_the_graph_cast(target: ScalarType) -> None:
    same_as_graph("cast", [SPECIAL * 1e9], f32, dtype=target)


# --- packed layout ------------------------------------------------------------------------------


def packed_element(words: np.ndarray, word: IntegerType, bits: int, signed: bool, element: int) -> int:
    module = build_module(
        [BufferType((words.size,), word), index],
        lambda buf, e: loop.load_packed(buf, e, bits=bits, signed=signed),
    )
    (out,) = run(module, [words, element])
    assert out.dtype == np.int32
    return int(out)


@pytest.mark.parametrize(
    ("word", "bits", "signed", "expected"),
    [
        (u8, 4, False, [4, 11]),
        (u8, 4, True, [4, -5]),
        (u8, 2, False, [0, 1, 3, 2]),
        (u8, 3, True, [-4, -2]),
        (u8, 8, True, [-76]),
        (u8, 1, True, [0, 0, -1, 0, -1, -1, 0, -1]),
    ],
)
def test_packed_bit_order_is_little_endian_within_a_word(
    word: IntegerType, bits: int, signed: bool, expected: list[int]
) -> None:
    words = np.array([0b1011_0100], np.uint8)
    assert [packed_element(words, word, bits, signed, e) for e in range(len(expected))] == expected


def test_packed_elements_do_not_straddle_words() -> None:
    values = np.arange(12) % 8
    words = loop.pack_bits(values, 3, IntegerType(32, False))
    assert words.dtype == np.uint32 and words.shape == (2,)
    assert int(words[0]) == sum(v << (3 * k) for k, v in enumerate(values[:10]))
    assert int(words[1]) == values[10] | values[11] << 3
    u32 = IntegerType(32, False)
    assert [packed_element(words, u32, 3, False, e) for e in (0, 9, 10, 11, 19)] == [0, 1, 2, 3, 0]


def test_pack_bits_hand_example_and_errors() -> None:
    np.testing.assert_array_equal(loop.pack_bits([1, 2, 3], 4, u8), np.array([0x21, 0x03], np.uint8))
    np.testing.assert_array_equal(loop.pack_bits([[-1], [1]], 4, i8), np.array([[15], [1]], np.int8))
    assert loop.pack_bits(np.zeros((2, 0)), 4, u8).shape == (2, 0)
    with pytest.raises(ValueError, match="cannot pack 9-bit elements into u8 words"):
        loop.pack_bits([1], 9, u8)
    with pytest.raises(ValueError, match="cannot pack 4-bit elements into i64 words"):
        loop.pack_bits([1], 4, IntegerType(64))
    with pytest.raises(ValueError, match="packing needs at least one dimension"):
        loop.pack_bits(3, 4, u8)


@settings(max_examples=40, deadline=None)
@given(
    bits=st.integers(1, 8),
    width=st.sampled_from([8, 16, 32]),
    signed=st.booleans(),
    data=st.data(),
)
def test_pack_then_load_packed_round_trips(bits: int, width: int, signed: bool, data: st.DataObject) -> None:
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    values = data.draw(st.lists(st.integers(low, high), min_size=1, max_size=40))
    word = IntegerType(width, data.draw(st.booleans()))
    words = loop.pack_bits(np.array(values)[None, :], bits, word)
    reference = loop.load_packed.reference
    assert reference is not None
    got = [int(reference(words, [np.int64(0), np.int64(e)], bits=bits, signed=signed)) for e in range(len(values))]
    assert got == values


# --- gpu threads and run-time errors ------------------------------------------------------------


def thread_kernel(with_guard: bool) -> tm.ir.Operation:
    """Four threads swap neighbours through shared memory: out[t] = t * 10 of thread (t + 1) % 4."""

    def body(out: Value) -> list[Value]:
        with loop.for_(0, 1, kind="gpu_block", axis=0):
            tile = loop.alloc(type=BufferType((4,), index, "shared"))
            with loop.for_(0, 4, kind="gpu_thread", axis=0, name="t") as t:
                loop.store(loop.mul(t, loop.const(value=10, dtype=index)), tile, t)
                if with_guard:
                    with loop.if_(loop.cmp(t, loop.const(value=2, dtype=index), predicate="lt")):
                        loop.barrier()
                else:
                    loop.barrier()
                four = loop.const(value=4, dtype=index)
                other = loop.rem(loop.add(t, loop.const(value=1, dtype=index)), four)
                loop.store(loop.load(tile, other), out, t)
        return []

    return build_module([BufferType((4,), index)], body)


def test_threads_meet_at_barriers() -> None:
    out = np.zeros(4, np.int64)
    run(thread_kernel(with_guard=False), [out])
    np.testing.assert_array_equal(out, [10, 20, 30, 0])


def test_a_barrier_not_reached_by_every_thread_is_an_error() -> None:
    with pytest.raises(
        InterpreterError, match=re.escape("only 2 of 4 threads of this gpu_thread loop reached a loop.barrier")
    ):
        run(thread_kernel(with_guard=True), [np.zeros(4, np.int64)])


def one_op(arg_types: list, body: Callable[..., Any]) -> tm.ir.Operation:
    return build_module(arg_types, lambda *xs: body(*xs) or [])


@pytest.mark.parametrize(
    ("arg_types", "body", "args", "message"),
    [
        (
            [BufferType((4,), f32), index],
            lambda b, i: loop.load(b, i),
            [np.zeros(4, np.float32), 4],
            "'loop.load' failed: index 4 is out of bounds for dimension 0 of size 4",
        ),
        (
            [BufferType((2, 4), f32), index],
            lambda b, i: loop.store(loop.const(value=1.0, dtype=f32), b, i, i),
            [np.zeros((2, 4), np.float32), -1],
            "'loop.store' failed: index -1 is out of bounds for dimension 0 of size 2",
        ),
        (
            [BufferType((2,), u8), index],
            lambda b, i: loop.load_packed(b, i, bits=4),
            [np.zeros(2, np.uint8), 4],
            "'loop.load_packed' failed: packed index 4 is out of bounds for dimension 0 of 4 elements",
        ),
        (
            [index],
            lambda n: loop.alloc(n, type=BufferType((Sym("n"),), f32)),
            [-3],
            "'loop.alloc' failed: size -3 of dimension [n] is negative",
        ),
        (
            [index, index],
            lambda a, b: loop.alloc(a, b, type=BufferType((Sym("n"), Sym("n")), f32)),
            [2, 3],
            "'loop.alloc' failed: dimension [n] is given sizes 2 and 3",
        ),
    ],
)
def test_run_time_errors(arg_types: list, body: Callable[..., Any], args: list, message: str) -> None:
    with pytest.raises(InterpreterError, match=re.escape(message)):
        run(one_op(arg_types, body), args)


def test_a_failed_check_raises_its_message_at_its_location_and_a_passed_one_does_nothing() -> None:
    text = (
        "module {\n  func.func @k(%b: buffer<4xf32, global>, %i: index) {\n"
        "    %n = loop.const {value = 4, dtype = index} : () -> index\n"
        '    %ok = loop.cmp %i, %n {predicate = "lt"} : (index, index) -> i1\n'
        '    loop.check %ok {message = "i is past the end"} : (i1) -> ()\n'
        "    %x = loop.load %b, %i : (buffer<4xf32, global>, index) -> f32\n"
        "    func.return\n  }\n}\n"
    )
    module = tm.parse_module(text)
    run(module, [np.zeros(4, np.float32), 3])
    with pytest.raises(InterpreterError, match=r"^<input>:5:5: i is past the end$"):
        run(module, [np.zeros(4, np.float32), 4])


def test_loop_step_must_be_positive() -> None:
    def body(s: Value) -> list[Value]:
        with loop.for_(0, 4, s):
            pass
        return []

    with pytest.raises(InterpreterError, match=re.escape("'loop.for' step must be positive, got 0")):
        run(build_module([index], body), [0])


def test_new_buffers_hold_poison() -> None:
    for t, expected in [(f32, math.nan), (i32, -1), (IntegerType(3, False), 7), (i1, True)]:
        module = one_op([], lambda t=t: loop.load(loop.alloc(type=BufferType((), t, "local"))))
        (got,) = run(module, [])
        assert (math.isnan(got) and math.isnan(expected)) or got == expected


def test_arguments_are_checked() -> None:
    n = BufferType((Sym("n"),), f32)
    module = build_module([n, n, BufferType((2,), f32), i32], lambda *xs: [])
    ok = [np.zeros(3, np.float32), np.zeros(3, np.float32), np.zeros(2, np.float32), 1]
    assert run(module, ok) == []
    bad = [
        ([*ok[:3]], "@main takes 4 arguments, got 3"),
        ([[0.0] * 3, *ok[1:]], "@main argument #0 'x0': expected a numpy array for buffer<[n]xf32, global>, got list"),
        ([np.zeros(3), *ok[1:]], "expected dtype float32 for buffer<[n]xf32, global>, got float64"),
        ([np.zeros((3, 1), np.float32), *ok[1:]], "expected rank 1 (buffer<[n]xf32, global>), got shape [3, 1]"),
        ([ok[0], np.zeros(4, np.float32), *ok[2:]], "argument #1 'x1': dimension [n] is 4 here but 3 elsewhere"),
        ([*ok[:2], np.zeros(3, np.float32), 1], "expected shape buffer<2xf32, global>, got [3] (axis 0)"),
        ([*ok[:3], np.zeros(2)], "expected a scalar i32, got an array of shape [2]"),
    ]
    for args, message in bad:
        with pytest.raises(InterpreterError, match=re.escape(message)):
            run(module, args)


def test_picking_the_function() -> None:
    module = build_module([], lambda: [])
    assert run(module, [], func="main") == []
    with pytest.raises(SymbolError, match="no function @other; the module has @main"):
        run(module, [], func="other")
    with pytest.raises(SymbolError, match="the module has no functions"):
        run(tm.ir.make_module([]), [])
    assert run_kernel(functions(module)[0], []) == []


def test_scalar_results_and_erf() -> None:
    assert scalar("erf", [f32], 0.5) == pytest.approx(float(erf(np.float32(0.5))), rel=1e-6)


def test_the_docs_example_runs() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "loop.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S)
    assert code is not None
    namespace: dict[str, Any] = {}
    exec(code.group(1), namespace)
    x, y = np.arange(3, dtype=np.float32), np.zeros(3, np.float32)
    run(namespace["module"], [x, y])
    np.testing.assert_array_equal(y, [0.0, 2.0, 4.0])
