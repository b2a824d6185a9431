"""The shape of a backend: a C emitter in about eighty lines on the KernelEmitter base (tables of ops and loop
kinds, the value environment, errors naming the op), fed by the shared math decompositions. The C it writes
is compiled by the host's C compiler when there is one and checked against the loop interpreter."""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from tensorium.backends import loop_interp
from tensorium.backends.emitter import KernelEmitter
from tensorium.backends.llvm import LLVMEmitter
from tensorium.errors import CompileError
from tensorium.ir import InsertionPoint, Operation, Value, func_body, make_func, make_module, set_results
from tensorium.ir.dialects import loop
from tensorium.ir.dialects.builtin import func_name
from tensorium.ir.shapes import normalize_axis
from tensorium.ir.types import BufferType, FloatType, ScalarType, Sym, bf16, f32, i32
from tensorium.lowering.decompose import BASIC, DECOMPOSABLE, decompose

C_TYPES = {"f32": "float", "f64": "double", "i1": "_Bool", "i32": "int32_t", "u32": "uint32_t", "index": "int64_t"}
C_TYPES |= {"i64": "int64_t", "bf16": "float"}  # bf16 values are exact after decompose: floats will do
BINARY = {"loop.add": "+", "loop.sub": "-", "loop.mul": "*", "loop.div": "/", "loop.rem": "%", "loop.and": "&"}
BINARY |= {"loop.or": "|"}
COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class CEmitter(KernelEmitter):
    """Loop IR to C: a value is the name of a C local; kernels are ``void kernel_<name>(T *buf, int64_t size...,
    ...)``, a buffer followed by one size per symbolic dimension."""

    NAME = "C"
    NATIVE: ClassVar[frozenset[str]] = frozenset()
    LOOP_KINDS: ClassVar[dict[str, str]] = dict.fromkeys(("serial", "unroll", "vectorize", "parallel"), "emit_loop")
    OPS: ClassVar[dict[str, str]] = {
        **KernelEmitter.OPS,
        **dict.fromkeys(BINARY, "emit_binary"),
        **{f"loop.{n}": "emit_call" for n in ("floor", "abs", "sqrt")},
        "loop.const": "emit_const",
        "loop.neg": "emit_neg",
        "loop.cmp": "emit_cmp",
        "loop.select": "emit_select",
        "loop.cast": "emit_cast",
        "loop.bitcast": "emit_bitcast",
        "loop.dim": "emit_dim",
        "loop.load": "emit_load",
        "loop.store": "emit_store",
        "loop.if": "emit_if",
    }

    def __init__(self) -> None:
        super().__init__()
        self.lines = ["#include <math.h>", "#include <stdint.h>", "#include <string.h>"]
        self.depth = self.count = 0

    def output(self) -> str:
        return "\n".join(self.lines) + "\n"

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def local(self, v: Value, expression: str) -> str:
        name, self.count = f"v{self.count}", self.count + 1
        self.line(f"{C_TYPES[str(v.type)]} {name} = {expression};")
        return name

    def emit_function(self, func: Operation) -> None:
        params = []
        for k, arg in enumerate(func_body(func).args):
            t = arg.type
            if isinstance(t, BufferType):
                sizes = [str(d) if isinstance(d, int) else f"a{k}_{d.name}" for d in t.shape]
                params += [f"{C_TYPES[str(t.element)]} *a{k}"] + [f"int64_t {s}" for s in sizes if not s.isdigit()]
                self.bind(arg, (f"a{k}", sizes))
            else:
                params.append(f"{C_TYPES[str(t)]} a{k}")
                self.bind(arg, f"a{k}")
        self.line(f"void kernel_{func_name(func)}({', '.join(params)}) {{")
        self.nested(func_body(func))
        self.line("}")

    def nested(self, block: Any, header: str | None = None) -> None:
        if header is not None:
            self.line(header + " {")
        self.depth += 1
        self.emit_block(block)
        self.depth -= 1
        if header is not None:
            self.line("}")

    def emit_loop(self, op: Operation) -> None:
        lower, upper, step = self.operands(op)
        body = op.regions[0].block
        i = self.local(body.args[0], lower)
        self.bind(body.args[0], i)
        self.nested(body, f"for (; {i} < {upper}; {i} += {step})")

    def emit_if(self, op: Operation) -> None:
        self.nested(op.regions[0].block, f"if ({self.value(op.operands[0])})")

    def emit_const(self, op: Operation) -> str:
        value, t = op.attr("value"), op.results[0].type
        if isinstance(t, FloatType):
            text = {math.inf: "INFINITY", -math.inf: "-INFINITY"}.get(
                value, "NAN" if math.isnan(value) else repr(value)
            )
            return self.local(op.results[0], text)
        return self.local(op.results[0], str(int(value)))

    def emit_binary(self, op: Operation) -> str:
        a, b = self.operands(op)
        if op.name == "loop.rem" and isinstance(op.results[0].type, FloatType):
            return self.local(op.results[0], f"fmodf({a}, {b})")
        return self.local(op.results[0], f"{a} {BINARY[op.name]} {b}")

    def emit_call(self, op: Operation) -> str:
        (a,) = self.operands(op)
        name = {"abs": "fabs"}.get(op.name[5:], op.name[5:])
        return self.local(op.results[0], f"{name}{'f' if op.results[0].type == f32 else ''}({a})")

    def emit_neg(self, op: Operation) -> str:
        return self.local(op.results[0], f"-{self.value(op.operands[0])}")

    def emit_cmp(self, op: Operation) -> str:
        a, b = self.operands(op)
        return self.local(op.results[0], f"{a} {COMPARE[op.attr('predicate')]} {b}")

    def emit_select(self, op: Operation) -> str:
        c, a, b = self.operands(op)
        return self.local(op.results[0], f"{c} ? {a} : {b}")

    def emit_cast(self, op: Operation) -> str:
        return self.local(op.results[0], f"({C_TYPES[str(op.attr('dtype'))]}){self.value(op.operands[0])}")

    def emit_bitcast(self, op: Operation) -> str:
        out = self.local(op.results[0], "0")
        self.line(f"memcpy(&{out}, &{self.value(op.operands[0])}, sizeof {out});")
        return out

    def emit_dim(self, op: Operation) -> str:
        _, sizes = self.value(op.operands[0])
        return str(sizes[normalize_axis(op.attr("axis"), len(sizes))])

    def address(self, buffer: Value, indices: tuple[Value, ...]) -> str:
        pointer, sizes = self.value(buffer)
        offset = self.value(indices[0]) if indices else "0"
        for size, index in zip(sizes[1:], indices[1:]):
            offset = f"({offset}) * {size} + {self.value(index)}"
        return f"{pointer}[{offset}]"

    def emit_load(self, op: Operation) -> str:
        return self.local(op.results[0], self.address(op.operands[0], op.operands[1:]))

    def emit_store(self, op: Operation) -> None:
        self.line(f"{self.address(op.operands[1], op.operands[2:])} = {self.value(op.operands[0])};")


