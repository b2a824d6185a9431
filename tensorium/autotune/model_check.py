"""The whole-model check after tuning: the model with its tuned points against the model with its defaults.

Each kernel's winner was already timed again against its default in isolation (``Tuner._confirm``), but a
kernel alone is not the model: its neighbours change what is in the caches, and a few confirmed gains of
2% can be lost in the noise or to an interaction. So before a tuning run ends, the model is built twice from
the same optimized graph, once with the points the records choose and once with every default, and the two
are run on the same inputs in alternation. Unless the tuned model gives the default's outputs and is not
slower (median of the rounds), its kernels' tuned points are set aside by verdict records
(:data:`~tensorium.autotune.records.UNCONFIRMED`), so that ``tensorium.compile`` builds the defaults: a model
tuned by Tensorium is never kept slower than its default.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..ir.storage import random_array
from ..lowering.space import Config, tunable_kernels
from ..runtime.artifact import Artifact, build_executable
from .records import UNCONFIRMED, Record, TuningDB

MODEL_VERDICT = f"{UNCONFIRMED} in the whole model"
"""How the verdict records of a failed whole-model check begin (they set the tuned points aside)."""


@dataclass
class ModelCheck:
    """What the whole-model check found: the seconds of each timing round of the tuned and the default
    model, the kernels whose tuned point was applied (key -> config), whether the records were kept, and why."""

    tuned: list[float] = field(default_factory=list)
    default: list[float] = field(default_factory=list)
    applied: dict[str, Config] = field(default_factory=dict)
    kept: bool = True
    reason: str = ""
    set_aside: int = 0
    """Verdict records written (tuned points set aside)."""
    seconds: float = 0.0
    """What the check itself took: two builds and the timing."""

    @property
    def speedup(self) -> float:
        """The default model's median time over the tuned one's (1.0 where nothing was timed)."""
        if not self.tuned or not self.default:
            return 1.0
        return statistics.median(self.default) / statistics.median(self.tuned)

    def describe(self) -> str:
        """One line for progress output."""
        if not self.applied:
            return f"whole-model check: {self.reason}"
        timing = ""
        if self.tuned and self.default:
            timing = (
                f"tuned {statistics.median(self.tuned) * 1e3:.3f} ms against the default's "
                f"{statistics.median(self.default) * 1e3:.3f} ms (medians of {len(self.tuned)} alternated rounds, "
                f"{self.speedup:.3f}x); "
            )
        kernels = f"{len(self.applied)} tuned kernel{'s' if len(self.applied) != 1 else ''}"
        verdict = (
            "records kept"
            if self.kept
            else f"{self.reason}: the {kernels}' points set aside, compile builds the defaults"
        )
        return f"whole-model check of {kernels}: {timing}{verdict} ({self.seconds:.1f} s)"


def random_inputs(artifact: Artifact, dims: dict[str, int] | None = None, seed: int = 0) -> list[np.ndarray]:
    """Seeded random inputs for ``artifact``'s inputs (:func:`~tensorium.ir.storage.random_array`); a dynamic
    dim takes its size from ``dims`` by name, or the error says which input and dim lack one."""
    rng = np.random.default_rng(seed)
    return [random_array(t, f"'{name}'", dims or {}, rng) for name, t in artifact.inputs]


def check_model(
    artifact: Artifact,
    db: TuningDB,
    inputs: Sequence[np.ndarray],
    rounds: int = 7,
    seconds_per_timing: float = 0.2,
    min_calls: int = 3,
    rtol: float = 1e-3,
    progress: Callable[[str], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> ModelCheck:
    """Build ``artifact`` (a model's optimized graph on a CPU target; its own configs and executable are not
        used) with the points ``db`` chooses and with every default, check that the two give the same outputs
        on ``inputs`` (within ``rtol`` of the largest magnitude of each output), and time them in ``rounds``
        alternated rounds, each round's time the fastest of as many calls as fill ``seconds_per_timing`` (at least
    ``min_calls``: a single call of a slow model is too noisy to compare). Unless
        the tuned model's median is at most the default's, a verdict record sets each applied point aside in
        ``db`` (and any other point the records would choose next, so that compile builds the default)."""
    started = clock()
    target = artifact.target
    defaults = {k.key: k.default for k in tunable_kernels(artifact.module, target)}
    chosen = db.schedules(artifact.module, target)
    check = ModelCheck(applied={k: c for k, c in chosen.items() if k in defaults and str(c) != str(defaults[k])})
    if not check.applied:
        check.reason = "every kernel keeps its default point; nothing to check"
        return check
    tuned = dataclasses.replace(artifact, configs=dict(check.applied), executable=None)
    default = dataclasses.replace(artifact, configs={}, executable=None)
    build_executable(tuned)
    build_executable(default)
    arrays = [np.asarray(a) for a in inputs]
    mismatch = _mismatch(tuned.run(arrays), default.run(arrays), rtol)
    if mismatch:
        check.kept, check.reason = False, mismatch
    else:
        calls = max(min_calls, _calls(tuned, default, arrays, seconds_per_timing, clock))
        for r in range(rounds):
            pair = ((tuned, check.tuned), (default, check.default))
            for runner, times in pair if r % 2 == 0 else pair[::-1]:
                times.append(_fastest(runner, arrays, calls, clock))
            if progress is not None:
                progress(
                    f"whole-model check, round {r + 1}/{rounds}: tuned {check.tuned[-1] * 1e3:.3f} ms, "
                    f"default {check.default[-1] * 1e3:.3f} ms"
                )
        if statistics.median(check.tuned) > statistics.median(check.default):
            check.kept, check.reason = False, "the tuned model was slower"
    if not check.kept:
        check.set_aside = _set_aside(db, target.key(), check, defaults, artifact)
    check.seconds = clock() - started
    return check


def _mismatch(tuned: list[np.ndarray], default: list[np.ndarray], rtol: float) -> str:
    """Why the tuned model's outputs are not the default's ('' when they agree)."""
    for i, (t, d) in enumerate(zip(tuned, default)):
        t, d = np.asarray(t), np.asarray(d)
        if t.shape != d.shape:
            return f"output {i} has shape {list(t.shape)} tuned and {list(d.shape)} by default"
        if t.dtype.kind not in "fc":
            if not np.array_equal(t, d):
                return f"output {i} differs from the default's"
            continue
        scale = float(np.max(np.abs(d[np.isfinite(d)]), initial=0.0)) or 1.0
        if not np.array_equal(np.isnan(t), np.isnan(d)):
            return f"output {i} has NaN where the default's has none, or the other way"
        differ = (t != d) & ~np.isnan(t)  # equal infinities and NaN in both places agree
        diff = np.abs(t[differ].astype(np.float64) - d[differ].astype(np.float64))
        worst = float(np.max(np.where(np.isnan(diff), np.inf, diff), initial=0.0))
        if worst > rtol * scale:
            return f"output {i} differs from the default's by {worst:.3g} (largest magnitude {scale:.3g})"
    return ""


def _calls(
    tuned: Artifact, default: Artifact, arrays: list[np.ndarray], seconds: float, clock: Callable[[], float]
) -> int:
    """How many calls fill ``seconds`` for the slower of the two (after each has run a warm-up call)."""
    each = []
    for runner in (tuned, default):
        start = clock()
        runner.run(arrays)
        each.append(clock() - start)
    return max(1, min(1000, math.ceil(seconds / max(max(each), 1e-6))))


def _fastest(runner: Artifact, arrays: list[np.ndarray], calls: int, clock: Callable[[], float]) -> float:
    best = math.inf
    for _ in range(calls):
        start = clock()
        runner.run(arrays)
        best = min(best, clock() - start)
    return best


def _set_aside(db: TuningDB, target: str, check: ModelCheck, defaults: dict[str, Config], artifact: Artifact) -> int:
    """Write verdict records for the points the records would choose for each applied kernel, in turn, until
    they choose its default (or nothing); how many were written."""
    families = {k.key: k.space.family for k in tunable_kernels(artifact.module, artifact.target)}
    timing = ""
    if check.tuned and check.default:
        tuned, default = statistics.median(check.tuned) * 1e3, statistics.median(check.default) * 1e3
        timing = f": {tuned:.3f} ms tuned against {default:.3f} ms by default"
    verdict = f"{MODEL_VERDICT} ({check.reason}{timing})"
    new: list[Record] = []
    for key in check.applied:
        aside: set[str] = set()
        while (best := db.best(key, target, excluding=aside)) is not None and str(best[0]) != str(defaults[key]):
            aside.add(str(best[0]))
            new.append(Record(key, target, str(best[0]), None, verdict, families.get(key, "")))
    db.add(new)  # one atomic write
    return len(new)
