"""Tensorium's CUDA kernels against PyTorch (cuBLAS) and torch.compile (Triton) on one GPU: a table in one run.

    python benchmarks/gpu_cuda.py                     # the whole table of issue 17's point 6 (below)
    python benchmarks/gpu_cuda.py --quick             # smaller sizes (a smoke run)
    python benchmarks/gpu_cuda.py --json out.json
    python benchmarks/gpu_cuda.py --dry-run           # no GPU needed: every row's kernels to PTX, through ptxas

One run first checks the op suite (``tests/cuda_backend/suite.py``) and the models of :func:`models` on the GPU
against the graph interpreter (a failing one is named and makes the exit status 1), then times the rows: GEMM
4096^3 f32 and f16, a transformer layer, the decode GEMV in f32 and int4 (against f16), and the int4 prefill GEMM
(f32 tiles, mma tiles, and rows known only at run time).

Needs an NVIDIA GPU, cuda-bindings (``pip install -e ".[cuda]"``) and, for the peers, a CUDA build of
PyTorch; a peer that is missing shows as ``-``. Without a GPU the script says why and exits with status 2;
``--dry-run`` then compiles every row's kernels and every check's program for ``--arch`` (sm_90 by default), runs
ptxas on them and prints the plan: each kernel's config, grid, block, shared bytes, registers and spill bytes.

Times are kernel time on the GPU with the inputs already in device memory (CUDA events; the best of ``--repeat``
runs after a warm-up), for Tensorium through :meth:`CudaExecutable.time_kernels` and for PyTorch through
``torch.cuda.Event``. The device is named in the table.

The decode GEMV rows: f32 against torch in f32, and the int4 one (weights quantized per group of 128 and packed
for a warp: ``gpu_qgemv``) against torch's f16 GEMV, the usual baseline of weight-only quantization; Marlin-style
int4 kernels are not among the peers (no such package is installed on the project's machines). The int4 prefill
rows (``tokens`` activation rows: ``gpu_qgemm``, weight tiles dequantized into shared memory) against torch's f16
GEMM (``torch.mm``): once with the default f32 tiles, once with ``mma=true`` (f16 tiles through mma.sync), once
compiled for a row count known only at run time (``row_blocks`` blocks along grid y loop over the row tiles).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tensorium.api import check_pipeline
from tensorium.backends import interp
from tensorium.backends.cuda.driver import CudaUnavailable, call
from tensorium.backends.cuda.executable import CudaExecutable
from tensorium.backends.cuda.ptx import ptxas_path, resource_usage
from tensorium.ir import Operation, Value, graph
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.types import Sym, TensorType, f16, f32
from tensorium.lowering.space import Config, kernel_key
from tensorium.passes import PassManager
from tensorium.passes.rtn import round_to_nearest
from tensorium.runtime.memory import nbytes
from tensorium.targets import Target, parse_target
from tensorium.testing import build_module

ROOT = Path(__file__).resolve().parents[1]


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
    reference_inputs: Callable[[list[np.ndarray]], list[np.ndarray]] | None = None
    """The inputs on which :attr:`torch_fn` computes what Tensorium's kernels must give (a quantized weight's
    dequantized values), when they differ from the peers'."""
    run_time_rows: bool = False
    """Whether the first input's first dim is symbolic in the program (the kernels take its size at run time)."""

    def module(self) -> Operation:
        """The program after :attr:`pipeline` (the first input's rows symbolic with :attr:`run_time_rows`)."""
        types = [TensorType(s, self.element) for s in self.shapes]
        if self.run_time_rows:
            types[0] = TensorType((Sym("s"), *self.shapes[0][1:]), self.element)
        module = build_module(types, self.body, check_text=False)
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


