"""benchmarks/fuzzing/speed.py: the table of executions per second against the base commit."""

from __future__ import annotations

import pytest

from benchmarks.fuzzing.speed import VARIANTS, main, table


def test_the_table_gives_each_variant_its_mean_and_its_ratio_to_the_base() -> None:
    rows = [
        {"variant": "base", "jobs": 1, "seed": 0, "rate": 2.0},
        {"variant": "base", "jobs": 1, "seed": 1, "rate": 4.0},
        {"variant": "now", "jobs": 1, "seed": 0, "rate": 7.0},
        {"variant": "now", "jobs": 1, "seed": 1, "rate": 11.0},
        {"variant": "now", "jobs": 2, "seed": 0, "rate": 5.0},
    ]
    lines = table(rows).splitlines()
    assert lines[2] == "| base | 1 | 2.00, 4.00 | 3.00 | 1.00x |"
    assert lines[3] == "| now | 1 | 7.00, 11.00 | 9.00 | 3.00x |"
    assert lines[4] == "| now | 2 | 5.00 | 5.00 |  |"  # no base run with two workers: no ratio


def test_variants_have_names_a_comma_list_can_hold_and_unknown_ones_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert all("," not in v.name for v in VARIANTS) and VARIANTS[0].tree == "base"
    with pytest.raises(SystemExit):
        main(["--variants", "now,fastest"])
    assert "unknown variant 'fastest'" in capsys.readouterr().err
