"""The layout pass on small convolution nets: the same results, NHWC inside, transposes only at the edges."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.ir import func_body, functions, graph
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.types import TensorType, f32
from tensorium.passes import PassManager
from tensorium.testing import build_module

RNG = np.random.default_rng(8)


def _const(array: np.ndarray) -> Any:
    array = array.astype(np.float32)
    return graph.constant(value=DenseAttr(array, TensorType(array.shape, f32)))


def residual_block(x: Any) -> Any:
    w1, w2 = _const(RNG.standard_normal((6, 4, 3, 3)) * 0.3), _const(RNG.standard_normal((4, 6, 3, 3)) * 0.3)
    y = graph.relu(graph.conv2d(x, w1, _const(RNG.standard_normal(6)), padding=[1, 1, 1, 1]))
    y = graph.conv2d(y, w2, padding=[1, 1, 1, 1])
    y = graph.relu(graph.add(graph.add(y, _const(RNG.standard_normal((4, 1, 1)))), x))
    return graph.mul(y, _const(np.array(0.5)))


def downsampling_head(x: Any) -> Any:
    y = graph.conv2d(x, _const(RNG.standard_normal((8, 4, 3, 3)) * 0.3), strides=[2, 2], padding=[1, 1, 1, 1])
    y = graph.max_pool2d(graph.sigmoid(y), kernel=[2, 2], strides=[1, 1])
    y = graph.resize(y, size=[6, 6], mode="bilinear", coordinate_mode="half_pixel")
    return graph.global_avg_pool2d(graph.tanh(y))


# The head's global pool leaves [2, 1, 1, 8]: back to NCHW is a reshape there (only dims of 1 move).
@pytest.mark.parametrize(("body", "transposes"), [(residual_block, 2), (downsampling_head, 1)])
def test_conv_nets_keep_their_results_with_transposes_only_at_the_edges(body: Any, transposes: int) -> None:
    module = build_module([TensorType((2, 4, 9, 9), f32)], body)
    x = RNG.standard_normal((2, 4, 9, 9)).astype(np.float32)
    (want,) = interp.run(module, [x])
    PassManager.parse("layout,dce", verify_each=True).run(module)
    ops = [op for op in func_body(functions(module)[0]).ops if op.name not in ("graph.constant", "func.return")]
    assert [op.name for op in ops].count("graph.transpose") == transposes
    assert ops[0].name == "graph.transpose" and ops[-1].name in ("graph.transpose", "graph.reshape")
    assert all(op.attr("layout", "NHWC") == "NHWC" for op in ops)
    (got,) = interp.run(module, [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    (compiled,) = CpuExecutable.build(module).run([x])
    np.testing.assert_allclose(compiled, want, rtol=1e-4, atol=1e-5)


def test_the_cpu_pipeline_runs_a_resnet_block_as_four_kernels() -> None:
    x = RNG.standard_normal((1, 4, 9, 9)).astype(np.float32)
    module = build_module([TensorType(x.shape, f32)], residual_block)
    (want,) = interp.run(module, [x])
    PassManager.parse(tm.api.check_pipeline(None, "cpu")).run(module)
    exe = CpuExecutable.build(module)
    kernels = [s.kernel for s in exe.steps]
    assert kernels == ["transpose_0", "conv2d_relu_1", "conv2d_add_add_relu_mul_2", "transpose_3"]
    np.testing.assert_allclose(exe.run([x])[0], want, rtol=1e-4, atol=1e-5)
