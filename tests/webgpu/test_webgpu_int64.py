"""i64 on WebGPU: held in i32 where the range proof (:mod:`tensorium.lowering.webgpu_int64`) says it fits,
narrowed and widened by the runtime with checks, refused by name where the proof fails."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.errors import CompileError, InterpreterError
from tensorium.ir.parser import parse_module
from tensorium.ir.types import Sym, TensorType, i64
from tensorium.lowering import webgpu_int64 as ranges
from tensorium.targets import parse_target

from .models import reference

PROGRAM = """
module {
  func.func @main(%ids: tensor<2x5xi64>, %t: tensor<10x4xf32>, %x: tensor<3x7xf32>, %a: tensor<6xi32>,
      %t3: tensor<3x10x4xf32>, %j: tensor<2x5xi64>)
      -> (tensor<2x5x4xf32>, tensor<3x2x5x4xf32>, tensor<3xi64>, tensor<6xi64>, tensor<2xi64>, tensor<2x5xi1>,
          tensor<2x5xf32>, tensor<2x5xi64>, tensor<7xi64>) {
    %e = graph.embedding %t, %ids : (tensor<10x4xf32>, tensor<2x5xi64>) -> tensor<2x5x4xf32>
    %g = graph.gather %t3, %j {axis = 1} : (tensor<3x10x4xf32>, tensor<2x5xi64>) -> tensor<3x2x5x4xf32>
    %am = graph.argmax %x {axis = 1} : (tensor<3x7xf32>) -> tensor<3xi64>
    %one = graph.constant {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %am1 = graph.add %am, %one : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
    %c = graph.cast %a {dtype = i64} : (tensor<6xi32>) -> tensor<6xi64>
    %mx = graph.reduce_max %ids {axes = [1]} : (tensor<2x5xi64>) -> tensor<2xi64>
    %three = graph.constant {value = dense<3> : tensor<i64>} : () -> tensor<i64>
    %lt = graph.lt %ids, %three : (tensor<2x5xi64>, tensor<i64>) -> tensor<2x5xi1>
    %f = graph.cast %ids {dtype = f32} : (tensor<2x5xi64>) -> tensor<2x5xf32>
    %w = graph.where %lt, %ids, %three : (tensor<2x5xi1>, tensor<2x5xi64>, tensor<i64>) -> tensor<2x5xi64>
    %r = graph.arange {start = -3.0, limit = 11.0, step = 2.0, dtype = i64} : () -> tensor<7xi64>
    func.return %e, %g, %am1, %c, %mx, %lt, %f, %w, %r
      : tensor<2x5x4xf32>, tensor<3x2x5x4xf32>, tensor<3xi64>, tensor<6xi64>, tensor<2xi64>, tensor<2x5xi1>,
        tensor<2x5xf32>, tensor<2x5xi64>, tensor<7xi64>
  }
}"""


def _program_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [
        np.array([[0, 9, 1, 3, 5], [8, 2, 7, 1, 4]], np.int64),
        rng.standard_normal((10, 4)).astype(np.float32),
        rng.standard_normal((3, 7)).astype(np.float32),
        np.array([-(2**31), 2**31 - 1, 0, -5, 7, 123456789], np.int32),
        rng.standard_normal((3, 10, 4)).astype(np.float32),
        np.array([[0, 9, -1, 3, 5], [-10, 2, 7, 1, -4]], np.int64),  # gather counts negative indices from the end
    ]


@pytest.mark.usefixtures("gpu")
def test_i64_programs_run_held_in_i32_as_the_interpreter() -> None:
    m = parse_module(PROGRAM)
    executable = WebGPUExecutable.build(m)
    inputs = _program_inputs()
    got = executable.run(inputs)
    for g, w in zip(got, reference(m, inputs), strict=True):
        assert g.dtype == w.dtype  # i64 outputs are widened back
        np.testing.assert_array_equal(g, w)
    shaders = "\n".join(s.wgsl for s in executable.shaders.values())
    assert "i64" not in shaders and "array<i32>" in shaders


@pytest.mark.usefixtures("gpu")
def test_i64_inputs_outside_32_bits_are_refused_by_name() -> None:
    executable = WebGPUExecutable.build(parse_module(PROGRAM))
    inputs = _program_inputs()
    inputs[0][1, 3] = 2**40
    with pytest.raises(InterpreterError, match=r"input #0 \(tensor<2x5xi64>\) holds 1099511627776, outside the 32-bit"):
        executable.run(inputs)


def _refusal(body: str, args: str, result: str) -> str:
    return f"""
module {{
  func.func @main({args}) -> {result} {{
{body}
  }}
}}"""


@pytest.mark.parametrize(
    ("args", "body", "result", "message"),
    [
        (
            "%a: tensor<4xi64>",
            "    %0 = graph.neg %a : (tensor<4xi64>) -> tensor<4xi64>\n    func.return %0 : tensor<4xi64>",
            "tensor<4xi64>",
            r"kernel @neg_0: 'loop.store' uses i64 values in \[-2147483647, 2147483648\] \(from 'loop.neg'\), beyond",
        ),
        (
            "%a: tensor<4xi64>, %b: tensor<4xi64>",
            "    %0 = graph.mul %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>\n"
            "    func.return %0 : tensor<4xi64>",
            "tensor<4xi64>",
            r"kernel @mul_0: 'loop.store' uses i64 values in \[-4611686016279904256, 4611686018427387904\]",
        ),
        (
            "%a: tensor<4x3xi64>",
            "    %0 = graph.reduce_sum %a {axes = [1]} : (tensor<4x3xi64>) -> tensor<4xi64>\n"
            "    func.return %0 : tensor<4xi64>",
            "tensor<4xi64>",
            r"uses i64 values in \[-6442450944, 6442450941\] \(from 'loop\.load' of a buffer whose values grow",
        ),
        (
            "%a: tensor<4x3xi64>",
            "    %0 = graph.reduce_prod %a {axes = [1]} : (tensor<4x3xi64>) -> tensor<4xi64>\n"
            "    func.return %0 : tensor<4xi64>",
            "tensor<4xi64>",
            r"'loop\.store' uses i64 values of any size \(from 'loop\.load' of a buffer whose values grow with every "
            r"iteration: an accumulation\)",
        ),
        (
            "%x: tensor<4xf32>",
            "    %0 = graph.cast %x {dtype = i64} : (tensor<4xf32>) -> tensor<4xi64>\n"
            "    func.return %0 : tensor<4xi64>",
            "tensor<4xi64>",
            r"'loop.store' uses i64 values of any size \(from 'loop.cast' of f32\)",
        ),
        (
            "%x: tensor<4xu32>",
            "    %0 = graph.cast %x {dtype = i64} : (tensor<4xu32>) -> tensor<4xi64>\n"
            "    func.return %0 : tensor<4xi64>",
            "tensor<4xi64>",
            r"'loop.store' uses i64 values in \[0, 4294967295\] \(from 'loop.cast' of u32\)",
        ),
        (
            "%a: tensor<2xi64>",
            "    %c = graph.constant {value = dense<[5, 8589934592]> : tensor<2xi64>} : () -> tensor<2xi64>\n"
            "    %0 = graph.add %a, %c : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>\n"
            "    func.return %0 : tensor<2xi64>",
            "tensor<2xi64>",
            r"holds 8589934592, outside the 32-bit range WebGPU holds i64 in",
        ),
    ],
    ids=["neg", "mul", "sum", "product", "cast-from-float", "cast-from-u32", "constant"],
)
def test_i64_values_that_may_leave_32_bits_are_refused_by_name(args: str, body: str, result: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        WebGPUExecutable.build(parse_module(_refusal(body, args, result)))


SMALL = [(-9, -4), (-6, 0), (-3, 5), (0, 0), (0, 7), (2, 9), (5, 5)]


@pytest.mark.parametrize(
    ("name", "exact"),
    [
        ("div", lambda x, y: 0 if y == 0 else int(abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1)),
        ("rem", lambda x, y: 0 if y == 0 else x - int(abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1) * y),
        ("and", lambda x, y: x & y),
        ("or", lambda x, y: x | y),
        ("xor", lambda x, y: x ^ y),
        ("mul", lambda x, y: x * y),
    ],
)
def test_interval_transfer_functions_hold_every_exact_result(name: str, exact: object) -> None:
    """The intervals of div, rem, the bitwise ops and mul against every pair of values from small intervals."""
    for a, b in itertools.product(SMALL, repeat=2):
        if name == "div":
            low, high = ranges._quotients(a, b)
        elif name == "rem":
            low, high = ranges._remainders(a, b)
        elif name == "mul":
            low, high = ranges._products(a, b)
        else:
            low, high = ranges._bitwise(f"loop.{name}", a, b)
        for x in range(a[0], a[1] + 1):
            for y in range(b[0], b[1] + 1):
                value = exact(x, y)  # type: ignore[operator]
                assert low <= value <= high, (name, a, b, x, y, value, (low, high))


@pytest.mark.usefixtures("gpu")
def test_i32_sums_accumulate_in_i64_held_in_i32_and_wrap_as_the_interpreter() -> None:
    """Integer sums accumulate in i64 and wrap to i32 at the end: an i64 accumulator that wraps in its i32
    register gives the same low 32 bits, so the proof lets it through (only its true value is out of range)."""
    m = parse_module("""
module {
  func.func @main(%a: tensor<4x6xi32>) -> (tensor<4xi32>, tensor<4x6xi32>, tensor<6xi32>) {
    %0 = graph.reduce_sum %a {axes = [1]} : (tensor<4x6xi32>) -> tensor<4xi32>
    %1 = graph.cumsum %a {axis = 1} : (tensor<4x6xi32>) -> tensor<4x6xi32>
    %2 = graph.einsum %a, %a {equation = "ij,ij->j"} : (tensor<4x6xi32>, tensor<4x6xi32>) -> tensor<6xi32>
    func.return %0, %1, %2 : tensor<4xi32>, tensor<4x6xi32>, tensor<6xi32>
  }
}""")
    a = np.random.default_rng(1).integers(-(2**31), 2**31, (4, 6), dtype=np.int64).astype(np.int32)
    for got, want in zip(WebGPUExecutable.build(m).run([a]), reference(m, [a]), strict=True):
        np.testing.assert_array_equal(got, want)


MUL = _refusal(
    "    %0 = graph.mul %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>\n    func.return %0 : tensor<3xi64>",
    "%a: tensor<3xi64>, %b: tensor<3xi64>",
    "tensor<3xi64>",
)


def test_the_loop_interpreter_holding_i64_in_i32_exposes_a_wrong_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the fuzzer's WebGPU check runs (tensorium/fuzz/backends.py): WebGPU's loop IR with i64 values held in
    i32. With the proof broken (nothing observed), a product that leaves 32 bits builds, and the loop interpreter
    so run differs from the graph interpreter where the real shader would."""
    from tensorium.backends.loop_interp import i64_held_in_i32
    from tensorium.backends.plan_runner import run_plan

    m = parse_module(MUL)
    with pytest.raises(CompileError, match=r"'loop\.store' uses i64 values"):
        WebGPUExecutable.build(m)
    monkeypatch.setattr(ranges, "_observes", lambda op, position: False)
    seen = {}
    WebGPUExecutable.build(m, after_stage=lambda stage, state: seen.setdefault(stage, state.lowered))
    inputs = [np.array([3, 1 << 20, -(1 << 31)], np.int64), np.array([-5, 1 << 20, 1], np.int64)]
    (want,) = reference(m, inputs)
    (plain,) = run_plan(seen["emit"], inputs)
    np.testing.assert_array_equal(plain, want)  # i64 semantics: the loop IR itself is right
    with i64_held_in_i32():
        (held,) = run_plan(seen["emit"], inputs)
    assert held[0] == want[0] and held[2] == want[2] and held[1] == 0 != want[1]  # 2**40 keeps its low 32 bits


COUNT = """
module {
  func.func @main(%m: tensor<[b]x[n]xi1>) -> (tensor<[b]xi64>, tensor<[b]x[n]xi64>) {
    %c = graph.cast %m {dtype = i64} : (tensor<[b]x[n]xi1>) -> tensor<[b]x[n]xi64>
    %s = graph.reduce_sum %c {axes = [1]} : (tensor<[b]x[n]xi64>) -> tensor<[b]xi64>
    %p = graph.cumsum %c {axis = 1} : (tensor<[b]x[n]xi64>) -> tensor<[b]x[n]xi64>
    %one = graph.constant {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %q = graph.sub %p, %one : (tensor<[b]x[n]xi64>, tensor<i64>) -> tensor<[b]x[n]xi64>
    func.return %s, %q : tensor<[b]xi64>, tensor<[b]x[n]xi64>
  }
}"""


@pytest.mark.usefixtures("gpu")
def test_counts_over_named_dims_are_bounded_by_the_binding_size() -> None:
    """A mask's count and running count (HF models' position ids): sums of 0/1 over a named dim, which is at
    most what keeps its tensor within the binding size (2**25 i64 elements held in 4 bytes at the spec's
    128 MiB), so they fit 32 bits; a shape with a dim over that bound is refused at run time, even empty."""
    m = parse_module(COUNT)
    assert ranges.dim_bound(TensorType((Sym("b"), 3, Sym("n")), i64), 1 << 27) == (1 << 25) // 3
    executable = WebGPUExecutable.build(m)
    mask = np.random.default_rng(3).random((3, 11)) < 0.6
    for got, want in zip(executable.run([mask]), reference(m, [mask]), strict=True):
        np.testing.assert_array_equal(got, want)
    small = WebGPUExecutable.build(m, target=parse_target("webgpu:max_storage_buffer_binding_size=64"))
    with pytest.raises(InterpreterError, match=r"dim n = 100 \(axis 1\) is over 16, the most that fits the binding"):
        small.run([np.zeros((0, 100), bool)])
