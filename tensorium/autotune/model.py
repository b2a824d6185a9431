"""The cost model: it ranks a kernel's candidates (higher score = faster), it does not predict seconds.

Training data are groups, one per kernel (on one target): feature vectors and measured seconds. The
relevance of a candidate within its group is how close it comes to the group's best time, on a 0..30
scale, so the model learns orders within kernels and never compares times across kernels.
:class:`LightGBMRanker` trains LightGBM's lambdarank objective (the ``tune`` extra); :class:`MLPRanker`
is a small numpy MLP regressing the same per-group relative log-time, the fallback without LightGBM.
Both save as JSON (LightGBM's own text model inside), never pickle. A model trained on this project's
own measurements ships in ``tensorium/autotune/data/warm_start.json`` and warm-starts every search;
:func:`quality` reports Kendall tau, top-1 / top-10 recall and R2 on held-out groups.
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import TensoriumError

RELEVANCE_LEVELS = 30
WARM_START = Path(__file__).with_name("data") / "warm_start.json"
"""The model shipped with the package (trained by ``python -m benchmarks.tuning --train``)."""


@dataclass(frozen=True)
class Dataset:
    """Feature rows, their measured seconds and the group (kernel) of each row."""

    features: np.ndarray
    seconds: np.ndarray
    groups: np.ndarray

    def __len__(self) -> int:
        return len(self.seconds)

    @staticmethod
    def of(rows: Sequence[tuple[str, Sequence[float], float]]) -> Dataset:
        """From (group name, features, seconds) rows (rows of other widths than the first are dropped)."""
        if not rows:
            return Dataset(np.zeros((0, 0)), np.zeros(0), np.zeros(0, dtype=np.int64))
        width = len(rows[0][1])
        kept = [r for r in rows if len(r[1]) == width]
        names = {name: i for i, name in enumerate(dict.fromkeys(r[0] for r in kept))}
        return Dataset(
            np.array([r[1] for r in kept], dtype=np.float64),
            np.array([r[2] for r in kept], dtype=np.float64),
            np.array([names[r[0]] for r in kept], dtype=np.int64),
        )

    def split(self, held_out: float, seed: int) -> tuple[Dataset, Dataset]:
        """Training and held-out sets by whole groups."""
        ids = np.unique(self.groups)
        rng = np.random.default_rng(seed)
        test = set(rng.choice(ids, size=max(1, round(len(ids) * held_out)), replace=False).tolist())
        mask = np.array([g in test for g in self.groups])
        return self.subset(~mask), self.subset(mask)

    def subset(self, mask: np.ndarray) -> Dataset:
        return Dataset(self.features[mask], self.seconds[mask], self.groups[mask])


def relative_log_time(data: Dataset) -> np.ndarray:
    """log2(seconds / best seconds of the row's group): 0 for each group's best, larger for slower."""
    out = np.zeros(len(data))
    for g in np.unique(data.groups):
        mask = data.groups == g
        out[mask] = np.log2(data.seconds[mask] / data.seconds[mask].min())
    return out


def relevance(data: Dataset) -> np.ndarray:
    """Integer relevance 0..30 per row: 30 * best / seconds within the row's group."""
    return np.rint(RELEVANCE_LEVELS * np.exp2(-relative_log_time(data))).astype(np.int64)


class CostModel(Protocol):
    """What the search needs from a model."""

    kind: str

    def fit(self, data: Dataset, init: CostModel | None = None) -> None: ...

    def predict(self, features: np.ndarray) -> np.ndarray: ...

    def to_json(self) -> dict[str, Any]: ...


class LightGBMRanker:
    """LightGBM with the lambdarank objective, one query group per kernel (deterministic, one thread)."""

    kind = "lightgbm"

    def __init__(self, seed: int = 0, rounds: int = 80, booster: Any = None) -> None:
        self.seed = seed
        self.rounds = rounds
        self.booster = booster

    def fit(self, data: Dataset, init: CostModel | None = None) -> None:
        """Train on ``data``; with ``init`` (a LightGBM model, the shipped one) the boosting goes on from
        its trees, so that a few measurements of a new kernel correct the learned order instead of
        replacing it."""
        import lightgbm

        order = np.argsort(data.groups, kind="stable")
        groups = data.groups[order]
        sizes = np.unique(groups, return_counts=True)[1]
        params = {
            "objective": "lambdarank",
            "metric": "ndcg",
            "learning_rate": 0.1,
            "num_leaves": 15,
            "min_data_in_leaf": 3,
            "label_gain": list(range(RELEVANCE_LEVELS + 1)),
            "seed": self.seed,
            "deterministic": True,
            "num_threads": 1,
            "verbosity": -1,
        }
        train = lightgbm.Dataset(data.features[order], label=relevance(data)[order], group=sizes)
        start = init.booster if isinstance(init, LightGBMRanker) and init.booster is not None else None
        self.booster = lightgbm.train(params, train, num_boost_round=self.rounds, init_model=start)

    def predict(self, features: np.ndarray) -> np.ndarray:
        if self.booster is None:
            return np.zeros(len(features))
        return np.asarray(self.booster.predict(features, num_threads=1), dtype=np.float64)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "seed": self.seed, "rounds": self.rounds, "model": self.booster.model_to_string()}

    @staticmethod
    def from_json(data: dict[str, Any]) -> LightGBMRanker:
        import lightgbm

        return LightGBMRanker(int(data["seed"]), int(data["rounds"]), lightgbm.Booster(model_str=data["model"]))


