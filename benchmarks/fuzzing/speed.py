"""The fuzzer's speed: executions per second of ``tensorium fuzz`` now against a base commit, side by side.

    python -m benchmarks.fuzzing.speed --base d49c833 --seconds 60 --seeds 0,1 --jobs 1,2
    python -m benchmarks.fuzzing.speed --base d49c833 --execs 100 --seeds 0,1 --jobs 1 --variants base,now
    python -m benchmarks.fuzzing.speed --kernel-repeats --seconds 150

``--kernel-repeats`` answers whether a cache of compiled kernels could help the CPU oracle: it fuzzes once in
this process and counts, per quarter of the run, the kernels the CPU backend compiles that it had already
compiled earlier in the run (the same loop IR up to the kernel's name: what a cache keyed by a kernel's
structure would have served).

The base commit is checked out into a temporary git worktree; every run is a fresh ``tensorium fuzz``
process (``--no-reduce --quiet``, its report read from ``--out``), and the variants take turns seed by seed
and job count by job count, so that a change of the machine's load hits them alike: ``base``, ``prev`` (a
third commit, ``--prev``: the one before a change), ``now``, ``now+kernel-cache`` (the kernel cache on, cold
at the start of each run), ``now+settrace`` (the old tracer) and ``now+every-stage`` (every stage of every
execution traced: no stage sampling, :mod:`tensorium.fuzz.stages`). Executions per second are the report's
executions over its wall-clock seconds (with ``--jobs 2``, both workers' executions over the run's seconds).
Run it on a quiet machine: every other process on the cores shows up in the numbers. On a shared one, CPU
seconds per execution are steadier: the run's user and system time (the process and its workers, its
imports included) over its executions; ``--execs N`` budgets each run in executions rather than seconds, so
that every variant runs as many cases however loaded the machine is. ``now`` is a worktree of ``--now``
(HEAD), not the working tree, so that uncommitted edits do not count. The table goes to stdout and the
numbers to ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BASE = "d49c833a9d52eede9fa84aea7f2c095bd7a79e85"
"""The commit before the fuzzer's speed work (issue 19): the settrace tracer, no shared corpus."""


@dataclass(frozen=True)
class Variant:
    """One way to run the fuzzer: which checkout, extra command-line arguments and environment."""

    name: str
    tree: str
    """``base`` or ``now``."""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


VARIANTS = (
    Variant("base", "base"),
    Variant("prev", "prev"),
    Variant("now", "now"),
    Variant("now+kernel-cache", "now", env={"TENSORIUM_KERNEL_CACHE": "1"}),
    Variant("now+settrace", "now", args=("--tracer", "settrace")),
    Variant("now+every-stage", "now", args=("--trace-every-stage",)),
)


