"""Packing layouts of k-bit integers (k = 1..8) in 32-bit words, each with its exact inverse.

All layouts pack along the last axis and count bits from the least significant end of a word (element
0 of a word is in its low bits). Signed values are stored as their k-bit two's complement codes.

- ``stream``: a dense bit stream per row: element ``e`` occupies bits ``[e k, e k + k)`` of the row's
  stream, so odd widths straddle word boundaries and nothing is padded to a power of two; a row of K
  elements takes ``ceil(K k / 32)`` words.
- ``planes``: k one-bit matrices (bit planes, as in the bipolar-INT line of work), plane ``b`` holding
  bit ``b`` of every element, each a ``stream`` of 1-bit elements: shape ``[k, ..., ceil(K / 32)]``.
- ``shards``: the code split into pieces of 4, 2 and 1 bits (3 = 2+1, 5 = 4+1, 6 = 4+2, 7 = 4+2+1; powers
  of two are one shard), the low bits in the first shard; each shard a ``stream`` of its width (which
  never straddles words), the shards concatenated along the last axis.
- ``interleaved``: row-interleaved blocks for matrix-vector kernels: rows in groups of ``lanes`` and
  columns in blocks of 32, each block of a row being exactly ``k`` words of its ``stream``, stored as
  ``[ceil(R / lanes), ceil(K / 32), k, lanes]``: the ``lanes`` rows' copies of one word are adjacent, so one
  vector load feeds as many rows as a vector has lanes, and one activation feeds them all. Rows and
  columns past the matrix are zero.
- ``interleaved_shards``: the same blocks, shapes and padding, but each block's ``k`` words hold its codes as
  ``shards`` (the 4-bit pieces' words first, then the 2-bit, then the 1-bit), each shard's pieces ordered so that
  the four codes ``4t .. 4t + 3`` have their pieces at bit ``8 b + w (t mod 8 / w)`` of the shard's word
  ``t div (8 / w)``, ``b`` = 0..3: one shift and one mask per shard bring code ``4t + b``'s piece into byte
  ``b``, for all four codes at once. A kernel without one-instruction bit fields decodes a block of 3, 5, 6 or
  7 bits in half the operations of the ``interleaved`` stream, whose codes sit at shifts that no two share
  (:func:`block_pieces` says where each code's bits are in both).

The interleaved kernels' scales and zero points (one per row and group of G along K) come in one of two
layouts (:func:`params_by_row` reads both): group-major ``[K / G, rows padded to lanes]`` (a group's
parameters of every row in one row of the array: what the packing passes stored before stop 31, still
accepted), or panel-major ``[ceil(R / lanes), K / G, lanes]`` (:func:`panel_params`: a panel's
parameters of every group adjacent, so a CPU thread that streams one panel after another reads them as one
more sequential stream, where the group-major order would take a cache line from a different page per group).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

WORD_BITS = 32
BLOCK = 32
"""Elements per ``interleaved`` block: 32 k-bit elements are exactly k words."""


def codes_of(values: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    """The k-bit codes (uint32) of integers in range: two's complement for signed values."""
    _check_bits(bits)
    values = np.asarray(values).astype(np.int64)
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if values.size and (values.min() < low or values.max() > high):
        kind = "signed" if signed else "unsigned"
        raise ValueError(f"values {values.min()}..{values.max()} do not fit {bits}-bit {kind} integers")
    return (values & ((1 << bits) - 1)).astype(np.uint32)


