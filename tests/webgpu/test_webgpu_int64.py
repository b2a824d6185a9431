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
            "%a: tensor<2xi64>",
            "    %c = graph.constant {value = dense<[5, 8589934592]> : tensor<2xi64>} : () -> tensor<2xi64>\n"
            "    %0 = graph.add %a, %c : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>\n"
            "    func.return %0 : tensor<2xi64>",
            "tensor<2xi64>",
            r"holds 8589934592, outside the 32-bit range WebGPU holds i64 in",
        ),
    ],
    ids=["constant"],
)
def test_i64_values_that_may_leave_32_bits_are_refused_by_name(args: str, body: str, result: str, message: str) -> None:
    """What neither the proof nor a run-time check covers (an i64 constant outside 32 bits)."""
    with pytest.raises(CompileError, match=message):
        WebGPUExecutable.build(parse_module(_refusal(body, args, result)))


_BIG = 1 << 31
GUARDED = {
    "neg": ("%0 = graph.neg %a", "%a: tensor<4xi64>", [[5, -7, _BIG - 1, -_BIG + 1]], [[5, -7, 0, -_BIG]]),
    "mul": (
        "%0 = graph.mul %a, %b",
        "%a: tensor<4xi64>, %b: tensor<4xi64>",
        [[3, -(1 << 15), 1 << 30, -1], [-5, 1 << 16, -2, -_BIG + 1]],
        [[3, 1 << 16, -1, 0], [1, 1 << 15, -_BIG, 0]],
    ),
    "quotient": (  # graph.div of integers floors: -7 / 2 is -4; only -2**31 / -1 leaves 32 bits
        "%0 = graph.div %a, %b",
        "%a: tensor<4xi64>, %b: tensor<4xi64>",
        [[-7, -_BIG, _BIG - 1, -_BIG], [2, 1, -1, 3]],
        [[5, -_BIG, 0, 1], [1, -1, 1, 1]],
    ),
    "u32": (  # a u32 from 2**31 on is negative in the i32 register
        "%0 = graph.cast %a {dtype = i64}",
        "%a: tensor<4xu32>",
        [[0, 7, _BIG - 1, 12]],
        [[0, _BIG, 5, 2**32 - 1]],
    ),
    "sum": (
        "%0 = graph.reduce_sum %a {axes = [1]}",
        "%a: tensor<4x3xi64>",
        [[[1, 2, 3], [-_BIG, 5, 9], [_BIG - 1, -7, 0], [0, 0, 0]]],
        [[[1, 2, 3], [_BIG - 1, 1, 0], [0, 0, 0], [0, 0, 0]]],
    ),
    "product": (
        "%0 = graph.reduce_prod %a {axes = [1]}",
        "%a: tensor<4x3xi64>",
        [[[1, 2, 3], [-(1 << 10), 1 << 10, 1 << 10], [5, -7, 0], [0, 0, 0]]],
        [[[1, 2, 3], [1 << 11, 1 << 10, 1 << 10], [0, 0, 0], [0, 0, 0]]],
    ),
}
"""i64 arithmetic the proof cannot bound, checked at run time for 32-bit overflow: (the op, its arguments, inputs
whose results fit 32 bits, inputs whose results do not)."""


OVERFLOW = r"an i64 sum, difference, product, quotient or u32 conversion overflows 32 bits"


def _arrays(name: str, rows: list[list[object]]) -> list[np.ndarray]:
    """The inputs of :data:`GUARDED` ``name`` as arrays of its arguments' dtypes."""
    return [np.array(a, np.uint32 if "u32" in GUARDED[name][1] else np.int64) for a in rows]


def _guarded_program(name: str) -> object:
    op, args, _, _ = GUARDED[name]
    operands = ", ".join(arg.split(": ")[1] for arg in args.split(", "))
    return parse_module(
        _refusal(f"    {op} : ({operands}) -> tensor<4xi64>\n    func.return %0 : tensor<4xi64>", args, "tensor<4xi64>")
    )


