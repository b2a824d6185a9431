"""Tensors over WebGPU's binding size, run in bands on lavapipe: what the binding-size split costs against numpy.

    python benchmarks/webgpu_binding.py                 # the real limit: 128 MiB per binding
    python benchmarks/webgpu_binding.py --small         # small shapes at a 4 KiB binding (seconds; the tests' run)
    python benchmarks/webgpu_binding.py --json out.json

Three workloads, each with a tensor over ``max_storage_buffer_binding_size``: ``log_softmax`` over LM logits [1,
1100, 32000] f32 (134.3 MiB), the transpose of [1100, 32000], and attention, ``softmax(q k^T) v``, of 2 heads over a
sequence of 6000 (the scores 288 MB, over the specification's 256 MiB ``max_buffer_size`` too, 144 MB a head, so
each head is cut again into bands of its rows, and the bands of the scores feed the softmax's and those the
product's: the scores are never joined into one buffer). Each is compiled for ``webgpu`` at that limit, checked
against numpy, then timed: the best of ``--runs`` runs, inputs uploaded and outputs read back, beside numpy's best.
The row also gives the largest tensor of the model, the largest buffer of the plan (joined bands that the next op
reads as they are are never built), the kernels (steps of the plan) and the largest tensor any kernel binds.
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
from tensorium.ir.core import Operation
from tensorium.ir.types import TensorType
from tensorium.lowering.webgpu_limits import storage_bytes

Workload = tuple[str, Callable[..., Any], Callable[..., np.ndarray], list[np.ndarray], str]


def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))  # type: ignore[no-any-return]


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    scores = q @ k.transpose(0, 1, 3, 2)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v  # type: ignore[no-any-return]


def workloads(small: bool, binding: int) -> list[Workload]:
    """The three workloads of the module docstring (``small``: shapes a 4 KiB binding cuts the same ways)."""
    rng = np.random.default_rng(0)
    rows, vocab = (3, 700) if small else (1100, 32000)
    heads, seq, width = (2, 40, 8) if small else (2, 6000, 64)
    logits = rng.standard_normal((1, rows, vocab)).astype(np.float32)
    qkv = [rng.standard_normal((1, heads, seq, width)).astype(np.float32) * 0.3 for _ in range(3)]
    target = f"webgpu:max_storage_buffer_binding_size={binding}"
    return [
        ("log_softmax", lambda x: nn.log_softmax(x, axis=-1), _log_softmax, [logits], target),
        ("transpose", lambda x: x[0].transpose(1, 0), lambda x: np.ascontiguousarray(x[0].T), [logits], target),
        (
            "attention",
            lambda q, k, v: nn.softmax(q @ k.transpose(0, 1, 3, 2), axis=-1) @ v,
            _attention,
            qkv,
            target,
        ),
    ]


def _largest_value(module: Operation) -> int:
    """The bytes of the largest static tensor the compiled graph module defines (before the split)."""
    values = [v for op in module.walk() for v in (*op.operands, *op.results)]
    return max(storage_bytes(v.type) for v in values if isinstance(v.type, TensorType) and v.type.is_static)


def _best(run: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def measure(workload: Workload, runs: int, binding: int) -> dict[str, Any]:
    """One workload's row: compiled at its target, checked against numpy, timed beside it."""
    name, model, reference, inputs, target = workload
    compiled = tensorium.compile(model, target=target, cache=False)
    got = np.asarray(compiled(*inputs))
    want = reference(*inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=name)
    executable = compiled.artifact.executable  # type: ignore[union-attr]
    bound = [
        storage_bytes(executable.buffers[b])
        for step in executable.steps
        if executable.shaders[step.kernel].pieces is None
        for b in (*step.inputs, *step.outputs)
    ]
    assert max(bound) <= binding, (name, max(bound))
    return {
        "workload": name,
        "largest_tensor_bytes": _largest_value(compiled.artifact.module),  # type: ignore[union-attr]
        "largest_buffer_bytes": max(storage_bytes(t) for t in executable.buffers),
        "kernels": len(executable.steps),
        "largest_bound_bytes": max(bound),
        "tensorium_ms": round(_best(functools.partial(compiled, *inputs), runs), 1),
        "numpy_ms": round(_best(functools.partial(reference, *inputs), runs), 2),
        "max_error": float(np.abs(got - want).max()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="small shapes at a 4 KiB binding size")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per runner (3)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    binding = 4096 if args.small else 128 * 1024 * 1024
    rows = []
    for workload in workloads(args.small, binding):
        rows.append(measure(workload, args.runs, binding))
        print(json.dumps(rows[-1]), flush=True)  # progress: a workload at the real limit takes seconds
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
