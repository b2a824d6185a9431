"""The quantize pass (RTN), QuantConfig, pack-quant, and tensorium.compile(model, quantize=...) end to end."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends import interp
from tensorium.errors import PassError
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.core import Operation
from tensorium.ir.dialects import graph
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.dialects.quant.config import QuantConfig
from tensorium.ir.types import TensorType, f32, i32
from tensorium.passes import PassManager
from tensorium.passes.quantize import quantize_weights
from tensorium.passes.rtn import round_to_nearest
from tensorium.testing import build_module

from .conftest import assert_close_to_float_path, run_on_path


def linear_module(weight: np.ndarray, rows: int = 2, transpose_b: bool = True) -> Operation:
    """@main(x) = x @ W^T (W [N, K] a constant), as torch's Linear imports."""
    depth = weight.shape[1] if transpose_b else weight.shape[0]

    def body(x: object) -> object:
        w = graph.constant(value=DenseAttr.of(weight))
        return graph.matmul(x, w, transpose_b=transpose_b)

    return build_module([TensorType((rows, depth), f32)], body)


def ops(module: Operation) -> list[str]:
    return [op.name for op in func_body(functions(module)[0]).ops]


@pytest.mark.parametrize("bits", range(1, 9))
@pytest.mark.parametrize("group", [0, 32])
def test_rtn_error_is_within_half_a_step(bits: int, group: int) -> None:
    weight = np.random.default_rng(bits).standard_normal((6, 64)).astype(np.float32)
    q = round_to_nearest(weight, bits, group, signed=False)
    step = np.repeat(q.scale, group or 64, axis=1)
    assert np.all(np.abs(q.dequantized() - weight) <= step / 2 + 1e-6)
    assert q.codes.min() >= 0 and q.codes.max() <= (1 << bits) - 1


def test_signed_rtn_is_symmetric() -> None:
    weight = np.array([[-1.0, 0.5, 0.25, 1.0]], np.float32)
    q = round_to_nearest(weight, 3, 0, signed=True)
    assert q.zero is None and q.codes.tolist() == [[-3, 2, 1, 3]]
    np.testing.assert_allclose(q.dequantized(), [[-1.0, 2 / 3, 1 / 3, 1.0]], rtol=1e-6)


@pytest.mark.parametrize("transpose_b", [True, False])
def test_pass_rewrites_matmuls_and_keeps_their_meaning(transpose_b: bool) -> None:
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((96, 64) if transpose_b else (64, 96)).astype(np.float32)
    module = linear_module(weight, transpose_b=transpose_b)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    (want,) = interp.run(module, [x])
    PassManager.parse("quantize{bits=8,group=32,min-elements=0}").run(module)
    assert ops(module) == ["graph.constant"] * 3 + ["quant.matmul", "func.return"]
    (got,) = interp.run(module, [x])
    rtn = round_to_nearest(weight if transpose_b else weight.T, 8, 32, signed=False).dequantized()
    np.testing.assert_allclose(got, x @ rtn.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, want, rtol=0.05, atol=0.2)


def test_small_weights_stay_in_float_by_default() -> None:
    module = linear_module(np.ones((8, 64), np.float32))
    PassManager.parse("quantize").run(module)
    assert "quant.matmul" not in ops(module)


def test_report_names_what_was_quantized_and_what_was_left() -> None:
    module = linear_module(np.random.default_rng(1).standard_normal((64, 128)).astype(np.float32))
    report = quantize_weights(module, QuantConfig(bits=4, group=32, min_elements=0))
    ((_, shape, error),) = report.quantized
    assert shape == (64, 128) and 0 < error < 0.15
    bad = linear_module(np.full((64, 128), np.inf, np.float32))
    report = quantize_weights(bad, QuantConfig(min_elements=0, group=32))
    assert report.quantized == [] and report.skipped[0][1] == "the weight has NaN or infinite values"
    with pytest.warns(UserWarning, match=r"quantize: 1 weights left in float: .*NaN or infinite"):
        PassManager.parse("quantize{min-elements=0,group=32}").run(
            linear_module(np.full((64, 128), np.nan, np.float32))
        )


