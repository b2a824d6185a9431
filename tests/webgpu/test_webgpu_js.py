"""The JavaScript runtime (tensorium/backends/webgpu/js) against the interpreter: under Node on Dawn, and the
demo site that ``tensorium compile -t webgpu -o site/`` writes, in headless Debian chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.backends.webgpu.site import write_site
from tensorium.cli import main
from tensorium.errors import TensoriumError
from tensorium.ir.parser import parse_module
from tensorium.passes.pipeline import parse_pipeline
from tensorium.targets import parse_target

from .js_harness import chromium_outputs, node_outputs, require_chromium, require_dawn, run_node
from .models import MODULES, module, random_inputs, reference

LOW_LIMITS = "webgpu:max_compute_invocations_per_workgroup=4,max_compute_workgroups_per_dimension=4"

FACTORY = """
import numpy as np
from tensorium import nn

def factory():
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((16, 32)).astype(np.float32)
    w2 = rng.standard_normal((32, 5)).astype(np.float32)
    b = np.float32(0.5)

    def mlp(x):
        return nn.softmax(nn.layer_norm(nn.gelu(x @ w1)) @ w2 + b, axis=-1), nn.relu(x).sum(axis=-1)

    return mlp, (np.zeros((3, 16), np.float32),)
"""


def _compile_site(tmp_path: Path) -> tuple[Path, Any]:
    """The demo site of FACTORY's model, written by the command line, and the model function itself."""
    (tmp_path / "model.py").write_text(FACTORY)
    site = tmp_path / "site"
    assert main(["compile", f"{tmp_path / 'model.py'}:factory", "-t", "webgpu", "-o", str(site)]) == 0
    namespace: dict[str, Any] = {}
    exec(FACTORY, namespace)
    return site, namespace["factory"]()[0]


def _interpreted(model: Any, x: np.ndarray) -> list[np.ndarray]:
    import tensorium

    return [np.asarray(r) for r in tensorium.compile(model, target="interp")(x)]


