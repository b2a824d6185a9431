"""PTX for every kernel family through LLVM's NVPTX target, on the loop interpreter first and through ptxas."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.cuda.emitter import Launch
from tensorium.backends.cuda.ptx import PtxasError, assemble, compile_ptx, ptxas_path, resource_usage
from tensorium.backends.plan_runner import run_plan
from tensorium.errors import CompileError
from tensorium.ir import graph, parse_module
from tensorium.ir.dialects.builtin import functions
from tensorium.ir.types import TensorType, f32, f64
from tensorium.lowering.schedule import loops_of
from tensorium.targets import parse_target
from tensorium.testing import build_module

from .conftest import SM90, lowered_for_gpu, needs_ptxas
from .suite import SUITE

KERNELS = Path(__file__).parent.parent / "loop" / "kernels"


@pytest.mark.parametrize("name", sorted(SUITE))
def test_gpu_scheduled_kernels_compute_what_the_graph_interpreter_computes(name: str) -> None:
    case = SUITE[name]
    module = case.module()
    inputs = case.inputs()
    lowered = lowered_for_gpu(module)
    for kernel in functions(lowered):
        kinds = {op.attr("kind") for op in loops_of(kernel)}
        assert {"gpu_block", "gpu_thread"} <= kinds, f"@{kernel.attributes['sym_name']} is not bound to the grid"
    got = run_plan(lowered, inputs)
    want = interp.run(module, inputs)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=2e-5 if w.dtype != np.float16 else 1e-3, atol=1e-5)


@needs_ptxas
@pytest.mark.parametrize("name", sorted(SUITE))
def test_every_suite_kernel_is_valid_ptx_for_ptxas(name: str) -> None:
    module = compile_ptx(lowered_for_gpu(SUITE[name].module()), SM90)
    assert ".target sm_90" in module.ptx and ".entry" in module.ptx
    assert module.launches and all(launch.block[0] >= 1 for launch in module.launches.values())
    assert assemble(module.ptx, "sm_90")[:4] == b"\x7fELF"


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_120"])
def test_ptx_for_each_architecture_assembles(arch: str) -> None:
    target = parse_target(f"cuda:{arch}")
    module = compile_ptx(lowered_for_gpu(SUITE["softmax"].module(), target), target)
    assert f".target {arch}" in module.ptx
    assemble(module.ptx, arch)


def test_kernel_abi_address_spaces_and_special_registers() -> None:
    module = compile_ptx(lowered_for_gpu(SUITE["add_broadcast"].module()), SM90)
    assert "ptx_kernel" in module.llvm_ir and "ptr addrspace(1)" in module.llvm_ir
    assert "inttoptr" not in module.llvm_ir and "getelementptr" in module.llvm_ir
    assert "%ctaid.x" in module.ptx and "%tid.x" in module.ptx and "ld.global" in module.ptx
    (launch,) = module.launches.values()
    assert launch == Launch((1, 1, 1), (192, 1, 1), 0)  # 5 x 37 = 185 elements: one block of whole warps


def test_shared_memory_and_barriers_of_a_hand_scheduled_kernel() -> None:
    loop_module = parse_module((KERNELS / "matmul_shared.mlir").read_text())
    module = compile_ptx(loop_module, SM90)
    assert "addrspace(3)" in module.llvm_ir
    assert ".shared" in module.ptx and "bar.sync" in module.ptx
    assert module.launches["matmul"] == Launch((2, 2, 1), (4, 4, 1), 2 * 4 * 4 * 4)
    if ptxas_path() is not None:
        assemble(module.ptx, "sm_90")


def test_gpu_loops_need_constant_trip_counts() -> None:
    text = (KERNELS / "elementwise_add.mlir").read_text().replace('"parallel"', '"gpu_thread", axis = 0')
    with pytest.raises(CompileError, match=r"'loop.for' of kind \"gpu_thread\" needs constant bounds"):
        compile_ptx(parse_module(text), SM90)


def test_math_without_a_gpu_instruction_is_a_clear_error() -> None:
    module = build_module([TensorType((4,), f64)], lambda x: graph.exp(x))
    with pytest.raises(CompileError, match=r"'loop.exp' on f64 is not supported by the NVPTX backend"):
        compile_ptx(lowered_for_gpu(module), SM90)
    module = build_module([TensorType((4,), f64)], lambda x: graph.sin(x))
    with pytest.raises(CompileError, match=r"'loop.sin' on f64 is not supported by the NVPTX backend"):
        compile_ptx(lowered_for_gpu(module), SM90)


def test_trigonometry_of_f32_decomposes_into_valid_ptx() -> None:
    """sin, cos, atan, asin and acos have no NVPTX instruction: the shared decompositions (refused before) give
    PTX that ptxas takes and a GPU schedule that computes what the interpreter does."""
    module = build_module(
        [TensorType((64,), f32)],
        lambda x: graph.add(
            graph.add(graph.sin(x), graph.cos(x)),
            graph.add(graph.atan(x), graph.add(graph.asin(graph.tanh(x)), graph.acos(graph.tanh(x)))),
        ),
    )
    lowered = lowered_for_gpu(module)
    assert not any(op.name in ("loop.sin", "loop.cos", "loop.atan", "loop.asin", "loop.acos") for op in lowered.walk())
    ptx = compile_ptx(lowered, SM90)
    if ptxas_path() is not None:
        assemble(ptx.ptx, "sm_90")
    x = np.random.default_rng(0).uniform(-20, 20, 64).astype(np.float32)
    (got,) = run_plan(lowered, [x])
    (want,) = interp.run(module, [x])
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@needs_ptxas
def test_ptxas_messages_reach_the_user() -> None:
    with pytest.raises(PtxasError, match="ptxas rejected the PTX for sm_90"):
        assemble(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n", "sm_90")


@needs_ptxas
def test_resource_usage_names_each_kernel_with_its_registers_and_spills() -> None:
    ptx = compile_ptx(lowered_for_gpu(SUITE["mlp_block"].module()), SM90)
    usage = resource_usage(ptx.ptx, "sm_90")
    assert set(usage) == set(ptx.launches) and len(usage) > 1
    for used in usage.values():
        assert 0 < used.registers <= 255 and used.spill_stores == used.spill_loads == 0
    with pytest.raises(PtxasError, match="ptxas rejected the PTX for sm_90"):
        resource_usage(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n", "sm_90")
