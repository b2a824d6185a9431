"""Compiled models on a WebGPU device through wgpu-py (Mesa's lavapipe in CI) against the interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorium
from tensorium import nn
from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.errors import CompileError, InterpreterError
from tensorium.ir.parser import parse_module
from tensorium.targets import parse_target

from .models import MODULES, module, random_inputs, reference

pytestmark = pytest.mark.usefixtures("gpu")

LOW_LIMITS = "webgpu:max_compute_invocations_per_workgroup=4,max_compute_workgroups_per_dimension=4"


@pytest.mark.parametrize("spec", ["webgpu", LOW_LIMITS])
@pytest.mark.parametrize("name", sorted(MODULES))
def test_kernel_families_match_the_interpreter(name: str, spec: str) -> None:
    executable = WebGPUExecutable.build(module(name), target=parse_target(spec))
    inputs = random_inputs(module(name))
    for got, want in zip(executable.run(inputs), reference(module(name), inputs)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    if spec == LOW_LIMITS:
        assert all(np.prod(s.workgroup) <= 4 and max(s.grid) <= 4 for s in executable.shaders.values())


def test_shaders_bind_only_what_they_touch_and_write_what_they_store() -> None:
    executable = WebGPUExecutable.build(module("matmul"))
    (shader,) = executable.shaders.values()
    assert shader.bindings == (0, 1, 2) and shader.written == frozenset({2})
    assert "var<storage, read> b0: array<f32>" in shader.wgsl
    assert "var<storage, read_write> b2: array<f32>" in shader.wgsl
    assert "@compute @workgroup_size(" in shader.wgsl


def test_compile_with_target_webgpu_runs_a_traced_model() -> None:
    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((16, 24)).astype(np.float32)
    w2 = rng.standard_normal((24, 4)).astype(np.float32)

    def mlp(x: np.ndarray) -> object:
        h = nn.layer_norm(nn.gelu(x @ w1))
        return nn.softmax(h @ w2, axis=-1)

    x = rng.standard_normal((3, 16)).astype(np.float32)
    got = tensorium.compile(mlp, target="webgpu")(x)
    want = tensorium.compile(mlp, target="interp")(x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_conv_pool_model_matches_the_interpreter() -> None:
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)

    def cnn(x: np.ndarray) -> object:
        return nn.max_pool2d(nn.relu(nn.conv2d(x, w, padding=1)), 2)

    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(
        tensorium.compile(cnn, target="webgpu")(x), tensorium.compile(cnn, target="interp")(x), rtol=1e-5, atol=1e-5
    )


def test_booleans_and_integers_round_trip() -> None:
    text = """
module {
  func.func @main(%a: tensor<5xi32>, %b: tensor<5xi32>) -> (tensor<5xi1>, tensor<5xi32>) {
    %0 = graph.lt %a, %b : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %1 = graph.div %a, %b : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
    func.return %0, %1 : tensor<5xi1>, tensor<5xi32>
  }
}"""
    m = parse_module(text)
    a = np.array([7, -7, 3, 0, 9], np.int32)
    b = np.array([2, 2, 0, 5, -1], np.int32)
    got = WebGPUExecutable.build(m).run([a, b])
    for g, w in zip(got, reference(m, [a, b])):
        np.testing.assert_array_equal(g, w)


def test_artifact_round_trip_without_compiling(tmp_path: Path) -> None:
    executable = WebGPUExecutable.build(module("reduce_softmax"))
    executable.to_files(tmp_path)
    assert (tmp_path / "plan.json").is_file() and list((tmp_path / "kernels").glob("*.wgsl"))
    loaded = WebGPUExecutable.from_files(tmp_path)
    inputs = random_inputs(module("reduce_softmax"))
    for got, want in zip(loaded.run(inputs), executable.run(inputs)):
        np.testing.assert_array_equal(got, want)


def test_unsigned_64_bit_integers_are_refused_by_name() -> None:
    """i64 is held in i32 where it provably fits (test_webgpu_int64.py); u64 is not held at all."""
    text = """
