"""Types WGSL cannot store, held packed in ``u32`` words: 8- and 16-bit integers (four and two per word), f16
without ``shader-f16`` (two per word, computed in f32 and rounded to f16 after each op) and k-bit codes that a
kernel writes or returns (one per byte). Against the interpreter on lavapipe (wgpu-py) and under Node on Dawn
(the JavaScript runtime); the shaders' atomics for stores into shared words; f64 named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.errors import CompileError
from tensorium.ir.core import Operation
from tensorium.ir.parser import parse_module
from tensorium.targets import parse_target

from .js_harness import node_outputs, require_dawn
from .models import reference

INTEGERS = """
module {
  func.func @main(%a: tensor<13xi8>, %b: tensor<13xi8>, %c: tensor<7xu16>, %d: tensor<7xi16>, %u: tensor<13xu8>,
                  %f: tensor<13xf32>)
      -> (tensor<13xi8>, tensor<13xi8>, tensor<13xi8>, tensor<13xf32>, tensor<7xu16>, tensor<7xi16>, tensor<13xu8>,
          tensor<13xi8>, tensor<13xu8>, tensor<13xi1>, tensor<13xi8>, tensor<13xi32>) {
    %0 = graph.add %a, %b : (tensor<13xi8>, tensor<13xi8>) -> tensor<13xi8>
    %1 = graph.mul %0, %b : (tensor<13xi8>, tensor<13xi8>) -> tensor<13xi8>
    %2 = graph.sub %1, %a : (tensor<13xi8>, tensor<13xi8>) -> tensor<13xi8>
    %3 = graph.cast %2 {dtype = f32} : (tensor<13xi8>) -> tensor<13xf32>
    %4 = graph.mul %c, %c : (tensor<7xu16>, tensor<7xu16>) -> tensor<7xu16>
    %5 = graph.sub %d, %d : (tensor<7xi16>, tensor<7xi16>) -> tensor<7xi16>
    %6 = graph.add %d, %d : (tensor<7xi16>, tensor<7xi16>) -> tensor<7xi16>
    %7 = graph.sub %u, %u : (tensor<13xu8>, tensor<13xu8>) -> tensor<13xu8>
    %8 = graph.mul %u, %u : (tensor<13xu8>, tensor<13xu8>) -> tensor<13xu8>
    %9 = graph.cast %f {dtype = i8} : (tensor<13xf32>) -> tensor<13xi8>
    %10 = graph.cast %f {dtype = u8} : (tensor<13xf32>) -> tensor<13xu8>
    %11 = graph.cast %b {dtype = i1} : (tensor<13xi8>) -> tensor<13xi1>
    %12 = graph.neg %a : (tensor<13xi8>) -> tensor<13xi8>
    %13 = graph.cast %u {dtype = i32} : (tensor<13xu8>) -> tensor<13xi32>
    %14 = graph.add %6, %5 : (tensor<7xi16>, tensor<7xi16>) -> tensor<7xi16>
    func.return %0, %1, %2, %3, %4, %14, %7, %9, %10, %11, %12, %13
        : tensor<13xi8>, tensor<13xi8>, tensor<13xi8>, tensor<13xf32>, tensor<7xu16>, tensor<7xi16>, tensor<13xu8>,
          tensor<13xi8>, tensor<13xu8>, tensor<13xi1>, tensor<13xi8>, tensor<13xi32>
  }
}"""

LAYOUT = """
module {
  func.func @main(%x: tensor<37x29xi8>, %w: tensor<29x6xi16>) -> (tensor<29x37xi8>, tensor<37xi8>, tensor<37x6xi16>) {
    %0 = graph.transpose %x {perm = [1, 0]} : (tensor<37x29xi8>) -> tensor<29x37xi8>
    %1 = graph.reduce_max %x {axes = [1]} : (tensor<37x29xi8>) -> tensor<37xi8>
    %2 = graph.cast %x {dtype = i16} : (tensor<37x29xi8>) -> tensor<37x29xi16>
    %3 = graph.matmul %2, %w : (tensor<37x29xi16>, tensor<29x6xi16>) -> tensor<37x6xi16>
    func.return %0, %1, %3 : tensor<29x37xi8>, tensor<37xi8>, tensor<37x6xi16>
  }
}"""
"""Stores from many invocations into the same words (a transpose writes one byte of each of four words per
column), an i8 maximum per row, and an i16 product that wraps (a sum of i8 accumulates in i64: refused)."""

HALF = """
module {
  func.func @main(%a: tensor<5x33xf16>, %b: tensor<33x7xf16>, %c: tensor<5x7xf16>, %x: tensor<9xf32>)
      -> (tensor<5x7xf16>, tensor<5xf16>, tensor<5x33xf16>, tensor<9xf16>, tensor<9xf32>) {
    %0 = graph.matmul %a, %b : (tensor<5x33xf16>, tensor<33x7xf16>) -> tensor<5x7xf16>
    %1 = graph.add %0, %c : (tensor<5x7xf16>, tensor<5x7xf16>) -> tensor<5x7xf16>
    %2 = graph.reduce_sum %a {axes = [1]} : (tensor<5x33xf16>) -> tensor<5xf16>
    %3 = graph.softmax %a {axis = 1} : (tensor<5x33xf16>) -> tensor<5x33xf16>
    %4 = graph.tanh %3 : (tensor<5x33xf16>) -> tensor<5x33xf16>
    %5 = graph.cast %x {dtype = f16} : (tensor<9xf32>) -> tensor<9xf16>
    %6 = graph.mul %5, %5 : (tensor<9xf16>, tensor<9xf16>) -> tensor<9xf16>
    %7 = graph.cast %6 {dtype = f32} : (tensor<9xf16>) -> tensor<9xf32>
    func.return %1, %2, %4, %5, %7 : tensor<5x7xf16>, tensor<5xf16>, tensor<5x33xf16>, tensor<9xf16>, tensor<9xf32>
  }
}"""
"""f16 without the feature: a matmul, a sum, softmax and tanh, and casts from f32 that round (ties to even),
overflow to inf, keep NaN and go subnormal."""

K_BIT = """
module {
  func.func @main(%x: tensor<4x9xU4>, %y: tensor<6xI8>) -> (tensor<9x4xU4>, tensor<6xI8>) {
    %0 = graph.transpose %x {perm = [1, 0]} : (tensor<4x9xU4>) -> tensor<9x4xU4>
    %1 = graph.add %y, %y : (tensor<6xI8>, tensor<6xI8>) -> tensor<6xI8>
    func.return %0, %1 : tensor<9x4xU4>, tensor<6xI8>
  }
}""".replace("U4", "!quant<u4:f32, per_tensor>").replace("I8", "!quant<i8:f32, per_tensor>")
"""k-bit tensors the backend cannot pack in k bits (returned, computed on as codes): one code per byte."""


def _integer_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    floats = np.array([0.5, -1.9, 127.0, 128.0, -129.7, 300.2, -300.2, 1e10, -1e20, np.nan, np.inf, -np.inf, 255.9])
    return [
        rng.integers(-128, 128, 13).astype(np.int8),
        rng.integers(-128, 128, 13).astype(np.int8),
        rng.integers(0, 1 << 16, 7).astype(np.uint16),
        rng.integers(-(1 << 15), 1 << 15, 7).astype(np.int16),
        rng.integers(0, 256, 13).astype(np.uint8),
        floats.astype(np.float32),
    ]


def _layout_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(4)
    return [rng.integers(-128, 128, (37, 29)).astype(np.int8), rng.integers(-300, 300, (29, 6)).astype(np.int16)]


def _half_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    halves = [rng.standard_normal(s).astype(np.float16) for s in [(5, 33), (33, 7), (5, 7)]]
    # 1 + 2**-11 is a tie (to 1.0), 1 + 3 * 2**-11 one to even (up); 65520 overflows; 1e-6 is subnormal in f16
    edges = np.array([1 + 2**-11, 1 + 3 * 2**-11, 65504.0, 65520.0, -7e4, np.nan, 1e-6, -3e-8, 0.1], np.float32)
    return [*halves, edges]


def _k_bit_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [rng.integers(0, 16, (4, 9)).astype(np.uint8), rng.integers(-128, 128, 6).astype(np.int8)]


def _check(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for n, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (n, g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_array_equal(g, w, err_msg=f"output #{n}")


CASES = {
    "integers": (INTEGERS, _integer_inputs),
    "layout": (LAYOUT, _layout_inputs),
    "half": (HALF, _half_inputs),
    "k_bit": (K_BIT, _k_bit_inputs),
}


def _module(name: str) -> Operation:
    return parse_module(CASES[name][0])


def test_packed_buffers_are_words_and_written_ones_atomic() -> None:
    shaders = WebGPUExecutable.build(_module("layout")).shaders.values()
    text = "\n".join(s.wgsl for s in shaders)
    assert "var<storage, read> b0: array<u32>;" in text  # x, read
    assert "array<atomic<u32>>" in text and "atomicAnd(" in text and "atomicOr(" in text
    assert "i8" not in text.replace("i8(", "") and "i16" not in text


def test_f16_without_the_feature_is_held_in_f32() -> None:
    shaders = WebGPUExecutable.build(_module("half"), target=parse_target("webgpu")).shaders.values()
    assert not any("enable f16" in s.wgsl or "array<f16>" in s.wgsl for s in shaders)
    text = "\n".join(s.wgsl for s in shaders)
    assert "fn half_round(" in text and "fn half_value(" in text and "fn half_bits(" in text


def test_f64_is_refused_naming_the_tensor() -> None:
    m = parse_module("""