@pytest.mark.parametrize("name", list(GUARDED))
def test_i64_arithmetic_that_may_overflow_32_bits_is_checked_at_run_time(name: str) -> None:
    """Once refused (their intervals leave 32 bits), these now build with a check that each i32 register did
    not overflow: results that fit 32 bits match the interpreter where WebGPU holds i64 in i32 (the loop
    interpreter so run), and results that do not fail the run naming the overflow, never wrapped silently."""
    from tensorium.backends.loop_interp import i64_held_in_i32
    from tensorium.backends.plan_runner import run_plan

    m = _guarded_program(name)
    lowered = _lowered(m)
    assert any("overflows 32 bits" in op.attr("message") for op in lowered.walk() if op.name == "loop.check")
    _, _, fits, overflows = GUARDED[name]
    inputs = _arrays(name, fits)
    with i64_held_in_i32():
        (got,) = run_plan(lowered, inputs)
    np.testing.assert_array_equal(got, reference(m, inputs)[0])
    with i64_held_in_i32(), pytest.raises(InterpreterError, match=OVERFLOW):
        run_plan(lowered, _arrays(name, overflows))


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("name", ["mul", "sum", "quotient", "u32"])
def test_i64_overflow_checks_run_on_webgpu(name: str) -> None:
    m = _guarded_program(name)
    executable = WebGPUExecutable.build(m)
    _, _, fits, overflows = GUARDED[name]
    inputs = _arrays(name, fits)
    np.testing.assert_array_equal(executable.run(inputs)[0], reference(m, inputs)[0])
    with pytest.raises(InterpreterError, match=f"failed: {OVERFLOW}"):
        executable.run(_arrays(name, overflows))


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
    i32. With the proof broken (nothing observed), a product that leaves 32 bits builds without its overflow
    check, and the loop interpreter so run differs from the graph interpreter where the real shader would."""
    from tensorium.backends.loop_interp import i64_held_in_i32
    from tensorium.backends.plan_runner import run_plan

    m = parse_module(MUL)
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


BUCKETS = """
module {
  func.func @main(%r16: tensor<[n]xi16>) -> tensor<[n]xi64> {
    %r = graph.cast %r16 {dtype = i64} : (tensor<[n]xi16>) -> tensor<[n]xi64>
    %eight = graph.constant {value = dense<8> : tensor<i64>} : () -> tensor<i64>
    %fifteen = graph.constant {value = dense<15> : tensor<i64>} : () -> tensor<i64>
    %eightf = graph.constant {value = dense<8.0> : tensor<f32>} : () -> tensor<f32>
    %scale = graph.constant {value = dense<2.8853900817779268> : tensor<f32>} : () -> tensor<f32>
    %abs = graph.abs %r : (tensor<[n]xi64>) -> tensor<[n]xi64>
    %small = graph.lt %abs, %eight : (tensor<[n]xi64>, tensor<i64>) -> tensor<[n]xi1>
    %f = graph.cast %abs {dtype = f32} : (tensor<[n]xi64>) -> tensor<[n]xf32>
    %d = graph.div %f, %eightf : (tensor<[n]xf32>, tensor<f32>) -> tensor<[n]xf32>
    %l = graph.log %d : (tensor<[n]xf32>) -> tensor<[n]xf32>
    %s = graph.mul %l, %scale : (tensor<[n]xf32>, tensor<f32>) -> tensor<[n]xf32>
    %c = graph.cast %s {dtype = i64} : (tensor<[n]xf32>) -> tensor<[n]xi64>
    %a = graph.add %c, %eight : (tensor<[n]xi64>, tensor<i64>) -> tensor<[n]xi64>
    %m = graph.min %a, %fifteen : (tensor<[n]xi64>, tensor<i64>) -> tensor<[n]xi64>
    %w = graph.where %small, %abs, %m : (tensor<[n]xi1>, tensor<[n]xi64>, tensor<[n]xi64>) -> tensor<[n]xi64>
    func.return %w : tensor<[n]xi64>
  }
}"""
"""T5's relative-position buckets: a float logarithm cast to i64, which no interval bounds (log(0) is -inf, whose
cast leaves 32 bits), in lanes that a ``where`` discards for the near positions. (T5's positions are differences of
aranges over named dims; 16-bit ones here keep ``abs`` within 32 bits.)"""


CAST = _refusal(
    "    %0 = graph.cast %x {dtype = i64} : (tensor<3xf32>) -> tensor<3xi64>\n    func.return %0 : tensor<3xi64>",
    "%x: tensor<3xf32>",
    "tensor<3xi64>",
)


def _fused(text: str) -> object:
    """``text`` parsed and through WebGPU's pass pipeline (its elementwise ops one kernel, as in a model)."""
    from tensorium.passes.pipeline import parse_pipeline

    m = parse_module(text)
    for p in parse_pipeline("fuse"):
        p.run(m)
    return m