class MLPRanker:
    """A one-hidden-layer numpy MLP trained with Adam to predict minus the per-group relative log-time."""

    kind = "mlp"

    def __init__(self, seed: int = 0, hidden: int = 32, epochs: int = 300) -> None:
        self.seed = seed
        self.hidden = hidden
        self.epochs = epochs
        self.params: dict[str, np.ndarray] = {}

    def fit(self, data: Dataset, init: CostModel | None = None) -> None:
        """Train on ``data``; with ``init`` (an MLP of the same shape, the shipped one) training starts from
        its weights and input scaling, so that a few measurements of a new kernel adjust it."""
        x = data.features
        y = -relative_log_time(data)
        mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
        rng = np.random.default_rng(self.seed)
        warm = init.params if isinstance(init, MLPRanker) and init.params.get("w1") is not None else None
        if warm is not None and warm["w1"].shape == (x.shape[1], self.hidden):
            p = {k: v.copy() for k, v in warm.items()}
            mean, scale = p["mean"], p["scale"]
        else:
            p = {
                "mean": mean,
                "scale": scale,
                "w1": rng.standard_normal((x.shape[1], self.hidden)) * math.sqrt(2.0 / x.shape[1]),
                "b1": np.zeros(self.hidden),
                "w2": rng.standard_normal(self.hidden) * math.sqrt(1.0 / self.hidden),
                "b2": np.zeros(1),
            }
        trained = ("w1", "b1", "w2", "b2")
        m = {k: np.zeros_like(p[k]) for k in trained}
        v = {k: np.zeros_like(p[k]) for k in trained}
        z = (x - mean) / scale
        for step in range(1, self.epochs + 1):
            h = np.maximum(z @ p["w1"] + p["b1"], 0.0)
            error = (h @ p["w2"] + p["b2"]) - y
            dout = 2.0 * error / len(y)
            dh = np.outer(dout, p["w2"]) * (h > 0)
            grads = {"w2": h.T @ dout, "b2": np.array([dout.sum()]), "w1": z.T @ dh, "b1": dh.sum(axis=0)}
            for k in trained:
                m[k] = 0.9 * m[k] + 0.1 * grads[k]
                v[k] = 0.999 * v[k] + 0.001 * grads[k] ** 2
                p[k] -= 0.01 * (m[k] / (1 - 0.9**step)) / (np.sqrt(v[k] / (1 - 0.999**step)) + 1e-8)
        self.params = p

    def predict(self, features: np.ndarray) -> np.ndarray:
        if not self.params:
            return np.zeros(len(features))
        p = self.params
        h = np.maximum(((features - p["mean"]) / p["scale"]) @ p["w1"] + p["b1"], 0.0)
        return np.asarray(h @ p["w2"] + p["b2"], dtype=np.float64)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "seed": self.seed,
            "hidden": self.hidden,
            "epochs": self.epochs,
            "params": {k: v.tolist() for k, v in self.params.items()},
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> MLPRanker:
        model = MLPRanker(int(data["seed"]), int(data["hidden"]), int(data["epochs"]))
        model.params = {k: np.asarray(v, dtype=np.float64) for k, v in data["params"].items()}
        return model


def lightgbm_available() -> bool:
    """Whether the ``tune`` extra (LightGBM) is installed."""
    return importlib.util.find_spec("lightgbm") is not None


