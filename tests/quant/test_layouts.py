"""Every packing layout is the exact inverse of its unpacker, for every k in 1..8, signed and unsigned, on odd
shapes; the bit-level formats are the documented ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorium.ir.dialects.quant import layouts


def _values(rng: np.random.Generator, shape: tuple[int, ...], bits: int, signed: bool) -> np.ndarray:
    low, high = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
    return rng.integers(low, high, shape)


@settings(max_examples=60, deadline=None)
@given(
    bits=st.integers(1, 8),
    signed=st.booleans(),
    name=st.sampled_from(sorted(layouts.LAYOUTS)),
    rows=st.integers(1, 37),
    cols=st.integers(1, 131),
    lanes=st.sampled_from([1, 4, 8, 16]),
    seed=st.integers(0, 2**16),
)
def test_unpack_inverts_pack(bits: int, signed: bool, name: str, rows: int, cols: int, lanes: int, seed: int) -> None:
    values = _values(np.random.default_rng(seed), (rows, cols), bits, signed)
    packed = layouts.pack(values, bits, signed, name, lanes)
    assert packed.dtype == np.uint32
    np.testing.assert_array_equal(layouts.unpack(packed, bits, signed, name, (rows, cols), lanes), values)


@pytest.mark.parametrize("bits", range(1, 9))
@pytest.mark.parametrize("name", ["stream", "planes", "shards"])
def test_layouts_pack_any_rank(bits: int, name: str) -> None:
    values = _values(np.random.default_rng(bits), (3, 2, 45), bits, True)
    packed = layouts.pack(values, bits, True, name)
    np.testing.assert_array_equal(layouts.unpack(packed, bits, True, name, values.shape), values)


@pytest.mark.parametrize("bits", range(1, 9))
def test_stream_is_dense_and_straddles_words(bits: int) -> None:
    """K elements take exactly ceil(K k / 32) words, and element e sits at bits [e k, e k + k) of the stream."""
    values = _values(np.random.default_rng(0), (1, 77), bits, False)
    words = layouts.pack(values, bits, False, "stream")
    assert words.shape == (1, -(-77 * bits // 32))
    stream = int(sum(int(w) << (32 * i) for i, w in enumerate(words[0])))
    for e, v in enumerate(values[0]):
        assert (stream >> (e * bits)) & ((1 << bits) - 1) == v


def test_stream_of_three_bits_by_hand() -> None:
    # elements 0..10 of 3 bits: element 10 takes bits 30, 31 of word 0 and bit 0 of word 1
    values = np.array([[1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 7]])
    words = layouts.pack(values, 3, False, "stream")
    expected = sum(int(v) << (3 * e) for e, v in enumerate(values[0]))
    assert words.tolist() == [[expected & 0xFFFFFFFF, expected >> 32]]


def test_planes_hold_one_bit_each() -> None:
    values = np.array([[5, 2, 7]])
    planes = layouts.pack(values, 3, False, "planes")
    assert planes.shape == (3, 1, 1)
    assert [int(p[0, 0]) for p in planes] == [0b101, 0b110, 0b101]


@pytest.mark.parametrize(
    ("bits", "widths"), [(3, (2, 1)), (5, (4, 1)), (6, (4, 2)), (7, (4, 2, 1)), (8, (8,)), (4, (4,))]
)
def test_shards(bits: int, widths: tuple[int, ...]) -> None:
    assert layouts.shard_widths(bits) == widths
    packed = layouts.pack(np.zeros((2, 64), np.int64), bits, False, "shards")
    assert packed.shape == (2, sum(64 * w // 32 for w in widths))


def test_interleaved_puts_lanes_rows_side_by_side() -> None:
    values = _values(np.random.default_rng(1), (5, 40), 4, False)
    packed = layouts.pack(values, 4, False, "interleaved", lanes=4)
    assert packed.shape == layouts.interleaved_shape(5, 40, 4, 4) == (2, 2, 4, 4)
    rows = layouts.pack(values, 4, False, "stream")
    # word w of block b of row r is word b * k + w of the row's stream
    assert packed[1, 0, 3, 0] == rows[4, 3]
    assert packed[0, 1, 0, 2] == rows[2, 4]
    assert not packed[1, :, :, 1:].any(), "rows past the matrix are zero"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: layouts.pack(np.array([16]), 4, False, "stream"), "values 16..16 do not fit 4-bit unsigned integers"),
        (lambda: layouts.pack(np.array([-9]), 4, True, "stream"), "values -9..-9 do not fit 4-bit signed integers"),
        (lambda: layouts.pack(np.array([1]), 9, False, "stream"), "packed elements must be 1..8 bits, got 9"),
        (lambda: layouts.pack(np.array([1]), 2, False, "zigzag"), "unknown packing layout 'zigzag'"),
        (lambda: layouts.pack(np.zeros((2, 2, 2)), 2, False, "interleaved"), "the interleaved layout packs matrices"),
    ],
)
def test_bad_input_is_named(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        call()  # type: ignore[operator]


@pytest.mark.parametrize(("rows", "groups", "lanes"), [(7, 3, 4), (16, 1, 16), (33, 2, 8), (1, 5, 32)])
def test_panel_params_hold_each_panels_groups_together(rows: int, groups: int, lanes: int) -> None:
    by_row = np.random.default_rng(rows).random((rows, groups)).astype(np.float32)
    panels = layouts.panel_params(by_row, lanes)
    assert panels.shape == (-(-rows // lanes), groups, lanes) and panels.flags.c_contiguous
    for r in range(rows):
        np.testing.assert_array_equal(panels[r // lanes, :, r % lanes], by_row[r])
    assert not panels.reshape(-1, groups, lanes).transpose(0, 2, 1).reshape(-1, groups)[rows:].any()
    np.testing.assert_array_equal(layouts.params_by_row(panels, rows), by_row)
    group_major = np.zeros((groups, panels.shape[0] * lanes), np.float32)
    group_major[:, :rows] = by_row.T
    np.testing.assert_array_equal(layouts.params_by_row(group_major, rows), by_row)
