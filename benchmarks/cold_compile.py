"""Cold compile time of the benchmark workloads, broken down by stage (a benchmark, not a test).

    python benchmarks/cold_compile.py                       # all workloads, kernel cache off
    python benchmarks/cold_compile.py mlp encoder --kernel-cache warm --repeat 3
    python benchmarks/cold_compile.py gpt2 gpt2-dynamic --repeat 3    # the tiny GPT-2 (issue 13: under 3 s)
    python benchmarks/cold_compile.py encoder --profile /tmp/prof   # cProfile of each first call

The workloads are the five benchmark workloads (:mod:`tensorium.bench.workloads`) and the tiny GPT-2 of
HuggingFace transformers with its default settings (``GPT2Model(GPT2Config(n_layer=2, n_embd=64, n_head=2))``,
``input_ids`` of batch 2 and length 16): ``gpt2`` with static shapes, ``gpt2-dynamic`` with batch and sequence
dynamic (``dynamic={"input_ids": {0: "batch", 1: "seq"}}``). Each measurement runs in a fresh Python process
and times the first call of ``tensorium.compile(model, cache=False)`` (model cache off), split into stages:

- ``import``: importing torch, Tensorium and the workloads (once per process, not part of the compile);
- ``export``: warming torch.export up on a one-layer model (its lazy imports of torch._dynamo, once per
  process, about 1.5 s; not part of the compile);
- ``frontend``: torch.export of the workload and its conversion to graph IR;
- ``passes``: the graph pass pipeline (the slowest passes are listed);
- ``lowering``: graph ops to loop kernels and the launch plan;
- ``verify``, ``emit``, ``print``, ``optimize``, ``link``, ``object``, ``load``: :func:`compile_module`'s
  stages (:class:`~tensorium.backends.llvm.jit.CompileStats`): loop IR verification, LLVM IR emission
  (Python), printing it (overlapping the optimization), waiting for the optimization, linking, code
  generation of the object file, MCJIT loading;
- ``other``: the rest of the first call (guards, memory plan, the run itself);
- ``compile``: the first call's wall time (issue 13 asks under 3 s for the tiny GPT-2); ``cpu``: the process's CPU
  time during it (all threads), steadier than wall time on a busy machine.

Stages are wall time; with ``--repeat N`` the fastest of N fresh processes is shown (all N are listed).

``--kernel-cache``: ``off`` (``TENSORIUM_KERNEL_CACHE=0``), ``cold`` (an empty kernel cache, filled as it
goes) or ``warm`` (a first process fills a fresh kernel cache, the measured one reads it).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STAGES = (
    "frontend",
    "passes",
    "lowering",
    "verify",
    "emit",
    "print",
    "optimize",
    "link",
    "object",
    "load",
    "other",
)
LLVM_STAGES = {
    "verify": "verify",
    "emit": "emit",
    "print": "printing",
    "optimize": "optimize",
    "link": "link",
    "object": "object",
    "load": "load",
}
"""Columns of the table from :class:`CompileStats` fields."""


@dataclass
class Case:
    """What one workload compiles and how its first call is made."""

    model: Any
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of ``tensorium.compile`` besides ``cache=False`` (``dynamic=...``)."""


def _bench_case(name: str) -> Callable[[], Case]:
    def build() -> Case:
        workload = _bench_workloads()[name]
        instance = workload.build(workload.full)
        return Case(instance.module, tuple(instance.inputs))

    return build


def _gpt2_case(dynamic: bool) -> Callable[[], Case]:
    def build() -> Case:
        import torch
        import transformers

        transformers.logging.set_verbosity_error()
        torch.manual_seed(0)
        model = transformers.GPT2Model(transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2)).eval()
        ids = torch.randint(0, 1000, (2, 16), generator=torch.Generator().manual_seed(0))
        options = {"dynamic": {"input_ids": {0: "batch", 1: "seq"}}} if dynamic else {}
        return Case(model, kwargs={"input_ids": ids}, options=options)

    return build


def _bench_workloads() -> dict[str, Any]:
    """The benchmark workloads by name (wherever the workloads module lives in this checkout)."""
    for module in ("tensorium.bench.workloads", "benchmarks.workloads"):
        try:
            return dict(importlib.import_module(module).WORKLOADS)
        except ModuleNotFoundError:
            continue
    raise SystemExit("cannot find the benchmark workloads (tensorium.bench.workloads or benchmarks.workloads)")


def workloads() -> dict[str, Callable[[], Case]]:
    """Every workload by name: the benchmark workloads, then the tiny GPT-2, static and dynamic."""
    cases = {name: _bench_case(name) for name in _bench_workloads()}
    return {**cases, "gpt2": _gpt2_case(False), "gpt2-dynamic": _gpt2_case(True)}


@contextmanager
def _wrapped(owner: Any, name: str, record: Callable[[float, Any, Any], None]) -> Iterator[None]:
    """Replace ``owner.name`` by a wrapper that calls ``record(seconds, self_or_first_arg, result)``."""
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = original(*args, **kwargs)
        record(time.perf_counter() - start, args[0] if args else None, result)
        return result

    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, original)


