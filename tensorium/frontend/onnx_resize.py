"""ONNX Resize and Upsample: separable interpolation as one constant matrix per resized axis.

Every Resize mode is linear in the input along each axis (nearest picks one neighbour with weight 1,
linear and cubic weigh 2 or 4, antialiased filters widen with the down-scale), so the importer
computes, for each resized axis, the ``out x in`` weights of ONNX's reference interpolation and
applies them as a matmul; ``tf_crop_and_resize`` positions that fall outside the input take
``extrapolation_value``. 4-D nearest and bilinear resizes of whole-size scales stay one
``graph.resize`` op, which the backends lower directly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.shapes import normalize_axis
from ..ir.types import FloatType, f32
from .onnx_context import ConversionError, Node
from .onnx_ops import Results, cast, converts, element, rank, static_dims

Coeffs = Callable[[float, float], np.ndarray]

_GRAPH_RESIZE_MODES = {"nearest": "nearest", "linear": "bilinear"}
_GRAPH_RESIZE_COORDINATES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel")


# interpolation weights -------------------------------------------------------------------------
def _nearest(mode: str) -> Coeffs:
    def coeffs(ratio: float, scale: float) -> np.ndarray:
        if ratio == 1.0:
            return np.array([0.0, 1.0])
        right = {
            "round_prefer_floor": ratio > 0.5,
            "round_prefer_ceil": ratio >= 0.5,
            "floor": False,
            "ceil": True,
        }.get(mode)
        if right is None:
            raise ConversionError(f"nearest_mode '{mode}' is not supported")
        return np.array([0.0, 1.0]) if right else np.array([1.0, 0.0])

    return coeffs


def _linear(antialias: bool) -> Coeffs:
    def coeffs(ratio: float, scale: float) -> np.ndarray:
        if not antialias:
            return np.array([1.0 - ratio, ratio])
        scale = min(scale, 1.0)
        start = int(np.floor(-1 / scale) + 1)
        taps = (np.arange(start, 2 - start) - ratio) * scale
        w = np.clip(1 - np.abs(taps), 0, 1)
        return w / w.sum()  # type: ignore[no-any-return]

    return coeffs


def _cubic(a: float, antialias: bool) -> Coeffs:
    def kernel(x: np.ndarray) -> np.ndarray:
        x = np.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x <= 1, near, np.where(x < 2, far, 0.0))  # type: ignore[no-any-return]

    def coeffs(ratio: float, scale: float) -> np.ndarray:
        if not antialias:
            return kernel(np.array([ratio + 1, ratio, 1 - ratio, 2 - ratio]))
        scale = min(scale, 1.0)
        start = int(np.floor(-2 / scale) + 1)
        w = kernel(scale * (np.arange(start, 2 - start) - ratio))
        return w / w.sum()  # type: ignore[no-any-return]

    return coeffs


def _source_positions(mode: str, size_in: int, size_out: int, scale: float, roi: tuple[float, float]) -> np.ndarray:
    """Where each output position samples the input, in input coordinates (ONNX's transformation modes)."""
    y = np.arange(size_out, dtype=np.float64)
    wide = scale * size_in
    if mode == "align_corners":
        return np.zeros(size_out) if wide == 1 else y * (size_in - 1) / (wide - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "tf_crop_and_resize":
        lo, hi = roi
        if wide == 1:
            return np.full(size_out, (hi - lo) * (size_in - 1) / 2 + lo * (size_in - 1))
        return y * (hi - lo) * (size_in - 1) / (wide - 1) + lo * (size_in - 1)
    if mode == "pytorch_half_pixel":
        return np.full(size_out, -0.5) if wide == 1 else (y + 0.5) / scale - 0.5
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = size_in / 2 * (1 - size_out / wide)
        return offset + (y + 0.5) / scale - 0.5
    raise ConversionError(f"coordinate_transformation_mode '{mode}' is not supported")


def interpolation_weights(
    coeffs: Coeffs,
    coordinate_mode: str,
    size_in: int,
    size_out: int,
    scale: float,
    roi: tuple[float, float] = (0.0, 1.0),
    exclude_outside: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``size_out x size_in`` weights of a 1-D resize, and which outputs extrapolate (fall outside
    the input in ``tf_crop_and_resize``). Neighbours past the edges repeat the edge element."""
    x = _source_positions(coordinate_mode, size_in, size_out, scale, roi)
    outside = (x < 0) | (x > size_in - 1) if coordinate_mode == "tf_crop_and_resize" else np.zeros(size_out, bool)
    weights = np.zeros((size_out, size_in))
    for i, xi in enumerate(x):
        # the left neighbour is the one strictly below xi, so the ratio lies in (0, 1]
        left = int(np.ceil(xi)) - 1
        w = np.asarray(coeffs(float(xi - left), scale), dtype=np.float64)
        taps = left - len(w) // 2 + 1 + np.arange(len(w))
        if exclude_outside:
            w = np.where((taps < 0) | (taps >= size_in), 0.0, w)
            w = w / (w.sum() or 1.0)
        np.add.at(weights[i], np.clip(taps, 0, size_in - 1), w)
    return weights, outside


# the converter ---------------------------------------------------------------------------------
def _coeffs(n: Node) -> Coeffs:
    mode, antialias = n.attr("mode", "nearest"), bool(n.attr("antialias", 0))
    if mode == "nearest":
        return _nearest(n.attr("nearest_mode", "round_prefer_floor") if n.op_type == "Resize" else "floor")
    if mode in ("linear", "bilinear"):
        return _linear(antialias)
    if mode in ("cubic", "bicubic"):
        return _cubic(n.attr("cubic_coeff_a", -0.75), antialias)
    raise ConversionError(f"Resize mode '{mode}' is not supported")


def _sizes_and_scales(n: Node, dims: tuple[int, ...], axes: tuple[int, ...]) -> tuple[list[int], list[float]]:
    """Output size and scale per dim of the input (1.0 and the input size off ``axes``)."""
    sizes, scales = list(dims), [1.0] * len(dims)
    if n.op_type == "Upsample" or n.opset < 11:
        given: np.ndarray | None = n.const(1) if n.has(1) else np.asarray(n.attr("scales"), np.float32)
        wanted = None
    else:
        given = n.const(2) if n.has(2) and n.const(2).size else None
        wanted = n.ints(3) if n.has(3) else None
    if wanted is not None:
        ratios = [wanted[i] / dims[a] for i, a in enumerate(axes)]
        policy = n.attr("keep_aspect_ratio_policy", "stretch")
        if policy in ("not_larger", "not_smaller"):
            one = min(ratios) if policy == "not_larger" else max(ratios)
            ratios = [one] * len(axes)
            wanted = tuple(int(one * dims[a] + 0.5) for a in axes)
        elif policy != "stretch":
            raise ConversionError(f"keep_aspect_ratio_policy '{policy}' is not supported")
        for i, a in enumerate(axes):
            sizes[a], scales[a] = int(wanted[i]), ratios[i]
    elif given is not None:
        for i, a in enumerate(axes):
            scales[a] = float(given.reshape(-1)[i])
            sizes[a] = int(scales[a] * dims[a])
    else:
        raise ConversionError(f"{n.op_type} needs scales or sizes")
    return sizes, scales


def _along(x: Value, axis: int, weights: np.ndarray, n: Node) -> Value:
    """``weights`` (out x in) applied along ``axis`` of ``x``."""
    last = rank(x) - 1
    perm = list(range(rank(x)))
    perm[axis], perm[last] = last, axis
    moved = x if axis == last else graph.transpose(x, perm=tuple(perm))
    out = graph.matmul(moved, n.constant(weights.T.astype(np.float32), element(x)))
    return out if axis == last else graph.transpose(out, perm=tuple(perm))  # type: ignore[no-any-return]


def _graph_resize(n: Node, x: Value, sizes: list[int], scales: list[float]) -> Value | None:
    """One graph.resize op when the node is a plain 4-D nearest/bilinear spatial resize, else None."""
    coordinate = "asymmetric" if n.op_type == "Upsample" else n.attr("coordinate_transformation_mode", "half_pixel")
    mode = _GRAPH_RESIZE_MODES.get(n.attr("mode", "nearest"))
    plain = not n.attr("antialias", 0) and not n.attr("exclude_outside", 0) and "axes" not in n.attrs
    whole = all(abs(s * d - round(s * d)) < 1e-6 and s * d == size for s, d, size in zip(scales, _dims(x), sizes))
    if mode is None or coordinate not in _GRAPH_RESIZE_COORDINATES or not plain or not whole:
        return None
    if rank(x) != 4 or tuple(sizes[:2]) != _dims(x)[:2] or n.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        return None
    nearest = "floor" if n.op_type == "Upsample" else n.attr("nearest_mode", "round_prefer_floor")
    return graph.resize(  # type: ignore[no-any-return]
        x, size=tuple(sizes[2:]), mode=mode, coordinate_mode=coordinate, nearest_mode=nearest
    )


def _dims(x: Value) -> tuple[int, ...]:
    return static_dims(x, "Resize")


@converts("Resize", "Upsample")
def _resize(n: Node) -> Results:
    x = n.input(0)
    dims = _dims(x)
    axes = tuple(normalize_axis(a, len(dims)) for a in n.attr("axes", range(len(dims))))
    sizes, scales = _sizes_and_scales(n, dims, axes)
    direct = _graph_resize(n, x, sizes, scales)
    if direct is not None:
        return direct
    coordinate = "asymmetric" if n.op_type == "Upsample" else n.attr("coordinate_transformation_mode", "half_pixel")
    roi = np.asarray([0.0] * len(dims) + [1.0] * len(dims))
    if coordinate == "tf_crop_and_resize" and n.has(1) and n.const(1).size:
        given = n.const(1).reshape(-1).astype(np.float64)
        for i, a in enumerate(axes):
            roi[a], roi[a + len(dims)] = given[i], given[i + len(axes)]
    original = element(x)
    y = x if isinstance(original, FloatType) else cast(x, f32)
    coeffs, extrapolate = _coeffs(n), float(n.attr("extrapolation_value", 0.0))
    for a in axes:
        span = (float(roi[a]), float(roi[a + len(dims)]))
        if scales[a] == 1.0 and sizes[a] == dims[a] and span == (0.0, 1.0):
            continue
        weights, outside = interpolation_weights(
            coeffs, coordinate, dims[a], sizes[a], scales[a], span, bool(n.attr("exclude_outside", 0))
        )
        y = _along(y, a, weights, n)
        if outside.any():
            mask = n.constant(outside.reshape([-1 if i == a else 1 for i in range(len(dims))]))
            y = graph.where(mask, n.scalar(extrapolate, y), y)
    return y if element(y) == original else cast(graph.round(y), original)


__all__ = ["interpolation_weights"]
