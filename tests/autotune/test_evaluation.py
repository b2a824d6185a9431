"""The offline evaluation of benchmarks/tuning.py: k-fold by whole kernels, and learned against random
choice at equal trials with the random side computed exactly, and searches replayed on recorded spaces."""

from __future__ import annotations

import itertools

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
