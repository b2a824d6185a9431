"""The mutants of the fuzzer's mutation study: each is live (its witness passes unpatched and fails patched) and
restores Tensorium when its patch exits, normally or by an exception."""

from __future__ import annotations

import re

import pytest

from benchmarks.fuzzing.mutants import MUTANTS, Mutant
from tensorium.fuzz.oracle import check
from tensorium.fuzz.reduce import parse_case


class _Abort(Exception):
    """Raised inside a patch to check that leaving it by an exception restores Tensorium too."""


def test_the_registry_spans_many_passes() -> None:
    names = [m.name for m in MUTANTS]
    assert len(names) >= 10
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) for name in names)
    assert len({m.target for m in MUTANTS}) >= 8
    assert all(m.description.endswith(".") and "\n" not in m.description for m in MUTANTS)


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_the_witness_shows_the_mutant(mutant: Mutant) -> None:
    case = parse_case(mutant.witness, mutant.name)
    before = check(case)
    assert before.status == "ok", before.reason or before.failure
    with mutant.patch():
        patched = check(case)
    assert patched.status == "failure", f"the witness passes the mutant: {patched.status} {patched.reason}"
    with pytest.raises(_Abort), mutant.patch():
        raise _Abort
    after = check(case)
    assert after.status == "ok", after.reason or after.failure
