"""Sampling an image at grid positions (torch grid_sample, ONNX GridSample) as graph ops, for any frontend.

``grid_sample(x, grid, mode, padding, align_corners)`` reads ``x`` [N, C, *spatial] (2 or 3 spatial dims) at
the normalized positions ``grid`` [N, *out, d] (in [-1, 1], the last spatial dim first, as torch orders
them): each position is unnormalized (``align_corners``: -1 and 1 are the centres of the corner pixels,
else their outer edges), then ``padding`` ``zeros`` (outside pixels read 0), ``border`` (clamped) or
``reflection`` (mirrored at the edges), then ``mode`` ``bilinear`` (the 2**d neighbours weighted by
distance) or ``nearest`` (rounded half to even). Each neighbour is one ``gather_elements`` from the
flattened image. Computed in the image's float type, as torch does.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import ScalarType, TensorType, i64, storage_dtype

__all__ = ["MODES", "PADDINGS", "grid_sample"]

MODES = ("bilinear", "nearest")
PADDINGS = ("zeros", "border", "reflection")


def _type(v: Value) -> TensorType:
    t = v.type
    assert isinstance(t, TensorType)
    return t


def _const(value: float, element: ScalarType) -> Value:
    return graph.constant(value=DenseAttr.of(np.asarray(value, dtype=storage_dtype(element)), element))


def _reflect(p: Value, low2: float, high2: float) -> Value:
    """Mirror ``p`` into [low2 / 2, high2 / 2] (torch's reflect_coordinates)."""
    element = _type(p).element
    if low2 == high2:
        return graph.mul(p, _const(0.0, element))
    low, span = low2 / 2, (high2 - low2) / 2
    distance = graph.abs(graph.sub(p, _const(low, element)))
    extra = graph.mod(distance, _const(span, element))
    flips = graph.floor(graph.div(distance, _const(span, element)))
    even = graph.eq(graph.mod(flips, _const(2.0, element)), _const(0.0, element))
    forward = graph.add(extra, _const(low, element))
    backward = graph.add(graph.sub(_const(span, element), extra), _const(low, element))
    return graph.where(even, forward, backward)


def _position(g: Value, size: int, padding: str, align_corners: bool) -> Value:
    """Grid coordinates of one axis as pixel positions, with ``padding``'s clamping or mirroring applied."""
    element = _type(g).element
    one = _const(1.0, element)
    if align_corners:
        p = graph.mul(graph.add(g, one), _const((size - 1) / 2, element))
    else:
        p = graph.div(graph.sub(graph.mul(graph.add(g, one), _const(float(size), element)), one), _const(2.0, element))
    if padding == "reflection":
        p = _reflect(p, 0.0, 2.0 * (size - 1)) if align_corners else _reflect(p, -1.0, 2.0 * size - 1)
    if padding in ("border", "reflection"):
        p = graph.clamp(p, min=0.0, max=float(size - 1))
    return p


def grid_sample(x: Value, grid: Value, mode: str, padding: str, align_corners: bool) -> Value:
    """``x`` [N, C, *spatial] sampled at ``grid`` [N, *out, d]; ValueError for what is not supported."""
    if mode not in MODES or padding not in PADDINGS:
        raise ValueError(f"grid_sample mode {mode!r} with padding {padding!r} is not supported (modes {MODES})")
    t, g = _type(x), _type(grid)
    if not (t.is_static and g.is_static) or t.rank not in (4, 5) or g.rank != t.rank or g.shape[-1] != t.rank - 2:
        raise ValueError(f"grid_sample needs static [N, C, *spatial] and [N, *out, {t.rank - 2}] shapes, got {t}, {g}")
    n, c, *spatial = (int(d) for d in t.shape)  # type: ignore[arg-type]
    out = [int(d) for d in g.shape[1:-1]]  # type: ignore[arg-type]
    d, points, element = len(spatial), math.prod(out), t.element
    # positions[a] along spatial axis a: the grid lists the last axis (width) first
    positions = []
    for a in range(d):
        coordinate = graph.slice(grid, starts=[d - 1 - a], ends=[d - a], axes=[g.rank - 1])
        flat = graph.reshape(coordinate, shape=[n, 1, points])
        positions.append(_position(flat, spatial[a], padding, align_corners))
    image = graph.reshape(x, shape=[n, c, math.prod(spatial)])
    corners: list[list[tuple[Value, Value | None]]] = []  # per axis: (index, weight) of each neighbour
    for p in positions:
        if mode == "nearest":
            corners.append([(graph.round(p), None)])
            continue
        low = graph.floor(p)
        high_weight = graph.sub(p, low)
        low_weight = graph.sub(_const(1.0, element), high_weight)
        corners.append([(low, low_weight), (graph.add(low, _const(1.0, element)), high_weight)])
    total: Value | None = None
    for picks in itertools.product(*corners):
        inside: Value | None = None
        linear: Value | None = None
        weight: Value | None = None
        for (index, w), size in zip(picks, spatial):
            ok = graph.and_(graph.ge(index, _const(0.0, element)), graph.le(index, _const(float(size - 1), element)))
            inside = ok if inside is None else graph.and_(inside, ok)
            clamped = graph.cast(graph.clamp(index, min=0.0, max=float(size - 1)), dtype=i64)
            linear = clamped if linear is None else graph.add(graph.mul(linear, _const(size, i64)), clamped)
            if w is not None:
                weight = w if weight is None else graph.mul(weight, w)
        assert inside is not None and linear is not None
        picked = graph.gather_elements(image, graph.broadcast_to(linear, shape=[n, c, points]), axis=2)
        factor = graph.where(inside, weight if weight is not None else _const(1.0, element), _const(0.0, element))
        term = graph.mul(picked, factor)
        total = term if total is None else graph.add(total, term)
    assert total is not None
    return graph.reshape(total, shape=[n, c, *out])
