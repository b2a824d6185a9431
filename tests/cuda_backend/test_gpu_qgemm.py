"""The k-bit GEMM on the GPU (``gpu_qgemm``, prefill: more than 8 activation rows) for every k in 1..8, signed and
unsigned, groups of 32 and 128: weight tiles unpacked and dequantized into shared memory inside the kernel, proven on
the loop interpreter against the graph interpreter, with f32 tiles and through ``mma.sync``, and assembled by
ptxas for sm_75, sm_80 and sm_90 without spills."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from tensorium.api import TARGET_PASSES
from tensorium.backends import interp
from tensorium.backends.cuda.ptx import NATIVE, compile_ptx, ptxas_path
from tensorium.backends.plan_runner import run_plan
from tensorium.errors import ScheduleError
from tensorium.ir import Operation, graph
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.types import Sym, TensorType, f32
from tensorium.lowering.codegen import Codegen, run_codegen
from tensorium.lowering.space import Config, default_config, kernel_key, kernel_space
from tensorium.passes import PassManager
from tensorium.targets import parse_target
from tensorium.testing import build_module

from .conftest import SM90, needs_ptxas
from .test_gpu_qgemv import _packed_op, _quantized, check_family, group_major


def _check(
    module: Operation, config: str | None = None, rtol: float = 1e-5, atol: float = 1e-4, seed: int = 0
) -> Operation:
    """``module``'s k-bit product lowered for the GPU as ``gpu_qgemm`` (at ``config`` when given), run on the
    loop interpreter against the graph interpreter; the lowered module."""
    configs = {kernel_key(_packed_op(module)): Config.parse(config)} if config else {}
    return check_family(module, "gpu_qgemm", configs, seed, rtol, atol)


@pytest.mark.parametrize("bits", range(1, 9))
def test_every_k_from_1_to_8_matches_the_graph_interpreter(bits: int) -> None:
    module = _quantized((9,), 16, 32, bits, 32, signed=bits % 2 == 0)  # 9 rows: one more than gpu_qgemv takes
    op = _packed_op(module)
    assert op.attr("lanes") == 32 and op.attr("cols") == 16
    assert default_config(op, SM90) == Config.parse("gpu_qgemm{bm=16,bn=16,bk=32,tm=2,tn=2,stages=1,mma=false}")
    lowered = _check(module, seed=bits)
    kernel = functions(lowered)[0]
    shared = [o for o in kernel.walk() if o.name == "loop.alloc" and o.attr("type").space == "shared"]
    assert [o.attr("type").static_shape for o in shared] == [(1, 16, 32), (1, 32, 16)]  # tiles, not the weight
    assert not any(o.name.startswith("quant.") for o in kernel.walk())


def test_group_major_scales_give_the_same_products() -> None:
    module = group_major(_quantized((9,), 40, 64, 3, 32))
    assert _packed_op(module).operands[2].type.shape == (2, 64)  # type: ignore[attr-defined]
    _check(module, seed=3)


def test_odd_shapes_several_column_tiles_and_double_buffered_steps() -> None:
    # 15 rows as 3 x 5, 20 weight rows over two column tiles of 16 (the second mostly padding), codes straddling
    # words (k = 3), two steps of 32 with double-buffered tiles
    module = _quantized((3, 5), 20, 64, 3, 32, signed=True)
    lowered = _check(module, "gpu_qgemm{bm=16,bn=16,bk=32,tm=2,tn=4,stages=2,mma=false}", seed=3)
    launch = compile_ptx(lowered, SM90).launches[functions(lowered)[0].attributes["sym_name"]]  # type: ignore[index]
    assert launch.grid == (2, 1, 1) and launch.block == (32, 1, 1) and launch.shared_bytes == 2 * 4 * 32 * (16 + 16)


@pytest.mark.parametrize(("bits", "group", "signed"), [(2, 128, True), (5, 32, False), (8, 128, False)])
def test_mma_tiles_of_f16_after_dequantizing(bits: int, group: int, signed: bool) -> None:
    # 10 rows, 40 weight rows over two column tiles of 32 (the second mostly padding), K = 128 in two steps of
    # 64 (double-buffered); f16 rounding of activations and weights
    module = _quantized((10,), 40, 128, bits, group, signed)
    lowered = _check(module, "gpu_qgemm{bm=16,bn=32,bk=64,tm=1,tn=2,stages=2,mma=true}", rtol=2e-2, atol=5e-2)
    assert any(o.name == "loop.mma" for o in functions(lowered)[0].walk())


def test_a_step_reaching_past_the_contraction_reads_zeros() -> None:
    module = _quantized((10,), 8, 96, 6, 32)  # K = 96 in steps of 64: the second step's last block is past K
    _check(module, "gpu_qgemm{bm=16,bn=16,bk=64,tm=1,tn=2,stages=1,mma=true}", rtol=2e-2, atol=5e-2)


def test_the_row_count_chooses_the_gemv_or_the_gemm() -> None:
    decode = _packed_op(_quantized((8,), 32, 64, 4, 32))
    prefill = _packed_op(_quantized((2, 16), 32, 64, 4, 32))
    assert str(default_config(decode, SM90)).startswith("gpu_qgemv{")
    assert str(default_config(prefill, SM90)).startswith("gpu_qgemm{")
    space = kernel_space(prefill, SM90)
    assert space is not None and [k.name for k in space.knobs] == ["bm", "bn", "bk", "tm", "tn", "stages", "mma"]
    assert dict((k.name, k.values) for k in space.knobs)["bk"] == (32, 64)
    with pytest.raises(ScheduleError, match="bk=16 is not one of 32, 64"):
        space.check(Config.parse("gpu_qgemm{bm=16,bn=16,bk=16,tm=2,tn=2,stages=1,mma=false}"))
    big = _packed_op(_quantized((512,), 1024, 256, 4, 128))
    assert default_config(big, SM90) == Config.parse("gpu_qgemm{bm=64,bn=64,bk=32,tm=4,tn=4,stages=2,mma=false}")


def _run_time_rows(lead: tuple[int | Sym, ...], n: int, depth: int, bits: int, group: int) -> Operation:
    """``x @ W.T`` (W constant, ``n x depth``, ``bits``-bit) with activations ``[*lead, depth]``, some lead dims
    symbolic, through the CUDA pipeline: packed for ``gpu_qgemm``."""
    weight = np.random.default_rng(bits).standard_normal((n, depth)).astype(np.float32)

    def body(x: object) -> object:
        w = graph.constant(value=DenseAttr.adopt(weight, TensorType((n, depth), f32)))
        return graph.matmul(x, w, transpose_b=True)

    module = build_module([TensorType((*lead, depth), f32)], body)
    PassManager.parse(f"quantize{{bits={bits},group={group},min-elements=0}},{TARGET_PASSES['cuda']}").run(module)
    return module


def _check_run_time_rows(
    module: Operation, config: str, shapes: list[tuple[int, ...]], rtol: float, atol: float
) -> Operation:
    """``module``'s product lowered as ``gpu_qgemm`` at ``config`` once, run on the loop interpreter for activations
    of each of ``shapes`` against the graph interpreter; the lowered module."""
    configs = {kernel_key(_packed_op(module)): Config.parse(config)}
    state = run_codegen(Codegen(module, SM90, configs=configs, native=NATIVE), until="decompose")
    assert state.lowered is not None
    (kernel,) = functions(state.lowered)
    assert str(kernel.attributes["config"]) == config
    for seed, shape in enumerate(shapes):
        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        (got,) = run_plan(state.lowered, [x])
        (want,) = interp.run(module, [x])
        assert got.shape == want.shape == (*shape[:-1], want.shape[-1])
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return state.lowered


def test_rows_known_only_at_run_time_take_the_gemm_with_a_fixed_grid() -> None:
    module = _run_time_rows((Sym("s"),), 4096, 256, 4, 128)
    op = _packed_op(module)
    assert [o.name for o in func_body(functions(module)[0]).ops if o.name.startswith("quant.")] == [
        "quant.matmul_packed"
    ]
    space = kernel_space(op, SM90)
    assert space is not None and space.knobs[-1].name == "row_blocks"
    assert space.knobs[-1].values == (1, 2, 4, 8, 16, 32, 64)
    # the large tiles (512 rows x 4096 columns is past 1024^2), one stage (two would not fit 48 KiB); 32 column
    # tiles of 128 take 16 row blocks to reach 264 blocks
    want = "gpu_qgemm{bm=128,bn=128,bk=32,tm=8,tn=8,stages=1,mma=false,row_blocks=16}"
    assert default_config(op, SM90) == Config.parse(want)
    state = run_codegen(Codegen(module, SM90, native=NATIVE), until="decompose")
    assert state.lowered is not None
    (kernel,) = functions(state.lowered)
    launch = compile_ptx(state.lowered, SM90).launches[kernel.attributes["sym_name"]]  # type: ignore[index]
    assert launch.grid == (32, 16, 1) and launch.block == (256, 1, 1)  # fixed when compiling, whatever the rows
    assert [o.attr("type").static_shape for o in kernel.walk() if o.name == "loop.alloc"][:2] == [
        (1, 128, 32),
        (1, 32, 128),
    ]


def test_run_time_rows_with_f32_tiles_guard_the_last_tile() -> None:
    # [2, s, 32] activations: 2 s rows through delinearized run-time sizes; one row block loops over both 16-row
    # tiles of s = 9 (18 rows, 14 of the second tile past M), and over the one tile of s = 1
    module = _run_time_rows((2, Sym("s")), 8, 32, 3, 32)
    config = "gpu_qgemm{bm=16,bn=16,bk=32,tm=2,tn=4,stages=1,mma=false,row_blocks=1}"
    lowered = _check_run_time_rows(module, config, [(2, 9, 32), (2, 1, 32)], rtol=1e-5, atol=1e-4)
    row_tiles = [  # the loop over row tiles: serial, to a run-time bound, the K steps' barriers inside
        o
        for o in functions(lowered)[0].walk()
        if o.name == "loop.for"
        and o.attr("kind") == "serial"
        and o.operands[1].defining_op().name != "loop.const"  # type: ignore[union-attr]
        and any(b.name == "loop.barrier" for b in o.walk())
    ]
    assert len(row_tiles) == 1


def test_run_time_rows_through_mma_spread_over_row_blocks() -> None:
    # 40 rows: three 16-row tiles over two row blocks (block 0 takes tiles 0 and 2); 7 rows: one tile, block 1
    # idle; K = 64 in two double-buffered steps
    module = _run_time_rows((Sym("s"),), 12, 64, 5, 32)
    config = "gpu_qgemm{bm=16,bn=32,bk=32,tm=1,tn=2,stages=2,mma=true,row_blocks=2}"
    lowered = _check_run_time_rows(module, config, [(40, 64), (7, 64)], rtol=2e-2, atol=5e-2)
    assert any(o.name == "loop.mma" for o in functions(lowered)[0].walk())


def _ptxas_report(ptx: str, arch: str) -> str:
    """What ``ptxas -v`` says of ``ptx`` (it must accept it)."""
    tool = ptxas_path()
    assert tool is not None
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder, "kernels.ptx")
        source.write_text(ptx)
        done = subprocess.run(
            [tool, "-v", f"-arch={arch}", str(source), "-o", str(Path(folder, "k.cubin"))],
            capture_output=True,
            text=True,
        )
    assert done.returncode == 0, done.stderr
    return done.stderr


MMA_CONFIG = "gpu_qgemm{bm=64,bn=64,bk=32,tm=2,tn=4,stages=2,mma=true}"


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
@pytest.mark.parametrize(
    ("config", "widths"),
    [(None, range(1, 9)), (MMA_CONFIG, (3, 4))],  # the default (64 x 64 f32 tiles, two stages) for every k
)
def test_every_k_assembles_for_ptxas_without_spills(arch: str, config: str | None, widths: range) -> None:
    target = parse_target(f"cuda:{arch}")
    for bits in widths:
        module = _quantized((512,), 256, 256, bits, 128, signed=bits > 4)
        op = _packed_op(module)
        configs = {kernel_key(op): Config.parse(config)} if config else {}
        state = run_codegen(Codegen(module, target, configs=configs, native=NATIVE), until="decompose")
        assert state.lowered is not None
        assert str(functions(state.lowered)[0].attributes["config"]).startswith("gpu_qgemm{")
        ptx = compile_ptx(state.lowered, target)
        assert ("mma.sync" in ptx.ptx) == (config is not None)
        report = _ptxas_report(ptx.ptx, arch)
        spills = [int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", report)]
        assert spills and not any(spills), report


DYNAMIC_MMA_CONFIG = "gpu_qgemm{bm=64,bn=64,bk=32,tm=2,tn=4,stages=2,mma=true,row_blocks=8}"


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
@pytest.mark.parametrize("config", [None, DYNAMIC_MMA_CONFIG])
def test_run_time_rows_assemble_for_ptxas_without_spills(arch: str, config: str | None) -> None:
    target = parse_target(f"cuda:{arch}")
    module = _run_time_rows((Sym("s"),), 256, 256, 4, 128)
    op = _packed_op(module)
    configs = {kernel_key(op): Config.parse(config)} if config else {}
    state = run_codegen(Codegen(module, target, configs=configs, native=NATIVE), until="decompose")
    assert state.lowered is not None
    assert "row_blocks=" in str(functions(state.lowered)[0].attributes["config"])
    ptx = compile_ptx(state.lowered, target)
    assert ("mma.sync" in ptx.ptx) == (config is not None)
    assert ".param .u64 matmul_packed_0_param_1" in ptx.ptx  # the run-time row count follows x's address
    report = _ptxas_report(ptx.ptx, arch)
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", report)]
    assert spills and not any(spills), report
