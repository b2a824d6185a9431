"""Neural-network ops: convolutions, pooling, resizing, softmax and normalizations.

Spatial ops take 4-D tensors in ``NCHW`` or ``NHWC`` layout and pad as ``[top, left, bottom,
right]``. Window counts follow PyTorch: ``floor((H + top + bottom - dilation * (k - 1) - 1) / stride)
+ 1``; ``ceil_mode`` rounds up but drops a last window that would start in the bottom/right padding.
References compute in at least f32 and return the input's dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...attributes import BoolAttr, FloatAttr, IntAttr, IntsAttr, StrAttr
from ...opdef import InferError, define
from ...shapes import dims_equal, expect_tensor, normalize_axis
from ...types import DYN, Dim, ScalarType, TensorType, Type
from .common import check_dtype, same_element, tensors

# Where N, C, H, W (data) and O, I, H, W (kernels) sit in each layout; transposing by the tuple
# turns that layout into NCHW / OIHW.
_LAYOUT_AXES = {"NCHW": (0, 1, 2, 3), "NHWC": (0, 3, 1, 2)}
_KERNEL_AXES = {"OIHW": (0, 1, 2, 3), "HWIO": (3, 2, 0, 1), "OHWI": (0, 3, 1, 2)}
_SPATIAL = ("height", "width")

LAYOUT = StrAttr("NCHW", choices=tuple(_LAYOUT_AXES))
STRIDES = IntsAttr((1, 1), length=2)
PADDING = IntsAttr((0, 0, 0, 0), length=4)
DILATIONS = IntsAttr((1, 1), length=2)

Pads = tuple[tuple[int, int], tuple[int, int]]


# type inference helpers ----------------------------------------------------------------------
def _fmt(shape: Sequence[Dim]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _optional(t: Type | None, what: str) -> TensorType | None:
    return None if t is None else expect_tensor(t, what)


def _unpack(t: TensorType, layout: str) -> tuple[Dim, Dim, Dim, Dim]:
    """(N, C, H, W) of a 4-D input in ``layout``."""
    if t.rank != 4:
        raise InferError(f"input must have rank 4 ({layout}), got {t}")
    n, c, h, w = (t.shape[a] for a in _LAYOUT_AXES[layout])
    return n, c, h, w


def _pack(dims: tuple[Dim, Dim, Dim, Dim], layout: str) -> tuple[Dim, ...]:
    """The shape holding (N, C, H, W) in ``layout``."""
    shape: list[Dim] = [0, 0, 0, 0]
    for axis, d in zip(_LAYOUT_AXES[layout], dims):
        shape[axis] = d
    return tuple(shape)


def _at_least(values: Sequence[int], low: int, what: str) -> None:
    if any(v < low for v in values):
        raise InferError(f"{what} must be >= {low}, got {list(values)}")


def _check_window_attrs(strides: Sequence[int], padding: Sequence[int], dilations: Sequence[int]) -> None:
    _at_least(strides, 1, "strides")
    _at_least(padding, 0, "padding")
    _at_least(dilations, 1, "dilations")


def _divisible(channels: Dim, groups: int, what: str) -> None:
    if isinstance(channels, int) and channels % groups:
        raise InferError(f"{what} ({channels}) are not divisible by groups ({groups})")


def _check_vector(t: TensorType | None, size: Dim, what: str) -> None:
    if t is not None and (t.rank != 1 or dims_equal(t.shape[0], size) is False):
        raise InferError(f"{what} must have shape [{size}], got {t}")


def _window_output(
    size: Dim, kernel: Dim, stride: int, dilation: int, pad: tuple[int, int], ceil_mode: bool, what: str
) -> Dim:
    """How many windows fit along one spatial dim (PyTorch's rule), or InferError when none does."""
    if not isinstance(kernel, int):
        return DYN
    extent = dilation * (kernel - 1) + 1
    if not isinstance(size, int):
        return size if stride == 1 and pad[0] + pad[1] == extent - 1 else DYN
    padded = size + pad[0] + pad[1]
    out = (padded - extent + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad[0]:
        out -= 1
    if out < 1:
        raise InferError(
            f"output {what} would be {out} (< 1): the padded input {what} {padded} "
            f"is smaller than the dilated kernel {what} {extent}"
        )
    return out


def _transposed_output(
    size: Dim, kernel: Dim, stride: int, dilation: int, pad: tuple[int, int], out_pad: int, what: str
) -> Dim:
    """Output length of a transposed convolution along one spatial dim, or InferError when < 1."""
    if not isinstance(kernel, int):
        return DYN
    grow = dilation * (kernel - 1) + 1 + out_pad - pad[0] - pad[1]
    if not isinstance(size, int):
        return size if stride == 1 and grow == 1 else DYN
    out = (size - 1) * stride + grow
    if out < 1:
        raise InferError(f"output {what} would be {out} (< 1)")
    return out


def _window_outputs(
    hw: Sequence[Dim],
    kernel: Sequence[Dim],
    strides: Sequence[int],
    padding: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
) -> tuple[Dim, Dim]:
    """The window counts along height and width (see ``_window_output``)."""
    oh, ow = (
        _window_output(hw[i], kernel[i], strides[i], dilations[i], (padding[i], padding[i + 2]), ceil_mode, name)
        for i, name in enumerate(_SPATIAL)
    )
    return oh, ow


def _transposed_outputs(
    hw: Sequence[Dim],
    kernel: Sequence[Dim],
    strides: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilations: Sequence[int],
) -> tuple[Dim, Dim]:
    """The transposed convolution's output height and width (see ``_transposed_output``)."""
    oh, ow = (
        _transposed_output(
            hw[i], kernel[i], strides[i], dilations[i], (padding[i], padding[i + 2]), output_padding[i], name
        )
        for i, name in enumerate(_SPATIAL)
    )
    return oh, ow


def _conv_operands(
    x: Type,
    w: Type,
    b: Type | None,
    strides: Sequence[int],
    padding: Sequence[int],
    dilations: Sequence[int],
    groups: int,
    layout: str,
    output_padding: Sequence[int] = (),
) -> tuple[TensorType, TensorType | None, ScalarType, tuple[Dim, Dim, Dim, Dim]]:
    """The weight, bias, element type and input (N, C, H, W) of a convolution, after the checks all share."""
    xt, wt = tensors(x, w)
    bt = _optional(b, "bias")
    element = same_element([xt, wt] + ([bt] if bt else []))
    check_dtype(xt, "float")
    _check_window_attrs(strides, padding, dilations)
    _at_least(output_padding, 0, "output_padding")
    if groups < 1:
        raise InferError(f"groups must be >= 1, got {groups}")
    return wt, bt, element, _unpack(xt, layout)


# reference helpers ---------------------------------------------------------------------------
def _acc(x: np.ndarray) -> np.dtype:
    """The dtype references compute in: at least f32."""
    return np.promote_types(x.dtype, np.float32)


def _to_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    return x.transpose(_LAYOUT_AXES[layout])


def _from_nchw(y: np.ndarray, layout: str) -> np.ndarray:
    return y.transpose(np.argsort(_LAYOUT_AXES[layout]))


def _plan(
    hw: tuple[int, int],
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
) -> tuple[tuple[int, int], Pads]:
    """Output size and the (before, after) padding that holds every window, per spatial dim."""
    oh, ow = _window_outputs(hw, kernel, strides, padding, dilations, ceil_mode)
    assert isinstance(oh, int) and isinstance(ow, int)
    pads: list[tuple[int, int]] = []
    for i, o in enumerate((oh, ow)):
        lo, hi = padding[i], padding[i + 2]
        extent = dilations[i] * (kernel[i] - 1) + 1
        pads.append((lo, max(hi, (o - 1) * strides[i] + extent - hw[i] - lo)))
    return (oh, ow), (pads[0], pads[1])


def _pad(x: np.ndarray, pads: Pads, value: float = 0.0) -> np.ndarray:
    return np.pad(x, ((0, 0), (0, 0), *pads), constant_values=value)


def _conv_result(y: np.ndarray, b: np.ndarray | None, layout: str, dtype: np.dtype) -> np.ndarray:
    """NCHW ``y`` plus the optional per-channel bias, in ``layout`` and ``dtype``."""
    if b is not None:
        y = y + b.astype(y.dtype).reshape(1, y.shape[1], 1, 1)
    return _from_nchw(y, layout).astype(dtype)


def _windows(
    x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int], out: tuple[int, int]
) -> np.ndarray:
    """A strided view [N, C, OH, OW, KH, KW] of the windows over padded NCHW ``x``."""
    extent = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilations))
    view = sliding_window_view(x, extent, axis=(2, 3))
    (sh, sw), (dh, dw) = strides, dilations
    return view[:, :, ::sh, ::sw, ::dh, ::dw][:, :, : out[0], : out[1]]