SWEEPS: dict[str, tuple[str, ...]] = {
    "gemm 4096^3 f16": (
        "gpu_gemm{bm=128,bn=128,bk=32,tm=4,tn=4,stages=2,mma=true,vector=true,async_copy=true,unroll=false}",
        "gpu_gemm{bm=128,bn=128,bk=32,tm=2,tn=8,stages=2,mma=true,vector=true,async_copy=true,unroll=false}",
        "gpu_gemm{bm=128,bn=128,bk=16,tm=4,tn=4,stages=2,mma=true,vector=true,async_copy=true,unroll=false}",
        "gpu_gemm{bm=64,bn=128,bk=32,tm=2,tn=4,stages=2,mma=true,vector=true,async_copy=true,unroll=false}",
        "gpu_gemm{bm=128,bn=64,bk=32,tm=4,tn=2,stages=2,mma=true,vector=true,async_copy=true,unroll=false}",
        "gpu_gemm{bm=64,bn=64,bk=32,tm=2,tn=4,stages=2,mma=true,vector=true,async_copy=true,unroll=false}",
    ),
    "decode gemv 1x4096x4096 f32": (
        "gpu_gemv{warps=8,unroll=4}",
        "gpu_gemv{warps=32,unroll=4}",
        "gpu_gemv{warps=16,unroll=8}",
        "gpu_gemv{warps=16,unroll=1}",
    ),
    "gemm 4096^3 f32": (
        "gpu_gemm{bm=64,bn=64,bk=16,tm=4,tn=4,stages=2,vector=true,async_copy=true,unroll=false}",
        "gpu_gemm{bm=128,bn=128,bk=8,tm=8,tn=8,stages=2,vector=true,async_copy=true,unroll=true}",
        "gpu_gemm{bm=128,bn=128,bk=16,tm=8,tn=8,stages=2,vector=true,async_copy=true,unroll=true}",
        "gpu_gemm{bm=128,bn=64,bk=16,tm=8,tn=4,stages=2,vector=true,async_copy=true,unroll=true}",
        "gpu_gemm{bm=64,bn=128,bk=16,tm=4,tn=8,stages=2,vector=true,async_copy=true,unroll=true}",
        "gpu_gemm{bm=64,bn=64,bk=32,tm=4,tn=4,stages=2,vector=true,async_copy=true,unroll=true}",
    ),
}
"""Other points of the GEMM rows' spaces that ``--sweep`` times beside the default (graph op: ``graph.matmul``)."""


def sweep(target: Target, quick: bool, repeat: int) -> list[dict[str, Any]]:
    """Every point of :data:`SWEEPS` timed on the GPU and checked against torch, beside its row's default."""
    rng = np.random.default_rng(0)
    found = []
    for w in workloads(quick):
        for point in SWEEPS.get(w.name, ()):
            variant = Workload(**{**w.__dict__, "configs": {"graph.matmul": point}})
            try:
                row = _time_row(variant, target, rng, repeat, peers=False)
            except Exception as e:  # an illegal or failing point is reported, the sweep goes on
                print(f"  sweep {w.name} {point}: {type(e).__name__}: {str(e).strip()[:160]}")
                continue
            print(
                f"  sweep {w.name:20} {point:90} {row['tensorium_s'] * 1e3:8.3f} ms "
                f"{row['tensorium_tflops']:6.1f} TFLOP/s {row['tensorium_gbps']:5.0f} GB/s "
                f"rel.err {row['max_rel_error']}"
            )
            found.append({**row, "config": point})
    return found


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
        Workload(
            f"decode gemv 1x{k}x{k} f32, W^T",
            ((1, k), (k, k)),
            f32,
            2.0 * k * k,
            lambda a, b: graph.matmul(a, b, transpose_b=True),
            lambda a, b: a @ b.T,
        ),
        _int4_gemv(k),
        _int4_gemm(tokens, k),
        _int4_gemm(tokens, k, "gpu_qgemm{bm=128,bn=128,bk=32,tm=4,tn=4,stages=2,mma=true}"),
        _int4_gemm(tokens, k, run_time_rows=True),
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
        reference_inputs=lambda arrays: [arrays[0], _int4_dequantized(weight).T.copy()],
    )


