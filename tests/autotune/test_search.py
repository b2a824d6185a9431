"""The search with a synthetic measurer: deterministic under a seed, reusing records, surviving failures."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import pytest

import tensorium
from tensorium.autotune.measure import Job, Measurement
from tensorium.autotune.records import Record, TuningDB
from tensorium.autotune.search import SearchOptions, Tuner
from tensorium.lowering.space import Config, TunableKernel


class Synthetic:
    """Seconds from a fixed function of the config (fast tiles: mr * nv near 24); some points "crash"."""

    def __init__(self, default: str = "") -> None:
        self.jobs: list[str] = []
        self.default = default

    def measure(self, job: Job) -> Measurement:
        self.jobs.append(job.config)
        c = Config.parse(job.config)
        if zlib.crc32(job.config.encode()) % 4 == 0 and job.config != self.default:
            return Measurement(None, "the worker crashed (signal 11; it was restarted)")
        seconds = (
            1e-4 * (1 + abs(c.int("mr") * c.int("nv") - 24) / 8) * (1 + (zlib.crc32(job.config.encode()) % 7) / 50)
        )
        return Measurement(seconds, None, (seconds,), 0.0, 123.0)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.01
        return self.now


def _search(
    db: TuningDB, kernel: TunableKernel, target: tensorium.Target, trials: int, **options: object
) -> tuple[Synthetic, object]:
    measurer = Synthetic(str(kernel.default))
    tuner = Tuner(
        target, db, measurer, SearchOptions(warm_start=False, proposals=12, batch=4, **options), clock=Clock()
    )  # type: ignore[arg-type]
    return measurer, tuner.tune_kernel(kernel, budget=1e9, max_trials=trials)


def test_same_seed_same_search(tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target) -> None:
    a, result_a = _search(TuningDB(tmp_path / "a.jsonl"), gemm_kernel, target, 12, model="mlp")
    b, result_b = _search(TuningDB(tmp_path / "b.jsonl"), gemm_kernel, target, 12, model="mlp")
    assert a.jobs == b.jobs and len(a.jobs) >= 12
    assert result_a.best == result_b.best  # type: ignore[attr-defined]
    c, _ = _search(TuningDB(tmp_path / "c.jsonl"), gemm_kernel, target, 12, model="mlp", seed=1)
    assert c.jobs != a.jobs


def test_failures_are_recorded_and_the_search_goes_on(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    db = TuningDB(tmp_path / "r.jsonl")
    _, result = _search(db, gemm_kernel, target, 16, model="mlp")
    assert result.failures > 0 and result.trials >= 16  # type: ignore[attr-defined]
    failed = [r for r in TuningDB(tmp_path / "r.jsonl").records if not r.ok]
    assert failed and all(r.error and "crashed" in r.error for r in failed)
    assert result.best_seconds < result.default_seconds  # type: ignore[attr-defined]


def test_records_are_reused_not_measured_again(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    db = TuningDB(tmp_path / "r.jsonl")
    first, _ = _search(db, gemm_kernel, target, 10, model="mlp")
    second, result = _search(TuningDB(tmp_path / "r.jsonl"), gemm_kernel, target, 10, model="mlp")
    searched_before = set(first.jobs) - {str(gemm_kernel.default)}
    # only the default (for its checksum) and the winner (re-timed at the end) are measured again
    assert searched_before & set(second.jobs[1:]) <= {str(result.best)}  # type: ignore[attr-defined]


def test_wrong_results_are_rejected(tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target) -> None:
    class Wrong(Synthetic):
        def measure(self, job: Job) -> Measurement:
            m = super().measure(job)
            if m.ok and job.config != str(gemm_kernel.default):
                return Measurement(m.seconds / 10, None, m.runs, 0.0, 999.0)
            return m

    db = TuningDB(tmp_path / "r.jsonl")
    tuner = Tuner(
        target,
        db,
        Wrong(str(gemm_kernel.default)),
        SearchOptions(warm_start=False, model="mlp", proposals=12, batch=4),
        clock=Clock(),
    )
    result = tuner.tune_kernel(gemm_kernel, budget=1e9, max_trials=6)
    assert result.best == gemm_kernel.default
    assert any(r.error and r.error.startswith("wrong result") for r in db.records)


def test_a_budget_under_one_measurement_says_so(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    lines: list[str] = []
    tuner = Tuner(
        target,
        TuningDB(tmp_path / "r.jsonl"),
        Synthetic(str(gemm_kernel.default)),
        SearchOptions(warm_start=False),
        lines.append,
        Clock(),
    )
    results = tuner.tune([gemm_kernel], budget=0.001)
    assert len(results) == 1 and results[0].trials == 1
    assert any("under the time of measuring each kernel once" in line for line in lines)


@pytest.mark.parametrize(("budget", "shown"), [(1e9, r", \d+ s$"), (30.0, r", \d+/30 s$")])
def test_progress_shows_the_budget_only_when_there_is_one(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target, budget: float, shown: str
) -> None:
    """A search bounded by trials (budget 1e9, as --random-vs-learned runs it) printed ``13/1000000000 s``."""
    lines: list[str] = []
    options = SearchOptions(warm_start=False, proposals=12, batch=4)
    tuner = Tuner(
        target, TuningDB(tmp_path / "r.jsonl"), Synthetic(str(gemm_kernel.default)), options, lines.append, Clock()
    )
    tuner.tune_kernel(gemm_kernel, budget=budget, max_trials=6)
    progress = [line for line in lines if "x the default" in line]
    assert progress and all(re.search(shown, line) for line in progress), progress


def test_ctrl_c_keeps_every_record_measured_so_far(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    class Interrupted(Synthetic):
        def measure(self, job: Job) -> Measurement:
            if len(self.jobs) == 5:
                raise KeyboardInterrupt
            return super().measure(job)

    tuner = Tuner(
        target, TuningDB(tmp_path / "r.jsonl"), Interrupted(str(gemm_kernel.default)), SearchOptions(warm_start=False)
    )
    with pytest.raises(KeyboardInterrupt):
        tuner.tune_kernel(gemm_kernel, budget=1e9)
    assert len(TuningDB(tmp_path / "r.jsonl")) == 5


def test_tune_a_model_from_python(tmp_path: Path, gemm_kernel: TunableKernel) -> None:
    import tensorium.autotune

    from .conftest import gemm_inputs, gemm_model

    lines: list[str] = []
    measurer = Synthetic(str(gemm_kernel.default))
    db = tmp_path / "r.jsonl"
    (result,) = tensorium.autotune.tune(
        gemm_model, *gemm_inputs(), budget=3.0, db=db, progress=lines.append, measurer=measurer, check=False
    )  # the synthetic times say nothing of the real model: the whole-model check is tested in test_model_check
    assert result.key == gemm_kernel.key and result.trials == len(measurer.jobs) >= 1
    assert lines  # progress: one line a round, or that the budget ran out after the defaults on a busy machine
    compiled = tensorium.compile(gemm_model, tuning_db=db)
    compiled(*gemm_inputs())
    assert compiled.artifact.configs == {gemm_kernel.key: result.best}


def test_tuning_other_targets_is_a_clear_error(gemm_kernel: TunableKernel) -> None:
    from tensorium.autotune.tuning import tune_kernels
    from tensorium.errors import TensoriumError

    with pytest.raises(TensoriumError, match="CPU targets only"):
        tune_kernels([gemm_kernel], target="interp")


def test_beats_default_needs_every_retiming_faster_and_the_margin() -> None:
    from tensorium.autotune.search import beats_default

    assert beats_default([1.0, 1.01, 0.99], [1.2, 1.25, 1.22], 0.02)
    assert not beats_default([1.0, 1.01, 1.3], [1.2, 1.25, 1.22], 0.02)  # overlapping: noise
    assert not beats_default([1.0, 1.0, 1.0], [1.01, 1.01, 1.01], 0.02)  # separated, but under the margin
    assert beats_default([1.0, 1.0, 1.0], [1.01, 1.01, 1.01], 0.0)
    assert not beats_default([], [1.0], 0.0) and not beats_default([0.5], [], 0.0)


class LuckyFirstRun:
    """Every point as fast as the default except at its first measurement, where ``lucky`` is 2x faster."""

    def __init__(self, default: str, lucky: str) -> None:
        self.default, self.lucky = default, lucky
        self.jobs: list[str] = []

    def measure(self, job: Job) -> Measurement:
        first = job.config not in self.jobs
        self.jobs.append(job.config)
        seconds = 1e-4 * (0.5 if job.config == self.lucky and first else 1.0 + (len(self.jobs) % 3) / 100)
        return Measurement(seconds, None, (seconds,), 0.0, 123.0)


def test_a_winner_from_one_lucky_run_is_set_aside_and_compile_keeps_the_default(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    from .conftest import gemm_inputs, gemm_model

    lucky = next(c for c in gemm_kernel.space.points() if str(c) != str(gemm_kernel.default))
    measurer = LuckyFirstRun(str(gemm_kernel.default), str(lucky))
    db = TuningDB(tmp_path / "r.jsonl")
    options = SearchOptions(warm_start=False, proposals=12, batch=4, model="mlp")
    tuner = Tuner(target, db, measurer, options, clock=Clock())  # type: ignore[arg-type]
    tuner.tune_kernel(gemm_kernel, budget=0.0)  # the default, once
    job = tuner._prepare(gemm_kernel, lucky).job
    db.add([Record(gemm_kernel.key, target.key(), str(lucky), measurer.measure(job).seconds, family="gemm")])
    result = Tuner(target, TuningDB(tmp_path / "r.jsonl"), measurer, options, clock=Clock()).tune_kernel(
        gemm_kernel, budget=1e9, max_trials=4
    )  # type: ignore[arg-type]
    assert result.verdict.startswith("not confirmed")
    assert str(result.best) == str(gemm_kernel.default) and result.speedup == 1.0
    assert measurer.jobs.count(str(lucky)) == 1 + options.confirm
    kept = TuningDB(tmp_path / "r.jsonl")
    assert any(r.unconfirmed and r.config == str(lucky) for r in kept.records)
    best = kept.best(gemm_kernel.key, target.key())
    assert best is not None and str(best[0]) == str(gemm_kernel.default)
    compiled = tensorium.compile(gemm_model, tuning_db=tmp_path / "r.jsonl", cache=False)
    compiled(*gemm_inputs())
    assert compiled.artifact.configs.get(gemm_kernel.key, gemm_kernel.default) == gemm_kernel.default


def test_a_clear_winner_is_confirmed(tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target) -> None:
    db = TuningDB(tmp_path / "r.jsonl")
    _, result = _search(db, gemm_kernel, target, 16, model="mlp", margin=0.0)
    assert str(result.best) != str(gemm_kernel.default)  # type: ignore[attr-defined]
    assert result.verdict == "confirmed"  # type: ignore[attr-defined]
    assert result.best_seconds < result.default_seconds  # type: ignore[attr-defined]
    best = TuningDB(tmp_path / "r.jsonl").best(gemm_kernel.key, target.key())
    assert best is not None and str(best[0]) == str(result.best)  # type: ignore[attr-defined]


def _small(kernel: TunableKernel, key: str, points: int) -> TunableKernel:
    """``kernel`` under another key, with a space of its default and ``points - 1`` other legal points."""
    import dataclasses

    from tensorium.lowering.space import Knob, Space

    chosen = [kernel.default, *[c for c in kernel.space.points() if str(c) != str(kernel.default)][: points - 1]]
    knobs = tuple(
        Knob(knob.name, tuple(dict.fromkeys(c.as_dict()[knob.name] for c in chosen))) for knob in kernel.space.knobs
    )
    allowed = {str(c) for c in chosen}
    space = Space(
        kernel.space.family, knobs, lambda values: str(Config(kernel.space.family, tuple(values.items()))) in allowed
    )
    assert space.size() == points
    return dataclasses.replace(kernel, key=key, space=space)


class Repeats:
    """Each trial's repeats: the default's are all 5 units; every other point's fastest is ``fast`` units
    and its median 9 (a point that only a busy machine slowed down, most of the time)."""

    def __init__(self, default: str, fast: float = 1.0) -> None:
        self.default, self.fast = default, fast

    def measure(self, job: Job) -> Measurement:
        runs = (5.0, 5.0, 5.0) if job.config == self.default else (self.fast, 9.0, 9.0)
        return Measurement(sorted(runs)[1], None, runs, 0.0, 123.0)


@pytest.mark.parametrize("statistic", ["min", "median"])
def test_the_search_judges_trials_by_their_fastest_repeat(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target, statistic: str
) -> None:
    small = _small(gemm_kernel, "two-points", 2)
    other = next(c for c in small.space.points() if str(c) != str(small.default))
    db = TuningDB(tmp_path / "r.jsonl")
    options = SearchOptions(warm_start=False, model="mlp", batch=4, confirm=0, statistic=statistic)
    result = Tuner(target, db, Repeats(str(small.default)), options, clock=Clock()).tune_kernel(small, budget=1e9)
    recorded = {r.config: r.seconds for r in db.records}
    if statistic == "min":
        assert str(result.best) == str(other) and result.best_seconds == 1.0
        assert recorded == {str(small.default): 5.0, str(other): 1.0}
    else:
        assert str(result.best) == str(small.default) and result.best_seconds == 5.0
        assert recorded == {str(small.default): 5.0, str(other): 9.0}


def test_an_unknown_statistic_is_refused() -> None:
    from tensorium.errors import TensoriumError

    with pytest.raises(TensoriumError, match="statistic must be one of min, median"):
        SearchOptions(statistic="mean")


class Ticking(Synthetic):
    """A synthetic measurer whose every measurement takes one second of ``clock``."""

    def __init__(self, default: str, clock: list[float]) -> None:
        super().__init__(default)
        self.clock = clock

    def measure(self, job: Job) -> Measurement:
        self.clock[0] += 1.0
        return super().measure(job)


def test_time_a_kernel_leaves_unused_passes_on_to_the_others(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    big, small = _small(gemm_kernel, "big", 60), _small(gemm_kernel, "small", 3)
    now = [0.0]
    measurer = Ticking(str(gemm_kernel.default), now)
    options = SearchOptions(warm_start=False, model="mlp", proposals=12, batch=4, confirm=0)
    tuner = Tuner(target, TuningDB(tmp_path / "r.jsonl"), measurer, options, clock=lambda: now[0])
    results = tuner.tune([big, small], budget=40.0)
    assert [r.key for r in results] == ["big", "small"]  # in the order given
    assert tuner.exhausted(small) and results[1].trials == len(
        set(measurer.jobs) & {str(c) for c in small.space.points()}
    )
    # the small space took 3 s; the big one got all the rest, not half of it
    assert results[0].trials >= 40 - results[1].trials - 1
    assert now[0] <= 40.0 + options.batch


def test_leftover_time_goes_back_to_kernels_whose_space_is_not_exhausted(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    # the smaller space (30 points) is searched first and stops at its share, half the time; the larger one
    # (40 points, 34 of them recorded before) is exhausted long before the budget ends, and the time left
    # goes back to the first
    first, second = _small(gemm_kernel, "first", 30), _small(gemm_kernel, "second", 40)
    db = TuningDB(tmp_path / "r.jsonl")
    known = [c for c in second.space.points() if str(c) != str(second.default)][:34]
    db.add([Record("second", target.key(), str(c), 1e-3, family="gemm") for c in known])
    now = [0.0]
    measurer = Ticking(str(gemm_kernel.default), now)
    options = SearchOptions(warm_start=False, model="mlp", proposals=12, batch=2, confirm=0)
    lines: list[str] = []
    tuner = Tuner(target, db, measurer, options, lines.append, clock=lambda: now[0])
    results = tuner.tune([second, first], budget=50.0)
    assert any(line.startswith("[leftover]") and "first" in line for line in lines)
    assert tuner.exhausted(second) and tuner.exhausted(first)
    assert results[1].trials == 30 and results[0].trials == 40 - 34
    assert now[0] <= 50.0
