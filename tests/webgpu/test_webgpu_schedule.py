"""GPU schedules and limit passes for WebGPU, checked on the loop interpreter (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

from tensorium.backends.plan_runner import run_plan
from tensorium.errors import CompileError
from tensorium.ir.core import Operation
from tensorium.ir.dialects.builtin import functions
from tensorium.ir.verifier import verify
from tensorium.lowering.codegen import lower_and_schedule
from tensorium.lowering.webgpu_limits import apply_limits
from tensorium.lowering.webgpu_schedule import grid_shape, map_to_workgroups
from tensorium.targets import parse_target

from .models import MODULES, module, random_inputs, reference


def gpu_lowered(name: str, spec: str) -> Operation:
    target = parse_target(spec)
    lowered = lower_and_schedule(module(name), target, schedule=False)
    for kernel in functions(lowered):
        map_to_workgroups(kernel, target)
    verify(lowered)
    apply_limits(lowered, target)
    return lowered


def gpu_loops(kernel: Operation) -> list[tuple[str, int, int]]:
    from tensorium.lowering.webgpu_schedule import trip_count

    return [
        (op.attr("kind"), int(op.attr("axis")), trip_count(op) or 0)
        for op in kernel.walk()
        if op.name == "loop.for" and op.attr("kind") in ("gpu_block", "gpu_thread")
    ]


@pytest.mark.parametrize("name", sorted(MODULES))
@pytest.mark.parametrize(
    "spec",
    [
        "webgpu",
        "webgpu:max_compute_invocations_per_workgroup=4,max_compute_workgroups_per_dimension=4",
        "webgpu:max_compute_workgroup_size_x=8,max_compute_workgroups_per_dimension=3",
    ],
)
def test_mapped_kernels_compute_what_the_interpreter_does(name: str, spec: str) -> None:
    lowered = gpu_lowered(name, spec)
    inputs = random_inputs(module(name))
    for got, want in zip(run_plan(lowered, inputs), reference(module(name), inputs)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_workgroups_respect_the_invocation_limit_and_grids_fold() -> None:
    lowered = gpu_lowered(
        "elementwise", "webgpu:max_compute_invocations_per_workgroup=4,max_compute_workgroups_per_dimension=6"
    )
    kernel = functions(lowered)[-1]  # the last of the unfused elementwise kernels, 150 elements
    loops = gpu_loops(kernel)
    threads = [trips for kind, _, trips in loops if kind == "gpu_thread"]
    blocks = {axis: trips for kind, axis, trips in loops if kind == "gpu_block"}
    assert threads == [4]
    # 150 elements / 4 per workgroup = 38 workgroups: a 2-D grid of at most 6 per axis, then a third axis
    assert all(n <= 6 for n in blocks.values()) and len(blocks) >= 2
    assert np.prod(list(blocks.values())) * 4 >= 150
    assert kernel.attributes["gpu_mapping"] == "grid"


def test_grid_shape_folds_into_three_dimensions_and_refuses_more() -> None:
    assert grid_shape(10, 65535) == (10, 1, 1)
    assert grid_shape(70000, 65535) == (35000, 2, 1)
    gx, gy, gz = grid_shape(20, 3)
    assert max(gx, gy, gz) <= 3 and gx * gy * gz >= 20 and gz > 1
    with pytest.raises(CompileError, match="max_compute_workgroups_per_dimension = 3"):
        grid_shape(28, 3)


def test_whole_reductions_run_in_one_invocation() -> None:
    text = """
module {
  func.func @main(%a: tensor<7x9xf32>) -> tensor<f32> {
    %0 = graph.reduce_sum %a {axes = [0, 1]} : (tensor<7x9xf32>) -> tensor<f32>
    func.return %0 : tensor<f32>
  }
}"""
    from tensorium.ir.parser import parse_module

    m = parse_module(text)
    target = parse_target("webgpu")
    lowered = lower_and_schedule(m, target, schedule=False)
    for kernel in functions(lowered):
        map_to_workgroups(kernel, target)
    (kernel,) = functions(lowered)
    assert kernel.attributes["gpu_mapping"] == "single"
    x = np.arange(63, dtype=np.float32).reshape(7, 9)
    np.testing.assert_allclose(run_plan(lowered, [x])[0], x.sum(), rtol=1e-6)


def test_too_many_storage_buffers_names_the_kernel_and_limit() -> None:
    with pytest.raises(
        CompileError, match=r"binds 3 storage buffers, over the limit max_storage_buffers_per_shader_stage = 2"
    ):
        gpu_lowered("matmul", "webgpu:max_storage_buffers_per_shader_stage=2")


def test_oversized_tensor_names_the_tensor_and_limit() -> None:
    with pytest.raises(
        CompileError,
        match=r"tensor #0 \(tensor<2x5x12xf32>, 480 bytes\) is over the limit max_storage_buffer_binding_size = 256",
    ):
        gpu_lowered("matmul", "webgpu:max_storage_buffer_binding_size=256")


def test_index_width_is_proven_or_refused() -> None:
    from tensorium.ir.parser import parse_module

    big = """
module {
  func.func @main(%a: tensor<65536x32768xf32>) -> tensor<65536x32768xf32> {
    %0 = graph.neg %a : (tensor<65536x32768xf32>) -> tensor<65536x32768xf32>
    func.return %0 : tensor<65536x32768xf32>
  }
}"""
    target = parse_target("webgpu:max_storage_buffer_binding_size=100000000000,max_buffer_size=100000000000")
    lowered = lower_and_schedule(parse_module(big), target, schedule=False)
    with pytest.raises(
        CompileError, match=r"tensor #0 \(tensor<65536x32768xf32>\) has 2147483648 elements; WebGPU indices are 32-bit"
    ):
        apply_limits(lowered, target)
