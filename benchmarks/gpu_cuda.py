"""Tensorium's CUDA kernels against PyTorch (cuBLAS) and torch.compile (Triton) on one GPU: a table in one run.

    python benchmarks/gpu_cuda.py                     # GEMM 4096^3 f32, f16; a transformer layer; decode GEMVs
    python benchmarks/gpu_cuda.py --quick             # smaller sizes (a smoke run)
    python benchmarks/gpu_cuda.py --json out.json

Needs an NVIDIA GPU, cuda-bindings (``pip install -e ".[cuda]"``) and, for the peers, a CUDA build of
PyTorch; a peer that is missing shows as ``-``. Times are kernel time on the GPU with the inputs already in
device memory (CUDA events; the best of ``--repeat`` runs after a warm-up), for Tensorium through
:meth:`CudaExecutable.time_kernels` and for PyTorch through ``torch.cuda.Event``. The device is named in
the table. Without a GPU the script says why and exits with status 2.

The decode GEMV rows: f32 against torch in f32, and the int4 one (weights quantized per group of 128 and packed
for a warp: ``gpu_qgemv``) against torch's f16 GEMV, the usual baseline of weight-only quantization; Marlin-style
int4 kernels are not among the peers (no such package is installed on the project's machines). The int4 prefill
rows (``tokens`` activation rows: ``gpu_qgemm``, weight tiles dequantized into shared memory) against torch's f16
GEMM (``torch.mm``): once with the default f32 tiles, once with ``mma=true`` (f16 tiles through mma.sync).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorium.backends.cuda.driver import CudaUnavailable, call
from tensorium.backends.cuda.executable import CudaExecutable
from tensorium.ir import Operation, graph
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.types import TensorType, f16, f32
from tensorium.lowering.space import Config, kernel_key
from tensorium.passes import PassManager
from tensorium.targets import parse_target
from tensorium.testing import build_module


@dataclass(frozen=True)
class Workload:
    """A graph program, its inputs' shapes and element type, the FLOPs of one run, and the same in torch."""

    name: str
    shapes: tuple[tuple[int, ...], ...]
    element: Any
    flops: float
    body: Callable[..., Any]
    torch_fn: Callable[..., Any]
    pipeline: str = "fuse"
    configs: dict[str, str] | None = None
    """Kernel configs by graph op name (``quant.matmul_packed``: its kernel at that point), else the defaults."""
    torch_inputs: Callable[[list[np.ndarray]], list[np.ndarray]] | None = None
    """The peers' inputs made from Tensorium's (when the peer computes the same from other arrays)."""

    def module(self) -> Operation:
        module = build_module([TensorType(s, self.element) for s in self.shapes], self.body, check_text=False)
        PassManager.parse(self.pipeline).run(module)
        return module

    def kernel_configs(self, module: Operation) -> dict[str, Config]:
        """The configs of :attr:`configs` keyed by kernel (the graph op of each name in ``module``)."""
        found: dict[str, Config] = {}
        for op in module.walk():
            text = (self.configs or {}).get(op.name)
            if text is not None:
                found[kernel_key(op)] = Config.parse(text)
        return found


def _layer(x: Any, wq: Any, wo: Any, w1: Any, w2: Any, g: Any) -> Any:
    """A transformer layer's dense part: rms-norm, projection, softmax over features, output, MLP with GELU."""
    h = graph.rms_norm(x, g)
    a = graph.softmax(graph.matmul(h, wq), axis=-1)
    x = graph.add(x, graph.matmul(a, wo))
    return graph.add(x, graph.matmul(graph.gelu(graph.matmul(graph.rms_norm(x, g), w1)), w2))


def _torch_layer(x: Any, wq: Any, wo: Any, w1: Any, w2: Any, g: Any) -> Any:
    import torch

    def rms(v: Any) -> Any:
        return v * torch.rsqrt((v * v).mean(-1, keepdim=True) + 1e-5) * g

    x = x + torch.softmax(rms(x) @ wq, dim=-1) @ wo
    return x + torch.nn.functional.gelu(rms(x) @ w1) @ w2


def workloads(quick: bool) -> list[Workload]:
    """The table's rows (smaller sizes with ``quick``)."""
    n = 1024 if quick else 4096
    tokens, d, hidden = (128, 256, 1024) if quick else (2048, 1024, 4096)
    k = 1024 if quick else 4096
    return [
        Workload(f"gemm {n}^3 f32", ((n, n), (n, n)), f32, 2.0 * n**3, graph.matmul, lambda a, b: a @ b),
        Workload(f"gemm {n}^3 f16", ((n, n), (n, n)), f16, 2.0 * n**3, graph.matmul, lambda a, b: a @ b),
        Workload(
            f"transformer layer {tokens}x{d}",
            ((tokens, d), (d, d), (d, d), (d, hidden), (hidden, d), (d,)),
            f32,
            2.0 * tokens * (2 * d * d + 2 * d * hidden),
            _layer,
            _torch_layer,
        ),
        Workload(f"decode gemv 1x{k}x{k} f32", ((1, k), (k, k)), f32, 2.0 * k * k, graph.matmul, lambda a, b: a @ b),
        _int4_gemv(k),
        _int4_gemm(tokens, k),
        _int4_gemm(tokens, k, "gpu_qgemm{bm=128,bn=128,bk=32,tm=4,tn=4,stages=2,mma=true}"),
    ]


