"""Textual pass tests: every case of tests/passes/cases/*.mlir runs its pipeline and compares the IR.

A case file holds cases separated by a line ``// -----``. A case starts with ``// RUN: <pipeline>``,
then the input IR (comments allowed), then either ``// EXPECTED:`` and the exact printed IR after the
pipeline, or ``// ERROR: <text>`` and a substring of the error the input or pipeline must raise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import tensorium as tm
from tensorium.errors import TensoriumError
from tensorium.passes import PassManager, get_pass, pass_names

CASES_DIR = Path(__file__).parent / "cases"
SEPARATOR = "// -----"


@dataclass(frozen=True)
class Case:
    """One textual test case."""

    file: str
    index: int
    pipeline: str
    source: str
    expected: str | None
    error: str | None

    @property
    def id(self) -> str:
        return f"{self.file}:{self.index}"


def parse_cases(path: Path) -> list[Case]:
    """The cases of one case file, numbered from 1."""
    chunks: list[list[str]] = [[]]
    for line in path.read_text().splitlines():
        if line.strip() == SEPARATOR:
            chunks.append([])
        else:
            chunks[-1].append(line)
    return [_parse_case(path.name, i, lines) for i, lines in enumerate(chunks, 1)]


def _parse_case(file: str, index: int, lines: list[str]) -> Case:
    body = list(lines)
    while body and not body[0].strip():
        body.pop(0)
    where = f"{file}:{index}"
    if not body or not body[0].startswith("// RUN:"):
        raise ValueError(f"{where}: a case must start with '// RUN: <pipeline>'")
    pipeline = body[0].removeprefix("// RUN:").strip()
    for i, line in enumerate(body[1:], 1):
        if line.strip() == "// EXPECTED:":
            expected = "\n".join(body[i + 1 :]).strip("\n") + "\n"
            return Case(file, index, pipeline, "\n".join(body[1:i]), expected, None)
        if line.startswith("// ERROR:"):
            error = line.removeprefix("// ERROR:").strip()
            return Case(file, index, pipeline, "\n".join(body[1:i]), None, error)
    raise ValueError(f"{where}: no '// EXPECTED:' or '// ERROR:' line")


ALL_CASES = [case for path in sorted(CASES_DIR.glob("*.mlir")) for case in parse_cases(path)]


def run_case(case: Case) -> str:
    """Parse the input, run the pipeline with verification after each pass, and print the result."""
    module = tm.parse_module(case.source)
    PassManager.parse(case.pipeline, verify_each=True).run(module)
    return tm.print_module(module)


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_case(case: Case) -> None:
    if case.error is not None:
        with pytest.raises(TensoriumError) as info:
            run_case(case)
        assert case.error in str(info.value)
        return
    assert run_case(case) == case.expected
    assert tm.print_module(tm.parse_module(case.expected or "")) == case.expected, "expected IR must round-trip"


def test_there_are_cases_for_every_pass() -> None:
    pipelines = ",".join(c.pipeline for c in ALL_CASES)
    shipped = [n for n in pass_names() if get_pass(n).__module__.startswith("tensorium.passes.")]
    for name in shipped:
        assert name in pipelines or name == "lower-to-loops", f"no textual case runs {name}"
    assert len(ALL_CASES) >= 20
