"""ONNX ops over coordinates: AffineGrid, GridSample, DeformConv, RoiAlign, Col2Im, Det, NonMaxSuppression.

AffineGrid multiplies a constant grid of normalized coordinates (with a column of ones) by each
batch entry's affine matrix; GridSample is the frontend-neutral ``grid_sample`` decomposition
(:mod:`.grid_sample`), which DeformConv also uses to read each kernel tap at its offset position
before one matmul with the weights; Col2Im is linear with a constant 0/1 matrix saying which
column element lands on which image pixel (overlaps add up); Det sums the n! signed products of
the Leibniz formula, which suits the small matrices models carry. NonMaxSuppression ranks each
class's boxes, then walks the ranks greedily (one step per box, n x n overlaps: sized for tens or
hundreds of boxes) and keeps the surviving (batch, class, box) rows with ``graph.compress``.
RoiAlign's bilinear sampling is separable: per box, one weight matrix for the rows and one for the
columns of each neighbour, so each box's bins are two matmuls with its image.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import i64
from .grid_sample import grid_sample
from .onnx_context import ConversionError, Node
from .onnx_ops import Results, cast, converts, element, rank, runtime_dim, static_dims, take

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


def _corners(n: Node, boxes: Value) -> tuple[Value, Value, Value, Value]:
    """(y_min, x_min, y_max, x_max) of B x N x 4 boxes, as corners (either order) or centres and sizes."""
    parts = [graph.slice(boxes, starts=(k,), ends=(k + 1,), axes=(2,)) for k in range(4)]
    if n.attr("center_point_box", 0):
        x, y, w, h = parts
        half_w, half_h = graph.mul(w, n.scalar(0.5, w)), graph.mul(h, n.scalar(0.5, h))
        return graph.sub(y, half_h), graph.sub(x, half_w), graph.add(y, half_h), graph.add(x, half_w)
    y1, x1, y2, x2 = parts
    return graph.min(y1, y2), graph.min(x1, x2), graph.max(y1, y2), graph.max(x1, x2)


def _overlaps(n: Node, boxes: Value, threshold: Value) -> Value:
    """B x N x N: box i and box j overlap by an IoU above ``threshold`` (empty boxes overlap nothing)."""
    y0, x0, y1, x1 = _corners(n, boxes)  # each B x N x 1
    t = [graph.transpose(v, perm=(0, 2, 1)) for v in (y0, x0, y1, x1)]  # B x 1 x N
    height = graph.sub(graph.min(y1, t[2]), graph.max(y0, t[0]))
    width = graph.sub(graph.min(x1, t[3]), graph.max(x0, t[1]))
    zero = n.scalar(0.0, height)
    inter = graph.mul(graph.max(height, zero), graph.max(width, zero))
    area = graph.mul(graph.sub(y1, y0), graph.sub(x1, x0))
    union = graph.sub(graph.add(area, graph.transpose(area, perm=(0, 2, 1))), inter)
    valid = graph.and_(graph.and_(graph.gt(inter, zero), graph.gt(union, zero)), graph.gt(area, zero))
    valid = graph.and_(valid, graph.gt(graph.transpose(area, perm=(0, 2, 1)), zero))
    iou = graph.div(inter, graph.where(valid, union, n.scalar(1.0, union)))
    return graph.and_(valid, graph.gt(iou, graph.reshape(cast(threshold, element(iou)), shape=(1, 1, 1))))


@converts("NonMaxSuppression")
def _non_max_suppression(n: Node) -> Results:
    boxes, scores = n.input(0), n.input(1)
    batches, classes, count = static_dims(scores, "NonMaxSuppression")
    if not n.has(2):
        return n.constant(np.zeros((0, 3), np.int64))
    limit = graph.reshape(cast(n.input(2), i64), shape=(1, 1))
    iou_threshold = n.input(3) if n.has(3) else n.constant(np.zeros(1, np.float32))
    overlaps = graph.cast(_overlaps(n, boxes, iou_threshold), dtype=element(scores))  # B x N x N
    candidate = n.constant(np.ones((batches, classes, count), bool))
    if n.has(4):
        floor = graph.reshape(cast(n.input(4), element(scores)), shape=(1, 1, 1))
        candidate = graph.gt(scores, floor)
    # rank of each box in its class: higher scores first, ties to the lower index
    a, b = graph.unsqueeze(scores, axes=(3,)), graph.unsqueeze(scores, axes=(2,))
    earlier = n.constant((np.arange(count)[None, :] < np.arange(count)[:, None]).reshape(1, 1, count, count))
    ahead = graph.or_(graph.gt(b, a), graph.and_(graph.eq(a, b), earlier))
    rank = graph.reduce_sum(cast(ahead, i64), axes=(3,))  # B x C x N
    positions = n.constant(np.arange(count, dtype=np.int64).reshape(1, 1, count))
    kept = n.constant(np.zeros((batches, classes, count), bool))
    taken = n.constant(np.zeros((batches, classes), np.int64))
    keep_at, index_at = [], []
    for p in range(count):  # greedy, best first: a box survives unless a kept box overlaps it
        here = graph.eq(rank, n.scalar(p, rank))  # B x C x N, one true per class
        row = graph.matmul(graph.cast(here, dtype=element(scores)), overlaps)  # its overlaps, B x C x N
        hit = graph.reduce_max(graph.cast(graph.and_(kept, graph.gt(row, n.scalar(0.0, row))), dtype=i64), axes=(2,))
        alive = graph.reduce_max(graph.cast(graph.and_(here, candidate), dtype=i64), axes=(2,))
        keep = graph.and_(
            graph.and_(graph.eq(alive, n.scalar(1, alive)), graph.eq(hit, n.scalar(0, hit))), graph.lt(taken, limit)
        )
        kept = graph.or_(kept, graph.and_(here, graph.unsqueeze(keep, axes=(2,))))
        taken = graph.add(taken, cast(keep, i64))
        keep_at.append(graph.unsqueeze(keep, axes=(2,)))
        index_at.append(
            graph.reduce_sum(graph.where(here, positions, n.scalar(0, positions)), axes=(2,), keepdims=True)
        )
    mask = graph.reshape(graph.concat(keep_at, axis=2), shape=(-1,))
    grid = np.stack(np.meshgrid(np.arange(batches), np.arange(classes), np.arange(count), indexing="ij"), axis=-1)
    batch_class = n.constant(grid[..., :2].reshape(-1, 2).astype(np.int64))
    rows = graph.concat([batch_class, graph.reshape(graph.concat(index_at, axis=2), shape=(-1, 1))], axis=1)
    selected, _ = graph.compress(mask, [rows], dim=runtime_dim(n, "selected"))
    return selected


@converts("DeformConv")
def _deform_conv(n: Node) -> Results:
    x, w, offset = n.input(0), n.input(1), n.input(2)
    if rank(x) != 4:
        raise ConversionError(f"only 2-D DeformConv is supported, got {rank(x) - 2}-D")
    batch, channels, height, width = static_dims(x, "DeformConv")
    outs, per_group_in, kh, kw = static_dims(w, "DeformConv")
    oh, ow = static_dims(offset, "DeformConv")[2:]
    groups, offset_groups = n.attr("group", 1), n.attr("offset_group", 1)
    sh, sw = n.attr("strides", (1, 1))
    dh, dw = n.attr("dilations", (1, 1))
    top, left = n.attr("pads", (0, 0, 0, 0))[:2]
    taps, places, per_offset_group = kh * kw, oh * ow, channels // offset_groups
    # where tap (a, b) of output (i, j) reads before its offset, as taps x places
    a, b = np.divmod(np.arange(taps), kw)
    i, j = np.divmod(np.arange(places), ow)
    base_y = (i[None, :] * sh - top + a[:, None] * dh).astype(np.float64)
    base_x = (j[None, :] * sw - left + b[:, None] * dw).astype(np.float64)
    shifts = graph.reshape(offset, shape=(batch, offset_groups, taps, 2, places))
    mask = n.optional(4)
    weights = None if mask is None else graph.reshape(mask, shape=(batch, offset_groups, 1, taps, places))
    sampled = []
    for g in range(offset_groups):
        coords = []
        for axis, base, size in ((1, base_x, width), (0, base_y, height)):  # the grid lists x first
            shift = graph.squeeze(
                graph.slice(shifts, starts=(g, axis), ends=(g + 1, axis + 1), axes=(1, 3)), axes=(1, 3)
            )
            where = graph.add(shift, n.constant(base[None], element(offset)))
            unit = graph.sub(graph.mul(where, n.scalar(2.0 / max(size - 1, 1), where)), n.scalar(1.0, where))
            coords.append(graph.unsqueeze(unit, axes=(3,)))
        part = graph.slice(x, starts=(g * per_offset_group,), ends=((g + 1) * per_offset_group,), axes=(1,))
        taken = grid_sample(part, graph.concat(coords, axis=3), "bilinear", "zeros", True)  # N x C/G x taps x places
        if weights is not None:
            taken = graph.mul(taken, take(weights, 1, g))
        sampled.append(taken)
    columns = graph.concat(sampled, axis=1) if len(sampled) > 1 else sampled[0]  # N x C x taps x places
    per_group_out = outs // groups
    results = []
    for g in range(groups):
        rows = graph.slice(columns, starts=(g * per_group_in,), ends=((g + 1) * per_group_in,), axes=(1,))
        rows = graph.reshape(rows, shape=(batch, per_group_in * taps, places))
        kernel = graph.slice(w, starts=(g * per_group_out,), ends=((g + 1) * per_group_out,), axes=(0,))
        results.append(graph.matmul(graph.reshape(kernel, shape=(per_group_out, per_group_in * taps)), rows))
    out = graph.concat(results, axis=1) if len(results) > 1 else results[0]
    out = graph.reshape(out, shape=(batch, outs, oh, ow))
    return out if not n.has(3) else graph.add(out, graph.reshape(n.input(3), shape=(1, -1, 1, 1)))


def _roi_taps(n: Node, start: Value, size: Value, bins: int, grid: int, extent: int) -> tuple[Value, Value]:
    """For each roi, bin and sample along one axis: the weights (R x bins*grid x extent) of its lower
    and upper neighbour, zero where the sample falls outside, as RoiAlign's bilinear reads them."""
    steps = np.arange(bins)[:, None] + (np.arange(grid)[None, :] + 0.5) / grid  # bin + sample offset
    offsets = n.constant(steps.reshape(1, -1), element(size))
    where = graph.add(start, graph.mul(graph.div(size, n.scalar(float(bins), size)), offsets))
    outside = graph.or_(graph.lt(where, n.scalar(-1.0, where)), graph.gt(where, n.scalar(float(extent), where)))
    clamped = graph.max(where, n.scalar(0.0, where))
    low = graph.floor(clamped)
    at_edge = graph.ge(low, n.scalar(float(extent - 1), low))
    low = graph.where(at_edge, n.scalar(float(extent - 1), low), low)
    frac = graph.where(at_edge, n.scalar(0.0, low), graph.sub(clamped, low))
    high = graph.where(at_edge, low, graph.add(low, n.scalar(1.0, low)))
    keep = graph.where(outside, n.scalar(0.0, frac), n.scalar(1.0, frac))
    cells = n.constant(np.arange(extent, dtype=np.float64).reshape(1, 1, extent), element(where))
    picks = []
    for corner, weight in ((low, graph.sub(n.scalar(1.0, frac), frac)), (high, frac)):
        hit = cast(graph.eq(graph.unsqueeze(corner, axes=(2,)), cells), element(where))
        picks.append(graph.mul(hit, graph.unsqueeze(graph.mul(weight, keep), axes=(2,))))
    return picks[0], picks[1]