def measure(name: str, profile: str | None) -> dict[str, Any]:
    """One workload's first-call compile in this (fresh) process, by stage, in seconds."""
    start = time.perf_counter()
    import torch

    import tensorium
    from tensorium.backends import cpu
    from tensorium.frontend import pytorch
    from tensorium.lowering import codegen
    from tensorium.passes import manager

    build = workloads()[name]
    row: dict[str, Any] = {"workload": name, "import": time.perf_counter() - start}
    start = time.perf_counter()
    torch.export.export(torch.nn.Linear(2, 2), (torch.ones(1, 2),))
    row["export"] = time.perf_counter() - start
    case = build()
    stages: dict[str, float] = dict.fromkeys(STAGES, 0.0)
    passes: dict[str, float] = {}
    llvm: dict[str, Any] = {}

    def on_frontend(seconds: float, _: Any, __: Any) -> None:
        stages["frontend"] += seconds

    def on_passes(seconds: float, pm: Any, __: Any) -> None:
        stages["passes"] += seconds
        for label, t in getattr(pm, "_times", []):
            passes[label] = passes.get(label, 0.0) + t

    def on_lowering(seconds: float, _: Any, __: Any) -> None:
        stages["lowering"] += seconds

    def on_llvm(seconds: float, _: Any, kernels: Any) -> None:
        stats = getattr(kernels, "stats", None)
        if stats is None:  # a compiler without CompileStats: all of it under "optimize"
            stages["optimize"] += seconds
            llvm.update(kernels=len(kernels.kernels), shared=0, cache_hits=0, object_cached=False, slowest_kernels=[])
            return
        for column, attribute in LLVM_STAGES.items():
            stages[column] += getattr(stats, attribute)
        llvm.update(kernels=stats.kernels, cache_hits=stats.cache_hits, object_cached=stats.object_cached)
        llvm["shared"] = getattr(stats, "shared", 0)
        slowest = sorted(stats.optimize_each.items(), key=lambda item: -item[1])[:3]
        llvm["slowest_kernels"] = [(k, round(v, 3)) for k, v in slowest]

    compiled = tensorium.compile(case.model, cache=False, **case.options)
    profiler = cProfile.Profile() if profile else None
    with (
        _wrapped(pytorch, "import_module", on_frontend),
        _wrapped(manager.PassManager, "run", on_passes),
        _wrapped(codegen, "lower_function", on_lowering),
        _wrapped(cpu, "compile_module", on_llvm),
    ):
        if profiler is not None:
            profiler.enable()
        start, cpu_start = time.perf_counter(), _cpu_seconds()
        compiled(*case.args, **case.kwargs)
        total, cpu_total = time.perf_counter() - start, _cpu_seconds() - cpu_start
        if profiler is not None:
            profiler.disable()
    stages["other"] = total - sum(stages.values())
    row.update(stages, compile=total, cpu=cpu_total, **llvm)
    row["slowest_passes"] = [(k, round(v, 3)) for k, v in sorted(passes.items(), key=lambda item: -item[1])[:3]]
    if profiler is not None and profile is not None:
        Path(profile).mkdir(parents=True, exist_ok=True)
        out = Path(profile) / f"{name}.prof"
        profiler.dump_stats(out)
        pstats.Stats(str(out), stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    return row


def _cpu_seconds() -> float:
    """User and system CPU time of this process so far, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _child(name: str, env: dict[str, str], profile: str | None) -> dict[str, Any]:
    """Run :func:`measure` for ``name`` in a fresh process with ``env``; its row."""
    args = [sys.executable, str(Path(__file__).resolve()), "--child", name]
    if profile:
        args += ["--profile", profile]
    done = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{name}: the measuring process failed:\n{done.stderr[-4000:]}")
    if profile:
        sys.stderr.write(done.stderr)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(names: Sequence[str], kernel_cache: str, repeat: int, profile: str | None) -> list[dict[str, Any]]:
    """The fastest row (by compile time) of ``repeat`` fresh-process measurements of each workload."""
    rows = []
    for name in names:
        samples = []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory(prefix="tensorium-cold-") as folder:
                env = dict(os.environ, TENSORIUM_CACHE_DIR=folder, PYTHONPATH=str(ROOT))
                env["TENSORIUM_KERNEL_CACHE"] = "0" if kernel_cache == "off" else "1"
                if kernel_cache == "warm":
                    _child(name, env, None)
                samples.append(_child(name, env, profile))
        row = min(samples, key=lambda sample: sample["compile"])
        row["compile_runs"] = [round(sample["compile"], 3) for sample in samples]
        rows.append(row)
    return rows


def table(rows: Sequence[dict[str, Any]], kernel_cache: str) -> str:
    """The rows as a Markdown table, seconds with two decimals."""
    columns = ["import", "export", *STAGES, "compile", "cpu"]
    lines = [
        f"kernel cache: {kernel_cache}; seconds; `compile` is the first call of tensorium.compile(model, cache=False)",
        "",
        "| workload | " + " | ".join(columns) + " | kernels (shared, hits, object) |",
        "| --- |" + " ---: |" * (len(columns) + 1),
    ]
    for row in rows:
        cells = [f"{row[c]:.2f}" for c in columns]
        cached = "cached" if row["object_cached"] else "built"
        kernels = f"{row['kernels']} ({row.get('shared', 0)}, {row['cache_hits']}, {cached})"
        lines.append(f"| {row['workload']} | " + " | ".join(cells) + f" | {kernels} |")
    lines.append("")
    for row in rows:
        lines.append(
            f"- {row['workload']}: compile runs {row['compile_runs']}; slowest passes {row['slowest_passes']}; "
            f"slowest kernels to optimize {row['slowest_kernels']}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", help="workload names (default: all)")
    parser.add_argument("--kernel-cache", choices=("off", "cold", "warm"), default="off")
    parser.add_argument("--repeat", type=int, default=1, help="fresh processes per workload (the fastest is shown)")
    parser.add_argument("--profile", metavar="DIR", help="write a cProfile of each first call to DIR/<workload>.prof")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    parser.add_argument("--child", metavar="WORKLOAD", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child, args.profile)))
        return
    names = args.workloads or list(workloads())
    rows = run(names, args.kernel_cache, max(1, args.repeat), args.profile)
    print(json.dumps(rows, indent=1) if args.json else table(rows, args.kernel_cache))


if __name__ == "__main__":
    main()
