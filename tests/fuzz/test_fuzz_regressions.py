"""Replays every case in tests/fuzz/regressions: bugs the fuzzer found, reduced, and fixed.

Each file is a reduced IR program whose header names the pipeline, the input seed and the backends
(``tensorium fuzz --replay FILE`` runs one by hand) and, in a ``// bug:`` line, what was wrong.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorium.fuzz.oracle import check
from tensorium.fuzz.reduce import read_case

CASES = sorted((Path(__file__).parent / "regressions").glob("*.mlir"))


def test_there_are_regression_cases() -> None:
    assert CASES


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fixed_bug_stays_fixed(path: Path) -> None:
    text = path.read_text()
    assert "// bug: " in text, f"{path.name} should say which bug it guards against"
    verdict = check(read_case(path))
    assert verdict.status == "ok", f"{path.name}: {verdict.failure.detail if verdict.failure else verdict.reason}"