@converts("RoiAlign")
def _roi_align(n: Node) -> Results:
    x, rois, batch_index = n.input(0), n.input(1), cast(n.input(2), i64)
    _, channels, height, width = static_dims(x, "RoiAlign")
    count = static_dims(rois, "RoiAlign")[0]
    out_h, out_w, grid = n.attr("output_height", 1), n.attr("output_width", 1), n.attr("sampling_ratio", 0)
    if grid <= 0:
        raise ConversionError("RoiAlign with sampling_ratio 0 (a grid sized by each box) is not supported")
    half_pixel = n.attr("coordinate_transformation_mode", "half_pixel") == "half_pixel"
    scale, shift = n.attr("spatial_scale", 1.0), 0.5 if half_pixel else 0.0
    coords = graph.sub(graph.mul(rois, n.scalar(scale, rois)), n.scalar(shift, rois))
    edges = [graph.reshape(take(coords, 1, k), shape=(count, 1)) for k in range(4)]  # x1, y1, x2, y2
    sizes = [graph.sub(edges[2], edges[0]), graph.sub(edges[3], edges[1])]
    if not half_pixel:
        sizes = [graph.max(s, n.scalar(1.0, s)) for s in sizes]
    rows = _roi_taps(n, edges[1], sizes[1], out_h, grid, height)  # R x out_h*grid x H
    cols = _roi_taps(n, edges[0], sizes[0], out_w, grid, width)  # R x out_w*grid x W
    images = graph.gather(x, batch_index, axis=0)  # R x C x H x W
    corners = [
        graph.matmul(
            graph.matmul(graph.unsqueeze(r, axes=(1,)), images), graph.unsqueeze(c, axes=(1,)), transpose_b=True
        )
        for r in rows
        for c in cols
    ]  # each R x C x out_h*grid x out_w*grid
    shape = (count, channels, out_h, grid, out_w, grid)
    if n.attr("mode", "avg") == "max":
        best = corners[0]
        for v in corners[1:]:
            best = graph.max(best, v)
        return graph.reduce_max(graph.reshape(best, shape=shape), axes=(3, 5))
    total = corners[0]
    for v in corners[1:]:
        total = graph.add(total, v)
    return graph.reduce_mean(graph.reshape(total, shape=shape), axes=(3, 5))
