"""The quant dialect's ops: quantize, dequantize, the k-bit weight matmul (logical and packed) and the k-bit
embedding lookup, each with numpy reference semantics.

A quantized tensor holds k-bit integers ``q`` standing for ``(q - zero) * scale``, with the scales and the
optional zero points (floats, so they may be float offsets too) laid out as the type says
(:func:`~tensorium.ir.dialects.quant.types.scale_shape`). In the interpreter its elements are the integers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...attributes import IntAttr, StrAttr, TypeAttr
from ...opdef import InferError, define
from ...shapes import check_dims_match, expect_tensor
from ...types import FloatType, IntegerType, QuantizedType, TensorType, Type
from . import layouts
from .types import expand, scale_shape


def _tensor(t: Type | None, what: str) -> TensorType:
    return expect_tensor(t, what)


def _quantized(t: Type | None, what: str) -> tuple[TensorType, QuantizedType]:
    tensor = _tensor(t, what)
    if not isinstance(tensor.element, QuantizedType):
        raise InferError(f"{what} must be a tensor of a !quant<...> type, got {tensor}")
    return tensor, tensor.element


def _check_params(scale: Type, zero: Type | None, q: QuantizedType, shape: tuple, what: str) -> None:
    """InferError unless the scales (and zero points) are float tensors of the shape ``q`` gives ``shape``."""
    try:
        want = scale_shape(q, shape)
    except ValueError as e:
        raise InferError(f"{what}: {e}") from None
    for name, t in (("scale", scale), ("zero point", zero)):
        if t is None:
            continue
        tensor = _tensor(t, name)
        if tensor.element != q.expressed:
            raise InferError(f"{name} element type must be {q.expressed} (the expressed type), got {tensor.element}")
        if tensor.rank != len(want) or any(
            isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(tensor.shape, want)
        ):
            shown = "x".join(map(str, want)) or "a scalar"
            raise InferError(f"{name} of {what} must have shape {shown} for {q}, got {tensor}")


def _params(q: np.ndarray, scale: np.ndarray, zero: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    s = expand(scale, q.shape).astype(np.float64)
    z = np.zeros(q.shape) if zero is None else expand(zero, q.shape).astype(np.float64)
    return s, z


def dequantized(q: np.ndarray, scale: np.ndarray, zero: np.ndarray | None) -> np.ndarray:
    """``(q - zero) * scale`` in float64, scales and zero points expanded to ``q``'s shape."""
    s, z = _params(q, scale, zero)
    return (q.astype(np.float64) - z) * s


# quantize / dequantize -------------------------------------------------------------------------
def _quantize_infer(x: Type, scale: Type, zero: Type | None, *, type: Type) -> Type:
    t = _tensor(x, "input")
    if not isinstance(type, QuantizedType):
        raise InferError(f"attribute 'type' must be a !quant<...> type, got {type}")
    if t.element != type.expressed:
        raise InferError(f"input element type must be {type.expressed} (the expressed type of {type}), got {t.element}")
    _check_params(scale, zero, type, t.shape, "quantize")
    return t.with_element(type)


def _quantize_reference(x: np.ndarray, scale: np.ndarray, zero: np.ndarray | None, *, type: Type) -> np.ndarray:
    assert isinstance(type, QuantizedType)
    s, z = _params(x, scale, zero)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.rint(x.astype(np.float64) / s + z)
    return np.clip(np.nan_to_num(q), *type.code_range).astype(np.int64)


quantize = define(
    "quant.quantize",
    operands=("input", "scale", "zero?"),
    attrs={"type": TypeAttr()},
    infer=_quantize_infer,
    reference=_quantize_reference,
    traits=("pure",),
    doc="Quantize a float tensor to `type`: `clamp(round_half_even(x / scale + zero), qmin, qmax)`, with scales "
    "and zero points laid out as the type says (per tensor, per channel, per group).",
)


def _dequantize_infer(q: Type, scale: Type, zero: Type | None) -> Type:
    t, qt = _quantized(q, "input")
    _check_params(scale, zero, qt, t.shape, "dequantize")
    return t.with_element(qt.expressed)


def _dequantize_reference(q: np.ndarray, scale: np.ndarray, zero: np.ndarray | None) -> np.ndarray:
    return dequantized(q, scale, zero)


dequantize = define(
    "quant.dequantize",
    operands=("input", "scale", "zero?"),
    infer=_dequantize_infer,
    reference=_dequantize_reference,
    traits=("pure",),
    doc="The floats a quantized tensor stands for: `(q - zero) * scale`.",
)


# matmul ------------------------------------------------------------------------------------------
def _matmul_infer(x: Type, weight: Type, scale: Type, zero: Type | None) -> Type:
    a = _tensor(x, "input")
    w, qt = _quantized(weight, "weight")
    if w.rank != 2:
        raise InferError(f"weight must be a matrix [N, K], got {w}")
    if a.rank < 1 or a.element != qt.expressed:
        raise InferError(f"input must be a tensor [..., K] of {qt.expressed}, got {a}")
    check_dims_match(a.shape[-1], w.shape[1], "input and weight contraction dimensions differ")
    _check_params(scale, zero, qt, w.shape, "the weight")
    return TensorType((*a.shape[:-1], w.shape[0]), qt.expressed)


