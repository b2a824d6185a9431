"""Replays every case in tests/fuzz/mutation_kills: the reduced cases with which the fuzzer killed a mutant of
the mutation study (benchmarks/fuzzing/mutation_study.py) that the unit suite let survive.

Each case is a test the suite lacked. It must pass every oracle on the real code; its first line names the
cosmic-ray mutant it kills, which must still be one of the study's sampled mutants and still apply to its file
(``python -m benchmarks.fuzzing.mutation_study verify`` runs each case with its mutant applied, in a copy).
The folder is filled by ``python -m benchmarks.fuzzing.mutation_study regressions --label LABEL``, and it must
hold exactly the mutants that only the fuzzer kills in the study's recorded fuzzer runs (``fuzz-*.jsonl``): an
empty folder passes only while the study has none, and never skips.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.fuzzing.mutation_study import (
    DEFAULT_RESULTS,
    ROOT,
    killed_mutant,
    load_sample,
    outcomes,
    read_results,
)
from tensorium.fuzz.oracle import check
from tensorium.fuzz.reduce import read_case

CASES = sorted((Path(__file__).parent / "mutation_kills").glob("*.mlir"))
PARAMETERS = [pytest.param(p, id=p.stem) for p in CASES] or [pytest.param(None, id="no-case-yet")]
"""One parameter per case; with none, one that checks that the study has no fuzzer-only kill (not a skip)."""


def fuzzer_only_kills() -> set[str]:
    """The ids of the mutants the fuzzer kills and the suite does not, in any recorded fuzzer run of the study."""
    _, mutants = load_sample(DEFAULT_RESULTS)
    suite = read_results(DEFAULT_RESULTS / "suite.jsonl")
    found = set()
    for path in sorted(DEFAULT_RESULTS.glob("fuzz-*.jsonl")):
        found |= {o.mutant.id for o in outcomes(mutants, suite, read_results(path)) if o.fuzz and not o.suite}
    return found


def test_every_mutant_only_the_fuzzer_kills_has_its_case_here() -> None:
    assert {killed_mutant(p.read_text()) for p in CASES} == fuzzer_only_kills()


@pytest.mark.parametrize("path", PARAMETERS)
def test_a_case_that_killed_a_mutant_passes_on_the_real_code(path: Path | None) -> None:
    if path is None:
        assert not fuzzer_only_kills()
        return
    verdict = check(read_case(path))
    assert verdict.status == "ok", f"{path.name}: {verdict.failure.detail if verdict.failure else verdict.reason}"


@pytest.mark.parametrize("path", PARAMETERS)
def test_a_case_names_a_sampled_mutant_that_still_applies(path: Path | None) -> None:
    if path is None:
        assert not fuzzer_only_kills()
        return
    _, mutants = load_sample(DEFAULT_RESULTS)
    by_id = {m.id: m for m in mutants}
    text = path.read_text()
    mutant = by_id[killed_mutant(text)]
    assert path.name.startswith(f"{mutant.id}-")
    assert text.splitlines()[1].startswith("// change: ")
    source = (ROOT / mutant.path).read_text()
    assert mutant.mutate(source) != source  # its lines are still there, once: verify can apply it
