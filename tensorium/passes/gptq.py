"""GPTQ: error-compensating rounding of one weight from its inputs' Hessian (Frantar et al., 2022).

Columns of ``W`` [N, K] are rounded one at a time; the rounding error of column ``i``, divided by the
diagonal of the inverse Hessian's Cholesky factor, is spread over the columns not yet rounded, so that the
layer's output on the calibration inputs (``H = X^T X``) changes as little as the remaining columns allow.
Scales and zero points are those of round to nearest, taken per group from the weights as updated when the
group starts (per channel: from the original rows). With ``act_order`` (the default) the columns are rounded
in order of decreasing Hessian diagonal (the inputs that carry the most energy first, while the most columns
remain to absorb their error) and the scales are taken per group from the original weight ("static groups"),
so the groups stay contiguous along K and inference needs no permutation. Same result types as
:func:`round_to_nearest`.
"""

from __future__ import annotations

import numpy as np

from .rtn import QuantizedWeight, grid, quantized_type

DAMP = 0.01
"""Added to the Hessian's diagonal, as a share of its mean, so that it is safely positive definite."""


def hessian(inputs: np.ndarray) -> np.ndarray:
    """``X^T X / rows`` of a layer's inputs [..., K] (float64)."""
    x = inputs.reshape(-1, inputs.shape[-1]).astype(np.float64)
    return x.T @ x / max(len(x), 1)


def gptq(
    weight: np.ndarray, h: np.ndarray, bits: int, group: int, signed: bool, act_order: bool = True
) -> QuantizedWeight:
    """The codes, scales and zero points GPTQ gives ``weight`` [N, K] for inputs with Hessian ``h`` [K, K]."""
    rows, depth = weight.shape
    size = group or depth
    w = weight.astype(np.float64).copy()
    h = h.astype(np.float64).copy()
    dead = np.diag(h) == 0
    h[dead, dead] = 1.0
    w[:, dead] = 0.0
    scales = np.zeros((rows, depth // size))
    zeros = np.zeros((rows, depth // size))
    scale, zero, low, high = grid(w.reshape(rows, depth // size, size), bits, signed)
    order = np.argsort(-np.diag(h), kind="stable") if act_order else np.arange(depth)
    if act_order:
        scales[:], zeros[:] = scale, zero
    w, h = w[:, order], h[np.ix_(order, order)]
    h[np.diag_indices(depth)] += DAMP * np.mean(np.diag(h))
    inverse = np.linalg.inv(h)
    upper = np.linalg.cholesky(inverse).T  # the upper Cholesky factor of H^-1
    codes = np.zeros((rows, depth), np.int64)
    for start in range(0, depth, size):
        stop = start + size
        if not act_order:
            scale, zero, low, high = grid(w[:, start:stop][:, None, :], bits, signed)
            scales[:, start // size], zeros[:, start // size] = scale[:, 0], zero[:, 0]
        block = w[:, start:stop]
        errors = np.zeros_like(block)
        local = upper[start:stop, start:stop]
        for i in range(size):
            column = block[:, i]
            s, z = scales[:, order[start + i] // size], zeros[:, order[start + i] // size]
            code = np.clip(np.rint(column / s + z), low, high)
            codes[:, order[start + i]] = code
            error = (column - (code - z) * s) / local[i, i]
            block[:, i:] -= np.outer(error, local[i, i:])
            errors[:, i] = error
        w[:, stop:] -= errors @ upper[start:stop, stop:]
    return QuantizedWeight(
        codes.astype(np.int8 if signed else np.uint8),
        scales.astype(np.float32),
        None if signed else zeros.astype(np.float32),
        quantized_type(bits, group, signed),
    )
