"""Vectorized global loads in the f32 GEMM's tile copies (``gpu_gemm``'s ``vector`` knob): legal only where the
lowering proves every group of four 16-byte aligned, proven on the loop interpreter, ``ld.global.v4`` in the PTX
and ptxas accepting it; the alignment the emitter proves; views the executable must realign. The same copies by
``cp.async`` (the ``async_copy`` knob, sm_80 on), waited for before every barrier; the f16 tiles of ``mma`` copied
by groups of eight, by ``cp.async`` too."""

from __future__ import annotations

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.cuda.emitter import known_multiple, vector_alignment
from tensorium.backends.cuda.executable import CudaExecutable
from tensorium.backends.cuda.ptx import NATIVE, assemble, compile_ptx, resource_usage
from tensorium.backends.plan_runner import run_plan
from tensorium.errors import ScheduleError
from tensorium.ir import Operation, graph
from tensorium.ir.builder import InsertionPoint
from tensorium.ir.dialects import loop
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.types import BufferType, TensorType, f16, f32, index
from tensorium.lowering.codegen import Codegen, run_codegen
from tensorium.lowering.space import Config, default_config, kernel_key, kernel_space
from tensorium.targets import parse_target
from tensorium.testing import build_module

from .conftest import SM90, needs_ptxas


def _matmul(m: int, k: int, n: int, transpose_b: bool = False) -> Operation:
    b = (n, k) if transpose_b else (k, n)
    return build_module(
        [TensorType((m, k), f32), TensorType(b, f32)], lambda x, y: graph.matmul(x, y, transpose_b=transpose_b)
    )


def _op(module: Operation) -> Operation:
    return next(o for o in func_body(functions(module)[0]).ops if o.name == "graph.matmul")


def _lowered(module: Operation, vector: bool | None = None, target: object = SM90) -> Operation:
    """``module`` lowered for ``target`` at its default point, or with ``vector`` set (then by plain loads and
    stores, never ``cp.async``: the point the vector loads of these tests are about)."""
    op = _op(module)
    configs = {}
    if vector is not None:
        config = default_config(op, target)  # type: ignore[arg-type]
        assert config is not None
        configs[kernel_key(op)] = config.replace(vector=vector, async_copy=False)
    state = run_codegen(Codegen(module, target, configs=configs, native=NATIVE), until="decompose")  # type: ignore[arg-type]
    assert state.lowered is not None
    return state.lowered


@pytest.mark.parametrize("transpose_b", [False, True])
def test_vector_tile_copies_match_the_graph_interpreter_and_load_v4(transpose_b: bool) -> None:
    module = _matmul(13, 16, 12, transpose_b)  # 13 rows: the last row tile's groups past M are zeros
    op = _op(module)
    config = default_config(op, SM90)
    assert config is not None and config["vector"] is True and config["async_copy"] is True  # sm_80 on
    lowered = _lowered(module, vector=True)
    rng = np.random.default_rng(1)
    shapes = [a.type.static_shape for a in func_body(functions(module)[0]).args]  # type: ignore[attr-defined]
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    (got,) = run_plan(lowered, inputs)
    np.testing.assert_allclose(got, interp.run(module, inputs)[0], rtol=1e-5, atol=1e-5)
    ptx = compile_ptx(lowered, SM90).ptx
    assert "ld.global.v4" in ptx and "st.shared.v4" in ptx
    if not transpose_b:  # A's and B's tiles: every global load is a vector load
        assert "ld.global.f32" not in ptx and "ld.global.nc.f32" not in ptx
    plain = compile_ptx(_lowered(module, vector=False), SM90).ptx
    assert "ld.global.v4" not in plain and "ld.global" in plain


def test_the_knob_is_legal_only_where_alignment_is_proven() -> None:
    # 9 rows: fewer would take the GEMV (gpu_gemv), which has no tiles to copy
    for shape, proven in [((9, 16, 12), True), ((9, 10, 12), False), ((9, 16, 6), False)]:
        space = kernel_space(_op(_matmul(*shape)), SM90)
        assert space is not None
        assert dict((k.name, k.values) for k in space.knobs)["vector"] == ((True, False) if proven else (False,))
    transposed = kernel_space(_op(_matmul(9, 12, 6, transpose_b=True)), SM90)
    assert transposed is not None and dict((k.name, k.values) for k in transposed.knobs)["vector"] == (True, False)
    webgpu = kernel_space(_op(_matmul(64, 64, 64)), parse_target("webgpu"))
    assert webgpu is None or "vector" not in [k.name for k in webgpu.knobs]