def _int4_dequantized(weight: np.ndarray) -> np.ndarray:
    """``weight`` as the quantize pass of the int4 rows leaves it (RTN, 4 bits per group of 128, unsigned codes with
    a float zero point), back in f32: what the kernels multiply by."""
    return round_to_nearest(weight, 4, 128, signed=False).dequantized().astype(np.float32)


def _int4_gemm(tokens: int, k: int, config: str | None = None, run_time_rows: bool = False) -> Workload:
    """``x @ W.T`` for ``tokens`` activation rows and a constant W of ``k x k`` quantized to 4 bits per group of 128
    (a prefill projection of a weight-only int4 model: ``gpu_qgemm``, at ``config`` when given; with
    ``run_time_rows``, compiled for any number of rows), against torch's f16 GEMM on the same weights."""
    weight = (np.random.default_rng(2).standard_normal((k, k)) / np.sqrt(k)).astype(np.float32)

    def body(x: Any) -> Any:
        w = graph.constant(value=DenseAttr.adopt(weight, TensorType((k, k), f32)))
        return graph.matmul(x, w, transpose_b=True)

    rows = "s" if run_time_rows else str(tokens)
    return Workload(
        f"prefill gemm {rows}x{k}x{k} int4{' mma' if config else ''} (vs f16)",
        ((tokens, k),),
        f32,
        2.0 * tokens * k * k,
        body,
        lambda x, w: x @ w,
        pipeline="quantize{bits=4,group=128,min-elements=0},fuse,pack-quant-gpu",
        configs={"quant.matmul_packed": config} if config else None,
        torch_inputs=lambda arrays: [arrays[0].astype(np.float16), weight.T.astype(np.float16)],
        reference_inputs=lambda arrays: [arrays[0], _int4_dequantized(weight).T.copy()],
        run_time_rows=run_time_rows,
    )


@dataclass(frozen=True)
class Check:
    """A program checked on the GPU against the graph interpreter: the graph-level module (before the cuda
    target's pipeline) and its inputs."""

    name: str
    module: Callable[[], Operation]
    inputs: list[np.ndarray]
    rtol: float = 1e-4
    atol: float = 1e-5


def op_suite() -> list[Check]:
    """The op suite of the CUDA tests (``tests/cuda_backend/suite.py``), one check per program."""
    path = ROOT / "tests" / "cuda_backend" / "suite.py"
    spec = importlib.util.spec_from_file_location("cuda_suite", path)
    assert spec is not None and spec.loader is not None
    suite = importlib.util.module_from_spec(spec)
    sys.modules["cuda_suite"] = suite  # dataclasses look their module up there
    spec.loader.exec_module(suite)
    checks = []
    for name, case in sorted(suite.SUITE.items()):
        half = any(a.dtype == np.float16 for a in case.inputs())
        checks.append(Check(f"op {name}", case.module, case.inputs(), rtol=1e-3 if half else 1e-4))
    return checks


def models() -> list[Check]:
    """The models of the CUDA tests: the ONNX CNN example (with the onnx extra), a torch MLP (with torch), a 4-bit
    MLP at one token (``gpu_qgemv``) and a 4-bit projection at 77 rows compiled for any number (``gpu_qgemm``)."""
    rng = np.random.default_rng(0)
    checks = []
    if importlib.util.find_spec("onnx") is not None:
        from tensorium.frontend.onnx_import import import_onnx

        image = rng.random((1, 1, 8, 8), np.float32)
        checks.append(
            Check("model tiny_cnn.onnx", lambda: import_onnx(ROOT / "examples" / "tiny_cnn.onnx").module, [image])
        )
    if importlib.util.find_spec("torch") is not None:
        checks.append(_torch_mlp())
    w1, w2 = rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((96, 40)).astype(np.float32)

    def mlp(x: Value) -> Value:
        hidden = graph.gelu(graph.matmul(x, graph.constant(value=DenseAttr.adopt(w1, TensorType((64, 96), f32)))))
        return graph.matmul(hidden, graph.constant(value=DenseAttr.adopt(w2, TensorType((96, 40), f32))))  # type: ignore[no-any-return]

    def quantized_mlp() -> Operation:
        module = build_module([TensorType((1, 64), f32)], mlp)
        PassManager.parse("quantize{bits=4,group=32,min-elements=0}").run(module)
        return module

    def projection(x: Value) -> Value:
        w = graph.constant(value=DenseAttr.adopt(w1.T.copy(), TensorType((96, 64), f32)))
        return graph.matmul(x, w, transpose_b=True)  # type: ignore[no-any-return]

    def quantized_prefill() -> Operation:
        module = build_module([TensorType((Sym("s"), 64), f32)], projection)
        PassManager.parse("quantize{bits=4,group=32,min-elements=0}").run(module)
        return module

    x1, x77 = rng.standard_normal((1, 64)).astype(np.float32), rng.standard_normal((77, 64)).astype(np.float32)
    checks.append(Check("model 4-bit mlp (decode)", quantized_mlp, [x1], atol=1e-4))
    checks.append(Check("model 4-bit projection (s=77 rows)", quantized_prefill, [x77], atol=1e-4))
    return checks


