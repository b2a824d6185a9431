"""ONNX ops over coordinates and small matrices: AffineGrid, GridSample, Col2Im, Det.

AffineGrid multiplies a constant grid of normalized coordinates (with a column of ones) by each
batch entry's affine matrix; GridSample is the frontend-neutral ``grid_sample`` decomposition
(:mod:`.grid_sample`); Col2Im is linear with a constant 0/1 matrix saying which column element
lands on which image pixel (overlaps add up); Det sums the n! signed products of the Leibniz
formula, which suits the small matrices models carry.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from .grid_sample import grid_sample
from .onnx_context import ConversionError, Node
from .onnx_ops import Results, converts, element, rank, static_dims

MAX_DET_SIZE = 5


def _coordinates(size: int, align_corners: bool) -> np.ndarray:
    """Normalized coordinates in [-1, 1] of ``size`` pixel centres (or corners when aligned)."""
    if align_corners:
        return np.linspace(-1.0, 1.0, size) if size > 1 else np.zeros(1)
    return (np.arange(size) * 2.0 + 1.0) / size - 1.0


@converts("AffineGrid")
def _affine_grid(n: Node) -> Results:
    theta = n.input(0)
    size = n.ints(1)
    spatial = size[2:]
    if len(spatial) not in (2, 3):
        raise ConversionError(f"AffineGrid needs a 2-D or 3-D size, got {size}")
    aligned = bool(n.attr("align_corners", 0))
    axes = [_coordinates(s, aligned) for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # (D,) H, W grids
    # rows are (x, y[, z], 1): x runs along the last spatial dim
    points = np.stack([m.reshape(-1) for m in reversed(mesh)] + [np.ones(mesh[0].size)], axis=-1)
    base = n.constant(points.astype(np.float64)[None], element(theta))
    grid = graph.matmul(base, theta, transpose_b=True)  # N x points x k
    return graph.reshape(grid, shape=(size[0], *spatial, len(spatial)))


def _col2im_matrix(
    image: Sequence[int], block: Sequence[int], strides: Sequence[int], dilations: Sequence[int], pads: Sequence[int]
) -> np.ndarray:
    """Which (block offset, block position) row of a column lands on which image pixel."""
    k = len(image)
    begin = pads[:k]
    counts = [
        (image[i] + pads[i] + pads[i + k] - (dilations[i] * (block[i] - 1) + 1)) // strides[i] + 1 for i in range(k)
    ]
    blocks, places = math.prod(block), math.prod(counts)
    matrix = np.zeros((blocks * places, math.prod(image)))
    for b, offset in enumerate(itertools.product(*(range(s) for s in block))):
        for p, where in enumerate(itertools.product(*(range(c) for c in counts))):
            pixel = [where[i] * strides[i] - begin[i] + offset[i] * dilations[i] for i in range(k)]
            if all(0 <= pixel[i] < image[i] for i in range(k)):
                matrix[b * places + p, int(np.ravel_multi_index(pixel, image))] = 1.0
    return matrix


@converts("Col2Im")
def _col2im(n: Node) -> Results:
    x = n.input(0)
    image, block = n.ints(1), n.ints(2)
    k = len(image)
    batch, rows, places = static_dims(x, "Col2Im")
    blocks = math.prod(block)
    if rows % blocks:
        raise ConversionError(f"Col2Im input rows {rows} are not a multiple of the block size {blocks}")
    matrix = _col2im_matrix(
        image,
        block,
        n.attr("strides", (1,) * k),
        n.attr("dilations", (1,) * k),
        n.attr("pads", (0,) * (2 * k)),
    )
    if matrix.shape[0] != blocks * places:
        raise ConversionError(f"Col2Im input has {places} blocks, the shapes give {matrix.shape[0] // blocks}")
    channels = graph.reshape(x, shape=(batch, rows // blocks, blocks * places))
    out = graph.matmul(channels, n.constant(matrix, element(x)))
    return graph.reshape(out, shape=(batch, rows // blocks, *image))


def _permutation_sign(perm: tuple[int, ...]) -> int:
    inversions = sum(1 for i in range(len(perm)) for j in range(i + 1, len(perm)) if perm[i] > perm[j])
    return -1 if inversions % 2 else 1


@converts("Det")
def _det(n: Node) -> Results:
    x = n.input(0)
    size = static_dims(x, "Det")[-1]
    if size > MAX_DET_SIZE:
        raise ConversionError(f"Det of {size} x {size} matrices is not supported (at most {MAX_DET_SIZE})")
    r = rank(x)

    def entry(i: int, j: int) -> Value:
        picked = graph.slice(x, starts=(i, j), ends=(i + 1, j + 1), axes=(r - 2, r - 1))
        return graph.squeeze(picked, axes=(r - 2, r - 1))  # type: ignore[no-any-return]

    total: Value | None = None
    for perm in itertools.permutations(range(size)):
        term = entry(0, perm[0])
        for i in range(1, size):
            term = graph.mul(term, entry(i, perm[i]))
        if total is None:
            total = term if _permutation_sign(perm) > 0 else graph.neg(term)
        else:
            total = graph.add(total, term) if _permutation_sign(perm) > 0 else graph.sub(total, term)
    assert total is not None
    return total


_GRID_MODES = {"linear": "bilinear", "bilinear": "bilinear", "nearest": "nearest"}


@converts("GridSample")
def _grid_sample(n: Node) -> Results:
    mode = n.attr("mode", "linear" if n.opset >= 20 else "bilinear")
    if mode not in _GRID_MODES:
        raise ConversionError(f"GridSample mode '{mode}' is not supported (only {sorted(_GRID_MODES)})")
    try:
        return grid_sample(
            n.input(0),
            n.input(1),
            _GRID_MODES[mode],
            n.attr("padding_mode", "zeros"),
            bool(n.attr("align_corners", 0)),
        )
    except ValueError as e:
        raise ConversionError(str(e)) from None
