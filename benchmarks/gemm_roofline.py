"""The GEMM micro-kernel against the machine's limit, per CPU target that runs here (a benchmark, not a test).

    python benchmarks/gemm_roofline.py                        # cpu and cpu:x86-64-v3, 1024^3, one thread
    python benchmarks/gemm_roofline.py --targets cpu,cpu:x86-64 --size 2048 --threads 2

For each target: the measured f32 FMA peak on the same threads (``tensorium.backends.llvm.probe``: independent
FMA chains of the target's vector width), the busy clock (a chain of dependent adds), and ``a @ b`` of two
inputs compiled for the target; it prints GFLOP/s, FLOP per cycle per thread and the share of the peak. The
runners take turns in rounds and the best round's median counts, as in ``python -m benchmarks``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="cpu,cpu:x86-64-v3", help="comma-separated CPU targets")
    parser.add_argument("--size", type=int, default=1024, help="m = n = k")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    os.environ["TENSORIUM_NUM_THREADS"] = str(args.threads)

    import tensorium
    from tensorium.backends.llvm.probe import measure_clock_ghz, measure_fma_peak
    from tensorium.targets import host_target, parse_target

    n = args.size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    runs = {}
    for name in args.targets.split(","):
        target = parse_target(name)
        if not target.runs_here():
            print(f"{name}: its code does not run on this host, skipped", file=sys.stderr)
            continue
        compiled = tensorium.compile(lambda x, y: x @ y, target=target, cache=False)
        np.testing.assert_allclose(compiled(a, b), a @ b, rtol=1e-3, atol=1e-2)
        runs[name] = (target, compiled)
    clock = measure_clock_ghz(host_target())
    best: dict[str, float] = {}
    peaks: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, (target, compiled) in runs.items():
            peaks[name] = max(peaks.get(name, 0.0), measure_fma_peak(target, args.threads).gflops)
            compiled(a, b)
            times = []
            for _ in range(max(3, int(0.3 / max(1e-4, 2.0 * n**3 / 1e11)))):
                start = time.perf_counter()
                compiled(a, b)
                times.append(time.perf_counter() - start)
            best[name] = min(best.get(name, float("inf")), statistics.median(times))
    print(f"GEMM {n}^3, both operands inputs, {args.threads} thread(s); clock {clock:.2f} GHz (dependent adds)")
    print("| target | GEMM GFLOP/s | FMA peak GFLOP/s | FLOP/cycle/thread | peak FLOP/cycle/thread | share of peak |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, seconds in best.items():
        rate = 2.0 * n**3 / seconds / 1e9
        per_cycle = rate / args.threads / clock
        peak_cycle = peaks[name] / args.threads / clock
        print(
            f"| {name} | {rate:.1f} | {peaks[name]:.1f} | {per_cycle:.1f} | {peak_cycle:.1f} | "
            f"{100 * rate / peaks[name]:.0f}% |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
