"""The search: evolutionary proposals, a cost model choosing what to measure, a share of random exploration.

For one kernel, each round proposes candidates (mutations and crossovers of the fastest points measured
so far, plus random points), rejects illegal ones before anything is built, lowers the rest and computes
their features, and measures a batch: the candidates the model ranks first and a share chosen at random.
Every trial is written to the records database as soon as it is measured (Ctrl-C keeps them), the model
is retrained on the target's records after each round, and the winner and the default are timed again
before the search ends. A trial's time is the fastest of its repeats (other processes only ever add
time). A model's budget is split across its kernels by expected gain (their default times), smallest
spaces first, and time a kernel leaves unused passes on to the others. All random choices come from one
seed, so equal measurements give equal searches.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..backends.llvm.emitter import LLVMEmitter
from ..errors import TensoriumError
from ..lowering.space import Config, TunableKernel
from ..targets import Target
from .features import candidate_features
from .measure import Job, Measurement, Measures, build_job, lowered_kernel, measure_all
from .model import CostModel, Dataset, load_warm_start, new_model
from .records import UNCONFIRMED, Record, TuningDB

Progress = Callable[[str], None]


@dataclass
class Candidate:
    """A legal point, lowered: its features and the job that measures it."""

    config: Config
    features: np.ndarray
    job: Job


@dataclass
class KernelResult:
    """What tuning one kernel found."""

    key: str
    family: str
    default: Config
    default_seconds: float | None
    best: Config
    best_seconds: float | None
    trials: int = 0
    failures: int = 0
    rejected: int = 0
    history: list[tuple[float, float]] = field(default_factory=list)
    """(seconds since the kernel's search began, best seconds so far) after each improvement."""
    started: float = 0.0
    """When the kernel's search began, in seconds since the model's began (:meth:`Tuner.tune`)."""
    verdict: str = ""
    """How the winner fared when timed again against the default: ``confirmed``, ``not confirmed: ...``
    (then ``best`` is the default), or empty where the default stayed the best."""

    @property
    def speedup(self) -> float:
        if not self.default_seconds or not self.best_seconds:
            return 1.0
        return self.default_seconds / self.best_seconds


@dataclass
class _KernelSearch:
    """One kernel's search in progress: what is measured (seconds by config text, None: failed), the
    result so far, the default's checksum (a list holding it once known), when the search began and the
    configs set aside by an earlier verdict (never the winner)."""

    kernel: TunableKernel
    measured: dict[str, float | None]
    result: KernelResult
    reference: list[float]
    start: float
    set_aside: set[str] = field(default_factory=set)


@dataclass
class SearchOptions:
    """How a search runs: ``batch`` trials a round, ``explore`` the share of them chosen at random,
    ``proposals`` candidates ranked a round, ``learned=False`` for plain random search, ``model`` the cost
    model's kind (auto, lightgbm, mlp), ``tolerance`` the relative checksum difference that marks a wrong
    result, ``warm_start`` whether to start from the shipped model, ``confirm`` how many times the winner
    and the default are timed again (in alternation) before the winner is recorded as better (0: not at
    all, the search's first measurements decide; for comparing searches),
    ``margin`` the least relative gain that counts (see :func:`beats_default`), and ``statistic`` what
    a trial's repeats give as its time: ``min``, the fastest (on a shared machine other processes only ever
    add time, so the fastest repeat moves least from trial to trial), or ``median``; a config measured in
    several trials is judged by the same statistic over them. ``from_warm``: the online model is trained
    on from the warm-start model (LightGBM boosting on from its trees, the MLP from its weights) rather than
    from scratch, so the first measurements of a kernel correct what the shipped model knows."""

    seed: int = 0
    batch: int = 8
    explore: float = 0.25
    proposals: int = 48
    learned: bool = True
    model: str = "auto"
    tolerance: float = 1e-3
    warm_start: bool = True
    confirm: int = 3
    margin: float = 0.02
    statistic: str = "min"
    from_warm: bool = True

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise TensoriumError(f"statistic must be one of {', '.join(STATISTICS)}, got {self.statistic!r}")


STATISTICS: dict[str, Callable[[list[float]], float]] = {"min": min, "median": statistics.median}
"""How a search reduces a trial's repeats, and a config's trials, to one time (:attr:`SearchOptions.statistic`)."""


def beats_default(winner: list[float], default: list[float], margin: float) -> bool:
    """Whether the winner's re-timings beat the default's clearly: every one of them faster than every one
    of the default's (with 3 of each, a chance of 1 in 20 where both are equally fast: a one-sided rank
    test), and the median faster by more than ``margin`` (relative). A winner found by one lucky run
    fails this, and the default is kept."""
    if not winner or not default:
        return False
    if max(winner) >= min(default):
        return False
    return statistics.median(winner) * (1.0 + margin) < statistics.median(default)


class Tuner:
    """Searches kernels of one target, measuring with ``measurer`` and recording into ``db``."""

    def __init__(
        self,
        target: Target,
        db: TuningDB,
        measurer: Measures,
        options: SearchOptions | None = None,
        progress: Progress | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self.db = db
        self.measurer = measurer
        self.options = options or SearchOptions()
        self.progress = progress or (lambda line: None)
        self.clock = clock
        self.model: CostModel | None = None
        self._warm: CostModel | None = None
        self._width: int | None = None
        self._references: dict[str, list[float]] = {}
        """Each kernel's default checksum, measured once per session: other points must match it."""

    # one kernel ---------------------------------------------------------------------------------------
    def tune_kernel(self, kernel: TunableKernel, budget: float, max_trials: int | None = None) -> KernelResult:
        """Search ``kernel`` for ``budget`` seconds (or ``max_trials`` trials), starting from its records."""
        start = self.clock()
        rng = random.Random(f"{self.options.seed}:{kernel.key}")
        measured = self._measured(kernel)
        result = KernelResult(kernel.key, kernel.space.family, kernel.default, None, kernel.default, None)
        reference = self._references.setdefault(kernel.key, [])
        set_aside = {r.config for r in self.db.of(kernel.key, self.target.key()) if r.unconfirmed}
        state = _KernelSearch(kernel, measured, result, reference, start, set_aside)
        default_text = str(kernel.default)
        if not reference:
            self._trial(state, self._prepare(kernel, kernel.default))
        result.default_seconds = measured.get(default_text)
        self._update_best(state)
        first_trials = result.trials
        size = kernel.space.size()
        while self.clock() - start < budget and len(measured) < size:
            if max_trials is not None and result.trials >= max_trials:
                break
            batch = self._choose(kernel, measured, rng, result)
            if not batch:
                break
            if max_trials is not None:
                batch = batch[: max_trials - result.trials]
            by_job = {id(c.job): c for c in batch}
            results = measure_all(self.measurer, [c.job for c in batch])
            try:
                for job, m in results:
                    self._record(state, by_job[id(job)], m)
                    if self.clock() - start >= budget:
                        break
            finally:
                results.close()
            self._retrain()
            self._report(kernel, result, start, budget)
        if result.trials > first_trials and result.best_seconds is not None and str(result.best) != default_text:
            if self.options.confirm > 0:
                self._confirm(state)
        return result

    def _confirm(self, state: _KernelSearch) -> None:
        """Time the winner and the default again, ``confirm`` times each in alternation (a fresh worker's
        first run, or a quiet moment, often decides a search), each time the fastest of its repeats. Unless
        the winner beats the default clearly (:func:`beats_default`), a verdict record sets the winner aside
        and the default is the result."""
        kernel, result = state.kernel, state.result
        winner_config = result.best
        winner, default = self._prepare(kernel, winner_config), self._prepare(kernel, kernel.default)
        w: list[float] = []
        d: list[float] = []
        for _ in range(self.options.confirm):
            for candidate, times in ((winner, w), (default, d)):
                m = self._trial(state, candidate, again=True)
                if m.ok and m.seconds is not None:
                    times.append(min(m.runs) if m.runs else m.seconds)  # other processes only ever add time
        default_text = str(kernel.default)
        if beats_default(w, d, self.options.margin):
            result.verdict = "confirmed"
            result.best, result.best_seconds = winner_config, statistics.median(w)
            result.default_seconds = statistics.median(d)
            return
        shown = ", ".join(f"{t * 1e6:.1f}" for t in w) or "failed"
        against = ", ".join(f"{t * 1e6:.1f}" for t in d) or "failed"
        result.verdict = f"{UNCONFIRMED}: re-timed {shown} us against the default's {against} us"
        self.db.add(
            [
                Record(
                    kernel.key,
                    self.target.key(),
                    str(winner_config),
                    None,
                    result.verdict,
                    kernel.space.family,
                    tuple(float(f) for f in winner.features),
                )
            ]
        )
        state.set_aside.add(str(winner_config))
        result.best = kernel.default
        result.default_seconds = statistics.median(d) if d else state.measured.get(default_text)
        result.best_seconds = result.default_seconds
        self.progress(f"{kernel.space.family} {kernel.key[:8]}: kept the default ({result.verdict})")

    def _measured(self, kernel: TunableKernel) -> dict[str, float | None]:
        """Seconds (None: failed) of each config already recorded for ``kernel``: the search's statistic
        over its records."""
        times: dict[str, list[float]] = {}
        failed: set[str] = set()
        for r in self.db.of(kernel.key, self.target.key()):
            if r.seconds is None:
                failed.add(r.config)
            else:
                times.setdefault(r.config, []).append(r.seconds)
        out: dict[str, float | None] = {c: None for c in failed}
        reduce = STATISTICS[self.options.statistic]
        out.update({c: reduce(t) for c, t in times.items()})
        return out

    def exhausted(self, kernel: TunableKernel) -> bool:
        """Whether every legal point of ``kernel`` has a record on this target (a search has nothing left)."""
        return len(self._measured(kernel)) >= kernel.space.size()

    def _prepare(self, kernel: TunableKernel, config: Config) -> Candidate:
        lowered = lowered_kernel(kernel.op, self.target, config, LLVMEmitter.NATIVE)
        return Candidate(
            config, candidate_features(lowered, config), build_job(kernel.op, self.target, config, lowered)
        )

    def _trial(self, state: _KernelSearch, candidate: Candidate, again: bool = False) -> Measurement:
        """Measure one candidate and record it."""
        return self._record(state, candidate, self.measurer.measure(candidate.job), again)

    def _record(self, state: _KernelSearch, candidate: Candidate, m: Measurement, again: bool = False) -> Measurement:
        """Check a measurement against the reference checksum, write its record (its time: the search's
        statistic over the trial's repeats) and update the search."""
        kernel, measured, result, reference = state.kernel, state.measured, state.result, state.reference
        reduce = STATISTICS[self.options.statistic]
        if m.ok and m.runs:
            m = Measurement(reduce(list(m.runs)), m.error, m.runs, m.compile_seconds, m.checksum)
        if m.ok and reference and not _close(m.checksum, reference[0], self.options.tolerance):
            m = Measurement(None, f"wrong result (checksum {m.checksum:.6g}, default {reference[0]:.6g})")
        if m.ok and not reference and str(candidate.config) == str(kernel.default):
            reference.append(m.checksum)
        text = str(candidate.config)
        self.db.add(
            [
                Record(
                    kernel.key,
                    self.target.key(),
                    text,
                    m.seconds,
                    m.error,
                    kernel.space.family,
                    tuple(float(f) for f in candidate.features),
                )
            ]
        )
        self._width = len(candidate.features)
        result.trials += 1
        if not m.ok:
            result.failures += 1
            if text not in measured:
                measured[text] = None
        elif again or text in measured:
            runs = [r.seconds for r in self.db.of(kernel.key, self.target.key()) if r.config == text and r.seconds]
            measured[text] = reduce(runs)
        else:
            measured[text] = m.seconds
        self._update_best(state)
        return m

    def _update_best(self, state: _KernelSearch) -> None:
        ok = {c: s for c, s in state.measured.items() if s is not None and c not in state.set_aside}
        if not ok:
            return
        config, seconds = min(ok.items(), key=lambda item: (item[1], item[0]))
        result = state.result
        if seconds != result.best_seconds:
            result.history.append((self.clock() - state.start, seconds))
        result.best, result.best_seconds = Config.parse(config), seconds

    # choosing what to measure -------------------------------------------------------------------------
    def _choose(
        self, kernel: TunableKernel, measured: dict[str, float | None], rng: random.Random, result: KernelResult
    ) -> list[Candidate]:
        pool = self._propose(kernel, measured, rng, result)
        candidates: list[Candidate] = []
        for config in pool:
            try:
                candidates.append(self._prepare(kernel, config))
            except TensoriumError:
                result.rejected += 1
        if not candidates:
            return []
        n = self.options.batch
        model = self.model or self._warm_start(len(candidates[0].features))
        if not self.options.learned or model is None:
            return rng.sample(candidates, min(n, len(candidates)))
        scores = model.predict(np.array([c.features for c in candidates]))
        order = [candidates[i] for i in np.argsort(-scores, kind="stable")]
        explore = round(n * self.options.explore)
        chosen = order[: n - explore]
        rest = order[n - explore :]
        chosen += rng.sample(rest, min(explore, len(rest)))
        return chosen

    def _propose(
        self, kernel: TunableKernel, measured: dict[str, float | None], rng: random.Random, result: KernelResult
    ) -> list[Config]:
        """Up to ``proposals`` legal, unmeasured points: mutations and crossovers of the best, random points."""
        space = kernel.space
        ok = sorted((s, c) for c, s in measured.items() if s is not None)
        parents = [Config.parse(c) for _, c in ok[:8]] or [kernel.default]
        want = self.options.proposals if self.options.learned else self.options.batch
        found: dict[str, Config] = {}
        for _ in range(want * 20):
            if len(found) >= want:
                break
            roll = rng.random()
            if not self.options.learned or roll < 0.2:
                config = space.sample(rng)
            elif roll < 0.4 and len(parents) > 1:
                a, b = rng.sample(parents, 2)
                config = Config(space.family, tuple((k, rng.choice((v, b[k]))) for k, v in a.values))
            else:
                config = rng.choice(parents)
                for _ in range(rng.choice((1, 1, 2))):
                    knob = rng.choice(space.knobs)
                    config = config.replace(**{knob.name: rng.choice(knob.values)})
            text = str(config)
            if text in measured or text in found:
                continue
            try:
                found[text] = space.check(config)
            except TensoriumError:
                result.rejected += 1
        return list(found.values())

    # the model ----------------------------------------------------------------------------------------
    def _warm_start(self, width: int) -> CostModel | None:
        if self._warm is None and self.options.warm_start:
            self._warm = load_warm_start(width)
        return self._warm

    def training_data(self) -> Dataset:
        """This target's successful records with features, one group per kernel."""
        rows = [(r.kernel, r.features, r.seconds) for r in self.db.records if r.target == self.target.key() and r.ok]
        return Dataset.of([(k, f, s) for k, f, s in rows if f and s is not None and len(f) == self._width])

    def _retrain(self) -> None:
        if not self.options.learned:
            return
        data = self.training_data()
        if len(data) < 8:
            return
        model = new_model(self.options.model, self.options.seed)
        warm = self._warm_start(data.features.shape[1]) if self.options.from_warm else None
        model.fit(data, init=warm if warm is not None and warm.kind == model.kind else None)
        self.model = model

    def _report(self, kernel: TunableKernel, result: KernelResult, start: float, budget: float) -> None:
        best = f"{result.best_seconds * 1e6:.1f} us" if result.best_seconds else "none yet"
        self.progress(
            f"{kernel.space.family} {kernel.key[:8]}: {result.trials} trials ({result.failures} failed), best {best}"
            f" = {result.speedup:.2f}x the default, {self.clock() - start:.0f}{_of_budget(budget)} s"
        )

    # a whole model ------------------------------------------------------------------------------------
    def tune(self, kernels: list[TunableKernel], budget: float) -> list[KernelResult]:
        """Tune ``kernels`` within ``budget`` seconds in all (results in the order given): each default is
        measured first; then the kernels are searched from the smallest space to the largest, each given the
        time left shared in proportion to the default times of the kernels not yet searched (the expected
        gain), at least a quarter of an even share. Time a kernel leaves unused (its space exhausted) so
        passes on to the kernels after it, and what is left at the end goes to the kernels whose spaces are
        not exhausted, in a second pass."""
        start = self.clock()
        firsts = [self.tune_kernel(k, budget=0.0) for k in kernels]
        spent = self.clock() - start
        if kernels and spent > budget:
            self.progress(
                f"the budget of {budget:g} s is under the time of measuring each kernel once ({spent:.1f} s): "
                "only the default points were measured"
            )
            return firsts
        weights = [r.default_seconds or 0.0 for r in firsts]
        order = sorted(range(len(kernels)), key=lambda i: kernels[i].space.size())
        results: dict[int, KernelResult] = {}
        for pass_number in (1, 2):
            todo = [i for i in order if pass_number == 1 or not self.exhausted(kernels[i])]
            for n, i in enumerate(todo):
                left = budget - (self.clock() - start)
                if left <= 0 and pass_number == 2:
                    break
                rest = todo[n:]
                total = sum(weights[j] for j in rest) or 1.0
                share = min(max(left * weights[i] / total, left * 0.25 / len(rest)), left)
                if pass_number == 2:
                    self.progress(f"[leftover] {share:.1f} s more for {kernels[i]}")
                else:
                    self.progress(f"[{n + 1}/{len(kernels)}] {kernels[i]}")
                began = self.clock() - start
                result = self.tune_kernel(kernels[i], budget=max(share, 0.0))
                result.started = began
                results[i] = result if i not in results else _merged(results[i], result)
        out = []
        for i, first in enumerate(firsts):
            result = results[i]
            result.trials += first.trials
            result.failures += first.failures
            result.default_seconds = result.default_seconds or first.default_seconds
            out.append(result)
        return out


def _merged(earlier: KernelResult, later: KernelResult) -> KernelResult:
    """One kernel's two searches as one result: the later one's best and verdict (it knows every record),
    unless it measured nothing or could not confirm its winner where the earlier one had confirmed one;
    the trials of both; the later history shifted to the earlier search's start."""
    if later.trials == 0 or (later.verdict.startswith(UNCONFIRMED) and earlier.verdict == "confirmed"):
        later.best, later.best_seconds, later.verdict = earlier.best, earlier.best_seconds, earlier.verdict
    shift = later.started - earlier.started
    later.history = earlier.history + [(t + shift, s) for t, s in later.history]
    later.trials += earlier.trials
    later.failures += earlier.failures
    later.rejected += earlier.rejected
    later.started = earlier.started
    later.default_seconds = later.default_seconds or earlier.default_seconds
    if not later.verdict:
        later.verdict = earlier.verdict if str(later.best) == str(earlier.best) else ""
    return later


def _close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b), 1e-30)


UNBOUNDED = 1e8
"""A budget of this many seconds or more is no time limit (a search bounded by trials): progress shows no budget."""


def _of_budget(budget: float) -> str:
    """``/budget`` for the progress line, nothing for an unbounded one."""
    return "" if budget >= UNBOUNDED else f"/{budget:.0f}"
