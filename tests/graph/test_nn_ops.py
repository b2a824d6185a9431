"""Neural-network ops: inference (incl. symbolic dims), interpreter results against independent
references (scipy, explicit loops written after PyTorch's and ONNX's definitions, hand-computed
values), the text round trip, and exact diagnostics."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from scipy.signal import correlate
from scipy.special import log_softmax as scipy_log_softmax
from scipy.special import softmax as scipy_softmax

import tensorium as tm
from tensorium.backends.interp import run
from tensorium.errors import InterpreterError, VerifyError
from tensorium.ir import (
    OpDef,
    Sym,
    TensorType,
    Type,
    f16,
    f32,
    graph,
    i32,
)
from tensorium.testing import build_module, op_error, result_type, run_op

RNG = np.random.default_rng(0)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def t(*shape: int | str, element: Any = f32) -> TensorType:
    """A tensor type; string dims are named symbols and '?' is anonymous."""
    dims = tuple(Sym(None if d == "?" else d) if isinstance(d, str) else d for d in shape)
    return TensorType(dims, element)


# independent references -----------------------------------------------------------------------
def conv_ref(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    groups: int = 1,
) -> np.ndarray:
    """NCHW x OIHW convolution: scipy correlation of each plane with the zero-dilated kernel."""
    o, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding[0], padding[2]), (padding[1], padding[3])))
    kernel = np.zeros((o, cg, dilations[0] * (kh - 1) + 1, dilations[1] * (kw - 1) + 1))
    kernel[:, :, :: dilations[0], :: dilations[1]] = w
    per_group = o // groups
    planes = [
        [
            sum(correlate(xp[n, oi // per_group * cg + ci], kernel[oi, ci], mode="valid") for ci in range(cg))[
                :: strides[0], :: strides[1]
            ]
            for oi in range(o)
        ]
        for n in range(x.shape[0])
    ]
    y = np.array(planes)
    return y if b is None else y + b[None, :, None, None]


def conv_transpose_ref(
    x: np.ndarray,
    w: np.ndarray,
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
    output_padding: Sequence[int] = (0, 0),
    dilations: Sequence[int] = (1, 1),
    groups: int = 1,
) -> np.ndarray:
    """Scatter every input pixel times the kernel into the output, PyTorch's definition."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    oh = (h - 1) * strides[0] - padding[0] - padding[2] + dilations[0] * (kh - 1) + output_padding[0] + 1
    ow = (wd - 1) * strides[1] - padding[1] - padding[3] + dilations[1] * (kw - 1) + output_padding[1] + 1
    y = np.zeros((n, og * groups, oh, ow))
    for b, ci, i, j, a, e, oo in itertools.product(*map(range, (n, c, h, wd, kh, kw, og))):
        r = i * strides[0] + a * dilations[0] - padding[0]
        col = j * strides[1] + e * dilations[1] - padding[1]
        if 0 <= r < oh and 0 <= col < ow:
            y[b, ci // (c // groups) * og + oo, r, col] += x[b, ci, i, j] * w[ci, oo, a, e]
    return y


def pool_out(size: int, k: int, s: int, lo: int, hi: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape."""
    num = size + lo + hi - d * (k - 1) - 1
    out = (math.ceil(num / s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + lo:
        out -= 1
    return out


def max_pool_ref(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    ceil_mode: bool = False,
) -> np.ndarray:
    n, c, h, w = x.shape
    oh = pool_out(h, kernel[0], strides[0], padding[0], padding[2], dilations[0], ceil_mode)
    ow = pool_out(w, kernel[1], strides[1], padding[1], padding[3], dilations[1], ceil_mode)
    y = np.empty((n, c, oh, ow), x.dtype)
    for i, j in itertools.product(range(oh), range(ow)):
        rows = [i * strides[0] - padding[0] + a * dilations[0] for a in range(kernel[0])]
        cols = [j * strides[1] - padding[1] + a * dilations[1] for a in range(kernel[1])]
        rows = [r for r in rows if 0 <= r < h]
        cols = [q for q in cols if 0 <= q < w]
        y[:, :, i, j] = x[:, :, rows][:, :, :, cols].max(axis=(2, 3))
    return y


def avg_pool_ref(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> np.ndarray:
    """PyTorch's CPU avg_pool2d kernel, with the bottom/right padding taken from ``padding``."""
    n, c, h, w = x.shape
    oh = pool_out(h, kernel[0], strides[0], padding[0], padding[2], 1, ceil_mode)
    ow = pool_out(w, kernel[1], strides[1], padding[1], padding[3], 1, ceil_mode)
    y = np.empty((n, c, oh, ow))
    for i, j in itertools.product(range(oh), range(ow)):
        hs, ws = i * strides[0] - padding[0], j * strides[1] - padding[1]
        he, we = min(hs + kernel[0], h + padding[2]), min(ws + kernel[1], w + padding[3])
        pool_size = (he - hs) * (we - ws)
        hs, ws, he, we = max(hs, 0), max(ws, 0), min(he, h), min(we, w)
        divisor = pool_size if count_include_pad else (he - hs) * (we - ws)
        y[:, :, i, j] = x[:, :, hs:he, ws:we].astype(np.float64).sum(axis=(2, 3)) / divisor
    return y


def _onnx_source(i: int, out: int, size: int, coordinate_mode: str) -> float:
    scale = out / size
    if coordinate_mode == "align_corners":
        return 0.0 if out == 1 else i * (size - 1) / (out - 1)
    if coordinate_mode == "asymmetric":
        return i / scale
    if coordinate_mode == "pytorch_half_pixel" and out == 1:
        return -0.5
    return (i + 0.5) / scale - 0.5


def _onnx_nearest(v: float, nearest_mode: str) -> int:
    if nearest_mode == "floor":
        return math.floor(v)
    if nearest_mode == "ceil":
        return math.ceil(v)
    if v - math.floor(v) == 0.5:
        return math.floor(v) if nearest_mode == "round_prefer_floor" else math.ceil(v)
    return round(v)


def resize_ref(
    x: np.ndarray, size: tuple[int, int], mode: str, coordinate_mode: str, nearest_mode: str = "floor"
) -> np.ndarray:
    """ONNX Resize on NCHW ``x``, one output pixel at a time; neighbors clamp to the edges."""
    n, c, h, w = x.shape
    y = np.empty((n, c, *size))
    for i, j in itertools.product(range(size[0]), range(size[1])):
        r = _onnx_source(i, size[0], h, coordinate_mode)
        q = _onnx_source(j, size[1], w, coordinate_mode)
        if mode == "nearest":
            ri = min(max(_onnx_nearest(r, nearest_mode), 0), h - 1)
            qi = min(max(_onnx_nearest(q, nearest_mode), 0), w - 1)
            y[:, :, i, j] = x[:, :, ri, qi]
            continue
        r0, q0 = math.floor(r), math.floor(q)
        value = np.zeros((n, c))
        for rr, wr in ((r0, 1 - (r - r0)), (r0 + 1, r - r0)):
            for qq, wq in ((q0, 1 - (q - q0)), (q0 + 1, q - q0)):
                value += wr * wq * x[:, :, min(max(rr, 0), h - 1), min(max(qq, 0), w - 1)]
        y[:, :, i, j] = value
    return y


def nhwc(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


# conv2d ---------------------------------------------------------------------------------------
def test_conv2d_hand_computed() -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    w = np.ones((1, 1, 2, 2), np.float32)
    y = run_op(graph.conv2d, x, w, np.array([0.5], np.float32), strides=[2, 2])
    np.testing.assert_array_equal(y, [[[[10.5, 18.5], [42.5, 50.5]]]])


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "attrs"),
    [
        ((1, 2, 5, 5), (3, 2, 3, 3), {}),
        ((2, 3, 6, 7), (4, 3, 3, 2), {"strides": [2, 1], "padding": [1, 0, 2, 1]}),
        ((1, 2, 7, 6), (2, 2, 3, 2), {"dilations": [2, 3], "padding": [2, 2, 2, 2]}),
        ((1, 4, 5, 5), (6, 2, 3, 3), {"groups": 2, "padding": [1, 1, 1, 1]}),
        ((1, 3, 5, 5), (3, 1, 3, 3), {"groups": 3}),
        ((1, 3, 5, 4), (6, 1, 2, 2), {"groups": 3, "strides": [2, 2], "padding": [0, 0, 1, 1]}),
        ((1, 2, 1, 1), (2, 2, 1, 1), {}),
        ((1, 1, 7, 4), (1, 1, 3, 4), {"strides": [3, 3]}),
        ((1, 1, 1, 1), (1, 1, 3, 3), {"padding": [1, 1, 1, 1]}),
    ],
)
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv2d_matches_scipy(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any], with_bias: bool
) -> None:
    x, w = rand(*x_shape), rand(*w_shape)
    b = rand(w_shape[0]) if with_bias else None
    y = run_op(graph.conv2d, x, w, *([b] if b is not None else []), **attrs)
    expected = conv_ref(x, w, b, **attrs)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("kernel_layout", "perm"), [("OIHW", (0, 1, 2, 3)), ("HWIO", (2, 3, 1, 0)), ("OHWI", (0, 2, 3, 1))]
)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_conv2d_layouts(layout: str, kernel_layout: str, perm: tuple[int, ...]) -> None:
    x, w, b = rand(2, 4, 6, 5), rand(6, 2, 3, 2), rand(6)
    attrs: dict[str, Any] = {"strides": [2, 1], "padding": [1, 0, 1, 1], "groups": 2}
    expected = conv_ref(x, w, b, **attrs)
    xi = nhwc(x) if layout == "NHWC" else x
    y = run_op(
        graph.conv2d,
        xi,
        np.ascontiguousarray(w.transpose(perm)),
        b,
        layout=layout,
        kernel_layout=kernel_layout,
        **attrs,
    )
    np.testing.assert_allclose(y, nhwc(expected) if layout == "NHWC" else expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("dtype", "tol"), [(np.float16, 2e-2), (np.float64, 1e-12)])