# ---------------------------------------------------------------------------------------------------------


def elementwise(name: str, t: ScalarType = f32, kind: str = "parallel", **attrs: Any) -> Operation:
    """A kernel ``y[i] = <loop.name>(x[i])`` (binary ops take ``x[i]`` and ``z[i]``) over [n] buffers."""
    vec = BufferType((Sym("n"),), t)
    binary = name in ("div", "rem")
    f = make_func(name, [vec, vec, vec] if binary else [vec, vec])
    x, *rest = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, loop.dim(x, axis=0), kind=kind, **attrs) as i:
            operands = [loop.load(x, i)] + ([loop.load(rest[0], i)] if binary else [])
            loop.store(getattr(loop, name)(*operands), rest[-1], i)
    set_results(f, [])
    return make_module([f])


def gelu_kernel() -> Operation:
    """``y = x / 2 (1 + erf(x / sqrt 2))`` over a 2-d buffer, the inner loop vectorized: what the lowering
    builds for graph.gelu."""
    mat = BufferType((Sym("n"), 8), f32)
    f = make_func("gelu", [mat, mat])
    x, y = func_body(f).args
    with InsertionPoint(func_body(f)):
        half, scale, one = (loop.const(value=v, dtype=f32) for v in (0.5, 1 / math.sqrt(2), 1.0))
        with loop.for_(0, loop.dim(x, axis=0), kind="parallel") as i, loop.for_(0, 8, kind="vectorize") as j:
            v = loop.load(x, i, j)
            loop.store(loop.mul(loop.mul(half, v), loop.add(one, loop.erf(loop.mul(v, scale)))), y, i, j)
    set_results(f, [])
    return make_module([f])


def compile_c(source: str, tmp_path: Path) -> ctypes.CDLL:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler on this machine")
    (tmp_path / "k.c").write_text(source)
    command = [
        compiler,
        "-O1",
        "-fwrapv",
        "-shared",
        "-fPIC",
        "-o",
        str(tmp_path / "k.so"),
        str(tmp_path / "k.c"),
        "-lm",
    ]
    subprocess.run(command, check=True)
    return ctypes.CDLL(str(tmp_path / "k.so"))


