"""The loop dialect's integer bit ops (shl, shr, dot_u8i8, bit_fields) through LLVM against the loop interpreter,
in scalar and vector loops, for targets with and without dot-product instructions; and the instruction each target
gets."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tensorium.backends import loop_interp
from tensorium.backends.llvm import compile_module
from tensorium.backends.llvm.bits import dot_form, multishift_intrinsic
from tensorium.errors import VerifyError
from tensorium.ir import InsertionPoint, func_body, make_func, make_module, set_results
from tensorium.ir.dialects import loop
from tensorium.ir.dialects.loop.bits import bit_fields_of, byte_dot, byte_dot_halves
from tensorium.ir.types import BufferType, IntegerType, i32
from tensorium.targets import parse_target

U32 = IntegerType(32, False)
N = 37
"""Elements per test buffer: two vectors of up to 16 lanes and a scalar remainder."""


def byte_dot_kernel(kind: str, narrow: bool, lanes: int = 16):  # type: ignore[no-untyped-def]
    """``out[i] = dot_u8i8(acc[i], shr(a[i], 0) , shl(b[i], 0))`` plus ``sh[i] = a[i] >> s[i] << 1`` over N items."""
    words, ints = BufferType((N,), U32), BufferType((N,), i32)
    f = make_func("k", [ints, words, words, words, ints, words], arg_names=["acc", "a", "b", "s", "out", "sh"])
    acc, a, b, s, out, sh = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, N, kind=kind, factor=lanes if kind == "vectorize" else None, name="i") as i:
            lhs, rhs = loop.load(a, i), loop.load(b, i)
            loop.store(loop.dot_u8i8(loop.load(acc, i), lhs, rhs, narrow=narrow), out, i)
            one = loop.const(value=1, dtype=U32)
            loop.store(loop.shl(loop.shr(lhs, loop.load(s, i)), one), sh, i)
    set_results(f, [])
    return make_module([f])


def _inputs(narrow: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    high = 128 if narrow else 256  # narrow: u8 below 128 against i8 in [-127, 127], so pairs fit i16
    lhs = rng.integers(0, high, (N, 4)).astype(np.uint8)
    rhs = rng.integers(-127 if narrow else -128, 128, (N, 4)).astype(np.int8)
    acc = rng.integers(-(1 << 20), 1 << 20, N).astype(np.int32)
    acc[0] = np.iinfo(np.int32).max  # wraps
    shifts = rng.integers(0, 40, N).astype(np.uint32)  # 32..39 give 0
    return [acc, lhs.view(np.uint32).ravel(), rhs.view(np.uint32).ravel(), shifts]


@pytest.mark.parametrize("cpu", ["", "znver4", "alderlake", "skylake-avx512", "haswell", "x86-64"])
@pytest.mark.parametrize("narrow", [True, False])
@pytest.mark.parametrize("kind", ["vectorize", "serial"])
def test_llvm_matches_the_interpreter(cpu: str, narrow: bool, kind: str) -> None:
    target = parse_target(f"cpu:{cpu}" if cpu else "cpu")
    if not target.runs_here():
        pytest.skip(f"this host cannot run code for {cpu}")
    module = byte_dot_kernel(kind, narrow, target.lanes())
    inputs = _inputs(narrow)
    want = [*inputs, np.zeros(N, np.int32), np.zeros(N, np.uint32)]
    loop_interp.run(module, want)
    got = [*inputs, np.zeros(N, np.int32), np.zeros(N, np.uint32)]
    compile_module(module, target=target).run("k", *got)
    np.testing.assert_array_equal(got[4], want[4])
    np.testing.assert_array_equal(got[5], want[5])
    np.testing.assert_array_equal(want[4], byte_dot(inputs[0], inputs[1], inputs[2]))


@pytest.mark.parametrize(
    ("cpu", "narrow", "present", "absent"),
    [
        ("znver4", False, ["vpdpbusd\t.*%zmm"], ["vpmaddubsw"]),
        ("alderlake", True, ["{vex}\tvpdpbusd\t.*%ymm"], ["vpmaddubsw"]),
        ("haswell", True, ["vpmaddubsw", "vpmaddwd"], ["vpdpbusd"]),
        ("x86-64-v3", True, ["vpmaddubsw", "vpmaddwd"], ["vpdpbusd"]),
        ("skylake-avx512", True, ["vpmaddubsw\t.*%zmm", "vpmaddwd\t.*%zmm"], ["vpdpbusd"]),
        ("haswell", False, [], ["vpdpbusd", "vpmaddubsw"]),
    ],
)
def test_each_target_gets_its_instruction(cpu: str, narrow: bool, present: list[str], absent: list[str]) -> None:
    """Cross-compiled assembly (LLVM's CPU names; the host's ISA plays no part)."""
    target = parse_target(f"cpu:{cpu}")
    text = compile_module(byte_dot_kernel("vectorize", narrow, target.lanes()), target=target).assembly()
    for needle in present:
        assert re.search(needle, text), f"{cpu}: no {needle!r}"
    for needle in absent:
        assert needle not in text, f"{cpu}: unexpected {needle!r}"


def test_dot_form_table() -> None:
    vnni = frozenset({"avx512vnni", "avx512bw", "avx2", "ssse3"})
    assert dot_form(vnni, 512, False) is not None and dot_form(vnni, 512, False).dot.endswith("vpdpbusd.512")  # type: ignore[union-attr]
    assert dot_form(vnni, 256, True) is not None and dot_form(vnni, 256, True).pairs  # type: ignore[union-attr]  # no VL
    assert dot_form(frozenset({"avx2"}), 256, False) is None
    assert dot_form(frozenset({"avxvnni"}), 256, False).dot.endswith("vpdpbusd.256")  # type: ignore[union-attr]
    assert dot_form(frozenset(), 128, True) is None


def test_bad_operands_are_named() -> None:
    f = make_func("bad", [BufferType((4,), IntegerType(16))], arg_names=["a"])
    (a,) = func_body(f).args
    with InsertionPoint(func_body(f)), pytest.raises(VerifyError, match="lhs must be a 32-bit integer word"):
        x = loop.load(a, loop.const(value=0, dtype=loop.as_index(0).type))
        loop.dot_u8i8(loop.const(value=0, dtype=i32), x, x)


FIELDS = [((0, 5, 10, 15), 5), ((3, 10, 17, 24), 7), ((25, 0, 13, 26), 6), ((31, 30, 0, 16), 1), ((24, 16, 8, 0), 8)]
"""(offsets, width) cases of ``bit_fields``: consecutive, odd, out of order, the last bit, whole bytes."""


def bit_fields_kernel(kind: str, lanes: int = 16):  # type: ignore[no-untyped-def]
    """``out_c[i] = bit_fields(a[i])`` for each case ``c`` of :data:`FIELDS` over N items."""
    words = BufferType((N,), U32)
    f = make_func("k", [words] * (1 + len(FIELDS)), arg_names=["a"] + [f"o{c}" for c in range(len(FIELDS))])
    a, *outs = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, N, kind=kind, factor=lanes if kind == "vectorize" else None, name="i") as i:
            word = loop.load(a, i)
            for out, (offsets, width) in zip(outs, FIELDS):
                loop.store(loop.bit_fields(word, offsets=offsets, width=width), out, i)
    set_results(f, [])
    return make_module([f])


@pytest.mark.parametrize("cpu", ["", "sapphirerapids", "skylake-avx512", "x86-64-v3", "x86-64"])
@pytest.mark.parametrize("kind", ["vectorize", "serial"])
def test_bit_fields_match_the_interpreter(cpu: str, kind: str) -> None:
    target = parse_target(f"cpu:{cpu}" if cpu else "cpu")
    if not target.runs_here():
        pytest.skip(f"this host cannot run code for {cpu}")
    words = np.random.default_rng(3).integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)
    words[0], words[1] = 0xFFFFFFFF, 0x80000001
    module = bit_fields_kernel(kind, target.lanes())
    want = [words] + [np.zeros(N, np.uint32) for _ in FIELDS]
    loop_interp.run(module, want)
    got = [words] + [np.zeros(N, np.uint32) for _ in FIELDS]
    compile_module(module, target=target).run("k", *got)
    for c, (offsets, width) in enumerate(FIELDS):
        np.testing.assert_array_equal(got[1 + c], want[1 + c])
        np.testing.assert_array_equal(want[1 + c], bit_fields_of(words, offsets, width))
    assert [(int(want[1][0]) >> (8 * b)) & 0xFF for b in range(4)] == [31] * 4  # 5-bit fields of all ones


@pytest.mark.parametrize(("cpu", "present"), [("sapphirerapids", True), ("icelake-server", True), ("x86-64-v3", False)])
def test_bit_fields_take_multishift_where_the_target_has_it(cpu: str, present: bool) -> None:
    """Cross-compiled: ``vpmultishiftqb`` on AVX-512 VBMI targets, shifts and masks on AVX2."""
    target = parse_target(f"cpu:{cpu}")
    text = compile_module(bit_fields_kernel("vectorize", target.lanes()), target=target).assembly()
    assert ("vpmultishiftqb" in text) == present, cpu
    assert multishift_intrinsic(frozenset({"avx512vbmi"}), 256) is None  # 256 bits need VL too


def test_bit_fields_refuse_fields_past_the_word() -> None:
    f = make_func("bad", [BufferType((4,), U32)], arg_names=["a"])
    (a,) = func_body(f).args
    with InsertionPoint(func_body(f)), pytest.raises(VerifyError, match=r"offsets must lie in \[0, 27\].*\[28\]"):
        x = loop.load(a, loop.const(value=0, dtype=loop.as_index(0).type))
        loop.bit_fields(x, offsets=(0, 5, 10, 28), width=5)


def halves_kernel(kind: str, lanes: int, run: int):  # type: ignore[no-untyped-def]
    """``out[i] = sum_halves(dot_u8i8_halves(... dot_u8i8_halves(0, a0[i], b0[i]) ..., a{run-1}[i], b{run-1}[i]))``
    and ``raw[i]`` the halves before the sum."""
    words, ints = BufferType((N,), U32), BufferType((N,), i32)
    names = [f"{x}{j}" for j in range(run) for x in "ab"]
    f = make_func("k", [words] * (2 * run) + [ints, ints], arg_names=[*names, "out", "raw"])
    *pairs, out, raw = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, N, kind=kind, factor=lanes if kind == "vectorize" else None, name="i") as i:
            halves = loop.const(value=0, dtype=i32)
            for j in range(run):
                halves = loop.dot_u8i8_halves(halves, loop.load(pairs[2 * j], i), loop.load(pairs[2 * j + 1], i))
            loop.store(halves, raw, i)
            loop.store(loop.sum_halves(halves), out, i)
    set_results(f, [])
    return make_module([f])


@pytest.mark.parametrize("cpu", ["", "znver3", "skylake-avx512", "x86-64"])
@pytest.mark.parametrize("kind", ["vectorize", "serial"])
def test_halves_match_the_interpreter_and_the_dot(cpu: str, kind: str) -> None:
    """A run of 4 ``dot_u8i8_halves`` of 5-bit codes and its ``sum_halves``: LLVM (vpmaddubsw + vpaddw + vpmaddwd,
    or the portable form) equals the loop interpreter, and equals 4 times ``dot_u8i8`` (each half's total within
    i16); past that range the halves wrap as documented."""
    target = parse_target(f"cpu:{cpu}" if cpu else "cpu")
    if not target.runs_here():
        pytest.skip(f"this host cannot run code for {cpu}")
    rng = np.random.default_rng(3)
    words = []
    for _ in range(4):
        lhs = rng.integers(0, 32, (N, 4)).astype(np.uint8)
        rhs = rng.integers(-127, 128, (N, 4)).astype(np.int8)
        lhs[0], rhs[0] = 31, -127  # the extreme: 4 x 2 x 31 x 127 = 31496, within i16
        words += [lhs.view(np.uint32).ravel(), rhs.view(np.uint32).ravel()]
    module = halves_kernel(kind, target.lanes(), 4)
    want = [*words, np.zeros(N, np.int32), np.zeros(N, np.int32)]
    loop_interp.run(module, want)
    got = [*words, np.zeros(N, np.int32), np.zeros(N, np.int32)]
    compile_module(module, target=target).run("k", *got)
    np.testing.assert_array_equal(got[-2], want[-2])
    np.testing.assert_array_equal(got[-1], want[-1])
    total = np.zeros(N, np.int32)
    for j in range(4):
        total = byte_dot(total, words[2 * j], words[2 * j + 1])
    np.testing.assert_array_equal(want[-2], total)
    one = np.array([0x01000001], np.uint32)  # byte 0 and byte 3 are 1
    wrapped = byte_dot_halves(np.full(1, 0x7FFF0000, np.int32), one, one)
    assert wrapped[0] == np.int32(np.uint32(0x80000001).view(np.int32))  # the low half 0 + 1, the high half 0x7FFF + 1


@pytest.mark.parametrize(
    ("cpu", "present"), [("znver3", r"vpmaddubsw.*\n(.*\n)?.*vpaddw"), ("skylake-avx512", "vpaddw.*%zmm")]
)
def test_halves_take_the_pairs_instructions(cpu: str, present: str) -> None:
    """Cross-compiled: the halves are vpmaddubsw and vpaddw, the sum one vpmaddwd (also where VNNI would have
    vpdpbusd for dot_u8i8)."""
    text = compile_module(
        halves_kernel("vectorize", parse_target(f"cpu:{cpu}").lanes(), 4), target=parse_target(f"cpu:{cpu}")
    ).assembly()
    assert "vpmaddubsw" in text and "vpaddw" in text and "vpmaddwd" in text and re.search(present, text)
