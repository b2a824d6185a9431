"""The cost models rank better than chance on synthetic measurements, and save as JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tensorium.autotune.model import (
    Dataset,
    MLPRanker,
    kendall_tau,
    model_from_json,
    quality,
    relevance,
    score_quality,
)


def synthetic(groups: int = 24, per_group: int = 30, seed: int = 0) -> Dataset:
    """Kernels whose time depends on features through a hidden function (plus noise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(groups):
        scale = rng.uniform(1e-5, 1e-2)
        for _ in range(per_group):
            x = rng.uniform(0, 4, size=8)
            seconds = scale * np.exp(0.5 * x[0] - 0.3 * x[1] + 0.2 * (x[2] - 2) ** 2 + 0.05 * rng.standard_normal())
            rows.append((f"k{g}", x.tolist(), float(seconds)))
    return Dataset.of(rows)


class RandomModel:
    kind = "random"

    def predict(self, features: np.ndarray) -> np.ndarray:
        return np.random.default_rng(1).standard_normal(len(features))


def _check_ranks_and_round_trips(model: object) -> dict[str, float]:
    """``model`` beats a random ranking on held-out kernels, and its JSON form predicts the same."""
    training, held_out = synthetic().split(0.25, seed=0)
    model.fit(training)  # type: ignore[attr-defined]
    learned = quality(model, held_out)  # type: ignore[arg-type]
    chance = quality(RandomModel(), held_out)  # type: ignore[arg-type]
    assert learned["kendall_tau"] > 0.5 > chance["kendall_tau"] + 0.3
    assert learned["top10_recall"] > chance["top10_recall"] + 0.2
    assert learned["r2"] > 0.5
    features = synthetic(groups=2, seed=5).features
    again = model_from_json(json.loads(json.dumps(model.to_json())))  # type: ignore[attr-defined]
    np.testing.assert_allclose(again.predict(features), model.predict(features))  # type: ignore[attr-defined]
    return learned


def test_mlp_ranks_better_than_random_and_round_trips_as_json() -> None:
    _check_ranks_and_round_trips(MLPRanker(seed=0))


def test_lightgbm_lambdarank_ranks_better_than_random_and_round_trips_as_text() -> None:
    pytest.importorskip("lightgbm", reason="the lightgbm cost model needs the 'tune' extra")
    from tensorium.autotune.model import LightGBMRanker

    _check_ranks_and_round_trips(LightGBMRanker(seed=0))


def test_training_is_deterministic_under_a_seed() -> None:
    data = synthetic(groups=6)
    a, b = MLPRanker(seed=3), MLPRanker(seed=3)
    a.fit(data)
    b.fit(data)
    np.testing.assert_array_equal(a.predict(data.features), b.predict(data.features))


def test_metrics_on_a_perfect_ranking() -> None:
    data = synthetic(groups=3, per_group=12)

    class Oracle:
        kind = "oracle"

        def predict(self, features: np.ndarray) -> np.ndarray:
            return -np.log(data.seconds)

    q = quality(Oracle(), data)  # type: ignore[arg-type]
    assert q["kendall_tau"] == pytest.approx(1.0) and q["top1_recall"] == 1.0 and q["top10_recall"] == 1.0
    assert q["r2"] == pytest.approx(1.0)
    shifted = score_quality(-np.log(data.seconds) + 100.0 * data.groups, data)  # offsets per kernel do not count
    assert shifted["r2"] == pytest.approx(1.0) and shifted["kendall_tau"] == pytest.approx(1.0)
    assert kendall_tau(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])) == pytest.approx(-1.0)
    assert relevance(data).max() == 30 and relevance(data).min() >= 0


def test_the_shipped_warm_start_model_loads_and_scores() -> None:
    from tensorium.autotune.features import FEATURE_NAMES
    from tensorium.autotune.model import WARM_START, load_warm_start

    data = json.loads(WARM_START.read_text())
    assert data["features"] == len(FEATURE_NAMES)
    assert [m["kind"] for m in data["models"]][-1] == "mlp"  # the fallback is always there
    model = load_warm_start(len(FEATURE_NAMES))
    assert model is not None
    scores = model.predict(np.random.default_rng(0).uniform(0, 8, size=(5, len(FEATURE_NAMES))))
    assert scores.shape == (5,) and np.isfinite(scores).all()
    assert load_warm_start(len(FEATURE_NAMES) + 1) is None  # another feature layout is not used


def test_without_lightgbm_the_mlp_fallback_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    from tensorium.autotune import model as cost_model
    from tensorium.autotune.features import FEATURE_NAMES

    monkeypatch.setattr(cost_model, "lightgbm_available", lambda: False)
    assert cost_model.new_model("auto").kind == "mlp"
    warm = cost_model.load_warm_start(len(FEATURE_NAMES))
    assert warm is not None and warm.kind == "mlp"
    with pytest.raises(cost_model.TensoriumError, match="needs the 'tune' extra"):
        cost_model.new_model("lightgbm")


@pytest.mark.parametrize("kind", ["mlp", "lightgbm"])
def test_training_on_from_a_warm_model_starts_from_its_ranking(kind: str) -> None:
    from tensorium.autotune.model import LightGBMRanker, lightgbm_available

    if kind == "lightgbm" and not lightgbm_available():
        pytest.skip("LightGBM is not installed (the 'tune' extra)")
    training, held_out = synthetic().split(0.25, seed=0)
    warm = MLPRanker(seed=0) if kind == "mlp" else LightGBMRanker(seed=0)
    warm.fit(training)
    few = held_out.subset(held_out.groups == held_out.groups[0])
    if kind == "mlp":  # no steps of its own: the warm model, unchanged (LightGBM needs one round at least)
        same = MLPRanker(seed=1, epochs=0)
        same.fit(few, init=warm)
        np.testing.assert_allclose(same.predict(held_out.features), warm.predict(held_out.features))
    # some steps: a different model that still knows what the warm one learned from the other kernels
    on = MLPRanker(seed=1, epochs=20) if kind == "mlp" else LightGBMRanker(seed=1, rounds=5)
    on.fit(few, init=warm)
    scratch = MLPRanker(seed=1, epochs=20) if kind == "mlp" else LightGBMRanker(seed=1, rounds=5)
    scratch.fit(few)
    assert not np.allclose(on.predict(held_out.features), warm.predict(held_out.features))
    others = held_out.subset(held_out.groups != held_out.groups[0])
    assert quality(on, others)["kendall_tau"] > quality(scratch, others)["kendall_tau"]
    if kind == "lightgbm":
        assert on.booster.num_trees() == warm.booster.num_trees() + 5  # type: ignore[attr-defined]