def test_conv2d_f16_f64(dtype: Any, tol: float) -> None:
    x, w = rand(1, 3, 6, 6, dtype=dtype), rand(2, 3, 3, 3, dtype=dtype)
    y = run_op(graph.conv2d, x, w, padding=[1, 1, 1, 1])
    assert y.dtype == dtype
    np.testing.assert_allclose(y, conv_ref(x, w, padding=(1, 1, 1, 1)), rtol=tol, atol=tol)


def test_conv2d_empty_batch() -> None:
    y = run_op(graph.conv2d, rand(0, 2, 4, 4), rand(3, 2, 3, 3))
    assert y.shape == (0, 3, 2, 2)


def test_conv2d_symbolic_inference() -> None:
    w = t(4, 3, 3, 3)
    assert str(result_type(graph.conv2d, t("n", 3, 8, 8), w)) == "tensor<[n]x4x6x6xf32>"
    same = {"padding": [1, 1, 1, 1]}
    assert str(result_type(graph.conv2d, t("n", 3, "h", "w"), w, **same)) == "tensor<[n]x4x[h]x[w]xf32>"
    assert str(result_type(graph.conv2d, t("n", 3, "h", "w"), w, strides=[2, 1], **same)) == "tensor<[n]x4x?x[w]xf32>"
    assert str(result_type(graph.conv2d, t("n", "?", 8, 8), w)) == "tensor<[n]x4x6x6xf32>"
    assert str(result_type(graph.conv2d, t(1, 3, 8, 8), t("o", 3, "k", 3))) == "tensor<1x[o]x?x6xf32>"
    nhwc_type = result_type(graph.conv2d, t("n", 8, 8, 3), t(3, 3, 3, 4), layout="NHWC", kernel_layout="HWIO")
    assert str(nhwc_type) == "tensor<[n]x6x6x4xf32>"