def product(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``x @ weight.T`` in ``x``'s float type (f32 for narrower ones), as ``graph.matmul`` and the kernels compute
    it: a product beyond f32's range is infinite here too, not a finite float64 (found by the fuzzer)."""
    dtype = np.float32 if x.dtype.itemsize < 4 else x.dtype
    return np.matmul(x.astype(dtype), weight.astype(dtype).T)


def _matmul_reference(x: np.ndarray, w: np.ndarray, scale: np.ndarray, zero: np.ndarray | None) -> np.ndarray:
    return product(x, dequantized(w, scale, zero))


matmul = define(
    "quant.matmul",
    operands=("input", "weight", "scale", "zero?"),
    infer=_matmul_infer,
    reference=_matmul_reference,
    traits=("pure",),
    doc="`x @ dequantize(W)^T`: float activations [..., K] times a k-bit weight [N, K] (k = 1..8, signed or "
    "unsigned, scales per tensor, per output channel or per group along K) -> [..., N].",
)


def _packed_infer(
    x: Type, packed: Type, scale: Type, zero: Type, *, bits: int, cols: int, group: int, lanes: int, layout: str
) -> Type:
    a, p, s, z = (_tensor(t, what) for t, what in ((x, "input"), (packed, "packed"), (scale, "scale"), (zero, "zero")))
    if not 1 <= bits <= 8 or cols < 1 or lanes < 1 or group < 1 or group % layouts.BLOCK:
        raise InferError(
            f"needs bits in 1..8, cols >= 1, lanes >= 1 and a group that is a multiple of 32, got "
            f"bits={bits}, cols={cols}, group={group}, lanes={lanes}"
        )
    depth = a.shape[-1] if a.rank else None
    if not isinstance(depth, int) or depth % group or not isinstance(a.element, FloatType):
        raise InferError(f"input must be a float tensor [..., K] with a static K that group {group} divides, got {a}")
    if p.element != IntegerType(32, False) or p.shape != layouts.interleaved_shape(cols, depth, bits, lanes):
        want = "x".join(map(str, layouts.interleaved_shape(cols, depth, bits, lanes)))
        raise InferError(f"packed weight must be tensor<{want}xu32> ({layout} {bits}-bit, {lanes} lanes), got {p}")
    panels, groups = -(-cols // lanes), depth // group
    accepted = {(groups, panels * lanes): "groups x padded rows", (panels, groups, lanes): "panels x groups x lanes"}
    for name, t in (("scale", s), ("zero", z)):
        if t.element != a.element or t.shape not in accepted or t.shape != s.shape:
            shapes = ((f"tensor<{'x'.join(map(str, shape))}x{a.element}>", what) for shape, what in accepted.items())
            want = " or ".join(f"{shape} ({what})" for shape, what in shapes)
            raise InferError(f"{name} must be {want}, as the scale, got {t}")
    return TensorType((*a.shape[:-1], cols), a.element)


def packed_weight(
    packed: np.ndarray,
    scale: np.ndarray,
    zero: np.ndarray,
    bits: int,
    cols: int,
    group: int,
    lanes: int,
    layout: str = "interleaved",
) -> np.ndarray:
    """The float [N, K] weight a ``quant.matmul_packed`` stands for."""
    scale, zero = layouts.params_by_row(scale, cols), layouts.params_by_row(zero, cols)
    depth = scale.shape[1] * group
    codes = layouts.unpack(packed, bits, False, layout, (cols, depth), lanes)
    expanded = (np.repeat(scale, group, axis=1), np.repeat(zero, group, axis=1))
    return (codes.astype(np.float64) - expanded[1]) * expanded[0]


def _packed_reference(
    x: np.ndarray, packed: np.ndarray, scale: np.ndarray, zero: np.ndarray, **attrs: Any
) -> np.ndarray:
    """The op's attributes (bits, cols, group, lanes, layout) are :func:`packed_weight`'s arguments."""
    return product(x, packed_weight(packed, scale, zero, **attrs))


matmul_packed = define(
    "quant.matmul_packed",
    operands=("input", "packed", "scale", "zero"),
    attrs={
        "bits": IntAttr(),
        "cols": IntAttr(),
        "group": IntAttr(),
        "lanes": IntAttr(),
        "layout": StrAttr("interleaved", layouts.BLOCK_LAYOUTS),
    },
    infer=_packed_infer,
    reference=_packed_reference,
    traits=("pure",),
    doc="quant.matmul with its weight packed for the CPU kernel: unsigned `bits`-bit codes of a [cols, K] weight "
    "in a block layout of `lanes` rows (`layout`: interleaved, the default, or interleaved_shards), scales and "
    "zero points (w = (q - zero) * scale) stored group-major as [K / group, rows padded to lanes] or panel-major "
    "as [panels, K / group, lanes]; a signed weight is stored with its zero points shifted.",
)


# embedding ---------------------------------------------------------------------------------------
def _embedding_infer(weight: Type, indices: Type, scale: Type, zero: Type | None) -> Type:
    w, qt = _quantized(weight, "weight")
    i = _tensor(indices, "indices")
    if w.rank != 2:
        raise InferError(f"weight must be a table [V, D], got {w}")
    if not isinstance(i.element, IntegerType) or i.element.is_bool:
        raise InferError(f"indices must be integers, got {i.element}")
    _check_params(scale, zero, qt, w.shape, "the table")
    return TensorType((*i.shape, w.shape[1]), qt.expressed)


def _embedding_reference(w: np.ndarray, indices: np.ndarray, scale: np.ndarray, zero: np.ndarray | None) -> np.ndarray:
    if indices.size and (indices.min() < 0 or indices.max() >= w.shape[0]):
        raise IndexError(f"index out of range for a table of {w.shape[0]} rows")
    return dequantized(w, scale, zero)[indices]


embedding = define(
    "quant.embedding",
    operands=("weight", "indices", "scale", "zero?"),
    infer=_embedding_infer,
    reference=_embedding_reference,
    traits=("pure",),
    doc="Rows of a k-bit table [V, D] at integer `indices`, dequantized: [*indices.shape, D].",
)

__all__ = ["dequantize", "embedding", "matmul", "matmul_packed", "quantize"]
