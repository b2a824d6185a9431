"""Fused groups lowered to one kernel: every kind of anchor with epilogues and producers, against the
interpreter on the unfused program, through LLVM and through the loop interpreter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.plan_runner import run_plan
from tensorium.ir import func_body, functions, graph
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.types import FloatType, IntegerType, Sym, TensorType, f32, f64
from tensorium.lowering import lower_function
from tensorium.passes import PassManager
from tensorium.testing import build_module

RNG = np.random.default_rng(21)
f16 = FloatType("f16")
i32 = IntegerType(32)


def _const(value: float, element: Any = f32) -> Any:
    array = np.array(value, dtype=np.float16 if element == f16 else np.float64 if element == f64 else np.float32)
    return graph.constant(value=DenseAttr(array, TensorType((), element)))


def _input(t: TensorType, bindings: dict[str, int]) -> np.ndarray:
    shape = tuple(d if isinstance(d, int) else bindings[d.name] for d in t.shape)  # type: ignore[union-attr]
    if isinstance(t.element, IntegerType):
        return RNG.integers(-20, 20, shape).astype(np.int32)
    dtype = {"f16": np.float16, "f64": np.float64}.get(t.element.name, np.float32)  # type: ignore[union-attr]
    return RNG.uniform(-1, 1, shape).astype(dtype)


CASES: list[tuple[str, list[TensorType], Callable[..., Any], int]] = [
    (
        "blocked matmul, bias, gelu",
        [TensorType((7, 33), f32), TensorType((33, 70), f32), TensorType((70,), f32)],
        lambda x, w, b: graph.gelu(graph.add(graph.matmul(x, w), b)),
        1,
    ),
    (
        "f64 matmul (simple nest), residual, relu",
        [TensorType((5, 6), f64), TensorType((6, 4), f64), TensorType((5, 4), f64)],
        lambda x, w, r: graph.relu(graph.add(graph.matmul(x, w), r)),
        1,
    ),
    (
        "batched transposed matmul, scale, unit reshape",
        [TensorType((2, 9, 8), f32), TensorType((2, 11, 8), f32)],
        lambda q, k: graph.mul(graph.reshape(graph.matmul(q, k, transpose_b=True), shape=[1, 2, 9, 11]), _const(0.125)),
        1,
    ),
    (
        "blocked conv, channel bias, residual, relu",
        [TensorType((1, 3, 9, 10), f32), TensorType((5, 3, 3, 3), f32), TensorType((5, 1, 1), f32)],
        lambda x, w, b: graph.relu(graph.add(graph.conv2d(x, w, padding=[1, 1, 1, 1]), b)),
        1,
    ),
    (
        "strided conv (simple nest), relu",
        [TensorType((2, 3, 9, 9), f32), TensorType((4, 3, 3, 3), f32)],
        lambda x, w: graph.relu(graph.conv2d(x, w, strides=[2, 2])),
        1,
    ),
    (
        "softmax with its scale and an epilogue (it reads its result back)",
        [TensorType((3, 37), f32)],
        lambda x: graph.neg(graph.softmax(graph.mul(x, _const(3.0)))),
        1,
    ),
    (
        "layer norm of a residual sum, then a scale",
        [TensorType((4, 48), f32), TensorType((4, 48), f32), TensorType((48,), f32), TensorType((48,), f32)],
        lambda x, y, g, b: graph.mul(graph.layer_norm(graph.add(x, y), g, b), _const(2.0)),
        1,
    ),
    (
        "reduction of exps, then a square root",
        [TensorType((6, 19), f32)],
        lambda x: graph.sqrt(graph.reduce_sum(graph.exp(x), axes=[1])),
        1,
    ),
    (
        "transpose of a sum, then tanh",
        [TensorType((3, 4, 5), f32), TensorType((5,), f32)],
        lambda x, b: graph.tanh(graph.transpose(graph.add(x, b), perm=[2, 0, 1])),
        1,
    ),
    (
        # Regression (random program, seed 35): constants hoisted after the placeholders were erased landed
        # after their first use, because the kernel counted its prologue's ops instead of tracking them.
        "erf, transpose, gelu (new constants after placeholders are erased)",
        [TensorType((3, 5, 5), f32)],
        lambda x: graph.gelu(graph.transpose(graph.erf(x), perm=[2, 1, 0])),
        1,
    ),
    ("max pool, relu", [TensorType((1, 2, 8, 8), f32)], lambda x: graph.relu(graph.max_pool2d(x, kernel=[2, 2])), 1),
    (
        "f16 chain with a cast to f32",
        [TensorType((3, 21), f16), TensorType((21,), f16)],
        lambda x, b: graph.cast(graph.exp(graph.mul(x, b)), dtype=f32),
        1,
    ),
    (
        "integers: compare and select",
        [TensorType((4, 9), i32), TensorType((4, 9), i32)],
        lambda a, b: graph.where(graph.gt(graph.add(a, b), graph.mul(a, b)), a, graph.neg(b)),
        1,
    ),
    (
        "named batch dim: matmul, bias, relu; then an elementwise tail",
        [TensorType((Sym("n"), 8), f32), TensorType((8, 20), f32), TensorType((20,), f32)],
        lambda x, w, b: graph.sigmoid(graph.relu(graph.add(graph.matmul(x, w), b))),
        1,
    ),
]


@pytest.mark.parametrize(("types", "body", "groups"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fused_groups_compute_what_the_ops_did(types: list[TensorType], body: Any, groups: int) -> None:
    module = build_module(types, body)
    text = tm.print_module(module)
    fused = tm.parse_module(text)
    PassManager.parse("fuse", verify_each=True).run(fused)
    ops = [op.name for op in func_body(functions(fused)[0]).ops if op.name != "graph.constant"]
    assert ops.count("graph.fused") == groups and len(ops) == groups + 1, ops
    for n in (1, 5):
        inputs = [_input(t, {"n": n}) for t in types]
        (want,) = interp.run(tm.parse_module(text), inputs)
        (same,) = interp.run(fused, inputs)  # the fused op's meaning is its body's
        np.testing.assert_array_equal(same, want)
        (compiled,) = CpuExecutable.build(fused).run(inputs)
        (looped,) = run_plan(lower_function(fused), inputs)
        tolerance = {"rtol": 2e-3, "atol": 2e-3} if want.dtype == np.float16 else {"rtol": 1e-5, "atol": 1e-5}
        for got in (compiled, looped):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, **tolerance)


def test_a_fused_group_is_one_kernel_with_no_intermediate_buffers() -> None:
    types = [TensorType((64, 32), f32), TensorType((32, 64), f32), TensorType((64,), f32), TensorType((64, 64), f32)]
    module = build_module(types, lambda x, w, b, r: graph.relu(graph.add(graph.add(graph.matmul(x, w), b), r)))
    PassManager.parse("fuse").run(module)
    lowered = lower_function(module)
    (kernel,) = functions(lowered)
    assert kernel.attributes["sym_name"] == "matmul_add_add_relu_0"
    globals_ = [op for op in lowered.walk() if op.name == "loop.alloc" and "global" in str(op.results[0].type)]
    assert globals_ == []  # the bias, residual add and relu run on the accumulator tile before its store
    exe = CpuExecutable.build(module)
    assert exe.peak_bytes() == 0 and len(exe.steps) == 1


def test_an_anchor_that_reads_its_result_back_gets_its_epilogue_as_a_second_nest() -> None:
    indices = np.array([[0, 4, 1], [4, 4, 0]], np.int64)

    def body(data: Any, updates: Any) -> Any:
        where = graph.constant(value=DenseAttr(indices, TensorType(indices.shape, IntegerType(64))))
        return graph.exp(graph.scatter_elements(data, where, updates, reduction="add"))

    types = [TensorType((5, 3), f32), TensorType((2, 3), f32)]
    module = build_module(types, body)
    inputs = [_input(t, {}) for t in types]
    (want,) = interp.run(module, inputs)
    PassManager.parse("fuse").run(module)
    lowered = lower_function(module)
    assert len(functions(lowered)) == 1
    loops = [op.regions[0].block.args[0].name_hint for op in lowered.walk() if op.name == "loop.for"]
    assert loops[-2:] == ["e0", "e1"]  # the epilogue's own nest, after the scatter's
    np.testing.assert_allclose(CpuExecutable.build(module).run(inputs)[0], want, rtol=1e-6)
    np.testing.assert_allclose(run_plan(lowered, inputs)[0], want, rtol=1e-6)
