"""Features of candidates: fixed layout, deterministic, and tracking what the config changes."""

from __future__ import annotations

import numpy as np

import tensorium
from tensorium.autotune.features import FEATURE_NAMES, candidate_features, nest_features
from tensorium.autotune.measure import lowered_kernel
from tensorium.backends.llvm.emitter import LLVMEmitter
from tensorium.lowering.space import TunableKernel


def test_features_have_a_fixed_layout_and_follow_the_config(
    gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    default = gemm_kernel.default
    other = next(c for c in gemm_kernel.space.points() if c.int("mr") != default.int("mr"))
    low_default = lowered_kernel(gemm_kernel.op, target, default, LLVMEmitter.NATIVE)
    low_other = lowered_kernel(gemm_kernel.op, target, other, LLVMEmitter.NATIVE)
    a = candidate_features(low_default, default)
    assert a.shape == (len(FEATURE_NAMES),) and np.isfinite(a).all()
    np.testing.assert_array_equal(
        a, candidate_features(lowered_kernel(gemm_kernel.op, target, default, LLVMEmitter.NATIVE), default)
    )
    assert not np.array_equal(a, candidate_features(low_other, other))
    nest = nest_features(low_default)
    m, k, n = 24, 32, 40
    assert nest["flops"] >= 2 * m * n * k  # the GEMM's multiply-adds at least (the GELU adds more)
    assert nest["global_footprint"] >= 4 * (m * k + k * n + m * n)
    assert nest["vector_width"] >= min(target.lanes(32), 8)
    assert nest["parallel_loops"] >= 1 and 0.0 <= nest["contiguous"] <= 1.0
