"""Decomposed math through the LLVM backend: scalar and explicitly vectorized loops against the loop
interpreter and numpy, loop.bitcast on scalars and vectors, and the emitter's NATIVE set."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tensorium.backends import loop_interp
from tensorium.backends.llvm import LLVMEmitter, compile_module
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
    i32,
    i64,
    storage_dtype,
)
from tensorium.lowering.decompose import TRIGONOMETRY, decompose

RNG = np.random.default_rng(3)
EDGES = [0.0, -0.0, 1e-30, -1e-40, 0.0999, 0.1001, 1.0, -1.0, 3.5, 9.5, -9.5, 20.0, 80.0, 88.0, 88.72, 89.0]
EDGES += [-87.0, -87.3, -87.35, -88.0, -104.0, 3e38, math.inf, -math.inf, math.nan]
NUMPY = {"exp": np.exp, "log": np.log, "tanh": np.tanh}
RTOL = {"exp": 3e-7, "log": 3e-7, "tanh": 1e-6, "erf": 1e-6}


def kernel(name: str, t: ScalarType, kind: str, factor: int | None = None) -> Operation:
    vec = BufferType((Sym("n"),), t)
    f = make_func("k", [vec, vec])
    x, y = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, loop.dim(x, axis=0), kind=kind, factor=factor) as i:
            loop.store(getattr(loop, name)(loop.load(x, i)), y, i)
    set_results(f, [])
    return make_module([f])


def values(name: str, t: FloatType) -> np.ndarray:
    spread = np.exp(RNG.uniform(-100, 88, 2000)) if name == "log" else RNG.uniform(-12, 12, 2000)
    return coerce(np.concatenate([EDGES, spread]), t)


def check(got: np.ndarray, want: np.ndarray, rtol: float) -> None:
    got, want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    tiny = np.abs(want) < np.finfo(np.float32).tiny  # denormal results may flush to zero
    assert np.all(np.abs(got[tiny]) <= np.finfo(np.float32).tiny)
    keep = ~tiny & ~np.isnan(want)
    np.testing.assert_allclose(got[keep], want[keep], rtol=rtol, atol=2e-7)


@pytest.mark.parametrize(("kind", "factor"), [("serial", None), ("vectorize", 16), ("vectorize", 4)])
@pytest.mark.parametrize("name", ["exp", "log", "tanh", "erf"])
def test_decomposed_f32_math_through_llvm_matches_numpy_and_the_interpreter(
    name: str, kind: str, factor: int | None
) -> None:
    module = kernel(name, f32, kind, factor)
    x = values(name, f32)
    want = [x, np.zeros_like(x)]
    loop_interp.run(module, want)
    assert decompose(module) == 1
    got = [x, np.zeros_like(x)]
    compile_module(module).run("k", *got)
    check(got[1], want[1], RTOL[name])
    if name in NUMPY:
        with np.errstate(all="ignore"):
            check(got[1], NUMPY[name](x.astype(np.float64)).astype(np.float32), RTOL[name])


@pytest.mark.parametrize("t", [f16, bf16], ids=str)
@pytest.mark.parametrize("name", ["exp", "log", "tanh", "erf"])
def test_decomposed_narrow_float_math_through_llvm(name: str, t: FloatType) -> None:
    module = kernel(name, t, "vectorize", 8)
    x = values(name, t)
    want = [x, np.zeros_like(x)]
    loop_interp.run(module, want)
    decompose(module)
    got = [x, np.zeros_like(x)]
    compile_module(module).run("k", *got)
    check(got[1], want[1], {"f16": 1e-3, "bf16": 8e-3}[t.name])


@pytest.mark.parametrize(("ft", "it"), [(f16, IntegerType(16)), (f32, IntegerType(32, False)), (f64, i64)], ids=str)
@pytest.mark.parametrize("factor", [None, 8])
def test_bitcast_through_llvm(ft: FloatType, it: IntegerType, factor: int | None) -> None:
    x = coerce(np.concatenate([EDGES, RNG.standard_normal(37)]), ft)
    bits = np.zeros(len(x), storage_dtype(it))
    vec_f, vec_i = BufferType((Sym("n"),), ft), BufferType((Sym("n"),), it)
    f = make_func("k", [vec_f, vec_i, vec_f])
    a, b, c = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, loop.dim(a, axis=0), kind="vectorize" if factor else "serial", factor=factor) as i:
            v = loop.bitcast(loop.load(a, i), dtype=it)
            loop.store(v, b, i)
            loop.store(loop.bitcast(loop.add(v, loop.const(value=1, dtype=it)), dtype=ft), c, i)
    set_results(f, [])
    module = make_module([f])
    want = [x, bits.copy(), np.zeros_like(x)]
    loop_interp.run(module, want)
    got = [x, bits.copy(), np.zeros_like(x)]
    compile_module(module).run("k", *got)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2].view(storage_dtype(it)), want[2].view(storage_dtype(it)))


def test_llvm_decomposes_float_math_and_keeps_its_integer_division() -> None:
    assert LLVMEmitter.NATIVE == {"loop.div", "loop.rem", "loop.align_offset", "bf16"} | TRIGONOMETRY  # the C library's
    module = kernel("exp", f32, "serial")
    assert decompose(module, LLVMEmitter.NATIVE) == 1
    vec = BufferType((4,), i32)
    f = make_func("k", [vec])
    (a,) = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, 4) as i:
            loop.store(loop.div(loop.load(a, i), loop.load(a, i)), a, i)
    set_results(f, [])
    assert decompose(make_module([f]), LLVMEmitter.NATIVE) == 0