module {
  func.func @main(%x: tensor<3xf64>) -> tensor<3xf64> {
    %0 = graph.neg %x : (tensor<3xf64>) -> tensor<3xf64>
    func.return %0 : tensor<3xf64>
  }
}""")
    with pytest.raises(CompileError, match=r"argument #0 \(buffer<3xf64, global>\): WebGPU has no f64"):
        WebGPUExecutable.build(m)


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("name", sorted(CASES))
def test_packed_types_match_the_interpreter_on_lavapipe(name: str) -> None:
    m = _module(name)
    inputs = CASES[name][1]()
    _check(WebGPUExecutable.build(m).run(inputs), reference(m, inputs))


@pytest.mark.parametrize("name", sorted(CASES))
def test_packed_types_match_the_interpreter_on_dawn(name: str, tmp_path: Path) -> None:
    require_dawn()
    m = _module(name)
    inputs = CASES[name][1]()
    folder = WebGPUExecutable.build(m).to_files(tmp_path / "exe")
    _check(node_outputs(folder, inputs, tmp_path), reference(m, inputs))


@pytest.mark.usefixtures("gpu")
def test_packed_files_round_trip(tmp_path: Path) -> None:
    m = _module("layout")
    inputs = _layout_inputs()
    folder = WebGPUExecutable.build(m).to_files(tmp_path / "exe")
    _check(WebGPUExecutable.from_files(folder).run(inputs), reference(m, inputs))


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("name", ["layout", "half"])
def test_packed_local_arrays_moved_to_scratch_run(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """At a function-storage limit of 0 the kernels' ``local`` accumulators (an i8 row maximum, f16 sums) become
    slices of scratch buffers, held packed like any other storage (invocations' slices share words)."""
    monkeypatch.setattr("tensorium.lowering.webgpu_private.FUNCTION_STORAGE_BYTES", 0)
    m = _module(name)
    executable = WebGPUExecutable.build(m)
    scratch = [s for s in executable.shaders.values() if s.scratch]
    assert scratch and all("var m" not in s.wgsl for s in executable.shaders.values())
    assert any("array<atomic<u32>>" in s.wgsl.split("@compute")[0] for s in scratch)
    inputs = CASES[name][1]()
    _check(executable.run(inputs), reference(m, inputs))
