"""The LLVM emitter's own exp/tanh/erf/log against the loop-level decompositions (a benchmark, not a test).

    python benchmarks/decompose_math.py                      # 4M f32, both schedules, one thread
    python benchmarks/decompose_math.py --size 65536 --threads 2 --schedule vector

The kernel is ``y[i] = op(x[i])`` as the default schedule builds it for a 1-d tensor: a parallel loop over
16-lane chunks whose inner loop is vectorized by 16 (``vector``), or the same two loops serial (``serial``,
how f16 and bf16 and unscheduled kernels run). ``native`` compiles it as it is; ``decomposed`` runs
:func:`tensorium.lowering.decompose.decompose` first. Times are the best of interleaved rounds, so other
processes on the machine disturb them less; the table in docs/cpu_backend.md came from this script.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tensorium.backends.llvm import CompiledKernels, compile_module
from tensorium.ir import InsertionPoint, Operation, func_body, make_func, make_module, set_results
from tensorium.ir.dialects import loop
from tensorium.ir.types import BufferType, f32
from tensorium.lowering.decompose import decompose

LANES = 16
OPS = ("exp", "tanh", "erf", "log")


def kernel(name: str, size: int, vector: bool) -> Operation:
    """``y = name(x)`` over ``size`` f32 (a multiple of 16), vectorized by 16 lanes or serial."""
    vec = BufferType((size,), f32)
    f = make_func("k", [vec, vec])
    x, y = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, size // LANES, kind="parallel" if vector else "serial") as outer:
            factor = LANES if vector else None
            with loop.for_(0, LANES, kind="vectorize" if vector else "serial", factor=factor) as inner:
                i = loop.add(loop.mul(outer, loop.const(value=LANES, dtype=outer.type)), inner)
                loop.store(getattr(loop, name)(loop.load(x, i)), y, i)
    set_results(f, [])
    return make_module([f])


def best_times(compiled: dict[str, CompiledKernels], x: np.ndarray, threads: int, rounds: int) -> dict[str, float]:
    """The fastest run of each variant, in seconds, over interleaved rounds."""
    reps = max(3, (4 << 20) // x.size)
    best = dict.fromkeys(compiled, float("inf"))
    out = np.empty_like(x)
    for _ in range(rounds):
        for variant, kernels in compiled.items():
            kernels.run("k", x, out, num_threads=threads)
            start = time.perf_counter()
            for _ in range(reps):
                kernels.run("k", x, out, num_threads=threads)
            best[variant] = min(best[variant], (time.perf_counter() - start) / reps)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4 << 20, help="elements (a multiple of 16)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--schedule", choices=("vector", "serial", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    x = np.random.default_rng(0).uniform(-8, 8, args.size).astype(np.float32)
    schedules = ("vector", "serial") if args.schedule == "both" else (args.schedule,)
    print(f"{'kernel':12} {'native':>12} {'decomposed':>12} {'speedup':>8}")
    for schedule in schedules:
        for name in OPS:
            compiled = {}
            for variant in ("native", "decomposed"):
                module = kernel(name, args.size, schedule == "vector")
                if variant == "decomposed":
                    decompose(module)
                compiled[variant] = compile_module(module)
            data = np.abs(x) + np.float32(1e-3) if name == "log" else x
            best = best_times(compiled, data, args.threads, args.rounds)
            native, decomposed = best["native"] * 1e6, best["decomposed"] * 1e6
            print(f"{schedule + ' ' + name:12} {native:9.1f} us {decomposed:9.1f} us {native / decomposed:7.2f}x")


if __name__ == "__main__":
    main()
