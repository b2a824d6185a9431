"""GPTQ and AWQ: GPTQ is RTN when the inputs are uncorrelated and beats it on correlated ones; AWQ beats RTN
when a few channels carry large activations; both end to end through compile(quantize=QuantConfig(...))."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorium as tm
from tensorium.errors import PassError
from tensorium.passes.awq import awq
from tensorium.passes.gptq import gptq, hessian
from tensorium.passes.rtn import round_to_nearest

from .conftest import assert_close_to_float_path, run_on_path


def correlated_inputs(rng: np.random.Generator, rows: int, depth: int, seed: int = 7) -> np.ndarray:
    """Inputs whose features mix a few strong directions (the same ones for the same ``seed``), as activations do."""
    fixed = np.random.default_rng(seed)
    basis = fixed.standard_normal((depth // 4, depth)) * fixed.uniform(0.1, 3.0, (depth // 4, 1))
    mixed = rng.standard_normal((rows, depth // 4)) @ basis
    return (mixed + 0.05 * rng.standard_normal((rows, depth))).astype(np.float32)


@pytest.mark.parametrize("act_order", [True, False])
@pytest.mark.parametrize(("bits", "group", "signed"), [(4, 32, False), (3, 0, True)])
def test_diagonal_hessian_is_round_to_nearest(bits: int, group: int, signed: bool, act_order: bool) -> None:
    rng = np.random.default_rng(bits)
    weight = rng.standard_normal((12, 64)).astype(np.float32)
    h = np.diag(rng.uniform(0.5, 2.0, 64))
    got = gptq(weight, h, bits, group, signed, act_order=act_order)
    want = round_to_nearest(weight, bits, group, signed)
    np.testing.assert_array_equal(got.codes, want.codes)
    np.testing.assert_allclose(got.scale, want.scale)


@pytest.mark.parametrize("bits", [2, 3, 4])
def test_gptq_beats_rtn_on_correlated_inputs(bits: int) -> None:
    rng = np.random.default_rng(bits)
    weight = rng.standard_normal((32, 128)).astype(np.float32)
    calibration, held_out = correlated_inputs(rng, 512, 128), correlated_inputs(rng, 256, 128)
    want = held_out @ weight.T

    def error(w: np.ndarray) -> float:
        return float(np.linalg.norm(held_out @ w.T - want))

    rtn = round_to_nearest(weight, bits, 32, False)
    for act_order in (True, False):
        found = gptq(weight, hessian(calibration), bits, 32, False, act_order=act_order)
        assert error(found.dequantized()) < 0.8 * error(rtn.dequantized())
        if act_order:  # static groups: RTN's scales of the original weight, contiguous along K
            np.testing.assert_allclose(found.scale, rtn.scale)


def test_compile_with_gptq_and_bad_calibration() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 48), torch.nn.ReLU()).eval()
    rng = np.random.default_rng(0)
    batches = [correlated_inputs(rng, 4, 64) for _ in range(16)]
    x = torch.from_numpy(correlated_inputs(rng, 4, 64))
    config = tm.QuantConfig(bits=3, group=32, method="gptq", min_elements=0, calibration=batches)
    compiled = tm.compile(model, quantize=config, target="interp", cache=False)
    assert "method=gptq" in compiled.pipeline
    floats = model(x).detach().numpy()
    assert np.abs(compiled(x).numpy() - floats).max() < 0.2 * np.abs(floats).max()
    wrong = tm.QuantConfig(method="gptq", min_elements=0, calibration=[np.ones((4, 32), np.float32)])
    with pytest.raises(PassError, match=re.escape("quantize: calibration batch #0 does not fit @main")):
        tm.compile(model, quantize=wrong, target="interp", cache=False)(x)
    with pytest.raises(PassError, match=re.escape("quantize: method 'gptq' needs calibration inputs")):
        tm.QuantConfig(method="gptq")
    with pytest.raises(PassError, match="calibration must be a non-empty list"):
        tm.QuantConfig(method="gptq", calibration=[])


def outlier_inputs(rng: np.random.Generator, rows: int, depth: int) -> np.ndarray:
    """Inputs with a few channels 30 times larger than the rest (the same channels every call)."""
    x = rng.standard_normal((rows, depth))
    x[:, np.random.default_rng(11).choice(depth, depth // 16, replace=False)] *= 30.0
    return x.astype(np.float32)


@pytest.mark.parametrize("bits", [3, 4])
def test_awq_beats_rtn_when_some_channels_carry_large_activations(bits: int) -> None:
    rng = np.random.default_rng(bits)
    weight = rng.standard_normal((32, 128)).astype(np.float32)
    calibration, held_out = outlier_inputs(rng, 512, 128), outlier_inputs(rng, 256, 128)
    want = held_out @ weight.T
    x = calibration.astype(np.float64)
    scales, q = awq(weight, hessian(calibration), np.abs(x).mean(axis=0), bits, 32, False)
    ours = np.linalg.norm((held_out / scales) @ q.dequantized().T - want)
    rtn = np.linalg.norm(held_out @ round_to_nearest(weight, bits, 32, False).dequantized().T - want)
    assert ours < 0.9 * rtn


def test_compile_with_awq_divides_the_activation() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 48)).eval()
    rng = np.random.default_rng(0)
    batches = [outlier_inputs(rng, 4, 64) for _ in range(16)]
    x = torch.from_numpy(outlier_inputs(rng, 4, 64))
    config = tm.QuantConfig(bits=4, group=32, method="awq", min_elements=0, calibration=batches)
    compiled = tm.compile(model, quantize=config, target="interp", cache=False)
    floats = model(x).detach().numpy()
    assert np.abs(compiled(x).numpy() - floats).max() < 0.1 * np.abs(floats).max()
    on_float = run_on_path(model, [x], "float", quantize=config)
    np.testing.assert_allclose(on_float, compiled(x).numpy(), rtol=1e-4, atol=1e-4)
    assert_close_to_float_path(tm.compile(model, quantize=config, cache=False)(x).numpy(), on_float)
