"""CPU reductions that keep the fastest dim (tensorium/lowering/reduce_columns.py): the result accumulates,
rows stream through it on vector lanes, column blocks or outer kept dims in parallel."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.errors import TensoriumError
from tensorium.ir import graph
from tensorium.ir.types import Sym, TensorType, f16, f32, i64
from tensorium.lowering import lower_op
from tensorium.lowering.reduce_columns import COLUMN_BLOCKS, _block_width
from tensorium.lowering.schedule import loop_name, loops_of
from tensorium.targets import parse_target
from tensorium.testing import build_module

from .conftest import graph_op, run_compiled, run_lowered

RNG = np.random.default_rng(11)

OPS = {
    "sum": graph.reduce_sum,
    "mean": graph.reduce_mean,
    "prod": graph.reduce_prod,
    "max": graph.reduce_max,
    "min": graph.reduce_min,
}

CASES = [
    ((37, 21), (0,), False),  # columns in blocks, a tail of a vector
    ((5, 130), (0,), True),
    ((3, 6, 19), (1,), False),  # an outer kept dim runs in parallel
    ((1, 9, 35), (1,), True),  # the outer kept dim is 1: column blocks instead
    ((4, 3, 5, 17), (0, 2), False),  # reduced and kept dims interleaved
    ((2, 3, 33), (0, 1), True),
    ((1, 40), (0,), False),
]


def _body(name: str, axes: tuple[int, ...], keepdims: bool) -> Any:
    return lambda v: OPS[name](v, axes=axes, keepdims=keepdims)


def _data(shape: tuple[int, ...], name: str) -> np.ndarray:
    x = RNG.standard_normal(shape).astype(np.float32)
    return (1 + 0.05 * x).astype(np.float32) if name == "prod" else x


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize(("shape", "axes", "keepdims"), CASES, ids=[f"{s}-{a}-{k}" for s, a, k in CASES])
def test_against_the_interpreter(name: str, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> None:
    x = _data(shape, name)
    body = _body(name, axes, keepdims)
    got, want = run_lowered(body, x)  # the loop interpreter
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    compiled = run_compiled(body, x, shape=want.shape)  # LLVM, vectorized, 2 threads
    np.testing.assert_allclose(compiled, want, rtol=1e-5, atol=1e-5)


def test_the_kernel_streams_rows_through_vector_lanes_and_runs_column_blocks_in_parallel() -> None:
    module = build_module([TensorType((64, 4096), f32)], lambda v: graph.reduce_sum(v, axes=(0,)))
    kernel = lower_op(graph_op(module))
    kinds = {loop_name(op): op.attr("kind", "serial") for op in loops_of(kernel)}
    assert kinds["i0_o"] == "parallel" and kinds["r0"] == "serial"
    assert [k for n, k in kinds.items() if n == "i0"] == ["vectorize"]
    # the column blocks: at most COLUMN_BLOCKS, each whole vectors
    lanes = parse_target("cpu").lanes(32)
    width = _block_width(4096, lanes)
    assert width % lanes == 0 and -(-4096 // width) <= COLUMN_BLOCKS


def test_an_outer_kept_dim_is_the_parallel_loop() -> None:
    module = build_module([TensorType((8, 128, 64), f32)], lambda v: graph.reduce_mean(v, axes=(1,)))
    kernel = lower_op(graph_op(module))
    kinds = [(loop_name(op), op.attr("kind", "serial")) for op in loops_of(kernel)]
    assert ("i0", "parallel") in kinds and ("r0", "serial") in kinds and ("i1", "vectorize") in kinds
    assert not any(n.endswith("_o") for n, _ in kinds)


def test_run_time_sizes() -> None:
    rows, cols = Sym("rows"), Sym("cols")
    module = build_module([TensorType((rows, 3, cols), f32)], lambda v: graph.reduce_sum(v, axes=(0, 1)))
    exe = CpuExecutable.build(module)
    for shape in [(7, 3, 100), (1, 3, 1), (2, 3, 2000)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        (got,) = exe.run([x])
        np.testing.assert_allclose(got, x.sum(axis=(0, 1)), rtol=1e-5, atol=1e-4)


def test_an_empty_run_time_dim_is_an_error_for_max_and_zero_for_sum() -> None:
    rows = Sym("rows")
    biggest = CpuExecutable.build(build_module([TensorType((rows, 4), f32)], lambda v: graph.reduce_max(v, axes=(0,))))
    with pytest.raises(TensoriumError, match="reduces a dimension that is empty at run time"):
        biggest.run([np.zeros((0, 4), np.float32)])
    total = CpuExecutable.build(build_module([TensorType((rows, 4), f32)], lambda v: graph.reduce_sum(v, axes=(0,))))
    (got,) = total.run([np.zeros((0, 4), np.float32)])
    np.testing.assert_array_equal(got, np.zeros(4, np.float32))


def test_integer_and_bool_results() -> None:
    x = RNG.integers(-1000, 1000, size=(9, 3, 21)).astype(np.int64)
    for body in (lambda v: graph.reduce_sum(v, axes=(0,)), lambda v: graph.reduce_max(v, axes=(1,), keepdims=True)):
        module = build_module([TensorType(x.shape, i64)], body)
        (got,) = CpuExecutable.build(module).run([x])
        (want,) = interp.run(module, [x])
        np.testing.assert_array_equal(got, want)
    flags = RNG.random((6, 5, 18)) < 0.2
    got, want = run_lowered(lambda v: graph.reduce_max(v, axes=(0, 1)), flags)
    np.testing.assert_array_equal(got, want)


def test_half_results_keep_the_general_lowering() -> None:
    """f16 accumulates in f32: the result cannot be the accumulator, so the general lowering runs."""
    module = build_module([TensorType((16, 40), f16)], lambda v: graph.reduce_sum(v, axes=(0,)))
    kernel = lower_op(graph_op(module))
    assert "i0_o" not in {loop_name(op) for op in loops_of(kernel)}
    x = RNG.standard_normal((16, 40)).astype(np.float16)
    (got,) = CpuExecutable.build(module).run([x])
    (want,) = interp.run(module, [x])
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_other_targets_keep_the_general_lowering() -> None:
    module = build_module([TensorType((64, 256), f32)], lambda v: graph.reduce_sum(v, axes=(0,)))
    for target in ("cuda", "webgpu"):
        kernel = lower_op(graph_op(module), target=parse_target(target))
        assert "i0_o" not in {loop_name(op) for op in loops_of(kernel)}


SOFTMAX_CASES = [
    ((5, 37), 0),  # column blocks in parallel, a tail of a vector
    ((3, 7, 300), 1),  # more columns than one block
    ((2, 4, 3, 21), 1),  # softmax over channels: [N, C, H, W]
    ((1, 6, 40), 1),
    ((2, 3, 4, 5), -3),
]


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize(("shape", "axis"), SOFTMAX_CASES, ids=[f"{s}-{a}" for s, a in SOFTMAX_CASES])
def test_softmax_along_a_slow_axis(shape: tuple[int, ...], axis: int, log: bool) -> None:
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    x.flat[0] = 60.0  # exp would overflow without the maximum taken first
    op = graph.log_softmax if log else graph.softmax
    body = lambda v: op(v, axis=axis)  # noqa: E731
    got, want = run_lowered(body, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    compiled = run_compiled(body, x, shape=want.shape)
    np.testing.assert_allclose(compiled, want, rtol=1e-5, atol=1e-5)


def test_softmax_kernels_name_each_loop_once() -> None:
    module = build_module([TensorType((2, 21, 8, 64), f32)], lambda v: graph.softmax(v, axis=1))
    kernel = lower_op(graph_op(module))
    names = [loop_name(op) for op in loops_of(kernel)]
    assert len(names) == len(set(names))
    kinds = {loop_name(op): op.attr("kind", "serial") for op in loops_of(kernel)}
    assert kinds["i0"] == "parallel" and kinds["max_r0"] == "serial"
    assert kinds["max_c"] == kinds["sum_c"] == kinds["out_c"] == "vectorize"


def test_softmax_with_run_time_sizes() -> None:
    n = Sym("n")
    module = build_module([TensorType((n, 5, 33), f32)], lambda v: graph.softmax(v, axis=1))
    exe = CpuExecutable.build(module)
    for rows in (1, 3):
        x = RNG.standard_normal((rows, 5, 33)).astype(np.float32)
        (got,) = exe.run([x])
        (want,) = interp.run(module, [x])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


ARG_CASES = [((37, 21), 0), ((3, 9, 130), 1), ((2, 5, 4, 19), 1), ((1, 7, 40), -2)]


@pytest.mark.parametrize("last", [False, True], ids=["first", "last"])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize(("shape", "axis"), ARG_CASES, ids=[f"{s}-{a}" for s, a in ARG_CASES])
def test_arg_reductions_along_a_slow_axis(shape: tuple[int, ...], axis: int, name: str, last: bool) -> None:
    x = RNG.integers(-3, 4, size=shape).astype(np.float32)  # many ties
    x.reshape(-1)[5::17] = np.nan  # a NaN wins, whichever index select_last_index asks for
    op = getattr(graph, name)
    for keepdims in (False, True):
        body = lambda v, keep=keepdims: op(v, axis=axis, keepdims=keep, select_last_index=last)  # noqa: E731
        got, want = run_lowered(body, x)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(run_compiled(body, x, shape=want.shape), want)


def test_arg_reductions_of_integers_and_run_time_sizes() -> None:
    x = RNG.integers(-50, 50, size=(6, 4, 33)).astype(np.int32)
    got, want = run_lowered(lambda v: graph.argmin(v, axis=1), x)
    np.testing.assert_array_equal(got, want)
    rows = Sym("rows")
    module = build_module([TensorType((rows, 40), f32)], lambda v: graph.argmax(v, axis=0))
    exe = CpuExecutable.build(module)
    for n in (1, 9):
        y = RNG.standard_normal((n, 40)).astype(np.float32)
        np.testing.assert_array_equal(exe.run([y])[0], y.argmax(axis=0))
    with pytest.raises(TensoriumError, match="reduces a dimension that is empty at run time"):
        exe.run([np.zeros((0, 40), np.float32)])


LANE_CASES = [(3, 1), (2, 5), (4, 8), (3, 16), (2, 37), (5, 130)]


@pytest.mark.parametrize("last", [False, True], ids=["first", "last"])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("shape", LANE_CASES, ids=[f"{s}" for s in LANE_CASES])
def test_arg_reductions_along_the_fastest_axis_on_lanes(shape: tuple[int, int], name: str, last: bool) -> None:
    """Each lane keeps its own best; ties and NaN across lanes must still give the scan's index."""
    op = getattr(graph, name)
    body = lambda v: op(v, axis=-1, select_last_index=last)  # noqa: E731
    ties = RNG.integers(-2, 3, size=shape).astype(np.float32)  # equal values in many lanes
    nans = ties.copy()
    nans[:, 1::3] = np.nan  # several NaN per row, in different lanes: the first (or last) one wins
    only_nan = np.full(shape, np.nan, np.float32)
    for x in (ties, nans, only_nan, RNG.standard_normal(shape).astype(np.float32)):
        got, want = run_lowered(body, x)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(run_compiled(body, x, shape=want.shape), want)


def test_arg_reductions_along_the_fastest_axis_of_integers_and_run_time_sizes() -> None:
    x = RNG.integers(-3, 3, size=(4, 3, 45)).astype(np.int64)
    got, want = run_lowered(lambda v: graph.argmax(v, axis=2, keepdims=True), x)
    np.testing.assert_array_equal(got, want)
    n = Sym("n")
    exe = CpuExecutable.build(build_module([TensorType((3, n), f32)], lambda v: graph.argmin(v, axis=1)))
    for size in (1, 7, 33):
        y = RNG.integers(-2, 2, size=(3, size)).astype(np.float32)
        np.testing.assert_array_equal(exe.run([y])[0], y.argmin(axis=1))
    with pytest.raises(TensoriumError, match="reduces a dimension that is empty at run time"):
        exe.run([np.zeros((3, 0), np.float32)])