def run_once(
    tree: Path, variant: Variant, seconds: float, seed: int, jobs: int, scratch: Path, execs: int | None = None
) -> dict[str, float]:
    """One ``tensorium fuzz`` run in ``tree`` for ``seconds`` (or ``execs`` executions): its executions, seconds,
    executions per second and CPU seconds per execution."""
    out = Path(tempfile.mkdtemp(dir=scratch))
    env = {**os.environ, "PYTHONPATH": str(tree), **variant.env}
    if "TENSORIUM_KERNEL_CACHE" in variant.env:
        env["TENSORIUM_CACHE_DIR"] = str(out / "cache")  # a cold cache per run: no run inherits another's kernels
    budget = ["--time", str(seconds)] if execs is None else ["--time", str(EXECS_TIME_CAP), "--max-execs", str(execs)]
    command = [sys.executable, "-m", "tensorium", "fuzz", *budget, "--seed", str(seed)]
    command += ["--jobs", str(jobs), "--quiet", "--no-reduce", "--out", str(out / "run"), *variant.args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=tree, env=env, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    report = json.loads((out / "run" / "report.json").read_text())
    n, wall = int(report["execs"]), float(report["seconds"])
    return {"execs": n, "seconds": wall, "rate": n / wall if wall > 0 else 0.0, "cpu_per_exec": cpu / max(n, 1)}


EXECS_TIME_CAP = 3600.0
"""The time limit of a run budgeted in executions (``--execs``): a safety net, never the budget."""


def measure(
    base: str,
    seconds: float,
    seeds: list[int],
    jobs: list[int],
    variants: list[Variant],
    execs: int | None = None,
    now: str = "HEAD",
    prev: str | None = None,
) -> list[dict]:
    """Every variant for every seed and job count, interleaved; the rows of the result table. ``prev`` is a
    third commit (the ``prev`` variant: say, the one before a change, measured beside the base and now)."""
    rows: list[dict] = []
    commits = {"base": base, "now": now, **({"prev": prev} if prev is not None else {})}
    missing = [v.name for v in variants if v.tree not in commits]
    if missing:
        raise ValueError(f"variant {missing[0]!r} needs --prev (the commit it measures)")
    with tempfile.TemporaryDirectory(prefix="tensorium-speed-") as scratch:
        trees = {name: Path(scratch) / name for name in commits}
        for name, commit in commits.items():
            subprocess.run(["git", "worktree", "add", "--detach", str(trees[name]), commit], cwd=ROOT, check=True)
        try:
            for n in jobs:
                for seed in seeds:
                    for variant in variants:
                        result = run_once(trees[variant.tree], variant, seconds, seed, n, Path(scratch), execs)
                        rows.append({"variant": variant.name, "jobs": n, "seed": seed, **result})
                        print(
                            f"{variant.name:22s} jobs {n} seed {seed}: {result['rate']:.2f}/s, "
                            f"{result['cpu_per_exec']:.3f} CPU s per execution",
                            file=sys.stderr,
                        )
        finally:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    return rows


def kernel_repeats(seconds: float, seed: int) -> list[tuple[int, int]]:
    """Fuzz for ``seconds`` and return, per quarter of the kernels the CPU backend compiled, (kernels, kernels
    compiled before in the run). Counts the compilations by wrapping the CPU backend's ``compile_module``."""
    import hashlib

    from tensorium.backends import cpu
    from tensorium.fuzz.fuzzer import FuzzConfig, fuzz
    from tensorium.ir.dialects.builtin import func_name, functions
    from tensorium.ir.printer import print_op

    os.environ["TENSORIUM_KERNEL_CACHE"] = "0"
    compile_module = cpu.compile_module
    seen: set[str] = set()
    repeats: list[bool] = []

    def counting(module: Any, *args: Any, **kwargs: Any) -> Any:
        for kernel in functions(module):
            name = func_name(kernel)
            key = hashlib.sha256(print_op(kernel).replace(name, "K").encode()).hexdigest()
            repeats.append(key in seen)
            seen.add(key)
        return compile_module(module, *args, **kwargs)

    cpu.compile_module = counting  # type: ignore[assignment]
    try:
        fuzz(FuzzConfig(seconds=seconds, seed=seed), log=None)
    finally:
        cpu.compile_module = compile_module  # type: ignore[assignment]
    quarter = max(1, len(repeats) // 4)
    return [(len(part), sum(part)) for part in (repeats[i : i + quarter] for i in range(0, len(repeats), quarter))]


def table(rows: list[dict]) -> str:
    """The markdown table: executions per second and CPU seconds per execution by variant and job count, and
    their ratios to the base (speed-ups: the base's CPU seconds per execution over the variant's)."""
    lines = [
        "| variant | jobs | executions/s per seed | mean | vs base | CPU s per execution, per seed | mean | vs base |",
        "| --- | ---: | --- | ---: | ---: | --- | ---: | ---: |",
    ]
    keys = list(dict.fromkeys((r["variant"], r["jobs"]) for r in rows))

    def mean(key: tuple[str, int], field: str) -> float | None:
        values = [r[field] for r in rows if (r["variant"], r["jobs"]) == key and field in r]
        return statistics.mean(values) if values else None

    for name, jobs in keys:
        mine = [r for r in rows if (r["variant"], r["jobs"]) == (name, jobs)]
        rate, base_rate = mean((name, jobs), "rate"), mean(("base", jobs), "rate")
        cpu, base_cpu = mean((name, jobs), "cpu_per_exec"), mean(("base", jobs), "cpu_per_exec")
        rate_ratio = f"{rate / base_rate:.2f}x" if rate and base_rate else ""
        cpu_ratio = f"{base_cpu / cpu:.2f}x" if cpu and base_cpu else ""
        each_cpu = ", ".join(f"{r['cpu_per_exec']:.3f}" for r in mine if "cpu_per_exec" in r)
        cells = [
            name,
            str(jobs),
            ", ".join(f"{r['rate']:.2f}" for r in mine),
            f"{rate:.2f}",
            rate_ratio,
            each_cpu,
            f"{cpu:.3f}" if cpu is not None else "",
            cpu_ratio,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=DEFAULT_BASE, help="the commit to compare with (the one before the work)")
    parser.add_argument("--seconds", type=float, default=60.0, help="fuzzing time per run (60)")
    parser.add_argument("--execs", type=int, help="budget each run in executions instead of --seconds")
    parser.add_argument("--now", default="HEAD", help="the commit measured as 'now' (HEAD)")
    parser.add_argument("--prev", help="a third commit, measured as the 'prev' variant (none)")
    parser.add_argument("--seeds", default="0,1", help="comma-separated seeds (0,1)")
    parser.add_argument("--jobs", default="1,2", help="comma-separated worker counts (1,2)")
    parser.add_argument(
        "--variants", default=",".join(v.name for v in VARIANTS), help="comma-separated variant names (all)"
    )
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--kernel-repeats", action="store_true", help="count kernels compiled twice (see above)")
    args = parser.parse_args(argv)
    if args.kernel_repeats:
        for n, (kernels, again) in enumerate(kernel_repeats(args.seconds, int(args.seeds.split(",")[0])), 1):
            print(f"part {n}: {kernels} kernels compiled, {again} ({again / kernels:.0%}) compiled before")
        return 0
    names = [n.strip() for n in args.variants.split(",")]
    if args.prev is None and args.variants == parser.get_default("variants"):
        names.remove("prev")
    unknown = [n for n in names if n not in {v.name for v in VARIANTS}]
    if unknown:
        parser.error(f"unknown variant {unknown[0]!r}; known: {', '.join(v.name for v in VARIANTS)}")
    variants = [v for v in VARIANTS if v.name in names]
    seeds = [int(s) for s in args.seeds.split(",")]
    jobs = [int(j) for j in args.jobs.split(",")]
    if "prev" in names and args.prev is None:
        parser.error("the prev variant needs --prev COMMIT")
    rows = measure(args.base, args.seconds, seeds, jobs, variants, args.execs, args.now, args.prev)
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
