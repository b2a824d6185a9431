"""Whole kernels compiled through LLVM and run on numpy arrays, against the loop interpreter: the
example kernels, parallel loops on 1 and 2 threads, symbolic sizes, allocations, packed loads, loop
hints, the thread pool, and the diagnostics for what the CPU backend rejects or a caller gets wrong."""

from __future__ import annotations

import ctypes
import re
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium import nn
from tensorium.backends import loop_interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.llvm import CompiledKernels, CompileError, compile_module, runtime, thread_count
from tensorium.backends.llvm.objects import unpack_objects
from tensorium.backends.llvm.runtime import BODY, PARALLEL_FOR_TYPE, POOL
from tensorium.errors import InterpreterError
from tensorium.ir import InsertionPoint, Operation, func_body, make_func, make_module, set_results
from tensorium.ir.dialects import loop
from tensorium.ir.types import (
    BufferType,
    IntegerType,
    Sym,
    TensorType,
    f32,
    i32,
    index,
    u8,
)
from tensorium.lowering.codegen import lower_and_schedule
from tensorium.targets import host_target

KERNELS = Path(__file__).resolve().parents[1] / "loop" / "kernels"
RNG = np.random.default_rng(3)
N = Sym("n")


def parse_kernel(name: str) -> Operation:
    return tm.parse_module((KERNELS / f"{name}.mlir").read_text(), filename=f"{name}.mlir")


def interpreted(module: Operation, name: str, args: list[Any]) -> list[np.ndarray]:
    """``args`` after the interpreter ran kernel ``name`` on copies of them."""
    copies = [a.copy() for a in args]
    loop_interp.run(module, copies, func=name)
    return copies


def compiled_run(kernels: CompiledKernels, name: str, args: list[Any], threads: int = 2) -> list[np.ndarray]:
    copies = [a.copy() for a in args]
    kernels.run(name, *copies, num_threads=threads)
    return copies


def assert_same(got: list[np.ndarray], want: list[np.ndarray], rtol: float = 1e-6) -> None:
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("n", [0, 1, 37])
def test_elementwise_add(n: int) -> None:
    module = parse_kernel("elementwise_add")
    kernels = compile_module(module)
    args = [RNG.standard_normal(n).astype(np.float32) for _ in range(2)] + [np.zeros(n, np.float32)]
    for threads in (1, 2):
        got = compiled_run(kernels, "add", args, threads)
        np.testing.assert_array_equal(got[2], args[0] + args[1])


@pytest.fixture(scope="module")
def examples() -> dict[str, tuple[Operation, CompiledKernels]]:
    modules = {name: parse_kernel(name) for name in ("reduce_mean", "matvec_int4")}
    return {name: (m, compile_module(m)) for name, m in modules.items()}


