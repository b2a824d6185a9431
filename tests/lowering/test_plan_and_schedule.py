"""Whole modules through lower_function and the plan runner, the lower-to-loops pass, and schedules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends import interp
from tensorium.backends.plan_runner import run_plan
from tensorium.errors import InterpreterError, TensoriumError
from tensorium.ir import graph
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.dialects.builtin import functions
from tensorium.ir.types import Sym, TensorType, f16, f32, f64
from tensorium.lowering import (
    LaunchPlan,
    Schedule,
    ScheduleError,
    Step,
    apply_schedule,
    default_schedule,
    lower_function,
    plan_of,
    view_offset,
)
from tensorium.lowering.codegen import lower_and_schedule
from tensorium.lowering.schedule import Annotate, Cache, Fuse, Reorder, Split, find_loop
from tensorium.passes import PassManager
from tensorium.passes.lower_to_loops import LowerToLoops
from tensorium.targets import host_target, parse_target
from tensorium.testing import build_module

from .conftest import check_lowered

RNG = np.random.default_rng(5)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def mlp(x: Any, w1: Any, b1: Any, w2: Any) -> Any:
    h = graph.relu(graph.add(graph.matmul(x, w1), b1))
    return graph.matmul(h, w2)


def attention(q: Any, k: Any, v: Any) -> Any:
    scale = graph.constant(value=DenseAttr.of(np.array(0.5, np.float32)))
    scores = graph.mul(graph.matmul(q, k, transpose_b=True), scale)
    return graph.matmul(graph.softmax(scores), v)


MLP_TYPES = [TensorType(s, f32) for s in ((3, 5), (5, 7), (7,), (7, 2))]
ATTENTION_TYPES = [TensorType(s, f32) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3))]


@pytest.mark.parametrize("schedule", [False, True])
@pytest.mark.parametrize(("types", "body"), [(MLP_TYPES, mlp), (ATTENTION_TYPES, attention)], ids=["mlp", "attention"])
def test_modules_match_the_graph_interpreter(types: list[TensorType], body: Any, schedule: bool) -> None:
    module = build_module(types, body)
    inputs = [rand(*t.static_shape) for t in types]
    lowered = lower_and_schedule(module, host_target(), schedule=schedule)
    tm.ir.verifier.verify(lowered)
    (want,) = interp.run(module, inputs)
    (got,) = run_plan(lowered, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_plan_of_the_mlp() -> None:
    plan = plan_of(lower_function(build_module(MLP_TYPES, mlp)))
    assert plan.inputs == (0, 1, 2, 3)
    assert plan.steps == (
        Step("matmul_0", (0, 1), (4,)),
        Step("add_1", (4, 2), (5,)),
        Step("relu_2", (5,), (6,)),
        Step("matmul_3", (6, 3), (7,)),
    )
    assert plan.outputs == (7,) and plan.constants == ()
    assert plan.buffers[4:] == (TensorType((3, 7), f32),) * 3 + (TensorType((3, 2), f32),)


def test_constants_are_host_buffers_and_outputs_may_be_inputs() -> None:
    module = build_module(ATTENTION_TYPES[:1], lambda q: (attention(q, q, q), q))
    plan = plan_of(lower_function(module))
    assert [c for c, _ in plan.constants] == [1]
    assert plan.outputs[1] == 0
    q = rand(2, 3, 4)
    got = run_pl(module, [q])
    np.testing.assert_allclose(got[0], interp.run(module, [q])[0], rtol=1e-5)
    np.testing.assert_array_equal(got[1], q)


def run_pl(module: tm.ir.Operation, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return run_plan(lower_function(module), inputs)


def test_named_symbolic_dims_are_bound_from_the_inputs() -> None:
    n = Sym("n")
    types = [TensorType((n, 4), f32), TensorType((4,), f32)]
    module = build_module(types, lambda x, b: graph.softmax(graph.add(x, b)))
    for rows in (1, 3):
        x, b = rand(rows, 4), rand(4)
        np.testing.assert_allclose(run_pl(module, [x, b])[0], interp.run(module, [x, b])[0], rtol=1e-5)


def test_anonymous_result_dims_cannot_be_allocated_by_the_host() -> None:
    module = build_module([TensorType((Sym(), 4), f32)], lambda x: graph.exp(x))
    with pytest.raises(
        InterpreterError, match=r"buffer #1 has type tensor<\?x4xf32>: the host cannot size dimension \?"
    ):
        run_pl(module, [rand(2, 4)])


def test_runner_checks_inputs() -> None:
    module = build_module(MLP_TYPES, mlp)
    with pytest.raises(InterpreterError, match="the plan takes 4 inputs, got 1"):
        run_pl(module, [rand(3, 5)])
    with pytest.raises(InterpreterError, match=r"input #0: expected shape tensor<3x5xf32>, got \[3, 4\]"):
        run_pl(module, [rand(3, 4), rand(5, 7), rand(7), rand(7, 2)])


def test_pass_lowers_in_place_and_the_plan_round_trips_through_text() -> None:
    module = build_module(MLP_TYPES, mlp)
    inputs = [rand(*t.static_shape) for t in MLP_TYPES]
    want = interp.run(module, inputs)
    PassManager.parse("lower-to-loops{schedule=true}").run(module)
    assert [f.attributes["sym_name"] for f in functions(module)] == ["matmul_0", "add_1", "relu_2", "matmul_3"]
    text = tm.print_module(module)
    assert 'plan_steps = [["matmul_0", [0, 1], [4]], ["add_1", [4, 2], [5]]' in text
    assert '{kind = "parallel"}' in text
    reparsed = tm.parse_module(text)
    assert plan_of(reparsed) == plan_of(module)
    np.testing.assert_allclose(run_plan(reparsed, inputs)[0], want[0], rtol=1e-5)
    with pytest.raises(TensoriumError, match="already lowered"):
        LowerToLoops().run(module)


def test_plan_of_an_unlowered_module() -> None:
    with pytest.raises(TensoriumError, match="the module has no launch plan"):
        plan_of(build_module(MLP_TYPES, mlp))
    assert isinstance(LaunchPlan((), (), (), (), ()).attributes(), dict)


def test_schedule_text_round_trips() -> None:
    schedule = Schedule(
        (
            Split("i", 4),
            Reorder(("i_o", "j", "i_i")),
            Annotate("parallel", "i_o"),
            Annotate("unroll", "k", 2),
            Fuse("i_o", "j"),
            Cache("i_i", "in0"),
        )
    )
    text = "split(i, 4); reorder(i_o, j, i_i); parallel(i_o); unroll(k, 2); fuse(i_o, j); cache(i_i, in0)"
    assert str(schedule) == text
    assert Schedule.parse(text) == schedule
    with pytest.raises(ScheduleError, match=r"bad schedule primitive 'tile\(i\)'"):
        Schedule.parse("tile(i)")
    with pytest.raises(ScheduleError, match=r"bad schedule primitive 'parallel\(i, 2\)'"):
        Schedule.parse("parallel(i, 2)")


def _fixed(text: str) -> Any:
    return lambda kernel: Schedule.parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "split(i0, 2); split(i1, 3); reorder(i0_o, i1_o, i0_i, i1_i); parallel(i0_o); vectorize(i1_i, 4)",
        "reorder(i1, i0); unroll(i0, 2)",
        "split(i1, 4); reorder(i1_o, i0); parallel(i1_o)",
        "split(i0, 1); split(i0_i, 5)",
        "fuse(i0, i1); parallel(i0_i1)",
        "split(i1, 2); fuse(i0, i1_o); vectorize(i1_i, 2)",
        "cache(i0, in0); parallel(i0)",
        "cache(i1, in1)",
    ],
)
def test_schedules_keep_elementwise_results(text: str) -> None:
    check_lowered(lambda x, y: graph.add(x, y), rand(5, 7), rand(7), schedule=_fixed(text))


def test_schedules_keep_matmul_and_reduction_results() -> None:
    tiled = "split(i, 2); split(j, 3); split(k, 2); reorder(i_o, j_o, i_i, j_i); parallel(i_o); unroll(k_i, 2)"
    a64, b64 = rand(5, 3).astype(np.float64), rand(3, 7).astype(np.float64)  # f32 gets the blocked GEMM instead
    check_lowered(lambda a, b: graph.matmul(a, b), a64, b64, schedule=_fixed(tiled))
    cached = "cache(i, in1); fuse(i, j); parallel(i_j)"  # all of B in a local buffer, then one loop of i x j
    check_lowered(lambda a, b: graph.matmul(a, b), a64, b64, schedule=_fixed(cached))
    check_lowered(lambda a: graph.reduce_sum(a, axes=(1,)), a64, schedule=_fixed("split(r0, 2); parallel(i0)"))
    # keeping the fastest dim (reduce_columns.py): rows stream through the result, column blocks in parallel
    check_lowered(
        lambda a: graph.reduce_sum(a, axes=(0,)), rand(5, 3), schedule=_fixed("split(r0, 2); unroll(r0_i, 2)")
    )
    for body in (lambda a: graph.softmax(a), lambda a: graph.layer_norm(a), lambda a: graph.reduce_max(a, axes=(0, 1))):
        check_lowered(body, rand(3, 5), schedule=default_schedule)


def test_default_schedules() -> None:
    module = build_module([TensorType((5, 7), f64)] * 2, lambda x, y: graph.matmul(x, y, transpose_b=True))
    kernel = functions(lower_function(module))[0]
    assert str(default_schedule(kernel)) == "split(i, 4); split(j, 4); reorder(i_o, j_o, i_i, j_i); parallel(i_o)"
    blocked = build_module([TensorType((5, 7), f32)] * 2, lambda x, y: graph.matmul(x, y, transpose_b=True))
    assert str(default_schedule(functions(lower_function(blocked))[0])) == ""  # the lowering scheduled it
    vector = build_module([TensorType((9,), f32)], lambda x: graph.exp(x))
    kernel = functions(lower_function(vector))[0]
    lanes = host_target().lanes()  # 16 on AVX-512, 8 on AVX2
    assert str(default_schedule(kernel)) == f"split(i0, {lanes}); parallel(i0_o); vectorize(i0_i, {lanes})"
    reduction = build_module([TensorType((3, 4), f32)], lambda x: graph.reduce_sum(x, axes=(1,)))
    assert str(default_schedule(functions(lower_function(reduction))[0])) == "parallel(i0)"
    batch_of_one = build_module([TensorType((1, 1, 6, 40), f32)], lambda x: graph.exp(x))
    kernel = functions(lower_function(batch_of_one))[0]
    assert str(default_schedule(kernel)) == f"parallel(i2); vectorize(i3, {lanes})"  # not the loops of one trip


def test_default_schedules_take_lanes_from_the_target_and_element_type() -> None:
    def vectorized(t: TensorType, target: str) -> str:
        kernel = functions(lower_function(build_module([t], lambda x: graph.exp(x)), target=parse_target(target)))[0]
        return str(default_schedule(kernel, parse_target(target)))

    assert vectorized(TensorType((9,), f32), "cpu:x86-64-v3") == "split(i0, 8); parallel(i0_o); vectorize(i0_i, 8)"
    assert vectorized(TensorType((9,), f32), "cpu:x86-64") == "split(i0, 4); parallel(i0_o); vectorize(i0_i, 4)"
    assert vectorized(TensorType((3, 9), f64), "cpu:skylake-avx512") == "parallel(i0); vectorize(i1, 8)"
    assert vectorized(TensorType((3, 9), f16), "cpu:skylake-avx512") == "parallel(i0); vectorize(i1, 16)"  # as f32
    types = [TensorType((2, 3, 40), f32), *[TensorType((3,), f32)] * 4]
    norm = build_module(types, lambda x, *p: graph.batch_norm(x, *p, axis=1))
    kernel = functions(lower_function(norm, target=parse_target("cpu:x86-64-v3")))[0]
    assert str(default_schedule(kernel, parse_target("cpu:x86-64-v3"))) == "parallel(i0)"  # i2 built vectorized
    assert find_loop(kernel, "i2").attributes["factor"] == 8


def _kernel(body: Any, *types: TensorType) -> tm.ir.Operation:
    return functions(lower_function(build_module(list(types), body)))[0]


def test_schedule_errors() -> None:
    t = TensorType((4, 6), f32)
    kernel = _kernel(lambda a: graph.reduce_sum(a, axes=(1,)), TensorType((4, 6), f64))  # f32 gets lanes
    with pytest.raises(ScheduleError, match=r"@reduce_sum_0 has no loop named 'x' \(loops: i0, r0\)"):
        apply_schedule(kernel, Schedule.parse("parallel(x)"))
    with pytest.raises(ScheduleError, match="loop 'r0' cannot be parallel: its iterations all write one element"):
        apply_schedule(kernel, Schedule.parse("parallel(r0)"))
    with pytest.raises(ScheduleError, match=r"loop 'i0' holds 'loop.alloc' besides its inner loop; not a perfect nest"):
        apply_schedule(kernel, Schedule.parse("reorder(r0, i0)"))
    with pytest.raises(ScheduleError, match="split factor must be at least 1, got 0"):
        apply_schedule(kernel, Schedule.parse("split(i0, 0)"))
    split_kernel = _kernel(lambda a: graph.exp(a), t)
    apply_schedule(split_kernel, Schedule.parse("split(i1, 2)"))
    with pytest.raises(ScheduleError, match=r"reorder\(i1_i, i1_o\) would use an induction variable outside its loop"):
        apply_schedule(split_kernel, Schedule.parse("reorder(i1_i, i1_o)"))
    with pytest.raises(ScheduleError, match="loops 'i0' and 'i1_i' are not directly nested"):
        apply_schedule(split_kernel, Schedule.parse("reorder(i1_i, i0)"))
    assert find_loop(split_kernel, "i1_o").attributes["kind"] == "serial"
    with pytest.raises(ScheduleError, match="loop 'i1_i' is not directly inside loop 'i0'"):
        apply_schedule(split_kernel, Schedule.parse("fuse(i0, i1_i)"))
    with pytest.raises(ScheduleError, match="loop 'i0' writes 'out0', so it cannot be cached"):
        apply_schedule(_kernel(lambda a: graph.cumsum(a, axis=1), t), Schedule.parse("cache(i0, out0)"))
    with pytest.raises(ScheduleError, match=r"has no single buffer named 'w' \(buffers: in0, out0"):
        apply_schedule(_kernel(lambda a: graph.exp(a), t), Schedule.parse("cache(i0, w)"))
    with pytest.raises(ScheduleError, match="every read is of one element; nothing to tile"):
        scalar = _kernel(lambda a, b: graph.add(a, b), t, TensorType((), f32))
        apply_schedule(scalar, Schedule.parse("cache(i1, in1)"))


# --- views -------------------------------------------------------------------------------------------
def _random_slice(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[list[int], list[int], list[int]]:
    starts, ends, steps = [], [], []
    for d in shape:
        a, b = sorted(int(v) for v in rng.integers(-1, d + 1, 2))
        step = int(rng.choice([1, 1, 1, 2, -1]))
        if step < 0:
            a, b = b, a - 1 if a > 0 else -d - 1
        starts.append(a)
        ends.append(b)
        steps.append(step)
    return starts, ends, steps


def test_a_slice_is_a_view_exactly_when_it_keeps_one_contiguous_run() -> None:
    rng = np.random.default_rng(1)
    views = 0
    for _ in range(400):
        shape = tuple(int(d) for d in rng.integers(1, 4, int(rng.integers(1, 4))))
        starts, ends, steps = _random_slice(rng, shape)
        module = build_module(
            [TensorType(shape, f32)],
            lambda x, s=starts, e=ends, t=steps: graph.slice(x, starts=s, ends=e, axes=list(range(len(s))), steps=t),
            check_text=False,
        )
        op = next(op for op in functions(module)[0].regions[0].block.ops if op.name == "graph.slice")
        kept = interp.run(module, [np.arange(np.prod(shape), dtype=np.float32).reshape(shape)])[0].reshape(-1)
        contiguous = kept.size > 0 and np.array_equal(kept, np.arange(kept[0], kept[0] + kept.size))
        offset = view_offset(op)
        assert (offset is not None) == contiguous, (shape, starts, ends, steps, kept)
        if offset is not None:
            views += 1
            assert offset == kept[0]
    assert views > 50


def test_reshapes_and_contiguous_slices_are_views_not_kernels() -> None:
    def body(x: Any) -> Any:
        rows = graph.reshape(x, shape=[6, 4])  # a view of x
        middle = graph.slice(rows, starts=[2], ends=[4], axes=[0])  # rows 2..3: a view of x from element 8
        flat = graph.reshape(graph.exp(middle), shape=[8])  # a view of the exp's buffer
        strided = graph.slice(rows, starts=[0], ends=[4], axes=[1], steps=[2])  # not contiguous: a kernel
        return graph.add(flat, flat), graph.reshape(strided, shape=[12])  # a returned reshape copies

    module = build_module([TensorType((2, 3, 4), f32)], body)
    plan = plan_of(lower_function(module))
    assert [s.kernel for s in plan.steps] == ["exp_0", "slice_1", "add_2", "reshape_3"]
    assert [(v.buffer, v.source, v.offset) for v in plan.views] == [(1, 0, 0), (2, 0, 8), (4, 3, 0)]
    x = rand(2, 3, 4)
    got = run_pl(module, [x])
    for g, w in zip(got, interp.run(module, [x])):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    text = tm.print_module(lower_function(module))
    assert "plan_views = [[1, 0, 0], [2, 0, 8], [4, 3, 0]]" in text
    assert plan_of(tm.parse_module(text)) == plan