@pytest.mark.parametrize("spec", ["webgpu", LOW_LIMITS])
@pytest.mark.parametrize("name", sorted(MODULES))
def test_node_dawn_runs_executables_as_the_interpreter(name: str, spec: str, tmp_path: Path) -> None:
    require_dawn()
    executable = WebGPUExecutable.build(module(name), target=parse_target(spec))
    executable.to_files(tmp_path / "exe")
    inputs = random_inputs(module(name))
    got = node_outputs(tmp_path / "exe", inputs, tmp_path)
    want = reference(module(name), inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


def test_node_dawn_runs_booleans_integers_and_nonfinite_constants(tmp_path: Path) -> None:
    require_dawn()
    m = parse_module("""
module {
  func.func @main(%a: tensor<5xi32>, %b: tensor<5xi32>, %x: tensor<5xf32>)
      -> (tensor<5xi1>, tensor<5xi32>, tensor<f32>) {
    %0 = graph.lt %a, %b : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %1 = graph.div %a, %b : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
    %2 = graph.reduce_max %x {axes = [0]} : (tensor<5xf32>) -> tensor<f32>
    func.return %0, %1, %2 : tensor<5xi1>, tensor<5xi32>, tensor<f32>
  }
}""")
    inputs = [
        np.array([7, -7, 3, 0, 9], np.int32),
        np.array([2, 2, 0, 5, -1], np.int32),
        np.array([-1, -2, -3, -4, -5], np.float32),
    ]
    WebGPUExecutable.build(m).to_files(tmp_path / "exe")
    got = node_outputs(tmp_path / "exe", inputs, tmp_path)
    for g, w in zip(got, reference(m, inputs)):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_node_dawn_takes_and_gives_i64_held_in_i32(tmp_path: Path) -> None:
    """int64 inputs are BigInt64Arrays narrowed (checked) to the i32 WebGPU holds them in, outputs widened."""
    require_dawn()
    m = parse_module("""
module {
  func.func @main(%ids: tensor<2x3xi64>, %t: tensor<9x2xf32>, %x: tensor<4x5xf32>)
      -> (tensor<2x3x2xf32>, tensor<4xi64>, tensor<2x3xi64>) {
    %0 = graph.embedding %t, %ids : (tensor<9x2xf32>, tensor<2x3xi64>) -> tensor<2x3x2xf32>
    %1 = graph.argmax %x {axis = 1} : (tensor<4x5xf32>) -> tensor<4xi64>
    %c = graph.constant {value = dense<[-7, 0, 2147483647]> : tensor<3xi64>} : () -> tensor<3xi64>
    %2 = graph.max %ids, %c : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
    func.return %0, %1, %2 : tensor<2x3x2xf32>, tensor<4xi64>, tensor<2x3xi64>
  }
}""")
    rng = np.random.default_rng(2)
    inputs = [
        np.array([[0, 8, 3], [5, 1, 7]], np.int64),
        rng.standard_normal((9, 2)).astype(np.float32),
        rng.standard_normal((4, 5)).astype(np.float32),
    ]
    WebGPUExecutable.build(m).to_files(tmp_path / "exe")
    for g, w in zip(node_outputs(tmp_path / "exe", inputs, tmp_path), reference(m, inputs), strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    inputs[0][1, 2] = -(2**33)
    done = run_node(tmp_path / "exe", inputs, tmp_path / "wide")
    assert done.returncode == 1
    assert "input #0 (tensor<2x3xi64>) holds -8589934592, outside the 32-bit range WebGPU holds int64 in" in done.stderr


GPT2_FACTORY = """
import torch, transformers

def factory():
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=200, n_positions=32, use_cache=False)
    model = transformers.GPT2LMHeadModel(config).eval()
    return model, (torch.zeros((1, 9), dtype=torch.long),)
"""


def test_a_transformers_gpt2_site_runs_under_node_on_int64_token_ids(tmp_path: Path) -> None:
    """`tensorium compile gpt2.py:factory -t webgpu -o site/` of a PyTorch GPT-2 LM: its int64 ids given as a .npy
    file (a BigInt64Array) and held in i32 on the GPU, its logits those of eager PyTorch."""
    require_dawn()
    torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
    pytest.importorskip("transformers", reason="the HuggingFace models need transformers")
    (tmp_path / "gpt2.py").write_text(GPT2_FACTORY)
    site = tmp_path / "site"
    assert main(["compile", f"{tmp_path / 'gpt2.py'}:factory", "-t", "webgpu", "-o", str(site)]) == 0
    ids = np.random.default_rng(6).integers(0, 200, (1, 9), dtype=np.int64)
    (got,) = node_outputs(site, [ids], tmp_path)
    namespace: dict[str, Any] = {}
    exec(GPT2_FACTORY, namespace)
    model = namespace["factory"]()[0]
    with torch.no_grad():
        want = model(torch.from_numpy(ids)).logits.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_node_runtime_reports_a_failed_run_time_check_by_name(tmp_path: Path) -> None:
    require_dawn()
    m = parse_module("""
module {
  func.func @main(%t: tensor<50x8xf32>, %i: tensor<2x6xi64>) -> (tensor<2x6x8xf32>) {
    %0 = graph.embedding %t, %i : (tensor<50x8xf32>, tensor<2x6xi64>) -> tensor<2x6x8xf32>
    func.return %0 : tensor<2x6x8xf32>
  }
}""")
    WebGPUExecutable.build(m).to_files(tmp_path / "exe")
    table = np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32)
    ids = np.arange(12, dtype=np.int64).reshape(2, 6)
    (got,) = node_outputs(tmp_path / "exe", [table, ids], tmp_path / "ok")
    np.testing.assert_array_equal(got, table[ids])
    ids[0, 4] = -1
    done = run_node(tmp_path / "exe", [table, ids], tmp_path / "bad")
    assert done.returncode == 1
    assert "kernel @embedding_0 failed: <input>:4:10: 'graph.embedding': an index is out of range" in done.stderr


def test_node_dawn_runs_i64_guards_checked_at_run_time(tmp_path: Path) -> None:
    """A float cast to i64 (kept to its low 32 bits where it only wraps) and an i64 product of two inputs,
    checked at run time (webgpu_int64.guard_i64): Dawn's validator takes their WGSL, results match, and an
    overflow fails the run by name."""
    require_dawn()
    m = parse_module("""
module {
  func.func @main(%x: tensor<4xf32>, %a: tensor<4xi64>, %b: tensor<4xi64>) -> (tensor<4xi32>, tensor<4xi64>) {
    %0 = graph.cast %x {dtype = i64} : (tensor<4xf32>) -> tensor<4xi64>
    %1 = graph.cast %0 {dtype = i32} : (tensor<4xi64>) -> tensor<4xi32>
    %2 = graph.mul %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    func.return %1, %2 : tensor<4xi32>, tensor<4xi64>
  }
}""")
    for p in parse_pipeline("fuse"):
        p.run(m)  # the casts in one kernel, as in a model: the i64 between them is never stored
    inputs = [
        np.array([2.0**40, -5.5, np.inf, 3e9], np.float32),
        np.array([3, -(2**15), -1, -(2**31)], np.int64),
        np.array([-5, 2**16, -(2**31) + 1, 1], np.int64),
    ]
    WebGPUExecutable.build(m).to_files(tmp_path / "exe")
    for g, w in zip(node_outputs(tmp_path / "exe", inputs, tmp_path / "ok"), reference(m, inputs), strict=True):
        np.testing.assert_array_equal(g, w)
    inputs[1][0] = 2**20
    inputs[2][0] = 2**12
    done = run_node(tmp_path / "exe", inputs, tmp_path / "bad")
    assert done.returncode == 1
    assert "kernel @mul_" in done.stderr and "product, quotient or u32 conversion overflows 32 bits" in done.stderr


def test_node_dawn_runs_an_artifact_with_bound_constants(tmp_path: Path) -> None:
    require_dawn()
    site, model = _compile_site(tmp_path)
    assert list((site / "constants").glob("*.npy")), "the weights should be bound constants"
    x = np.random.default_rng(4).standard_normal((3, 16)).astype(np.float32)
    got = node_outputs(site, [x], tmp_path)
    for g, w in zip(got, _interpreted(model, x)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_node_dawn_tunes_variants_and_computes_the_same(tmp_path: Path) -> None:
    require_dawn()
    site, model = _compile_site(tmp_path)
    variants = json.loads((site / "webgpu" / "variants.json").read_text())
    assert variants and all(len(shaders) >= 1 for shaders in variants.values())
    x = np.random.default_rng(6).standard_normal((3, 16)).astype(np.float32)
    # No budget to speak of: every candidate is tried however loaded the machine (60 s ran out at load 13).
    done = run_node(site, [x], tmp_path, tune_ms=10**9)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stderr.split("tuned: ", 1)[1].splitlines()[0])
    assert report["tried"] > len(variants) and set(report["choices"]) == set(variants)
    for n, want in enumerate(_interpreted(model, x)):
        np.testing.assert_allclose(np.load(tmp_path / "out" / f"out{n}.npy"), want, rtol=1e-4, atol=1e-5)


def test_tuning_variants_are_other_points_of_the_kernels_spaces(tmp_path: Path) -> None:
    site, _ = _compile_site(tmp_path)
    plan = json.loads((site / "webgpu" / "plan.json").read_text())
    variants = json.loads((site / "webgpu" / "variants.json").read_text())
    for name, shaders in variants.items():
        assert name in plan["kernels"]
        own = (site / "webgpu" / plan["kernels"][name]["file"]).read_text()
        texts = [(site / "webgpu" / s["file"]).read_text() for s in shaders]
        assert own not in texts and len(set(texts)) == len(texts)


def test_node_runtime_refuses_wrong_inputs_by_name(tmp_path: Path) -> None:
    require_dawn()
    WebGPUExecutable.build(module("matmul")).to_files(tmp_path / "exe")
    a, b = random_inputs(module("matmul"))
    too_few = run_node(tmp_path / "exe", [a], tmp_path / "few")
    assert too_few.returncode == 1 and "takes 2 inputs, got 1" in too_few.stderr
    wrong_type = run_node(tmp_path / "exe", [a, b.astype(np.int32)], tmp_path / "type")
    assert wrong_type.returncode == 1 and "input #1: expected a Float32Array" in wrong_type.stderr
    wrong_size = run_node(tmp_path / "exe", [a, b[:4]], tmp_path / "size")
    assert wrong_size.returncode == 1 and "input #1: expected 108 elements" in wrong_size.stderr


def test_node_runtime_names_a_kernel_the_device_refuses(tmp_path: Path) -> None:
    require_dawn()
    WebGPUExecutable.build(module("matmul")).to_files(tmp_path / "exe")
    (kernel,) = (tmp_path / "exe" / "kernels").glob("*.wgsl")
    kernel.write_text(kernel.read_text().replace("fn main(", "fn main(oops"))
    done = run_node(tmp_path / "exe", random_inputs(module("matmul")), tmp_path)
    assert done.returncode == 1 and f"kernel {kernel.stem}" in done.stderr


def test_compile_writes_a_site_that_runs_in_chromium(tmp_path: Path) -> None:
    require_chromium()
    site, model = _compile_site(tmp_path)
    assert {"index.html", "tensorium-webgpu.js", "metadata.json"} <= {p.name for p in site.iterdir()}
    x = np.random.default_rng(5).standard_normal((3, 16)).astype(np.float32)
    shot = tmp_path / "demo.png"
    got, printed = chromium_outputs(site, [x], tmp_path, screenshot=shot, tune_s=3)
    assert re.search(r"tuned: \d+ candidates in [\d.]+ s of a 3 s budget: .* ms per run \(speed-up", printed)
    want = _interpreted(model, x)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 10_000


def test_a_dynamic_site_sizes_its_random_inputs_from_its_dims_fields(tmp_path: Path) -> None:
    """An ONNX model with a named dim ('batch'): the page shows a size field per named dim (8 by default) for
    its random inputs, and runs .npy inputs of any batch."""
    require_chromium()
    onnx = pytest.importorskip("onnx", reason="the ONNX frontend needs onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Softmax", ["h"], ["y"], axis=-1)]
    graph = helper.make_graph(
        nodes,
        "dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "dynamic.onnx")
    site = tmp_path / "site"
    assert main(["compile", str(tmp_path / "dynamic.onnx"), "-t", "webgpu", "-o", str(site)]) == 0
    x = np.random.default_rng(1).standard_normal((5, 6)).astype(np.float32)
    (got,), printed = chromium_outputs(site, [x], tmp_path, screenshot=tmp_path / "demo.png")
    h = x @ w
    want = np.exp(h - h.max(-1, keepdims=True))
    np.testing.assert_allclose(got, want / want.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert "tensor<[batch]x4xf32> [8,4]" in printed  # the random run, at the field's batch of 8


def test_a_site_needs_a_webgpu_artifact(tmp_path: Path) -> None:
    with pytest.raises(TensoriumError, match="not an artifact compiled with -t webgpu"):
        write_site(tmp_path)


def test_nonfinite_constants_are_not_constant_expressions() -> None:
    """Regression: Dawn refuses ``bitcast<f32>(0x7f800000u)`` (an infinite const-expression) where wgpu
    accepts it; inf and NaN go through a function call."""
    shaders = WebGPUExecutable.build(module("reduce_softmax")).shaders
    wgsl = "\n".join(s.wgsl for s in shaders.values())
    assert "f32_from_bits(4286578688u)" in wgsl  # -inf, the start of the max reductions
    assert "bitcast<f32>(4286578688u)" not in wgsl and "bitcast<f32>(2139095040u)" not in wgsl


def test_node_dawn_runs_the_trigonometric_decompositions(tmp_path: Path) -> None:
    """sin, cos, atan, asin and acos come from the shared decompositions on WebGPU; Dawn's validator takes their
    WGSL and they match the interpreter there too."""
    require_dawn()
    from .test_webgpu_math import TRIG

    m = parse_module(TRIG)
    WebGPUExecutable.build(m).to_files(tmp_path / "exe")
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-4096, 4096, 2048), rng.uniform(-4, 4, 2048)]).astype(np.float32)
    u = rng.uniform(-1, 1, 4096).astype(np.float32)
    for got, want in zip(node_outputs(tmp_path / "exe", [x, u], tmp_path), reference(m, [x, u]), strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-6)


