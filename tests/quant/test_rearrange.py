"""Outlier-channel rearrangement (``rearrange=True``): channels sorted by magnitude before group quantization, the
permutation folded into the ops that compute the activation (tensorium/passes/fold_scales.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.errors import PassError
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.core import Operation
from tensorium.ir.dialects import graph
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.dialects.quant.config import QuantConfig
from tensorium.ir.types import TensorType, f32
from tensorium.passes import fold_scales
from tensorium.passes.quantize import quantize_weights, rearrangement
from tensorium.passes.rtn import round_to_nearest
from tensorium.testing import build_module

K, N = 64, 80
ONLY_THE_LAST = K * N
"""min_elements that quantizes the last [N, K] weight and not a [K, K] one before it."""


def outlier_weight(rng: np.random.Generator) -> np.ndarray:
    """A [N, K] weight with one outlier input channel in each group of 16: channels with a large offset in every
    row (as trained transformers have), which widen the range of whichever group holds them."""
    weight = rng.standard_normal((N, K)).astype(np.float32)
    weight[:, 5::16] += 25
    return weight


def const(array: np.ndarray) -> object:
    return graph.constant(value=DenseAttr.of(array.astype(np.float32)))


def ffn(norm: bool) -> Operation:
    """@main(x) = gelu(x @ W1^T + b) @ W2^T, or layer_norm(x) @ W2^T with ``norm``."""
    rng = np.random.default_rng(0)
    w1, b, w2 = rng.standard_normal((K, K)) * 0.3, rng.standard_normal(K), outlier_weight(rng)

    def body(x: object) -> object:
        if norm:
            h = graph.layer_norm(x, const(rng.random(K) + 0.5), const(rng.standard_normal(K)))
        else:
            h = graph.gelu(graph.add(graph.matmul(x, const(w1), transpose_b=True), const(b)))
        return graph.matmul(h, const(w2), transpose_b=True)

    return build_module([TensorType((3, K), f32)], body)


def names(module: Operation) -> list[str]:
    return [op.name for op in func_body(functions(module)[0]).ops]


def test_rearranged_groups_quantize_outliers_together() -> None:
    """Sorted by magnitude, the 4 outlier channels fill one group of 16 and the other groups keep a narrow
    range: the weight error halves at 3 bits."""
    weight = outlier_weight(np.random.default_rng(1))
    perm = rearrangement(weight)
    assert sorted(perm[:4].tolist()) == [5, 21, 37, 53] and sorted(perm.tolist()) == list(range(K))
    plain = np.linalg.norm(round_to_nearest(weight, 3, 16, False).dequantized() - weight)
    permuted = weight[:, perm]
    sorted_error = np.linalg.norm(round_to_nearest(permuted, 3, 16, False).dequantized() - permuted)
    assert sorted_error < plain / 1.5


@pytest.mark.parametrize(("norm", "gather"), [(False, False), (True, True)])
def test_the_permutation_folds_into_the_producer_or_is_a_gather(
    norm: bool, gather: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through GELU and the bias into W1's rows (no op added), or a gather after a LayerNorm; either way the
    module computes what the gather form computes, closer to float than without rearranging."""
    x = np.random.default_rng(2).standard_normal((3, K)).astype(np.float32)
    (floats,) = interp.run(ffn(norm), [x])
    results = {}
    for rearrange in (False, True):
        module = ffn(norm)
        quantize_weights(module, QuantConfig(bits=3, group=16, min_elements=ONLY_THE_LAST, rearrange=rearrange))
        assert names(module).count("quant.matmul") == 1
        assert ("graph.gather" in names(module)) == (rearrange and gather)
        (results[rearrange],) = interp.run(module, [x])
    assert np.linalg.norm(results[True] - floats) < 0.8 * np.linalg.norm(results[False] - floats)
    monkeypatch.setattr(fold_scales, "permutation_plan", lambda *args: None)
    module = ffn(norm)
    quantize_weights(module, QuantConfig(bits=3, group=16, min_elements=ONLY_THE_LAST, rearrange=True))
    assert "graph.gather" in names(module)
    (want,) = interp.run(module, [x])
    np.testing.assert_allclose(results[True], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_rearrange_needs_groups() -> None:
    with pytest.raises(PassError, match=re.escape("quantize: rearrange needs groups (group > 0)")):
        QuantConfig(group=0, rearrange=True)
    assert QuantConfig(rearrange=True).pass_text() == "quantize{rearrange=true}"


def test_compile_with_rearrange_and_sensitivity_end_to_end() -> None:
    """tensorium.compile(torch MLP, quantize=QuantConfig(rearrange=True, bits_by_sensitivity=8)) on the CPU: no
    gather (the permutation folds through GELU into the first Linear), close to float, and equal to the
    interpreter's result of the same quantized module within the int path's activation rounding."""
    torch = pytest.importorskip("torch")
    import tensorium as tm

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.GELU(), torch.nn.Linear(96, 64)).eval()
    x = torch.randn(3, 64)
    config = QuantConfig(bits=4, group=32, min_elements=0, rearrange=True, bits_by_sensitivity=8)
    compiled = tm.compile(model, quantize=config, cache=False)
    reference = tm.compile(model, quantize=config, target="interp", cache=False)
    floats = model(x).detach().numpy()
    got, want = compiled(x).numpy(), reference(x).numpy()
    assert np.abs(want - floats).max() < 0.1 * np.abs(floats).max()
    assert np.abs(got - want).max() < 3e-2 * np.abs(want).max()