@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (33, 130), (3, 0)])
def test_reduce_mean(examples: dict[str, tuple[Operation, CompiledKernels]], shape: tuple[int, int]) -> None:
    module, kernels = examples["reduce_mean"]
    args = [RNG.standard_normal(shape).astype(np.float32), np.zeros(shape[0], np.float32)]
    want = interpreted(module, "row_mean", args)
    for threads in (1, 2):
        got = compiled_run(kernels, "row_mean", args, threads)
        assert_same(got, want)
    if shape[1]:
        np.testing.assert_allclose(got[1], args[0].mean(axis=1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rows", [1, 6, 41])
def test_matvec_int4(examples: dict[str, tuple[Operation, CompiledKernels]], rows: int) -> None:
    module, kernels = examples["matvec_int4"]
    q = RNG.integers(-8, 8, (rows, 8))
    args = [
        loop.pack_bits(q, 4, u8),
        RNG.random(rows).astype(np.float32),
        RNG.standard_normal(8).astype(np.float32),
        np.zeros(rows, np.float32),
    ]
    want = interpreted(module, "matvec_int4", args)
    for threads in (1, 2):
        assert_same(compiled_run(kernels, "matvec_int4", args, threads), want)
    np.testing.assert_allclose(want[3], (q @ args[2]) * args[1], rtol=1e-5, atol=1e-5)


def test_gpu_loops_are_rejected_with_their_location() -> None:
    text = (KERNELS / "matmul_shared.mlir").read_text()
    line = next(i for i, s in enumerate(text.splitlines(), 1) if s.lstrip().startswith("loop.for"))
    with pytest.raises(CompileError, match=rf'^matmul_shared.mlir:{line}:5: \'loop.for\' of kind "gpu_block" needs'):
        compile_module(parse_kernel("matmul_shared"))


BARRIER = """module {
  func.func @sync(%x: buffer<4xf32, global>) {
    %c0 = loop.const {value = 0, dtype = index} : () -> index
    %c1 = loop.const {value = 1, dtype = index} : () -> index
    %c4 = loop.const {value = 4, dtype = index} : () -> index
    loop.for %c0, %c4, %c1 (
      {
      ^bb0(%t: index):
        loop.barrier : () -> ()
        loop.yield : () -> ()
      }
    ) {kind = "gpu_thread", axis = 0} : (index, index, index) -> ()
    func.return
  }
}
"""


def test_barrier_and_gpu_thread_loops_are_rejected() -> None:
    module = tm.parse_module(BARRIER)
    with pytest.raises(CompileError, match=r"^<input>:6:5: 'loop.for' of kind \"gpu_thread\" needs a GPU target"):
        compile_module(module)
    barrier = next(op for op in module.walk() if op.name == "loop.barrier")
    emitter = tm.backends.llvm.LLVMEmitter()
    with pytest.raises(CompileError, match=r"^<input>:9:9: 'loop.barrier' needs a GPU target; the CPU backend has no"):
        emitter.emit_barrier(barrier)


STEP = (Path(__file__).parent / "strided_store.mlir").read_text()  # every `step`-th element of x set to 1


def test_scalar_step_and_run_time_check() -> None:
    kernels = compile_module(tm.parse_module(STEP))
    x = np.zeros(10, np.float32)
    kernels.run("strided", x, 3, num_threads=2)
    np.testing.assert_array_equal(x, [1, 0, 0, 1, 0, 0, 1, 0, 0, 1])
    with pytest.raises(InterpreterError, match=r"^<input>:6:5: 'loop.for' step must be positive$"):
        kernels.run("strided", x, 0)


def vec() -> BufferType:
    return BufferType((N,), f32)


def build_custom() -> Operation:
    """Kernels exercising scalars, symbolic dims, nested parallel loops, allocations, hints and loop.if."""
    funcs = []
    mat = BufferType((Sym(), N), f32)

    # y[i, j] = alpha * x[i, j] + k (k an i32 scalar): parallel rows, vectorized columns.
    f = make_func("axpb", [mat, mat, f32, i32], arg_names=["x", "y", "alpha", "k"])
    x, y, alpha, k = func_body(f).args
    with InsertionPoint(func_body(f)):
        kf = loop.cast(k, dtype=f32)
        with loop.for_(0, loop.dim(x, axis=0), kind="parallel") as i:
            with loop.for_(0, loop.dim(x, axis=1), kind="vectorize", factor=8) as j:
                loop.store(loop.fma(loop.load(x, i, j), alpha, kf), y, i, j)
    funcs.append(f)

    # Prefix sums of each row through a malloc'ed scratch row; an outer serial loop around the parallel one.
    f = make_func("prefix", [mat, mat], arg_names=["x", "y"])
    x, y = func_body(f).args
    with InsertionPoint(func_body(f)):
        n = loop.dim(x, axis=1)
        with loop.for_(0, 2):
            with loop.for_(0, loop.dim(x, axis=0), kind="parallel") as i:
                scratch = loop.alloc(n, type=BufferType((N,), f32, "local"))
                acc = loop.alloc(type=BufferType((), f32, "local"))
                loop.store(loop.const(value=0.0, dtype=f32), acc)
                with loop.for_(0, n, kind="unroll") as j:
                    total = loop.add(loop.load(acc), loop.load(x, i, j))
                    loop.store(total, acc)
                    loop.store(total, scratch, j)
                with loop.for_(0, n, kind="unroll", factor=3) as j:
                    loop.store(loop.load(scratch, j), y, i, j)
    funcs.append(f)

    # A 64 KiB+ static buffer (malloc'ed), nested parallel loops (the inner runs serially), loop.if tails.
    big = BufferType((20000,), f32, "global")
    f = make_func("tiles", [vec(), vec(), index], arg_names=["x", "y", "tile"])
    x, y, tile = func_body(f).args
    with InsertionPoint(func_body(f)):
        n = loop.dim(x, axis=0)
        tmp = loop.alloc(type=big)
        with loop.for_(0, n, tile, kind="parallel") as start:
            with loop.for_(0, tile, kind="parallel") as offset:
                at = loop.add(start, offset)
                with loop.if_(loop.cmp(at, n, predicate="lt")):
                    slot = loop.rem(at, loop.const(value=20000, dtype=index))
                    loop.store(loop.mul(loop.load(x, at), loop.load(x, at)), tmp, slot)
                    loop.store(loop.load(tmp, slot), y, at)
    funcs.append(f)

    # Rank-0 buffers: out = sum(x) as i32 after a saturating cast.
    f = make_func("total", [vec(), BufferType((), i32)], arg_names=["x", "out"])
    x, out = func_body(f).args
    with InsertionPoint(func_body(f)):
        acc = loop.alloc(type=BufferType((), f32, "local"))
        loop.store(loop.const(value=0.0, dtype=f32), acc)
        with loop.for_(0, loop.dim(x, axis=0)) as i:
            loop.store(loop.add(loop.load(acc), loop.load(x, i)), acc)
        loop.store(loop.cast(loop.load(acc), dtype=i32), out)
    funcs.append(f)

    for word, bits, signed in PACKED:
        packed = BufferType((Sym("r"), Sym("w")), word)
        f = make_func(packed_name(word, bits, signed), [packed, BufferType((Sym("r"), Sym("e")), i32)])
        w, out = func_body(f).args
        with InsertionPoint(func_body(f)):
            with loop.for_(0, loop.dim(out, axis=0), kind="parallel") as r:
                with loop.for_(0, loop.dim(out, axis=1)) as e:
                    loop.store(loop.load_packed(w, r, e, bits=bits, signed=signed), out, r, e)
        funcs.append(f)
    for f in funcs:
        set_results(f, [])
    return make_module(funcs)


U16, U32, I8 = IntegerType(16, False), IntegerType(32, False), IntegerType(8)
PACKED = [(u8, 4, True), (u8, 3, False), (I8, 2, True), (U16, 5, True), (U32, 1, False), (U32, 8, True)]


def packed_name(word: IntegerType, bits: int, signed: bool) -> str:
    return f"unpack_{word}_{bits}{'s' if signed else 'u'}"


@pytest.fixture(scope="module")
def custom() -> tuple[Operation, CompiledKernels]:
    module = build_custom()
    return module, compile_module(module)


def check_custom(custom: tuple[Operation, CompiledKernels], name: str, args: list[Any]) -> list[np.ndarray]:
    module, kernels = custom
    want = interpreted(module, name, args)
    for threads in (1, 2):
        assert_same(compiled_run(kernels, name, args, threads), want)
    return want


@pytest.mark.parametrize("shape", [(3, 17), (1, 1), (0, 4), (4, 0)])
def test_scalars_and_anonymous_dims(custom: tuple[Operation, CompiledKernels], shape: tuple[int, int]) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    _, y, *_ = check_custom(custom, "axpb", [x, np.zeros(shape, np.float32), np.float32(1.5), np.int32(-2)])
    np.testing.assert_allclose(y, 1.5 * x - 2, rtol=1e-6)


@pytest.mark.parametrize("shape", [(5, 9), (1, 0), (2, 1)])
def test_allocations_in_parallel_loops(custom: tuple[Operation, CompiledKernels], shape: tuple[int, int]) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    _, y = check_custom(custom, "prefix", [x, np.zeros(shape, np.float32)])
    np.testing.assert_allclose(y, np.cumsum(x, axis=1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("n", "tile"), [(10, 4), (1, 3), (0, 2), (16, 16)])
def test_if_tails_big_buffers_and_nested_parallel(custom: tuple[Operation, CompiledKernels], n: int, tile: int) -> None:
    x = RNG.standard_normal(n).astype(np.float32)
    _, y, _ = check_custom(custom, "tiles", [x, np.zeros(n, np.float32), np.int64(tile)])
    np.testing.assert_array_equal(y, x * x)


def test_rank0_buffers(custom: tuple[Operation, CompiledKernels]) -> None:
    x = np.array([1.5, 2.25, 4e9, 4e9], np.float32)
    _, out = check_custom(custom, "total", [x, np.zeros((), np.int32)])
    # The f32 sum is 8e9 (3.75 is lost); the cast saturates to i64 and wraps to i32.
    assert out.shape == () and out == 8_000_000_000 % 2**32 - 2**32


@pytest.mark.parametrize(("word", "bits", "signed"), PACKED, ids=lambda p: str(p))
def test_load_packed(custom: tuple[Operation, CompiledKernels], word: IntegerType, bits: int, signed: bool) -> None:
    low, high = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
    values = RNG.integers(low, high, (3, 11))
    packed = loop.pack_bits(values, bits, word)
    per_word = word.width // bits
    _, out = check_custom(
        custom, packed_name(word, bits, signed), [packed, np.zeros((3, packed.shape[1] * per_word), np.int32)]
    )
    np.testing.assert_array_equal(out[:, :11], values)


def test_loop_hints_and_object_code(custom: tuple[Operation, CompiledKernels]) -> None:
    _, kernels = custom
    assert "<8 x float>" in kernels.llvm_ir  # the vectorize loop (factor 8) is emitted on 8-lane vectors
    # forcing prints warnings when LLVM cannot; the scalar remainder of a vector loop is kept from vectorizing
    assert '"llvm.loop.vectorize.enable", i1 1' not in kernels.llvm_ir
    assert '"llvm.loop.vectorize.enable", i1 0' in kernels.llvm_ir and '"llvm.loop.unroll.disable"' in kernels.llvm_ir
    assert '!"llvm.loop.unroll.full"' in kernels.llvm_ir and '!"llvm.loop.unroll.count", i32 3' in kernels.llvm_ir
    assert "x float>" in kernels.optimized_ir
    assert kernels.names[:4] == ["axpb", "prefix", "tiles", "total"]
    objects = unpack_objects(kernels.object_code)
    # compiled afresh, each kernel is an object of its own (made on the LLVM threads), bundled as an ar archive
    assert len(objects) == 1 or kernels.object_code.startswith(b"!<arch>\n")
    if sys.platform.startswith("linux"):
        assert all(code[:4] == b"\x7fELF" for code in objects)


def _openmp_parallel_for() -> Any:
    address = runtime._openmp_address()
    if address is None:
        pytest.skip("libgomp (the GNU OpenMP runtime) is not installed here")
    return PARALLEL_FOR_TYPE(address)


def _pool_parallel_for() -> Any:
    address = runtime._pool_address()
    if address is None:
        pytest.skip("Tensorium's pool runs on x86-64 Linux only")
    return PARALLEL_FOR_TYPE(address)


@pytest.mark.parametrize("implementation", ["python", "openmp", "pool"])
def test_parallel_for_covers_the_iterations_once_and_reports_a_failed_chunk(implementation: str) -> None:
    """The Python pool splits into one chunk per thread; the OpenMP one into CHUNKS_PER_THREAD per thread,
    claimed as threads get free; Tensorium's pool into guided claims (half of what is left per thread, at
    least one iteration). Either way the chunks tile [0, trips) and a nonzero status comes back."""
    parallel_for = {
        "python": lambda: POOL.parallel_for,
        "openmp": _openmp_parallel_for,
        "pool": _pool_parallel_for,
    }[implementation]()
    calls: list[tuple[int, int, int]] = []
    lock = threading.Lock()

    def body(ctx: int, start: int, end: int) -> int:
        with lock:
            calls.append((start, end, threading.get_ident()))
        return 7 if start <= 5 < end else 0

    callback = BODY(body)
    address = ctypes.cast(callback, ctypes.c_void_p).value
    assert address is not None
    for threads, trips in [(2, 10), (4, 3), (3, 0), (2, 1000), (1, 7)]:
        calls.clear()
        status = parallel_for(threads, address, 0, trips)
        assert status == (7 if trips > 5 else 0)
        chunks = sorted(c[:2] for c in calls)
        covered = [i for start, end in chunks for i in range(start, end)]
        if trips:
            assert covered == list(range(trips)) or (implementation == "openmp" and status == 7)
        if implementation == "python" and trips:
            assert len(chunks) == min(threads, trips)
        if implementation == "python" and threads == 2:
            assert len({c[2] for c in calls}) == 2  # the caller runs one chunk, a pool thread the other
        if implementation == "pool" and threads == 1:
            assert chunks == [(0, trips)]  # one thread asked for: the caller runs the loop in one call
        if implementation == "pool" and trips == 1000:
            assert max(end - start for start, end in chunks) <= 250  # the first claim: 1000 / (2 x 2)
            assert min(end - start for start, end in chunks) == 1  # the last claims are single iterations
    if implementation == "openmp":
        calls.clear()
        assert parallel_for(2, address, 0, 16) == 7
        assert {end - start for start, end, _ in calls} <= {2}  # 16 trips / (2 threads x 4 chunks)


def test_the_pool_finishes_without_a_worker_and_honours_the_thread_count() -> None:
    """The caller claims iterations too, so a loop ends even when no worker gets to run (here every worker
    is held inside an earlier chunk); a loop asking for 2 threads takes at most one worker; a second
    caller finding the pool busy runs its loop alone."""
    parallel_for = _pool_parallel_for()
    release = threading.Event()
    threads_seen: dict[str, set[int]] = {"outer": set(), "inner": set()}
    lock = threading.Lock()

    def inner(ctx: int, start: int, end: int) -> int:
        with lock:
            threads_seen["inner"].add(threading.get_ident())
        return 0

    inner_callback = BODY(inner)
    inner_address = ctypes.cast(inner_callback, ctypes.c_void_p).value

    def outer(ctx: int, start: int, end: int) -> int:
        with lock:
            threads_seen["outer"].add(threading.get_ident())
        if start == 0:  # the first chunk starts a nested loop (the pool is busy: it runs serially) ...
            assert parallel_for(4, inner_address, 0, 50) == 0
        else:  # ... the others wait until it has finished
            release.wait(5)
        if start == 0:
            release.set()
        return 0

    outer_callback = BODY(outer)
    address = ctypes.cast(outer_callback, ctypes.c_void_p).value
    assert parallel_for(2, address, 0, 40) == 0
    assert len(threads_seen["outer"]) <= 2
    assert len(threads_seen["inner"]) == 1
    assert runtime.pool_workers() >= 1


def test_kernels_give_the_same_results_on_every_parallel_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    _openmp_parallel_for()
    _pool_parallel_for()
    x = np.random.default_rng(3).standard_normal((37, 300)).astype(np.float32)
    module = tm.trace(lambda v: nn.softmax(v * 2.0, axis=-1), x).module
    results = {}
    for implementation in runtime.RUNTIMES:
        monkeypatch.setenv(runtime.RUNTIME_ENV, implementation)
        assert runtime.parallel_runtime() == implementation
        results[implementation] = CpuExecutable.build(module).run([x], num_threads=2)[0]
    np.testing.assert_array_equal(results["python"], results["openmp"])
    np.testing.assert_array_equal(results["python"], results["pool"])
    monkeypatch.setenv(runtime.RUNTIME_ENV, "fibers")
    with pytest.raises(InterpreterError, match="must be one of 'pool', 'openmp', 'python', got 'fibers'"):
        runtime.register_runtime()
    monkeypatch.delenv(runtime.RUNTIME_ENV)
    assert runtime.parallel_runtime() == "pool"


def test_thread_count_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.delenv("TENSORIUM_NUM_THREADS", raising=False)
    assert thread_count() == (os.cpu_count() or 1)
    monkeypatch.setenv("TENSORIUM_NUM_THREADS", "3")
    assert thread_count() == 3
    monkeypatch.setenv("TENSORIUM_NUM_THREADS", "0")
    with pytest.raises(InterpreterError, match=r"^TENSORIUM_NUM_THREADS must be a positive integer, got '0'$"):
        thread_count()


def test_run_argument_errors(custom: tuple[Operation, CompiledKernels]) -> None:
    _, kernels = custom
    x = np.zeros((2, 3), np.float32)
    label, x_type = "@axpb argument #1 'y'", "buffer<?x[n]xf32, global>"
    cases: list[tuple[tuple[object, ...], str]] = [
        ((x, x, 1.0), "@axpb takes 4 arguments, got 3"),
        ((x, [1.0], 1.0, 1), f"{label}: expected a numpy array for {x_type}, got list"),
        (
            (x, x.astype(np.float64), 1.0, 1),
            f"{label}: expected dtype float32 for buffer<?x[n]xf32, global>, got float64",
        ),
        ((x, x[0], 1.0, 1), f"{label}: expected rank 2 (buffer<?x[n]xf32, global>), got shape [3]"),
        ((x, np.zeros((2, 4), np.float32), 1.0, 1), f"{label}: dimension [n] is 4 here but 3 elsewhere"),
        ((x, np.zeros((3, 2), np.float32).T, 1.0, 1), f"{label}: the array must be C-contiguous and aligned"),
        ((x, x, np.ones(2), 1), "@axpb argument #2 'alpha': expected a scalar f32, got an array of shape [2]"),
    ]
    for args, message in cases:
        with pytest.raises(InterpreterError, match="^" + re.escape(message)):
            kernels.run("axpb", *args)
    readonly = np.zeros((2, 3), np.float32)
    readonly.flags.writeable = False
    kernels.run("axpb", readonly, x, 1.0, 1)
    with pytest.raises(InterpreterError, match=f"^{label}: the kernel writes this buffer, but the array is read-only$"):
        kernels.run("axpb", x, readonly, 1.0, 1)
    with pytest.raises(InterpreterError, match=r"^no kernel @nope; the module has \['axpb'"):
        kernels.run("nope")
    with pytest.raises(InterpreterError, match=r"^num_threads must be at least 1, got 0$"):
        kernels.run("axpb", x, x, 1.0, 1, num_threads=0)
    static = compile_module(parse_kernel("matvec_int4"))
    wrong = [np.zeros((1, 4), np.uint8), np.zeros(1, np.float32), np.zeros(9, np.float32), np.zeros(1, np.float32)]
    with pytest.raises(InterpreterError, match=r"#2 'x': expected shape buffer<8xf32, global>, got \[9\] \(axis 0\)$"):
        static.run("matvec_int4", *wrong)


def test_unsupported_signatures() -> None:
    f = make_func("f", [TensorType((2,), f32)], arg_names=["t"])
    set_results(f, [])
    with pytest.raises(
        CompileError, match=r"^@f argument #0 't' has type tensor<2xf32>; kernels take buffers and scalars$"
    ):
        compile_module(make_module([f]))
    g = make_func("g", [index], arg_names=["i"])
    set_results(g, [func_body(g).args[0]])
    with pytest.raises(
        CompileError, match=r"'func.return' in @g returns values; kernels write their results into buffers"
    ):
        compile_module(make_module([g]))
    h = make_func("h", [])
    with InsertionPoint(func_body(h)):
        tm.ir.graph.constant(value=tm.ir.DenseAttr.of(np.zeros(2, np.float32)))
    set_results(h, [])
    with pytest.raises(CompileError, match=r"^'graph.constant' is not supported by the LLVM backend$"):
        compile_module(make_module([h]))


def test_two_top_level_parallel_nests_get_distinct_outlined_functions() -> None:
    """A scheduled concat has one parallel nest per operand; both once got the same LLVM name."""
    from tensorium.ir import TensorType, f32, graph
    from tensorium.ir.dialects.builtin import func_name, functions
    from tensorium.testing import build_module

    module = build_module([TensorType((5, 3), f32), TensorType((5, 4), f32)], lambda a, b: graph.concat(a, b, axis=1))
    lowered = lower_and_schedule(module, host_target())
    (kernel,) = [f for f in functions(lowered) if func_name(f).startswith("concat")]
    a = np.random.default_rng(0).random((5, 3), dtype=np.float32)
    b = np.random.default_rng(1).random((5, 4), dtype=np.float32)
    out = np.zeros((5, 7), np.float32)
    compile_module(lowered).run(func_name(kernel), a, b, out)
    np.testing.assert_array_equal(out, np.concatenate([a, b], axis=1))
