"""Dynamic shapes on WebGPU: models compiled once with a run-time batch and sequence, against the same models
compiled for each static size, through wgpu-py on lavapipe (a CPU).

    python benchmarks/webgpu_dynamic.py                    # 5 rounds of 3 timed runs per row
    python benchmarks/webgpu_dynamic.py --rounds 7 --json out.json

Two models: a linear layer [1, s, 512] x [512, 512] (the tiled GEMM over run-time rows) and an attention block of
width 64 with 4 heads (q, k and v projections, a split into heads, which is a view of a dynamic tensor, scaled
scores, softmax, the output projection, a residual and a layer norm), at s = 64 and 512. Each row is the best
over ``--rounds`` rounds of the mean of 3 runs, inputs uploaded and outputs read back, after two warm-up runs;
the dynamic and static runners of one size take turns within each round, and numpy's time for the same model is
given beside them. Every output is checked against the interpreter (or numpy) first. A software adapter on a
shared machine: compare the rows of one run of this script.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import tensorium
from tensorium import nn

WIDTH, HEADS = 64, 4
DYNAMIC = {"x": {0: "batch", 1: "seq"}}


def linear_model() -> tuple[Callable[[Any], Any], Callable[[np.ndarray], np.ndarray], int]:
    """``x @ w`` with a 512 x 512 weight, its numpy form and the input width."""
    w = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)

    def linear(x: Any) -> Any:
        return x @ w

    return linear, lambda x: x @ w, 512


def attention_model() -> tuple[Callable[[Any], Any], Callable[[np.ndarray], np.ndarray], int]:
    """The attention block of the module docstring, its numpy form and the input width."""
    rng = np.random.default_rng(1)
    wq, wk, wv, wo = (rng.standard_normal((WIDTH, WIDTH)).astype(np.float32) * 0.1 for _ in range(4))
    head = WIDTH // HEADS

    def attention(x: Any) -> Any:
        b, s = x.shape[0], x.shape[1]

        def heads(t: Any) -> Any:
            return t.reshape(b, s, HEADS, head).transpose(0, 2, 1, 3)

        q, k, v = heads(x @ wq), heads(x @ wk), heads(x @ wv)
        p = nn.softmax(q @ k.transpose(0, 1, 3, 2) * head**-0.5, axis=-1)
        return nn.layer_norm((p @ v).transpose(0, 2, 1, 3).reshape(b, s, WIDTH) @ wo + x)

    def reference(x: np.ndarray) -> np.ndarray:
        b, s = x.shape[:2]
        q, k, v = (
            (x @ w).reshape(b, s, HEADS, head).transpose(0, 2, 1, 3) for w in (wq, wk, wv)
        )  # fmt: skip
        scores = q @ k.transpose(0, 1, 3, 2) * head**-0.5
        e = np.exp(scores - scores.max(-1, keepdims=True))
        y = (e / e.sum(-1, keepdims=True) @ v).transpose(0, 2, 1, 3).reshape(b, s, WIDTH) @ wo + x
        mean, var = y.mean(-1, keepdims=True), y.var(-1, keepdims=True)
        return (y - mean) / np.sqrt(var + 1e-5)

    return attention, reference, WIDTH


MODELS = {"linear": linear_model, "attention": attention_model}


def _mean_ms(run: Callable[[], object], calls: int = 3) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        run()
    return (time.perf_counter() - start) / calls * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of 3 timed runs per row (5)")
    parser.add_argument("--sizes", default="64,512", help="sequence lengths (64,512)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    rows = []
    for name, build in MODELS.items():
        model, reference, width = build()
        dynamic = tensorium.compile(model, target="webgpu", dynamic=DYNAMIC, cache=False)
        for s in (int(n) for n in args.sizes.split(",")):
            x = np.random.default_rng(s).standard_normal((1, s, width)).astype(np.float32)
            static = tensorium.compile(model, target="webgpu", cache=False)
            want = reference(x)
            runners: dict[str, Callable[[], object]] = {
                "dynamic": functools.partial(dynamic, x),
                "static": functools.partial(static, x),
                "numpy": functools.partial(reference, x),
            }
            for label in ("dynamic", "static"):
                got = np.asarray(runners[label]())
                np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3, err_msg=f"{name} {label} s={s}")
                runners[label]()
            best = {label: float("inf") for label in runners}
            for _ in range(args.rounds):
                for label, run in runners.items():
                    best[label] = min(best[label], _mean_ms(run))
            row = {"model": name, "seq": s, **{f"{label}_ms": round(ms, 2) for label, ms in best.items()}}
            row["dynamic_over_static"] = round(best["dynamic"] / best["static"], 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
