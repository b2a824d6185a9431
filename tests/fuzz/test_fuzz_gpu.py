"""The GPU layers of the fuzzer: WGSL through a validator, PTX through ptxas, both GPU schedules on the loop
interpreter, each with a planted bug it must find; they skip cleanly where the validator is absent."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tensorium.backends.cuda import emitter as cuda_emitter
from tensorium.backends.cuda.ptx import ptxas_path
from tensorium.backends.llvm.common import BufferRef
from tensorium.errors import CompileError
from tensorium.fuzz.backends import (
    BackendRun,
    dawn_available,
    dawn_problems,
    low_webgpu_limits,
    naga_available,
    naga_problems,
    wgsl_validator,
)
from tensorium.fuzz.oracle import FuzzCase, check
from tensorium.ir import parse_module
from tensorium.ir.core import Operation
from tensorium.ir.types import BufferType, FloatType, storage_dtype
from tensorium.lowering import gpu_schedule, webgpu_split
from tensorium.lowering.schedule import find_loop
from tensorium.targets import parse_target

from .layers import short_run, signatures

POW = """
module {
  func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = graph.pow %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %0 : tensor<4xf32>
  }
}
"""


NEEDS = {
    "naga": "naga needs wgpu-py (pip install 'tensorium[webgpu]') and a WebGPU adapter (mesa-vulkan-drivers)",
    "dawn": "Dawn needs Node, the npm webgpu package (npm ci in tensorium/backends/webgpu/js) and SwiftShader",
}
AVAILABLE = {"naga": naga_available, "dawn": dawn_available}


def _needs_wgsl_validator(name: str | None = None) -> None:
    if name is not None and not AVAILABLE[name]():
        pytest.skip(f"no {name} here: {NEEDS[name]}")
    if wgsl_validator() is None:
        pytest.skip(f"no WGSL validator here: {NEEDS['naga']}; {NEEDS['dawn']}")


def _needs_ptxas() -> None:
    if ptxas_path() is None:
        pytest.skip("ptxas is not installed (the CUDA toolkit; or set TENSORIUM_PTXAS)")


def test_f32_pow_is_refused_by_the_cuda_backend_not_an_llvm_abort() -> None:
    # Regression: LLVM's NVPTX backend cannot select fpow and aborted the whole process ("LLVM ERROR: Cannot
    # select"), found by the fuzzer's first CUDA executions; the emitter now refuses it with a CompileError.
    from tensorium.backends.cuda.executable import CudaExecutable

    with pytest.raises(CompileError, match=r"'loop\.pow' on f32 is not supported by the NVPTX backend"):
        CudaExecutable.build(parse_module(POW), target=parse_target("cuda:sm_90"))
    assert check(FuzzCase(POW, "canonicalize", 0, ("interp", "cuda:sm_90"), 1)).status == "ok"


def test_a_clean_run_through_every_layer() -> None:
    report = short_run(
        8,
        seed=4,
        backends=("interp", "cpu:x86-64-v3", "cuda", "webgpu"),
        cpu_fraction=0.3,
        schedule_fraction=0.5,
        quant_fraction=0.3,
    )
    assert report.execs == 8 and not report.failures, report.summary()


GOOD_WGSL = "@compute @workgroup_size(1) fn main() { let x: f32 = max(1.0, 2.0); }"


@pytest.mark.parametrize(("name", "validate"), [("naga", naga_problems), ("dawn", dawn_problems)])
def test_each_wgsl_validator_names_what_it_rejects(
    name: str, validate: Callable[[list[str]], list[str | None]]
) -> None:
    _needs_wgsl_validator(name)
    good, bad = validate([GOOD_WGSL, GOOD_WGSL.replace("max(", "maximum(")])
    assert good is None
    assert bad is not None and "maximum" in bad


def test_a_wgsl_emitter_bug_is_found_by_the_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs_wgsl_validator()
    from tensorium.backends.webgpu.emitter import WGSLEmitter

    def misspelt_max(self: WGSLEmitter, op: Operation) -> str:
        a, b = self.operands(op)
        fn = op.name.split(".")[1]
        fn = "maximum" if fn == "max" else fn  # the bug: WGSL's builtin is max, not maximum
        if not isinstance(op.results[0].type, FloatType):
            return self.let(op, f"{fn}({a}, {b})")
        return self.let(op, f"select({fn}({a}, {b}), {a} + {b}, {a} != {a} || {b} != {b})")

    monkeypatch.setattr(WGSLEmitter, "emit_minmax", misspelt_max)
    report = short_run(20, seed=1, backends=("interp", "webgpu"))
    validator = wgsl_validator()
    assert validator is not None
    assert signatures(report) == [f"validator:wgsl ({validator[0]})"], report.summary()
    assert "maximum" in report.failures[0].failure.summary


def test_an_nvptx_emitter_bug_is_found_by_ptxas(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs_ptxas()
    original = cuda_emitter.NVPTXEmitter.emit_alloc

    def shared_in_bytes(self: cuda_emitter.NVPTXEmitter, op: Operation) -> BufferRef:
        t = op.attr("type")
        if not isinstance(t, BufferType) or t.space != "shared":
            return original(self, op)
        size = storage_dtype(t.element).itemsize
        # the bug: the shared array is sized in bytes rather than elements
        op.attributes["type"] = BufferType((size * t.static_shape[0], *t.shape[1:]), t.element, t.space)
        try:
            return original(self, op)
        finally:
            op.attributes["type"] = t

    monkeypatch.setattr(cuda_emitter.NVPTXEmitter, "emit_alloc", shared_in_bytes)
    # Only large shared tiles overflow ptxas's 48 KiB: random points of the gpu_gemm space reach them.
    report = short_run(30, seed=3, backends=("interp", "cuda:sm_90"), schedule_fraction=1.0)
    assert signatures(report) == ["validator:ptxas"], report.summary()
    assert "too much shared data" in report.failures[0].failure.summary


def test_a_gpu_schedule_bug_is_found_by_the_loop_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    original = gpu_schedule.bind

    def bind_without_thread_offsets(kernel: Operation, name: str, threads: int, blocks: int) -> None:
        original(kernel, name, threads, blocks)
        loop = find_loop(kernel, name)
        first = loop.operands[0].defining_op()
        assert first is not None
        loop.set_operand(0, first.operands[0])  # the bug: every thread starts at its block's first iteration

    monkeypatch.setattr(gpu_schedule, "bind", bind_without_thread_offsets)
    report = short_run(20, seed=0, backends=("interp", "cuda:sm_90"))
    assert signatures(report) == ["mismatch:cuda:sm_90 loop interpreter"], report.summary()


def _webgpu_run(schedule_seed: int | None) -> BackendRun:
    def unused(*args: object) -> None:
        raise AssertionError("not called")

    return BackendRun(
        "webgpu",
        parse_module(POW),
        False,
        (),
        0,
        schedule_seed,
        unused,
        unused,
        unused,
        lambda _: 0,  # type: ignore[arg-type]
    )


def test_half_the_cases_at_random_schedule_points_draw_low_webgpu_limits() -> None:
    assert low_webgpu_limits(_webgpu_run(None)) is None
    drawn = [low_webgpu_limits(_webgpu_run(seed)) for seed in range(40)]
    low = [t for t in drawn if t is not None]
    assert 10 <= len(low) <= 30
    for target in low:
        assert target.kind == "webgpu"
        assert 4 <= target.limit("max_storage_buffer_binding_size") < 16  # the 16 bytes of a tensor<4xf32>
        assert target.limit("max_storage_buffers_per_shader_stage") in (4, 5, 8)
        assert target.limit("max_compute_invocations_per_workgroup") == 256  # the others as they were
    assert drawn == [low_webgpu_limits(_webgpu_run(seed)) for seed in range(40)], "the same seed, the same limits"


def test_a_binding_size_split_bug_is_found_at_low_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    original = webgpu_split._rows

    def shifted(point: object, value: object, start: int, end: int, op: Operation, axis: int = 0) -> object:
        # the bug: every band after the first starts one row early
        return original(point, value, start - 1 if start else start, end - 1 if start else end, op, axis)  # type: ignore[arg-type]

    monkeypatch.setattr(webgpu_split, "_rows", shifted)
    report = short_run(20, seed=0, backends=("interp", "webgpu"), schedule_fraction=1.0)
    assert signatures(report) == ["mismatch:webgpu loop interpreter"], report.summary()


SUB_AND_LOG = """
module {
  func.func @main(%a: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<6xf32> {
    %0 = graph.sub %a, %b : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
    %1 = graph.log %0 : (tensor<6xf32>) -> tensor<6xf32>
    func.return %1 : tensor<6xf32>
  }
}
"""


def test_a_wgsl_semantics_bug_is_found_by_running_the_shaders(monkeypatch: pytest.MonkeyPatch) -> None:
    """Valid WGSL that means something else than its loop IR passes the validator and the loop interpreter;
    the shaders run on the adapter find it. The program's NaNs (log of a negative difference) are forgiven,
    which WGSL leaves open: the real code passes."""
    if not naga_available():
        pytest.skip(f"no WebGPU adapter here: {NEEDS['naga']}")
    from tensorium.backends.webgpu import emitter

    case = FuzzCase(SUB_AND_LOG, "", seed=3, backends=("interp", "webgpu"))
    assert check(case).status == "ok"
    monkeypatch.setitem(emitter._INFIX, "loop.sub", "+")  # the bug: a difference emitted as a sum
    verdict = check(case)
    assert verdict.status == "failure" and verdict.failure is not None, verdict
    assert (verdict.failure.kind, verdict.failure.stage) == ("mismatch", "webgpu shaders on the adapter")
