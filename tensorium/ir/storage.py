"""How IR element types are held in numpy arrays: storage dtypes, integer wrap-around, bf16 rounding.

Shared by constants (DenseAttr), the interpreter and every backend that moves data in and out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .types import FloatType, IntegerType, QuantizedType, ScalarType, storage_dtype

__all__ = ["coerce", "round_to_bf16", "storage_dtype", "wrap_integers"]


def wrap_integers(array: np.ndarray, t: IntegerType) -> np.ndarray:
    """Wrap integers held in a wider numpy dtype to the range of ``t`` (two's complement)."""
    bits = array.dtype.itemsize * 8
    if t.is_bool or t.width >= bits:
        return array
    wide: np.ndarray
    if t.signed:
        shift = np.int64(64 - t.width)
        wide = (array.astype(np.int64) << shift) >> shift  # sign-extend from bit width-1
    else:
        wide = array.astype(np.uint64) & np.uint64((1 << t.width) - 1)
    return wide.astype(array.dtype)


def round_to_bf16(array: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bfloat16 (ties to even), kept in float32."""
    a = np.array(array, dtype=np.float32, order="C", ndmin=0)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = rounded.view(np.float32)
    return np.where(np.isnan(a), a, out)


def coerce(array: Any, t: ScalarType) -> np.ndarray:
    """``array`` held as IR element type ``t`` requires."""
    arr = np.asarray(array)
    dtype = storage_dtype(t)
    if arr.dtype != dtype:
        with np.errstate(over="ignore", invalid="ignore"):
            arr = arr.astype(dtype)
    if isinstance(t, QuantizedType):
        t = t.storage
    if isinstance(t, IntegerType):
        arr = wrap_integers(arr, t)
    elif isinstance(t, FloatType) and t.name == "bf16":
        arr = round_to_bf16(arr)
    return arr
