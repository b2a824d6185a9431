"""``tensorium bench``: the command line of the benchmark harness (:mod:`tensorium.bench`).

The harness compares Tensorium with numpy, PyTorch eager, torch.compile and onnxruntime on fixed
float32 workloads (see docs/benchmarks.md). It needs torch, so it is imported only when the command
runs; ``python -m benchmarks`` in a source checkout is the same program.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import Any

from ..bench import RUNNERS, WORKLOADS, load_benchmarks
from ..errors import TensoriumError
from .args import positive


def _names(choices: tuple[str, ...], what: str) -> Any:
    def parse(text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        unknown = [n for n in names if n not in choices]
        if unknown or not names:
            raise argparse.ArgumentTypeError(f"unknown {what} '{','.join(unknown)}'; choose from {','.join(choices)}")
        return names

    return parse


def _targets(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected a target name, or several separated by commas")
    return list(dict.fromkeys(names))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``tensorium bench`` and ``python -m benchmarks``."""
    parser.add_argument("--rounds", type=positive(int), default=5, help="interleaved timing rounds (default 5)")
    parser.add_argument(
        "--target",
        type=_targets,
        default=["interp"],
        metavar="LIST",
        help="tensorium.compile targets, one runner each: interp, cpu or both as interp,cpu (default interp)",
    )
    parser.add_argument(
        "--only", type=_names(WORKLOADS, "workload"), metavar="LIST", help=f"workloads to run: {','.join(WORKLOADS)}"
    )
    parser.add_argument(
        "--runners", type=_names(RUNNERS, "runner"), metavar="LIST", help=f"runners (default all): {','.join(RUNNERS)}"
    )
    parser.add_argument("--out", metavar="FILE.md", help="write the markdown here and the JSON beside it (.json)")
    parser.add_argument("--threads", type=positive(int), default=2, help="threads per runner (default 2)")
    parser.add_argument(
        "--min-time", type=positive(float), default=0.25, help="seconds of timed calls per runner per round (0.25)"
    )
    parser.add_argument(
        "--params", choices=("constants", "inputs"), default="constants", help="tensorium.compile params= (constants)"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: checks that the harness runs, times nothing real"
    )
    parser.add_argument(
        "--peer-isa",
        choices=("native", "avx2"),
        default="native",
        help="cap the peers' kernels to an ISA: avx2 runs numpy with OPENBLAS_CORETYPE=Haswell and PyTorch with "
        "ATEN_CPU_CAPABILITY=avx2 and ONEDNN_MAX_CPU_ISA=AVX2 (the run restarts itself with them set); compare "
        "with --target cpu:x86-64-v3 (default native)",
    )
    parser.add_argument(
        "--ablate",
        action="append",
        default=[],
        metavar="NAMES",
        help="one more Tensorium runner per target with these passes or stages disabled, comma-separated "
        "(repeatable: --ablate fuse --ablate fuse,memory-plan)",
    )


PEER_ISA_ENV = {
    "avx2": {"OPENBLAS_CORETYPE": "Haswell", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "native": {},
}
"""Environment that caps the peers' kernels to an ISA; set before numpy and torch load their libraries."""


def command_line(args: argparse.Namespace, prog: str) -> str:
    """The full command that reproduces ``args`` (every option spelled out), for the report."""
    return " ".join([prog, *options(args)])


def options(args: argparse.Namespace) -> list[str]:
    """Every option of ``args`` spelled out."""
    parts = ["--rounds", str(args.rounds), "--target", ",".join(args.target), "--threads", str(args.threads)]
    parts += ["--min-time", f"{args.min_time:g}", "--params", args.params]
    if args.only:
        parts += ["--only", ",".join(args.only)]
    if args.runners:
        parts += ["--runners", ",".join(args.runners)]
    if args.smoke:
        parts.append("--smoke")
    for names in args.ablate:
        parts += ["--ablate", names]
    if args.peer_isa != "native":
        parts += ["--peer-isa", args.peer_isa]
    if args.out:
        parts += ["--out", args.out]
    return parts


def _restart_with_peer_isa(args: argparse.Namespace) -> int | None:
    """Run the same benchmark in a child process with the peers' ISA environment, unless it is set already
    (numpy and torch read it when they load, which has happened in this process); None when it is."""
    wanted = PEER_ISA_ENV[args.peer_isa]
    if all(os.environ.get(k) == v for k, v in wanted.items()):
        return None
    boot = "import sys; from tensorium.cli.bench import main; sys.exit(main(sys.argv[2:], prog=sys.argv[1]))"
    env = {**os.environ, **wanted}
    return subprocess.run(
        [sys.executable, "-c", boot, args.bench_prog, *options(args)], env=env, check=False
    ).returncode


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the benchmarks, print the markdown table and write it (and the JSON) to ``--out``."""
    from ..api import check_target

    for target in args.target:
        check_target(target)
    restarted = _restart_with_peer_isa(args)
    if restarted is not None:
        return restarted
    bench = load_benchmarks()
    os.environ["TENSORIUM_NUM_THREADS"] = str(args.threads)
    os.environ["TENSORIUM_KERNEL_CACHE"] = "0"  # the cold compile column measures code generation, not a cache
    ablations = [[n.strip() for n in names.split(",") if n.strip()] for names in args.ablate]
    runners, missing = bench.runners.make_runners(
        args.runners or RUNNERS, args.target, args.threads, args.params, ablations
    )
    report = bench.harness.run(
        runners,
        only=args.only,
        rounds=args.rounds,
        min_time=args.min_time,
        smoke=args.smoke,
        threads=args.threads,
        command=command_line(args, args.bench_prog),
        missing=missing,
    )
    bench.harness.write_report(report, args.out)
    return 0


def add_bench_command(subparsers: Any) -> None:
    """Add ``bench`` to an argparse subparsers object (``tensorium bench``)."""
    parser = subparsers.add_parser("bench", help="benchmark Tensorium against numpy, PyTorch and onnxruntime")
    add_arguments(parser)
    parser.set_defaults(handler=cmd_bench, func=cmd_bench, bench_prog="tensorium bench")


def main(argv: list[str] | None = None, prog: str = "python -m benchmarks") -> int:
    """``python -m benchmarks``: parse the options, run, and turn a TensoriumError into one line and status 1."""
    parser = argparse.ArgumentParser(prog=prog, description="Benchmark Tensorium against its peers.")
    add_arguments(parser)
    parser.set_defaults(bench_prog=prog)
    args = parser.parse_args(argv)
    try:
        return cmd_bench(args)
    except TensoriumError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
