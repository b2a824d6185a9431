"""The kernels transformer encoders spend their time in, pinned by structure (not timing): the softmax computes
one exp per element and sums its lanes as a tree (the fuse pass's reshape sinking, which puts BERT's GELU into
the GEMM epilogue, is pinned by tests/passes/cases/fuse.mlir)."""

from __future__ import annotations

import numpy as np

from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.ir import graph
from tensorium.ir.core import Operation
from tensorium.ir.types import FloatType, TensorType, f32
from tensorium.lowering import lower_function
from tensorium.targets import host_target
from tensorium.testing import build_module


def _ops(module: Operation, name: str) -> int:
    return sum(1 for op in module.walk() if op.name == name)


def test_softmax_keeps_each_exp_in_its_output_and_sums_lanes_as_a_tree() -> None:
    x = np.random.default_rng(5).standard_normal((3, 7, 37)).astype(np.float32) * 4
    module = build_module([TensorType(x.shape, f32)], lambda v: graph.softmax(v))
    lowered = lower_function(module)
    assert _ops(lowered, "loop.exp") == 2  # the sum pass: its vector loop and its scalar tail; none after
    lanes = host_target().lanes()
    assert _ops(lowered, "loop.max") == 3 + (lanes - 1)  # vector, tail and total; lanes - 1 in the tree
    (want,) = interp.run(module, [x])
    (got,) = CpuExecutable.build(module).run([x])
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
    f16 = build_module([TensorType(x.shape, FloatType("f16"))], lambda v: graph.softmax(v))
    assert _ops(lower_function(f16), "loop.exp") == 3  # a narrower output computes the exp again
    log = build_module([TensorType(x.shape, f32)], lambda v: graph.log_softmax(v))
    assert _ops(lower_function(log), "loop.exp") == 2
