"""The kernels transformer encoders spend their time in, pinned by structure (not timing): the softmax computes
one exp per element and sums its lanes as a tree; an encoder's FFN compiled for static shapes runs its GELU and
residual add in the GEMM epilogues (the fuse pass's reshape sinking; its IR is pinned by
tests/passes/cases/fuse.mlir)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import tensorium
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


def test_a_static_encoder_ffn_runs_gelu_and_residual_in_the_gemm_epilogues() -> None:
    """torch.export writes Linear on [batch, seq, d] as reshape, 2-D matmul, reshape back; after the fuse pass
    sinks the reshapes, the GELU and the residual add are epilogues of the two GEMMs (no kernel of their own)."""
    torch = pytest.importorskip("torch")

    class Ffn(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up, self.down, self.norm = torch.nn.Linear(16, 64), torch.nn.Linear(64, 16), torch.nn.LayerNorm(16)

        def forward(self, x: Any) -> Any:
            return self.norm(self.down(torch.nn.functional.gelu(self.up(x))) + x)

    torch.manual_seed(0)
    model = Ffn().eval()
    x = torch.randn(2, 5, 16)
    compiled = tensorium.compile(model, cache=False)
    with torch.no_grad():
        np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-5)
    kernels = [step.kernel for step in compiled.artifact.executable.steps]
    assert any("gelu" in name and "matmul" in name for name in kernels), kernels
    assert not any(name.startswith(("gelu", "add")) for name in kernels), kernels


def test_a_gemm_with_run_time_rows_unrolls_its_epilogue_only_in_the_full_tiles() -> None:
    """A run-time row count builds a shifted and a clamped copy of the register tile; the clamped copy (fewer
    rows than the tile) runs a fused epilogue in a loop over its rows, so the GELU's code appears once per
    vector there rather than once per row and vector (most of the kernel's code and of its compile time)."""
    torch = pytest.importorskip("torch")

    class LinearGelu(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = torch.nn.Linear(32, 64)

        def forward(self, x: Any) -> Any:
            return torch.nn.functional.gelu(self.up(x), approximate="tanh")

    torch.manual_seed(0)
    model = LinearGelu().eval()

    def compiled_for(x: Any, **options: Any) -> tuple[Any, int, int]:
        compiled = tensorium.compile(model, cache=False, **options)
        with torch.no_grad():
            np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-5)
        executable = compiled.artifact.executable
        (mr,) = {int(m) for m in re.findall(r"gemm\{mr=(\d+)", executable.loop_ir)}
        return compiled, mr, executable.kernels.llvm_ir.count(" fdiv ")  # one per GELU vector (its tanh)

    _, mr, static_copies = compiled_for(torch.randn(2 * 6, 32))
    dynamic, dynamic_mr, dynamic_copies = compiled_for(torch.randn(13, 32), dynamic={"x": {0: "rows"}})
    assert dynamic_mr == mr and static_copies % mr == 0 and static_copies > 0
    assert dynamic_copies == static_copies + static_copies // mr
    with torch.no_grad():
        for rows in (1, mr - 1, mr, 2 * mr + 1):
            x = torch.randn(rows, 32)
            np.testing.assert_allclose(dynamic(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-5, err_msg=f"{rows}")
