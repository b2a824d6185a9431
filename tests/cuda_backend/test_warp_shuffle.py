"""``loop.shuffle``: its lockstep semantics on the loop interpreter, its errors, and ``shfl.sync`` through ptxas."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tensorium.backends.cuda.ptx import assemble, compile_ptx
from tensorium.backends.loop_interp import run
from tensorium.errors import CompileError, InterpreterError, TensoriumError
from tensorium.ir import InsertionPoint, Operation, func_body, make_func, make_module, set_results
from tensorium.ir.dialects import loop
from tensorium.ir.dialects.loop.warp import source_lane
from tensorium.ir.types import BufferType, ScalarType, f32, f64, i16, i32, index
from tensorium.ir.verifier import verify
from tensorium.targets import parse_target

from .conftest import needs_ptxas

DTYPES = {f32: np.float32, f64: np.float64, i32: np.int32, i16: np.int16}


def _kernel(dtype: ScalarType, threads: int, mode: str, offset: int, width: int = 32) -> Operation:
    """``y[t] = shuffle(x[t], offset)`` over ``threads`` threads."""
    buf = BufferType((threads,), dtype)
    f = make_func("shuffle", [buf, buf], arg_names=["x", "y"])
    x, y = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, threads, kind="gpu_thread", axis=0, name="t") as t:
            got = loop.shuffle(loop.load(x, t), loop.const(value=offset, dtype=index), mode=mode, width=width)
            loop.store(got, y, t)
    set_results(f, [])
    module = make_module([f])
    verify(module)
    return module


@pytest.mark.parametrize(
    ("mode", "offset", "width"),
    [("xor", 1, 32), ("xor", 16, 32), ("down", 3, 32), ("up", 5, 32), ("idx", 7, 32), ("down", 2, 8), ("idx", 3, 4)],
)
def test_each_lane_gets_the_value_of_its_source_lane(mode: str, offset: int, width: int) -> None:
    x = np.arange(64, dtype=np.float32) * 10
    y = np.zeros(64, np.float32)
    run(_kernel(f32, 64, mode, offset, width), [x, y])
    lanes = np.arange(64) % 32
    source = [source_lane(mode, int(lane), offset, width) + 32 * (t // 32) for t, lane in enumerate(lanes)]
    np.testing.assert_array_equal(y, x[source])


def test_the_modes_follow_cuda() -> None:
    assert [source_lane("down", lane, 2, 8) for lane in (0, 5, 6, 7, 8)] == [2, 7, 6, 7, 10]  # own past the segment
    assert [source_lane("up", lane, 2, 32) for lane in (0, 1, 2, 31)] == [0, 1, 0, 29]
    assert [source_lane("xor", lane, 1, 32) for lane in (0, 1, 30)] == [1, 0, 31]
    assert [source_lane("idx", lane, 3, 4) for lane in (0, 5, 10)] == [3, 7, 11]


def test_a_butterfly_gives_every_lane_its_warps_sum() -> None:
    buf = BufferType((64,), f32)
    f = make_func("total", [buf, buf], arg_names=["x", "y"])
    x, y = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, 64, kind="gpu_thread", axis=0, name="t") as t:
            v = loop.load(x, t)
            for offset in (16, 8, 4, 2, 1):
                v = loop.add(v, loop.shuffle(v, loop.const(value=offset, dtype=index), mode="xor"))
            loop.store(v, y, t)
    set_results(f, [])
    x_in = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    run(make_module([f]), [x_in, out])
    np.testing.assert_array_equal(out, np.repeat([x_in[:32].sum(), x_in[32:].sum()], 32))


def test_shuffles_need_whole_warps_all_threads_and_offsets_within_the_width() -> None:
    with pytest.raises(InterpreterError, match="needs whole warps of 32, not 16 threads"):
        run(_kernel(f32, 16, "xor", 1), [np.zeros(16, np.float32), np.zeros(16, np.float32)])
    with pytest.raises(InterpreterError, match=re.escape("offset 9 is outside [0, 8)")):
        run(_kernel(f32, 32, "down", 9, 8), [np.zeros(32, np.float32), np.zeros(32, np.float32)])
    buf = BufferType((32,), f32)
    f = make_func("some", [buf], arg_names=["x"])
    (x,) = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, 32, kind="gpu_thread", axis=0, name="t") as t:
            with loop.if_(loop.cmp(t, loop.const(value=4, dtype=index), predicate="lt")):
                loop.store(loop.shuffle(loop.load(x, t), t, mode="idx"), x, t)
    set_results(f, [])
    with pytest.raises(
        InterpreterError, match=re.escape("only 4 of 32 threads of this gpu_thread loop reached a loop.shuffle")
    ):
        run(make_module([f]), [np.zeros(32, np.float32)])


def test_the_verifier_wants_a_gpu_thread_loop_on_axis_0_and_a_warp_width() -> None:
    buf = BufferType((32,), f32)
    f = make_func("bad", [buf], arg_names=["x"])
    (x,) = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, 32, kind="parallel", name="i") as i:
            loop.store(loop.shuffle(loop.load(x, i), i), x, i)
    set_results(f, [])
    with pytest.raises(TensoriumError, match='may not be inside a "parallel" loop within its gpu_thread loop'):
        verify(make_module([f]))
    with pytest.raises(TensoriumError, match="width must be a power of two up to 32, got 48"):
        _kernel(f32, 32, "xor", 1, 48)


def test_webgpu_refuses_shuffles_by_name() -> None:
    from tensorium.backends.webgpu.emitter import WGSLEmitter

    with pytest.raises(CompileError, match=re.escape("'loop.shuffle' is not supported by the WebGPU backend")):
        WGSLEmitter(parse_target("webgpu")).emit_module(_kernel(f32, 32, "xor", 1))


@needs_ptxas
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
def test_shuffles_of_every_width_are_shfl_sync_for_ptxas(dtype: ScalarType, arch: str) -> None:
    module = _kernel(dtype, 64, "down", 1)
    x = np.arange(64).astype(DTYPES[dtype])
    y = np.zeros_like(x)
    run(module, [x, y])
    np.testing.assert_array_equal(y, np.where(np.arange(64) % 32 == 31, x, np.roll(x, -1)))
    ptx = compile_ptx(module, parse_target(f"cuda:{arch}")).ptx
    assert "shfl.sync.down.b32" in ptx
    assert ptx.count("shfl.sync") == (2 if dtype == f64 else 1)  # 64 bits as two halves
    assemble(ptx, arch)


def test_a_shuffle_under_a_partial_thread_loop_is_refused() -> None:
    buf = BufferType((64,), f32)
    f = make_func("partial", [buf], arg_names=["x"])
    (x,) = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, 64, kind="gpu_thread", axis=0, name="t") as t:
            loop.store(loop.load(x, t), x, t)
        with loop.for_(0, 32, kind="gpu_thread", axis=0, name="u") as u:
            loop.store(loop.shuffle(loop.load(x, u), u, mode="idx"), x, u)
    set_results(f, [])
    with pytest.raises(CompileError, match="needs whole warps, but its gpu_thread loop runs 32 of 64 threads"):
        compile_ptx(make_module([f]), parse_target("cuda:sm_90"))