def test_conv2d_symbolic_runs_and_checks_sizes_at_run_time() -> None:
    module = build_module([t("n", 1, "h", "w"), t(1, 1, 3, 3)], graph.conv2d)
    x, w = rand(2, 1, 4, 5), rand(1, 1, 3, 3)
    np.testing.assert_allclose(run(module, [x, w])[0], conv_ref(x, w), rtol=1e-5, atol=1e-5)
    with pytest.raises(InterpreterError, match=r"'graph\.conv2d' failed: output height would be 0 \(< 1\)"):
        run(module, [rand(1, 1, 2, 5), w])


@pytest.mark.parametrize(("op", "weight"), [(graph.conv2d, (2, 1, 1, 1)), (graph.conv_transpose2d, (1, 2, 1, 1))])
def test_bias_of_unknown_size_is_checked_at_run_time(op: OpDef, weight: tuple[int, ...]) -> None:
    module = build_module([t(1, 1, 2, 2), t(*weight), t("?")], op)
    x, w = np.ones((1, 1, 2, 2), np.float32), np.ones(weight, np.float32)
    with pytest.raises(InterpreterError, match=re.escape("cannot reshape array of size 1 into shape (1,2,1,1)")):
        run(module, [x, w, np.ones(1, np.float32)])


# conv_transpose2d -----------------------------------------------------------------------------
def test_conv_transpose2d_hand_computed() -> None:
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    w = np.ones((1, 1, 2, 2), np.float32)
    np.testing.assert_array_equal(run_op(graph.conv_transpose2d, x, w), [[[[1, 3, 2], [4, 10, 6], [3, 7, 4]]]])
    spread = run_op(graph.conv_transpose2d, x, w, strides=[2, 2])
    np.testing.assert_array_equal(spread[0, 0], [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]])


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "attrs"),
    [
        ((1, 2, 3, 3), (2, 3, 3, 3), {}),
        ((2, 2, 3, 2), (2, 1, 3, 2), {"strides": [2, 3], "padding": [1, 0, 0, 1], "output_padding": [1, 2]}),
        ((1, 4, 2, 3), (4, 3, 2, 2), {"groups": 2, "dilations": [2, 1], "strides": [1, 2]}),
        ((1, 3, 3, 3), (3, 1, 3, 3), {"groups": 3, "strides": [2, 2], "padding": [1, 1, 1, 1]}),
        ((1, 1, 1, 1), (1, 2, 1, 1), {}),
        ((1, 2, 2, 2), (2, 1, 3, 3), {"dilations": [1, 3], "output_padding": [0, 2], "strides": [1, 1]}),
    ],
)
def test_conv_transpose2d_matches_scatter_reference(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any]
) -> None:
    x, w, b = rand(*x_shape), rand(*w_shape), rand(w_shape[1] * attrs.get("groups", 1))
    expected = conv_transpose_ref(x, w, **attrs)
    np.testing.assert_allclose(run_op(graph.conv_transpose2d, x, w, **attrs), expected, rtol=1e-5, atol=1e-5)
    with_bias = run_op(graph.conv_transpose2d, nhwc(x), w, b, layout="NHWC", **attrs)
    np.testing.assert_allclose(with_bias, nhwc(expected + b[None, :, None, None]), rtol=1e-5, atol=1e-5)


def test_conv_transpose2d_is_the_adjoint_of_conv2d() -> None:
    attrs: dict[str, Any] = {"strides": [2, 2], "padding": [1, 0, 1, 2], "dilations": [1, 2], "groups": 2}
    x, w = rand(1, 4, 7, 6, dtype=np.float64), rand(6, 2, 3, 2, dtype=np.float64)
    y = run_op(graph.conv2d, x, w, **attrs)
    g = rand(*y.shape, dtype=np.float64)
    back = run_op(graph.conv_transpose2d, g, w, output_padding=[0, 1], **attrs)
    assert back.shape == x.shape
    np.testing.assert_allclose(np.vdot(y, g), np.vdot(x, back), rtol=1e-10)


def test_conv_transpose2d_symbolic_inference() -> None:
    w = t(3, 2, 3, 3)
    assert str(result_type(graph.conv_transpose2d, t("n", 3, 4, 5), w, strides=[2, 2])) == "tensor<[n]x2x9x11xf32>"
    same = {"padding": [1, 1, 1, 1]}
    assert str(result_type(graph.conv_transpose2d, t("n", 3, "h", "w"), w, **same)) == "tensor<[n]x2x[h]x[w]xf32>"
    assert (
        str(result_type(graph.conv_transpose2d, t("n", 3, "h", 4), w, groups=3, strides=[2, 1], **same))
        == "tensor<[n]x6x?x4xf32>"
    )


