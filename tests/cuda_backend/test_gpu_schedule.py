"""GPU schedules: binding loops to blocks and threads, the default schedule of each kernel, the threads knob."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tensorium.backends import interp, loop_interp
from tensorium.backends.cuda.ptx import NATIVE, compile_ptx
from tensorium.backends.plan_runner import run_plan
from tensorium.errors import ScheduleError
from tensorium.ir import Operation, graph, parse_module
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.types import TensorType, f16, f32
from tensorium.ir.verifier import verify
from tensorium.lowering.codegen import Codegen, run_codegen
from tensorium.lowering.gpu_schedule import Bind, OneThread, apply_gpu_schedule, bind, gpu_schedule
from tensorium.lowering.schedule import Fuse, loop_name, loops_of
from tensorium.lowering.space import Config, default_config, kernel_key, kernel_space
from tensorium.passes import PassManager
from tensorium.targets import parse_target
from tensorium.testing import build_module

from .conftest import SM90, lowered_for_gpu
from .suite import SUITE

KERNELS = Path(__file__).parent.parent / "loop" / "kernels"


def _add_kernel() -> object:
    return parse_module((KERNELS / "elementwise_add.mlir").read_text())


@pytest.mark.parametrize(("threads", "blocks", "n"), [(4, 3, 29), (32, 1, 5), (1, 1, 7), (8, 2, 16)])
def test_bind_is_a_grid_stride_loop_that_covers_every_iteration_once(threads: int, blocks: int, n: int) -> None:
    module = _add_kernel()
    (kernel,) = functions(module)  # type: ignore[arg-type]
    bind(kernel, "i", threads, blocks)
    verify(module)  # type: ignore[arg-type]
    kinds = [(loop_name(op), op.attr("kind"), op.attr("axis")) for op in loops_of(kernel)]
    assert kinds == [("i_b", "gpu_block", 0), ("i_t", "gpu_thread", 0), ("i", "serial", None)]
    a, b = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
    c = np.full(n, np.nan, np.float32)
    loop_interp.run(module, [a, b, c])  # type: ignore[arg-type]
    np.testing.assert_array_equal(c, a + b)  # dynamic n: a grid of fixed size strides over all of it
    launch = compile_ptx(module, SM90).launches["add"]  # type: ignore[arg-type]
    assert launch.grid == (blocks, 1, 1) and launch.block == (threads, 1, 1)


def test_bind_refuses_accumulations_and_bound_loops() -> None:
    module = lowered_for_gpu(SUITE["reduce_all"].module())
    (kernel,) = functions(module)
    assert gpu_schedule(kernel, SM90) == ()  # bound already
    fresh = parse_module((KERNELS / "reduce_mean.mlir").read_text())
    (reduce,) = functions(fresh)
    inner = [loop_name(op) for op in loops_of(reduce)][-1]
    with pytest.raises(ScheduleError, match="cannot be parallel"):
        bind(reduce, inner, 32, 1)
    bind(reduce, loop_name(loops_of(reduce)[0]), 32, 1)
    with pytest.raises(ScheduleError, match="already inside a gpu loop"):
        bind(reduce, inner, 32, 1)


def test_default_schedule_fuses_the_independent_band_and_sizes_the_grid() -> None:
    module = lowered_for_gpu(SUITE["transpose"].module())
    (kernel,) = functions(module)
    blocks = [op for op in loops_of(kernel) if op.attr("kind") == "gpu_block"]
    threads = [op for op in loops_of(kernel) if op.attr("kind") == "gpu_thread"]
    assert len(blocks) == len(threads) == 1
    launch = compile_ptx(module, SM90).launches[str(kernel.attributes["sym_name"])]
    assert launch.block == (64, 1, 1) and launch.grid == (1, 1, 1)  # 60 elements in whole warps


def test_a_kernel_with_no_bindable_loop_runs_on_one_thread() -> None:
    module = build_module([TensorType((6, 7), f32)], lambda x: graph.reduce_prod(x, axes=(0, 1)))
    lowered = lowered_for_gpu(module, SM90)
    (kernel,) = functions(lowered)
    top = [op for op in func_body(kernel).ops if op.name == "loop.for"]
    assert len(top) == 1 and top[0].attr("kind") == "gpu_block"
    launch = compile_ptx(lowered, SM90).launches[str(kernel.attributes["sym_name"])]
    assert launch.grid == (1, 1, 1) and launch.block == (1, 1, 1)


def test_schedules_print_as_text() -> None:
    steps = (Fuse("i0", "i1"), Bind("i0_i1", 128, 4), OneThread())
    assert "; ".join(map(str, steps)) == "fuse(i0, i1); bind(i0_i1, 128, 4); one_thread()"


def test_cuda_kernel_spaces_carry_the_threads_knob_and_it_sizes_the_block() -> None:
    module = build_module([TensorType((300, 8), f32)], lambda x: graph.reduce_prod(x, axes=(1,)))
    op = func_body(functions(module)[0]).ops[-2]
    space = kernel_space(op, SM90)
    assert space is not None and "threads" in [k.name for k in space.knobs]
    cpu_space = kernel_space(op, parse_target("cpu:x86-64-v3"))
    assert cpu_space is not None and "threads" not in [k.name for k in cpu_space.knobs]
    default = default_config(op, SM90)
    assert default is not None and default["threads"] == 256

    (launch,) = compile_ptx(lowered_for_gpu(module), SM90).launches.values()
    assert (launch.block, launch.grid) == ((256, 1, 1), (2, 1, 1))  # 300 rows
    config = default.replace(threads=64)
    state = run_codegen(Codegen(module, SM90, configs={kernel_key(op): config}, native=NATIVE), until="decompose")
    assert state.lowered is not None
    (launch,) = compile_ptx(state.lowered, SM90).launches.values()
    assert (launch.block, launch.grid) == ((64, 1, 1), (5, 1, 1))
    with pytest.raises(ScheduleError, match="threads=48 is not one of"):
        space.check(Config.parse(str(default).replace("threads=256", "threads=48")))


def test_the_gemm_default_on_cuda_allocates_nothing_at_run_time() -> None:
    module = lowered_for_gpu(SUITE["matmul_transposed_b"].module())
    for op in module.walk():
        if op.name == "loop.alloc":
            assert op.attr("type").is_static
    apply_gpu_schedule(functions(module)[0], ())  # an empty schedule changes nothing


@pytest.mark.parametrize(
    "point",
    [
        "gpu_gemm{bm=16,bn=32,bk=8,tm=1,tn=4,stages=2,vector=false,async_copy=false,unroll=false}",
        "gpu_gemm{bm=32,bn=16,bk=32,tm=4,tn=1,stages=1,vector=false,async_copy=false,unroll=false}",
        "gpu_gemm{bm=16,bn=32,bk=8,tm=1,tn=4,stages=2,vector=false,async_copy=false,unroll=true}",
    ],
)
def test_gpu_gemm_points_compute_the_product_through_shared_tiles(point: str) -> None:
    case = SUITE["matmul_batched"]
    module = case.module()
    op = func_body(functions(module)[0]).ops[-2]
    config = Config.parse(point)
    state = run_codegen(Codegen(module, SM90, configs={kernel_key(op): config}, native=NATIVE), until="decompose")
    assert state.lowered is not None
    (kernel,) = functions(state.lowered)
    assert kernel.attributes["config"] == point
    inputs = case.inputs()
    (got,) = run_plan(state.lowered, inputs)
    np.testing.assert_allclose(got, inputs[0] @ inputs[1], rtol=1e-5, atol=1e-5)
    ptx = compile_ptx(state.lowered, SM90)
    (launch,) = ptx.launches.values()
    assert launch.block == (128, 1, 1) and launch.grid[2] == 2
    tiles = 4 * config.int("bk") * (config.int("bm") + config.int("bn"))
    assert launch.shared_bytes == tiles * config.int("stages")
    (step,) = [o for o in loops_of(kernel) if loop_name(o) == "step"]
    barriers = [o for o in step.regions[0].block.ops if o.name == "loop.barrier"]
    assert len(barriers) == 3 - config.int("stages")  # double buffering: one barrier per step instead of two
    kinds = {o.attr("kind", "serial") for o in loops_of(kernel) if loop_name(o) == "kk"}
    assert kinds == {"unroll" if config.as_dict()["unroll"] else "serial"}
    assert "bar.sync" in ptx.ptx and "st.shared" in ptx.ptx and "ld.shared" in ptx.ptx


def test_gpu_gemm_space_keeps_to_whole_warps_and_shared_memory() -> None:
    module = SUITE["matmul"].module()
    op = func_body(functions(module)[0]).ops[-2]
    space = kernel_space(op, SM90)
    assert space is not None and space.family == "gpu_gemm"
    points = list(space.points())
    for p in points:
        threads = (p.int("bm") // p.int("tm")) * (p.int("bn") // p.int("tn"))
        assert threads % 32 == 0 and threads <= 1024
        assert 4 * p.int("bk") * (p.int("bm") + p.int("bn")) * p.int("stages") <= SM90.l1d
    assert default_config(op, SM90) in points
    fused = SUITE["matmul_bias_relu"].module()  # a fused epilogue runs in the tiled GEMM's stores
    fused_space = kernel_space(func_body(functions(fused)[0]).ops[-2], SM90)
    assert fused_space is not None and fused_space.family == "gpu_gemm"


PROLOGUE_GROUP = """
module {
  func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x12xf32>) -> tensor<8x12xf32> {
    %0 = graph.fused %x, %w (
      {
      ^bb0(%a: tensor<8x16xf32>, %b: tensor<16x12xf32>):
        %1 = graph.relu %a : (tensor<8x16xf32>) -> tensor<8x16xf32>
        %2 = graph.matmul %1, %b : (tensor<8x16xf32>, tensor<16x12xf32>) -> tensor<8x12xf32>
        %3 = graph.tanh %2 : (tensor<8x12xf32>) -> tensor<8x12xf32>
        graph.yield %3 : (tensor<8x12xf32>) -> ()
      }
    ) : (tensor<8x16xf32>, tensor<16x12xf32>) -> tensor<8x12xf32>
    func.return %0 : tensor<8x12xf32>
  }
}
"""


def test_a_group_computing_into_the_gemm_operands_keeps_the_general_gemm() -> None:
    """The tiled GEMM copies its operands by vector loads and cp.async, which cannot inline a producer: a group
    with one (relu of A here) keeps the ``gemm`` family, bound to the grid, and still computes the right thing."""
    module = parse_module(PROLOGUE_GROUP)
    group = func_body(functions(module)[0]).ops[0]
    space = kernel_space(group, SM90)
    assert space is not None and space.family == "gemm"
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((16, 12)).astype(np.float32)
    (got,) = run_plan(lowered_for_gpu(module), [x, w])
    np.testing.assert_allclose(got, np.tanh(np.maximum(x, 0) @ w), rtol=1e-5, atol=1e-5)


FUSED_POINTS = [
    None,
    "gpu_gemm{bm=16,bn=16,bk=8,tm=2,tn=2,stages=2,vector=true,async_copy=true,unroll=false}",
    "gpu_gemm{bm=32,bn=16,bk=16,tm=4,tn=1,stages=1,vector=false,async_copy=false,unroll=false}",
]


@pytest.mark.parametrize("point", FUSED_POINTS)
def test_fused_epilogues_run_in_the_tiled_gemm_stores(point: str | None) -> None:
    """Bias, activation and a residual read at each element of C, in the tiled GEMM's stores (edges included:
    12 x 20 by 20 x 24 leaves partial tiles), match the graph interpreter on the loop interpreter."""
    shapes = ((12, 20), (20, 24), (24,), (12, 24))

    def body(a: object, b: object, bias: object, residual: object) -> object:
        return graph.add(graph.gelu(graph.add(graph.matmul(a, b), bias)), residual)

    module = build_module([TensorType(s, f32) for s in shapes], body)
    PassManager.parse("fuse").run(module)
    (group,) = [op for op in func_body(functions(module)[0]).ops if op.name == "graph.fused"]
    space = kernel_space(group, SM90)
    assert space is not None and space.family == "gpu_gemm"
    configs = {} if point is None else {kernel_key(group): space.check(Config.parse(point))}
    state = run_codegen(Codegen(module, SM90, configs=configs, native=NATIVE), until="decompose")
    assert state.lowered is not None
    (kernel,) = functions(state.lowered)
    assert kernel.attributes["config"].startswith("gpu_gemm{")
    rng = np.random.default_rng(4)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    (got,) = run_plan(state.lowered, inputs)
    (want,) = interp.run(module, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    compile_ptx(state.lowered, SM90)


ROWS = ["reduce_sum", "reduce_max", "reduce_all", "softmax", "log_softmax", "layer_norm", "rms_norm"]


def _rows_with(name: str, warp: bool) -> tuple[Operation, int]:
    """Suite program ``name`` lowered for the GPU with its row kernel's ``warp`` knob set; its threads."""
    module = SUITE[name].module()
    op = next(o for o in func_body(functions(module)[0]).ops if o.name.startswith("graph."))
    config = default_config(op, SM90)
    assert config is not None and config["warp"] is True  # shuffles are the default on CUDA
    state = run_codegen(
        Codegen(module, SM90, configs={kernel_key(op): config.replace(warp=warp)}, native=NATIVE), until="decompose"
    )
    assert state.lowered is not None
    verify(state.lowered)
    return state.lowered, config.int("threads")


