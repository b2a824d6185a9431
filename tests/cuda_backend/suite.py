"""The op suite of the CUDA tests: small graph programs of every kernel family, with inputs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorium.ir import Operation, graph
from tensorium.ir.types import TensorType, f16, f32, i32
from tensorium.passes import PassManager
from tensorium.testing import build_module


@dataclass(frozen=True)
class Case:
    """A program over inputs of ``shapes`` (f32 unless ``dtypes`` says), built by ``body``; ``fused`` runs the
    fuse pass first."""

    shapes: tuple[tuple[int, ...], ...]
    body: Callable[..., Any]
    fused: bool = False
    dtypes: tuple[Any, ...] = ()

    def module(self) -> Operation:
        kinds = self.dtypes or (f32,) * len(self.shapes)
        module = build_module([TensorType(s, k) for s, k in zip(self.shapes, kinds)], self.body)
        if self.fused:
            PassManager.parse("fuse").run(module)
        return module

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        kinds = self.dtypes or (f32,) * len(self.shapes)
        arrays = []
        for shape, kind in zip(self.shapes, kinds):
            if kind == i32:
                arrays.append(rng.integers(-9, 10, shape).astype(np.int32))
            else:
                arrays.append(rng.standard_normal(shape).astype(np.float16 if kind == f16 else np.float32))
        return arrays


SUITE: dict[str, Case] = {
    # elementwise
    "add_broadcast": Case(((5, 37), (37,)), lambda x, y: graph.add(x, y)),
    "gelu_tanh_exp": Case(((3, 70),), lambda x: graph.exp(graph.tanh(graph.gelu(x)))),
    "erf_sigmoid": Case(((129,),), lambda x: graph.mul(graph.erf(x), graph.sigmoid(x))),
    "div_int": Case(((4, 9), (4, 9)), lambda x, y: graph.div(x, y), dtypes=(i32, i32)),
    "f16_mul": Case(((6, 11), (6, 11)), lambda x, y: graph.mul(x, y), dtypes=(f16, f16)),
    "cast_where": Case(
        ((8, 5),), lambda x: graph.cast(graph.where(graph.gt(x, graph.neg(x)), x, graph.abs(x)), dtype=f16)
    ),
    "transpose": Case(((3, 4, 5),), lambda x: graph.transpose(x, perm=[2, 0, 1])),
    "concat": Case(((2, 3), (2, 5)), lambda x, y: graph.concat(x, y, axis=1)),
    # reductions
    "reduce_sum": Case(((3, 4, 37),), lambda x: graph.reduce_sum(x, axes=(1, 2))),
    "reduce_max": Case(((5, 70),), lambda x: graph.reduce_max(x, axes=(-1,), keepdims=True)),
    "reduce_all": Case(((6, 7),), lambda x: graph.reduce_mean(x, axes=(0, 1))),
    "argmax": Case(((4, 9),), lambda x: graph.argmax(x, axis=1)),
    # softmax and norms
    "softmax": Case(((4, 45),), lambda x: graph.softmax(x)),
    "log_softmax": Case(((3, 2, 17),), lambda x: graph.log_softmax(x, axis=-1)),
    "layer_norm": Case(((3, 5, 11), (5, 11), (5, 11)), lambda x, w, b: graph.layer_norm(x, w, b, axis=1)),
    "rms_norm": Case(((4, 33), (33,)), lambda x, w: graph.rms_norm(x, w)),
    # GEMM
    "matmul": Case(((13, 20), (20, 18)), lambda a, b: graph.matmul(a, b)),
    "matmul_transposed_b": Case(((7, 16), (9, 16)), lambda a, b: graph.matmul(a, b, transpose_b=True)),
    "matmul_batched": Case(((2, 5, 8), (2, 8, 3)), lambda a, b: graph.matmul(a, b)),
    "matvec": Case(((1, 64), (64, 10)), lambda a, b: graph.matmul(a, b)),
    "matmul_bias_relu": Case(
        ((12, 16), (16, 24), (24,)), lambda a, b, c: graph.relu(graph.add(graph.matmul(a, b), c)), fused=True
    ),
    # convolution and a small model
    "conv2d": Case(((1, 2, 6, 7), (4, 2, 3, 3), (4,)), lambda x, w, b: graph.conv2d(x, w, b, padding=[1, 1, 1, 1])),
    "mlp_block": Case(
        ((4, 16), (16, 32), (32, 8), (8,)),
        lambda x, w1, w2, g: graph.softmax(graph.rms_norm(graph.matmul(graph.gelu(graph.matmul(x, w1)), w2), g)),
        fused=True,
    ),
}
"""Every kernel family: elementwise (with math the GPU decomposes, integers, f16), reductions, softmax and norms,
GEMM (plain, transposed, batched, matrix-vector, fused epilogue), convolution and a small fused model."""