def _torch_mlp() -> Check:
    import torch

    from tensorium.frontend.pytorch import import_module

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 4), torch.nn.Softmax(-1)
    ).eval()
    x = torch.randn(3, 16)
    return Check("model torch mlp", lambda: import_module(model, (x,)).module, [x.numpy()])


def _check_build(check: Check, target: Target) -> tuple[CudaExecutable, list[np.ndarray]]:
    """``check``'s program after the cuda target's pipeline, built for ``target``; the interpreter's outputs."""
    module = check.module()
    want = interp.run(module, check.inputs)
    PassManager.parse(check_pipeline(None, target)).run(module)
    return CudaExecutable.build(module, target=target), want


def run_checks(target: Target) -> list[str]:
    """Every check of :func:`op_suite` and :func:`models` on GPU 0; the names of those that fail (with why)."""
    failed = []
    checks = [*op_suite(), *models()]
    for check in checks:
        try:
            built, want = _check_build(check, target)
            for got, expected in zip(built.run(check.inputs), want):
                np.testing.assert_allclose(got, expected, rtol=check.rtol, atol=check.atol)
        except Exception as e:  # a failing check is reported by name, the others still run
            failed.append(
                f"{check.name}: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
            )
    print(f"op suite and models on the GPU against the interpreter: {len(checks) - len(failed)} of {len(checks)} match")
    for line in failed:
        print(f"  FAILED {line}")
    return failed


ROW_TOLERANCE = 2e-2
"""Largest ``max|ours - torch| / max|torch|`` a timed row may show (f16 inputs, K up to 4096, int4 dequantized
differently by the peer): above it the row counts as failed."""


def _time_row(w: Workload, target: Target, rng: np.random.Generator, repeat: int, peers: bool = True) -> dict[str, Any]:
    """One row of the table: ``w``'s kernels timed on the GPU, the peers timed, and our outputs checked against
    eager torch's on the same inputs (``max_rel_error``; None without CUDA torch)."""
    dtype = np.float16 if w.element == f16 else np.float32
    arrays = [(rng.standard_normal(s) / np.sqrt(s[-1])).astype(dtype) for s in w.shapes]
    module = w.module()
    built = CudaExecutable.build(module, target=target, configs=w.kernel_configs(module))
    ours = built.time_kernels(arrays, repeat)
    peer_arrays = w.torch_inputs(arrays) if w.torch_inputs is not None else arrays
    eager = _torch_time(w.torch_fn, peer_arrays, repeat, compiled=False) if peers else None
    inductor = _torch_time(w.torch_fn, peer_arrays, repeat, compiled=True) if peers else None
    reference = w.reference_inputs(arrays) if w.reference_inputs is not None else arrays
    return {
        "workload": w.name,
        "tensorium_s": ours,
        "torch_s": eager,
        "torch_compile_s": inductor,
        "tensorium_tflops": w.flops / ours / 1e12,
        "tensorium_gbps": _operand_bytes(module) / ours / 1e9,
        "max_rel_error": _relative_error(built.run(arrays)[0], w.torch_fn, reference),
    }


