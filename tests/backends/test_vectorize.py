"""Explicit vectorization in the LLVM emitter, the f32 vector polynomials, the blocked GEMM and packed weights."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends import interp, loop_interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.llvm import compile_module
from tensorium.backends.llvm.vectorize import vector_plan
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.dialects import graph
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.dialects.graph.linalg import pack_panels, unpack_panels
from tensorium.ir.types import TensorType, f32
from tensorium.lowering import lower_function
from tensorium.lowering.schedule import loop_name, loops_of
from tensorium.passes import PassManager
from tensorium.testing import build_module

RNG = np.random.default_rng(7)

LOOP = """module {{
  func.func @k(%a: buffer<[n]xf32, global>, %b: buffer<[n]xf32, global>) {{
    %c0 = loop.const {{value = 0, dtype = index}} : () -> index
    %c1 = loop.const {{value = 1, dtype = index}} : () -> index
    %n = loop.dim %a {{axis = 0}} : (buffer<[n]xf32, global>) -> index
    loop.for %c0, %n, %c1 (
      {{
      ^bb0(%i: index):
{body}
        loop.yield : () -> ()
      }}
    ) {{kind = "vectorize", factor = 8}} : (index, index, index) -> ()
    func.return
  }}
}}"""

ELEMENTWISE = """        %x = loop.load %a, %i : (buffer<[n]xf32, global>, index) -> f32
        %y = loop.exp %x : (f32) -> f32
        loop.store %y, %b, %i : (f32, buffer<[n]xf32, global>, index) -> ()"""
# b[i] = b[i - 1] + a[i]: each iteration reads what the previous one wrote, so lanes may not run together.
PREFIX = """        %c1b = loop.const {value = 1, dtype = index} : () -> index
        %m = loop.max %i, %c1b : (index, index) -> index
        %p = loop.sub %m, %c1b : (index, index) -> index
        %prev = loop.load %b, %p : (buffer<[n]xf32, global>, index) -> f32
        %x = loop.load %a, %i : (buffer<[n]xf32, global>, index) -> f32
        %s = loop.add %prev, %x : (f32, f32) -> f32
        loop.store %s, %b, %i : (f32, buffer<[n]xf32, global>, index) -> ()"""
# b[n - 1 - i] = a[i] * 2: a reversed (stride -1) store, done lane by lane.
REVERSE = """        %c1b = loop.const {value = 1, dtype = index} : () -> index
        %two = loop.const {value = 2.0, dtype = f32} : () -> f32
        %last = loop.sub %n, %c1b : (index, index) -> index
        %j = loop.sub %last, %i : (index, index) -> index
        %x = loop.load %a, %i : (buffer<[n]xf32, global>, index) -> f32
        %y = loop.mul %x, %two : (f32, f32) -> f32
        loop.store %y, %b, %j : (f32, buffer<[n]xf32, global>, index) -> ()"""


def _kernel(body: str) -> Any:
    return tm.parse_module(LOOP.format(body=body))


def _loop_body(module: Any) -> Any:
    (loop_op,) = [op for op in func_body(functions(module)[0]).ops if op.name == "loop.for"]
    return loop_op.regions[0].block


@pytest.mark.parametrize(("body", "vectorized"), [(ELEMENTWISE, True), (PREFIX, False), (REVERSE, True)])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 21])
def test_vector_loops_keep_the_sequential_meaning(body: str, vectorized: bool, n: int) -> None:
    module = _kernel(body)
    assert (vector_plan(_loop_body(module)) is not None) == vectorized
    kernels = compile_module(module)
    assert ("<8 x float>" in kernels.llvm_ir) == vectorized
    a = RNG.standard_normal(n).astype(np.float32)
    want = [a.copy(), np.zeros(n, np.float32)]
    loop_interp.run(module, want)
    got = [a.copy(), np.zeros(n, np.float32)]
    kernels.run("k", *got)
    np.testing.assert_allclose(got[1], want[1], rtol=2e-6, atol=1e-6)


# b[i] = (a[i] * 0.0) * -0.0: signed zeros must keep their signs through shared splats.
SIGNED_ZEROS = """        %zero = loop.const {value = 0.0, dtype = f32} : () -> f32
        %negzero = loop.const {value = -0.0, dtype = f32} : () -> f32
        %x = loop.load %a, %i : (buffer<[n]xf32, global>, index) -> f32
        %p = loop.mul %x, %zero : (f32, f32) -> f32
        %q = loop.mul %p, %negzero : (f32, f32) -> f32
        loop.store %q, %b, %i : (f32, buffer<[n]xf32, global>, index) -> ()"""


def test_splat_constants_are_shared_but_signed_zeros_stay_apart() -> None:
    from llvmlite import ir

    from tensorium.backends.llvm.vectorize import splat_constant

    f32_type = ir.FloatType()
    assert splat_constant(f32_type, 1.5, repr(1.5), 8) is splat_constant(f32_type, 1.5, repr(1.5), 8)
    zero, negative_zero = splat_constant(f32_type, 0.0, "0.0", 8), splat_constant(f32_type, -0.0, "-0.0", 8)
    assert zero is not negative_zero and "-0." not in str(zero) and str(negative_zero).count("0x8000000000000000") == 8
    module = _kernel(SIGNED_ZEROS)
    kernels = compile_module(module)
    assert "<8 x float>" in kernels.llvm_ir
    a = np.array([1.0, -2.0, 3.0, -4.0, 5.0, -6.0, 7.0, -8.0, 9.0], np.float32)
    got = [a.copy(), np.ones_like(a)]
    kernels.run("k", *got)
    np.testing.assert_array_equal(np.signbit(got[1]), a > 0)  # (x * 0.0) * -0.0 is -0.0 exactly where x > 0


SPECIAL = np.array([0.0, -0.0, 1e-8, -1e-8, 0.05, 0.0999, 0.1001, 0.49, 0.51, 1.0, -1.0, 3.0, 9.5, -9.5, 20.0, 80.0])
SPECIAL = np.concatenate([SPECIAL, [88.0, 89.0, -87.0, -88.0, -104.0, np.inf, -np.inf, np.nan]]).astype(np.float32)


@pytest.mark.parametrize(
    ("op", "reference", "rtol"),
    [(graph.exp, np.exp, 3e-7), (graph.tanh, np.tanh, 1e-6), (graph.erf, None, 1e-6)],
    ids=["exp", "tanh", "erf"],
)
def test_vector_math_polynomials_match_numpy(op: Any, reference: Any, rtol: float) -> None:
    x = np.concatenate([SPECIAL, RNG.uniform(-12, 12, 2000).astype(np.float32)])
    module = build_module([TensorType(x.shape, f32)], lambda v: op(v))
    (got,) = CpuExecutable.build(module).run([x])
    (want,) = interp.run(module, [x])
    if reference is not None:
        with np.errstate(over="ignore"):
            want = reference(x.astype(np.float64)).astype(np.float32)
    with np.errstate(invalid="ignore"):
        denormal = np.abs(want) < np.finfo(np.float32).tiny
    np.testing.assert_allclose(got[~denormal], want[~denormal], rtol=rtol, atol=2e-7)
    assert np.all(np.abs(got[denormal]) <= np.finfo(np.float32).tiny)  # denormal results may flush to zero


@pytest.mark.parametrize(
    ("m", "k", "n"), [(1, 1, 1), (6, 17, 64), (7, 5, 65), (13, 33, 130), (200, 9, 3), (3, 70, 200)]
)
@pytest.mark.parametrize(("ta", "tb"), [(False, False), (True, False), (False, True)])
def test_blocked_gemm_tails_and_transposes(m: int, k: int, n: int, ta: bool, tb: bool) -> None:
    a = RNG.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = RNG.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    module = build_module(
        [TensorType(a.shape, f32), TensorType(b.shape, f32)],
        lambda x, y: graph.matmul(x, y, transpose_a=ta, transpose_b=tb),
    )
    (got,) = CpuExecutable.build(module).run([a, b])
    want = (a.T if ta else a) @ (b.T if tb else b)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("a_shape", "b_shape"), [((3, 2, 9, 12), (2, 70, 12)), ((4, 7, 5), (70, 5)), ((1, 5, 3), (4, 70, 3))]
)
def test_batched_gemm_packs_each_batch_of_a_transposed_b(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    module = build_module(
        [TensorType(a.shape, f32), TensorType(b.shape, f32)], lambda x, y: graph.matmul(x, y, transpose_b=True)
    )
    (got,) = CpuExecutable.build(module).run([a, b])
    np.testing.assert_allclose(got, a @ np.swapaxes(b, -1, -2), rtol=1e-5, atol=1e-5)


def test_blocked_gemm_broadcasts_batch_dims() -> None:
    a = RNG.standard_normal((2, 1, 9, 12)).astype(np.float32)
    b = RNG.standard_normal((3, 12, 70)).astype(np.float32)
    module = build_module([TensorType(a.shape, f32), TensorType(b.shape, f32)], lambda x, y: graph.matmul(x, y))
    (got,) = CpuExecutable.build(module).run([a, b])
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


def test_panels_round_trip() -> None:
    b = RNG.standard_normal((5, 70)).astype(np.float32)
    packed = pack_panels(b, 64)
    assert packed.shape == (2, 5, 64) and not packed[1, :, 6:].any()
    np.testing.assert_array_equal(unpack_panels(packed, 70), b)


@pytest.mark.parametrize("transpose_b", [False, True])
def test_pack_weights_folds_the_packing_into_constants(transpose_b: bool) -> None:
    w = RNG.standard_normal((70, 33) if transpose_b else (33, 70)).astype(np.float32)
    x = RNG.standard_normal((9, 33)).astype(np.float32)

    def body(v: Any) -> Any:
        weight = graph.constant(value=DenseAttr(w, TensorType(w.shape, f32)))
        return graph.matmul(v, weight, transpose_b=transpose_b)

    module = build_module([TensorType(x.shape, f32)], body)
    (before,) = interp.run(module, [x])
    PassManager.parse("pack-weights{width=64}").run(module)
    names = [op.name for op in func_body(functions(module)[0]).ops]
    assert names == ["graph.constant", "graph.matmul_packed", "func.return"]
    text = tm.print_module(module)
    assert "cols = 70" in text and "tensor<2x33x64xf32>" in text
    reparsed = tm.parse_module(text)
    (after,) = interp.run(reparsed, [x])
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)  # numpy sums in another order
    lowered = lower_function(module)
    allocations = [str(op.results[0].type) for op in lowered.walk() if op.name == "loop.alloc"]
    assert allocations and not any("global" in t for t in allocations)  # the tile only: no packing at run time
    (compiled,) = CpuExecutable.build(module).run([x])
    np.testing.assert_allclose(compiled, before, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("target", "cols", "panels"),
    [
        ("cpu:skylake-avx512", 3, "1x8x16"),
        ("cpu:skylake-avx512", 20, "1x8x32"),
        ("cpu:skylake-avx512", 64, "1x8x64"),
        ("cpu:skylake-avx512", 65, "2x8x64"),
        ("cpu:x86-64-v3", 3, "1x8x8"),
        ("cpu:x86-64-v3", 20, "2x8x16"),
        ("cpu:x86-64-v3", 65, "5x8x16"),
    ],
)
def test_narrow_weights_get_narrow_panels(target: str, cols: int, panels: str) -> None:
    """Panels as wide as the target's default GEMM tile (4 or 2 vectors), narrower for narrow weights."""
    w = RNG.standard_normal((8, cols)).astype(np.float32)
    x = RNG.standard_normal((5, 8)).astype(np.float32)
    module = build_module(
        [TensorType(x.shape, f32)],
        lambda v: graph.matmul(v, graph.constant(value=DenseAttr(w, TensorType(w.shape, f32)))),
    )
    PassManager.parse(f'pack-weights{{target="{target}"}}').run(module)
    assert f"tensor<{panels}xf32>" in tm.print_module(module)
    (compiled,) = CpuExecutable.build(module).run([x])
    np.testing.assert_allclose(compiled, x @ w, rtol=1e-5, atol=1e-5)