def test_known_multiples_and_the_alignment_they_prove() -> None:
    func = build_module([TensorType((4, 4), f32)], lambda x: x)
    body = func_body(functions(func)[0])
    with InsertionPoint(body, body.ops[0]):
        c = {v: loop.const(value=v, dtype=index) for v in (0, 3, 4, 8, 12)}
        with loop.for_(c[3], c[12], c[4]) as iv:  # 3, 7, 11: multiples of 1 only
            four = loop.mul(loop.rem(iv, c[8]), c[4])
            with loop.for_(c[0], c[4], kind="vectorize", factor=4) as lane:
                shifted = loop.add(four, lane)
    assert known_multiple(iv) == 1 and known_multiple(four) == 4 and known_multiple(c[0]) == 0
    assert known_multiple(shifted, {id(lane), id(shifted)}) == 4  # lane 0 of the vector loop
    assert known_multiple(shifted) == 1
    tile = BufferType((2, 16, 8), f32, "shared")
    lanes = {id(lane), id(shifted)}
    assert vector_alignment(tile, [c[0], iv, shifted], lanes) == 16  # rows of 8 floats: 32 bytes
    assert vector_alignment(BufferType((5, 6), f32), [iv, shifted], lanes) == 8  # rows of 24 bytes
    assert vector_alignment(BufferType((5, 8), f32, "local"), [iv, shifted], lanes) == 4  # stack slots: no proof


def test_views_that_would_start_misaligned_get_memory_of_their_own() -> None:
    def body(x: object, w: object) -> object:
        rows = graph.reshape(graph.slice(x, starts=(2,), ends=(42,)), shape=(10, 4))  # 8 bytes into x
        return graph.matmul(rows, w)  # 10 rows: the tiled GEMM (at most 8 take the GEMV)

    module = build_module([TensorType((42,), f32), TensorType((4, 4), f32)], body, check_text=False)
    built = CudaExecutable.build(module, target=parse_target("cuda:sm_90"))
    assert "ld.global.v4" in built.ptx.ptx  # one stage: plain vector loads, which rely on 16-byte aligned buffers
    assert built.views and built.misaligned_views() == list(built.views)
    aligned = build_module(
        [TensorType((44,), f32), TensorType((4, 4), f32)],
        lambda x, w: graph.matmul(graph.reshape(graph.slice(x, starts=(4,), ends=(44,)), shape=(10, 4)), w),
        check_text=False,
    )
    assert CudaExecutable.build(aligned, target=parse_target("cuda:sm_90")).misaligned_views() == []


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
def test_vector_loads_assemble_for_ptxas(arch: str) -> None:
    target = parse_target(f"cuda:{arch}")
    for transpose_b in (False, True):
        module = _matmul(512, 512, 512, transpose_b)
        config = default_config(_op(module), target)
        copies = "true" if arch != "sm_75" else "false"  # cp.async from sm_80 on
        want = f"gpu_gemm{{bm=64,bn=64,bk=16,tm=4,tn=4,stages=2,vector=true,async_copy={copies},unroll=false}}"
        assert config == Config.parse(want)
        ptx = compile_ptx(_lowered(module, target=target), target).ptx
        assert ("cp.async.cg.shared.global" if arch != "sm_75" else "ld.global.v4") in ptx
        assemble(ptx, arch)
        assemble(compile_ptx(_lowered(module, vector=True, target=target), target).ptx, arch)


ASYNC = "gpu_gemm{bm=16,bn=16,bk=8,tm=2,tn=2,stages=2,vector=true,async_copy=true,unroll=false}"


def test_async_copies_match_the_graph_interpreter_and_use_cp_async() -> None:
    sm80 = parse_target("cuda:sm_80")
    module = _matmul(13, 16, 12)  # the last row tile's groups past M are zeroed, not copied
    op = _op(module)
    configs = {kernel_key(op): Config.parse(ASYNC)}
    state = run_codegen(Codegen(module, sm80, configs=configs, native=NATIVE), until="decompose")
    assert state.lowered is not None
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ((13, 16), (16, 12))]
    (got,) = run_plan(state.lowered, inputs)
    np.testing.assert_allclose(got, interp.run(module, inputs)[0], rtol=1e-5, atol=1e-5)
    ptx = compile_ptx(state.lowered, sm80).ptx
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_all" in ptx
    assert "ld.global" not in ptx  # every tile element arrives by cp.async
    assert ptx.count("cp.async.wait_all") == ptx.count("bar.sync")


def test_async_copies_need_sm_80_vector_loads_and_two_stages() -> None:
    op = _op(_matmul(13, 16, 12))
    knobs = {k.name: k.values for k in kernel_space(op, parse_target("cuda:sm_75")).knobs}  # type: ignore[union-attr]
    assert knobs["async_copy"] == (False,)
    space = kernel_space(op, parse_target("cuda:sm_80"))
    assert space is not None
    for point in (ASYNC.replace("vector=true", "vector=false"), ASYNC.replace("stages=2", "stages=1")):
        with pytest.raises(ScheduleError, match="combines knobs"):
            space.check(Config.parse(point))


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_async_copies_assemble_for_ptxas(arch: str) -> None:
    target = parse_target(f"cuda:{arch}")
    module = _matmul(512, 512, 512)
    point = "gpu_gemm{bm=64,bn=64,bk=16,tm=4,tn=4,stages=2,vector=true,async_copy=true,unroll=false}"
    configs = {kernel_key(_op(module)): Config.parse(point)}
    state = run_codegen(Codegen(module, target, configs=configs, native=NATIVE), until="decompose")
    assert state.lowered is not None
    ptx = compile_ptx(state.lowered, target).ptx
    assert "cp.async.cg.shared.global" in ptx
    assemble(ptx, arch)


