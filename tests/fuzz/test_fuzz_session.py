"""Fuzzing sessions through the Python API and the ``tensorium fuzz`` command."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tensorium.cli import main
from tensorium.fuzz.fuzzer import FUZZ_OPT_LEVELS, FuzzConfig, case_opt_level, fuzz
from tensorium.fuzz.oracle import FuzzCase, check
from tensorium.fuzz.reduce import read_case

from .conftest import SIMPLE

INTERP = ("interp",)


def test_a_guided_session_grows_a_corpus_and_records_coverage_over_time() -> None:
    report = fuzz(FuzzConfig(seconds=300, max_execs=25, seed=0, backends=INTERP), log=None)
    assert report.execs == 25
    assert sum(report.outcomes.values()) == 25
    assert report.corpus_size >= 3 and report.edges > 500
    assert 0 < report.line_percent < 100
    assert report.timeline and report.timeline[-1][1] == 25
    assert [t for t, *_ in report.timeline] == sorted(t for t, *_ in report.timeline)
    assert sum(report.mutations.values()) > 0
    assert "25 executions" in report.summary() and "no failures" in report.summary()


def test_a_quiet_session_measures_its_line_percentage_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress nobody reads is not computed: a quiet run takes the line percentage for its report only, while
    a run that prints progress takes it at each progress line too."""
    from tensorium.fuzz import coverage

    calls: list[int] = []
    measure = coverage.CoverageTracer.line_percent

    def counted(self: coverage.CoverageTracer) -> float:
        calls.append(1)
        return measure(self)

    monkeypatch.setattr(coverage.CoverageTracer, "line_percent", counted)
    config = FuzzConfig(seconds=300, max_execs=4, seed=0, backends=INTERP, progress_seconds=0.0)
    report = fuzz(config, log=None)
    assert len(calls) == 1 and report.line_percent > 0
    calls.clear()
    log = io.StringIO()
    fuzz(config, log=log)
    assert len(calls) == 1 + log.getvalue().count(" lines ") and log.getvalue().count(" lines ") >= 3


def test_generation_only_keeps_no_corpus_and_need_not_trace() -> None:
    report = fuzz(FuzzConfig(seconds=300, max_execs=6, seed=1, coverage=False, backends=INTERP), log=None)
    assert report.execs == 6 and report.corpus_size == 0 and report.edges == 0 and not report.mutations
    traced = fuzz(FuzzConfig(seconds=300, max_execs=6, seed=1, coverage=False, trace=True, backends=INTERP), log=None)
    assert traced.corpus_size == 0 and traced.edges > 0


def test_a_session_finds_reduces_and_writes_a_broken_pass(drop_adds: str, tmp_path: Path) -> None:
    config = FuzzConfig(
        seconds=300, max_execs=60, seed=0, out=tmp_path, pipeline=f"cse,{drop_adds}", backends=INTERP, max_failures=1
    )
    report = fuzz(config, log=None)
    assert len(report.failures) == 1
    found = report.failures[0]
    assert found.failure.kind == "mismatch" and found.path is not None
    assert found.path.parent == tmp_path / "failures" and found.path.name.startswith("001-mismatch-interp")
    assert found.reproduce_command() == f"tensorium fuzz --replay {found.path}"
    case = read_case(found.path)
    assert case.pipeline == drop_adds
    assert check(case).status == "failure"
    assert found.path.with_suffix(".log").read_text().count("// pipeline:") == 1
    assert (tmp_path / "report.json").is_file() and not (tmp_path / "current.mlir").exists()


def test_the_command_fuzzes_and_replays(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    out = tmp_path / "run"
    status = main(
        ["fuzz", "--time", "60", "--max-execs", "4", "--seed", "3", "--out", str(out), "--backends", "interp"]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "fuzzing for 60 s, seed 3, coverage-guided, backends interp" in captured.err
    assert captured.out.startswith("fuzzed ") and "4 executions" in captured.out

    corpus_file = next((out / "corpus").glob("*.mlir"))
    assert main(["fuzz", "--replay", str(corpus_file)]) == 0
    assert capsys.readouterr().out == f"{corpus_file}: ok\n"

    drop_adds = request.getfixturevalue("drop_adds")  # registered only now: random pipelines could draw it
    failing = tmp_path / "failing.mlir"
    failing.write_text(f"// pipeline: {drop_adds}\n// backends: interp\n{SIMPLE}")
    assert main(["fuzz", "--replay", str(failing)]) == 3
    assert "FAILS: mismatch at interp" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fuzz", "--pipeline", "cse,nope"], "unknown pass 'nope'"),
        (["fuzz", "--replay", "missing.mlir"], "missing.mlir: no such case file"),
    ],
)
def test_bad_requests_are_one_line_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_unknown_backend_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["fuzz", "--backends", "gpu"])
    assert info.value.code == 2
    assert "unknown backend 'gpu'" in capsys.readouterr().err