def _int4_gemv(k: int) -> Workload:
    """``x @ W.T`` for a constant W of ``k x k`` quantized to 4 bits per group of 128 (the decode GEMV of a
    weight-only int4 model), against torch's f16 GEMV on the same weights."""
    weight = (np.random.default_rng(1).standard_normal((k, k)) / np.sqrt(k)).astype(np.float32)

    def body(x: Any) -> Any:
        w = graph.constant(value=DenseAttr.adopt(weight, TensorType((k, k), f32)))
        return graph.matmul(x, w, transpose_b=True)

    return Workload(
        f"decode gemv 1x{k}x{k} int4 (vs f16)",
        ((1, k),),
        f32,
        2.0 * k * k,
        body,
        lambda x, w: x @ w,
        pipeline="quantize{bits=4,group=128,min-elements=0},fuse,pack-quant-gpu",
        torch_inputs=lambda arrays: [arrays[0].astype(np.float16), weight.T.astype(np.float16)],
    )


def _int4_gemm(tokens: int, k: int, config: str | None = None) -> Workload:
    """``x @ W.T`` for ``tokens`` activation rows and a constant W of ``k x k`` quantized to 4 bits per group of 128
    (a prefill projection of a weight-only int4 model: ``gpu_qgemm``, at ``config`` when given), against torch's
    f16 GEMM on the same weights."""
    weight = (np.random.default_rng(2).standard_normal((k, k)) / np.sqrt(k)).astype(np.float32)

    def body(x: Any) -> Any:
        w = graph.constant(value=DenseAttr.adopt(weight, TensorType((k, k), f32)))
        return graph.matmul(x, w, transpose_b=True)

    return Workload(
        f"prefill gemm {tokens}x{k}x{k} int4{' mma' if config else ''} (vs f16)",
        ((tokens, k),),
        f32,
        2.0 * tokens * k * k,
        body,
        lambda x, w: x @ w,
        pipeline="quantize{bits=4,group=128,min-elements=0},fuse,pack-quant-gpu",
        configs={"quant.matmul_packed": config} if config else None,
        torch_inputs=lambda arrays: [arrays[0].astype(np.float16), weight.T.astype(np.float16)],
    )


def _torch_time(fn: Callable[..., Any], arrays: list[np.ndarray], repeat: int, compiled: bool) -> float | None:
    """Best kernel time of ``fn`` on CUDA tensors, eager or through torch.compile; None without CUDA torch."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    tensors = [torch.from_numpy(a).cuda() for a in arrays]
    run = torch.compile(fn) if compiled else fn
    run(*tensors)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run(*tensors)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1000)
    return best


def device_name() -> str:
    """GPU 0's name, from the driver."""
    device = call("cuDeviceGet", 0)
    raw = call("cuDeviceGetName", 256, device)
    return bytes(raw).split(b"\0", 1)[0].decode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json", help="also write the rows as JSON to this file")
    args = parser.parse_args(argv)
    try:
        call("cuInit", 0)
        device = device_name()
    except CudaUnavailable as e:
        print(f"benchmarks/gpu_cuda.py needs a GPU: {e}", file=sys.stderr)
        return 2
    target = parse_target("cuda")
    rng = np.random.default_rng(0)
    rows = []
    print(f"device: {device} ({target}); kernel time, best of {args.repeat}")
    print(f"{'workload':34} {'tensorium':>12} {'torch':>12} {'torch.compile':>14} {'vs cuBLAS':>10}")
    for w in workloads(args.quick):
        dtype = np.float16 if w.element == f16 else np.float32
        arrays = [(rng.standard_normal(s) / np.sqrt(s[-1])).astype(dtype) for s in w.shapes]
        module = w.module()
        built = CudaExecutable.build(module, target=target, configs=w.kernel_configs(module))
        ours = built.time_kernels(arrays, args.repeat)
        peer_arrays = w.torch_inputs(arrays) if w.torch_inputs is not None else arrays
        eager = _torch_time(w.torch_fn, peer_arrays, args.repeat, compiled=False)
        inductor = _torch_time(w.torch_fn, peer_arrays, args.repeat, compiled=True)

        def cell(seconds: float | None) -> str:
            return "-" if seconds is None else f"{seconds * 1e3:9.3f} ms"

        ratio = "-" if eager is None else f"{eager / ours:9.2f}x"
        print(f"{w.name:34} {cell(ours):>12} {cell(eager):>12} {cell(inductor):>14} {ratio:>10}")
        rows.append(
            {
                "workload": w.name,
                "tensorium_s": ours,
                "torch_s": eager,
                "torch_compile_s": inductor,
                "tensorium_tflops": w.flops / ours / 1e12,
            }
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "target": str(target), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
