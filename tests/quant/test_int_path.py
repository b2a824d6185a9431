"""The qgemv kernel's int path (8-bit activations per block, integer dot products) for every k in 1..8 on odd
shapes: against the numpy reference of the same integer computation, within the activations' rounding of
the float matmul, on the LLVM targets with VNNI, AVX-VNNI, AVX2 and none (where this host runs them), on the
loop interpreter, and the instructions each target's kernel is made of (cross-compiled)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.plan_runner import run_plan
from tensorium.ir.dialects.quant import layouts
from tensorium.ir.dialects.quant.ops import packed_weight
from tensorium.lowering import lower_function
from tensorium.lowering.quant_int import (
    WORD_MASK,
    FieldWord,
    decode_plan,
    field_plan,
    int_plan,
    integer_reference,
    quantize_activations,
    rounding_bound,
)
from tensorium.lowering.space import Config, kernel_key
from tensorium.targets import Target, parse_target

from .test_kernels import _op, packed_case


def _expected(inputs: list[np.ndarray], bits: int, cols: int, group: int, lanes: int) -> tuple[np.ndarray, ...]:
    """The int path's reference, the float matmul and the bound between them."""
    x, packed, scale, zero = inputs
    depth = x.shape[-1]
    codes = layouts.unpack(packed, bits, False, "interleaved", (cols, depth), lanes).astype(np.int64)
    by_group = [layouts.params_by_row(p, cols).T for p in (scale, zero)]  # either layout, as [groups, cols]
    want = integer_reference(x, codes, *by_group, group)
    weight = packed_weight(packed, scale, zero, bits, cols, group, lanes)
    return want, x.astype(np.float64) @ weight.T, rounding_bound(x, weight)


