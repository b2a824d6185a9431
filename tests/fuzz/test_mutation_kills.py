"""Replays every case in tests/fuzz/mutation_kills: the reduced cases with which the fuzzer killed a mutant of
the mutation study (benchmarks/fuzzing/mutation_study.py) that the unit suite let survive.

Each case is a test the suite lacked. It must pass every oracle on the real code; its first line names the
cosmic-ray mutant it kills, which must still be one of its study's sampled mutants and still apply to its file
(``python -m benchmarks.fuzzing.mutation_study --results RESULTS verify`` runs each case with its mutant applied, in
a copy). Mutant ids are per sample, so each study (a results folder ``benchmarks/fuzzing/results/mutation*``) has
a subfolder of its own, filled by ``python -m benchmarks.fuzzing.mutation_study --results RESULTS regressions
--label LABEL``; it must hold exactly the mutants that only the fuzzer kills in that study's recorded fuzzer runs
(``fuzz-*.jsonl``): a study with none passes with an empty or missing folder, and nothing here skips.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.fuzzing.mutation_study import (
    ROOT,
    killed_mutant,
    load_sample,
    outcomes,
    read_results,
    regressions_folder,
    studies,
)
from tensorium.fuzz.oracle import check
from tensorium.fuzz.reduce import read_case

STUDIES = studies()
CASES = [(study, path) for study in STUDIES for path in sorted(regressions_folder(study).glob("*.mlir"))]
PARAMETERS = [pytest.param(study, path, id=f"{study.name}/{path.stem}") for study, path in CASES]


def fuzzer_only_kills(study: Path) -> set[str]:
    """The ids of the mutants the fuzzer kills and the suite does not, in any recorded fuzzer run of ``study``."""
    _, mutants = load_sample(study)
    suite = read_results(study / "suite.jsonl")
    found = set()
    for path in sorted(study.glob("fuzz-*.jsonl")):
        found |= {o.mutant.id for o in outcomes(mutants, suite, read_results(path)) if o.fuzz and not o.suite}
    return found


def test_the_study_has_samples() -> None:
    assert [s.name for s in STUDIES][:2] == ["mutation", "mutation-s1"]


@pytest.mark.parametrize("study", STUDIES, ids=[s.name for s in STUDIES])
def test_every_mutant_only_the_fuzzer_kills_has_its_case_here(study: Path) -> None:
    cases = sorted(regressions_folder(study).glob("*.mlir"))
    assert {killed_mutant(p.read_text()) for p in cases} == fuzzer_only_kills(study)


@pytest.mark.parametrize(("study", "path"), PARAMETERS)
def test_a_case_that_killed_a_mutant_passes_on_the_real_code(study: Path, path: Path) -> None:
    verdict = check(read_case(path))
    assert verdict.status == "ok", f"{path.name}: {verdict.failure.detail if verdict.failure else verdict.reason}"


@pytest.mark.parametrize(("study", "path"), PARAMETERS)
def test_a_case_names_a_sampled_mutant_that_still_applies(study: Path, path: Path) -> None:
    _, mutants = load_sample(study)
    by_id = {m.id: m for m in mutants}
    text = path.read_text()
    mutant = by_id[killed_mutant(text)]
    assert path.name.startswith(f"{mutant.id}-")
    assert text.splitlines()[1].startswith("// change: ")
    source = (ROOT / mutant.path).read_text()
    assert mutant.mutate(source) != source  # its lines are still there, once: verify can apply it
