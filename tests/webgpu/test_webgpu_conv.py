"""Grouped and depthwise convolutions on WebGPU.

A grouped convolution whose groups have at least 8 output channels is the tiled implicit GEMM of ``gpu_conv``
with one product per group along the grid's z axis (any layout, stride, dilation, padding, bias); a depthwise
one (one output channel per group here) keeps the general ``conv`` family, one invocation per output. Both
against the interpreter: the loop kernels on the loop interpreter, the shaders on lavapipe; the CUDA target
still builds grouped convolutions with the general family.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.plan_runner import run_plan
from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.ir import Operation, graph
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.types import TensorType, f32
from tensorium.lowering.codegen import lower_and_schedule
from tensorium.lowering.space import kernel_space, tunable_kernels
from tensorium.lowering.webgpu_schedule import map_to_workgroups, trip_count
from tensorium.targets import parse_target
from tensorium.testing import build_module

GROUPED: dict[str, tuple[tuple[tuple[int, ...], ...], dict[str, Any]]] = {
    "nchw_oihw_bias": (((2, 16, 9, 9), (32, 8, 3, 3), (32,)), {"groups": 2, "padding": [1, 1, 1, 1]}),
    "nhwc_hwio_strided": (
        ((1, 11, 10, 32), (3, 3, 8, 32)),
        {"groups": 4, "layout": "NHWC", "kernel_layout": "HWIO", "strides": [2, 1], "padding": [1, 0, 1, 2]},
    ),
    "nchw_ohwi_dilated": (
        ((1, 12, 10, 10), (24, 2, 2, 4)),
        {"groups": 3, "kernel_layout": "OHWI", "dilations": [2, 1]},
    ),
}
DEPTHWISE: dict[str, tuple[tuple[tuple[int, ...], ...], dict[str, Any]]] = {
    "depthwise": (((2, 16, 12, 12), (16, 1, 3, 3), (16,)), {"groups": 16, "padding": [1, 1, 1, 1]}),
    "depthwise_x2_strided": (((1, 8, 10, 10), (16, 1, 3, 3)), {"groups": 8, "strides": [2, 2]}),
}


def _module(shapes: tuple[tuple[int, ...], ...], attrs: dict[str, Any]) -> Operation:
    return build_module([TensorType(s, f32) for s in shapes], lambda *v: graph.conv2d(*v, **attrs))


def _inputs(module: Operation) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    args = [a.type.static_shape for a in func_body(functions(module)[0]).args]  # type: ignore[attr-defined]
    return [rng.standard_normal(s).astype(np.float32) for s in args]


def _conv(module: Operation) -> Operation:
    return next(op for op in func_body(functions(module)[0]).ops if op.name == "graph.conv2d")


SMALL = (((1, 4, 8, 8), (16, 2, 3, 3), (16,)), {"groups": 2, "padding": [1, 1, 1, 1]})
"""A grouped convolution just large enough for the tiled family, small enough for the loop interpreter."""


def test_grouped_convolutions_are_one_implicit_gemm_per_group() -> None:
    module = _module(*SMALL)
    target = parse_target("webgpu")
    (kernel,) = tunable_kernels(module, target)
    assert kernel.space.family == "gpu_conv"
    lowered = lower_and_schedule(module, target, schedule=False)
    for k in functions(lowered):
        map_to_workgroups(k, target)
    (z,) = [
        op for op in lowered.walk() if op.name == "loop.for" and op.attr("kind") == "gpu_block" and op.attr("axis") == 2
    ]
    assert trip_count(z) == 2  # one product per group along z
    inputs = _inputs(module)
    (got,) = run_plan(lowered, inputs)
    np.testing.assert_allclose(got, np.asarray(interp.run(module, inputs)[0]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(DEPTHWISE))
def test_depthwise_convolutions_keep_one_invocation_per_output(name: str) -> None:
    module = _module(*DEPTHWISE[name])
    space = kernel_space(_conv(module), parse_target("webgpu"))
    assert space is None or space.family != "gpu_conv"


def test_the_cuda_target_keeps_grouped_convolutions_general() -> None:
    module = _module(*GROUPED["nchw_oihw_bias"])
    space = kernel_space(_conv(module), parse_target("cuda:sm_90"))
    assert space is None or space.family != "gpu_conv"


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("name", [*sorted(GROUPED), *sorted(DEPTHWISE)])
def test_grouped_and_depthwise_convolutions_match_the_interpreter_on_lavapipe(name: str) -> None:
    module = _module(*{**GROUPED, **DEPTHWISE}[name])
    executable = WebGPUExecutable.build(module)
    (shader,) = executable.shaders.values()
    tiled = name in GROUPED
    assert ("var<workgroup>" in shader.wgsl) == tiled
    if tiled:
        assert shader.grid[2] == int(GROUPED[name][1]["groups"])
    inputs = _inputs(module)
    (got,) = executable.run(inputs)
    np.testing.assert_allclose(got, np.asarray(interp.run(module, inputs)[0]), rtol=1e-5, atol=1e-5)
