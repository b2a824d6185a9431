"""The campaign script's progress parsing and plot (benchmarks/fuzzing/campaign.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.fuzzing.campaign import progress_svg, read_progress

LOG = """fuzzing for 60 s, seed 0, coverage-guided, backends interp,cpu
[   7.0s] execs 38 (5.4/s)  corpus 33  edges 7151  lines 28.6%  failures 0  invalid 0  refused 0
[  29.1s] execs 180 (6.2/s)  corpus 94  edges 7832  lines 31.4%  failures 1  invalid 1  refused 0
[  51.3s] 2 workers: execs 55 (1.1/s)  corpus 80  lines 28.9% (best worker)  failures 0  invalid 1  refused 1
worker 1 done
"""


def test_progress_lines_are_read_as_samples(tmp_path: Path) -> None:
    log = tmp_path / "progress.log"
    log.write_text(LOG)
    assert read_progress(log) == [(7.0, 38, 7151, 28.6), (29.1, 180, 7832, 31.4), (51.3, 55, 0, 28.9)]


def test_plot_draws_edges_and_executions() -> None:
    svg = progress_svg([(7.0, 38, 7151, 28.6), (29.1, 180, 7832, 31.4)])
    assert svg.startswith("<svg") and svg.count("<polyline") == 2


def test_plot_without_samples_says_why() -> None:
    with pytest.raises(SystemExit, match="no progress lines"):
        progress_svg([])