def new_model(kind: str = "auto", seed: int = 0) -> CostModel:
    """A fresh model: ``lightgbm``, ``mlp``, or ``auto`` (LightGBM when installed, else the MLP)."""
    if kind == "auto":
        kind = "lightgbm" if lightgbm_available() else "mlp"
    if kind == "lightgbm":
        if not lightgbm_available():
            raise TensoriumError("the lightgbm cost model needs the 'tune' extra: pip install 'tensorium[tune]'")
        return LightGBMRanker(seed)
    if kind == "mlp":
        return MLPRanker(seed)
    raise TensoriumError(f"unknown cost model '{kind}' (choose lightgbm, mlp or auto)")


def model_from_json(data: dict[str, Any]) -> CostModel:
    """The model :meth:`CostModel.to_json` wrote (a LightGBM model needs LightGBM)."""
    kind = data.get("kind")
    if kind == "lightgbm":
        return LightGBMRanker.from_json(data)
    if kind == "mlp":
        return MLPRanker.from_json(data)
    raise TensoriumError(f"unknown cost model kind {kind!r}")


def save_model(model: CostModel, path: str | Path, width: int) -> None:
    """Write ``model`` (trained on features of ``width`` columns) as JSON."""
    Path(path).write_text(json.dumps({"features": width, **model.to_json()}))


def load_warm_start(width: int, path: Path = WARM_START) -> CostModel | None:
    """The shipped model when it exists, fits features of ``width`` columns and its kind can load here
    (a LightGBM model needs LightGBM; the file holds an MLP too as the fallback)."""
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    if data.get("features") != width:
        return None
    for entry in data.get("models", []):
        if entry.get("kind") == "lightgbm" and not lightgbm_available():
            continue
        return model_from_json(entry)
    return None


def save_warm_start(models: Sequence[CostModel], width: int, path: Path = WARM_START) -> None:
    """Write the shipped models (best first: a LightGBM one, then the MLP fallback)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"features": width, "models": [m.to_json() for m in models]}))


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-a between two orderings (pairs tied in either count as neither)."""
    n = len(a)
    if n < 2:
        return 0.0
    da = np.sign(a[:, None] - a[None, :])
    db = np.sign(b[:, None] - b[None, :])
    return float((da * db).sum() / (n * (n - 1)))


def quality(model: CostModel, data: Dataset) -> dict[str, float]:
    """How well ``model`` ranks held-out groups (:func:`score_quality` of its scores)."""
    return score_quality(model.predict(data.features), data)


def score_quality(scores: np.ndarray, data: Dataset) -> dict[str, float]:
    """How well ``scores`` (higher: faster) rank each group of ``data``: the mean over groups of Kendall tau
    between score and speed, top-1 recall (the first choice is the measured best) and top-10 recall (share
    of the measured 10 best among the 10 first; 1 for any order in a group of 10 rows or fewer), and R2 of
    the measured relative log-time against the best affine function of the score within kernels (the
    squared correlation of both after each group's mean is taken out: a ranker's scores have no common
    offset across kernels, and the measured times have none either)."""
    target = -relative_log_time(data)
    taus, top1, top10 = [], [], []
    centred_s, centred_t = np.zeros(len(data)), np.zeros(len(data))
    for g in np.unique(data.groups):
        mask = data.groups == g
        s, t = scores[mask], target[mask]
        centred_s[mask], centred_t[mask] = s - s.mean(), t - t.mean()
        if len(s) < 2:
            continue
        taus.append(kendall_tau(s, t))
        top1.append(float(t[np.argmax(s)] >= t.max() - 1e-12))
        k = min(10, len(s))
        top10.append(len(set(np.argsort(-s)[:k]) & set(np.argsort(-t)[:k])) / k)
    r2 = 0.0
    if len(scores) > 2 and centred_s.std() > 0 and centred_t.std() > 0:
        r2 = float(np.corrcoef(centred_s, centred_t)[0, 1] ** 2)
    return {
        "kendall_tau": float(np.mean(taus)) if taus else 0.0,
        "top1_recall": float(np.mean(top1)) if top1 else 0.0,
        "top10_recall": float(np.mean(top10)) if top10 else 0.0,
        "r2": r2,
        "groups": float(len(taus)),
        "rows": float(len(data)),
        "rows_per_group": float(len(data)) / max(len(taus), 1),
    }