def test_node_dawn_sizes_dim_expressions(tmp_path: Path) -> None:
    """A flattened ``[b*s]`` tensor and a ``[4*s]`` output: the JS runtime sizes them from the input's dims."""
    require_dawn()
    m = parse_module("""
module {
  func.func @main(%x: tensor<[b]x[s]x4xf32>) -> (tensor<[b*s]x4xf32>, tensor<[b]x[4*s]xf32>) {
    %0 = graph.reshape %x {shape = [-1, 4]} : (tensor<[b]x[s]x4xf32>) -> tensor<[b*s]x4xf32>
    %1 = graph.relu %0 : (tensor<[b*s]x4xf32>) -> tensor<[b*s]x4xf32>
    %2 = graph.reshape_dims %1, %x {shape = [-1, -1], positions = [0], axes = [0]}
         : (tensor<[b*s]x4xf32>, tensor<[b]x[s]x4xf32>) -> tensor<[b]x[4*s]xf32>
    %3 = graph.neg %2 : (tensor<[b]x[4*s]xf32>) -> tensor<[b]x[4*s]xf32>
    func.return %1, %3 : tensor<[b*s]x4xf32>, tensor<[b]x[4*s]xf32>
  }
}""")
    WebGPUExecutable.build(m).to_files(tmp_path / "exe")
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    flat, back = node_outputs(tmp_path / "exe", [x], tmp_path / "run")
    np.testing.assert_array_equal(flat, np.maximum(x, 0).reshape(6, 4))
    np.testing.assert_array_equal(back, -np.maximum(x, 0).reshape(2, 12))
