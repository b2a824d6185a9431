"""Greedy generation speed: tokens per second of a GPT-2-small-sized model (a benchmark, not a test).

    python benchmarks/generation.py                      # 12 layers x 768, prefill 128, 64 decode steps
    python benchmarks/generation.py --layers 2 --width 128 --prefill 16 --steps 8   # a quick look

A GPT-2 of the given size with random weights (batch 1) generates through :class:`tensorium.generation.
GreedyGenerator`'s loop (a fixed-capacity KV cache, prefill and decode step compiled once each) with three
compilers of the two steps: Tensorium (CPU target), eager PyTorch and ``torch.compile`` (inductor, dynamic).
Each runs once untimed (compiles), then ``--repeat`` times; the best time is reported: prefill (ms), decode
(tokens/s over the decode steps) and whether its tokens equal HuggingFace's own ``generate()``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any


def _generators(model: Any, capacity: int) -> dict[str, Any]:
    import torch

    from tensorium.generation import GreedyGenerator

    return {
        "tensorium": GreedyGenerator(model, capacity),
        "eager": GreedyGenerator(model, capacity, compiler=lambda m: m),
        "torch.compile": GreedyGenerator(model, capacity, compiler=lambda m: torch.compile(m, dynamic=True)),
    }


class _Clock:
    """Wraps a step and adds up the seconds spent in it."""

    def __init__(self, step: Any):
        self.step, self.seconds = step, 0.0

    def __call__(self, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.step(*args)
        finally:
            self.seconds += time.perf_counter() - start


def _timed(generator: Any, prompt: Any, steps: int) -> tuple[float, float, Any]:
    """(prefill seconds, decode seconds, tokens) of one generation of ``steps`` tokens after the first."""
    generator.prefill, generator.decode = _Clock(generator.prefill), _Clock(generator.decode)
    try:
        tokens = generator.generate(prompt, steps + 1)
        return generator.prefill.seconds, generator.decode.seconds, tokens
    finally:
        generator.prefill, generator.decode = generator.prefill.step, generator.decode.step


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--prefill", type=int, default=128)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=args.layers, n_embd=args.width, n_head=args.heads, vocab_size=args.vocab,
        n_positions=args.prefill + args.steps + 1,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    prompt = torch.randint(0, args.vocab, (1, args.prefill), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        reference = model.generate(prompt, max_new_tokens=args.steps + 1, do_sample=False, pad_token_id=0).tolist()
    print(f"GPT-2 {args.layers} layers x {args.width}, prefill {args.prefill}, {args.steps} decode steps, batch 1")
    print("| compiler | first run (s) | prefill (ms) | decode (tokens/s) | tokens equal generate() |")
    print("|---|---|---|---|---|")
    for name, generator in _generators(model, args.prefill + args.steps).items():
        start = time.perf_counter()
        _timed(generator, prompt, args.steps)
        first = time.perf_counter() - start
        runs = [_timed(generator, prompt, args.steps) for _ in range(args.repeat)]
        prefill = min(r[0] for r in runs)
        decode = min(r[1] for r in runs)
        same = runs[0][2].tolist() == reference
        print(f"| {name} | {first:.1f} | {prefill * 1e3:.1f} | {args.steps / decode:.1f} | {same} |")


if __name__ == "__main__":
    main()
