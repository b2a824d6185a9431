"""k-bit tensors on WebGPU: packed in u32 words in the quant dialect's layouts and unpacked in the shaders.

Every k = 1..8, signed and unsigned, in every layout: on the loop interpreter (no GPU), on lavapipe through
wgpu-py, and under Node on Dawn (the JavaScript runtime packs the inputs itself), against the interpreter.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorium
from tensorium.backends.interp import run
from tensorium.backends.plan_runner import run_plan
from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.errors import CompileError
from tensorium.ir.core import Operation
from tensorium.ir.dialects.builtin import functions
from tensorium.ir.dialects.quant.config import QuantConfig
from tensorium.ir.parser import parse_module
from tensorium.ir.verifier import verify
from tensorium.lowering.codegen import lower_and_schedule
from tensorium.lowering.webgpu_quant import SHADER_LAYOUTS, pack_quantized, packing_for
from tensorium.targets import parse_target

from .js_harness import chromium_outputs, node_outputs, require_chromium, require_dawn

CASES = [(bits, signed) for bits in range(1, 9) for signed in (False, True) if bits > 1 or not signed]
"""Every width, signed and unsigned (a 1-bit code is unsigned here: -1/0 signed codes are allowed by the
dialect, but the quantize pass makes 1-bit weights unsigned)."""
WIDTHS = [(bits, bits % 2 == 0) for bits in range(1, 9)]
"""Every width once, the even ones signed."""
FEW = [(1, False), (3, True), (6, False), (8, True)]
"""What the loop interpreter (slow: one Python call per scalar op) checks per layout."""


def quant_module(bits: int, signed: bool, rank3: bool = False, rows: int = 10, depth: int = 70) -> Operation:
    """``x @ dequantize(w)^T`` and ``dequantize(w)`` of a k-bit input ``w`` [rows, depth] (rows of 70 codes by
    default: odd widths straddle words, rows end inside a word), per-channel scales and zero points; with
    ``rank3`` also the dequantized codes of a [2, 3, 37] per-tensor input ``v``."""
    q = f"!quant<{'i' if signed else 'u'}{bits}:f32, per_channel(axis=0)>"
    w = f"tensor<{rows}x{depth}x{q}>"
    x, s, out = f"tensor<2x{depth}xf32>", f"tensor<{rows}x1xf32>", f"tensor<2x{rows}xf32>"
    v = f"tensor<2x3x37x!quant<{'i' if signed else 'u'}{bits}:f32, per_tensor>>"
    extra_args = f", %v: {v}, %t: tensor<f32>" if rank3 else ""
    extra_results = ", tensor<2x3x37xf32>" if rank3 else ""
    extra_op = f"%2 = quant.dequantize %v, %t : ({v}, tensor<f32>) -> tensor<2x3x37xf32>" if rank3 else ""
    returned = ", %2" if rank3 else ""
    return parse_module(f"""
