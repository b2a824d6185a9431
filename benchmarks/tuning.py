"""The autotuner on the benchmark workloads: tuned against default, learned against random search, and the
cost model's quality on held-out measurements (a benchmark, not a test; run it on a quiet machine).

    python benchmarks/tuning.py                          # every workload, 60 s each, full sizes
    python benchmarks/tuning.py gemm mlp --budget 20 --smoke
    python benchmarks/tuning.py --random-vs-learned --trials 40 gemm
    python benchmarks/tuning.py --train --db runs.jsonl  # train the shipped warm-start model from records

For each workload: the model compiled at the default points (``tuning_db=False``), tuned for ``--budget``
seconds into a fresh records file (``--db`` to keep it), compiled again with the records, and both timed
in alternation (median and fastest of 15 calls each). ``--random-vs-learned`` runs both searches from the
same seed for the same number of trials per kernel and reports the best time each found. ``--train``
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
from tensorium.autotune.measure import Measurer
from tensorium.autotune.model import Dataset, MLPRanker, lightgbm_available, new_model, quality, save_warm_start
from tensorium.autotune.records import TuningDB
from tensorium.autotune.search import SearchOptions, Tuner
from tensorium.autotune.tuning import tune_kernels
from tensorium.bench.workloads import WORKLOADS


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


def tuned_vs_default(names: list[str], budget: float, smoke: bool, db_path: Path) -> None:
    """One table row per workload: the whole model's time at the default points and tuned (median and
    fastest of interleaved calls), the kernels tuned and the trials measured."""
    print("| workload | kernels | default ms (median / min) | tuned ms (median / min) | speed-up (median) | trials |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in names:
        workload = WORKLOADS[name]
        sizes = workload.smoke if smoke else workload.full
        inst = workload.build(sizes)
        default = tensorium.compile(inst.module, tuning_db=False, cache=False)
        default(*inst.inputs)
        results = tune_kernels(default.tunable_kernels(), default.target, budget, db_path, progress=_log)
        tuned = tensorium.compile(inst.module, tuning_db=db_path, cache=False)
        (d_med, d_min), (t_med, t_min) = _interleaved([default, tuned], inst.inputs)
        trials = sum(r.trials for r in results)
        print(
            f"| {workload.describe(sizes)} | {len(results)} | {d_med * 1e3:.3f} / {d_min * 1e3:.3f} | "
            f"{t_med * 1e3:.3f} / {t_min * 1e3:.3f} | {d_med / t_med:.2f}x | {trials} |",
            flush=True,
        )


def random_vs_learned(names: list[str], trials: int, smoke: bool, seed: int, keep: Path | None) -> None:
    """Best kernel time found by random and by learned search at equal trials, per kernel (each search
    starts from an empty records file; ``keep`` collects all their records)."""
    print("| workload | kernel | random best us | learned best us | learned / random |")
    print("| --- | --- | --- | --- | --- |")
    with Measurer() as measurer:
        for name in names:
            workload = WORKLOADS[name]
            inst = workload.build(workload.smoke if smoke else workload.full)
            compiled = tensorium.compile(inst.module, tuning_db=False, cache=False)
            compiled(*inst.inputs)
            for kernel in compiled.tunable_kernels():
                best = {}
                for learned in (False, True):
                    with tempfile.TemporaryDirectory() as folder:
                        db = TuningDB(Path(folder) / "records.jsonl")
                        options = SearchOptions(seed=seed, learned=learned)
                        tuner = Tuner(compiled.target, db, measurer, options, _log)
                        result = tuner.tune_kernel(kernel, budget=1e9, max_trials=trials)
                        best[learned] = result.best_seconds or float("nan")
                        if keep is not None:
                            TuningDB(keep).merge(db)
                print(
                    f"| {name} | {kernel.space.family} {kernel.key[:8]} | {best[False] * 1e6:.1f} | "
                    f"{best[True] * 1e6:.1f} | {best[True] / best[False]:.2f} |",
                    flush=True,
                )


def train(db_path: Path, seed: int) -> None:
    """Train the shipped models on ``db_path``'s records and report their quality on held-out kernels."""
    db = TuningDB(db_path)
    rows = [(f"{r.target}/{r.kernel}", r.features, r.seconds) for r in db.records if r.ok and r.features]
    data = Dataset.of([(g, f, s) for g, f, s in rows if s is not None])
    if len(data) < 16:
        raise SystemExit(f"{db_path}: {len(data)} usable records; measure more first (tensorium tune ...)")
    training, held_out = data.split(0.25, seed)
    kinds = ["lightgbm", "mlp"] if lightgbm_available() else ["mlp"]
    print(f"{len(data)} records, {len(np.unique(data.groups))} kernels; held out {len(held_out)} rows")
    for kind in kinds:
        model = new_model(kind, seed)
        model.fit(training)
        print(kind, {k: round(v, 3) for k, v in quality(model, held_out).items()})
    models = [new_model(kind, seed) for kind in kinds]
    for model in models:
        model.fit(data)
    if not any(isinstance(m, MLPRanker) for m in models):
        models.append(MLPRanker(seed))
        models[-1].fit(data)
    save_warm_start(models, data.features.shape[1])
    print("wrote the warm-start models")


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
    args = parser.parse_args(argv)
    if args.train:
        if args.db is None:
            raise SystemExit("--train needs --db FILE")
        train(args.db, args.seed)
    elif args.random_vs_learned:
        random_vs_learned(args.workloads, args.trials, args.smoke, args.seed, args.db)
    else:
        with tempfile.TemporaryDirectory() as folder:
            tuned_vs_default(args.workloads, args.budget, args.smoke, args.db or Path(folder) / "records.jsonl")


if __name__ == "__main__":
    main()
