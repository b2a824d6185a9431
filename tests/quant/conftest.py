"""Helpers of the quant tests: running a compiled model with its k-bit kernels on one path of their space."""

from __future__ import annotations

from typing import Any

import numpy as np

import tensorium as tm

ACTIVATION_ROUNDING = 3e-2
"""Largest difference, relative to the largest output, that the tests allow between the ``int`` path (8-bit
activations per block of 32) and the float one through a small model; the bound of one matmul is
:func:`tensorium.lowering.quant_int.rounding_bound` (tests/quant/test_int_path.py checks it exactly)."""


def run_on_path(model: Any, inputs: list[Any], path: str, **options: Any) -> np.ndarray:
    """``tm.compile(model, **options)(*inputs)`` with every ``qgemv`` kernel on ``path`` (float or int), as numpy."""
    probe = tm.compile(model, cache=False, **options)
    probe(*inputs)
    schedules = {t.key: t.default.replace(path=path) for t in probe.tunable_kernels() if t.default.family == "qgemv"}
    assert schedules, "the model has no qgemv kernel"
    out = tm.compile(model, cache=False, schedules=schedules, **options)(*inputs)
    return out.numpy() if hasattr(out, "numpy") else np.asarray(out)


def assert_close_to_float_path(got: np.ndarray, floats: np.ndarray) -> None:
    """The default (int on VNNI / AVX2 targets) result within activation rounding of the float path's."""
    assert np.abs(got - floats).max() <= ACTIVATION_ROUNDING * np.abs(floats).max()
