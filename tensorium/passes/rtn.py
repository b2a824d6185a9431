"""Round to nearest (RTN): k-bit codes of a float weight per output channel or per group along K, and the
quantized weight record that every method (RTN, GPTQ) returns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.types import QuantizedType, f32


@dataclass(frozen=True)
class QuantizedWeight:
    """A quantized weight: codes [N, K], scales and zero points [N, K / group] (zero None for signed codes),
    and the quantized type."""

    codes: np.ndarray
    scale: np.ndarray
    zero: np.ndarray | None
    type: QuantizedType

    def dequantized(self) -> np.ndarray:
        """The float weight the codes stand for."""
        group = self.codes.shape[1] // self.scale.shape[1]
        s = np.repeat(self.scale, group, axis=1).astype(np.float64)
        z = 0.0 if self.zero is None else np.repeat(self.zero, group, axis=1)
        return (self.codes - z) * s


def quantized_type(bits: int, group: int, signed: bool) -> QuantizedType:
    """The type of a [N, K] weight quantized per channel (``group`` 0) or per group of ``group`` along K."""
    if group:
        return QuantizedType(bits, signed, f32, "per_group", 1, group)
    return QuantizedType(bits, signed, f32, "per_channel", 0)


def grid(blocks: np.ndarray, bits: int, signed: bool) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Scales and zero points of RTN for the groups ``blocks[..., group]`` and the code range: unsigned codes
    spanning each group's range with a float zero point, or symmetric signed codes (zero points 0)."""
    if signed:
        top = (1 << (bits - 1)) - 1
        scale = np.abs(blocks).max(axis=-1) / top
        scale = np.where(scale > 0, scale, 1.0)
        return scale, np.zeros_like(scale), -top - 1, top
    top = (1 << bits) - 1
    low, high = blocks.min(axis=-1), blocks.max(axis=-1)
    scale = np.where(high > low, (high - low) / top, 1.0)
    return scale, 0.0 - low / scale, 0, top  # 0.0 - : no negative zeros


def round_to_nearest(weight: np.ndarray, bits: int, group: int, signed: bool) -> QuantizedWeight:
    """RTN of a float weight [N, K] per output channel (``group`` 0) or per group of ``group`` along K."""
    rows, depth = weight.shape
    size = group or depth
    blocks = weight.astype(np.float64).reshape(rows, depth // size, size)
    scale, zero, low, high = grid(blocks, bits, signed)
    codes = np.clip(np.rint(blocks / scale[..., None] + zero[..., None]), low, high)
    return QuantizedWeight(
        codes.reshape(rows, depth).astype(np.int8 if signed else np.uint8),
        scale.astype(np.float32),
        None if signed else zero.astype(np.float32),
        quantized_type(bits, group, signed),
    )
