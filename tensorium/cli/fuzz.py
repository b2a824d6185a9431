"""``tensorium fuzz``: the coverage-guided fuzzer of IR passes, and the replay of the cases it writes.

    tensorium fuzz --time 60 --seed 0 --out fuzz-out            # fuzz passes, pipelines and backends
    tensorium fuzz --time 60 --pipeline cse,fuse --out fuzz-out # fuzz one pipeline (mutate the IR only)
    tensorium fuzz --replay fuzz-out/failures/001-crash-pass-fuse.mlir

Progress lines go to stderr, the summary to stdout. Exit status: 0 when nothing failed, 3 when the
fuzzer found failures (or a replayed case still fails), 1 for a user error, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import TensoriumError
from .args import positive

FOUND_FAILURES = 3


class FuzzCommandError(TensoriumError):
    """A fuzz request that cannot run: an output path that is a file, a replay file that is missing."""


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got '{text}'") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got '{text}'")
    return value


def _backends(text: str) -> tuple[str, ...]:
    from ..fuzz.backends import BackendError, parse_backends

    try:
        return parse_backends(text)
    except BackendError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def cmd_fuzz(args: argparse.Namespace) -> int:
    """Run a fuzzing session, or replay case files."""
    from ..fuzz.backends import DEFAULT_BACKENDS, backend_notes
    from ..fuzz.fuzzer import FuzzConfig, fuzz, replay
    from ..passes.pipeline import parse_pipeline

    # Random programs never repeat a kernel: caching their object code would only fill the disk.
    os.environ.setdefault("TENSORIUM_KERNEL_CACHE", "0")
    if args.replay:
        failed = 0
        for name in args.replay:
            path = Path(name)
            if not path.is_file():
                raise FuzzCommandError(f"{name}: no such case file")
            _, verdict = replay(path)
            if verdict.failure is not None:
                failed += 1
                f = verdict.failure
                print(f"{name}: FAILS: {f.kind} at {f.stage}{f' ({f.where})' if f.where else ''}")
                print(f.detail if args.verbose else f"  {f.summary}")
            else:
                note = f" ({verdict.reason})" if verdict.reason else ""
                print(f"{name}: {verdict.status}{note}")
        return FOUND_FAILURES if failed else 0

    if args.pipeline is not None:
        parse_pipeline(args.pipeline)  # a bad pipeline is a user error before any fuzzing starts
    if args.tracer is not None:
        from ..fuzz.coverage import available_tracers

        if args.tracer not in available_tracers():
            have = ", ".join(available_tracers())
            raise FuzzCommandError(f"--tracer {args.tracer} cannot run on this Python (available: {have})")
    if args.reference and "iree" in args.reference:
        from ..interop.iree import available

        if not available():
            raise FuzzCommandError("--reference iree needs the mlir extra: pip install 'tensorium[mlir]'")
    out = Path(args.out) if args.out is not None else None
    if out is not None and out.exists() and not out.is_dir():
        raise FuzzCommandError(f"{args.out}: exists and is not a folder")
    config = FuzzConfig(
        seconds=args.time,
        seed=args.seed,
        out=out,
        pipeline=args.pipeline,
        coverage=not args.no_coverage,
        tracer=args.tracer,
        sample_stages=not args.trace_every_stage,
        backends=args.backends or DEFAULT_BACKENDS,
        references=tuple(args.reference or ()),
        opt_level=args.opt_level,
        cpu_fraction=args.cpu_fraction,
        gpu_fraction=args.gpu_fraction,
        webgpu_fraction=args.webgpu_fraction,
        schedule_fraction=args.schedule_fraction,
        quant_fraction=args.quant_fraction,
        jobs=args.jobs,
        num_ops=args.num_ops,
        reduce=not args.no_reduce,
        reduce_seconds=args.reduce_time,
        max_execs=args.max_execs,
    )
    mode = "coverage-guided" if config.coverage else "generation-only (no coverage feedback)"
    if config.jobs > 1:
        mode += f", {config.jobs} workers"
    where = f", failures to {out / 'failures'}" if out is not None else ""
    print(
        f"fuzzing for {config.seconds:g} s, seed {config.seed}, {mode}, backends {','.join(config.backends)}{where}",
        file=sys.stderr,
    )
    for note in backend_notes(config.backends):
        print(note, file=sys.stderr)
    report = fuzz(config, log=sys.stderr if not args.quiet else None)
    print(report.summary())
    return FOUND_FAILURES if report.failures or report.internal_errors else 0


def add_fuzz_command(sub: Any) -> None:
    """Register ``tensorium fuzz`` on the command line's subparsers."""
    p = sub.add_parser(
        "fuzz",
        help="fuzz the passes and backends with coverage-guided IR and pipeline mutation",
        description="Coverage-guided fuzzing of Tensorium's passes and backends (see docs/fuzzing.md). "
        "Exit status 3 when failures (or errors of the fuzzer's own code) were found.",
    )
    p.add_argument("--time", type=positive(float), default=60.0, metavar="SECONDS", help="time budget (60)")
    p.add_argument("--seed", type=int, default=0, help="random seed (0)")
    p.add_argument("--out", metavar="DIR", help="write failures (reduced case files), the corpus and report.json here")
    p.add_argument("--pipeline", metavar="PIPELINE", help="fuzz this pipeline only (the IR is mutated, not the passes)")
    p.add_argument("--no-coverage", action="store_true", help="no coverage feedback: generate every case afresh")
    p.add_argument(
        "--tracer",
        choices=("monitoring", "ctracer", "settrace"),
        help="how coverage is measured (default: the cheapest this Python has: sys.monitoring on 3.12+, "
        "else coverage.py's C tracer from the fuzz extra, else settrace)",
    )
    p.add_argument(
        "--backends",
        type=_backends,
        metavar="LIST",
        help="backends compared with the interpreter on the original program: interp, cpu (this machine), "
        "cpu:NAME (cpu:x86-64-v3, ...), cuda[:sm_XX], webgpu (default interp,cpu,cuda,webgpu)",
    )
    p.add_argument(
        "--cpu-fraction",
        type=_fraction,
        default=0.3,
        metavar="F",
        help="share of executions also compiled by the CPU backend (0.3; 1 for every one)",
    )
    p.add_argument(
        "--gpu-fraction",
        type=_fraction,
        default=0.05,
        metavar="F",
        help="share of executions also checked by the CUDA backend: PTX through ptxas, the loop interpreter (0.05)",
    )
    p.add_argument(
        "--webgpu-fraction",
        type=_fraction,
        default=0.15,
        metavar="F",
        help="share of executions also checked by the WebGPU backend: WGSL validator, the loop interpreter (0.15)",
    )
    p.add_argument(
        "--schedule-fraction",
        type=_fraction,
        default=0.5,
        metavar="F",
        help="share of executions whose kernels are built at random points of their search spaces (0.5)",
    )
    p.add_argument(
        "--quant-fraction",
        type=_fraction,
        default=0.1,
        metavar="F",
        help="share of generated programs that are quant programs (k-bit weights, packing layouts) (0.1)",
    )
    p.add_argument(
        "--opt-level",
        type=int,
        choices=(0, 1, 2, 3),
        default=None,
        help="LLVM optimization level of the CPU oracle (default: drawn per execution, 0 40%%, 1 and 2 30%% "
        "each; 2 is what tensorium.compile uses)",
    )
    p.add_argument(
        "--reference",
        action="append",
        choices=("iree",),
        help="also check a second compiler against the interpreter on each program: iree (the mlir extra; "
        "programs outside the MLIR export subset skip it)",
    )
    p.add_argument(
        "--trace-every-stage",
        action="store_true",
        help="trace every stage of every execution (by default stages that stopped showing new code are sampled)",
    )
    p.add_argument("--jobs", type=positive(int), default=1, metavar="N", help="worker processes, one per core (1)")
    p.add_argument("--num-ops", type=positive(int), default=12, metavar="N", help="size of generated programs (12)")
    p.add_argument("--no-reduce", action="store_true", help="write failing cases as found, without reducing them")
    p.add_argument("--reduce-time", type=positive(float), default=30.0, metavar="SECONDS", help="per failure (30)")
    p.add_argument("--max-execs", type=positive(int), metavar="N", help="stop after N executions")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--replay", nargs="+", metavar="CASE", help="run case files through the oracles and exit")
    p.add_argument("-v", "--verbose", action="store_true", help="with --replay: print the whole failure report")
    p.set_defaults(handler=cmd_fuzz)
