"""The float GEMV on the GPU (``gpu_gemv``): which products take it, proven on the loop interpreter against the
graph interpreter (f32 and f16, remainders of the contraction, lanes past N, a fused epilogue), and ptxas."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.cuda.ptx import NATIVE, assemble, compile_ptx, resource_usage
from tensorium.backends.plan_runner import run_plan
from tensorium.ir import Operation, graph
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.types import ScalarType, TensorType, f16, f32, storage_dtype
from tensorium.lowering.codegen import Codegen, run_codegen
from tensorium.lowering.space import Config, default_config, kernel_key, kernel_space
from tensorium.passes import PassManager
from tensorium.targets import parse_target
from tensorium.testing import build_module

from .conftest import SM90, needs_ptxas


def _module(
    shapes: tuple[tuple[int, ...], ...], element: ScalarType = f32, body: Callable[..., object] | None = None
) -> Operation:
    module = build_module([TensorType(s, element) for s in shapes], body or (lambda a, b: graph.matmul(a, b)))
    PassManager.parse("fuse").run(module)
    return module


def _kernel_op(module: Operation) -> Operation:
    return next(o for o in func_body(functions(module)[0]).ops if o.name in ("graph.matmul", "graph.fused"))


def _check(module: Operation, point: str | None = None, seed: int = 0) -> Operation:
    """``module`` lowered for sm_90 (at ``point`` when given) and run on the loop interpreter against the graph
    interpreter; the lowered module."""
    op = _kernel_op(module)
    configs = {} if point is None else {kernel_key(op): Config.parse(point)}
    state = run_codegen(Codegen(module, SM90, configs=configs, native=NATIVE), until="decompose")
    assert state.lowered is not None
    args = func_body(functions(module)[0]).args
    rng = np.random.default_rng(seed)
    inputs = [rng.standard_normal(a.type.static_shape).astype(storage_dtype(a.type.element)) for a in args]  # type: ignore[attr-defined]
    (got,) = run_plan(state.lowered, inputs)
    (want,) = interp.run(module, inputs)
    tolerance = 2e-3 if want.dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tolerance, atol=tolerance)
    return state.lowered


def test_few_rows_by_an_untransposed_b_take_the_gemv_and_others_the_tiled_gemm() -> None:
    family = {
        shapes: kernel_space(_kernel_op(_module(shapes)), SM90).family  # type: ignore[union-attr]
        for shapes in [((1, 64), (64, 40)), ((2, 4, 64), (64, 40)), ((9, 64), (64, 40)), ((2, 1, 64), (2, 64, 40))]
    }
    assert list(family.values()) == ["gpu_gemv", "gpu_gemv", "gpu_gemm", "gpu_gemm"]  # 8 rows at most, B 2-D
    transposed = _module(((1, 64), (40, 64)), body=lambda a, b: graph.matmul(a, b, transpose_b=True))
    assert kernel_space(_kernel_op(transposed), SM90).family == "gpu_gemv"  # type: ignore[union-attr]
    assert default_config(_kernel_op(transposed), SM90) == Config.parse("gpu_gemv{warps=8,unroll=4}")
    webgpu = kernel_space(_kernel_op(_module(((1, 64), (64, 40)))), parse_target("webgpu"))
    assert webgpu is None or webgpu.family != "gpu_gemv"
    assert default_config(_kernel_op(_module(((1, 4096), (4096, 4096)))), SM90) == Config.parse(
        "gpu_gemv{warps=16,unroll=4}"
    )


@pytest.mark.parametrize(
    ("shapes", "point"),
    [
        (((1, 70), (70, 45)), None),  # 45 columns: lanes past N in the second block
        (((1, 70), (70, 45)), "gpu_gemv{warps=4,unroll=8}"),  # 70 rows of B: the last step partly past K
        (((3, 2, 130), (130, 33)), "gpu_gemv{warps=8,unroll=1}"),  # six rows of A from two leading dims
        (((8, 40), (40, 96)), "gpu_gemv{warps=16,unroll=2}"),  # more warps than steps: some add nothing
    ],
)
def test_gemv_points_match_the_graph_interpreter(shapes: tuple[tuple[int, ...], ...], point: str | None) -> None:
    lowered = _check(_module(shapes), point)
    (kernel,) = functions(lowered)
    assert kernel.attributes["config"].startswith("gpu_gemv{")


def _linear(a: object, b: object) -> object:
    return graph.matmul(a, b, transpose_b=True)


@pytest.mark.parametrize(
    ("shapes", "point"),
    [
        (((1, 100), (45, 100)), None),  # K = 100: lanes past K in the last step; 45 columns: a warp past N
        (((2, 3, 64), (13, 64)), "gpu_gemv{warps=4,unroll=1}"),  # six rows of A
        (((1, 300), (20, 300)), "gpu_gemv{warps=16,unroll=8}"),  # more warps than columns
    ],
)
def test_transposed_b_gemv_points_add_lanes_by_shuffles(shapes: tuple[tuple[int, ...], ...], point: str | None) -> None:
    lowered = _check(_module(shapes, body=_linear), point)
    assert any(op.name == "loop.shuffle" for op in lowered.walk())


def test_a_linear_layer_with_bias_in_f16_takes_the_transposed_gemv() -> None:
    shapes = ((1, 96), (40, 96), (40,))
    module = _module(shapes, f16, lambda a, b, c: graph.add(graph.matmul(a, b, transpose_b=True), c))
    assert kernel_space(_kernel_op(module), SM90).family == "gpu_gemv"  # type: ignore[union-attr]
    _check(module)


def test_f16_gemv_sums_in_f32() -> None:
    lowered = _check(_module(((2, 200), (200, 72)), f16))
    assert any(op.name == "loop.cast" for op in lowered.walk())


def test_a_fused_epilogue_runs_in_the_gemv_stores() -> None:
    shapes = ((1, 96), (96, 50), (50,))
    module = _module(shapes, body=lambda a, b, c: graph.relu(graph.add(graph.matmul(a, b), c)))
    assert kernel_space(_kernel_op(module), SM90).family == "gpu_gemv"  # type: ignore[union-attr]
    _check(module, "gpu_gemv{warps=4,unroll=2}")


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_the_decode_gemv_assembles_without_spills(arch: str) -> None:
    target = parse_target(f"cuda:{arch}")
    module = _module(((1, 4096), (4096, 4096)))
    state = run_codegen(Codegen(module, target, native=NATIVE), until="decompose")
    assert state.lowered is not None
    ptx = compile_ptx(state.lowered, target)
    (launch,) = ptx.launches.values()
    assert launch.grid == (128, 1, 1) and launch.block == (512, 1, 1) and launch.shared_bytes == 15 * 32 * 4
    assert "ld.global" in ptx.ptx and "bar.sync" in ptx.ptx
    assemble(ptx.ptx, arch)
    (usage,) = resource_usage(ptx.ptx, arch).values()
    assert usage.spill_stores == 0 and usage.spill_loads == 0


@needs_ptxas
def test_the_transposed_decode_gemv_assembles_with_warp_shuffles() -> None:
    module = _module(((1, 4096), (4096, 4096)), body=_linear)
    state = run_codegen(Codegen(module, SM90, native=NATIVE), until="decompose")
    assert state.lowered is not None
    ptx = compile_ptx(state.lowered, SM90)
    (launch,) = ptx.launches.values()
    assert launch.grid == (512, 1, 1) and launch.block == (256, 1, 1) and launch.shared_bytes == 0
    assert ptx.ptx.count("shfl.sync.bfly") == 5
    assemble(ptx.ptx, "sm_90")