def test_embeddings_on_request() -> None:
    table = np.random.default_rng(2).standard_normal((50, 96)).astype(np.float32)

    def body(idx: object) -> object:
        return graph.embedding(graph.constant(value=DenseAttr.of(table)), idx)

    module = build_module([TensorType((3,), i32)], body)
    PassManager.parse("quantize{bits=8,min-elements=0,embeddings=true}").run(module)
    assert "quant.embedding" in ops(module)
    idx = np.array([4, 0, 49], np.int32)
    np.testing.assert_allclose(interp.run(module, [idx])[0], table[idx], atol=0.02)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: QuantConfig(bits=0), "quantize: bits must be 1..8, got 0"),
        (lambda: QuantConfig(bits=9), "quantize: bits must be 1..8, got 9"),
        (lambda: QuantConfig(group=-1), "quantize: group must be 0 (per channel) or a positive group size"),
        (lambda: QuantConfig(method="awq"), "quantize: method 'awq' needs calibration inputs"),
        (lambda: QuantConfig(method="magic"), "quantize: unknown method 'magic'"),
        (lambda: QuantConfig(bits=1, signed=True), "quantize: signed (symmetric) codes need bits >= 2"),
        (lambda: QuantConfig.parse("int4"), "quantize: bad spec 'int4'"),
        (lambda: PassManager.parse("quantize{bits=9}"), "quantize: bits must be 1..8, got 9"),
        (
            lambda: PassManager.parse("quantize{group=48,min-elements=0}").run(
                linear_module(np.ones((4, 64), np.float32))
            ),
            "quantize: group=48 does not divide K=64 of the weight of graph.matmul -> tensor<2x4xf32>",
        ),
    ],
)
def test_bad_options_are_one_clear_error(make: object, message: str) -> None:
    with pytest.raises(PassError, match=re.escape(message)):
        make()  # type: ignore[operator]


def test_config_spellings() -> None:
    assert QuantConfig.parse("w4g128") == QuantConfig(bits=4, group=128)
    assert QuantConfig.parse("w3") == QuantConfig(bits=3, group=0)
    assert QuantConfig.parse("w8g32s") == QuantConfig(bits=8, group=32, signed=True)
    assert QuantConfig(bits=3, group=64, signed=True).pass_text() == "quantize{bits=3,group=64,signed=true}"
    assert QuantConfig().pass_text() == "quantize"


@pytest.mark.parametrize("spec", ["w4g128", "w3g32s"])
def test_compile_quantized_torch_model_on_cpu_matches_the_interpreter(spec: str) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 128), torch.nn.GELU(), torch.nn.Linear(128, 64)).eval()
    x = torch.randn(3, 256)
    cpu = tm.compile(model, quantize=spec, cache=False)
    assert "quantize" in cpu.pipeline and "pack-quant" in cpu.pipeline
    reference = tm.compile(model, quantize=QuantConfig.parse(spec), target="interp", cache=False)
    got, want = cpu(x).numpy(), reference(x).numpy()
    np.testing.assert_allclose(run_on_path(model, [x], "float", quantize=spec), want, rtol=1e-4, atol=1e-4)
    assert_close_to_float_path(got, want)
    floats = model(x).detach().numpy()
    assert np.abs(got - floats).max() < 0.25 * np.abs(floats).max()


def test_compile_rejects_bad_quantize_option() -> None:
    with pytest.raises(PassError, match=re.escape("quantize: bits must be 1..8, got 9")):
        tm.compile(lambda x: x, quantize="w9g128")


def test_pack_quant_leaves_what_the_kernel_cannot_take() -> None:
    module = linear_module(np.random.default_rng(3).standard_normal((8, 48)).astype(np.float32))
    PassManager.parse("quantize{bits=4,group=0,min-elements=0},pack-quant").run(module)
    assert "quant.matmul" in ops(module), "K = 48 is not a multiple of 32: not packed"
    module = linear_module(np.random.default_rng(3).standard_normal((8, 64)).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PassManager.parse("quantize{bits=4,group=0,min-elements=0,signed=true},pack-quant").run(module)
    assert "quant.matmul_packed" in ops(module)


def test_quantized_artifact_round_trips(tmp_path: object) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(128, 64), torch.nn.ReLU()).eval()
    x = torch.randn(1, 128)
    compiled = tm.compile(model, quantize="w3g32", cache=False)
    want = compiled(x).numpy()
    path = f"{tmp_path}/q.tsm"
    compiled.save(path)
    np.testing.assert_array_equal(tm.load(path)(x.numpy()), want)