def values_of(codes: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    """The integers (int32) that k-bit ``codes`` stand for."""
    codes = np.asarray(codes).astype(np.int32)
    if signed:
        codes = np.where(codes >= 1 << (bits - 1), codes - (1 << bits), codes)
    return codes.astype(np.int32)


def _check_bits(bits: int) -> None:
    if not 1 <= bits <= 8:
        raise ValueError(f"packed elements must be 1..8 bits, got {bits}")


def pack_stream(codes: np.ndarray, bits: int) -> np.ndarray:
    """``codes`` (``[..., K]``, each below ``2**bits``) as a dense bit stream of uint32 words per row."""
    _check_bits(bits)
    codes = np.asarray(codes, dtype=np.uint32)
    count = codes.shape[-1]
    planes = (codes[..., None] >> np.arange(bits, dtype=np.uint32)) & 1
    stream = planes.reshape(*codes.shape[:-1], count * bits)
    words = -(-count * bits // WORD_BITS)
    padded = np.zeros((*codes.shape[:-1], words * WORD_BITS), np.uint32)
    padded[..., : count * bits] = stream
    lanes = padded.reshape(*codes.shape[:-1], words, WORD_BITS) << np.arange(WORD_BITS, dtype=np.uint32)
    return np.bitwise_or.reduce(lanes, axis=-1).astype(np.uint32)


def unpack_stream(words: np.ndarray, bits: int, count: int) -> np.ndarray:
    """The ``count`` codes per row of a dense bit stream (the inverse of :func:`pack_stream`)."""
    _check_bits(bits)
    words = np.asarray(words, dtype=np.uint32)
    if words.shape[-1] * WORD_BITS < count * bits:
        raise ValueError(f"{words.shape[-1]} words hold fewer than {count} {bits}-bit elements")
    stream = (words[..., None] >> np.arange(WORD_BITS, dtype=np.uint32)) & 1
    stream = stream.reshape(*words.shape[:-1], words.shape[-1] * WORD_BITS)[..., : count * bits]
    planes = stream.reshape(*words.shape[:-1], count, bits) << np.arange(bits, dtype=np.uint32)
    return np.bitwise_or.reduce(planes, axis=-1).astype(np.uint32)


def shard_widths(bits: int) -> tuple[int, ...]:
    """The shard widths of a k-bit code, widest first: 3 -> (2, 1), 5 -> (4, 1), 6 -> (4, 2), 8 -> (8,)."""
    _check_bits(bits)
    if bits == 8:
        return (8,)
    return tuple(w for w in (4, 2, 1) if bits & w)


@dataclass(frozen=True)
class Layout:
    """A packing layout: ``pack(codes, bits, lanes) -> words`` and ``unpack(words, bits, shape, lanes)``,
    where ``shape`` is the unpacked shape and ``lanes`` matters only to the block layouts (``rank2``)."""

    name: str
    pack: Callable[[np.ndarray, int, int], np.ndarray]
    unpack: Callable[[np.ndarray, int, tuple[int, ...], int], np.ndarray]
    rank2: bool = False
    """Whether the layout packs only matrices."""


def _pack_planes(codes: np.ndarray, bits: int, lanes: int) -> np.ndarray:
    return np.stack([pack_stream((codes >> b) & 1, 1) for b in range(bits)])


def _unpack_planes(words: np.ndarray, bits: int, shape: tuple[int, ...], lanes: int) -> np.ndarray:
    planes = [unpack_stream(words[b], 1, shape[-1]) << b for b in range(bits)]
    return np.bitwise_or.reduce(np.stack(planes), axis=0).astype(np.uint32)


def _pack_shards(codes: np.ndarray, bits: int, lanes: int) -> np.ndarray:
    shards, low = [], 0
    for width in shard_widths(bits):
        shards.append(pack_stream((codes >> low) & ((1 << width) - 1), width))
        low += width
    return np.concatenate(shards, axis=-1)


def _unpack_shards(words: np.ndarray, bits: int, shape: tuple[int, ...], lanes: int) -> np.ndarray:
    codes = np.zeros(shape, np.uint32)
    start = low = 0
    for width in shard_widths(bits):
        size = -(-shape[-1] * width // WORD_BITS)
        codes |= unpack_stream(words[..., start : start + size], width, shape[-1]) << low
        start += size
        low += width
    return codes


BLOCK_LAYOUTS = ("interleaved", "interleaved_shards")
"""The layouts of row-interleaved blocks: the packed weights of ``quant.matmul_packed``."""


@dataclass(frozen=True)
class Piece:
    """Bits ``low .. low + width - 1`` of a code sit at bits ``shift .. shift + width - 1`` of word ``word`` of its
    block (never past the word's end)."""

    word: int
    shift: int
    width: int
    low: int


def _shard_position(width: int, code: int) -> int:
    """Where code ``code`` of a block (``4t + b``) has its ``width``-bit piece in its shard, counted in pieces of
    the shard's stream: bit ``8 b + width (t mod 8 / width)`` of shard word ``t div (8 / width)``."""
    per = 8 // width
    t, b = divmod(code, 4)
    return (WORD_BITS // width) * (t // per) + per * b + t % per


@functools.cache
def _shard_positions(width: int) -> tuple[int, ...]:
    """:func:`_shard_position` of each code of a block."""
    return tuple(_shard_position(width, j) for j in range(BLOCK))


@functools.cache
def block_pieces(bits: int, name: str) -> tuple[tuple[Piece, ...], ...]:
    """Per code of a block (32), where its bits are among the block's ``bits`` words in block layout ``name``
    (:data:`BLOCK_LAYOUTS`): one piece, or two where an ``interleaved`` code straddles a word boundary, or one per
    shard in ``interleaved_shards``."""
    _check_bits(bits)
    if name not in BLOCK_LAYOUTS:
        raise ValueError(f"'{name}' is not a block layout (known: {', '.join(BLOCK_LAYOUTS)})")
    codes: list[tuple[Piece, ...]] = []
    for j in range(BLOCK):
        if name == "interleaved":
            word, shift = divmod(j * bits, WORD_BITS)
            first = min(bits, WORD_BITS - shift)
            pieces = [Piece(word, shift, first, 0)]
            if first < bits:
                pieces.append(Piece(word + 1, 0, bits - first, first))
        else:
            pieces, start, low = [], 0, 0
            for width in shard_widths(bits):
                word, shift = divmod(_shard_positions(width)[j] * width, WORD_BITS)
                pieces.append(Piece(start + word, shift, width, low))
                start, low = start + width, low + width
        codes.append(tuple(pieces))
    return tuple(codes)


def interleaved_shape(rows: int, cols: int, bits: int, lanes: int) -> tuple[int, int, int, int]:
    """The shape of an ``interleaved`` packing of a ``rows`` x ``cols`` matrix."""
    return (-(-rows // lanes), -(-cols // BLOCK), bits, lanes)


def panel_params(by_row: np.ndarray, lanes: int) -> np.ndarray:
    """Per-row parameters ``[R, K / G]`` in the panel-major layout ``[ceil(R / lanes), K / G, lanes]`` (rows past
    ``R`` zero)."""
    rows, groups = by_row.shape
    panels = -(-rows // lanes)
    padded = np.zeros((panels * lanes, groups), by_row.dtype)
    padded[:rows] = by_row
    return np.ascontiguousarray(padded.reshape(panels, lanes, groups).transpose(0, 2, 1))


def params_by_row(params: np.ndarray, rows: int) -> np.ndarray:
    """The ``[rows, K / G]`` parameters that an interleaved kernel's ``params`` hold, group-major (rank 2) or
    panel-major (rank 3)."""
    if params.ndim == 3:
        return params.transpose(0, 2, 1).reshape(-1, params.shape[1])[:rows]
    return params[:, :rows].T


def _block_words(codes: np.ndarray, bits: int, name: str) -> np.ndarray:
    """Blocks of 32 codes (the last axis) as their ``bits`` words in block layout ``name``: the stream of the
    block (32 codes are exactly k words), or its shards, each shard's pieces in :func:`_shard_position` order."""
    if name == "interleaved":
        return pack_stream(codes, bits)
    shards, low = [], 0
    for width in shard_widths(bits):
        order = np.argsort(_shard_positions(width))
        shards.append(pack_stream((codes[..., order] >> low) & ((1 << width) - 1), width))
        low += width
    return np.concatenate(shards, axis=-1)


def _block_codes(words: np.ndarray, bits: int, name: str) -> np.ndarray:
    """The 32 codes of blocks of ``bits`` words (the last axis) in block layout ``name`` (:func:`_block_words`'s
    inverse)."""
    if name == "interleaved":
        return unpack_stream(words, bits, BLOCK)
    codes = np.zeros((*words.shape[:-1], BLOCK), np.uint32)
    start = low = 0
    for width in shard_widths(bits):
        pieces = unpack_stream(words[..., start : start + width], width, BLOCK)
        codes |= pieces[..., list(_shard_positions(width))] << low
        start, low = start + width, low + width
    return codes


def _pack_blocks(codes: np.ndarray, bits: int, lanes: int, name: str) -> np.ndarray:
    """A matrix in block layout ``name``: rows in groups of ``lanes``, each row's blocks of 32 codes as words
    (:func:`_block_words`), the ``lanes`` rows' copies of a word adjacent; padded with zeros."""
    if codes.ndim != 2:
        raise ValueError(f"the {name} layout packs matrices, got rank {codes.ndim}")
    rows, cols = codes.shape
    groups, blocks, _, _ = interleaved_shape(rows, cols, bits, lanes)
    padded = np.zeros((groups * lanes, blocks * BLOCK), np.uint32)
    padded[:rows, :cols] = codes
    words = _block_words(padded.reshape(groups * lanes, blocks, BLOCK), bits, name)
    return np.ascontiguousarray(words.reshape(groups, lanes, blocks, bits).transpose(0, 2, 3, 1))


def _unpack_blocks(words: np.ndarray, bits: int, shape: tuple[int, ...], lanes: int, name: str) -> np.ndarray:
    rows, cols = shape
    groups, blocks, _, _ = words.shape
    by_row = words.transpose(0, 3, 1, 2).reshape(groups * lanes, blocks, bits)
    return _block_codes(by_row, bits, name).reshape(groups * lanes, blocks * BLOCK)[:rows, :cols]


LAYOUTS: dict[str, Layout] = {
    layout.name: layout
    for layout in (
        Layout(
            "stream",
            lambda c, bits, lanes: pack_stream(c, bits),
            lambda w, bits, s, lanes: unpack_stream(w, bits, s[-1]),
        ),
        Layout("planes", _pack_planes, _unpack_planes),
        Layout("shards", _pack_shards, _unpack_shards),
        *(
            Layout(
                name,
                functools.partial(_pack_blocks, name=name),
                functools.partial(_unpack_blocks, name=name),
                rank2=True,
            )
            for name in BLOCK_LAYOUTS
        ),
    )
}


def layout(name: str) -> Layout:
    """The layout called ``name``; ValueError naming the known ones."""
    found = LAYOUTS.get(name)
    if found is None:
        raise ValueError(f"unknown packing layout '{name}' (known: {', '.join(LAYOUTS)})")
    return found


def pack(values: np.ndarray, bits: int, signed: bool, name: str, lanes: int = 16) -> np.ndarray:
    """Integers of ``bits`` bits packed in layout ``name``."""
    return layout(name).pack(codes_of(values, bits, signed), bits, lanes)


def unpack(
    words: np.ndarray, bits: int, signed: bool, name: str, shape: tuple[int, ...], lanes: int = 16
) -> np.ndarray:
    """The int32 values of ``shape`` that :func:`pack` stored in ``words`` (its exact inverse)."""
    return values_of(layout(name).unpack(np.asarray(words, np.uint32), bits, tuple(shape), lanes), bits, signed)
