"""Per-call time of small compiled CPU models, where Python, not the kernels, sets the pace (a benchmark, not a test).

    python benchmarks/call_overhead.py                  # all three models, CPU time of this thread
    python benchmarks/call_overhead.py --clock wall --models tiny,mlp

- ``tiny``: ``a + b`` on 4x8 float32, one kernel: ``CpuExecutable.run`` and the ``tensorium.compile``-d function;
- ``mlp``: a 16 -> 32 -> 10 MLP with a symbolic batch (4 rows), five kernels: ``CpuExecutable.run``;
- ``gpt2``: the decode step of a 2-layer, 64-wide GPT-2 (random weights, vocabulary 256, a 32-position cache)
  as :class:`tensorium.generation.GreedyGenerator` compiles it: ``CpuExecutable.run`` on the arrays the step
  passes it, and the compiled step called with torch tensors as the generator calls it.

Each line is the median (and best) of ``--repeat`` timeit repeats of ``--number`` calls (1/10 of it for
``gpt2``), in microseconds per call. ``--clock cpu`` (the default) counts this thread's CPU time, which a busy
machine disturbs less than wall time; kernels' worker threads are not counted, so ``num_threads=1`` lines are
the fairest comparison.
"""

from __future__ import annotations

import argparse
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.thread_time, "wall": time.perf_counter}


class _Timer:
    """Prints the median and best microseconds per call of a function."""

    def __init__(self, clock: str, number: int, repeat: int):
        self.clock, self.number, self.repeat = CLOCKS[clock], number, repeat

    def __call__(self, label: str, fn: Callable[[], object], scale: int = 1) -> None:
        number = max(1, self.number // scale)
        times = timeit.repeat(fn, number=number, repeat=self.repeat, timer=self.clock)
        median, best = statistics.median(times) / number * 1e6, min(times) / number * 1e6
        print(f"| {label} | {median:.1f} | {best:.1f} |")


def tiny(timer: _Timer) -> None:
    """One kernel: the executable, and the same function through ``tensorium.compile``."""
    import tensorium as tm
    from tensorium.backends.cpu import CpuExecutable

    x, y = np.ones((4, 8), np.float32), np.ones((4, 8), np.float32)
    exe = CpuExecutable.build(tm.trace(lambda a, b: a + b, x, y).module)
    compiled = tm.compile(lambda a, b: a + b)
    compiled(x, y)
    timer(f"tiny ({len(exe.steps)} kernel): CpuExecutable.run", lambda: exe.run([x, y]))
    timer("tiny: CpuExecutable.run(num_threads=1)", lambda: exe.run([x, y], 1))
    timer("tiny: tensorium.compile(fn)(x, y)", lambda: compiled(x, y))


def mlp(timer: _Timer) -> None:
    """Five kernels with a symbolic batch: the executable."""
    import tensorium as tm
    from tensorium import nn
    from tensorium.backends.cpu import CpuExecutable

    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(s).astype(np.float32) for s in ((16, 32), (32,), (32, 10))]
    x = rng.standard_normal((4, 16)).astype(np.float32)

    def fn(x: Any, w1: Any, b1: Any, w2: Any) -> Any:
        return nn.log_softmax(nn.gelu(x @ w1 + b1) @ w2, axis=-1)

    exe = CpuExecutable.build(tm.trace(fn, x, *weights, dynamic={"x": {0: "batch"}}).module)
    label = f"mlp, symbolic batch ({len(exe.steps)} kernels)"
    timer(f"{label}: CpuExecutable.run(num_threads=1)", lambda: exe.run([x, *weights], 1))


def gpt2(timer: _Timer) -> None:
    """A tiny GPT-2's compiled decode step: its executable, and the step as the generator calls it."""
    import torch
    import transformers

    from tensorium.generation import GreedyGenerator, _Slots

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=256, n_positions=64)
    generator = GreedyGenerator(transformers.GPT2LMHeadModel(config).eval(), 32)
    prompt = torch.randint(0, 256, (1, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits, *kv = generator.prefill(prompt)
        slots = _Slots(kv, 8, 32)
        args = (logits[:, -1].argmax(-1, keepdim=True), torch.full((1, 1), 8), slots.mask, *slots.tensors)
        generator.decode(*args)
        exe = generator.decode._last.artifact.executable
        seen: list[list[np.ndarray]] = []
        run = exe.run

        def spy(inputs: list[np.ndarray], num_threads: int | None = None) -> list[np.ndarray]:
            seen.append(list(inputs))
            return run(inputs, num_threads)

        exe.run = spy  # the arrays the compiled step hands its executable
        generator.decode(*args)
        del exe.run
        inputs = seen[0]
        label = f"gpt2 decode step ({len(exe.steps)} kernels, {len(inputs)} inputs)"
        timer(f"{label}: CpuExecutable.run", lambda: exe.run(inputs), 10)
        timer(f"{label}: CpuExecutable.run(num_threads=1)", lambda: exe.run(inputs, 1), 10)
        timer(f"{label}: the compiled step on torch tensors", lambda: generator.decode(*args), 10)


MODELS = {"tiny": tiny, "mlp": mlp, "gpt2": gpt2}


def main(argv: list[str] | None = None) -> None:
    """Time the ``--models`` and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="tiny,mlp,gpt2", help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="cpu")
    parser.add_argument("--number", type=int, default=10000, help="calls per repeat")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    timer = _Timer(args.clock, args.number, args.repeat)
    print(f"| model: call ({args.clock} clock) | median (us) | best (us) |")
    print("|---|---|---|")
    for name in args.models.split(","):
        MODELS[name](timer)


if __name__ == "__main__":
    main()