module {{
  func.func @main(%x: {x}, %w: {w}, %s: {s}, %z: {s}{extra_args})
      -> ({out}, tensor<{rows}x{depth}xf32>{extra_results}) {{
    %0 = quant.matmul %x, %w, %s, %z : ({x}, {w}, {s}, {s}) -> {out}
    %1 = quant.dequantize %w, %s, %z : ({w}, {s}, {s}) -> tensor<{rows}x{depth}xf32>
    {extra_op}
    func.return %0, %1{returned} : {out}, tensor<{rows}x{depth}xf32>{extra_results}
  }}
}}""")


def quant_inputs(
    bits: int, signed: bool, rank3: bool = False, seed: int = 0, rows: int = 10, depth: int = 70
) -> list[np.ndarray]:
    """Random inputs of :func:`quant_module`: codes over their whole range (the extremes included)."""
    rng = np.random.default_rng(seed)
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    dtype = np.int8 if signed else np.uint8

    def codes(shape: tuple[int, ...]) -> np.ndarray:
        c = rng.integers(low, high + 1, shape)
        c.flat[:2] = (low, high)
        return c.astype(dtype)

    inputs = [
        rng.standard_normal((2, depth)).astype(np.float32),
        codes((rows, depth)),
        rng.uniform(0.5, 2, (rows, 1)).astype(np.float32),
        rng.uniform(-2, 2, (rows, 1)).astype(np.float32),
    ]
    if rank3:
        inputs += [codes((2, 3, 37)), np.array(0.75, np.float32)]
    return inputs


def check(got: list[np.ndarray], want: list[np.ndarray], atol: float = 1e-5) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=atol)


@pytest.mark.parametrize("layout", SHADER_LAYOUTS)
@pytest.mark.parametrize("bits, signed", FEW)
def test_unpacked_loads_compute_what_the_interpreter_does(layout: str, bits: int, signed: bool) -> None:
    rank3 = layout != "interleaved"
    m = quant_module(bits, signed, rank3, rows=3, depth=37)
    target = parse_target("webgpu")
    lowered = lower_and_schedule(m, target, schedule=False)
    packings = pack_quantized(lowered, layout)
    verify(lowered)
    assert sorted(packings) == ([1, 4] if rank3 else [1])
    inputs = quant_inputs(bits, signed, rank3, rows=3, depth=37)
    packed = [packings[b].pack(a) if b in packings else a for b, a in enumerate(inputs)]
    assert all(p.dtype == np.uint32 for b, p in enumerate(packed) if b in packings)
    check(run_plan(lowered, packed), [np.asarray(r) for r in run(m, inputs)])
    loads = [op for f in functions(lowered) for op in f.walk() if op.name == "loop.load"]
    assert all(str(op.operands[0].type).endswith("xu32, global>") for op in loads if "u32" in str(op.results[0].type))


@pytest.mark.parametrize("layout", SHADER_LAYOUTS)
def test_packings_are_dense_and_invert(layout: str) -> None:
    for bits, signed in CASES:
        t = quant_module(bits, signed).regions[0].block.ops[0]  # func.func @main
        w = t.regions[0].block.args[1].type
        packing = packing_for(w, layout)  # type: ignore[arg-type]
        codes = quant_inputs(bits, signed)[1]
        assert np.array_equal(packing.unpack(packing.pack(codes)), codes)
        if layout == "stream":
            assert packing.words.static_shape == (10, -(-70 * bits // 32))


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(
    "layout, bits, signed",
    [("stream", *case) for case in CASES] + [(layout, *case) for layout in SHADER_LAYOUTS[1:] for case in WIDTHS],
)
def test_k_bit_inputs_on_lavapipe(layout: str, bits: int, signed: bool) -> None:
    rank3 = layout != "interleaved"
    m = quant_module(bits, signed, rank3)
    executable = WebGPUExecutable.build(m, quant_layout=layout)
    inputs = quant_inputs(bits, signed, rank3, seed=bits)
    check(executable.run(inputs), [np.asarray(r) for r in run(m, inputs)])
    assert [str(t) for t in executable.input_types] == [
        str(a.type) for a in m.regions[0].block.ops[0].regions[0].block.args
    ]
    assert any("u32" in s.wgsl and ">>" in s.wgsl for s in executable.shaders.values())


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("bits, signed", [(3, False), (4, True), (7, False), (8, True)])
def test_quantized_constant_weights_through_compile(bits: int, signed: bool) -> None:
    rng = np.random.default_rng(bits)
    w = rng.standard_normal((64, 40)).astype(np.float32)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    config = QuantConfig(bits, 32, signed=signed, min_elements=0)

    def model(x: np.ndarray) -> np.ndarray:
        return x @ w  # type: ignore[no-any-return]

    want = tensorium.compile(model, target="interp", quantize=config, cache=False)(x)
    compiled = tensorium.compile(model, target="webgpu", quantize=config, cache=False)
    np.testing.assert_allclose(compiled(x), want, rtol=1e-5, atol=1e-5)
    assert "quant.matmul" in str(compiled.module)
    assert not np.allclose(want, x @ w, rtol=1e-6, atol=1e-6)  # quantized indeed


@pytest.mark.usefixtures("gpu")
def test_packed_executable_round_trips_through_files(tmp_path: Path) -> None:
    m = quant_module(5, True, rank3=True)
    executable = WebGPUExecutable.build(m, quant_layout="shards")
    loaded = WebGPUExecutable.from_files(executable.to_files(tmp_path / "exe"))
    assert loaded.packed.keys() == executable.packed.keys()
    inputs = quant_inputs(5, True, rank3=True)
    check(loaded.run(inputs), executable.run(inputs))


@pytest.mark.parametrize("layout", SHADER_LAYOUTS)
def test_javascript_runtime_packs_inputs_on_dawn(layout: str, tmp_path: Path) -> None:
    require_dawn()
    rank3 = layout != "interleaved"
    for bits, signed in [(3, True), (5, False), (8, True)]:
        m = quant_module(bits, signed, rank3)
        executable = WebGPUExecutable.build(m, quant_layout=layout)
        inputs = quant_inputs(bits, signed, rank3, seed=bits)
        scratch = tmp_path / f"{bits}"
        got = node_outputs(executable.to_files(scratch / "exe"), inputs, scratch)
        check(got, [np.asarray(r) for r in run(m, inputs)])


def test_k_bit_tensors_the_backend_cannot_pack_stay_codes() -> None:
    """A returned k-bit tensor (and its source, which a kernel reads as codes) is not packed in k bits but held
    as codes, four to a word (test_webgpu_packed.py runs it); bad layouts are named."""
    q = "!quant<u4:f32, per_tensor>"
    returned = parse_module(f"""
