"""fuse-siblings on q/k/v-like projections: one batched GEMM, the same results, fewer kernels; with symbolic
batch and sequence dims, one GEMM over the concatenated columns and one split."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.ir import func_body, functions, graph
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.types import DYN, Sym, TensorType, f32
from tensorium.passes import PassManager
from tensorium.testing import build_module

RNG = np.random.default_rng(12)


def _const(array: np.ndarray) -> Any:
    array = array.astype(np.float32)
    return graph.constant(value=DenseAttr(array, TensorType(array.shape, f32)))


def projections(biases: tuple[bool, ...], transpose_b: bool) -> Any:
    def body(x: Any) -> Any:
        outs = []
        for has_bias in biases:
            w = RNG.standard_normal((24, 16) if transpose_b else (16, 24))
            y = graph.matmul(x, _const(w), transpose_b=transpose_b)
            outs.append(graph.add(y, _const(RNG.standard_normal(24))) if has_bias else y)
        return graph.softmax(graph.matmul(outs[0], outs[1], transpose_b=True)), outs[-1]

    return body


@pytest.mark.parametrize("x_shape", [(10, 16), (2, 10, 16)])
@pytest.mark.parametrize(("biases", "transpose_b"), [((True, True, True), True), ((True, False), False)])
def test_siblings_compute_what_the_separate_matmuls_did(
    x_shape: tuple[int, ...], biases: tuple[bool, ...], transpose_b: bool
) -> None:
    module = build_module([TensorType(x_shape, f32)], projections(biases, transpose_b))
    x = RNG.standard_normal(x_shape).astype(np.float32)
    want = interp.run(module, [x])
    PassManager.parse("fuse-siblings,dce", verify_each=True).run(module)
    names = [op.name for op in func_body(functions(module)[0]).ops]
    assert names.count("graph.matmul") == 2  # the stacked projection and the product of two of them
    assert names.count("graph.add") == 1  # the stacked biases when every sibling has one, else its own add
    for got, expected in zip(interp.run(module, [x]), want):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    exe = CpuExecutable.build(module)
    assert len(exe.views) >= len(biases)  # each projection is a slice of the stacked result: a view
    for got, expected in zip(exe.run([x]), want):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


BATCH, SEQ = Sym("batch"), Sym("seq")


def _op_names(module: Any) -> list[str]:
    return [op.name for op in func_body(functions(module)[0]).ops]


@pytest.mark.parametrize("x_shape", [(BATCH, SEQ, 16), (DYN, 16)])
@pytest.mark.parametrize(("biases", "transpose_b"), [((True, True, True), True), ((True, False), False)])
def test_siblings_with_symbolic_dims_become_one_gemm_and_one_split(
    x_shape: tuple[Any, ...], biases: tuple[bool, ...], transpose_b: bool
) -> None:
    module = build_module([TensorType(x_shape, f32)], projections(biases, transpose_b))
    returned = [v.type for v in func_body(functions(module)[0]).ops[-1].operands]
    inputs = [RNG.standard_normal(shape).astype(np.float32) for shape in _concrete(x_shape)]
    wants = [interp.run(module, [x]) for x in inputs]
    PassManager.parse("fuse-siblings,dce", verify_each=True).run(module)
    names = _op_names(module)
    assert names.count("graph.matmul") == 2  # the concatenated projection and the product of two of them
    assert names.count("graph.split") == 1
    assert names.count("graph.add") == 1  # the concatenated biases when every sibling has one, else its own add
    assert [v.type for v in func_body(functions(module)[0]).ops[-1].operands] == returned  # same symbolic dims
    for x, want in zip(inputs, wants):
        for got, expected in zip(interp.run(module, [x]), want):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def _concrete(x_shape: tuple[Any, ...]) -> list[tuple[int, ...]]:
    """Two shapes that bind the symbolic dims of ``x_shape`` differently (sizes 1 included)."""
    return [tuple(n if isinstance(d, Sym) else d for d in x_shape) for n in (1, 5)]


def test_symbolic_siblings_run_on_the_cpu_at_several_sizes() -> None:
    module = build_module([TensorType((BATCH, SEQ, 16), f32)], projections((True, True, True), True))
    inputs = [RNG.standard_normal(shape).astype(np.float32) for shape in [(1, 1, 16), (2, 7, 16), (3, 4, 16)]]
    wants = [interp.run(module, [x]) for x in inputs]
    PassManager.parse("fuse-siblings,dce,fuse", verify_each=True).run(module)
    assert _op_names(module).count("graph.split") == 1
    exe = CpuExecutable.build(module)
    for x, want in zip(inputs, wants):
        for got, expected in zip(exe.run([x]), want):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def _other_inputs_of_one_type(x: Any, y: Any) -> Any:
    """x @ W1 and y @ W2: two inputs of the same symbolic type, which need not hold the same values."""
    return graph.matmul(x, _const(RNG.standard_normal((16, 8)))), graph.matmul(y, _const(RNG.standard_normal((16, 8))))


def _other_widths(x: Any, y: Any) -> Any:
    """x @ W1 and x @ W2 with weights of different widths (not siblings: the parts would differ)."""
    return graph.matmul(x, _const(RNG.standard_normal((16, 8)))), graph.matmul(x, _const(RNG.standard_normal((16, 9))))


def _a_computed_weight(x: Any, y: Any) -> Any:
    """x @ W1 and x @ tanh(W2): a weight that is not a constant (left to the fold pass, not stacked here)."""
    computed = graph.tanh(_const(RNG.standard_normal((16, 8))))
    return graph.matmul(x, _const(RNG.standard_normal((16, 8)))), graph.matmul(x, computed)


@pytest.mark.parametrize("body", [_other_inputs_of_one_type, _other_widths, _a_computed_weight])
def test_symbolic_near_misses_are_left_alone(body: Any) -> None:
    x_type = TensorType((BATCH, SEQ, 16), f32)
    module = build_module([x_type, x_type], body)
    before = _op_names(module)
    PassManager.parse("fuse-siblings", verify_each=True).run(module)
    assert _op_names(module) == before


def test_a_bias_that_broadcasts_over_the_symbolic_batch_stays_its_own_add() -> None:
    """A [2, 1, N] constant added to [batch, seq, N] is not a per-column bias: the matmuls are stacked, the adds
    kept (each still reads its own part), and the results do not change."""

    def body(x: Any) -> Any:
        ys = [graph.matmul(x, _const(RNG.standard_normal((16, 8)))) for _ in range(2)]
        return [graph.add(y, _const(RNG.standard_normal((2, 1, 8)))) for y in ys]

    module = build_module([TensorType((BATCH, SEQ, 16), f32)], body)
    x = RNG.standard_normal((2, 3, 16)).astype(np.float32)
    want = interp.run(module, [x])
    PassManager.parse("fuse-siblings,dce", verify_each=True).run(module)
    names = _op_names(module)
    assert (names.count("graph.matmul"), names.count("graph.split"), names.count("graph.add")) == (1, 1, 2)
    for got, expected in zip(interp.run(module, [x]), want):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
