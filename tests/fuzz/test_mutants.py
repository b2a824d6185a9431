"""The mutants of the fuzzer's mutation study: each is live (its witness passes unpatched and fails patched) and
restores Tensorium when its patch exits, normally or by an exception."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from types import ModuleType

import pytest

from tensorium import bench
from tensorium.fuzz.oracle import check
from tensorium.fuzz.reduce import parse_case


def _load_mutants() -> ModuleType:
    """``benchmarks.fuzzing.mutants`` from the checkout's benchmarks/ folder, found as
    ``tensorium.bench.load_benchmarks`` finds it, without the timing harness (which needs torch)."""
    if "benchmarks" not in sys.modules and (bench.BENCHMARKS_DIR / "__init__.py").is_file():
        spec = importlib.util.spec_from_file_location(
            "benchmarks", bench.BENCHMARKS_DIR / "__init__.py", submodule_search_locations=[str(bench.BENCHMARKS_DIR)]
        )
        assert spec is not None and spec.loader is not None
        package = importlib.util.module_from_spec(spec)
        sys.modules["benchmarks"] = package
        spec.loader.exec_module(package)
    return importlib.import_module("benchmarks.fuzzing.mutants")


mutants = _load_mutants()
Mutant = mutants.Mutant
MUTANTS: tuple[Mutant, ...] = mutants.MUTANTS


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