MMA_ASYNC = "gpu_gemm{bm=32,bn=32,bk=16,tm=1,tn=2,stages=2,mma=true,vector=true,async_copy=true,unroll=false}"


def _matmul_f16(m: int, k: int, n: int, transpose_b: bool = False) -> Operation:
    b = (n, k) if transpose_b else (k, n)
    return build_module(
        [TensorType((m, k), f16), TensorType(b, f16)], lambda x, y: graph.matmul(x, y, transpose_b=transpose_b)
    )


@pytest.mark.parametrize("transpose_b", [False, True])
def test_mma_tiles_fed_by_cp_async_match_the_graph_interpreter(transpose_b: bool) -> None:
    # 20 rows (the second row tile's groups past M zeroed), K = 48 in three double-buffered steps, 40 columns
    sm80 = parse_target("cuda:sm_80")
    point = MMA_ASYNC
    module = _matmul_f16(20, 48, 40, transpose_b)
    op = _op(module)
    state = run_codegen(
        Codegen(module, sm80, configs={kernel_key(op): Config.parse(point)}, native=NATIVE), until="decompose"
    )
    assert state.lowered is not None
    rng = np.random.default_rng(3)
    shapes = [a.type.static_shape for a in func_body(functions(module)[0]).args]  # type: ignore[attr-defined]
    inputs = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    (got,) = run_plan(state.lowered, inputs)
    np.testing.assert_allclose(
        got.astype(np.float32), interp.run(module, inputs)[0].astype(np.float32), rtol=2e-3, atol=4e-3
    )
    ptx = compile_ptx(state.lowered, sm80).ptx
    assert "mma.sync" in ptx and ptx.count("cp.async.wait_all") == ptx.count("bar.sync")
    if transpose_b:  # A's groups by cp.async; a transposed B's tile rows are not contiguous: element by element
        assert "cp.async.cg.shared.global" in ptx and "ld.global" in ptx
    else:  # every tile element arrives by cp.async
        assert "cp.async.cg.shared.global" in ptx and "ld.global" not in ptx


def test_f16_groups_are_the_mma_kernels_by_cp_async_and_need_k_and_n_multiples_of_8() -> None:
    space = kernel_space(_op(_matmul_f16(16, 48, 40)), parse_target("cuda:sm_80"))
    assert space is not None
    knobs = {k.name: k.values for k in space.knobs}
    assert knobs["vector"] == (True, False) and knobs["async_copy"] == (True, False)
    for point in (
        MMA_ASYNC.replace("mma=true", "mma=false").replace("tn=2", "tn=1"),  # the f32-tile kernel widens each
        MMA_ASYNC.replace("async_copy=true", "async_copy=false"),  # f16 vector loads would load element by element
    ):
        with pytest.raises(ScheduleError, match="combines knobs"):
            space.check(Config.parse(point))
    sm75 = kernel_space(_op(_matmul_f16(16, 48, 40)), parse_target("cuda:sm_75"))
    assert sm75 is not None and {k.name: k.values for k in sm75.knobs}["vector"] == (False,)
    odd = kernel_space(_op(_matmul_f16(16, 44, 40)), parse_target("cuda:sm_80"))
    assert odd is not None and {k.name: k.values for k in odd.knobs}["vector"] == (False,)
    default = default_config(_op(_matmul_f16(16, 48, 40)), SM90)
    assert default is not None and default["vector"] is True and default["async_copy"] is True
    sm75_default = default_config(_op(_matmul_f16(16, 48, 40)), parse_target("cuda:sm_75"))
    assert sm75_default is not None and sm75_default["vector"] is False  # element by element before cp.async


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_mma_tiles_fed_by_cp_async_assemble_for_ptxas_without_spills(arch: str) -> None:
    target = parse_target(f"cuda:{arch}")
    module = _matmul_f16(4096, 4096, 4096)
    point = "gpu_gemm{bm=128,bn=128,bk=32,tm=4,tn=4,stages=2,mma=true,vector=true,async_copy=true,unroll=false}"
    state = run_codegen(
        Codegen(module, target, configs={kernel_key(_op(module)): Config.parse(point)}, native=NATIVE),
        until="decompose",
    )
    assert state.lowered is not None
    ptx = compile_ptx(state.lowered, target).ptx
    assert "cp.async.cg.shared.global" in ptx and "ld.global" not in ptx
    (usage,) = resource_usage(ptx, arch).values()
    assert usage.registers <= 255 and usage.spill_stores == usage.spill_loads == 0