# pooling --------------------------------------------------------------------------------------
def test_max_pool2d_hand_computed_with_ceil_mode() -> None:
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    np.testing.assert_array_equal(run_op(graph.max_pool2d, x, kernel=[2, 2], strides=[2, 2]), [[[[6, 8], [16, 18]]]])
    y = run_op(graph.max_pool2d, x, kernel=[2, 2], strides=[2, 2], ceil_mode=True)
    np.testing.assert_array_equal(y, [[[[6, 8, 9], [16, 18, 19], [21, 23, 24]]]])


POOL_CASES: list[dict[str, Any]] = [
    {"kernel": [2, 2], "strides": [2, 2]},
    {"kernel": [3, 2], "strides": [2, 1], "padding": [1, 0, 1, 1]},
    {"kernel": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1], "ceil_mode": True},
    {"kernel": [2, 3], "strides": [3, 2], "padding": [0, 1, 1, 0], "ceil_mode": True},
    {"kernel": [1, 1], "strides": [2, 2]},
    {"kernel": [4, 4], "strides": [3, 3], "padding": [2, 2, 2, 2], "ceil_mode": True},
]


@pytest.mark.parametrize("attrs", POOL_CASES)
@pytest.mark.parametrize("dilations", [(1, 1), (2, 1)])
def test_max_pool2d_matches_reference(attrs: dict[str, Any], dilations: Sequence[int]) -> None:
    x = rand(2, 3, 7, 6)
    expected = max_pool_ref(x, dilations=dilations, **attrs)
    np.testing.assert_array_equal(run_op(graph.max_pool2d, x, dilations=list(dilations), **attrs), expected)
    np.testing.assert_array_equal(
        run_op(graph.max_pool2d, nhwc(x), dilations=list(dilations), layout="NHWC", **attrs), nhwc(expected)
    )


@pytest.mark.parametrize("attrs", POOL_CASES)
@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool2d_matches_reference(attrs: dict[str, Any], count_include_pad: bool) -> None:
    x = rand(2, 3, 7, 6)
    expected = avg_pool_ref(x, count_include_pad=count_include_pad, **attrs)
    y = run_op(graph.avg_pool2d, x, count_include_pad=count_include_pad, **attrs)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    y = run_op(graph.avg_pool2d, nhwc(x), count_include_pad=count_include_pad, layout="NHWC", **attrs)
    np.testing.assert_allclose(y, nhwc(expected), rtol=1e-5, atol=1e-6)


def test_avg_pool2d_hand_computed_divisors() -> None:
    ones = np.ones((1, 1, 3, 3), np.float32)
    attrs: dict[str, Any] = {"kernel": [3, 3], "padding": [1, 1, 1, 1]}
    with_pad = run_op(graph.avg_pool2d, ones, count_include_pad=True, **attrs)
    np.testing.assert_allclose(with_pad[0, 0], np.array([[4, 6, 4], [6, 9, 6], [4, 6, 4]]) / 9, rtol=1e-6)
    np.testing.assert_array_equal(run_op(graph.avg_pool2d, ones, **attrs), np.ones((1, 1, 3, 3)))
    # ceil_mode's extra window over [3, 4) averages one real cell even when counting padding.
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
    y = run_op(graph.avg_pool2d, x, kernel=[1, 3], strides=[1, 3], ceil_mode=True, count_include_pad=True)
    np.testing.assert_array_equal(y, [[[[1, 3]]]])


def test_pools_f16_and_nan() -> None:
    x = rand(1, 2, 4, 4, dtype=np.float16)
    y = run_op(graph.avg_pool2d, x, kernel=[2, 2], strides=[2, 2])
    assert y.dtype == np.float16
    np.testing.assert_allclose(y, avg_pool_ref(x, (2, 2), (2, 2)), rtol=2e-3, atol=2e-3)
    x[0, 0, 0, 0] = np.nan
    m = run_op(graph.max_pool2d, x, kernel=[2, 2], strides=[2, 2])
    assert np.isnan(m[0, 0, 0, 0]) and not np.isnan(m[0, 0, 1, 1])


def test_max_pool2d_integers() -> None:
    x = np.array([[[[-5, -7], [-9, -6]]]], np.int32)
    y = run_op(graph.max_pool2d, x, kernel=[2, 2], padding=[1, 1, 0, 0])
    np.testing.assert_array_equal(y, [[[[-5, -5], [-5, -5]]]])


