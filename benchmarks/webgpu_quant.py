"""k-bit weights on WebGPU: an MLP with f32 weights against the same MLP with k-bit weights unpacked in the
shaders, through wgpu-py on lavapipe (a CPU), per packing layout.

    python benchmarks/webgpu_quant.py                  # 20 timed runs each
    python benchmarks/webgpu_quant.py --runs 50 --bits 3 --json out.json

The MLP is 32x256 -> 512 -> 256 with ReLU and softmax (the browser benchmark's), its weights quantized with
round to nearest in groups of 32 (``quantize=QuantConfig(bits, 32)``). Times are the mean of ``--runs`` runs
after three warm-up runs, each to its outputs; weight bytes are what the GPU holds for the two matrices.
A software adapter on a shared machine: compare the rows of one run of this script.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import tensorium
from tensorium import nn
from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.ir.dialects.quant.config import QuantConfig
from tensorium.lowering.webgpu_limits import storage_bytes
from tensorium.lowering.webgpu_quant import SHADER_LAYOUTS
from tensorium.runtime.artifact import externalized_module


def _mlp() -> tuple[object, np.ndarray]:
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((256, 512)) / 16).astype(np.float32)
    w2 = (rng.standard_normal((512, 256)) / 22).astype(np.float32)

    def mlp(x: object) -> object:
        return nn.softmax(nn.relu(x @ w1) @ w2, axis=-1)  # type: ignore[operator]

    return mlp, rng.standard_normal((32, 256)).astype(np.float32)


def _time(executable: WebGPUExecutable, inputs: list[np.ndarray], runs: int) -> float:
    for _ in range(3):
        executable.run(inputs)
    start = time.perf_counter()
    for _ in range(runs):
        executable.run(inputs)
    return (time.perf_counter() - start) / runs * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="timed runs per row (20)")
    parser.add_argument("--bits", type=int, default=4, help="bits per weight (4)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    model, x = _mlp()
    rows = []
    configs: list[tuple[str, QuantConfig | None, str]] = [("f32", None, "stream")]
    configs += [(f"w{args.bits}g32 {layout}", QuantConfig(args.bits, 32), layout) for layout in SHADER_LAYOUTS]
    reference = None
    for label, config, layout in configs:
        compiled = tensorium.compile(model, target="interp", quantize=config, cache=False)
        want = compiled(x)
        module, params = externalized_module(compiled.artifact)
        inputs = [x, *(a for _, a in params)]
        executable = WebGPUExecutable.build(module, quant_layout=layout)
        got = executable.run(inputs)[0]
        held = {*executable.inputs[1:], *(b for b, _ in executable.constants)}
        weights = sum(storage_bytes(t) for b, t in enumerate(executable.buffers) if b in held)
        reference = want if reference is None else reference
        row = {
            "model": label,
            "ms_per_run": round(_time(executable, inputs, args.runs), 2),
            "weight_bytes": weights,
            "max_abs_diff_vs_interpreter": float(np.abs(got - want).max()),
            "max_abs_diff_vs_f32": float(np.abs(want - reference).max()),
        }
        rows.append(row)
        print(json.dumps(row))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