def test_workers_on_several_cores_merge_into_one_report(tmp_path: Path) -> None:
    import io

    log = io.StringIO()
    config = FuzzConfig(
        seconds=300, max_execs=4, seed=5, backends=INTERP, out=tmp_path, jobs=2, progress_seconds=0.01, sync_seconds=300
    )
    report = fuzz(config, log=log)
    assert report.execs == 8 and len(report.workers) == 2
    assert [w["execs"] for w in report.workers] == [4, 4]
    assert report.edges >= max(int(w["edges"]) for w in report.workers)  # type: ignore[call-overload]
    assert "2 workers: execs" in log.getvalue()
    assert (tmp_path / "report.json").is_file()
    assert (tmp_path / "worker-0" / "report.json").is_file() and (tmp_path / "worker-1" / "corpus").is_dir()


def test_generated_cases_sometimes_lower_to_loops_at_the_end() -> None:
    """FUZZ_LOWERED of the generated pipelines end with lower-to-loops (scheduled or not), never elsewhere, so that
    the CPU backend compiles loop IR whose math decompose never rewrote."""
    from tensorium.fuzz.fuzzer import FUZZ_LOWERED, Fuzzer

    fuzzer = Fuzzer(FuzzConfig(coverage=False, pattern_fraction=0, quant_fraction=0), log=None)
    ends = []
    for _ in range(200):
        _, pipeline = fuzzer._generate()
        names = [p.name for p in pipeline]
        assert "lower-to-loops" not in names[:-1]
        if names[-1] == "lower-to-loops":
            ends.append(list(pipeline)[-1].schedule)
    assert 0.5 * FUZZ_LOWERED * 200 <= len(ends) <= 2 * FUZZ_LOWERED * 200
    assert set(ends) == {True, False}
    off = Fuzzer(FuzzConfig(coverage=False, pattern_fraction=0, quant_fraction=0, lowered_fraction=0), log=None)
    assert all([p.name for p in off._generate()[1]][-1] != "lower-to-loops" for _ in range(100))


def test_a_lowered_case_compiles_math_the_emitter_keeps() -> None:
    """tanh and erf of f32 in scheduled (vectorized) loops reach the LLVM emitter's own vector math when the
    pipeline lowers to loops, and agree with the interpreter there."""
    rows = [
        "    %0 = graph.tanh %x : (tensor<3x40xf32>) -> tensor<3x40xf32>",
        "    %1 = graph.erf %0 : (tensor<3x40xf32>) -> tensor<3x40xf32>",
    ]
    text = (
        "module {\n  func.func @main(%x: tensor<3x40xf32>) -> tensor<3x40xf32> {\n"
        + "\n".join(rows)
        + "\n    func.return %1 : tensor<3x40xf32>\n  }\n}\n"
    )
    for pipeline in ("lower-to-loops{schedule=true}", "lower-to-loops"):
        verdict = check(FuzzCase(module=text, pipeline=pipeline, seed=0, backends=("interp", "cpu")))
        assert verdict.status == "ok", verdict.failure.detail if verdict.failure else verdict.reason


def test_cases_draw_their_llvm_level_by_their_seed_unless_one_is_fixed() -> None:
    levels = Counter(case_opt_level(None, seed) for seed in range(2000))
    assert set(levels) == {level for level, _ in FUZZ_OPT_LEVELS}
    for level, share in FUZZ_OPT_LEVELS:
        assert abs(levels[level] / 2000 - share) < 0.05
    assert [case_opt_level(None, s) for s in range(50)] == [case_opt_level(None, s) for s in range(50)]
    assert {case_opt_level(3, s) for s in range(50)} == {3}


def test_a_session_counts_its_cpu_builds_by_llvm_level() -> None:
    cpu_only: dict[str, Any] = {"coverage": False, "backends": ("interp", "cpu"), "cpu_fraction": 1.0}
    mixed = fuzz(FuzzConfig(max_execs=8, seed=2, **cpu_only), log=None)
    assert sum(mixed.cpu_levels.values()) == 8 and len(mixed.cpu_levels) >= 2
    assert "CPU builds by LLVM level: O0" in mixed.summary()
    assert mixed.to_json()["cpu_levels"] == {str(k): n for k, n in sorted(mixed.cpu_levels.items())}
    fixed = fuzz(FuzzConfig(max_execs=3, seed=2, opt_level=2, **cpu_only), log=None)
    assert fixed.cpu_levels == {2: 3}
    interp_only = fuzz(FuzzConfig(max_execs=3, seed=2, coverage=False, backends=INTERP), log=None)
    assert not interp_only.cpu_levels and "CPU builds" not in interp_only.summary()
