"""Shared helpers of the CUDA tests: a suite program through the CUDA codegen stages, and ptxas when installed."""

from __future__ import annotations

import pytest

from tensorium.backends.cuda.ptx import NATIVE, ptxas_path
from tensorium.ir import Operation
from tensorium.ir.verifier import verify
from tensorium.lowering.codegen import Codegen, run_codegen
from tensorium.targets import Target, parse_target

needs_ptxas = pytest.mark.skipif(
    ptxas_path() is None, reason="ptxas is not installed (CUDA toolkit or nvidia-cuda-nvcc)"
)

SM90: Target = parse_target("cuda:sm_90")


def lowered_for_gpu(module: Operation, target: Target = SM90) -> Operation:
    """``@main`` of ``module`` lowered, GPU-scheduled and decomposed for ``target``: what the NVPTX emitter takes."""
    state = run_codegen(Codegen(module, target, native=NATIVE), until="decompose")
    assert state.lowered is not None
    verify(state.lowered)
    return state.lowered
