"""A bug in the fuzzer's own code (building, mutating or reducing a case) costs a case, not the run: the report,
the corpus and the failures found so far are kept, and the error is reported as the fuzzer's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tensorium.cli import main
from tensorium.fuzz import fuzzer as fuzzer_module
from tensorium.fuzz.fuzzer import MAX_INTERNAL_ERRORS_IN_A_ROW, FuzzConfig, Fuzzer, fuzz
from tensorium.fuzz.reduce import read_case
from tensorium.ir.parser import parse_module
from tensorium.ir.printer import print_module

INTERP = ("interp",)


def _flaky_generator(monkeypatch: pytest.MonkeyPatch, every: int) -> list[int]:
    """Make every ``every``-th generated case raise inside the fuzzer; returns the list of calls."""
    calls: list[int] = []
    generate = Fuzzer._generate

    def flaky(self: Fuzzer):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) % every == 0:
            raise IndexError("a generator bug")
        return generate(self)

    monkeypatch.setattr(Fuzzer, "_generate", flaky)
    return calls


def test_a_generator_error_costs_one_case_and_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _flaky_generator(monkeypatch, every=3)
    config = FuzzConfig(seconds=300, max_execs=8, seed=0, coverage=False, backends=INTERP, out=tmp_path)
    report = fuzz(config, log=None)
    assert report.execs == 8 and not report.stopped
    (error,) = report.internal_errors
    assert error.stage == "generate" and error.error == "IndexError: a generator bug"
    assert error.count == 3  # calls 3, 6 and 9 raised; calls 1 to 11 built the 8 cases
    assert "test_fuzz_internal_errors.py" in error.where and "in flaky" in error.where
    assert "fuzzer error (generate), seen 3x: IndexError: a generator bug" in report.summary()
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["internal_errors"][0]["count"] == 3 and saved["execs"] == 8
    assert "Traceback" in (tmp_path / "failures" / "fuzzer-error-001-generate.log").read_text()


def test_a_fuzzer_that_fails_every_case_stops_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _flaky_generator(monkeypatch, every=1)
    report = fuzz(FuzzConfig(seconds=300, max_execs=50, seed=0, coverage=False, backends=INTERP), log=None)
    assert report.execs == 0 and len(calls) == MAX_INTERNAL_ERRORS_IN_A_ROW
    assert report.stopped == f"the fuzzer's own code failed on {MAX_INTERNAL_ERRORS_IN_A_ROW} cases in a row"
    assert "stopped early" in report.summary()


def test_a_reducer_error_keeps_the_failure_unreduced(
    monkeypatch: pytest.MonkeyPatch, drop_adds: str, tmp_path: Path
) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("a reducer bug")

    monkeypatch.setattr(fuzzer_module, "reduce_case", broken)
    config = FuzzConfig(
        seconds=300, max_execs=60, seed=0, out=tmp_path, pipeline=f"cse,{drop_adds}", backends=INTERP, max_failures=1
    )
    report = fuzz(config, log=None)
    (found,) = report.failures
    assert found.reduced == found.case and found.path is not None
    written = read_case(found.path)
    assert written.pipeline == found.case.pipeline == f"cse,{drop_adds}", "not cut down to the broken pass"
    assert print_module(parse_module(written.module)) == print_module(parse_module(found.case.module))
    (error,) = report.internal_errors
    assert error.stage == "reduce" and error.error == "RuntimeError: a reducer bug"
    assert (tmp_path / "report.json").is_file()


def test_ctrl_c_keeps_the_report_and_the_corpus(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    step = Fuzzer.step
    steps: list[int] = []

    def interrupted(self: Fuzzer):  # type: ignore[no-untyped-def]
        steps.append(1)
        if len(steps) == 6:
            raise KeyboardInterrupt
        return step(self)

    monkeypatch.setattr(Fuzzer, "step", interrupted)
    report = fuzz(FuzzConfig(seconds=300, max_execs=50, seed=0, backends=INTERP, out=tmp_path), log=None)
    assert report.execs == 5 and report.stopped == "interrupted (Ctrl-C)"
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["stopped"] == "interrupted (Ctrl-C)" and saved["corpus"] == report.corpus_size >= 1
    assert len(list((tmp_path / "corpus").glob("*.mlir"))) == report.corpus_size


def test_the_command_exits_3_on_a_fuzzer_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _flaky_generator(monkeypatch, every=2)
    status = main(["fuzz", "--max-execs", "3", "--backends", "interp", "--no-coverage", "--quiet"])
    out = capsys.readouterr().out
    assert status == 3 and "a bug in the fuzzer, not in the compiler" in out and "no failures" in out
