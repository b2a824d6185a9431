"""Memory ops of the loop dialect: buffers, loads and stores, packed sub-byte loads and barriers.

Buffers (:class:`~tensorium.ir.types.BufferType`) are mutable arrays in a memory space. Loads and
stores take one ``index`` per dimension; an index outside the buffer is undefined behaviour on real
targets and an error in the interpreter. A new buffer's contents are undefined: the interpreter
fills it with NaN (floats) or all-ones bits (integers, ``true`` for i1) so that reads before writes show.

Packed layout read by ``loop.load_packed``: the last dimension of a buffer of 8-, 16- or 32-bit
integer words holds ``k``-bit elements, ``W // k`` per ``W``-bit word, none straddling two words.
Element ``e`` of the last dimension is in word ``e // (W // k)`` at bits ``[s, s + k)`` with
``s = (e % (W // k)) * k``, counted from the least significant bit (little-endian within a word);
leftover high bits are unused. Signed elements are two's complement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...attributes import BoolAttr, IntAttr, TypeAttr
from ...core import Operation
from ...opdef import InferError, define
from ...shapes import normalize_axis
from ...storage import coerce
from ...types import BufferType, IntegerType, ScalarType, Sym, Type, i32, index, storage_dtype
from .common import check_indices, enclosing_loops, expect_buffer, expect_scalar

PACKED_WORD_WIDTHS = (8, 16, 32)


def _poison(shape: Sequence[int], element: ScalarType) -> np.ndarray:
    """A new array of ``element`` values that stands for undefined memory (NaN or all-ones bits)."""
    dtype = storage_dtype(element)
    if dtype.kind == "f":
        return np.full(tuple(shape), np.nan, dtype)
    if dtype == np.bool_:
        return np.ones(tuple(shape), np.bool_)
    return coerce(np.full(tuple(shape), -1, np.int64), element)


def _alloc_infer(sizes: list[Type], *, type: Any) -> Type:
    if not isinstance(type, BufferType):
        raise InferError(f"type must be a buffer type, got {type}")
    dynamic = sum(isinstance(d, Sym) for d in type.shape)
    if len(sizes) != dynamic:
        raise InferError(f"{type} has {dynamic} symbolic dimensions, so it takes {dynamic} sizes, got {len(sizes)}")
    for i, t in enumerate(sizes):
        if t != index:
            raise InferError(f"size #{i} must be an index, got {t}")
    return type


def _alloc_reference(sizes: list[np.ndarray], *, type: BufferType) -> np.ndarray:
    given = iter(int(s) for s in sizes)
    named: dict[str, int] = {}
    shape: list[int] = []
    for d in type.shape:
        if isinstance(d, int):
            shape.append(d)
            continue
        size = next(given)
        if size < 0:
            raise ValueError(f"size {size} of dimension {d} is negative")
        if d.name is not None and named.setdefault(d.name, size) != size:
            raise ValueError(f"dimension [{d.name}] is given sizes {named[d.name]} and {size}")
        shape.append(size)
    return _poison(shape, type.element)


def _verify_alloc(op: Operation) -> str | None:
    t = op.attributes.get("type")
    if isinstance(t, BufferType) and t.space == "shared":
        if any(loop.attributes.get("kind") == "gpu_thread" for loop in enclosing_loops(op)):
            return "a shared buffer belongs to a whole workgroup and may not be allocated inside a gpu_thread loop"
    return None


alloc = define(
    "loop.alloc",
    operands=("*sizes",),
    attrs={"type": TypeAttr()},
    infer=_alloc_infer,
    reference=_alloc_reference,
    verify=_verify_alloc,
    doc="A new buffer of type `type` with undefined contents; one index operand gives the size of each "
    "symbolic dimension, in order. Shared buffers may not be allocated inside gpu_thread loops.",
)


def _dim_infer(buffer: Type, *, axis: int) -> Type:
    normalize_axis(axis, expect_buffer(buffer).rank)
    return index


dim = define(
    "loop.dim",
    operands=("buffer",),
    attrs={"axis": IntAttr()},
    infer=_dim_infer,
    reference=lambda buffer, *, axis: np.int64(buffer.shape[axis]),
    traits=("pure",),
    doc="The size of dimension `axis` of a buffer (negative axes count from the end), as an index.",
)


def _position(shape: Sequence[int], indices: Sequence[Any]) -> tuple[int, ...]:
    """``indices`` as ints, or IndexError naming the first one outside ``shape``."""
    position = tuple(int(i) for i in indices)
    for axis, (i, size) in enumerate(zip(position, shape)):
        if not 0 <= i < size:
            raise IndexError(f"index {i} is out of bounds for dimension {axis} of size {size}")
    return position


def _load_infer(buffer: Type, indices: list[Type]) -> Type:
    b = expect_buffer(buffer)
    check_indices(b, indices)
    return b.element


load = define(
    "loop.load",
    operands=("buffer", "*indices"),
    infer=_load_infer,
    reference=lambda buffer, indices: buffer[_position(buffer.shape, indices)],
    doc="The element of a buffer at one index per dimension.",
)


def _store_infer(value: Type, buffer: Type, indices: list[Type]) -> list[Type]:
    b = expect_buffer(buffer, "operand #1")
    t = expect_scalar(value, what="stored value")
    if t != b.element:
        raise InferError(f"stored value has type {t}, but {b} holds {b.element}")
    check_indices(b, indices)
    return []


def _store_reference(value: np.ndarray, buffer: np.ndarray, indices: list[np.ndarray]) -> tuple[()]:
    buffer[_position(buffer.shape, indices)] = value
    return ()


store = define(
    "loop.store",
    operands=("value", "buffer", "*indices"),
    infer=_store_infer,
    reference=_store_reference,
    num_results=0,
    doc="Write a scalar of the buffer's element type at one index per dimension.",
)


def _load_packed_infer(buffer: Type, indices: list[Type], *, bits: int, signed: bool) -> Type:
    b = expect_buffer(buffer)
    word = b.element
    if not (isinstance(word, IntegerType) and word.width in PACKED_WORD_WIDTHS):
        raise InferError(f"packed words must be 8-, 16- or 32-bit integers, got {word}")
    if not 1 <= bits <= 8:
        raise InferError(f"bits must be in 1..8, got {bits}")
    if b.rank == 0:
        raise InferError(f"packed elements need a buffer of rank 1 or more, got {b}")
    check_indices(b, indices)
    return i32


def _load_packed_reference(buffer: np.ndarray, indices: list[np.ndarray], *, bits: int, signed: bool) -> np.int32:
    word_bits = buffer.dtype.itemsize * 8
    per_word = word_bits // bits
    *outer, last = (int(i) for i in indices)
    size = buffer.shape[-1] * per_word
    if not 0 <= last < size:
        raise IndexError(f"packed index {last} is out of bounds for dimension {buffer.ndim - 1} of {size} elements")
    word = int(buffer[_position(buffer.shape, [*outer, last // per_word])]) % (1 << word_bits)
    raw = (word >> ((last % per_word) * bits)) & ((1 << bits) - 1)
    if signed and raw >> (bits - 1):
        raw -= 1 << bits
    return np.int32(raw)


load_packed = define(
    "loop.load_packed",
    operands=("buffer", "*indices"),
    attrs={"bits": IntAttr(), "signed": BoolAttr(False)},
    infer=_load_packed_infer,
    reference=_load_packed_reference,
    doc="Element `e` (the last index, counted in `bits`-bit elements) of a buffer of packed 8-, 16- or 32-bit "
    "words, sign- (`signed`) or zero-extended to i32; see the packed layout in docs/loop.md.",
)


def pack_bits(values: Any, bits: int, word: IntegerType) -> np.ndarray:
    """Pack integers along the last axis into ``word``-typed words as ``loop.load_packed`` reads them.

    Each value keeps its low ``bits`` bits (two's complement for negatives); the last word of each row
    is padded with zero elements.
    """
    if not 1 <= bits <= 8 or word.width not in PACKED_WORD_WIDTHS:
        raise ValueError(f"cannot pack {bits}-bit elements into {word} words")
    array = np.asarray(values, np.int64)
    if array.ndim == 0:
        raise ValueError("packing needs at least one dimension")
    per_word = word.width // bits
    count = array.shape[-1]
    words = -(-count // per_word)
    lanes = np.zeros((*array.shape[:-1], words * per_word), np.int64)
    lanes[..., :count] = array & ((1 << bits) - 1)
    lanes = lanes.reshape(*array.shape[:-1], words, per_word)
    packed = (lanes << (np.arange(per_word, dtype=np.int64) * bits)).sum(axis=-1)
    return packed.astype(storage_dtype(word))


def _verify_barrier(op: Operation) -> str | None:
    for loop in enclosing_loops(op):
        kind = loop.attributes.get("kind", "serial")
        if kind == "gpu_thread":
            return None
        if kind not in ("serial", "unroll"):
            return f'may not be inside a "{kind}" loop within its gpu_thread loop'
    return "must be inside a gpu_thread loop"


barrier = define(
    "loop.barrier",
    infer=lambda: [],
    verify=_verify_barrier,
    num_results=0,
    doc="Wait until every thread of the workgroup gets here and their shared-memory writes are visible; "
    "only inside gpu_thread loops, with at most serial or unroll loops in between.",
)


def _align_offset_infer(buffer: Type, indices: list[Type], *, bytes: int) -> Type:
    b = expect_buffer(buffer)
    if bytes <= 0 or bytes & (bytes - 1):
        raise InferError(f"bytes must be a power of two, got {bytes}")
    check_indices(b, indices)
    return index


def _align_offset_reference(buffer: np.ndarray, indices: list[np.ndarray], *, bytes: int) -> np.int64:
    # an address, not a read: indices may point one past the end (as of an empty row)
    address = buffer.ctypes.data + sum(int(i) * s for i, s in zip(indices, buffer.strides))
    size = buffer.itemsize
    if address % size:
        return np.int64(0)
    return np.int64((-address % bytes) // size)


align_offset = define(
    "loop.align_offset",
    operands=("buffer", "*indices"),
    attrs={"bytes": IntAttr()},
    infer=_align_offset_infer,
    reference=_align_offset_reference,
    doc="How many elements after the element at the indices (an address: it is not read, and may be one past "
    "the end) start at an address that is a multiple of `bytes` "
    "(a power of two): in [0, bytes / element size). A schedule hint, for peeling a loop until its vector loads "
    "are aligned; any value in that range is correct, and targets that cannot tell (or whose buffers are always "
    "aligned) give 0 through the decomposition.",
)


def _prefetch_infer(buffer: Type, indices: list[Type]) -> list[Type]:
    b = expect_buffer(buffer)
    check_indices(b, indices)
    return []


prefetch = define(
    "loop.prefetch",
    operands=("buffer", "*indices"),
    infer=_prefetch_infer,
    reference=lambda buffer, indices: None,
    num_results=0,
    doc="A hint that the element at the row-major offset the indices give will be read soon: the CPU fetches its "
    "cache line. Nothing is read and nothing can fault, so the indices may lie past their dimensions (an offset "
    "past the buffer's end fetches nothing useful); targets without prefetches emit nothing.",
)
