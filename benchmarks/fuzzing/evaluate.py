"""The fuzzer's evaluation: coverage over time (guided against generation-only) and the mutation study.

    python -m benchmarks.fuzzing.evaluate coverage --seconds 300 --seeds 0,1 --out benchmarks/fuzzing/results
    python -m benchmarks.fuzzing.evaluate mutants --seconds 60 --jobs 2 --seed 0 --out benchmarks/fuzzing/results
    python -m benchmarks.fuzzing.evaluate mutants --seconds 60 --jobs 2 --seed 2 --out benchmarks/fuzzing/results
    python -m benchmarks.fuzzing.evaluate plot --out benchmarks/fuzzing/results --svg docs/fuzzing-coverage.svg

Every fuzzing run is a fresh process (``python -m benchmarks.fuzzing.evaluate one ...``), so no run inherits
another's coverage, imports or compiled kernels. ``coverage`` runs the guided fuzzer and generation-only
side by side for each seed (two processes at once, one per core of the machine, so both see the same
load), both tracing coverage; ``mutants`` runs the guided fuzzer once per mutant of
:mod:`benchmarks.fuzzing.mutants` with the mutant applied (``--jobs`` processes with consecutive seeds, as
``tensorium fuzz --jobs`` does), and counts it detected when a failure is found within the time budget
*and* the failing case passes once the mutant is removed (so a real bug of Tensorium found meanwhile is not
credited to a mutant). A study run is named by its ``--seed`` (its workers take ``seed``, ``seed + 1``,
...), and the table counts each mutant over the runs. Results go to JSON files in ``--out``; ``plot`` draws
the coverage curves as SVG and ``table`` prints the markdown tables used in docs/fuzzing.md.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


# --- one run (in its own process) -----------------------------------------------------------------
def run_one(args: argparse.Namespace) -> int:
    """Fuzz once and write the report as JSON (the worker behind ``coverage`` and ``mutants``)."""
    from tensorium.fuzz.fuzzer import FuzzConfig, fuzz

    config = FuzzConfig(
        seconds=args.seconds,
        seed=args.seed,
        coverage=args.mode == "guided",
        trace=True,
        out=Path(args.case_dir) if args.case_dir else None,
        max_failures=1 if args.mutant else 50,
        reduce=args.mutant is None,
    )
    if args.mutant:
        from .mutants import MUTANTS

        (mutant,) = [m for m in MUTANTS if m.name == args.mutant]
        with mutant.patch():
            report = fuzz(config, log=None)
    else:
        report = fuzz(config, log=None)
    data: dict[str, Any] = {"mode": args.mode, "seed": args.seed, "mutant": args.mutant, **report.to_json()}
    if args.mutant and report.failures:
        from tensorium.fuzz.oracle import check

        found = report.failures[0]
        unpatched = check(found.case)
        data["detected"] = unpatched.status != "failure"
        data["first_failure"] = {
            "seconds": found.found_after,
            "execs": found.execs,
            "signature": found.failure.signature,
            "summary": found.failure.summary,
            "pipeline": found.case.pipeline,
            "passes_without_mutant": unpatched.status,
        }
    elif args.mutant:
        data["detected"] = False
    Path(args.json).write_text(json.dumps(data, indent=1))
    return 0


def _spawn(out: Path, name: str, *extra: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "benchmarks.fuzzing.evaluate", "one", "--json", str(out / f"{name}.json"), *extra]
    return subprocess.Popen(cmd, cwd=Path(__file__).resolve().parents[2])


def run_coverage(args: argparse.Namespace) -> int:
    """Guided against generation-only, same seeds and budget, two processes at a time."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        print(f"seed {seed}: guided and generation-only, {args.seconds:g} s each, side by side", file=sys.stderr)
        procs = [
            _spawn(out, f"coverage-{mode}-{seed}", "--mode", mode, "--seed", str(seed), "--seconds", str(args.seconds))
            for mode in ("guided", "generation")
        ]
        if any(p.wait() != 0 for p in procs):
            print(f"seed {seed}: a run failed", file=sys.stderr)
            return 1
    print(coverage_table(out))
    return 0