def test_pool_symbolic_inference() -> None:
    assert str(result_type(graph.max_pool2d, t("n", 3, 8, 8), kernel=[2, 2], strides=[2, 2])) == "tensor<[n]x3x4x4xf32>"
    assert str(result_type(graph.max_pool2d, t("n", 3, "h", 7), kernel=[3, 3], padding=[1, 1, 1, 1])) == (
        "tensor<[n]x3x[h]x7xf32>"
    )
    assert str(
        result_type(graph.avg_pool2d, t("n", "h", 7, 3), kernel=[2, 2], ceil_mode=True, strides=[2, 2], layout="NHWC")
    ) == ("tensor<[n]x?x4x3xf32>")
    assert str(result_type(graph.global_avg_pool2d, t("n", 3, "h", "w"))) == "tensor<[n]x3x1x1xf32>"
    assert str(result_type(graph.global_max_pool2d, t("n", "h", "w", 5), layout="NHWC")) == "tensor<[n]x1x1x5xf32>"


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_global_pools(layout: str) -> None:
    x = rand(2, 3, 4, 5, dtype=np.float64)
    xi = nhwc(x) if layout == "NHWC" else x
    avg = run_op(graph.global_avg_pool2d, xi, layout=layout)
    mx = run_op(graph.global_max_pool2d, xi, layout=layout)
    expected_avg, expected_max = x.mean(axis=(2, 3), keepdims=True), x.max(axis=(2, 3), keepdims=True)
    if layout == "NHWC":
        expected_avg, expected_max = nhwc(expected_avg), nhwc(expected_max)
    np.testing.assert_allclose(avg, expected_avg, rtol=1e-12)
    np.testing.assert_array_equal(mx, expected_max)
    one = run_op(graph.global_max_pool2d, np.array([[[[7]]]], np.int32))
    assert one.tolist() == [[[[7]]]]


# resize ---------------------------------------------------------------------------------------
def test_resize_matches_known_torch_values() -> None:
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    half_pixel = run_op(graph.resize, x, size=[4, 4], mode="bilinear", coordinate_mode="half_pixel")
    np.testing.assert_allclose(
        half_pixel[0, 0],
        [[1.0, 1.25, 1.75, 2.0], [1.5, 1.75, 2.25, 2.5], [2.5, 2.75, 3.25, 3.5], [3.0, 3.25, 3.75, 4.0]],
    )
    corners = run_op(graph.resize, x, size=[3, 3], mode="bilinear", coordinate_mode="align_corners")
    np.testing.assert_allclose(corners[0, 0], [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]])
    nearest = run_op(graph.resize, x, size=[4, 4])
    np.testing.assert_array_equal(nearest[0, 0], np.repeat(np.repeat([[1, 2], [3, 4]], 2, 0), 2, 1))
    row = np.arange(5, dtype=np.float32).reshape(1, 1, 1, 5)
    np.testing.assert_array_equal(run_op(graph.resize, row, size=[1, 3]), [[[[0, 1, 3]]]])


RESIZE_SIZES = [(7, 3), (2, 8), (1, 1), (5, 4)]


