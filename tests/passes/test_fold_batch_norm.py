"""fold-batch-norm on every layout and kernel layout: the folded convolution computes what the pair did."""

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

RNG = np.random.default_rng(11)
WEIGHT_SHAPES = {"OIHW": (5, 3, 3, 3), "HWIO": (3, 3, 3, 5), "OHWI": (5, 3, 3, 3)}


def _const(array: np.ndarray) -> Any:
    return graph.constant(value=DenseAttr(array.astype(np.float32), TensorType(array.shape, f32)))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kernel_layout", ["OIHW", "HWIO", "OHWI"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_folded_convolution_matches_the_pair(layout: str, kernel_layout: str, with_bias: bool) -> None:
    x_shape = (2, 3, 7, 6) if layout == "NCHW" else (2, 7, 6, 3)
    weight = RNG.standard_normal(WEIGHT_SHAPES[kernel_layout])
    bias = RNG.standard_normal(5)
    scale, beta, mean = RNG.uniform(0.5, 2, 5), RNG.standard_normal(5), RNG.standard_normal(5)
    var = RNG.uniform(0.1, 3, 5)

    def body(x: Any) -> Any:
        operands = [x, _const(weight)] + ([_const(bias)] if with_bias else [])
        y = graph.conv2d(*operands, padding=[1, 1, 1, 1], layout=layout, kernel_layout=kernel_layout)
        params = [_const(p) for p in (scale, beta, mean, var)]
        return graph.relu(graph.batch_norm(y, *params, eps=1e-3, axis=1 if layout == "NCHW" else -1))

    module = build_module([TensorType(x_shape, f32)], body)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    (want,) = interp.run(module, [x])
    PassManager.parse("fold-batch-norm,dce", verify_each=True).run(module)
    names = [op.name for op in func_body(functions(module)[0]).ops]
    assert "graph.batch_norm" not in names and names.count("graph.conv2d") == 1
    (got,) = interp.run(module, [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    (compiled,) = CpuExecutable.build(module).run([x])
    np.testing.assert_allclose(compiled, want, rtol=1e-4, atol=1e-5)