def run_mutants(args: argparse.Namespace) -> int:
    """The guided fuzzer against each mutant, one mutant at a time, ``--seconds`` each, on ``--jobs`` cores
    (as ``tensorium fuzz --jobs``: independent workers with seeds ``seed``, ``seed + 1``, ...)."""
    from .mutants import MUTANTS

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only]
    for n, mutant in enumerate(chosen, 1):
        start = time.monotonic()
        procs = [
            _spawn(
                out,
                f"mutant-{mutant.name}-worker-{k}",
                "--mode",
                "guided",
                "--seed",
                str(args.seed + k),
                "--seconds",
                str(args.seconds),
                "--mutant",
                mutant.name,
            )
            for k in range(args.jobs)
        ]
        if any(p.wait() != 0 for p in procs):
            print(f"[{n}/{len(chosen)}] {mutant.name}: a run failed", file=sys.stderr)
            return 1
        workers = [json.loads((out / f"mutant-{mutant.name}-worker-{k}.json").read_text()) for k in range(args.jobs)]
        data = {**_merge_mutant_runs(workers), "seed": args.seed}  # the study run's seed, not a worker's
        (out / f"mutant-{mutant.name}-seed{args.seed}.json").write_text(json.dumps(data, indent=1))
        for k in range(args.jobs):
            (out / f"mutant-{mutant.name}-worker-{k}.json").unlink()
        verdict = "detected" if data["detected"] else "missed"
        after = f" after {data['first_failure']['seconds']:.1f} s" if data["detected"] else ""
        print(
            f"[{n}/{len(chosen)}] {mutant.name}: {verdict}{after} ({time.monotonic() - start:.0f} s)", file=sys.stderr
        )
    print(mutant_table(out))
    return 0


def _merge_mutant_runs(workers: list[dict[str, Any]]) -> dict[str, Any]:
    """One result for a mutant's workers: detected when any worker was, at the earliest such moment."""
    detecting = [w for w in workers if w["detected"]]
    merged = dict(min(detecting, key=lambda w: w["first_failure"]["seconds"]) if detecting else workers[0])
    merged["execs"] = sum(w["execs"] for w in workers)
    merged["jobs"] = len(workers)
    if not detecting:
        found = [w for w in workers if w.get("first_failure")]
        merged["first_failure"] = found[0]["first_failure"] if found else None
    return merged


# --- tables and the plot -------------------------------------------------------------------------
def _load(out: Path, pattern: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob(pattern))]


def _at(timeline: list[list[float]], seconds: float, column: int) -> float:
    """The value of a timeline column at ``seconds`` (the last sample at or before it)."""
    value = 0.0
    for sample in timeline:
        if sample[0] <= seconds:
            value = sample[column]
    return value


