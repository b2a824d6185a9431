"""Loop-level math decompositions against the loop interpreter: edge values (0, -0, +-inf, NaN, tiny, huge,
denormals), every float width they apply to, every integer type for division, and what they leave alone."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends import loop_interp
from tensorium.ir import InsertionPoint, Operation, func_body, make_func, make_module, set_results
from tensorium.ir.dialects import loop
from tensorium.ir.storage import coerce
from tensorium.ir.types import (
    BufferType,
    FloatType,
    IntegerType,
    ScalarType,
    Sym,
    bf16,
    f16,
    f32,
    f64,
    i8,
    i32,
    i64,
    index,
    storage_dtype,
    u8,
)
from tensorium.lowering.decompose import BASIC, DECOMPOSABLE, decompose

RNG = np.random.default_rng(7)
FLOAT_EDGES = [0.0, -0.0, 1e-30, -1e-30, 1e-40, -1e-40, 1e-45, 0.0999, 0.1001, 0.5, 1.0, -1.0, 2.0, 3.5, -3.5, 4.5]
FLOAT_EDGES += [-9.0, 20.0, 87.0, 88.5, 88.72, 89.0, -87.0, -88.0, -104.0, 1e30, 3e38, -3e38]
FLOAT_EDGES += [math.inf, -math.inf, math.nan]
INTS = [IntegerType(3), IntegerType(5, False), i8, u8, i32, IntegerType(32, False), i64, IntegerType(64, False), index]
RTOL = {"exp": 2.5e-7, "log": 2.5e-7, "tanh": 1e-6, "erf": 5e-7}


def inputs(name: str, t: FloatType) -> np.ndarray:
    """Edge values and random ones over each op's interesting range, held as the interpreter holds ``t``."""
    spread = {"exp": RNG.uniform(-100, 90, 3000), "log": np.exp(RNG.uniform(-104, 88, 3000))}
    values = np.concatenate([FLOAT_EDGES, spread.get(name, RNG.uniform(-6, 6, 3000)), -RNG.uniform(0, 5, 100)])
    return coerce(values, t)


def unary_kernel(name: str, t: ScalarType, kind: str = "serial") -> Operation:
    vec = BufferType((Sym("n"),), t)
    f = make_func("k", [vec, vec])
    x, y = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, loop.dim(x, axis=0), kind=kind) as i:
            loop.store(getattr(loop, name)(loop.load(x, i)), y, i)
    set_results(f, [])
    return make_module([f])


def binary_kernel(name: str, t: ScalarType) -> Operation:
    vec = BufferType((Sym("n"),), t)
    f = make_func("k", [vec, vec, vec])
    a, b, c = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, loop.dim(a, axis=0)) as i:
            loop.store(getattr(loop, name)(loop.load(a, i), loop.load(b, i)), c, i)
    set_results(f, [])
    return make_module([f])