def _run(target: Target, bits: int, rows: int, cols: int, depth: int, group: int, config: str) -> None:
    module, inputs = packed_case(bits, rows, cols, depth, group, target.lanes(), panel_major=bits % 2 == 1)
    inputs[0][0, :32] = 0.0  # a block of zeros: scale 0, codes 0
    inputs[0][-1, 32:64] = 1e-37  # too small for 127 / amax: codes 0
    inputs[0][-1, -32:] *= 1e3  # a block of large values
    want, floats, bound = _expected(inputs, bits, cols, group, target.lanes())
    configs = {kernel_key(_op(module)): Config.parse(config)}
    (got,) = CpuExecutable.build(module, target=target, configs=configs).run(inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert np.all(np.abs(got - floats) <= bound), np.abs(got - floats).max()


@pytest.mark.parametrize(
    ("bits", "rows", "cols", "depth", "group", "mr", "chains"),
    [(1, 1, 37, 128, 64, 1, 8), (2, 3, 19, 96, 32, 2, 4), (3, 5, 40, 64, 32, 4, 2), (4, 1, 53, 256, 128, 1, 8)]
    + [(5, 2, 17, 64, 64, 2, 1), (6, 7, 33, 96, 96, 4, 2), (7, 1, 16, 160, 32, 1, 4), (8, 9, 21, 64, 32, 8, 1)],
)
def test_every_width_matches_the_integer_reference(
    bits: int, rows: int, cols: int, depth: int, group: int, mr: int, chains: int
) -> None:
    _run(
        parse_target("cpu"),
        bits,
        rows,
        cols,
        depth,
        group,
        f"qgemv{{path=int,mr={mr},chains={chains},prefetch={2048 * (chains % 4)}}}",
    )


@pytest.mark.parametrize("cpu", ["znver4", "alderlake", "skylake-avx512", "haswell", "x86-64"])
@pytest.mark.parametrize("bits", [3, 4, 5, 8])
def test_each_isa_computes_the_same(cpu: str, bits: int) -> None:
    """vpdpbusd (512 and 256 bits), vpmaddubsw + vpmaddwd (AVX-512 BW, AVX2; k = 8 takes the exact portable
    form there) and the portable form, where this host can run the target's code."""
    target = parse_target(f"cpu:{cpu}")
    if not target.runs_here():
        pytest.skip(f"this host cannot run code for {cpu}")
    _run(target, bits, 2, 21, 96, 32, "qgemv{path=int,mr=2,chains=4,prefetch=4096}")


@pytest.mark.parametrize(
    ("cpu", "bits", "present", "absent"),
    [
        ("znver4", 4, ["vpdpbusd.*%zmm"], ["vpmaddubsw"]),
        ("sapphirerapids", 8, ["vpdpbusd.*%zmm"], ["vpmaddubsw"]),
        ("alderlake", 4, ["vex}\tvpdpbusd.*%ymm"], ["vpmaddubsw"]),
        ("haswell", 4, ["vpmaddubsw.*%ymm", "vpmaddwd.*%ymm"], ["vpdpbusd"]),
        ("x86-64-v3", 5, ["vpmaddubsw.*%ymm", "vpmaddwd.*%ymm", "vpaddw.*%ymm"], ["vpdpbusd", "vpmultishiftqb"]),
        ("sapphirerapids", 5, ["vpmultishiftqb.*%zmm", "vpshldd.*%zmm", "vpdpbusd.*%zmm"], ["vpsrld"]),
        ("sapphirerapids", 4, ["vpdpbusd.*%zmm"], ["vpmultishiftqb"]),
        ("skylake-avx512", 5, ["vpmaddubsw.*%zmm"], ["vpmultishiftqb"]),
    ],
)
def test_each_target_gets_its_dot_instruction(cpu: str, bits: int, present: list[str], absent: list[str]) -> None:
    """Cross-compiled (LLVM's CPU names: the host's ISA plays no part)."""
    target = parse_target(f"cpu:{cpu}")
    module, _ = packed_case(bits, 1, 2 * target.lanes(), 128, 128, target.lanes())
    configs = {kernel_key(_op(module)): Config.parse("qgemv{path=int,mr=1,chains=8,prefetch=0}")}
    text = CpuExecutable.build(module, target=target, configs=configs).kernels.assembly()
    for pattern in present:
        assert re.search(pattern, text), f"{cpu}: no {pattern!r}"
    for pattern in absent:
        assert not re.search(pattern, text), f"{cpu}: unexpected {pattern!r}"


@pytest.mark.parametrize("cpu", ["", "znver3"])
def test_loop_interpreter_runs_the_int_kernel(cpu: str) -> None:
    """The host's kernel, and Zen 3's (AVX2: byte words summed in 16-bit halves, loop.dot_u8i8_halves)."""
    target = parse_target(f"cpu:{cpu}" if cpu else "cpu")
    module, inputs = packed_case(5, 3, 9, 64, 32, 4)
    want, _, _ = _expected(inputs, 5, 9, 32, 4)
    configs = {kernel_key(_op(module)): Config.parse("qgemv{path=int,mr=2,chains=2,prefetch=8192}")}
    lowered = lower_function(module, target=target, configs=configs)
    assert ("loop.dot_u8i8_halves" in str(lowered)) is (cpu == "znver3")
    (got,) = run_plan(lowered, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bits", range(1, 9))
def test_decode_plan_puts_each_code_in_one_byte(bits: int) -> None:
    plan = decode_plan(bits)
    assert sorted(j for word in plan for j in word.codes if j >= 0) == list(range(32))
    codes = np.random.default_rng(bits).integers(0, 1 << bits, 32).astype(np.uint32)
    stream = layouts.pack_stream(codes, bits)
    for word in plan:
        value = 0
        for part in word.parts:
            w = int(stream[part.word])
            value |= ((w >> part.shift) if part.shift >= 0 else (w << -part.shift)) & part.mask & WORD_MASK
        assert [(value >> (8 * b)) & 0xFF for b in range(4)] == [int(codes[j]) if j >= 0 else 0 for j in word.codes]
    if bits in (1, 2, 4, 8):
        assert len(plan) == 8 and sum(w.ops() for w in plan) <= 16, "one shift and mask per four codes at most"


def test_activation_quantization() -> None:
    x = np.array([[0.5, -1.0, 0.25, 0.0] * 8 + [0.0] * 32], np.float32)
    codes, scales = quantize_activations(x)
    np.testing.assert_array_equal(scales, np.array([[1 / 127, 0.0]], np.float32))
    np.testing.assert_array_equal(codes[0, :4], [64, -127, 32, 0])  # 63.5 rounds half to even: 64
    assert not codes[0, 32:].any()


@pytest.mark.parametrize(("cpu", "pattern"), [("sapphirerapids", "vpdpbusd.*%zmm"), ("x86-64-v3", "vpmaddubsw.*%ymm")])
def test_several_rows_per_step_stay_vector_code(cpu: str, pattern: str) -> None:
    """With mr >= 2 the block's lane loop is explicitly vectorized too (one partial-sum buffer per row): its dots
    are the target's instruction, not the portable form's widened bytes (which ran 10x slower)."""
    target = parse_target(f"cpu:{cpu}")
    module, _ = packed_case(4, 4, 2 * target.lanes(), 128, 128, target.lanes())
    configs = {kernel_key(_op(module)): Config.parse("qgemv{path=int,mr=4,chains=2,prefetch=4096}")}
    text = CpuExecutable.build(module, target=target, configs=configs).kernels.assembly()
    assert re.search(pattern, text) and "vpmovzxbd" not in text


@pytest.mark.parametrize("bits", range(1, 9))
def test_field_plan_takes_each_code_from_its_window(bits: int) -> None:
    """Byte word t holds codes 4t .. 4t + 3, each cut from the 32-bit window at its offset."""
    codes = np.random.default_rng(bits).integers(0, 1 << bits, 32).astype(np.uint32)
    stream = [int(w) for w in layouts.pack_stream(codes, bits)] + [0]
    for t, word in enumerate(field_plan(bits)):
        assert word.codes == tuple(range(4 * t, 4 * t + 4))
        window = ((stream[word.word + 1] << 32 | stream[word.word]) >> word.shift) & WORD_MASK
        assert word.straddles() == (word.shift > 0) and all(o + bits <= 32 for o in word.offsets)
        assert [(window >> o) & ((1 << bits) - 1) for o in word.offsets] == [int(codes[j]) for j in word.codes]


@pytest.mark.parametrize(
    ("cpu", "fields"),
    [("sapphirerapids", {1, 3, 5, 6, 7}), ("icelake-server", {1, 3, 5, 6, 7})]
    + [("skylake-avx512", set()), ("x86-64-v3", set()), ("alderlake", set())],
)
def test_int_plan_takes_bit_fields_where_they_are_one_instruction(cpu: str, fields: set[int]) -> None:
    """The plan of fewer operations per target: fields for the odd widths (and 6) with VBMI, never without (k = 1's
    in-place masks take 7 shifted sums per block: 22 operations against the fields' 16)."""
    target = parse_target(f"cpu:{cpu}")
    assert {b for b in range(1, 9) if isinstance(int_plan(target, b)[0], FieldWord)} == fields
    assert all(int_plan(target, b) == decode_plan(b) for b in range(1, 9) if b not in fields)
