"""AWQ's activation scales folded into the op that computes the activation (tensorium/passes/fold_scales.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.core import Operation
from tensorium.ir.dialects import graph
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.dialects.quant.config import QuantConfig
from tensorium.ir.types import TensorType, f32
from tensorium.passes import quantize
from tensorium.passes.quantize import quantize_weights
from tensorium.testing import build_module

K, N = 64, 80
ONLY_THE_LAST = K * N
"""min_elements that quantizes the last [N, K] weight and not a [K, K] one before it."""


def const(array: np.ndarray) -> object:
    return graph.constant(value=DenseAttr.of(array.astype(np.float32)))


def module_of(before: Callable[[object, np.random.Generator], object], seed: int = 0) -> Operation:
    """@main(x) = before(x) @ W^T with W [N, K] a constant (``before`` builds the activation's producer)."""
    rng = np.random.default_rng(seed)
    weight = rng.standard_normal((N, K)).astype(np.float32)

    def body(x: object) -> object:
        return graph.matmul(before(x, rng), const(weight), transpose_b=True)

    return build_module([TensorType((4, K), f32)], body)


def layer_norm(x: object, rng: np.random.Generator) -> object:
    return graph.layer_norm(x, const(rng.random(K) + 0.5), const(rng.standard_normal(K)))


def rms_norm(x: object, rng: np.random.Generator) -> object:
    return graph.rms_norm(x, const(rng.random(K) + 0.5))


def linear_and_bias(x: object, rng: np.random.Generator) -> object:
    h = graph.matmul(x, const(rng.standard_normal((K, K)) * 0.2), transpose_b=True)
    return graph.add(h, const(rng.standard_normal(K)))


def linear_and_gelu(x: object, rng: np.random.Generator) -> object:
    return graph.gelu(graph.matmul(x, const(rng.standard_normal((K, K)) * 0.2), transpose_b=True))


def inputs(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4, K)).astype(np.float32)
    x[:, ::7] *= 20  # channels with large activations: AWQ scales them
    return x


def names(module: Operation) -> list[str]:
    return [op.name for op in func_body(functions(module)[0]).ops]


@pytest.mark.parametrize(
    ("before", "folded"),
    [(layer_norm, True), (rms_norm, True), (linear_and_bias, True), (linear_and_gelu, False)],
)
def test_awq_scales_fold_into_the_producer_or_stay_a_multiply(
    before: Callable[[object, np.random.Generator], object], folded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no ``graph.mul`` where the producer is linear per channel, the module computes what AWQ's explicit
    ``x / s`` form computes (the same codes; equal up to f32 rounding); a GELU in between keeps the multiply."""
    batches = [(inputs(s),) for s in range(1, 9)]
    config = QuantConfig(bits=4, group=32, method="awq", min_elements=ONLY_THE_LAST, calibration=batches)
    x = inputs(0)
    module = module_of(before)
    (floats,) = interp.run(module, [x])
    quantize_weights(module, config)
    assert ("graph.mul" not in names(module)) == folded and names(module).count("quant.matmul") == 1
    (got,) = interp.run(module, [x])
    assert np.abs(got - floats).max() < 0.1 * np.abs(floats).max()
    monkeypatch.setattr(quantize, "fold_channel_scale", lambda *args: False)
    explicit = module_of(before)
    quantize_weights(explicit, config)
    assert "graph.mul" in names(explicit)
    (want,) = interp.run(explicit, [x])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_a_shared_activation_keeps_the_multiply() -> None:
    """A LayerNorm whose output also feeds the residual cannot take one matmul's scales."""
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((K, K)).astype(np.float32)

    def body(x: object) -> object:
        h = graph.layer_norm(x, const(rng.random(K) + 0.5), const(rng.standard_normal(K)))
        return graph.add(h, graph.matmul(h, const(weight), transpose_b=True))

    module = build_module([TensorType((4, K), f32)], body)
    config = QuantConfig(bits=4, group=32, method="awq", min_elements=0, calibration=[(inputs(1),)])
    quantize_weights(module, config)
    assert "graph.mul" in names(module)
