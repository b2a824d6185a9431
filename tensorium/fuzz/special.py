"""Special values: the elements where an identity that holds for ordinary numbers breaks.

For floats NaN, +-inf, -0.0 and +0.0, the smallest subnormals, the smallest normal and the largest finite
value; for integers of any width the minimum, the maximum and their neighbours, -1, 0 and 1 (so an ``i3``
meets -4 and 3, a ``u5`` 0 and 31); for k-bit quantized codes the ends of their range and 0. The generator
plants them in constants and the oracle in inputs (:func:`sprinkle`), a share of the elements at a time, so
that most of a tensor stays ordinary and the special elements meet ordinary ones in every op.
"""

from __future__ import annotations

import numpy as np

from ..ir.storage import coerce
from ..ir.types import FloatType, IntegerType, QuantizedType, ScalarType, storage_dtype

SPECIAL_FRACTION = 0.25
"""The share of the elements :func:`sprinkle` replaces by default."""
FUZZ_SPECIAL_INPUTS = 0.3
"""The share of the fuzzer's cases whose inputs hold special values (``FuzzCase.specials``)."""
FUZZ_SPECIAL_CONSTANTS = 0.08
"""How often a constant the fuzzer's generator and mutators make holds special values
(``GenConfig.special_probability``): a program of a dozen recipes has one about every other time."""


def special_values(element: ScalarType) -> np.ndarray:
    """The special values of ``element``, held in its storage dtype (bf16 rounded, integers wrapped)."""
    if isinstance(element, FloatType):
        info = np.finfo(storage_dtype(element) if element.name != "bf16" else np.float32)
        tiny = 2.0**-133 if element.name == "bf16" else float(info.smallest_subnormal)
        largest = float(info.max) if element.name != "bf16" else 3.3895313892515355e38
        floats = [np.nan, np.inf, -np.inf, -0.0, 0.0, tiny, -tiny, float(info.tiny), largest, -largest]
        return coerce(np.array(floats, np.float64), element)
    if isinstance(element, IntegerType):
        low, high = element.min_value, element.max_value
        values = {low, high, 0, 1, min(low + 1, high), max(high - 1, low)}
        if element.signed and not element.is_bool:
            values.add(-1)
        if not element.signed and element.width > 1:
            values.add(1 << (element.width - 1))  # the sign bit of the same-width signed type
        if element.signed and element.width == 64:
            values |= {-(1 << 31), (1 << 31) - 1}  # the 32-bit edges: casts to i32 wrap past them, WebGPU's i64
        return np.array(sorted(values), dtype=storage_dtype(element))
    if isinstance(element, QuantizedType):  # k-bit codes: an input once the reducer cuts a quant constant's op
        low, high = element.code_range
        return np.array(sorted({low, high, 0}), dtype=storage_dtype(element))
    raise TypeError(f"no special values for {element}")


def sprinkle(
    array: np.ndarray, element: ScalarType, rng: np.random.Generator, fraction: float = SPECIAL_FRACTION
) -> np.ndarray:
    """A copy of ``array`` (of IR element type ``element``) with about ``fraction`` of its elements replaced by
    special values of the type (at least one element of a non-empty array)."""
    out = np.array(array, copy=True)
    if out.size == 0:
        return out
    chosen = rng.random(out.shape) < fraction
    if not chosen.any():
        chosen.flat[int(rng.integers(out.size))] = True
    specials = special_values(element)
    out[chosen] = specials[rng.integers(len(specials), size=int(np.count_nonzero(chosen)))]
    return out
