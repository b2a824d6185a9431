"""Activation-aware weight scaling (AWQ, Lin et al., 2023): protect the input channels that carry large
activations by scaling them up in the weight before rounding and down in the activation.

For a weight ``W`` [N, K] whose inputs have mean magnitudes ``m`` [K], the scale per input channel is
``s = m ** alpha`` (normalized around 1), with ``alpha`` in [0, 1] chosen on a grid to minimize the output
error on the calibration inputs, ``tr(D H D^T)`` with ``D = W - Q(W s) / s`` and ``H = X^T X`` (``alpha = 0``
is plain round to nearest, so the search never does worse than RTN there). The product then computes
``(x / s) @ Q(W s)^T``.
"""

from __future__ import annotations

import numpy as np

from .rtn import QuantizedWeight, round_to_nearest

ALPHAS = np.linspace(0.0, 1.0, 21)
"""The exponents tried."""


def awq(
    weight: np.ndarray, h: np.ndarray, magnitude: np.ndarray, bits: int, group: int, signed: bool
) -> tuple[np.ndarray, QuantizedWeight]:
    """The input-channel scales ``s`` [K] and the RTN quantization of ``weight * s`` with the least output error."""
    weight = weight.astype(np.float64)
    base = np.maximum(magnitude.astype(np.float64), 1e-8)
    best: tuple[float, np.ndarray, QuantizedWeight] | None = None
    for alpha in ALPHAS:
        s = base**alpha
        s = s / np.sqrt(s.max() * s.min())
        q = round_to_nearest(weight * s, bits, group, signed)
        d = weight - q.dequantized() / s
        error = float(np.sum((d @ h) * d))
        if best is None or error < best[0]:
            best = (error, s, q)
    assert best is not None
    return best[1], best[2]