def _operand_bytes(module: Operation) -> int:
    """Bytes of ``module``'s inputs, results and constants (packed weights included): what a kernel bound by memory
    must move at least once."""
    values: list[Value] = []
    for op in module.walk():
        if op.name in ("graph.constant", "quant.constant"):
            values.extend(op.results)
        elif op.name == "func.func":
            values.extend(op.regions[0].block.args)
        elif op.name == "func.return":
            values.extend(op.operands)
    return sum(nbytes(v.type, {}) for v in values if isinstance(v.type, TensorType) and v.type.is_static)


def _relative_error(got: np.ndarray, fn: Callable[..., Any], arrays: list[np.ndarray]) -> float | None:
    """``max|got - fn(arrays)| / max|fn(arrays)|`` with ``fn`` run by torch on the GPU; None without CUDA torch."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    want = fn(*[torch.from_numpy(a).cuda() for a in arrays]).float().cpu().numpy()
    got = np.asarray(got, np.float32).reshape(want.shape)
    return float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-30))


def _torch_time(
    fn: Callable[..., Any], arrays: list[np.ndarray], repeat: int, compiled: bool, tensors: list[Any] | None = None
) -> float | None:
    """Best kernel time of ``fn`` on CUDA tensors, eager or through torch.compile; None without CUDA torch."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    tensors = tensors if tensors is not None else [torch.from_numpy(a).cuda() for a in arrays]
    run = torch.compile(fn) if compiled else fn
    try:
        run(*tensors)
    except Exception as e:  # a peer that fails (Triton missing, say) shows as '-' with the reason
        print(f"  ({'torch.compile' if compiled else 'torch'} failed: {type(e).__name__}: {str(e)[:200]})")
        return None
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


def copy_bandwidth(repeat: int) -> float | None:
    """Bytes per second (read and written) of a 1 GiB device-to-device copy through torch, the best of ``repeat``:
    the memory system's practical limit, which the GEMV rows are measured against; None without CUDA torch."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    source = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    target = torch.empty_like(source)
    seconds = _torch_time(lambda a, b: b.copy_(a), [], repeat, compiled=False, tensors=[source, target])
    return None if seconds is None else 2 * source.numel() * 4 / seconds


def device_name() -> str:
    """GPU 0's name, from the driver."""
    device = call("cuDeviceGet", 0)
    raw = call("cuDeviceGetName", 256, device)
    return bytes(raw).split(b"\0", 1)[0].decode()


def _configs(loop_ir: str) -> dict[str, str]:
    """Each kernel's config (``-`` for kernels without knobs) from the loop IR of a built executable."""
    found = {}
    for match in re.finditer(r"func\.func @(\w+)\((.*)$", loop_ir, re.MULTILINE):
        config = re.search(r'config = "([^"]*)"', match.group(2))
        found[match.group(1)] = config.group(1) if config else "-"
    return found


def dry_run(quick: bool, arch: str, checks: bool = True) -> list[dict[str, Any]]:
    """Every row's kernels compiled for ``arch`` without a GPU, through ptxas where installed, and printed: each
    kernel's config, grid, block, shared bytes, registers and spills; with ``checks``, every program of the op suite
    and the models too (PTX and ptxas). The rows' kernels as dicts (what ``--json`` writes)."""
    target = parse_target(f"cuda:{arch}")
    ptxas = ptxas_path() is not None
    print(f"dry run for {target}: no GPU used; ptxas {'checks every kernel' if ptxas else 'is not installed'}")
    kernels = []
    for w in workloads(quick):
        module = w.module()
        built = CudaExecutable.build(module, target=target, configs=w.kernel_configs(module))
        usage = resource_usage(built.ptx.ptx, target.cpu) if ptxas else {}
        configs = _configs(built.loop_ir)
        print(f"{w.name}:")
        for name, launch in built.ptx.launches.items():
            used = usage.get(name)
            resources = (
                "-" if used is None else f"{used.registers} registers, spills {used.spill_stores}/{used.spill_loads} B"
            )
            print(
                f"  {name:24} {configs.get(name, '-'):58} grid {launch.grid} block {launch.block} "
                f"shared {launch.shared_bytes} B; {resources}"
            )
            kernels.append(
                {
                    "workload": w.name,
                    "kernel": name,
                    "config": configs.get(name, "-"),
                    **launch.to_json(),
                    "registers": None if used is None else used.registers,
                    "spill_bytes": None if used is None else used.spill_stores + used.spill_loads,
                }
            )
    if checks:
        programs = [*op_suite(), *models()]
        for check in programs:
            _check_build(check, target)  # ptxas runs inside the build where it is installed
        print(f"op suite and models: {len(programs)} programs compiled for {target}{' and assembled' if ptxas else ''}")
    return kernels


