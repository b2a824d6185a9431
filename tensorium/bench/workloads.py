"""The benchmark workloads, defined once: a torch module, seeded float32 inputs and, where it makes sense, numpy.

Each :class:`Workload` builds an :class:`Instance` for a size dict (``full`` for the real run, ``smoke``
for tests): an eval-mode torch module with seeded weights, its float32 inputs, an optional numpy function
computing the same thing with the module's weights, and the FLOP and byte counts the harness turns into
GFLOP/s and GB/s.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

Metric = Literal["gflops", "gbps"]
SEED = 0


@dataclass
class Instance:
    """One workload at one size: the module, its inputs, a numpy twin, and the work it does."""

    module: nn.Module
    inputs: tuple[np.ndarray, ...]
    numpy_fn: Callable[..., np.ndarray] | None
    flops: float
    bytes: float


@dataclass(frozen=True)
class Workload:
    """A named benchmark: how to build it at a size, which rate to report, and its full and smoke sizes."""

    name: str
    describe: Callable[[Mapping[str, int]], str]
    build: Callable[[Mapping[str, int]], Instance]
    metric: Metric
    full: Mapping[str, int]
    smoke: Mapping[str, int]


def _rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def _seeded(module: nn.Module) -> nn.Module:
    """``module`` in eval mode with every parameter and buffer redrawn from the fixed seed.

    Matrices and kernels are uniform in +-1/sqrt(fan_in) (PyTorch's default scale); scales and running
    variances in [0.5, 1.5]; biases and running means in +-0.1.
    """
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
            if not tensor.is_floating_point():
                continue
            noise = torch.rand(tensor.shape, generator=generator)
            if tensor.dim() > 1:
                bound = 1.0 / math.sqrt(tensor[0].numel())
                tensor.copy_((noise * 2 - 1) * bound)
            elif name.endswith(("weight", "running_var")):
                tensor.copy_(noise + 0.5)
            else:
                tensor.copy_((noise * 2 - 1) * 0.1)
    return module.eval()


def _weights(module: nn.Module) -> list[np.ndarray]:
    return [p.detach().numpy() for p in module.parameters()]


def erf(x: np.ndarray) -> np.ndarray:
    """erf for numpy (which has none): Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7."""
    a1, a2, a3, a4, a5, p = 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429, 0.3275911
    s = np.sign(x)
    ax = np.abs(x)
    t = 1.0 / (1.0 + p * ax)
    poly = ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t
    return (s * (1.0 - poly * np.exp(-ax * ax))).astype(x.dtype)


def gelu(x: np.ndarray) -> np.ndarray:
    """The exact (erf) GELU, as ``torch.nn.GELU()`` computes it."""
    return (0.5 * x * (1.0 + erf(x * np.float32(1 / math.sqrt(2))))).astype(x.dtype)


# --- GEMM and GEMV: both operands are inputs ------------------------------------------------------
class MatMul(nn.Module):
    """``a @ b``: a GEMM for two matrices, a GEMV for a matrix and a vector."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def build_gemm(s: Mapping[str, int]) -> Instance:
    """C[m, n] = A[m, k] @ B[k, n]."""
    m, n, k = s["m"], s["n"], s["k"]
    rng = _rng()
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return Instance(MatMul().eval(), (a, b), np.matmul, 2.0 * m * n * k, 4.0 * (m * k + k * n + m * n))


def build_gemv(s: Mapping[str, int]) -> Instance:
    """y[m] = A[m, n] @ x[n]: one pass over A, so its rate is memory bandwidth."""
    m, n = s["m"], s["n"]
    rng = _rng()
    a = rng.standard_normal((m, n), dtype=np.float32)
    x = rng.standard_normal(n, dtype=np.float32)
    return Instance(MatMul().eval(), (a, x), np.matmul, 2.0 * m * n, 4.0 * (m * n + n + m))


# --- MLP ------------------------------------------------------------------------------------------
def build_mlp(s: Mapping[str, int]) -> Instance:
    """Linear-GELU-Linear-GELU-Linear over ``d0 -> d1 -> d2 -> d3`` on a batch."""
    dims = [s["d0"], s["d1"], s["d2"], s["d3"]]
    batch = s["batch"]
    layers: list[nn.Module] = []
    for i, o in itertools.pairwise(dims):
        layers += [nn.Linear(i, o), nn.GELU()]
    module = _seeded(nn.Sequential(*layers[:-1]))
    w1, b1, w2, b2, w3, b3 = (np.ascontiguousarray(w.T) if w.ndim == 2 else w for w in _weights(module))

    def numpy_mlp(x: np.ndarray) -> np.ndarray:
        return gelu(gelu(x @ w1 + b1) @ w2 + b2) @ w3 + b3

    x = _rng().standard_normal((batch, dims[0]), dtype=np.float32)
    pairs = list(itertools.pairwise(dims))
    flops = sum(2.0 * batch * i * o for i, o in pairs)
    traffic = 4.0 * (sum(i * o + o for i, o in pairs) + batch * sum(dims))
    return Instance(module, (x,), numpy_mlp, flops, traffic)


# --- ResNet basic block ---------------------------------------------------------------------------
class BasicBlock(nn.Module):
    """ResNet's basic block: conv3x3-BN-ReLU-conv3x3-BN, plus the identity, then ReLU."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


def build_resnet_block(s: Mapping[str, int]) -> Instance:
    """One basic block on a batch-1 NCHW image."""
    c, hw = s["channels"], s["size"]
    x = _rng().standard_normal((1, c, hw, hw), dtype=np.float32)
    flops = 2 * (2.0 * c * c * 9 * hw * hw)
    traffic = 4.0 * (2 * c * c * 9 + 2 * c * hw * hw)
    return Instance(_seeded(BasicBlock(c)), (x,), None, flops, traffic)


# --- Transformer encoder layer --------------------------------------------------------------------
class EncoderLayer(nn.Module):
    """A post-norm transformer encoder layer (as ``nn.TransformerEncoderLayer`` with GELU, no dropout).

    Attention is written out (matmul, softmax, matmul) so that every runner, the ONNX exporter
    included, sees the same graph rather than PyTorch's fused fast path.
    """

    def __init__(self, d: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.norm1 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ffn)
        self.ff2 = nn.Linear(ffn, d)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        dh = d // self.heads
        qkv = self.qkv(x).reshape(b, s, 3, self.heads, dh).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh)), dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, s, d)
        x = self.norm1(x + self.out(y))
        return self.norm2(x + self.ff2(F.gelu(self.ff1(x))))


def build_encoder(s: Mapping[str, int]) -> Instance:
    """One encoder layer on a batch-1 sequence."""
    d, heads, ffn, seq = s["d"], s["heads"], s["ffn"], s["seq"]
    x = _rng().standard_normal((1, seq, d), dtype=np.float32)
    flops = 2.0 * seq * (3 * d * d + d * d + 2 * d * ffn) + 4.0 * seq * seq * d
    traffic = 4.0 * (4 * d * d + 2 * d * ffn + 2 * seq * d)
    return Instance(_seeded(EncoderLayer(d, heads, ffn)), (x,), None, flops, traffic)


def _fmt(template: str) -> Callable[[Mapping[str, int]], str]:
    return lambda sizes: template.format(**sizes)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in [
        Workload(
            "gemm",
            _fmt("GEMM {m}x{n}x{k}"),
            build_gemm,
            "gflops",
            {"m": 1024, "n": 1024, "k": 1024},
            {"m": 8, "n": 6, "k": 5},
        ),
        Workload("gemv", _fmt("GEMV {m}x{n}"), build_gemv, "gbps", {"m": 4096, "n": 4096}, {"m": 8, "n": 7}),
        Workload(
            "mlp",
            _fmt("MLP {d0}-{d1}-{d2}-{d3} GELU, batch {batch}"),
            build_mlp,
            "gflops",
            {"d0": 1024, "d1": 4096, "d2": 4096, "d3": 1024, "batch": 32},
            {"d0": 8, "d1": 16, "d2": 16, "d3": 4, "batch": 2},
        ),
        Workload(
            "resnet_block",
            _fmt("ResNet basic block {channels}ch {size}x{size}"),
            build_resnet_block,
            "gflops",
            {"channels": 64, "size": 56},
            {"channels": 4, "size": 6},
        ),
        Workload(
            "encoder",
            _fmt("Transformer encoder d={d} h={heads} ffn={ffn} seq={seq}"),
            build_encoder,
            "gflops",
            {"d": 256, "heads": 4, "ffn": 1024, "seq": 128},
            {"d": 16, "heads": 2, "ffn": 32, "seq": 8},
        ),
    ]
}
