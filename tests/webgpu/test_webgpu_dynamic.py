"""Dynamic shapes on WebGPU: named dims as uniforms, grids computed by the host at each run.

One executable (its shaders compiled once) runs elementwise, row-wise (softmax, a sum over rows) and GEMM
kernels for several sizes of the named dims, on lavapipe against the interpreter, at the default limits and
at artificially low ones where the run-time grid is 2-D, and under Node on Dawn (the JavaScript runtime sizes
the grids the same way); a grid over the limits and an anonymous dim are errors naming the kernel or the
tensor.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorium
from tensorium import nn
from tensorium.backends.interp import run
from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.errors import CompileError, InterpreterError
from tensorium.ir.parser import parse_module
from tensorium.lowering.space import Config, tunable_kernels
from tensorium.lowering.webgpu_schedule import dynamic_grid, evaluate_dispatch
from tensorium.targets import parse_target

from .js_harness import node_outputs, require_dawn

MODEL = """
module {
  func.func @main(%a: tensor<[n]x40xf32>, %w: tensor<40x8xf32>, %b: tensor<[b]x[m]x12xf32>, %v: tensor<12x[k]xf32>)
      -> (tensor<[n]x8xf32>, tensor<[n]xf32>, tensor<[b]x[m]x[k]xf32>) {
    %0 = graph.tanh %a : (tensor<[n]x40xf32>) -> tensor<[n]x40xf32>
    %1 = graph.matmul %0, %w : (tensor<[n]x40xf32>, tensor<40x8xf32>) -> tensor<[n]x8xf32>
    %2 = graph.softmax %1 {axis = 1} : (tensor<[n]x8xf32>) -> tensor<[n]x8xf32>
    %3 = graph.reduce_sum %a {axes = [1]} : (tensor<[n]x40xf32>) -> tensor<[n]xf32>
    %4 = graph.matmul %b, %v : (tensor<[b]x[m]x12xf32>, tensor<12x[k]xf32>) -> tensor<[b]x[m]x[k]xf32>
    %5 = graph.relu %4 : (tensor<[b]x[m]x[k]xf32>) -> tensor<[b]x[m]x[k]xf32>
    func.return %2, %3, %5 : tensor<[n]x8xf32>, tensor<[n]xf32>, tensor<[b]x[m]x[k]xf32>
  }
}"""


def inputs(n: int, b: int, m: int, k: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = [(n, 40), (40, 8), (b, m, 12), (12, k)]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def matches(got: list[np.ndarray], text: str, arrays: list[np.ndarray]) -> None:
    """``got`` has the shapes and, within 1e-5, the values the interpreter computes for module ``text``."""
    want = [np.asarray(r) for r in run(parse_module(text), arrays)]
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def check(executable: WebGPUExecutable, arrays: list[np.ndarray]) -> None:
    matches(executable.run(arrays), MODEL, arrays)


def test_dispatch_expressions_and_grids() -> None:
    assert evaluate_dispatch(["mul", ["dim", 1, 0], 40], [(9, 3), (7,)]) == 280
    assert evaluate_dispatch(["div", ["add", ["dim", 0, 0], 5], 6], [(13,)]) == 3
    assert evaluate_dispatch(["rem", 7, 0], []) == 7 and evaluate_dispatch(["div", 7, 0], []) == 0
    assert dynamic_grid(1000, 4, 16, "k") == (16, 16, 1)
    assert dynamic_grid(0, 64, 65535, "k") == (1, 0, 1)
    with pytest.raises(CompileError, match="kernel @k: 1001 workgroups do not fit a 2-D grid"):
        dynamic_grid(1001 * 4, 4, 16, "k")


@pytest.mark.usefixtures("gpu")
def test_one_executable_runs_every_size() -> None:
    executable = WebGPUExecutable.build(parse_module(MODEL))
    assert all(s.dims and s.dispatch for s in executable.shaders.values())
    assert all("var<uniform> dims" in s.wgsl for s in executable.shaders.values())
    for n, b, m, k in [(3, 2, 5, 7), (1, 1, 1, 1), (70, 3, 33, 40), (0, 1, 0, 3), (5, 2, 5, 7)]:
        check(executable, inputs(n, b, m, k, seed=n))
    assert executable.last_bindings == {"n": 5, "b": 2, "m": 5, "k": 7}


@pytest.mark.usefixtures("gpu")
def test_two_dimensional_run_time_grids_at_low_limits() -> None:
    target = parse_target("webgpu:max_compute_invocations_per_workgroup=4,max_compute_workgroups_per_dimension=16")
    executable = WebGPUExecutable.build(parse_module(MODEL), target=target)
    check(executable, inputs(6, 2, 9, 5))  # tanh: 240 iterations in 60 workgroups of 4, a 16 x 4 grid
    with pytest.raises(CompileError, match=r"kernel @tanh_\d+: 1000 workgroups do not fit"):
        executable.run(inputs(100, 1, 1, 1))


@pytest.mark.usefixtures("gpu")
def test_dynamic_plans_round_trip_through_files(tmp_path: Path) -> None:
    executable = WebGPUExecutable.build(parse_module(MODEL))
    folder = executable.to_files(tmp_path / "exe")
    plan = json.loads((folder / "plan.json").read_text())
    assert plan["buffers"][0]["shape"] == ["n", 40]
    check(WebGPUExecutable.from_files(folder), inputs(4, 2, 3, 6))


@pytest.mark.parametrize(
    "spec", ["webgpu", "webgpu:max_compute_invocations_per_workgroup=4,max_compute_workgroups_per_dimension=16"]
)
def test_javascript_runtime_runs_dynamic_plans_on_dawn(spec: str, tmp_path: Path) -> None:
    require_dawn()
    folder = WebGPUExecutable.build(parse_module(MODEL), target=parse_target(spec)).to_files(tmp_path / "exe")
    for sizes in [(6, 2, 9, 5), (1, 1, 3, 1)]:
        arrays = inputs(*sizes, seed=sizes[0])
        matches(node_outputs(folder, arrays, tmp_path / str(sizes[0])), MODEL, arrays)


def test_sizes_past_the_limits_and_anonymous_dims_are_named() -> None:
    anonymous = parse_module("""
