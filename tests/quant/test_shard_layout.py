"""The ``interleaved_shards`` block layout: where each code's bits are, that every path of the ``qgemv`` kernel
(float, int, lut) and the GPU GEMV read it right on several targets, that ``pack-quant`` picks it where the
target's int path decodes it in fewer operations, and that the AVX2 kernel it makes is shorter."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.plan_runner import run_plan
from tensorium.ir import graph, parse_module, print_module
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.dialects.quant import layouts
from tensorium.ir.types import TensorType, f32
from tensorium.lowering import lower_function
from tensorium.lowering.quant import PATHS, packed_layout
from tensorium.lowering.quant_int import WORD_MASK, shard_plan
from tensorium.lowering.quant_lut import bit_owners
from tensorium.lowering.space import Config, kernel_key
from tensorium.passes import PassManager
from tensorium.targets import parse_target
from tensorium.testing import build_module

from .test_kernels import _op, packed_case

SHARDS = "interleaved_shards"


@pytest.mark.parametrize("bits", range(1, 9))
@pytest.mark.parametrize("name", layouts.BLOCK_LAYOUTS)
def test_block_pieces_say_where_each_code_is(bits: int, name: str) -> None:
    """Reading every code back from the packed words through its pieces gives the codes; the pieces of a block
    cover each of its 32 k bits exactly once."""
    lanes = 4
    codes = np.random.default_rng(bits).integers(0, 1 << bits, (6, 70))
    words = layouts.pack(codes, bits, False, name, lanes)
    pieces = layouts.block_pieces(bits, name)
    covered = sorted(32 * p.word + p.shift + t for code in pieces for p in code for t in range(p.width))
    assert covered == list(range(32 * bits))
    padded = np.zeros((words.shape[0] * lanes, words.shape[1] * 32), np.int64)
    padded[:6, :70] = codes
    for row in range(padded.shape[0]):
        for block in range(words.shape[1]):
            for j, code in enumerate(pieces):
                value = 0
                for p in code:
                    word = int(words[row // lanes, block, p.word, row % lanes])
                    value |= ((word >> p.shift) & ((1 << p.width) - 1)) << p.low
                assert value == padded[row, 32 * block + j]


def test_shard_pieces_share_one_shift_per_byte_word() -> None:
    """In the shards layout the four codes of byte word ``t`` have each shard's piece at the same shift of the
    same word, a byte apart: one shift and mask per shard reads all four."""
    for bits in (3, 5, 6, 7):
        pieces = layouts.block_pieces(bits, SHARDS)
        for t in range(8):
            for s in range(len(layouts.shard_widths(bits))):
                found = {(pieces[4 * t + b][s].word, pieces[4 * t + b][s].shift - 8 * b) for b in range(4)}
                assert len(found) == 1


@pytest.mark.parametrize("bits", range(1, 9))
def test_shard_plan_puts_each_code_in_one_byte(bits: int) -> None:
    codes = np.random.default_rng(bits).integers(0, 1 << bits, (1, 32))
    words = layouts.pack(codes, bits, False, SHARDS, 1)[0, 0, :, 0]
    plan = shard_plan(bits)
    for t, word in enumerate(plan):
        assert word.codes == (4 * t, 4 * t + 1, 4 * t + 2, 4 * t + 3)
        assert len(word.parts) == len(layouts.shard_widths(bits))  # one shift and mask per shard
        value = 0
        for part in word.parts:
            w = int(words[part.word])
            value |= ((w >> part.shift) if part.shift >= 0 else (w << -part.shift)) & part.mask & WORD_MASK
        assert [(value >> (8 * b)) & 0xFF for b in range(4)] == [int(codes[0, j]) for j in word.codes]


def test_lut_bit_owners_follow_the_layout() -> None:
    assert bit_owners(3, "interleaved") == tuple((p // 3, p % 3) for p in range(96))
    owners = bit_owners(3, SHARDS)
    assert sorted(owners) == sorted((j, b) for j in range(32) for b in range(3))
    assert owners[64:72] == tuple((4 * t, 2) for t in range(8))  # the 1-bit shard: byte 0 holds codes 0, 4, .. 28


@pytest.mark.parametrize(
    ("cpu", "wanted"),
    [
        ("znver3", {3, 5, 6, 7}),
        ("skylake-avx512", {3, 5, 6, 7}),
        ("cascadelake", {3, 5, 6, 7}),
        ("znver4", set()),
        ("emeraldrapids", set()),
        ("x86-64", set()),
    ],
)
def test_packed_layout_rule(cpu: str, wanted: set[int]) -> None:
    """Shards where the int path cuts codes with shifts and masks (no VBMI) and a code is split (3, 5, 6, 7
    bits); the stream where VBMI's bit fields decode it, or where only the float path is fast (SSE2)."""
    target = parse_target(f"cpu:{cpu}")
    assert {bits for bits in range(1, 9) if packed_layout(target, bits) == SHARDS} == wanted


PATH_CASES = [
    ("float", 3, 2, "qgemv{path=float,mr=2,chains=4,prefetch=0}"),
    ("float", 7, 1, "qgemv{path=float,mr=1,chains=8,prefetch=2048}"),
    ("int", 3, 1, "qgemv{path=int,mr=1,chains=2,prefetch=4096}"),
    ("int", 5, 3, "qgemv{path=int,mr=2,chains=1,prefetch=0}"),
    ("int", 6, 1, "qgemv{path=int,mr=1,chains=2,prefetch=0}"),
    ("int", 7, 2, "qgemv{path=int,mr=2,chains=2,prefetch=0}"),
    ("lut", 3, 2, "qgemv{path=lut,mr=2,chains=2,prefetch=0}"),
    ("lut", 1, 1, "qgemv{path=lut,mr=1,chains=2,prefetch=0}"),
]


