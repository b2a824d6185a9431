"""Reductions over each axis against numpy and PyTorch eager, and the CPU's two lowerings of them (a benchmark).

    python benchmarks/reductions.py                      # the default cases, 2 threads, 7 rounds
    python benchmarks/reductions.py --rounds 9 --threads 1

For each case (shape, op, axes) it builds Tensorium's kernel twice in one process: with the CPU lowering
(``reduce_columns.py`` where the fastest dim is kept, the general one otherwise) and with the general
lowering alone (``general``: kept dims outside, a local accumulator per result, what every reduction used
before), and times them with numpy and PyTorch eager in rounds, the runners taking turns; each runner's
best round (the median of 5 calls) counts. GB/s counts the bytes of ``x`` read once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorium.bench.timing import let_threads_park

CASES: list[tuple[tuple[int, ...], str, tuple[int, ...]]] = [
    ((4096, 4096), "sum", (0,)),
    ((4096, 4096), "sum", (1,)),
    ((1024, 1024), "sum", (0,)),
    ((64, 1024, 256), "mean", (1,)),
    ((32, 128, 768), "mean", (0, 1)),
    ((4096, 4096), "max", (0,)),
    ((8, 21, 128, 128), "softmax", (1,)),
    ((4096, 4096), "softmax", (0,)),
    ((64, 4096), "softmax", (1,)),
    ((8, 21, 128, 128), "argmax", (1,)),
    ((4096, 4096), "argmax", (0,)),
    ((4096, 4096), "argmax", (1,)),
]


def _build(shape: tuple[int, ...], name: str, axes: tuple[int, ...], general: bool) -> Callable[[np.ndarray], Any]:
    from tensorium.backends.cpu import CpuExecutable
    from tensorium.ir.dialects import graph
    from tensorium.ir.types import TensorType, f32
    from tensorium.lowering import kernel
    from tensorium.testing import build_module

    if name in ("softmax", "argmax"):
        op = getattr(graph, name)
        module = build_module([TensorType(shape, f32)], lambda x: op(x, axis=axes[0]), check_text=False)
    else:
        op = getattr(graph, f"reduce_{name}")
        module = build_module([TensorType(shape, f32)], lambda x: op(x, axes=axes), check_text=False)
    saved = dict(kernel.TARGET_LOWERINGS)
    if general:  # the general lowering on the CPU too: drop the CPU's own reductions and softmax for this build
        own = ("graph.reduce_", "graph.softmax", "graph.argmax")
        for key in [k for k in kernel.TARGET_LOWERINGS if k[0] == "cpu" and k[1].startswith(own)]:
            del kernel.TARGET_LOWERINGS[key]
    try:
        exe = CpuExecutable.build(module)
    finally:
        kernel.TARGET_LOWERINGS.clear()
        kernel.TARGET_LOWERINGS.update(saved)
    return lambda x: exe.run([x])


def _numpy(name: str, axes: tuple[int, ...]) -> Callable[[np.ndarray], Any]:
    if name == "softmax":

        def softmax(x: np.ndarray) -> np.ndarray:
            e = np.exp(x - x.max(axis=axes, keepdims=True))
            return e / e.sum(axis=axes, keepdims=True)

        return softmax
    if name == "argmax":
        return lambda x: np.argmax(x, axis=axes[0])
    return lambda x: getattr(np, "amax" if name == "max" else name)(x, axis=axes)


def _peers(name: str, axes: tuple[int, ...]) -> dict[str, Callable[[np.ndarray], Any]]:
    out = {"numpy": _numpy(name, axes)}
    try:
        import torch
    except ImportError:
        return out
    torch.set_num_threads(int(os.environ["TENSORIUM_NUM_THREADS"]))

    def eager(x: np.ndarray) -> Any:
        t = torch.from_numpy(x)
        if name == "softmax":
            return torch.softmax(t, dim=axes[0])
        if name == "argmax":
            return torch.argmax(t, dim=axes[0])
        return t.amax(dim=axes) if name == "max" else getattr(t, name)(dim=axes)

    out["torch eager"] = eager
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ["TENSORIUM_NUM_THREADS"] = str(args.threads)
    print(f"{args.threads} threads, {args.rounds} rounds, load {os.getloadavg()[0]:.1f}")
    print("| x | op | axes | tensorium | general lowering | numpy | torch eager |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    rng = np.random.default_rng(0)
    for shape, name, axes in CASES:
        x = rng.standard_normal(shape, dtype=np.float32)
        runners = {"tensorium": _build(shape, name, axes, False), "general": _build(shape, name, axes, True)}
        runners |= _peers(name, axes)
        want = runners["numpy"](x)
        for label, run in runners.items():
            got = np.asarray(run(x)[0] if label in ("tensorium", "general") else run(x))
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-2, err_msg=label)
        best = dict.fromkeys(runners, float("inf"))
        for _ in range(args.rounds):
            for label, run in runners.items():
                let_threads_park()
                times = []
                for _ in range(5):
                    start = time.perf_counter()
                    run(x)
                    times.append(time.perf_counter() - start)
                best[label] = min(best[label], statistics.median(times))
        cells = [
            f"{best[k] * 1e3:.3f} ms, {x.nbytes / best[k] / 1e9:.1f} GB/s" if k in best else "-"
            for k in ("tensorium", "general", "numpy", "torch eager")
        ]
        print(f"| {'x'.join(map(str, shape))} | {name} | {list(axes)} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
