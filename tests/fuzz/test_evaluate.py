"""The fuzzer evaluation's tables and plot, on small made-up results (the runs themselves take minutes)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.fuzzing.evaluate import coverage_svg, coverage_table, mutant_table
from benchmarks.fuzzing.mutants import MUTANTS


def _write(path: Path, data: dict[str, object]) -> None:
    path.write_text(json.dumps(data))


def _mutant_run(name: str, seed: int, seconds: float | None) -> dict[str, object]:
    first = None if seconds is None else {"seconds": seconds, "execs": 7, "signature": "mismatch:interp"}
    return {"mutant": name, "seed": seed, "execs": 100, "detected": seconds is not None, "first_failure": first}


def test_the_mutant_table_counts_each_mutant_over_the_seeds(tmp_path: Path) -> None:
    a, b = MUTANTS[0].name, MUTANTS[1].name
    _write(tmp_path / f"mutant-{a}-seed0.json", _mutant_run(a, 0, 1.5))
    _write(tmp_path / f"mutant-{a}-seed2.json", _mutant_run(a, 2, 3.0))
    _write(tmp_path / f"mutant-{b}-seed0.json", _mutant_run(b, 0, None))
    _write(tmp_path / f"mutant-{b}-seed2.json", _mutant_run(b, 2, 40.0))
    table = mutant_table(tmp_path)
    assert f"| {a} | {MUTANTS[0].target} |" in table
    row_a = next(line for line in table.splitlines() if line.startswith(f"| {a} "))
    row_b = next(line for line in table.splitlines() if line.startswith(f"| {b} "))
    assert "| 2 of 2 | 1.5 s, 3.0 s | mismatch:interp |" in row_a
    assert "| 1 of 2 | missed, 40.0 s | mismatch:interp |" in row_b
    assert "after (seed 0, 2)" in table
    total = len(MUTANTS)
    assert f"Detected within the budget: 1 of {total} with seed 0, 2 of {total} with seed 2; 1 of {total}" in table


def test_coverage_table_and_plot_show_both_modes(tmp_path: Path) -> None:
    for mode, edges in (("guided", 900), ("generation", 700)):
        _write(
            tmp_path / f"coverage-{mode}-0.json",
            {
                "mode": mode,
                "seed": 0,
                "seconds": 60.0,
                "execs": 50,
                "corpus": 10,
                "line_percent": 40.0,
                "failures": [],
                "timeline": [[1.0, 1, 100, 80], [30.0, 20, edges - 50, 600], [60.0, 50, edges, 700]],
            },
        )
    table = coverage_table(tmp_path)
    assert "| coverage-guided | 0 | 50 | 10 | 850 | 900 | 40.0% | 0 |" in table
    assert "| generation-only | 0 | 50 | 10 | 650 | 700 | 40.0% | 0 |" in table
    svg = coverage_svg(tmp_path)
    assert svg.startswith("<svg") and svg.count("<polyline") == 2


def test_tables_say_when_there_are_no_runs(tmp_path: Path) -> None:
    assert coverage_table(tmp_path) == "(no coverage runs)"
    assert mutant_table(tmp_path) == "(no mutation study runs)"
