"""How IR element types are held in numpy arrays: storage dtypes, integer wrap-around, bf16 rounding.

Shared by constants (DenseAttr), the interpreter and every backend that moves data in and out.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

from ..errors import InterpreterError, TensoriumError
from .types import (
    FloatType,
    IntegerType,
    QuantizedType,
    ScalarType,
    ShapedType,
    Sym,
    TensorType,
    Type,
    dim_known,
    dim_size,
    storage_dtype,
)

__all__ = [
    "CACHE_LINE",
    "aligned",
    "aligned_buffer",
    "aligned_empty",
    "check_array",
    "coerce",
    "random_array",
    "round_to_bf16",
    "storage_dtype",
    "wrap_integers",
]

CACHE_LINE = 64
"""The alignment of the arrays Tensorium allocates for kernels, in bytes: a cache line, so that the kernels'
full-width vector loads and stores (64 bytes with AVX-512) never straddle two lines. numpy's own arrays are
16-byte aligned (glibc hands large allocations out at 16 bytes past a page), which split every such access
in two."""


def aligned_buffer(shape: int | tuple[int, ...], dtype: Any, align: int = CACHE_LINE) -> tuple[np.ndarray, int]:
    """An uninitialized array whose data starts on an ``align``-byte boundary (a view of a slightly larger
    byte array, which it keeps alive), and that address: runtimes that pass the array by pointer need it
    anyway. A few microseconds at most, as it runs for every fresh output of every call."""
    dt = np.dtype(dtype)
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    size = math.prod(dims) * dt.itemsize
    raw = np.empty(size + align, np.uint8)
    base = ctypes.addressof(ctypes.c_char.from_buffer(raw))  # type: ignore[arg-type]  # faster than raw.ctypes.data
    start = -base % align
    return np.ndarray(dims, dt, raw, start), base + start


def aligned_empty(shape: int | tuple[int, ...], dtype: Any, align: int = CACHE_LINE) -> np.ndarray:
    """An uninitialized array whose data starts on an ``align``-byte boundary (see :func:`aligned_buffer`)."""
    return aligned_buffer(shape, dtype, align)[0]


def aligned(array: np.ndarray, align: int = CACHE_LINE) -> np.ndarray:
    """``array`` when it is C-contiguous and starts on an ``align``-byte boundary, else such a copy of it."""
    if array.flags.c_contiguous and int(array.ctypes.data) % align == 0:
        return array
    out = aligned_empty(array.shape, array.dtype, align)
    out[...] = array
    return out


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
    return np.asarray(wide.astype(array.dtype))  # numpy's shifts make a rank-0 array a scalar


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


def check_array(value: Any, t: ShapedType, what: str, bindings: dict[str, int], dtype: bool = True) -> None:
    """Raise InterpreterError unless ``value`` is a numpy array that fits ``t``; binds named dims.

    Used wherever arrays meet typed IR: interpreter inputs and results, loop kernels, compiled kernels.
    """
    if not isinstance(value, np.ndarray):
        raise InterpreterError(f"{what}: expected a numpy array for {t}, got {type(value).__name__}")
    if dtype and value.dtype != storage_dtype(t.element):
        raise InterpreterError(f"{what}: expected dtype {storage_dtype(t.element)} for {t}, got {value.dtype}")
    if value.ndim != t.rank:
        raise InterpreterError(f"{what}: expected rank {t.rank} ({t}), got shape {list(value.shape)}")
    for axis, (dim, size) in enumerate(zip(t.shape, value.shape)):
        if isinstance(dim, int) and dim != size:
            raise InterpreterError(f"{what}: expected shape {t}, got {list(value.shape)} (axis {axis})")
        if isinstance(dim, Sym) and dim.name is not None:
            known = dim_known(dim, bindings)
            bound = dim_size(dim, bindings) if known else bindings.setdefault(dim.name, int(size))
            if bound != size:
                raise InterpreterError(
                    f"{what}: dimension [{dim.name}] is {size} here but {bound} elsewhere (axis {axis})"
                )


def random_array(t: Type, label: str, dims: dict[str, int], rng: np.random.Generator) -> np.ndarray:
    """Random data for an input of type ``t`` (floats in [-1, 1], integers in [0, 4), bools), a named dynamic
    dim taking its size from ``dims``; TensoriumError naming ``label`` and what is missing otherwise."""
    if not isinstance(t, TensorType):
        raise TensoriumError(f"input {label} has type {t}; only tensor inputs can be generated")
    shape = []
    for axis, d in enumerate(t.shape):
        if isinstance(d, Sym):
            if not dim_known(d, dims):
                missing = next((n for n in d.factors[1] if n not in dims), d.name) if d.name else None
                need = f"{d}: pass --dim {missing}=SIZE" if missing else f"axis {axis}: give it with --input"
                raise TensoriumError(f"input {label} ({t}) needs the size of {need}")
            shape.append(dim_size(d, dims))
        else:
            shape.append(d)
    data: np.ndarray
    if isinstance(t.element, FloatType):
        data = rng.uniform(-1, 1, size=shape)
    elif isinstance(t.element, IntegerType) and t.element.is_bool:
        data = rng.random(size=shape) < 0.5
    else:
        data = rng.integers(0, 4, size=shape)
    return coerce(data, t.element)
