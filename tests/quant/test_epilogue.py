"""Fused epilogues on the quantized matmul: a Linear's bias add and the activation after it run inside the
``qgemv`` kernel (one kernel, no separate elementwise pass over the output) on every path of its space, and
give the interpreter's result."""

from __future__ import annotations

import numpy as np
import pytest

import tensorium as tm
from tensorium.ir.dialects.quant.config import QuantConfig

from .conftest import ACTIVATION_ROUNDING, run_on_path


@pytest.mark.parametrize(
    ("spec", "path"), [("w4g128", "float"), ("w4g128", "int"), ("w3g32s", "lut"), ("w2g128", "lut")]
)
@pytest.mark.parametrize("batch", [1, 5])
def test_bias_and_gelu_fuse_into_the_quantized_matmul(spec: str, path: str, batch: int) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(512, 96), torch.nn.GELU()).eval()
    x = torch.randn(batch, 512)
    compiled = tm.compile(model, quantize=spec, cache=False)
    compiled(x)
    stats = compiled.stats()
    assert stats["kernels"] == 1, stats  # the matmul, the bias add and the GELU in one kernel
    assert stats["fused_groups"] == 1 and stats["fused_ops"] == 3, stats
    (kernel,) = compiled.tunable_kernels()
    assert kernel.default.family == "qgemv"
    want = tm.compile(model, quantize=QuantConfig.parse(spec), target="interp", cache=False)(x).numpy()
    got = run_on_path(model, [x], path, quantize=spec)
    tolerance = 1e-4 if path == "float" else ACTIVATION_ROUNDING
    assert np.abs(got - want).max() <= tolerance * np.abs(want).max()