@pytest.mark.parametrize("name", ROWS)
def test_row_reductions_use_a_block_per_row_and_a_shared_memory_tree(name: str) -> None:
    lowered, threads = _rows_with(name, warp=False)
    (kernel,) = functions(lowered)
    assert str(kernel.attributes["config"]) == f"gpu_rows{{threads={threads},warp=false}}"
    barriers = [op for op in kernel.walk() if op.name == "loop.barrier"]
    passes = {"layer_norm": 3}.get(name, 2 if "softmax" in name else 1)  # layer norm: mean, its correction, variance
    assert len(barriers) == passes * (threads.bit_length() + 1)  # after the partials, each halving, the total
    assert not any(op.name == "loop.shuffle" for op in kernel.walk())
    ptx = compile_ptx(lowered, SM90)
    (launch,) = ptx.launches.values()
    assert launch.block == (threads, 1, 1) and launch.shared_bytes == 4 * threads
    assert "bar.sync" in ptx.ptx and "st.shared" in ptx.ptx
    got = run_plan(lowered, SUITE[name].inputs())
    for g, w in zip(got, interp.run(SUITE[name].module(), SUITE[name].inputs())):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("name", ROWS)
def test_row_reductions_combine_within_warps_by_shuffles(name: str) -> None:
    lowered, threads = _rows_with(name, warp=True)
    (kernel,) = functions(lowered)
    warps = threads // 32
    passes = {"layer_norm": 3}.get(name, 2 if "softmax" in name else 1)  # layer norm: mean, its correction, variance
    shuffles = [op for op in kernel.walk() if op.name == "loop.shuffle"]
    barriers = [op for op in kernel.walk() if op.name == "loop.barrier"]
    # five xor steps in each warp, log2(warps) across the warps' results, two barriers around those
    assert len(shuffles) == passes * (5 + (warps.bit_length() - 1)) and {op.attr("mode") for op in shuffles} == {"xor"}
    assert len(barriers) == (passes * 2 if warps > 1 else 0)
    ptx = compile_ptx(lowered, SM90)
    (launch,) = ptx.launches.values()
    assert launch.block == (threads, 1, 1) and launch.shared_bytes == (4 * warps if warps > 1 else 0)
    assert "shfl.sync.bfly.b32" in ptx.ptx
    got = run_plan(lowered, SUITE[name].inputs())  # the loop interpreter runs the shuffles in lockstep
    for g, w in zip(got, interp.run(SUITE[name].module(), SUITE[name].inputs())):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [32, 64, 256, 1024])
