"""Graph ops: less common tensor ops (declarations are added here)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .common import unary


def _quiet(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """``fn`` with numpy's invalid-value warnings silenced (out-of-domain inputs give NaN)."""

    def run(x: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return fn(x).astype(x.dtype, copy=False)

    return run


asin = unary("asin", _quiet(np.arcsin), doc="arcsine in [-pi/2, pi/2]; NaN outside [-1, 1]")
acos = unary("acos", _quiet(np.arccos), doc="arccosine in [0, pi]; NaN outside [-1, 1]")
atan = unary("atan", _quiet(np.arctan), doc="arctangent in (-pi/2, pi/2)")
