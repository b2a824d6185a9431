"""fuse-siblings on q/k/v-like projections: one batched GEMM, the same results, fewer kernels."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.ir import func_body, functions, graph
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.types import TensorType, f32
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
