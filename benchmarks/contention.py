"""Steady speed on a busy machine: the default thread count against one thread while another process holds a
core (a benchmark, not a test).

    python benchmarks/contention.py                 # tiny GPT-2, a GEMM-heavy MLP, a BERT-sized encoder layer
    python benchmarks/contention.py gpt2 --calls 200

Each model runs in four fresh processes: idle and busy (a background process spinning on core 0) times the
default thread count and ``TENSORIUM_NUM_THREADS=1``. Each process compiles the model, warms it up, then times
``--calls`` calls; the table shows the median and the 90th percentile. The targets: under contention the
default within 1.3x of one thread (``busy default / busy 1t``), and on an idle machine the default 1.7x or
more faster than one thread for GEMM-heavy models (``idle 1t / idle default``). Run it on an otherwise quiet
machine: other load than the busy loop makes the numbers meaningless.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from typing import Any

MODELS = ("gpt2", "mlp", "encoder")


def _model(name: str) -> tuple[Any, tuple[Any, ...]]:
    import torch

    torch.manual_seed(0)
    if name == "gpt2":
        import transformers

        transformers.logging.set_verbosity_error()
        config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=100, n_positions=64)
        return transformers.GPT2Model(config).eval(), (torch.randint(0, 100, (1, 16)),)
    if name == "mlp":
        layers = [torch.nn.Linear(1024, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 1024)]
        return torch.nn.Sequential(*layers).eval(), (torch.randn(64, 1024),)
    layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, dropout=0.0)
    return layer.eval(), (torch.randn(1, 128, 768),)


def _measure(name: str, calls: int) -> list[float]:
    """Seconds per call of the compiled model (run in the child process)."""
    import torch

    import tensorium

    model, args = _model(name)
    compiled = tensorium.compile(model)
    with torch.no_grad():
        for _ in range(5):
            compiled(*args)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            compiled(*args)
            times.append(time.perf_counter() - start)
    return times


def _spin(core: int) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})
    while True:
        pass


def _run(name: str, calls: int, threads: str | None, busy: bool) -> list[float]:
    env = dict(os.environ)
    env.pop("TENSORIUM_NUM_THREADS", None)
    if threads is not None:
        env["TENSORIUM_NUM_THREADS"] = threads
    spinner = multiprocessing.Process(target=_spin, args=(0,), daemon=True) if busy else None
    if spinner is not None:
        spinner.start()
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", name, "--calls", str(calls)],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
    finally:
        if spinner is not None:
            spinner.terminate()
            spinner.join()
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def _ms(times: list[float]) -> str:
    ordered = sorted(times)
    return f"{statistics.median(ordered) * 1e3:.2f} / {ordered[int(0.9 * (len(ordered) - 1))] * 1e3:.2f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", help=f"any of {', '.join(MODELS)} (all by default)")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_measure(args.child, args.calls)))
        return
    unknown = sorted(set(args.models) - set(MODELS))
    if unknown:
        parser.error(f"unknown model(s) {unknown}: choose from {', '.join(MODELS)}")
    print(f"{os.cpu_count()} cores; ms per call, median / p90; busy = a spinning process on core 0")
    print("| model | idle default | idle 1t | busy default | busy 1t | idle 1t / default | busy default / 1t |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models or MODELS:
        runs = {
            (busy, threads): _run(name, args.calls, threads, busy) for busy in (False, True) for threads in (None, "1")
        }
        med = {key: statistics.median(times) for key, times in runs.items()}
        cells = [_ms(runs[(busy, threads)]) for busy in (False, True) for threads in (None, "1")]
        speedup = med[(False, "1")] / med[(False, None)]
        slowdown = med[(True, None)] / med[(True, "1")]
        print(f"| {name} | {' | '.join(cells)} | {speedup:.2f}x | {slowdown:.2f}x |")


if __name__ == "__main__":
    main()
