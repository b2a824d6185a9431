"""The quant dialect's types: ``!quant<u4:f32, per_group(axis=1, size=128)>`` read and written by the dialect.

:class:`~tensorium.ir.types.QuantizedType` itself lives in the core (storage and the interpreter need its
integer range); its text form belongs to this dialect, which registers its syntax with the parser here.
The layout of the scales and zero points beside a quantized tensor follows from the type
(:func:`scale_shape`): one per tensor, one per index along ``axis`` (per channel), or for ``per_group``
one per group of ``size`` elements along ``axis`` and per index along every other axis (the usual
"block-wise" weight quantization: a ``[N, K]`` weight grouped along K has ``[N, K / G]`` scales).
"""

from __future__ import annotations

import re

import numpy as np

from ...types import Dim, FloatType, QuantizedType, TypeSyntax, parse_scalar_type, register_type_syntax

FORMS = "expected !quant<u4:f32, per_tensor | per_channel(axis=A) | per_group(axis=A, size=G)>"
_QUANT = re.compile(
    r"!quant<([iu]\d+):(f16|bf16|f32|f64),\s*"
    r"(per_tensor|per_channel\(axis=(-?\d+)\)|per_group\(axis=(-?\d+),\s*size=(\d+)\))>"
)


def parse_quant_type(text: str) -> QuantizedType:
    """The quantized type spelled ``text``; ValueError naming the text when it is malformed."""
    m = _QUANT.fullmatch(text)
    if m is None:
        raise ValueError(f"bad quantized type '{text}': {FORMS}")
    storage = parse_scalar_type(m.group(1))
    if storage is None or isinstance(storage, FloatType):
        raise ValueError(f"bad storage type '{m.group(1)}' in quantized type")
    expressed = FloatType(m.group(2))
    signed = m.group(1)[0] == "i"
    bits = int(m.group(1)[1:])
    layout = m.group(3)
    try:
        if layout == "per_tensor":
            return QuantizedType(bits, signed, expressed)
        if layout.startswith("per_channel"):
            return QuantizedType(bits, signed, expressed, "per_channel", int(m.group(4)))
        return QuantizedType(bits, signed, expressed, "per_group", int(m.group(5)), int(m.group(6)))
    except ValueError as e:
        raise ValueError(f"bad quantized type '{text}': {e}") from None


SYNTAX = register_type_syntax("quant", TypeSyntax("quantized", parse_quant_type, FORMS))


def scale_shape(q: QuantizedType, shape: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """The shape of the scales (and zero points) of a tensor of ``shape`` quantized as ``q``; ValueError when
    the type's axis is out of range or its group size does not divide that axis."""
    if q.granularity == "per_tensor":
        return ()
    assert q.axis is not None
    axis = q.axis + len(shape) if q.axis < 0 else q.axis
    if not 0 <= axis < len(shape):
        raise ValueError(f"quantization axis {q.axis} is out of range for rank {len(shape)}")
    if q.granularity == "per_channel":
        return tuple(shape[axis] if a == axis else 1 for a in range(len(shape)))
    assert q.group_size is not None
    size = shape[axis]
    if isinstance(size, int):
        if size % q.group_size:
            raise ValueError(f"group size {q.group_size} does not divide dimension {axis} of size {size}")
        size = size // q.group_size
    return tuple(size if a == axis else shape[a] for a in range(len(shape)))


def expand(params: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Scales or zero points laid out by :func:`scale_shape`, repeated to one per element of ``shape``."""
    params = np.asarray(params)
    if params.ndim == 0:
        return np.broadcast_to(params, shape)
    for axis, (have, want) in enumerate(zip(params.shape, shape)):
        if have != want:
            params = np.repeat(params, want // have, axis=axis)
    return np.broadcast_to(params, shape)
