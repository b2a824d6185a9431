"""The k-bit GEMV on the GPU (``gpu_qgemv``) for every k in 1..8: packed for a warp, proven on the loop
interpreter against the graph interpreter, and assembled by ptxas."""

from __future__ import annotations

import numpy as np
import pytest

from tensorium.api import TARGET_PASSES
from tensorium.backends import interp
from tensorium.backends.cuda.ptx import NATIVE, assemble, compile_ptx
from tensorium.backends.plan_runner import run_plan
from tensorium.ir import Operation, graph
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.types import TensorType, f32
from tensorium.lowering.codegen import Codegen, run_codegen
from tensorium.lowering.space import Config, default_config, kernel_key, kernel_space
from tensorium.passes import PassManager
from tensorium.targets import parse_target
from tensorium.testing import build_module

from .conftest import SM90, needs_ptxas


def _quantized(rows: tuple[int, ...], n: int, depth: int, bits: int, group: int, signed: bool = False) -> Operation:
    """``x @ W.T`` for a constant W of ``n x depth``, quantized to ``bits`` and packed as the CUDA pipeline does."""
    weight = np.random.default_rng(bits).standard_normal((n, depth)).astype(np.float32)

    def body(x: object) -> object:
        w = graph.constant(value=DenseAttr.adopt(weight, TensorType((n, depth), f32)))
        return graph.matmul(x, w, transpose_b=True)

    module = build_module([TensorType((*rows, depth), f32)], body)
    quantize = f"quantize{{bits={bits},group={group},min-elements=0{',signed=true' if signed else ''}}}"
    PassManager.parse(f"{quantize},{TARGET_PASSES['cuda']}").run(module)
    return module


def _packed_op(module: Operation) -> Operation:
    return next(op for op in func_body(functions(module)[0]).ops if op.name == "quant.matmul_packed")


def check_family(
    module: Operation,
    family: str,
    configs: dict[str, Config] | None = None,
    seed: int = 0,
    rtol: float = 1e-5,
    atol: float = 1e-4,
) -> Operation:
    """``module``'s one kernel lowered for the GPU by ``family`` (with ``configs``), run on the loop interpreter
    against the graph interpreter; the lowered module."""
    state = run_codegen(Codegen(module, SM90, configs=configs or {}, native=NATIVE), until="decompose")
    assert state.lowered is not None
    (kernel,) = functions(state.lowered)
    assert str(kernel.attributes["config"]).startswith(f"{family}{{")
    x_type = func_body(functions(module)[0]).args[0].type
    x = np.random.default_rng(seed).standard_normal(x_type.static_shape).astype(np.float32)  # type: ignore[attr-defined]
    (got,) = run_plan(state.lowered, [x])
    (want,) = interp.run(module, [x])
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return state.lowered


def _check(module: Operation, configs: dict[str, Config] | None = None, seed: int = 0) -> Operation:
    """``module`` lowered as ``gpu_qgemv`` and checked on the loop interpreter (see :func:`check_family`)."""
    return check_family(module, "gpu_qgemv", configs, seed)


@pytest.mark.parametrize("bits", range(1, 9))
def test_every_k_from_1_to_8_matches_the_graph_interpreter(bits: int) -> None:
    module = _quantized((1,), 40, 64, bits, 32)  # two panels of 32 rows, the second mostly padding
    op = _packed_op(module)
    assert op.attr("lanes") == 32
    lowered = _check(module)
    kernel = functions(lowered)[0]
    assert {o.attr("kind") for o in kernel.walk() if o.name == "loop.for"} >= {"gpu_block", "gpu_thread"}


@pytest.mark.parametrize(("bits", "signed"), [(3, False), (5, True), (7, False)])
def test_warps_split_the_contraction_and_add_through_shared_memory(bits: int, signed: bool) -> None:
    module = _quantized((2,), 33, 128, bits, 64, signed)  # codes straddle words for k = 3, 5, 7
    op = _packed_op(module)
    space = kernel_space(op, SM90)
    assert space is not None and [k.values for k in space.knobs] == [(1, 2, 4)]
    config = Config("gpu_qgemv", (("warps", 4),))
    lowered = _check(module, {kernel_key(op): config}, seed=bits)
    launch = compile_ptx(lowered, SM90).launches[functions(lowered)[0].attributes["sym_name"]]  # type: ignore[index]
    assert launch.block == (128, 1, 1) and launch.grid == (2, 1, 1) and launch.shared_bytes == 3 * 2 * 32 * 4


def test_the_default_takes_eight_warps_when_each_gets_two_blocks() -> None:
    module = _quantized((1,), 32, 512, 4, 128)
    assert default_config(_packed_op(module), SM90) == Config("gpu_qgemv", (("warps", 8),))
    small = _quantized((1,), 32, 64, 4, 32)
    assert default_config(_packed_op(small), SM90) == Config("gpu_qgemv", (("warps", 1),))


def group_major(module: Operation) -> Operation:
    """``module`` with its packed product's scales and zero points rewritten from the panel-major layout that
    pack-quant-gpu makes to the group-major one ``[groups, padded rows]`` (which the kernels also take)."""
    op = _packed_op(module)
    for operand in op.operands[2:]:
        constant = operand.defining_op()
        assert constant is not None and constant.name == "graph.constant"
        panels = constant.attr("value").array
        assert panels.ndim == 3
        rows = np.ascontiguousarray(panels.transpose(1, 0, 2).reshape(panels.shape[1], -1))
        constant.attributes["value"] = DenseAttr.adopt(rows, TensorType(rows.shape, f32))
        operand.type = TensorType(rows.shape, f32)
    return module


@pytest.mark.parametrize("bits", [2, 5])
def test_group_major_scales_give_the_same_products(bits: int) -> None:
    module = group_major(_quantized((1,), 40, 64, bits, 32))
    assert _packed_op(module).operands[2].type.shape == (2, 64)  # type: ignore[attr-defined]
    _check(module)


def test_products_with_more_rows_take_the_gemm_and_fused_epilogues_the_general_kernel() -> None:
    many = _quantized((16,), 32, 64, 4, 32)  # prefill: packed too, for gpu_qgemm (tests/cuda_backend/test_gpu_qgemm.py)
    assert [op.name for op in func_body(functions(many)[0]).ops if op.name.startswith("quant.")] == [
        "quant.matmul_packed"
    ]
    assert str(default_config(_packed_op(many), SM90)).startswith("gpu_qgemm{")
    weight = np.ones((8, 32), np.float32)

    def body(x: object, b: object) -> object:
        w = graph.constant(value=DenseAttr.adopt(weight, TensorType((8, 32), f32)))
        return graph.relu(graph.add(graph.matmul(x, w, transpose_b=True), b))

    fused = build_module([TensorType((1, 32), f32), TensorType((8,), f32)], body)
    PassManager.parse(f"quantize{{bits=4,group=32,min-elements=0}},{TARGET_PASSES['cuda']}").run(fused)
    ops = [op.name for op in func_body(functions(fused)[0]).ops]
    assert "graph.fused" in ops and "quant.matmul_packed" not in ops  # the dequantizing kernel, in the epilogue's


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
def test_every_k_assembles_for_ptxas(arch: str) -> None:
    target = parse_target(f"cuda:{arch}")
    for bits in range(1, 9):
        module = _quantized((1,), 64, 256, bits, 128)
        state = run_codegen(Codegen(module, target, native=NATIVE), until="decompose")
        assert state.lowered is not None
        ptx = compile_ptx(state.lowered, target)
        assert ptx.ptx.count("ld.global") >= bits + 32  # k words and 32 activations per block
        assemble(ptx.ptx, arch)
