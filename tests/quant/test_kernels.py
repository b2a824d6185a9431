"""The qgemv kernel family: every k in 1..8 on odd shapes, at several points of its space, against the
interpreter (compiled through LLVM, and once on the loop interpreter)."""

from __future__ import annotations

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.plan_runner import run_plan
from tensorium.errors import InterpreterError
from tensorium.ir.core import Operation
from tensorium.ir.dialects import quant
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.dialects.quant import layouts
from tensorium.ir.types import IntegerType, QuantizedType, TensorType, f32
from tensorium.lowering import lower_function
from tensorium.lowering.space import Config, default_config, kernel_key, kernel_space
from tensorium.targets import host_target, parse_target
from tensorium.testing import build_module

U32 = IntegerType(32, False)


def packed_case(
    bits: int,
    rows: int,
    cols: int,
    depth: int,
    group: int,
    lanes: int,
    panel_major: bool = False,
    layout: str = "interleaved",
) -> tuple[Operation, list[np.ndarray]]:
    """A module of one quant.matmul_packed over random codes in block layout ``layout``, scales and zero points
    (group-major, or ``panel_major``), and its inputs."""
    rng = np.random.default_rng(bits * 100 + rows)
    codes = rng.integers(0, 1 << bits, (cols, depth))
    packed = layouts.pack(codes, bits, False, layout, lanes)
    params = (depth // group, packed.shape[0] * lanes)
    scale = rng.random(params).astype(np.float32)
    zero = (rng.random(params) * (1 << bits)).astype(np.float32)
    if panel_major:
        scale, zero = (layouts.panel_params(p[:, :cols].T, lanes) for p in (scale, zero))
    x = rng.standard_normal((rows, depth)).astype(np.float32)
    inputs = [x, packed, scale, zero]
    types = [TensorType(a.shape, U32 if a.dtype == np.uint32 else f32) for a in inputs]
    attrs: dict[str, object] = {"bits": bits, "cols": cols, "group": group, "lanes": lanes}
    if layout != "interleaved":
        attrs["layout"] = layout
    module = build_module(types, lambda *v: quant.matmul_packed(*v, **attrs), check_text=False)  # type: ignore[arg-type]
    return module, inputs


def _op(module: Operation) -> Operation:
    return func_body(functions(module)[0]).ops[0]


@pytest.mark.parametrize(
    ("bits", "rows", "cols", "depth", "group", "mr"),
    [(1, 1, 37, 128, 64, 1), (2, 3, 19, 96, 32, 2), (3, 5, 40, 64, 32, 4), (4, 1, 53, 256, 128, 1)]
    + [(5, 2, 17, 64, 64, 2), (6, 7, 33, 96, 96, 4), (7, 1, 16, 160, 32, 1), (8, 9, 21, 64, 32, 8)],
)
def test_every_width_matches_the_interpreter(bits: int, rows: int, cols: int, depth: int, group: int, mr: int) -> None:
    target = host_target()
    module, inputs = packed_case(bits, rows, cols, depth, group, target.lanes(), panel_major=bits % 2 == 0)
    (want,) = interp.run(module, inputs)
    config = Config(
        "qgemv",
        (("path", "float"), ("mr", mr), ("chains", max(1, 8 // mr // (bits % 2 + 1))), ("prefetch", 4096 * (bits % 2))),
    )
    space = kernel_space(_op(module), target)
    assert space is not None and space.check(config) == config
    (got,) = CpuExecutable.build(module, configs={kernel_key(_op(module)): config}).run(inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("panel_major", [False, True])
def test_loop_interpreter_runs_the_same_kernel(panel_major: bool) -> None:
    module, inputs = packed_case(3, 3, 9, 64, 32, 4, panel_major)
    (want,) = interp.run(module, inputs)
    configs = {kernel_key(_op(module)): Config.parse("qgemv{path=float,mr=2,chains=2,prefetch=2048}")}
    (got,) = run_plan(lower_function(module, configs=configs), inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("cpu", "bits", "path"),
    [("znver4", 4, "int"), ("znver4", 8, "int"), ("znver4", 5, "int"), ("haswell", 4, "int"), ("haswell", 8, "float")]
    + [("x86-64", 4, "float"), ("x86-64-v3", 3, "int"), ("znver4", 3, "int"), ("emeraldrapids", 8, "int")],
)
def test_space_and_default_rule(cpu: str, bits: int, path: str) -> None:
    """The int path where the target has VNNI or AVX2 (not AVX2 at 8 bits, whose multiply-add saturates), with at
    most 2 integer chains; software prefetch except where the CPU's hardware prefetchers do better alone (Zen 4
    from 4 bits up)."""
    target = parse_target(f"cpu:{cpu}")
    decode, _ = packed_case(bits, 1, 16, 64, 32, target.lanes())
    batch, _ = packed_case(bits, 3, 16, 64, 32, target.lanes())
    chains = (2, 2) if path == "int" else (8, 4)  # the int path's blocks are independent integer sums
    ahead = 0 if cpu == "znver4" and bits >= 4 else 4096
    want = f"qgemv{{path={path},mr=1,chains={chains[0]},prefetch={ahead}}}"
    assert str(default_config(_op(decode), target)) == want
    assert str(default_config(_op(batch), target)) == f"qgemv{{path={path},mr=2,chains={chains[1]},prefetch={ahead}}}"
    space = kernel_space(_op(batch), target)
    assert space is not None and space.size() == 32 * len(space.knobs[0].values)
    assert space.knobs[0].values == (("float", "int", "lut") if bits <= 3 else ("float", "int"))
    assert [str(p) for p in space.points()][:3] == [
        "qgemv{path=float,mr=1,chains=1,prefetch=0}",
        "qgemv{path=float,mr=1,chains=1,prefetch=2048}",
        "qgemv{path=float,mr=1,chains=1,prefetch=4096}",
    ]


@pytest.mark.parametrize(
    ("cpu", "bits", "prefetches"), [("znver4", 4, False), ("znver4", 2, True), ("icelake-server", 4, True)]
)
def test_default_kernel_prefetches_where_it_pays(cpu: str, bits: int, prefetches: bool) -> None:
    """The default decode kernel's assembly holds software prefetches exactly where the rule asks for them."""
    target = parse_target(f"cpu:{cpu}")
    module, _ = packed_case(bits, 1, 2 * target.lanes(), 256, 128, target.lanes(), True)
    assembly = CpuExecutable.build(module, target=target).kernels.assembly()
    assert ("prefetcht0" in assembly) is prefetches


@pytest.mark.parametrize(
    ("qtype", "weight_shape", "scale_shape"),
    [
        (QuantizedType(3, True, f32, "per_channel", 0), (5, 48), (5, 1)),
        (QuantizedType(4, False, f32, "per_group", 1, 16), (7, 48), (7, 3)),
        (QuantizedType(1, True, f32), (3, 20), ()),
    ],
)
def test_unpacked_quant_ops_on_the_cpu(
    qtype: QuantizedType, weight_shape: tuple[int, int], scale_shape: tuple[int, ...]
) -> None:
    """Run-time k-bit weights (no packing) through the simple nests: matmul, dequantize and embedding."""
    rng = np.random.default_rng(qtype.bits)
    low, high = qtype.code_range
    codes = rng.integers(low, high + 1, weight_shape).astype(np.int8 if qtype.signed else np.uint8)
    scale = (rng.random(scale_shape) + 0.5).astype(np.float32)
    zero = (rng.random(scale_shape) * 2).astype(np.float32)
    x = rng.standard_normal((2, 3, weight_shape[1])).astype(np.float32)
    idx = np.array([[0, weight_shape[0] - 1], [1, 2]], np.int32)
    types = [TensorType(x.shape, f32), TensorType(weight_shape, qtype), TensorType(scale_shape, f32)]
    types += [TensorType(scale_shape, f32), TensorType(idx.shape, IntegerType(32))]

    def body(xv: object, w: object, s: object, z: object, i: object) -> tuple[object, ...]:
        return quant.matmul(xv, w, s, z), quant.dequantize(w, s), quant.embedding(w, i, s, z)

    module = build_module(types, body)
    inputs = [x, codes, scale, zero, idx]
    want = interp.run(module, inputs)
    got = CpuExecutable.build(module).run(inputs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_a_quantized_embedding_index_past_the_table_is_an_error() -> None:
    qtype = QuantizedType(4, False, f32)
    types = [TensorType((5, 8), qtype), TensorType((2,), IntegerType(32)), TensorType((), f32)]
    module = build_module(types, lambda w, i, s: quant.embedding(w, i, s))
    executable = CpuExecutable.build(module)
    codes, scale = np.arange(40, dtype=np.uint8).reshape(5, 8) % 16, np.float32(0.5)
    np.testing.assert_allclose(executable.run([codes, np.array([4, 0], np.int32), scale])[0], codes[[4, 0]] * 0.5)
    for bad in ([5, 0], [0, -1]):
        with pytest.raises(InterpreterError, match=r"^'quant.embedding': an index is out of range for dimension 0"):
            executable.run([codes, np.array(bad, np.int32), scale])


@pytest.mark.parametrize(("cpu", "bits"), [("x86-64-v3", 3), ("skylake-avx512", 4), ("skylake-avx512", 5)])
def test_prefetch_knob_fetches_one_line_per_64_bytes_of_a_block(cpu: str, bits: int) -> None:
    """``prefetch`` > 0: one ``prefetcht0`` per 64 bytes of a block's words (k words of ``lanes`` rows) in the
    block loop, the distance in the address, and per group one for the next panel's scales and one for its zero
    points (one group here); 0: none. Cross-compiled, so the host's ISA plays no part."""
    target = parse_target(f"cpu:{cpu}")
    lanes = target.lanes()
    module, _ = packed_case(bits, 1, 2 * lanes, 128, 128, lanes)
    counts = {}
    for ahead in (0, 4096):
        config = Config.parse(f"qgemv{{path=float,mr=1,chains=4,prefetch={ahead}}}")
        text = CpuExecutable.build(module, target=target, configs={kernel_key(_op(module)): config}).kernels.assembly()
        counts[ahead] = text.count("prefetcht0")
    per_block = -(-bits // max(1, 64 // (lanes * 4)))
    assert counts[0] == 0
    weights = counts[4096] - 2  # the scale and zero-point lines of the next panel
    assert weights % per_block == 0 and weights >= per_block  # the block loop may be unrolled


def test_prefetch_is_a_hint_that_reads_nothing() -> None:
    """The interpreter runs ``loop.prefetch`` as nothing, its indices past the buffer included; the compiled
    kernel with the knob on computes what it computes with it off."""
    module, inputs = packed_case(4, 1, 37, 256, 64, host_target().lanes())
    results = []
    for ahead in (0, 8192):
        config = Config.parse(f"qgemv{{path=float,mr=1,chains=8,prefetch={ahead}}}")
        configs = {kernel_key(_op(module)): config}
        results.append(CpuExecutable.build(module, configs=configs).run(inputs)[0])
        (got,) = run_plan(lower_function(module, configs=configs), inputs)
        np.testing.assert_allclose(got, results[-1], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(results[0], results[1])