@pytest.mark.parametrize("coordinate_mode", ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"])
@pytest.mark.parametrize("size", RESIZE_SIZES)
def test_resize_bilinear_matches_onnx(coordinate_mode: str, size: tuple[int, int]) -> None:
    x = rand(1, 2, 5, 4, dtype=np.float64)
    y = run_op(graph.resize, x, size=list(size), mode="bilinear", coordinate_mode=coordinate_mode)
    np.testing.assert_allclose(y, resize_ref(x, size, "bilinear", coordinate_mode), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("nearest_mode", ["floor", "ceil", "round_prefer_floor", "round_prefer_ceil"])
@pytest.mark.parametrize("coordinate_mode", ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"])
def test_resize_nearest_matches_onnx(coordinate_mode: str, nearest_mode: str) -> None:
    x = np.arange(2 * 4 * 6, dtype=np.int32).reshape(1, 2, 4, 6)
    for size in RESIZE_SIZES + [(8, 12)]:
        y = run_op(
            graph.resize,
            nhwc(x),
            size=list(size),
            coordinate_mode=coordinate_mode,
            nearest_mode=nearest_mode,
            layout="NHWC",
        )
        np.testing.assert_array_equal(y, nhwc(resize_ref(x, size, "nearest", coordinate_mode, nearest_mode)))


def test_resize_f16_and_symbolic_inference() -> None:
    x = rand(1, 1, 3, 3, dtype=np.float16)
    y = run_op(graph.resize, x, size=[5, 2], mode="bilinear", coordinate_mode="half_pixel")
    assert y.dtype == np.float16
    np.testing.assert_allclose(y, resize_ref(x, (5, 2), "bilinear", "half_pixel"), rtol=2e-3, atol=2e-3)
    assert str(result_type(graph.resize, t("n", 3, "h", "w"), size=[16, 9])) == "tensor<[n]x3x16x9xf32>"
    assert str(result_type(graph.resize, t("n", "h", "w", 3, element=i32), size=[2, 2], layout="NHWC")) == (
        "tensor<[n]x2x2x3xi32>"
    )


# softmax --------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, 0, 1, -3])
def test_softmax_and_log_softmax_match_scipy(axis: int) -> None:
    x = rand(3, 4, 5, dtype=np.float64) * 10
    np.testing.assert_allclose(run_op(graph.softmax, x, axis=axis), scipy_softmax(x, axis=axis), rtol=1e-12)
    np.testing.assert_allclose(run_op(graph.log_softmax, x, axis=axis), scipy_log_softmax(x, axis=axis), rtol=1e-12)


def test_softmax_is_numerically_stable() -> None:
    x = np.array([[1000.0, 1000.0, 0.0], [-1000.0, -1000.0, -1000.0]], np.float32)
    np.testing.assert_allclose(run_op(graph.softmax, x), [[0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]], atol=1e-7)
    log = run_op(graph.log_softmax, x)
    np.testing.assert_allclose(log, [[-math.log(2), -math.log(2), -1000 - math.log(2)], [-math.log(3)] * 3], rtol=1e-6)
    h = np.array([10.0, 11.0, 12.0], np.float16)
    y = run_op(graph.softmax, h)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y, scipy_softmax(h.astype(np.float64)), rtol=1e-3)


def test_softmax_edge_shapes() -> None:
    assert run_op(graph.softmax, np.zeros((0, 3), np.float32)).shape == (0, 3)
    np.testing.assert_array_equal(run_op(graph.softmax, np.full((2, 1), 7.0, np.float32)), [[1.0], [1.0]])
    assert str(result_type(graph.log_softmax, t("n", 10), axis=0)) == "tensor<[n]x10xf32>"


# normalizations -------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, -2, 1])
def test_layer_norm(axis: int) -> None:
    x = rand(2, 3, 4, dtype=np.float64)
    shape = x.shape[axis % 3 :]
    w, b = rand(*shape, dtype=np.float64), rand(*shape, dtype=np.float64)
    axes = tuple(range(axis % 3, 3))
    normalized = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + 1e-3)
    np.testing.assert_allclose(run_op(graph.layer_norm, x, w, b, axis=axis, eps=1e-3), normalized * w + b, rtol=1e-10)
    np.testing.assert_allclose(run_op(graph.layer_norm, x, w, axis=axis, eps=1e-3), normalized * w, rtol=1e-10)
    np.testing.assert_allclose(run_op(graph.layer_norm, x, axis=axis, eps=1e-3), normalized, rtol=1e-10)


def test_layer_norm_hand_computed_and_f16() -> None:
    x = np.array([[1.0, 3.0], [5.0, 5.0]], np.float32)
    np.testing.assert_allclose(run_op(graph.layer_norm, x, eps=0.0), np.array([[-1, 1], [math.nan, math.nan]]))
    np.testing.assert_allclose(run_op(graph.layer_norm, x), [[-1, 1], [0, 0]], atol=1e-5)
    h = rand(4, 8, dtype=np.float16)
    y = run_op(graph.layer_norm, h)
    assert y.dtype == np.float16
    hf = h.astype(np.float64)
    expected = (hf - hf.mean(-1, keepdims=True)) / np.sqrt(hf.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, expected, rtol=5e-3, atol=5e-3)
    assert run_op(graph.layer_norm, np.zeros((0, 4), np.float32)).shape == (0, 4)


def test_rms_norm() -> None:
    x = rand(2, 3, 4, dtype=np.float64)
    w = rand(3, 4, dtype=np.float64)
    expected = x / np.sqrt((x**2).mean(axis=(1, 2), keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(run_op(graph.rms_norm, x, w, axis=-2), expected, rtol=1e-10)
    row = np.array([[3.0, 4.0]], np.float32)
    expected_row = np.array([[3, 4]]) / math.sqrt(12.5 + 1e-6)
    np.testing.assert_allclose(run_op(graph.rms_norm, row), expected_row, rtol=1e-6)
    assert str(result_type(graph.rms_norm, t("b", "s", 64), t(64))) == "tensor<[b]x[s]x64xf32>"


@pytest.mark.parametrize(("axis", "shape"), [(1, (2, 3, 4, 5)), (-1, (2, 4, 5, 3)), (1, (4, 3)), (0, (3,))])
def test_batch_norm(axis: int, shape: tuple[int, ...]) -> None:
    x = rand(*shape, dtype=np.float64)
    scale, bias, mean = rand(3, dtype=np.float64), rand(3, dtype=np.float64), rand(3, dtype=np.float64)
    var = np.abs(rand(3, dtype=np.float64)) + 0.1
    bshape = [3 if a == axis % len(shape) else 1 for a in range(len(shape))]
    p = [v.reshape(bshape) for v in (scale, bias, mean, var)]
    expected = (x - p[2]) / np.sqrt(p[3] + 1e-5) * p[0] + p[1]
    y = run_op(graph.batch_norm, x, scale, bias, mean, var, axis=axis)
    np.testing.assert_allclose(y, expected, rtol=1e-10)


def test_batch_norm_hand_computed_and_symbolic() -> None:
    x = np.array([[[[2.0]], [[10.0]]]], np.float32)
    p = [np.array(v, np.float32) for v in ([1, 2], [0, 1], [1, 6], [4, 16])]
    np.testing.assert_allclose(run_op(graph.batch_norm, x, *p, eps=0.0), [[[[0.5]], [[3.0]]]])
    params = [t(3)] * 4
    assert str(result_type(graph.batch_norm, t("n", 3, "h", "w"), *params)) == "tensor<[n]x3x[h]x[w]xf32>"
    assert str(result_type(graph.batch_norm, t("n", "c"), *[t("c")] * 4)) == "tensor<[n]x[c]xf32>"


# empty dims -----------------------------------------------------------------------------------
def _zeros(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float32)


@pytest.mark.parametrize(
    ("op", "arrays", "attrs", "shape"),
    [
        (graph.max_pool2d, [_zeros(1, 0, 4, 4)], {"kernel": [2, 2]}, (1, 0, 3, 3)),
        (graph.avg_pool2d, [_zeros(0, 2, 4, 4)], {"kernel": [2, 2]}, (0, 2, 3, 3)),
        (graph.resize, [_zeros(0, 1, 2, 2)], {"size": [3, 3], "mode": "bilinear"}, (0, 1, 3, 3)),
        (graph.global_max_pool2d, [_zeros(0, 3, 2, 2)], {}, (0, 3, 1, 1)),
        (graph.global_avg_pool2d, [_zeros(2, 0, 2, 2)], {}, (2, 0, 1, 1)),
        (graph.conv_transpose2d, [_zeros(0, 2, 2, 2), _zeros(2, 3, 2, 2)], {}, (0, 3, 3, 3)),
        (graph.conv2d, [_zeros(1, 2, 4, 4), _zeros(0, 2, 3, 3)], {}, (1, 0, 2, 2)),
        (graph.batch_norm, [_zeros(0, 3)] + [_zeros(3)] * 4, {}, (0, 3)),
        (graph.rms_norm, [_zeros(2, 0)], {"axis": 0}, (2, 0)),
    ],
)
def test_empty_dims(op: OpDef, arrays: list[np.ndarray], attrs: dict[str, Any], shape: tuple[int, ...]) -> None:
    assert run_op(op, *arrays, **attrs).shape == shape


def test_conv2d_without_input_channels_gives_the_bias() -> None:
    y = run_op(graph.conv2d, _zeros(1, 0, 4, 4), _zeros(2, 0, 3, 3), np.array([1.5, -2], np.float32))
    np.testing.assert_array_equal(y, np.broadcast_to(np.array([1.5, -2]).reshape(1, 2, 1, 1), (1, 2, 2, 2)))


# diagnostics ----------------------------------------------------------------------------------
NEGATIVE: list[tuple[OpDef, list[Type], dict[str, Any], str]] = [
    (graph.conv2d, [t(1, 6, 5, 5), t(4, 2, 3, 3)], {"groups": 4}, "input channels (6) are not divisible by groups (4)"),
    (
        graph.conv2d,
        [t(1, 4, 5, 5), t(3, 2, 3, 3)],
        {"groups": 2},
        "output channels (3) are not divisible by groups (2)",
    ),
    (
        graph.conv2d,
        [t(1, 3, 5, 5), t(4, 2, 3, 3)],
        {},
        "weight has 2 input channels per group, expected 3 (3 / groups 1)",
    ),
    (
        graph.conv2d,
        [t(1, 4, 5, 5), t(3, 3, 3, 3)],
        {"kernel_layout": "HWIO"},
        "weight has 3 input channels per group, expected 4 (4 / groups 1)",
    ),
    (
        graph.conv2d,
        [t(1, 1, 2, 5), t(1, 1, 3, 3)],
        {},
        "output height would be 0 (< 1): the padded input height 2 is smaller than the dilated kernel height 3",
    ),
    (
        graph.conv2d,
        [t(1, 1, 5, 4), t(1, 1, 3, 3)],
        {"dilations": [1, 2]},
        "output width would be 0 (< 1): the padded input width 4 is smaller than the dilated kernel width 5",
    ),
    (graph.conv2d, [t(1, 3, 5, 5), t(4, 3, 3, 3), t(3)], {}, "bias must have shape [4], got tensor<3xf32>"),
    (graph.conv2d, [t(3, 5, 5), t(4, 3, 3, 3)], {}, "input must have rank 4 (NCHW), got tensor<3x5x5xf32>"),
    (graph.conv2d, [t(1, 3, 5, 5), t(4, 3, 3)], {}, "weight must have rank 4 (OIHW), got tensor<4x3x3xf32>"),
    (
        graph.conv2d,
        [t(1, 3, 5, 5), t(4, 3, 3, 3, element=f16)],
        {},
        "operands must have one element type, got f32, f16",
    ),
    (
        graph.conv2d,
        [t(1, 3, 5, 5, element=i32), t(4, 3, 3, 3, element=i32)],
        {},
        "operand element type must be a float, got i32",
    ),
    (graph.conv2d, [t(1, 3, 5, 5), t(4, 3, 3, 3)], {"strides": [0, 1]}, "strides must be >= 1, got [0, 1]"),
    (
        graph.conv2d,
        [t(1, 3, 5, 5), t(4, 3, 3, 3)],
        {"padding": [0, -1, 0, 0]},
        "padding must be >= 0, got [0, -1, 0, 0]",
    ),
    (graph.conv2d, [t(1, 3, 5, 5), t(4, 3, 3, 3)], {"groups": 0}, "groups must be >= 1, got 0"),
    (
        graph.conv2d,
        [t(1, 3, 5, 5), t(4, 3, 3, 3)],
        {"kernel_layout": "IOHW"},
        'attribute \'kernel_layout\': expected one of "OIHW", "HWIO", "OHWI", got \'IOHW\'',
    ),
    (
        graph.conv2d,
        [t(1, 3, 5, 5), t(4, 3, 3, 3)],
        {"padding": [1, 1]},
        "attribute 'padding': expected a list of 4 integers, got (1, 1)",
    ),
    (graph.conv_transpose2d, [t(1, 2, 3, 3), t(3, 1, 3, 3)], {}, "weight has 3 input channels, expected 2"),
    (
        graph.conv_transpose2d,
        [t(1, 2, 3, 3), t(2, 1, 3, 3)],
        {"strides": [2, 2], "output_padding": [2, 0]},
        "output_padding 2 of the height must be smaller than its stride 2 or its dilation 1",
    ),
    (
        graph.conv_transpose2d,
        [t(1, 1, 1, 1), t(1, 1, 1, 1)],
        {"padding": [1, 0, 0, 0]},
        "output height would be 0 (< 1)",
    ),
    (
        graph.conv_transpose2d,
        [t(1, 2, 3, 3), t(2, 3, 3, 3), t(3)],
        {"groups": 2},
        "bias must have shape [6], got tensor<3xf32>",
    ),
    (graph.max_pool2d, [t(1, 1, 5, 5)], {"kernel": [0, 2]}, "kernel must be >= 1, got [0, 2]"),
    (graph.max_pool2d, [t(1, 1, 5, 5)], {"kernel": [2]}, "attribute 'kernel': expected a list of 2 integers, got (2,)"),
    (graph.max_pool2d, [t(1, 1, 5, 5)], {}, "requires attribute 'kernel' (a list of 2 integers)"),
    (
        graph.max_pool2d,
        [t(1, 1, 5, 5)],
        {"kernel": [3, 3], "padding": [2, 0, 0, 0]},
        "padding 2 of the height must be at most half the kernel extent 3",
    ),
    (
        graph.max_pool2d,
        [t(1, 1, 5, 5)],
        {"kernel": [3, 3], "padding": [0, 0, 0, 3], "dilations": [1, 2]},
        "padding 3 of the width must be at most half the kernel extent 5",
    ),
    (
        graph.avg_pool2d,
        [t(1, 1, 2, 5)],
        {"kernel": [3, 3]},
        "output height would be 0 (< 1): the padded input height 2 is smaller than the dilated kernel height 3",
    ),
    (
        graph.avg_pool2d,
        [t(1, 1, 5, 5, element=i32)],
        {"kernel": [2, 2]},
        "operand element type must be a float, got i32",
    ),
    (graph.global_avg_pool2d, [t(1, 3, 0, 4)], {}, "input height is 0: there is nothing to pool"),
    (graph.global_max_pool2d, [t(2, 3)], {}, "input must have rank 4 (NCHW), got tensor<2x3xf32>"),
    (graph.resize, [t(1, 1, 4, 4)], {"size": [0, 4]}, "size must be >= 1, got [0, 4]"),
    (graph.resize, [t(1, 1, 4, 4)], {}, "requires attribute 'size' (a list of 2 integers)"),
    (
        graph.resize,
        [t(1, 1, 4, 4, element=i32)],
        {"size": [2, 2], "mode": "bilinear"},
        "bilinear resize input element type must be a float, got i32",
    ),
    (graph.resize, [t(1, 1, 4, 0)], {"size": [2, 2]}, "cannot resize an input of width 0"),
    (graph.softmax, [t(2, 3)], {"axis": 2}, "axis 2 is out of range for rank 2"),
    (graph.log_softmax, [t(2, 3, element=i32)], {}, "operand element type must be a float, got i32"),
    (graph.layer_norm, [t(2, 3, 4), t(3, 4)], {}, "weight shape [3, 4] must equal the normalized shape [4]"),
    (
        graph.layer_norm,
        [t(2, 3, 4), t(3, 4), t(4)],
        {"axis": -2},
        "bias shape [4] must equal the normalized shape [3, 4]",
    ),
    (graph.layer_norm, [t(2, 3, 4)], {"axis": 3}, "axis 3 is out of range for rank 3"),
    (graph.rms_norm, [t(2, 4)], {"eps": -1.0}, "eps must be >= 0, got -1.0"),
    (graph.rms_norm, [t("n", 4), t(5)], {}, "weight shape [5] must equal the normalized shape [4]"),
    (graph.batch_norm, [t(2, 3, 4, 4), t(3), t(3), t(3), t(4)], {}, "var must have shape [3], got tensor<4xf32>"),
    (
        graph.batch_norm,
        [t(2, 3, 4, 4), t(3, 1), t(3), t(3), t(3)],
        {},
        "scale must have shape [3], got tensor<3x1xf32>",
    ),
    (graph.batch_norm, [t(3), t(3), t(3), t(3), t(3)], {}, "axis 1 is out of range for rank 1"),
]


@pytest.mark.parametrize(("op", "types", "attrs", "message"), NEGATIVE)
def test_invalid_uses_give_exact_errors(op: OpDef, types: list[Type], attrs: dict[str, Any], message: str) -> None:
    assert op_error(op, *types, **attrs) == message


def test_parsed_ir_reports_location_and_rule() -> None:
    text = (
        "func.func @main(%x: tensor<1x3x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {\n"
        "  %0 = graph.conv2d %x, %w : (tensor<1x3x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>\n"
        "  func.return %0 : tensor<1x4x3x3xf32>\n"
        "}\n"
    )
    with pytest.raises(VerifyError, match=re.escape("nn.mlir:2:8: error: 'graph.conv2d' op weight has 2 input")):
        tm.parse_module(text, "nn.mlir")
    wrong_result = text.replace("4x2x3x3", "4x3x3x3").replace("1x4x3x3", "1x4x2x3")
    with pytest.raises(VerifyError, match=re.escape("result #0 has type tensor<1x4x2x3xf32>, but the operands give")):
        tm.parse_module(wrong_result)
    missing = (
        "func.func @main(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {\n"
        "  %0 = graph.max_pool2d %x : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>\n"
        "  func.return %0 : tensor<1x1x2x2xf32>\n"
        "}\n"
    )
    with pytest.raises(VerifyError, match=re.escape("'graph.max_pool2d' op requires attribute 'kernel'")):
        tm.parse_module(missing)


def test_attributes_print_only_when_not_default() -> None:
    attrs: dict[str, Any] = {"kernel": [2, 2], "layout": "NHWC", "count_include_pad": True}
    module = build_module([t(1, 4, 4, 2)], lambda x: graph.avg_pool2d(x, **attrs))
    text = tm.print_module(module)
    assert '{kernel = [2, 2], layout = "NHWC", count_include_pad = true}' in text
    assert "strides" not in text and "ceil_mode" not in text