def coverage_table(out: Path) -> str:
    """Markdown: edges and lines covered at a few moments, per seed and mode."""
    runs = _load(out, "coverage-*.json")
    if not runs:
        return "(no coverage runs)"
    horizon = max(r["seconds"] for r in runs)
    moments = [t for t in (30, 60, 120, 300, 600, 1200) if t <= horizon] or [horizon]
    header = "| mode | seed | executions | corpus | " + " | ".join(f"edges at {t} s" for t in moments)
    header += " | lines at the end | failures |"
    rows = [header, "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in moments) + " | ---: | ---: |"]
    for r in sorted(runs, key=lambda r: (r["mode"], r["seed"])):
        mode = "coverage-guided" if r["mode"] == "guided" else "generation-only"
        edges = " | ".join(f"{_at(r['timeline'], t, 2):.0f}" for t in moments)
        rows.append(
            f"| {mode} | {r['seed']} | {r['execs']} | {r['corpus']} | {edges} | {r['line_percent']:.1f}% "
            f"| {len(r['failures'])} |"
        )
    return "\n".join(rows)


def mutant_table(out: Path) -> str:
    """Markdown: each mutant, in how many study runs (seeds) the fuzzer detected it, how fast, and with which
    oracle."""
    from .mutants import MUTANTS

    runs = _load(out, "mutant-*-seed*.json")
    if not runs:
        return "(no mutation study runs)"
    seeds = sorted({r["seed"] for r in runs})
    seed_list = ", ".join(map(str, seeds))
    rows = [
        f"| mutant | pass or stage | the bug | detected | after (seed {seed_list}) | oracle and stage |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    per_seed = {seed: 0 for seed in seeds}
    every_run = 0
    for m in MUTANTS:
        mine = {r["seed"]: r for r in runs if r["mutant"] == m.name}
        if not mine:
            continue
        found = [mine[s] for s in seeds if s in mine and mine[s]["detected"]]
        for r in found:
            per_seed[r["seed"]] += 1
        every_run += len(found) == len(seeds)
        after = ", ".join(
            f"{mine[s]['first_failure']['seconds']:.1f} s" if s in mine and mine[s]["detected"] else "missed"
            for s in seeds
        )
        oracle = found[0]["first_failure"]["signature"] if found else "no failure"
        rows.append(f"| {m.name} | {m.target} | {m.description} | {len(found)} of {len(mine)} | {after} | {oracle} |")
    scores = ", ".join(f"{per_seed[s]} of {len(MUTANTS)} with seed {s}" for s in seeds)
    rows.append(f"\nDetected within the budget: {scores}; {every_run} of {len(MUTANTS)} in every run.")
    return "\n".join(rows)


def coverage_svg(out: Path, column: int = 2, width: int = 720, height: int = 360) -> str:
    """An SVG line plot of covered edges over time: one line per run, guided in blue, generation-only in grey.

    The vertical axis starts near the coverage every run has after its first tenth of the time (the
    first seconds, where every run climbs from nothing, are drawn clipped at the bottom), so that the
    difference between the modes is visible."""
    runs = _load(out, "coverage-*.json")
    left, right, top, bottom = 70, 20, 20, 50
    xmax = max(r["seconds"] for r in runs)
    top_value = max(s[column] for r in runs for s in r["timeline"])
    early = min(_at(r["timeline"], xmax / 10, column) for r in runs)
    ymin = math.floor(early * 0.98 / 100) * 100
    ymax = ymin + (top_value - ymin) * 1.08

    def x(t: float) -> float:
        return left + (width - left - right) * t / xmax

    def y(v: float) -> float:
        return height - bottom - (height - top - bottom) * (max(v, ymin) - ymin) / (ymax - ymin)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="black"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>',
    ]
    for i in range(6):
        t = xmax * i / 5
        v = ymin + (ymax - ymin) * i / 5
        parts.append(f'<text x="{x(t):.0f}" y="{height - bottom + 16}" text-anchor="middle">{t:.0f}</text>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.0f}" text-anchor="end">{v:.0f}</text>')
        parts.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{width - right}" y2="{y(v):.1f}" stroke="#eee"/>')
    parts.append(
        f'<text x="{(left + width - right) / 2:.0f}" y="{height - 12}" text-anchor="middle">seconds of fuzzing</text>'
    )
    parts.append(
        f'<text x="16" y="{(top + height - bottom) / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 16 {(top + height - bottom) / 2:.0f})">edges of Tensorium covered</text>'
    )
    for r in runs:
        color = "#1f5fbf" if r["mode"] == "guided" else "#999999"
        points = " ".join(f"{x(s[0]):.1f},{y(s[column]):.1f}" for s in r["timeline"] if s[0] > 0)
        parts.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"/>')
    legend_x, legend_y = width - right - 230, height - bottom - 44
    parts.append(f'<rect x="{legend_x}" y="{legend_y + 6}" width="14" height="4" fill="#1f5fbf"/>')
    parts.append(f'<text x="{legend_x + 20}" y="{legend_y + 12}">coverage-guided</text>')
    parts.append(f'<rect x="{legend_x}" y="{legend_y + 24}" width="14" height="4" fill="#999999"/>')
    parts.append(f'<text x="{legend_x + 20}" y="{legend_y + 30}">generation-only (no feedback)</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    """The command line of the evaluation (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzzing.evaluate", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    cov = sub.add_parser("coverage", help="guided against generation-only, same seeds and time")
    cov.add_argument("--seconds", type=float, default=300.0)
    cov.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[0, 1])
    cov.add_argument("--out", default=str(DEFAULT_OUT))
    mut = sub.add_parser("mutants", help="the mutation study")
    mut.add_argument("--seconds", type=float, default=60.0)
    mut.add_argument("--seed", type=int, default=0)
    mut.add_argument("--jobs", type=int, default=2, help="processes per mutant, one per core (2)")
    mut.add_argument("--only", type=lambda s: s.split(","), default=None, help="comma-separated mutant names")
    mut.add_argument("--out", default=str(DEFAULT_OUT))
    plot = sub.add_parser("plot", help="write the coverage curves as SVG")
    plot.add_argument("--out", default=str(DEFAULT_OUT))
    plot.add_argument("--svg", required=True)
    table = sub.add_parser("table", help="print the markdown tables")
    table.add_argument("--out", default=str(DEFAULT_OUT))
    one = sub.add_parser("one", help="(internal) one fuzzing run in this process")
    one.add_argument("--mode", choices=("guided", "generation"), required=True)
    one.add_argument("--seed", type=int, required=True)
    one.add_argument("--seconds", type=float, required=True)
    one.add_argument("--mutant")
    one.add_argument("--json", required=True)
    one.add_argument("--case-dir")
    args = parser.parse_args(argv)
    if args.command == "coverage":
        return run_coverage(args)
    if args.command == "mutants":
        return run_mutants(args)
    if args.command == "plot":
        Path(args.svg).write_text(coverage_svg(Path(args.out)))
        return 0
    if args.command == "table":
        print(coverage_table(Path(args.out)))
        print()
        print(mutant_table(Path(args.out)))
        return 0
    return run_one(args)


if __name__ == "__main__":
    sys.exit(main())
