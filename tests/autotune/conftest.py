"""Shared pieces of the autotuner's tests: a small model with one tunable GEMM kernel."""

from __future__ import annotations

import numpy as np
import pytest

import tensorium
from tensorium.lowering.space import TunableKernel
from tensorium.targets import host_target


def gemm_model(a: tensorium.Tensor, b: tensorium.Tensor) -> tensorium.Tensor:
    return tensorium.nn.gelu(a @ b)


def gemm_inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((24, 32), dtype=np.float32), rng.standard_normal((32, 40), dtype=np.float32)


@pytest.fixture(scope="session")
def gemm_kernel() -> TunableKernel:
    compiled = tensorium.compile(gemm_model, tuning_db=False)
    compiled(*gemm_inputs())
    (kernel,) = compiled.tunable_kernels()
    assert kernel.space.family == "gemm"
    return kernel


@pytest.fixture(scope="session")
def target() -> tensorium.Target:
    return host_target()