def _lowered(m: object, **build: object) -> object:
    seen: dict[str, object] = {}
    WebGPUExecutable.build(m, after_stage=lambda stage, state: seen.setdefault(stage, state.lowered), **build)
    return seen["emit"]


def test_a_float_cast_to_i64_is_checked_at_run_time_where_it_has_an_effect() -> None:
    """The bucket kernel is proven with its cast guarded at 2**30 (2**31 leaves no room for the ``+ 8``); the
    check sits before the store, after the ``where`` that discards log(0)'s lane, so near positions pass. Run as
    WebGPU runs it (i64 held in i32) on the loop interpreter, it matches the graph interpreter."""
    from tensorium.backends.loop_interp import i64_held_in_i32
    from tensorium.backends.plan_runner import run_plan

    m = _fused(BUCKETS)
    lowered = _lowered(m)
    (kernel,) = [k for k in lowered.walk() if k.name == "func.func" and any(ranges._is_float_cast(o) for o in k.walk())]
    (check,) = [op for op in kernel.walk() if op.name == "loop.check"]
    assert "outside [-2**30, 2**30)" in check.attr("message")
    assert check.parent.ops[check.parent.index_of(check) + 1].name == "loop.store"
    r = np.array([0, 1, -3, 7, 8, -9, 20, 100, -1000, 32767, -32768], np.int16)
    (want,) = reference(m, [r])
    with i64_held_in_i32():
        (got,) = run_plan(lowered, [r])
    np.testing.assert_array_equal(got, want)
    assert want.tolist() == [0, 1, 3, 7, 8, 8, 10, 15, 15, 15, 15]


