"""Per-layer bit widths from a measured sensitivity: the layers whose outputs suffer most at ``bits`` keep more.

The sensitivity of a weight ``W`` [N, K] is the relative error of the layer's output on the calibration inputs
when ``W`` is rounded to nearest at ``bits``: ``tr(D H D^T) / tr(W H W^T)`` with ``D = W - Q(W)`` and
``H = X^T X`` the inputs' second moment (HAWQ and FlexQ rank layers by such measures). Without calibration
``H`` is the identity, which ranks by the relative weight error alone. :func:`widths` gives the most sensitive
layers the wider width until they hold ``fraction`` of the quantized weights' elements.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .rtn import round_to_nearest


def sensitivity(weight: np.ndarray, h: np.ndarray | None, bits: int, group: int, signed: bool) -> float:
    """The relative output error of ``weight`` rounded to nearest at ``bits`` (module docstring); ``h`` None: the
    relative weight error."""
    w = weight.astype(np.float64)
    d = w - round_to_nearest(w, bits, group, signed).dequantized()
    if h is None:
        return float(np.sum(d * d) / max(float(np.sum(w * w)), 1e-300))
    return float(np.sum((d @ h) * d) / max(float(np.sum((w @ h) * w)), 1e-300))


def widths(sizes: Sequence[int], scores: Sequence[float], bits: int, wide: int, fraction: float) -> list[int]:
    """The width of each weight (``sizes`` elements, sensitivity ``scores``): ``wide`` for the most sensitive,
    in order, until the next would take their elements past ``fraction`` of all (the most sensitive one
    always, when ``fraction`` > 0), ``bits`` for the rest."""
    chosen = [bits] * len(sizes)
    budget = fraction * sum(sizes)
    used = 0
    for i in sorted(range(len(sizes)), key=lambda i: -scores[i]):
        if fraction <= 0 or (used and used + sizes[i] > budget):
            break
        chosen[i] = wide
        used += sizes[i]
    return chosen