module {{
  func.func @main(%x: tensor<4x8x{q}>) -> tensor<8x4x{q}> {{
    %0 = graph.transpose %x {{perm = [1, 0]}} : (tensor<4x8x{q}>) -> tensor<8x4x{q}>
    func.return %0 : tensor<8x4x{q}>
  }}
}}""")
    executable = WebGPUExecutable.build(returned)
    assert not executable.packed and all(str(t.element).startswith("!quant<u4") for t in executable.buffers)
    with pytest.raises(CompileError, match="unknown k-bit layout 'zigzag'"):
        WebGPUExecutable.build(quant_module(4, False), quant_layout="zigzag")
    with pytest.raises(CompileError, match="interleaved layout packs matrices, got rank 3"):
        WebGPUExecutable.build(quant_module(4, False, rank3=True), quant_layout="interleaved")


QUANTIZED_FACTORY = """
import numpy as np
from tensorium import nn

def factory():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((64, 96)).astype(np.float32)

    def model(x):
        return nn.softmax(x @ w, axis=-1)

    return model, (np.zeros((2, 64), np.float32),)
"""


def test_quantized_site_runs_under_node_and_in_chromium(tmp_path: Path) -> None:
    """``tensorium compile -t webgpu --quantize w3g32``: the artifact's bound k-bit weight is a .npy of codes that
    the JavaScript runtime packs itself, under Node on Dawn and on the demo page in headless chromium."""
    require_dawn()
    from tensorium.cli import main

    (tmp_path / "model.py").write_text(QUANTIZED_FACTORY)
    site = tmp_path / "site"
    args = ["compile", f"{tmp_path / 'model.py'}:factory", "-t", "webgpu", "-o", str(site), "--quantize", "w3g32"]
    assert main(args) == 0
    codes = [np.load(f) for f in (site / "constants").glob("*.npy")]
    assert any(c.dtype == np.uint8 for c in codes), "the 3-bit weight is bound as its codes"
    namespace: dict[str, object] = {}
    exec(QUANTIZED_FACTORY, namespace)
    model = namespace["factory"]()[0]  # type: ignore[operator]
    x = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
    want = tensorium.compile(model, target="interp", quantize="w3g32", cache=False)(x)
    (got,) = node_outputs(site, [x], tmp_path)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    require_chromium()
    (got,), _ = chromium_outputs(site, [x], tmp_path / "chromium")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("layout, bits, signed", [("stream", 3, True), ("planes", 5, False), ("interleaved", 8, True)])
def test_k_bit_products_run_as_the_tiled_gemm(layout: str, bits: int, signed: bool) -> None:
    """A product of at least 32 x 32 outputs copies dequantized B tiles into workgroup memory (each code unpacked
    once per tile); rows of 70 codes leave partial tiles along K."""
    m = quant_module(bits, signed, rows=40, depth=70)
    main = m.regions[0].block.ops[0]
    x = main.regions[0].block.args[0]
    assert str(x.type) == "tensor<2x70xf32>"
    text = str(m).replace("tensor<2x70xf32>", "tensor<33x70xf32>").replace("tensor<2x40xf32>", "tensor<33x40xf32>")
    m = parse_module(text)
    executable = WebGPUExecutable.build(m, quant_layout=layout)
    tiled = [s for s in executable.shaders.values() if "var<workgroup>" in s.wgsl and ">>" in s.wgsl]
    assert len(tiled) == 1
    inputs = quant_inputs(bits, signed, seed=bits, rows=40, depth=70)
    inputs[0] = np.random.default_rng(bits).standard_normal((33, 70)).astype(np.float32)
    check(executable.run(inputs), [np.asarray(r) for r in run(m, inputs)], atol=1e-3)  # outputs up to ~600
