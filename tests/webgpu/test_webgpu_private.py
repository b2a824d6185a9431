"""WGSL's function-storage limit: large ``local`` arrays moved to per-invocation slices of scratch buffers.

At the default limit (8192 bytes) the attention of ``fuse_attention.mlir:3`` (named dims, a mask), whose GEMM
packed a 64 KiB panel per invocation that lavapipe and Dawn never finished compiling, runs; at a limit of 0
every ``local`` array of a kernel moves, on static grids (batched GEMM, reductions, softmax) and grids sized
at run time (dynamic GEMM), and the results are the interpreter's, on the loop interpreter and on lavapipe.
The hang is guarded by a subprocess with a timeout, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tensorium.backends.interp import run
from tensorium.backends.plan_runner import run_plan
from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.ir.dialects.builtin import functions
from tensorium.ir.parser import parse_module
from tensorium.ir.types import BufferType
from tensorium.ir.verifier import verify
from tensorium.lowering import webgpu_private
from tensorium.lowering.codegen import lower_and_schedule
from tensorium.lowering.webgpu_limits import apply_limits
from tensorium.lowering.webgpu_private import fit_function_storage
from tensorium.lowering.webgpu_schedule import map_to_workgroups
from tensorium.targets import parse_target

from .models import MODULES, module, random_inputs, reference

ROOT = Path(__file__).resolve().parents[2]

DYNAMIC = """
module {
  func.func @main(%b: tensor<[b]x[m]x12xf32>, %v: tensor<12x[k]xf32>) -> tensor<[b]x[m]x[k]xf32> {
    %0 = graph.matmul %b, %v : (tensor<[b]x[m]x12xf32>, tensor<12x[k]xf32>) -> tensor<[b]x[m]x[k]xf32>
    func.return %0 : tensor<[b]x[m]x[k]xf32>
  }
}"""


def _allocs(lowered, space: str, kernel: int | None = None) -> list[BufferType]:  # type: ignore[no-untyped-def]
    kernels = functions(lowered) if kernel is None else [functions(lowered)[kernel]]
    return [
        op.attr("type")
        for k in kernels
        for op in k.walk()
        if op.name == "loop.alloc" and op.attr("type").space == space
    ]


def _mapped(text: str, limit: int):  # type: ignore[no-untyped-def]
    target = parse_target("webgpu")
    lowered = lower_and_schedule(parse_module(text), target, schedule=False)
    for kernel in functions(lowered):
        map_to_workgroups(kernel, target)
    fit_function_storage(lowered, target, limit=limit)
    verify(lowered)
    apply_limits(lowered, target)
    return lowered


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_local_array_moves_at_a_limit_of_zero(name: str) -> None:
    kept = _mapped(MODULES[name], limit=1 << 30)
    lowered = _mapped(MODULES[name], limit=0)
    assert not _allocs(lowered, "local")
    for n in range(len(functions(lowered))):
        before, moved = _allocs(kept, "local", n), _allocs(lowered, "global", n)
        assert len(moved) == len({t.element for t in before})  # one scratch buffer per element type
        assert sum(t.shape[1] for t in moved) == sum(t.num_elements for t in before)
    inputs = random_inputs(module(name))
    for got, want in zip(run_plan(lowered, inputs), reference(module(name), inputs)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_slices_of_a_run_time_grid_are_sized_at_run_time() -> None:
    lowered = _mapped(DYNAMIC, limit=0)
    assert not _allocs(lowered, "local")
    assert all(not t.is_static for t in _allocs(lowered, "global"))
    rng = np.random.default_rng(0)
    for b, m, k in [(2, 5, 7), (1, 1, 1), (3, 33, 40)]:
        arrays = [rng.standard_normal(s).astype(np.float32) for s in ((b, m, 12), (12, k))]
        got = run_plan(lowered, arrays)[0]
        np.testing.assert_allclose(got, run(parse_module(DYNAMIC), arrays)[0], rtol=1e-5, atol=1e-5)


def test_arrays_within_the_limit_stay_local() -> None:
    lowered = _mapped(MODULES["matmul"], limit=webgpu_private.FUNCTION_STORAGE_BYTES)
    assert _allocs(lowered, "local") and not _allocs(lowered, "global")


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("text", [MODULES["matmul"], MODULES["reduce_softmax"], DYNAMIC], ids=["gemm", "rows", "dyn"])
def test_slices_run_on_lavapipe(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webgpu_private, "FUNCTION_STORAGE_BYTES", 0)
    executable = WebGPUExecutable.build(parse_module(text))
    assert not any(
        "var m" in line and "array<" in line
        for s in executable.shaders.values()
        for line in s.wgsl.splitlines()
        if line.startswith("  ")
    )
    rng = np.random.default_rng(1)
    args = [a.type for a in functions(parse_module(text))[0].regions[0].block.args]
    sizes = {"b": 2, "m": 9, "k": 5}
    arrays = [
        rng.standard_normal(tuple(d if isinstance(d, int) else sizes[d.name] for d in t.shape)).astype(np.float32)
        for t in args
    ]
    for got, want in zip(executable.run(arrays), run(parse_module(text), arrays)):
        np.testing.assert_allclose(got, np.asarray(want), rtol=2e-5, atol=2e-6)


@pytest.mark.usefixtures("gpu")
def test_dynamic_attention_compiles_and_runs_within_a_timeout() -> None:
    """fuse_attention.mlir:3 (attention with named dims and a mask) through the coverage script, in a child
    process: a shader that lavapipe cannot compile fails the test at the timeout instead of hanging it."""
    command = [sys.executable, str(ROOT / "benchmarks" / "webgpu_coverage.py"), "--only", "fuse_attention.mlir:3:out"]
    try:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("fuse_attention.mlir:3:out did not finish within 600 s on lavapipe (the private-array hang)")
    assert done.returncode == 0, done.stderr
    assert "models: 1, passing: 1, failing: 0" in done.stdout, done.stdout