def test_without_its_check_a_guarded_cast_would_be_narrowed_silently(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard is what makes the proof sound: with the proof kept and the checks left out, a float beyond 32
    bits cast to i64 is stored wrong where WebGPU holds i64 in i32; with them the run fails naming the kernel."""
    from tensorium.backends.loop_interp import i64_held_in_i32
    from tensorium.backends.plan_runner import run_plan

    m = parse_module(CAST)
    x = np.array([1.5, -7.0, 2.0**40], np.float32)
    (want,) = reference(m, [x])
    checked = _lowered(m)
    with i64_held_in_i32(), pytest.raises(InterpreterError, match=r"a float converted to i64 is outside \[-2\*\*31"):
        run_plan(checked, [x])
    monkeypatch.setattr(ranges, "guard_i64", lambda kernel, guard, overflowing: None)
    unchecked = _lowered(m)
    with i64_held_in_i32():
        (got,) = run_plan(unchecked, [x])
    assert got[:2].tolist() == want[:2].tolist() == [1, -7] and got[2] != want[2] == 2**40


@pytest.mark.usefixtures("gpu")
def test_guarded_casts_run_on_webgpu_and_fail_the_run_by_name_out_of_range() -> None:
    m = _fused(BUCKETS)
    executable = WebGPUExecutable.build(m)
    r = np.array([0, 3, -8, 9, 55, -300, 32767], np.int16)
    (got,) = executable.run([r])
    np.testing.assert_array_equal(got, reference(m, [r])[0])
    shaders = [s for s in executable.shaders.values() if s.checks]
    assert any("a float converted to i64 is outside [-2**30, 2**30)" in c for s in shaders for c in s.checks)
    cast = WebGPUExecutable.build(parse_module(CAST))
    (fine,) = cast.run([np.array([2.0**31 - 128, -(2.0**31), -0.5], np.float32)])
    assert fine.tolist() == [2**31 - 128, -(2**31), 0]
    for bad in (2.0**31, np.nan, -np.inf):
        with pytest.raises(InterpreterError, match=r"kernel @cast_0 failed: .*a float converted to i64 is outside"):
            cast.run([np.array([1.0, bad, 2.0], np.float32)])


def test_a_kernel_with_no_binding_to_spare_for_the_check_is_refused() -> None:
    """Fused groups that cast floats to i64 keep a storage binding free for the check's status buffer; where
    even one op binds the limit, the proof's refusal says so."""
    m = parse_module(CAST)
    from tensorium.lowering.webgpu_split import bindings_of

    (cast,) = [op for op in m.walk() if op.name == "graph.cast"]
    assert bindings_of(cast) == 3
    tight = parse_target("webgpu:max_storage_buffers_per_shader_stage=2")
    with pytest.raises(
        CompileError, match=r"is outside \[-2\*\*31, 2\*\*31\)\) would prove it, but the kernel binds 2 "
    ):
        WebGPUExecutable.build(m, target=tight)


@pytest.mark.usefixtures("gpu")
def test_a_float_cast_to_i64_then_wrapped_to_i32_keeps_the_low_32_bits() -> None:
    """Regression: the shader converted a float to an i64 held in i32 with WGSL's ``i32(x)``, which saturates at
    32 bits, so a cast on to i32 (which only wraps, no check) gave 2147483520 for 2**40 where the loop dialect's
    cast (saturate to i64, then wrap) gives 0. It now keeps the low 32 bits of the dialect's cast, for floats
    past 2**31, past 2**63 (saturated: -1 and 0), infinities and NaN alike."""
    m = _fused("""
module {
  func.func @main(%x: tensor<16xf32>) -> tensor<16xi32> {
    %0 = graph.cast %x {dtype = i64} : (tensor<16xf32>) -> tensor<16xi64>
    %1 = graph.cast %0 {dtype = i32} : (tensor<16xi64>) -> tensor<16xi32>
    func.return %1 : tensor<16xi32>
  }
}""")
    edges = [1.5, -5.5, -0.5, 2**31 - 128, -(2**31), 2**31, -(2**31) - 256, 2**40, -(2**40) - 2**20, 3e10, -3e10]
    x = np.array([*edges, 1e30, -1e30, np.inf, -np.inf, np.nan], np.float32)
    (got,) = WebGPUExecutable.build(m).run([x])
    (want,) = reference(m, [x])
    assert want[7] == 0 and want[11] == -1
    np.testing.assert_array_equal(got, want)


def test_a_float_cast_keeps_the_flag_its_operand_inherited() -> None:
    """Regression: the guard gave a float cast to i64 its own range flag in place of the flag its float operand
    carried, so an overflowed product converted to f32 and back was stored wrapped, unchecked."""
    from tensorium.backends.loop_interp import i64_held_in_i32
    from tensorium.backends.plan_runner import run_plan

    m = _fused(
        _refusal(
            "    %0 = graph.mul %a, %b : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>\n"
            "    %1 = graph.cast %0 {dtype = f32} : (tensor<2xi64>) -> tensor<2xf32>\n"
            "    %2 = graph.cast %1 {dtype = i64} : (tensor<2xf32>) -> tensor<2xi64>\n"
            "    func.return %2 : tensor<2xi64>",
            "%a: tensor<2xi64>, %b: tensor<2xi64>",
            "tensor<2xi64>",
        )
    )
    lowered = _lowered(m)
    fits = [np.array([3, -4], np.int64), np.array([5, 6], np.int64)]
    with i64_held_in_i32():
        (got,) = run_plan(lowered, fits)
    np.testing.assert_array_equal(got, reference(m, fits)[0])
    with i64_held_in_i32(), pytest.raises(InterpreterError, match=r"overflows 32 bits"):
        run_plan(lowered, [np.array([1 << 20, 1], np.int64), np.array([1 << 20, 1], np.int64)])


def test_a_fused_i64_group_at_the_binding_limit_keeps_a_binding_for_its_overflow_check() -> None:
    """Three i64 inputs multiplied and added in one group bind 4 storage buffers, the limit here: the split
    counts the status buffer the overflow check may need (i64 arithmetic, not only float casts), so the group is
    cut in two that each keep one free, and both checks run: in-range results match, an overflow fails."""
    from tensorium.backends.loop_interp import i64_held_in_i32
    from tensorium.backends.plan_runner import run_plan

    m = _fused("""
module {
  func.func @main(%a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>) -> tensor<4xi64> {
    %0 = graph.mul %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    %1 = graph.add %0, %c : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    func.return %1 : tensor<4xi64>
  }
}""")
    assert sum(op.name == "graph.fused" for op in m.walk()) == 1
    tight = parse_target("webgpu:max_storage_buffers_per_shader_stage=4")
    lowered = _lowered(m, target=tight)
    assert sum(op.name == "loop.check" for op in lowered.walk()) >= 2
    inputs = [np.array(a, np.int64) for a in ([3, -4, 1 << 15, 7], [5, 6, 1 << 15, -1], [1, 2, -5, _BIG - 1])]
    with i64_held_in_i32():
        np.testing.assert_array_equal(run_plan(lowered, inputs)[0], reference(m, inputs)[0])
        inputs[2][0] = _BIG - 1  # 15 + 2**31 - 1 leaves 32 bits
        with pytest.raises(InterpreterError, match=OVERFLOW):
            run_plan(lowered, inputs)