def main(argv: list[str] | None = None) -> int:
    """The command line of the module docstring; the exit status (2 without a GPU unless ``--dry-run``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json", help="also write the rows as JSON to this file")
    parser.add_argument("--dry-run", action="store_true", help="no GPU: compile every row to PTX, run ptxas, print")
    parser.add_argument("--arch", default="sm_90", help="the architecture of --dry-run (default sm_90)")
    parser.add_argument("--no-checks", action="store_true", help="skip the op suite and models")
    parser.add_argument("--sweep", action="store_true", help="also time other GEMM tiles (SWEEPS) beside the defaults")
    args = parser.parse_args(argv)
    if args.dry_run:
        kernels = dry_run(args.quick, args.arch, not args.no_checks)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"dry_run": True, "arch": args.arch, "kernels": kernels}, f, indent=1)
        return 0
    try:
        call("cuInit", 0)
        device = device_name()
    except CudaUnavailable as e:
        print(f"benchmarks/gpu_cuda.py needs a GPU: {e} (--dry-run compiles every row without one)", file=sys.stderr)
        return 2
    target = parse_target("cuda")
    failed: list[str] = [] if args.no_checks else run_checks(target)
    rng = np.random.default_rng(0)
    rows = []
    print(f"device: {device} ({target}); kernel time, best of {args.repeat}")
    bandwidth = copy_bandwidth(args.repeat)
    if bandwidth is not None:
        print(
            f"memory probe: a 1 GiB device-to-device copy through torch moves {bandwidth / 1e9:.0f} GB/s (read + write)"
        )
    header = f"{'workload':34} {'tensorium':>12} {'torch':>12} {'torch.compile':>14} {'vs cuBLAS':>10} {'rel.err':>9}"
    print(f"{header} {'TFLOP/s':>8} {'GB/s':>6}")
    for w in workloads(args.quick):
        try:
            row = _time_row(w, target, rng, args.repeat)
        except Exception as e:  # a row that fails is named in the table and the JSON; the others still run
            why = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
            print(f"{w.name:34} FAILED {why}")
            failed.append(f"row {w.name}: {why}")
            rows.append({"workload": w.name, "error": why})
            continue
        rows.append(row)

        def cell(seconds: float | None) -> str:
            return "-" if seconds is None else f"{seconds * 1e3:9.3f} ms"

        eager, ours = row["torch_s"], row["tensorium_s"]
        ratio = "-" if eager is None else f"{eager / ours:9.2f}x"
        error = "-" if row["max_rel_error"] is None else f"{row['max_rel_error']:.1e}"
        inductor = cell(row["torch_compile_s"])
        rates = f"{row['tensorium_tflops']:8.1f} {row['tensorium_gbps']:6.0f}"
        print(f"{w.name:34} {cell(ours):>12} {cell(eager):>12} {inductor:>14} {ratio:>10} {error:>9} {rates}")
        if row["max_rel_error"] is not None and row["max_rel_error"] > ROW_TOLERANCE:
            failed.append(f"row {w.name}: max relative error {row['max_rel_error']:.2e} against torch")
    swept = sweep(target, args.quick, args.repeat) if args.sweep else []
    if args.json:
        with open(args.json, "w") as f:
            document = {"device": device, "target": str(target), "rows": rows, "sweep": swept, "failed_checks": failed}
            json.dump(document, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
