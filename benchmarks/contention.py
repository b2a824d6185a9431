"""Steady speed on a busy machine: the default thread count against one thread while another process holds a
core (a benchmark, not a test).

    python benchmarks/contention.py                 # tiny GPT-2, a GEMM-heavy MLP, a BERT-sized encoder layer
    python benchmarks/contention.py gpt2 --calls 200 --rounds 5

Each model runs in a fresh process that compiles it twice (cache off): with the default thread count and with
``TENSORIUM_NUM_THREADS=1`` set while compiling (the schedules a user who sets it gets), then runs ``--rounds``
rounds, each timing ``--calls`` calls of every configuration in turn: idle and busy (a background process
spinning on core 0, started for the busy half of the round) times the default and one thread, the order of the
two rotated round to round. Interleaving keeps slow drifts of other load on a shared machine out of the ratios.
The table gives, per configuration, the best round's median and the median over rounds of each round's 90th
percentile, both in ms per call. The targets: under contention the default within 1.3x of one thread
(``busy default / busy 1t``, medians), and on an idle machine the default 1.7x or more faster than one thread
for GEMM-heavy models (``idle 1t / idle default``). The header gives the load average before and after: load
other than the busy loop blurs both ratios.
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
CONFIGS = ((False, "default"), (False, "1t"), (True, "default"), (True, "1t"))


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


def _spin(core: int) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})
    while True:
        pass


def _time(compiled: Any, args: tuple[Any, ...], calls: int) -> list[float]:
    for _ in range(3):
        compiled(*args)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        compiled(*args)
        times.append(time.perf_counter() - start)
    return times


def _measure(name: str, calls: int, rounds: int) -> dict[str, list[list[float]]]:
    """Seconds per call of each configuration, per round (run in the child process)."""
    import torch

    import tensorium

    model, args = _model(name)
    default_env = os.environ.pop("TENSORIUM_NUM_THREADS", None)
    compiled = {"default": tensorium.compile(model, cache=False)}
    os.environ["TENSORIUM_NUM_THREADS"] = "1"
    compiled["1t"] = tensorium.compile(model, cache=False)
    results: dict[str, list[list[float]]] = {f"{busy} {threads}": [] for busy, threads in CONFIGS}
    with torch.no_grad():
        for c in compiled.values():
            c(*args)  # compile
        for n in range(rounds):
            for busy in (False, True):
                spinner = multiprocessing.Process(target=_spin, args=(0,), daemon=True) if busy else None
                if spinner is not None:
                    spinner.start()
                    time.sleep(0.05)
                try:
                    order = ("default", "1t") if n % 2 == 0 else ("1t", "default")
                    for threads in order:
                        if threads == "1t":
                            os.environ["TENSORIUM_NUM_THREADS"] = "1"
                        elif default_env is None:
                            os.environ.pop("TENSORIUM_NUM_THREADS", None)
                        else:
                            os.environ["TENSORIUM_NUM_THREADS"] = default_env
                        results[f"{busy} {threads}"].append(_time(compiled[threads], args, calls))
                finally:
                    if spinner is not None:
                        spinner.terminate()
                        spinner.join()
    return results


def _p90(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[int(0.9 * (len(ordered) - 1))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", help=f"any of {', '.join(MODELS)} (all by default)")
    parser.add_argument("--calls", type=int, default=50, help="timed calls per configuration and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_measure(args.child, args.calls, args.rounds)))
        return
    unknown = sorted(set(args.models) - set(MODELS))
    if unknown:
        parser.error(f"unknown model(s) {unknown}: choose from {', '.join(MODELS)}")
    print(f"{os.cpu_count()} cores; load average before: {os.getloadavg()[0]:.2f}")
    print("ms per call: best round's median / median of the rounds' p90; busy = a spinning process on core 0")
    print("| model | idle default | idle 1t | busy default | busy 1t | idle 1t / default | busy default / 1t |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models or MODELS:
        env = dict(os.environ)
        out = subprocess.run(
            [sys.executable, __file__, "--child", name, "--calls", str(args.calls), "--rounds", str(args.rounds)],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        runs = json.loads(out.stdout.strip().splitlines()[-1])
        med = {key: min(statistics.median(r) for r in rounds) for key, rounds in runs.items()}
        p90 = {key: statistics.median(_p90(r) for r in rounds) for key, rounds in runs.items()}
        keys = [f"{busy} {threads}" for busy, threads in CONFIGS]
        cells = [f"{med[k] * 1e3:.2f} / {p90[k] * 1e3:.2f}" for k in keys]
        speedup = med["False 1t"] / med["False default"]
        slowdown = med["True default"] / med["True 1t"]
        print(f"| {name} | {' | '.join(cells)} | {speedup:.2f}x | {slowdown:.2f}x |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