# convolutions ---------------------------------------------------------------------------------
def _conv2d_infer(
    x: Type,
    w: Type,
    b: Type | None,
    *,
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    dilations: tuple[int, ...],
    groups: int,
    layout: str,
    kernel_layout: str,
) -> Type:
    wt, bt, element, (n, c, h, width) = _conv_operands(x, w, b, strides, padding, dilations, groups, layout)
    if wt.rank != 4:
        raise InferError(f"weight must have rank 4 ({kernel_layout}), got {wt}")
    o, i, kh, kw = (wt.shape[a] for a in _KERNEL_AXES[kernel_layout])
    _divisible(c, groups, "input channels")
    _divisible(o, groups, "output channels")
    if isinstance(c, int) and isinstance(i, int) and i != c // groups:
        raise InferError(f"weight has {i} input channels per group, expected {c // groups} ({c} / groups {groups})")
    _check_vector(bt, o, "bias")
    oh, ow = _window_outputs((h, width), (kh, kw), strides, padding, dilations, False)
    return TensorType(_pack((n, o, oh, ow), layout), element)


def _conv2d_reference(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    *,
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    dilations: tuple[int, ...],
    groups: int,
    layout: str,
    kernel_layout: str,
) -> np.ndarray:
    acc = _acc(x)
    xc = _to_nchw(x, layout).astype(acc)
    wc = w.transpose(_KERNEL_AXES[kernel_layout]).astype(acc)
    n, c = xc.shape[:2]
    o, cg, kh, kw = wc.shape
    out, pads = _plan((xc.shape[2], xc.shape[3]), (kh, kw), strides, padding, dilations, False)
    win = _windows(_pad(xc, pads), (kh, kw), strides, dilations, out).reshape(n, groups, c // groups, *out, kh, kw)
    kernel = wc.reshape(groups, o // groups, cg, kh, kw)
    y = np.einsum("ngchwij,gocij->ngohw", win, kernel, optimize=True).reshape(n, o, *out)
    return _conv_result(y, b, layout, x.dtype)


conv2d = define(
    "graph.conv2d",
    operands=("input", "weight", "bias?"),
    attrs={
        "strides": STRIDES,
        "padding": PADDING,
        "dilations": DILATIONS,
        "groups": IntAttr(1),
        "layout": LAYOUT,
        "kernel_layout": StrAttr("OIHW", choices=tuple(_KERNEL_AXES)),
    },
    infer=_conv2d_infer,
    reference=_conv2d_reference,
    traits=("pure",),
    doc="2-D convolution (cross-correlation) with zero padding [top, left, bottom, right], dilation and "
    "groups; the weight holds O x C/groups x kH x kW in `kernel_layout`, the bias O values.",
)


def _conv_transpose2d_infer(
    x: Type,
    w: Type,
    b: Type | None,
    *,
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    output_padding: tuple[int, ...],
    dilations: tuple[int, ...],
    groups: int,
    layout: str,
) -> Type:
    wt, bt, element, (n, c, h, width) = _conv_operands(
        x, w, b, strides, padding, dilations, groups, layout, output_padding
    )
    if wt.rank != 4:
        raise InferError(f"weight must have rank 4 (C_in, C_out / groups, kH, kW), got {wt}")
    ci, og, kh, kw = wt.shape
    _divisible(c, groups, "input channels")
    if dims_equal(ci, c) is False:
        raise InferError(f"weight has {ci} input channels, expected {c}")
    o: Dim = og * groups if isinstance(og, int) else (og if groups == 1 else DYN)
    _check_vector(bt, o, "bias")
    for i, name in enumerate(_SPATIAL):
        if output_padding[i] >= strides[i] and output_padding[i] >= dilations[i]:
            raise InferError(
                f"output_padding {output_padding[i]} of the {name} must be smaller than "
                f"its stride {strides[i]} or its dilation {dilations[i]}"
            )
    oh, ow = _transposed_outputs((h, width), (kh, kw), strides, padding, output_padding, dilations)
    return TensorType(_pack((n, o, oh, ow), layout), element)


def _conv_transpose2d_reference(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    *,
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    output_padding: tuple[int, ...],
    dilations: tuple[int, ...],
    groups: int,
    layout: str,
) -> np.ndarray:
    acc = _acc(x)
    xc = _to_nchw(x, layout).astype(acc)
    n, c, h, width = xc.shape
    _, og, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dilations
    _transposed_outputs((h, width), (kh, kw), strides, padding, output_padding, dilations)
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + output_padding[0]
    full_w = (width - 1) * sw + dw * (kw - 1) + 1 + output_padding[1]
    xg = xc.reshape(n, groups, c // groups, h, width)
    wg = w.astype(acc).reshape(groups, c // groups, og, kh, kw)
    full = np.zeros((n, groups, og, full_h, full_w), acc)
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + (h - 1) * sh + 1, sh)
            cols = slice(j * dw, j * dw + (width - 1) * sw + 1, sw)
            full[:, :, :, rows, cols] += np.einsum("ngchw,gco->ngohw", xg, wg[..., i, j])
    y = full.reshape(n, groups * og, full_h, full_w)[
        :, :, padding[0] : full_h - padding[2], padding[1] : full_w - padding[3]
    ]
    return _conv_result(y, b, layout, x.dtype)


conv_transpose2d = define(
    "graph.conv_transpose2d",
    operands=("input", "weight", "bias?"),
    attrs={
        "strides": STRIDES,
        "padding": PADDING,
        "output_padding": IntsAttr((0, 0), length=2),
        "dilations": DILATIONS,
        "groups": IntAttr(1),
        "layout": LAYOUT,
    },
    infer=_conv_transpose2d_infer,
    reference=_conv_transpose2d_reference,
    traits=("pure",),
    doc="Transposed 2-D convolution as torch.nn.functional.conv_transpose2d: the weight is "
    "C_in x C_out/groups x kH x kW; padding [top, left, bottom, right] crops the output and "
    "output_padding extends it at the bottom/right.",
)


# pooling -------------------------------------------------------------------------------------
def _pool_infer(
    t: TensorType,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    dilations: tuple[int, ...],
    ceil_mode: bool,
    layout: str,
) -> Type:
    _at_least(kernel, 1, "kernel")
    _check_window_attrs(strides, padding, dilations)
    n, c, h, w = _unpack(t, layout)
    for i, name in enumerate(_SPATIAL):
        extent = dilations[i] * (kernel[i] - 1) + 1
        for p in (padding[i], padding[i + 2]):
            if p > extent // 2:
                raise InferError(f"padding {p} of the {name} must be at most half the kernel extent {extent}")
    oh, ow = _window_outputs((h, w), kernel, strides, padding, dilations, ceil_mode)
    return t.with_shape(_pack((n, c, oh, ow), layout))


def _max_pool2d_infer(
    x: Type,
    *,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    dilations: tuple[int, ...],
    ceil_mode: bool,
    layout: str,
) -> Type:
    (t,) = tensors(x)
    check_dtype(t, "number")
    return _pool_infer(t, kernel, strides, padding, dilations, ceil_mode, layout)


def _max_pool2d_reference(
    x: np.ndarray,
    *,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    dilations: tuple[int, ...],
    ceil_mode: bool,
    layout: str,
) -> np.ndarray:
    xc = _to_nchw(x, layout)
    out, pads = _plan((xc.shape[2], xc.shape[3]), kernel, strides, padding, dilations, ceil_mode)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    y = _windows(_pad(xc, pads, lowest), kernel, strides, dilations, out).max(axis=(-2, -1))
    return _from_nchw(y, layout)


max_pool2d = define(
    "graph.max_pool2d",
    operands=("x",),
    attrs={
        "kernel": IntsAttr(length=2),
        "strides": STRIDES,
        "padding": PADDING,
        "dilations": DILATIONS,
        "ceil_mode": BoolAttr(False),
        "layout": LAYOUT,
    },
    infer=_max_pool2d_infer,
    reference=_max_pool2d_reference,
    traits=("pure",),
    doc="2-D max pooling as torch.nn.functional.max_pool2d; padding [top, left, bottom, right] holds "
    "-inf and may be at most half the dilated kernel; NaN propagates.",
)


def _avg_pool2d_infer(
    x: Type,
    *,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    ceil_mode: bool,
    count_include_pad: bool,
    layout: str,
) -> Type:
    (t,) = tensors(x)
    check_dtype(t, "float")
    return _pool_infer(t, kernel, strides, padding, (1, 1), ceil_mode, layout)


def _avg_pool2d_reference(
    x: np.ndarray,
    *,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    ceil_mode: bool,
    count_include_pad: bool,
    layout: str,
) -> np.ndarray:
    xc = _to_nchw(x, layout).astype(_acc(x))
    h, w = xc.shape[2:]
    out, pads = _plan((h, w), kernel, strides, padding, (1, 1), ceil_mode)
    xp = _pad(xc, pads)
    # Divisors count the input cells of each window, plus its declared padding cells when
    # count_include_pad; never the cells ceil_mode adds past the padding.
    mask = np.zeros((1, 1, *xp.shape[2:]), xc.dtype)
    if count_include_pad:
        mask[..., : h + padding[0] + padding[2], : w + padding[1] + padding[3]] = 1
    else:
        mask[..., padding[0] : padding[0] + h, padding[1] : padding[1] + w] = 1
    sums = _windows(xp, kernel, strides, (1, 1), out).sum(axis=(-2, -1))
    counts = _windows(mask, kernel, strides, (1, 1), out).sum(axis=(-2, -1))
    return _from_nchw(sums / counts, layout).astype(x.dtype)


avg_pool2d = define(
    "graph.avg_pool2d",
    operands=("x",),
    attrs={
        "kernel": IntsAttr(length=2),
        "strides": STRIDES,
        "padding": PADDING,
        "ceil_mode": BoolAttr(False),
        "count_include_pad": BoolAttr(False),
        "layout": LAYOUT,
    },
    infer=_avg_pool2d_infer,
    reference=_avg_pool2d_reference,
    traits=("pure",),
    doc="2-D average pooling as torch.nn.functional.avg_pool2d (padding at most half the kernel): the "
    "divisor counts input cells, plus padding cells when count_include_pad, never cells past the padding.",
)


def _global_pool_infer(dtypes: str) -> Callable[..., Type]:
    def infer(x: Type, *, layout: str) -> Type:
        (t,) = tensors(x)
        check_dtype(t, dtypes)
        n, c, h, w = _unpack(t, layout)
        for d, name in zip((h, w), _SPATIAL):
            if d == 0:
                raise InferError(f"input {name} is 0: there is nothing to pool")
        return t.with_shape(_pack((n, c, 1, 1), layout))

    return infer


def _global_avg_pool2d_reference(x: np.ndarray, *, layout: str) -> np.ndarray:
    axes = _LAYOUT_AXES[layout][2:]
    total = x.astype(_acc(x)).sum(axis=axes, keepdims=True)
    with np.errstate(invalid="ignore"):
        return (total / (x.shape[axes[0]] * x.shape[axes[1]])).astype(x.dtype)


global_avg_pool2d = define(
    "graph.global_avg_pool2d",
    operands=("x",),
    attrs={"layout": LAYOUT},
    infer=_global_pool_infer("float"),
    reference=_global_avg_pool2d_reference,
    traits=("pure",),
    doc="The mean over both spatial dims, which become 1.",
)
global_max_pool2d = define(
    "graph.global_max_pool2d",
    operands=("x",),
    attrs={"layout": LAYOUT},
    infer=_global_pool_infer("number"),
    reference=lambda x, *, layout: x.max(axis=_LAYOUT_AXES[layout][2:], keepdims=True),
    traits=("pure",),
    doc="The maximum over both spatial dims, which become 1; NaN propagates.",
)


# resize --------------------------------------------------------------------------------------
def _resize_infer(
    x: Type, *, size: tuple[int, ...], mode: str, coordinate_mode: str, nearest_mode: str, layout: str
) -> Type:
    (t,) = tensors(x)
    if mode == "bilinear":
        check_dtype(t, "float", "bilinear resize input")
    _at_least(size, 1, "size")
    n, c, h, w = _unpack(t, layout)
    for d, name in zip((h, w), _SPATIAL):
        if d == 0:
            raise InferError(f"cannot resize an input of {name} 0")
    return t.with_shape(_pack((n, c, size[0], size[1]), layout))


def _source_coords(out: int, size: int, coordinate_mode: str) -> np.ndarray:
    """Where each of ``out`` output positions samples an axis of ``size`` (ONNX Resize's transforms)."""
    i = np.arange(out, dtype=np.float64)
    if coordinate_mode == "asymmetric":
        return i * size / out
    if coordinate_mode == "align_corners":
        return i * (size - 1) / (out - 1) if out > 1 else np.zeros(out)
    if coordinate_mode == "pytorch_half_pixel" and out == 1:
        return np.full(1, -0.5)
    return (i + 0.5) * size / out - 0.5


_NEAREST: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "floor": np.floor,
    "ceil": np.ceil,
    "round_prefer_floor": lambda c: np.ceil(c - 0.5),
    "round_prefer_ceil": lambda c: np.floor(c + 0.5),
}


def _resize_axis(x: np.ndarray, axis: int, out: int, mode: str, coordinate_mode: str, nearest_mode: str) -> np.ndarray:
    size = x.shape[axis]
    coords = _source_coords(out, size, coordinate_mode)
    if mode == "nearest":
        return x.take(np.clip(_NEAREST[nearest_mode](coords), 0, size - 1).astype(np.intp), axis=axis)
    lo = np.floor(coords)
    frac = (coords - lo).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
    first = x.take(np.clip(lo, 0, size - 1).astype(np.intp), axis=axis)
    second = x.take(np.clip(lo + 1, 0, size - 1).astype(np.intp), axis=axis)
    return first * (1 - frac) + second * frac


def _resize_reference(
    x: np.ndarray, *, size: tuple[int, ...], mode: str, coordinate_mode: str, nearest_mode: str, layout: str
) -> np.ndarray:
    y = x if mode == "nearest" else x.astype(np.float64)
    for axis, out in zip(_LAYOUT_AXES[layout][2:], size):
        y = _resize_axis(y, axis, out, mode, coordinate_mode, nearest_mode)
    return y.astype(x.dtype)


resize = define(
    "graph.resize",
    operands=("x",),
    attrs={
        "size": IntsAttr(length=2),
        "mode": StrAttr("nearest", choices=("nearest", "bilinear")),
        "coordinate_mode": StrAttr(
            "asymmetric", choices=("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel")
        ),
        "nearest_mode": StrAttr("floor", choices=("floor", "round_prefer_floor", "round_prefer_ceil", "ceil")),
        "layout": LAYOUT,
    },
    infer=_resize_infer,
    reference=_resize_reference,
    traits=("pure",),
    doc="Resize the spatial dims to `size` as ONNX Resize does (sampling positions by coordinate_mode, "
    "clamped to the edges); nearest+asymmetric+floor and bilinear+half_pixel/align_corners match "
    "torch.nn.functional.interpolate.",
)


# softmax and normalizations ------------------------------------------------------------------
def _softmax_infer(x: Type, *, axis: int) -> Type:
    (t,) = tensors(x)
    check_dtype(t, "float")
    normalize_axis(axis, t.rank)
    return t


def _softmax(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    if x.size == 0:
        return x.copy()
    a = x.astype(_acc(x))
    with np.errstate(invalid="ignore", divide="ignore"):
        shifted = a - a.max(axis=axis, keepdims=True)
        e = np.exp(shifted)
        total = e.sum(axis=axis, keepdims=True)
        y = shifted - np.log(total) if log else e / total
    return y.astype(x.dtype)


softmax = define(
    "graph.softmax",
    operands=("x",),
    attrs={"axis": IntAttr(-1)},
    infer=_softmax_infer,
    reference=lambda x, *, axis: _softmax(x, axis, log=False),
    traits=("pure",),
    doc="exp(x) / sum(exp(x)) along `axis`, computed after subtracting the maximum.",
)
log_softmax = define(
    "graph.log_softmax",
    operands=("x",),
    attrs={"axis": IntAttr(-1)},
    infer=_softmax_infer,
    reference=lambda x, *, axis: _softmax(x, axis, log=True),
    traits=("pure",),
    doc="x - max - log(sum(exp(x - max))) along `axis`: the log of softmax without overflow.",
)


def _check_eps(eps: float) -> None:
    if not eps >= 0:
        raise InferError(f"eps must be >= 0, got {eps}")


def _check_param_shape(t: TensorType | None, shape: tuple[Dim, ...], what: str) -> None:
    if t is None:
        return
    if t.rank != len(shape) or any(dims_equal(a, b) is False for a, b in zip(t.shape, shape)):
        raise InferError(f"{what} shape {_fmt(t.shape)} must equal the normalized shape {_fmt(shape)}")


def _norm_infer(x: Type, params: dict[str, Type | None], axis: int, eps: float) -> Type:
    (t,) = tensors(x)
    present = {name: _optional(p, name) for name, p in params.items()}
    same_element([t] + [p for p in present.values() if p is not None])
    check_dtype(t, "float")
    _check_eps(eps)
    normalized = t.shape[normalize_axis(axis, t.rank) :]
    for name, p in present.items():
        _check_param_shape(p, normalized, name)
    return t


def _mean(a: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod([a.shape[i] for i in axes]))
    with np.errstate(invalid="ignore", divide="ignore"):
        return a.sum(axis=axes, keepdims=True) / count


def _scale_shift(y: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None) -> np.ndarray:
    if weight is not None:
        y = y * weight.astype(y.dtype)
    if bias is not None:
        y = y + bias.astype(y.dtype)
    return y


def _layer_norm_reference(
    x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None, *, axis: int, eps: float
) -> np.ndarray:
    a = x.astype(_acc(x))
    axes = tuple(range(axis % x.ndim, x.ndim))
    centered = a - _mean(a, axes)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = centered / np.sqrt(_mean(centered * centered, axes) + eps)
    return _scale_shift(y, weight, bias).astype(x.dtype)


layer_norm = define(
    "graph.layer_norm",
    operands=("x", "weight?", "bias?"),
    attrs={"axis": IntAttr(-1), "eps": FloatAttr(1e-5)},
    infer=lambda x, weight, bias, *, axis, eps: _norm_infer(x, {"weight": weight, "bias": bias}, axis, eps),
    reference=_layer_norm_reference,
    traits=("pure",),
    doc="(x - mean) / sqrt(var + eps) * weight + bias over dims axis..rank-1 (biased variance); "
    "weight and bias have the normalized shape.",
)


def _rms_norm_reference(x: np.ndarray, weight: np.ndarray | None, *, axis: int, eps: float) -> np.ndarray:
    a = x.astype(_acc(x))
    axes = tuple(range(axis % x.ndim, x.ndim))
    with np.errstate(invalid="ignore", divide="ignore"):
        y = a / np.sqrt(_mean(a * a, axes) + eps)
    return _scale_shift(y, weight, None).astype(x.dtype)


rms_norm = define(
    "graph.rms_norm",
    operands=("x", "weight?"),
    attrs={"axis": IntAttr(-1), "eps": FloatAttr(1e-6)},
    infer=lambda x, weight, *, axis, eps: _norm_infer(x, {"weight": weight}, axis, eps),
    reference=_rms_norm_reference,
    traits=("pure",),
    doc="x / sqrt(mean(x**2) + eps) * weight over dims axis..rank-1; weight has the normalized shape.",
)

_BATCH_NORM_PARAMS = ("scale", "bias", "mean", "var")


def _batch_norm_infer(x: Type, scale: Type, bias: Type, mean: Type, var: Type, *, eps: float, axis: int) -> Type:
    ts = tensors(x, scale, bias, mean, var)
    same_element(ts)
    check_dtype(ts[0], "float")
    _check_eps(eps)
    channels = ts[0].shape[normalize_axis(axis, ts[0].rank)]
    for name, p in zip(_BATCH_NORM_PARAMS, ts[1:]):
        _check_vector(p, channels, name)
    return ts[0]


def _batch_norm_reference(
    x: np.ndarray,
    scale: np.ndarray,
    bias: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    *,
    eps: float,
    axis: int,
) -> np.ndarray:
    acc = _acc(x)
    shape = [-1 if a == axis % x.ndim else 1 for a in range(x.ndim)]
    s, b, m, v = (p.astype(acc).reshape(shape) for p in (scale, bias, mean, var))
    with np.errstate(invalid="ignore", divide="ignore"):
        y = (x.astype(acc) - m) / np.sqrt(v + eps) * s + b
    return y.astype(x.dtype)


batch_norm = define(
    "graph.batch_norm",
    operands=("x", "scale", "bias", "mean", "var"),
    attrs={"eps": FloatAttr(1e-5), "axis": IntAttr(1)},
    infer=_batch_norm_infer,
    reference=_batch_norm_reference,
    traits=("pure",),
    doc="Inference batch normalization (x - mean) / sqrt(var + eps) * scale + bias, with each "
    "parameter a vector along the channel `axis`.",
)
