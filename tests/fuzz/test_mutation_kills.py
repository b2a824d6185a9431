"""Replays every case in tests/fuzz/mutation_kills: the reduced cases with which the fuzzer killed a mutant of
the mutation study (benchmarks/fuzzing/mutation_study.py) that the unit suite let survive.

Each case is a test the suite lacked. It must pass every oracle on the real code; its first line names the
cosmic-ray mutant it kills, which must still be one of the study's sampled mutants and still apply to its file
(``python -m benchmarks.fuzzing.mutation_study verify`` runs each case with its mutant applied, in a copy).
The folder is filled by ``python -m benchmarks.fuzzing.mutation_study regressions --label LABEL``; the study
at 3083f96 found no mutant that only the fuzzer kills (docs/fuzzing.md#mutation-study), so it may be empty.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.fuzzing.mutation_study import DEFAULT_RESULTS, ROOT, killed_mutant, load_sample
from tensorium.fuzz.oracle import check
from tensorium.fuzz.reduce import read_case

CASES = sorted((Path(__file__).parent / "mutation_kills").glob("*.mlir"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_a_case_that_killed_a_mutant_passes_on_the_real_code(path: Path) -> None:
    verdict = check(read_case(path))
    assert verdict.status == "ok", f"{path.name}: {verdict.failure.detail if verdict.failure else verdict.reason}"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_a_case_names_a_sampled_mutant_that_still_applies(path: Path) -> None:
    _, mutants = load_sample(DEFAULT_RESULTS)
    by_id = {m.id: m for m in mutants}
    text = path.read_text()
    mutant = by_id[killed_mutant(text)]
    assert path.name.startswith(f"{mutant.id}-")
    assert text.splitlines()[1].startswith("// change: ")
    source = (ROOT / mutant.path).read_text()
    assert mutant.mutate(source) != source  # its lines are still there, once: verify can apply it
