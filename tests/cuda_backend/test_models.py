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
from tensorium.ir import Operation
from tensorium.passes import PassManager

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