def test_warp_reductions_of_rows_for_every_block_size(threads: int) -> None:
    module = build_module([TensorType((2, 300), f32)], lambda x: graph.softmax(x))
    op = next(o for o in func_body(functions(module)[0]).ops if o.name == "graph.softmax")
    config = Config("gpu_rows", (("threads", threads), ("warp", True)))
    state = run_codegen(Codegen(module, SM90, configs={kernel_key(op): config}, native=NATIVE), until="decompose")
    assert state.lowered is not None
    x = np.random.default_rng(1).standard_normal((2, 300)).astype(np.float32) * 4
    (got,) = run_plan(state.lowered, [x])
    (want,) = interp.run(module, [x])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-7)


def test_a_fused_epilogue_of_an_f16_product_runs_in_the_mma_kernel_stores() -> None:
    shapes = ((24, 32), (32, 40), (40,))
    module = build_module(
        [TensorType(s, f16) for s in shapes], lambda a, b, c: graph.relu(graph.add(graph.matmul(a, b), c))
    )
    PassManager.parse("fuse").run(module)
    (group,) = [op for op in func_body(functions(module)[0]).ops if op.name == "graph.fused"]
    config = default_config(group, SM90)
    assert config is not None and config.family == "gpu_gemm" and config.as_dict()["mma"] is True
    lowered = lowered_for_gpu(module)
    assert any(op.name == "loop.mma" for op in lowered.walk())
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    (got,) = run_plan(lowered, inputs)
    (want,) = interp.run(module, inputs)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)
