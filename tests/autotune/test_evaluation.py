"""The offline evaluation of benchmarks/tuning.py: k-fold by whole kernels, and learned against random
choice at equal trials with the random side computed exactly, and searches replayed on recorded spaces."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

import tensorium
from benchmarks.tuning import first_choices, held_out_scores
from tensorium.autotune.model import Dataset
from tensorium.lowering.space import TunableKernel

from .test_model import synthetic


def test_every_row_is_scored_by_a_model_that_never_saw_its_kernel() -> None:
    data = synthetic(groups=10, per_group=12)
    scores, rows = held_out_scores(data, "mlp", folds=5, seed=0)
    assert len(rows) == len(data) and np.isfinite(scores).all()
    seen_scores, seen_rows = held_out_scores(data, "mlp", folds=5, seed=0, seen=4)
    assert len(seen_rows) == len(seen_scores) == len(data) - 10 * 4  # its own training points are not scored
    assert sorted(np.unique(seen_rows.groups, return_counts=True)[1]) == [8] * 10


def test_random_choice_is_the_exact_expectation_over_draws() -> None:
    seconds = np.array([3.0, 1.0, 4.0, 1.5, 9.0, 2.0])
    data = Dataset(np.zeros((6, 1)), seconds, np.zeros(6, dtype=np.int64))
    scores = -seconds  # a perfect model
    for trials in (1, 2, 4):
        ((learned, random),) = first_choices(scores, data, trials)
        draws = [min(c) for c in itertools.combinations(seconds, trials)]
        assert learned == 1.0
        assert random == pytest.approx(np.mean(draws) / seconds.min())
    ((worst, _),) = first_choices(seconds, data, 2)  # a model that ranks backwards
    assert worst == pytest.approx(4.0)


@pytest.mark.parametrize("learned", [False, True])
def test_a_replayed_search_measures_only_recorded_points_once_each_default_first(
    gemm_kernel: TunableKernel, target: tensorium.Target, learned: bool
) -> None:
    from benchmarks.tuning import replay_search
    from tensorium.autotune.features import FEATURE_NAMES
    from tensorium.autotune.records import Record
    from tensorium.autotune.search import SearchOptions

    from .test_search import _small

    small = _small(gemm_kernel, "replayed", 12)
    rng = np.random.default_rng(0)
    points = list(small.space.points())
    truth = {str(c): float(s) for c, s in zip(points, rng.uniform(1e-4, 2e-4, len(points)))}
    records = [
        Record(small.key, target.key(), c, s, None, "gemm", tuple(rng.standard_normal(len(FEATURE_NAMES))))
        for c, s in truth.items()
    ]
    options = SearchOptions(seed=0, learned=learned, warm_start=False, confirm=0, model="mlp", batch=4)
    order = replay_search(small, target, records, options, None, trials=20)
    configs = [c for _, c in order]
    assert configs[0] == str(small.default)
    assert sorted(configs) == sorted(truth)  # the whole space, each point once, nothing unrecorded
    assert all(seconds == truth[c] for seconds, c in order)
    assert replay_search(small, target, records, options, None, trials=20) == order  # seeded


def test_recordings_agreement_reports_the_ceiling_and_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/tuning_agreement.py on two kept recordings of one space: the pair's agreement and the shipped
    model's recall against each, with the numbers the recordings give."""
    pytest.importorskip("lightgbm", reason="the shipped model's first entry is LightGBM's (the tune extra)")
    from benchmarks.tuning_agreement import load, report

    folder = Path(__file__).resolve().parents[2] / "benchmarks" / "tuning" / "zen4"
    paths = sorted(folder.glob("gemm-760f8528-*.jsonl"))
    assert len(paths) == 2
    kernel, points = load(paths[0])
    assert kernel.startswith("760f8528") and len(points) == 110
    report(paths)
    out = capsys.readouterr().out
    assert "760f8528: 110 points, 2 recordings" in out
    assert "top-10 overlap 0.6" in out
    assert out.count("shipped model against recording") == 2
    assert "mean top-10 overlap of two recordings 0.60 (1 pairs)" in out