def test_matmul_packed_verifies_its_panels() -> None:
    with pytest.raises(tm.TensoriumError, match="2 panels of 64 columns cannot hold 200 columns"):
        build_module(
            [TensorType((3, 5), f32), TensorType((2, 5, 64), f32)], lambda x, p: graph.matmul_packed(x, p, cols=200)
        )


@pytest.mark.parametrize("shape", [(3, 37), (2, 130), (1, 16), (4, 5)])
@pytest.mark.parametrize(
    "body",
    [
        lambda v: graph.reduce_sum(v, axes=(1,)),
        lambda v: graph.reduce_mean(v, axes=(-1,), keepdims=True),
        lambda v: graph.reduce_max(v, axes=(1,)),
        lambda v: graph.reduce_min(v, axes=(0, 1)),
        lambda v: graph.softmax(v, axis=-1),
        lambda v: graph.log_softmax(v, axis=1),
        lambda v: graph.layer_norm(v, axis=-1),
        lambda v: graph.rms_norm(v, axis=-1),
    ],
    ids=["sum", "mean", "max", "min_all", "softmax", "log_softmax", "layer_norm", "rms_norm"],
)
def test_reductions_on_partial_accumulators_and_tails(shape: tuple[int, int], body: Any) -> None:
    x = (RNG.standard_normal(shape) * 3).astype(np.float32)
    x.flat[-1] = 9.0  # the maximum in the tail
    module = build_module([TensorType(shape, f32)], body)
    (got,) = CpuExecutable.build(module).run([x])
    (want,) = interp.run(module, [x])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_matvec_rows_tails_and_batches() -> None:
    for a_shape, b_shape in [((5, 133), (133, 1)), ((2, 3, 64), (64, 1)), ((7, 1), (1, 1))]:
        a = RNG.standard_normal(a_shape).astype(np.float32)
        b = RNG.standard_normal(b_shape).astype(np.float32)
        module = build_module([TensorType(a.shape, f32), TensorType(b.shape, f32)], lambda x, y: graph.matmul(x, y))
        kernel = functions(lower_function(module))[0]
        assert {"i", "kb", "kt"} <= {loop_name(op) for op in loops_of(kernel)}  # the dot-product kernel
        (got,) = CpuExecutable.build(module).run([a, b])
        np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "attrs"),
    [
        ((1, 3, 9, 11), (7, 3, 3, 3), {"padding": [1, 1, 1, 1]}),
        ((2, 5, 6, 70), (13, 5, 3, 2), {"padding": [0, 2, 1, 0], "dilations": [1, 2]}),
        ((1, 4, 5, 5), (6, 4, 1, 1), {}),
        ((1, 2, 8, 8), (3, 2, 5, 5), {"padding": [2, 2, 2, 2], "dilations": [2, 1]}),
    ],
)
@pytest.mark.parametrize("with_bias", [False, True])
def test_blocked_convolution_matches_the_interpreter(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any], with_bias: bool
) -> None:
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal(w_shape).astype(np.float32)
    b = RNG.standard_normal(w_shape[0]).astype(np.float32)
    types = [TensorType(x.shape, f32), TensorType(w.shape, f32)] + ([TensorType(b.shape, f32)] if with_bias else [])
    module = build_module(types, lambda *vs: graph.conv2d(*vs, **attrs))
    kernel = functions(lower_function(module))[0]
    assert {"oh", "ob", "wb"} <= {loop_name(op) for op in loops_of(kernel)}  # the blocked kernel
    inputs = [x, w, b] if with_bias else [x, w]
    (got,) = CpuExecutable.build(module).run(inputs)
    (want,) = interp.run(module, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "attrs"),
    [
        ((1, 9, 11, 3), (3, 3, 3, 7), {"padding": [1, 1, 1, 1]}),
        ((2, 6, 70, 5), (3, 2, 5, 13), {"padding": [0, 2, 1, 0], "dilations": [1, 2]}),
        ((1, 5, 5, 4), (1, 1, 4, 70), {}),
        ((3, 9, 8, 2), (3, 3, 2, 130), {"strides": [2, 3], "padding": [1, 0, 2, 1]}),
        ((1, 12, 12, 1), (5, 5, 1, 16), {"padding": [2, 2, 2, 2], "dilations": [2, 1], "strides": [2, 2]}),
    ],
)
@pytest.mark.parametrize("with_bias", [False, True])
def test_nhwc_implicit_gemm_convolution_matches_the_interpreter(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any], with_bias: bool
) -> None:
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal(w_shape).astype(np.float32)
    b = RNG.standard_normal(w_shape[-1]).astype(np.float32)
    types = [TensorType(x.shape, f32), TensorType(w.shape, f32)] + ([TensorType(b.shape, f32)] if with_bias else [])
    module = build_module(types, lambda *vs: graph.conv2d(*vs, layout="NHWC", kernel_layout="HWIO", **attrs))
    kernel = functions(lower_function(module))[0]
    assert {"kh", "kw", "c", "ii", "jj"} <= {loop_name(op) for op in loops_of(kernel)}  # the implicit GEMM
    inputs = [x, w, b] if with_bias else [x, w]
    (got,) = CpuExecutable.build(module).run(inputs)
    (want,) = interp.run(module, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