module {
  func.func @main(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %0 = graph.exp %a : (tensor<?x4xf32>) -> tensor<?x4xf32>
    func.return %0 : tensor<?x4xf32>
  }
}""")
    with pytest.raises(CompileError, match=r"tensor #0 \(tensor<\?x4xf32>\) has an anonymous dynamic dim"):
        WebGPUExecutable.build(anonymous)
    small = parse_target("webgpu:max_storage_buffer_binding_size=2048")
    executable = WebGPUExecutable.build(parse_module(MODEL), target=small)
    with pytest.raises(InterpreterError, match=r"tensor #0 \(tensor<\[n\]x40xf32>\) of shape \(13, 40\) takes 2080"):
        executable.run(inputs(13, 1, 1, 1))


PACKED = """
module {
  func.func @main(%x: tensor<[n]x64xf32>, %p: tensor<2x2x3x4xu32>, %s: tensor<2x8xf32>, %z: tensor<2x8xf32>)
      -> tensor<[n]x8xf32> {
    %0 = quant.matmul_packed %x, %p, %s, %z {bits = 3, cols = 8, group = 32, lanes = 4}
      : (tensor<[n]x64xf32>, tensor<2x2x3x4xu32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<[n]x8xf32>
    func.return %0 : tensor<[n]x8xf32>
  }
}"""


def test_scratch_buffers_sized_at_run_time() -> None:
    """The packed k-bit GEMV keeps pre-scaled activations in a global scratch buffer of [rows, K]: with a
    dynamic number of rows its bytes are an expression the runtime evaluates per run."""
    from tensorium.ir.dialects.quant import layouts

    module = parse_module(PACKED)
    executable = WebGPUExecutable.build(module)
    (shader,) = executable.shaders.values()
    assert any(shader.scratch_sizes) and "dim" in str(shader.scratch_sizes)
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 8, (8, 64))
    packed = layouts.pack(codes, 3, False, "interleaved", 4)
    scale, zero = rng.uniform(0.5, 1, (2, 8)).astype(np.float32), rng.uniform(0, 4, (2, 8)).astype(np.float32)
    for n in (1, 5):
        arrays = [rng.standard_normal((n, 64)).astype(np.float32), packed, scale, zero]
        if not _has_gpu():
            pytest.skip("no WebGPU adapter")
        np.testing.assert_allclose(executable.run(arrays)[0], run(module, arrays)[0], rtol=1e-5, atol=1e-5)


def _has_gpu() -> bool:
    from tensorium.backends.webgpu.device import WebGPUUnavailable, device_for

    try:
        device_for(parse_target("webgpu"))
    except (WebGPUUnavailable, ImportError):
        return False
    return True


HEADS = """
module {
  func.func @main(%x: tensor<[b]x[s]x24xf32>, %w: tensor<24x24xf32>)
      -> (tensor<[b]x4x[s]x6xf32>, tensor<[b]x[s]x24xf32>) {
    %0 = graph.matmul %x, %w : (tensor<[b]x[s]x24xf32>, tensor<24x24xf32>) -> tensor<[b]x[s]x24xf32>
    %1 = graph.reshape %0 {shape = [-1, 0, 4, 6]} : (tensor<[b]x[s]x24xf32>) -> tensor<[b]x[s]x4x6xf32>
    %2 = graph.transpose %1 {perm = [0, 2, 1, 3]} : (tensor<[b]x[s]x4x6xf32>) -> tensor<[b]x4x[s]x6xf32>
    %3 = graph.softmax %2 {axis = -1} : (tensor<[b]x4x[s]x6xf32>) -> tensor<[b]x4x[s]x6xf32>
    %4 = graph.tanh %0 : (tensor<[b]x[s]x24xf32>) -> tensor<[b]x[s]x24xf32>
    func.return %3, %4 : tensor<[b]x4x[s]x6xf32>, tensor<[b]x[s]x24xf32>
  }
}"""
"""A transformer's split into heads with run-time batch and sequence dims: the reshape of the projection is a view
of a dynamic tensor, copied out at each run with that run's size."""

HEAD_SIZES = [(2, 5), (1, 7), (3, 1), (1, 0)]


def _head_inputs(b: int, s: int) -> list[np.ndarray]:
    rng = np.random.default_rng(b * 10 + s)
    return [rng.standard_normal((b, s, 24)).astype(np.float32), rng.standard_normal((24, 24)).astype(np.float32)]


@pytest.mark.usefixtures("gpu")
def test_views_of_dynamic_tensors_take_each_runs_size() -> None:
    executable = WebGPUExecutable.build(parse_module(HEADS))
    assert executable.views and not executable.buffers[executable.views[0].source].is_static
    for b, s in HEAD_SIZES:
        arrays = _head_inputs(b, s)
        matches(executable.run(arrays), HEADS, arrays)


def test_javascript_runtime_copies_views_of_dynamic_tensors_on_dawn(tmp_path: Path) -> None:
    require_dawn()
    folder = WebGPUExecutable.build(parse_module(HEADS)).to_files(tmp_path / "exe")
    for b, s in HEAD_SIZES[:3]:
        arrays = _head_inputs(b, s)
        matches(node_outputs(folder, arrays, tmp_path / f"{b}x{s}"), HEADS, arrays)


@pytest.mark.usefixtures("gpu")
def test_a_traced_attention_block_with_run_time_batch_and_sequence_runs() -> None:
    rng = np.random.default_rng(8)
    d, h = 32, 4
    wq, wk, wv, wo = (rng.standard_normal((d, d)).astype(np.float32) * 0.2 for _ in range(4))

    def attention(x: Any) -> Any:
        b, s = x.shape[0], x.shape[1]

        def heads(t: Any) -> Any:
            return t.reshape(b, s, h, d // h).transpose(0, 2, 1, 3)

        q, k, v = heads(x @ wq), heads(x @ wk), heads(x @ wv)
        p = nn.softmax(q @ k.transpose(0, 1, 3, 2) * (d // h) ** -0.5, axis=-1)
        return nn.layer_norm((p @ v).transpose(0, 2, 1, 3).reshape(b, s, d) @ wo + x)

    dynamic = {"x": {0: "batch", 1: "seq"}}
    model = tensorium.compile(attention, target="webgpu", dynamic=dynamic, cache=False)
    reference = tensorium.compile(attention, target="interp", dynamic=dynamic, cache=False)
    for b, s in [(1, 5), (2, 9)]:
        x = rng.standard_normal((b, s, d)).astype(np.float32)
        np.testing.assert_allclose(model(x), reference(x), rtol=1e-5, atol=1e-5)


LINEAR = """
module {
  func.func @main(%x: tensor<[b]x[s]x40xf32>, %w: tensor<40x48xf32>, %v: tensor<36x40xf32>, %c: tensor<48xf32>)
      -> (tensor<[b]x[s]x48xf32>, tensor<[b]x[s]x36xf32>) {
    %0 = graph.matmul %x, %w : (tensor<[b]x[s]x40xf32>, tensor<40x48xf32>) -> tensor<[b]x[s]x48xf32>
    %1 = graph.add %0, %c : (tensor<[b]x[s]x48xf32>, tensor<48xf32>) -> tensor<[b]x[s]x48xf32>
    %2 = graph.gelu %1 : (tensor<[b]x[s]x48xf32>) -> tensor<[b]x[s]x48xf32>
    %3 = graph.matmul %x, %v {transpose_b = true}
      : (tensor<[b]x[s]x40xf32>, tensor<36x40xf32>) -> tensor<[b]x[s]x36xf32>
    func.return %2, %3 : tensor<[b]x[s]x48xf32>, tensor<[b]x[s]x36xf32>
  }
}"""
"""Linear layers of a model with run-time batch and sequence dims (one with a bias and GELU fused after it, one by a
weight stored transposed): tiled GEMMs over the run-time rows."""


def _linear_inputs(b: int, s: int) -> list[np.ndarray]:
    rng = np.random.default_rng(b * 100 + s)
    shapes = [(b, s, 40), (40, 48), (36, 40), (48,)]
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("point", ["default", "small", "one stage"])
def test_linear_layers_with_run_time_rows_are_tiled_gemms(point: str) -> None:
    module = parse_module(LINEAR)
    target = parse_target("webgpu")
    kernels = [k for k in tunable_kernels(module, target) if k.default.family != "elementwise"]
    assert [k.default.family for k in kernels] == ["gpu_gemm", "gpu_gemm"]
    tiles = {"small": (16, 16, 8, 2, 2, 2), "one stage": (32, 64, 16, 4, 8, 1)}
    configs = None
    if point != "default":
        values = tuple(zip(("bm", "bn", "bk", "tm", "tn", "stages"), tiles[point]))
        configs = {k.key: Config("gpu_gemm", values) for k in kernels}
        assert all(configs[k.key] in k.space.points() for k in kernels)
    executable = WebGPUExecutable.build(module, target=target, configs=configs)
    gemms = [s for s in executable.shaders.values() if "var<workgroup>" in s.wgsl]
    assert len(gemms) == 2 and all(s.dispatch for s in gemms)  # grids sized at run time
    for b, s in [(1, 5), (2, 77), (3, 64), (1, 0)]:  # row tiles of 64: one, three (the last partial), three
        arrays = _linear_inputs(b, s)
        matches(executable.run(arrays), LINEAR, arrays)


def test_tiled_gemms_over_run_time_rows_run_on_dawn(tmp_path: Path) -> None:
    require_dawn()
    folder = WebGPUExecutable.build(parse_module(LINEAR)).to_files(tmp_path / "exe")
    for b, s in [(2, 77), (1, 3)]:
        arrays = _linear_inputs(b, s)
        matches(node_outputs(folder, arrays, tmp_path / f"{b}x{s}"), LINEAR, arrays)


@pytest.mark.usefixtures("gpu")
def test_the_dynamic_shapes_benchmark_runs_and_checks_its_outputs(tmp_path: Path) -> None:
    from benchmarks.webgpu_dynamic import main

    assert main(["--rounds", "1", "--sizes", "3", "--json", str(tmp_path / "rows.json")]) == 0
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert [(r["model"], r["seq"]) for r in rows] == [("linear", 3), ("attention", 3)]
    assert all(r["dynamic_ms"] > 0 and r["static_ms"] > 0 for r in rows)


BATCHED = """
module {
  func.func @main(%q: tensor<[b]x3x[s]x8xf32>, %k: tensor<[b]x3x[s]x8xf32>, %v: tensor<[b]x3x[s]x40xf32>)
      -> (tensor<[b]x3x[s]x[s]xf32>, tensor<[b]x3x[s]x40xf32>) {
    %0 = graph.matmul %q, %k {transpose_b = true}
      : (tensor<[b]x3x[s]x8xf32>, tensor<[b]x3x[s]x8xf32>) -> tensor<[b]x3x[s]x[s]xf32>
    %1 = graph.softmax %0 {axis = -1} : (tensor<[b]x3x[s]x[s]xf32>) -> tensor<[b]x3x[s]x[s]xf32>
    %2 = graph.matmul %1, %v : (tensor<[b]x3x[s]x[s]xf32>, tensor<[b]x3x[s]x40xf32>) -> tensor<[b]x3x[s]x40xf32>
    func.return %0, %2 : tensor<[b]x3x[s]x[s]xf32>, tensor<[b]x3x[s]x40xf32>
  }
}"""
"""Attention's batched products with a run-time batch and sequence: scores ``q k^T`` (run-time rows and columns, by
a transposed B) and ``p v`` (run-time rows and contraction), one tiled GEMM per batch, each on a grid sized at run
time."""

BATCHED_SIZES = [(2, 70), (1, 1), (3, 33), (1, 0)]
"""Partial tiles of 64 rows, columns and (by 16) contraction steps; one element; an empty sequence."""


def _batched_inputs(b: int, s: int) -> list[np.ndarray]:
    rng = np.random.default_rng(b * 100 + s)
    return [rng.standard_normal(shape).astype(np.float32) for shape in ((b, 3, s, 8), (b, 3, s, 8), (b, 3, s, 40))]


LOW_GRID = "webgpu:max_compute_workgroups_per_dimension=8"
"""At most 64 workgroups on a 2-D grid: the scores at (2, 70) take 24 tiles, 8 along x and 3 along y."""


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("spec", ["webgpu", LOW_GRID])
def test_batched_products_with_run_time_sizes_are_tiled_gemms(spec: str) -> None:
    module = parse_module(BATCHED)
    target = parse_target(spec)
    kernels = tunable_kernels(module, target)
    assert [k.default.family for k in kernels if k.op.name == "graph.matmul"] == ["gpu_gemm", "gpu_gemm"]
    executable = WebGPUExecutable.build(module, target=target)
    assert sum(bool(s.dispatch) and "var<workgroup>" in s.wgsl for s in executable.shaders.values()) == 2
    for b, s in BATCHED_SIZES:
        arrays = _batched_inputs(b, s)
        matches(executable.run(arrays), BATCHED, arrays)
    if spec == LOW_GRID:
        with pytest.raises(CompileError, match=r"kernel @matmul_\d+: \d+ workgroups do not fit a 2-D grid"):
            executable.run(_batched_inputs(4, 300))


def test_batched_products_with_run_time_sizes_run_on_dawn(tmp_path: Path) -> None:
    require_dawn()
    folder = WebGPUExecutable.build(parse_module(BATCHED), target=parse_target(LOW_GRID)).to_files(tmp_path / "exe")
    for b, s in BATCHED_SIZES[:3]:
        arrays = _batched_inputs(b, s)
        matches(node_outputs(folder, arrays, tmp_path / f"{b}x{s}"), BATCHED, arrays)


COMPRESS = """
module {
  func.func @main(%m: tensor<[n]xi1>, %x: tensor<[n]x3xf32>) -> (tensor<[k]x3xf32>, tensor<i64>, tensor<[k]xf32>) {
    %0:2 = graph.compress %m, %x {dim = "k"} : (tensor<[n]xi1>, tensor<[n]x3xf32>) -> (tensor<[k]x3xf32>, tensor<i64>)
    %1 = graph.reduce_sum %0#0 {axes = [1]} : (tensor<[k]x3xf32>) -> tensor<[k]xf32>
    func.return %0#0, %0#1, %1 : tensor<[k]x3xf32>, tensor<i64>, tensor<[k]xf32>
  }
}"""


def _compress_inputs(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.random(n) < 0.5, rng.standard_normal((n, 3)).astype(np.float32)]


def test_dims_computed_at_run_time_are_read_back_between_submissions(tmp_path: Path) -> None:
    """graph.compress's kept rows: its tensors are allocated at the mask's length, the count is read back after
    its kernel, and what follows runs on that many rows; again with other counts, none, and from files."""
    m = parse_module(COMPRESS)
    executable = WebGPUExecutable.build(m)
    assert [d.name for d in executable.dims] == ["k"]
    for n, seed in [(9, 0), (9, 1), (1, 2), (0, 3), (40, 4)]:
        inputs = _compress_inputs(n, seed)
        got = executable.run(inputs)
        assert executable.last_bindings == {"n": n, "k": int(inputs[0].sum())}
        for g, w in zip(got, run(m, inputs), strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6)
    loaded = WebGPUExecutable.from_files(executable.to_files(tmp_path / "exe"))
    inputs = _compress_inputs(13, 5)
    for g, w in zip(loaded.run(inputs), run(m, inputs), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_node_dawn_reads_dims_computed_at_run_time_back(tmp_path: Path) -> None:
    require_dawn()
    m = parse_module(COMPRESS)
    WebGPUExecutable.build(m).to_files(tmp_path / "exe")
    for n, seed in [(11, 6), (0, 7)]:
        inputs = _compress_inputs(n, seed)
        got = node_outputs(tmp_path / "exe", inputs, tmp_path / f"n{n}")
        for g, w in zip(got, run(m, inputs), strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6)


def test_a_kernel_that_reads_no_dim_binds_no_dims_uniform() -> None:
    """Regression: a compress of a static mask writes rows of a run-time dim it never reads; the shader declared
    the dims uniform anyway, and wgpu's automatic layout, which leaves unused bindings out, refused the bind group
    ("Number of bindings in bind group descriptor (5) does not match ... (4)")."""
    m = parse_module("""
module {
  func.func @main(%m: tensor<6xi1>, %x: tensor<6x2xf32>) -> (tensor<[k]x2xf32>, tensor<i64>) {
    %0:2 = graph.compress %m, %x {dim = "k"} : (tensor<6xi1>, tensor<6x2xf32>) -> (tensor<[k]x2xf32>, tensor<i64>)
    func.return %0#0, %0#1 : tensor<[k]x2xf32>, tensor<i64>
  }
}""")
    executable = WebGPUExecutable.build(m)
    (shader,) = executable.shaders.values()
    assert shader.dims == () and "var<uniform> dims" not in shader.wgsl
    inputs = [np.array([1, 0, 0, 1, 1, 0], bool), np.arange(12, dtype=np.float32).reshape(6, 2)]
    for g, w in zip(executable.run(inputs), run(m, inputs), strict=True):
        np.testing.assert_array_equal(g, w)


def test_pytorch_masked_select_nonzero_and_unique_run_on_webgpu() -> None:
    torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")

    class DataDependent(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            kept = torch.masked_select(x, x > 0)
            return kept * 2, kept.sum(), torch.nonzero(x > 0.5), torch.unique(torch.round(x))

    model = DataDependent()
    compiled = tensorium.compile(model, target="webgpu")
    for seed in (0, 1):
        x = torch.randn(4, 5, generator=torch.Generator().manual_seed(seed))
        for got, want in zip(compiled(x), model(x), strict=True):
            assert got.shape == want.shape
            torch.testing.assert_close(got, want)