module {
  func.func @main(%a: tensor<4xu64>) -> tensor<4xu64> {
    %0 = graph.neg %a : (tensor<4xu64>) -> tensor<4xu64>
    func.return %0 : tensor<4xu64>
  }
}"""
    with pytest.raises(CompileError, match="WebGPU has no u64"):
        WebGPUExecutable.build(parse_module(text))


def test_empty_tensors_run() -> None:
    """Regression: an empty input or constant made wgpu refuse the upload ("Invalid data_offset")."""
    text = """
module {
  func.func @main(%a: tensor<0x3xf32>, %b: tensor<2x3xf32>) -> (tensor<0x3xf32>, tensor<2x3xf32>) {
    %0 = graph.neg %a : (tensor<0x3xf32>) -> tensor<0x3xf32>
    %1 = graph.neg %b : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %0, %1 : tensor<0x3xf32>, tensor<2x3xf32>
  }
}"""
    a, b = np.zeros((0, 3), np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)
    got = WebGPUExecutable.build(parse_module(text)).run([a, b])
    assert got[0].shape == (0, 3)
    np.testing.assert_array_equal(got[1], -b)


def test_ordered_comparisons_and_argmax_of_bools() -> None:
    """Regression (tests/fuzz/regressions/webgpu_ordered_comparison_of_bools.mlir): WGSL orders no bools, so
    `a < b` of i1 values (argmax's scan, graph.lt) compares them as u32."""
    m = parse_module("""
module {
  func.func @main(%a: tensor<5x4xi1>, %b: tensor<5x4xi1>)
      -> (tensor<4xi64>, tensor<5x4xi1>, tensor<5x4xi1>, tensor<5x4xi1>) {
    %0 = graph.argmax %a {axis = 0, select_last_index = true} : (tensor<5x4xi1>) -> tensor<4xi64>
    %1 = graph.lt %a, %b : (tensor<5x4xi1>, tensor<5x4xi1>) -> tensor<5x4xi1>
    %2 = graph.ge %a, %b : (tensor<5x4xi1>, tensor<5x4xi1>) -> tensor<5x4xi1>
    %3 = graph.eq %a, %b : (tensor<5x4xi1>, tensor<5x4xi1>) -> tensor<5x4xi1>
    func.return %0, %1, %2, %3 : tensor<4xi64>, tensor<5x4xi1>, tensor<5x4xi1>, tensor<5x4xi1>
  }
}""")
    rng = np.random.default_rng(0)
    inputs = [rng.random((5, 4)) < 0.5, rng.random((5, 4)) < 0.5]
    for got, want in zip(WebGPUExecutable.build(m).run(inputs), reference(m, inputs), strict=True):
        np.testing.assert_array_equal(got, want)


EMBEDDING = """
module {
  func.func @main(%t: tensor<50x8xf32>, %i: tensor<2x6xi64>) -> (tensor<2x6x8xf32>) {
    %0 = graph.embedding %t, %i : (tensor<50x8xf32>, tensor<2x6xi64>) -> tensor<2x6x8xf32>
    func.return %0 : tensor<2x6x8xf32>
  }
}"""


def test_an_index_out_of_range_is_an_error_naming_the_op(tmp_path: Path) -> None:
    """Run-time checks (a token id past the table) store their number in the kernel's status buffer, which the
    runtime reads after the run: an error with the op's location and message, not rows read past the table."""
    executable = WebGPUExecutable.build(parse_module(EMBEDDING))
    (shader,) = executable.shaders.values()
    assert shader.checks == (
        "<input>:4:10: 'graph.embedding': an index is out of range for dimension 0 of size 50 (allowed: 0 to 49)",
    )
    assert "var<storage, read_write> status: array<atomic<u32>>" in shader.wgsl
    table = np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32)
    ids = np.arange(12, dtype=np.int64).reshape(2, 6)
    np.testing.assert_array_equal(executable.run([table, ids])[0], table[ids])
    ids[1, 2] = 50
    with pytest.raises(
        InterpreterError, match=r"kernel @embedding_0 failed: <input>:4:10: 'graph.embedding': an index"
    ):
        executable.run([table, ids])
    ids[1, 2] = 49  # the status is cleared at each run
    np.testing.assert_array_equal(executable.run([table, ids])[0], table[ids])
    loaded = WebGPUExecutable.from_files(executable.to_files(tmp_path / "exe"))
    assert loaded.shaders["embedding_0"].checks == shader.checks
