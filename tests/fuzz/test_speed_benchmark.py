"""benchmarks/fuzzing/speed.py: the table of executions per second against the base commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.fuzzing.speed import VARIANTS, main, table


def test_the_table_gives_each_variant_its_mean_and_its_ratio_to_the_base() -> None:
    rows = [
        {"variant": "base", "jobs": 1, "seed": 0, "rate": 2.0, "cpu_per_exec": 0.3},
        {"variant": "base", "jobs": 1, "seed": 1, "rate": 4.0, "cpu_per_exec": 0.5},
        {"variant": "now", "jobs": 1, "seed": 0, "rate": 7.0, "cpu_per_exec": 0.1},
        {"variant": "now", "jobs": 1, "seed": 1, "rate": 11.0, "cpu_per_exec": 0.1},
        {"variant": "now", "jobs": 2, "seed": 0, "rate": 5.0, "cpu_per_exec": 0.2},
    ]
    lines = table(rows).splitlines()
    assert lines[2] == "| base | 1 | 2.00, 4.00 | 3.00 | 1.00x | 0.300, 0.500 | 0.400 | 1.00x |"
    assert lines[3] == "| now | 1 | 7.00, 11.00 | 9.00 | 3.00x | 0.100, 0.100 | 0.100 | 4.00x |"
    assert lines[4] == "| now | 2 | 5.00 | 5.00 |  | 0.200 | 0.200 |  |"  # no base run with two workers: no ratio


def test_rows_without_cpu_seconds_still_make_a_table() -> None:
    rows = [
        {"variant": "base", "jobs": 1, "seed": 0, "rate": 2.0},
        {"variant": "now", "jobs": 1, "seed": 0, "rate": 6.0},
    ]
    assert table(rows).splitlines()[3] == "| now | 1 | 6.00 | 6.00 | 3.00x |  |  |  |"


def test_a_run_budgeted_in_executions_reports_its_cpu_seconds_per_execution(tmp_path: Path) -> None:
    from benchmarks.fuzzing.speed import ROOT, Variant, run_once

    result = run_once(ROOT, Variant("now", "now"), 600.0, 0, 1, tmp_path, execs=3)
    assert result["execs"] == 3
    assert 0.0 < result["cpu_per_exec"] < 600.0 and result["rate"] > 0.0


def test_variants_have_names_a_comma_list_can_hold_and_unknown_ones_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert all("," not in v.name for v in VARIANTS) and VARIANTS[0].tree == "base"
    with pytest.raises(SystemExit):
        main(["--variants", "now,fastest"])
    assert "unknown variant 'fastest'" in capsys.readouterr().err


def test_the_prev_variant_needs_the_commit_it_measures(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--variants", "base,prev,now"])
    assert "the prev variant needs --prev COMMIT" in capsys.readouterr().err
    assert {"prev", "now+every-stage"} <= {v.name for v in VARIANTS}
