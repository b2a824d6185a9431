"""Targets by name as fuzz backends: parsing the names, drawing them per execution, compiling for a CPU that
is not this one, case files that name them, and a bug only one target's code has."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tensorium.backends.llvm import vectorize
from tensorium.backends.llvm.common import I64
from tensorium.cli import main
from tensorium.errors import ParseError
from tensorium.fuzz import backends
from tensorium.fuzz.backends import BackendError, backends_for_execution, compile_only, parse_backends
from tensorium.fuzz.oracle import FuzzCase, check
from tensorium.fuzz.reduce import format_case, parse_case
from tensorium.targets import parse_target

from .layers import short_run, signatures

F16_CAST = """
module {
  func.func @main(%x: tensor<5xf32>) -> (tensor<5xf16>, tensor<5xf32>) {
    %0 = graph.cast %x {dtype = f16} : (tensor<5xf32>) -> tensor<5xf16>
    %1 = graph.cast %0 {dtype = f32} : (tensor<5xf16>) -> tensor<5xf32>
    func.return %0, %1 : tensor<5xf16>, tensor<5xf32>
  }
}
"""


@pytest.fixture(autouse=True)
def _no_kernel_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENSORIUM_KERNEL_CACHE", "0")  # planted bugs must reach the emitter, not cached code


def test_backend_names_are_targets() -> None:
    assert parse_backends("interp, cpu:x86-64,cpu:x86-64-v3,cpu,cpu") == (
        "interp",
        "cpu:x86-64",
        "cpu:x86-64-v3",
        "cpu",
    )
    assert parse_backends(["interp", "cuda:sm_90", "webgpu"]) == ("interp", "cuda:sm_90", "webgpu")
    assert [backends.kind_of(n) for n in ("interp", "cpu:znver4", "cuda", "webgpu")] == [
        "interp",
        "cpu",
        "cuda",
        "webgpu",
    ]
    with pytest.raises(BackendError, match=r"unknown backend 'cpu:pentium9'.*unknown CPU 'pentium9'"):
        parse_backends("interp,cpu:pentium9")
    with pytest.raises(BackendError, match="unknown backend 'tpu'"):
        parse_backends("tpu")
    with pytest.raises(BackendError, match="no backend named"):
        parse_backends(" , ")


def test_each_kind_runs_in_its_share_of_executions() -> None:
    rng = np.random.default_rng(0)
    names = ("interp", "cpu", "cpu:x86-64", "cuda", "webgpu")
    shares = {"cpu_fraction": 0.3, "gpu_fraction": 0.1, "webgpu_fraction": 0.2}
    drawn = [backends_for_execution(names, shares, rng, lowered=False) for _ in range(2000)]
    assert all(d[0] == "interp" for d in drawn)
    assert all(("cpu" in d) == ("cpu:x86-64" in d) for d in drawn)  # the CPU targets of one execution go together
    assert 0.25 < np.mean(["cpu" in d for d in drawn]) < 0.35
    assert 0.07 < np.mean(["cuda" in d for d in drawn]) < 0.13
    assert 0.16 < np.mean(["webgpu" in d for d in drawn]) < 0.24
    none = {"cpu_fraction": 0.0, "gpu_fraction": 0.0, "webgpu_fraction": 0.0}
    lowered = backends_for_execution(names, none, rng, lowered=True)
    assert lowered == ("interp", "cpu", "cpu:x86-64")  # only the CPU checks a big lowered program
    assert backends_for_execution(("cpu:x86-64",), none, rng, False) == ("cpu:x86-64",)


def test_code_for_a_cpu_this_host_lacks_is_compiled_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    target = parse_target("cpu:skylake-avx512")
    foreign = dataclasses.replace(target, features=(*target.features, "futurefeature"))
    monkeypatch.setattr(backends, "backend_target", lambda name: foreign if name == "cpu:future" else target)
    assert compile_only(foreign) is not None and "futurefeature" in str(compile_only(foreign))
    notes = backends.backend_notes(["interp", "cpu:future"])
    assert notes and "cpu:future: compiled and its assembly produced, not run" in notes[0]
    made: list[str] = []
    from tensorium.backends.llvm.jit import CompiledKernels

    real = CompiledKernels.assembly

    def keep(self: CompiledKernels) -> str:
        made.append(real(self))
        return made[-1]

    monkeypatch.setattr(CompiledKernels, "assembly", keep)
    verdict = check(FuzzCase(F16_CAST, "canonicalize", 0, ("interp", "cpu:future"), 1))
    assert verdict.status == "ok", verdict
    assert made and "vcvtps2ph" in made[0]  # the AVX-512 target's f16 conversion, in assembly never run here


def test_f16_conversions_run_on_a_cpu_without_f16c() -> None:
    # Regression: x86-64 (no F16C) converts f16 through __truncsfhf2 / __extendhfsf2, which the JIT did not
    # find: the kernel called address 0 and the fuzzer's process died (found by fuzzing cpu:x86-64).
    verdict = check(FuzzCase(F16_CAST, "canonicalize", 3, ("interp", "cpu:x86-64"), 1))
    assert verdict.status == "ok", verdict


def test_case_files_name_targets_and_schedule_seeds() -> None:
    case = FuzzCase(F16_CAST, "cse", 7, ("interp", "cpu:x86-64-v3", "cuda:sm_90"), 1, schedule_seed=42)
    text = format_case(case)
    assert "// backends: interp,cpu:x86-64-v3,cuda:sm_90" in text and "// schedule-seed: 42" in text
    assert dataclasses.replace(parse_case(text), module=F16_CAST) == case
    with pytest.raises(ParseError, match=r"unknown backend 'gpu' in '// backends:'"):
        parse_case(text.replace("cuda:sm_90", "gpu"))
    with pytest.raises(ParseError, match="schedule-seed"):
        parse_case(text.replace("schedule-seed: 42", "schedule-seed: many"))


def test_the_command_takes_targets_as_backends(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuzz", "--max-execs", "1", "--quiet", "--backends", "interp,cpu:x86-64", "--no-coverage"]) == 0
    assert "backends interp,cpu:x86-64" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fuzz", "--backends", "interp,cpu:pentium9"])
    assert "unknown CPU 'pentium9'" in capsys.readouterr().err


def test_a_bug_only_the_sse_target_has_is_found_by_its_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    original = vectorize.VectorEmitter.emit_vector_loop

    def four_lanes_one_short(self, body, lower, upper, width, plan):  # type: ignore[no-untyped-def]
        if width == 4:
            upper = self.builder.sub(upper, I64(1))  # the bug: 4-lane loops (f32 on SSE) stop one iteration early
        return original(self, body, lower, upper, width, plan)

    monkeypatch.setattr(vectorize.VectorEmitter, "emit_vector_loop", four_lanes_one_short)
    report = short_run(30, seed=0, backends=("interp", "cpu:x86-64"))
    assert signatures(report) == ["mismatch:cpu:x86-64"], report.summary()
    assert report.execs <= 30