@pytest.mark.parametrize("cpu", ["znver3", "skylake-avx512", "znver4", "x86-64"])
@pytest.mark.parametrize(("path", "bits", "rows", "config"), PATH_CASES)
def test_every_path_reads_shards(cpu: str, path: str, bits: int, rows: int, config: str) -> None:
    """Each path on shards against the interpreter (the int and lut paths within their activations' rounding),
    on every target this host runs."""
    target = parse_target(f"cpu:{cpu}")
    if not target.runs_here():
        pytest.skip(f"this host cannot run code for {cpu}")
    module, inputs = packed_case(bits, rows, 37, 128, 64, target.lanes(), panel_major=True, layout=SHARDS)
    (want,) = interp.run(module, inputs)
    configs = {kernel_key(_op(module)): Config.parse(config)}
    (got,) = CpuExecutable.build(module, target=target, configs=configs).run(inputs)
    tolerance = 1e-5 if path == "float" else 2e-2
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance * np.abs(want).max())


@pytest.mark.parametrize(
    "config", ["qgemv{path=float,mr=2,chains=2,prefetch=0}", "qgemv{path=int,mr=1,chains=2,prefetch=0}"]
)
def test_loop_interpreter_reads_shards(config: str) -> None:
    module, inputs = packed_case(5, 2, 9, 64, 32, 4, layout=SHARDS)
    (want,) = interp.run(module, inputs)
    (got,) = run_plan(lower_function(module, configs={kernel_key(_op(module)): Config.parse(config)}), inputs)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2 * np.abs(want).max())


def test_gpu_gemv_reads_shards() -> None:
    """The warp-packed GEMV decodes shards too (on the loop interpreter)."""
    from tensorium.backends.cuda.ptx import NATIVE
    from tensorium.lowering.codegen import Codegen, run_codegen

    module, inputs = packed_case(3, 1, 40, 64, 32, 32, panel_major=True, layout=SHARDS)
    state = run_codegen(Codegen(module, parse_target("cuda:sm_90"), native=NATIVE), until="decompose")
    assert state.lowered is not None and "gpu_qgemv{" in str(functions(state.lowered)[0].attributes["config"])
    (got,) = run_plan(state.lowered, inputs)
    (want,) = interp.run(module, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def _quantized_model(bits: int) -> object:
    weight = np.random.default_rng(bits).standard_normal((48, 256)).astype(np.float32)

    def body(x: object) -> object:
        w = graph.constant(value=DenseAttr.adopt(weight, TensorType((48, 256), f32)))
        return graph.matmul(x, w, transpose_b=True)

    return build_module([TensorType((1, 256), f32)], body)


@pytest.mark.parametrize(("cpu", "layout"), [("znver3", SHARDS), ("znver4", "interleaved")])
def test_pack_quant_stores_the_targets_layout(cpu: str, layout: str) -> None:
    """pack-quant for Zen 3 stores 3-bit weights as shards (printed, parsed back, run), for Zen 4 the stream
    (the attribute's default)."""
    module = _quantized_model(3)
    PassManager.parse(f"quantize{{bits=3,group=64,min-elements=0}},pack-quant{{target=cpu:{cpu}}}").run(module)
    (op,) = [o for o in func_body(functions(module)[0]).ops if o.name == "quant.matmul_packed"]
    assert op.attr("layout") == layout
    text = print_module(module)
    assert ("layout = " in text) is (layout == SHARDS)  # the default is not printed
    reparsed = parse_module(text)
    x = np.random.default_rng(1).standard_normal((1, 256)).astype(np.float32)
    (want,) = interp.run(module, [x])
    np.testing.assert_array_equal(interp.run(reparsed, [x])[0], want)
    target = parse_target(f"cpu:{cpu}")
    if target.runs_here():
        (got,) = CpuExecutable.build(module, target=target).run([x])
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2 * np.abs(want).max())


def _decode_instructions(assembly: str) -> int:
    """Shifts, masks and ors of vector registers in the kernel (the decode's instructions)."""
    return len(re.findall(r"\n\s*(vpsrld|vpslld|vpand|vpor)\s", assembly))


@pytest.mark.parametrize("bits", [3, 5, 6, 7])
def test_shards_halve_the_avx2_decode(bits: int) -> None:
    """Cross-compiled for Zen 3 (AVX2): the int kernel over shards has at most 0.6 of the stream's decode
    instructions (the estimate: 38 against 75 per block at 3 bits, 35 against 98 at 5)."""
    target = parse_target("cpu:znver3")
    counts = {}
    for layout in layouts.BLOCK_LAYOUTS:
        module, _ = packed_case(bits, 1, 2 * target.lanes(), 128, 128, target.lanes(), True, layout)
        configs = {kernel_key(_op(module)): Config.parse("qgemv{path=int,mr=1,chains=2,prefetch=0}")}
        counts[layout] = _decode_instructions(
            CpuExecutable.build(module, target=target, configs=configs).kernels.assembly()
        )
    assert counts[SHARDS] <= 0.6 * counts["interleaved"], counts
    assert PATHS["int"].cost(target, bits, 1, SHARDS) < PATHS["int"].cost(target, bits, 1, "interleaved")  # type: ignore[operator]