def scalar_ops(module: Operation) -> set[str]:
    memory = {"loop.for", "loop.yield", "loop.dim", "loop.load", "loop.store", "func.func", "func.return"}
    return {op.name for op in module.walk()} - memory - {"builtin.module"}


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float, t: FloatType) -> None:
    """Equal NaNs and infinities, else within ``rtol`` (or one ulp of ``t`` at the narrower types); results
    below the smallest normal f32 may flush to zero."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    tiny = np.abs(want) < np.finfo(np.float32).tiny
    assert np.all(np.abs(got[tiny]) <= np.finfo(np.float32).tiny)
    tol = {"f16": 1e-3, "bf16": 8e-3}.get(t.name, rtol)
    finite = ~np.isnan(want) & ~tiny
    np.testing.assert_allclose(got[finite], want[finite], rtol=tol, atol=0)


@pytest.mark.parametrize("t", [f32, f16, bf16], ids=str)
@pytest.mark.parametrize("name", ["exp", "log", "tanh", "erf"])
def test_float_math_matches_the_interpreter(name: str, t: FloatType) -> None:
    module = unary_kernel(name, t)
    x = inputs(name, t)
    want = [x, np.zeros_like(x)]
    loop_interp.run(module, want)
    assert decompose(module) >= 1  # with f16 and bf16, also the casts back and (bf16) the loads
    assert scalar_ops(module) <= BASIC
    got = [x, np.zeros_like(x)]
    loop_interp.run(module, got)
    assert_close(got[1], want[1], RTOL[name], t)


def test_exp_gives_subnormal_results_as_numpy_does() -> None:
    # Regression: exp flushed results below the smallest normal f32 to 0 (for x under -87.3), where numpy's expf
    # gives subnormals down to 2**-149; a softmax weight of 0 times -inf is NaN where numpy's tiny weight gives
    # -inf, which the fuzzer reported (2026-11-29).
    module = unary_kernel("exp", f32)
    x = np.concatenate([np.linspace(-104.5, -87.0, 4000), [-103.28, -103.97, -103.98]]).astype(np.float32)
    got = [x, np.zeros_like(x)]
    decompose(module)
    loop_interp.run(module, got)
    want = np.exp(x.astype(np.float64)).astype(np.float32)  # correctly rounded, subnormals included
    assert np.count_nonzero(want[want < np.finfo(np.float32).tiny]) > 3000
    np.testing.assert_allclose(got[1], want, rtol=2.5e-7, atol=2.0**-149)


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "erf"])
def test_signed_zeros_and_specials_are_exact(name: str) -> None:
    x = np.array([0.0, -0.0, math.inf, -math.inf, math.nan], np.float32)
    module = unary_kernel(name, f32)
    decompose(module)
    got = [x, np.zeros_like(x)]
    loop_interp.run(module, got)
    want = {
        "exp": [1.0, 1.0, math.inf, 0.0, math.nan],
        "log": [-math.inf, -math.inf, math.inf, math.nan, math.nan],
        "tanh": [0.0, -0.0, 1.0, -1.0, math.nan],
        "erf": [0.0, -0.0, 1.0, -1.0, math.nan],
    }[name]
    np.testing.assert_array_equal(got[1], np.array(want, np.float32))
    np.testing.assert_array_equal(np.signbit(got[1][:2]), np.signbit(np.array(want[:2])))


TRIG_INPUTS = {
    "sin": np.concatenate([RNG.uniform(-10, 10, 3000), RNG.uniform(-8e5, 8e5, 3000), np.arange(-40, 41) * np.pi / 4]),
    "cos": np.concatenate([RNG.uniform(-10, 10, 3000), RNG.uniform(-8e5, 8e5, 3000), np.arange(-40, 41) * np.pi / 4]),
    "atan": np.concatenate([RNG.uniform(-5, 5, 3000), np.exp(RNG.uniform(-80, 80, 3000)), [0.4142135, 2.4142137]]),
    "asin": np.concatenate([RNG.uniform(-1, 1, 3000), 1 - np.exp(RNG.uniform(-16, 0, 1000)), [0.5, -0.5, 1e-30]]),
    "acos": np.concatenate([RNG.uniform(-1, 1, 3000), 1 - np.exp(RNG.uniform(-16, 0, 1000)), [0.5, -0.5, -1.0]]),
}
"""Where each trigonometric decomposition promises accuracy (sin and cos: |x| below 8e5), edges included."""
TRIG_ULPS = {"sin": 4, "cos": 4, "atan": 3, "asin": 3, "acos": 3}


@pytest.mark.parametrize("name", list(TRIG_INPUTS))
def test_trigonometry_is_within_a_few_ulp_of_the_correctly_rounded_result(name: str) -> None:
    """Against numpy in f64 rounded once to f32 (correctly rounded), in ulp of the result, except where the
    result is near zero relative to its argument (sin and cos at multiples of pi/2), which counts in ulp of 1."""
    x = TRIG_INPUTS[name].astype(np.float32)
    x = np.concatenate([x, -x]) if name in ("atan", "asin", "acos") else x
    module = unary_kernel(name, f32)
    assert decompose(module) == 1
    assert scalar_ops(module) <= BASIC
    got = [x, np.zeros_like(x)]
    loop_interp.run(module, got)
    want = getattr(np, name)(x.astype(np.float64))
    scale = np.maximum(np.abs(want), 1.0 if name in ("sin", "cos") else 0.0)
    ulps = np.abs(got[1].astype(np.float64) - want) / np.spacing(scale.astype(np.float32)).astype(np.float64)
    worst = int(np.argmax(ulps))
    assert ulps.max() <= TRIG_ULPS[name], (x[worst], got[1][worst], want[worst], ulps.max())


@pytest.mark.parametrize("t", [f16, bf16], ids=str)
@pytest.mark.parametrize("name", list(TRIG_INPUTS))
def test_trigonometry_of_narrow_floats_goes_through_f32(name: str, t: FloatType) -> None:
    module = unary_kernel(name, t)
    x = coerce(TRIG_INPUTS[name][:500] / (1e4 if name in ("sin", "cos") else 1.0), t)
    want = [x, np.zeros_like(x)]
    loop_interp.run(module, want)
    decompose(module)
    got = [x, np.zeros_like(x)]
    loop_interp.run(module, got)
    assert_close(got[1], want[1], 0.0, t)


def test_trigonometry_keeps_signed_zeros_and_specials() -> None:
    x = np.array([0.0, -0.0, math.inf, -math.inf, math.nan, 1.5, -1.5], np.float32)
    want = {
        "sin": [0.0, -0.0, math.nan, math.nan, math.nan, math.sin(1.5), -math.sin(1.5)],
        "cos": [1.0, 1.0, math.nan, math.nan, math.nan, math.cos(1.5), math.cos(1.5)],
        "atan": [0.0, -0.0, math.pi / 2, -math.pi / 2, math.nan, math.atan(1.5), -math.atan(1.5)],
        "asin": [0.0, -0.0, math.nan, math.nan, math.nan, math.nan, math.nan],
        "acos": [math.pi / 2, math.pi / 2, math.nan, math.nan, math.nan, math.nan, math.nan],
    }
    for name, values in want.items():
        module = unary_kernel(name, f32)
        decompose(module)
        got = [x, np.zeros_like(x)]
        loop_interp.run(module, got)
        expected = np.array(values, np.float32)
        np.testing.assert_allclose(got[1], expected, rtol=3e-7, err_msg=name)
        np.testing.assert_array_equal(np.signbit(got[1][:2]), np.signbit(expected[:2]), err_msg=name)


@pytest.mark.parametrize("t", INTS, ids=str)
@pytest.mark.parametrize("name", ["div", "rem"])
def test_integer_division_keeps_the_interpreters_semantics(name: str, t: ScalarType) -> None:
    bits = t.width if isinstance(t, IntegerType) else 64
    signed = not isinstance(t, IntegerType) or t.signed
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    values = sorted({0, 1, 2, 3, 7, low, high, low + 1, -1 if signed else high - 1, -2 if signed else 5})
    a, b = (
        coerce(np.array(v, np.int64 if signed else np.uint64), t)
        for v in zip(*[(p, q) for p in values for q in values])
    )
    module = binary_kernel(name, t)
    want = [a, b, np.zeros_like(a)]
    loop_interp.run(module, want)
    assert decompose(module) == 1
    got = [a, b, np.zeros_like(a)]
    loop_interp.run(module, got)
    np.testing.assert_array_equal(got[2], want[2])


def test_native_ops_f64_and_float_division_stay() -> None:
    for name in sorted(DECOMPOSABLE - {"loop.div", "loop.rem", "loop.align_offset", "bf16"}):
        module = unary_kernel(name.removeprefix("loop."), f32)
        assert decompose(module, native={name}) == 0
        assert decompose(unary_kernel(name.removeprefix("loop."), f64)) == 0
    for name in ("div", "rem"):
        assert decompose(binary_kernel(name, f32)) == 0
        assert decompose(binary_kernel(name, i32), native={f"loop.{name}"}) == 0


def test_guarded_and_constant_divisors_are_not_guarded_again() -> None:
    module = binary_kernel("div", i32)
    assert decompose(module) == 1
    text = tm.print_module(module)
    assert decompose(module) == 0 and tm.print_module(module) == text
    vec = BufferType((4,), i32)
    f = make_func("k", [vec])
    (a,) = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, 4) as i:
            loop.store(loop.div(loop.load(a, i), loop.const(value=3, dtype=i32)), a, i)
            loop.store(loop.div(loop.load(a, i), loop.const(value=-1, dtype=i32)), a, i)
    set_results(f, [])
    assert decompose(make_module([f])) == 1  # the division by -1 only


def test_decomposed_ops_keep_the_location_of_the_op_they_replace() -> None:
    text = """module {
  func.func @k(%x: f32, %y: buffer<f32, global>) {
    %e = loop.erf %x : (f32) -> f32
    loop.store %e, %y : (f32, buffer<f32, global>) -> ()
    func.return
  }
}
"""
    module = tm.parse_module(text)
    location = str(next(op for op in module.walk() if op.name == "loop.erf").loc)
    decompose(module)
    new = [op for op in module.walk() if op.name.startswith("loop.") and op.name != "loop.store"]
    assert new and all(str(op.loc) == location for op in new)
    tm.ir.verify(module)


@pytest.mark.parametrize(("ft", "it"), [(f16, IntegerType(16, False)), (f32, i32), (f64, i64)], ids=str)
def test_bitcast_reinterprets_bits(ft: FloatType, it: IntegerType) -> None:
    x = coerce(np.array([1.5, -0.0, math.inf, -(2.0**-20)], np.float64), ft)
    bits = x.view(storage_dtype(it))
    vec_f, vec_i = BufferType((4,), ft), BufferType((4,), it)
    f = make_func("k", [vec_f, vec_i, vec_f])
    a, b, c = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, 4) as i:
            v = loop.bitcast(loop.load(a, i), dtype=it)
            loop.store(v, b, i)
            loop.store(loop.bitcast(v, dtype=ft), c, i)
    set_results(f, [])
    out = [x, np.zeros_like(bits), np.zeros_like(x)]
    loop_interp.run(make_module([f]), out)
    np.testing.assert_array_equal(out[1], bits)
    np.testing.assert_array_equal(out[2], x)


def test_bitcast_needs_a_float_and_an_integer_of_its_width() -> None:
    with pytest.raises(tm.VerifyError, match="bitcast converts between f16, f32 or f64 and an integer of its width"):
        loop.bitcast(loop.const(value=1.0, dtype=f32), dtype=i64)
    with pytest.raises(tm.VerifyError, match="not bf16 to i16"):
        loop.bitcast(loop.const(value=1.0, dtype=bf16), dtype=IntegerType(16))


def bf16_kernel() -> Operation:
    """Arithmetic, math, constants, loads and casts of bf16: ``c = (a * b + 0.1) / b - sqrt(|a|) + bf16(x)``."""
    vec, wide = BufferType((Sym("n"),), bf16), BufferType((Sym("n"),), f32)
    f = make_func("k", [vec, vec, wide, vec])
    a, b, x, c = func_body(f).args
    with InsertionPoint(func_body(f)):
        tenth = loop.const(value=0.1, dtype=bf16)
        with loop.for_(0, loop.dim(a, axis=0)) as i:
            va, vb = loop.load(a, i), loop.load(b, i)
            q = loop.sub(loop.div(loop.add(loop.mul(va, vb), tenth), vb), loop.sqrt(loop.abs(va)))
            loop.store(loop.add(q, loop.cast(loop.load(x, i), dtype=bf16)), c, i)
    set_results(f, [])
    return make_module([f])


def test_bf16_rounding_decomposes_to_exact_values() -> None:
    a, b, x = (RNG.standard_normal(500).astype(np.float32) * s for s in (3, 2, 5))
    a[:4], b[:4] = [0.0, -0.0, np.inf, np.nan], [1.0, 0.0, 2.0, 1.0]
    module = bf16_kernel()
    want = [a, b, x, np.zeros_like(a)]
    loop_interp.run(module, want)  # loads round the unrounded inputs
    assert decompose(module, native={"loop.div"}) > 0
    assert decompose(module, native={"loop.div"}) == 0  # once is enough
    got = [a, b, x, np.zeros_like(a)]
    loop_interp.run(module, got)
    np.testing.assert_array_equal(got[3].view(np.uint32), want[3].view(np.uint32))
    assert tm.print_module(module).count("0xFFFF0000") == 0  # printed as an integer
    assert decompose(bf16_kernel(), native={"bf16"}) == 0
