"""Small models of the test suite through the CUDA pipeline (passes, GPU schedules, decompose) on the loop
interpreter against the graph interpreter, and through ptxas."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tensorium.api import check_pipeline
from tensorium.backends import interp
from tensorium.backends.cuda.ptx import assemble, compile_ptx, ptxas_path
from tensorium.backends.plan_runner import run_plan
from tensorium.ir import Operation, Value, graph
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.dialects.builtin import functions
from tensorium.ir.types import TensorType, f32
from tensorium.passes import PassManager
from tensorium.testing import build_module

from .conftest import SM90, lowered_for_gpu

EXAMPLES = Path(__file__).parent.parent.parent / "examples"


def _check(module: Operation, inputs: list[np.ndarray]) -> None:
    """``module`` after the cuda target's pipeline, GPU-scheduled, computes what the graph interpreter does."""
    want = interp.run(module, inputs)
    PassManager.parse(check_pipeline(None, SM90)).run(module)
    lowered = lowered_for_gpu(module)
    for got, expected in zip(run_plan(lowered, inputs), want):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    ptx = compile_ptx(lowered, SM90)
    if ptxas_path() is not None:
        assemble(ptx.ptx, SM90.cpu)


def test_the_onnx_cnn_example() -> None:
    pytest.importorskip("onnx", reason="the onnx extra is not installed")
    from tensorium.frontend.onnx_import import import_onnx

    imported = import_onnx(EXAMPLES / "tiny_cnn.onnx")
    _check(imported.module, [np.random.default_rng(0).random((1, 1, 8, 8), np.float32)])


def test_the_torch_mlp_example() -> None:
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    from tensorium.frontend.pytorch import import_module

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 4), torch.nn.Softmax(-1)
    ).eval()
    x = torch.randn(3, 16)
    imported = import_module(model, (x,))
    _check(imported.module, [x.numpy()])


def test_a_4_bit_mlp_decodes_through_the_warp_packed_gemv_and_the_dequantizing_kernel() -> None:
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((96, 40)).astype(np.float32)

    def body(x: Value) -> Value:
        hidden = graph.gelu(graph.matmul(x, graph.constant(value=DenseAttr.adopt(w1, TensorType((64, 96), f32)))))
        return graph.matmul(hidden, graph.constant(value=DenseAttr.adopt(w2, TensorType((96, 40), f32))))  # type: ignore[no-any-return]

    module = build_module([TensorType((1, 64), f32)], body)
    PassManager.parse("quantize{bits=4,group=32,min-elements=0}").run(module)
    x = [rng.standard_normal((1, 64)).astype(np.float32)]
    want = interp.run(module, x)
    PassManager.parse(check_pipeline(None, SM90)).run(module)
    lowered = lowered_for_gpu(module)
    configs = sorted(str(f.attributes.get("config")).split("{")[0] for f in functions(lowered))
    assert configs == ["None", "gpu_qgemv"]  # the fused matmul + gelu dequantizes; the last product is packed
    for got, expected in zip(run_plan(lowered, x), want):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    if ptxas_path() is not None:
        assemble(compile_ptx(lowered, SM90).ptx, SM90.cpu)
