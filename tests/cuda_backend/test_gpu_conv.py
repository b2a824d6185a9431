"""The implicit-GEMM convolution on the GPU (``gpu_conv``): proven on the loop interpreter against the graph
interpreter for strides, dilations, padding and layouts, and assembled by ptxas."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.cuda.ptx import NATIVE, assemble, compile_ptx
from tensorium.backends.plan_runner import run_plan
from tensorium.ir import Operation, graph
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.types import TensorType, f32
from tensorium.lowering.codegen import Codegen, run_codegen
from tensorium.lowering.space import Config, default_config, kernel_key, kernel_space
from tensorium.targets import parse_target
from tensorium.testing import build_module

from .conftest import SM90, needs_ptxas

CASES: dict[str, tuple[tuple[tuple[int, ...], ...], dict[str, Any]]] = {
    "padded": (((2, 2, 4, 3), (3, 2, 3, 3), (3,)), {"padding": [1, 1, 1, 1]}),
    "strided_dilated": (
        ((1, 2, 9, 8), (4, 2, 3, 2), (4,)),
        {"strides": [2, 1], "dilations": [2, 1], "padding": [1, 0, 2, 1]},
    ),
    "pointwise_no_bias": (((1, 8, 4, 5), (6, 8, 1, 1)), {}),
    "nhwc_hwio": (
        ((1, 6, 5, 3), (3, 3, 3, 4), (4,)),
        {"layout": "NHWC", "kernel_layout": "HWIO", "padding": [1, 1, 1, 1]},
    ),
    "nchw_ohwi": (((1, 3, 5, 5), (4, 2, 2, 3)), {"kernel_layout": "OHWI", "strides": [2, 2]}),
}


def _module(name: str) -> Operation:
    shapes, attrs = CASES[name]
    return build_module([TensorType(s, f32) for s in shapes], lambda *v: graph.conv2d(*v, **attrs))


def _conv(module: Operation) -> Operation:
    return next(op for op in func_body(functions(module)[0]).ops if op.name == "graph.conv2d")


def _check(module: Operation, config: Config | None = None) -> Operation:
    configs = {kernel_key(_conv(module)): config} if config is not None else {}
    state = run_codegen(Codegen(module, SM90, configs=configs, native=NATIVE), until="decompose")
    assert state.lowered is not None
    (kernel,) = functions(state.lowered)
    assert str(kernel.attributes["config"]).startswith("gpu_conv{")
    rng = np.random.default_rng(0)
    args = [a.type.static_shape for a in func_body(functions(module)[0]).args]  # type: ignore[attr-defined]
    inputs = [rng.standard_normal(s).astype(np.float32) for s in args]
    (got,) = run_plan(state.lowered, inputs)
    (want,) = interp.run(module, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return state.lowered


@pytest.mark.parametrize("name", sorted(CASES))
def test_implicit_gemm_convolutions_match_the_graph_interpreter(name: str) -> None:
    _check(_module(name))


def test_every_tile_shape_and_both_stage_counts_compute_the_same() -> None:
    module = _module("nchw_ohwi")
    for tiles in [(16, 16, 8, 2, 2, 1), (32, 16, 16, 1, 1, 2), (16, 32, 8, 1, 2, 2)]:
        config = Config("gpu_conv", tuple(zip(("bm", "bn", "bk", "tm", "tn", "stages"), tiles)))
        _check(module, config)


def test_the_space_is_the_gemms_and_grouped_convolutions_keep_the_general_family() -> None:
    op = _conv(_module("padded"))
    space = kernel_space(op, SM90)
    assert space is not None and [k.name for k in space.knobs] == ["bm", "bn", "bk", "tm", "tn", "stages"]
    assert default_config(op, SM90) == Config(
        "gpu_conv", (("bm", 16), ("bn", 16), ("bk", 8), ("tm", 2), ("tn", 2), ("stages", 2))
    )
    grouped = build_module(
        [TensorType((1, 4, 5, 5), f32), TensorType((4, 1, 3, 3), f32)], lambda x, w: graph.conv2d(x, w, groups=4)
    )
    grouped_space = kernel_space(_conv(grouped), SM90)
    assert grouped_space is None or grouped_space.family != "gpu_conv"


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
def test_implicit_gemm_convolutions_assemble_for_ptxas(arch: str) -> None:
    target = parse_target(f"cuda:{arch}")
    for name in ("strided_dilated", "nhwc_hwio"):
        state = run_codegen(Codegen(_module(name), target, native=NATIVE), until="decompose")
        assert state.lowered is not None
        ptx = compile_ptx(state.lowered, target)
        assert "bar.sync" in ptx.ptx and "st.shared" in ptx.ptx
        assemble(ptx.ptx, arch)
