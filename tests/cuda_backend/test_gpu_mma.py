"""f16 GEMM through ``mma.sync``: the ``loop.mma`` op on the loop interpreter (its fragment layout) and through
ptxas (m16n8k16, two m16n8k8 on Turing), and ``gpu_gemm``'s ``mma`` knob proven against the graph interpreter."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.cuda.ptx import NATIVE, assemble, compile_ptx
from tensorium.backends.loop_interp import run
from tensorium.backends.plan_runner import run_plan
from tensorium.errors import InterpreterError
from tensorium.ir import InsertionPoint, Operation, func_body, graph, make_func, make_module, set_results
from tensorium.ir.dialects import loop
from tensorium.ir.dialects.builtin import functions
from tensorium.ir.dialects.loop.warp import accumulator_position
from tensorium.ir.types import BufferType, TensorType, f16, f32, index
from tensorium.ir.verifier import verify
from tensorium.lowering.codegen import Codegen, run_codegen
from tensorium.lowering.space import Config, default_config, kernel_key, kernel_space
from tensorium.targets import parse_target
from tensorium.testing import build_module

from .conftest import SM90, needs_ptxas


def _one_tile(row_of_b: int = 0) -> Operation:
    """One warp: A (16 x 16) and B (16 x 8) copied to shared memory, one ``loop.mma``, C written per fragment;
    lanes from 16 on read B's tile ``row_of_b`` rows further down when it is not 0 (positions that differ)."""
    a_t, b_t, c_t = BufferType((16, 16), f16), BufferType((32, 8), f16), BufferType((16, 8), f32)
    f = make_func("mma", [a_t, b_t, c_t], arg_names=["a", "b", "c"])
    a, b, c = func_body(f).args

    def i(v: int) -> object:
        return loop.const(value=v, dtype=index)

    with InsertionPoint(func_body(f)):
        sa = loop.alloc(type=BufferType((16, 16), f16, "shared"))
        sb = loop.alloc(type=BufferType((32, 8), f16, "shared"))
        with loop.for_(0, 32, kind="gpu_thread", axis=0, name="t") as t:
            with loop.for_(t, 256, 32) as e:
                at = (loop.div(e, i(16)), loop.rem(e, i(16)))
                loop.store(loop.load(a, *at), sa, *at)
                at = (loop.div(e, i(8)), loop.rem(e, i(8)))
                loop.store(loop.load(b, *at), sb, *at)
            loop.barrier()
            acc = loop.alloc(type=BufferType((4,), f32, "local"))
            for slot in range(4):
                loop.store(loop.const(value=1.0, dtype=f32), acc, i(slot))
            b_row = loop.mul(loop.div(t, i(16)), i(row_of_b))
            loop.mma(acc, sa, i(0), i(0), sb, b_row, i(0))
            group, pair = loop.div(t, i(4)), loop.mul(loop.rem(t, i(4)), i(2))
            for slot in range(4):
                row, col = loop.add(group, i(8 * (slot // 2))), loop.add(pair, i(slot % 2))
                loop.store(loop.load(acc, i(slot)), c, row, col)
    set_results(f, [])
    module = make_module([f])
    verify(module)
    return module


def test_a_warp_adds_the_tile_product_to_the_accumulator_fragments() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((16, 16)).astype(np.float16), rng.standard_normal((32, 8)).astype(np.float16)
    c = np.zeros((16, 8), np.float32)
    run(_one_tile(), [a, b, c])
    np.testing.assert_allclose(c, a.astype(np.float32) @ b[:16].astype(np.float32) + 1, rtol=1e-6)
    assert accumulator_position(5, 3) == (9, 3) and accumulator_position(31, 0) == (7, 6)


def test_mma_tile_positions_must_agree_across_a_warp() -> None:
    args = [np.zeros((16, 16), np.float16), np.zeros((32, 8), np.float16), np.zeros((16, 8), np.float32)]
    with pytest.raises(InterpreterError, match=re.escape("tile positions differ between the lanes of a warp")):
        run(_one_tile(row_of_b=16), args)


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_mma_is_mma_sync_for_ptxas_from_sm_80_on(arch: str) -> None:
    ptx = compile_ptx(_one_tile(), parse_target(f"cuda:{arch}")).ptx
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assemble(ptx, arch)


@needs_ptxas
def test_on_turing_mma_is_two_m16n8k8_steps() -> None:
    ptx = compile_ptx(_one_tile(), parse_target("cuda:sm_75")).ptx
    assert ptx.count("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32") == 2 and "m16n8k16" not in ptx
    assemble(ptx, "sm_75")


def _matmul(m: int, k: int, n: int, transpose_b: bool = False, batch: tuple[int, ...] = ()) -> Operation:
    b_shape = (*batch, n, k) if transpose_b else (*batch, k, n)
    return build_module(
        [TensorType((*batch, m, k), f16), TensorType(b_shape, f16)],
        lambda a, b: graph.matmul(a, b, transpose_b=transpose_b),
    )


def _op(module: Operation) -> Operation:
    return next(o for o in func_body(functions(module)[0]).ops if o.name == "graph.matmul")


def _check(module: Operation, config: str | None = None) -> Operation:
    configs = {kernel_key(_op(module)): Config.parse(config)} if config else {}
    state = run_codegen(Codegen(module, SM90, configs=configs, native=NATIVE), until="decompose")
    assert state.lowered is not None
    rng = np.random.default_rng(3)
    shapes = [a.type.static_shape for a in func_body(functions(module)[0]).args]  # type: ignore[attr-defined]
    inputs = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    (got,) = run_plan(state.lowered, inputs)
    (want,) = interp.run(module, inputs)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)
    return state.lowered


def test_f16_products_default_to_mma_on_every_cuda_target_and_not_on_webgpu() -> None:
    op = _op(_matmul(40, 48, 24))
    for arch, copies in (("sm_75", "false"), ("sm_90", "true")):  # 16-byte groups by cp.async from sm_80 on
        tiles = "bm=32,bn=32,bk=16,tm=1,tn=2,stages=2,mma=true"
        point = f"gpu_gemm{{{tiles},vector={copies},async_copy={copies},unroll=false}}"
        assert default_config(op, parse_target(f"cuda:{arch}")) == Config.parse(point)
    webgpu = kernel_space(op, parse_target("webgpu"))
    assert webgpu is None or "mma" not in [k.name for k in webgpu.knobs]
    f32_space = kernel_space(_op(build_module([TensorType((8, 8), f32)] * 2, graph.matmul)), SM90)
    assert f32_space is not None and "mma" not in [k.name for k in f32_space.knobs]


@pytest.mark.parametrize(
    ("shape", "config"),
    [
        ((40, 48, 24), None),
        (
            (40, 48, 24),
            "gpu_gemm{bm=64,bn=16,bk=32,tm=2,tn=1,stages=1,mma=true,vector=false,async_copy=false,unroll=false}",
        ),
        (
            (20, 24, 12),
            "gpu_gemm{bm=16,bn=16,bk=8,tm=2,tn=2,stages=1,mma=false,vector=false,async_copy=false,unroll=false}",
        ),
    ],
)
def test_f16_gemm_with_and_without_mma_matches_the_graph_interpreter(
    shape: tuple[int, int, int], config: str | None
) -> None:
    lowered = _check(_matmul(*shape), config)
    uses_mma = any(op.name == "loop.mma" for op in lowered.walk())
    assert uses_mma == (config is None or "mma=true" in config)


def test_mma_gemm_of_a_batch_with_b_transposed() -> None:
    _check(_matmul(17, 32, 9, transpose_b=True, batch=(2,)))


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
def test_the_mma_gemm_assembles_for_ptxas(arch: str) -> None:
    target = parse_target(f"cuda:{arch}")
    module = _matmul(256, 256, 256)
    state = run_codegen(Codegen(module, target, native=NATIVE), until="decompose")
    assert state.lowered is not None
    ptx = compile_ptx(state.lowered, target)
    (launch,) = ptx.launches.values()
    # two stages of f16 A and B tiles, their rows padded by 8 elements (conflict-free ldmatrix)
    assert launch.block == (128, 1, 1) and launch.shared_bytes == 2 * 2 * (64 * (32 + 8) + 32 * (64 + 8))
    steps = 2 * 4 * 2  # two 16-steps of bk, 2 x 4 tiles per warp (each two m16n8k8 on sm_75)
    assert ptx.ptx.count("mma.sync") == steps * (2 if arch == "sm_75" else 1)
    # each fragment loaded once per 16-step by ldmatrix: 2 of A (x4) and 4 of B (x2, transposed) per warp tile
    assert ptx.ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 2 * 2
    assert ptx.ptx.count("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16") == 2 * 4
    assert "ld.shared.u16" not in ptx.ptx and "ld.shared.b16" not in ptx.ptx
    assemble(ptx.ptx, arch)