def run_c(library: ctypes.CDLL, name: str, *arrays: np.ndarray) -> None:
    """Call kernel ``name`` with the arrays (one symbolic size each, as the emitter declares them)."""
    args: list[Any] = []
    for a in arrays:
        args += [a.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(a.shape[0])]
    getattr(library, f"kernel_{name}")(*args)


EDGES = np.array([0.0, -0.0, 1e-30, -1e-30, 1e-40, 0.5, 1.0, -1.0, 3.5, -9.0, 88.5, -104.0, 3e38, math.inf, -math.inf])
EDGES = np.concatenate([EDGES, [math.nan], np.random.default_rng(0).uniform(-12, 12, 300)]).astype(np.float32)


def test_decomposed_kernel_as_c_text() -> None:
    module = gelu_kernel()
    assert decompose(module, CEmitter.NATIVE) == 1
    text = CEmitter().emit_module(module)
    assert "void kernel_gelu(float *a0, int64_t a0_n, float *a1, int64_t a1_n) {" in text
    assert "erf" not in text and "memcpy" not in text  # erf is a rational function: no bits needed
    assert text.count("for (") == 2


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "erf"])
def test_c_backend_computes_decomposed_math_as_the_interpreter(name: str, tmp_path: Path) -> None:
    module = elementwise(name)
    want = [EDGES, np.zeros_like(EDGES)]
    loop_interp.run(module, want)
    decompose(module, CEmitter.NATIVE)
    library = compile_c(CEmitter().emit_module(module), tmp_path)
    got = [EDGES, np.zeros_like(EDGES)]
    run_c(library, name, *got)
    tiny = np.abs(want[1]) < np.finfo(np.float32).tiny  # exp flushes denormal results to 0
    np.testing.assert_allclose(got[1][~tiny], want[1][~tiny], rtol=2e-6, atol=5e-7)
    assert np.all(np.abs(got[1][tiny]) <= np.finfo(np.float32).tiny)


@pytest.mark.parametrize("name", ["div", "rem"])
def test_c_backend_divides_integers_as_the_interpreter(name: str, tmp_path: Path) -> None:
    values = [0, 1, -1, 2, -2, 7, -7, 2**31 - 1, -(2**31)]
    a, b = (np.array(v, np.int32) for v in zip(*[(p, q) for p in values for q in values]))
    module = elementwise(name, i32)
    want = [a, b, np.zeros_like(a)]
    loop_interp.run(module, want)
    decompose(module, CEmitter.NATIVE)  # C's / traps on 0 and INT_MIN / -1
    got = [a, b, np.zeros_like(a)]
    run_c(compile_c(CEmitter().emit_module(module), tmp_path), name, *got)
    np.testing.assert_array_equal(got[2], want[2])


def test_c_backend_holds_bf16_in_floats_once_decomposed(tmp_path: Path) -> None:
    vec = BufferType((Sym("n"),), bf16)
    f = make_func("mix", [vec, vec, vec])
    a, b, c = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, loop.dim(a, axis=0)) as i:
            x, y = loop.load(a, i), loop.load(b, i)
            loop.store(loop.add(loop.mul(x, y), loop.div(x, y)), c, i)
    set_results(f, [])
    module = make_module([f])
    x, y = (np.random.default_rng(k).standard_normal(400).astype(np.float32) for k in (1, 2))
    want = [x, y, np.zeros_like(x)]
    loop_interp.run(module, want)
    decompose(module, CEmitter.NATIVE)
    got = [x, y, np.zeros_like(x)]
    run_c(compile_c(CEmitter().emit_module(module), tmp_path), "mix", *got)
    np.testing.assert_array_equal(got[2], want[2])


def test_an_op_without_a_method_names_the_op_and_the_backend() -> None:
    with pytest.raises(CompileError, match=r"^'loop.erf' is not supported by the C backend$"):
        CEmitter().emit_module(elementwise("erf"))  # not decomposed first


def test_a_loop_kind_without_a_method_names_the_kinds_the_backend_runs() -> None:
    with pytest.raises(CompileError, match=r'^\'loop.for\' of kind "gpu_block" is not supported by the C backend, '):
        CEmitter().emit_module(elementwise("exp", kind="gpu_block", axis=0))


def test_the_tables_name_existing_methods_and_decompositions_use_basic_ops() -> None:
    for cls in (CEmitter, LLVMEmitter):
        for method in [*cls.OPS.values(), *cls.LOOP_KINDS.values()]:
            assert callable(getattr(cls, method)), (cls.__name__, method)
        assert cls.NATIVE <= DECOMPOSABLE
    assert BASIC - {"loop.sqrt"} <= set(CEmitter.OPS)
