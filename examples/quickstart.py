"""Tensorium quick start: build a small model in the graph IR, optimize it, compile it for the CPU, run it.

    python examples/quickstart.py

Builds an attention-plus-MLP block with the op builders, runs the CPU target's whole pass pipeline
(the default ``canonicalize,fold-batch-norm,cse,fold,dce``, then ``layout,fuse-siblings,fuse-attention,
pack-weights,fuse``) with verification after each pass, prints the optimized IR, compiles it for this CPU
(lowering to loop kernels, LLVM, JIT), runs it, and checks it against the reference interpreter on the
original block and against the same computation written directly in numpy.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import tensorium as tm
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.interp import run
from tensorium.ir import InsertionPoint, TensorType, f32, func_body, graph, make_func, make_module, set_results
from tensorium.ir.attributes import DenseAttr
from tensorium.passes import PassManager

SEQ, DIM, HIDDEN = 8, 16, 32


def build_block(rng: np.random.Generator) -> tuple[tm.ir.Operation, dict[str, np.ndarray]]:
    """Single-head self-attention followed by a GELU MLP, each with a residual connection."""
    weights = {
        name: (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
        for name, shape in [
            ("wq", (DIM, DIM)),
            ("wk", (DIM, DIM)),
            ("wv", (DIM, DIM)),
            ("w1", (DIM, HIDDEN)),
            ("w2", (HIDDEN, DIM)),
        ]
    }
    func = make_func("main", [TensorType((SEQ, DIM), f32)], arg_names=["x"])
    (x,) = func_body(func).args

    def const(array: np.ndarray) -> tm.ir.Value:
        return graph.constant(value=DenseAttr.of(array))  # type: ignore[no-any-return]

    with InsertionPoint(func_body(func)):
        h = graph.layer_norm(x, axis=-1)
        q = graph.matmul(h, const(weights["wq"]))
        k = graph.matmul(h, const(weights["wk"]))
        v = graph.matmul(h, const(weights["wv"]))
        scale = graph.mul(const(np.float32(1.0)), const(np.float32(1 / np.sqrt(DIM))))  # folded away
        scores = graph.mul(graph.matmul(q, k, transpose_b=True), scale)
        attn = graph.matmul(graph.softmax(scores, axis=-1), v)
        x1 = graph.add(x, attn)
        h1 = graph.layer_norm(x1, axis=-1)
        mlp = graph.matmul(graph.gelu(graph.matmul(h1, const(weights["w1"]))), const(weights["w2"]))
        out = graph.add(x1, graph.mul(mlp, const(np.ones((), np.float32))))  # x * 1: canonicalized away
    set_results(func, [out])
    return make_module([func]), weights


def numpy_block(x: np.ndarray, w: dict[str, np.ndarray]) -> np.ndarray:
    """The same block written directly in numpy, as the independent reference."""
    from math import erf

    def layer_norm(a: np.ndarray) -> np.ndarray:
        mean = a.mean(-1, keepdims=True)
        var = a.var(-1, keepdims=True)
        return (a - mean) / np.sqrt(var + 1e-5)

    def softmax(a: np.ndarray) -> np.ndarray:
        e = np.exp(a - a.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    gelu = np.vectorize(lambda t: 0.5 * t * (1 + erf(t / np.sqrt(2))))
    h = layer_norm(x)
    q, k, v = h @ w["wq"], h @ w["wk"], h @ w["wv"]
    x1 = x + softmax(q @ k.T / np.sqrt(DIM)) @ v
    return x1 + gelu(layer_norm(x1) @ w["w1"]) @ w["w2"]


def main() -> int:
    rng = np.random.default_rng(0)
    module, weights = build_block(rng)
    tm.verify(module)
    before = sum(1 for op in module.walk() if op.name.startswith("graph."))
    print(f"built a block with {before} graph ops")

    original = tm.print_module(module)
    target = tm.targets.parse_target("cpu")
    print(f"target: {target.describe()}")
    pipeline = tm.api.check_pipeline(None, target)
    pm = PassManager.parse(pipeline, verify_each=True, timing=True)
    pm.run(module)
    top = [op.name for op in func_body(module.regions[0].block.ops[0]).ops if op.name != "graph.constant"]
    print(f"after {pipeline}: {len(top) - 1} ops in @main ({top.count('graph.fused')} fused groups)")
    print(pm.timing_report())
    text = tm.print_module(module)
    print("\n".join(line if len(line) < 140 else line[:137] + "..." for line in text.splitlines()))

    start = time.perf_counter()
    executable = CpuExecutable.build(module, target=target)
    print(
        f"compiled for {target} in {time.perf_counter() - start:.2f} s: {len(executable.steps)} kernels, "
        f"peak intermediate memory {executable.peak_bytes()} bytes"
    )

    x = rng.standard_normal((SEQ, DIM)).astype(np.float32)
    (got,) = executable.run([x])
    (interpreted,) = run(tm.parse_module(original), {"x": x})
    want = numpy_block(x.astype(np.float64), {k: v.astype(np.float64) for k, v in weights.items()})
    print(f"CPU vs interpreter: max abs difference {float(np.max(np.abs(got - interpreted))):.2e}")
    print(f"CPU vs numpy: max abs error {float(np.max(np.abs(got - want))):.2e} over {got.size} outputs")
    if not (np.allclose(got, want, rtol=1e-4, atol=1e-4) and np.allclose(got, interpreted, rtol=1e-4, atol=1e-5)):
        print("MISMATCH", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
