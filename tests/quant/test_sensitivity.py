"""Per-layer bit widths from a measured sensitivity (``bits_by_sensitivity``)."""

from __future__ import annotations

import dataclasses
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
from tensorium.passes import PassManager
from tensorium.passes.pipeline import parse_pipeline
from tensorium.passes.quantize import quantize_weights
from tensorium.passes.sensitivity import sensitivity, widths


def two_layers(first: np.ndarray, second: np.ndarray) -> Operation:
    """@main(x) = (x @ first^T) @ second^T."""

    def body(x: object) -> object:
        h = graph.matmul(x, graph.constant(value=DenseAttr.of(first)), transpose_b=True)
        return graph.matmul(h, graph.constant(value=DenseAttr.of(second)), transpose_b=True)

    from tensorium.testing import build_module

    return build_module([TensorType((3, first.shape[1]), f32)], body)


def quant_bits(module: Operation) -> list[int]:
    return [
        op.operands[1].type.element.bits  # type: ignore[attr-defined]
        for op in func_body(functions(module)[0]).ops
        if op.name == "quant.matmul"
    ]


def test_widths_take_the_most_sensitive_first_within_the_fraction() -> None:
    assert widths([100, 100, 200], [0.1, 0.3, 0.2], 4, 8, 0.5) == [4, 8, 4]
    assert widths([100, 100, 200], [0.1, 0.3, 0.2], 4, 8, 0.75) == [4, 8, 8]
    assert widths([300, 100], [0.5, 0.1], 4, 6, 0.25) == [6, 4]  # the most sensitive one even past the budget
    assert widths([100, 100], [0.5, 0.1], 4, 8, 0.0) == [4, 4]


def test_sensitivity_weighs_the_error_by_the_inputs() -> None:
    """With H the inputs' second moment, an error on a channel the inputs never use costs nothing."""
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((8, 64))
    h = np.zeros((64, 64))
    assert sensitivity(weight, h, 4, 32, False) == 0.0
    plain = sensitivity(weight, None, 4, 32, False)
    assert 0 < plain < 0.02 and sensitivity(weight, np.eye(64), 4, 32, False) == pytest.approx(plain)


def test_the_layer_with_outliers_keeps_more_bits() -> None:
    """The second weight has an outlier in every group (RTN's step is wide there), so it is the more sensitive
    and alone gets 8 bits at a fraction of one half; the result is closer to float than all at 4 bits."""
    rng = np.random.default_rng(1)
    smooth = rng.standard_normal((64, 64)).astype(np.float32)
    rough = rng.standard_normal((64, 64)).astype(np.float32)
    rough[:, ::32] *= 40
    x = rng.standard_normal((3, 64)).astype(np.float32)
    (want,) = interp.run(two_layers(smooth, rough), [x])
    errors = {}
    for text in ("", ",bits-by-sensitivity=8,sensitive-fraction=0.5"):
        module = two_layers(smooth, rough)
        PassManager.parse(f"quantize{{bits=4,group=32,min-elements=0{text}}}").run(module)
        (got,) = interp.run(module, [x])
        errors[text] = float(np.abs(got - want).max())
        assert quant_bits(module) == ([4, 8] if text else [4, 4])
    assert errors[",bits-by-sensitivity=8,sensitive-fraction=0.5"] < errors[""] / 2


def test_calibration_inputs_decide_which_layer_is_sensitive() -> None:
    """Two matmuls of the same input whose weights are the same values with the halves of K swapped (so their
    weight errors tie): the one whose rough half meets the large calibration inputs keeps 6 bits."""
    rng = np.random.default_rng(2)
    first = rng.standard_normal((64, 64)).astype(np.float32)
    first[:, :32] *= rng.standard_normal((64, 32)).astype(np.float32) ** 3  # heavy tails: a coarse RTN step
    second = np.concatenate([first[:, 32:], first[:, :32]], axis=1)

    def body(x: object) -> object:
        a = graph.matmul(x, graph.constant(value=DenseAttr.of(first)), transpose_b=True)
        return graph.add(a, graph.matmul(x, graph.constant(value=DenseAttr.of(second)), transpose_b=True))

    from tensorium.testing import build_module

    for loud, sensitive in ((slice(0, 32), [6, 3]), (slice(32, 64), [3, 6])):
        batch = rng.standard_normal((256, 64)).astype(np.float32) * 0.01
        batch[:, loud] *= 100
        module = build_module([TensorType((256, 64), f32)], body)
        config = QuantConfig(bits=3, group=32, min_elements=0, bits_by_sensitivity=6, sensitive_fraction=0.5)
        quantize_weights(module, dataclasses.replace(config, calibration=[batch]))
        assert quant_bits(module) == sensitive


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: QuantConfig(bits=4, bits_by_sensitivity=4), "bits_by_sensitivity must be 0 (off) or a width in 5..8"),
        (lambda: QuantConfig(bits=4, bits_by_sensitivity=9), "bits_by_sensitivity must be 0 (off) or a width in 5..8"),
        (lambda: QuantConfig(bits_by_sensitivity=8, sensitive_fraction=1.5), "sensitive_fraction must be in [0, 1]"),
        (lambda: PassManager.parse("quantize{bits=8,bits-by-sensitivity=6}"), "a width in 9..8 (above bits=8)"),
    ],
)
def test_bad_sensitivity_options_are_one_clear_error(make: object, message: str) -> None:
    with pytest.raises(PassError, match=re.escape(message)):
        make()  # type: ignore[operator]


def test_pass_text_round_trips() -> None:
    config = QuantConfig(bits=4, bits_by_sensitivity=8, sensitive_fraction=0.5)
    assert config.pass_text() == "quantize{bits-by-sensitivity=8,sensitive-fraction=0.5}"
    (parsed,) = parse_pipeline(config.pass_text()).passes
    assert str(parsed) == config.pass_text() and parsed.config() == config  # type: ignore[attr-defined]
