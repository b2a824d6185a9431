"""Less code for LLVM to compile, the same results: integer constants folded while emitting (checked against
LLVM's own arithmetic), vector loops with constant bounds without their empty loops, booleans loaded and stored
as vectors, and kernels with the same loop IR compiled once per module (their checks still name their own ops,
and artifacts keep them)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from llvmlite import binding as llvm
from llvmlite import ir

import tensorium as tm
from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.llvm import compile_module, host_target_machine
from tensorium.backends.llvm.folding import FoldingBuilder, int_constant
from tensorium.backends.llvm.sharing import structural_key
from tensorium.errors import InterpreterError
from tensorium.ir.dialects.builtin import functions

# --- constant folding against LLVM ---------------------------------------------------------------------------
BINARY = ("add", "sub", "mul", "and_", "or_", "xor", "sdiv", "srem", "udiv", "urem")
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
EDGES = {
    1: [0, 1],
    8: [0, 1, -1, 2, 7, -8, 127, -128, 100],
    64: [0, 1, -1, 3, -7, 2**63 - 1, -(2**63), 12345678901],
}


def _cases() -> list[tuple[str, int, int, int]]:
    """(operation, width, a, b) for every edge pair: binary ops, signed and unsigned comparisons."""
    ops = [*BINARY, *(f"icmp_signed {c}" for c in COMPARISONS), *(f"icmp_unsigned {c}" for c in COMPARISONS)]
    return [(op, width, a, b) for width, values in EDGES.items() for op in ops for a in values for b in values]


def _apply(builder: ir.IRBuilder, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
    if op.startswith("icmp"):
        method, predicate = op.split()
        return getattr(builder, method)(predicate, a, b)  # type: ignore[no-any-return]
    return getattr(builder, op)(a, b)  # type: ignore[no-any-return]


def _undefined(op: str, width: int, a: int, b: int) -> bool:
    """LLVM leaves division by zero and the signed MIN / -1 undefined; the builder must not fold them."""
    if op not in ("sdiv", "srem", "udiv", "urem"):
        return False
    signed_a, signed_b = _signed(a, width), _signed(b, width)
    return signed_b == 0 or (op in ("sdiv", "srem") and signed_b == -1 and signed_a == -(1 << (width - 1)))


def _signed(value: int, width: int) -> int:
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def _jit_cases(cases: list[tuple[str, int, int, int]]) -> Callable[[int], int]:
    """One LLVM function per case computing it at run time on i64 arguments truncated to the width (no constants for
    LLVM to fold), the result sign-extended to i64; returns ``run(case_index)``."""
    module = ir.Module(name="folding_reference")
    i64 = ir.IntType(64)
    for n, (op, width, _, _) in enumerate(cases):
        fn = ir.Function(module, ir.FunctionType(i64, [i64, i64]), name=f"case{n}")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        t = ir.IntType(width)
        x, y = (b.trunc(arg, t) if width < 64 else arg for arg in fn.args)
        result = _apply(b, op, x, y)
        b.ret(b.sext(result, i64) if result.type.width < 64 else result)
    machine = host_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), machine)
    engine.finalize_object()
    prototype = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
    functions_ = [prototype(engine.get_function_address(f"case{n}")) for n in range(len(cases))]

    def run(n: int) -> int:
        _, _, a, b = cases[n]
        return int(functions_[n](a, b))

    run.engine = engine  # type: ignore[attr-defined]  # keeps the code alive
    return run


def test_folded_integer_arithmetic_equals_what_llvm_computes() -> None:
    cases = [c for c in _cases() if not _undefined(*c)]
    reference = _jit_cases(cases)
    module = ir.Module(name="folding")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), name="f")
    builder = FoldingBuilder(fn.append_basic_block("entry"))
    wrong = []
    for n, (op, width, a, b) in enumerate(cases):
        t = ir.IntType(width)
        folded = _apply(builder, op, ir.Constant(t, a), ir.Constant(t, b))
        value = int_constant(folded)
        assert value is not None, (op, width, a, b)
        if value != reference(n):
            wrong.append((op, width, a, b, value, reference(n)))
    assert not wrong, wrong[:10]
    assert not builder.block.instructions  # everything folded


@pytest.mark.parametrize(("width", "a"), [(8, 5), (8, -3), (1, 1), (64, -(2**63))])
def test_folded_casts_equal_llvm_semantics(width: int, a: int) -> None:
    builder = FoldingBuilder(
        ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), name="f").append_basic_block("entry")
    )
    c = ir.Constant(ir.IntType(width), a)
    wide = ir.IntType(128)
    assert int_constant(builder.sext(c, wide)) == _signed(a, width)
    assert int_constant(builder.zext(c, wide)) == a % (1 << width)
    assert int_constant(builder.trunc(ir.Constant(ir.IntType(64), 0x1FF), ir.IntType(8))) == -1


def test_division_by_zero_and_overflow_stay_instructions() -> None:
    block = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), name="f").append_basic_block("entry")
    builder = FoldingBuilder(block)
    i8 = ir.IntType(8)
    for op, a, b in [("sdiv", 5, 0), ("urem", 5, 0), ("srem", -128, -1), ("sdiv", -128, -1)]:
        assert int_constant(getattr(builder, op)(ir.Constant(i8, a), ir.Constant(i8, b))) is None
    assert len(block.instructions) == 4


def test_identities_return_the_operand_and_selects_pick_a_side() -> None:
    fn = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), [ir.IntType(64), ir.IntType(64)]), name="f")
    builder = FoldingBuilder(fn.append_basic_block("entry"))
    x, y = fn.args
    i64, i1 = ir.IntType(64), ir.IntType(1)
    assert builder.add(x, i64(0)) is x and builder.add(i64(0), x) is x and builder.sub(x, i64(0)) is x
    assert builder.mul(x, i64(1)) is x and builder.mul(i64(1), x) is x
    assert builder.and_(x, i64(-1)) is x and builder.or_(x, i64(0)) is x
    assert builder.select(i1(1), x, y) is x and builder.select(i1(0), x, y) is y
    assert not builder.block.instructions
    assert builder.add(x, y) is not x and len(builder.block.instructions) == 1


# --- vector loops -------------------------------------------------------------------------------------------
VECTOR_LOOP = """module {{
  func.func @k(%a: buffer<{n}xf32, global>, %m: buffer<{n}xi1, global>, %b: buffer<{n}xf32, global>,
               %o: buffer<{n}xi1, global>) {{
    %c0 = loop.const {{value = 0, dtype = index}} : () -> index
    %c1 = loop.const {{value = 1, dtype = index}} : () -> index
    %zero = loop.const {{value = 0.0, dtype = f32}} : () -> f32
    %n = loop.dim %a {{axis = 0}} : (buffer<{n}xf32, global>) -> index
    loop.for %c0, %n, %c1 (
      {{
      ^bb0(%i: index):
        %x = loop.load %a, %i : (buffer<{n}xf32, global>, index) -> f32
        %keep = loop.load %m, %i : (buffer<{n}xi1, global>, index) -> i1
        %y = loop.select %keep, %x, %zero : (i1, f32, f32) -> f32
        %pos = loop.cmp %y, %zero {{predicate = "gt"}} : (f32, f32) -> i1
        loop.store %y, %b, %i : (f32, buffer<{n}xf32, global>, index) -> ()
        loop.store %pos, %o, %i : (i1, buffer<{n}xi1, global>, index) -> ()
        loop.yield : () -> ()
      }}
    ) {{kind = "vectorize", factor = 8}} : (index, index, index) -> ()
    func.return
  }}
}}"""


def _run_vector_loop(shape: str, size: int) -> tuple[Any, list[np.ndarray]]:
    kernels = compile_module(tm.parse_module(VECTOR_LOOP.format(n=shape)), kernel_cache=False)
    rng = np.random.default_rng(size)
    a = rng.standard_normal(size).astype(np.float32)
    m = rng.random(size) < 0.5
    b, o = np.full(size, np.nan, np.float32), np.ones(size, bool)
    kernels.run("k", a, m, b, o)
    np.testing.assert_array_equal(b, np.where(m, a, 0).astype(np.float32))
    np.testing.assert_array_equal(o, np.where(m, a, 0) > 0)
    return kernels, [b, o]


@pytest.mark.parametrize("size", [0, 1, 7, 8, 21])
def test_booleans_load_and_store_as_vectors(size: int) -> None:
    kernels, _ = _run_vector_loop("[n]", size)
    assert "load <8 x i8>" in kernels.llvm_ir and "store <8 x i8>" in kernels.llvm_ir


@pytest.mark.parametrize(("size", "loops"), [(8, 0), (11, 1), (5, 1)])
def test_a_constant_vector_loop_emits_only_the_loops_it_runs(size: int, loops: int) -> None:
    kernels, _ = _run_vector_loop(str(size), size)
    assert "\nvloop" not in kernels.llvm_ir  # one vector of iterations is straight-line code
    assert kernels.llvm_ir.count("\nloop") == loops  # the scalar remainder only where iterations remain


# --- shared kernels -----------------------------------------------------------------------------------------
STEPPED = """  func.func @{name}(%a: buffer<[n]xf32, global>, %b: buffer<[n]xf32, global>, %step: index) {{
    %c0 = loop.const {{value = 0, dtype = index}} : () -> index
    %n = loop.dim %a {{axis = 0}} : (buffer<[n]xf32, global>) -> index
    loop.for %c0, %n, %step (
      {{
      ^bb0(%i: index):
        %x = loop.load %a, %i : (buffer<[n]xf32, global>, index) -> f32
        %y = loop.mul %x, %x : (f32, f32) -> f32
        loop.store %y, %b, %i : (f32, buffer<[n]xf32, global>, index) -> ()
        loop.yield : () -> ()
      }}
    ) : (index, index, index) -> ()
    func.return
  }}"""


def _stepped_module() -> Any:
    text = "module {\n" + "\n".join(STEPPED.format(name=n) for n in ("first", "second", "third")) + "\n}"
    return tm.parse_module(text, "stepped.mlir")


def test_kernels_with_the_same_loop_ir_share_one_compiled_function() -> None:
    module = _stepped_module()
    keys = {structural_key(f) for f in functions(module)}
    assert len(keys) == 1
    kernels = compile_module(module, kernel_cache=False)
    assert kernels.stats is not None and (kernels.stats.kernels, kernels.stats.shared) == (3, 2)
    assert kernels.llvm_ir.count("define i32") == 1
    a = np.arange(6, dtype=np.float32)
    for name in ("first", "second", "third"):
        b = np.zeros(6, np.float32)
        kernels.run(name, a, b, 1)
        np.testing.assert_array_equal(b, a * a)


def test_a_shared_kernel_reports_its_own_failed_check() -> None:
    kernels = compile_module(_stepped_module(), kernel_cache=False)
    a, b = np.ones(4, np.float32), np.zeros(4, np.float32)
    lines = {}
    for name in ("first", "second", "third"):
        with pytest.raises(InterpreterError, match="step must be positive") as caught:
            kernels.run(name, a, b, 0)
        lines[name] = str(caught.value).split(":")[1]
    assert len(set(lines.values())) == 3  # each names the loop of its own kernel (another line of the file)


def test_shared_kernels_survive_an_artifact_round_trip(tmp_path: Any) -> None:
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    module = tm.trace(lambda x, w: tm.nn.relu(tm.nn.relu(x @ w) @ w), x, w).module
    exe = CpuExecutable.build(module)
    assert exe.kernels.stats is not None and exe.kernels.stats.shared == 2  # the second matmul and relu
    want = interp.run(module, [x, w])
    loaded = CpuExecutable.from_files(exe.to_files(tmp_path / "cpu"))
    for got in (exe.run([x, w]), loaded.run([x, w])):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def test_a_parallel_loop_body_is_compiled_once_not_inlined_into_its_direct_call() -> None:
    """The outlined body of a parallel loop is called directly (one thread) and through the pool; it is marked
    noinline, so LLVM does not optimize and compile a second, inlined copy of it."""
    serial = ") : (index, index, index) -> ()"
    parallel = STEPPED.format(name="squares").replace(serial, ') {kind = "parallel"}' + serial[1:])
    kernels = compile_module(tm.parse_module("module {\n" + parallel + "\n}", "parallel.mlir"), kernel_cache=False)
    (body,) = [line for line in kernels.llvm_ir.splitlines() if line.startswith("define") and ".parallel" in line]
    assert "noinline" in body
    parts = kernels.optimized_ir.split("\ndefine ")[1:]
    definitions = {part.split("(", 1)[0].split("@")[-1].strip('"'): part for part in parts}
    outer, inner = definitions["tensorium.kernel.squares"], definitions["tensorium.kernel.squares.parallel"]
    assert "call i32 @" in outer and "squares.parallel(" in outer  # called directly, not inlined
    assert "fmul" in inner and "fmul" not in outer
    a, b = np.arange(5, dtype=np.float32), np.zeros(5, np.float32)
    kernels.run("squares", a, b, 1)
    np.testing.assert_array_equal(b, a * a)
